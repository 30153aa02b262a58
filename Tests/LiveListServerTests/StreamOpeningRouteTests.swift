import Foundation
import LiveListHTML
import LiveListServer
import Testing

/// The opening of the event streams, which goes with their head (docs/PROTOCOL.md, "Stream framing"):
/// where each stream starts, as its `id:` and as JSON data, with `retry:`. What follows it over real
/// sockets: EndToEndTests' StreamOpeningTests.
@Suite struct StreamOpeningRouteTests {
    /// The opening's fields: (id, data as JSON), after checking the framing around them.
    static func opening(_ response: RouteResponse, sourceLocation: SourceLocation = #_sourceLocation) throws -> (id: String, data: [String: Any]) {
        #expect(response.status == 200 && response.isStream, "\(response.text)", sourceLocation: sourceLocation)
        let lines = response.text.split(separator: "\n", omittingEmptySubsequences: false)
        try #require(lines.count == 6, "\(response.text)", sourceLocation: sourceLocation)
        #expect(lines[0] == "event: stream" && lines[2] == "retry: 1500" && lines[4].isEmpty && lines[5].isEmpty, "\(response.text)",
                sourceLocation: sourceLocation)
        let id = try #require(lines[1].hasPrefix("id: ") ? String(lines[1].dropFirst(4)) : nil, sourceLocation: sourceLocation)
        let data = try #require(lines[3].hasPrefix("data: ") ? Data(lines[3].dropFirst(6).utf8) : nil, sourceLocation: sourceLocation)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], sourceLocation: sourceLocation)
        #expect(json["protocol"] as? Int == 1, sourceLocation: sourceLocation)
        return (id, json)
    }

    @Test func aListsStreamOpensAtTheVersionItDeliversFrom() async throws {
        let client = try await RouteClient { $0.retryMilliseconds = 1_500 }
        _ = try await client.put("/lists/g", json: RouteTests.list(["a"]))
        _ = try await client.put("/lists/g", json: RouteTests.list(["a", "b"]))
        for (path, headers, expected) in [("/lists/g/events", [], 2), ("/lists/g/events?since=1", [], 1),
                                          ("/lists/g/events?since=2", [("Last-Event-ID", "1")], 1),
                                          ("/lists/g/events", [("Last-Event-ID", "99")], 99),
                                          ("/lists/g/events", [("Last-Event-ID", "g:1")], -1)] {
            let (id, data) = try Self.opening(try await client.get(path, headers: headers))
            #expect(id == String(expected), "\(path) \(headers)")
            #expect(data["list"] as? String == "g" && data["version"] as? Int == expected && data.count == 3, "\(path) \(headers)")
        }
    }

    @Test func theMultiplexedStreamOpensWithItsTokenAndVector() async throws {
        let client = try await RouteClient { $0.retryMilliseconds = 1_500 }
        _ = try await client.put("/lists/a", json: RouteTests.list(["x"]))
        _ = try await client.put("/lists/b", json: RouteTests.list(["x"]))
        _ = try await client.put("/lists/b", json: RouteTests.list(["y"]))
        // A browser's stream (with the session cookie of a page view) is named by a token; a script's,
        // without a session, is not (nobody may change its lists).
        let page = try await client.get("/lists/a", headers: [("Accept", "text/html")])
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let (id, data) = try Self.opening(try await client.get("/events?list=b&list=none&list=a&since=a:1", headers: [("Cookie", cookie)]))
        #expect(id == "b:2,none:0,a:1")
        #expect(data["versions"] as? [String: Int] == ["a": 1, "b": 2, "none": 0])
        #expect((data["stream"] as? String)?.wholeMatch(of: /[0-9a-f]{32}/) != nil && data.count == 3)
        let script = try Self.opening(try await client.get("/events?list=b&list=a"))
        #expect(script.data["stream"] == nil && script.data.count == 2 && script.id == "b:2,a:1")
        let resumed = try Self.opening(try await client.get("/events?list=a&list=b&since=a:1,b:1", headers: [("Last-Event-ID", "a:0")]))
        #expect(resumed.id == "a:0,b:2", "Last-Event-ID wins; a list it does not name starts at its version now")
        #expect(try Self.opening(try await client.get("/events?list=a&list=b", headers: [("Last-Event-ID", "junk")])).id == "a:-1,b:-1")
    }

    /// A list its viewer may not see is in the vector at the version the client gave, else 0: its
    /// version is never told.
    @Test func aRefusedListsVersionIsNeverTold() async throws {
        let client = try await RouteClient { $0.retryMilliseconds = 1_500 }
        _ = try await client.put("/lists/open", json: RouteTests.list(["x"]))
        _ = try await client.put("/lists/secret", json: RouteTests.list(["x"]))
        _ = try await client.put("/lists/secret", json: RouteTests.list(["y"]))
        try await client.app.access("secret") { _ in .none }
        let (id, data) = try Self.opening(try await client.get("/events?list=open&list=secret"))
        #expect(id == "open:1,secret:0" && data["versions"] as? [String: Int] == ["open": 1, "secret": 0])
        #expect(try Self.opening(try await client.get("/events?list=open&list=secret&since=secret:7")).id == "open:1,secret:7")
    }

    /// Real openings, for `Tools/python/livelist_tools/checks/protocol.py` (docs/schemas/stream.schema.json): written to
    /// `streams.jsonl` when LIVELIST_PROTOCOL_SAMPLES names a directory (Scripts/test sets it).
    @Test func writeOpeningSamples() async throws {
        let client = try await RouteClient { $0.retryMilliseconds = 1_500 }
        _ = try await client.put("/lists/g", json: RouteTests.list(["a"]))
        var lines: [[UInt8]] = []
        for (path, headers) in [("/lists/g/events", []), ("/lists/g/events?since=0", []), ("/lists/g/events", [("Last-Event-ID", "x")]),
                                ("/events?list=g&list=h.i_j-k", []), ("/events?list=g", [("Last-Event-ID", "x")])] {
            let response = try await client.get(path, headers: headers)
            _ = try Self.opening(response)
            let data = try #require(response.text.split(separator: "\n").first { $0.hasPrefix("data: ") })
            lines.append(Array(data.dropFirst(6).utf8))
        }
        guard let directory = ProcessInfo.processInfo.environment["LIVELIST_PROTOCOL_SAMPLES"] else { return }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(lines.flatMap { $0 + [0x0A] }).write(to: URL(fileURLWithPath: directory + "/streams.jsonl"))
    }
}
