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

/// A store that cannot be used, with a message for the operator.
public struct StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A store in memory, for tests and ephemeral runs.
public final class MemoryListStore: ListStore, @unchecked Sendable {
    private let lock = Mutex<Void>(())
    private var contents: StoredLists

    public init(_ contents: StoredLists = StoredLists()) {
        self.contents = contents
    }

    public func load() throws(StoreError) -> StoredLists {
        lock.withLock { _ in contents }
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        lock.withLock { _ in raise(name, to: version) }
    }

    public func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        lock.withLock { _ in
            contents.jsonLists[name] = .init(version: version, body: body)
            raise(name, to: version)
        }
    }

    public func deleteJSONList(name: String, version: Int) throws(StoreError) {
        lock.withLock { _ in
            contents.jsonLists.removeValue(forKey: name)
            raise(name, to: version)
        }
    }

    public func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        lock.withLock { _ in
            contents.appStates[name] = .init(version: version, bytes: bytes)
            raise(name, to: version)
        }
    }

    public func appState(name: String) throws(StoreError) -> StoredLists.AppState? {
        lock.withLock { _ in contents.appStates[name] }
    }

    /// Called with the lock held.
    private func raise(_ name: String, to version: Int) {
        contents.highWater[name] = max(contents.highWater[name] ?? 0, version)
    }

    private let secretBytes: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        return (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
    }()

    public func secret() throws(StoreError) -> [UInt8] {
        secretBytes
    }
}
