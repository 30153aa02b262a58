import LiveListHTML
import Synchronization
/// Where lists keep what must survive a restart: each name's version high-water mark (versions are never
/// reused), the bodies of JSON-driven lists and the tombstones of deleted ones, and the state of Swift
/// apps such as the demo's todo list. A small protocol, so that another backend (PostgreSQL with
/// LISTEN/NOTIFY to fan changes out across processes) can replace the file store without touching the
/// routes.
///
/// Every `save` returns only once the data is durable: a write that returned survives `kill -9`. A list's
/// writes reach the store in version order, one at a time (each list has one ordered write path, see
/// docs/ARCHITECTURE.md), so a store never sees two writes of one list at once.
///
/// A store that several processes share refines this protocol as ``SharedListStore``.
public protocol ListStore: Sendable {
    /// Everything stored, read once at start-up.
    func load() throws(StoreError) -> StoredLists
    /// Records that versions up to `version` of `name` may have been handed out.
    func saveHighWater(_ version: Int, for name: String) throws(StoreError)
    /// Stores the body of a JSON-driven list at `version`.
    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError)
    /// Replaces a JSON-driven list by its tombstone: the list is gone, and `version` (the deletion's own
    /// version) stays its high-water mark, so a re-created list continues after it.
    func deleteJSONList(name: String, version: Int) throws(StoreError)
    /// Stores a Swift app's state under `name`, as of the list's `version`.
    func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError)
    /// A Swift app's stored state, if any.
    func appState(name: String) throws(StoreError) -> StoredLists.AppState?
    /// The server's secret for session tokens (32 random bytes), created on first use.
    func secret() throws(StoreError) -> [UInt8]

    /// The store's state for `/healthz` and `/readyz`.
    var health: StoreHealth { get }
    /// Stores the body of a JSON-driven list at `version`, and `idempotency` (the write's key) with it,
    /// in one transaction: a shared store refuses the write as
    /// ``StoreError/Kind/idempotencyKeyUsed`` when another write kept the key first. A store of one
    /// process keeps no keys (the list remembers its recent ones itself). Default: `saveJSONList`.
    func saveJSONList(name: String, version: Int, body: [UInt8], idempotency: IdempotentWrite?) throws(StoreError)
    /// Deletes a JSON-driven list, keeping `idempotency` with it (see above). Default: `deleteJSONList`.
    func deleteJSONList(name: String, version: Int, idempotency: IdempotentWrite?) throws(StoreError)
    /// Stores a patch of a JSON-driven list (``JSONListPatch``, encoded) as the list's `version`, with
    /// `idempotency` as ``saveJSONList(name:version:body:idempotency:)`` does. `body` makes the whole
    /// state after the patch, in the PUT body's format: a store that keeps a list as a body and the
    /// patches after it calls it when it compacts them; one that keeps whole bodies only stores it.
    /// Default: `saveJSONList` with `body()`.
    func appendJSONPatch(name: String, version: Int, patch: [UInt8], idempotency: IdempotentWrite?, body: () -> [UInt8]) throws(StoreError)
    /// Keeps a revocation for the other processes of a shared store, durably; returns once they can
    /// read it. A store of one process keeps nothing.
    func recordRevocation(_ revocation: Revocation) throws(StoreError)
    /// Keeps `ended` (a sign-out), durably once this returns, until its cookie expires; a shared store
    /// also hands it to the other processes' ``SharedListStore/revocations(after:)`` as
    /// ``Revocation/signInEnded(_:)``, in the same transaction. Refuses a digest that is not 32
    /// lowercase hex digits. Default: keeps nothing.
    func recordEndedSignIn(_ ended: EndedSignIn) throws(StoreError)
    /// Every ended sign-in kept whose cookie has not expired at `now` (`expires > now`, in seconds
    /// since 1970), read once at start-up. Default: none.
    func endedSignIns(now: Int) throws(StoreError) -> [EndedSignIn]
}

/// A store that several processes share (the PostgreSQL store of the `livelist` executable): it sees the
/// writes of every process, refuses a write whose version does not follow the list's stored version with
/// ``StoreError/Kind/stale(version:)`` (the list catches up with ``update(of:after:)`` and runs the write
/// again on the latest state), tells of other processes' writes through ``notices()``, keeps idempotency
/// keys and revocations for every process, and hands out leases. The engine asks a store whether it is
/// one of these once, when it opens it; a store of one process conforms to ``ListStore`` only.
/// See docs/ARCHITECTURE.md ("Several nodes").
public protocol SharedListStore: ListStore {
    /// What a shared store holds of `name` beyond `version`: nil when it holds nothing newer.
    func update(of name: String, after version: Int) throws(StoreError) -> StoredUpdate?
    /// Every list's stored version, for catching up after notices may have been missed.
    func versions() throws(StoreError) -> [String: Int]
    /// The stored versions of those of `names` that the store holds, in one query.
    func versions(of names: [String]) throws(StoreError) -> [String: Int]
    /// Writes of other processes (and the store's reconnections), for as long as the store is open.
    func notices() -> AsyncStream<StoreNotice>
    /// Whether this process holds the lease `name` now: work that must run on one process at a time
    /// (the demo lists' timers) runs only while it does. (A store of one process holds every lease.)
    func holdsLease(_ name: String) -> Bool
    /// The write that a shared store kept for `key` on the list `name`, if any (kept a day).
    func idempotentWrite(of name: String, key: String) throws(StoreError) -> IdempotentWrite?
    /// The revocations other processes recorded after `position`, in order; with nil, none, and the
    /// position of the latest (where a process that starts begins). At most a bounded number per call:
    /// ask again after the position returned while it moves.
    func revocations(after position: Int?) throws(StoreError) -> RevocationBatch
}

extension ListStore {
    /// This store as a shared one, or nil for a store of one process.
    package var asShared: (any SharedListStore)? { self as? any SharedListStore }
}

extension ListStore {
    public var health: StoreHealth { StoreHealth(isReachable: true, description: "embedded") }
    public func recordRevocation(_ revocation: Revocation) throws(StoreError) {}
    public func saveJSONList(name: String, version: Int, body: [UInt8], idempotency: IdempotentWrite?) throws(StoreError) {
        try saveJSONList(name: name, version: version, body: body)
    }
    public func deleteJSONList(name: String, version: Int, idempotency: IdempotentWrite?) throws(StoreError) {
        try deleteJSONList(name: name, version: version)
    }
    public func appendJSONPatch(name: String, version: Int, patch: [UInt8], idempotency: IdempotentWrite?, body: () -> [UInt8]) throws(StoreError) {
        try saveJSONList(name: name, version: version, body: body(), idempotency: idempotency)
    }
    public func recordEndedSignIn(_ ended: EndedSignIn) throws(StoreError) {}
    public func endedSignIns(now: Int) throws(StoreError) -> [EndedSignIn] { [] }
}

/// What a shared store holds of one list beyond a version this process has: the versions in order, each
/// with what the list was at it, so that each process renders every version itself and publishes the same
/// diffs as the process that wrote them.
public struct StoredUpdate: Sendable, Equatable {
    /// What a list is at one version.
    public enum Content: Sendable, Equatable {
        /// A JSON-driven list's PUT body.
        case json([UInt8])
        /// A patch of a JSON-driven list (``JSONListPatch``, encoded): the change from the version before.
        case patch([UInt8])
        /// A deleted JSON-driven list.
        case deleted
        /// A Swift app's state.
        case state([UInt8])
        /// Only a version reservation (a list rendered by each process on its own).
        case reserved
    }

    /// One stored version.
    public struct Step: Sendable, Equatable {
        public var version: Int
        public var content: Content

        public init(version: Int, content: Content) {
            self.version = version
            self.content = content
        }
    }

    /// Every version after the one asked after, in order, when the store still holds each of them;
    /// otherwise only the latest (the process then publishes one diff that spans the versions missed).
    /// Never empty.
    public var steps: [Step]

    /// The latest version.
    public var version: Int { steps.last?.version ?? 0 }

    public init(steps: [Step]) {
        self.steps = steps
    }
}

/// A shared store's news.
public enum StoreNotice: Sendable, Equatable {
    /// Some process wrote `name` at `version`.
    case changed(name: String, version: Int)
    /// The store reconnected: notices may have been missed, so every list should catch up.
    case reconnected
}

/// Whether the store can be used, for `/healthz` and `/readyz`.
public struct StoreHealth: Sendable, Equatable {
    /// Whether the store answers now (false while a database is unreachable).
    public var isReachable: Bool
    /// One line for people, such as `embedded`, `database: ok` or `database: unreachable for 12 s`.
    public var description: String

    /// A database pool's use now, for a store that has one (nil for the embedded store).
    public var pool: Pool?

    /// A database pool's use: connections held by calls, the most it opens, and calls waiting for one.
    public struct Pool: Sendable, Equatable {
        /// Connections held by store calls now.
        public var busy: Int
        /// The most connections the pool opens (`--database-pool`).
        public var capacity: Int
        /// Store calls waiting for a connection now.
        public var waiting: Int

        /// A pool with `busy` of `capacity` connections held and `waiting` calls waiting.
        public init(busy: Int, capacity: Int, waiting: Int) {
            self.busy = busy
            self.capacity = capacity
            self.waiting = waiting
        }
    }

    /// The health of a store: whether it answers, a line for people, and its pool's use when it has one.
    public init(isReachable: Bool, description: String, pool: Pool? = nil) {
        self.isReachable = isReachable
        self.description = description
        self.pool = pool
    }
}

/// What a store holds.
public struct StoredLists: Sendable, Equatable {
    /// A JSON-driven list: its version and the exact PUT body.
    public struct JSONList: Sendable, Equatable {
        public var version: Int
        public var body: [UInt8]

        public init(version: Int, body: [UInt8]) {
            self.version = version
            self.body = body
        }
    }

    /// A Swift app's state and the list version it was saved at (0 for states saved without one).
    public struct AppState: Sendable, Equatable {
        public var version: Int
        public var bytes: [UInt8]

        public init(version: Int, bytes: [UInt8]) {
            self.version = version
            self.bytes = bytes
        }
    }

    /// The highest version ever handed out (or reserved) per list name, deleted lists included.
    public var highWater: [String: Int] = [:]
    /// JSON-driven lists by name.
    public var jsonLists: [String: JSONList] = [:]
    /// Swift apps' states by name.
    public var appStates: [String: AppState] = [:]

    public init(highWater: [String: Int] = [:], jsonLists: [String: JSONList] = [:], appStates: [String: AppState] = [:]) {
        self.highWater = highWater
        self.jsonLists = jsonLists
        self.appStates = appStates
    }
}

extension StoredLists.JSONList {
    /// This list with `patches` (each an encoded ``JSONListPatch``, the versions after this one in
    /// order) applied: for a store that keeps a list as a body and the patches after it. Limits are not
    /// applied (what was accepted stays).
    ///
    /// - Throws: when a patch does not decode or apply: the store is corrupt (`what` names where).
    public func applying(_ patches: [[UInt8]], what: String) throws(StoreError) -> StoredLists.JSONList {
        guard !patches.isEmpty else { return self }
        do {
            var decoded: [JSONListPatch] = []
            decoded.reserveCapacity(patches.count)
            for patch in patches {
                decoded.append(try JSONListPatch.decode(patch, limits: .unlimited))
            }
            let state = try JSONListState.decode(body, limits: .unlimited).applying(decoded)
            return StoredLists.JSONList(version: version + patches.count, body: state.encoded())
        } catch {
            throw StoreError("\(what): the patches after version \(version) do not apply (\(error)); the store is corrupt")
        }
    }
}

/// A store that cannot be used, with a message for the operator.
public struct StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: Sendable, Equatable {
        /// The store failed: a disk error, a corrupt file, a refused query.
        case failed
        /// The store cannot be reached now (a database down or restarting), and the call changed
        /// nothing; try again later.
        case unavailable
        /// The store did not answer whether a write was kept (it stalled, or the connection was lost,
        /// with the write in flight): it may be kept, now or later. Never used for a write known not
        /// to be kept.
        case outcomeUnknown
        /// A shared store holds `version` of the list, which the write did not follow: another process
        /// wrote first. Catch up and write again.
        case stale(version: Int)
        /// A shared store holds its limit of JSON-driven lists.
        case limitReached(limit: Int)
        /// A shared store already keeps a write with this idempotency key on this list (another
        /// process's, or a retry's that came first): nothing was written; answer what it kept.
        case idempotencyKeyUsed
    }

    public var kind: Kind
    public var description: String

    public init(_ description: String) {
        kind = .failed
        self.description = description
    }

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// A store in memory, for tests and ephemeral runs.
public final class MemoryListStore: ListStore, Sendable {
    private let contents: Mutex<StoredLists>

    public init(_ contents: StoredLists = StoredLists()) {
        self.contents = Mutex(contents)
    }

    public func load() throws(StoreError) -> StoredLists {
        contents.withLock { $0 }
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        contents.withLock { $0.raise(name, to: version) }
    }

    public func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        contents.withLock { contents in
            contents.jsonLists[name] = .init(version: version, body: body)
            contents.raise(name, to: version)
        }
    }

    public func deleteJSONList(name: String, version: Int) throws(StoreError) {
        contents.withLock { contents in
            contents.jsonLists.removeValue(forKey: name)
            contents.raise(name, to: version)
        }
    }

    public func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        contents.withLock { contents in
            contents.appStates[name] = .init(version: version, bytes: bytes)
            contents.raise(name, to: version)
        }
    }

    public func appState(name: String) throws(StoreError) -> StoredLists.AppState? {
        contents.withLock { $0.appStates[name] }
    }

    private let secretBytes: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        return (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
    }()

    public func secret() throws(StoreError) -> [UInt8] {
        secretBytes
    }

    /// The ended sign-ins in force, by digest.
    private let ended = Mutex<[String: EndedSignIn]>([:])

    /// Keeps `ended` in memory until its cookie expires (those expired by the clock are dropped then).
    public func recordEndedSignIn(_ ended: EndedSignIn) throws(StoreError) {
        let checked = try ended.checked()
        let now = EndedSignIn.secondsNow()
        self.ended.withLock { kept in
            kept = kept.filter { $0.value.expires > now }
            kept[checked.digest] = checked
        }
    }

    public func endedSignIns(now: Int) throws(StoreError) -> [EndedSignIn] {
        ended.withLock { kept in kept.values.filter { $0.expires > now }.sorted { $0.digest < $1.digest } }
    }
}

extension StoredLists {
    /// Raises the high-water mark of `name` to `version` (never lowers it).
    fileprivate mutating func raise(_ name: String, to version: Int) {
        highWater[name] = max(highWater[name] ?? 0, version)
    }
}
