import Synchronization
/// Where a list's events are written: an SSE response stream (the server's `HTTPStream`), or a fake in
/// tests. Every method may be called from any thread.
public protocol EventSink: AnyObject, Sendable {
    /// Queues bytes; false when the sink is closed.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool
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

/// The bytes of one SSE event: `event: patch`, the id, and the changeset JSON on one data line.
func eventBytes(id: String, json: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(json.count + id.utf8.count + 32)
    bytes.append(contentsOf: "event: patch\nid: ".utf8)
    bytes.append(contentsOf: id.utf8)
    bytes.append(contentsOf: "\ndata: ".utf8)
    bytes.append(contentsOf: json)
    bytes.append(contentsOf: [0x0A, 0x0A])
    return bytes
}
