import Foundation
import LiveListEngine
import LiveListPostgres
import Logging
import PostgresNIO
import Synchronization
import Testing

/// A store on a database of its own that holds the app's table `orders` (and `marks`, to tell where a
/// sequence of changes stands), for the live-query tests.
struct AppDatabase: Sendable {
    let store: PostgresListStore
    let url: DatabaseURL
    /// The server's URL, as text.
    let server: String
    /// The database's psql address, as its superuser.
    let address: String

    static let needs = TestDatabase.url != nil && TestDatabase.psql != nil

    static func make(_ label: String, options: PostgresListStore.Options = TestDatabase.options) async throws -> AppDatabase {
        let server = try #require(TestDatabase.url)
        var url = try DatabaseURL(server)
        url.database = Postgres.databaseName(label)
        let address = try await Postgres.createDatabase(url.database, on: server)
        _ = try await Postgres.query(address, """
            CREATE TABLE orders (id serial PRIMARY KEY, customer text, item text);
            CREATE TABLE marks (id serial PRIMARY KEY, label text)
            """)
        let store = try await PostgresListStore.connect(url: url, options: options, logger: TestDatabase.logger)
        return AppDatabase(store: store, url: url, server: server, address: address)
    }

    /// Closes the store and drops the database.
    func drop() async {
        store.close()
        await Postgres.dropDatabase(url.database, on: server)
    }

    /// psql's answer to `sql`, as the superuser.
    @discardableResult
    func sql(_ sql: String) async throws -> String {
        try await Postgres.query(address, sql)
    }

    /// The database's psql address as `role`.
    func address(as role: String) throws -> String {
        var components = try #require(URLComponents(string: address))
        components.user = role
        return try #require(components.string)
    }

    /// A store of another node on the same database, as `role`.
    func store(as role: String) async throws -> PostgresListStore {
        var other = url
        other.user = role
        return try await PostgresListStore.connect(url: other, options: TestDatabase.options, logger: TestDatabase.logger)
    }

    /// A connection of its own (another client of the app), as the superuser.
    func connection() async throws -> PostgresConnection {
        let configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: nil, database: url.database, tls: .disable)
        return try await PostgresConnection.connect(configuration: configuration, id: 1, logger: TestDatabase.logger)
    }

    /// Inserts a row into `marks` (watched by the tests that use it): its change comes after every
    /// change committed before it.
    func mark(_ label: String) async throws {
        try await sql("INSERT INTO marks (label) VALUES ('\(label)')")
    }
}

/// A role of the tests' server (roles belong to the server, not to a database), for `body` on
/// `database`: afterwards the database is dropped, then the role (which its rights there held).
func withRole(_ label: String, on database: AppDatabase, _ body: (String) async throws -> Void) async throws {
    let server = try #require(TestDatabase.url)
    let role = "livelist_\(label)_\(UInt32.random(in: 0 ... UInt32.max))"
    _ = try await Postgres.query(server, "CREATE ROLE \(role) LOGIN")
    var failure: (any Error)?
    do {
        try await body(role)
    } catch {
        failure = error
    }
    await database.drop()
    _ = try await Postgres.query(server, "DROP ROLE \(role)")
    if let failure { throw failure }
}

/// Runs `sql` on `connection` to its end.
func run(_ sql: String, on connection: PostgresConnection) async throws {
    for try await _ in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger) {}
}

/// What a stream of `tableChanges()` yielded, read as it comes.
final class ChangeRecorder: Sendable {
    private struct State {
        var changes: [TableChange] = []
        var ended = false
    }

    private let state = Mutex(State())
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(_ stream: AsyncStream<TableChange>) {
        let task = Task { [self] in
            for await change in stream {
                state.withLock { $0.changes.append(change) }
            }
            state.withLock { $0.ended = true }
        }
        reader.withLock { $0 = task }
    }

    var changes: [TableChange] { state.withLock { $0.changes } }
    var ended: Bool { state.withLock { $0.ended } }

    /// The changes from `start` on, once there are `count` of them (or what there is after 20 s).
    func changes(from start: Int, count: Int) async -> [TableChange] {
        _ = await Postgres.eventually(within: .seconds(20)) { changes.count >= start + count }
        return Array(changes.dropFirst(start))
    }

    /// The changes from `start` on up to the first of `table` (included), waiting for it (20 s at most).
    func changes(from start: Int, through table: String) async -> [TableChange] {
        _ = await Postgres.eventually(within: .seconds(20)) { changes.dropFirst(start).contains { $0.table == table } }
        let after = Array(changes.dropFirst(start))
        guard let end = after.firstIndex(where: { $0.table == table }) else { return after }
        return Array(after[...end])
    }

    func stop() {
        reader.withLock { $0 }?.cancel()
    }
}

/// A change to `table` of the rows whose `column` held `values`.
func change(_ table: String, _ column: String, _ values: Set<String>) -> TableChange {
    TableChange(table: table, values: [column: values])
}
