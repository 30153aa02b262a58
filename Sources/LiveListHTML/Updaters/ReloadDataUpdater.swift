public import LiveList

/// An updater that never diffs: whenever the rendering changed, it sends one `reset` that replaces the
/// whole list (Carbon's `ReloadDataUpdater`). Duplicate and NUL keys are still refused.
public struct ReloadDataUpdater: Updater {
    public typealias Adapter = HTMLAdapter

    /// The options, sent to the browser as the root's data attributes. Resets are never animated.
    public var options: UpdaterOptions
    private var state: VersionedRendering

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
        try Self.checkUniqueKeys(target)
        return state.reset(to: try adapter.render(target))
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
