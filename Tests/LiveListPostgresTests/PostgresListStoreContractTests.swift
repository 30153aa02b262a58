import Dispatch
import Glibc
import Foundation
import LiveListEngine
import LiveListPostgres
import LiveListTestSupport
import Logging
import Testing

/// The PostgreSQL that these tests use: `LIVELIST_TEST_DATABASE_URL` (Scripts/with-postgres.sh starts
/// a throwaway one and sets it, with `LIVELIST_TEST_PSQL` to make a fresh database per check and
/// `LIVELIST_TEST_PGCTL` to stop and start it). Without it the tests are skipped, unless
/// `LIVELIST_REQUIRE_POSTGRES=1` (Scripts/test, CI), where its absence fails the run.
enum TestDatabase {
    static let environment = ProcessInfo.processInfo.environment
    static let url = setting("LIVELIST_TEST_DATABASE_URL")
    static let psql = setting("LIVELIST_TEST_PSQL")
    static let pgctl = setting("LIVELIST_TEST_PGCTL")
    static let isRequired = environment["LIVELIST_REQUIRE_POSTGRES"] == "1"

    private static func setting(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// A small history, so that its bound is reached in a few writes.
    static let options: PostgresListStore.Options = {
        var options = PostgresListStore.Options()
        options.keptVersions = 4
        options.largestKeptContent = 1_024
        options.maximumConnections = 4
        return options
    }()

    static let logger: Logger = {
        var logger = Logger(label: "livelist.postgres-contract-tests")
        logger.logLevel = .warning
        return logger
    }()

    /// Storage for one check: a database of its own when `psql` is at hand (a fresh schema, dropped
    /// afterwards), else the given database itself (the checks' list names never collide).
    static func storage() async throws -> ContractStorage {
        guard let text = url else {
            throw SetupError("set LIVELIST_TEST_DATABASE_URL, e.g. run under Scripts/with-postgres.sh")
        }
        let psql = Self.psql
        var target = try DatabaseURL(text)
        var created: String?
        if let psql {
            let name = "livelist_contract_\(ProcessInfo.processInfo.processIdentifier)_\(UInt32.random(in: 0 ... UInt32.max))"
            try await run(psql, [text, "-qc", "CREATE DATABASE \(name)"])
            target.database = name
            created = name
        }
        let (database, made) = (target, created)
        return ContractStorage(
            open: { try await PostgresListStore.connect(url: database, options: TestDatabase.options, logger: TestDatabase.logger) },
            close: { store in
                if let postgres = store as? PostgresListStore {
                    postgres.close()
                }
            },
            remove: {
                if let made, let psql {
                    // FORCE: the closed stores' connections may not have ended yet.
                    try? await TestDatabase.run(psql, [text, "-qc", "DROP DATABASE IF EXISTS \(made) WITH (FORCE)"])
                }
            })
    }

    /// Runs `tool` with `arguments` to its end, on a thread of its own; throws unless it exits 0. Its
    /// output goes to the test's.
    static func run(_ tool: String, _ arguments: [String]) async throws {
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: spawnAndWait(tool, arguments))
            }
        }
        guard status == 0 else {
            throw SetupError("\(tool) \(arguments.dropFirst().joined(separator: " ")) exited with status \(status)")
        }
    }

    /// Runs `tool` and waits for it with `waitpid`: its exit status, or -1 when it cannot start.
    /// (Foundation's `Process` missed the exit of the script that starts the database, whose daemon
    /// outlives it, and waited forever.)
    private static func spawnAndWait(_ tool: String, _ arguments: [String]) -> Int32 {
        let argv: [UnsafeMutablePointer<CChar>?] = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pid: pid_t = 0
        guard posix_spawn(&pid, tool, &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        // Exited normally: its exit code; killed by a signal: the raw status, never 0.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status
    }

    struct SetupError: Error, CustomStringConvertible {
        var description: String

        init(_ description: String) {
            self.description = description
        }
    }
}

/// PostgresListStore against the ListStore contract: the checks of every store, and those of a shared
/// one. The restart test stops the database that the others use: it runs alone (``DatabaseUse``).
@Suite(.serialized, .usesTheDatabase) struct PostgresListStoreContractTests {
    static let contract = ListStoreContract(
        "PostgresListStore", keptVersions: TestDatabase.options.keptVersions,
        largestKeptContent: TestDatabase.options.largestKeptContent
    ) {
        try await TestDatabase.storage()
    }

    /// Under Scripts/test (CI) a missing database fails the run instead of skipping these tests.
    @Test func aDatabaseIsGivenWhereOneIsRequired() {
        if TestDatabase.isRequired && TestDatabase.url == nil {
            Issue.record("LIVELIST_REQUIRE_POSTGRES=1 but LIVELIST_TEST_DATABASE_URL is not set: set LIVELIST_TEST_DATABASE_URL, e.g. run under Scripts/with-postgres.sh")
        }
    }

    @Test(
        .enabled(if: TestDatabase.url != nil, "set LIVELIST_TEST_DATABASE_URL, e.g. run under Scripts/with-postgres.sh"),
        arguments: ListStoreContract.Check.allCases)
    func everyStore(_ check: ListStoreContract.Check) async throws {
        try await Self.contract.run(check)
    }

    @Test(
        .enabled(if: TestDatabase.url != nil, "set LIVELIST_TEST_DATABASE_URL, e.g. run under Scripts/with-postgres.sh"),
        arguments: ListStoreContract.SharedCheck.allCases)
    func sharedStore(_ check: ListStoreContract.SharedCheck) async throws {
        try await Self.contract.run(check)
    }

    /// Stops and starts the database (`LIVELIST_TEST_PGCTL`): some seconds.
    @Test(
        .enabled(
            if: TestDatabase.url != nil && TestDatabase.pgctl != nil,
            "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PGCTL, e.g. run under Scripts/with-postgres.sh"),
        .restartsTheDatabase)
    func aRestartOfTheDatabaseIsRiddenOut() async throws {
        let pgctl = try #require(TestDatabase.pgctl)
        try await Self.contract.checkReconnection(
            stopDatabase: { try await TestDatabase.run(pgctl, ["stop"]) },
            startDatabase: { try await TestDatabase.run(pgctl, ["start"]) })
    }

    /// An unreachable database fails `connect` with a message naming it, rather than hanging.
    @Test(.enabled(if: TestDatabase.url != nil, "set LIVELIST_TEST_DATABASE_URL, e.g. run under Scripts/with-postgres.sh"))
    func connectingToAMissingDatabaseFails() async throws {
        var url = try DatabaseURL(try #require(TestDatabase.url))
        url.database = "livelist_missing_\(UInt32.random(in: 0 ... UInt32.max))"
        let target = url
        let error = await #expect(throws: StoreError.self) {
            _ = try await PostgresListStore.connect(url: target, options: TestDatabase.options, logger: TestDatabase.logger)
        }
        #expect(error?.description.contains(target.database) == true, "\(String(describing: error))")
    }

    /// A refusal means nothing changed: with another session holding the list's row lock longer than
    /// the write's deadline, the write is refused as unavailable (the database's lock timeout rolls it
    /// back), and it is still not stored once the lock is released. Before, the node stopped waiting,
    /// answered 503, and the write committed afterwards.
    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aWriteRefusedWhileALockIsHeldIsNeverKeptLater() async throws {
        var options = TestDatabase.options
        options.operationTimeout = .seconds(1)
        let (store, url, address) = try await freshStore("lock", options: options)
        defer { store.close() }
        try await offThread { try store.saveJSONList(name: "held", version: 1, body: jsonBody(["1"])) }
        let holder = Task {
            try await TestDatabase.run(try #require(TestDatabase.psql), [address, "-qc",
                "BEGIN; SELECT 1 FROM livelist_lists WHERE name = 'held' FOR UPDATE; SELECT pg_sleep(2.5); COMMIT;"])
        }
        try await Task.sleep(for: .milliseconds(600))
        let started = ContinuousClock.now
        let refusal = await #expect(throws: StoreError.self) {
            try await offThread { try store.saveJSONList(name: "held", version: 2, body: jsonBody(["2"])) }
        }
        #expect(refusal?.kind == .unavailable, "\(String(describing: refusal))")
        #expect(ContinuousClock.now - started < .seconds(1), "refused by the database before the node's deadline")
        try await holder.value
        try await Task.sleep(for: .milliseconds(500))
        let stored = try await offThread { try store.versions() }
        #expect(stored["held"] == 1, "the refused write was kept later: \(stored)")
        await dropDatabase(url)
    }

    /// Nodes of different schema versions never run side by side: once a newer release migrated the
    /// database past this one's schema, a running store refuses every call and says why in its health.
    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aStoreStopsServingOnceANewerReleaseMigratedTheDatabase() async throws {
        var options = TestDatabase.options
        options.schemaCheckInterval = .milliseconds(100)
        let (store, url, address) = try await freshStore("newer", options: options)
        defer { store.close() }
        try await offThread { try store.saveJSONList(name: "before", version: 1, body: jsonBody(["1"])) }
        try await TestDatabase.run(try #require(TestDatabase.psql), [address, "-qc", "INSERT INTO livelist_schema (version) VALUES (\(PostgresListStore.schemaVersion + 1))"])
        let deadline = ContinuousClock.now + .seconds(5)
        while store.health.isReachable, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let refused = !store.health.isReachable
        #expect(refused, "the store still serves a newer schema: \(store.health.description)")
        #expect(store.health.description.contains("schema \(PostgresListStore.schemaVersion + 1), newer"))
        let error = await #expect(throws: StoreError.self) {
            try await offThread { try store.saveJSONList(name: "before", version: 2, body: jsonBody(["2"])) }
        }
        #expect(error?.kind == .unavailable)
        let other = url
        let startError = await #expect(throws: StoreError.self) {
            _ = try await PostgresListStore.connect(url: other, options: TestDatabase.options, logger: TestDatabase.logger)
        }
        #expect(startError?.description.contains("newer than this release understands") == true, "\(String(describing: startError))")
        await dropDatabase(url)
    }

    /// A store on a database of its own, named after `label`: the store, its URL, and the URL as text
    /// for psql.
    private func freshStore(_ label: String, options: PostgresListStore.Options) async throws -> (PostgresListStore, DatabaseURL, String) {
        let (text, psql) = (try #require(TestDatabase.url), try #require(TestDatabase.psql))
        var url = try DatabaseURL(text)
        url.database = "livelist_\(label)_\(UInt32.random(in: 0 ... UInt32.max))"
        try await TestDatabase.run(psql, [text, "-qc", "CREATE DATABASE \(url.database)"])
        var address = try #require(URLComponents(string: text))
        address.path = "/" + url.database
        let store = try await PostgresListStore.connect(url: url, options: options, logger: TestDatabase.logger)
        return (store, url, try #require(address.string))
    }

    private func dropDatabase(_ url: DatabaseURL) async {
        guard let text = TestDatabase.url, let psql = TestDatabase.psql else { return }
        try? await TestDatabase.run(psql, [text, "-qc", "DROP DATABASE IF EXISTS \(url.database) WITH (FORCE)"])
    }

    /// Runs a blocking store call off the cooperative pool.
    private func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
