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

/// Each customer's lines, as a live query's groups would hold them; counts renderings by group.
private final class Lines: Sendable {
    let state = Mutex<(lines: [String: [String]], renders: [String: Int])>(([:], [:]))

    func sections(_ group: String) -> [Section] {
        let lines = state.withLock { state in
            state.renders[group, default: 0] += 1
            return state.lines[group] ?? []
        }
        return [Section(id: "s", cells: lines.map { CellNode(Line(id: $0, text: "\(group): \($0)")) })]
    }

    func renders(_ group: String) -> Int {
        state.withLock { $0.renders[group] ?? 0 }
    }
}

@Suite struct PartitionedListTests {
    private static func viewer(_ id: String?) -> Viewer {
        Viewer(session: id.map { "session-\($0)" }, identity: id.map { Identity(id: $0) })
    }

    @Test func viewersOfOneGroupShareOneRenderingAndOnlyTheChangedGroupHears() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let lines = Lines()
        lines.state.withLock { $0.lines = ["alice": ["a1"], "bob": ["b1"]] }
        let list = try await registry.hostApp(
            listName("mine"), groupedBy: { $0?.id }, prepare: { _ in nil }, render: { lines.sections($0) }
        )
        let start = await list.version
        #expect(await list.pageHTML(for: Self.viewer("alice")).html.contains("alice: a1"))
        #expect(await !list.pageHTML(for: Self.viewer("alice")).html.contains("bob"), "a group sees its own rows alone")
        #expect(await list.snapshot(for: Self.viewer(nil)).rendering.cellCount == 0, "a viewer in no group sees no cells")

        // Two tabs of alice's and one of bob's: two groups, each rendered once when it opened.
        let alice1 = RecordingSink()
        let alice2 = RecordingSink()
        let bob = RecordingSink()
        await list.subscribe(alice1, since: start, viewer: Self.viewer("alice"))
        await list.subscribe(alice2, since: start, viewer: Self.viewer("alice"))
        await list.subscribe(bob, since: start, viewer: Self.viewer("bob"))
        #expect(await list.viewedGroups == ["alice": 2, "bob": 1])
        let aliceRenders = lines.renders("alice")

        // Alice's rows change: her group renders once, both her streams get the same event, bob nothing.
        lines.state.withLock { $0.lines["alice"] = ["a1", "a2"] }
        let second = try #require(try await list.refresh(["alice"]))
        #expect(lines.renders("alice") == aliceRenders + 1, "one rendering for the group, not one per stream")
        #expect(alice1.events.count == 1 && alice2.events.count == 1 && bob.events.isEmpty)
        #expect(alice1.received[0].data == alice2.received[0].data, "encoded once for the group's streams")
        #expect(alice1.events[0].data.contains(#""from":\#(start),"version":\#(second)"#) && alice1.events[0].data.contains("alice: a2"))

        // Bob's turn: his changeset starts where he was last sent.
        lines.state.withLock { $0.lines["bob"] = [] }
        let third = try #require(try await list.refresh(["bob"]))
        #expect(bob.events.count == 1 && bob.events[0].data.contains(#""from":\#(start),"version":\#(third)"#))
        #expect(alice1.events.count == 1)

        // A group named whose rows did not change: a version (a page without a stream may hold that
        // group), but no event.
        let fourth = try #require(try await list.refresh(["alice"]))
        #expect(fourth == third + 1 && alice1.events.count == 1)

        // A viewer that missed versions gets its group's rows anew.
        let late = await list.changes(since: start, for: Self.viewer("alice"))
        #expect(late.isReset && late.version == fourth)

        // The last stream of a group gone, the group goes.
        await list.unsubscribe(bob)
        #expect(await list.viewedGroups == ["alice": 2])
    }

    @Test func aGroupThatCannotRenderLeavesTheOthersRefreshed() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let lines = Lines()
        lines.state.withLock { $0.lines = ["alice": ["a1"], "bob": ["b1"]] }
        let list = try await registry.hostApp(listName("mine"), groupedBy: { $0?.id }, prepare: { _ in nil }, render: { lines.sections($0) })
        let alice = RecordingSink()
        let bob = RecordingSink()
        await list.subscribe(alice, since: await list.version, viewer: Self.viewer("alice"))
        await list.subscribe(bob, since: await list.version, viewer: Self.viewer("bob"))
        // Duplicate keys in alice's rows: her group stays as it was; bob's is refreshed all the same.
        lines.state.withLock { $0.lines = ["alice": ["x", "x"], "bob": ["b2"]] }
        await #expect(throws: (any Error).self) { try await list.refresh(["alice", "bob"]) }
        #expect(alice.events.isEmpty && bob.events.count == 1 && bob.events[0].data.contains("bob: b2"))
    }

    @Test func anActionNamesACellOfTheViewersOwnGroup() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let lines = Lines()
        lines.state.withLock { $0.lines = ["alice": ["a1"], "bob": ["b1"]] }
        let list = try await registry.hostApp(listName("mine"), groupedBy: { $0?.id }, prepare: { _ in nil }, render: { lines.sections($0) })
        let closed = Mutex<[String]>([])
        let accepting: @Sendable (String) -> Bool = { $0 == "close" }
        await list.onAction(accepting: accepting) { action in closed.withLock { $0.append(action.cell ?? "") } }
        let alice = Identity(id: "alice")
        // Without a stream (the group rendered for the action), then with one (the group's own rendering).
        #expect(await list.perform(ListAction(type: "close", cell: "a1", identity: alice)) == .handled)
        await list.subscribe(RecordingSink(), since: await list.version, viewer: Viewer(session: "s", identity: alice))
        #expect(await list.perform(ListAction(type: "close", cell: "a1", identity: alice)) == .handled)
        #expect(await list.perform(ListAction(type: "close", cell: "b1", identity: alice)) == .unknownCell, "bob's cell is not alice's to act on")
        #expect(await list.perform(ListAction(type: "close", cell: "a1")) == .unknownCell, "a viewer in no group acts on nothing")
        #expect(closed.withLock { $0 } == ["a1", "a1"])
    }
}
