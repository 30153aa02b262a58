/// The result builder that lists the sections of a render or of a ``Group``.
///
/// Each line of the closure may be a ``Section``, a ``Group`` of sections, an array or an optional
/// of those, or any other ``SectionsBuildable`` value. `if`, `if`/`else`, `switch`,
/// `if #available` and `for` loops work as in any Swift code, and a closure can list any number of
/// sections. The result is a flat array of sections.
///
///     try renderer.render {
///         Section(id: "greet") {
///             HelloMessage(name: "Vincent")
///         }
///         Group(of: teams) { team in
///             Section(id: team.id) {
///                 Group(of: team.members) { HelloMessage(name: "\(team.id)/\($0)") }
///             }
///         }
///     }
@resultBuilder
public struct SectionsBuilder: SectionsBuildable, Sendable {
    /// What the builder built.
    @usableFromInline
    var sections: [Section]

    /// A builder value holding `sections`.
    @inlinable
    init(_ sections: [Section]) {
        self.sections = sections
    }

    /// What the builder built, in order: as in Carbon, a builder is also a value that a function can
    /// return (`@SectionsBuilder func rows() -> SectionsBuilder { … }`).
    @inlinable
    public func buildSections() -> [Section] {
        sections
    }

    /// :nodoc:
    @inlinable
    public static func buildFinalResult(_ parts: [Section]) -> [Section] {
        parts
    }

    /// :nodoc:
    @inlinable
    public static func buildFinalResult(_ parts: [Section]) -> SectionsBuilder {
        SectionsBuilder(parts)
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression(_ section: Section) -> [Section] {
        [section]
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression(_ sections: [Section]) -> [Section] {
        sections
    }

    /// :nodoc:
    @inlinable
    public static func buildExpression(_ sections: some SectionsBuildable) -> [Section] {
        sections.buildSections()
    }

    /// A component is a cell, not a section: this overload exists to say so.
    @available(
        *, unavailable,
        message: """
            a component is a cell: put it in a Section { }, or list cells alone in renderer.render { } with no Section \
            beside them; a cell needs an id (IdentifiableComponent, or .identified(by:))
            """
    )
    public static func buildExpression(_ component: some Component) -> [Section] {
        fatalError("unavailable")
    }

    /// A cell is not a section: this overload exists to say so.
    @available(*, unavailable, message: "a cell goes in a Section { }, not beside sections")
    public static func buildExpression(_ cell: CellNode) -> [Section] {
        fatalError("unavailable")
    }

    /// :nodoc:
    @inlinable
    public static func buildBlock(_ parts: [Section]...) -> [Section] {
        parts.count == 1 ? parts[0] : Array(parts.joined())
    }

    /// :nodoc:
    @inlinable
    public static func buildOptional(_ part: [Section]?) -> [Section] {
        part ?? []
    }

    /// :nodoc:
    @inlinable
    public static func buildEither(first part: [Section]) -> [Section] {
        part
    }

    /// :nodoc:
    @inlinable
    public static func buildEither(second part: [Section]) -> [Section] {
        part
    }

    /// :nodoc:
    @inlinable
    public static func buildArray(_ parts: [[Section]]) -> [Section] {
        Array(parts.joined())
    }

    /// :nodoc:
    @inlinable
    public static func buildLimitedAvailability(_ part: [Section]) -> [Section] {
        part
    }
}
