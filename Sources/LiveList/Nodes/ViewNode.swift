/// A header or a footer of a section: a type-erased component, without an id (a section has at
/// most one of each).
///
///     Section(id: "fruits", header: ViewNode(Label(text: "Fruits")), cells: cells)
///
/// A view node is itself a ``Component`` that behaves as the component it holds, so wherever a
/// header or a footer is expected, a component and a node are accepted alike:
///
///     Section(id: "fruits", header: Label(text: "Fruits")) { … }
public struct ViewNode: Sendable {
    /// The component shown as the header or footer.
    public var component: AnyComponent

    /// Creates a node showing the given component.
    ///
    /// Given a `ViewNode` or an ``AnyComponent``, it keeps the component they hold.
    ///
    /// - Parameter component: The component to show.
    @inlinable
    public init(_ component: some Component) {
        if let node = component as? ViewNode {
            self = node
        } else {
            self.component = AnyComponent(component)
        }
    }

    /// Returns the component cast to the given type, if it is one (see ``AnyComponent/as(_:)``).
    ///
    /// - Parameter type: The expected type of the component.
    /// - Returns: The component as `type`, or `nil`.
    @inlinable
    public func component<T>(as type: T.Type) -> T? {
        component.as(type)
    }

    /// Returns whether this node, of the next render, shows the same content as `source`, the node
    /// in the same place in the previous render: `!source.component.shouldContentUpdate(with:
    /// component)`, as for cells (see ``CellNode/isContentEqual(to:)``).
    ///
    /// - Parameter source: The node of the previous render.
    /// - Returns: `false` when the node must be updated.
    @inlinable
    public func isContentEqual(to source: ViewNode) -> Bool {
        !source.component.shouldContentUpdate(with: component)
    }

    /// Returns whether an optional node of the next render shows the same content as an optional
    /// node of the previous render. A node that appears or disappears is a change.
    @inlinable
    static func isContentEqual(_ next: ViewNode?, to source: ViewNode?) -> Bool {
        switch (next, source) {
        case (nil, nil):
            true
        case let (next?, source?):
            next.isContentEqual(to: source)
        default:
            false
        }
    }
}

// MARK: - Component

extension ViewNode: Component {
    /// The held component's content.
    public var body: AnyHTML {
        component.body
    }

    /// Writes the held component's body into `writer`, without type erasure.
    @inlinable
    public func renderBody(into writer: inout HTMLWriter) {
        component.renderBody(into: &writer)
    }

    /// Forwards to the held component.
    @inlinable
    public func shouldContentUpdate(with next: ViewNode) -> Bool {
        component.shouldContentUpdate(with: next.component)
    }

    /// Forwards to the held component.
    @inlinable
    public func shouldRender(next: ViewNode) -> Bool {
        component.shouldRender(next: next.component)
    }

    /// Forwards to the held component.
    @inlinable
    public var reportsVisibility: Bool {
        component.reportsVisibility
    }

    /// Forwards to the held component.
    @inlinable
    public func contentWillDisplay() {
        component.contentWillDisplay()
    }

    /// Forwards to the held component.
    @inlinable
    public func contentDidEndDisplay() {
        component.contentDidEndDisplay()
    }
}

extension ViewNode: CustomDebugStringConvertible {
    /// `ViewNode(…)`.
    public var debugDescription: String {
        "ViewNode(" + component.debugDescription + ")"
    }
}
