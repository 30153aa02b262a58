import ListDiff
import LiveListTestSupport
import Testing

/// Random pairs of sectioned lists: applying the stages to the source must give the target, with the
/// fewest moves, an update exactly for each changed survivor, and no operation for anything unchanged.
@Suite struct PropertyTests {
    static let pairsPerShard = 2_500
    static let shards = 0 ..< 4

    @Test("10,000 random pairs of sectioned lists", arguments: shards)
    func randomPairs(shard: Int) async throws {
        for round in 0 ..< Self.pairsPerShard {
            // Leaves the cooperative pool to the suites whose servers answer from tasks: on a loaded
            // two-core machine, two of these shards held both its threads for ten seconds.
            if round % 100 == 0 { await Task.yield() }
            let seed = UInt64(shard * Self.pairsPerShard + round) &* 0x9E37_79B9 &+ 1
            var random = SplitMix64(seed: seed)
            let (source, target) = makePair(using: &random)
            do {
                try checkPair(source, target)
            } catch {
                Issue.record("seed \(seed): \(error)\nsource: \(source)\ntarget: \(target)")
                return
            }
        }
    }

    /// Random flat lists go through the flat entry point and must agree with the one-section form.
    @Test("2,000 random flat lists")
    func randomFlatLists() async throws {
        for round in 0 ..< 2_000 {
            if round % 100 == 0 { await Task.yield() }
            let seed = UInt64(round) &+ 0xF1A7
            var random = SplitMix64(seed: seed)
            let (source, target) = makePair(using: &random)
            let sourceItems = source.flatMap(\.elements)
            let targetItems = target.flatMap(\.elements)
            let flat = try StagedChangeset(source: sourceItems, target: targetItems)
            let sectioned = try StagedChangeset(
                source: [TestSection(id: 0, elements: sourceItems)],
                target: [TestSection(id: 0, elements: targetItems)]
            )
            #expect(flat == sectioned, "seed \(seed)")
            let result = try apply(flat, to: [TestSection(id: 0, elements: sourceItems)], target: [TestSection(id: 0, elements: targetItems)])
            #expect(result.first?.elements == targetItems, "seed \(seed)")
        }
    }

    func checkPair(_ source: [TestSection], _ target: [TestSection]) throws {
        let changeset = try StagedChangeset(source: source, target: target)
        let result = try apply(changeset, to: source, target: target)
        guard result == target else {
            throw ApplyFailure(description: "result \(result) differs from the target; stages \(changeset.stages)")
        }

        let fewest = fewestMoves(from: source, to: target)
        guard changeset.sectionMoveCount == fewest.sections, changeset.elementMoveCount == fewest.elements else {
            throw ApplyFailure(description: "moves \(changeset.sectionMoveCount)/\(changeset.elementMoveCount), fewest \(fewest)")
        }

        // Exactly one update per changed survivor, none for the unchanged.
        var sourceItems = [Int: Item]()
        for section in source {
            for item in section.elements { sourceItems[item.id] = item }
        }
        var changed = 0
        var inserted = 0
        for section in target {
            for item in section.elements {
                if let old = sourceItems[item.id] {
                    if old.payload != item.payload { changed += 1 }
                } else {
                    inserted += 1
                }
            }
        }
        let updates = changeset.stages.reduce(0) { $0 + $1.elementUpdated.count }
        let inserts = changeset.stages.reduce(0) { $0 + $1.elementInserted.count }
        guard updates == changed, inserts == inserted else {
            throw ApplyFailure(description: "\(updates) updates for \(changed) changes, \(inserts) inserts for \(inserted) new")
        }
        if source == target, !changeset.isEmpty {
            throw ApplyFailure(description: "an unchanged list produced \(changeset.stages)")
        }
    }

    /// A source of up to 6 sections of up to 10 items, and a target made from it by random edits:
    /// deleted, inserted and reordered sections; deleted, updated, inserted, reordered and cross-section
    /// moved items; sometimes the identical list, an all-new list or an empty one.
    func makePair(using random: inout SplitMix64) -> ([TestSection], [TestSection]) {
        var nextID = 0
        func freshID() -> Int {
            nextID += 1
            return nextID
        }
        let source = (0 ..< Int.random(in: 0 ... 6, using: &random)).map { _ in
            TestSection(
                id: freshID(),
                payload: 0,
                elements: (0 ..< Int.random(in: 0 ... 10, using: &random)).map { _ in Item(id: freshID()) }
            )
        }
        switch random.next() % 16 {
        case 0: return (source, source)
        case 1: return (source, [])
        case 2: return ([], source)
        case 3:
            let renamed = source.map { section in
                TestSection(id: freshID(), elements: section.elements.map { _ in Item(id: freshID()) })
            }
            return (source, renamed)
        default: break
        }

        var target = source.filter { _ in Int.random(in: 0 ..< 5, using: &random) != 0 }
        for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
            target.insert(TestSection(id: freshID(), elements: []), at: Int.random(in: 0 ... target.count, using: &random))
        }
        if Bool.random(using: &random) { target.shuffle(using: &random) }
        for index in target.indices where Int.random(in: 0 ..< 4, using: &random) == 0 {
            target[index].payload += 1
        }

        // Pool every surviving item (including those of deleted sections), drop some, update some.
        var pool = source.flatMap(\.elements).filter { _ in Int.random(in: 0 ..< 4, using: &random) != 0 }
        for index in pool.indices where Int.random(in: 0 ..< 5, using: &random) == 0 {
            pool[index].payload += 1
        }
        for _ in 0 ..< Int.random(in: 0 ... 6, using: &random) {
            pool.append(Item(id: freshID()))
        }
        for index in target.indices { target[index].elements = [] }
        guard !target.isEmpty else { return (source, target) }

        // Items mostly keep their section and order, some go elsewhere.
        let home = Dictionary(uniqueKeysWithValues: target.enumerated().map { ($1.id, $0) })
        var sectionOfItem = [Int: Int]()
        for section in source {
            for item in section.elements { sectionOfItem[item.id] = section.id }
        }
        for item in pool {
            let index: Int
            if let sectionID = sectionOfItem[item.id], let kept = home[sectionID], Int.random(in: 0 ..< 4, using: &random) != 0 {
                index = kept
            } else {
                index = Int.random(in: 0 ..< target.count, using: &random)
            }
            target[index].elements.append(item)
        }
        for index in target.indices where Int.random(in: 0 ..< 3, using: &random) == 0 {
            var items = target[index].elements
            if items.count > 1 {
                let from = Int.random(in: 0 ..< items.count, using: &random)
                let item = items.remove(at: from)
                items.insert(item, at: Int.random(in: 0 ... items.count, using: &random))
            }
            if Int.random(in: 0 ..< 6, using: &random) == 0 { items.shuffle(using: &random) }
            target[index].elements = items
        }
        return (source, target)
    }
}
