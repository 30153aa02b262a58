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

    /// Keys kept and forgotten without end (what refused actions with fresh keys do) hold at most
    /// twice the capacity of places: a forgotten key's place does not stay forever.
    @Test func keysKeptAndForgottenHoldBoundedPlaces() {
        var kept = RecentlyKept<Int>(capacity: 100)
        var most = 0
        for index in 0 ..< 100_000 {
            kept.keep(index, for: "fresh-\(index)")
            kept.forget("fresh-\(index)")
            most = max(most, kept.placesHeld)
        }
        #expect(most <= 2 * 100 + 1, "at most \(2 * 100 + 1) places, held \(most)")
        #expect(kept.count == 0)
    }

    /// Against a model (an ordered list of live keys), for random keeps and forgets: the same keys and
    /// values, and places bounded. The seed is printed.
    @Test func recentlyKeptMatchesAModel() {
        let seed = UInt64.random(in: 0 ... .max)
        print("recentlyKeptMatchesAModel: seed \(seed)")
        var random = SplitMix64(seed: seed)
        let capacity = Int.random(in: 1 ... 20, using: &random)
        var kept = RecentlyKept<Int>(capacity: capacity)
        var model: [(key: String, value: Int)] = []
        for step in 0 ..< 5_000 {
            let key = "k\(Int.random(in: 0 ..< 40, using: &random))"
            if Bool.random(using: &random) {
                if let index = model.firstIndex(where: { $0.key == key }) {
                    model[index].value = step
                } else {
                    model.append((key, step))
                    if model.count > capacity { model.removeFirst() }
                }
                kept.keep(step, for: key)
            } else {
                model.removeAll { $0.key == key }
                kept.forget(key)
            }
            #expect(kept.placesHeld <= 2 * capacity + 1, "seed \(seed), step \(step)")
        }
        for index in 0 ..< 40 {
            let key = "k\(index)"
            #expect(kept[key] == model.first(where: { $0.key == key })?.value, "seed \(seed): \(key)")
        }
    }
}
