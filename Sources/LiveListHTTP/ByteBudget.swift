import Synchronization

/// Bytes that every connection of a server holds together, against a limit: the request bodies being
/// read (`requestBodyBudget`), or the output queued for event streams (`streamOutputBudget`).
final class ByteBudget: Sendable {
    let limit: Int
    private let bytes = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// The bytes held now.
    var held: Int { bytes.load(ordering: .relaxed) }

    /// Takes `count` bytes when they fit within the limit; false (taking nothing) when they do not.
    func reserve(_ count: Int) -> Bool {
        var current = bytes.load(ordering: .relaxed)
        while current + count <= limit {
            let (exchanged, original) = bytes.compareExchange(expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Counts bytes already held whether or not they fit (or, negative, gives bytes back).
    func add(_ delta: Int) {
        guard delta != 0 else { return }
        let now = bytes.add(delta, ordering: .relaxed).newValue
        if delta < 0, now <= limit / 2, hasWaiters.load(ordering: .relaxed) { runWaiters() }
    }

    /// What waits for room (``whenRoom(_:)``).
    private let waiters = Mutex<[@Sendable () -> Void]>([])
    private let hasWaiters = Atomic<Bool>(false)

    /// Calls `body` once the bytes held are at most half the limit (right away if they are now), on
    /// the thread that gives bytes back, maybe under a stream's lock: `body` must only hand work on.
    func whenRoom(_ body: @escaping @Sendable () -> Void) {
        waiters.withLock { waiters in
            waiters.append(body)
            hasWaiters.store(true, ordering: .relaxed)
        }
        if held <= limit / 2 { runWaiters() }
    }

    private func runWaiters() {
        let taken = waiters.withLock { waiters -> [@Sendable () -> Void] in
            hasWaiters.store(false, ordering: .relaxed)
            defer { waiters = [] }
            return waiters
        }
        for waiter in taken { waiter() }
    }

    /// Whether `count` more bytes would pass the limit.
    func wouldExceed(adding count: Int) -> Bool {
        held + count > limit
    }
}
