public import LiveList
import Markup

/// The diffing updater of the web: turns each new rendering into the ordered DOM operations of
/// docs/PROTOCOL.md ("Changesets"), and keeps the list's version and current rendering.
///
///     let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "todo"))
///     if let changeset = try renderer.render({ … }) {
///         broadcast(changeset.encodedJSON())
///     }
///
/// An operation is sent only for a change of the rendering: unchanged cells are not rendered again,
/// an updated cell (its component's `shouldContentUpdate(with:)` said so) is rendered again unless
/// `shouldRender(next:)` declines, and a `reload` goes out only when its HTML differs. A version is
/// created only when there is at least one operation. Reorders are the fewest moves, and a surviving
/// cell whose section is inserted or deleted moves; it is never deleted and inserted again.
///
/// The operations come in this order, each anchor naming an element of the state the previous ones
/// left: the `delete`s of cells that go; then, section by section in target order, the section's own
/// operation (`insertSection`, `moveSection` or `reloadSection`) followed by its cells' `move`, `insert`
/// and `reload` in target order; last, the `deleteSection`s, which take along the cells still in them.
public struct PatchUpdater: Updater {
    /// The HTML adapter, which renders the cells, headers, footers and sections.
    public typealias Adapter = HTMLAdapter

    /// The options, sent to the browser as the root's data attributes and each changeset's `animate`.
    public var options: UpdaterOptions
    var state: VersionedRendering

    /// Creates an updater for the list `list`, starting at `version` (a list's versions are never
    /// reused, so a list created again continues from its persisted high-water mark).
    public init(list: String, version: Int = 0, options: UpdaterOptions = UpdaterOptions()) {
        state = VersionedRendering(list: list, version: version)
        self.options = options
    }

    /// The list's name.
    public var list: String { state.list }
    /// The current version: it grows by one with every changeset.
    public var version: Int { state.version }
    /// The current rendering, matching the renderer's current sections.
    public var rendering: RenderedList { state.rendering }
    /// The current state in snapshot form.
    public var snapshot: ListSnapshot { state.snapshot }

    /// Diffs `source` (the sections of the current rendering) against `target`, renders what changed
    /// and returns the changeset, or nil when the rendering did not change.
    ///
    /// - Throws: `DiffError` for a duplicate key, ``RenderError`` for a key with NUL; the updater is
    ///   then unchanged.
    public mutating func performUpdates(
        adapter: HTMLAdapter,
        from source: [Section],
        to target: [Section]
    ) throws -> ListChangeset? {
        var adapter = adapter
        // The controls of this list's cells belong to its actions form, on any page that shows it.
        adapter.formID = listFormID(list)
        let changeset = try StagedChangeset(source: source, target: target)
        if changeset.isEmpty && !options.alwaysRenderVisibleComponents {
            return nil
        }
        guard rendering.sections.count == source.count else {
            // The rendering does not describe `source` (the updater was used outside one renderer):
            // start again from a full rendering.
            return try state.reset(to: adapter.render(target), windowAbove: options.windowAbove)
        }
        var plan = PatchPlan(changeset: changeset, source: source, target: target)
        let (operations, newRendering) = try plan.run(
            adapter: adapter,
            options: options,
            old: rendering
        )
        guard !operations.isEmpty else {
            state.rendering = newRendering
            return nil
        }
        let from = state.advance(to: newRendering)
        return ListChangeset(
            list: list,
            from: from,
            version: version,
            animate: options.animates(operationCount: operations.count),
            operations: operations
        )
    }

    /// Moves on to `version` (when it is ahead) keeping the rendering: another process of a shared store
    /// took the versions in between, and this one rendered its writes after the fact.
    package mutating func skipVersion(to version: Int) {
        state.skip(to: version)
    }

    /// Creates a version without a change of the rendering, for an event that is a change to the list
    /// as a whole: a list that comes into existence empty. The changeset has no operations.
    public mutating func advanceVersion() -> ListChangeset {
        let from = state.advance(to: state.rendering)
        return ListChangeset(list: list, from: from, version: version, animate: false, operations: [])
    }
}

/// The work of one ``PatchUpdater/performUpdates(adapter:from:to:)``: reads the staged changeset into
/// per-section and per-cell marks, then walks the target once to render and to emit operations.
struct PatchPlan {
    enum CellMark: UInt8 {
        case kept, moved, inserted
    }

    let changeset: StagedChangeset
    let source: [Section]
    let target: [Section]

    init(changeset: StagedChangeset, source: [Section], target: [Section]) {
        self.changeset = changeset
        self.source = source
        self.target = target
    }

    mutating func run(
        adapter: HTMLAdapter,
        options: UpdaterOptions,
        old: RenderedList
    ) throws(RenderError) -> ([PatchOperation], RenderedList) {
        var operations: [PatchOperation] = []

        // Marks from the stages.
        var targetOffsets = [Int]()
        targetOffsets.reserveCapacity(target.count + 1)
        var total = 0
        for section in target {
            targetOffsets.append(total)
            total += section.cells.count
        }
        var cellMarks = [CellMark](repeating: .kept, count: total)
        var movedSections = Set<Int>()
        var updatedSourceSections = Set<Int>()
        var updatedCells = Set<AnyListID>()
        var deletedSections: [Int] = []

        func targetSection(at layoutIndex: Int) -> Int? {
            if case let .target(index) = changeset.layout[layoutIndex] {
                return index
            }
            return nil
        }
        for stage in changeset.stages {
            switch stage.stage {
            case .removeAndUpdate:
                for path in stage.elementDeleted {
                    operations.append(.delete(cell: source[path.section].cells[path.element].id.key))
                }
                for path in stage.elementUpdated {
                    updatedCells.insert(source[path.section].cells[path.element].id)
                }
                updatedSourceSections.formUnion(stage.sectionUpdated)
            case .placeSections:
                for move in stage.sectionMoved {
                    if let index = targetSection(at: move.target) {
                        movedSections.insert(index)
                    }
                }
            case .placeElements:
                for move in stage.elementMoved {
                    if let section = targetSection(at: move.target.section) {
                        cellMarks[targetOffsets[section] + move.target.element] = .moved
                    }
                }
                for path in stage.elementInserted {
                    if let section = targetSection(at: path.section) {
                        cellMarks[targetOffsets[section] + path.element] = .inserted
                    }
                }
            case .deleteSections:
                for index in stage.sectionDeleted {
                    if case let .deleted(sourceIndex) = changeset.layout[index] {
                        deletedSections.append(sourceIndex)
                    }
                }
            }
        }

        // Keys are compared byte for byte, as the DOM compares attribute values: AnyListID does that,
        // where String would take canonically equivalent spellings for one key.
        var oldSectionIndex = [AnyListID: Int](minimumCapacity: source.count)
        for (index, section) in source.enumerated() {
            oldSectionIndex[section.id] = index
        }
        // Old cells' HTML by key, built only when some cell moves (kept cells are found in order).
        var oldHTMLByKey: [AnyListID: String]?
        func oldHTML(ofMoved key: AnyListID) -> String? {
            if oldHTMLByKey == nil {
                var table = [AnyListID: String](minimumCapacity: old.cellCount)
                for section in old.sections {
                    for cell in section.cells {
                        table[AnyListID(cell.key)] = cell.html
                    }
                }
                oldHTMLByKey = table
            }
            return oldHTMLByKey?[key]
        }
        // Old nodes by key, built only when a moved cell must be rendered again (its previous
        // component is asked `shouldRender(next:)`).
        var oldNodesByKey: [AnyListID: CellNode]?
        func oldNode(ofMoved key: AnyListID) -> CellNode? {
            if oldNodesByKey == nil {
                var table = [AnyListID: CellNode](minimumCapacity: old.cellCount)
                for section in source {
                    for node in section.cells {
                        table[node.id] = node
                    }
                }
                oldNodesByKey = table
            }
            return oldNodesByKey?[key]
        }

        var newSections: [RenderedSection] = []
        newSections.reserveCapacity(target.count)
        var previousSection: String?
        for (sectionIndex, section) in target.enumerated() {
            let key = section.id.key
            let sourceIndex = oldSectionIndex[section.id]
            var opening: String
            var closing: String
            var header: String?
            var footer: String?
            if let sourceIndex {
                let oldSection = old.sections[sourceIndex]
                (opening, closing, header, footer) = (oldSection.opening, oldSection.closing, oldSection.header, oldSection.footer)
                if movedSections.contains(sectionIndex) {
                    operations.append(.moveSection(section: key, after: previousSection))
                }
                if updatedSourceSections.contains(sourceIndex) || Self.mayBeStale(section, previous: source[sourceIndex], options) {
                    let previous = source[sourceIndex]
                    let shell = try adapter.renderSection(
                        key: key,
                        header: Self.rerender(section.header, previous: previous.header, oldHTML: header, with: adapter.renderHeader),
                        footer: Self.rerender(section.footer, previous: previous.footer, oldHTML: footer, with: adapter.renderFooter),
                        cells: []
                    )
                    if !sameBytes(shell.header, header) || !sameBytes(shell.footer, footer) {
                        operations.append(.reloadSection(section: key, header: shell.header, footer: shell.footer))
                        (opening, closing, header, footer) = (shell.opening, shell.closing, shell.header, shell.footer)
                    }
                }
            } else {
                let shell = try adapter.renderSection(section, cells: [])
                (opening, closing, header, footer) = (shell.opening, shell.closing, shell.header, shell.footer)
                operations.append(.insertSection(
                    section: key, after: previousSection, html: shell.html, header: header, footer: footer
                ))
            }
            previousSection = key

            // Cells that stay in place appear in the old section in the same order.
            let oldCells = sourceIndex.map { old.sections[$0].cells } ?? []
            let oldNodes = sourceIndex.map { source[$0].cells } ?? []
            var oldCursor = 0
            var cells: [RenderedCell] = []
            cells.reserveCapacity(section.cells.count)
            var previousCell: String?
            for (cellIndex, node) in section.cells.enumerated() {
                let cellKey = node.id.key
                let html: String
                switch cellMarks[targetOffsets[sectionIndex] + cellIndex] {
                case .inserted:
                    let rendered = try adapter.renderCell(node)
                    operations.append(.insert(cell: cellKey, section: key, after: previousCell, html: rendered.html))
                    html = rendered.html
                case .moved:
                    operations.append(.move(cell: cellKey, section: key, after: previousCell))
                    let previousHTML = oldHTML(ofMoved: node.id) ?? ""
                    let previous = updatedCells.contains(node.id) || options.alwaysRenderVisibleComponents ? oldNode(ofMoved: node.id) : nil
                    if updatedCells.contains(node.id) || Self.mayBeStale(node, previous: previous, options) {
                        html = try rerender(node, previous: previous, oldHTML: previousHTML,
                                            adapter: adapter, operations: &operations)
                    } else {
                        html = previousHTML
                    }
                case .kept:
                    while oldCursor < oldCells.count, !oldCells[oldCursor].key.utf8.elementsEqual(cellKey.utf8) {
                        oldCursor += 1
                    }
                    let previousHTML = oldCursor < oldCells.count ? oldCells[oldCursor].html : ""
                    // The node of the previous render, where the rendering and `source` agree (they do
                    // when the updater is driven by one renderer).
                    let previous = oldCursor < oldNodes.count && oldNodes[oldCursor].id == node.id ? oldNodes[oldCursor] : nil
                    if updatedCells.contains(node.id) || Self.mayBeStale(node, previous: previous, options) {
                        html = try rerender(node, previous: previous, oldHTML: previousHTML,
                                            adapter: adapter, operations: &operations)
                    } else {
                        html = previousHTML
                    }
                }
                cells.append(RenderedCell(key: cellKey, html: html))
                previousCell = cellKey
            }
            newSections.append(RenderedSection(
                key: key, opening: opening, closing: closing, header: header, footer: footer, cells: cells
            ))
        }

        for sourceIndex in deletedSections {
            operations.append(.deleteSection(section: source[sourceIndex].id.key))
        }
        return (operations, RenderedList(sections: newSections))
    }

    /// Whether a surviving cell that its component says is unchanged (`shouldContentUpdate(with:)`
    /// false) must be rendered again anyway, with ``UpdaterOptions/alwaysRenderVisibleComponents``:
    /// unless the previous component is provably the same (both `Equatable` and equal). Carbon
    /// renders every visible cell again after each update, so that a property its
    /// `shouldContentUpdate` ignores still reaches the screen; a server does not know what is
    /// visible, so this renders every such cell that may differ, and skips the ones proved equal.
    static func mayBeStale(_ node: CellNode, previous: CellNode?, _ options: UpdaterOptions) -> Bool {
        guard options.alwaysRenderVisibleComponents else { return false }
        guard let previous else { return true }
        return !previous.component.isSame(as: node.component)
    }

    /// ``mayBeStale(_:previous:_:)`` for a surviving section's header and footer.
    static func mayBeStale(_ section: Section, previous: Section, _ options: UpdaterOptions) -> Bool {
        guard options.alwaysRenderVisibleComponents else { return false }
        func differs(_ node: ViewNode?, _ old: ViewNode?) -> Bool {
            switch (node, old) {
            case (nil, nil): false
            case let (node?, old?): !old.component.isSame(as: node.component)
            default: true
            }
        }
        return differs(section.header, previous.header) || differs(section.footer, previous.footer)
    }

    /// Renders again a surviving cell that was updated, or that the options ask to render again,
    /// unless its previous component declines (`shouldRender(next:)` is false, which wins over
    /// `alwaysRenderVisibleComponents`, as in Carbon); emits a `reload` only for a changed
    /// rendering. Returns the cell's HTML.
    private func rerender(
        _ node: CellNode,
        previous: CellNode?,
        oldHTML: String,
        adapter: HTMLAdapter,
        operations: inout [PatchOperation]
    ) throws(RenderError) -> String {
        if let previous, !previous.component.shouldRender(next: node.component) {
            return oldHTML
        }
        let rendered = try adapter.renderCell(node)
        if !sameBytes(rendered.html, oldHTML) {
            operations.append(.reload(cell: node.id.key, html: rendered.html))
        }
        return rendered.html
    }

    /// The HTML of a header or footer of an updated section: the old HTML when both renders have one
    /// and the previous component declines to render the next (`shouldRender(next:)`), else the
    /// next node rendered (nil when it has none).
    static func rerender(
        _ node: ViewNode?,
        previous: ViewNode?,
        oldHTML: String?,
        with render: (ViewNode) -> String
    ) -> String? {
        guard let node else { return nil }
        if let previous, let oldHTML, !previous.component.shouldRender(next: node.component) {
            return oldHTML
        }
        return render(node)
    }
}

extension ListSnapshot {
    /// A changeset that replaces a viewer's whole list with this state: for a viewer at `from` whose
    /// version is too old, unknown or in the future, and for the `ReloadDataUpdater`. With
    /// `windowAbove` (``UpdaterOptions/windowAbove``), a state of more cells is encoded windowed.
    public func reset(from: Int, windowAbove: Int? = nil) -> ListChangeset {
        ListChangeset(
            list: list,
            from: from,
            version: version,
            animate: false,
            operations: [.reset(html: rendering.html, sections: rendering.sections)],
            windowAbove: windowAbove
        )
    }
}
