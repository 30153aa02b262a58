/// The sessions whose script has connected: bounded in number, expired when idle, and kept alive by
/// an open stream. At the cap, the least recently seen session without a stream is evicted.
final class SessionTable: @unchecked Sendable {
    struct Session {
        var lastSeen: ContinuousClock.Instant
        var openStreams = 0
        var lists: Set<String> = []
    }

    private let lock = Lock()
    private var sessions: [String: Session] = [:]
    let capacity: Int
    let idleTimeout: Duration
    private(set) var evictions = 0

    init(capacity: Int, idleTimeout: Duration) {
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
    }

    /// The number of sessions held.
    var count: Int {
        lock.withLock { sessions.count }
    }

    /// Records that a session's script opened a stream on `lists` (creating the session).
    /// Returns false when the table is full of sessions that all have open streams.
    func streamOpened(_ id: String, lists: [String], now: ContinuousClock.Instant = .now) -> Bool {
        lock.withLock {
            if sessions[id] == nil {
                expire(now: now)
                if sessions.count >= capacity {
                    let idle = sessions.filter { $0.value.openStreams == 0 }
                    guard let oldest = idle.min(by: { $0.value.lastSeen < $1.value.lastSeen }) else {
                        return false
                    }
                    sessions.removeValue(forKey: oldest.key)
                    evictions += 1
                }
                sessions[id] = Session(lastSeen: now)
            }
            sessions[id]?.openStreams += 1
            sessions[id]?.lastSeen = now
            sessions[id]?.lists.formUnion(lists)
            return true
        }
    }

    /// Records that one of a session's streams ended.
    func streamClosed(_ id: String, now: ContinuousClock.Instant = .now) {
        lock.withLock {
            guard var session = sessions[id] else { return }
            session.openStreams = max(0, session.openStreams - 1)
            session.lastSeen = now
            sessions[id] = session
        }
    }

    /// Marks a session as active (an action).
    func touch(_ id: String, now: ContinuousClock.Instant = .now) {
        lock.withLock { sessions[id]?.lastSeen = now }
    }

    /// Whether the table holds `id`.
    func contains(_ id: String) -> Bool {
        lock.withLock { sessions[id] != nil }
    }

    /// Drops sessions idle past the timeout that have no open stream.
    func expire(now: ContinuousClock.Instant = .now) {
        let limit = now - idleTimeout
        sessions = sessions.filter { $0.value.openStreams > 0 || $0.value.lastSeen > limit }
    }

    /// A rough size of the table in bytes (reported in `/metrics`).
    var approximateBytes: Int {
        lock.withLock {
            sessions.reduce(0) { total, entry in
                total + 32 + 64 + entry.value.lists.reduce(0) { $0 + 16 + $1.utf8.count }
            }
        }
    }
}
