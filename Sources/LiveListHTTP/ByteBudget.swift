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
        if delta != 0 { bytes.add(delta, ordering: .relaxed) }
    }

    /// Whether `count` more bytes would pass the limit.
    func wouldExceed(adding count: Int) -> Bool {
        held + count > limit
    }
}
