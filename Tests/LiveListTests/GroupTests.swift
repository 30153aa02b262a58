import LiveList
import Testing

@Suite struct GroupTests {
    @Test func groupOfCellsHoldsItsCells() {
        let group = Group {
            Row(id: 1)
            Row(id: 2)
        }
        #expect(keys(group.buildCells()) == ["1", "2"])
    }

    @Test func groupOfDataMapsEachElement() {
        let group = Group(of: ["x", "y"]) { name in
            HelloMessage(name: name)
        }
        #expect(keys(group.buildCells()) == ["x", "y"])
    }

    @Test func groupOfDataTakesSeveralCellsPerElement() {
        let group = Group(of: 1 ... 2) { id in
            Row(id: id)
            if id.isMultiple(of: 2) {
                Label(text: "even").identified(by: "even \(id)")
            }
        }
        #expect(keys(group.buildCells()) == ["1", "2", "even 2"])
    }

    @Test func groupOfEmptyDataIsEmpty() {
        let group = Group(of: [Int]()) { Row(id: $0) }
        #expect(group.buildCells().isEmpty)
    }

    @Test func groupsNest() {
        let group = Group {
            Group { Row(id: 1) }
            Group(of: [2]) { Row(id: $0) }
        }
        #expect(keys(group.buildCells()) == ["1", "2"])
    }

    @Test func groupOfSectionsHoldsItsSections() {
        let group = Group {
            Section(id: "a")
            Section(id: "b")
        }
        #expect(layout(group.buildSections()) == ["a[]", "b[]"])
    }

    @Test func groupOfDataMapsEachElementToSections() {
        let group = Group(of: ["a", "b"]) { id in
            Section(id: id) {
                Group(of: 1 ... 2) { HelloMessage(name: "\(id)\($0)") }
            }
        }
        #expect(layout(group.buildSections()) == ["a[a1,a2]", "b[b1,b2]"])
    }
}
