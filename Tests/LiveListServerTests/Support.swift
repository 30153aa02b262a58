import LiveListHTML
@testable import LiveListServer
@testable import LiveListEngine
import Synchronization
import Testing

/// An event sink that records what it is sent, and can pretend to be a slow reader.
final class RecordingSink: EventSink, @unchecked Sendable {
    private let state = Mutex<(events: [ListEvent], queued: Int, closed: Bool, drainWaiters: [@Sendable () -> Void])>(([], 0, false, []))

    func send(_ event: ListEvent) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.events.append(event)
            return true
        }
    }

    var queuedBytes: Int { state.withLock { $0.queued } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.queued == 0 { return true }
            state.drainWaiters.append(body)
            return false
        }
        if now { body() }
    }

    func close() {
        state.withLock { $0.closed = true }
    }

    /// Pretends the peer stopped reading (`bytes` queued) or caught up (0, which runs drain waiters).
    func setQueued(_ bytes: Int) {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.queued = bytes
            guard bytes == 0 else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        waiters.forEach { $0() }
    }

    /// The events received so far, as the list handed them out.
    var received: [ListEvent] {
        state.withLock { $0.events }
    }

    /// The events received so far: (id, JSON data).
    var events: [(id: String, data: String)] {
        state.withLock { $0.events }.map { ($0.id, String(decoding: $0.data, as: UTF8.self)) }
    }
}

/// A JSON list body with one section of the given cells (id = text).
func body(_ cells: [String], section: String = "s", header: String? = nil) -> [UInt8] {
    let items = cells.map { "{\"id\":\"\($0)\",\"text\":\"\($0)\"}" }.joined(separator: ",")
    let head = header.map { ",\"header\":\"\($0)\"" } ?? ""
    return Array("{\"sections\":[{\"id\":\"\(section)\"\(head),\"cells\":[\(items)]}]}".utf8)
}

func name(_ text: String) -> ListName {
    ListName(text)!
}

/// Waits (bounded) until `condition` holds, yielding to let tasks run.
func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0 ..< 500 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}

/// A store whose writes fail (while `failing`) with a message naming a file, as a real file system
/// error does.
final class FailingStore: ListStore, @unchecked Sendable {
    private let memory = MemoryListStore()
    let path = "/srv/secret-data-dir/lists/victim.list"
    var failing: Bool

    init(failing: Bool = true) {
        self.failing = failing
    }

    private func check() throws(StoreError) {
        if failing { throw StoreError("cannot write \(path): Too many open files") }
    }

    func load() throws(StoreError) -> StoredLists { try memory.load() }
    func saveHighWater(_ version: Int, for name: String) throws(StoreError) { try check(); try memory.saveHighWater(version, for: name) }
    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) { try check(); try memory.saveJSONList(name: name, version: version, body: body) }
    func deleteJSONList(name: String, version: Int) throws(StoreError) { try check(); try memory.deleteJSONList(name: name, version: version) }
    func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) { try check(); try memory.saveAppState(name: name, version: version, bytes: bytes) }
    func appState(name: String) throws(StoreError) -> StoredLists.AppState? { try memory.appState(name: name) }
    func secret() throws(StoreError) -> [UInt8] { try memory.secret() }
}
