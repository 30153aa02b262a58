/// An adapter says *how* a list is shown: which elements host the cells, headers, footers and
/// sections, and what the user's actions on them (a selection, a visibility report) do.
///
/// This core protocol holds nothing yet: it names the role. A rendering layer refines it (the HTML
/// module's adapter renders sections and cells to markup, with configurable tags and classes, and
/// handles `didSelect`), and an ``Updater`` names the adapter it works with, so a ``Renderer`` only
/// pairs an updater with an adapter it can use.
///
/// Adapters are `Sendable` values: configure them with properties and `@Sendable` closures, not by
/// subclassing, so the same adapter can serve many renderers on many tasks.
///
///     struct LogAdapter: Adapter {
///         var prefix = "row"
///     }
public protocol Adapter: Sendable {}
