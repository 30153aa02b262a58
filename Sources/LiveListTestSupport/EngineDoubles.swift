public import LiveListEngine
public import LiveListHTML
import Synchronization

// Doubles and helpers of the engine's tests and the server's: a recording event sink, a failing
// store, JSON list bodies.

/// An event sink that records what it is sent, and can pretend to be a slow reader.
public final class RecordingSink: EventSink, @unchecked Sendable {
    public init() {}

    private let state = Mutex<(events: [ListEvent], queued: Int, closed: Bool, drainWaiters: [@Sendable () -> Void])>(([], 0, false, []))

    public func send(_ event: ListEvent) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.events.append(event)
            return true
        }
    }

    public var queuedBytes: Int { state.withLock { $0.queued } }
    public var isClosed: Bool { state.withLock { $0.closed } }

    public func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.queued == 0 { return true }
            state.drainWaiters.append(body)
            return false
        }
        if now { body() }
    }

    public func close() {
        state.withLock { $0.closed = true }
    }

    /// Pretends the peer stopped reading (`bytes` queued) or caught up (0, which runs drain waiters).
    public func setQueued(_ bytes: Int) {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.queued = bytes
            guard bytes == 0 else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        waiters.forEach { $0() }
    }

    /// The events received so far, as the list handed them out.
    public var received: [ListEvent] {
        state.withLock { $0.events }
    }

    /// The events received so far: (id, JSON data).
    public var events: [(id: String, data: String)] {
        state.withLock { $0.events }.map { ($0.id, String(decoding: $0.data, as: UTF8.self)) }
    }
}

/// A JSON list body with one section of the given cells (id = text).
public func jsonBody(_ cells: [String], section: String = "s", header: String? = nil) -> [UInt8] {
    let items = cells.map { "{\"id\":\"\($0)\",\"text\":\"\($0)\"}" }.joined(separator: ",")
    let head = header.map { ",\"header\":\"\($0)\"" } ?? ""
    return Array("{\"sections\":[{\"id\":\"\(section)\"\(head),\"cells\":[\(items)]}]}".utf8)
}

/// The list name `text`, which the test knows to be valid.
public func listName(_ text: String) -> ListName {
    ListName(text)!
}

/// Waits (bounded) until `condition` holds, yielding to let tasks run.
public func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0 ..< 500 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}

/// A store whose writes fail (while `failing`) with a message naming a file, as a real file system
/// error does.
public final class FailingStore: ListStore, @unchecked Sendable {
    private let memory = MemoryListStore()
    public let path = "/srv/secret-data-dir/lists/victim.list"
    public var failing: Bool

    public init(failing: Bool = true) {
        self.failing = failing
    }

    private func check() throws(StoreError) {
        if failing { throw StoreError("cannot write \(path): Too many open files") }
    }

    public func load() throws(StoreError) -> StoredLists { try memory.load() }
    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) { try check(); try memory.saveHighWater(version, for: name) }
    public func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) { try check(); try memory.saveJSONList(name: name, version: version, body: body) }
    public func deleteJSONList(name: String, version: Int) throws(StoreError) { try check(); try memory.deleteJSONList(name: name, version: version) }
    public func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) { try check(); try memory.saveAppState(name: name, version: version, bytes: bytes) }
    public func appState(name: String) throws(StoreError) -> StoredLists.AppState? { try memory.appState(name: name) }
    public func secret() throws(StoreError) -> [UInt8] { try memory.secret() }
}

/// A cell showing its text.
public struct Echo: IdentifiableComponent, Equatable {
    public var id: String
    public var text: String

    public init(id: String, text: String) {
        self.id = id
        self.text = text
    }

    public var body: some HTML { text }
}
