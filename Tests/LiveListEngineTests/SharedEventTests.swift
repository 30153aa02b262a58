import LiveListHTML
@testable import LiveListEngine
import Synchronization
import LiveListTestSupport
import Testing

private struct Line: IdentifiableComponent, Equatable {
    var id: String
    var text: String
    var body: some HTML { text }
}

/// What streams that need the same bytes share (hostile input, round two): a reset or a catch-up is
/// encoded once per list, version and rendering scope, never once per stream; and names that streams
/// ask for cost nothing once they end.
@Suite struct SharedEventTests {
    /// The regression: five streams resuming from an unknown version each got a reset of their own,
    /// encoded apart (1.3 GB for a 4 MB list).
    @Test func resetsFromAnyVersionShareOneTail() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("big"), body: jsonBody(["a", "b", "c"]), ifMatch: nil)
        _ = try await registry.put(listName("big"), body: jsonBody(["a", "c"]), ifMatch: nil)
        let list = try #require(registry.existingList(listName("big")))
        var sinks: [RecordingSink] = []
        for since in [-1, 999, 123_456, 7] {
            let sink = RecordingSink()
            await list.subscribe(sink, since: since)
            sinks.append(sink)
        }
        let events = sinks.map { $0.received }
        #expect(events.allSatisfy { $0.count == 1 })
        let tails = events.map { $0[0].tail }
        #expect(tails.dropFirst().allSatisfy { $0 === tails[0] }, "one tail for every reset")
        // Each says where it starts, as docs/PROTOCOL.md asks, and is the whole reset.
        for (sink, since) in zip(sinks, [-1, 999, 123_456, 7]) {
            let data = sink.events[0].data
            #expect(data.hasPrefix(#"{"protocol":1,"list":"big","from":\#(since),"version":2,"#), "\(data)")
            #expect(data.contains(#""op":"reset""#) && data.contains(#"data-cell=\"c\""#))
        }
        // The next version encodes anew: nothing of the old one is kept.
        _ = try await registry.put(listName("big"), body: jsonBody(["z"]), ifMatch: nil)
        let late = RecordingSink()
        await list.subscribe(late, since: -1)
        #expect(late.received.count == 1 && late.received[0].tail !== tails[0])
        #expect(late.events[0].data.contains(#"data-cell=\"z\""#))
    }

    @Test func catchUpsFromOneVersionShareTheirBytesAndEqualTheLoggedDiff() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("l"), body: jsonBody(["a"]), ifMatch: nil)
        _ = try await registry.put(listName("l"), body: jsonBody(["a", "b"]), ifMatch: nil)
        _ = try await registry.put(listName("l"), body: jsonBody(["b", "a", "c"]), ifMatch: nil)
        let list = try #require(registry.existingList(listName("l")))
        let first = RecordingSink()
        let second = RecordingSink()
        await list.subscribe(first, since: 1)
        await list.subscribe(second, since: 1)
        #expect(first.received.count == 1 && second.received.count == 1)
        #expect(first.received[0].tail === second.received[0].tail)
        let expected = String(decoding: await list.changes(since: 1).encodedJSON(), as: UTF8.self)
        #expect(first.events[0].data == expected)
        #expect(first.events[0].id == "3")
    }

    /// A list rendered per viewer never shares what it renders for one viewer with another.
    @Test func perViewerResetsAreEachViewersOwn() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let list = try await registry.hostApp(listName("mine"), perViewer: { viewer in
            [Section(id: "s", cells: [CellNode(Line(id: "who", text: "for \(viewer.session ?? "nobody")"))])]
        })
        let alice = RecordingSink()
        let bob = RecordingSink()
        await list.subscribe(alice, since: -1, viewer: Viewer(session: "alice"))
        await list.subscribe(bob, since: -1, viewer: Viewer(session: "bob"))
        #expect(alice.received.count == 1 && bob.received.count == 1)
        #expect(alice.received[0].tail !== bob.received[0].tail)
        #expect(alice.events[0].data.contains("for alice") && !alice.events[0].data.contains("for bob"))
        #expect(bob.events[0].data.contains("for bob") && !bob.events[0].data.contains("for alice"))
    }

    /// The regression: every name a stream asked for stayed in the high-water table (480,000 random
    /// names: 86 MB held with no stream open).
    @Test func namesNeverCreatedLeaveNothingBehind() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        var random = SystemRandomNumberGenerator()
        for _ in 0 ..< 50 {
            let sink = RecordingSink()
            let names = (0 ..< 32).map { _ in listName("n" + String(random.next(), radix: 36)) }
            let stream = MultiplexedStream(sink: sink, names: names.map(\.rawValue), versions: [:])
            await registry.subscribe(stream, names: names, since: [:])
            #expect(sink.received.count == 32, "each missing list gets its empty reset")
            sink.close()
            await registry.forget(stream)
        }
        #expect(await registry.nameCount == 0)
        // A list that did exist keeps its version after it is deleted, so that it is never reused.
        _ = try await registry.put(listName("kept"), body: jsonBody(["a"]), ifMatch: nil)
        _ = try await registry.delete(listName("kept"))
        #expect(await registry.nameCount == 1)
        let again = try await registry.put(listName("kept"), body: jsonBody(["b"]), ifMatch: nil)
        #expect(again.version == 3)
    }

    /// Past the limit of names, a stream still gets an empty reset for a missing list, without
    /// growing the registry.
    @Test func pastTheLimitOfNamesStreamsDoNotWait() async throws {
        var limits = RegistryLimits()
        limits.maximumNames = 10
        let registry = try await ListRegistry(store: MemoryListStore(), limits: limits)
        _ = try await registry.put(listName("real"), body: jsonBody(["a"]), ifMatch: nil)
        let sink = RecordingSink()
        let names = [listName("real")] + (0 ..< 31).map { listName("w\($0)") }
        let stream = MultiplexedStream(sink: sink, names: names.map(\.rawValue), versions: [:])
        await registry.subscribe(stream, names: names, since: [:])
        #expect(await registry.nameCount == 10)
        #expect(sink.events.count == 31, "one empty reset for each missing list; the real one is current")
        #expect(sink.events.allSatisfy { $0.data.contains(#""op":"reset""#) })
        // The list that exists is still followed by the stream.
        _ = try await registry.put(listName("real"), body: jsonBody(["a", "b"]), ifMatch: nil)
        #expect(sink.events.last?.data.contains(#""list":"real""#) == true)
        sink.close()
        await registry.forget(stream)
        #expect(await registry.nameCount == 1)
    }
}
