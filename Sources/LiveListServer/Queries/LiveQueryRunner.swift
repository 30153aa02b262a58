import Foundation
import LiveListEngine
import Synchronization

/// What the app's live queries share: each hears every change committed to the watched tables.
protocol LiveQueryFollower: Sendable {
    var name: ListName { get }
    /// A change was committed: the groups it may touch run again.
    func changed(_ change: TableChange)
    /// The query's counters, for `/metrics`.
    var counters: LiveQueryCounters { get }
}

struct LiveQueryCounters: Sendable {
    /// Statements run: first loads and runs after changes, each for a batch of groups.
    var statements = 0
    /// Statements that failed (the query, or a row that did not decode).
    var failures = 0
    /// Groups whose rows changed, each rendered once.
    var changedGroups = 0
    /// Groups held (rows kept for their viewers).
    var groups = 0
    /// 1 while the query fails (the list answers 503), else 0.
    var outOfService = 0
}

/// One live query's rows for each group of viewers (a parameter set), and the one task that runs the
/// query: loads for new groups and runs after changes go through it one at a time, so the rows a group
/// holds only ever get newer, and each run serves every group waiting then in one statement per batch
/// (as Hasura multiplexes its live queries). Only the groups a change may touch run again; a group
/// whose rows came back the same costs no rendering.
final class LiveQueryRunner<Row: Decodable & Sendable>: LiveQueryFollower {
    private struct Entry {
        var values: [String]
        var rows: [Row]
        var bytes: [[UInt8]]
        var lastRead: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// The held groups by their parameters' values (those of `entries`).
        var index: GroupIndex
        /// When idle groups were last looked for.
        var lastSweep: ContinuousClock.Instant?
        /// Groups to load or run again, with their parameter values.
        var pending: [String: [String]] = [:]
        var waiters: [String: [CheckedContinuation<String?, Never>]] = [:]
        var running = false
        /// The groups of the run in flight, with their values: a change heard while their rows are read
        /// may come after the statement's snapshot, so it runs them again.
        var inFlight: [String: [String]] = [:]
        /// Why the query fails, while it does.
        var failure: String?
        /// Whether the database cannot be reached now (its last run failed to reach it): the groups held
        /// are still shown, as they were when it last answered.
        var unreachable = false
        var counters = LiveQueryCounters()

        init(parameters: Int) {
            index = GroupIndex(parameters: parameters)
        }
    }

    let name: ListName
    let query: LiveQueryDefinition
    private let database: any LiveQueryDatabase
    private let log: ServerLog
    private let state: Mutex<State>
    private let list = Mutex<PartitionedList?>(nil)
    /// A group that no stream views and that no reader asked for in this long is forgotten.
    static var idleGroupLifetime: Duration { .seconds(60) }
    /// Idle groups are looked for at most this often (not after every run: that visits every group).
    static var sweepInterval: Duration { .seconds(10) }
    /// Groups run in one statement, at most.
    static var batchSize: Int { 500 }

    init(name: ListName, query: LiveQueryDefinition, database: any LiveQueryDatabase, log: ServerLog) {
        self.name = name
        self.query = query
        self.database = database
        self.log = log
        state = Mutex(State(parameters: query.names.count))
    }

    func serve(_ list: PartitionedList) {
        self.list.withLock { $0 = list }
    }

    var counters: LiveQueryCounters {
        state.withLock { state in
            var counters = state.counters
            counters.groups = state.entries.count
            counters.outOfService = state.failure == nil ? 0 : 1
            return counters
        }
    }

    /// The rows of `key`'s group: what its viewers see (none before its first load).
    func rows(of key: String) -> [Row] {
        state.withLock { $0.entries[key]?.rows } ?? []
    }

    /// Makes `key`'s rows ready: at once when held, else after the run that loads them. Nil when
    /// ready, else why the list cannot be shown now (the query fails; or, for a group not held, the
    /// database cannot be reached). While the database cannot be reached, a group held is ready: its
    /// viewers see the rows it last read, and the run that reaches the database again brings what
    /// changed meanwhile.
    func prepare(_ key: String) async -> String? {
        let now = ContinuousClock.now
        let held: String?? = state.withLock { state in
            // A group not held waits for a run even while the query fails: that run tries again.
            guard state.entries[key] != nil else { return nil }
            // (A database that cannot be reached is no failure of the query: it never sets `failure`.)
            if let failure = state.failure { return .some(failure) }
            state.entries[key]?.lastRead = now
            return .some(nil)
        }
        if let held { return held }
        guard let values = LiveQueryDefinition.values(ofGroup: key) else { return "its viewer's parameters are not valid" }
        return await withCheckedContinuation { (waiter: CheckedContinuation<String?, Never>) in
            let start = state.withLock { state -> Bool? in
                if state.entries[key] != nil { return nil }
                state.waiters[key, default: []].append(waiter)
                state.pending[key] = values
                guard !state.running else { return false }
                state.running = true
                return true
            }
            switch start {
            case nil: waiter.resume(returning: nil)
            case true?: Task { await run() }
            case false?: break
            }
        }
    }

    func changed(_ change: TableChange) {
        let start = state.withLock { state -> Bool in
            // The groups the change may touch, found by value; all of them only for a change that may
            // touch any (a statement of thousands of rows, a reconnection).
            let candidates = state.index.candidates(for: change, of: query).map(Array.init) ?? Array(state.entries.keys)
            for key in candidates {
                guard let values = state.entries[key]?.values, query.isTouched(by: change, values: values) else { continue }
                state.pending[key] = values
            }
            for (key, values) in state.inFlight where query.isTouched(by: change, values: values) {
                state.pending[key] = values
            }
            guard !state.pending.isEmpty, !state.running else { return false }
            state.running = true
            return true
        }
        if start {
            Task { await run() }
        }
    }

    /// Runs the query for every pending group, batch by batch, until none is pending.
    private func run() async {
        var retry = Duration.milliseconds(250)
        while true {
            let batch = state.withLock { state -> [(key: String, values: [String])] in
                defer { state.pending = [:] }
                if state.pending.isEmpty { state.running = false }
                state.inFlight = state.pending
                return state.pending.map { ($0.key, $0.value) }
            }
            if batch.isEmpty { return }
            var changed: [String] = []
            var loaded: [String] = []
            var failure: (any Error)?
            for start in stride(from: 0, to: batch.count, by: Self.batchSize) {
                do {
                    let (more, new) = try await load(Array(batch[start ..< min(start + Self.batchSize, batch.count)]))
                    changed += more
                    loaded += new
                } catch {
                    failure = error
                    break
                }
            }
            // What the batches read before one failed is shown all the same: their rows are kept, and
            // would compare equal when run again.
            await show(changed: changed, loaded: loaded)
            if let failure {
                failed(batch, failure)
                // Runs again after a while (at most a second: a database back after a restart serves
                // again soon); the groups it held wait for their rows to come back.
                try? await Task.sleep(for: retry)
                retry = min(retry * 2, .seconds(1))
            } else {
                retry = .milliseconds(250)
                await forgetIdleGroups()
            }
        }
    }

    /// Renders the groups whose rows changed, and those new to this node (no page showed others, but a
    /// stream that opened while the query failed shows none yet).
    private func show(changed: [String], loaded: [String]) async {
        state.withLock { $0.inFlight = [:] }
        guard let list = list.withLock({ $0 }) else { return }
        do {
            if !changed.isEmpty { try await list.refresh(changed) }
            if !loaded.isEmpty { try await list.refresh(loaded, always: false) }
        } catch {
            log.error("\(name): the rows of a live query could not be rendered: \(error)")
        }
    }

    /// Runs one batch, keeps each group's rows, wakes the readers that waited for them: the groups whose
    /// rows changed, and those whose rows are new to this node.
    private func load(_ batch: [(key: String, values: [String])]) async throws -> (changed: [String], loaded: [String]) {
        let results: [[[UInt8]]]
        do {
            results = try await database.rows(of: query.sql, names: query.names, sets: batch.map(\.values), limit: query.limit)
        } catch {
            let unreachable = (error as? StoreError)?.kind == .unavailable
            throw LiveQueryFailure(detail: "the query failed: \(error)", unreachable: unreachable)
        }
        guard results.count == batch.count else {
            throw LiveQueryFailure(detail: "the database answered \(results.count) parameter sets for \(batch.count)")
        }
        // A row whose bytes a group held already is not decoded again: a change to one row of a group
        // decodes that row, not the group (a row's value is decided by its bytes alone).
        let held = state.withLock { state in batch.map { state.entries[$0.key] } }
        let decoder = JSONDecoder()
        var decoded: [[Row]] = []
        for (index, rows) in results.enumerated() {
            var known: [RowBytes: Row] = [:]
            if let entry = held[index] {
                known.reserveCapacity(entry.bytes.count)
                for (bytes, row) in zip(entry.bytes, entry.rows) {
                    known[RowBytes(bytes: bytes)] = row
                }
            }
            do {
                decoded.append(try rows.map { bytes in try known[RowBytes(bytes: bytes)] ?? decoder.decode(Row.self, from: Data(bytes)) })
            } catch {
                throw LiveQueryFailure(detail: "a row does not decode as \(Row.self): \(error)")
            }
        }
        let now = ContinuousClock.now
        let (changed, loaded, waiters, recovered) = state.withLock { state in
            var changed: [String] = []
            var loaded: [String] = []
            var waiters: [CheckedContinuation<String?, Never>] = []
            state.counters.statements += 1
            for (index, (key, values)) in batch.enumerated() {
                waiters += state.waiters.removeValue(forKey: key) ?? []
                if let held = state.entries[key] {
                    guard held.bytes != results[index] else { continue }
                    changed.append(key)
                    state.entries[key] = Entry(values: values, rows: decoded[index], bytes: results[index], lastRead: held.lastRead)
                } else {
                    loaded.append(key)
                    state.entries[key] = Entry(values: values, rows: decoded[index], bytes: results[index], lastRead: now)
                    state.index.insert(key, values: values)
                }
            }
            state.counters.changedGroups += changed.count
            defer { (state.failure, state.unreachable) = (nil, false) }
            return (changed, loaded, waiters, (failed: state.failure != nil, unreachable: state.unreachable))
        }
        if recovered.failed {
            log.warning("\(name): its live query runs again; the list is served again")
        } else if recovered.unreachable {
            log.warning("\(name): the database answers its live query again")
        }
        for waiter in waiters {
            waiter.resume(returning: nil)
        }
        return (changed, loaded)
    }

    /// The query failed: the list is out of service until a run succeeds; readers that waited hear
    /// why; the batch's groups are run again later (a stream may have opened on one meanwhile). When
    /// the database could not be reached (``StoreError/Kind/unavailable``: down, restarting, the
    /// connection lost), the query is not at fault: the groups held stay in service with the rows they
    /// last read, and only readers of groups not held are refused.
    private func failed(_ batch: [(key: String, values: [String])], _ error: any Error) {
        let failure = error as? LiveQueryFailure
        let detail = failure?.detail ?? "\(error)"
        let unreachable = failure?.unreachable ?? false
        let reason = unreachable ? "the database cannot be reached now" : "its query fails; the node's log says why"
        let (waiters, first) = state.withLock { state in
            var waiters: [CheckedContinuation<String?, Never>] = []
            for (key, values) in batch {
                waiters += state.waiters.removeValue(forKey: key) ?? []
                state.pending[key] = values
            }
            state.counters.failures += 1
            // Logged once when the list goes out of service, and once when the database is first lost.
            let first = state.failure == nil && (!unreachable || !state.unreachable)
            if unreachable {
                state.unreachable = true
            } else {
                state.failure = reason
            }
            return (waiters, first)
        }
        if first {
            log.error(unreachable
                ? "\(name): the database cannot be reached; viewers keep the rows they have: \(detail)"
                : "\(name): the list is out of service: \(detail)")
        }
        for waiter in waiters {
            waiter.resume(returning: reason)
        }
    }

    /// Forgets the rows of groups that no stream views and no reader asked for lately; at most every
    /// ``sweepInterval``.
    private func forgetIdleGroups() async {
        let now = ContinuousClock.now
        let due = state.withLock { state -> Bool in
            if let last = state.lastSweep, now - last < Self.sweepInterval { return false }
            state.lastSweep = now
            return true
        }
        guard due, let list = list.withLock({ $0 }) else { return }
        let viewed = await list.viewedGroups
        let oldest = now - Self.idleGroupLifetime
        state.withLock { state in
            let idle = state.entries.filter { key, entry in viewed[key] == nil && entry.lastRead <= oldest && state.waiters[key] == nil }
            for (key, entry) in idle {
                state.entries.removeValue(forKey: key)
                state.index.remove(key, values: entry.values)
            }
        }
    }
}

/// A row's bytes as a dictionary key, hashed as one buffer (an array of bytes hashes byte by byte).
private struct RowBytes: Hashable {
    let bytes: [UInt8]

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// Why a live query's run failed, for the log.
struct LiveQueryFailure: Error {
    let detail: String
    /// The database could not be reached: not the query's fault.
    var unreachable = false
}
