/// A component that carries its own id, so that it can be a cell by itself.
///
/// The id names the cell across renders: the differ matches the cell of the previous render with
/// the cell of the next render by the ``id``'s list key (see ``ListKeyConvertible``), and compares
/// their contents with ``Component/shouldContentUpdate(with:)``. Ids must be unique across the
/// whole list, not only within a section.
///
/// Example:
///
///     struct HelloMessage: IdentifiableComponent, Equatable {
///         var name: String
///         var id: String { name }
///     }
///
///     Section(id: "greet") {
///         HelloMessage(name: "Vincent")
///         HelloMessage(name: "Jules")
///     }
///
/// Any `Hashable` and `Sendable` type can be the id, as in Carbon: `String`, `Int`, `UUID`, a plain
/// enum, a struct of such values (see ``AnyListID`` for how each is turned into the key the
/// browser sees, and ``ListKeyConvertible`` to choose the key yourself).
///
/// A `Hashable` component is its own id by default, as in Carbon:
///
///     struct Tag: IdentifiableComponent, Hashable {
///         var name: String
///     }
///
///     Section(id: "tags") {
///         Tag(name: "swift")     // the id is the Tag itself; its key is `Tag(name: "swift")`
///     }
///
/// Its key is then its description, which changes with every property: a changed component is a
/// new cell (an insert and a delete), never an update. Give it an ``id`` when it should be updated
/// in place.
///
/// A component without an id of its own becomes identifiable with
/// `identified(by:)`.
public protocol IdentifiableComponent: Component, CellsBuildable {
    /// The type of the id: any `Hashable` and `Sendable` type. Its key (see ``AnyListID``) names
    /// the cell.
    associatedtype ID: Hashable & Sendable

    // MARK: - Identity - required

    /// The id that names this cell in the list: unique across the list, stable across renders.
    var id: ID { get }
}

extension IdentifiableComponent {
    /// The one cell that this component is, as in Carbon (an identifiable component is
    /// ``CellsBuildable``).
    @inlinable
    public func buildCells() -> [CellNode] {
        [CellNode(self)]
    }
}

extension IdentifiableComponent where Self: Hashable {
    /// The component itself, as in Carbon: a `Hashable` component is its own id.
    @inlinable
    public var id: Self {
        self
    }
}
