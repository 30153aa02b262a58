@testable import LiveListEngine
import LiveListHTML
import LiveListTestSupport
import Testing

extension JSONList {
    /// Several PUTs in one turn of the list's actor: changes that come faster than the node's fan-out.
    func putInOneTurn(_ bodies: [[UInt8]]) throws {
        for body in bodies {
            let (state, idsChecked) = try JSONListState.decodeForPut(body, limits: JSONListLimits())
            _ = try put(state: state, body: body, precondition: .none, idsChecked: idsChecked)
        }
    }
}

/// A change goes to a large audience in slices (``ListConfiguration/fanOutSlice``), so that writes never
/// wait for the whole fan-out; a stream that the node has not reached by the next change skips to it, with
/// one changeset that covers every version it missed: never a gap, never a stream closed for it.
@Suite struct FanOutTests {
    /// Each stream's events, as (from, version) pairs, in order.
    private func steps(_ sink: RecordingSink) -> [(from: Int, version: Int)] {
        sink.events.map { event in
            let from = event.data.firstMatch(of: /"from":(\d+)/).map { Int($0.1)! } ?? -1
            return (from, Int(event.id) ?? -1)
        }
    }

    @Test func changesFasterThanTheFanOutAreCoalescedWithoutGaps() async throws {
        var configuration = ListConfiguration()
        configuration.fanOutSlice = 3
        let registry = try await ListRegistry(store: MemoryListStore(), configuration: configuration)
        _ = try await registry.put(listName("big"), body: jsonBody(["a"]), ifMatch: nil)
        let list = try #require(registry.existingList(listName("big")) as? JSONList)
        let sinks = (0 ..< 10).map { _ in RecordingSink() }
        for sink in sinks {
            await list.subscribe(sink, since: nil)
        }
        // Ten changes in one turn: the first reaches the first slice only; the others come before the
        // fan-out's next turn.
        try await list.putInOneTurn((1 ... 10).map { jsonBody(["a", "b\($0)"]) })
        #expect(list.visibility.version == 11)
        #expect(await eventually { sinks.allSatisfy { $0.events.last?.id == "11" } }, "every stream reaches the last version")
        for (index, sink) in sinks.enumerated() {
            let steps = steps(sink)
            // A chain from the version the stream started at to the last, each event from the one before.
            #expect(steps.first?.from == 1, "stream \(index): \(steps)")
            for (before, after) in zip(steps, steps.dropFirst()) {
                #expect(after.from == before.version, "stream \(index) has a gap: \(steps)")
            }
            #expect(!sink.isClosed)
        }
        let sent = sinks.map { $0.events.count }.reduce(0, +)
        #expect(sent < sinks.count * 10, "streams skipped versions: \(sent) events")
        #expect(await list.counters.coalescedViewers > 0)
    }

    @Test func aSmallAudienceGetsEveryChangeAtOnce() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("small"), body: jsonBody(["a"]), ifMatch: nil)
        let list = try #require(registry.existingList(listName("small")) as? JSONList)
        let sinks = (0 ..< 5).map { _ in RecordingSink() }
        for sink in sinks {
            await list.subscribe(sink, since: nil)
        }
        try await list.putInOneTurn((1 ... 3).map { jsonBody(["a", "b\($0)"]) })
        // Within one slice, every stream got every change before the writes returned.
        for sink in sinks {
            #expect(sink.events.map(\.id) == ["2", "3", "4"])
        }
        #expect(await list.counters.coalescedViewers == 0)
    }
}
