@testable import LiveListEngine
import LiveListTestSupport
import Testing

/// Writes with an `Idempotency-Key`: a retry with the key and the same request gets what the first
/// made and makes no version; the key with another request is refused; racing retries write once.
@Suite struct IdempotencyTests {
    private func key(_ key: String, _ request: String) -> IdempotencyKey {
        IdempotencyKey(key: key, fingerprint: Array(request.utf8))
    }

    @Test func aRetriedPutGetsTheFirstAnswerAndMakesNoVersion() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let first = try await registry.put(listName("k"), body: jsonBody(["a"]), idempotency: key("add-a", "PUT a"))
        #expect(first.created && !first.replayed && first.version == 1)
        let retry = try await registry.put(listName("k"), body: jsonBody(["a"]), idempotency: key("add-a", "PUT a"))
        #expect(retry.replayed && retry.created && retry.version == 1)
        #expect(retry.json == first.json, "the first answer again")
        let other = try await registry.put(listName("k"), body: jsonBody(["a", "b"]), idempotency: key("add-b", "PUT a b"))
        #expect(other.version == 2 && !other.replayed)
        // Once the list has moved on, a replay names the version the write made.
        let late = try await registry.put(listName("k"), body: jsonBody(["a"]), idempotency: key("add-a", "PUT a"))
        #expect(late.replayed && late.version == 1 && late.changeset.operations.isEmpty)
        #expect(await registry.existingList(listName("k"))?.version == 2, "no version made by a replay")
        let reused = await #expect(throws: ListWriteError.self) {
            try await registry.put(listName("k"), body: jsonBody(["c"]), idempotency: key("add-a", "PUT c"))
        }
        #expect(reused?.code == "idempotency_key_reused" && reused?.kind == .invalid)
    }

    @Test func aRetriedDeleteGetsItsFinalResetNotA404() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("d"), body: jsonBody(["a"]))
        let deleted = try await registry.delete(listName("d"), idempotency: key("drop", "DELETE"))
        let retry = try await registry.delete(listName("d"), idempotency: key("drop", "DELETE"))
        #expect(retry.replayed && retry.json == deleted.json)
        let plain = await #expect(throws: ListWriteError.self) { try await registry.delete(listName("d")) }
        #expect(plain?.code == "not_found")
    }

    @Test func racingRetriesWriteOnce() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("r"), body: jsonBody(["start"]))
        let writes = await withTaskGroup(of: ListWrite?.self) { group in
            for _ in 0 ..< 20 {
                group.addTask { try? await registry.put(listName("r"), body: jsonBody(["start", "once"]), idempotency: self.key("once", "PUT once")) }
            }
            var all: [ListWrite] = []
            for await write in group { if let write { all.append(write) } }
            return all
        }
        #expect(writes.count == 20)
        #expect(writes.filter { !$0.replayed }.count == 1, "one of the twenty wrote")
        #expect(Set(writes.map(\.version)) == [2])
        #expect(await registry.existingList(listName("r"))?.version == 2)
    }

    /// The last `capacity` keys stay, the oldest go first; a key forgotten and kept again takes a new
    /// place, so its old place evicts nothing.
    @Test func recentlyKeptForgetsTheOldestPastItsCapacity() {
        var kept = RecentlyKept<Int>(capacity: 3)
        for (index, key) in ["a", "b", "c"].enumerated() { kept.keep(index, for: key) }
        kept.forget("a")
        kept.keep(10, for: "a")
        kept.keep(3, for: "d")
        #expect(kept["a"] == 10 && kept["b"] == nil && kept["c"] == 2 && kept["d"] == 3)
        kept.keep(20, for: "c")
        for index in 0 ..< 100 { kept.keep(index, for: "k\(index)") }
        #expect(kept["k99"] == 99 && kept["k97"] == 97 && kept["k96"] == nil && kept["a"] == nil)
    }
}
