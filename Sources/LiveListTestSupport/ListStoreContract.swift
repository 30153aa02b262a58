public import LiveListEngine
import Dispatch
import Synchronization

// The ListStore contract as checks that every store runs (Tests/LiveListEngineTests/ListStoreContractTests
// for the memory and file stores, Tests/LiveListPostgresTests for PostgreSQL). A check throws a
// ``ContractViolation`` naming the store and what was wrong, so that a test calls it with `try await`:
// this library does not link Swift Testing.

/// A broken promise of the ``ListStore`` contract: which store, what was wrong, and where the check is.
public struct ContractViolation: Error, Sendable, CustomStringConvertible {
    /// The store's label, as given to ``ListStoreContract``.
    public var store: String
    /// What was wrong, with the values seen and expected.
    public var problem: String
    /// The check's file and line.
    public var location: String

    public init(store: String, problem: String, location: String) {
        self.store = store
        self.problem = problem
        self.location = location
    }

    public var description: String {
        "\(store) breaks the ListStore contract: \(problem) (\(location))"
    }
}

/// Where one check keeps its data, and how it opens stores on it: every store it opens sees the same
/// data (one directory, one database).
public struct ContractStorage: Sendable {
    /// Whether ``open`` makes a new store on the same data each time (file, PostgreSQL); false when it
    /// hands out one instance (memory), which then stands for the store "opened anew".
    public var reopens: Bool
    /// Opens a store on the data.
    public var open: @Sendable () async throws -> any ListStore
    /// Closes a store that ``open`` made (a file store unlocks its directory); called once a check is
    /// done with it, and may be called twice.
    public var close: @Sendable (any ListStore) async -> Void
    /// Removes the data, once every store is closed.
    public var remove: @Sendable () async -> Void

    public init(
        reopens: Bool = true,
        open: @escaping @Sendable () async throws -> any ListStore,
        close: @escaping @Sendable (any ListStore) async -> Void = { _ in },
        remove: @escaping @Sendable () async -> Void = {}
    ) {
        self.reopens = reopens
        self.open = open
        self.close = close
        self.remove = remove
    }
}

/// The ``ListStore`` contract, run against one kind of store: each check makes fresh storage through
/// the factory, opens its stores there (loading each at once, as the engine does at start-up), uses
/// list names with a random prefix of its own (so that runs on one database never collide), and closes
/// and removes everything when it ends, whether it passes or not.
public struct ListStoreContract: Sendable {
    /// The checks that every store passes.
    public enum Check: String, CaseIterable, Sendable {
        /// A JSON list's latest body and version come back from `load()`, also of a store opened anew.
        case jsonLists
        /// A deletion leaves no list but keeps its version as the high-water mark; a re-creation
        /// continues after it.
        case tombstones
        /// A Swift app's state (opaque bytes) and its version come back from `appState` and `load()`.
        case appStates
        /// `saveHighWater` never lowers a version, neither before nor after reopening.
        case highWater
        /// `secret()` is 32 bytes, the same on every call, after reopening and on every store sharing
        /// the data.
        case secret
        /// A store of one process has no updates, versions, notices or leases to wait for; a shared
        /// store answers `update(of:after:)` and `versions()` for what it wrote.
        case sharing
        /// Random PATCH sequences (through a ``ListRegistry`` on the store) give the states and the
        /// renderings that PUTs of the same results give, with changesets that bring the page before
        /// each patch to the page after it in no more operations than a diff; a store opened anew
        /// (after its patches were compacted, or not) gives the same lists.
        case patches
        /// Ended sign-ins come back from `endedSignIns(now:)` until they expire, each once, also from a
        /// store opened anew; a digest that is not 32 lowercase hex digits is refused.
        case endedSignIns
    }

    /// Names the store in violations, such as `FileListStore`.
    public let label: String
    /// The versions a shared store keeps of each list for the others (``SharedCheck/history``).
    public let keptVersions: Int?
    /// The largest content a shared store keeps per version (``SharedCheck/history``), if it has such
    /// a bound.
    public let largestKeptContent: Int?
    let makeStorage: @Sendable () async throws -> ContractStorage

    /// A contract for the stores that `makeStorage` opens, called once per check.
    ///
    /// - Parameters:
    ///   - keptVersions: For a shared store, how many versions of each list it keeps for the others.
    ///   - largestKeptContent: For a shared store, the largest body or state it keeps per version.
    public init(
        _ label: String, keptVersions: Int? = nil, largestKeptContent: Int? = nil,
        makeStorage: @escaping @Sendable () async throws -> ContractStorage
    ) {
        self.label = label
        self.keptVersions = keptVersions
        self.largestKeptContent = largestKeptContent
        self.makeStorage = makeStorage
    }

    /// Runs one of the checks that every store passes.
    ///
    /// - Throws: ``ContractViolation`` when the store breaks the contract, or the store's own error
    ///   when it fails where it should not.
    public func run(_ check: Check) async throws {
        switch check {
        case .jsonLists: try await checkJSONLists()
        case .tombstones: try await checkTombstones()
        case .appStates: try await checkAppStates()
        case .highWater: try await checkHighWater()
        case .secret: try await checkSecret()
        case .sharing: try await checkSharing()
        case .patches: try await checkPatches()
        case .endedSignIns: try await checkEndedSignIns()
        }
    }

    // MARK: - Checks every store passes

    func checkJSONLists() async throws {
        try await withSession { session in
            let name = ContractNames()("json")
            let store = try await session.open()
            let first = jsonBody(["v1", "ünïcødé"])
            let second = jsonBody(["v2", "a", "b"], header: "H")
            try await storeCall { try store.saveJSONList(name: name, version: 1, body: first) }
            try await storeCall { try store.saveJSONList(name: name, version: 2, body: second) }
            let expected = StoredLists(highWater: [name: 2], jsonLists: [name: .init(version: 2, body: second)])
            try await ensureLoad(of: store, [name], expected, "of the store that wrote")
            let again = try await session.reopen(store)
            try await ensureLoad(of: again, [name], expected, "of a store opened anew")
            let third = jsonBody([])
            try await storeCall { try again.saveJSONList(name: name, version: 3, body: third) }
            try await ensureLoad(
                of: again, [name], StoredLists(highWater: [name: 3], jsonLists: [name: .init(version: 3, body: third)]),
                "after writing version 3 on the store opened anew")
        }
    }

    func checkTombstones() async throws {
        try await withSession { session in
            let name = ContractNames()("gone")
            let store = try await session.open()
            try await storeCall { try store.saveJSONList(name: name, version: 1, body: jsonBody(["a"])) }
            try await storeCall { try store.deleteJSONList(name: name, version: 2) }
            let tombstone = StoredLists(highWater: [name: 2])
            try await ensureLoad(of: store, [name], tombstone, "after the deletion (no list, its version kept)")
            let again = try await session.reopen(store)
            try await ensureLoad(of: again, [name], tombstone, "of a store opened anew after the deletion")
            let body = jsonBody(["again"])
            try await storeCall { try again.saveJSONList(name: name, version: 3, body: body) }
            try await ensureLoad(
                of: again, [name], StoredLists(highWater: [name: 3], jsonLists: [name: .init(version: 3, body: body)]),
                "after re-creating the list at version 3")
        }
    }

    func checkAppStates() async throws {
        try await withSession { session in
            let names = ContractNames()
            let name = names("app")
            let store = try await session.open()
            // Opaque bytes: a NUL, a newline, a byte that is no UTF-8.
            let first: [UInt8] = [0, 10, 255] + Array("state 1".utf8)
            let second: [UInt8] = [13, 10, 0, 0, 254] + Array("state 2".utf8)
            try await storeCall { try store.saveAppState(name: name, version: 1, bytes: first) }
            try await storeCall { try store.saveAppState(name: name, version: 2, bytes: second) }
            let state = StoredLists.AppState(version: 2, bytes: second)
            try ensureEqual(try await storeCall { try store.appState(name: name) }, Optional(state), "appState(name:)")
            let unknown = names("none")
            try ensureEqual(try await storeCall { try store.appState(name: unknown) }, nil, "appState(name:) of a name never saved")
            let expected = StoredLists(highWater: [name: 2], appStates: [name: state])
            try await ensureLoad(of: store, [name], expected, "of the store that wrote")
            let again = try await session.reopen(store)
            try ensureEqual(try await storeCall { try again.appState(name: name) }, Optional(state), "appState(name:) of a store opened anew")
            try await ensureLoad(of: again, [name], expected, "of a store opened anew")
        }
    }

    func checkHighWater() async throws {
        try await withSession { session in
            let names = ContractNames()
            let (reserved, list) = (names("reserved"), names("list"))
            let store = try await session.open()
            try await storeCall { try store.saveHighWater(5, for: reserved) }
            try await storeCall { try store.saveHighWater(3, for: reserved) }
            try await ensureLoad(of: store, [reserved], StoredLists(highWater: [reserved: 5]), "after saveHighWater 5 then 3")
            try await storeCall { try store.saveHighWater(7, for: reserved) }
            let body = jsonBody(["3"])
            for version in 1 ... 3 {
                let content = version == 3 ? body : jsonBody(["\(version)"])
                try await storeCall { try store.saveJSONList(name: list, version: version, body: content) }
            }
            try await storeCall { try store.saveHighWater(2, for: list) }
            let expected = StoredLists(highWater: [reserved: 7, list: 3], jsonLists: [list: .init(version: 3, body: body)])
            try await ensureLoad(of: store, [reserved, list], expected, "after saveHighWater 7, and 2 below a list at 3")
            let again = try await session.reopen(store)
            try await ensureLoad(of: again, [reserved, list], expected, "of a store opened anew")
            // A store opened anew knows the marks it loaded: a smaller one lowers nothing either.
            try await storeCall { try again.saveHighWater(4, for: reserved) }
            let last = try await session.reopen(again)
            try await ensureLoad(of: last, [reserved, list], expected, "after saveHighWater 4 on a store opened anew")
        }
    }

    func checkSecret() async throws {
        try await withSession { session in
            let store = try await session.open()
            let secret = try await storeCall { try store.secret() }
            try ensure(secret.count == 32, "secret() is \(secret.count) bytes, not 32")
            try ensure(secret.contains { $0 != 0 }, "secret() is 32 zero bytes, not random ones")
            try ensureEqual(try await storeCall { try store.secret() }, secret, "secret() asked again")
            if store.isShared {
                let other = try await session.open()
                try ensureEqual(try await storeCall { try other.secret() }, secret, "secret() of another store on the same data")
            }
            let again = try await session.reopen(store)
            try ensureEqual(try await storeCall { try again.secret() }, secret, "secret() of a store opened anew")
        }
    }

    func checkSharing() async throws {
        try await withSession { session in
            let names = ContractNames()
            let (name, unknown) = (names("shared"), names("unknown"))
            let store = try await session.open()
            let body = jsonBody(["x"])
            try await storeCall { try store.saveJSONList(name: name, version: 1, body: body) }
            try ensureEqual(try await storeCall { try store.update(of: unknown, after: 0) }, nil, "update(of:after: 0) of a name never written")
            if store.isShared {
                try ensureEqual(
                    try await storeCall { try store.update(of: name, after: 0) },
                    Optional(StoredUpdate(steps: [.init(version: 1, content: .json(body))])), "update(of:after: 0) of a list written at 1")
                try ensureEqual(try await storeCall { try store.update(of: name, after: 1) }, nil, "update(of:after:) of the latest version")
                let versions = try await storeCall { try store.versions() }
                try ensureEqual(versions[name], 1, "versions() of a list written at 1")
            } else {
                try ensureEqual(try await storeCall { try store.update(of: name, after: 0) }, nil, "update(of:after:) of a store of one process")
                try ensureEqual(try await storeCall { try store.versions() }, [:], "versions() of a store of one process")
                try ensure(store.holdsLease(names("lease")), "a store of one process does not hold a lease")
                let recorder = NoticeRecorder(store)
                defer { recorder.stop() }
                let ended = await becomesTrue(within: .seconds(2)) { recorder.hasEnded }
                try ensure(ended, "notices() of a store of one process did not end")
                try ensureEqual(recorder.notices, [], "notices() of a store of one process")
            }
        }
    }

    // MARK: - Helpers

    /// Makes fresh storage, runs `body` with a session on it, then closes every store the session
    /// opened and removes the storage, whether `body` threw or not.
    func withSession(_ body: (StoreSession) async throws -> Void) async throws {
        let storage = try await makeStorage()
        let session = StoreSession(storage)
        do {
            try await body(session)
        } catch {
            await session.closeAll()
            await storage.remove()
            throw error
        }
        await session.closeAll()
        await storage.remove()
    }

    /// What `load()` of `store` holds of `names` is `expected`.
    func ensureLoad(
        of store: any ListStore, _ names: Set<String>, _ expected: StoredLists, _ when: String,
        file: String = #fileID, line: Int = #line
    ) async throws {
        let loaded = try await storeCall { try store.load() }
        try ensureEqual(loaded.restricted(to: names), expected, "load() \(when)", file: file, line: line)
    }

    func ensure(_ condition: Bool, _ problem: @autoclosure () -> String, file: String = #fileID, line: Int = #line) throws {
        guard condition else { throw violation(problem(), file: file, line: line) }
    }

    func ensureEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String, file: String = #fileID, line: Int = #line) throws {
        guard actual == expected else {
            throw violation("\(what) is \(String(describing: actual)), expected \(String(describing: expected))", file: file, line: line)
        }
    }

    func violation(_ problem: String, file: String = #fileID, line: Int = #line) -> ContractViolation {
        ContractViolation(store: label, problem: problem, location: "\(file):\(line)")
    }
}

/// The stores that one check opened on one storage, closed when the check ends.
final class StoreSession: Sendable {
    let storage: ContractStorage
    private let opened = Mutex<[any ListStore]>([])

    init(_ storage: ContractStorage) {
        self.storage = storage
    }

    /// A store on the storage, loaded once (as the engine does before anything else: the file store
    /// learns its high-water marks there).
    func open() async throws -> any ListStore {
        let store = try await storage.open()
        opened.withLock { $0.append(store) }
        _ = try await storeCall { try store.load() }
        return store
    }

    /// Closes `store` and opens another on the same data; `store` itself where the storage hands out
    /// one instance.
    func reopen(_ store: any ListStore) async throws -> any ListStore {
        guard storage.reopens else { return store }
        await storage.close(store)
        return try await open()
    }

    func close(_ store: any ListStore) async {
        await storage.close(store)
    }

    func closeAll() async {
        for store in opened.withLock({ $0 }) {
            await storage.close(store)
        }
    }
}

/// List names unique to one check: a random prefix, then a role.
struct ContractNames: Sendable {
    let prefix = "c" + String(UInt64.random(in: 0 ... UInt64.max), radix: 36) + "-"

    func callAsFunction(_ role: String) -> String {
        prefix + role
    }
}

extension StoredLists {
    /// What this holds of `names` only (a shared database holds other checks' lists too).
    func restricted(to names: Set<String>) -> StoredLists {
        StoredLists(
            highWater: highWater.filter { names.contains($0.key) },
            jsonLists: jsonLists.filter { names.contains($0.key) },
            appStates: appStates.filter { names.contains($0.key) })
    }
}

/// Runs a store call (synchronous; a shared store's blocks its thread for up to its timeout) on a
/// thread of Dispatch's rather than on Swift's cooperative pool, which the other tests in the process
/// need.
func storeCall<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
        DispatchQueue.global().async {
            do {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}

/// Runs a store call that may be refused: its error, or nil when it succeeded.
func storeAttempt(_ body: @escaping @Sendable () throws -> Void) async -> StoreError? {
    do {
        try await storeCall(body)
        return nil
    } catch let error as StoreError {
        return error
    } catch {
        return StoreError("not a StoreError: \(error)")
    }
}

/// Whether `condition` holds within `timeout`, asked every 20 ms.
func becomesTrue(within timeout: Duration, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}
