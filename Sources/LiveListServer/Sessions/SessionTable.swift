import Synchronization
/// The sessions whose script has connected: bounded in number, expired when idle, and kept alive by
/// an open stream.
///
/// - A session enters the table when a stream opens with it, and stays while it has an open stream.
/// - A session without an open stream is *idle*; it expires `idleTimeout` after it was last seen (its
///   last stream closed, or its last action). Expired sessions are dropped lazily, when a new session
///   enters, or by ``expire(now:)``.
/// - The table holds at most `capacity` sessions. A new session at the cap evicts the least recently
///   seen idle session; when every session has an open stream, the new one is refused.
///
/// Every operation is O(1) (amortized: each expired session is dropped once). Idle sessions are kept in
/// a doubly linked list ordered by when they were last seen, the most recent at the head; the links are
/// indices into an array of slots, which freed slots are reused from. The order assumes that the `now`
/// given to successive calls never goes back (the default, `ContinuousClock.now`, does not).
package final class SessionTable: Sendable {
    /// The most list names remembered per session, so one session cannot grow without bound.
    package static let maximumListsPerSession = 64

    private let table: Mutex<Table>

    /// A table of at most `capacity` sessions (at least one), idle ones expiring after `idleTimeout`.
    package init(capacity: Int, idleTimeout: Duration) {
        table = Mutex(Table(capacity: max(1, capacity), idleTimeout: idleTimeout))
    }

    /// The number of sessions held.
    package var count: Int {
        table.withLock { $0.index.count }
    }

    /// The number of idle sessions evicted at the cap so far.
    package var evictions: Int {
        table.withLock { $0.evictionCount }
    }

    /// Records that a session's script opened a stream on `lists` (creating the session).
    /// Returns false when the table is full of sessions that all have open streams.
    package func streamOpened(_ id: String, lists: [String], now: ContinuousClock.Instant = .now) -> Bool {
        table.withLock { $0.streamOpened(id, lists: lists, now: now) }
    }

    /// Records that one of a session's streams ended.
    package func streamClosed(_ id: String, now: ContinuousClock.Instant = .now) {
        table.withLock { $0.streamClosed(id, now: now) }
    }

    /// Marks a session as active (an action).
    package func touch(_ id: String, now: ContinuousClock.Instant = .now) {
        table.withLock { $0.touch(id, now: now) }
    }

    /// Whether the table holds `id`.
    package func contains(_ id: String) -> Bool {
        table.withLock { $0.index[id] != nil }
    }

    /// Drops sessions idle past the timeout that have no open stream.
    package func expire(now: ContinuousClock.Instant = .now) {
        table.withLock { $0.dropExpired(now: now) }
    }

    /// A rough size of the table in bytes (reported in `/metrics`).
    package var approximateBytes: Int {
        table.withLock { $0.index.count * (32 + 64 + MemoryLayout<Table.Slot>.stride) + $0.listBytes }
    }
}

/// The sessions themselves, behind the table's lock.
private struct Table {
    struct Slot {
        var id: String
        var lastSeen: ContinuousClock.Instant
        var openStreams: Int
        var lists: Set<String>
        /// Links of the idle list (`nil` at its ends, and while the session has a stream).
        var newer: Int?
        var older: Int?
    }

    let capacity: Int
    let idleTimeout: Duration
    var index: [String: Int] = [:]
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    /// The idle list's ends: the most and the least recently seen idle sessions.
    private var newestIdle: Int?
    private var oldestIdle: Int?
    /// The bytes of the list names held, for ``SessionTable/approximateBytes``.
    private(set) var listBytes = 0
    private(set) var evictionCount = 0

    init(capacity: Int, idleTimeout: Duration) {
        self.capacity = capacity
        self.idleTimeout = idleTimeout
    }

    mutating func streamOpened(_ id: String, lists: [String], now: ContinuousClock.Instant) -> Bool {
        let slot: Int
        if let existing = index[id] {
            slot = existing
            if slots[slot].openStreams == 0 {
                unlinkIdle(slot)
            }
        } else {
            dropExpired(now: now)
            if index.count >= capacity {
                guard let oldest = oldestIdle else {
                    return false
                }
                remove(oldest)
                evictionCount += 1
            }
            slot = allocate(Slot(id: id, lastSeen: now, openStreams: 0, lists: []))
            index[id] = slot
        }
        slots[slot].openStreams += 1
        slots[slot].lastSeen = now
        for name in lists where slots[slot].lists.count < SessionTable.maximumListsPerSession {
            if slots[slot].lists.insert(name).inserted {
                listBytes += name.utf8.count
            }
        }
        return true
    }

    mutating func streamClosed(_ id: String, now: ContinuousClock.Instant) {
        guard let slot = index[id], slots[slot].openStreams > 0 else { return }
        slots[slot].openStreams -= 1
        slots[slot].lastSeen = now
        if slots[slot].openStreams == 0 {
            linkNewestIdle(slot)
        }
    }

    mutating func touch(_ id: String, now: ContinuousClock.Instant) {
        guard let slot = index[id] else { return }
        slots[slot].lastSeen = now
        if slots[slot].openStreams == 0 {
            unlinkIdle(slot)
            linkNewestIdle(slot)
        }
    }

    // MARK: - The idle list

    /// Drops idle sessions from the least recently seen end while they are past the timeout.
    mutating func dropExpired(now: ContinuousClock.Instant) {
        let limit = now - idleTimeout
        while let oldest = oldestIdle, slots[oldest].lastSeen <= limit {
            remove(oldest)
        }
    }

    private mutating func allocate(_ slot: Slot) -> Int {
        if let free = freeSlots.popLast() {
            slots[free] = slot
            return free
        }
        slots.append(slot)
        return slots.count - 1
    }

    /// Removes an idle session from the table, freeing its slot.
    private mutating func remove(_ slot: Int) {
        unlinkIdle(slot)
        index.removeValue(forKey: slots[slot].id)
        listBytes -= slots[slot].lists.reduce(0) { $0 + $1.utf8.count }
        slots[slot].id = ""
        slots[slot].lists = []
        freeSlots.append(slot)
    }

    private mutating func linkNewestIdle(_ slot: Int) {
        slots[slot].older = newestIdle
        slots[slot].newer = nil
        if let newest = newestIdle {
            slots[newest].newer = slot
        } else {
            oldestIdle = slot
        }
        newestIdle = slot
    }

    private mutating func unlinkIdle(_ slot: Int) {
        let (newer, older) = (slots[slot].newer, slots[slot].older)
        if let newer {
            slots[newer].older = older
        } else if newestIdle == slot {
            newestIdle = older
        }
        if let older {
            slots[older].newer = newer
        } else if oldestIdle == slot {
            oldestIdle = newer
        }
        slots[slot].newer = nil
        slots[slot].older = nil
    }
}
