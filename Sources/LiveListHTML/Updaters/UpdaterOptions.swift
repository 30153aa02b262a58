/// Options shared by ``PatchUpdater`` and ``ReloadDataUpdater``, with the names of Carbon's updater
/// properties. They reach the browser as data attributes of the list root and as each changeset's
/// `animate`.
///
/// Carbon's defaults are kept where they mean the same thing on the web: ``isAnimationEnabled``
/// (true), ``isAnimationEnabledWhileScrolling`` (false) and ``animatableChangeCount`` (300). Two
/// differ, for reasons given on each: ``keepsContentOffset`` (Carbon: true; here false) and
/// ``alwaysRenderVisibleComponents`` (Carbon: true; here false). docs/MIGRATING-FROM-CARBON.md
/// compares them side by side.
public struct UpdaterOptions: Sendable, Equatable {
    /// Whether changes are animated (`data-animate`). Default true, as in Carbon.
    public var isAnimationEnabled = true

    /// Whether changes are animated while the user scrolls the list (`data-animate-scrolling`).
    /// Default false, as in Carbon: a patch that arrives during a scroll is applied at once, without
    /// animation, so that the rows under the user's finger do not slide. It applies only when
    /// ``isAnimationEnabled`` is true.
    ///
    /// The browser decides, since only it knows that the user is scrolling: the client must read
    /// this attribute (docs/PROTOCOL.md, "The DOM").
    public var isAnimationEnabledWhileScrolling = false

    /// Above this many operations a changeset is applied without animation (its `animate` is false):
    /// the web's cheap equivalent of Carbon's fall-back to `reloadData`, without destroying focus or
    /// typed input as a reset would. Default 300, as in Carbon.
    public var animatableChangeCount = 300

    /// Whether the browser's client keeps the first visible cell in place while content changes
    /// above it (`data-keep-offset`), in every browser. Default false.
    ///
    /// Carbon's default is true: UIKit moves the content offset during batch updates of
    /// self-sizing rows, and Carbon puts it back, so that what the user looks at stays put. On the
    /// web, browsers other than Safari already do that by themselves (CSS scroll anchoring,
    /// `overflow-anchor`), at no cost. Set it to true to get the same in Safari as well: the client
    /// then measures the first visible cell before and after each patch (a layout read per patch)
    /// and scrolls back by the difference.
    public var keepsContentOffset = false

    /// Whether reloaded cells are replaced without their highlight animation (`data-animate-reloads` is
    /// then false). Default false.
    public var skipReloadComponents = false

    /// Whether every surviving cell is rendered again on each render, even when its component says
    /// its content did not change (`shouldContentUpdate(with:)` returns false); a reload is still sent
    /// only for a changed rendering, and a component whose `shouldRender(next:)` returns false keeps
    /// its HTML. Default false.
    ///
    /// Carbon's default is true, and needed there: Carbon's default `shouldContentUpdate(with:)`
    /// returns false, so without re-rendering the visible cells a changed component would never be
    /// shown. LiveList's default answers true for a component that is not `Equatable` (and `!=` for
    /// one that is), so every changed component is rendered again and compared without this option.
    /// A server does not know which cells are visible: true here renders *every* cell of the list on
    /// each render, the cost that diffing saves.
    public var alwaysRenderVisibleComponents = false

    /// LiveList's own option for chats and logs: a list scrolled to its end stays at its end as cells
    /// arrive (`data-stick-bottom`). Default false.
    public var stickToBottom = false

    /// Creates options; every parameter has the default of the property of the same name.
    public init(
        isAnimationEnabled: Bool = true,
        isAnimationEnabledWhileScrolling: Bool = false,
        animatableChangeCount: Int = 300,
        keepsContentOffset: Bool = false,
        skipReloadComponents: Bool = false,
        alwaysRenderVisibleComponents: Bool = false,
        stickToBottom: Bool = false
    ) {
        self.isAnimationEnabled = isAnimationEnabled
        self.isAnimationEnabledWhileScrolling = isAnimationEnabledWhileScrolling
        self.animatableChangeCount = animatableChangeCount
        self.keepsContentOffset = keepsContentOffset
        self.skipReloadComponents = skipReloadComponents
        self.alwaysRenderVisibleComponents = alwaysRenderVisibleComponents
        self.stickToBottom = stickToBottom
    }

    /// The list root's option attributes, in order.
    var rootAttributes: [(String, Bool)] {
        [
            ("data-animate", isAnimationEnabled),
            ("data-animate-reloads", isAnimationEnabled && !skipReloadComponents),
            ("data-animate-scrolling", isAnimationEnabled && isAnimationEnabledWhileScrolling),
            ("data-keep-offset", keepsContentOffset),
            ("data-stick-bottom", stickToBottom),
        ]
    }

    /// Whether a changeset of `count` operations is animated.
    func animates(operationCount count: Int) -> Bool {
        isAnimationEnabled && count <= animatableChangeCount
    }
}
