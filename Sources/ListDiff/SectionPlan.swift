/// How the sections of a list change: which survive, which are inserted, deleted, updated or moved, and
/// where each one sits in the intermediate layout *L2* described on ``StagedChangeset``.
@usableFromInline
struct SectionPlan {
    /// For each source section, the index of its target section, or -1 when it is deleted.
    @usableFromInline var sourceToTarget: [Int]
    /// For each target section, the index of its source section, or -1 when it is inserted.
    @usableFromInline var targetToSource: [Int]
    /// For each source section, its index in *L2*.
    @usableFromInline var layoutOfSource: [Int]
    /// For each target section, its index in *L2*.
    @usableFromInline var layoutOfTarget: [Int]
    /// The target sections in *L2* order.
    @usableFromInline var targetsInLayoutOrder: [Int]
    /// What each section of *L2* is.
    @usableFromInline var layout: [SectionSlot] = []
    /// Source indices of surviving sections whose content changed (stage 1).
    @usableFromInline var updated: [Int] = []
    /// *L2* indices of inserted sections (stage 2).
    @usableFromInline var inserted: [Int] = []
    /// Moves from source index to *L2* index (stage 2).
    @usableFromInline var moved: [SectionMove] = []
    /// *L2* indices of deleted sections (stage 4).
    @usableFromInline var deleted: [Int] = []

    /// A list of one section that survives unchanged: the plan of a flat list.
    @inlinable
    static var single: SectionPlan {
        SectionPlan(
            sourceToTarget: [0], targetToSource: [0], layoutOfSource: [0], layoutOfTarget: [0],
            targetsInLayoutOrder: [0], layout: [.target(0)]
        )
    }

    @usableFromInline
    init(
        sourceToTarget: [Int], targetToSource: [Int], layoutOfSource: [Int], layoutOfTarget: [Int],
        targetsInLayoutOrder: [Int],
        layout: [SectionSlot]
    ) {
        self.sourceToTarget = sourceToTarget
        self.targetToSource = targetToSource
        self.layoutOfSource = layoutOfSource
        self.layoutOfTarget = layoutOfTarget
        self.targetsInLayoutOrder = targetsInLayoutOrder
        self.layout = layout
    }

    /// Matches sections by identifier and lays out stage 2.
    @inlinable
    init<ID: Hashable>(sourceIDs: [ID], targetIDs: [ID]) throws(DiffError) {
        let sourceCount = sourceIDs.count
        let targetCount = targetIDs.count
        var sourceToTarget = [Int](repeating: -1, count: sourceCount)
        var targetToSource = [Int](repeating: -1, count: targetCount)

        var table = IdentifierTable<ID>(capacityFor: max(sourceCount, targetCount))
        let failure: DiffError? = sourceIDs.withUnsafeBufferPointer { sourceIDs in
            for index in 0 ..< sourceCount where table.insert(index, of: sourceIDs) != nil {
                return .duplicateSectionIdentifier(DiffError.describe(sourceIDs[index]), in: .source)
            }
            for index in 0 ..< targetCount {
                let id = targetIDs[index]
                guard let match = table.find(id, in: sourceIDs) else { continue }
                if sourceToTarget[match] >= 0 {
                    return .duplicateSectionIdentifier(DiffError.describe(id), in: .target)
                }
                sourceToTarget[match] = index
                targetToSource[index] = match
            }
            return nil
        }
        if let failure {
            throw failure
        }
        // Inserted sections may repeat each other; matched ones were checked above.
        var insertedTable = IdentifierTable<ID>(capacityFor: targetCount)
        let duplicate: Int? = targetIDs.withUnsafeBufferPointer { targetIDs in
            for index in 0 ..< targetCount where targetToSource[index] < 0 {
                if insertedTable.insert(index, of: targetIDs) != nil {
                    return index
                }
            }
            return nil
        }
        if let duplicate {
            throw .duplicateSectionIdentifier(DiffError.describe(targetIDs[duplicate]), in: .target)
        }

        self.init(
            sourceToTarget: sourceToTarget,
            targetToSource: targetToSource,
            layoutOfSource: [],
            layoutOfTarget: [],
            targetsInLayoutOrder: [],
            layout: []
        )
        layOut()
    }

    /// Chooses the sections that stay (a longest increasing subsequence of the survivors' source indices)
    /// and computes layout *L2*: the staying sections and the deleted ones in source order, each inserted
    /// or moved section right after its predecessor in the target.
    @inlinable
    mutating func layOut() {
        let sourceCount = sourceToTarget.count
        let targetCount = targetToSource.count

        var survivorKeys = [Int]()
        survivorKeys.reserveCapacity(targetCount)
        for source in targetToSource where source >= 0 {
            survivorKeys.append(source)
        }
        let stays = survivorKeys.withUnsafeBufferPointer { longestIncreasingSubsequence($0) }
        // isAnchored[s]: source section s keeps its place in L2 (it stays, or it is deleted).
        var isAnchored = [Bool](repeating: true, count: sourceCount)
        var survivor = 0
        for source in targetToSource where source >= 0 {
            isAnchored[source] = stays[survivor]
            survivor += 1
        }

        // chains[s + 1]: target sections placed after anchored source section s (index 0: at the front).
        var chains = [[Int]](repeating: [], count: sourceCount + 1)
        var head = 0
        for target in 0 ..< targetCount {
            let source = targetToSource[target]
            if source >= 0, isAnchored[source] {
                head = source + 1
            } else {
                chains[head].append(target)
            }
        }

        layoutOfSource = [Int](repeating: -1, count: sourceCount)
        layoutOfTarget = [Int](repeating: -1, count: targetCount)
        targetsInLayoutOrder = []
        targetsInLayoutOrder.reserveCapacity(targetCount)
        layout.reserveCapacity(sourceCount + targetCount)
        var position = 0
        func place(target: Int) {
            layoutOfTarget[target] = position
            targetsInLayoutOrder.append(target)
            layout.append(.target(target))
            let source = targetToSource[target]
            if source >= 0 {
                layoutOfSource[source] = position
                if !isAnchored[source] {
                    moved.append(SectionMove(source: source, target: position))
                }
            } else {
                inserted.append(position)
            }
            position += 1
        }
        for target in chains[0] {
            place(target: target)
        }
        for source in 0 ..< sourceCount where isAnchored[source] {
            let target = sourceToTarget[source]
            if target >= 0 {
                place(target: target)
            } else {
                layoutOfSource[source] = position
                layout.append(.deleted(source: source))
                deleted.append(position)
                position += 1
            }
            for chained in chains[source + 1] {
                place(target: chained)
            }
        }
    }

    /// Records the surviving sections whose own content changed.
    @inlinable
    mutating func findUpdates<Section: Differentiable>(source: [Section], target: [Section]) {
        for (index, targetIndex) in sourceToTarget.enumerated()
        where targetIndex >= 0 && !target[targetIndex].isContentEqual(to: source[index]) {
            updated.append(index)
        }
    }
}
