public import ListDiff

/// A section of a list: an id, an optional header, cells, and an optional footer.
///
/// Sections are matched by ``id`` among the sections of a list; cells by their own ids across all
/// sections, so a cell that changes section moves. A section's own content is its header and
/// footer: when either changes, the section is updated and its cells stay.
///
/// With an array of cells, as in Carbon:
///
///     Section(
///         id: "fruits",
///         header: ViewNode(Label(text: "Fruits")),
///         cells: [
///             CellNode(id: 0, Label(text: "Apple")),
///             CellNode(id: 1, Label(text: "Banana")),
///         ],
///         footer: ViewNode(Label(text: "2 fruits"))
///     )
///
/// With a trailing ``CellsBuilder`` closure, and the header and footer given as components:
///
///     Section(id: "greet", header: Header("GREET"), footer: Footer("👋")) {
///         HelloMessage(name: "Vincent")
///         HelloMessage(name: "Jules")
///         if showMia {
///             HelloMessage(name: "Mia")
///         }
///     }
///
/// A header or footer parameter takes any ``Component``, a ``ViewNode`` included, or `nil`.
public struct Section: Sendable {
    /// The id of the section, unique among the sections of the list.
    public var id: AnyListID

    /// The header, if any.
    public var header: ViewNode?

    /// The cells, in order.
    public var cells: [CellNode]

    /// The footer, if any.
    public var footer: ViewNode?

    /// Creates a section from its id, header, cells and footer.
    ///
    /// - Parameters:
    ///   - id: The id of the section, unique among the sections of the list.
    ///   - header: The header: a ``ViewNode``, any component, or `nil` for none.
    ///   - cells: The cells, in order.
    ///   - footer: The footer: a ``ViewNode``, any component, or `nil` for none.
    @inlinable
    public init(
        id: some Hashable & Sendable,
        header: (any Component)? = nil,
        cells: [CellNode] = [],
        footer: (any Component)? = nil
    ) {
        self.id = AnyListID(id)
        self.header = header.map { ViewNode($0) }
        self.cells = cells
        self.footer = footer.map { ViewNode($0) }
    }

    /// Creates a section from its id, header, cells and footer, leaving out the `nil` cells, as
    /// Carbon's `Section(id:header:cells:footer:)` does with an array of optional nodes.
    ///
    /// - Parameters:
    ///   - id: The id of the section, unique among the sections of the list.
    ///   - header: The header: a ``ViewNode``, any component, or `nil` for none.
    ///   - cells: The cells, in order; `nil` elements are left out.
    ///   - footer: The footer: a ``ViewNode``, any component, or `nil` for none.
    @inlinable
    @_disfavoredOverload
    public init(
        id: some Hashable & Sendable,
        header: (any Component)? = nil,
        cells: [CellNode?],
        footer: (any Component)? = nil
    ) {
        self.init(id: id, header: header, cells: cells.compactMap { $0 }, footer: footer)
    }

    /// Creates a section from its id, header, any collection of cells (a slice, a lazy map) and
    /// footer, as Carbon's `Section(id:header:cells:footer:)` does.
    @inlinable
    @_disfavoredOverload
    public init<Cells: Collection>(
        id: some Hashable & Sendable,
        header: (any Component)? = nil,
        cells: Cells,
        footer: (any Component)? = nil
    ) where Cells.Element == CellNode {
        self.init(id: id, header: header, cells: Array(cells), footer: footer)
    }

    /// Creates a section from its id, header, any collection of optional cells (the `nil`s left
    /// out) and footer, as Carbon's `Section(id:header:cells:footer:)` does.
    @inlinable
    @_disfavoredOverload
    public init<Cells: Collection>(
        id: some Hashable & Sendable,
        header: (any Component)? = nil,
        cells: Cells,
        footer: (any Component)? = nil
    ) where Cells.Element == CellNode? {
        self.init(id: id, header: header, cells: cells.compactMap { $0 }, footer: footer)
    }

    /// Creates a section from its id, header and footer, and its cells built by a closure.
    ///
    /// - Parameters:
    ///   - id: The id of the section, unique among the sections of the list: any `Hashable` value
    ///     (see ``AnyListID`` for its key).
    ///   - header: The header: a ``ViewNode``, any component, or `nil` for none.
    ///   - footer: The footer: a ``ViewNode``, any component, or `nil` for none.
    ///   - cells: A ``CellsBuilder`` closure listing the cells.
    @inlinable
    public init(
        id: some Hashable & Sendable,
        header: (any Component)? = nil,
        footer: (any Component)? = nil,
        @CellsBuilder cells: () -> [CellNode]
    ) {
        self.init(id: id, header: header, cells: cells(), footer: footer)
    }

    /// The id of the section that ``Renderer/render(cells:)`` puts its cells in: `"default"`
    /// (`data-section="default"` in the browser).
    ///
    /// It is the same on every render, so cells rendered without a section are diffed like any
    /// others. Carbon uses a private id there; a key must be text that the browser can hold, so
    /// this one has a name. A section of your own with this id is the same section to the differ:
    /// going from `render { cells }` to `render { Section(id: Section.implicitID) { cells } }` is
    /// no change.
    public static let implicitID: AnyListID = "default"
}

// MARK: - DifferentiableSection

extension Section: DifferentiableSection {
    /// The ``id``: sections are matched by their keys.
    @inlinable
    public var differenceIdentifier: AnyListID {
        id
    }

    /// The ``cells``.
    @inlinable
    public var elements: [CellNode] {
        cells
    }

    /// Returns whether this section, of the next render, has the same header and footer as
    /// `source`, the section with the same id in the previous render.
    ///
    /// Each is compared as cells are (see ``ViewNode/isContentEqual(to:)``); a header or footer
    /// that appears or disappears is a change. Cells are not compared here: the differ compares
    /// them one by one.
    ///
    /// - Parameter source: The section with the same id in the previous render.
    /// - Returns: `false` when the section's header or footer must be updated.
    @inlinable
    public func isContentEqual(to source: Section) -> Bool {
        ViewNode.isContentEqual(header, to: source.header)
            && ViewNode.isContentEqual(footer, to: source.footer)
    }
}

// MARK: - Building

extension Section: SectionsBuildable {
    /// The section itself.
    @inlinable
    public func buildSections() -> [Section] {
        [self]
    }
}

extension Section: CustomDebugStringConvertible {
    /// `Section(id: "key", header: …, cells: […], footer: …)`.
    public var debugDescription: String {
        "Section(id: " + id.debugDescription
            + ", header: " + (header?.debugDescription ?? "nil")
            + ", cells: [" + cells.map(\.debugDescription).joined(separator: ", ") + "]"
            + ", footer: " + (footer?.debugDescription ?? "nil") + ")"
    }
}
