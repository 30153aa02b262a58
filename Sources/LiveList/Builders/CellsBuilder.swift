/// The result builder that lists the cells of a ``Section`` or a ``Group``.
///
/// Each line of the closure may be an ``IdentifiableComponent``, a ``CellNode``, a ``Group`` of
/// cells, an array or an optional of those (`[CellNode?]` included: the `nil`s are left out), or any
/// other ``CellsBuildable`` value. `if`, `if`/`else`,
/// `switch`, `if #available` and `for` loops work as in any Swift code, and a closure can list any
/// number of cells. The result is a flat array of cells.
///
///     Section(id: "greet") {
///         HelloMessage(name: "Vincent")
///         if showMia {
///             HelloMessage(name: "Mia")
///         } else {
///             Label(text: "Mia is away").identified(by: "away")
///         }
///         for guest in guests {
///             HelloMessage(name: guest)
///         }
///         Group(of: staff) { member in
///             HelloMessage(name: member.name)
///         }
///     }
@resultBuilder
public struct CellsBuilder: CellsBuildable, Sendable {
    /// What the builder built.
    @usableFromInline
    var cellNodes: [CellNode]

    /// A builder value holding `cellNodes`.
    @inlinable
    init(_ cellNodes: [CellNode]) {
        self.cellNodes = cellNodes
    }

    /// What the builder built, in order: as in Carbon, a builder is also a value that a function can
    /// return (`@CellsBuilder func rows() -> CellsBuilder { … }`).
    @inlinable
    public func buildCells() -> [CellNode] {
        cellNodes
    }

    /// :nodoc:
    @inlinable
    public static func buildFinalResult(_ parts: [CellNode]) -> [CellNode] {
        parts
    }

    /// :nodoc:
    @inlinable
    public static func buildFinalResult(_ parts: [CellNode]) -> CellsBuilder {
        CellsBuilder(parts)
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression(_ component: some IdentifiableComponent) -> [CellNode] {
        [CellNode(component)]
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression<C: IdentifiableComponent>(_ component: C?) -> [CellNode] {
        component.map { [CellNode($0)] } ?? []
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression<C: IdentifiableComponent>(_ components: [C]) -> [CellNode] {
        components.map { CellNode($0) }
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression<C: IdentifiableComponent>(_ components: [C?]) -> [CellNode] {
        components.compactMap { $0.map { CellNode($0) } }
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression(_ cells: [CellNode]) -> [CellNode] {
        cells
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression(_ cells: some CellsBuildable) -> [CellNode] {
        cells.buildCells()
    }

    /// A component without an id cannot be a cell: this overload exists to say so.
    @available(*, unavailable, message: "a cell needs an id: conform the component to IdentifiableComponent, or write .identified(by:)")
    public static func buildExpression(_ component: some Component) -> [CellNode] {
        fatalError("unavailable")
    }

    /// A section cannot hold a section: this overload exists to say so.
    @available(*, unavailable, message: "a Section cannot be a cell: list sections in renderer.render { } or Group { }, cells inside a Section")
    public static func buildExpression(_ section: Section) -> [CellNode] {
        fatalError("unavailable")
    }

    /// :nodoc:
    @inlinable
    public static func buildBlock(_ parts: [CellNode]...) -> [CellNode] {
        parts.count == 1 ? parts[0] : Array(parts.joined())
    }

    /// :nodoc:
    @inlinable
    public static func buildOptional(_ part: [CellNode]?) -> [CellNode] {
        part ?? []
    }

    /// :nodoc:
    @inlinable
    public static func buildEither(first part: [CellNode]) -> [CellNode] {
        part
    }

    /// :nodoc:
    @inlinable
    public static func buildEither(second part: [CellNode]) -> [CellNode] {
        part
    }

    /// :nodoc:
    @inlinable
    public static func buildArray(_ parts: [[CellNode]]) -> [CellNode] {
        Array(parts.joined())
    }

    /// :nodoc:
    @inlinable
    public static func buildLimitedAvailability(_ part: [CellNode]) -> [CellNode] {
        part
    }
}
