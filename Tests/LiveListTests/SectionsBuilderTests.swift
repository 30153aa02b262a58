import LiveList
import Testing

/// Runs a `SectionsBuilder` closure, as `Renderer.render` and `Group` do.
private func sections(@SectionsBuilder _ build: () -> [Section]) -> [Section] {
    build()
}

@Suite struct SectionsBuilderTests {
    @Test func empty() {
        #expect(sections {}.isEmpty)
    }

    @Test func oneSection() {
        let built = sections {
            Section(id: "a") { Row(id: 1) }
        }
        #expect(layout(built) == ["a[1]"])
    }

    @Test func severalSections() {
        let built = sections {
            Section(id: "a") { Row(id: 1) }
            Section(id: "b", cells: [CellNode(Row(id: 2))])
            Section(id: 3)
        }
        #expect(layout(built) == ["a[1]", "b[2]", "3[]"])
    }

    @Test(arguments: [true, false])
    func ifWithoutElse(showArchive: Bool) {
        let built = sections {
            Section(id: "inbox")
            if showArchive {
                Section(id: "archive")
            }
        }
        #expect(layout(built) == (showArchive ? ["inbox[]", "archive[]"] : ["inbox[]"]))
    }

    @Test(arguments: [true, false])
    func ifElse(isEmpty: Bool) {
        let built = sections {
            if isEmpty {
                Section(id: "placeholder")
            } else {
                Section(id: "a") { Row(id: 1) }
                Section(id: "b") { Row(id: 2) }
            }
        }
        #expect(layout(built) == (isEmpty ? ["placeholder[]"] : ["a[1]", "b[2]"]))
    }

    @Test func optionalSection() {
        let present: Section? = Section(id: "p")
        let absent: Section? = nil
        let built = sections {
            absent
            present
        }
        #expect(layout(built) == ["p[]"])
    }

    @Test func arrayOfSections() {
        let columns = [Section(id: "todo"), Section(id: "done")]
        let built = sections {
            Section(id: "header")
            columns
        }
        #expect(layout(built) == ["header[]", "todo[]", "done[]"])
    }

    @Test func forLoop() {
        let teams = ["red": [1, 2], "blue": [3]].sorted { $0.key < $1.key }
        let built = sections {
            for team in teams {
                Section(id: team.key) {
                    for member in team.value {
                        Row(id: member)
                    }
                }
            }
        }
        #expect(layout(built) == ["blue[3]", "red[1,2]"])
    }

    @Test func groupOfData() {
        let built = sections {
            Group(of: ["a", "b"]) { id in
                Section(id: id) {
                    HelloMessage(name: "\(id)1")
                }
            }
        }
        #expect(layout(built) == ["a[a1]", "b[b1]"])
    }

    @Test func nestedGroupsOfSections() {
        let built = sections {
            Section(id: "top")
            Group {
                Group(of: 1 ... 2) { index in
                    Section(id: "s\(index)")
                }
                Group {
                    Section(id: "inner")
                }
            }
        }
        #expect(layout(built) == ["top[]", "s1[]", "s2[]", "inner[]"])
    }

    @Test func moreThanTenChildren() {
        let built = sections {
            Section(id: 1)
            Section(id: 2)
            Section(id: 3)
            Section(id: 4)
            Section(id: 5)
            Section(id: 6)
            Section(id: 7)
            Section(id: 8)
            Section(id: 9)
            Section(id: 10)
            Section(id: 11)
        }
        #expect(built.map(\.id.key) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"])
    }

    @Test func availabilityCheck() {
        let built = sections {
            if #available(macOS 14, iOS 17, *) {
                Section(id: "new")
            } else {
                Section(id: "old")
            }
        }
        #expect(layout(built) == ["new[]"])
    }

    /// Sections with a header and footer, conditional cells and sections made by `Group`, as an app writes them.
    @Test func sectionsFromCellsConditionsAndGroups() {
        struct Team {
            var id: String
            var members: [String]
        }
        let teams = [Team(id: "red", members: ["ann", "bob"]), Team(id: "blue", members: [])]
        let showMia = true
        let built = sections {
            Section(id: "greet", header: Header("GREET"), footer: Footer("👋 from LiveList")) {
                HelloMessage(name: "Vincent")
                HelloMessage(name: "Jules")
                if showMia { HelloMessage(name: "Mia") }
            }
            Group(of: teams) { team in
                Section(id: team.id) { Group(of: team.members) { HelloMessage(name: "\(team.id)/\($0)") } }
            }
        }
        #expect(layout(built) == ["greet[Vincent,Jules,Mia]", "red[red/ann,red/bob]", "blue[]"])
        #expect(built[0].header?.component(as: Header.self)?.title == "GREET")
    }
}
