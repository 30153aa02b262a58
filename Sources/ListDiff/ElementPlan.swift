/// Matches the elements of two lists of sections and writes the stages of a ``StagedChangeset``.
///
/// Elements are numbered in one flat sequence per side (section by section). The common prefix and suffix
/// of identifiers are matched by position; the rest of the source goes into an ``IdentifierTable`` and
/// each remaining target identifier is looked up in it once (Heckel's matching, which for unique
/// identifiers is this single pass). Moves are then decided per target section by a longest increasing
/// subsequence over the source positions of the elements that stay in the same section.
@usableFromInline
enum ElementPlan {
    @inlinable
    static func stages<Element: Differentiable>(
        source: [[Element]],
        target: [[Element]],
        sections: SectionPlan
    ) throws(DiffError) -> [Changeset] {
        typealias ID = Element.DifferenceIdentifier

        // Flat numbering: identifiers and the section of each element.
        var sourceIDs = [ID]()
        var sourceSection = [Int]()
        var sourceStart = [Int]()
        flatten(source, ids: &sourceIDs, sectionOf: &sourceSection, starts: &sourceStart)
        var targetIDs = [ID]()
        var targetSection = [Int]()
        var targetStart = [Int]()
        flatten(target, ids: &targetIDs, sectionOf: &targetSection, starts: &targetStart)

        let sourceCount = sourceIDs.count
        let targetCount = targetIDs.count
        var sourceToTarget = [Int](repeating: -1, count: sourceCount)
        var targetToSource = [Int](repeating: -1, count: targetCount)

        let failure: DiffError? = sourceIDs.withUnsafeBufferPointer { sourceIDs in
            targetIDs.withUnsafeBufferPointer { targetIDs in
                sourceToTarget.withUnsafeMutableBufferPointer { sourceToTarget in
                    targetToSource.withUnsafeMutableBufferPointer { targetToSource in
                        match(
                            sourceIDs: sourceIDs,
                            targetIDs: targetIDs,
                            sourceToTarget: sourceToTarget,
                            targetToSource: targetToSource
                        )
                    }
                }
            }
        }
        if let failure {
            throw failure
        }

        var stages = [Changeset]()

        // Stage 1: deletes outside deleted sections, updates of survivors, section updates.
        // Also computes, for each survivor, its index within its section after stage 1.
        var removeAndUpdate = Changeset(stage: .removeAndUpdate)
        removeAndUpdate.sectionUpdated = sections.updated
        var indexAfterRemoval = [Int](repeating: -1, count: sourceCount)
        for section in 0 ..< source.count {
            let elements = source[section]
            let start = sourceStart[section]
            let isDeleted = sections.sourceToTarget[section] < 0
            var kept = 0
            for index in 0 ..< elements.count {
                let flat = start &+ index
                let match = sourceToTarget[flat]
                if match < 0 {
                    if !isDeleted {
                        removeAndUpdate.elementDeleted.append(ElementPath(element: index, section: section))
                    }
                    continue
                }
                indexAfterRemoval[flat] = isDeleted ? index : kept
                kept &+= 1
                let matchSection = targetSection[match]
                let newElement = target[matchSection][match &- targetStart[matchSection]]
                if !newElement.isContentEqual(to: elements[index]) {
                    removeAndUpdate.elementUpdated.append(ElementPath(element: index, section: section))
                }
            }
        }
        if !removeAndUpdate.isEmpty {
            stages.append(removeAndUpdate)
        }

        // Stage 2: sections inserted empty, sections moved.
        if !sections.inserted.isEmpty || !sections.moved.isEmpty {
            stages.append(
                Changeset(stage: .placeSections, sectionInserted: sections.inserted, sectionMoved: sections.moved)
            )
        }

        // Stage 3: per target section (in L2 order), keep the longest increasing run of the elements that
        // stay in their section; move every other survivor; insert the new elements.
        var placeElements = Changeset(stage: .placeElements)
        var keys = [Int]()
        var isCandidate = [Bool]()
        for section in sections.targetsInLayoutOrder {
            let start = targetStart[section]
            let count = targetStart[section &+ 1] &- start
            let layoutIndex = sections.layoutOfTarget[section]
            let sourceOfSection = sections.targetToSource[section]

            keys.removeAll(keepingCapacity: true)
            isCandidate.removeAll(keepingCapacity: true)
            for index in 0 ..< count {
                let match = targetToSource[start &+ index]
                let staysInSection = match >= 0 && sourceSection[match] == sourceOfSection
                isCandidate.append(staysInSection)
                if staysInSection {
                    keys.append(match)
                }
            }
            let stays = keys.withUnsafeBufferPointer { longestIncreasingSubsequence($0) }

            var candidate = 0
            for index in 0 ..< count {
                let match = targetToSource[start &+ index]
                let path = ElementPath(element: index, section: layoutIndex)
                if match < 0 {
                    placeElements.elementInserted.append(path)
                    continue
                }
                if isCandidate[index] {
                    candidate &+= 1
                    if stays[candidate &- 1] {
                        continue
                    }
                }
                let from = ElementPath(
                    element: indexAfterRemoval[match],
                    section: sections.layoutOfSource[sourceSection[match]]
                )
                placeElements.elementMoved.append(ElementMove(source: from, target: path))
            }
        }
        if !placeElements.isEmpty {
            stages.append(placeElements)
        }

        // Stage 4: deleted sections, with the elements still in them.
        if !sections.deleted.isEmpty {
            stages.append(Changeset(stage: .deleteSections, sectionDeleted: sections.deleted))
        }
        return stages
    }

    /// Numbers the elements of `sections` in one flat sequence.
    @inlinable
    static func flatten<Element: Differentiable>(
        _ sections: [[Element]],
        ids: inout [Element.DifferenceIdentifier],
        sectionOf: inout [Int],
        starts: inout [Int]
    ) {
        var total = 0
        for elements in sections {
            total &+= elements.count
        }
        ids.reserveCapacity(total)
        sectionOf.reserveCapacity(total)
        starts.reserveCapacity(sections.count &+ 1)
        for (section, elements) in sections.enumerated() {
            starts.append(ids.count)
            for element in elements {
                ids.append(element.differenceIdentifier)
            }
            sectionOf.append(contentsOf: repeatElement(section, count: elements.count))
        }
        starts.append(ids.count)
    }

    /// Pairs source and target positions of equal identifiers; returns the first duplicate found.
    @inlinable
    static func match<ID: Hashable>(
        sourceIDs: UnsafeBufferPointer<ID>,
        targetIDs: UnsafeBufferPointer<ID>,
        sourceToTarget: UnsafeMutableBufferPointer<Int>,
        targetToSource: UnsafeMutableBufferPointer<Int>
    ) -> DiffError? {
        let sourceCount = sourceIDs.count
        let targetCount = targetIDs.count

        // The common prefix and suffix match by position, without hashing.
        let shorter = min(sourceCount, targetCount)
        var prefix = 0
        while prefix < shorter, sourceIDs[prefix] == targetIDs[prefix] {
            sourceToTarget[prefix] = prefix
            targetToSource[prefix] = prefix
            prefix &+= 1
        }
        var suffix = 0
        while suffix < shorter &- prefix,
            sourceIDs[sourceCount &- 1 &- suffix] == targetIDs[targetCount &- 1 &- suffix]
        {
            sourceToTarget[sourceCount &- 1 &- suffix] = targetCount &- 1 &- suffix
            targetToSource[targetCount &- 1 &- suffix] = sourceCount &- 1 &- suffix
            suffix &+= 1
        }
        let sourceEnd = sourceCount &- suffix
        let targetEnd = targetCount &- suffix
        if prefix == sourceEnd && prefix == targetEnd {
            return nil
        }

        var table = IdentifierTable<ID>(capacityFor: sourceEnd &- prefix)
        for index in prefix ..< sourceEnd where table.insert(index, of: sourceIDs) != nil {
            return .duplicateElementIdentifier(DiffError.describe(sourceIDs[index]), in: .source)
        }

        var inserted = [Int]()
        for index in prefix ..< targetEnd {
            let id = targetIDs[index]
            guard let match = table.find(id, in: sourceIDs) else {
                inserted.append(index)
                continue
            }
            if sourceToTarget[match] >= 0 {
                return .duplicateElementIdentifier(DiffError.describe(id), in: .target)
            }
            sourceToTarget[match] = index
            targetToSource[index] = match
        }

        // New identifiers may repeat each other, or one of the prefix or suffix (which were not hashed).
        // A survivor cannot repeat either without the source repeating it too.
        let trimmed = prefix &+ suffix
        guard inserted.count > 1 || (!inserted.isEmpty && trimmed > 0) else {
            return nil
        }
        var insertedTable = IdentifierTable<ID>(capacityFor: inserted.count)
        for index in inserted where insertedTable.insert(index, of: targetIDs) != nil {
            return .duplicateElementIdentifier(DiffError.describe(targetIDs[index]), in: .target)
        }
        if trimmed > 0 {
            for index in 0 ..< prefix where insertedTable.find(targetIDs[index], in: targetIDs) != nil {
                return .duplicateElementIdentifier(DiffError.describe(targetIDs[index]), in: .target)
            }
            for index in targetEnd ..< targetCount where insertedTable.find(targetIDs[index], in: targetIDs) != nil {
                return .duplicateElementIdentifier(DiffError.describe(targetIDs[index]), in: .target)
            }
        }
        return nil
    }
}
