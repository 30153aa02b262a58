/// An adapter that shows nothing: for updaters whose output is data, not a screen, such as
/// ``StagedChangesetUpdater``.
///
///     let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
public struct EmptyAdapter: Adapter, Hashable {
    /// The sections shown (see ``Adapter/data``).
    public var data: [Section] = []

    /// Creates the adapter.
    @inlinable
    public init() {}

    /// Every empty adapter is alike: what it shows is not part of what it is.
    public static func == (_: EmptyAdapter, _: EmptyAdapter) -> Bool {
        true
    }

    /// Hashes nothing: every empty adapter is alike.
    public func hash(into _: inout Hasher) {}
}
