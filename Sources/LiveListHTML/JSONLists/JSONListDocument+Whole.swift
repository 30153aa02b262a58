import Markup

// A patch whose operations move many cells in long sections is applied to a linked copy of the
// state, where every operation costs O(1) (positions in a patch name cells and sections, never
// indices), and the state is rebuilt once at the end: O(cells + operations) in all, what a PUT of the
// whole list costs, where applying it in place would move part of a section's array per operation
// (10,000 moves to first on 100,000 cells: about 48 GB of memory moved). The result, the refusals and
// the operations kept are those of applying in place, operation for operation (JSONListDocumentTests
// compares the two on random patches); the effects are left out, as the list is then rendered whole.
extension JSONListDocument {
    /// Whether `patch` is cheaper applied to a linked copy: its structural operations times the average
    /// section's length exceed 64 times the list's cells (the break-even of moving 48-byte cells
    /// against hashing each cell once).
    func appliesWhole(_ patch: JSONListPatch) -> Bool {
        var structural = 0
        for operation in patch.operations {
            switch operation {
            case let .upsert(_, section, position): if section != nil || position != nil { structural += 1 }
            case .remove, .removeSection: structural += 1
            case let .upsertSection(_, _, _, position): if position != nil { structural += 1 }
            case .update: break
            }
        }
        let average = cellCount / max(1, state.sections.count)
        return structural > 0 && structural * average > 64 * max(cellCount, 1_024)
    }

    /// Applies `patch` to a linked copy of the state, all or nothing (see the comment above).
    mutating func applyWhole(_ patch: JSONListPatch, limits: JSONListLimits) throws(ListStateError) -> Applied {
        var linked = LinkedState(state)
        var applied = Applied()
        applied.minimal = false
        for (index, operation) in patch.operations.enumerated() {
            let path = "ops[\(index)]"
            switch operation {
            case let .upsert(cell, sectionID, position):
                try linked.upsert(cell, section: sectionID, position: position, path: path, limits: limits, applied: &applied)
            case let .update(cell):
                guard linked.cells[ByteKey(cell.id)] != nil else {
                    applied.skipped += 1
                    continue
                }
                try linked.upsert(cell, section: nil, position: nil, path: path, limits: limits, applied: &applied)
            case let .remove(id):
                guard linked.cells[ByteKey(id)] != nil else {
                    applied.skipped += 1
                    continue
                }
                linked.unlinkCell(ByteKey(id))
                applied.effective.append(.remove(cell: id))
            case let .upsertSection(id, header, footer, position):
                try linked.upsertSection(id: id, header: header, footer: footer, position: position, path: path, limits: limits, applied: &applied)
            case let .removeSection(id):
                guard linked.sectionIDs[ByteKey(id)] != nil else {
                    applied.skipped += 1
                    continue
                }
                linked.removeSection(ByteKey(id))
                applied.effective.append(.removeSection(id: id))
            }
        }
        guard !applied.effective.isEmpty else { return applied }
        applied.undo = [.restoreState(state)]
        replace(with: linked.materialized())
        return applied
    }
}

/// A JSON list's state as doubly linked sections of doubly linked cells, by id.
struct LinkedState {
    struct Cell {
        var cell: JSONListState.Cell
        var section: Int
        var previous: ByteKey?
        var next: ByteKey?
    }

    struct Section {
        var id: String
        var header: String?
        var footer: String?
        var first: ByteKey?
        var last: ByteKey?
        var count = 0
        var previous: Int?
        var next: Int?
    }

    var cells: [ByteKey: Cell] = [:]
    var sections: [Int: Section] = [:]
    var sectionIDs: [ByteKey: Int] = [:]
    var firstSection: Int?
    var lastSection: Int?
    var nextSerial = 0
    var cellCount = 0

    init(_ state: JSONListState) {
        cells.reserveCapacity(state.cellCount)
        for section in state.sections {
            let serial = appendSection(section.id, header: section.header, footer: section.footer)
            for cell in section.cells {
                link(cell, in: serial, after: sections[serial]!.last, atFirst: false)
            }
        }
    }

    // MARK: - Reading

    /// The state the links describe, in order.
    func materialized() -> JSONListState {
        var result: [JSONListState.Section] = []
        result.reserveCapacity(sections.count)
        var serial = firstSection
        while let current = serial, let section = sections[current] {
            var list: [JSONListState.Cell] = []
            list.reserveCapacity(section.count)
            var key = section.first
            while let at = key, let node = cells[at] {
                list.append(node.cell)
                key = node.next
            }
            result.append(JSONListState.Section(id: section.id, header: section.header, footer: section.footer, cells: list))
            serial = section.next
        }
        return JSONListState(sections: result)
    }

    /// The explicit position of what has `previous` before it: first, or after it.
    private static func explicit(_ previous: String?) -> JSONListPatch.Position {
        previous.map { .after($0) } ?? .first
    }

    // MARK: - Cells

    /// Links `cell` into `serial`: first, or right after `anchor` (nil with `atFirst` false: last of an
    /// empty section, which is first too).
    private mutating func link(_ cell: JSONListState.Cell, in serial: Int, after anchor: ByteKey?, atFirst: Bool) {
        let key = ByteKey(cell.id)
        var section = sections[serial]!
        let previous = atFirst ? nil : anchor
        let next = previous.map { cells[$0]!.next } ?? section.first
        cells[key] = Cell(cell: cell, section: serial, previous: previous, next: next)
        if let previous { cells[previous]!.next = key } else { section.first = key }
        if let next { cells[next]!.previous = key } else { section.last = key }
        section.count += 1
        sections[serial] = section
        cellCount += 1
    }

    /// Takes the cell `key` out of its section.
    mutating func unlinkCell(_ key: ByteKey) {
        guard let node = cells.removeValue(forKey: key) else { return }
        if let previous = node.previous { cells[previous]!.next = node.next } else { sections[node.section]!.first = node.next }
        if let next = node.next { cells[next]!.previous = node.previous } else { sections[node.section]!.last = node.previous }
        sections[node.section]!.count -= 1
        cellCount -= 1
    }

    /// Links `cell` at `position` of `serial` (a cell that moves already taken out), as
    /// `cellPosition(_:in:path:)` places it in place.
    private mutating func place(_ cell: JSONListState.Cell, at position: JSONListPatch.Position, in serial: Int, path: String) throws(ListStateError) {
        switch position {
        case .first: link(cell, in: serial, after: nil, atFirst: true)
        case .last: link(cell, in: serial, after: sections[serial]!.last, atFirst: false)
        case let .after(anchor):
            guard let found = cells[ByteKey(anchor)], found.section == serial else {
                throw Self.unknownAnchor(anchor, in: sections[serial]!.id, path: path)
            }
            link(cell, in: serial, after: ByteKey(anchor), atFirst: false)
        }
    }

    private static func unknownAnchor(_ anchor: String, in section: String, path: String) -> ListStateError {
        ListStateError(code: "unknown_anchor", detail: "\(path).position.after: no other cell \(quoted(anchor)) in section \(quoted(section))")
    }

    /// An upsert (or an update, with no section or position), as applying in place does it.
    mutating func upsert(
        _ cell: JSONListState.Cell, section sectionID: String?, position: JSONListPatch.Position?, path: String, limits: JSONListLimits,
        applied: inout JSONListDocument.Applied
    ) throws(ListStateError) {
        let key = ByteKey(cell.id)
        guard let found = cells[key] else {
            guard let sectionID else {
                throw ListStateError(code: "missing_section", detail: "\(path).section: required to insert the missing cell \(quoted(cell.id))")
            }
            guard let serial = sectionIDs[ByteKey(sectionID)] else {
                throw ListStateError(code: "unknown_section", detail: "\(path).section: no section \(quoted(sectionID))")
            }
            guard cellCount < limits.maximumCells else {
                throw ListStateError(code: "too_many_cells", detail: "\(path): the list would have more than the limit of \(limits.maximumCells) cells")
            }
            try place(cell, at: position ?? .last, in: serial, path: path)
            applied.effective.append(.upsert(cell: cell, section: sectionID, position: Self.explicit(cells[key]!.previous?.string)))
            return
        }
        var target = found.section
        if let sectionID {
            guard let serial = sectionIDs[ByteKey(sectionID)] else {
                throw ListStateError(code: "unknown_section", detail: "\(path).section: no section \(quoted(sectionID))")
            }
            target = serial
        }
        let moves: Bool
        if target != found.section {
            moves = true
        } else if let position {
            switch position {
            case .first: moves = found.previous != nil
            case .last: moves = found.next != nil
            case let .after(anchor):
                guard let anchorNode = cells[ByteKey(anchor)], anchorNode.section == found.section, !sameBytes(anchor, cell.id) else {
                    throw Self.unknownAnchor(anchor, in: sections[target]!.id, path: path)
                }
                moves = found.previous != ByteKey(anchor)
            }
        } else {
            moves = false
        }
        guard moves || found.cell != cell else { return }
        if !moves {
            cells[key]!.cell = cell
            applied.effective.append(.update(cell: cell))
            return
        }
        unlinkCell(key)
        try place(cell, at: position ?? .last, in: target, path: path)
        applied.effective.append(.upsert(cell: cell, section: sections[target]!.id, position: Self.explicit(cells[key]!.previous?.string)))
    }

    // MARK: - Sections

    /// Appends a new empty section; returns its serial.
    @discardableResult
    private mutating func appendSection(_ id: String, header: String?, footer: String?) -> Int {
        linkSection(Section(id: id, header: header, footer: footer), after: lastSection, atFirst: false)
    }

    /// Links `section` first or after the section `anchor`; returns its serial.
    @discardableResult
    private mutating func linkSection(_ section: Section, after anchor: Int?, atFirst: Bool, serial given: Int? = nil) -> Int {
        let serial = given ?? nextSerial
        if given == nil { nextSerial += 1 }
        var section = section
        section.previous = atFirst ? nil : anchor
        section.next = section.previous.map { sections[$0]!.next } ?? firstSection
        if let previous = section.previous { sections[previous]!.next = serial } else { firstSection = serial }
        if let next = section.next { sections[next]!.previous = serial } else { lastSection = serial }
        sections[serial] = section
        sectionIDs[ByteKey(section.id)] = serial
        return serial
    }

    private mutating func unlinkSection(_ serial: Int) -> Section {
        let section = sections.removeValue(forKey: serial)!
        if let previous = section.previous { sections[previous]!.next = section.next } else { firstSection = section.next }
        if let next = section.next { sections[next]!.previous = section.previous } else { lastSection = section.previous }
        sectionIDs.removeValue(forKey: ByteKey(section.id))
        return section
    }

    /// Removes the section `key` and its cells.
    mutating func removeSection(_ key: ByteKey) {
        guard let serial = sectionIDs[key] else { return }
        var cell = sections[serial]!.first
        while let current = cell {
            cell = cells[current]!.next
            cells.removeValue(forKey: current)
            cellCount -= 1
        }
        _ = unlinkSection(serial)
    }

    /// An upsert of a section, as applying in place does it.
    mutating func upsertSection(
        id: String, header: String?, footer: String?, position: JSONListPatch.Position?, path: String, limits: JSONListLimits,
        applied: inout JSONListDocument.Applied
    ) throws(ListStateError) {
        func anchorSerial(_ anchor: String, excluding: String?) throws(ListStateError) -> Int {
            guard let serial = sectionIDs[ByteKey(anchor)], excluding.map({ !sameBytes($0, anchor) }) ?? true else {
                throw ListStateError(code: "unknown_anchor", detail: "\(path).position.after: no other section \(quoted(anchor))")
            }
            return serial
        }
        if let serial = sectionIDs[ByteKey(id)] {
            let old = sections[serial]!
            var moves = false
            var anchor: Int?
            if let position {
                switch position {
                case .first: moves = old.previous != nil
                case .last: moves = old.next != nil
                case let .after(name):
                    anchor = try anchorSerial(name, excluding: id)
                    moves = old.previous != anchor
                }
            }
            let shellChanges = !sameBytes(old.header, header) || !sameBytes(old.footer, footer)
            guard moves || shellChanges else { return }
            sections[serial]!.header = header
            sections[serial]!.footer = footer
            var placed: JSONListPatch.Position?
            if moves, let position {
                let section = unlinkSection(serial)
                switch position {
                case .first: linkSection(section, after: nil, atFirst: true, serial: serial)
                case .last: linkSection(section, after: lastSection, atFirst: false, serial: serial)
                case .after: linkSection(section, after: anchor, atFirst: false, serial: serial)
                }
                placed = Self.explicit(sections[serial]!.previous.map { sections[$0]!.id })
            }
            applied.effective.append(.upsertSection(id: id, header: header, footer: footer, position: placed))
            return
        }
        guard sections.count < limits.maximumSections else {
            throw ListStateError(code: "too_many_sections", detail: "\(path): the list would have more than the limit of \(limits.maximumSections) sections")
        }
        let section = Section(id: id, header: header, footer: footer)
        let serial: Int
        switch position ?? .last {
        case .first: serial = linkSection(section, after: nil, atFirst: true)
        case .last: serial = linkSection(section, after: lastSection, atFirst: false)
        case let .after(name): serial = linkSection(section, after: try anchorSerial(name, excluding: nil), atFirst: false)
        }
        applied.effective.append(.upsertSection(id: id, header: header, footer: footer,
                                                position: Self.explicit(sections[serial]!.previous.map { sections[$0]!.id })))
    }
}
