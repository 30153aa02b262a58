import Foundation
import LiveListTestSupport
import Testing

/// The binary's configuration is read in one place: a flag wins over its `LIVELIST_*` variable, which
/// wins over the default, and a variable that does not read stops start-up naming it, as a flag does.
@Suite struct ConfigurationTests {
    /// Runs the binary under `env` with `variables` set, until it exits or `seconds` pass; its standard
    /// error, and its exit status (nil when it still ran and was stopped).
    private func run(_ variables: [String], _ arguments: [String], seconds: Double = 10) throws -> (status: Int32?, errors: String) {
        let process = try ChildProcess("/usr/bin/env", variables + [LiveServer.binary] + arguments, errors: .capture)
        var text = ""
        var ended = false
        let deadline = Date().addingTimeInterval(seconds)
        reading: while Date() < deadline {
            switch PipeReading.read(process.errorDescriptor, waitingMilliseconds: 100) {
            case let .bytes(chunk): text += String(decoding: chunk, as: UTF8.self)
            case .nothing: if text.contains("serving on") { break reading }
            case .end: ended = true; break reading
            }
        }
        if !ended {
            process.terminate()
            process.waitUntilExit()
            return (nil, text)
        }
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func aVariableThatDoesNotReadStopsStartUpNamingIt() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-config-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            let refused = try run(["LIVELIST_PORT=abc"], ["--data", data, "--no-demo"])
            #expect(refused.status != nil && refused.status != 0, "the server started on LIVELIST_PORT=abc: \(refused.errors)")
            #expect(refused.errors.contains("LIVELIST_PORT: abc is not a port number"), "\(refused.errors)")
            let loops = try run(["LIVELIST_EVENT_LOOPS=many"], ["--data", data, "--no-demo", "--port", "0"])
            #expect(loops.status != nil && loops.status != 0 && loops.errors.contains("LIVELIST_EVENT_LOOPS"), "\(loops.errors)")
            // The flag wins over the variable.
            let flagged = try run(["LIVELIST_PORT=abc"], ["--data", data, "--no-demo", "--port", "0"])
            #expect(flagged.status == nil && flagged.errors.contains("serving on http://127.0.0.1:"), "\(flagged.errors)")
            // The settings that size a node: a variable out of range stops start-up, a flag wins over it.
            let slice = try run(["LIVELIST_FAN_OUT_SLICE=0"], ["--data", data, "--no-demo", "--port", "0"])
            #expect(slice.status != nil && slice.status != 0 && slice.errors.contains("LIVELIST_FAN_OUT_SLICE: 0 is not a number of streams"), "\(slice.errors)")
            let buffer = try run([], ["--data", data, "--no-demo", "--port", "0", "--stream-send-buffer", "100"])
            #expect(buffer.status != nil && buffer.status != 0 && buffer.errors.contains("--stream-send-buffer"), "\(buffer.errors)")
            let sized = try run(["LIVELIST_FAN_OUT_SLICE=0", "LIVELIST_STREAM_OUTPUT_BUDGET=33554432"],
                                ["--data", data, "--no-demo", "--port", "0", "--fan-out-slice", "250", "--stream-send-buffer", "0"])
            #expect(sized.status == nil && sized.errors.contains("serving on http://127.0.0.1:"), "\(sized.errors)")
            let probe = try run(["LIVELIST_PORT=abc"], ["healthcheck"])
            #expect(probe.status != nil && probe.status != 0 && probe.errors.contains("LIVELIST_PORT: abc"), "\(probe.errors)")
        }
    }
}
