import Synchronization
import LiveListHTML
/// One event of a list's stream as the engine hands it out: its id (the version, or a multiplexed
/// stream's version vector) and the changeset JSON, in two parts: its ``head`` (up to and with where
/// it starts, `{"protocol":1,"list":"todo","from":4,`) and its ``tail`` (the rest), which every event
/// of the same changeset shares, whatever its id or start. The engine knows no transport: a sink
/// frames the event for its own (LiveListServer frames Server-Sent Events); the framed tail is made
/// once per changeset and shared by every sink it goes to, without a copy per viewer.
public final class ListEvent: Sendable {
    /// The event's id, which a client sends back to resume (`Last-Event-ID`).
    public let id: String
    /// The start of the changeset JSON: what differs between events of one changeset.
    public let head: [UInt8]
    /// The rest of the changeset JSON, shared.
    public let tail: EventTail
    private let framing = FramingCache()

    public init(id: String, head: [UInt8], tail: EventTail) {
        self.id = id
        self.head = head
        self.tail = tail
    }

    /// An event of `data` (one line of JSON) in one piece.
    public convenience init(id: String, data: [UInt8]) {
        self.init(id: id, head: [], tail: EventTail(data))
    }

    /// The changeset JSON (one line): the head and the tail joined (a copy).
    public var data: [UInt8] { head + tail.bytes }

    /// The bytes of the changeset JSON.
    public var count: Int { head.count + tail.bytes.count }

    /// The event framed by `frame`, which runs once per event: every later call returns the same
    /// object (every stream that gets this event shares it). A process frames its events one way.
    public func framed<Framed: AnyObject & Sendable>(by frame: (ListEvent) -> Framed) -> Framed {
        framing.value { frame(self) }
    }
}

/// The shared rest of a changeset's JSON (see ``ListEvent``), with its framing for the transport,
/// made once.
public final class EventTail: Sendable {
    /// The JSON from the member after `from` to the end.
    public let bytes: [UInt8]
    private let framing = FramingCache()

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The tail framed by `frame`, which runs once per tail: every later call returns the same
    /// object. A process frames its events one way.
    public func framed<Framed: AnyObject & Sendable>(by frame: ([UInt8]) -> Framed) -> Framed {
        framing.value { frame(bytes) }
    }
}

/// What a transport made of an event or a tail, kept so that it is made once.
private final class FramingCache: Sendable {
    private let framed = Mutex<(any AnyObject & Sendable)?>(nil)

    /// The value kept, or the one `make` makes (then kept).
    func value<Framed: AnyObject & Sendable>(_ make: () -> Framed) -> Framed {
        if let kept = framed.withLock({ $0 }) as? Framed { return kept }
        let made = make()
        framed.withLock { $0 = made }
        return made
    }
}

/// A changeset's JSON as events carry it: the head of this changeset and a tail that may be shared.
struct EncodedChangeset {
    var head: [UInt8]
    var tail: EventTail
    var version: Int
    var isReset: Bool

    init(_ changeset: ListChangeset) {
        let parts = changeset.encodedJSONParts()
        head = parts.head
        tail = EventTail(parts.tail)
        version = changeset.version
        isReset = changeset.isReset
    }

    init(head: [UInt8], tail: EventTail, version: Int, isReset: Bool) {
        self.head = head
        self.tail = tail
        self.version = version
        self.isReset = isReset
    }

    /// The whole JSON (a copy).
    var json: [UInt8] { head + tail.bytes }

    /// The bytes of the whole JSON.
    var count: Int { head.count + tail.bytes.count }

    /// The event of this changeset under `id`.
    func event(id: String) -> ListEvent {
        ListEvent(id: id, head: head, tail: tail)
    }
}

/// Where a list's events go: an SSE response stream (LiveListServer adapts the HTTP layer's streams), or
/// a fake in tests. Every method may be called from any thread.
public protocol EventSink: AnyObject, Sendable {
    /// Queues one event; false when nothing was queued: the sink is closed, or (when it is not) it has
    /// no room for the event now, and its writer waits for `whenDrained`.
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
package final class Subscription: @unchecked Sendable {
    let sink: any EventSink
    /// The multiplexed stream's state and a viewer other than anonymous, in one word: an anonymous
    /// viewer's subscription to a list's own stream, the most numerous, stays small.
    private let extras: Extras
    /// For a multiplexed stream, the stream's shared state (its version vector).
    var multiplexed: MultiplexedStream? {
        switch extras {
        case .none, .viewer: nil
        case let .multiplexed(stream): stream
        case let .both(both): both.multiplexed
        }
    }
    /// Who is viewing (for lists rendered per viewer).
    var viewer: Viewer {
        switch extras {
        case .none, .multiplexed: .anonymous
        case let .viewer(box): box.viewer
        case let .both(both): both.viewer
        }
    }
    /// Guarded by the owning list's actor.
    var delivered: Int
    var isWaitingForDrain = false

    init(sink: any EventSink, multiplexed: MultiplexedStream?, delivered: Int, viewer: Viewer = .anonymous) {
        self.sink = sink
        self.delivered = delivered
        switch (multiplexed, viewer == .anonymous) {
        case (nil, true): extras = .none
        case let (stream?, true): extras = .multiplexed(stream)
        case (nil, false): extras = .viewer(ViewerBox(viewer))
        case let (stream?, false): extras = .both(MultiplexedViewer(multiplexed: stream, viewer: viewer))
        }
    }

    /// The sink's identity: a stream subscribes to a list at most once.
    var id: ObjectIdentifier { ObjectIdentifier(sink) }

    /// Each case holds one reference, so that the enum fits in one word.
    private enum Extras {
        case none
        case multiplexed(MultiplexedStream)
        case viewer(ViewerBox)
        case both(MultiplexedViewer)
    }
}

/// A viewer held on the heap.
private final class ViewerBox: Sendable {
    let viewer: Viewer

    init(_ viewer: Viewer) {
        self.viewer = viewer
    }
}

/// A multiplexed stream's state and its viewer, held together on the heap.
private final class MultiplexedViewer: Sendable {
    let multiplexed: MultiplexedStream
    let viewer: Viewer

    init(multiplexed: MultiplexedStream, viewer: Viewer) {
        self.multiplexed = multiplexed
        self.viewer = viewer
    }
}

/// The state of one multiplexed stream (`GET /events?list=A&list=B`): its lists and the version of each,
/// which together form every event's `id:` (`A:3,B:7`), so that `Last-Event-ID` resumes them all. Lists
/// join and leave while the stream is open (`POST /events/TOKEN`): joined ones are appended.
public final class MultiplexedStream: Sendable {
    private struct State {
        /// The stream's lists, in their order in the URL, then in the order they joined.
        var names: [String]
        /// Each list's version, by name.
        var versions: [String: Int]
    }

    private let state: Mutex<State>
    let sink: any EventSink

    /// Creates the state for `names` (in their order in the URL), at the given versions.
    package init(sink: any EventSink, names: [String], versions: [String: Int]) {
        self.sink = sink
        state = Mutex(State(names: names, versions: versions))
    }

    /// The stream's lists now.
    package var names: [String] { state.withLock { $0.names } }

    /// Adds `name` at `version` (the client's, or nil: it starts at the list's current version when it
    /// joins); false when the stream holds it already.
    package func join(_ name: String, at version: Int?) -> Bool {
        state.withLock { state in
            guard !state.names.contains(name) else { return false }
            state.names.append(name)
            state.versions[name] = version
            return true
        }
    }

    /// Removes `name`; false when the stream does not hold it.
    package func leave(_ name: String) -> Bool {
        state.withLock { state in
            guard let index = state.names.firstIndex(of: name) else { return false }
            state.names.remove(at: index)
            state.versions[name] = nil
            return true
        }
    }

    /// Records that `name` is now at `version`, with nothing to send: a list that joins live.
    func advance(_ name: String, to version: Int) {
        state.withLock { state in
            if state.names.contains(name) {
                state.versions[name] = version
            }
        }
    }

    /// Queues `encoded`, a changeset of `name`, under the vector that includes it (a list that left
    /// meanwhile is not in it). Recording the version and queuing the event are one step, under the
    /// stream's lock: another list's event, written from another thread, is queued either before this
    /// one with a vector that does not claim its version yet, or after it. Two steps would let a vector
    /// claim a change queued after it, and a client that resumed from that id would never get the change
    /// (docs/PROTOCOL.md, "Ids and resuming"). False when the sink is closed.
    @discardableResult
    func send(_ encoded: EncodedChangeset, of name: String) -> Bool {
        state.withLock { state in
            let before = state.versions[name]
            if state.names.contains(name) {
                state.versions[name] = encoded.version
            }
            // The sink only queues (HTTPStream ends a stream on its event loop, never in here), so it
            // never calls back into this stream under its lock.
            let sent = sink.send(encoded.event(id: Self.vector(state.names, state.versions)))
            if !sent, state.names.contains(name) {
                // Refused (an overloaded server keeps the stream open): the vector stays as sent.
                state.versions[name] = before
            }
            return sent
        }
    }

    /// The version vector of `names` at `versions` (`A:3,B:7`; 0 for a name without one): a
    /// multiplexed stream's event id.
    package static func vector(_ names: [String], _ versions: [String: Int]) -> String {
        names.map { "\($0):\(versions[$0] ?? 0)" }.joined(separator: ",")
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
