import LiveList
import Testing

/// Runs a `CellsBuilder` closure, as `Section` and `Group` do.
private func cells(@CellsBuilder _ build: () -> [CellNode]) -> [CellNode] {
    build()
}

@Suite struct CellsBuilderTests {
    @Test func empty() {
        #expect(cells {}.isEmpty)
    }

    @Test func oneIdentifiableComponent() {
        #expect(keys(cells { Row(id: 1) }) == ["1"])
    }

    @Test func severalComponentsOfSeveralTypes() {
        let built = cells {
            Row(id: 1, text: "one")
            HelloMessage(name: "Mia")
            Label(text: "plain").identified(by: "label")
        }
        #expect(keys(built) == ["1", "Mia", "label"])
        #expect(texts(built) == ["one", "Mia", "plain"])
    }

    @Test func cellNodes() {
        let built = cells {
            CellNode(id: 0, Label(text: "zero"))
            CellNode(Row(id: 1))
        }
        #expect(keys(built) == ["0", "1"])
    }

    @Test func arrayOfCellNodes() {
        let nodes = [CellNode(id: "a", Label(text: "a")), CellNode(id: "b", Label(text: "b"))]
        let built = cells {
            nodes
            Row(id: 3)
        }
        #expect(keys(built) == ["a", "b", "3"])
    }

    @Test func arrayOfComponents() {
        let rows = [Row(id: 1), Row(id: 2), Row(id: 3)]
        #expect(keys(cells { rows }) == ["1", "2", "3"])
    }

    @Test func optionalComponent() {
        let present: Row? = Row(id: 1)
        let absent: Row? = nil
        let built = cells {
            present
            absent
            Row(id: 2)
        }
        #expect(keys(built) == ["1", "2"])
    }

    @Test func optionalCellNode() {
        let present: CellNode? = CellNode(id: "p", Label(text: "p"))
        let absent: CellNode? = nil
        #expect(keys(cells { present; absent }) == ["p"])
    }

    @Test(arguments: [true, false])
    func ifWithoutElse(showMia: Bool) {
        let built = cells {
            HelloMessage(name: "Vincent")
            if showMia {
                HelloMessage(name: "Mia")
            }
            HelloMessage(name: "Jules")
        }
        #expect(keys(built) == (showMia ? ["Vincent", "Mia", "Jules"] : ["Vincent", "Jules"]))
    }

    @Test(arguments: [true, false])
    func ifElse(isOnline: Bool) {
        let built = cells {
            if isOnline {
                Row(id: 1, text: "online")
                Row(id: 2, text: "ready")
            } else {
                Label(text: "offline").identified(by: "offline")
            }
        }
        #expect(keys(built) == (isOnline ? ["1", "2"] : ["offline"]))
    }

    @Test(arguments: [0, 1, 2])
    func switchStatement(state: Int) {
        let built = cells {
            switch state {
            case 0:
                Row(id: 0)
            case 1:
                Row(id: 1)
                Row(id: 10)
            default:
                HelloMessage(name: "other")
            }
        }
        #expect(keys(built) == [["0"], ["1", "10"], ["other"]][state])
    }

    @Test func ifLet() {
        let name: String? = "Mia"
        let built = cells {
            if let name {
                HelloMessage(name: name)
            }
        }
        #expect(keys(built) == ["Mia"])
    }

    @Test func forLoop() {
        let built = cells {
            Row(id: 0)
            for id in 1 ... 3 {
                Row(id: id)
                Label(text: "after \(id)").identified(by: "after \(id)")
            }
        }
        #expect(keys(built) == ["0", "1", "after 1", "2", "after 2", "3", "after 3"])
    }

    @Test func forLoopOverNothing() {
        let none: [Int] = []
        let built = cells {
            for id in none {
                Row(id: id)
            }
        }
        #expect(built.isEmpty)
    }

    @Test func availabilityCheck() {
        let built = cells {
            if #available(macOS 14, iOS 17, *) {
                Row(id: 1)
            }
        }
        #expect(keys(built) == ["1"])
    }

    @Test func groups() {
        let built = cells {
            Row(id: 0)
            Group {
                Row(id: 1)
                Row(id: 2)
            }
            Group(of: [3, 4]) { id in
                Row(id: id)
            }
        }
        #expect(keys(built) == ["0", "1", "2", "3", "4"])
    }

    @Test func moreThanTenChildren() {
        let built = cells {
            Row(id: 1)
            Row(id: 2)
            Row(id: 3)
            Row(id: 4)
            Row(id: 5)
            Row(id: 6)
            Row(id: 7)
            Row(id: 8)
            Row(id: 9)
            Row(id: 10)
            Row(id: 11)
            Row(id: 12)
            HelloMessage(name: "13")
        }
        #expect(keys(built) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13"])
    }

    @Test func customCellsBuildable() {
        struct Pair: CellsBuildable {
            var left: Int
            var right: Int
            func buildCells() -> [CellNode] {
                [CellNode(Row(id: left)), CellNode(Row(id: right))]
            }
        }
        #expect(keys(cells { Pair(left: 1, right: 2) }) == ["1", "2"])
    }
}
