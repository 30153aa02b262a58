import Synchronization
import Foundation
import ListDiff
import LiveList
import Testing

// What a Carbon user writes, written here with LiveList: each test is one difference from Carbon's API that this package closed.

/// A plain enum, with no raw value and no protocol of LiveList's: an id as in Carbon.
enum Filter: Hashable, Sendable {
    case all
    case done
    case tagged(String)
}

/// An enum with a raw value that does not declare `ListKeyConvertible`.
enum Priority: Int, Sendable {
    case low = 1
    case high = 9
}

/// A `Hashable` component with no `id`: it is its own id, as in Carbon.
struct Tag: IdentifiableComponent, Hashable {
    var name: String
}

/// A component whose id is a plain enum.
struct FilterButton: IdentifiableComponent, Equatable {
    var id: Filter
    var title: String
}

/// A component whose id is a UUID.
struct Attachment: IdentifiableComponent, Equatable {
    var id: UUID
}

/// Counts how many renders went through, and fails on demand.
struct CountingUpdater: Updater {
    struct Refused: Error {}

    var renders = 0

    mutating func performUpdates(adapter: EmptyAdapter, from source: [Section], to target: [Section]) throws -> Int {
        if target.contains(where: { $0.id == "bad" }) {
            throw Refused()
        }
        renders += 1
        return renders
    }
}

/// Collects what a completion receives, from any thread.
final class Outputs<Output: Sendable>: Sendable {
    private let results = Mutex<[Result<Output, any Error>]>([])

    func record(_ result: Result<Output, any Error>) {
        results.withLock { $0.append(result) }
    }

    var values: [Output?] {
        results.withLock { $0.map { try? $0.get() } }
    }
}

@Suite struct CarbonParityTests {
    // MARK: - render { cells } without a Section

    @Test func cellsWithoutASectionGoInOneImplicitSection() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render {
            HelloMessage(name: "Vincent")
            HelloMessage(name: "Jules")
        }
        #expect(layout(renderer.data) == ["default[Vincent,Jules]"])
        #expect(renderer.data[0].id == Section.implicitID)

        // The implicit section keeps its id, so the next render is a diff of its cells.
        let changes = try renderer.render {
            HelloMessage(name: "Jules")
            Row(id: 3, text: "new")
        }
        #expect(changes.stages.flatMap(\.sectionInserted).isEmpty)
        #expect(changes.stages.flatMap(\.sectionDeleted).isEmpty)
        #expect(changes.stages.flatMap(\.elementDeleted).count == 1)
        #expect(changes.stages.flatMap(\.elementInserted).count == 1)
    }

    @Test func cellsWithoutASectionTakeGroupsLoopsAndConditions() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        let showMia = false
        try renderer.render {
            Group(of: [1, 2]) { Row(id: $0) }
            for name in ["Vincent"] {
                HelloMessage(name: name)
            }
            if showMia {
                HelloMessage(name: "Mia")
            }
        }
        #expect(layout(renderer.data) == ["default[1,2,Vincent]"])
    }

    @Test func anEmptyClosureRendersNoSection() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render { Section(id: "a") { Row(id: 1) } }
        try renderer.render {}
        #expect(renderer.data.isEmpty)
    }

    @Test func sectionsStillGoThroughTheSectionsBuilder() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render {
            Section(id: "a") { Row(id: 1) }
            Group { Section(id: "b") { Row(id: 2) } }
        }
        #expect(layout(renderer.data) == ["a[1]", "b[2]"])
    }

    // MARK: - Ids of any Hashable type

    @Test func aHashableComponentIsItsOwnID() {
        let tag = Tag(name: "swift")
        #expect(tag.id == tag)
        let cells = Section(id: "tags") {
            Tag(name: "swift")
            Tag(name: "web")
        }.cells
        #expect(keys(cells) == [#"Tag(name: "swift")"#, #"Tag(name: "web")"#])
        #expect(cells[0].id.as(Tag.self) == tag)
    }

    @Test func aPlainEnumIsAnIDWithoutAProtocol() throws {
        let section = Section(id: Filter.all) {
            FilterButton(id: .all, title: "All")
            FilterButton(id: .done, title: "Done")
            FilterButton(id: .tagged("work"), title: "Work")
            Label(text: "x").identified(by: Filter.tagged("home"))
        }
        #expect(section.id.key == "all")
        #expect(keys(section.cells) == ["all", "done", #"tagged("work")"#, #"tagged("home")"#])
        #expect(section.cells[1].id.as(Filter.self) == .done)
        // Equal values give equal keys: the differ matches them across renders.
        let changes = try StagedChangeset(
            source: [section],
            target: [Section(id: Filter.all) { FilterButton(id: .done, title: "Done!") }]
        )
        #expect(changes.stages.flatMap(\.elementUpdated).count == 1)
    }

    @Test func stringIntUUIDAndRawValuesAreIDs() {
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let cells = Section(id: 0) {
            Attachment(id: uuid)
            Label(text: "a").identified(by: "text")
            Label(text: "b").identified(by: 42)
            Label(text: "c").identified(by: Priority.high)
        }.cells
        #expect(keys(cells) == ["e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "text", "42", "9"])
        #expect(CellNode(id: Priority.low, Label(text: "d")).id.key == "1")
        #expect(AnyListID(Priority.low).as(Priority.self) == .low)
    }

    @Test func anIDOfAHashableTypeIsTheSameKeyAsAListKeyConvertibleOne() {
        // An id wrapped through the generic path gets the ListKeyConvertible key, not a description.
        func erase<ID: Hashable & Sendable>(_ id: ID) -> AnyListID {
            AnyListID(id)
        }
        #expect(erase(MemberID(team: "a", login: "b")).key == "a/b")
        #expect(erase(Tab.inbox).key == "inbox")
        #expect(erase(AnyListID(5)).as(Int.self) == 5)
    }

    // MARK: - Builders: optionals and an empty Group

    @Test func optionalCellsAreLeftOut() {
        let maybe: Row? = nil
        let nodes: [CellNode?] = [CellNode(Row(id: 1)), nil, CellNode(Row(id: 2))]
        let components: [Row?] = [Row(id: 3), nil]
        let section = Section(id: "a") {
            maybe
            nodes
            components
            Optional(CellNode(Row(id: 4)))
        }
        #expect(keys(section.cells) == ["1", "2", "3", "4"])
        #expect(keys(Section(id: "b", cells: nodes).cells) == ["1", "2"])
    }

    @Test func optionalSectionsAreLeftOut() throws {
        let extra: Section? = nil
        let some: Section? = Section(id: "b")
        let sections = Group {
            Section(id: "a")
            extra
            some
            [Section?.none, Section(id: "c")]
        }.buildSections()
        #expect(layout(sections) == ["a[]", "b[]", "c[]"])

        let renderer = Renderer(adapter: EmptyAdapter(), updater: CountingUpdater())
        try renderer.render([Section(id: "x"), nil])
        #expect(layout(renderer.data) == ["x[]"])
        try renderer.render(Section(id: "y"), Section(id: "z"))
        #expect(layout(renderer.data) == ["y[]", "z[]"])
        try renderer.render(Section(id: "y"), extra)
        #expect(layout(renderer.data) == ["y[]"])
    }

    @Test func anEmptyGroupStandsForNothing() {
        let section = Section(id: "a") {
            Row(id: 1)
            Group()
        }
        #expect(keys(section.cells) == ["1"])
        let empty = true
        let sections = Group {
            if empty {
                Group()
            } else {
                Section(id: "b")
            }
        }.buildSections()
        #expect(sections.isEmpty)
        #expect(Group<CellNode>().buildCells().isEmpty)
    }

    // MARK: - Renderer: settable data, completion, Sendable

    @Test func settingDataRendersAndReportsToTheCompletion() {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: CountingUpdater())
        let outputs = Outputs<Int>()
        renderer.completion = { outputs.record($0) }
        renderer.data = [Section(id: "a")]
        #expect(layout(renderer.data) == ["a[]"])
        #expect(renderer.updater.renders == 1)

        // A refused render leaves data as it was and hands the error to the completion.
        renderer.data = [Section(id: "bad")]
        #expect(layout(renderer.data) == ["a[]"])
        #expect(outputs.values == [1, nil])
    }

    @Test func theCompletionFollowsEveryRender() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: CountingUpdater())
        let outputs = Outputs<Int>()
        renderer.completion = { outputs.record($0) }
        try renderer.render { Section(id: "a") }
        try renderer.render { Row(id: 1) }
        #expect(throws: CountingUpdater.Refused.self) { try renderer.render(Section(id: "bad")) }
        #expect(outputs.values == [1, 2, nil])
    }

    @Test func theCompletionMayRenderAgain() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: CountingUpdater())
        let outputs = Outputs<Int>()
        renderer.completion = { [renderer] result in
            outputs.record(result)
            if (try? result.get()) == 1 {
                _ = try? renderer.render(Section(id: "second"))
            }
        }
        try renderer.render(Section(id: "first"))
        #expect(layout(renderer.data) == ["second[]"])
        #expect(outputs.values == [1, 2])
    }

    @Test func rendersFromManyTasksAreAppliedOneAfterTheOther() async {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: CountingUpdater())
        await withTaskGroup(of: Void.self) { group in
            for task in 0 ..< 8 {
                group.addTask {
                    for step in 0 ..< 50 {
                        _ = try? renderer.render(Section(id: "t\(task)") { Row(id: step) })
                    }
                }
            }
        }
        #expect(renderer.updater.renders == 400)
        #expect(renderer.data.count == 1)
    }

    @Test func rendererIsSendable() {
        func requireSendable(_: some Sendable) {}
        requireSendable(Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater()))
    }

    // MARK: - Documentation

    /// The example of the DocC overview (Sources/LiveList/LiveList.docc/LiveList.md).
    @Test func doccOverviewExample() throws {
        struct Greeting: IdentifiableComponent, Equatable {
            var name: String
            var id: String { name }
            var body: some HTML { span { "Hello \(name)" } }
        }
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render {
            Section(id: "greet") {
                Greeting(name: "Vincent")
                Greeting(name: "Jules")
            }
        }
        let changes = try renderer.render {
            Section(id: "greet") {
                Greeting(name: "Jules")
                Greeting(name: "Mia")
            }
        }
        #expect(changes.changeCount == 2)
    }

    // MARK: - Wrappers, collections, builders as values, the adapter's data (written as in Carbon)

    @Test func aWrapperReachesTheWrappedComponentsMembers() {
        let wrapper = Label(text: "Milk").identified(by: 1)
        #expect(wrapper.text == "Milk")
        let byKeyPath = Label(text: "Bread").identified(by: \.text)
        #expect(byKeyPath.text == "Bread" && byKeyPath.id == "Bread")
    }

    /// A wrapper of one's own, with no `body`: it renders what it wraps.
    @Test func aWrapperOfOnesOwnRendersWhatItWraps() {
        struct Shown: Component, Equatable {
            var text: String
            var body: some HTML { span { text } }
        }
        struct Highlighted<Wrapped: Component>: ComponentWrapping {
            var wrapped: Wrapped
        }
        var plain = HTMLWriter(capacity: 32)
        Shown(text: "a").renderBody(into: &plain)
        var wrapped = HTMLWriter(capacity: 32)
        Highlighted(wrapped: Shown(text: "a")).renderBody(into: &wrapped)
        #expect(wrapped.bytes == plain.bytes && !plain.bytes.isEmpty)
        #expect(Highlighted(wrapped: Shown(text: "b")).text == "b")
    }

    @Test func sectionsAndRendersTakeAnyCollection() throws {
        let nodes = (1 ... 5).map { CellNode(Row(id: $0)) }
        let slice = Section(id: "slice", cells: nodes.prefix(3))
        let lazy = Section(id: "lazy", header: Header("H"), cells: (1 ... 2).lazy.map { CellNode(Row(id: $0 + 10)) })
        let optionals = Section(id: "optionals", cells: [CellNode(Row(id: 20)), nil][...])
        #expect(keys(slice.cells) == ["1", "2", "3"] && keys(lazy.cells) == ["11", "12"] && keys(optionals.cells) == ["20"])
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        let sections = [slice, lazy, optionals]
        try renderer.render(sections.prefix(2))
        #expect(renderer.data.map(\.id) == ["slice", "lazy"])
        try renderer.render(sections.lazy.map { Optional($0) }.filter { $0?.id != "lazy" })
        #expect(renderer.data.map(\.id) == ["slice", "optionals"])
        try renderer.render(sections: {
            Section(id: "labelled") { Row(id: 1) }
        })
        #expect(renderer.data.map(\.id) == ["labelled"])
    }

    @Test func anIdentifiableComponentIsCellsBuildableAndABuilderIsAValue() throws {
        #expect(keys(Row(id: 7).buildCells()) == ["7"])
        @CellsBuilder func rows(_ count: Int) -> CellsBuilder {
            for index in 0 ..< count {
                Row(id: index)
            }
        }
        @SectionsBuilder func sections() -> SectionsBuilder {
            Section(id: "a") { rows(2) }
        }
        #expect(keys(rows(3).buildCells()) == ["0", "1", "2"])
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render { sections() }
        #expect(keys(renderer.data[0].cells) == ["0", "1"])
        func cells<C: CellsBuildable>(of buildable: C) -> [CellNode] { buildable.buildCells() }
        #expect(keys(cells(of: Label(text: "x").identified(by: "x"))) == ["x"])
    }

    @Test func theAdapterHoldsTheDataAndFindsItsNodes() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render {
            Section(id: "a", header: Header("Top"), footer: Footer("End")) {
                Row(id: 1)
                Row(id: 2)
            }
        }
        let adapter = renderer.adapter
        #expect(adapter.data.map(\.id) == ["a"])
        #expect(adapter.cellNode(at: IndexPath(indexes: [0, 1])).id == AnyListID(2))
        #expect(keys(adapter.cellNodes(in: 0)) == ["1", "2"])
        #expect(adapter.headerNode(in: 0)?.component(as: Header.self)?.title == "Top")
        #expect(adapter.footerNode(in: 0)?.component(as: Footer.self)?.text == "End")
    }

    // MARK: - Names shared with DifferenceKit

    @Test func moduleQualifiedNamesDisambiguateFromDifferenceKit() throws {
        // A file that imports DifferenceKit too spells LiveList's types with their module.
        typealias LiveListChangeset = ListDiff.StagedChangeset
        struct Item: LiveList.Differentiable {
            var differenceIdentifier: Int
            func isContentEqual(to source: Item) -> Bool { true }
        }
        let changes: LiveListChangeset = try ListDiff.StagedChangeset(
            source: [Section(id: "a") { Row(id: 1) }],
            target: [Section(id: "a") { Row(id: 2) }]
        )
        #expect(changes.changeCount == 2)
        #expect(Item(differenceIdentifier: 1).differenceIdentifier == 1)
    }
}
