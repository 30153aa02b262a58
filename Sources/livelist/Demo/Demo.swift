import Foundation
import LiveListHTML
import LiveListServer
import Logging

/// A running demo list: its timer task, if any.
struct Demo: Sendable {
    let task: Task<Void, Never>?

    func stop() {
        task?.cancel()
    }

    /// The store lease under which the demo timers tick: with several nodes on one database, one node
    /// at a time moves the demo lists (their states are stored, so every node shows the same moves).
    static let timerLease = "livelist.demo-timers"

    /// Registers the demo lists (todo, emoji shuffle, sections) and starts their timers.
    static func startAll(on app: LiveListApp, interval: Duration, logger: Logger) async throws -> [Demo] {
        [
            try await TodoDemo.start(on: app, logger: logger),
            try await EmojiDemo.start(on: app, interval: interval),
            try await SectionsDemo.start(on: app, interval: interval * 2),
        ]
    }
}

/// Runs `step` every `interval` until cancelled, on the node that holds the demo timers' lease.
func repeating(every interval: Duration, on app: LiveListApp, _ step: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
    let registry = app.registry
    return Task {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { break }
            guard registry.holdsLease(Demo.timerLease) else { continue }
            await step()
        }
    }
}
