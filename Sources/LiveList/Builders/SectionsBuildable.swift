/// A value that stands for zero or more sections in a ``SectionsBuilder`` closure.
///
/// ``Section``, ``Group`` of sections, and arrays and optionals of such values conform.
///
/// Example for a type of your own that expands to sections:
///
///     struct Board: SectionsBuildable {
///         var columns: [Column]
///
///         func buildSections() -> [Section] {
///             columns.map { column in Section(id: column.id, cells: column.cells) }
///         }
///     }
public protocol SectionsBuildable {
    // MARK: - Building - required

    /// Returns the sections that this value stands for, in order.
    func buildSections() -> [Section]
}

extension Optional: SectionsBuildable where Wrapped: SectionsBuildable {
    /// The wrapped value's sections, or none.
    @inlinable
    public func buildSections() -> [Section] {
        self?.buildSections() ?? []
    }
}

extension Array: SectionsBuildable where Element: SectionsBuildable {
    /// The sections of every element, in order.
    @inlinable
    public func buildSections() -> [Section] {
        flatMap { $0.buildSections() }
    }
}
