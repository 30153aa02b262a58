import Synchronization

/// Why a stream ended.
public enum HTTPStreamCloseReason: Sendable, Hashable, CaseIterable {
    /// `close()` was called.
    case closed
    /// The peer closed the connection or reset it.
    case peerGone
    /// The reader was slow: more than the server's `streamBacklogLimit` was still queued when an
    /// event was written. The stream ended after the events already queued.
    case backlogExceeded
    /// Queued output made no progress within the write timeout.
    case writeTimeout
    /// The server is shutting down.
    case serverShutdown
    /// Sending failed on the server's side: an error other than the peer's reset or broken pipe
    /// (such as `ENOBUFS` or `ENOMEM` when the kernel is short of memory), or a TLS error.
    case writeFailed

    /// The reason's name in metrics (`livelist_streams_closed_total{reason="…"}`): `closed`,
    /// `peer_gone`, `backlog_exceeded`, `write_timeout`, `server_shutdown` or `write_failed`.
    public var name: String {
        switch self {
        case .closed: "closed"
        case .peerGone: "peer_gone"
        case .backlogExceeded: "backlog_exceeded"
        case .writeTimeout: "write_timeout"
        case .serverShutdown: "server_shutdown"
        case .writeFailed: "write_failed"
        }
    }

    /// Whether the server cut the stream for want of progress or resources (neither the reader
    /// leaving, nor the stream's owner closing it, nor an orderly shutdown): such an end is logged.
    var isServerFault: Bool {
        switch self {
        case .backlogExceeded, .writeTimeout, .writeFailed: true
        case .closed, .peerGone, .serverShutdown: false
        }
    }
}

/// Bytes that many streams queue at once, such as an event that every viewer of a list gets: each
/// stream queues them by reference (never a copy), and the server's stream output budget counts
/// them once, from the first stream that queues them until the last one has sent them.
public final class SharedBytes: Sendable {
    /// The bytes.
    public let bytes: [UInt8]
    /// Streams that hold them queued.
    private let holders = Atomic<Int>(0)

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether some stream holds them queued now (they are counted in a budget already).
    var isHeld: Bool { holders.load(ordering: .relaxed) > 0 }

    /// One more stream queues them; the first counts them in `budget`.
    func retain(_ budget: ByteBudget) {
        if holders.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue == 0 {
            budget.add(bytes.count)
        }
    }

    /// A stream sent them (or ended); the last gives them back to `budget`.
    func release(_ budget: ByteBudget) {
        if holders.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            budget.add(-bytes.count)
        }
    }
}

/// The shared buffers one stream holds queued, oldest first, each with where it ends in the stream's
/// output. The first is kept inline and the others (a slow reader with several events queued) in an
/// array, so that a stream that keeps up allocates nothing per event.
struct HeldShared {
    private var first: (end: Int, bytes: SharedBytes)?
    private var rest: [(end: Int, bytes: SharedBytes)] = []
    private var restStart = 0
    /// The bytes held.
    private(set) var bytes = 0

    mutating func append(_ shared: SharedBytes, end: Int) {
        if first == nil {
            first = (end, shared)
        } else {
            rest.append((end, shared))
        }
        bytes += shared.bytes.count
    }

    /// Gives back to `budget` the buffers that end at or before `sent`.
    mutating func release(sent: Int, to budget: ByteBudget) {
        while let held = first, held.end <= sent {
            held.bytes.release(budget)
            bytes -= held.bytes.bytes.count
            if restStart < rest.count {
                first = rest[restStart]
                restStart += 1
                if restStart == rest.count {
                    rest.removeAll(keepingCapacity: false)
                    restStart = 0
                }
            } else {
                first = nil
            }
        }
    }
}

/// The writing end of a streamed response body, such as a Server-Sent Events stream.
///
/// Every method may be called from any thread. Writes are queued and sent by the connection's
/// event loop; `queuedBytes` tells how much is waiting, so a producer can coalesce instead of
/// queueing for a slow reader. Callbacks run on the event loop and must return quickly.
public final class HTTPStream: @unchecked Sendable {
    private struct State {
        /// Queued buffers: each write's bytes as given (shared with every other stream they were
        /// written to, never copied), with chunk framing around them as buffers of their own.
        var pending: [[UInt8]] = []
        var pendingBytes = 0
        var socketQueued = 0
        /// The first close handler (a stream's owner registers one): no array for one.
        var closeHandler: (@Sendable (HTTPStreamCloseReason) -> Void)?
        /// Drain waiters and further close handlers, rare, in one array (one word while empty).
        var waiting: [Waiter] = []
        /// What this stream has counted in the server's stream output budget: the bytes that it
        /// alone holds (shared ones are counted by their ``SharedBytes``).
        var accounted = 0
        /// Bytes queued so far, over the stream's life (those handed to the connection are the ones no
        /// longer pending).
        var queued = 0
        /// The shared buffers queued and not yet sent.
        var shared = HeldShared()
        // The 1-byte fields last, together (no padding between words).
        /// Whether writes are framed as chunks (HTTP/1.1); here rather than beside the lock, where it
        /// would cost a stream a word of padding.
        let chunked: Bool
        var scheduled = false
        var closeReason: HTTPStreamCloseReason?
        var finished = false
        /// Set when a write was refused for the server's budget (the stream stays open), until one is
        /// accepted: its drain waiters wait for room in the budget too.
        var refused = false

        init(chunked: Bool) {
            self.chunked = chunked
        }

        /// What waits for the stream: to drain, or to end.
        enum Waiter {
            case drained(@Sendable () -> Void)
            case closed(@Sendable (HTTPStreamCloseReason) -> Void)
        }

        /// Takes the waiters that `select` picks out of `waiting`.
        mutating func take<Handler>(_ select: (Waiter) -> Handler?) -> [Handler] {
            var taken: [Handler] = []
            waiting.removeAll { waiter in
                guard let handler = select(waiter) else { return false }
                taken.append(handler)
                return true
            }
            return taken
        }

        /// Gives back the shared buffers that the peer has taken (all of them once finished), then
        /// brings the stream's own share of the server's budget up to what it holds now.
        mutating func settle(_ budget: ByteBudget) {
            shared.release(sent: finished ? Int.max : queued - pendingBytes - socketQueued, to: budget)
            let own = finished ? 0 : max(0, pendingBytes + socketQueued - shared.bytes)
            budget.add(own - accounted)
            accounted = own
        }

        /// Queues one write: `bytes`, then `shared` (held, and counted once in `budget`), as one
        /// chunk when `chunked`.
        mutating func queue(_ bytes: [UInt8], _ shared: SharedBytes?, budget: ByteBudget) {
            let total = bytes.count + (shared?.bytes.count ?? 0)
            // Nothing to send: no chunk either (an empty one would end the body).
            guard total > 0 else { return }
            if chunked { push(ResponseEncoder.chunkHeader(total)) }
            push(bytes)
            if let shared {
                push(shared.bytes)
                shared.retain(budget)
                self.shared.append(shared, end: queued)
            }
            if chunked { push(ResponseEncoder.crlf) }
        }

        private mutating func push(_ buffer: [UInt8]) {
            guard !buffer.isEmpty else { return }
            pending.append(buffer)
            pendingBytes += buffer.count
            queued += buffer.count
        }
    }

    private let state: Mutex<State>
    private let connection: Connection
    /// What the connection writes when nothing was written for the heartbeat interval.
    let heartbeatBytes: [UInt8]
    /// Whether writes are framed as chunks (HTTP/1.1).
    var chunked: Bool { state.withLock { $0.chunked } }

    /// The most a reader may leave queued (the server's `streamBacklogLimit`). Read through the
    /// connection, as the budget is, so that an idle stream keeps neither.
    var backlogLimit: Int { connection.loop.configuration.streamBacklogLimit }
    /// The server's stream output budget.
    private var budget: ByteBudget { connection.loop.server.streamOutput }

    init(connection: Connection, chunked: Bool, heartbeatBytes: [UInt8]) {
        self.connection = connection
        state = Mutex(State(chunked: chunked))
        self.heartbeatBytes = heartbeatBytes
    }

    /// Queues bytes (for SSE: one whole event). Returns false when nothing was queued: when the
    /// stream is closed; when more than the backlog limit was still queued (the reader is too slow:
    /// the stream ends after what is queued); or when the server's stream output budget has no room
    /// for the write (the node is overloaded: the stream stays open, and ``whenDrained(_:)`` tells
    /// when to write what it missed). ``isClosed`` tells the cases apart. A small write to a stream
    /// with nothing queued is always accepted.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return !isClosed }
        return write(bytes, shared: nil)
    }

    /// Queues `bytes` (this stream's own) followed by `shared` (queued by reference, and counted
    /// once in the server's stream output budget however many streams queue it), as one write:
    /// for SSE, the start of an event and its data shared with other streams
    /// (`ServerSentEvent.encodeStart` and `encodeEnd`). Refused as ``write(_:)`` is.
    @discardableResult
    public func write(_ bytes: [UInt8], shared: SharedBytes) -> Bool {
        write(bytes, shared: Optional(shared))
    }

    /// A write of at most this many bytes of a stream's own, on a stream that holds nothing queued,
    /// is taken even when the stream budget is spent (a heartbeat, a small event): bounded by the
    /// number of connections, it keeps idle readers alive while stalled ones hold the budget.
    static let smallWrite = 4 << 10

    private func write(_ bytes: [UInt8], shared: SharedBytes?) -> Bool {
        let (accepted, schedule, overflow) = state.withLock { state -> (Bool, Bool, Bool?) in
            guard state.closeReason == nil else { return (false, false, false) }
            // Read only for a stream still open: every stream ends before its server goes, and a
            // writer may hold an ended one longer.
            let budget = self.budget
            let held = state.pendingBytes + state.socketQueued
            // What this write adds to the budget: its own bytes, and shared ones that no stream
            // holds yet (the others are counted already).
            let sharedCount = shared?.bytes.count ?? 0
            let adding = bytes.count + 16 + (shared.map { $0.isHeld ? 0 : sharedCount } ?? 0)
            let small = held == 0 && adding <= Self.smallWrite
            if held > backlogLimit {
                // A slow reader past its own limit: cut between events, never inside one.
                state.closeReason = .backlogExceeded
                return (false, false, true)
            }
            if !small && budget.wouldExceed(adding: adding) {
                // The streams' budget has no room for this write, whether the stream's queue is empty
                // or not: the node is overloaded, not this reader. The write is dropped and the stream
                // stays open; its writer waits for it to drain and sends one catch-up then.
                state.refused = true
                return (false, false, nil)
            }
            state.refused = false
            state.queue(bytes, shared, budget: budget)
            state.settle(budget)
            let schedule = !state.scheduled
            state.scheduled = true
            return (true, schedule, false)
        }
        if overflow == true {
            connection.loop.execute { [connection] in connection.endStream(.backlogExceeded) }
        } else if overflow == nil {
            connection.loop.count { $0.streamWritesDeferred += 1 }
            connection.loop.server.notice("stream-writes-deferred", "writes to event streams are deferred: the stream output budget "
                + "(\(connection.loop.configuration.streamOutputBudget) bytes) is spent; each stream gets one catch-up when there is room "
                + "(counted in livelist_stream_writes_deferred_total)")
        } else if schedule {
            connection.loop.scheduleFlush(connection)
        }
        return accepted
    }

    /// Queues UTF-8 text.
    @discardableResult
    public func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// Queues one Server-Sent Event.
    @discardableResult
    public func send(_ event: ServerSentEvent) -> Bool { write(event.encoded) }

    /// Bytes written but not yet accepted by the peer's socket.
    public var queuedBytes: Int { state.withLock { state in state.pendingBytes + state.socketQueued } }

    /// Whether the stream has ended or is ending (writes are refused).
    public var isClosed: Bool { state.withLock { state in state.closeReason != nil } }

    /// Calls `body` once, on the event loop, when nothing is queued any more (right away if
    /// nothing is queued now), and, after a write refused for the server's budget, when the budget
    /// has room again. Not called if the stream ends first.
    public func whenDrained(_ body: @escaping @Sendable () -> Void) {
        enum When { case now, waiting, budget, never }
        let when = state.withLock { state -> When in
            if state.finished || state.closeReason != nil { return .never }
            if state.pendingBytes == 0 && state.socketQueued == 0 { return state.refused ? .budget : .now }
            state.waiting.append(.drained(body))
            return .waiting
        }
        switch when {
        case .now:
            body()
        case .budget:
            // Back on the loop, never under a stream's lock (the budget calls waiters from where its
            // bytes are given back), then as for a drain: the stream may have been written to since.
            budget.whenRoom { [self] in connection.loop.execute { [self] in self.whenDrained(body) } }
            state.withLock { $0.refused = false }
        case .waiting, .never:
            break
        }
    }

    /// Calls `body` once when the stream ends, with the reason (right away if it has ended).
    public func onClose(_ body: @escaping @Sendable (HTTPStreamCloseReason) -> Void) {
        let reason = state.withLock { state -> HTTPStreamCloseReason? in
            if state.finished { return state.closeReason ?? .closed }
            if state.closeHandler == nil {
                state.closeHandler = body
            } else {
                state.waiting.append(.closed(body))
            }
            return nil
        }
        if let reason { body(reason) }
    }

    /// Ends the stream after what is queued has been sent. On HTTP/1.1 the connection can
    /// then serve further requests.
    public func close() {
        let first = state.withLock { state -> Bool in
            guard state.closeReason == nil else { return false }
            state.closeReason = .closed
            return true
        }
        if first { connection.loop.execute { [connection] in connection.endStream(.closed) } }
    }

    // MARK: - Event loop side

    /// Takes the buffers written since the last call.
    func takePending() -> [[UInt8]] {
        state.withLock { state in
            state.scheduled = false
            let buffers = state.pending
            state.pending = []
            state.pendingBytes = 0
            return buffers
        }
    }

    /// Records how much the connection holds; runs drain waiters when it reaches zero.
    func socketQueueChanged(_ bytes: Int) {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.socketQueued = bytes
            state.settle(budget)
            guard bytes == 0, state.pendingBytes == 0, !state.waiting.isEmpty, state.closeReason == nil else { return [] }
            return state.take { waiter in
                if case let .drained(body) = waiter { body } else { nil }
            }
        }
        for waiter in waiters { waiter() }
    }

    /// Marks the stream ended (refusing writes) and returns the reason to report.
    func markEnding(_ reason: HTTPStreamCloseReason) -> HTTPStreamCloseReason {
        state.withLock { state in
            if state.closeReason == nil { state.closeReason = reason }
            return state.closeReason ?? reason
        }
    }

    /// Runs the close handlers once.
    func finish(_ reason: HTTPStreamCloseReason) {
        let handlers = state.withLock { state -> [@Sendable (HTTPStreamCloseReason) -> Void] in
            guard !state.finished else { return [] }
            state.finished = true
            state.settle(budget)
            if state.closeReason == nil { state.closeReason = reason }
            let more = state.take { waiter in
                if case let .closed(body) = waiter { body } else { nil }
            }
            // Drain waiters are not called once the stream ends.
            state.waiting = []
            let handlers = (state.closeHandler.map { [$0] } ?? []) + more
            state.closeHandler = nil
            return handlers
        }
        for handler in handlers { handler(reason) }
    }
}
