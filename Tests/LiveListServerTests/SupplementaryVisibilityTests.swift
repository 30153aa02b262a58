import LiveListHTML
@testable import LiveListServer
@testable import LiveListEngine
import Synchronization
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
        let list = try await registry.hostApp(name("sights"), sections: sections)
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
