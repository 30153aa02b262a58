import LiveList
import Testing

@Suite struct CellNodeTests {
    @Test func takesTheIdOfAnIdentifiableComponent() {
        let node = CellNode(HelloMessage(name: "Mia"))
        #expect(node.id == "Mia")
        #expect(node.component(as: HelloMessage.self)?.name == "Mia")
    }

    @Test func takesAGivenIdForAnyComponent() {
        let node = CellNode(id: 1, Label(text: "Apple"))
        #expect(node.id.key == "1")
        #expect(node.id.as(Int.self) == 1)
        #expect(node.component(as: Label.self) == Label(text: "Apple"))
        #expect(node.component(as: Header.self) == nil)
    }

    @Test func isIdentifiedByItsId() {
        let node = CellNode(id: "x", Label(text: ""))
        #expect(node.differenceIdentifier == AnyListID("x"))
    }

    @Test func unchangedEquatableContentIsEqual() {
        let previous = CellNode(id: 1, Label(text: "a"))
        #expect(CellNode(id: 1, Label(text: "a")).isContentEqual(to: previous))
        #expect(!CellNode(id: 1, Label(text: "b")).isContentEqual(to: previous))
    }

    @Test func otherContentIsNeverEqual() {
        let previous = CellNode(id: 1, Opaque(value: 1))
        #expect(!CellNode(id: 1, Opaque(value: 1)).isContentEqual(to: previous))
    }

    @Test func asksThePreviousComponentAboutTheNextOne() {
        // Versioned updates only when the version grows: the answer shows who is asked.
        let previous = CellNode(id: 1, Versioned(version: 1))
        let next = CellNode(id: 1, Versioned(version: 2))
        #expect(!next.isContentEqual(to: previous))  // previous.shouldContentUpdate(with: next): 2 > 1
        #expect(previous.isContentEqual(to: next))  // next.shouldContentUpdate(with: previous): 1 > 2 is false
    }

    @Test func differReportsUpdatesByTheComponentsRule() throws {
        let source = [CellNode(id: 1, Versioned(version: 1)), CellNode(id: 2, Versioned(version: 1))]
        let target = [CellNode(id: 1, Versioned(version: 2)), CellNode(id: 2, Versioned(version: 0))]
        let changes = try StagedChangeset(source: source, target: target)
        #expect(changes.count == 1)
        #expect(changes[.removeAndUpdate]?.elementUpdated == [ElementPath(element: 0, section: 0)])
    }

    @Test func differentComponentTypesUnderOneIdAreAnUpdate() {
        let previous = CellNode(id: 1, Label(text: "a"))
        #expect(!CellNode(id: 1, Header("a")).isContentEqual(to: previous))
    }

    @Test func buildsItself() {
        let node = CellNode(id: 4, Label(text: "d"))
        #expect(keys(node.buildCells()) == ["4"])
    }
}
