import LiveListHTML
import LiveListTestSupport
import Testing

private struct Todo: IdentifiableComponent, Equatable {
    var id: String
    var title: String
    var body: some HTML { title }
}

/// A component whose equality ignores `note`: a change of the note alone is no update.
private struct Noted: IdentifiableComponent {
    var id: String
    var title: String
    var note: String
    var body: some HTML { title; " "; note }
    func shouldContentUpdate(with next: Noted) -> Bool { title != next.title }
}

/// A component that declines to render again.
private struct Frozen: IdentifiableComponent, Equatable {
    var id: String
    var title: String
    var body: some HTML { title }
    func shouldRender(next: Frozen) -> Bool { false }
}

/// A component whose values differ while its rendering does not.
private struct Counter: IdentifiableComponent, Equatable {
    var id: String
    var count: Int
    var body: some HTML { count > 0 ? "some" : "none" }
}

private func plainAdapter() -> HTMLAdapter {
    var adapter = HTMLAdapter()
    adapter.cell = .init(.li)
    return adapter
}

@Suite struct PatchUpdaterTests {
    /// The worked example of docs/PROTOCOL.md ("Changesets"), byte for byte.
    @Test func workedExample() throws {
        let renderer = Renderer(adapter: plainAdapter(), updater: PatchUpdater(list: "todo", version: 3))
        try renderer.render {
            Section(id: "a") {
                Todo(id: "x", title: "Buy bread")
                Todo(id: "y", title: "Buy milk")
                Todo(id: "z", title: "Call mum")
            }
        }
        #expect(renderer.updater.version == 4)
        let changeset = try #require(try renderer.render {
            Section(id: "a") {
                Todo(id: "z", title: "Call mum")
                Todo(id: "y", title: "Buy milk (2)")
                Todo(id: "w", title: "Walk")
            }
        })
        let json = String(decoding: changeset.encodedJSON(), as: UTF8.self)
        #expect(json == #"{"protocol":1,"list":"todo","from":4,"version":5,"animate":true,"ops":["#
            + #"{"op":"delete","cell":"x"},{"op":"move","cell":"z","section":"a","after":null},"#
            + #"{"op":"reload","cell":"y","html":"<li data-cell=\"y\">Buy milk (2)</li>"},"#
            + #"{"op":"insert","cell":"w","section":"a","after":"y","html":"<li data-cell=\"w\">Walk</li>"}]}"#)
    }

    @Test func unchangedRenderMakesNoVersion() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        let sections = [Section(id: "a", cells: [CellNode(Todo(id: "x", title: "X"))])]
        #expect(try renderer.render(sections) != nil)
        #expect(try renderer.render(sections) == nil)
        #expect(renderer.updater.version == 1)
    }

    @Test func sameRenderingOfAChangedValueSendsNothing() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        try renderer.render([Section(id: "a", cells: [CellNode(Counter(id: "c", count: 1))])])
        #expect(try renderer.render([Section(id: "a", cells: [CellNode(Counter(id: "c", count: 2))])]) == nil)
        #expect(renderer.updater.version == 1)
    }

    @Test func shouldContentUpdateFalseKeepsTheOldRenderingWithoutTheVisibleRerender() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l", options: UpdaterOptions(alwaysRenderVisibleComponents: false)))
        try renderer.render([Section(id: "a", cells: [CellNode(Noted(id: "n", title: "T", note: "1"))])])
        #expect(try renderer.render([Section(id: "a", cells: [CellNode(Noted(id: "n", title: "T", note: "2"))])]) == nil)
        let changed = try renderer.render([Section(id: "a", cells: [CellNode(Noted(id: "n", title: "U", note: "2"))])])
        #expect(changed?.operations.map(\.name) == ["reload"])
    }

    @Test func shouldRenderFalseSendsNoReload() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        try renderer.render([Section(id: "a", cells: [CellNode(Frozen(id: "f", title: "1"))])])
        #expect(try renderer.render([Section(id: "a", cells: [CellNode(Frozen(id: "f", title: "2"))])]) == nil)
        #expect(renderer.updater.rendering.sections[0].cells[0].html.contains(">1<"))
    }

    @Test func alwaysRenderVisibleComponentsRendersEveryCellAgain() throws {
        var options = UpdaterOptions()
        options.alwaysRenderVisibleComponents = true
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l", options: options))
        try renderer.render([Section(id: "a", cells: [CellNode(Noted(id: "n", title: "T", note: "1"))])])
        let changeset = try renderer.render([Section(id: "a", cells: [CellNode(Noted(id: "n", title: "T", note: "2"))])])
        #expect(changeset?.operations.map(\.name) == ["reload"])
    }

    @Test func manyChangesAreNotAnimated() throws {
        var options = UpdaterOptions()
        options.animatableChangeCount = 2
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l", options: options))
        try renderer.render([Section(id: "a", cells: [])])
        let two = try renderer.render([Section(id: "a", cells: [CellNode(Todo(id: "1", title: "")), CellNode(Todo(id: "2", title: ""))])])
        #expect(two?.animate == true)
        let three = try renderer.render([Section(id: "a", cells: (3 ... 5).map { CellNode(Todo(id: "\($0)", title: "")) })])
        #expect(three?.animate == false)
        #expect(three?.isReset == false, "a large changeset is still operations, never a reset")
    }

    @Test func cellsMoveOutOfDeletedSectionsAndIntoInsertedOnes() throws {
        let renderer = Renderer(adapter: plainAdapter(), updater: PatchUpdater(list: "l"))
        try renderer.render {
            Section(id: "old") { Todo(id: "x", title: "X") }
        }
        let changeset = try #require(try renderer.render {
            Section(id: "new", header: Header("New")) { Todo(id: "x", title: "X") }
        })
        #expect(changeset.operations == [
            .insertSection(
                section: "new", after: nil,
                html: #"<section class="livelist-section" data-section="new"><header class="livelist-header"><span class="livelist-header-text">New</span></header><ul class="livelist-cells"></ul></section>"#,
                header: #"<header class="livelist-header"><span class="livelist-header-text">New</span></header>"#,
                footer: nil
            ),
            .move(cell: "x", section: "new", after: nil),
            .deleteSection(section: "old"),
        ])
    }

    @Test func headerChangeIsAReloadSection() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        try renderer.render([Section(id: "a", header: Header("A"), cells: [], footer: Footer("f"))])
        let changeset = try renderer.render([Section(id: "a", header: Header("B"), cells: [], footer: nil)])
        #expect(changeset?.operations == [.reloadSection(
            section: "a",
            header: #"<header class="livelist-header"><span class="livelist-header-text">B</span></header>"#,
            footer: nil
        )])
    }

    @Test func duplicateKeyLeavesEverythingAsItWas() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        try renderer.render([Section(id: "a", cells: [CellNode(Todo(id: "x", title: "X"))])])
        let before = renderer.updater.snapshot
        #expect(throws: DiffError.duplicateElementIdentifier("\"1\"", in: .target)) {
            try renderer.render {
                Section(id: "a") {
                    Todo(id: "1", title: "string one")
                    CellNode(id: 1, Todo(id: "ignored", title: "integer one"))
                }
            }
        }
        #expect(renderer.updater.snapshot == before)
        #expect(renderer.data.map(\.cells.count) == [1])
    }

    @Test func nulInAKeyIsRefused() throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l"))
        #expect(throws: RenderError.invalidKey("a\u{0}b", kind: "cell")) {
            try renderer.render([Section(id: "s", cells: [CellNode(Todo(id: "a\u{0}b", title: ""))])])
        }
        #expect(throws: RenderError.invalidKey("s\u{0}", kind: "section")) {
            try renderer.render([Section(id: "s\u{0}", cells: [])])
        }
        #expect(renderer.data.isEmpty && renderer.updater.version == 0)
    }
}

@Suite struct ReloadDataUpdaterTests {
    @Test func resetOnlyWhenTheRenderingChanged() throws {
        let renderer = Renderer(adapter: plainAdapter(), updater: ReloadDataUpdater(list: "l", version: 9))
        let first = try #require(try renderer.render([Section(id: "a", cells: [CellNode(Todo(id: "x", title: "X"))])]))
        #expect(first.isReset && first.from == 9 && first.version == 10 && !first.animate)
        guard case let .reset(html, sections) = first.operations[0] else {
            Issue.record("not a reset")
            return
        }
        #expect(html == #"<section class="livelist-section" data-section="a"><ul class="livelist-cells"><li data-cell="x">X</li></ul></section>"#)
        #expect(sections.map(\.key) == ["a"])
        #expect(try renderer.render([Section(id: "a", cells: [CellNode(Todo(id: "x", title: "X"))])]) == nil)
        #expect(try renderer.render([Section(id: "a", cells: [CellNode(Todo(id: "x", title: "Y"))])])?.version == 11)
    }

    @Test func duplicatesAreRefusedWithoutDiffing() {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: ReloadDataUpdater(list: "l"))
        #expect(throws: DiffError.duplicateSectionIdentifier("\"a\"", in: .target)) {
            try renderer.render([Section(id: "a", cells: []), Section(id: "a", cells: [])])
        }
    }
}
