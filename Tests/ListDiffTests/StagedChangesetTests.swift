@testable import ListDiff
import Testing

/// Diffs, applies and checks: the result equals the target and the moves are the fewest.
@discardableResult
func checkDiff(
    _ source: [TestSection],
    _ target: [TestSection],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> StagedChangeset {
    let changeset = try StagedChangeset(source: source, target: target)
    let result = try apply(changeset, to: source, target: target)
    #expect(result == target, "applied \(changeset.stages) to \(source)", sourceLocation: sourceLocation)
    let fewest = fewestMoves(from: source, to: target)
    #expect(changeset.sectionMoveCount == fewest.sections, sourceLocation: sourceLocation)
    #expect(changeset.elementMoveCount == fewest.elements, sourceLocation: sourceLocation)
    return changeset
}

@Suite struct FlatListTests {
    @Test func unchangedListHasNoStage() throws {
        let list = (0 ..< 100).map { Item(id: $0) }
        let changeset = try StagedChangeset(source: list, target: list)
        #expect(changeset.isEmpty)
        #expect(changeset.changeCount == 0)
    }

    @Test func emptyToEmpty() throws {
        #expect(try StagedChangeset(source: [Item](), target: []).isEmpty)
        #expect(try StagedChangeset(source: [TestSection](), target: []).isEmpty)
    }

    @Test func insertsIntoEmpty() throws {
        let changeset = try StagedChangeset(source: [], target: [Item(id: 1), Item(id: 2)])
        #expect(changeset.stages == [
            Changeset(stage: .placeElements, elementInserted: [ElementPath(element: 0, section: 0), ElementPath(element: 1, section: 0)]),
        ])
    }

    @Test func deletesEverything() throws {
        let changeset = try StagedChangeset(source: [Item(id: 1), Item(id: 2)], target: [])
        #expect(changeset.stages == [
            Changeset(stage: .removeAndUpdate, elementDeleted: [ElementPath(element: 0, section: 0), ElementPath(element: 1, section: 0)]),
        ])
    }

    @Test func updateIsReportedAtItsSourcePath() throws {
        let source = [Item(id: 1), Item(id: 2), Item(id: 3)]
        let target = [Item(id: 1), Item(id: 2, payload: 7), Item(id: 3)]
        let changeset = try StagedChangeset(source: source, target: target)
        #expect(changeset.stages == [
            Changeset(stage: .removeAndUpdate, elementUpdated: [ElementPath(element: 1, section: 0)]),
        ])
    }

    /// Moving the last element first is one move; a greedy rule reports every element it passes.
    @Test func rotationIsOneMove() throws {
        let source = (0 ..< 10).map { Item(id: $0) }
        let target = [source[9]] + source[0 ..< 9]
        let changeset = try StagedChangeset(source: source, target: target)
        #expect(changeset.stages == [
            Changeset(stage: .placeElements, elementMoved: [
                ElementMove(source: ElementPath(element: 9, section: 0), target: ElementPath(element: 0, section: 0)),
            ]),
        ])
    }

    @Test func reversalKeepsOneElement() throws {
        let source = (0 ..< 6).map { Item(id: $0) }
        let changeset = try StagedChangeset(source: source, target: source.reversed())
        #expect(changeset.elementMoveCount == 5)
    }

    /// The changeset example of docs/PROTOCOL.md: delete x, move z first, change y, add w last.
    @Test func workedExample() throws {
        let (x, y, z, w) = (1, 2, 3, 4)
        let source = [section(0, [x, y, z])]
        let target = [TestSection(id: 0, elements: [Item(id: z), Item(id: y, payload: 2), Item(id: w)])]
        let changeset = try checkDiff(source, target)
        #expect(changeset.stages == [
            Changeset(
                stage: .removeAndUpdate,
                elementDeleted: [ElementPath(element: 0, section: 0)],
                elementUpdated: [ElementPath(element: 1, section: 0)]
            ),
            Changeset(
                stage: .placeElements,
                elementInserted: [ElementPath(element: 2, section: 0)],
                elementMoved: [ElementMove(source: ElementPath(element: 1, section: 0), target: ElementPath(element: 0, section: 0))]
            ),
        ])
    }
}

@Suite struct SectionedListTests {
    @Test func crossSectionMoveIsAMove() throws {
        let source = [section(0, [1, 2, 3]), section(1, [4, 5])]
        let target = [section(0, [1, 3]), section(1, [4, 2, 5])]
        let changeset = try checkDiff(source, target)
        #expect(changeset.stages == [
            Changeset(stage: .placeElements, elementMoved: [
                ElementMove(source: ElementPath(element: 1, section: 0), target: ElementPath(element: 1, section: 1)),
            ]),
        ])
    }

    /// Survivors leave a deleted section and enter an inserted one as moves: their DOM nodes live on.
    @Test func movesOutOfDeletedSectionIntoInsertedOne() throws {
        let source = [section(0, [1, 2]), section(1, [3, 4])]
        let target = [section(2, [3, 9]), section(1, [4])]
        let changeset = try checkDiff(source, target)
        #expect(changeset.layout == [.target(0), .deleted(source: 0), .target(1)])
        #expect(changeset.stages == [
            Changeset(stage: .placeSections, sectionInserted: [0]),
            Changeset(
                stage: .placeElements,
                elementInserted: [ElementPath(element: 1, section: 0)],
                elementMoved: [ElementMove(source: ElementPath(element: 0, section: 2), target: ElementPath(element: 0, section: 0))]
            ),
            Changeset(stage: .deleteSections, sectionDeleted: [1]),
        ])
    }

    @Test func survivorOfDeletedSectionMovesIntoSurvivingSection() throws {
        let source = [section(0, [1, 2]), section(1, [3])]
        let target = [section(1, [2, 3])]
        let changeset = try checkDiff(source, target)
        #expect(changeset.elementMoveCount == 1)
        #expect(changeset[.removeAndUpdate] == nil, "element 1 goes with its section, not on its own")
        #expect(changeset[.deleteSections]?.sectionDeleted == [0])
    }

    @Test func sectionReorderIsTheFewestSectionMoves() throws {
        let source = (0 ..< 5).map { section($0, [$0 * 10]) }
        let target = [source[4], source[0], source[1], source[2], source[3]]
        let changeset = try checkDiff(source, target)
        #expect(changeset.stages == [
            Changeset(stage: .placeSections, sectionMoved: [SectionMove(source: 4, target: 0)]),
        ])
    }

    @Test func sectionUpdateKeepsItsElements() throws {
        let source = [section(0, [1, 2])]
        let target = [section(0, payload: 1, [1, 2])]
        let changeset = try checkDiff(source, target)
        #expect(changeset.stages == [Changeset(stage: .removeAndUpdate, sectionUpdated: [0])])
    }

    @Test func deletedSectionsStayInPlaceUntilTheLastStage() throws {
        let source = [section(0, [1]), section(1, [2]), section(2, [3])]
        let target = [section(2, [3]), section(3, [2]), section(0, [1])]
        try checkDiff(source, target)
    }

    @Test func everythingNew() throws {
        try checkDiff([section(0, [1, 2]), section(1, [])], [section(2, [3]), section(3, [4, 5])])
    }

    @Test func everythingDeleted() throws {
        let changeset = try checkDiff([section(0, [1, 2]), section(1, [3])], [])
        #expect(changeset.stages == [Changeset(stage: .deleteSections, sectionDeleted: [0, 1])])
    }
}

@Suite struct DuplicateIdentifierTests {
    @Test func duplicateElementInTargetNamesIt() {
        #expect(throws: DiffError.duplicateElementIdentifier("7", in: .target)) {
            try StagedChangeset(source: [Item(id: 7)], target: [Item(id: 7), Item(id: 7)])
        }
    }

    @Test func duplicateAmongNewElements() {
        #expect(throws: DiffError.duplicateElementIdentifier("8", in: .target)) {
            try StagedChangeset(source: [Item(id: 7)], target: [Item(id: 8), Item(id: 8)])
        }
    }

    /// The common prefix is matched without hashing, yet a new element repeating it is still caught.
    @Test func newElementRepeatingTheCommonPrefix() {
        let source = [Item(id: 1), Item(id: 2), Item(id: 3)]
        let target = [Item(id: 1), Item(id: 2), Item(id: 1), Item(id: 3)]
        #expect(throws: DiffError.duplicateElementIdentifier("1", in: .target)) {
            try StagedChangeset(source: source, target: target)
        }
    }

    @Test func newElementRepeatingTheCommonSuffix() {
        let source = [Item(id: 1), Item(id: 2), Item(id: 3)]
        let target = [Item(id: 3), Item(id: 9), Item(id: 3)]
        #expect(throws: DiffError.duplicateElementIdentifier("3", in: .target)) {
            try StagedChangeset(source: source, target: target)
        }
    }

    @Test func duplicateAcrossSections() {
        let source = [section(0, [1]), section(1, [2])]
        let target = [section(0, [1, 2]), section(1, [2])]
        #expect(throws: DiffError.duplicateElementIdentifier("2", in: .target)) {
            try StagedChangeset(source: source, target: target)
        }
    }

    @Test func duplicateSection() {
        #expect(throws: DiffError.duplicateSectionIdentifier("0", in: .target)) {
            try StagedChangeset(source: [section(0, [])], target: [section(0, []), section(0, [])])
        }
        #expect(throws: DiffError.duplicateSectionIdentifier("5", in: .target)) {
            try StagedChangeset(source: [section(0, [])], target: [section(5, []), section(5, [])])
        }
        #expect(throws: DiffError.duplicateSectionIdentifier("0", in: .source)) {
            try StagedChangeset(source: [section(0, []), section(0, [])], target: [])
        }
    }

    @Test func duplicateInSourceToBeMatched() {
        #expect(throws: DiffError.duplicateElementIdentifier("4", in: .source)) {
            try StagedChangeset(source: [Item(id: 4), Item(id: 4)], target: [Item(id: 5)])
        }
    }

    @Test func stringIdentifiersAreQuotedInTheMessage() {
        struct Named: Differentiable, Hashable { var name: String; var differenceIdentifier: String { name } }
        let error = #expect(throws: DiffError.self) {
            try StagedChangeset(source: [Named](), target: [Named(name: "a\"b"), Named(name: "a\"b")])
        }
        #expect(error?.description == #"duplicate element identifier "a"b" in the target"#)
    }
}

@Suite struct LongestIncreasingSubsequenceTests {
    @Test(arguments: [
        [Int](), [1], [1, 2, 3], [3, 2, 1], [2, 0, 3, 1, 4], [5, 1, 6, 2, 7, 3, 8], [9, 8, 1, 2, 7, 3, 4],
    ])
    func marksALongestIncreasingRun(values: [Int]) {
        let marks = values.withUnsafeBufferPointer { longestIncreasingSubsequence($0) }
        let chosen = zip(values, marks).filter(\.1).map(\.0)
        #expect(chosen == chosen.sorted() && Set(chosen).count == chosen.count)
        #expect(chosen.count == longestIncreasingLength(values))
    }
}
