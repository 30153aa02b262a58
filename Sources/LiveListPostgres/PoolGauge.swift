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
        var busy = 0
        /// When each waiting call started to wait, by ticket.
        var waiting: [Int: ContinuousClock.Instant] = [:]
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

    /// The call of `ticket` got its connection: how long it waited, and whether that wait is the
    /// first slow one of the last minute (to be logged).
    func leased(_ ticket: Int) -> (waited: Duration, report: Bool) {
        state.withLock { state in
            let started = state.waiting.removeValue(forKey: ticket) ?? .now
            state.busy += 1
            let waited = ContinuousClock.now - started
            return (waited, Self.reports(waited, &state))
        }
    }

    /// The call of `ticket` is over, with its connection or without one (it failed or gave up
    /// waiting): whether it gave up after a slow wait that is the first of the last minute.
    func leave(_ ticket: Int) -> (waited: Duration, report: Bool) {
        state.withLock { state in
            guard let started = state.waiting.removeValue(forKey: ticket) else {
                state.busy -= 1
                return (.zero, false)
            }
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
                busy: state.busy, capacity: capacity, waiting: state.waiting.count,
                waitingLong: state.waiting.values.count { now - $0 > Self.slowWait })
        }
    }
}
