public import LiveList

/// An updater that never diffs: whenever the rendering changed, it sends one `reset` that replaces the
/// whole list (Carbon's `UITableViewReloadDataUpdater`). Duplicate and NUL keys are still refused.
///
/// Every cell, header and footer is rendered again on each render, unless the previous component of
/// the same id says it need not be (`shouldRender(next:)`), as Carbon's `reloadData` does.
public struct ReloadDataUpdater: Updater {
    /// The HTML adapter, which renders the cells, headers, footers and sections.
    public typealias Adapter = HTMLAdapter

    /// The options, sent to the browser as the root's data attributes. Resets are never animated.
    public var options: UpdaterOptions
    private var state: VersionedRendering

    /// Creates an updater for the list `list`, starting at `version`, with `options` sent to the browser.
    public init(list: String, version: Int = 0, options: UpdaterOptions = UpdaterOptions()) {
        state = VersionedRendering(list: list, version: version)
        self.options = options
    }

    /// The list's name.
    public var list: String { state.list }
    /// The current version.
    public var version: Int { state.version }
    /// The current rendering.
    public var rendering: RenderedList { state.rendering }
    /// The current state in snapshot form.
    public var snapshot: ListSnapshot { state.snapshot }

    /// Renders `target` in full; returns a `reset` changeset when it differs from the current rendering.
    ///
    /// - Throws: `DiffError` for a duplicate key, ``RenderError`` for a key with NUL.
    public mutating func performUpdates(
        adapter: HTMLAdapter,
        from source: [Section],
        to target: [Section]
    ) throws -> ListChangeset? {
        var adapter = adapter
        // The controls of this list's cells belong to its actions form, on any page that shows it.
        adapter.formID = listFormID(list)
        try Self.checkUniqueKeys(target)
        return state.reset(to: try render(target, from: source, adapter: adapter), windowAbove: options.windowAbove)
    }

    /// Renders every section and cell of `target`, except where the previous component of the same
    /// id declines to render the next one (`shouldRender(next:)` is false, as Carbon asks it when
    /// `reloadData` renders a cell again): that element keeps its previous HTML.
    private func render(_ target: [Section], from source: [Section], adapter: HTMLAdapter) throws(RenderError) -> RenderedList {
        let old = rendering
        guard old.sections.count == source.count else {
            return try adapter.render(target)
        }
        // The previous sections and cells by id, with their HTML: the rendering is `source`'s, one to one.
        var oldSections = [AnyListID: (section: Section, rendered: RenderedSection)](minimumCapacity: source.count)
        var oldCells = [AnyListID: (node: CellNode, html: String)](minimumCapacity: old.cellCount)
        for (section, rendered) in zip(source, old.sections) {
            oldSections[section.id] = (section, rendered)
            for (node, cell) in zip(section.cells, rendered.cells) {
                oldCells[node.id] = (node, cell.html)
            }
        }
        var sections: [RenderedSection] = []
        sections.reserveCapacity(target.count)
        for section in target {
            var cells: [RenderedCell] = []
            cells.reserveCapacity(section.cells.count)
            for node in section.cells {
                if let previous = oldCells[node.id], !previous.node.component.shouldRender(next: node.component) {
                    cells.append(RenderedCell(key: node.id.key, html: previous.html))
                } else {
                    cells.append(try adapter.renderCell(node))
                }
            }
            let previous = oldSections[section.id]
            sections.append(try adapter.renderSection(
                key: section.id.key,
                header: PatchPlan.rerender(section.header, previous: previous?.section.header,
                                           oldHTML: previous?.rendered.header, with: adapter.renderHeader),
                footer: PatchPlan.rerender(section.footer, previous: previous?.section.footer,
                                           oldHTML: previous?.rendered.footer, with: adapter.renderFooter),
                cells: cells
            ))
        }
        return RenderedList(sections: sections)
    }

    static func checkUniqueKeys(_ sections: [Section]) throws(DiffError) {
        // AnyListID compares keys byte for byte, as the DOM does.
        var sectionKeys = Set<AnyListID>()
        var cellKeys = Set<AnyListID>()
        for section in sections {
            guard sectionKeys.insert(section.id).inserted else {
                throw .duplicateSectionIdentifier(quoted(section.id.key), in: .target)
            }
            for cell in section.cells where !cellKeys.insert(cell.id).inserted {
                throw .duplicateElementIdentifier(quoted(cell.id.key), in: .target)
            }
        }
    }
}
