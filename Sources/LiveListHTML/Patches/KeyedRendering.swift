import Markup
/// What a browser's list holds, keyed so that every operation of a changeset applies in constant time
/// (a `deleteSection` in the time of the cells it takes along): section order, the cells of every section
/// in order, each cell's HTML and each section's header and footer. It replays logged changesets to
/// find an older state of a list, and writes the changeset from one state to another
/// (``operations(to:replacing:)``), which is how a catch-up that spans many versions stays small
/// (docs/PROTOCOL.md, "Catching up").
///
/// Keys compare byte for byte, as the DOM compares attribute values.
public struct KeyedRendering: Sendable, Equatable {
    struct Cell: Sendable, Equatable {
        var section: ByteKey
        var previous: ByteKey?
        var next: ByteKey?
        var html: String

        static func == (a: Cell, b: Cell) -> Bool {
            a.section == b.section && a.previous == b.previous && a.next == b.next && sameBytes(a.html, b.html)
        }
    }

    struct Section: Sendable, Equatable {
        var previous: ByteKey?
        var next: ByteKey?
        var header: String?
        var footer: String?
        var first: ByteKey?
        var last: ByteKey?

        static func == (a: Section, b: Section) -> Bool {
            a.previous == b.previous && a.next == b.next && sameBytes(a.header, b.header) && sameBytes(a.footer, b.footer)
                && a.first == b.first && a.last == b.last
        }
    }

    private var cells: [ByteKey: Cell] = [:]
    private var sections: [ByteKey: Section] = [:]
    private var first: ByteKey?
    private var last: ByteKey?

    /// An empty list.
    public init() {}

    /// The state of `rendering`.
    public init(_ rendering: RenderedList) {
        self.init(rendering.sections)
    }

    init(_ rendered: [RenderedSection]) {
        cells.reserveCapacity(rendered.reduce(0) { $0 + $1.cells.count })
        sections.reserveCapacity(rendered.count)
        var previous: ByteKey?
        for section in rendered {
            let key = ByteKey(section.key)
            // A rendering never repeats a key; should one, the first wins, as a lookup by key would find.
            guard sections[key] == nil else { continue }
            link(section: key, after: previous, header: section.header, footer: section.footer)
            previous = key
            var previousCell: ByteKey?
            for cell in section.cells {
                let cellKey = ByteKey(cell.key)
                guard cells[cellKey] == nil else { continue }
                link(cell: cellKey, html: cell.html, in: key, after: previousCell)
                previousCell = cellKey
            }
        }
    }

    /// The number of cells.
    public var cellCount: Int {
        cells.count
    }

    // MARK: - Applying operations

    /// Applies the changeset's operations in order, exactly as docs/PROTOCOL.md defines them.
    ///
    /// - Throws: ``PatchMismatch`` when an operation names a key or anchor that is not there (the
    ///   changeset was not made for this state); the state is then partly changed.
    public mutating func apply(_ changeset: ListChangeset) throws(PatchMismatch) {
        for operation in changeset.operations {
            try apply(operation)
        }
    }

    /// Applies one operation.
    public mutating func apply(_ operation: PatchOperation) throws(PatchMismatch) {
        switch operation {
        case let .deleteSection(section):
            let key = ByteKey(section)
            guard let removed = sections[key] else { throw PatchMismatch(operation) }
            var cell = removed.first
            while let current = cell {
                cell = cells.removeValue(forKey: current)?.next
            }
            unlink(section: key)
        case let .insertSection(section, after, _, header, footer):
            let key = ByteKey(section)
            let anchor = after.map(ByteKey.init)
            guard sections[key] == nil, anchor.map({ sections[$0] != nil }) ?? true else { throw PatchMismatch(operation) }
            link(section: key, after: anchor, header: header, footer: footer)
        case let .moveSection(section, after):
            let key = ByteKey(section)
            let anchor = after.map(ByteKey.init)
            guard let moved = sections[key], anchor != key, anchor.map({ sections[$0] != nil }) ?? true else {
                throw PatchMismatch(operation)
            }
            unlink(section: key)
            link(section: key, after: anchor, header: moved.header, footer: moved.footer)
            sections[key]?.first = moved.first
            sections[key]?.last = moved.last
        case let .reloadSection(section, header, footer):
            let key = ByteKey(section)
            guard sections[key] != nil else { throw PatchMismatch(operation) }
            sections[key]?.header = header
            sections[key]?.footer = footer
        case let .delete(cell):
            let key = ByteKey(cell)
            guard cells[key] != nil else { throw PatchMismatch(operation) }
            unlink(cell: key)
            cells.removeValue(forKey: key)
        case let .insert(cell, section, after, html):
            let key = ByteKey(cell)
            let sectionKey = ByteKey(section)
            let anchor = after.map(ByteKey.init)
            guard cells[key] == nil, sections[sectionKey] != nil, isCell(anchor, in: sectionKey) else {
                throw PatchMismatch(operation)
            }
            link(cell: key, html: html, in: sectionKey, after: anchor)
        case let .move(cell, section, after):
            let key = ByteKey(cell)
            let sectionKey = ByteKey(section)
            let anchor = after.map(ByteKey.init)
            guard let moved = cells[key], sections[sectionKey] != nil, anchor != key, isCell(anchor, in: sectionKey) else {
                throw PatchMismatch(operation)
            }
            unlink(cell: key)
            link(cell: key, html: moved.html, in: sectionKey, after: anchor)
        case let .reload(cell, html):
            let key = ByteKey(cell)
            guard cells[key] != nil else { throw PatchMismatch(operation) }
            cells[key]?.html = html
        case let .reset(_, rendered):
            self = KeyedRendering(rendered)
        }
    }

    private func isCell(_ anchor: ByteKey?, in section: ByteKey) -> Bool {
        guard let anchor else { return true }
        return cells[anchor]?.section == section
    }

    private mutating func link(section key: ByteKey, after anchor: ByteKey?, header: String?, footer: String?) {
        let next = anchor.map { sections[$0]?.next } ?? first
        sections[key] = Section(previous: anchor, next: next, header: header, footer: footer)
        if let anchor { sections[anchor]?.next = key } else { first = key }
        if let next { sections[next]?.previous = key } else { last = key }
    }

    private mutating func unlink(section key: ByteKey) {
        guard let section = sections.removeValue(forKey: key) else { return }
        if let previous = section.previous { sections[previous]?.next = section.next } else { first = section.next }
        if let next = section.next { sections[next]?.previous = section.previous } else { last = section.previous }
    }

    private mutating func link(cell key: ByteKey, html: String, in section: ByteKey, after anchor: ByteKey?) {
        let next = anchor.map { cells[$0]?.next } ?? sections[section]?.first
        cells[key] = Cell(section: section, previous: anchor, next: next, html: html)
        if let anchor { cells[anchor]?.next = key } else { sections[section]?.first = key }
        if let next { cells[next]?.previous = key } else { sections[section]?.last = key }
    }

    /// Takes the cell out of its section's order (its entry stays).
    private mutating func unlink(cell key: ByteKey) {
        guard let cell = cells[key] else { return }
        if let previous = cell.previous { cells[previous]?.next = cell.next } else { sections[cell.section]?.first = cell.next }
        if let next = cell.next { cells[next]?.previous = cell.previous } else { sections[cell.section]?.last = cell.previous }
        cells[key]?.previous = nil
        cells[key]?.next = nil
    }

    // MARK: - Writing the changeset to another state

    /// The operations that take a browser from this state to `target`, in the order a `PatchUpdater`
    /// writes them: the `delete`s of cells that go; then, section by section in target order, the
    /// section's own operation followed by its cells' `move`, `insert` and `reload`; last the
    /// `deleteSection`s. Reorders are the fewest moves, a surviving cell moves (never deleted and
    /// inserted), and a `reload` is written only for HTML that differs from this state's.
    ///
    /// Sections in `replacing` that exist here are deleted first, their cells with them, and inserted
    /// anew: one `deleteSection` can be cheaper than deleting many cells of a section one by one
    /// (a section deleted and created again between the two states).
    public func operations(to target: RenderedList, replacing: Set<String> = []) -> [PatchOperation] {
        var operations: [PatchOperation] = []
        let replaced = Set(replacing.map(ByteKey.init)).filter { sections[$0] != nil }

        // The target's cells: which section each is in.
        var targetSection = [ByteKey: ByteKey](minimumCapacity: target.cellCount)
        var targetSections = Set<ByteKey>(minimumCapacity: target.sections.count)
        for section in target.sections {
            let key = ByteKey(section.key)
            targetSections.insert(key)
            for cell in section.cells {
                targetSection[ByteKey(cell.key)] = key
            }
        }

        // This state's order: every section's and every cell's position, and the cells that go. A cell
        // of a section that is deleted (or replaced) goes with its section, without a `delete`.
        var sectionPosition = [ByteKey: Int](minimumCapacity: sections.count)
        var cellPosition = [ByteKey: Int](minimumCapacity: cells.count)
        var deletedSections: [ByteKey] = []
        var section = first
        while let key = section {
            sectionPosition[key] = sectionPosition.count
            let keeps = targetSections.contains(key) && !replaced.contains(key)
            if !targetSections.contains(key) && !replaced.contains(key) {
                deletedSections.append(key)
            }
            var position = 0
            var cell = sections[key]?.first
            while let cellKey = cell {
                if keeps {
                    cellPosition[cellKey] = position
                    if targetSection[cellKey] == nil {
                        operations.append(.delete(cell: cellKey.string))
                    }
                } else if targetSection[cellKey] != nil && !replaced.contains(key) {
                    // Leaves a deleted section for another: it moves.
                    cellPosition[cellKey] = position
                }
                position += 1
                cell = cells[cellKey]?.next
            }
            section = sections[key]?.next
        }
        for key in replaced.sorted(by: { sectionPosition[$0, default: 0] < sectionPosition[$1, default: 0] }) {
            operations.append(.deleteSection(section: key.string))
        }

        // Sections that stay where they are: a longest increasing run of their old positions.
        let keptSections = target.sections.map { section -> Int? in
            let key = ByteKey(section.key)
            return replaced.contains(key) ? nil : sectionPosition[key]
        }
        let sectionStays = onLongestIncreasingRun(keptSections)

        var previousSection: String?
        for (index, rendered) in target.sections.enumerated() {
            let key = ByteKey(rendered.key)
            if let old = keptSections[index].flatMap({ _ in sections[key] }) {
                if !sectionStays[index] {
                    operations.append(.moveSection(section: rendered.key, after: previousSection))
                }
                if !sameBytes(old.header, rendered.header) || !sameBytes(old.footer, rendered.footer) {
                    operations.append(.reloadSection(section: rendered.key, header: rendered.header, footer: rendered.footer))
                }
            } else {
                operations.append(.insertSection(
                    section: rendered.key, after: previousSection, html: rendered.html,
                    header: rendered.header, footer: rendered.footer
                ))
            }
            previousSection = rendered.key

            // Cells that were in this very section and stay in place: a longest increasing run.
            let keptCells = rendered.cells.map { cell -> Int? in
                let cellKey = ByteKey(cell.key)
                guard let position = cellPosition[cellKey], cells[cellKey]?.section == key, keptSections[index] != nil else {
                    return nil
                }
                return position
            }
            let cellStays = onLongestIncreasingRun(keptCells)
            var previousCell: String?
            for (cellIndex, cell) in rendered.cells.enumerated() {
                let cellKey = ByteKey(cell.key)
                if cellPosition[cellKey] != nil, let old = cells[cellKey] {
                    if !cellStays[cellIndex] {
                        operations.append(.move(cell: cell.key, section: rendered.key, after: previousCell))
                    }
                    if !old.html.utf8.elementsEqual(cell.html.utf8) {
                        operations.append(.reload(cell: cell.key, html: cell.html))
                    }
                } else {
                    operations.append(.insert(cell: cell.key, section: rendered.key, after: previousCell, html: cell.html))
                }
                previousCell = cell.key
            }
        }

        for key in deletedSections {
            operations.append(.deleteSection(section: key.string))
        }
        return operations
    }

    /// For each element, whether it lies on one longest strictly increasing run of the non-nil values
    /// (patience sorting, O(n log n)); nil values are never on it.
    private func onLongestIncreasingRun(_ values: [Int?]) -> [Bool] {
        var tails: [Int] = []  // indices into values: the smallest tail of a run of each length
        var tailValues: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            guard let value else { continue }
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if tailValues[middle] < value {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            if low > 0 {
                previous[index] = tails[low - 1]
            }
            if low == tails.count {
                tails.append(index)
                tailValues.append(value)
            } else {
                tails[low] = index
                tailValues[low] = value
            }
        }
        var result = [Bool](repeating: false, count: values.count)
        var index = tails.last ?? -1
        while index >= 0 {
            result[index] = true
            index = previous[index]
        }
        return result
    }
}

/// An operation that names a key or anchor the state does not hold.
public struct PatchMismatch: Error, Sendable, CustomStringConvertible {
    /// The operation that could not apply.
    public var operation: PatchOperation

    /// Creates the error for the operation that did not apply.
    public init(_ operation: PatchOperation) {
        self.operation = operation
    }

    /// The error in words, naming the operation.
    public var description: String {
        "the operation \(operation.name) does not apply to this state"
    }
}

/// A key compared and hashed byte for byte (Swift's `String` equality would take canonically
/// equivalent spellings for one key, where the DOM sees two).
package struct ByteKey: Hashable, Sendable {
    package let string: String

    package init(_ string: String) {
        self.string = string
    }

    package static func == (a: ByteKey, b: ByteKey) -> Bool {
        sameBytes(a.string, b.string)
    }

    package func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)  // never a byte of UTF-8: ends the key
    }
}
