import Foundation
import LiveListEngine
import LiveListPostgres
import LiveListTestSupport
import Synchronization
import Testing

/// URLs with several hosts and with Unix-domain sockets, against real servers: hosts are tried in
/// order, `target_session_attrs=read-write` passes over a server that takes no writes, and a node
/// moves its pool and its listener to the next server when its own stops answering or stops taking
/// writes. The tests of two servers need Scripts/with-postgres.sh's second (LIVELIST_TEST_PG_SECOND=1).
@Suite(.serialized, .usesTheDatabase) struct ServerChoiceTests {
    static let hasDatabase = TestDatabase.url != nil && TestDatabase.psql != nil
    static let hasTwo = hasDatabase && Postgres.secondURL != nil && Postgres.secondPGCTL != nil

    /// `HOST:PORT` of the server of `text` (a URL).
    private func hostAndPort(_ text: String) throws -> String {
        let components = try #require(URLComponents(string: text))
        return "\(try #require(components.host)):\(try #require(components.port))"
    }

    /// A URL of `database` on `servers` (`HOST:PORT` each) with `query`, as the test database's user.
    private func url(_ servers: [String], _ database: String, _ query: String = "sslmode=disable") throws -> String {
        let text = try #require(TestDatabase.url)
        let user = try #require(URLComponents(string: text)?.user)
        return "postgres://\(user)@\(servers.joined(separator: ","))/\(database)?\(query)"
    }

    private func connect(_ text: String, _ options: PostgresListStore.Options = TestDatabase.options) async throws -> PostgresListStore {
        try await PostgresListStore.connect(url: try DatabaseURL(text), options: options, logger: TestDatabase.logger)
    }

    /// Whether the list `name` is stored on the database at `address`.
    private func holds(_ address: String, _ name: String) async throws -> Bool {
        try await Postgres.query(address, "SELECT count(*) FROM livelist_lists WHERE name = '\(name)'") == "1"
    }

    /// Writes `name` at `version` until a write succeeds, within `seconds`: whether one did.
    private func writesAgain(_ store: PostgresListStore, _ name: String, version: Int = 1, within seconds: Int = 20) async -> Bool {
        await Postgres.eventually(within: .seconds(seconds)) {
            (try? await Postgres.offThread { try store.saveJSONList(name: name, version: version, body: jsonBody([name])) }) != nil
        }
    }

    @Test(.enabled(if: hasDatabase, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func theHostsAreTriedInOrder() async throws {
        let text = try #require(TestDatabase.url)
        guard try DatabaseURL(text).tlsMode == .disable else { return }
        let name = Postgres.databaseName("order")
        let address = try await Postgres.createDatabase(name, on: text)
        defer { Task { await Postgres.dropDatabase(name, on: text) } }
        // Nothing listens on port 1: the node goes on to the next host.
        let store = try await connect(try url(["127.0.0.1:1", try hostAndPort(text)], name))
        defer { store.close() }
        try await Postgres.offThread { try store.saveJSONList(name: "ordered", version: 1, body: jsonBody(["x"])) }
        #expect(try await holds(address, "ordered"))
        let named = try await Postgres.query(
            address, "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(name)' AND application_name = 'livelist' AND client_addr IS NOT NULL")
        #expect((Int(named) ?? 0) > 0, "no connection of the node shows application_name livelist over TCP")
    }

    @Test(.enabled(if: hasDatabase && TestDatabase.pgctl != nil, "needs LIVELIST_TEST_DATABASE_URL, LIVELIST_TEST_PSQL and LIVELIST_TEST_PGCTL"))
    func aSocketHostConnectsOverTheSocketWithTheApplicationName() async throws {
        let text = try #require(TestDatabase.url)
        let port = try #require(URLComponents(string: text)?.port)
        // Scripts/with-postgres.sh puts the socket in the folder of its pgctl script.
        let folder = URL(fileURLWithPath: try #require(TestDatabase.pgctl)).deletingLastPathComponent().path
        let name = Postgres.databaseName("socket")
        let address = try await Postgres.createDatabase(name, on: text)
        defer { Task { await Postgres.dropDatabase(name, on: text) } }
        let user = try #require(URLComponents(string: text)?.user)
        let encoded = try #require(folder.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        for (index, form) in [
            "postgresql://\(user)@/\(name)?host=\(folder)&port=\(port)&application_name=livelist-socket-test",
            "postgresql://\(user)@\(encoded):\(port)/\(name)?application_name=livelist-socket-test",
        ].enumerated() {
            let store = try await connect(form)
            defer { store.close() }
            try await Postgres.offThread { try store.saveJSONList(name: "socket-\(index)", version: 1, body: jsonBody(["x"])) }
            #expect(try await holds(address, "socket-\(index)"), "\(form)")
            // Over a Unix-domain socket the server sees no client address.
            let overSocket = try await Postgres.query(address, """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = '\(name)' AND application_name = 'livelist-socket-test' AND client_addr IS NULL
                """)
            #expect((Int(overSocket) ?? 0) > 0, "no connection over the socket named livelist-socket-test: \(form)")
            let overTCP = try await Postgres.query(
                address, "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(name)' AND application_name = 'livelist-socket-test' AND client_addr IS NOT NULL")
            #expect(overTCP == "0", "a connection went over TCP: \(form)")
        }
    }

    @Test(.enabled(if: hasTwo, "needs Scripts/with-postgres.sh with LIVELIST_TEST_PG_SECOND=1"))
    func readWritePassesOverAServerThatTakesNoWrites() async throws {
        let (first, second) = (try #require(TestDatabase.url), try #require(Postgres.secondURL))
        let name = Postgres.databaseName("readwrite")
        let primary = try await Postgres.createDatabase(name, on: first)
        let standby = try await Postgres.createDatabase(name, on: second)
        defer { Task { await Postgres.dropDatabase(name, on: first); await Postgres.dropDatabase(name, on: second) } }
        _ = try await Postgres.query(standby, "ALTER DATABASE \(name) SET default_transaction_read_only = on")
        let servers = [try hostAndPort(second), try hostAndPort(first)]
        let store = try await connect(try url(servers, name, "sslmode=disable&target_session_attrs=read-write"))
        defer { store.close() }
        try await Postgres.offThread { try store.saveJSONList(name: "written", version: 1, body: jsonBody(["x"])) }
        #expect(try await holds(primary, "written"))
        #expect(try await Postgres.query(standby, "SELECT to_regclass('livelist_lists') IS NULL") == "t", "the read-only server was used")
        // With any, the first server is taken, read-only or not: its migration is refused.
        let error = await #expect(throws: StoreError.self) {
            _ = try await connect(try url(servers, name, "sslmode=disable&target_session_attrs=any"))
        }
        #expect(error?.description.contains("read-only") == true, "\(String(describing: error))")
    }

    @Test(.enabled(if: hasTwo, "needs Scripts/with-postgres.sh with LIVELIST_TEST_PG_SECOND=1"))
    func aNodeMovesToTheNextServerWhenItsOwnStops() async throws {
        let (first, second) = (try #require(TestDatabase.url), try #require(Postgres.secondURL))
        let pgctl = try #require(Postgres.secondPGCTL)
        let name = Postgres.databaseName("failover")
        let next = try await Postgres.createDatabase(name, on: first)
        try await Postgres.createDatabase(name, on: second)
        defer { Task { await Postgres.dropDatabase(name, on: first); await Postgres.dropDatabase(name, on: second) } }
        // The next server has the schema, as a replica would.
        try await connect(try url([try hostAndPort(first)], name)).close()
        let store = try await connect(try url([try hostAndPort(second), try hostAndPort(first)], name))
        defer { store.close() }
        let recorder = NoticeLog(store)
        defer { recorder.stop() }
        try await Postgres.offThread { try store.saveJSONList(name: "before", version: 1, body: jsonBody(["x"])) }
        #expect(try await !holds(next, "before"), "the node did not start on the first server")
        try await Postgres.run(pgctl, ["stop"])
        do {
            #expect(await writesAgain(store, "after"), "no write succeeded within 20 s of the first server stopping")
            #expect(try await holds(next, "after"), "the write after the first server stopped is not on the next one")
            #expect(await Postgres.eventually(within: .seconds(5)) { store.health.isReachable }, "\(store.health)")
            let reconnected = await Postgres.eventually(within: .seconds(5)) { recorder.reconnections >= 2 }
            #expect(reconnected, "the listener did not reconnect on the next server (\(recorder.reconnections) reconnections)")
        } catch {
            try? await Postgres.run(pgctl, ["start"])
            throw error
        }
        try await Postgres.run(pgctl, ["start"])
    }

    @Test(.enabled(if: hasTwo, "needs Scripts/with-postgres.sh with LIVELIST_TEST_PG_SECOND=1"))
    func readWriteLeavesAServerThatStopsTakingWrites() async throws {
        let (first, second) = (try #require(TestDatabase.url), try #require(Postgres.secondURL))
        let name = Postgres.databaseName("demoted")
        let next = try await Postgres.createDatabase(name, on: first)
        let demoted = try await Postgres.createDatabase(name, on: second)
        defer { Task { await Postgres.dropDatabase(name, on: first); await Postgres.dropDatabase(name, on: second) } }
        try await connect(try url([try hostAndPort(first)], name)).close()
        let store = try await connect(try url([try hostAndPort(second), try hostAndPort(first)], name, "sslmode=disable&target_session_attrs=read-write"))
        defer { store.close() }
        try await Postgres.offThread { try store.saveJSONList(name: "before", version: 1, body: jsonBody(["x"])) }
        #expect(try await holds(demoted, "before"))
        // The server is demoted: its sessions, the node's open ones too, take no more writes.
        _ = try await Postgres.query(demoted, "ALTER SYSTEM SET default_transaction_read_only = on")
        _ = try await Postgres.query(demoted, "SELECT pg_reload_conf()")
        do {
            let refusal = await #expect(throws: StoreError.self) {
                try await Postgres.offThread { try store.saveJSONList(name: "before", version: 2, body: jsonBody(["y"])) }
            }
            #expect(refusal?.kind == .unavailable, "\(String(describing: refusal))")
            #expect(await writesAgain(store, "after"), "no write succeeded within 20 s of the server turning read-only")
            #expect(try await holds(next, "after"))
        } catch {
            _ = try? await Postgres.query(demoted, "ALTER SYSTEM RESET default_transaction_read_only")
            _ = try? await Postgres.query(demoted, "SELECT pg_reload_conf()")
            throw error
        }
        _ = try await Postgres.query(demoted, "ALTER SYSTEM RESET default_transaction_read_only")
        _ = try await Postgres.query(demoted, "SELECT pg_reload_conf()")
    }
}

/// Counts the `.reconnected` notices of a store's `notices()`.
final class NoticeLog: Sendable {
    private let count = Mutex(0)
    private let consumer = Mutex<Task<Void, Never>?>(nil)

    init(_ store: any SharedListStore) {
        let stream = store.notices()
        let task = Task { [self] in
            for await notice in stream where notice == .reconnected {
                count.withLock { $0 += 1 }
            }
        }
        consumer.withLock { $0 = task }
    }

    var reconnections: Int { count.withLock { $0 } }

    func stop() {
        consumer.withLock { $0 }?.cancel()
    }
}
