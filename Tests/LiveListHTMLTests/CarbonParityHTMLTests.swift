import Synchronization
import Foundation
import LiveListHTML
import LiveListTestSupport
import Testing

/// A header whose previous value declines to render the next: its HTML must stay as it was.
private struct FrozenTitle: Component, Equatable {
    var text: String
    var body: some HTML { text }
    func shouldRender(next: FrozenTitle) -> Bool { false }
}

/// A cell that declines to render again, whatever changed.
private struct Frozen: IdentifiableComponent, Equatable {
    var id: String
    var title: String
    var body: some HTML { title }
    func shouldRender(next: Frozen) -> Bool { false }
}

/// A cell whose equality ignores `note`, so that only `alwaysRenderVisibleComponents` renders it again.
private struct FrozenNote: IdentifiableComponent {
    var id: String
    var note: String
    var body: some HTML { note }
    func shouldContentUpdate(with next: FrozenNote) -> Bool { false }
    func shouldRender(next: FrozenNote) -> Bool { false }
}

/// A cell that asks for visibility reports.
private struct Seen: IdentifiableComponent, Equatable {
    var id: Int
    var reportsVisibility: Bool { true }
}

/// A plain enum used as an id in HTML.
private enum Pane: Hashable, Sendable {
    case inbox
    case archive
}

private func plainAdapter() -> HTMLAdapter {
    var adapter = HTMLAdapter()
    adapter.section = .init(.section)
    adapter.cells = .init(.ul)
    adapter.cell = .init(.li)
    adapter.header = .init(.header)
    return adapter
}

@Suite struct CarbonParityHTMLTests {
    // MARK: - shouldRender(next:) is honoured everywhere the updaters render

    @Test func aHeaderThatDeclinesToRenderKeepsItsHTML() throws {
        let renderer = Renderer(adapter: plainAdapter(), updater: PatchUpdater(list: "l"))
        try renderer.render { Section(id: "a", header: FrozenTitle(text: "One")) { Frozen(id: "x", title: "x") } }
        // The section is updated (its header changed) but the header's component declines.
        #expect(try renderer.render { Section(id: "a", header: FrozenTitle(text: "Two")) { Frozen(id: "x", title: "x") } } == nil)
        #expect(renderer.updater.rendering.sections[0].header == "<header>One</header>")
        // A header that appears is rendered, whatever its component says.
        let footer = try #require(try renderer.render {
            Section(id: "a", header: FrozenTitle(text: "Two"), footer: FrozenTitle(text: "F")) { Frozen(id: "x", title: "x") }
        })
        #expect(footer.operations.map(\.name) == ["reloadSection"])
        #expect(renderer.updater.rendering.sections[0].header == "<header>One</header>")
    }

    @Test func shouldRenderWinsOverAlwaysRenderVisibleComponents() throws {
        var options = UpdaterOptions()
        options.alwaysRenderVisibleComponents = true
        let renderer = Renderer(adapter: plainAdapter(), updater: PatchUpdater(list: "l", options: options))
        try renderer.render { Section(id: "a") { FrozenNote(id: "n", note: "1"); Frozen(id: "f", title: "1") } }
        #expect(try renderer.render { Section(id: "a") { FrozenNote(id: "n", note: "2"); Frozen(id: "f", title: "2") } } == nil)
        // Moved cells are asked too.
        #expect(try renderer.render { Section(id: "a") { Frozen(id: "f", title: "3"); FrozenNote(id: "n", note: "3") } }?
            .operations.map(\.name) == ["move"])
        #expect(renderer.updater.rendering.sections[0].cells.map(\.html) == [#"<li data-cell="f">1</li>"#, #"<li data-cell="n">1</li>"#])
    }

    @Test func reloadDataUpdaterAsksShouldRender() throws {
        let renderer = Renderer(adapter: plainAdapter(), updater: ReloadDataUpdater(list: "l"))
        try renderer.render { Section(id: "a", header: FrozenTitle(text: "H")) { Frozen(id: "f", title: "1"); Row(id: "r", text: "1") } }
        let reset = try #require(try renderer.render {
            Section(id: "a", header: FrozenTitle(text: "H2")) { Frozen(id: "f", title: "2"); Row(id: "r", text: "2") }
        })
        #expect(reset.isReset)
        let section = renderer.updater.rendering.sections[0]
        #expect(section.header == "<header>H</header>")
        #expect(section.cells.map(\.html) == [#"<li data-cell="f">1</li>"#, #"<li data-cell="r">2</li>"#])
        // Nothing but frozen content changed: no reset at all.
        #expect(try renderer.render {
            Section(id: "a", header: FrozenTitle(text: "H3")) { Frozen(id: "f", title: "3"); Row(id: "r", text: "2") }
        } == nil)
    }

    // MARK: - Carbon's spellings reach the browser

    @Test func cellsWithoutASectionRenderInTheDefaultSection() throws {
        let renderer = Renderer(adapter: plainAdapter(), updater: PatchUpdater(list: "l"))
        let first = try #require(try renderer.render {
            Row(id: "a", text: "A")
            Label(text: "pane").identified(by: Pane.inbox)
        })
        #expect(first.operations.map(\.name) == ["insertSection", "insert", "insert"])
        #expect(renderer.updater.rendering.html.hasPrefix(#"<section data-section="default"><ul><li data-cell="a">"#))
        #expect(renderer.updater.rendering.sections[0].cells.map(\.key) == ["a", "inbox"])
        let second = try #require(try renderer.render { Row(id: "a", text: "B") })
        #expect(second.operations.map(\.name) == ["delete", "reload"])
    }

    @Test func visibilityIsAskedOfTheBrowserForCells() throws {
        let rendering = try HTMLAdapter().render([Section(id: 0) { Seen(id: 1) }])
        #expect(rendering.sections[0].cells[0].html.contains(#"data-visibility="true""#))
    }

    // MARK: - No stale page where Carbon's screen is right

    /// A Carbon component that compares one property only, for cheap updates (Carbon's README
    /// recommends it): Carbon's default re-render of what is visible shows the others.
    struct Score: IdentifiableComponent, Equatable {
        var id: String
        var name: String
        var points: Int
        var body: some HTML { span { name }; small { "\(points)" } }
        func shouldContentUpdate(with next: Score) -> Bool { name != next.name }
    }

    struct Title: Component, Equatable {
        var text: String
        var subtitle: String
        var body: some HTML { text; " · "; subtitle }
        func shouldContentUpdate(with next: Title) -> Bool { text != next.text }
    }

    @Test func aPropertyThatShouldContentUpdateIgnoresReachesThePage() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "scores"))
        func sections(points: Int, subtitle: String) -> [Section] {
            [Section(id: "board", header: Title(text: "Board", subtitle: subtitle)) {
                Score(id: "a", name: "Ann", points: points)
                Score(id: "b", name: "Bob", points: 1)
            }]
        }
        try renderer.render(sections(points: 1, subtitle: "day 1"))
        let changed = try #require(try renderer.render(sections(points: 7, subtitle: "day 2")))
        #expect(changed.operations.map(\.name).sorted() == ["reload", "reloadSection"], "\(changed.operations)")
        #expect(renderer.updater.rendering.sections[0].cells[0].html.contains("<small>7</small>"))
        #expect(renderer.updater.rendering.sections[0].header?.contains("day 2") == true)
        // The cell proved unchanged (Equatable and equal) is not rendered again, and nothing changes
        // when nothing changed.
        #expect(!changed.operations.contains { if case let .reload(cell, _) = $0 { cell == "b" } else { false } })
        #expect(try renderer.render(sections(points: 7, subtitle: "day 2")) == nil)
    }

    // MARK: - Options: Carbon's names, defaults where they mean the same

    @Test func optionDefaults() {
        let options = UpdaterOptions()
        #expect(options.isAnimationEnabled)
        #expect(!options.isAnimationEnabledWhileScrolling)
        #expect(options.animatableChangeCount == 300)
        #expect(!options.keepsContentOffset)
        #expect(options.alwaysRenderVisibleComponents)
        #expect(!options.skipReloadComponents)
    }

    @Test func animationWhileScrollingReachesTheRoot() {
        let on = UpdaterOptions(isAnimationEnabledWhileScrolling: true)
        #expect(HTMLAdapter().renderRoot(list: "l", version: 0, options: on, rendering: RenderedList())
            .contains(#"data-animate-scrolling="true""#))
        let off = UpdaterOptions(isAnimationEnabled: false, isAnimationEnabledWhileScrolling: true)
        #expect(HTMLAdapter().renderRoot(list: "l", version: 0, options: off, rendering: RenderedList())
            .contains(#"data-animate-scrolling="false""#))
    }

    // MARK: - Completion on the server

    @Test func theCompletionGetsEachChangesetOnceProduced() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        let versions = Versions()
        renderer.completion = { result in
            if case let .success(changeset?) = result {
                versions.append(changeset.version)
            }
        }
        renderer.data = [Section(id: "a") { Row(id: "x", text: "1") }]
        renderer.data = [Section(id: "a") { Row(id: "x", text: "1") }]  // no change: nil, no version
        renderer.data = [Section(id: "a") { Row(id: "x", text: "2") }]
        #expect(versions.all == [1, 2])
        #expect(renderer.updater.version == 2)
    }
}

/// A row with a string id, as in the other HTML tests.
private struct Row: IdentifiableComponent, Equatable {
    var id: String
    var text: String
    var body: some HTML { text }
}

/// A plain label, identified where it is used.
private struct Label: Component, Equatable {
    var text: String
    var body: some HTML { text }
}

/// Versions seen by a completion, which may run on any thread.
private final class Versions: Sendable {
    private let values = Mutex<[Int]>([])

    func append(_ value: Int) {
        values.withLock { $0.append(value) }
    }

    var all: [Int] {
        values.withLock { $0 }
    }
}
