import Dispatch
import Foundation
import LiveListHTML
import LiveListTestSupport
@testable import LiveListServer
@testable import LiveListEngine
import Synchronization
import Testing

/// An app's own `Renderer` served as a list (`ListRegistry.hostApp(_:serving:)`, `LiveListApp.serve`):
/// each render the app makes, from any thread, becomes one write on the list's ordered path.
@Suite struct ServedRendererTests {
    struct Row: IdentifiableComponent, Equatable {
        var id: Int
        var text: String
        var body: some HTML { span { text } }
    }

    /// Some of the ids 0..<8 in a random order, each with one of three texts: renders of these move,
    /// insert, delete and reload cells.
    static func randomSections(using random: inout SplitMix64) -> [Section] {
        let ids = (0 ..< 8).shuffled(using: &random).prefix(Int.random(in: 0 ... 8, using: &random))
        let rows = ids.map { Row(id: $0, text: "text \(Int.random(in: 0 ..< 3, using: &random))") }
        return [Section(id: "rows", header: Header("Rows"), cells: rows.map { CellNode($0) })]
    }

    /// The rendering of `sections` from nothing.
    static func html(_ sections: [Section], adapter: HTMLAdapter = HTMLAdapter()) throws -> String {
        var updater = PatchUpdater(list: "fresh")
        _ = try updater.performUpdates(adapter: adapter, from: [], to: sections)
        return updater.rendering.html
    }

    @Test func rendersRacingOnThreadsArePublishedInTheOrderTheRendererAppliedThem() async throws {
        let seed = UInt64.random(in: 1 ... .max)
        print("ServedRendererTests racing renders: seed \(seed)")
        let registry = try await ListRegistry(store: MemoryListStore())
        // The name's versions continue from its high-water mark, not from the renderer's own.
        _ = try await registry.put(listName("board"), body: jsonBody(["x"]), ifMatch: nil)
        _ = try await registry.delete(listName("board"))
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "board"))
        var random = SplitMix64(seed: seed)
        try renderer.render(Self.randomSections(using: &random))
        let list = try await registry.hostApp(listName("board"), serving: renderer)
        let first = await list.version
        #expect(first == 3, "after the JSON list's two versions")
        let initial = try ListModel(await list.snapshot().rendering)
        let sink = RecordingSink()
        await list.subscribe(sink, since: nil)

        // Threads render at once; the renderer's own outputs carry its versions, which number the
        // renders in the order it applied them.
        let states = (0 ..< 4).map { _ in (0 ..< 40).map { _ in Self.randomSections(using: &random) } }
        let outputs = Mutex<[ListChangeset]>([])
        await Task.detached {
            DispatchQueue.concurrentPerform(iterations: states.count) { thread in
                for sections in states[thread] {
                    if let changeset = try? renderer.render(sections) {
                        outputs.withLock { $0.append(changeset) }
                    }
                }
            }
        }.value
        let applied = outputs.withLock { $0 }.sorted { $0.version < $1.version }
        let last = try Self.html(renderer.data)
        #expect(await eventually { await list.snapshot().rendering.html == last }, "seed \(seed): the list shows the renderer's last render")
        #expect(await eventually { sink.events.count == applied.count })

        // One changeset per render that changed something, in the renderer's order, with the list's
        // versions: consecutive, each from the one before, never a reset.
        let published = try sink.events.map { try decodeChangeset(Array($0.data.utf8)) }
        #expect(published.map(\.version) == Array(first + 1 ..< first + 1 + published.count), "seed \(seed)")
        #expect(published.map(\.from) == Array(first ..< first + published.count), "seed \(seed)")
        #expect(published.allSatisfy { !$0.isReset }, "seed \(seed): a stream gets diffs")
        let differing = Array(zip(published, applied)).firstIndex { $0.operations != $1.operations }
        #expect(differing == nil, "seed \(seed): the list's changeset \(differing ?? 0) is not the renderer's render \(differing ?? 0)")
        #expect(await list.version == first + published.count)

        // A viewer that applies them has the list's page; one that reconnects catches up from the log.
        var model = initial
        for changeset in published {
            try model.apply(changeset)
        }
        let final = try ListModel(await list.snapshot().rendering)
        #expect(model == final, "seed \(seed)")
        let catchUp = await list.changes(since: first)
        #expect(!catchUp.isReset && catchUp.version == first + published.count)
        var caughtUp = initial
        try caughtUp.apply(catchUp)
        #expect(caughtUp == final, "seed \(seed)")
    }

    @Test func theRenderersAdapterAndOptionsAreTheListsAndFollowIt() async throws {
        let server = try await RouteClient()
        var adapter = HTMLAdapter()
        adapter.cell = .init(.li, classes: "board-row")
        var options = UpdaterOptions()
        options.stickToBottom = true
        let renderer = Renderer(adapter: adapter, updater: PatchUpdater(list: "board", options: options))
        try renderer.render { Section(id: "rows") { Row(id: 1, text: "one") } }
        let list = try await server.app.serve(renderer)
        #expect(list.name == listName("board"), "named after the renderer's updater")
        let page = try await server.get("/lists/board")
        #expect(page.status == 200)
        #expect(page.text.contains(#"data-stick-bottom="true""#) && page.text.contains(#"class="board-row""#), "\(page.text)")

        renderer.updater.options.stickToBottom = false
        let version = await list.version
        try renderer.render {
            Section(id: "rows") {
                Row(id: 1, text: "one")
                Row(id: 2, text: "two")
            }
        }
        #expect(await eventually { await list.version == version + 1 })
        let next = try await server.get("/lists/board")
        #expect(next.text.contains(#"data-stick-bottom="false""#) && next.text.contains("two"))

        // Another list keeps the server's options; one renderer serves one list; a name serves one list.
        _ = try await server.app.host("plain", state: 0) { _ in Section(id: "s") }
        #expect(try await server.get("/lists/plain").text.contains(#"data-stick-bottom="false""#))
        await #expect(throws: ListWriteError.self) { try await server.app.serve(renderer, at: "other") }
        let second = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "board"))
        await #expect(throws: ListWriteError.self) { try await server.app.serve(second) }
        await #expect(throws: StartupError.self) { try await server.app.serve(second, at: "no/slash") }
        #expect(await server.app.registry.names() == [listName("board"), listName("plain")])
    }

    @Test func aRenderTheStoreCannotReserveIsReportedAndTheNextOneCatchesUp() async throws {
        let store = FailingStore(failing: false)
        let registry = try await ListRegistry(store: store, configuration: {
            var configuration = ListConfiguration()
            // Every version is reserved in the store on its own.
            configuration.versionBlock = 0
            return configuration
        }())
        let errors = Mutex<[String]>([])
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "flaky"))
        try renderer.render { Section(id: "s") }
        let list = try await registry.hostApp(listName("flaky"), serving: renderer) { error in
            errors.withLock { $0.append("\(error)") }
        }
        store.failing = true
        try renderer.render { Section(id: "s") { Row(id: 1, text: "lost") } }
        #expect(await eventually { errors.withLock { $0.count } == 1 })
        #expect(await list.snapshot().rendering.cellCount == 0, "the list stays as it was")
        store.failing = false
        try renderer.render {
            Section(id: "s") {
                Row(id: 1, text: "kept")
                Row(id: 2, text: "too")
            }
        }
        let expected = try Self.html(renderer.data)
        #expect(await eventually { await list.snapshot().rendering.html == expected })
    }
}
