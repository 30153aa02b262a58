public import LiveListTestSupport
public import Foundation
public import ListDiff

/// The parameters of a family R scenario (DifferenceKit's README benchmark): `count` elements, a block
/// deleted, a block inserted, a range shuffled.
public struct RParameters: Sendable {
    /// The number of source elements.
    public var count: Int
    /// The source positions deleted.
    public var deleteRange: Range<Int>
    /// Where the inserted block lands in the target (its `count` is the number of new elements).
    public var insertRange: Range<Int>
    /// The target positions shuffled with Fisher–Yates, after the delete and the insert.
    public var shuffleRange: Range<Int>
    /// The seed of the SplitMix64 generator.
    public var seed: UInt64

    /// Creates the parameters of an R scenario.
    public init(count: Int, deleteRange: Range<Int>, insertRange: Range<Int>, shuffleRange: Range<Int>, seed: UInt64) {
        self.count = count
        self.deleteRange = deleteRange
        self.insertRange = insertRange
        self.shuffleRange = shuffleRange
        self.seed = seed
    }

    /// R-5k: 5,000 elements, seed 1.
    public static let r5k = RParameters(
        count: 5000, deleteRange: 2000 ..< 3000, insertRange: 3000 ..< 4000, shuffleRange: 0 ..< 200, seed: 1
    )
    /// R-100k: 100,000 elements, seed 2.
    public static let r100k = RParameters(
        count: 100_000, deleteRange: 20000 ..< 30000, insertRange: 30000 ..< 40000, shuffleRange: 0 ..< 2000, seed: 2
    )
    /// R-1M: 1,000,000 elements, seed 3 (R-100k scaled up ten times).
    public static let r1M = RParameters(
        count: 1_000_000, deleteRange: 200_000 ..< 300_000, insertRange: 300_000 ..< 400_000,
        shuffleRange: 0 ..< 20000, seed: 3
    )
}

/// Builds an R-UUID scenario: `count` UUIDs, then the target by deleting `deleteRange`, inserting a
/// block of new UUIDs at `insertRange.lowerBound` and shuffling `shuffleRange`, all from one generator.
public func makeRUUID(_ parameters: RParameters) -> (source: [UUID], target: [UUID]) {
    var rng = SplitMix64(seed: parameters.seed)
    var source = [UUID]()
    source.reserveCapacity(parameters.count)
    for _ in 0 ..< parameters.count {
        source.append(makeUUID(using: &rng))
    }
    var target = source
    target.removeSubrange(parameters.deleteRange)
    var block = [UUID]()
    block.reserveCapacity(parameters.insertRange.count)
    for _ in parameters.insertRange {
        block.append(makeUUID(using: &rng))
    }
    target.insert(contentsOf: block, at: parameters.insertRange.lowerBound)
    fisherYatesShuffle(&target, range: parameters.shuffleRange, using: &rng)
    return (source, target)
}

/// Builds an R-Int scenario: `Item(id: k, payload: 0)` for each source position `k`, the same delete,
/// a block of `Item(id: count + j, payload: 0)` inserted, then the shuffle drawn from a fresh generator.
public func makeRInt(_ parameters: RParameters) -> (source: [Item], target: [Item]) {
    let source = (0 ..< parameters.count).map { Item(id: $0, payload: 0) }
    var target = source
    target.removeSubrange(parameters.deleteRange)
    let block = (0 ..< parameters.insertRange.count).map { Item(id: parameters.count + $0, payload: 0) }
    target.insert(contentsOf: block, at: parameters.insertRange.lowerBound)
    var rng = SplitMix64(seed: parameters.seed)
    fisherYatesShuffle(&target, range: parameters.shuffleRange, using: &rng)
    return (source, target)
}

/// Builds a family M scenario: `count` items `Item(id: k, payload: 0)`, of which `changes` are deleted,
/// `changes` updated (payload 1) and `changes` relocated, and `changes` new items `Item(id: count + j,
/// payload: 0)` inserted, by ``mutate(_:deletes:updates:moves:fresh:update:using:)``.
public func makeM(count: Int, changes: Int, seed: UInt64) -> (source: [Item], target: [Item]) {
    let source = (0 ..< count).map { Item(id: $0, payload: 0) }
    let fresh = (0 ..< changes).map { Item(id: count + $0, payload: 0) }
    var rng = SplitMix64(seed: seed)
    let target = mutate(
        source, deletes: changes, updates: changes, moves: changes, fresh: fresh,
        update: { Item(id: $0.id, payload: 1) }, using: &rng
    )
    return (source, target)
}

/// Builds the unchanged scenario: source and target are equal lists of `Item(id: k, payload: 0)`,
/// built separately so that they share no storage.
public func makeE(count: Int) -> (source: [Item], target: [Item]) {
    let source = (0 ..< count).map { Item(id: $0, payload: 0) }
    let target = (0 ..< count).map { Item(id: $0, payload: 0) }
    return (source, target)
}

/// Builds S-100x1000: 100 sections of 1,000 cells, the section list mutated, each surviving section's
/// cells mutated, new sections filled, then 20 cells moved across sections; one generator, seed 21,
/// drawn from in that order (see `docs/DIFF-SCENARIOS.md`).
public func makeS() -> (source: [ItemSection], target: [ItemSection]) {
    let sectionCount = 100
    let cellsPerSection = 1000
    let sectionChanges = 5
    let cellChanges = 10
    let crossSectionMoves = 20
    var rng = SplitMix64(seed: 21)

    // 1. The source.
    let source = (0 ..< sectionCount).map { s in
        ItemSection(
            model: SectionModel(id: s, payload: 0),
            elements: (0 ..< cellsPerSection).map { Item(id: s * cellsPerSection + $0, payload: 0) }
        )
    }
    let sourceIndexOfModel = Dictionary(uniqueKeysWithValues: source.enumerated().map { ($1.model.id, $0) })

    // 2. The section list.
    let targetModels = mutate(
        source.map(\.model),
        deletes: sectionChanges, updates: sectionChanges, moves: sectionChanges,
        fresh: (0 ..< sectionChanges).map { SectionModel(id: sectionCount + $0, payload: 0) },
        update: { SectionModel(id: $0.id, payload: 1) },
        using: &rng
    )

    // 3. The cells of each target section, in target order.
    var nextID = 1_000_000
    /// Returns a new cell with the next unused identifier.
    func freshCell() -> Item {
        defer { nextID += 1 }
        return Item(id: nextID, payload: 0)
    }
    var target = [ItemSection]()
    var fromSource = [Int]()  // `O`: target indices of the sections that came from the source
    for model in targetModels {
        if let sourceIndex = sourceIndexOfModel[model.id] {
            fromSource.append(target.count)
            let fresh = (0 ..< cellChanges).map { _ in freshCell() }
            let cells = mutate(
                source[sourceIndex].elements,
                deletes: cellChanges, updates: cellChanges, moves: cellChanges, fresh: fresh,
                update: { Item(id: $0.id, payload: 1) }, using: &rng
            )
            target.append(ItemSection(model: model, elements: cells))
        } else {
            let cells = (0 ..< cellsPerSection).map { _ in freshCell() }
            target.append(ItemSection(model: model, elements: cells))
        }
    }

    // 4. Cross-section moves, between consecutive pairs of surviving sections.
    for k in 0 ..< crossSectionMoves {
        let a = fromSource[2 * k]
        let b = fromSource[2 * k + 1]
        let p = rng.below(target[a].elements.count)
        let cell = target[a].elements.remove(at: p)
        let g = rng.below(target[b].elements.count + 1)
        target[b].elements.insert(cell, at: g)
    }
    return (source, target)
}
