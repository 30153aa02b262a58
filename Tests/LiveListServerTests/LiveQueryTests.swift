import Foundation
import LiveListEngine
import LiveListTestSupport
import LiveListTesting
import Synchronization
import Testing
@testable import LiveListServer

/// A store with tables of the app's own, in memory: what `LiveListPostgres` gives live queries, without
/// a database. Its "query" selects a customer's tickets (one parameter, `customer`) or every open
/// ticket (none); it records each statement's parameter sets, and announces changes when told.
final class FakeTables: ListStore, LiveQueryDatabase, Sendable {
    struct Ticket: Codable, Equatable, Sendable {
        var id: Int
        var customer: String
        var title: String
        var open = true
    }

    private let memory = MemoryListStore()
    private let state = Mutex<(tickets: [Ticket], statements: [[[String]]], failing: StoreError?, watched: [String: [String]])>(([], [], nil, [:]))
    private let listeners = Mutex<[AsyncStream<TableChange>.Continuation]>([])

    init(_ tickets: [Ticket]) {
        state.withLock { $0.tickets = tickets }
    }

    func load() throws(StoreError) -> StoredLists { try memory.load() }
    func saveHighWater(_ version: Int, for name: String) throws(StoreError) { try memory.saveHighWater(version, for: name) }
    func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) { try memory.saveJSONList(name: name, version: version, body: body) }
    func deleteJSONList(name: String, version: Int) throws(StoreError) { try memory.deleteJSONList(name: name, version: version) }
    func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) { try memory.saveAppState(name: name, version: version, bytes: bytes) }
    func appState(name: String) throws(StoreError) -> StoredLists.AppState? { try memory.appState(name: name) }
    func secret() throws(StoreError) -> [UInt8] { try memory.secret() }

    func watch(_ table: String, columns: [String]) async throws {
        guard table == "tickets" else { throw StoreError("the table \(table) does not exist") }
        state.withLock { $0.watched[table] = columns }
    }

    /// How long a statement takes after it read its snapshot.
    let delay = Mutex(Duration.zero)

    func rows(of query: String, names: [String], sets: [[String]], limit: Int) async throws -> [[[UInt8]]] {
        let (tickets, failing) = state.withLock { state in
            state.statements.append(sets)
            return (state.tickets, state.failing)
        }
        try await Task.sleep(for: delay.withLock { $0 })
        if let failing { throw failing }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try sets.map { values in
            let selected = names == ["customer"] ? tickets.filter { $0.customer == values[0] } : tickets.filter(\.open)
            guard selected.count <= limit else { throw StoreError("more than \(limit) rows") }
            return selected.map { Array((try? encoder.encode($0)) ?? Data()) }
        }
    }

    func execute(_ statement: String, parameters: [String?]) async throws -> [[UInt8]] {
        throw StoreError("statements are not run here")
    }

    func tableChanges() -> AsyncStream<TableChange> {
        let (stream, continuation) = AsyncStream<TableChange>.makeStream()
        listeners.withLock { $0.append(continuation) }
        return stream
    }

    /// Commits a change and announces it with the customers of the rows it touched.
    func commit(touching customers: Set<String>, _ change: (inout [Ticket]) -> Void) {
        state.withLock { change(&$0.tickets) }
        announce(TableChange(table: "tickets", values: ["customer": customers]))
    }

    func announce(_ change: TableChange) {
        for listener in listeners.withLock({ $0 }) {
            listener.yield(change)
        }
    }

    var statements: [[[String]]] { state.withLock { $0.statements } }
    var watched: [String: [String]] { state.withLock { $0.watched } }

    /// Makes every statement fail as a query that no longer fits its table does.
    func fail(_ failing: Bool) {
        state.withLock { $0.failing = failing ? StoreError("column \"title\" does not exist") : nil }
    }

    /// Makes every statement fail as a database that cannot be reached does.
    func unreachable(_ unreachable: Bool) {
        state.withLock { $0.failing = unreachable ? StoreError(.unavailable, "the database 127.0.0.1:5432 is unreachable") : nil }
    }
}

struct TicketRow: IdentifiableComponent, Equatable {
    var ticket: FakeTables.Ticket
    var id: Int { ticket.id }
    var body: some HTML { span { "\(ticket.customer): \(ticket.title)" } }
}

@Suite struct LiveQueryTests {
    static let tickets = [
        FakeTables.Ticket(id: 1, customer: "alice", title: "Printer"), FakeTables.Ticket(id: 2, customer: "bob", title: "VPN"),
        FakeTables.Ticket(id: 3, customer: "carol", title: "Chair", open: false),
    ]

    /// An app with `mine` (each customer's tickets) and `queue` (every open ticket, for agents).
    static func desk(_ tables: FakeTables) async throws -> (RouteClient, TestClient) {
        let server = try await RouteClient(store: tables)
        let app = server.app
        app.authenticate { head in head.headers["X-User"].map { Identity(id: $0, roles: $0 == "agent" ? ["agent"] : []) } }
        try await app.liveQuery(
            "mine", title: "My tickets", sql: "SELECT * FROM tickets WHERE customer = params.customer ORDER BY id",
            parameters: ["customer": { identity in identity?.id }], watching: [.table("tickets", matching: ["customer": "customer"])]
        ) { (tickets: [FakeTables.Ticket]) in
            Section(id: "mine", cells: tickets.map { CellNode(TicketRow(ticket: $0)) })
        }
        try await app.access("mine") { identity in identity == nil ? .none : .view }
        try await app.liveQuery("queue", sql: "SELECT * FROM tickets WHERE open", watching: [.table("tickets")]) { (tickets: [FakeTables.Ticket]) in
            Section(id: "open", cells: tickets.map { CellNode(TicketRow(ticket: $0)) })
        }
        try await app.access("queue") { identity in identity?.roles.contains("agent") == true ? .view : .none }
        return (server, TestClient(app))
    }

    @Test func eachViewerSeesTheirOwnRowsOnEveryWayIn() async throws {
        let tables = FakeTables(Self.tickets)
        let (server, client) = try await Self.desk(tables)
        #expect(tables.watched == ["tickets": ["customer"]], "the table is watched with the columns that route its changes")
        let alice = client.browser(headers: [("X-User", "alice")])
        let bob = client.browser(headers: [("X-User", "bob")])

        let page = try await alice.get("/lists/mine")
        #expect(page.status == 200 && page.text.contains("alice: Printer") && page.text.contains("<h1>My tickets</h1>"))
        #expect(!page.text.contains("VPN"), "bob's row never reaches alice's page")
        let json = try await alice.send(.GET, "/lists/mine", extra: [("Accept", "application/json")])
        #expect(json.text.contains("Printer") && !json.text.contains("VPN"))
        let range = try await alice.send(.GET, "/lists/mine/cells?from=0&count=10")
        #expect(range.status == 200 && range.text.contains("Printer") && !range.text.contains("VPN"))
        let changes = try await alice.send(.GET, "/lists/mine/changes?since=0")
        #expect(changes.status == 200 && changes.text.contains("Printer") && !changes.text.contains("VPN"))
        #expect(try await bob.get("/lists/mine").text.contains("bob: VPN"))
        #expect(try await !bob.get("/lists/mine").text.contains("Printer"))

        // A page of the app's own that embeds the list: the viewer's own rows, in the same one script
        // and stream as any page.
        try server.app.route(.GET, "/home") { request in
            let mine = await request.embed("mine")
            return request.page(title: "Home") { mine }
        }
        let home = try await alice.get("/home")
        #expect(home.status == 200 && home.text.contains("alice: Printer") && !home.text.contains("VPN"))
        #expect(try await bob.get("/home").text.contains("bob: VPN"))
        #expect(try await !bob.get("/home").text.contains("Printer"))

        // The queue: agents only; the list's own rule decides who opens it.
        #expect(try await alice.get("/lists/queue").status == 404)
        let agent = client.browser(headers: [("X-User", "agent")])
        let queue = try await agent.get("/lists/queue")
        #expect(queue.text.contains("alice: Printer") && queue.text.contains("bob: VPN") && !queue.text.contains("Chair"))
    }

    @Test func aChangeRunsTheQueryOnlyForTheParameterSetsItTouches() async throws {
        let tables = FakeTables(Self.tickets)
        let (_, client) = try await Self.desk(tables)
        let alice = client.browser(headers: [("X-User", "alice")])
        let alice2 = client.browser(headers: [("X-User", "alice")])
        let bob = client.browser(headers: [("X-User", "bob")])
        _ = try await alice.get("/lists/mine")
        _ = try await alice2.get("/lists/mine")
        _ = try await bob.get("/lists/mine")
        let loads = tables.statements.flatMap { $0 }
        #expect(loads.filter { $0 == ["alice"] }.count == 1, "two viewers with alice's parameters share one load: \(loads)")

        let before = tables.statements.count
        tables.commit(touching: ["bob"]) { $0.append(FakeTables.Ticket(id: 4, customer: "bob", title: "Monitor")) }
        #expect(await eventually { tables.statements.count > before })
        let rerun = tables.statements[before...].flatMap { $0 }
        #expect(rerun.contains(["bob"]) && !rerun.contains(["alice"]), "only bob's set runs again: \(rerun)")
        // The statement is counted when it starts: its rows reach bob's group a moment later.
        #expect(await eventually {
            (try? await bob.send(.GET, "/lists/mine", extra: [("Accept", "application/json")]).text.contains("Monitor")) == true
        })
        #expect(try await bob.changes("mine")?.mentions("Monitor") == true)
        #expect(try await alice.changes("mine")?.mentions("Monitor") != true, "alice's group did not change")

        // A change that does not report the customers of its rows may touch any group: all run again.
        let unreported = tables.statements.count
        tables.announce(TableChange(table: "tickets", values: [:]))
        #expect(await eventually { tables.statements[unreported...].flatMap { $0 }.contains(["alice"]) })

        // A change to a row nobody's parameters select: no run for any customer's group.
        let quiet = tables.statements.count
        tables.commit(touching: ["dave"]) { $0.append(FakeTables.Ticket(id: 5, customer: "dave", title: "Desk")) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(tables.statements.count == quiet, "no group held here is touched: nothing runs")
    }

    @Test func aResultThatDidNotChangeCostsNoChangeset() async throws {
        let tables = FakeTables(Self.tickets)
        let (server, client) = try await Self.desk(tables)
        let alice = client.browser(headers: [("X-User", "alice")])
        _ = try await alice.get("/lists/mine")
        let list = try #require(server.app.registry.existingList(ListName("mine")!))
        let version = await list.version
        let before = tables.statements.count
        tables.announce(TableChange(table: "tickets", values: ["customer": ["alice"]]))
        #expect(await eventually { tables.statements.count > before })
        try await Task.sleep(for: .milliseconds(50))
        #expect(await list.version == version, "the same rows: no rendering, no version")
    }

    @Test func aFailingQueryTakesItsListOutOfServiceAndComesBack() async throws {
        let tables = FakeTables(Self.tickets)
        let (server, client) = try await Self.desk(tables)
        let alice = client.browser(headers: [("X-User", "alice")])
        _ = try await alice.get("/lists/mine")
        tables.fail(true)
        tables.announce(.everything)
        #expect(await eventually { (try? await alice.get("/lists/mine").status) == 503 })
        let refused = try await alice.send(.GET, "/lists/mine", extra: [("Accept", "application/json")])
        #expect(refused.text.contains("list_unavailable") && !refused.text.contains("column"), "the cause is in the log, not the answer")
        let metrics = try await server.get("/metrics")
        #expect(metrics.text.contains(#"livelist_live_query_out_of_service{list="mine"} 1"#))
        tables.fail(false)
        #expect(await eventually { (try? await alice.get("/lists/mine").status) == 200 })
    }

    /// A database restart is not the query's fault: a group held keeps its rows on its page and
    /// stream (no 503, no out-of-service metric); a group not held cannot be read and is refused; once
    /// the database answers, what changed meanwhile arrives.
    @Test func whileTheDatabaseCannotBeReachedTheRowsHeldAreStillShown() async throws {
        let tables = FakeTables(Self.tickets)
        let (server, client) = try await Self.desk(tables)
        let alice = client.browser(headers: [("X-User", "alice")])
        let bob = client.browser(headers: [("X-User", "bob")])
        _ = try await alice.get("/lists/mine")
        let failures = { server.app.services.liveQueries.counters.first { $0.list == "mine" }?.counters.failures ?? 0 }
        tables.unreachable(true)
        tables.announce(.everything)
        #expect(await eventually { failures() > 0 }, "the run after the announcement failed")
        let page = try await alice.get("/lists/mine")
        #expect(page.status == 200 && page.text.contains("alice: Printer"), "the rows held are shown")
        #expect(try await bob.get("/lists/mine").status == 503, "a group not held cannot be read")
        let metrics = try await server.get("/metrics")
        #expect(metrics.text.contains(#"livelist_live_query_out_of_service{list="mine"} 0"#), "not out of service")
        tables.unreachable(false)
        tables.commit(touching: ["alice"]) { $0.append(FakeTables.Ticket(id: 9, customer: "alice", title: "While it was away")) }
        #expect(await eventually { (try? await alice.get("/lists/mine").text.contains("While it was away")) == true })
        #expect(try await bob.get("/lists/mine").status == 200)
    }

    /// A change to one row of a group (whose other rows keep their bytes, and are not decoded again)
    /// shows that row's new value among the others, in the query's order.
    @Test func aChangedRowIsShownAmongTheRowsBesideIt() async throws {
        let more = [FakeTables.Ticket(id: 5, customer: "alice", title: "Desk"), FakeTables.Ticket(id: 6, customer: "alice", title: "Lamp")]
        let tables = FakeTables(Self.tickets + more)
        let (_, client) = try await Self.desk(tables)
        let alice = client.browser(headers: [("X-User", "alice")])
        _ = try await alice.get("/lists/mine")
        tables.commit(touching: ["alice"]) { tickets in
            if let index = tickets.firstIndex(where: { $0.id == 5 }) { tickets[index].title = "Standing desk" }
        }
        #expect(await eventually { (try? await alice.get("/lists/mine").text.contains("alice: Standing desk")) == true })
        let page = try await alice.get("/lists/mine").text
        let positions = ["alice: Printer", "alice: Standing desk", "alice: Lamp"].compactMap { page.range(of: $0)?.lowerBound }
        #expect(positions.count == 3 && positions == positions.sorted(), "every row, in order")
        #expect(!page.contains("alice: Desk<"), "the old value is gone")
    }

    @Test func aStreamOpenedWhileTheQueryFailsGetsTheRowsOnceItRuns() async throws {
        let tables = FakeTables(Self.tickets)
        let (server, _) = try await Self.desk(tables)
        tables.fail(true)
        let list = try #require(server.app.registry.existingList(ListName("mine")!))
        let viewer = Viewer(session: "s", identity: Identity(id: "alice"))
        #expect(await list.prepare(for: viewer) != nil, "the query fails")
        let stream = RecordingSink()
        _ = await list.subscribe(stream, since: await list.version, multiplexed: nil, viewer: viewer)
        tables.fail(false)
        #expect(await eventually { stream.events.contains { $0.data.contains("alice: Printer") } }, "the run after the failure brings the rows")
    }

    @Test func aChangeHeardWhileAGroupsFirstLoadRunsIsNotMissed() async throws {
        let tables = FakeTables(Self.tickets)
        let (_, client) = try await Self.desk(tables)
        let alice = client.browser(headers: [("X-User", "alice")])
        tables.delay.withLock { $0 = .milliseconds(300) }
        // The first load reads its snapshot, then takes 300 ms; a change commits and is heard meanwhile.
        let page = Task { try await alice.get("/lists/mine") }
        #expect(await eventually { !tables.statements.isEmpty })
        tables.commit(touching: ["alice"]) { $0.append(FakeTables.Ticket(id: 9, customer: "alice", title: "During the load")) }
        _ = try await page.value
        tables.delay.withLock { $0 = .zero }
        #expect(await eventually { (try? await alice.get("/lists/mine").text.contains("During the load")) == true })
    }

    @Test func aLiveQueryNeedsTheDatabaseAndPlainParameters() async throws {
        let plain = try await RouteClient()
        await #expect(throws: StartupError.self) {
            try await plain.app.liveQuery("mine", sql: "SELECT 1", watching: [.table("tickets")]) { (_: [FakeTables.Ticket]) in Section(id: "s", cells: []) }
        }
        let tables = FakeTables(Self.tickets)
        let server = try await RouteClient(store: tables)
        await #expect(throws: StartupError.self) {
            try await server.app.liveQuery("mine", sql: "SELECT 1", parameters: ["x; DROP": { _ in "1" }], watching: [.table("tickets")]) { (_: [FakeTables.Ticket]) in
                Section(id: "s", cells: [])
            }
        }
        await #expect(throws: StoreError.self) {
            try await server.app.liveQuery("other", sql: "SELECT 1", watching: [.table("nope")]) { (_: [FakeTables.Ticket]) in Section(id: "s", cells: []) }
        }
    }
}
