import Foundation
import LiveListTestSupport
import Testing

/// Runs the README's shell session against a real server, so that none of its commands can rot.
@Suite struct ReadmeTests {
    @Test func shellSessionWorks() async throws {
        try await offThePool {
            let readme = try String(contentsOfFile: LiveServer.root + "/README.md", encoding: .utf8)
            let section = try #require(readme.range(of: "### Driving a list from the shell"))
            let block = try #require(readme[section.upperBound...].range(of: "```sh\n"))
            let end = try #require(readme[block.upperBound...].range(of: "```"))
            let script = String(readme[block.upperBound ..< end.lowerBound])
            let commands = script.replacingOccurrences(of: "\\\n", with: " ")
                .split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
            #expect(commands.count >= 5)

            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            var outputs: [String] = []
            for command in commands {
                var line = command.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(server.port)")
                let streaming = line.contains("curl -N")
                if streaming {
                    line = line.replacingOccurrences(of: "curl -N", with: "curl -N --max-time 1")
                }
                let process = try ChildProcess("/bin/sh", ["-c", line], output: .capture)
                let output = String(decoding: PipeReading.readToEnd(process.outputDescriptor), as: UTF8.self)
                process.waitUntilExit()
                // curl exits 28 when --max-time ends a stream that was working.
                #expect(process.terminationStatus == 0 || (streaming && process.terminationStatus == 28), "\(command): \(output)")
                outputs.append(output)
            }
            #expect(outputs[0].contains(#""from":0"#), "the creating PUT answers its changeset")
            #expect(outputs.contains { $0.contains(#""state":"#) }, "the JSON snapshot carries the PUT body")
            #expect(outputs.last?.contains(#""op":"reset""#) == true, "DELETE answers the final reset")
        }
    }
}
