import LiveListEngine
import Synchronization

/// Other nodes' writes waiting for the engine: coalesced per list (only the highest version noticed
/// matters), and at most ``maximumPending`` lists: past that, what is pending is dropped for one
/// `.reconnected` (every list catches up, in one query for the versions). A flood of notices, however
/// many names it makes up, so holds bounded memory and costs bounded work.
final class NoticeQueue: Sendable {
    /// The most lists whose notices wait one by one.
    static let maximumPending = 256

    private struct Pending {
        var versions: [String: Int] = [:]
        var order: [String] = []
        var head = 0
        var reconnected = false
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?

        /// Forgets the lists waiting one by one (a catch-up of every list covers them).
        mutating func dropChanges() {
            versions.removeAll()
            order.removeAll()
            head = 0
        }
    }

    private let pending = Mutex(Pending())

    func post(_ notice: StoreNotice) {
        let waiter = pending.withLock { pending -> CheckedContinuation<Void, Never>? in
            switch notice {
            case .reconnected:
                pending.reconnected = true
            case let .changed(name, version):
                if pending.reconnected {
                    // Every list catches up anyway.
                    break
                } else if let known = pending.versions[name] {
                    pending.versions[name] = max(known, version)
                } else if pending.versions.count >= Self.maximumPending {
                    pending.reconnected = true
                    pending.dropChanges()
                } else {
                    pending.versions[name] = version
                    pending.order.append(name)
                }
            }
            defer { pending.waiter = nil }
            return pending.waiter
        }
        waiter?.resume()
    }

    /// How many lists' notices wait (for tests).
    var pendingCount: Int { pending.withLock { $0.versions.count } }

    func finish() {
        let waiter = pending.withLock { pending -> CheckedContinuation<Void, Never>? in
            pending.finished = true
            defer { pending.waiter = nil }
            return pending.waiter
        }
        waiter?.resume()
    }

    /// The next notice, waiting for one; nil once finished or cancelled.
    func next() async -> StoreNotice? {
        while true {
            if Task.isCancelled { return nil }
            enum Step {
                case notice(StoreNotice)
                case finished
                case wait
            }
            let step = pending.withLock { pending -> Step in
                if pending.finished { return .finished }
                if pending.reconnected {
                    // Every list catches up: what was pending is covered.
                    pending.reconnected = false
                    pending.dropChanges()
                    return .notice(.reconnected)
                }
                guard pending.head < pending.order.count else {
                    pending.order.removeAll()
                    pending.head = 0
                    return .wait
                }
                let name = pending.order[pending.head]
                pending.head += 1
                let version = pending.versions.removeValue(forKey: name) ?? 0
                return .notice(.changed(name: name, version: version))
            }
            switch step {
            case let .notice(notice): return notice
            case .finished: return nil
            case .wait:
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let resumeNow = pending.withLock { pending -> Bool in
                            if pending.finished || pending.reconnected || pending.head < pending.order.count { return true }
                            pending.waiter = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.finish()
                }
            }
        }
    }
}
