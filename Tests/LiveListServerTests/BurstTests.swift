import Foundation
import LiveListHTML
@testable import LiveListServer
@testable import LiveListEngine
import Synchronization
import LiveListTestSupport
import Testing

/// A store whose app-state writes take a while (a slow disk's fsync), counting them.
private final class SlowStore: ListStore, @unchecked Sendable {
    private let memory = MemoryListStore()
    let saves = Mutex(0)

    func load() throws(StoreError) -> StoredLists { try memory.load() }
    func saveHighWater(_ version: Int, for name: String) throws(StoreError) { try memory.saveHighWater(version, for: name) }
    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) { try memory.saveJSONList(name: name, version: version, body: body) }
    func deleteJSONList(name: String, version: Int) throws(StoreError) { try memory.deleteJSONList(name: name, version: version) }
    func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        usleep(5_000)
        saves.withLock { $0 += 1 }
        try memory.saveAppState(name: name, version: version, bytes: bytes)
    }
    func appState(name: String) throws(StoreError) -> StoredLists.AppState? { try memory.appState(name: name) }
    func secret() throws(StoreError) -> [UInt8] { try memory.secret() }
}

private enum CounterAction: String, ListActions { case add, refuse }

private struct Count: IdentifiableComponent, Equatable {
    var id: String
    var value: Int
    var body: some HTML { String(value) }
}

/// Bursts (hostile input, round two): what many actions or renders at once cost.
@Suite struct BurstTests {
    /// Actions that arrive while a list stores a change are stored together: every one applies, in
    /// far fewer writes than actions.
    @Test func actionsThatWaitAreStoredTogether() async throws {
        let store = SlowStore()
        let registry = try await ListRegistry(store: store)
        let list = try await registry.hostApp(listName("count"), state: 0) { count in
            [Section(id: "s", cells: [CellNode(Count(id: "n", value: count))])]
        }
        await list.onAction(CounterAction.self, changing: Int.self) { action, count in
            if action.kind == .refuse { throw ActionRefusal(field: "n", code: "refused", detail: "n: no") }
            count += 1
        }
        let start = store.saves.withLock { $0 }
        let version = await list.version
        let outcomes = await withTaskGroup(of: ActionOutcome.self) { group in
            for index in 0 ..< 60 {
                group.addTask { await list.perform(ListAction(type: index % 10 == 9 ? "refuse" : "add")) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .handled }.count == 54)
        #expect(outcomes.filter { if case .refused = $0 { true } else { false } }.count == 6, "a refusal answers its own action only")
        let snapshot = String(decoding: await list.snapshotJSON(), as: UTF8.self)
        #expect(snapshot.contains(">54<") || snapshot.contains("54"), "every accepted action applied: \(snapshot)")
        let saves = store.saves.withLock { $0 } - start
        let versions = await list.version - version
        #expect(saves == versions, "one write per version")
        #expect(saves < 54, "stored in batches: \(saves) writes for 54 actions")
    }

    /// Actions find their cell through an index built once per version: after every change (cells
    /// moved across sections, deleted, added) an action finds exactly the cell shown under its key,
    /// byte for byte.
    @Test func actionsFindTheirCellAfterEveryChange() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let heard = Mutex<[String]>([])
        func sections(_ first: [String], _ second: [String]) -> [Section] {
            [Section(id: "a", cells: first.map { CellNode(Count(id: $0, value: 0)) }),
             Section(id: "b", cells: second.map { CellNode(Count(id: $0, value: 1)) })]
        }
        let list = try await registry.hostApp(listName("cells"), sections: sections((0 ..< 2_000).map { "k\($0)" }, ["\u{E9}"]))
        let pokes: @Sendable (String) -> Bool = { $0 == "poke" }
        await list.onAction(accepting: pokes) { action in heard.withLock { $0.append(action.cell ?? "") } }
        #expect(await list.perform(ListAction(type: "poke", cell: "k1999")) == .handled)
        #expect(await list.perform(ListAction(type: "poke", cell: "e\u{301}")) == .unknownCell, "a canonically equivalent key is another key")
        #expect(await list.perform(ListAction(type: "poke", cell: "\u{E9}")) == .handled)
        // Moved to the other section, one deleted, one added.
        try await list.render(sections(["new"] + (0 ..< 1_000).map { "k\($0)" }, ["k1999", "\u{E9}"]))
        #expect(await list.perform(ListAction(type: "poke", cell: "k1999")) == .handled)
        #expect(await list.perform(ListAction(type: "poke", cell: "k1500")) == .unknownCell)
        #expect(await list.perform(ListAction(type: "poke", cell: "new")) == .handled)
        #expect(heard.withLock { $0 } == ["k1999", "\u{E9}", "k1999", "new"])
    }

    /// An app that renders faster than its list can serve never blocks and never grows the queue:
    /// past 256 waiting, a render replaces the newest one, and the list ends at the latest.
    @Test func waitingRendersAreBoundedAndTheLatestWins() {
        let renders = ServedRenders(onError: nil)
        var firsts = 0
        for index in 0 ..< 300 {
            let render = ServedRenders.Render(sections: [Section(id: "s\(index)", cells: [])], adapter: HTMLAdapter(), options: UpdaterOptions())
            if renders.post(render) { firsts += 1 }
        }
        #expect(firsts == 1)
        let (waiting, replaced) = renders.takeAll()
        #expect(waiting.count == ServedRenders.capacity && replaced == 300 - ServedRenders.capacity)
        #expect(waiting.last?.sections.first?.id.key == "s299", "the latest render is the last one served")
        #expect(waiting.first?.sections.first?.id.key == "s0")
        #expect(renders.takeAll().renders.isEmpty)
    }
}
