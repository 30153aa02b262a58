public import struct Foundation.IndexPath

/// An adapter says *how* a list is shown: which elements host the cells, headers, footers and
/// sections, and what the user's actions on them (a selection, a visibility report) do.
///
/// As in Carbon, an adapter holds ``data``, the sections it shows, and finds the nodes in them
/// (``cellNode(at:)``, ``headerNode(in:)``, ``footerNode(in:)``). A ``Renderer`` keeps the sections
/// itself and hands them out with its adapter: `renderer.adapter.data` is `renderer.data`, and
/// `renderer.adapter.cellNode(at: IndexPath(item: 0, section: 1))` the node there. A rendering layer
/// refines the protocol (the HTML module's adapter renders sections and cells to markup, with
/// configurable tags and classes, and handles `didSelect`), and an ``Updater`` names the adapter it
/// works with, so a ``Renderer`` only pairs an updater with an adapter it can use.
///
/// Adapters are `Sendable` values: configure them with properties and `@Sendable` closures, not by
/// subclassing, so the same adapter can serve many renderers on many tasks.
///
///     struct LogAdapter: Adapter {
///         var data: [Section] = []
///         var prefix = "row"
///     }
public protocol Adapter: Sendable {
    /// The sections the adapter shows. A renderer's ``Renderer/adapter`` carries the renderer's
    /// ``Renderer/data`` here; the renderer does not keep what is set here (render to change it).
    var data: [Section] { get set }
}

extension Adapter {
    /// The cells of the section at `section`.
    @inlinable
    public func cellNodes(in section: Int) -> [CellNode] {
        data[section].cells
    }

    /// The cell at `indexPath` (its first index the section, its second the cell), as in Carbon.
    @inlinable
    public func cellNode(at indexPath: IndexPath) -> CellNode {
        data[indexPath[0]].cells[indexPath[1]]
    }

    /// The header of the section at `section`, if it has one.
    @inlinable
    public func headerNode(in section: Int) -> ViewNode? {
        data[section].header
    }

    /// The footer of the section at `section`, if it has one.
    @inlinable
    public func footerNode(in section: Int) -> ViewNode? {
        data[section].footer
    }
}
