import LiveList
import Testing

/// An adapter that carries a name, to check that the renderer hands its own adapter on.
struct NamedAdapter: Adapter {
    var data: [Section] = []
    var name: String
}

/// Records every call it receives; its output is the call number.
struct RecordingUpdater: Updater {
    struct Call {
        var adapter: String
        var source: [String]
        var target: [String]
    }

    var calls: [Call] = []

    mutating func performUpdates(adapter: NamedAdapter, from source: [Section], to target: [Section]) throws -> Int {
        calls.append(Call(adapter: adapter.name, source: layout(source), target: layout(target)))
        return calls.count
    }
}

/// Changes its state, then refuses a target holding a section with the key "bad".
struct FailingUpdater: Updater {
    struct Refused: Error {}

    var attempts = 0

    mutating func performUpdates(adapter: EmptyAdapter, from source: [Section], to target: [Section]) throws -> Int {
        attempts += 1
        if target.contains(where: { $0.id == "bad" }) {
            throw Refused()
        }
        return attempts
    }
}

@Suite struct RendererTests {
    @Test func startsWithNoSections() {
        let renderer = Renderer(adapter: NamedAdapter(name: "a"), updater: RecordingUpdater())
        #expect(renderer.data.isEmpty)
        #expect(renderer.updater.calls.isEmpty)
    }

    @Test func keepsTheRenderedSections() throws {
        let renderer = Renderer(adapter: NamedAdapter(name: "a"), updater: RecordingUpdater())
        try renderer.render([Section(id: "a", cells: [CellNode(Row(id: 1))])])
        #expect(layout(renderer.data) == ["a[1]"])
        try renderer.render {
            Section(id: "b") { Row(id: 2) }
            Section(id: "a") { Row(id: 1) }
        }
        #expect(layout(renderer.data) == ["b[2]", "a[1]"])
    }

    @Test func handsThePreviousAndNextSectionsToTheUpdater() throws {
        let renderer = Renderer(adapter: NamedAdapter(name: "main"), updater: RecordingUpdater())
        let first = try renderer.render { Section(id: "a") { Row(id: 1) } }
        let second = try renderer.render { Section(id: "a") { Row(id: 1); Row(id: 2) } }
        #expect(first == 1)
        #expect(second == 2)
        let calls = renderer.updater.calls
        #expect(calls.map(\.source) == [[], ["a[1]"]])
        #expect(calls.map(\.target) == [["a[1]"], ["a[1,2]"]])
        #expect(calls.map(\.adapter) == ["main", "main"])
    }

    @Test func handsOnTheCurrentAdapter() throws {
        let renderer = Renderer(adapter: NamedAdapter(name: "before"), updater: RecordingUpdater())
        renderer.adapter.name = "after"
        try renderer.render([])
        #expect(renderer.updater.calls.map(\.adapter) == ["after"])
    }

    @Test func keepsDataAndUpdaterStateWhenTheUpdaterThrows() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: FailingUpdater())
        try renderer.render { Section(id: "good") }
        #expect(throws: FailingUpdater.Refused.self) {
            try renderer.render { Section(id: "bad") }
        }
        #expect(layout(renderer.data) == ["good[]"])
        #expect(renderer.updater.attempts == 1)
        #expect(try renderer.render { Section(id: "fine") } == 2)
    }

    @Test func duplicateCellIdIsRefusedWithItsKeyAndDataStays() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render { Section(id: "a") { Row(id: 1); Row(id: 2) } }
        #expect(throws: DiffError.duplicateElementIdentifier("\"7\"", in: .target)) {
            try renderer.render {
                Section(id: "a") { Row(id: 7) }
                Section(id: "b") { HelloMessage(name: "7") }
            }
        }
        #expect(layout(renderer.data) == ["a[1,2]"])
    }

    @Test func errorMessageNamesTheDuplicateKey() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        let error = try #require(throws: DiffError.self) {
            try renderer.render { Section(id: "a") { HelloMessage(name: "Mia"); HelloMessage(name: "Mia") } }
        }
        #expect(String(describing: error).contains("\"Mia\""))
        #expect(renderer.data.isEmpty)
    }

    @Test func duplicateSectionIdIsRefusedWithItsKey() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render { Section(id: 1) }
        #expect(throws: DiffError.duplicateSectionIdentifier("\"2\"", in: .target)) {
            try renderer.render {
                Section(id: 2)
                Section(id: "2")
            }
        }
        #expect(layout(renderer.data) == ["1[]"])
    }

    @Test func nextRenderAfterAnErrorIsDiffedAgainstTheLastGoodOne() throws {
        let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
        try renderer.render { Section(id: "a") { Row(id: 1) } }
        #expect(throws: DiffError.self, "the duplicate id is refused") {
            try renderer.render { Section(id: "a") { Row(id: 1); Row(id: 1) } }
        }
        let changes = try renderer.render { Section(id: "a") { Row(id: 1); Row(id: 2) } }
        #expect(changes.changeCount == 1)
        #expect(changes[.placeElements]?.elementInserted == [ElementPath(element: 1, section: 0)])
    }
}
