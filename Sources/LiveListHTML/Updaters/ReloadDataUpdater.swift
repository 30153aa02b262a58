public import LiveList

/// An updater that never diffs: whenever the rendering changed, it sends one `reset` that replaces the
/// whole list (Carbon's `ReloadDataUpdater`). Duplicate and NUL keys are still refused.
public struct ReloadDataUpdater: Updater {
    public typealias Adapter = HTMLAdapter

    /// The options, sent to the browser as the root's data attributes. Resets are never animated.
    public var options: UpdaterOptions
    /// The list's name.
    public let list: String
    /// The current version.
    public private(set) var version: Int
    /// The current rendering.
    public private(set) var rendering: RenderedList

    public init(list: String, version: Int = 0, options: UpdaterOptions = UpdaterOptions()) {
        self.list = list
        self.version = version
        self.options = options
        rendering = RenderedList()
    }

    /// The current state in snapshot form.
    public var snapshot: ListSnapshot {
        ListSnapshot(list: list, version: version, rendering: rendering)
    }

    /// Renders `target` in full; returns a `reset` changeset when it differs from the current rendering.
    ///
    /// - Throws: `DiffError` for a duplicate key, ``RenderError`` for a key with NUL.
    public mutating func performUpdates(
        adapter: HTMLAdapter,
        from source: [Section],
        to target: [Section]
    ) throws -> ListChangeset? {
        try Self.checkUniqueKeys(target)
        let newRendering = try adapter.render(target)
        guard newRendering != rendering else {
            return nil
        }
        let from = version
        version += 1
        rendering = newRendering
        return snapshot.reset(from: from)
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
