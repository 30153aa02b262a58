import LiveListHTML
@testable import LiveListServer
@testable import LiveListEngine
import Synchronization
import LiveListTestSupport
import Testing

/// Counts the visibility reports a component gets.
final class SightLog: Sendable {
    private let counts = Mutex([String: Int]())
    func record(_ event: String) { counts.withLock { $0[event, default: 0] += 1 } }
    func count(_ event: String) -> Int { counts.withLock { $0[event] ?? 0 } }
}

/// A header or footer that asks for visibility reports.
struct Banner: Component {
    var title: String
    var log: SightLog
    var asks = true
    var reportsVisibility: Bool { asks }
    func contentWillDisplay() { log.record("will \(title)") }
    func contentDidEndDisplay() { log.record("end \(title)") }
    var body: some HTML { title }
}

/// Headers and footers report their visibility like cells: marked in the page, and their component
/// called when the browser posts `{"type": "visible", "section": KEY, "part": "header"}`.
@Suite struct SupplementaryVisibilityTests {
    @Test func headersAndFootersThatAskAreMarkedAndCalled() async throws {
        let log = SightLog()
        let registry = try await ListRegistry(store: MemoryListStore())
        let sections = [
            Section(id: "a", header: Banner(title: "top", log: log), cells: [CellNode(Echo(id: "x", text: "X"))],
                    footer: Banner(title: "bottom", log: log)),
            Section(id: "b", header: Banner(title: "quiet", log: log, asks: false), cells: [CellNode(Echo(id: "y", text: "Y"))]),
        ]
        let list = try await registry.hostApp(listName("sights"), sections: sections)
        let page = await list.pageHTML().html
        #expect(page.contains(#"<header class="livelist-header" data-visibility="true">top</header>"#), "\(page)")
        #expect(page.contains(#"<footer class="livelist-footer" data-visibility="true">bottom</footer>"#), "\(page)")
        #expect(page.contains(#"<header class="livelist-header">quiet</header>"#), "a header that does not ask is not marked")

        #expect(await list.handle(ListAction(type: "visible", fields: ["section": "a", "part": "header"])))
        #expect(await list.handle(ListAction(type: "hidden", fields: ["section": "a", "part": "footer"])))
        #expect(log.count("will top") == 1 && log.count("end bottom") == 1)
        // Nothing that does not ask, or does not exist, is called (and the action is not known).
        #expect(await !list.handle(ListAction(type: "visible", fields: ["section": "b", "part": "header"])))
        #expect(await !list.handle(ListAction(type: "visible", fields: ["section": "a", "part": "middle"])))
        #expect(await !list.handle(ListAction(type: "visible", fields: ["section": "nope", "part": "header"])))
        #expect(log.count("will quiet") == 0 && log.count("will top") == 1)
    }
}

/// A cell that asks for visibility reports, counting them.
private struct Sight: IdentifiableComponent {
    var id: String
    var log: SightLog
    var reportsVisibility: Bool { true }
    func contentWillDisplay() { log.record("will \(id)") }
    func contentDidEndDisplay() { log.record("end \(id)") }
    var body: some HTML { id }
}

/// A page batches the visibility reports of its cells (`"cells"`: keys joined by NUL): one post
/// reports many cells, each as a report of its own, paced by the number of cells it names (not by
/// the actions' pace: 200 cells for each action of it).
@Suite struct BatchedVisibilityTests {
    @Test func oneReportNamesManyCells() async throws {
        let log = SightLog()
        let server = try await RouteClient { $0.actionPace = ActionPace(rate: 1, burst: 1) }
        let cells = (0 ..< 300).map { CellNode(Sight(id: "c\($0)", log: log)) }
        _ = try await server.app.registry.hostApp(listName("sights"), sections: [Section(id: "s", cells: cells)])
        let page = try await server.get("/lists/sights")
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(page.text.components(separatedBy: #"name="csrf" value=""#).dropFirst().first?.prefix { $0 != "\"" })
        let json = [("Content-Type", "application/json"), ("Cookie", cookie), ("X-CSRF-Token", String(csrf))]
        func report(_ type: String, _ keys: [String]) async throws -> RouteResponse {
            let joined = keys.joined(separator: "\\u0000")
            return try await server.post("/lists/sights/actions", headers: json, body: Array(#"{"type":"\#(type)","cells":"\#(joined)"}"#.utf8))
        }
        // Three posts of many cells, past a pace of one action at once: reports are not paced.
        #expect(try await report("visible", (0 ..< 200).map { "c\($0)" }).status == 204)
        #expect(try await report("hidden", (0 ..< 100).map { "c\($0)" }).status == 204)
        // A cell gone meanwhile (or never there) is passed over; the others are reported.
        #expect(try await report("visible", ["c250", "gone", "c299"]).status == 204)
        #expect(log.count("will c0") == 1 && log.count("will c199") == 1 && log.count("will c200") == 0)
        #expect(log.count("end c0") == 1 && log.count("end c99") == 1 && log.count("end c100") == 0)
        #expect(log.count("will c250") == 1 && log.count("will c299") == 1)
        let tooMany = try await report("visible", (0 ..< 1_001).map { _ in "c1" })
        #expect(tooMany.status == 422 && tooMany.text.contains("too_many_cells"))
    }

    /// Reports that name many cells are paced by their number: a page that keeps naming a thousand
    /// cells is refused (429) once past the burst, at a cost of one check, not a thousand look-ups.
    @Test func manyCellsArePacedByTheirNumber() async throws {
        let log = SightLog()
        let server = try await RouteClient { $0.actionPace = ActionPace(rate: 1, burst: 1) }
        let cells = (0 ..< 1_000).map { CellNode(Sight(id: "c\($0)", log: log)) }
        _ = try await server.app.registry.hostApp(listName("many"), sections: [Section(id: "s", cells: cells)])
        let page = try await server.get("/lists/many")
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(page.text.components(separatedBy: #"name="csrf" value=""#).dropFirst().first?.prefix { $0 != "\"" })
        let json = [("Content-Type", "application/json"), ("Cookie", cookie), ("X-CSRF-Token", String(csrf))]
        let joined = (0 ..< 1_000).map { "c\($0)" }.joined(separator: "\\u0000")
        var statuses: [Int] = []
        for index in 0 ..< 4 {
            let type = index % 2 == 0 ? "visible" : "hidden"
            statuses.append(try await server.post("/lists/many/actions", headers: json, body: Array(#"{"type":"\#(type)","cells":"\#(joined)"}"#.utf8)).status)
        }
        #expect(statuses.first == 204 && statuses.dropFirst().allSatisfy { $0 == 429 }, "\(statuses)")
        #expect(log.count("will c0") == 1 && log.count("end c0") == 0, "a refused report reports nothing")
    }
}
