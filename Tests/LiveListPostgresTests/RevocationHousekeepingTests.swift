import Foundation
import LiveListEngine
@testable import LiveListPostgres
import Testing

/// What a revocation costs stays bounded: recording one inserts one row and deletes nothing (a flood
/// of sign-outs once made every insert scan the whole table), the old ones go in housekeeping passes
/// of bounded statements, and `revocations(after:)` still tells a reader that it missed some.
@Suite(.serialized, .usesTheDatabase) struct RevocationHousekeepingTests {
    /// A store on a database of its own: the store, and the database's psql address.
    private func freshStore(_ options: PostgresListStore.Options) async throws -> (PostgresListStore, String, @Sendable () async -> Void) {
        let text = try #require(TestDatabase.url)
        var url = try DatabaseURL(text)
        url.database = Postgres.databaseName("housekeeping")
        let address = try await Postgres.createDatabase(url.database, on: text)
        let store = try await PostgresListStore.connect(url: url, options: options, logger: TestDatabase.logger)
        let name = url.database
        return (store, address, {
            store.close()
            await Postgres.dropDatabase(name, on: text)
        })
    }

    private func query(_ address: String, _ sql: String) async throws -> String {
        try await Postgres.query(address, sql)
    }

    /// Old revocations as another node of an hour ago left them: `count` rows recorded two hours ago.
    /// Answers the first one's id.
    private func insertOld(_ address: String, count: Int) async throws -> Int {
        let first = try await query(address, """
            WITH made AS (
                INSERT INTO livelist_revocations (origin, kind, subject, recorded_at)
                SELECT 'elsewhere', 'everything', '', now() - interval '2 hours' FROM generate_series(1, \(count)) RETURNING id)
            SELECT min(id) FROM made
            """)
        return try #require(Int(first))
    }

    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func recordingARevocationDeletesNothing() async throws {
        let (store, address, drop) = try await freshStore(TestDatabase.options)
        defer { Task { await drop() } }
        _ = try await insertOld(address, count: 5)
        for _ in 0 ..< 3 {
            try await offThread { try store.recordRevocation(.everything) }
        }
        #expect(try await query(address, "SELECT count(*) FROM livelist_revocations") == "8", "a revocation's insert deleted the old ones")
    }

    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func housekeepingDeletesTheOldInBoundedStatementsAndReadersSeeWhatTheyMissed() async throws {
        var options = TestDatabase.options
        options.housekeepingInterval = .seconds(3_600)
        options.housekeepingBatch = 3
        let (store, address, drop) = try await freshStore(options)
        defer { Task { await drop() } }
        let first = try await insertOld(address, count: 7)
        try await offThread { try store.recordRevocation(.identity("recent")) }
        let expired = EndedSignIn(digest: String(repeating: "a", count: 32), issued: 1, expires: 2)
        let live = EndedSignIn(digest: String(repeating: "b", count: 32), issued: 1, expires: Int(Date().timeIntervalSince1970) + 3_600)
        _ = try await query(address, "INSERT INTO livelist_ended_signins VALUES ('\(expired.digest)', 1, 2)")
        try await offThread { try store.recordEndedSignIn(live) }
        let deleted = try await store.housekeepingPass()
        #expect(deleted.revocations == 7 && deleted.endedSignIns == 1, "\(deleted)")
        #expect(try await query(address, "SELECT count(*) FROM livelist_revocations") == "2", "the recent revocation and the sign-out's stay")
        #expect(try await offThread { try store.endedSignIns(now: 0) } == [live])
        // A reader that had read only the first old one missed six: it is told so.
        let missed = try await offThread { try store.revocations(after: first) }
        #expect(missed.isIncomplete)
        // Nothing is left to delete: a second pass deletes nothing.
        let again = try await store.housekeepingPass()
        #expect(again.revocations == 0 && again.endedSignIns == 0, "\(again)")
    }

    /// Even when every revocation is old, the newest stays: a reader far behind still learns that it
    /// missed some, from that row's id.
    @Test(.enabled(if: TestDatabase.url != nil && TestDatabase.psql != nil, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func theNewestRevocationStaysSoAReaderFarBehindKnows() async throws {
        var options = TestDatabase.options
        options.housekeepingInterval = .milliseconds(100)
        let (store, address, drop) = try await freshStore(options)
        defer { Task { await drop() } }
        let first = try await insertOld(address, count: 4)
        let deadline = ContinuousClock.now + .seconds(10)
        while try await query(address, "SELECT count(*) FROM livelist_revocations") != "1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await query(address, "SELECT count(*) FROM livelist_revocations") == "1", "the periodic pass did not run, or deleted the newest")
        let missed = try await offThread { try store.revocations(after: first) }
        #expect(missed.isIncomplete)
    }

    private func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Postgres.offThread(body)
    }
}
