import Synchronization

/// A small mutual-exclusion lock for state shared across threads (event loops, tasks).
final class Lock: Sendable {
    private let mutex = Mutex<Void>(())

    init() {}

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try mutex.withLock { (_: inout Void) throws(E) -> T in try body() }
    }
}
