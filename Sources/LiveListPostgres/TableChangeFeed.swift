import LiveListEngine
import Synchronization

/// The streams of ``PostgresListStore/tableChanges()``, and the one owner of their state: each stream
/// has its own queue of changes, in the order the listener heard them, bounded: past
/// ``maximumPending`` changes that its reader has not taken, they are dropped for one
/// ``TableChange/everything`` (every live query runs again), as is everything pending once the listener
/// reconnects. A `.everything` still pending covers whatever comes after it, which is not queued.
/// A flood of notifications, whoever sends them, so holds bounded memory for every stream.
final class TableChangeFeed: Sendable {
    /// The most changes one stream holds for its reader.
    static let maximumPending = 1_024

    private struct Subscriber {
        var pending: [TableChange] = []
        var head = 0
        /// Whether `pending` holds a `.everything` not yet taken.
        var covered = false
        var waiter: CheckedContinuation<TableChange?, Never>?

        var isEmpty: Bool { head >= pending.count }

        mutating func take() -> TableChange? {
            guard head < pending.count else { return nil }
            let change = pending[head]
            head += 1
            if head == pending.count {
                pending.removeAll(keepingCapacity: true)
                head = 0
            }
            if change == .everything { covered = false }
            return change
        }

        /// Queues `change` (or drops it, when a pending `.everything` covers it): a reader that waits
        /// gets it at once, returned with its continuation.
        mutating func post(_ change: TableChange) -> (CheckedContinuation<TableChange?, Never>, TableChange)? {
            if change == .everything {
                pending = [.everything]
                head = 0
                covered = true
            } else if covered {
                return nil
            } else if pending.count - head >= TableChangeFeed.maximumPending {
                pending = [.everything]
                head = 0
                covered = true
            } else {
                pending.append(change)
            }
            guard let waiter else { return nil }
            self.waiter = nil
            return take().map { (waiter, $0) }
        }
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        var finished = false
    }

    private let state = Mutex(State())

    /// A new stream: the changes posted from now on, until ``finish()`` or until its reader's task is
    /// cancelled or it is dropped.
    func subscribe() -> AsyncStream<TableChange> {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            if !state.finished { state.subscribers[state.nextID] = Subscriber() }
            return state.nextID
        }
        let subscription = Subscription(feed: self, id: id)
        return AsyncStream(unfolding: { await subscription.next() }, onCancel: { subscription.end() })
    }

    /// Hands `change` to every stream, in the order of the calls.
    func post(_ change: TableChange) {
        let woken = state.withLock { state -> [(CheckedContinuation<TableChange?, Never>, TableChange)] in
            var woken: [(CheckedContinuation<TableChange?, Never>, TableChange)] = []
            // The keys copied out first, so that each subscriber's queue changes in place.
            for id in Array(state.subscribers.keys) {
                if let wake = state.subscribers[id]?.post(change) { woken.append(wake) }
            }
            return woken
        }
        for (waiter, change) in woken { waiter.resume(returning: change) }
    }

    /// Ends every stream (the store closed): what they still held is not read.
    func finish() {
        let waiters = state.withLock { state -> [CheckedContinuation<TableChange?, Never>] in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return state.subscribers.values.compactMap(\.waiter)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// How many streams are open (for tests).
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The next change of the stream `id`, waiting for one; nil once it ended.
    fileprivate func next(_ id: Int) async -> TableChange? {
        await withCheckedContinuation { continuation in
            enum Step {
                case answer(TableChange?)
                case wait(previous: CheckedContinuation<TableChange?, Never>?)
            }
            let step = state.withLock { state -> Step in
                // In place: the subscriber's queue is never copied.
                guard state.subscribers[id] != nil else { return .answer(nil) }
                if let change = state.subscribers[id]?.take() { return .answer(change) }
                // One reader a stream: a second one waiting ends the first's wait.
                let previous = state.subscribers[id]?.waiter
                state.subscribers[id]?.waiter = continuation
                return .wait(previous: previous)
            }
            switch step {
            case let .answer(change): continuation.resume(returning: change)
            case let .wait(previous): previous?.resume(returning: nil)
            }
        }
    }

    /// Forgets the stream `id`, ending its reader's wait.
    fileprivate func remove(_ id: Int) {
        let waiter = state.withLock { $0.subscribers.removeValue(forKey: id)?.waiter }
        waiter?.resume(returning: nil)
    }
}

/// One stream's registration: removed when its reader's task is cancelled, or when the stream is
/// dropped (its closures, which hold this, are released).
private final class Subscription: Sendable {
    let feed: TableChangeFeed
    let id: Int

    init(feed: TableChangeFeed, id: Int) {
        self.feed = feed
        self.id = id
    }

    func next() async -> TableChange? {
        await feed.next(id)
    }

    func end() {
        feed.remove(id)
    }

    deinit {
        feed.remove(id)
    }
}
