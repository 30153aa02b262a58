/// A component is a small reusable value that describes one element of a list: a cell, a header
/// or a footer.
///
/// As in Carbon, a component says *what* to show; the adapter decides which element hosts it, and
/// the updater how a change reaches the screen. The core protocol holds only what the list needs to
/// keep a screen in step with its data: its content (``body``, HTML from the `Markup` DSL, escaped by
/// construction), whether a new value of a component changes anything, and the visibility callbacks
/// that the browser reports. The adapter hosts the body in the element it chooses (a cell's `<li>`,
/// a header's `<header>`), as Carbon's adapters host a component's content view.
///
/// A component is `Sendable`: lists are built on one task and rendered or diffed on another.
///
/// Example for a simple component:
///
///     struct Label: Component, Equatable {
///         var text: String
///         var body: some HTML { span(.class("label")) { text } }
///     }
///
///     let header = ViewNode(Label(text: "Fruits"))
///     let cell = CellNode(id: 0, Label(text: "Apple"))
///
/// Since `Label` is `Equatable`, a cell is reloaded only when its text changed. A component that is
/// not `Equatable` is re-rendered on every render, and the renderer compares the output instead;
/// implement ``shouldContentUpdate(with:)`` to skip that work:
///
///     struct Avatar: Component {
///         var user: User            // not Equatable
///         var imageURL: String
///
///         func shouldContentUpdate(with next: Avatar) -> Bool {
///             imageURL != next.imageURL
///         }
///     }
public protocol Component: Sendable {
    // MARK: - Rendering - optional

    /// The type of the component's content.
    associatedtype Body: HTML = EmptyHTML

    /// The component's content, rendered inside the element that the adapter hosts it in.
    ///
    /// Text is escaped by construction; raw markup only through `UnsafeRawHTML`. Default: nothing
    /// (for components used only as data, such as in tests of the diff).
    @HTMLBuilder var body: Body { get }

    // MARK: - Updating - optional

    /// Returns whether the content must be updated when `self` is replaced by `next`.
    ///
    /// The renderer calls it on the component of the *previous* render, with the component of the
    /// *next* render that has the same id: `previous.shouldContentUpdate(with: next)`. When it
    /// returns `false`, the two are the same content to the differ (no reload); when it returns
    /// `true`, the element is updated.
    ///
    /// - Note: Unlike `Equatable`, this need not compare every property. It may ignore properties
    ///         that do not change what is shown. It never forces an update that shows the same
    ///         thing: a renderer sends nothing for an output equal to the previous one.
    ///
    /// Default: `self != next` for an `Equatable` component, `true` for any other (re-render, and
    /// let the renderer compare the output).
    ///
    /// - Parameter next: The next value of the component, with the same id.
    /// - Returns: `true` when the content must be updated.
    func shouldContentUpdate(with next: Self) -> Bool

    /// Returns whether `next` must be rendered again when its content is updated, or whether the
    /// output of `self` can stay in place.
    ///
    /// The renderer asks it, on the previous component, only for an element whose content is
    /// updated (see ``shouldContentUpdate(with:)``); returning `false` keeps the previous output,
    /// so no change is sent for this element.
    ///
    /// Default: `true`.
    ///
    /// - Parameter next: The next value of the component, with the same id.
    /// - Returns: `true` when `next` must be rendered.
    func shouldRender(next: Self) -> Bool

    // MARK: - Visibility - optional

    /// Whether the browser should report when this component's element enters and leaves the
    /// visible area. Only then are ``contentWillDisplay()`` and ``contentDidEndDisplay()`` called
    /// (for the web, the cell, header or footer element carries `data-visibility="true"`; the browser
    /// observes it and posts a `visible` or `hidden` action, which the server hands to the component
    /// of that cell, or of that section's header or footer, in the list's current render).
    ///
    /// Default: `false`: reporting visibility costs the browser an observer and a request for every
    /// change.
    var reportsVisibility: Bool { get }

    /// Invoked every time the component's element has entered the visible area.
    ///
    /// Carbon calls it just before a cell is shown; on the web the browser reports it once the
    /// element intersects the viewport, a request later. Unlike Carbon's, it receives no content:
    /// what is shown is HTML in the browser, not a view the server could touch.
    ///
    /// Called only when ``reportsVisibility`` is `true`. Default: does nothing.
    func contentWillDisplay()

    /// Invoked every time after the component's element has left the visible area.
    ///
    /// Not for a cell deleted while visible: Carbon's table calls it then, but the browser stops
    /// observing a removed element, and the server no longer holds its component.
    ///
    /// Called only when ``reportsVisibility`` is `true`. Default: does nothing.
    func contentDidEndDisplay()
}

// MARK: - Defaults

extension Component {
    /// Returns `true`: a component that is not `Equatable` is rendered again, and the renderer
    /// compares the output.
    ///
    /// - Parameter next: The next value of the component, with the same id.
    /// - Returns: `true`.
    @inlinable
    public func shouldContentUpdate(with next: Self) -> Bool {
        true
    }

    /// Returns `true`: an updated component is rendered again.
    ///
    /// - Parameter next: The next value of the component, with the same id.
    /// - Returns: `true`.
    @inlinable
    public func shouldRender(next: Self) -> Bool {
        true
    }

    /// `false`: the browser reports no visibility for the component.
    @inlinable
    public var reportsVisibility: Bool {
        false
    }

    /// Does nothing.
    @inlinable
    public func contentWillDisplay() {}

    /// Does nothing.
    @inlinable
    public func contentDidEndDisplay() {}
}

extension Component where Body == EmptyHTML {
    /// No content.
    @inlinable
    public var body: EmptyHTML {
        EmptyHTML()
    }
}

extension Component {
    /// Writes the component's body into `writer`.
    @inlinable
    public func renderBody(into writer: inout HTMLWriter) {
        body.render(into: &writer)
    }
}

extension Component where Self: Equatable {
    /// Returns `self != next`: an `Equatable` component is updated only when it changed.
    ///
    /// - Note: The default is chosen when the type's conformance to ``Component`` is checked, so
    ///         the type must be `Equatable` in the module that declares it a ``Component``.
    ///
    /// - Parameter next: The next value of the component, with the same id.
    /// - Returns: Whether `next` differs from `self`.
    @inlinable
    public func shouldContentUpdate(with next: Self) -> Bool {
        self != next
    }
}
