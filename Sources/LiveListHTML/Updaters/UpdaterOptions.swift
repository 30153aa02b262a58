/// Options shared by ``PatchUpdater`` and ``ReloadDataUpdater``, with the names of Carbon's updater
/// properties. They reach the browser as data attributes of the list root and as each changeset's
/// `animate`.
///
/// Carbon's defaults are kept where they mean the same thing on the web: ``isAnimationEnabled``
/// (true), ``isAnimationEnabledWhileScrolling`` (false), ``animatableChangeCount`` (300) and
/// ``alwaysRenderVisibleComponents`` (true). One differs, for the reason given there:
/// ``keepsContentOffset`` (Carbon: true; here false). docs/MIGRATING-FROM-CARBON.md compares them
/// side by side.
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

    /// Whether a surviving cell, header or footer whose component says its content did not change
    /// (`shouldContentUpdate(with:)` false) is rendered again anyway, so that what that answer
    /// overlooked still reaches the page. Default true, as in Carbon.
    ///
    /// Carbon renders every visible cell, header and footer again after each update: a component
    /// whose `shouldContentUpdate` compares some properties only (Carbon's README recommends it for
    /// cheap updates) still shows the others. A server does not know what is visible, so this renders
    /// again each surviving component that may differ from the previous one: every one, except those
    /// proved the same (both `Equatable` and equal), which cost one `==`. A reload is sent only for
    /// a changed rendering, and a component whose `shouldRender(next:)` returns false keeps its HTML.
    /// JSON-driven lists turn it off: their cells compare every property.
    public var alwaysRenderVisibleComponents = true

    /// LiveList's own option for chats and logs: a list scrolled to its end stays at its end as cells
    /// arrive (`data-stick-bottom`). Default false.
    public var stickToBottom = false

    /// LiveList's own option for long lists: a list with more cells than this is **windowed** in the
    /// browser. Its page holds only the cells near the viewport (``windowPageSize`` of them, and a
    /// page of links without JavaScript), the rest are placeholders of the right height, and the
    /// client fetches the cells that scroll into view (`GET /lists/NAME/cells`, docs/PROTOCOL.md,
    /// "Windowed lists"). Its resets carry that window and the counts, not every cell. Default 1,000;
    /// nil never windows the list (docs/GUIDE.md says what windowing costs).
    public var windowAbove: Int? = 1_000

    /// The height of every cell of a windowed list, in CSS pixels, when the page's stylesheet fixes
    /// it: the scrollbar is then exact from the first paint. Nil (the default): cells are measured as
    /// they are shown, starting from an estimate of ``estimatedCellHeight``, and the scrollbar
    /// converges as the person scrolls.
    public var cellHeight: Int?

    /// The height a windowed list assumes for a cell not measured yet, in CSS pixels. Default 40.
    public var estimatedCellHeight = 40

    /// Creates options; every parameter has the default of the property of the same name.
    public init(
        isAnimationEnabled: Bool = true,
        isAnimationEnabledWhileScrolling: Bool = false,
        animatableChangeCount: Int = 300,
        keepsContentOffset: Bool = false,
        skipReloadComponents: Bool = false,
        alwaysRenderVisibleComponents: Bool = true,
        stickToBottom: Bool = false,
        windowAbove: Int? = 1_000,
        cellHeight: Int? = nil
    ) {
        self.isAnimationEnabled = isAnimationEnabled
        self.isAnimationEnabledWhileScrolling = isAnimationEnabledWhileScrolling
        self.animatableChangeCount = animatableChangeCount
        self.keepsContentOffset = keepsContentOffset
        self.skipReloadComponents = skipReloadComponents
        self.alwaysRenderVisibleComponents = alwaysRenderVisibleComponents
        self.stickToBottom = stickToBottom
        self.windowAbove = windowAbove
        self.cellHeight = cellHeight
    }

    /// How many cells a windowed list's page and reset carry, and how many a page without JavaScript
    /// shows at a time: 100.
    public static let windowPageSize = 100

    /// Whether a list of `cellCount` cells is windowed.
    public func windows(cellCount: Int) -> Bool {
        windowAbove.map { cellCount > $0 } ?? false
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
