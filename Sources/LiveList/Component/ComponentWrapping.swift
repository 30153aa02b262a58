/// A component that wraps another component and behaves as it does.
///
/// Every requirement of ``Component`` is forwarded to ``wrapped`` by default (its ``Component/body``
/// too), so a wrapper only adds what it is for: ``IdentifiedComponentWrapper`` adds an id. As in
/// Carbon, a wrapper is `@dynamicMemberLookup`: `wrapper.text` reads the wrapped component's `text`.
/// ``AnyComponent/as(_:)`` looks through wrappers.
///
/// Example for a wrapper that asks the browser for visibility reports:
///
///     struct Tracked<Wrapped: Component>: ComponentWrapping {
///         var wrapped: Wrapped
///         var reportsVisibility: Bool { true }
///         func contentWillDisplay() { Metrics.impression() }
///     }
///
/// - Note: Do not make a wrapper `Equatable`: ``Component/shouldContentUpdate(with:)`` would then
///         have two defaults to choose from. Implement it in the wrapper if it needs another rule.
@dynamicMemberLookup
public protocol ComponentWrapping: Component {
    /// The type of the wrapped component.
    associatedtype Wrapped: Component

    // MARK: - Wrapping - required

    /// The wrapped component.
    var wrapped: Wrapped { get }
}

// MARK: - Forwarding defaults

extension ComponentWrapping {
    /// The wrapped component's property at `keyPath`: `Label(text: "a").identified(by: 1).text`.
    @inlinable
    public subscript<T>(dynamicMember keyPath: KeyPath<Wrapped, T>) -> T {
        wrapped[keyPath: keyPath]
    }

    /// Forwards to the wrapped component: `wrapped.shouldContentUpdate(with: next.wrapped)`.
    ///
    /// - Parameter next: The next value of the wrapper, with the same id.
    /// - Returns: Whether the wrapped content must be updated.
    @inlinable
    public func shouldContentUpdate(with next: Self) -> Bool {
        wrapped.shouldContentUpdate(with: next.wrapped)
    }

    /// Forwards to the wrapped component: `wrapped.shouldRender(next: next.wrapped)`.
    ///
    /// - Parameter next: The next value of the wrapper, with the same id.
    /// - Returns: Whether the wrapped component must be rendered again.
    @inlinable
    public func shouldRender(next: Self) -> Bool {
        wrapped.shouldRender(next: next.wrapped)
    }

    /// Forwards to the wrapped component.
    @inlinable
    public var reportsVisibility: Bool {
        wrapped.reportsVisibility
    }

    /// Forwards to the wrapped component.
    @inlinable
    public func contentWillDisplay() {
        wrapped.contentWillDisplay()
    }

    /// Forwards to the wrapped component.
    @inlinable
    public func contentDidEndDisplay() {
        wrapped.contentDidEndDisplay()
    }
}

extension ComponentWrapping where Body == Wrapped.Body {
    /// The wrapped component's content: a wrapper renders what it wraps.
    @inlinable
    public var body: Wrapped.Body {
        wrapped.body
    }
}
