import Synchronization

/// The count of JSON-driven lists against their limit, shared by every list's write path: a creation
/// takes a place before it writes anything and gives it back if it fails, so the limit holds under any
/// interleaving of creates and deletes.
final class ListQuota: Sendable {
    let limit: Int
    private let count: Atomic<Int>

    init(limit: Int, count: Int) {
        self.limit = limit
        self.count = Atomic(count)
    }

    /// Takes a place; false when the limit is reached.
    func take() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = count.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives a place back (a list was deleted, or its creation failed).
    func giveBack() {
        count.subtract(1, ordering: .acquiringAndReleasing)
    }
}
