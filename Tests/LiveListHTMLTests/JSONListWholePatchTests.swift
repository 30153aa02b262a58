@testable import LiveListHTML
import LiveListTestSupport
import Testing

/// A patch applied to a linked copy of the state (what a patch of many moves in long sections takes)
/// does what applying it in place does, operation for operation: the same state, the same operations
/// kept, the same skipped count, the same refusal, and an undo that restores the state.
@Suite struct JSONListWholePatchTests {
    /// Random patches, valid ones and ones with a refused operation somewhere, on random states, both
    /// ways. The seed is printed.
    @Test func theLinkedCopyAgreesWithApplyingInPlace() throws {
        let seed = UInt64.random(in: 0 ... .max)
        print("JSONListWholePatchTests seed \(seed)")
        var random = SplitMix64(seed: seed)
        for round in 0 ..< 400 {
            let sectionCount = Int.random(in: 1 ... 4, using: &random)
            var sections: [JSONListState.Section] = []
            var next = 0
            for index in 0 ..< sectionCount {
                let cells = (0 ..< Int.random(in: 0 ... 12, using: &random)).map { _ -> JSONListState.Cell in
                    next += 1
                    return JSONListState.Cell(id: "c\(next)", text: "t\(next % 3)")
                }
                sections.append(JSONListState.Section(id: "s\(index)", header: index % 2 == 0 ? "h" : nil, cells: cells))
            }
            let state = JSONListState(sections: sections)
            var operations = makePatch(for: state, using: &random).operations
            // Sometimes an operation that is refused, somewhere in the patch.
            if Int.random(in: 0 ..< 3, using: &random) == 0 {
                let refused: [JSONListPatch.Operation] = [
                    .upsert(cell: .init(id: "new", text: "n"), section: nil, position: nil),
                    .upsert(cell: .init(id: "new", text: "n"), section: "nosuch", position: nil),
                    .upsert(cell: .init(id: "new", text: "n"), section: "s0", position: .after("nosuch")),
                    .upsert(cell: .init(id: "c1", text: "n"), section: "s0", position: .after("c1")),
                    .upsert(cell: .init(id: "c1", text: "n"), section: nil, position: .after("nosuch")),
                    .upsert(cell: .init(id: "c2", text: "n"), section: "nosuch", position: .first),
                    .upsertSection(id: "s0", header: nil, footer: nil, position: .after("s0")),
                    .upsertSection(id: "fresh", header: nil, footer: nil, position: .after("nosuch")),
                ]
                operations.insert(refused[Int.random(in: 0 ..< refused.count, using: &random)], at: Int.random(in: 0 ... operations.count, using: &random))
            }
            let patch = JSONListPatch(operations: operations)
            let limits = Int.random(in: 0 ..< 5, using: &random) == 0
                ? JSONListLimits(maximumSections: sectionCount + 1, maximumCells: state.cellCount + 1) : .unlimited
            var inPlace = JSONListDocument(state)
            var linked = JSONListDocument(state)
            let context = "seed \(seed), round \(round), patch \(String(decoding: patch.encoded(), as: UTF8.self))"
            let expected: Result<JSONListDocument.Applied, ListStateError>
            do throws(ListStateError) { expected = .success(try inPlace.apply(patch, limits: limits)) } catch { expected = .failure(error) }
            let result: Result<JSONListDocument.Applied, ListStateError>
            do throws(ListStateError) { result = .success(try linked.applyWhole(patch, limits: limits)) } catch { result = .failure(error) }
            switch (expected, result) {
            case let (.success(expected), .success(applied)):
                #expect(linked.state == inPlace.state, "\(context)")
                #expect(applied.effective == expected.effective, "\(context)")
                #expect(applied.skipped == expected.skipped && applied.changed == expected.changed, "\(context)")
                #expect(linked.cellCount == inPlace.cellCount, "\(context)")
                // The operations kept, applied to the state before, make the same state.
                var replayed = JSONListDocument(state)
                _ = try replayed.applyWhole(JSONListPatch(operations: applied.effective), limits: .unlimited)
                #expect(replayed.state == linked.state, "\(context)")
                linked.undo(applied)
                #expect(linked.state == state, "\(context): undone")
            case let (.failure(expected), .failure(error)):
                #expect(error == expected, "\(context)")
                #expect(linked.state == state, "\(context): refused whole")
            default:
                Issue.record("\(context): in place \(expected), linked \(result)")
            }
        }
    }

    /// Which patches take the linked copy: many moves in long sections, never a patch of updates.
    @Test func manyMovesInALongSectionGoWhole() {
        let cells = (0 ..< 20_000).map { JSONListState.Cell(id: "c\($0)", text: "t") }
        let document = JSONListDocument(JSONListState(sections: [.init(id: "s", cells: cells)]))
        let moves = JSONListPatch(operations: (0 ..< 2_000).map { .upsert(cell: .init(id: "c\(19_999 - $0)", text: "t"), section: nil, position: .first) })
        let updates = JSONListPatch(operations: (0 ..< 2_000).map { .update(cell: .init(id: "c\($0)", text: "u")) })
        let few = JSONListPatch(operations: (0 ..< 10).map { .upsert(cell: .init(id: "c\(19_999 - $0)", text: "t"), section: nil, position: .first) })
        #expect(document.appliesWhole(moves))
        #expect(!document.appliesWhole(updates) && !document.appliesWhole(few))
    }
}
