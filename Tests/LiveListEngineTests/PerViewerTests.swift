import LiveListHTML
@testable import LiveListEngine
import Synchronization
import LiveListTestSupport
import Testing

private struct Greeting: IdentifiableComponent, Equatable {
    var id: String
    var text: String
    var body: some HTML { text }
}

/// The app state a per-viewer list reads: a counter everyone sees, and a note only "alice" sees.
private final class Board: Sendable {
    let state = Mutex<(count: Int, note: String)>((0, "hi"))

    func sections(for viewer: Viewer) -> [Section] {
        let (count, note) = state.withLock { $0 }
        var cells = [CellNode(Greeting(id: "count", text: "count \(count)"))]
        if viewer.session == "alice" {
            cells.append(CellNode(Greeting(id: "note", text: "note for alice: \(note)")))
        }
        return [Section(id: "s", cells: cells)]
    }
}

@Suite struct PerViewerTests {
    @Test func eachViewerGetsItsOwnRenderingWithSharedVersions() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let board = Board()
        let list = try await registry.hostApp(listName("board"), perViewer: { board.sections(for: $0) })
        let start = await list.version
        #expect(await list.pageHTML(for: Viewer(session: "alice")).html.contains("note for alice"))
        #expect(await !list.pageHTML(for: Viewer(session: "bob")).html.contains("note for alice"))
        #expect(await !list.snapshot().rendering.html.contains("note"), "anonymous viewers see the shared part")

        let alice = RecordingSink()
        let bob = RecordingSink()
        await list.subscribe(alice, since: start, viewer: Viewer(session: "alice"))
        await list.subscribe(bob, since: start, viewer: Viewer(session: "bob"))
        #expect(alice.events.isEmpty && bob.events.isEmpty, "both are current")

        // A change only alice sees: a new version, and an event for her alone.
        board.state.withLock { $0.note = "lunch?" }
        let second = try #require(try await list.refresh())
        #expect(second == start + 1)
        #expect(alice.events.count == 1 && bob.events.isEmpty)
        #expect(alice.events[0].data.contains(#""from":\#(start),"version":\#(second)"#))
        #expect(alice.events[0].data.contains("lunch?"))

        // A change everyone sees: bob's changeset starts from the version he was last sent.
        board.state.withLock { $0.count = 1 }
        let third = try #require(try await list.refresh())
        #expect(bob.events.count == 1 && bob.events[0].data.contains(#""from":\#(start),"version":\#(third)"#))
        #expect(alice.events.count == 2 && alice.events[1].data.contains(#""from":\#(second),"version":\#(third)"#))

        // Nothing changed: no version.
        #expect(try await list.refresh() == nil)
        #expect(await list.version == third)

        // A viewer that missed versions gets its own state anew.
        let late = await list.changes(since: start, for: Viewer(session: "alice"))
        #expect(late.isReset && late.version == third)
        guard case let .reset(html, _) = try #require(late.operations.first) else {
            Issue.record("not a reset: \(late.operations.map(\.name))")
            return
        }
        #expect(html.contains("lunch?") && html.contains("count 1"))
    }
}
