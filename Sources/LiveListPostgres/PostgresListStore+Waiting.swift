import Dispatch
import LiveListEngine
import PostgresNIO
import Synchronization

// The synchronous seam: each store call runs on the store's executor and is waited for within its
// deadline; the database's errors become StoreError kinds (docs/ARCHITECTURE.md, "Several nodes").
// And the asynchronous seam of live queries, with the same deadline and errors.

extension PostgresListStore {
    /// The lock timeout of a write: what leaves the database time to answer within `deadline`
    /// (a second less, or three quarters of a deadline of under four seconds).
    static func lockTimeoutMilliseconds(within deadline: Duration) -> Int {
        let milliseconds = Int(deadline.components.seconds) * 1000 + Int(deadline.components.attoseconds / 1_000_000_000_000_000)
        return max(1, milliseconds >= 4000 ? milliseconds - 1000 : milliseconds * 3 / 4)
    }

    /// Runs `body` on this store's executor and waits for it, at most ``Options/operationTimeout``.
    /// Fails at once as unavailable while the listener finds the database unreachable.
    ///
    /// A `write` whose answer does not come within the deadline, or whose connection is lost once it
    /// was sent, fails as ``StoreError/Kind/outcomeUnknown``: the database may still commit it, so it
    /// is never reported as unavailable, which promises that nothing changed. The database's own
    /// refusals (a lock timeout, a cancelled statement) roll the write back: those are unavailable.
    ///
    /// With a `claim` (a call that takes a pool connection, ``withConnection(claim:_:)``), a call that
    /// got no connection within the deadline never gets one: it sent nothing, so it fails as
    /// unavailable, a write too.
    func blocking<T: Sendable>(
        _ what: String, write: Bool = false, claim: ConnectionClaim? = nil, _ body: @escaping @Sendable () async throws -> T
    ) throws(StoreError) -> T {
        let (reachable, newer) = state.withLock { ($0.reachable, $0.newerSchema) }
        if let newer {
            throw StoreError(.unavailable, "\(what): the database \(url) holds schema \(newer), newer than this release's \(Self.schemaVersion)")
        }
        guard reachable else {
            throw StoreError(.unavailable, "\(what): the database \(url) is unreachable")
        }
        let outcome = Outcome<T>()
        Task(executorPreference: executor) {
            do {
                outcome.finish(.success(try await body()))
            } catch {
                outcome.finish(.failure(error))
            }
        }
        let timeout = options.operationTimeout.components
        let nanoseconds = Int(timeout.seconds) * 1_000_000_000 + Int(timeout.attoseconds / 1_000_000_000)
        guard let result = outcome.wait(until: .now() + .nanoseconds(nanoseconds)) else {
            if let claim, claim.abandon(gauge) {
                throw StoreError(.unavailable, """
                    \(what): no connection of the pool to the database \(url) was free within \(options.operationTimeout) \
                    (\(gauge.reading.description)); nothing was sent
                    """)
            }
            if write {
                throw StoreError(.outcomeUnknown, "\(what): the database \(url) did not answer within \(options.operationTimeout); the write may be kept")
            }
            throw StoreError(.unavailable, "\(what): the database \(url) did not answer within \(options.operationTimeout)")
        }
        switch result.mapError(Self.unwrapped) {
        case let .success(value):
            return value
        case let .failure(error as StoreError):
            throw error
        case let .failure(Refusal.stale(version)):
            throw StoreError(.stale(version: version), "\(what): another node wrote version \(version) first")
        case .failure(Refusal.keyUsed):
            throw StoreError(.idempotencyKeyUsed, "\(what): another write kept its idempotency key first")
        case let .failure(Refusal.limit(limit)):
            throw StoreError(.limitReached(limit: limit), "\(what): the database holds its limit of \(limit) JSON lists")
        case let .failure(error) where (error as? PSQLError)?.serverInfo?[.sqlState] == Self.readOnlyState:
            // The server takes no writes: a standby, or a primary that was demoted. Nothing was written.
            if url.targetSession == .readWrite {
                chooseAgain()
            }
            throw StoreError(.unavailable, "\(what): \(explain(error))")
        case let .failure(error):
            if write, Self.mayHaveBeenSent(error) {
                throw StoreError(.outcomeUnknown, "\(what): \(explain(error)); the write may be kept")
            }
            throw StoreError(Self.isConnectionFailure(error) || Self.isRolledBackTimeout(error) ? .unavailable : .failed, "\(what): \(explain(error))")
        }
    }

    /// The asynchronous seam of live queries: `body` on a connection of the pool, on this store's
    /// executor, with ``blocking(_:write:claim:_:)``'s refusals (at once while the database is
    /// unreachable or its schema newer) and its deadline, ``Options/operationTimeout``: past it the
    /// call stops waiting (a call that got no connection never gets one, one that did is cancelled),
    /// and fails as unavailable. A cancelled caller stops waiting too. The database's errors become
    /// `StoreError` in words, naming `what`.
    func liveCall<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(StoreError) -> T {
        let (reachable, newer) = state.withLock { ($0.reachable, $0.newerSchema) }
        if let newer {
            throw StoreError(.unavailable, "\(what): the database \(url) holds schema \(newer), newer than this release's \(Self.schemaVersion)")
        }
        guard reachable else {
            throw StoreError(.unavailable, "\(what): the database \(url) is unreachable")
        }
        let claim = ConnectionClaim()
        let outcome = FirstOutcome<T>()
        let work = Task(executorPreference: executor) { [self] in
            do {
                outcome.finish(.success(try await withConnection(claim: claim, body)))
            } catch {
                outcome.finish(.failure(error))
            }
        }
        let timeout = options.operationTimeout
        let timer = Task {
            try? await Task.sleep(for: timeout)
            outcome.finish(.failure(DeadlinePassed()))
        }
        let result = await withTaskCancellationHandler {
            await outcome.value()
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
        timer.cancel()
        switch result.mapError(Self.unwrapped) {
        case let .success(value):
            return value
        case let .failure(error as StoreError):
            throw error
        case .failure(is DeadlinePassed):
            if claim.abandon(gauge) {
                throw StoreError(.unavailable, """
                    \(what): no connection of the pool to the database \(url) was free within \(timeout) (\(gauge.reading.description)); \
                    nothing was sent
                    """)
            }
            work.cancel()
            throw StoreError(.unavailable, "\(what): the database \(url) did not answer within \(timeout)")
        case let .failure(error) where (error as? PSQLError)?.serverInfo?[.sqlState] == Self.readOnlyState:
            if url.targetSession == .readWrite {
                chooseAgain()
            }
            throw StoreError(.unavailable, "\(what): \(explain(error))")
        case .failure(is CancellationError):
            _ = claim.abandon(gauge)
            work.cancel()
            throw StoreError(.unavailable, "\(what): cancelled")
        case let .failure(error):
            throw StoreError(Self.isConnectionFailure(error) || Self.isRolledBackTimeout(error) ? .unavailable : .failed, "\(what): \(explain(error))")
        }
    }

    /// ``blocking(_:write:_:)`` with a connection of the pool for `body` (``withConnection(_:)``), which
    /// it holds until it returns.
    func blocking<T: Sendable>(
        _ what: String, write: Bool = false, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) throws(StoreError) -> T {
        let claim = ConnectionClaim()
        return try blocking(what, write: write, claim: claim) { [self] () async throws -> T in
            try await withConnection(claim: claim, body)
        }
    }

    /// Runs `body` on a connection of the pool of the server in use, counting how long it waited for
    /// one and how many are held (``PoolGauge``, in ``health``), and logging (once a minute at most) a
    /// wait longer than ``PoolGauge/slowWait``. A call whose `claim` its caller gave up before it got
    /// a connection sends nothing, and throws `CancellationError`.
    func withConnection<T: Sendable>(claim: ConnectionClaim = ConnectionClaim(), _ body: (PostgresConnection) async throws -> T) async throws -> T {
        guard let ticket = claim.start(gauge) else { throw CancellationError() }
        defer { reportWait(gauge.leave(ticket), gaveUp: true) }
        let client = self.client
        return try await client.withConnection { connection in
            let lease = gauge.leased(ticket)
            guard !lease.abandoned else { throw CancellationError() }
            reportWait((lease.waited, lease.report), gaveUp: false)
            return try await body(connection)
        }
    }

    /// Logs a slow wait for a connection, with the pool's state and what to do.
    private func reportWait(_ wait: (waited: Duration, report: Bool), gaveUp: Bool) {
        guard wait.report else { return }
        let tenths = Int(wait.waited.components.seconds) * 10 + Int(wait.waited.components.attoseconds / 100_000_000_000_000_000)
        logger.warning("""
            the database pool is saturated: a store call \(gaveUp ? "gave up after waiting" : "waited") \(tenths / 10).\(tenths % 10) s \
            for one of its \(gauge.capacity) connections (\(gauge.reading.description)): raise --database-pool (LIVELIST_DATABASE_POOL) \
            within what the database, or a pooler in front of it, allows every node (docs/DEPLOYMENT.md, "Connection poolers")
            """)
    }

    /// The SQLSTATE of a statement refused because the server takes no writes (a standby).
    static let readOnlyState = "25006"

    /// The error inside a transaction's: what failed first (its begin, its body or its commit).
    static func unwrapped(_ error: any Error) -> any Error {
        guard let failed = error as? PostgresTransactionError else { return error }
        return failed.beginError ?? failed.closureError ?? failed.commitError ?? error
    }

    /// Whether `error` means the database could not be reached (rather than refused a statement):
    /// no connection, a lost one, or the server shutting down (SQLSTATE class 08 or 57).
    static func isConnectionFailure(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            return state.hasPrefix("08") || state.hasPrefix("57")
        }
        return true
    }

    /// Whether a statement that failed with `error` may have reached the database, and so may commit:
    /// the connection was lost or closed under it. A connection that could not be made, or a pool
    /// that closed, sent nothing; an answer of the server itself is an outcome.
    static func mayHaveBeenSent(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .uncleanShutdown, .clientClosedConnection, .messageDecodingFailure, .unexpectedBackendMessage:
            return true
        default:
            return false
        }
    }

    /// Whether the database refused a statement for a lock timeout (55P03) or cancelled it (57014):
    /// its transaction is rolled back, so nothing changed.
    static func isRolledBackTimeout(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return state == "55P03" || state == "57014"
    }
}

/// Runs a statement to its end. A statement's error can come after its first answer (a function that
/// raises, a failed commit): unless its rows are read to the end, it would go unseen.
func drained(_ rows: PostgresRowSequence) async throws {
    for try await _ in rows {}
}

/// The result of a store call, handed from the task that ran it to the thread that waits.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<T, any Error>?

    func finish(_ result: Result<T, any Error>) {
        self.result = result
        done.signal()
    }

    /// The result, or nil when `deadline` passed first.
    func wait(until deadline: DispatchTime) -> Result<T, any Error>? {
        guard done.wait(timeout: deadline) == .success else { return nil }
        return result
    }
}

/// A task executor on a Dispatch queue of its own: the store's tasks never wait for Swift's cooperative
/// pool, whose threads may be the very ones blocked waiting for them (the registry loads the store
/// from an actor on that pool).
final class StoreExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "livelist.postgres")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// The first of several outcomes of an asynchronous call (its result, its deadline, its caller's
/// cancellation), for the one task that waits.
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, any Error>?
        var waiter: CheckedContinuation<Result<T, any Error>, Never>?
    }

    private let state = Mutex(State())

    /// Records `result` unless one came first, and wakes the waiter.
    func finish(_ result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<T, any Error>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    /// The first outcome, waiting for it.
    func value() async -> Result<T, any Error> {
        await withCheckedContinuation { continuation in
            let result = state.withLock { state -> Result<T, any Error>? in
                if state.result == nil { state.waiter = continuation }
                return state.result
            }
            if let result { continuation.resume(returning: result) }
        }
    }
}

/// A live query's call outlived its deadline.
private struct DeadlinePassed: Error {}
