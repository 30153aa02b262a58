import Foundation
import LiveListHTML
@testable import LiveListEngine
import Synchronization
import LiveListTestSupport
import Testing

/// One database in memory that several "nodes" share, each through its own ``SharedMemoryStore``:
/// the semantics the PostgreSQL store gives (a version must follow the stored one, or the write is
/// stale; recent versions kept with their content; every write noticed by every node), without a
/// database, so that the engine's catching up is tested in process.
final class SharedMemoryDatabase: @unchecked Sendable {
    struct Row {
        var version: Int
        var content: StoredUpdate.Content
    }

    private struct Contents {
        var rows: [String: Row] = [:]
        var history: [String: [StoredUpdate.Step]] = [:]
        var listeners: [AsyncStream<StoreNotice>.Continuation] = []
    }

    private let contents = Mutex(Contents())
    /// Queries made: `update(of:after:)`, and `versions(of:)`.
    let updateQueries = Atomic(0)
    let versionQueries = Atomic(0)
    let limit: Int
    let kept: Int

    init(limit: Int = 1_000, kept: Int = 256) {
        self.limit = limit
        self.kept = kept
    }

    func write(_ name: String, version: Int, content: StoredUpdate.Content) throws(StoreError) {
        let listeners = try contents.withLock { (contents: inout Contents) throws(StoreError) -> [AsyncStream<StoreNotice>.Continuation] in
            let stored = contents.rows[name]?.version ?? 0
            guard stored == version - 1 else {
                throw StoreError(.stale(version: stored), "\(name) is at \(stored)")
            }
            if case .json = content, contents.rows[name].map({ if case .json = $0.content { false } else { true } }) ?? true {
                let count = contents.rows.values.filter { if case .json = $0.content { true } else { false } }.count
                guard count < limit else { throw StoreError(.limitReached(limit: limit), "limit") }
            }
            contents.rows[name] = Row(version: version, content: content)
            contents.history[name, default: []].append(.init(version: version, content: content))
            contents.history[name] = contents.history[name].map { Array($0.suffix(kept)) }
            return contents.listeners
        }
        for listener in listeners {
            listener.yield(.changed(name: name, version: version))
        }
    }

    func reserve(_ name: String, version: Int) {
        contents.withLock { contents in
            let row = contents.rows[name] ?? Row(version: 0, content: .reserved)
            contents.rows[name] = Row(version: max(row.version, version), content: row.content)
        }
    }

    func load() -> StoredLists {
        contents.withLock { contents in
            var stored = StoredLists()
            for (name, row) in contents.rows {
                stored.highWater[name] = row.version
                switch row.content {
                case let .json(body): stored.jsonLists[name] = .init(version: row.version, body: body)
                case let .state(bytes): stored.appStates[name] = .init(version: row.version, bytes: bytes)
                case .deleted, .reserved, .patch: break
                }
            }
            return stored
        }
    }

    func update(_ name: String, after version: Int) -> StoredUpdate? {
        updateQueries.add(1, ordering: .relaxed)
        return contents.withLock { contents in
            guard let row = contents.rows[name], row.version > version else { return nil }
            let steps = (contents.history[name] ?? []).filter { $0.version > version }
            let complete = steps.count == row.version - version
            return StoredUpdate(steps: complete ? steps : [.init(version: row.version, content: row.content)])
        }
    }

    func versions() -> [String: Int] {
        contents.withLock { contents in contents.rows.mapValues(\.version) }
    }

    func listen() -> AsyncStream<StoreNotice> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreNotice.self)
        contents.withLock { $0.listeners.append(continuation) }
        continuation.yield(.reconnected)
        return stream
    }

    /// Sends every node `notice`, as any database role can.
    func notify(_ notice: StoreNotice) {
        for listener in contents.withLock({ $0.listeners }) {
            listener.yield(notice)
        }
    }

    /// Ends every node's notices.
    func close() {
        for listener in contents.withLock({ $0.listeners }) {
            listener.finish()
        }
    }
}

/// One node's view of a ``SharedMemoryDatabase``.
final class SharedMemoryStore: SharedListStore, Sendable {
    let database: SharedMemoryDatabase
    private let secretBytes = [UInt8](repeating: 7, count: 32)

    init(_ database: SharedMemoryDatabase) {
        self.database = database
    }

    func load() throws(StoreError) -> StoredLists { database.load() }
    func saveHighWater(_ version: Int, for name: String) throws(StoreError) { database.reserve(name, version: version) }
    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        try database.write(name, version: version, content: .json(body))
    }
    func deleteJSONList(name: String, version: Int) throws(StoreError) {
        try database.write(name, version: version, content: .deleted)
    }
    func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        try database.write(name, version: version, content: .state(bytes))
    }
    func appState(name: String) throws(StoreError) -> StoredLists.AppState? { database.load().appStates[name] }
    func secret() throws(StoreError) -> [UInt8] { secretBytes }
    func update(of name: String, after version: Int) throws(StoreError) -> StoredUpdate? { database.update(name, after: version) }
    func versions() throws(StoreError) -> [String: Int] { database.versions() }
    func versions(of names: [String]) throws(StoreError) -> [String: Int] {
        database.versionQueries.add(1, ordering: .relaxed)
        return database.versions().filter { names.contains($0.key) }
    }
    func notices() -> AsyncStream<StoreNotice> { database.listen() }
    func holdsLease(_ name: String) -> Bool { true }
    func idempotentWrite(of name: String, key: String) throws(StoreError) -> IdempotentWrite? { nil }
    func revocations(after position: Int?) throws(StoreError) -> RevocationBatch { RevocationBatch(revocations: [], position: position ?? 0) }
}

/// Several registries ("nodes") on one shared store: versions are never handed out twice over the
/// nodes, every node shows every write, and a node's streams get the very diffs of the node that wrote.
@Suite struct SharedStoreTests {
    /// `count` nodes on one database, each following the store.
    private func nodes(_ count: Int, database: SharedMemoryDatabase) async throws -> ([ListRegistry], [Task<Void, Never>]) {
        var registries: [ListRegistry] = []
        var followers: [Task<Void, Never>] = []
        for _ in 0 ..< count {
            let registry = try await ListRegistry(store: SharedMemoryStore(database))
            registries.append(registry)
            followers.append(Task { await registry.followStore() })
        }
        return (registries, followers)
    }

    @Test func racingCreatesOnSeveralNodesMakeOneListAndDistinctVersions() async throws {
        for round in 0 ..< 10 {
            let database = SharedMemoryDatabase()
            let (registries, followers) = try await nodes(3, database: database)
            defer { followers.forEach { $0.cancel() }; database.close() }
            let results = await withTaskGroup(of: ListWrite?.self) { group in
                for writer in 0 ..< 12 {
                    let registry = registries[writer % registries.count]
                    group.addTask { try? await registry.put(listName("r"), body: jsonBody(["w\(writer)"]), ifMatch: nil) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let answered = results.compactMap { $0 }
            #expect(answered.count == 12, "round \(round): every write answered")
            #expect(answered.filter(\.created).count == 1, "round \(round): exactly one creation")
            let versions = answered.map(\.version)
            #expect(Set(versions).count == versions.count, "round \(round): a version handed out twice: \(versions.sorted())")
            #expect(versions.max() == database.versions()["r"])
        }
    }

    @Test func everyNodeShowsEveryWriteAndSendsTheSameDiffs() async throws {
        let database = SharedMemoryDatabase()
        let (registries, followers) = try await nodes(2, database: database)
        defer { followers.forEach { $0.cancel() }; database.close() }
        let (a, b) = (registries[0], registries[1])
        _ = try await a.put(listName("l"), body: jsonBody(["1", "2", "3"]), ifMatch: nil)
        #expect(await eventually { await b.existingList(listName("l"))?.version == 1 })
        // A stream on each node, from version 1.
        let onA = RecordingSink()
        let onB = RecordingSink()
        await a.subscribe(MultiplexedStream(sink: onA, names: ["l"], versions: [:]), names: [listName("l")], since: ["l": 1])
        await b.subscribe(MultiplexedStream(sink: onB, names: ["l"], versions: [:]), names: [listName("l")], since: ["l": 1])
        _ = try await a.put(listName("l"), body: jsonBody(["3", "1", "4"]), ifMatch: 1)
        _ = try await b.put(listName("l"), body: jsonBody(["4", "5"]), ifMatch: 2)
        _ = try await a.put(listName("l"), body: jsonBody(["5"]), ifMatch: 3)
        #expect(await eventually { onA.events.count == 3 && onB.events.count == 3 })
        #expect(onA.events.map(\.data) == onB.events.map(\.data), "both nodes sent the same diffs")
        let listA = try #require(a.existingList(listName("l")))
        let listB = try #require(b.existingList(listName("l")))
        #expect(await listA.snapshotJSON() == listB.snapshotJSON())
        // A viewer of node A resumes on node B with a diff from the version it had.
        let catchUp = await listB.changes(since: 2)
        #expect(!catchUp.isReset && catchUp.from == 2 && catchUp.version == 4)
    }

    @Test func aStaleWriteCatchesUpAndChecksItsPreconditionOnTheLatestState() async throws {
        let database = SharedMemoryDatabase()
        // No followers: node B learns of A's write only when its own write is refused as stale.
        let a = try await ListRegistry(store: SharedMemoryStore(database))
        let b = try await ListRegistry(store: SharedMemoryStore(database))
        _ = try await a.put(listName("p"), body: jsonBody(["1"]), ifMatch: nil)
        // B does not know the list: If-None-Match: * fails once B has caught up.
        await #expect(throws: ListWriteError.self) {
            try await b.put(listName("p"), body: jsonBody(["2"]), precondition: .absent)
        }
        let replaced = try await b.put(listName("p"), body: jsonBody(["2"]), ifMatch: 1)
        #expect(!replaced.created && replaced.version == 2)
        await #expect(throws: ListWriteError.self) {
            try await a.put(listName("p"), body: jsonBody(["3"]), ifMatch: 1)
        }
        _ = try await a.delete(listName("p"))
        #expect(database.versions()["p"] == 3)
        let recreated = try await b.put(listName("p"), body: jsonBody(["4"]), ifMatch: nil)
        #expect(recreated.created && recreated.version == 4)
    }

    @Test func theListLimitHoldsOverNodes() async throws {
        let database = SharedMemoryDatabase(limit: 5)
        let (registries, followers) = try await nodes(3, database: database)
        defer { followers.forEach { $0.cancel() }; database.close() }
        let created = await withTaskGroup(of: Bool.self) { group in
            for index in 0 ..< 20 {
                let registry = registries[index % registries.count]
                group.addTask { (try? await registry.put(listName("n\(index)"), body: jsonBody(["x"]), ifMatch: nil))?.created ?? false }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(created == 5)
    }

    struct Counter: Codable, Equatable, Sendable {
        var items: [String] = []
    }

    @Test func appStateChangesOnAnyNodeApplyToTheLatestState() async throws {
        let database = SharedMemoryDatabase()
        let (registries, followers) = try await nodes(2, database: database)
        defer { followers.forEach { $0.cancel() }; database.close() }
        let render: @Sendable (Counter) -> [Section] = { counter in
            [Section(id: "s", cells: counter.items.map { CellNode(Echo(id: $0, text: $0)) })]
        }
        var lists: [StateList<Counter>] = []
        for registry in registries {
            lists.append(try await registry.hostApp(listName("todo"), state: Counter(), render: render))
        }
        await withTaskGroup(of: Void.self) { group in
            for index in 0 ..< 20 {
                let list = lists[index % 2]
                group.addTask { _ = try? await list.updateState(Counter.self) { $0.items.append("i\(index)") } }
            }
        }
        #expect(await eventually { await lists[0].version == lists[1].version })
        let stored = try #require(database.load().appStates["todo"])
        let counter = try JSONDecoder().decode(Counter.self, from: Data(stored.bytes))
        #expect(counter.items.count == 20, "no change overwrote another: \(counter.items)")
        #expect(await lists[0].snapshotJSON() == lists[1].snapshotJSON())
    }

    /// A state change that renders as before (state the page does not show) still takes a version,
    /// so that it is stored and every other node learns of it: before, it was stored under the
    /// current version, which a shared store refuses as stale, forever.
    @Test func aStateChangeThatRendersAsBeforeReachesEveryNode() async throws {
        let database = SharedMemoryDatabase()
        let (registries, followers) = try await nodes(2, database: database)
        defer { followers.forEach { $0.cancel() }; database.close() }
        let hidden: @Sendable (Counter) -> [Section] = { _ in [] }
        var lists: [StateList<Counter>] = []
        for registry in registries {
            lists.append(try await registry.hostApp(listName("hidden"), state: Counter(), render: hidden))
        }
        let before = await lists[0].version
        #expect(try await lists[0].updateState(Counter.self) { $0.items.append("unseen") })
        #expect(await lists[0].version == before + 1)
        #expect(await eventually { await lists[1].currentState.items == ["unseen"] })
        #expect(try await lists[1].updateState(Counter.self) { $0.items.append("again") })
        #expect(await eventually { await lists[0].currentState.items == ["unseen", "again"] })
    }

    /// Two nodes on one database, the list `real` written on the first at version 1 and seen by the second.
    private func twoNodesSharingARealList() async throws -> (SharedMemoryDatabase, ListRegistry, ListRegistry, [Task<Void, Never>]) {
        let database = SharedMemoryDatabase()
        let (registries, followers) = try await nodes(2, database: database)
        let (a, b) = (registries[0], registries[1])
        _ = try await a.put(listName("real"), body: jsonBody(["1"]), ifMatch: nil)
        #expect(await eventually { await b.existingList(listName("real"))?.version == 1 })
        return (database, a, b, followers)
    }

    /// Amplification: a multiplexed stream naming 32 lists, each with a made-up version ahead of the
    /// node, cost 32 queries. Now one query finds what the store holds, and only a list whose stored
    /// version reaches what the viewer saw is caught up.
    @Test func aStreamOfManyListsCostsOneQueryHoweverFarAheadItsVersionsClaim() async throws {
        let (database, a, b, followers) = try await twoNodesSharingARealList()
        defer { followers.forEach { $0.cancel() }; database.close() }
        let names = ["real"] + (0 ..< 31).map { "made-up-\($0)" }
        let (updates, versions) = (database.updateQueries.load(ordering: .relaxed), database.versionQueries.load(ordering: .relaxed))
        let sink = RecordingSink()
        await b.subscribe(MultiplexedStream(sink: sink, names: names, versions: [:]), names: names.map(listName),
                          since: Dictionary(uniqueKeysWithValues: names.map { ($0, 999) }))
        #expect(database.versionQueries.load(ordering: .relaxed) - versions == 1)
        #expect(database.updateQueries.load(ordering: .relaxed) - updates == 0)
        #expect(sink.events.count == 32, "every list answered, each with its reset")

        // A viewer that saw a version this node has not caught up with yet is caught up first.
        followers[1].cancel()
        try await Task.sleep(for: .milliseconds(50))
        _ = try await a.put(listName("real"), body: jsonBody(["2"]), ifMatch: 1)
        let before = database.updateQueries.load(ordering: .relaxed)
        let resumed = RecordingSink()
        await b.subscribe(MultiplexedStream(sink: resumed, names: ["real"], versions: [:]), names: [listName("real")], since: ["real": 2])
        #expect(database.updateQueries.load(ordering: .relaxed) - before == 1)
        #expect(await b.existingList(listName("real"))?.version == 2)
    }

    /// Notices are hints that any database role can send: a flood of made-up names and of versions
    /// that a real list never reached costs a bounded number of queries (the names checked together,
    /// at most 20 times a second; a lying list's notices checked with them), and real writes still
    /// reach the node.
    @Test func aNoticeFloodCostsBoundedQueriesAndRealWritesStillArrive() async throws {
        let (database, a, b, followers) = try await twoNodesSharingARealList()
        defer { followers.forEach { $0.cancel() }; database.close() }
        let queries = { database.updateQueries.load(ordering: .relaxed) + database.versionQueries.load(ordering: .relaxed) }
        let before = queries()
        let started = ContinuousClock.now
        for index in 0 ..< 20_000 {
            database.notify(.changed(name: "made-up-\(index)", version: 1))
            database.notify(.changed(name: "real", version: 1_000 + index))
        }
        try await Task.sleep(for: .seconds(1))
        let spent = queries() - before
        let seconds = Double((ContinuousClock.now - started).components.seconds) + 1
        print("notice flood: 40,000 notices cost \(spent) queries in about \(Int(seconds)) s")
        #expect(spent <= Int(seconds * 40) + 10, "\(spent) queries for 40,000 made-up notices")
        _ = try await a.put(listName("real"), body: jsonBody(["2"]), ifMatch: 1)
        #expect(await eventually { await b.existingList(listName("real"))?.version == 2 })
        #expect(b.existingList(listName("made-up-7")) == nil, "no list was made up")
    }
    /// A list created on one node a moment ago, asked for on another before that node heard of it:
    /// the second node looks in the store rather than answer that no such list exists. Names nobody
    /// created, asked for together, are looked up together.
    @Test func aListCreatedOnAnotherNodeIsFoundBeforeItsNoticeArrives() async throws {
        let database = SharedMemoryDatabase()
        let (registries, followers) = try await nodes(2, database: database)
        defer { followers.forEach { $0.cancel() }; database.close() }
        let (a, b) = (registries[0], registries[1])
        followers[1].cancel()
        try await Task.sleep(for: .milliseconds(50))
        _ = try await a.put(listName("fresh"), body: jsonBody(["1", "2"]), ifMatch: nil)
        #expect(b.existingList(listName("fresh")) == nil, "b has not heard of it (its notices are not followed)")
        let found = await b.storedList(listName("fresh"))
        #expect(await found?.version == 1)

        let before = database.versionQueries.load(ordering: .relaxed)
        let missing = await withTaskGroup(of: Bool.self) { group in
            for index in 0 ..< 200 {
                group.addTask { await b.storedList(listName("nobody-\(index)")) == nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(missing == 200)
        let spent = database.versionQueries.load(ordering: .relaxed) - before
        print("200 lookups of names nobody created cost \(spent) queries")
        #expect(spent <= 5, "\(spent) queries for 200 names asked for together")
    }
}
