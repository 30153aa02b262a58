import Foundation
import LiveListEngine
import LiveListTestSupport
import Synchronization
import Testing

/// The stores of one process against the ListStore contract (Sources/LiveListTestSupport/
/// ListStoreContract.swift); the PostgreSQL store runs the same checks and the shared ones in
/// Tests/LiveListPostgresTests.
@Suite struct ListStoreContractTests {
    /// A new store in memory per check; "opening it anew" is that same instance.
    static let memory = ListStoreContract("MemoryListStore") {
        let store = MemoryListStore()
        return ContractStorage(reopens: false, open: { store })
    }

    /// A temporary data directory per check, removed afterwards; a store is closed (unlocked) before
    /// another opens the directory, since a second store on it is refused.
    static let file = ListStoreContract("FileListStore") {
        let directory = NSTemporaryDirectory() + "livelist-contract-\(UUID().uuidString)"
        return ContractStorage(
            open: { try FileListStore(directory: directory) },
            close: { store in
                if let file = store as? FileListStore {
                    file.unlock()
                }
            },
            remove: { _ = try? FileManager.default.removeItem(atPath: directory) })
    }

    @Test(arguments: ListStoreContract.Check.allCases)
    func memoryListStore(_ check: ListStoreContract.Check) async throws {
        try await Self.memory.run(check)
    }

    @Test(arguments: ListStoreContract.Check.allCases)
    func fileListStore(_ check: ListStoreContract.Check) async throws {
        try await Self.file.run(check)
    }

    /// The shared checks refuse a store that is not shared rather than passing it by default.
    @Test func theSharedChecksRefuseAStoreOfOneProcess() async throws {
        await #expect(throws: ContractViolation.self) {
            try await Self.memory.run(ListStoreContract.SharedCheck.staleWrites)
        }
    }

    /// The contract can fail: a store that lowers its high-water marks breaks it.
    @Test func aStoreThatLowersItsHighWaterMarksBreaksTheContract() async throws {
        let contract = ListStoreContract("LoweringStore") {
            let store = LoweringStore()
            return ContractStorage(reopens: false, open: { store })
        }
        let violation = await #expect(throws: ContractViolation.self) {
            try await contract.run(.highWater)
        }
        #expect(violation?.description.contains("LoweringStore") == true, "\(String(describing: violation))")
    }
}

/// A memory store whose `saveHighWater` overwrites the mark instead of raising it.
private final class LoweringStore: ListStore, Sendable {
    private let memory = MemoryListStore()
    private let lowered = Mutex<[String: Int]>([:])

    func load() throws(StoreError) -> StoredLists {
        var stored = try memory.load()
        for (name, version) in lowered.withLock({ $0 }) {
            stored.highWater[name] = version
        }
        return stored
    }

    func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        lowered.withLock { $0[name] = version }
    }

    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        try memory.saveJSONList(name: name, version: version, body: body)
    }

    func deleteJSONList(name: String, version: Int) throws(StoreError) {
        try memory.deleteJSONList(name: name, version: version)
    }

    func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        try memory.saveAppState(name: name, version: version, bytes: bytes)
    }

    func appState(name: String) throws(StoreError) -> StoredLists.AppState? {
        try memory.appState(name: name)
    }

    func secret() throws(StoreError) -> [UInt8] {
        try memory.secret()
    }
}
