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
/// A component without an id of its own becomes identifiable with
/// `identified(by:)`.
public protocol IdentifiableComponent: Component {
    /// The type of the id. Its list key names the cell.
    associatedtype ID: ListKeyConvertible

    // MARK: - Identity - required

    /// The id that names this cell in the list: unique across the list, stable across renders.
    var id: ID { get }
}
