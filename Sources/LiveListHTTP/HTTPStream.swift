import Synchronization

/// Why a stream ended.
public enum HTTPStreamCloseReason: Sendable, Hashable {
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
        var scheduled = false
        var closeReason: HTTPStreamCloseReason?
        var finished = false
        var drainWaiters: [@Sendable () -> Void] = []
        var closeHandlers: [@Sendable (HTTPStreamCloseReason) -> Void] = []
        /// What this stream has counted in the server's stream output budget.
        var accounted = 0

        /// Brings the stream's share of the server's budget up to what it holds now.
        mutating func settle(_ budget: ByteBudget) {
            let held = finished ? 0 : pendingBytes + socketQueued
            budget.add(held - accounted)
            accounted = held
        }
    }

    private let lock = Lock()
    private var state = State()
    let chunked: Bool
    let backlogLimit: Int
    private let budget: ByteBudget
    private let connection: Connection

    init(connection: Connection, chunked: Bool, backlogLimit: Int, budget: ByteBudget) {
        self.connection = connection
        self.chunked = chunked
        self.backlogLimit = backlogLimit
        self.budget = budget
    }

    /// Queues bytes (for SSE: one whole event). Returns false when the stream is closed (nothing is
    /// queued then), or when more than the backlog limit was still queued: the reader is too slow,
    /// this write is dropped and the stream ends after what is queued. A write of any size to a
    /// stream with less than the limit queued is accepted whole.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return !isClosed }
        let (accepted, schedule, overflow) = lock.withLock { () -> (Bool, Bool, Bool) in
            guard state.closeReason == nil else { return (false, false, false) }
            let held = state.pendingBytes + state.socketQueued
            if held > backlogLimit || (held > 0 && budget.wouldExceed(adding: bytes.count)) {
                // A slow reader past its own limit, or while all streams together hold the server's
                // budget: cut between events, never inside one.
                state.closeReason = .backlogExceeded
                return (false, false, true)
            }
            if chunked {
                let header = ResponseEncoder.chunkHeader(bytes.count)
                state.pending.append(header)
                state.pending.append(bytes)
                state.pending.append(ResponseEncoder.crlf)
                state.pendingBytes += header.count + bytes.count + 2
            } else {
                state.pending.append(bytes)
                state.pendingBytes += bytes.count
            }
            state.settle(budget)
            let schedule = !state.scheduled
            state.scheduled = true
            return (true, schedule, false)
        }
        if overflow {
            connection.loop.execute { [connection] in connection.endStream(.backlogExceeded) }
        } else if schedule {
            connection.loop.execute { [connection] in connection.flushStream() }
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
    public var queuedBytes: Int { lock.withLock { state.pendingBytes + state.socketQueued } }

    /// Whether the stream has ended or is ending (writes are refused).
    public var isClosed: Bool { lock.withLock { state.closeReason != nil } }

    /// Calls `body` once, on the event loop, when nothing is queued any more (right away if
    /// nothing is queued now). Not called if the stream ends first.
    public func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = lock.withLock { () -> Bool in
            if state.finished || state.closeReason != nil { return false }
            if state.pendingBytes == 0 && state.socketQueued == 0 { return true }
            state.drainWaiters.append(body)
            return false
        }
        if now { body() }
    }

    /// Calls `body` once when the stream ends, with the reason (right away if it has ended).
    public func onClose(_ body: @escaping @Sendable (HTTPStreamCloseReason) -> Void) {
        let reason = lock.withLock { () -> HTTPStreamCloseReason? in
            if state.finished { return state.closeReason ?? .closed }
            state.closeHandlers.append(body)
            return nil
        }
        if let reason { body(reason) }
    }

    /// Ends the stream after what is queued has been sent. On HTTP/1.1 the connection can
    /// then serve further requests.
    public func close() {
        let first = lock.withLock { () -> Bool in
            guard state.closeReason == nil else { return false }
            state.closeReason = .closed
            return true
        }
        if first { connection.loop.execute { [connection] in connection.endStream(.closed) } }
    }

    // MARK: - Event loop side

    /// Takes the buffers written since the last call.
    func takePending() -> [[UInt8]] {
        lock.withLock {
            state.scheduled = false
            let buffers = state.pending
            state.pending = []
            state.pendingBytes = 0
            return buffers
        }
    }

    /// Records how much the connection holds; runs drain waiters when it reaches zero.
    func socketQueueChanged(_ bytes: Int) {
        let waiters = lock.withLock { () -> [@Sendable () -> Void] in
            state.socketQueued = bytes
            state.settle(budget)
            guard bytes == 0, state.pendingBytes == 0, !state.drainWaiters.isEmpty, state.closeReason == nil else { return [] }
            let waiters = state.drainWaiters
            state.drainWaiters = []
            return waiters
        }
        for waiter in waiters { waiter() }
    }

    /// Marks the stream ended (refusing writes) and returns the reason to report.
    func markEnding(_ reason: HTTPStreamCloseReason) -> HTTPStreamCloseReason {
        lock.withLock {
            if state.closeReason == nil { state.closeReason = reason }
            return state.closeReason ?? reason
        }
    }

    /// Runs the close handlers once.
    func finish(_ reason: HTTPStreamCloseReason) {
        let handlers = lock.withLock { () -> [@Sendable (HTTPStreamCloseReason) -> Void] in
            guard !state.finished else { return [] }
            state.finished = true
            state.settle(budget)
            if state.closeReason == nil { state.closeReason = reason }
            state.drainWaiters = []
            let handlers = state.closeHandlers
            state.closeHandlers = []
            return handlers
        }
        for handler in handlers { handler(reason) }
    }
}
