import Synchronization

/// How busy a node's pool of database connections is: the connections that store calls hold, and the
/// calls waiting for one, with how long each has waited. PostgresClient tells neither, so the store
/// counts around each lease (``PostgresListStore/withConnection(_:)``). `health` reports it, and the
/// store logs (at most once a minute) when a call waited longer than ``slowWait``.
final class PoolGauge: Sendable {
    /// A wait for a connection longer than this is reported: the pool is too small for the load, or
    /// the database (or a pooler in front of it) holds the connections back.
    static let slowWait: Duration = .seconds(1)

    /// The pool's size.
    let capacity: Int

    private struct State {
        /// The tickets of the calls that hold a connection.
        var held: Set<Int> = []
        /// When each waiting call started to wait, by ticket.
        var waiting: [Int: ContinuousClock.Instant] = [:]
        /// The calls whose callers gave up before they got a connection: they must not use one.
        var abandoned: Set<Int> = []
        var nextTicket = 0
        var lastReport: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// A call starts to wait for a connection: its ticket.
    func enter() -> Int {
        state.withLock { state in
            state.nextTicket += 1
            state.waiting[state.nextTicket] = .now
            return state.nextTicket
        }
    }

    /// The call of `ticket` got its connection: how long it waited, whether that wait is the first
    /// slow one of the last minute (to be logged), and whether its caller gave up meanwhile (then it
    /// must send nothing: its caller answered that nothing was sent).
    func leased(_ ticket: Int) -> (waited: Duration, report: Bool, abandoned: Bool) {
        state.withLock { state in
            if state.abandoned.remove(ticket) != nil {
                return (.zero, false, true)
            }
            let started = state.waiting.removeValue(forKey: ticket) ?? .now
            state.held.insert(ticket)
            let waited = ContinuousClock.now - started
            return (waited, Self.reports(waited, &state), false)
        }
    }

    /// The caller of `ticket` gives up: true when the call still waits for a connection, which it
    /// will then never use (``leased(_:)``), so that nothing of it reaches the database; false when
    /// it already holds one (or is over).
    func abandon(_ ticket: Int) -> Bool {
        state.withLock { state in
            guard state.waiting.removeValue(forKey: ticket) != nil else { return false }
            state.abandoned.insert(ticket)
            return true
        }
    }

    /// The call of `ticket` is over, with its connection or without one (it failed or gave up
    /// waiting): how long it waited without one, and whether that slow wait is the first of the last
    /// minute.
    func leave(_ ticket: Int) -> (waited: Duration, report: Bool) {
        state.withLock { state in
            if state.held.remove(ticket) != nil || state.abandoned.remove(ticket) != nil {
                return (.zero, false)
            }
            guard let started = state.waiting.removeValue(forKey: ticket) else { return (.zero, false) }
            let waited = ContinuousClock.now - started
            return (waited, Self.reports(waited, &state))
        }
    }

    private static func reports(_ waited: Duration, _ state: inout State) -> Bool {
        guard waited > slowWait else { return false }
        let now = ContinuousClock.now
        guard state.lastReport.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
        state.lastReport = now
        return true
    }

    /// The pool now: connections held, and calls that have waited longer than ``slowWait``.
    struct Reading: Sendable, Equatable {
        var busy: Int
        var capacity: Int
        var waiting: Int
        var waitingLong: Int

        /// `pool 16/16 busy, 12 waiting for over 1 s` (the waiting only when some wait that long).
        var description: String {
            "pool \(busy)/\(capacity) busy" + (waitingLong > 0 ? ", \(waitingLong) waiting for over \(PoolGauge.slowWait.components.seconds) s" : "")
        }
    }

    var reading: Reading {
        let now = ContinuousClock.now
        return state.withLock { state in
            Reading(
                busy: state.held.count, capacity: capacity, waiting: state.waiting.count,
                waitingLong: state.waiting.values.count { now - $0 > Self.slowWait })
        }
    }
}

/// One store call's claim on a connection, which its caller can give up while the call still waits
/// for one: then nothing of it reaches the database, and a write can be answered as not done rather
/// than as of unknown outcome.
final class ConnectionClaim: Sendable {
    private enum State {
        case notStarted
        case waiting(Int)
        case given
        case abandoned
    }

    private let state = Mutex(State.notStarted)

    /// The call starts to wait: its ticket, or nil when its caller gave up already.
    func start(_ gauge: PoolGauge) -> Int? {
        state.withLock { state in
            guard case .notStarted = state else { return nil }
            let ticket = gauge.enter()
            state = .waiting(ticket)
            return ticket
        }
    }

    /// The caller gives up: true when the call had no connection yet, and will never use one.
    func abandon(_ gauge: PoolGauge) -> Bool {
        state.withLock { state in
            switch state {
            case .notStarted, .abandoned:
                state = .abandoned
                return true
            case let .waiting(ticket):
                guard gauge.abandon(ticket) else {
                    state = .given
                    return false
                }
                state = .abandoned
                return true
            case .given:
                return false
            }
        }
    }
}
