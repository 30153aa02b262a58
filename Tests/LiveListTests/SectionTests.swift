import LiveList
import Testing

@Suite struct SectionTests {
    @Test func arrayInitAsInCarbon() {
        let section = Section(
            id: "fruits",
            header: ViewNode(Header("Fruits")),
            cells: [CellNode(id: 0, Label(text: "Apple")), CellNode(id: 1, Label(text: "Banana"))],
            footer: ViewNode(Footer("2 fruits"))
        )
        #expect(section.id == "fruits")
        #expect(section.header?.component(as: Header.self) == Header("Fruits"))
        #expect(keys(section.cells) == ["0", "1"])
        #expect(section.footer?.component(as: Footer.self) == Footer("2 fruits"))
    }

    @Test func arrayInitTakesComponentsAsHeaderAndFooter() {
        let section = Section(id: 1, header: Header("H"), cells: [CellNode(Row(id: 1))], footer: Footer("F"))
        #expect(section.id.key == "1")
        #expect(section.header?.component(as: Header.self) == Header("H"))
        #expect(section.footer?.component(as: Footer.self) == Footer("F"))
    }

    @Test func idAloneMakesAnEmptySection() {
        let section = Section(id: "empty")
        #expect(section.header == nil)
        #expect(section.cells.isEmpty)
        #expect(section.footer == nil)
    }

    @Test func builderInitWithAComponentHeader() {
        let section = Section(id: "a", header: Header("A")) {
            HelloMessage(name: "Vincent")
            HelloMessage(name: "Jules")
        }
        #expect(section.header?.component(as: Header.self) == Header("A"))
        #expect(section.footer == nil)
        #expect(keys(section.cells) == ["Vincent", "Jules"])
    }

    @Test func builderInitWithHeaderAndFooter() {
        let section = Section(id: "greet", header: Header("GREET"), footer: Footer("👋 from LiveList")) {
            HelloMessage(name: "Mia")
        }
        #expect(section.header?.component(as: Header.self)?.title == "GREET")
        #expect(section.footer?.component(as: Footer.self)?.text == "👋 from LiveList")
        #expect(keys(section.cells) == ["Mia"])
    }

    @Test func builderInitWithNodesAndMixedForms() {
        let section = Section(id: "a", header: ViewNode(Header("A")), footer: Footer("F")) {
            Row(id: 1)
        }
        #expect(section.header?.component.base is Header)
        #expect(section.footer?.component.base is Footer)
    }

    @Test func builderInitWithFooterOnly() {
        let section = Section(id: "a", footer: Footer("F")) {}
        #expect(section.header == nil)
        #expect(section.footer != nil)
        #expect(section.cells.isEmpty)
    }

    @Test(arguments: [true, false])
    func optionalHeaderComponent(hasHeader: Bool) {
        let header: Header? = hasHeader ? Header("A") : nil
        let section = Section(id: "a", header: header) { Row(id: 1) }
        #expect((section.header?.component(as: Header.self) != nil) == hasHeader)
        #expect(keys(section.cells) == ["1"])
    }

    @Test func isADifferentiableSection() {
        let section = Section(id: 7, cells: [CellNode(Row(id: 1)), CellNode(Row(id: 2))])
        #expect(section.differenceIdentifier == "7")
        #expect(keys(section.elements) == ["1", "2"])
    }

    @Test func sameHeaderAndFooterAreEqualContent() {
        let previous = Section(id: "a", header: Header("A"), cells: [CellNode(Row(id: 1))], footer: Footer("F"))
        let next = Section(
            id: "a", header: Header("A"), cells: [CellNode(Row(id: 2, text: "other"))], footer: Footer("F")
        )
        #expect(next.isContentEqual(to: previous))
        #expect(Section(id: "a").isContentEqual(to: Section(id: "a")))
    }

    @Test func changedHeaderOrFooterIsAChange() {
        let previous = Section(id: "a", header: Header("A"), footer: Footer("F"))
        #expect(!Section(id: "a", header: Header("B"), footer: Footer("F")).isContentEqual(to: previous))
        #expect(!Section(id: "a", header: Header("A"), footer: Footer("G")).isContentEqual(to: previous))
    }

    @Test func appearingOrDisappearingHeaderOrFooterIsAChange() {
        let bare = Section(id: "a")
        let withHeader = Section(id: "a", header: Header("A"))
        let withFooter = Section(id: "a", footer: Footer("F"))
        #expect(!withHeader.isContentEqual(to: bare))
        #expect(!bare.isContentEqual(to: withHeader))
        #expect(!withFooter.isContentEqual(to: bare))
        #expect(!bare.isContentEqual(to: withFooter))
    }

    @Test func headerComparisonAsksThePreviousHeader() {
        let previous = Section(id: "a", header: Versioned(version: 2))
        #expect(!Section(id: "a", header: Versioned(version: 3)).isContentEqual(to: previous))
        #expect(Section(id: "a", header: Versioned(version: 1)).isContentEqual(to: previous))
    }

    @Test func differReportsAHeaderChangeAsASectionUpdate() throws {
        let source = [Section(id: "a", header: Header("A"), cells: [CellNode(Row(id: 1))])]
        let target = [Section(id: "a", header: Header("A!"), cells: [CellNode(Row(id: 1))])]
        let changes = try StagedChangeset(source: source, target: target)
        #expect(changes.count == 1)
        #expect(changes[.removeAndUpdate]?.sectionUpdated == [0])
        #expect(changes[.removeAndUpdate]?.elementUpdated == [])
    }
}
