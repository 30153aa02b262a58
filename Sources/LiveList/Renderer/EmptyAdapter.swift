/// An adapter that shows nothing: for updaters whose output is data, not a screen, such as
/// ``StagedChangesetUpdater``.
///
///     let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
public struct EmptyAdapter: Adapter, Hashable {
    /// Creates the adapter.
    @inlinable
    public init() {}
}
