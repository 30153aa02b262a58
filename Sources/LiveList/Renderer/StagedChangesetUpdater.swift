public import ListDiff

/// An updater that diffs the previous sections against the next ones and returns the staged
/// changeset (see `ListDiff.StagedChangeset`): for tests and for consumers that apply changes
/// themselves.
///
///     let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
///     try renderer.render { Section(id: "a") { Label(text: "x").identified(by: 1) } }
///     let changes = try renderer.render { Section(id: "a") { Label(text: "y").identified(by: 1) } }
///     changes.changeCount   // 1: cell 1 updated
///
/// It works with any adapter, which it does not use.
public struct StagedChangesetUpdater<Adapter: LiveList.Adapter>: Updater, Sendable {
    /// Creates the updater.
    @inlinable
    public init() {}

    /// Returns the staged changeset from `source` to `target`.
    ///
    /// - Parameters:
    ///   - adapter: Not used.
    ///   - source: The sections of the last successful render.
    ///   - target: The sections to render.
    /// - Returns: The changes, in stages; empty when nothing changed.
    /// - Throws: `ListDiff.DiffError` naming the key of a duplicate section or cell id.
    @inlinable
    public func performUpdates(
        adapter: Adapter,
        from source: [Section],
        to target: [Section]
    ) throws -> StagedChangeset {
        try StagedChangeset(source: source, target: target)
    }
}
