public import ListDiff

/// A cell of a list: an id and a type-erased component.
///
/// Builders make cell nodes from identifiable components; make one yourself to give any component
/// an id:
///
///     CellNode(HelloMessage(name: "Mia"))          // the component's own id
///     CellNode(id: 0, Label(text: "Apple"))        // an id for a component without one
///
/// A cell node is the element type of the differ (`ListDiff.Differentiable`): cells are matched
/// by ``id`` across the whole list, and a matched cell is updated when its previous component asks
/// for it (see ``isContentEqual(to:)``).
public struct CellNode: Sendable {
    /// The id of the cell, unique across the list.
    public var id: AnyListID

    /// The component shown in the cell.
    public var component: AnyComponent

    /// Creates a cell from an id and a component.
    ///
    /// - Parameters:
    ///   - id: The id of the cell, unique across the list.
    ///   - component: The component to show.
    @inlinable
    public init(id: some ListKeyConvertible, _ component: some Component) {
        self.id = AnyListID(id)
        self.component = AnyComponent(component)
    }

    /// Creates a cell from an id of any `Hashable` type and a component.
    ///
    /// The id's key is computed as ``AnyListID`` says: a plain enum's case name, a description.
    ///
    /// - Parameters:
    ///   - id: The id of the cell, unique across the list.
    ///   - component: The component to show.
    @inlinable
    @_disfavoredOverload
    public init(id: some Hashable & Sendable, _ component: some Component) {
        self.id = AnyListID(id)
        self.component = AnyComponent(component)
    }

    /// Creates a cell from a component that has its own id.
    ///
    /// - Parameter component: The component to show; its ``IdentifiableComponent/id`` names the cell.
    @inlinable
    public init(_ component: some IdentifiableComponent) {
        self.init(id: component.id, component)
    }

    /// Returns the component cast to the given type, if it is one (see ``AnyComponent/as(_:)``).
    ///
    /// - Parameter type: The expected type of the component.
    /// - Returns: The component as `type`, or `nil`.
    @inlinable
    public func component<T>(as type: T.Type) -> T? {
        component.as(type)
    }
}

// MARK: - Differentiable

extension CellNode: Differentiable {
    /// The ``id``: cells are matched by their keys across the whole list.
    @inlinable
    public var differenceIdentifier: AnyListID {
        id
    }

    /// Returns whether this cell, of the next render, shows the same content as `source`, the cell
    /// with the same id in the previous render.
    ///
    /// The question is put to the *previous* component, with the next one as argument, as in
    /// Carbon: `!source.component.shouldContentUpdate(with: component)`. The differ calls
    /// `target.isContentEqual(to: source)`, so `self` is the next cell.
    ///
    /// - Parameter source: The cell with the same id in the previous render.
    /// - Returns: `false` when the cell must be updated.
    @inlinable
    public func isContentEqual(to source: CellNode) -> Bool {
        !source.component.shouldContentUpdate(with: component)
    }
}

// MARK: - Building

extension CellNode: CellsBuildable {
    /// The cell itself.
    @inlinable
    public func buildCells() -> [CellNode] {
        [self]
    }
}

extension CellNode: CustomDebugStringConvertible {
    /// `CellNode(id: "key", component: …)`.
    public var debugDescription: String {
        "CellNode(id: " + id.debugDescription + ", component: " + component.debugDescription + ")"
    }
}
