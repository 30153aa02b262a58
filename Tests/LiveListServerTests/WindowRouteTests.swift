import Foundation
import LiveList
import LiveListEngine
import LiveListHTTP
import LiveListServer
import LiveListTestSupport
import Testing

/// The routes of windowed lists (docs/PROTOCOL.md, "Windowed lists"): `?at=KEY` pages, the range
/// route `GET /lists/NAME/cells` and its refusals, and catch-ups that become windowed resets.
@Suite struct WindowRouteTests {
    /// A PUT body of one section `s` of `count` cells `c0`, `c1`, ….
    static func list(_ count: Int, prefix: String = "c") -> String {
        #"{"sections":[{"id":"s","header":"Big","cells":["# + (0 ..< count).map { #"{"id":"\#(prefix)\#($0)","text":"Row \#($0)"}"# }
            .joined(separator: ",") + "]}]}"
    }

    static func cells(_ text: String) -> [String] {
        text.matches(of: /data-cell="([^"]*)"/).map { String($0.1) }
    }

    static func json(_ response: RouteResponse) throws -> [String: Any] {
        try #require(response.json, "\(response.text.prefix(500))")
    }

    @Test func aPageStartsAtTheCellItNamesAndIsNeverTheCachedOne() async throws {
        let client = try await RouteClient()
        #expect(try await client.put("/lists/big", json: Self.list(3_000)).status == 201)
        let first = try await client.get("/lists/big")
        #expect(Self.cells(first.text) == (0 ..< 100).map { "c\($0)" })
        for _ in 0 ..< 2 {  // the second time, a cached page exists for this version
            let at = try await client.get("/lists/big?at=c1500")
            #expect(at.status == 200)
            #expect(Self.cells(at.text) == (1_500 ..< 1_600).map { "c\($0)" })
            #expect(at.text.contains(#"data-first="1500""#) && at.text.contains(#"rel="prev""#))
            let gzip = try await client.get("/lists/big?at=c2000", headers: [("Accept-Encoding", "gzip")])
            #expect(gzip.status == 200 && gzip.header("Content-Encoding") == "gzip")
        }
        #expect(Self.cells(try await client.get("/lists/big").text).first == "c0", "the plain page is still the first window")
        // After a patch, a page starts at a cell the patch inserted (the index follows the list).
        let patch = #"{"ops":[{"op":"upsert","cell":{"id":"new","text":"New"},"section":"s","position":{"after":"c2499"}},{"op":"remove","cell":"c10"}]}"#
        #expect(try await client.send(.PATCH, "/lists/big", headers: [("Content-Type", "application/json")], body: Array(patch.utf8)).status == 200)
        let inserted = try await client.get("/lists/big?at=new")
        #expect(Self.cells(inserted.text).prefix(2) == ["new", "c2500"] && inserted.text.contains(#"data-first="2499""#), "\(inserted.text.prefix(300))")
        RouteTests.expectError(try await client.get("/lists/big?at=c10"), 404, "not_found")
        RouteTests.expectError(try await client.get("/lists/big?at=nope"), 404, "not_found")
    }

    @Test func theRangeRouteAnswersCellsAtTheCurrentVersionWithTheChangesThatLeadThere() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/big", json: Self.list(2_000))
        let current = try Self.json(try await client.get("/lists/big/cells?from=10&count=3&version=1"))
        #expect(current["version"] as? Int == 1 && current["total"] as? Int == 2_000 && current["from"] as? Int == 10)
        #expect(current["changes"] is NSNull)
        #expect((current["cells"] as? [[String: Any]])?.map { $0["key"] as? String } == ["c10", "c11", "c12"])
        let section = try #require((current["sections"] as? [[String: Any]])?.first)
        #expect(section["start"] as? Int == 0 && section["count"] as? Int == 2_000 && section["keys"] == nil)
        #expect((section["header"] as? String)?.contains("Big") == true)
        // A client at version 1 after a patch gets the patch's changeset first.
        let patch = #"{"ops":[{"op":"update","cell":{"id":"c11","text":"Changed"}}]}"#
        #expect(try await client.send(.PATCH, "/lists/big", headers: [("Content-Type", "application/json")], body: Array(patch.utf8)).status == 200)
        let behind = try Self.json(try await client.get("/lists/big/cells?from=10&count=3&version=1"))
        #expect(behind["version"] as? Int == 2)
        let changes = try #require(behind["changes"] as? [String: Any])
        #expect(changes["from"] as? Int == 1 && changes["version"] as? Int == 2)
        #expect((changes["ops"] as? [[String: Any]])?.map { $0["op"] as? String } == ["reload"])
        #expect(((behind["cells"] as? [[String: Any]])?[1]["html"] as? String)?.contains("Changed") == true)
        // Ahead of the server (another node served it further), or at it: no changes.
        #expect(try Self.json(try await client.get("/lists/big/cells?from=0&count=1&version=9"))["changes"] is NSNull)
        // Past the end: no cells.
        #expect((try Self.json(try await client.get("/lists/big/cells?from=5000&count=10"))["cells"] as? [Any])?.isEmpty == true)
    }

    @Test func keysGiveTheWholeOrderOfEverySection() async throws {
        let client = try await RouteClient()
        let body = #"{"sections":[{"id":"a","cells":[{"id":"x","text":"X"},{"id":"y","text":"Y"}]},{"id":"b","cells":[]},{"id":"c","footer":"F","cells":[{"id":"z","text":"Z"}]}]}"#
        _ = try await client.put("/lists/small", json: body)
        let answer = try Self.json(try await client.get("/lists/small/cells?from=0&count=0&keys=1"))
        let sections = try #require(answer["sections"] as? [[String: Any]])
        #expect(sections.map { $0["keys"] as? [String] } == [["x", "y"], [], ["z"]])
        #expect(sections.map { $0["start"] as? Int } == [0, 2, 2])
        #expect(sections.allSatisfy { $0["html"] is String } && (sections[2]["footer"] as? String)?.contains("F") == true)
        // Without keys, a section without cells in the range has no HTML.
        let plain = try #require(try Self.json(try await client.get("/lists/small/cells?from=2&count=1"))["sections"] as? [[String: Any]])
        #expect(plain.map { $0["html"] != nil } == [false, true, true])
    }

    @Test func badRangesAreRefusedClearly() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/big", json: Self.list(10))
        for query in ["count=-1", "from=x&count=1", "count=1001", "count=", "from=1&count=1&keys=yes", "from=1"] {
            RouteTests.expectError(try await client.get("/lists/big/cells?\(query)"), 400, "malformed_range")
        }
        RouteTests.expectError(try await client.get("/lists/big/cells?count=1&version=v1"), 400, "malformed_since")
        RouteTests.expectError(try await client.get("/lists/none/cells?count=1"), 404, "not_found")
    }

    @Test func theRangeRouteIsRefusedWhereThePageIs() async throws {
        let client = try await RouteClient { $0.readToken = "secret-token-value" }
        _ = try await client.put("/lists/big", json: Self.list(10))
        let refused = try await client.get("/lists/big/cells?count=1")
        #expect(refused.status == 401 && !refused.text.contains("c0"))
        let allowed = try await client.get("/lists/big/cells?count=1", headers: [("Authorization", "Bearer secret-token-value")])
        #expect(allowed.status == 200 && allowed.text.contains("c0"))
    }

    @Test func aLongCatchUpOfAWindowedListIsAWindowedReset() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/big", json: Self.list(1_500))
        _ = try await client.put("/lists/big", json: Self.list(1_500, prefix: "d"))  // 3,000 operations
        let catchUp = try Self.json(try await client.get("/lists/big/changes?since=1"))
        let op = try #require((catchUp["ops"] as? [[String: Any]])?.first)
        #expect(op["op"] as? String == "reset" && op["total"] as? Int == 1_500)
        #expect(((op["sections"] as? [[String: Any]])?.first?["cells"] as? [Any])?.count == 100)
        // A short one stays a diff.
        let patch = #"{"ops":[{"op":"remove","cell":"d7"}]}"#
        _ = try await client.send(.PATCH, "/lists/big", headers: [("Content-Type", "application/json")], body: Array(patch.utf8))
        #expect(try RouteTests.changeset(try await client.get("/lists/big/changes?since=2")).ops == ["delete"])
        // The snapshot is never windowed.
        let snapshot = try Self.json(try await client.get("/lists/big", headers: [("Accept", "application/json")]))
        #expect(((snapshot["sections"] as? [[String: Any]])?.first?["cells"] as? [Any])?.count == 1_499)
    }

    /// Real answers of the range route, for `Tools/python/livelist_tools/checks/protocol.py` (docs/schemas/cells.schema.json):
    /// written to `cells.jsonl` when LIVELIST_PROTOCOL_SAMPLES names a directory (Scripts/test sets it).
    @Test func writeRangeSamples() async throws {
        let client = try await RouteClient()
        let body = #"{"sections":[{"id":"a","header":"H","cells":[{"id":"x","text":"X"}]},{"id":"b","cells":[]},{"id":"c","footer":"F","cells":["#
            + (0 ..< 1_200).map { #"{"id":"k\#($0) \\u00e9\"<","text":"T\#($0)"}"# }.joined(separator: ",") + "]}]}"
        #expect(try await client.put("/lists/r", json: body).status == 201)
        _ = try await client.put("/lists/r", json: body.replacingOccurrences(of: "\"T", with: "\"U"))
        var lines: [[UInt8]] = []
        for query in ["from=0&count=3", "from=0&count=0&keys=1", "from=1&count=5&version=1", "from=0&count=2&version=0", "from=600&count=1000&version=2",
                      "from=5000&count=10", "from=1&count=1&version=99"] {
            let answer = try await client.get("/lists/r/cells?" + query)
            #expect(answer.status == 200, "\(query): \(answer.text.prefix(300))")
            lines.append(answer.body)
        }
        #expect(lines.contains { $0.count > 10_000 } && String(decoding: lines[3], as: UTF8.self).contains(#""total":1201"#))
        guard let directory = ProcessInfo.processInfo.environment["LIVELIST_PROTOCOL_SAMPLES"] else { return }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(lines.flatMap { $0 + [0x0A] }).write(to: URL(fileURLWithPath: directory + "/cells.jsonl"))
    }

    @Test func aListRenderedPerViewerIsWindowedWithEachViewersCells() async throws {
        let client = try await RouteClient()
        _ = try await client.app.registry.hostApp(listName("mine"), perViewer: { viewer in
            [Section(id: "s", cells: (0 ..< 1_500).map { CellNode(Echo(id: "c\($0)", text: "\(viewer.session ?? "nobody") \($0)")) })]
        })
        let page = try await client.get("/lists/mine", headers: [("Accept", "text/html")])
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        #expect(Self.cells(page.text).count == 100 && page.text.contains(#"data-window="true""#))
        let at = try await client.get("/lists/mine?at=c700", headers: [("Accept", "text/html"), ("Cookie", cookie)])
        #expect(Self.cells(at.text).first == "c700")
        let mine = try Self.json(try await client.get("/lists/mine/cells?from=1200&count=2", headers: [("Cookie", cookie)]))
        let html = ((mine["cells"] as? [[String: Any]]) ?? []).compactMap { $0["html"] as? String }
        #expect(html.count == 2 && html.allSatisfy { !$0.contains("nobody") }, "\(html)")
        let anonymous = try Self.json(try await client.get("/lists/mine/cells?from=1200&count=1"))
        #expect(((anonymous["cells"] as? [[String: Any]])?.first?["html"] as? String)?.contains("nobody 1200") == true)
    }
}
