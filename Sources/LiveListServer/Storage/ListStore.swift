/// Where lists keep what must survive a restart: each name's version high-water mark (versions are never
/// reused), the bodies of JSON-driven lists, and the opaque state of Swift apps such as the demo's todo
/// list. A small protocol, so that another backend (PostgreSQL with LISTEN/NOTIFY to fan changes out
/// across processes) can replace the file store without touching the routes.
///
/// Every `save` returns only once the data is durable: a write that returned survives `kill -9`.
public protocol ListStore: Sendable {
    /// Everything stored, read once at start-up.
    func load() throws(StoreError) -> StoredLists
    /// Records that versions up to `version` of `name` may have been handed out.
    func saveHighWater(_ version: Int, for name: String) throws(StoreError)
    /// Stores the body of a JSON-driven list at `version`.
    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError)
    /// Removes a JSON-driven list (its high-water mark stays).
    func removeJSONList(name: String) throws(StoreError)
    /// Stores a Swift app's state under `name`.
    func saveAppState(name: String, bytes: [UInt8]) throws(StoreError)
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

    /// The highest version ever handed out (or reserved) per list name.
    public var highWater: [String: Int] = [:]
    /// JSON-driven lists by name.
    public var jsonLists: [String: JSONList] = [:]
    /// Swift apps' states by name.
    public var appStates: [String: [UInt8]] = [:]

    public init(highWater: [String: Int] = [:], jsonLists: [String: JSONList] = [:], appStates: [String: [UInt8]] = [:]) {
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

/// A store in memory, for tests and for `--data none`-style ephemeral runs.
public final class MemoryListStore: ListStore, @unchecked Sendable {
    private let lock = Lock()
    private var contents: StoredLists

    public init(_ contents: StoredLists = StoredLists()) {
        self.contents = contents
    }

    public func load() throws(StoreError) -> StoredLists {
        lock.withLock { contents }
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        lock.withLock { contents.highWater[name] = max(contents.highWater[name] ?? 0, version) }
    }

    public func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        lock.withLock {
            contents.jsonLists[name] = .init(version: version, body: body)
            contents.highWater[name] = max(contents.highWater[name] ?? 0, version)
        }
    }

    public func removeJSONList(name: String) throws(StoreError) {
        lock.withLock { _ = contents.jsonLists.removeValue(forKey: name) }
    }

    public func saveAppState(name: String, bytes: [UInt8]) throws(StoreError) {
        lock.withLock { contents.appStates[name] = bytes }
    }

    private let secretBytes: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        return (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
    }()

    public func secret() throws(StoreError) -> [UInt8] {
        secretBytes
    }
}
