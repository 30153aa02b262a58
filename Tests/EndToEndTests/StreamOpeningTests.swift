import Foundation
import LiveListHTML
import LiveListTestSupport
import Testing

private func cells(_ ids: [String]) -> String {
    #"{"sections":[{"id":"s","cells":["# + ids.map { #"{"id":"\#($0)","text":"\#($0)"}"# }.joined(separator: ",") + "]}]}"
}

/// The opening of both kinds of stream (docs/PROTOCOL.md, "Stream framing"): its id is where the stream
/// starts, and a client that resumes from it after changes made while it was away gets every one of
/// them, in order, whether or not a change had reached it before it left.
@Suite struct StreamOpeningTests {
    @Test func everyStreamOpensWithWhereItStarts() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for name in ["a", "b"] { _ = try Client.put("/lists/\(name)", port: server.port, json: cells(["x"])) }
            _ = try Client.put("/lists/b", port: server.port, json: cells(["x", "y"]))
            let live = try EventStream(path: "/lists/b/events", port: server.port)
            let opening = try #require(try live.opening())
            #expect(opening.id == "2" && opening.data == #"{"protocol":1,"list":"b","version":2}"#)
            // Resumed: the version it resumes from, then what it missed.
            let resumed = try EventStream(path: "/lists/b/events?since=1", port: server.port)
            #expect(try resumed.opening()?.id == "1")
            #expect(try #require(try resumed.next()).data.contains(#""list":"b","from":1,"version":2"#))
            let page = try Client.get("/lists/a", port: server.port, headers: [("Accept", "text/html")])
            let cookie = String(try #require(page.header("Set-Cookie")?.split(separator: ";").first))
            let multiplexed = try EventStream(path: "/events?list=a&list=b&list=none&since=b:1", port: server.port, headers: [("Cookie", cookie)])
            let vector = try #require(try multiplexed.opening())
            #expect(vector.id == "a:1,b:1,none:0")
            let data = try #require(try JSONSerialization.jsonObject(with: Data(vector.data.utf8)) as? [String: Any])
            #expect(data["versions"] as? [String: Int] == ["a": 1, "b": 1, "none": 0] && data["protocol"] as? Int == 1)
            #expect((data["stream"] as? String)?.count == 32 && multiplexed.token == data["stream"] as? String)
            // A Last-Event-ID the server never gave: resets, from -1.
            let bad = try EventStream(path: "/lists/a/events", port: server.port, headers: [("Last-Event-ID", "garbage")])
            #expect(try bad.opening()?.id == "-1")
            #expect(try decodeChangeset(Array(try #require(try bad.next()).data.utf8)).isReset)
        }
    }

    /// Streams opened while another client keeps writing: whatever the opening says, the next event
    /// of each list continues from exactly there (a write between deciding the start and subscribing
    /// comes as a catch-up, never lost).
    @Test func anOpeningRacingWritesIsFollowedByEveryChangeAfterIt() async throws {
        try await offThePool {
            // Data in memory where the machine has it: writes that wait on no disk come often enough for
            // some to land between a stream's start and its subscription.
            let memory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/livelist-e2e-\(UUID().uuidString)" : nil
            let server = try LiveServer(dataDirectory: memory)
            defer { server.stop(); server.removeData() }
            for name in ["r", "s"] { _ = try Client.put("/lists/\(name)", port: server.port, json: cells(["a"])) }
            let stop = StopFlag()
            let stopped = [StopFlag(), StopFlag()]
            let port = server.port
            for (name, done) in zip(["r", "s"], stopped) {
                Thread {
                    var round = 0
                    while !stop.isSet {
                        round += 1
                        _ = try? Client.put("/lists/\(name)", port: port, json: cells(["a", "w\(round)"]))
                    }
                    done.set()
                }.start()
            }
            defer {
                stop.set()
                while !stopped.allSatisfy(\.isSet) { usleep(1_000) }
            }
            for round in 0 ..< 60 {
                let path = round % 2 == 0 ? "/lists/r/events" : "/events?list=r&list=s"
                let stream = try EventStream(path: path, port: server.port)
                let opening = try #require(try stream.opening())
                var starts: [String: String] = [:]
                for item in opening.id.split(separator: ",") {
                    let parts = item.split(separator: ":")
                    starts[parts.count == 2 ? String(parts[0]) : "r"] = String(parts.last ?? "")
                }
                while !starts.isEmpty {
                    let event = try #require(try stream.next(timeout: 5), "\(path): the next change after \(opening.id)")
                    let changeset = try decodeChangeset(Array(event.data.utf8))
                    guard let start = starts.removeValue(forKey: changeset.list) else { continue }
                    #expect(String(changeset.from) == start, "\(path) opened at \(opening.id); \(changeset.list)'s next is \(changeset.from)→\(changeset.version)")
                }
                stream.close()
            }
        }
    }

    @Test func aListsStreamResumedFromItsOpeningGetsEveryChangeMadeWhileAway() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--heartbeat", "0.2"])
            defer { server.stop(); server.removeData() }
            _ = try Client.put("/lists/g", port: server.port, json: cells(["a"]))
            var (version, model) = try snapshot("g", port: server.port)
            let first = try EventStream(path: "/lists/g/events", port: server.port)
            let id = try #require(try first.opening()?.id)
            #expect(id == String(version))
            first.close()
            for pool in [["a", "b"], ["c", "a", "b"], ["c", "b"]] {
                #expect(try Client.put("/lists/g", port: server.port, json: cells(pool)).status == 200)
            }
            let resumed = try EventStream(path: "/lists/g/events", port: server.port, headers: [("Last-Event-ID", id)])
            #expect(try resumed.opening()?.id == id)
            // What it missed, in one diff from where it left (with this change too when the change
            // lands before the stream has subscribed), then the change.
            _ = try Client.put("/lists/g", port: server.port, json: cells(["b"]))
            var events = 0
            while version != 5 {
                let event = try #require(try resumed.next(), "every change up to 5, after \(version)")
                let changeset = try decodeChangeset(Array(event.data.utf8))
                #expect(changeset.from == version && !changeset.isReset && event.id == String(changeset.version))
                try model.apply(changeset)
                version = changeset.version
                events += 1
            }
            #expect(events <= 2)
            let current = try snapshot("g", port: server.port)
            #expect(version == current.version && model == current.model)
        }
    }

    @Test func theMultiplexedStreamResumedFromItsOpeningGetsEveryChangeMadeWhileAway() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--heartbeat", "0.2"])
            defer { server.stop(); server.removeData() }
            var models: [String: (version: Int, model: ListModel)] = [:]
            for name in ["a", "b"] {
                _ = try Client.put("/lists/\(name)", port: server.port, json: cells(["x"]))
                models[name] = try snapshot(name, port: server.port)
            }
            let first = try EventStream(path: "/events?list=a&list=b", port: server.port)
            let id = try #require(try first.opening()?.id)
            #expect(id == "a:1,b:1")
            first.close()
            _ = try Client.put("/lists/a", port: server.port, json: cells(["x", "y"]))
            _ = try Client.put("/lists/b", port: server.port, json: cells(["y", "x"]))
            _ = try Client.put("/lists/a", port: server.port, json: cells(["z", "x", "y"]))
            let resumed = try EventStream(path: "/events?list=a&list=b", port: server.port, headers: [("Last-Event-ID", id)])
            #expect(try resumed.opening()?.id == "a:1,b:1")
            _ = try Client.put("/lists/b", port: server.port, json: cells(["y"]))
            var ids: [String] = []
            while models["a"]?.version != 3 || models["b"]?.version != 3 {
                let event = try #require(try resumed.next(), "every change of a and b; got \(ids)")
                let changeset = try decodeChangeset(Array(event.data.utf8))
                var held = try #require(models[changeset.list])
                #expect(changeset.from == held.version && !changeset.isReset, "\(changeset.list) \(changeset.from)→\(changeset.version) after \(held.version)")
                try held.model.apply(changeset)
                held.version = changeset.version
                models[changeset.list] = held
                ids.append(event.id)
            }
            // One catch-up per list (b's last change with it when it lands before b subscribed), then
            // b's change.
            #expect(ids.count <= 3 && ids.last == "a:3,b:3")
            for name in ["a", "b"] {
                let current = try snapshot(name, port: server.port)
                #expect(models[name]?.version == current.version && models[name]?.model == current.model)
            }
        }
    }
}
