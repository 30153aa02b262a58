import Foundation
import LiveListEngine
@testable import LiveListPostgres
import LiveListTestSupport
import Logging
import Synchronization
import Testing

/// A node whose pool is saturated says so: `health` (and so `/healthz` and `/readyz`) gives the
/// connections held and the calls waiting for over a second, and the log says it once.
@Suite(.serialized, .usesTheDatabase) struct PoolGaugeTests {
    @Test func theGaugeCountsHeldConnectionsAndLongWaits() async throws {
        let gauge = PoolGauge(capacity: 2)
        #expect(gauge.reading.description == "pool 0/2 busy")
        let (a, b, c) = (gauge.enter(), gauge.enter(), gauge.enter())
        _ = gauge.leased(a)
        _ = gauge.leased(b)
        #expect(gauge.reading == PoolGauge.Reading(busy: 2, capacity: 2, waiting: 1, waitingLong: 0))
        try await Task.sleep(for: .milliseconds(1_100))
        #expect(gauge.reading.description == "pool 2/2 busy, 1 waiting for over 1 s")
        let slow = gauge.leased(c)
        #expect(slow.waited > .seconds(1) && slow.report, "the first slow wait of the minute is reported")
        let d = gauge.enter()
        try await Task.sleep(for: .milliseconds(1_100))
        let gaveUp = gauge.leave(d)
        #expect(gaveUp.waited > .seconds(1) && !gaveUp.report, "a second slow wait within the minute is not reported again")
        // A caller that gives up while its call waits: the call never uses the connection it gets.
        let e = gauge.enter()
        #expect(gauge.abandon(e))
        #expect(gauge.leased(e).abandoned)
        #expect(!gauge.abandon(a), "a call that holds a connection cannot be given up")
        for ticket in [a, b, c] {
            _ = gauge.leave(ticket)
        }
        #expect(gauge.reading == PoolGauge.Reading(busy: 0, capacity: 2, waiting: 0, waitingLong: 0))
    }

    /// `--database-pool` (`LIVELIST_DATABASE_POOL`): a whole number of connections, or a refusal naming
    /// the flag and the range.
    @Test func thePoolSizeIsAWholeNumberWithinItsRange() throws {
        let name = "--database-pool (LIVELIST_DATABASE_POOL)"
        #expect(try PostgresListStore.Options.poolSize("8", name: name) == 8)
        #expect(try PostgresListStore.Options.poolSize(" 1000 ", name: name) == 1_000)
        #expect(PostgresListStore.Options().maximumConnections == 16)
        for text in ["1", "0", "-4", "1001", "eight", "8.5", ""] {
            #expect {
                try PostgresListStore.Options.poolSize(text, name: name)
            } throws: { error in
                "\(error)" == "\(name): \(text) is not a number of connections from 2 to 1000"
            }
        }
    }

    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aSaturatedPoolShowsInHealthAndOnceInTheLog() async throws {
        let text = try #require(TestDatabase.url)
        var url = try DatabaseURL(text)
        url.database = Postgres.databaseName("pool")
        let address = try await Postgres.createDatabase(url.database, on: text)
        let name = url.database
        defer { Task { await Postgres.dropDatabase(name, on: text) } }
        var options = TestDatabase.options
        options.maximumConnections = 2
        let lines = LogLines()
        let store = try await PostgresListStore.connect(url: url, options: options, logger: Logger(label: "pool-test") { _ in lines })
        defer { store.close() }
        try await Postgres.offThread { try store.saveJSONList(name: "held", version: 1, body: jsonBody(["1"])) }
        #expect(store.health.description == "database: ok, pool 0/2 busy")
        // Another session holds the list's row: two writes hold the pool's two connections waiting
        // for it, and two more wait for a connection.
        let holder = Task {
            try await Postgres.run(try #require(TestDatabase.psql), [address, "-qc",
                "BEGIN; SELECT 1 FROM livelist_lists WHERE name = 'held' FOR UPDATE; SELECT pg_sleep(3); COMMIT;"])
        }
        let locked = try await Postgres.eventually(within: .seconds(10)) {
            try await Postgres.query(address, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(3)%' AND pid <> pg_backend_pid()") == "1"
        }
        #expect(locked, "the other session never held the row")
        let writes = (0 ..< 4).map { _ in
            Task { try? await Postgres.offThread { try store.saveJSONList(name: "held", version: 2, body: jsonBody(["2"])) } }
        }
        let saturated = await Postgres.eventually(within: .seconds(4)) { store.health.description.contains("waiting for over 1 s") }
        #expect(saturated, "\(store.health.description)")
        #expect(store.health.description.hasPrefix("database: ok, pool 2/2 busy, 2 waiting for over 1 s"), "\(store.health.description)")
        for write in writes {
            _ = await write.value
        }
        try await holder.value
        let reports = lines.messages.filter { $0.contains("the database pool is saturated") }
        #expect(reports.count == 1, "\(lines.messages)")
        #expect(reports.first?.contains("--database-pool") == true)
        #expect(store.health.description == "database: ok, pool 0/2 busy")
    }
}

extension PoolGaugeTests {
    /// A write that got no connection of a saturated pool before its deadline sent nothing: it is
    /// answered unavailable (503), not of unknown outcome (504), and is never kept later, when a
    /// connection frees up. Before, it waited on, was written afterwards, and had been answered 504.
    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aWriteThatNeverGotAConnectionIsUnavailableAndNeverKept() async throws {
        let text = try #require(TestDatabase.url)
        var url = try DatabaseURL(text)
        url.database = Postgres.databaseName("claim")
        let address = try await Postgres.createDatabase(url.database, on: text)
        let name = url.database
        defer { Task { await Postgres.dropDatabase(name, on: text) } }
        var options = TestDatabase.options
        options.maximumConnections = 2
        options.operationTimeout = .seconds(2)
        let store = try await PostgresListStore.connect(url: url, options: options, logger: TestDatabase.logger)
        defer { store.close() }
        try await Postgres.offThread { try store.saveJSONList(name: "waiting", version: 1, body: jsonBody(["1"])) }
        // Another session locks the whole table: two reads hold the pool's two connections past their
        // deadline, waiting for it.
        let holder = Task {
            try await Postgres.run(try #require(TestDatabase.psql), [address, "-qc",
                "BEGIN; LOCK TABLE livelist_lists IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;"])
        }
        let locked = try await Postgres.eventually(within: .seconds(10)) {
            try await Postgres.query(address, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(4)%' AND pid <> pg_backend_pid()") == "1"
        }
        #expect(locked, "the other session never locked the table")
        let reads = (0 ..< 2).map { _ in Task { try? await Postgres.offThread { try store.versions() } } }
        let full = await Postgres.eventually(within: .seconds(2)) { store.health.description.contains("pool 2/2 busy") }
        #expect(full, "\(store.health.description)")
        let refusal = await #expect(throws: StoreError.self) {
            try await Postgres.offThread { try store.saveJSONList(name: "waiting", version: 2, body: jsonBody(["2"])) }
        }
        #expect(refusal?.kind == .unavailable, "\(String(describing: refusal))")
        #expect(refusal?.description.contains("nothing was sent") == true, "\(String(describing: refusal))")
        for read in reads {
            _ = await read.value
        }
        try await holder.value
        try await Task.sleep(for: .milliseconds(500))
        let versions = try await Postgres.offThread { try store.versions() }
        #expect(versions["waiting"] == 1, "the write answered unavailable was kept later: \(versions)")
    }
}

/// A log handler that keeps the messages of warnings and above.
final class LogLines: LogHandler, @unchecked Sendable {
    private let kept = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    var messages: [String] { kept.withLock { $0 } }

    func log(event: LogEvent) {
        kept.withLock { $0.append("\(event.message)") }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
