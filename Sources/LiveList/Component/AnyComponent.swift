/// A type-erased component: a component of any type, in a value that lists can hold side by side.
///
/// ``CellNode`` and ``ViewNode`` store their components as `AnyComponent`. It forwards every
/// requirement of ``Component`` to ``base``; comparing two components of different types always
/// answers "update". A rendering layer adds its own capabilities in extensions (the HTML module
/// renders ``base``'s body), so `AnyComponent` stays a plain value around ``base``.
///
///     let erased = AnyComponent(Label(text: "Apple"))
///     erased.as(Label.self)?.text             // "Apple"
///     erased.shouldContentUpdate(with: AnyComponent(Label(text: "Pear")))  // true
public struct AnyComponent: Component {
    /// The component, of its own type.
    public let base: any Component

    /// Wraps a component.
    ///
    /// Wrapping an `AnyComponent` or a ``ViewNode`` stores the component they hold, never a wrapper
    /// of a wrapper.
    ///
    /// - Parameter base: The component to wrap.
    @inlinable
    public init(_ base: some Component) {
        if let erased = base as? AnyComponent {
            self = erased
        } else if let node = base as? ViewNode {
            self = node.component
        } else {
            self.base = base
        }
    }

    /// Returns the component cast to the given type, if it is one, looking through wrappers.
    ///
    /// The base itself is tried first, then what it wraps (see ``ComponentWrapping``), so the
    /// component of `Label(text: "Apple").identified(by: 1)` is both an
    /// `IdentifiedComponentWrapper<Int, Label>` and a `Label`.
    ///
    /// - Parameter type: The expected type.
    /// - Returns: The component as `type`, or `nil` when neither it nor what it wraps is one.
    @inlinable
    public func `as`<T>(_ type: T.Type) -> T? {
        var component: any Component = base
        while true {
            if let match = component as? T {
                return match
            }
            guard let wrapper = component as? any ComponentWrapping else {
                return nil
            }
            component = wrapper.wrapped
        }
    }

    /// Returns whether the content must be updated when `self` is replaced by `next`: `true` when
    /// their bases have different types, otherwise the base's answer.
    ///
    /// - Parameter next: The next component, with the same id.
    /// - Returns: `true` when the content must be updated.
    @inlinable
    public func shouldContentUpdate(with next: AnyComponent) -> Bool {
        func compare<Base: Component>(_ base: Base) -> Bool {
            guard let next = next.base as? Base else {
                return true
            }
            return base.shouldContentUpdate(with: next)
        }
        return compare(base)
    }

    /// Whether `next` is provably the same component: both bases of one `Equatable` type, and equal.
    /// False when they differ, are of different types, or are not `Equatable` (nothing proves them
    /// the same). What an updater asks before it renders again a component whose
    /// ``shouldContentUpdate(with:)`` said no.
    package func isSame(as next: AnyComponent) -> Bool {
        guard let base = base as? any Equatable else { return false }
        func compare<Base: Equatable>(_ base: Base) -> Bool {
            guard let next = next.base as? Base else { return false }
            return base == next
        }
        return compare(base)
    }

    /// Returns whether `next` must be rendered again: `true` when the bases have different types,
    /// otherwise the base's answer.
    ///
    /// - Parameter next: The next component, with the same id.
    /// - Returns: `true` when `next` must be rendered.
    @inlinable
    public func shouldRender(next: AnyComponent) -> Bool {
        func compare<Base: Component>(_ base: Base) -> Bool {
            guard let next = next.base as? Base else {
                return true
            }
            return base.shouldRender(next: next)
        }
        return compare(base)
    }

    /// The underlying component's content, type-erased.
    public var body: AnyHTML {
        AnyHTML(base.body)
    }

    /// Writes the underlying component's body into `writer`, specialised for its concrete type.
    @inlinable
    public func renderBody(into writer: inout HTMLWriter) {
        func render<Base: Component>(_ base: Base) {
            base.body.render(into: &writer)
        }
        render(base)
    }

    /// Whether the browser should report the base's visibility: the base's answer.
    @inlinable
    public var reportsVisibility: Bool {
        base.reportsVisibility
    }

    /// Forwards to the base.
    @inlinable
    public func contentWillDisplay() {
        base.contentWillDisplay()
    }

    /// Forwards to the base.
    @inlinable
    public func contentDidEndDisplay() {
        base.contentDidEndDisplay()
    }
}

extension AnyComponent: CustomDebugStringConvertible {
    /// `AnyComponent(` and the base's debug description `)`.
    public var debugDescription: String {
        "AnyComponent(" + String(reflecting: base) + ")"
    }
}
