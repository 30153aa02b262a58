import LiveList
import Testing

@Suite struct StagedChangesetUpdaterTests {
    private func makeRenderer() -> Renderer<StagedChangesetUpdater<EmptyAdapter>> {
        Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
    }

    @Test func firstRenderInsertsEverything() throws {
        let changes = try makeRenderer().render {
            Section(id: "a") { Row(id: 1); Row(id: 2) }
        }
        #expect(changes[.placeSections]?.sectionInserted == [0])
        let inserted = [ElementPath(element: 0, section: 0), ElementPath(element: 1, section: 0)]
        #expect(changes[.placeElements]?.elementInserted == inserted)
        #expect(changes.changeCount == 3)
    }

    @Test func unchangedRenderIsEmpty() throws {
        let renderer = makeRenderer()
        try renderer.render { Section(id: "a", header: Header("A")) { Row(id: 1, text: "x") } }
        let changes = try renderer.render { Section(id: "a", header: Header("A")) { Row(id: 1, text: "x") } }
        #expect(changes.isEmpty)
    }

    @Test func equatableCellWithNewContentIsUpdated() throws {
        let renderer = makeRenderer()
        try renderer.render { Section(id: "a") { Row(id: 1, text: "x"); Row(id: 2, text: "y") } }
        let changes = try renderer.render { Section(id: "a") { Row(id: 1, text: "x"); Row(id: 2, text: "Y") } }
        #expect(changes.count == 1)
        #expect(changes[.removeAndUpdate]?.elementUpdated == [ElementPath(element: 1, section: 0)])
    }

    @Test func nonEquatableCellIsUpdatedOnEveryRender() throws {
        let renderer = makeRenderer()
        try renderer.render { Section(id: "a", cells: [CellNode(id: 1, Opaque(value: 1))]) }
        let changes = try renderer.render { Section(id: "a", cells: [CellNode(id: 1, Opaque(value: 1))]) }
        #expect(changes[.removeAndUpdate]?.elementUpdated == [ElementPath(element: 0, section: 0)])
    }

    /// The changeset example of docs/PROTOCOL.md.
    @Test func theProtocolsChangesetExample() throws {
        // At first: x, y, z. Then z moves first, y changes, x goes, w comes last.
        let renderer = makeRenderer()
        try renderer.render {
            Section(id: "a") {
                Label(text: "x").identified(by: "x")
                Label(text: "Buy milk").identified(by: "y")
                Label(text: "z").identified(by: "z")
            }
        }
        let changes = try renderer.render {
            Section(id: "a") {
                Label(text: "z").identified(by: "z")
                Label(text: "Buy milk (2)").identified(by: "y")
                Label(text: "Walk").identified(by: "w")
            }
        }
        let removeAndUpdate = try #require(changes[.removeAndUpdate])
        #expect(removeAndUpdate.elementDeleted == [ElementPath(element: 0, section: 0)])
        #expect(removeAndUpdate.elementUpdated == [ElementPath(element: 1, section: 0)])
        let placeElements = try #require(changes[.placeElements])
        #expect(placeElements.elementMoved.count == 1)
        #expect(placeElements.elementInserted == [ElementPath(element: 2, section: 0)])
        #expect(changes.changeCount == 4)
    }

    @Test func cellMovingToAnotherSectionIsAMove() throws {
        let renderer = makeRenderer()
        try renderer.render {
            Section(id: "todo") { Row(id: 1); Row(id: 2) }
            Section(id: "done") {}
        }
        let changes = try renderer.render {
            Section(id: "todo") { Row(id: 2) }
            Section(id: "done") { Row(id: 1) }
        }
        #expect(changes.changeCount == 1)
        #expect(changes[.placeElements]?.elementMoved == [
            ElementMove(source: ElementPath(element: 0, section: 0), target: ElementPath(element: 0, section: 1)),
        ])
    }
}
