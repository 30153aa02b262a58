import Foundation
import LiveListEngine
@testable import LiveListPostgres
import LiveListTestSupport
import NIOCore
import PostgresNIO
import Testing

/// A database that cannot be used is explained in words: the server, what happened, what to do;
/// never the client library's names for its errors, never the password.
@Suite(.serialized, .usesTheDatabase) struct ConnectionFailureTests {
    /// The client library's names for what these tests cause: none may reach a message.
    static let libraryNames = [
        "authMechanismRequiresPassword", "sslUnsupported", "connectionError", "serverClosedConnection", "clientClosedConnection", "PSQLError",
        "NIOConnectionError", "IOError",
    ]

    private func ensureInWords(_ message: String?, _ expected: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let message = message ?? "(none)"
        for part in expected {
            #expect(message.contains(part), "\(message) lacks \(part)", sourceLocation: sourceLocation)
        }
        for name in Self.libraryNames {
            #expect(!message.contains(name), "\(message) names \(name)", sourceLocation: sourceLocation)
        }
        #expect(!message.contains("hunter2"), "\(message) shows the password", sourceLocation: sourceLocation)
    }

    @Test func eachFailureIsASentenceNamingTheServerAndWhatToDo() throws {
        let url = try DatabaseURL("postgres://alice:hunter2@db.internal:6000/lists?sslmode=require")
        let server = url.servers[0]
        ensureInWords(
            PostgresListStore.clientFailure(.authMechanismRequiresPassword, underlying: nil, at: server, url),
            ["db.internal:6000 asks for a password for the user alice", "LIVELIST_DATABASE_PASSWORD_FILE", "PGPASSWORD", "~/.pgpass"])
        ensureInWords(
            PostgresListStore.clientFailure(.sslUnsupported, underlying: nil, at: server, url),
            ["db.internal:6000 does not accept TLS", "sslmode=require", "ssl on"])
        ensureInWords(
            PostgresListStore.refusal(state: "28P01", message: "password authentication failed for user \"alice\"", at: server, url),
            ["db.internal:6000 refused the password of the user alice", "check the password"])
        ensureInWords(
            PostgresListStore.refusal(state: "3D000", message: "database \"lists\" does not exist", at: server, url),
            ["the database lists does not exist on the database server db.internal:6000", "createdb lists"])
        ensureInWords(
            PostgresListStore.refusal(state: "53300", message: "sorry, too many clients already", at: server, url),
            ["db.internal:6000 has no connection left", "max_connections", "--database-pool"])
        ensureInWords(
            PostgresListStore.connectionFailure(IOError(errnoCode: ECONNREFUSED, reason: "connect"), at: server),
            ["nothing accepts connections at db.internal:6000 (connection refused)"])
        ensureInWords(
            PostgresListStore.connectionFailure(ChannelError.connectTimeout(.seconds(3)), at: server),
            ["db.internal:6000 did not answer within 3 s"])
        let socket = DatabaseURL.Server(host: "/run/pg", port: 5432)
        ensureInWords(
            PostgresListStore.connectionFailure(IOError(errnoCode: ENOENT, reason: "connect"), at: socket),
            ["there is no socket /run/pg/.s.PGSQL.5432", "unix_socket_directories"])
    }

    /// Real failures, without a database: a name that does not resolve, a port nothing listens on.
    @Test func aHostThatDoesNotResolveAndAPortNobodyListensOnAreSaidSo() async throws {
        for (text, expected) in [
            ("postgres://u:hunter2@livelist-no-such-host.invalid/db?sslmode=disable", "the host name livelist-no-such-host.invalid does not resolve"),
            ("postgres://u:hunter2@127.0.0.1:1/db", "nothing accepts connections at 127.0.0.1:1 (connection refused)"),
        ] {
            let url = try DatabaseURL(text)
            let error = await #expect(throws: StoreError.self) {
                _ = try await PostgresListStore.connect(url: url, options: TestDatabase.options, logger: TestDatabase.logger)
            }
            ensureInWords(error?.description, [expected])
        }
    }

    @Test(.enabled(if: TestDatabase.url != nil, "set LIVELIST_TEST_DATABASE_URL, e.g. run under Scripts/with-postgres.sh"))
    func requireAgainstAServerWithoutTLSIsSaidSo() async throws {
        var url = try DatabaseURL(try #require(TestDatabase.url))
        guard url.tlsMode == .disable else { return }
        url.tlsMode = .require
        let target = url
        let error = await #expect(throws: StoreError.self) {
            _ = try await PostgresListStore.connect(url: target, options: TestDatabase.options, logger: TestDatabase.logger)
        }
        ensureInWords(error?.description, ["does not accept TLS, and sslmode=require requires it"])
    }

    /// A server that asks for a password: none given is said so, a wrong one is refused without being
    /// shown, and the password file gives the right one (the second server of Scripts/with-postgres.sh,
    /// whose pg_hba.conf this test changes for one role and restores).
    @Test(.enabled(if: Postgres.secondURL != nil && Postgres.secondPGCTL != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_PG_SECOND=1"))
    func aServerThatAsksForAPasswordGetsItOrASentence() async throws {
        let second = try #require(Postgres.secondURL)
        let hba = URL(fileURLWithPath: try #require(Postgres.secondPGCTL)).deletingLastPathComponent().path + "/data/pg_hba.conf"
        let original = try String(contentsOfFile: hba, encoding: .utf8)
        let role = "livelist_password_\(UInt32.random(in: 0 ... UInt32.max))"
        _ = try await Postgres.query(second, "CREATE ROLE \(role) LOGIN PASSWORD 'right-one'")
        try ("host all \(role) 127.0.0.1/32 scram-sha-256\n" + original).write(toFile: hba, atomically: false, encoding: .utf8)
        _ = try await Postgres.query(second, "SELECT pg_reload_conf()")
        let name = Postgres.databaseName("password")
        // The role owns the database, so that it may make LiveList's tables there.
        try await Postgres.run(try #require(TestDatabase.psql), [second, "-qc", "CREATE DATABASE \(name) OWNER \(role)"])
        defer {
            try? original.write(toFile: hba, atomically: false, encoding: .utf8)
            Task {
                _ = try? await Postgres.query(second, "SELECT pg_reload_conf()")
                await Postgres.dropDatabase(name, on: second)
                _ = try? await Postgres.query(second, "DROP ROLE IF EXISTS \(role)")
            }
        }
        let port = try #require(URLComponents(string: second)?.port)
        let bare = "postgres://\(role)@127.0.0.1:\(port)/\(name)"
        let folder = try TemporaryFolder()
        let none = await #expect(throws: StoreError.self) {
            _ = try await PostgresListStore.connect(
                url: try DatabaseURL(bare, passwordFile: nil, environment: ["HOME": folder.path]), options: TestDatabase.options, logger: TestDatabase.logger)
        }
        ensureInWords(none?.description, ["127.0.0.1:\(port) asks for a password for the user \(role)", "PGPASSWORD"])
        let wrong = await #expect(throws: StoreError.self) {
            _ = try await PostgresListStore.connect(
                url: try DatabaseURL(bare, passwordFile: nil, environment: ["PGPASSWORD": "hunter2"]), options: TestDatabase.options,
                logger: TestDatabase.logger)
        }
        ensureInWords(wrong?.description, ["refused the password of the user \(role)", "28P01"])
        _ = try folder.write(".pgpass", "127.0.0.1:\(port):*:\(role):right-one\n")
        let store = try await PostgresListStore.connect(
            url: try DatabaseURL(bare, passwordFile: nil, environment: ["HOME": folder.path]), options: TestDatabase.options, logger: TestDatabase.logger)
        defer { store.close() }
        try await Postgres.offThread { try store.saveJSONList(name: "with-password", version: 1, body: jsonBody(["x"])) }
    }
}
