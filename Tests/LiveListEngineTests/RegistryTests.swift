import Foundation
import LiveListHTML
@testable import LiveListEngine
import LiveListTestSupport
import Testing

private struct Line: IdentifiableComponent, Equatable {
    var id: String
    var body: some HTML { id }
}

@Suite struct RegistryTests {
    @Test func creatingPutAnswersFromZeroAndIdenticalPutMakesNoVersion() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let created = try await registry.put(listName("g"), body: jsonBody(["a", "b"]), ifMatch: nil)
        #expect(created.created && created.changeset.from == 0 && created.changeset.version == 1)
        let same = try await registry.put(listName("g"), body: jsonBody(["a", "b"]), ifMatch: nil)
        #expect(!same.created && same.changeset.operations.isEmpty && same.changeset.version == 1)
        let moved = try await registry.put(listName("g"), body: jsonBody(["b", "a"]), ifMatch: 1)
        #expect(moved.changeset.operations.map(\.name) == ["move"])
        #expect(moved.changeset.from == 1 && moved.changeset.version == 2)
    }

    @Test func ifMatchAndOwnershipAreEnforced() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("g"), body: jsonBody(["a"]), ifMatch: nil)
        await #expect(throws: ListWriteError(.preconditionFailed, code: "version_mismatch", detail: "If-Match names version 7, the list is at 1")) {
            try await registry.put(listName("g"), body: jsonBody(["b"]), ifMatch: 7)
        }
        _ = try await registry.hostApp(listName("app"), sections: [Section(id: "s", cells: [CellNode(Line(id: "x"))])])
        await #expect(throws: ListWriteError.self) { try await registry.put(listName("app"), body: jsonBody([]), ifMatch: nil) }
        let error = await #expect(throws: ListWriteError.self) { try await registry.delete(listName("app")) }
        #expect(error?.kind == .conflict)
    }

    @Test func badBodiesKeepTheirStatusAndPath() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let error = await #expect(throws: ListWriteError.self) {
            try await registry.put(listName("g"), body: Array(#"{"sections":[{"id":"a","cells":[{"id":"x","text":"1"},{"id":"x","text":"2"}]}]}"#.utf8), ifMatch: nil)
        }
        #expect(error == ListWriteError(.invalid, code: "duplicate_key", detail: #"sections[0].cells[1].id: duplicate "x""#))
        #expect(registry.existingList(listName("g")) == nil, "a refused PUT creates nothing")
    }

    @Test func versionsAreNeverReusedAfterDeleteAndRestart() async throws {
        let directory = NSTemporaryDirectory() + "livelist-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let registry = try await ListRegistry(store: try FileListStore(directory: directory))
            _ = try await registry.put(listName("g"), body: jsonBody(["a"]), ifMatch: nil)   // 1
            _ = try await registry.put(listName("g"), body: jsonBody(["a", "b"]), ifMatch: nil)   // 2
            let final = try await registry.delete(listName("g")).changeset   // 3
            #expect(final.version == 3 && final.operations == [.reset(html: "", sections: [])])
            let again = try await registry.put(listName("g"), body: jsonBody(["c"]), ifMatch: nil)
            #expect(again.created && again.changeset.from == 0 && again.changeset.version == 4)
            _ = try await registry.put(listName("kept"), body: jsonBody(["x", "y"], header: "H"), ifMatch: nil)
        }
        // A new process: the lists come back at their versions, with their exact bodies.
        let registry = try await ListRegistry(store: try FileListStore(directory: directory))
        let kept = try #require(registry.existingList(listName("kept")))
        #expect(await kept.version == 1)
        #expect(await kept.snapshot().state == jsonBody(["x", "y"], header: "H"))
        let g = try #require(registry.existingList(listName("g")))
        #expect(await g.version == 4)
        let next = try await registry.put(listName("g"), body: jsonBody(["d"]), ifMatch: 4)
        #expect(next.changeset.version == 5)
    }

    /// A list emptied by its last PUT comes back at that PUT's version, not one behind.
    @Test func emptiedListKeepsItsVersionAcrossRestart() async throws {
        let store = MemoryListStore()
        do {
            let registry = try await ListRegistry(store: store)
            _ = try await registry.put(listName("e"), body: jsonBody(["a"]), ifMatch: nil)
            let emptied = try await registry.put(listName("e"), body: Array(#"{"sections":[]}"#.utf8), ifMatch: nil)
            #expect(emptied.changeset.version == 2)
        }
        let registry = try await ListRegistry(store: store)
        #expect(await registry.existingList(listName("e"))?.version == 2)
    }

    @Test func appListVersionsSurviveRestartWithoutReuse() async throws {
        let store = MemoryListStore()
        var configuration = ListConfiguration()
        configuration.versionBlock = 10
        var last = 0
        do {
            let registry = try await ListRegistry(store: store, configuration: configuration)
            let app = try await registry.hostApp(listName("app"), sections: [])
            for index in 0 ..< 15 {
                try await app.render([Section(id: "s", cells: [CellNode(Line(id: "x\(index)"))])])
            }
            last = await app.version
        }
        let registry = try await ListRegistry(store: store, configuration: configuration)
        let app = try await registry.hostApp(listName("app"), sections: [])
        #expect(await app.version > last)
    }

    /// A restarted process renders its app lists from nothing, from a version that an earlier process
    /// served with content (the stored state's, or the last one reserved). A viewer resuming from there
    /// gets a reset: the first rendering's inserts would add again what its page already shows.
    @Test func aViewerOfAnEarlierProcessResumesWithAResetAfterARestart() async throws {
        let store = MemoryListStore()
        var configuration = ListConfiguration()
        configuration.versionBlock = 1
        let render: @Sendable ([String]) -> [Section] = { ids in [Section(id: "s", cells: ids.map { CellNode(Line(id: $0)) })] }
        let sections = [Section(id: "s", cells: [CellNode(Line(id: "x"))])]
        var served: (kept: Int, rendered: Int) = (0, 0)
        do {
            let registry = try await ListRegistry(store: store, configuration: configuration)
            served.kept = try await registry.hostApp(listName("kept"), state: ["a", "b"], render: render).version
            // Versions 1 and 2, the second the last one reserved (blocks of 1).
            let rendered = try await registry.hostApp(listName("rendered"), sections: [])
            try await rendered.render([Section(id: "s", cells: [CellNode(Line(id: "y"))])])
            try await rendered.render(sections)
            served.rendered = await rendered.version
        }
        let registry = try await ListRegistry(store: store, configuration: configuration)
        let kept = try await registry.hostApp(listName("kept"), state: ["a", "b"], render: render)
        let rendered = try await registry.hostApp(listName("rendered"), sections: sections)
        let lists: [(any ServedList, Int)] = [(kept, served.kept), (rendered, served.rendered)]
        for (list, version) in lists {
            let now = await list.version
            #expect(now == version + 1, "\(list.name): served at \(version) before, now at \(now)")
            let sink = RecordingSink()
            await list.subscribe(sink, since: version)
            #expect(sink.events.count == 1)
            let data = sink.events.first?.data ?? ""
            #expect(data.contains(#""op":"reset""#) && !data.contains("insert"), "\(list.name): \(data)")
        }
    }
}

@Suite struct StreamTests {
    @Test func streamResumesFromItsVersionAndGetsLiveChanges() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("g"), body: jsonBody(["a"]), ifMatch: nil)
        _ = try await registry.put(listName("g"), body: jsonBody(["a", "b"]), ifMatch: nil)
        let list = try #require(registry.existingList(listName("g")))
        let sink = RecordingSink()
        await list.subscribe(sink, since: 1)
        #expect(sink.events.map(\.id) == ["2"])
        _ = try await registry.put(listName("g"), body: jsonBody(["b"]), ifMatch: nil)
        #expect(sink.events.map(\.id) == ["2", "3"])
        #expect(sink.events[1].data.contains(#""from":2,"version":3"#))

        let fresh = RecordingSink()
        await list.subscribe(fresh, since: nil)
        #expect(fresh.events.isEmpty, "without since, a stream starts live")
        let future = RecordingSink()
        await list.subscribe(future, since: 99)
        #expect(future.events.count == 1 && future.events[0].data.contains(#""op":"reset""#))
    }

    /// A reader that stops reading is skipped, then gets one changeset for everything it missed.
    @Test func slowViewerIsCoalesced() async throws {
        var configuration = ListConfiguration()
        configuration.slowViewerBytes = 100
        let registry = try await ListRegistry(store: MemoryListStore(), configuration: configuration)
        _ = try await registry.put(listName("g"), body: jsonBody(["a"]), ifMatch: nil)
        let list = try #require(registry.existingList(listName("g")))
        let slow = RecordingSink()
        let fast = RecordingSink()
        await list.subscribe(slow, since: 1)
        await list.subscribe(fast, since: 1)
        slow.setQueued(1_000)
        for cells in [["a", "b"], ["b"], ["b", "c"], ["c"]] {
            _ = try await registry.put(listName("g"), body: jsonBody(cells), ifMatch: nil)
        }
        #expect(fast.events.map(\.id) == ["2", "3", "4", "5"])
        #expect(slow.events.isEmpty)
        slow.setQueued(0)
        #expect(await eventually { slow.events.count == 1 })
        #expect(slow.events.map(\.id) == ["5"])
        #expect(slow.events[0].data.contains(#""from":1,"version":5"#))
        #expect(await list.counters.coalescedViewers == 1)
    }

    @Test func deleteEndsSingleStreamsAfterTheFinalResetAndMultiplexedGoOn() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        _ = try await registry.put(listName("a"), body: jsonBody(["x"]), ifMatch: nil)
        _ = try await registry.put(listName("b"), body: jsonBody(["y"]), ifMatch: nil)
        let single = RecordingSink()
        let listA = try #require(registry.existingList(listName("a")))
        await listA.subscribe(single, since: nil)
        let shared = RecordingSink()
        let stream = MultiplexedStream(sink: shared, names: ["a", "b", "c"], versions: [:])
        await registry.subscribe(stream, names: [listName("a"), listName("b"), listName("c")], since: [:])
        #expect(shared.events.count == 1 && shared.events[0].data.contains(#""list":"c""#), "a missing list gets an empty reset")

        _ = try await registry.delete(listName("a"))
        #expect(single.isClosed && single.events.count == 1)
        #expect(!shared.isClosed)
        _ = try await registry.put(listName("b"), body: jsonBody(["y", "z"]), ifMatch: nil)
        #expect(shared.events.last?.id == "a:2,b:2,c:0")
        _ = try await registry.put(listName("c"), body: jsonBody(["w"]), ifMatch: nil)
        #expect(shared.events.last?.id == "a:2,b:2,c:1")
        #expect(shared.events.last?.data.contains(#""list":"c""#) == true)
    }
}

@Suite struct FileListStoreTests {
    @Test func refusesAForeignDirectory() throws {
        let directory = NSTemporaryDirectory() + "livelist-foreign-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("hello".utf8).write(to: URL(fileURLWithPath: directory + "/notes.txt"))
        let error = #expect(throws: StoreError.self) { try FileListStore(directory: directory) }
        #expect(error?.description.contains("not LiveList's") == true)
        #expect(FileManager.default.fileExists(atPath: directory + "/notes.txt"))
    }

    @Test func corruptFilesStopLoadingWithTheirPath() throws {
        let directory = NSTemporaryDirectory() + "livelist-corrupt-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try FileListStore(directory: directory)
            try store.saveJSONList(name: "ok", version: 3, body: jsonBody(["a"]))
        }
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: directory + "/lists/bad.list"))
        let error = #expect(throws: StoreError.self) { try FileListStore(directory: directory).load() }
        #expect(error?.description.contains("lists/bad.list") == true)
    }

    @Test func temporaryFilesAreSweptAndDataRoundTrips() throws {
        let directory = NSTemporaryDirectory() + "livelist-sweep-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try FileListStore(directory: directory)
            try store.saveJSONList(name: "g", version: 7, body: jsonBody(["a"]))
            try store.saveJSONList(name: "gone", version: 4, body: jsonBody(["a"]))
            try store.deleteJSONList(name: "gone", version: 5)
            try store.saveHighWater(12, for: "h")
            try store.saveAppState(name: "todo", version: 9, bytes: [1, 2, 3])
            #expect(try store.appState(name: "todo") == .init(version: 9, bytes: [1, 2, 3]))
            #expect(try store.appState(name: "none") == nil)
        }
        try Data("half".utf8).write(to: URL(fileURLWithPath: directory + "/lists/g.list.livelist-tmp"))
        try Data("half".utf8).write(to: URL(fileURLWithPath: directory + "/lists/g.list.77.3.livelist-tmp"))
        let loaded = try FileListStore(directory: directory).load()
        #expect(loaded.jsonLists["g"] == .init(version: 7, body: jsonBody(["a"])))
        #expect(loaded.jsonLists["gone"] == nil, "a tombstone is no list")
        #expect(loaded.highWater == ["g": 7, "h": 12, "gone": 5, "todo": 9])
        #expect(loaded.appStates["todo"] == .init(version: 9, bytes: [1, 2, 3]))
        #expect(!FileManager.default.fileExists(atPath: directory + "/lists/g.list.livelist-tmp"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/lists/g.list.77.3.livelist-tmp"))
    }

    @Test func aStateWithoutHeaderFromAnEarlierReleaseLoadsAtVersionZero() throws {
        let directory = NSTemporaryDirectory() + "livelist-legacy-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do { _ = try FileListStore(directory: directory) }
        try Data(#"{"items":[]}"#.utf8).write(to: URL(fileURLWithPath: directory + "/apps/todo.state"))
        let store = try FileListStore(directory: directory)
        #expect(try store.appState(name: "todo") == .init(version: 0, bytes: Array(#"{"items":[]}"#.utf8)))
    }

    @Test func aSecondStoreOnTheSameDirectoryIsRefusedUntilTheFirstCloses() throws {
        let directory = NSTemporaryDirectory() + "livelist-lock-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: FileListStore? = try FileListStore(directory: directory)
        let error = #expect(throws: StoreError.self) { try FileListStore(directory: directory) }
        #expect(error?.description.contains("in use by another livelist process (pid \(getpid()))") == true, "\(String(describing: error))")
        #expect(first != nil)
        first = nil
        #expect(throws: Never.self) { try FileListStore(directory: directory) }
    }

    @Test func versionsBeyondTheLargestStopLoading() throws {
        let directory = NSTemporaryDirectory() + "livelist-huge-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try FileListStore(directory: directory)
            try store.saveJSONList(name: "big", version: ListVersion.maximum + 1, body: jsonBody(["a"]))
        }
        let error = #expect(throws: StoreError.self) { try FileListStore(directory: directory).load() }
        #expect(error?.description.contains("beyond the largest version") == true)
    }

    /// A write's changeset is encoded once: the writer's answer, the log and every stream share the bytes.
    @Test func aWriteIsEncodedOnceForItsAnswerAndItsStreams() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        let created = try await registry.put(listName("once"), body: jsonBody(["a"]), ifMatch: nil)
        #expect(created.created && created.json == created.changeset.encodedJSON())
        let list = try #require(registry.existingList(listName("once")))
        let sink = RecordingSink()
        await list.subscribe(sink, since: nil)
        let replaced = try await registry.put(listName("once"), body: jsonBody(["a", "b"]), ifMatch: nil)
        #expect(!replaced.created && replaced.version == 2)
        #expect(sink.events.map(\.id) == ["2"])
        #expect(sink.events.last?.data == String(decoding: replaced.json, as: UTF8.self))
        #expect(replaced.json == replaced.changeset.encodedJSON())
        let deleted = try await registry.delete(listName("once"))
        #expect(sink.events.last?.data == String(decoding: deleted.json, as: UTF8.self) && deleted.changeset.isReset)
    }
}
