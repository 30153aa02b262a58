import Synchronization
/// One event of a list's stream as the engine hands it out: its id (the version, or a multiplexed
/// stream's version vector) and the changeset JSON. The engine knows no transport: a sink frames the
/// event for its own (LiveListServer frames Server-Sent Events), and the framed bytes are made once per
/// event and shared by every sink it goes to, without a copy per viewer.
public final class ListEvent: Sendable {
    /// The event's id, which a client sends back to resume (`Last-Event-ID`).
    public let id: String
    /// The changeset JSON (one line).
    public let data: [UInt8]
    private let framing = Mutex<[UInt8]?>(nil)

    public init(id: String, data: [UInt8]) {
        self.id = id
        self.data = data
    }

    /// The event framed by `frame`, which runs once per event: every later call returns the same bytes.
    /// A process frames its events one way.
    public func framed(by frame: (ListEvent) -> [UInt8]) -> [UInt8] {
        if let bytes = framing.withLock({ $0 }) { return bytes }
        let bytes = frame(self)
        framing.withLock { $0 = bytes }
        return bytes
    }
}

/// Where a list's events go: an SSE response stream (LiveListServer adapts the HTTP layer's streams), or
/// a fake in tests. Every method may be called from any thread.
public protocol EventSink: AnyObject, Sendable {
    /// Queues one event; false when the sink is closed.
    @discardableResult
    func send(_ event: ListEvent) -> Bool
    /// Bytes queued and not yet taken by the peer.
    var queuedBytes: Int { get }
    /// Whether the sink has ended.
    var isClosed: Bool { get }
    /// Calls `body` once when nothing is queued any more.
    func whenDrained(_ body: @escaping @Sendable () -> Void)
    /// Ends the sink after what is queued.
    func close()
}

/// One stream's view of one list: the last version it was sent, and whether it is waiting for its
/// socket to drain before it gets the next (coalesced) changeset.
final class Subscription: @unchecked Sendable {
    let sink: any EventSink
    /// For a multiplexed stream, the stream's shared state (its version vector).
    let multiplexed: MultiplexedStream?
    /// Who is viewing (for lists rendered per viewer).
    let viewer: Viewer
    /// Guarded by the owning list's actor.
    var delivered: Int
    var isWaitingForDrain = false

    init(sink: any EventSink, multiplexed: MultiplexedStream?, delivered: Int, viewer: Viewer = .anonymous) {
        self.sink = sink
        self.multiplexed = multiplexed
        self.delivered = delivered
        self.viewer = viewer
    }

    /// The sink's identity: a stream subscribes to a list at most once.
    var id: ObjectIdentifier { ObjectIdentifier(sink) }
}

/// The state of one multiplexed stream (`GET /events?list=A&list=B`): the version of each of its
/// lists, which together form every event's `id:` (`A:3,B:7`), so that `Last-Event-ID` resumes them all.
public final class MultiplexedStream: @unchecked Sendable {
    private let lock = Mutex<Void>(())
    /// The stream's lists, in their order in the URL.
    let names: [String]
    private var versions: [String: Int]
    let sink: any EventSink

    /// Creates the state for `names` (in their order in the URL), at the given versions.
    package init(sink: any EventSink, names: [String], versions: [String: Int]) {
        self.sink = sink
        self.names = names
        self.versions = versions
    }

    /// Records that `name` is now at `version` and returns the event's id: the whole vector.
    func advance(_ name: String, to version: Int) -> String {
        lock.withLock { _ in
            versions[name] = version
            return names.map { "\($0):\(versions[$0] ?? 0)" }.joined(separator: ",")
        }
    }

    /// Parses a version vector (`A:3,B:7`); nil when malformed. Names that are not list names make it
    /// malformed; a name listed twice keeps its last version.
    package static func parseVector(_ text: String) -> [String: Int]? {
        var result: [String: Int] = [:]
        guard !text.isEmpty else { return result }
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let colon = item.lastIndex(of: ":"), let name = ListName(String(item[..<colon])),
                let version = Int(item[item.index(after: colon)...]), version >= 0,
                item[item.index(after: colon)...].allSatisfy(\.isASCII)
            else {
                return nil
            }
            result[name.rawValue] = version
        }
        return result
    }
}
