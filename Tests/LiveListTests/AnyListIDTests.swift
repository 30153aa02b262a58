import LiveList
import Testing

@Suite struct AnyListIDTests {
    @Test func keepsBaseAndKey() {
        let id = AnyListID(-3)
        #expect(id.key == "-3")
        #expect(id.as(Int.self) == -3)
        #expect(id.as(String.self) == nil)
    }

    @Test func integerAndStringWithTheSameKeyAreEqual() {
        let number = AnyListID(1)
        let text = AnyListID("1")
        #expect(number == text)
        #expect(number.hashValue == text.hashValue)
        #expect(Set([number, text, AnyListID(UInt8(1))]).count == 1)
    }

    @Test func differentKeysAreDifferent() {
        #expect(AnyListID(1) != AnyListID(2))
        #expect(AnyListID("a") != AnyListID("A"))
        #expect(AnyListID(true) != AnyListID("True"))
    }

    @Test func wrappingAnErasedIdDoesNotNestIt() {
        let inner = AnyListID(7)
        let outer = AnyListID(inner)
        #expect(outer.as(Int.self) == 7)
        #expect(outer.as(AnyListID.self) == nil)
    }

    @Test func literalsMakeIds() {
        let text: AnyListID = "a"
        let number: AnyListID = 12
        #expect(text.as(String.self) == "a")
        #expect(number.as(Int.self) == 12)
        #expect(number == "12")
    }

    @Test func unicodeKeysAreKeptExactly() {
        #expect(AnyListID("Ünïcødé 🎉").key == "Ünïcødé 🎉")
        // Canonically equivalent spellings are two keys, as the browser compares them.
        #expect("\u{E9}" == "e\u{301}")
        #expect(AnyListID("\u{E9}") != AnyListID("e\u{301}"))
        #expect(Set([AnyListID("\u{E9}"), AnyListID("e\u{301}")]).count == 2)
    }

    @Test func describesItselfByKey() {
        let id = AnyListID("say \"hi\"")
        #expect(id.description == "say \"hi\"")
        #expect(id.debugDescription == "\"say \\\"hi\\\"\"")
        #expect(String(reflecting: AnyListID(5)) == "\"5\"")
    }

    @Test func keysWithoutNULAreValid() {
        #expect(AnyListID("").isValidKey)
        #expect(AnyListID("line\nbreak\ttab\r").isValidKey)
        #expect(AnyListID("👋").isValidKey)
        #expect(AnyListID(-1).isValidKey)
    }

    @Test func keysWithNULAreInvalid() {
        #expect(!AnyListID("a\u{0}b").isValidKey)
        #expect(!AnyListID("\u{0}").isValidKey)
        #expect(!AnyListID.isValidKey("end\u{0}"))
        #expect(AnyListID.isValidKey("end"))
    }

    @Test func duplicateKeysOfDifferentTypesAreReportedByTheDiffer() {
        let cells = [CellNode(id: 1, Label(text: "one")), CellNode(id: "1", Label(text: "uno"))]
        let section = Section(id: "a", cells: cells)
        #expect(throws: DiffError.duplicateElementIdentifier("\"1\"", in: .target)) {
            try StagedChangeset(source: [], target: [section])
        }
    }
}
