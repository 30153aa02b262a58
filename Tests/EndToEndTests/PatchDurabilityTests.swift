import Foundation
import LiveListHTML
import LiveListTestSupport
import Testing

/// A list's snapshot (version and state) as the real binary serves it.
private func snapshot(_ name: String, port: Int) throws -> (version: Int, state: JSONListState)? {
    let response = try Client.get("/lists/\(name)", port: port, headers: [("Accept", "application/json")])
    guard response.status == 200 else { return nil }
    guard let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
        let version = object["version"] as? Int, let state = object["state"]
    else { throw ServerError("no version or state in \(response.text)") }
    return (version, try JSONListState.decode(Array(try JSONSerialization.data(withJSONObject: state)), limits: .unlimited))
}

private func patch(_ name: String, port: Int, _ operations: String) throws -> RawHTTPResponse {
    try Client.request("PATCH", "/lists/\(name)", port: port, headers: [("Content-Type", "application/json")],
                       body: Array(#"{"ops":[\#(operations)]}"#.utf8))
}

/// Patches on the real binary, its data folder killed and read again (docs/ARCHITECTURE.md, the file
/// store's log of patches).
@Suite struct PatchDurabilityTests {
    /// Writers append cells and change one cell's text while the server is killed with SIGKILL, three
    /// times: the list is small, so its log is compacted every few dozen patches and the kills land in
    /// appends and compactions alike. Every acknowledged patch is in the list served afterwards.
    @Test func killNineDuringPatchesAndCompactionsLosesNoAcknowledgedPatch() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-patch-kill-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            var acknowledged: [String] = []
            var highest = 0
            for round in 0 ..< 3 {
                let server = try LiveServer(dataDirectory: data)
                let port = server.port
                if round == 0 {
                    let cells = (0 ..< 40).map { #"{"id":"base\#($0)","text":"t"}"# }.joined(separator: ",")
                    let created = try Client.put("/lists/feed", port: port, json: #"{"sections":[{"id":"s","cells":[\#(cells)]}]}"#)
                    #expect(created.status == 201, "\(created.text)")
                }
                // The kill follows the writers' progress, not the clock: on a loaded machine a fixed delay
                // can end a round before enough patches were acknowledged to reach a compaction.
                let acknowledgedThisRound = ProgressCounter()
                let threshold = Int.random(in: 20 ... 60)
                print("PatchDurabilityTests: round \(round) kills after \(threshold) acknowledged patches")
                acknowledgedThisRound.kill(server, after: threshold)
                let answers = race(3) { writer in
                    var seen: [(String, Int)] = []
                    for step in 0 ..< 2_000 {
                        let id = "r\(round)w\(writer)s\(step)"
                        let operations = #"{"op":"upsert","cell":{"id":"\#(id)","text":"x"},"section":"s"},{"op":"update","cell":{"id":"base\#(step % 40)","text":"\#(id)"}}"#
                        guard let response = try? patch("feed", port: port, operations), response.status == 200,
                            let version = response.header("ETag").flatMap({ Int($0.filter(\.isNumber)) })
                        else { break }
                        seen.append((id, version))
                        acknowledgedThisRound.increment()
                    }
                    return seen
                }
                while server.process.isRunning { usleep(1_000) }
                for (id, version) in answers.joined() {
                    acknowledged.append(id)
                    highest = max(highest, version)
                }
            }
            #expect(acknowledged.count >= 60, "patches were acknowledged before the kills: \(acknowledged.count)")
            let server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            let served = try #require(try snapshot("feed", port: server.port), "the list was lost")
            #expect(served.version >= highest, "acknowledged version \(highest), restored \(served.version)")
            let ids = Set(served.state.sections.flatMap { $0.cells.map(\.id) })
            let lost = acknowledged.filter { !ids.contains($0) }
            #expect(lost.isEmpty, "acknowledged patches lost: \(lost.prefix(5)) of \(lost.count)")
            // And it takes patches again after its torn log, if any, was cut.
            #expect(try patch("feed", port: server.port, #"{"op":"remove","cell":"base0"}"#).status == 200)
        }
    }

    /// A stop after patches (compacted or not) and a start read the same list.
    @Test func aRestartReadsThePatchedListAsItWasServed() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-patch-restart-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            var server = try LiveServer(dataDirectory: data)
            _ = try Client.put("/lists/log", port: server.port, json: #"{"sections":[{"id":"s","header":"H","cells":[{"id":"a","text":"a"}]}]}"#)
            var seen: [Int: JSONListState] = [:]
            for step in 0 ..< 120 {
                let operations = step % 7 == 3
                    ? #"{"op":"upsertSection","section":{"id":"t\#(step)","footer":"f"},"position":"first"}"#
                    : #"{"op":"upsert","cell":{"id":"c\#(step)","text":"\#(step)","detail":"d"},"section":"s","position":{"after":"a"}},{"op":"update","cell":{"id":"a","text":"\#(step)"}}"#
                #expect(try patch("log", port: server.port, operations).status == 200)
                if step % 40 == 39 {
                    let before = try #require(try snapshot("log", port: server.port))
                    seen[before.version] = before.state
                    server.stop()
                    server = try LiveServer(dataDirectory: data)
                    let after = try #require(try snapshot("log", port: server.port))
                    #expect(after.version == before.version && after.state == before.state, "step \(step)")
                }
            }
            server.stop()
            #expect(seen.count == 3)
        }
    }

    /// A data folder the previous release wrote (Tests/EndToEndTests/Fixtures/data-previous-release,
    /// made by commit 2fc66d1's binary: a list `kept` at version 3 in two sections, and `gone`, deleted
    /// at version 2) is served as it was, and takes patches.
    @Test func aDataFolderOfThePreviousReleaseIsServedAndPatched() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-previous-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            try FileManager.default.copyItem(atPath: LiveServer.root + "/Tests/EndToEndTests/Fixtures/data-previous-release", toPath: data)
            var server = try LiveServer(dataDirectory: data)
            let kept = try #require(try snapshot("kept", port: server.port), "the list was lost")
            #expect(kept.version == 3)
            #expect(kept.state.sections.map(\.id) == ["s", "t"])
            #expect(kept.state.sections[0].cells.map(\.text) == ["A", "B", "C <&>"] && kept.state.sections[1].cells.map(\.text) == ["é"])
            #expect(try snapshot("gone", port: server.port) == nil, "the deleted list came back")
            let patched = try patch("kept", port: server.port, #"{"op":"update","cell":{"id":"a","text":"patched"}}"#)
            #expect(patched.status == 200 && patched.header("ETag") == "\"4\"", "\(patched.text)")
            server.stop()
            server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            let again = try #require(try snapshot("kept", port: server.port))
            #expect(again.version == 4 && again.state.sections[0].cells[0].text == "patched")
            let created = try Client.put("/lists/gone", port: server.port, json: #"{"sections":[]}"#)
            #expect(created.status == 201 && created.header("ETag") == "\"3\"", "\(created.text)")
        }
    }
}
