/// A value that stands for zero or more cells in a ``CellsBuilder`` closure.
///
/// ``CellNode``, ``Group`` of cells, and arrays and optionals of such values conform. Identifiable
/// components are accepted by ``CellsBuilder`` directly.
///
/// Example for a type of your own that expands to several cells:
///
///     struct Pair: CellsBuildable {
///         var left: Label
///         var right: Label
///
///         func buildCells() -> [CellNode] {
///             [CellNode(id: left.text, left), CellNode(id: right.text, right)]
///         }
///     }
public protocol CellsBuildable {
    // MARK: - Building - required

    /// Returns the cells that this value stands for, in order.
    func buildCells() -> [CellNode]
}

extension Optional: CellsBuildable where Wrapped: CellsBuildable {
    /// The wrapped value's cells, or none.
    @inlinable
    public func buildCells() -> [CellNode] {
        self?.buildCells() ?? []
    }
}

extension Array: CellsBuildable where Element: CellsBuildable {
    /// The cells of every element, in order.
    @inlinable
    public func buildCells() -> [CellNode] {
        flatMap { $0.buildCells() }
    }
}
