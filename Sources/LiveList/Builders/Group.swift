/// A group of cells or of sections, built by a closure or mapped from a sequence: it stands for
/// its contents in a ``CellsBuilder`` or ``SectionsBuilder`` closure.
///
/// A group of cells:
///
///     Section(id: "fruits") {
///         Group {
///             Label(text: "Apple").identified(by: 0)
///             Label(text: "Banana").identified(by: 1)
///         }
///         Group(of: moreFruits) { fruit in
///             Label(text: fruit.name).identified(by: fruit.id)
///         }
///     }
///
/// A group of sections:
///
///     try renderer.render {
///         Group(of: teams) { team in
///             Section(id: team.id) {
///                 Group(of: team.members) { HelloMessage(name: $0) }
///             }
///         }
///     }
///
/// The element closure of `Group(of:)` is itself a builder closure, so it may hold several lines,
/// `if` and `for`. A `for` loop in a builder closure does the same as `Group(of:)`.
public struct Group<Element: Sendable>: Sendable {
    /// The grouped cells or sections, in order.
    @usableFromInline
    var elements: [Element]

    @inlinable
    init(elements: [Element]) {
        self.elements = elements
    }

    /// Creates an empty group: it stands for no cells, or no sections, whichever the closure
    /// that holds it lists.
    ///
    ///     Section(id: "results") {
    ///         if results.isEmpty {
    ///             Group()
    ///         } else {
    ///             Group(of: results) { Row(result: $0) }
    ///         }
    ///     }
    @inlinable
    public init() {
        elements = []
    }
}

// MARK: - Cells

extension Group: CellsBuildable where Element == CellNode {
    /// Creates a group of the cells listed by a closure.
    ///
    /// - Parameter cells: A ``CellsBuilder`` closure listing the cells.
    @inlinable
    public init(@CellsBuilder cells: () -> [CellNode]) {
        self.init(elements: cells())
    }

    /// Creates a group of the cells that a closure builds for each element of a sequence.
    ///
    /// - Parameters:
    ///   - data: The elements to map to cells.
    ///   - cell: A ``CellsBuilder`` closure listing the cells of one element.
    @inlinable
    public init<Data: Sequence>(of data: Data, @CellsBuilder cell: (Data.Element) -> [CellNode]) {
        var elements: [CellNode] = []
        elements.reserveCapacity(data.underestimatedCount)
        for element in data {
            elements.append(contentsOf: cell(element))
        }
        self.init(elements: elements)
    }

    /// The grouped cells.
    @inlinable
    public func buildCells() -> [CellNode] {
        elements
    }
}

// MARK: - Sections

extension Group: SectionsBuildable where Element == Section {
    /// Creates a group of the sections listed by a closure.
    ///
    /// - Parameter sections: A ``SectionsBuilder`` closure listing the sections.
    @inlinable
    public init(@SectionsBuilder sections: () -> [Section]) {
        self.init(elements: sections())
    }

    /// Creates a group of the sections that a closure builds for each element of a sequence.
    ///
    /// - Parameters:
    ///   - data: The elements to map to sections.
    ///   - section: A ``SectionsBuilder`` closure listing the sections of one element.
    @inlinable
    public init<Data: Sequence>(of data: Data, @SectionsBuilder section: (Data.Element) -> [Section]) {
        var elements: [Section] = []
        elements.reserveCapacity(data.underestimatedCount)
        for element in data {
            elements.append(contentsOf: section(element))
        }
        self.init(elements: elements)
    }

    /// The grouped sections.
    @inlinable
    public func buildSections() -> [Section] {
        elements
    }
}
