import Foundation
import LiveListHTML
import LiveListTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on `count` threads of their own, released together by a barrier, and returns what each
/// returned (in thread order). Real threads, not tasks: the writes must really race.
func race<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = Mutex<[Int: T]>([:])
    let ready = Atomic<Int>(0)
    let go = Atomic<Bool>(false)
    let group = DispatchGroup()
    for index in 0 ..< count {
        group.enter()
        let thread = Thread {
            ready.add(1, ordering: .relaxed)
            while !go.load(ordering: .acquiring) { sched_yield() }
            let value = body(index)
            results.withLock { $0[index] = value }
            group.leave()
        }
        thread.start()
    }
    while ready.load(ordering: .relaxed) < count { sched_yield() }
    go.store(true, ordering: .releasing)
    group.wait()
    return results.withLock { results in (0 ..< count).map { results[$0]! } }
}

/// How many writes racing threads have had acknowledged, for a kill that lands after a given number
/// of them rather than after a fixed time (which, on a loaded machine, may come before any).
final class ProgressCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .releasing) }

    /// Kills `server` with SIGKILL, on a thread of its own, once `threshold` writes were acknowledged
    /// (or after a minute, when the writers stopped first).
    func kill(_ server: LiveServer, after threshold: Int) {
        let killer = Thread { [self] in
            let deadline = Date().addingTimeInterval(60)
            while count.load(ordering: .acquiring) < threshold, Date() < deadline { usleep(500) }
            server.stop(kill: true)
        }
        killer.start()
    }
}

/// A PUT body with one section of `ids`, each cell's text saying who wrote it.
private func state(_ ids: [String], writer: String) -> String {
    #"{"sections":[{"id":"s","cells":["# + ids.map { #"{"id":"\#($0)","text":"\#(writer)"}"# }.joined(separator: ",") + "]}]}"
}

/// The answer of one racing write: its status and the version it acknowledged (nil when refused).
private struct Answer: Sendable, CustomStringConvertible {
    var status: Int
    var version: Int?
    var writer: String

    init(_ response: Response?, writer: String) {
        self.writer = writer
        status = response?.status ?? 0
        version = (response?.status ?? 500) < 300 ? response.flatMap { try? decodeChangeset($0.body).version } : nil
    }

    var description: String { "\(writer): \(status) v\(version.map(String.init) ?? "-")" }
}

/// The state body a list serves (its snapshot's `state`), as text.
private func servedState(_ name: String, port: Int) throws -> (version: Int, state: String)? {
    let response = try Client.get("/lists/\(name)", port: port, headers: [("Accept", "application/json")])
    guard response.status == 200 else { return nil }
    guard let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
        let version = object["version"] as? Int, let state = object["state"]
    else { throw ServerError("no version or state in \(response.text)") }
    let data = try JSONSerialization.data(withJSONObject: state, options: [.sortedKeys])
    return (version, String(decoding: data, as: UTF8.self))
}

private func normalized(_ json: String) throws -> String {
    let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
    return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

/// Writes racing on the real binary: one ordered path per list (docs/ARCHITECTURE.md).
@Suite struct RaceTests {
    @Test func racingCreatesMakeOneListAndTheLastAcknowledgedWriteWins() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-race-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            var expected: [String: (version: Int, state: String)] = [:]
            do {
                let server = try LiveServer(dataDirectory: data)
                defer { server.stop() }
                let port = server.port
                for round in 0 ..< 6 {
                    let name = "created\(round)"
                    let answers = race(12) { writer in
                        Answer(try? Client.put("/lists/\(name)", port: port, json: state(["a", "b\(writer)"], writer: "w\(writer)")), writer: "w\(writer)")
                    }
                    #expect(answers.filter { $0.status == 201 }.count == 1, "round \(round): \(answers)")
                    #expect(answers.allSatisfy { $0.status == 200 || $0.status == 201 }, "round \(round): \(answers)")
                    let versions = answers.compactMap(\.version)
                    #expect(versions.count == answers.count, "round \(round): every write acknowledged a version: \(answers)")
                    #expect(Set(versions).count == versions.count, "round \(round): a version was handed out twice: \(answers)")
                    // The final state is the write with the highest acknowledged version.
                    let last = try #require(answers.max { ($0.version ?? 0) < ($1.version ?? 0) })
                    let served = try #require(try servedState(name, port: port))
                    #expect(served.version == last.version)
                    let index = Int(last.writer.dropFirst())!
                    #expect(served.state == (try normalized(state(["a", "b\(index)"], writer: last.writer))), "round \(round)")
                    expected[name] = served
                }
            }
            // A restart serves exactly what was acknowledged.
            let server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            for (name, before) in expected {
                let after = try #require(try servedState(name, port: server.port))
                #expect(after.version == before.version && after.state == before.state, "\(name) changed across a restart")
            }
        }
    }

    @Test func putRacingDeleteNeverSharesAVersionNorResurrectsAfterARestart() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-race-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            var exists: [String: Bool] = [:]
            do {
                let server = try LiveServer(dataDirectory: data)
                defer { server.stop() }
                let port = server.port
                for round in 0 ..< 10 {
                    let name = "pd\(round)"
                    #expect(try Client.put("/lists/\(name)", port: port, json: state(["a"], writer: "first")).status == 201)
                    let answers = race(2) { writer in
                        writer == 0
                            ? Answer(try? Client.put("/lists/\(name)", port: port, json: state(["b"], writer: "put")), writer: "put")
                            : Answer(try? Client.request("DELETE", "/lists/\(name)", port: port), writer: "delete")
                    }
                    let put = answers[0], delete = answers[1]
                    // Both always succeed: the PUT replaces (200) or, after the DELETE, creates (201) the list.
                    #expect(put.status == 200 || put.status == 201, "round \(round): \(answers)")
                    #expect(delete.status == 200, "round \(round): \(answers)")
                    let putVersion = try #require(put.version, "round \(round): \(answers)")
                    let deleteVersion = try #require(delete.version, "round \(round): \(answers)")
                    #expect(putVersion != deleteVersion, "round \(round): both acknowledged one version: \(answers)")
                    let served = try servedState(name, port: port)
                    let putLast = putVersion > deleteVersion
                    #expect((served != nil) == putLast, "round \(round): \(answers), served \(String(describing: served))")
                    exists[name] = served != nil
                }
            }
            let server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            for (name, existed) in exists {
                let status = try Client.get("/lists/\(name)", port: server.port, headers: [("Accept", "application/json")]).status
                #expect(status == (existed ? 200 : 404), "\(name) came back or went away across a restart")
            }
        }
    }

    @Test func theListLimitHoldsUnderRacingCreates() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--max-lists", "5", "--no-demo"])
            defer { server.stop(); server.removeData() }
            let port = server.port
            let answers = race(20) { writer in
                Answer(try? Client.put("/lists/limit\(writer)", port: port, json: state(["a"], writer: "w\(writer)")), writer: "w\(writer)")
            }
            #expect(answers.filter { $0.status == 201 }.count == 5, "\(answers)")
            #expect(answers.filter { $0.status == 422 }.count == 15, "\(answers)")
        }
    }

    @Test func aSecondServerOnTheSameDataFolderIsRefused() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let error = #expect(throws: ServerError.self) { try LiveServer(dataDirectory: server.dataDirectory) }
            #expect(error?.description.contains("in use by another livelist process") == true, "\(String(describing: error))")
            // The first one still serves and still writes.
            #expect(try Client.put("/lists/still", port: server.port, json: state(["a"], writer: "w")).status == 201)
        }
    }

    @Test func versionsStopWithAClearErrorBeforeJavaScriptLosesPrecision() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-huge-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            do {
                let server = try LiveServer(dataDirectory: data)
                #expect(try Client.put("/lists/big", port: server.port, json: state(["a"], writer: "w")).status == 201)
                server.stop()
            }
            // An operator's copy of a list near the end of its versions.
            let path = data + "/lists/big.list"
            let stored = try String(contentsOfFile: path, encoding: .utf8)
            let body = stored[stored.index(after: stored.firstIndex(of: "\n")!)...]
            try ("livelist-list 1 9007199254740990\n" + body).write(toFile: path, atomically: true, encoding: .utf8)
            let server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            let last = try Client.put("/lists/big", port: server.port, json: state(["b"], writer: "w"))
            #expect(last.status == 200 && last.header("ETag") == "\"9007199254740991\"", "\(last.status) \(last.text)")
            let refused = try Client.put("/lists/big", port: server.port, json: state(["c"], writer: "w"))
            #expect(refused.status == 409 && refused.text.contains("version_exhausted"), "\(refused.status) \(refused.text)")
            #expect(try Client.get("/healthz", port: server.port).status == 200, "the server lives on")
        }
    }

    @Test func killNineDuringConcurrentWritersLosesNoAcknowledgedWrite() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-kill-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            var acknowledged: [String: Int] = [:]
            for round in 0 ..< 3 {
                let server = try LiveServer(dataDirectory: data)
                let port = server.port
                let acknowledgedThisRound = ProgressCounter()
                let threshold = Int.random(in: 10 ... 40)
                print("RaceTests: round \(round) kills after \(threshold) acknowledged writes")
                acknowledgedThisRound.kill(server, after: threshold)
                let answers = race(6) { writer in
                    var seen: [(String, Int)] = []
                    for step in 0 ..< 500 {
                        let name = "k\(writer % 3)"
                        guard let response = try? Client.put("/lists/\(name)", port: port, json: state(["c\(step)", "r\(round)"], writer: "w\(writer)")),
                            response.status < 300, let version = try? decodeChangeset(response.body).version
                        else { break }
                        seen.append((name, version))
                        acknowledgedThisRound.increment()
                    }
                    return seen.map { "\($0.0) \($0.1)" }
                }
                while server.process.isRunning { usleep(1_000) }
                for line in answers.joined() {
                    let parts = line.split(separator: " ")
                    acknowledged[String(parts[0])] = max(acknowledged[String(parts[0])] ?? 0, Int(parts[1])!)
                }
            }
            #expect(!acknowledged.isEmpty, "some writes were acknowledged before the kills")
            let server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            for (name, version) in acknowledged {
                let served = try #require(try servedState(name, port: server.port), "\(name) was lost")
                #expect(served.version >= version, "\(name): acknowledged \(version), restored \(served.version)")
            }
        }
    }
}
