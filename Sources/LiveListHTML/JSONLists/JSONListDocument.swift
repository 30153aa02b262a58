import Markup

/// A JSON list's state with an index of its ids, to which a ``JSONListPatch`` applies in place at a
/// cost that follows the patch, not the list.
///
/// The index maps each cell id to its section and its position there as of some moment, and keeps the
/// insertions and removals since then (*shifts*), which a look-up replays for the cell's section. When
/// the shifts outgrow a sixty-fourth of the list's cells (at least 256) the index is built again: a
/// look-up costs at most that many steps (integer comparisons), and the rebuild, spread over the
/// structural writes that caused it, about 64 dictionary inserts each.
public struct JSONListDocument: Sendable {
    /// The state.
    public private(set) var state: JSONListState
    /// The number of cells over all sections.
    public private(set) var cellCount: Int

    private var sectionIndex: [ByteKey: Int] = [:]
    /// A number for each section, by position, that stays with it while the index lives: what places
    /// and shifts name a section by (an integer compares faster than an id).
    private var sectionSerials: [Int] = []
    private var indexBySerial: [Int: Int] = [:]
    private var nextSerial = 0
    private var cellIndex: [ByteKey: Place] = [:]
    private var shifts: [Shift] = []
    private var indexed = false

    /// Where a cell was when it was indexed (its section's id, its position) and the shifts since.
    private struct Place {
        var section: Int
        var position: Int
        var epoch: Int
    }

    /// A cell inserted (delta 1: cells at or after `position` move down) or removed (-1: cells after it move up).
    private struct Shift {
        var section: Int
        var position: Int
        var delta: Int
    }

    public init(_ state: JSONListState) {
        self.state = state
        cellCount = state.cellCount
    }

    /// Replaces the whole state (a PUT); the index is built again when next needed.
    public mutating func replace(with state: JSONListState) {
        self.state = state
        cellCount = state.cellCount
        indexed = false
        cellIndex = [:]
        sectionIndex = [:]
        sectionSerials = []
        indexBySerial = [:]
        shifts = []
    }

    // MARK: - The index

    private mutating func buildIndex() {
        sectionSerials = Array(state.sections.indices)
        nextSerial = state.sections.count
        indexSections()
        cellIndex = Dictionary(minimumCapacity: cellCount)
        for (index, section) in state.sections.enumerated() {
            for (position, cell) in section.cells.enumerated() {
                cellIndex[ByteKey(cell.id)] = Place(section: index, position: position, epoch: 0)
            }
        }
        shifts = []
        indexed = true
    }

    private mutating func ensureIndex() {
        if !indexed || shifts.count > max(256, cellCount / 64) {
            buildIndex()
        }
    }

    /// Indexes the sections by id and by serial (``sectionSerials`` follows every structural change
    /// of the sections).
    private mutating func indexSections() {
        sectionIndex = Dictionary(minimumCapacity: state.sections.count)
        indexBySerial = Dictionary(minimumCapacity: state.sections.count)
        for (index, section) in state.sections.enumerated() {
            sectionIndex[ByteKey(section.id)] = index
            indexBySerial[sectionSerials[index]] = index
        }
    }

    /// The section and position of the cell `id`, if the list holds it.
    private func find(_ id: ByteKey) -> (section: Int, position: Int)? {
        guard let place = cellIndex[id], let section = indexBySerial[place.section] else { return nil }
        var position = place.position
        for shift in shifts[place.epoch...] where shift.section == place.section {
            if shift.delta > 0 {
                if position >= shift.position { position += 1 }
            } else if position > shift.position {
                position -= 1
            }
        }
        return (section, position)
    }

    private mutating func insertCell(_ cell: JSONListState.Cell, section: Int, at position: Int) {
        let sectionID = sectionSerials[section]
        state.sections[section].cells.insert(cell, at: position)
        cellCount += 1
        if position != state.sections[section].cells.count - 1 {
            shifts.append(Shift(section: sectionID, position: position, delta: 1))
        }
        cellIndex[ByteKey(cell.id)] = Place(section: sectionID, position: position, epoch: shifts.count)
    }

    private mutating func removeCell(section: Int, at position: Int) -> JSONListState.Cell {
        let sectionID = sectionSerials[section]
        let cell = state.sections[section].cells.remove(at: position)
        cellCount -= 1
        cellIndex.removeValue(forKey: ByteKey(cell.id))
        if position != state.sections[section].cells.count {
            shifts.append(Shift(section: sectionID, position: position, delta: -1))
        }
        return cell
    }

    // MARK: - Applying

    /// What applying a patch did.
    public struct Applied: Sendable {
        /// The operations that changed something, with every position made explicit where a cell or a
        /// section was inserted (what a store keeps, and what other processes apply).
        public var effective: [JSONListPatch.Operation] = []
        /// How many operations changed nothing because their cell or section was missing.
        public var skipped = 0
        /// What changed, in order, for the renderer (see ``Effect``).
        public var effects: [Effect] = []
        /// Whether ``effects`` make no more DOM operations than a diff of the whole list would: no
        /// cell or section moved, none was the subject of two operations, and no section removed had
        /// cells changed by the patch. Otherwise the list is rendered whole.
        public var minimal = true
        var undo: [Undo] = []

        /// Whether the patch changed the list.
        public var changed: Bool { !effective.isEmpty }
    }

    /// One change, with positions as they were when it happened.
    public enum Effect: Sendable {
        case cellChanged(section: Int, position: Int, cell: JSONListState.Cell)
        case cellInserted(section: Int, position: Int, cell: JSONListState.Cell)
        case cellRemoved(section: Int, position: Int)
        case cellMoved(from: (section: Int, position: Int), to: (section: Int, position: Int), cell: JSONListState.Cell)
        case sectionInserted(index: Int, section: JSONListState.Section)
        case sectionChanged(index: Int, header: String?, footer: String?)
        case sectionRemoved(index: Int)
        case sectionMoved(from: Int, to: Int)
    }

    enum Undo: Sendable {
        /// The whole state before a patch applied to a linked copy (JSONListDocument+Whole.swift).
        case restoreState(JSONListState)
        case restoreCell(section: Int, position: Int, cell: JSONListState.Cell)
        case removeCell(section: Int, position: Int)
        case insertCell(section: Int, position: Int, cell: JSONListState.Cell)
        case restoreSection(index: Int, header: String?, footer: String?)
        case removeSection(index: Int)
        case insertSection(index: Int, section: JSONListState.Section)
    }

    /// Applies `patch` in order, all or nothing: on a refusal the document is as it was.
    ///
    /// - Throws: ``ListStateError`` naming the first operation that cannot apply (`ops[3]: …`): a missing
    ///   anchor or section, a cell inserted without its section, or the list's limits.
    public mutating func apply(_ patch: JSONListPatch, limits: JSONListLimits) throws(ListStateError) -> Applied {
        if appliesWhole(patch) {
            return try applyWhole(patch, limits: limits)
        }
        ensureIndex()
        var applied = Applied()
        var subjects = Set<ByteKey>()
        var sectionSubjects = Set<ByteKey>()
        var sectionsWithCellChanges = Set<ByteKey>()
        func subject(_ id: String, section: Bool) {
            let inserted = section ? sectionSubjects.insert(ByteKey(id)).inserted : subjects.insert(ByteKey(id)).inserted
            if !inserted { applied.minimal = false }
        }
        do throws(ListStateError) {
            for (index, operation) in patch.operations.enumerated() {
                let path = "ops[\(index)]"
                switch operation {
                case let .upsert(cell, sectionID, position):
                    if let found = find(ByteKey(cell.id)) {
                        if let placed = try placeExisting(cell, at: found, section: sectionID, position: position, path: path, applied: &applied) {
                            subject(cell.id, section: false)
                            sectionsWithCellChanges.insert(ByteKey(state.sections[placed].id))
                        }
                    } else {
                        guard let sectionID else {
                            throw ListStateError(code: "missing_section", detail: "\(path).section: required to insert the missing cell \(quoted(cell.id))")
                        }
                        guard let section = sectionIndex[ByteKey(sectionID)] else {
                            throw ListStateError(code: "unknown_section", detail: "\(path).section: no section \(quoted(sectionID))")
                        }
                        guard cellCount < limits.maximumCells else {
                            throw ListStateError(code: "too_many_cells", detail: "\(path): the list would have more than the limit of \(limits.maximumCells) cells")
                        }
                        let target = try cellPosition(position ?? .last, in: section, path: path)
                        insertCell(cell, section: section, at: target)
                        applied.undo.append(.removeCell(section: section, position: target))
                        applied.effects.append(.cellInserted(section: section, position: target, cell: cell))
                        applied.effective.append(.upsert(cell: cell, section: sectionID, position: Self.explicit(target, in: state.sections[section].cells.lazy.map(\.id))))
                        subject(cell.id, section: false)
                        sectionsWithCellChanges.insert(ByteKey(sectionID))
                    }
                case let .update(cell):
                    guard let found = find(ByteKey(cell.id)) else {
                        applied.skipped += 1
                        continue
                    }
                    if try placeExisting(cell, at: found, section: nil, position: nil, path: path, applied: &applied) != nil {
                        subject(cell.id, section: false)
                        sectionsWithCellChanges.insert(ByteKey(state.sections[found.section].id))
                    }
                case let .remove(id):
                    guard let found = find(ByteKey(id)) else {
                        applied.skipped += 1
                        continue
                    }
                    sectionsWithCellChanges.insert(ByteKey(state.sections[found.section].id))
                    let cell = removeCell(section: found.section, at: found.position)
                    applied.undo.append(.insertCell(section: found.section, position: found.position, cell: cell))
                    applied.effects.append(.cellRemoved(section: found.section, position: found.position))
                    applied.effective.append(.remove(cell: id))
                    subject(id, section: false)
                case let .upsertSection(id, header, footer, position):
                    if try upsertSection(id: id, header: header, footer: footer, position: position, path: path, limits: limits, applied: &applied) {
                        subject(id, section: true)
                    }
                case let .removeSection(id):
                    guard let index = sectionIndex[ByteKey(id)] else {
                        applied.skipped += 1
                        continue
                    }
                    if sectionsWithCellChanges.contains(ByteKey(id)) { applied.minimal = false }
                    let section = state.sections.remove(at: index)
                    sectionSerials.remove(at: index)
                    cellCount -= section.cells.count
                    for cell in section.cells {
                        cellIndex.removeValue(forKey: ByteKey(cell.id))
                    }
                    indexSections()
                    applied.undo.append(.insertSection(index: index, section: section))
                    applied.effects.append(.sectionRemoved(index: index))
                    applied.effective.append(.removeSection(id: id))
                    subject(id, section: true)
                }
            }
        } catch {
            undo(applied)
            throw error
        }
        return applied
    }

    /// Replaces an existing cell's content and moves it when `section` or `position` names another
    /// place; returns the section the cell is in when anything changed, nil otherwise.
    private mutating func placeExisting(
        _ cell: JSONListState.Cell, at found: (section: Int, position: Int), section sectionID: String?,
        position: JSONListPatch.Position?, path: String, applied: inout Applied
    ) throws(ListStateError) -> Int? {
        let old = state.sections[found.section].cells[found.position]
        var targetSection = found.section
        if let sectionID {
            guard let index = sectionIndex[ByteKey(sectionID)] else {
                throw ListStateError(code: "unknown_section", detail: "\(path).section: no section \(quoted(sectionID))")
            }
            targetSection = index
        }
        let moves: Bool
        if targetSection != found.section {
            moves = true
        } else if let position {
            switch position {
            case .first: moves = found.position != 0
            case .last: moves = found.position != state.sections[found.section].cells.count - 1
            case let .after(anchor):
                guard let anchorPlace = find(ByteKey(anchor)), anchorPlace.section == found.section, !sameBytes(anchor, cell.id) else {
                    throw Self.unknownAnchor(anchor, in: state.sections[targetSection].id, path: path)
                }
                moves = anchorPlace.position != found.position - 1
            }
        } else {
            moves = false
        }
        let contentChanges = old != cell
        guard moves || contentChanges else { return nil }
        if !moves {
            state.sections[found.section].cells[found.position] = cell
            applied.undo.append(.restoreCell(section: found.section, position: found.position, cell: old))
            applied.effects.append(.cellChanged(section: found.section, position: found.position, cell: cell))
            applied.effective.append(.update(cell: cell))
            return found.section
        }
        // A refused anchor below is undone with the rest of the patch, this removal included.
        _ = removeCell(section: found.section, at: found.position)
        applied.undo.append(.insertCell(section: found.section, position: found.position, cell: old))
        let target = try cellPosition(position ?? .last, in: targetSection, path: path)
        insertCell(cell, section: targetSection, at: target)
        applied.undo.append(.removeCell(section: targetSection, position: target))
        applied.effects.append(.cellMoved(from: found, to: (targetSection, target), cell: cell))
        applied.effective.append(.upsert(cell: cell, section: state.sections[targetSection].id,
                                         position: Self.explicit(target, in: state.sections[targetSection].cells.lazy.map(\.id))))
        applied.minimal = false
        return targetSection
    }

    /// The position a cell goes to in section `section` (a cell that moves already taken out).
    private func cellPosition(_ position: JSONListPatch.Position, in section: Int, path: String) throws(ListStateError) -> Int {
        switch position {
        case .first: return 0
        case .last: return state.sections[section].cells.count
        case let .after(anchor):
            guard let place = find(ByteKey(anchor)), place.section == section else {
                throw Self.unknownAnchor(anchor, in: state.sections[section].id, path: path)
            }
            return place.position + 1
        }
    }

    private static func unknownAnchor(_ anchor: String, in section: String, path: String) -> ListStateError {
        ListStateError(code: "unknown_anchor", detail: "\(path).position.after: no other cell \(quoted(anchor)) in section \(quoted(section))")
    }

    /// A position that names the place `index` explicitly: first, or after its predecessor. Only the
    /// predecessor is read (`ids` is lazy where it matters: callers pass a mapped view).
    private static func explicit(_ index: Int, in ids: some RandomAccessCollection<String>) -> JSONListPatch.Position {
        index == 0 ? .first : .after(ids[ids.index(ids.startIndex, offsetBy: index - 1)])
    }

    private mutating func upsertSection(
        id: String, header: String?, footer: String?, position: JSONListPatch.Position?, path: String, limits: JSONListLimits,
        applied: inout Applied
    ) throws(ListStateError) -> Bool {
        func target(_ position: JSONListPatch.Position, excluding: String?) throws(ListStateError) -> Int {
            switch position {
            case .first: return 0
            case .last: return state.sections.count
            case let .after(anchor):
                guard let index = sectionIndex[ByteKey(anchor)], excluding.map({ !sameBytes($0, anchor) }) ?? true else {
                    throw ListStateError(code: "unknown_anchor", detail: "\(path).position.after: no other section \(quoted(anchor))")
                }
                return index + 1
            }
        }
        if let index = sectionIndex[ByteKey(id)] {
            let old = state.sections[index]
            var moveTo: Int?
            if let position {
                let wanted = try target(position, excluding: id)
                // The place it would take with itself taken out.
                let afterRemoval = wanted > index ? wanted - 1 : wanted
                if afterRemoval != index { moveTo = afterRemoval }
            }
            let shellChanges = !sameBytes(old.header, header) || !sameBytes(old.footer, footer)
            guard moveTo != nil || shellChanges else { return false }
            if shellChanges {
                state.sections[index].header = header
                state.sections[index].footer = footer
                applied.undo.append(.restoreSection(index: index, header: old.header, footer: old.footer))
                applied.effects.append(.sectionChanged(index: index, header: header, footer: footer))
            }
            var finalIndex = index
            if let moveTo {
                let section = state.sections.remove(at: index)
                state.sections.insert(section, at: moveTo)
                sectionSerials.insert(sectionSerials.remove(at: index), at: moveTo)
                indexSections()
                applied.undo.append(.insertSection(index: index, section: section))
                applied.undo.append(.removeSection(index: moveTo))
                applied.effects.append(.sectionMoved(from: index, to: moveTo))
                applied.minimal = false
                finalIndex = moveTo
            }
            applied.effective.append(.upsertSection(id: id, header: header, footer: footer,
                                                    position: moveTo == nil ? nil : Self.explicit(finalIndex, in: state.sections.lazy.map(\.id))))
            return true
        }
        guard state.sections.count < limits.maximumSections else {
            throw ListStateError(code: "too_many_sections", detail: "\(path): the list would have more than the limit of \(limits.maximumSections) sections")
        }
        let index = try target(position ?? .last, excluding: nil)
        let section = JSONListState.Section(id: id, header: header, footer: footer, cells: [])
        state.sections.insert(section, at: index)
        sectionSerials.insert(nextSerial, at: index)
        nextSerial += 1
        indexSections()
        applied.undo.append(.removeSection(index: index))
        applied.effects.append(.sectionInserted(index: index, section: section))
        applied.effective.append(.upsertSection(id: id, header: header, footer: footer, position: Self.explicit(index, in: state.sections.lazy.map(\.id))))
        return true
    }

    /// Takes back what `applied` did (its write could not be stored), newest first.
    public mutating func undo(_ applied: Applied) {
        for step in applied.undo.reversed() {
            switch step {
            case let .restoreState(old):
                replace(with: old)
                return
            case let .restoreCell(section, position, cell):
                state.sections[section].cells[position] = cell
            case let .removeCell(section, position):
                state.sections[section].cells.remove(at: position)
                cellCount -= 1
            case let .insertCell(section, position, cell):
                state.sections[section].cells.insert(cell, at: position)
                cellCount += 1
            case let .restoreSection(index, header, footer):
                state.sections[index].header = header
                state.sections[index].footer = footer
            case let .removeSection(index):
                cellCount -= state.sections[index].cells.count
                state.sections.remove(at: index)
            case let .insertSection(index, section):
                state.sections.insert(section, at: index)
                cellCount += section.cells.count
            }
        }
        if !applied.undo.isEmpty {
            indexed = false
        }
    }
}
