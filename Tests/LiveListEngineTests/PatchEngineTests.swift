import Foundation
import LiveListHTML
@testable import LiveListEngine
import LiveListTestSupport
import Testing
import Synchronization

/// Patches through the registry's Swift API: what docs/GUIDE.md shows an app doing, and what streams get.
@Suite struct PatchEngineTests {
    /// The guide's feed ("Large lists fed from Swift"), as written there.
    @Test func theGuidesFeedCompilesAndWorks() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        struct Row { var id: String, title: String, score: String }
        let row = Row(id: "r1", title: "First", score: "10")
        let expired = Row(id: "r0", title: "Old", score: "1")
        // From docs/GUIDE.md:
        let feed = ListName("feed")!
        _ = try await registry.put(feed, body: Array(#"{"sections":[{"id":"s","cells":[{"id":"r0","text":"Old"}]}]}"#.utf8))
        let (write, skipped) = try await registry.patch(feed, JSONListPatch(operations: [
            .upsert(cell: .init(id: row.id, text: row.title, detail: row.score), section: "s", position: .first),
            .remove(cell: expired.id),
        ]))
        #expect(skipped == 0 && write.version == 2)
        #expect(write.changeset.operations.map(\.name) == ["insert", "delete"])
        let state = await (try #require(registry.existingList(feed))).snapshot().state
        #expect(String(decoding: state ?? [], as: UTF8.self) == #"{"sections":[{"id":"s","cells":[{"id":"r1","text":"First","detail":"10"}]}]}"#)
    }

    /// A patch's changeset goes to every stream, with the same bytes as the writer's answer.
    @Test func aPatchReachesTheStreamsAsItsAnswerSays() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let name = listName("p")
        _ = try await registry.put(name, body: jsonBody(["a", "b"]))
        let list = try #require(registry.existingList(name))
        let sink = RecordingSink()
        _ = await list.subscribe(sink, since: 1)
        let (write, _) = try await registry.patch(name, JSONListPatch(operations: [.update(cell: .init(id: "a", text: "A"))]))
        #expect(sink.events.map(\.id) == ["2"])
        #expect(sink.events.first?.data == String(decoding: write.json, as: UTF8.self))
        // A patch that changes nothing sends nothing and takes no version.
        let (same, skipped) = try await registry.patch(name, JSONListPatch(operations: [.update(cell: .init(id: "a", text: "A")), .remove(cell: "x")]))
        #expect(same.version == 2 && skipped == 1 && sink.events.count == 1)
    }

    /// A patch the store cannot keep leaves the list as it was, and the next one applies to it.
    @Test func aPatchThatCannotBeStoredChangesNothing() async throws {
        let store = FailingStore(failing: false)
        let registry = try await ListRegistry(store: store)
        let name = listName("f")
        _ = try await registry.put(name, body: jsonBody(["a", "b"]))
        store.failing = true
        await #expect(throws: ListWriteError.self) {
            _ = try await registry.patch(name, JSONListPatch(operations: [.remove(cell: "a"), .upsert(cell: .init(id: "c", text: "c"), section: "s", position: .first)]))
        }
        store.failing = false
        let list = try #require(registry.existingList(name))
        #expect(await list.version == 1)
        let (write, _) = try await registry.patch(name, JSONListPatch(operations: [.upsert(cell: .init(id: "d", text: "d"), section: "s", position: .after("a"))]))
        #expect(write.version == 2)
        let cells = await list.snapshot().rendering.sections[0].cells.map(\.key)
        #expect(cells == ["a", "d", "b"])
    }
}

/// A patch renders into the page only what it names and leaves the renderer's sections behind; what
/// reads them (an action's cell, a later diff) must see the state as it is.
@Suite struct PatchedSectionsTests {
    @Test func aSelectionFindsACellThatAPatchInserted() async throws {
        let selected = Mutex<[String]>([])
        var configuration = ListConfiguration()
        configuration.adapter.didSelect = { context in selected.withLock { $0.append(context.cellKey) } }
        let registry = try await ListRegistry(store: MemoryListStore(), configuration: configuration)
        let name = listName("picks")
        _ = try await registry.put(name, body: jsonBody(["a", "b"]))
        _ = try await registry.patch(name, JSONListPatch(operations: [.upsert(cell: .init(id: "n", text: "new"), section: "s", position: .first)]))
        let list = try #require(registry.existingList(name))
        #expect(await list.perform(ListAction(type: "select", cell: "n")) == .handled)
        #expect(selected.withLock { $0 } == ["n"])
    }

    @Test func aMoveAfterPatchesDiffsAgainstThePatchedList() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let name = listName("moves")
        _ = try await registry.put(name, body: jsonBody(["a", "b", "c"]))
        _ = try await registry.patch(name, JSONListPatch(operations: [.upsert(cell: .init(id: "d", text: "d"), section: "s", position: .first)]))
        _ = try await registry.patch(name, JSONListPatch(operations: [.remove(cell: "b")]))
        // A move is rendered whole and diffed: against [d, a, c], not the [a, b, c] the last full render saw.
        let (write, _) = try await registry.patch(name, JSONListPatch(operations: [.upsert(cell: .init(id: "a", text: "a"), section: "s", position: .last)]))
        #expect(write.changeset.operations.map(\.name) == ["move"], "\(write.changeset.operations)")
        let list = try #require(registry.existingList(name))
        #expect(await list.snapshot().rendering.sections[0].cells.map(\.key) == ["d", "c", "a"])
    }
}
