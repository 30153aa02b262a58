public import LiveListHTML

/// Settings of every hosted list.
public struct ListConfiguration: Sendable {
    /// The most changesets kept for viewers that reconnect or fall behind. Default 256.
    public var logCount = 256
    /// The most bytes of encoded changesets kept. Default 4 MiB.
    public var logBytes = 4 << 20
    /// A viewer with more than this many bytes queued is not written to until its socket drains; then
    /// it gets one changeset from its last delivered version to now. Default 64 KiB.
    public var slowViewerBytes = 64 << 10
    /// The most streams a change is written to in one turn of the list's actor. A larger audience is
    /// written to in turns, between which writes are answered; a stream that the node has not reached
    /// when the next change comes gets one changeset that covers both. Default 1,000.
    public var fanOutSlice = 1_000
    /// App lists reserve versions in blocks of this size in the store, so that a restart never reuses
    /// a version without a disk write per change. Default 1,000.
    public var versionBlock = 1_000
    /// The adapter that renders every list.
    public var adapter = HTMLAdapter()
    /// The updater options of every list.
    public var options = UpdaterOptions()

    public init() {}
}

/// Counters that `/metrics` reports.
public struct ListCounters: Sendable, Equatable {
    public var changesets = 0
    public var eventsSent = 0
    public var bytesSent = 0
    public var resetsSent = 0
    public var coalescedViewers = 0

    public init() {}
}
