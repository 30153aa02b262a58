/// Options shared by ``PatchUpdater`` and ``ReloadDataUpdater``, with Carbon's names and defaults.
/// They reach the browser as data attributes of the list root and as each changeset's `animate`.
public struct UpdaterOptions: Sendable, Equatable {
    /// Whether changes are animated (`data-animate`). Default true.
    public var isAnimationEnabled = true
    /// Above this many operations a changeset is applied without animation (its `animate` is false):
    /// the web's cheap equivalent of Carbon's fall-back to `reloadData`, without destroying focus or
    /// typed input as a reset would. Default 300.
    public var animatableChangeCount = 300
    /// Whether the browser keeps the first visible cell in place while content changes above it
    /// (`data-keep-offset`). Default false.
    public var keepsContentOffset = false
    /// Whether reloaded cells are replaced without their highlight animation (`data-animate-reloads` is
    /// then false). Default false.
    public var skipReloadComponents = false
    /// Whether every surviving cell is rendered again on each render, even when its component says
    /// its content did not change (`shouldContentUpdate(with:)` returns false); a reload is still sent
    /// only for a changed rendering. Default false.
    public var alwaysRenderVisibleComponents = false
    /// LiveList's own option for chats and logs: a list scrolled to its end stays at its end as cells
    /// arrive (`data-stick-bottom`). Default false.
    public var stickToBottom = false

    public init(
        isAnimationEnabled: Bool = true,
        animatableChangeCount: Int = 300,
        keepsContentOffset: Bool = false,
        skipReloadComponents: Bool = false,
        alwaysRenderVisibleComponents: Bool = false,
        stickToBottom: Bool = false
    ) {
        self.isAnimationEnabled = isAnimationEnabled
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
            ("data-keep-offset", keepsContentOffset),
            ("data-stick-bottom", stickToBottom),
        ]
    }

    /// Whether a changeset of `count` operations is animated.
    func animates(operationCount count: Int) -> Bool {
        isAnimationEnabled && count <= animatableChangeCount
    }
}
