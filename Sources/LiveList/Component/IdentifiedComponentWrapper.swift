/// A component given an id by `identified(by:)`: it behaves as the
/// wrapped component and is an ``IdentifiableComponent``, so it can be a cell by itself.
///
///     Section(id: "fruits") {
///         Label(text: "Apple").identified(by: 1)
///         Label(text: "Banana").identified(by: \.text)
///     }
public struct IdentifiedComponentWrapper<ID: Hashable & Sendable, Wrapped: Component>: ComponentWrapping,
    IdentifiableComponent
{
    /// The id given to the wrapped component.
    public var id: ID

    /// The wrapped component.
    public var wrapped: Wrapped

    /// Creates a wrapper giving `wrapped` the id `id`.
    ///
    /// - Parameters:
    ///   - id: The id of the cell.
    ///   - wrapped: The component to identify.
    @inlinable
    public init(id: ID, wrapped: Wrapped) {
        self.id = id
        self.wrapped = wrapped
    }

    /// The wrapped component's content.
    @inlinable
    public var body: Wrapped.Body {
        wrapped.body
    }
}

extension Component {
    /// Returns this component identified by the given id, ready to be a cell.
    ///
    ///     Label(text: "Apple").identified(by: 1)
    ///
    /// - Parameter id: The id of the cell, unique across the list.
    /// - Returns: A component that behaves as `self` and has the id `id`.
    @inlinable
    public func identified<ID: Hashable & Sendable>(by id: ID) -> IdentifiedComponentWrapper<ID, Self> {
        IdentifiedComponentWrapper(id: id, wrapped: self)
    }

    /// Returns this component identified by the value at the given key path, ready to be a cell.
    ///
    ///     Label(text: "Apple").identified(by: \.text)   // id "Apple"
    ///
    /// - Parameter keyPath: The key path of a property of `self` that is unique across the list.
    /// - Returns: A component that behaves as `self` and has the id `self[keyPath: keyPath]`.
    @inlinable
    public func identified<ID: Hashable & Sendable>(
        by keyPath: KeyPath<Self, ID>
    ) -> IdentifiedComponentWrapper<ID, Self> {
        IdentifiedComponentWrapper(id: self[keyPath: keyPath], wrapped: self)
    }
}
