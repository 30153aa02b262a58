import Foundation
import LiveListEngine
@testable import LiveListPostgres
import PostgresNIO
import Testing

/// Every change any client commits to a watched table reaches every node's `tableChanges()`, with the
/// watched columns' values before and after, once committed, in commit order: the triggers of
/// `watch(_:columns:)` announce it, and the listener hears it.
@Suite(.serialized, .usesTheDatabase) struct TableChangeTests {
    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func watchMakesTheTriggersOnceAndKeepsTheColumnsOthersWatch() async throws {
        let database = try await AppDatabase.make("watch")
        defer { Task { await database.drop() } }
        let triggers = """
            SELECT string_agg(tgname || ' ' || encode(tgargs, 'escape'), ' | ' ORDER BY tgname) FROM pg_trigger
            WHERE tgrelid = 'orders'::regclass
            """
        try await database.store.watch("orders", columns: ["customer"])
        let made = try await database.sql(triggers)
        #expect(made == ["del", "ins", "trunc", "upd"].map { #"livelist_rows_\#($0) orders\000customer\000"# }.joined(separator: " | "), "\(made)")
        let oids = try await database.sql("SELECT string_agg(oid::text, ',' ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'orders'::regclass")
        // Watched already: nothing is made again.
        try await database.store.watch("orders", columns: ["customer"])
        #expect(try await database.sql("SELECT string_agg(oid::text, ',' ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'orders'::regclass") == oids)
        // Another live query's column: the triggers announce both.
        try await database.store.watch("public.orders", columns: ["item"])
        try await database.store.watch("public.orders", columns: ["customer"])
        let both = try await database.sql(triggers)
        #expect(both.contains(#"livelist_rows_ins public.orders\000customer\000item\000"#), "\(both)")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func whatCannotBeWatchedIsSaid() async throws {
        let database = try await AppDatabase.make("unwatchable")
        defer { Task { await database.drop() } }
        try await database.sql("CREATE VIEW recent AS SELECT * FROM orders")
        let refusals: [(String, [String], String)] = [
            ("nosuch", ["customer"], "there is no table nosuch"),
            ("Orders", ["customer"], "there is no table Orders (names are matched exactly"),
            ("orders", ["custmer"], "has no column custmer"),
            ("recent", ["customer"], "recent is not a table"),
            ("orders; DROP TABLE orders", ["customer"], "is not a plain name"),
            ("orders", ["customer\" text"], "is not a plain name"),
            ("a.b.c", [], "is not TABLE or SCHEMA.TABLE"),
        ]
        for (table, columns, expected) in refusals {
            let error = await #expect(throws: StoreError.self) { try await database.store.watch(table, columns: columns) }
            #expect(error?.description.contains(expected) == true, "\(table): \(String(describing: error))")
        }
        #expect(try await database.sql("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'orders'::regclass") == "0")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func insertsUpdatesAndDeletesArriveWithTheValuesBeforeAndAfter() async throws {
        let database = try await AppDatabase.make("changes")
        defer { Task { await database.drop() } }
        try await database.store.watch("orders", columns: ["customer"])
        let recorder = ChangeRecorder(database.store.tableChanges())
        let other = ChangeRecorder(database.store.tableChanges())
        defer { recorder.stop(); other.stop() }
        try await database.sql("INSERT INTO orders (customer, item) VALUES ('alice', 'apple'), ('alice', 'pear'), (NULL, 'plum')")
        try await database.sql("UPDATE orders SET customer = 'bob' WHERE customer = 'alice'")
        try await database.sql("UPDATE orders SET item = 'fig' WHERE false")
        try await database.sql("DELETE FROM orders WHERE customer = 'bob'")
        try await database.sql("UPDATE orders SET item = 'kiwi'")
        let expected = [
            change("orders", "customer", ["alice"]), change("orders", "customer", ["alice", "bob"]), change("orders", "customer", ["bob"]),
            // The row without a customer: no value to list.
            change("orders", "customer", []),
        ]
        #expect(await recorder.changes(from: 0, count: 4) == expected)
        #expect(await other.changes(from: 0, count: 4) == expected, "every stream gets every change")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aTransactionsChangesArriveTogetherOnceCommittedAndARollbackSendsNothing() async throws {
        let database = try await AppDatabase.make("transactions")
        defer { Task { await database.drop() } }
        try await database.store.watch("orders", columns: ["customer"])
        try await database.store.watch("marks", columns: ["label"])
        let recorder = ChangeRecorder(database.store.tableChanges())
        defer { recorder.stop() }
        let connection = try await database.connection()
        defer { Task { try? await connection.close() } }
        try await run("BEGIN", on: connection)
        try await run("INSERT INTO orders (customer) VALUES ('carol')", on: connection)
        try await run("UPDATE orders SET customer = 'dave' WHERE customer = 'carol'", on: connection)
        // A change committed meanwhile arrives first, alone: the open transaction's are not sent yet.
        try await database.mark("during")
        #expect(await recorder.changes(from: 0, through: "marks") == [change("marks", "label", ["during"])])
        try await run("COMMIT", on: connection)
        try await database.mark("after")
        #expect(
            await recorder.changes(from: 1, through: "marks") == [
                change("orders", "customer", ["carol"]), change("orders", "customer", ["carol", "dave"]), change("marks", "label", ["after"]),
            ])
        try await run("BEGIN", on: connection)
        try await run("INSERT INTO orders (customer) VALUES ('erin')", on: connection)
        try await run("ROLLBACK", on: connection)
        try await database.mark("rolled back")
        #expect(await recorder.changes(from: 4, through: "marks") == [change("marks", "label", ["rolled back"])])
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aStatementTooLargeToListAndATruncateAnnounceTheWholeTable() async throws {
        let database = try await AppDatabase.make("whole")
        defer { Task { await database.drop() } }
        try await database.store.watch("orders", columns: ["customer"])
        let recorder = ChangeRecorder(database.store.tableChanges())
        defer { recorder.stop() }
        // 3,000 customers of 12 bytes or more: past the 7,900 bytes of a payload.
        try await database.sql("INSERT INTO orders (customer) SELECT 'customer-' || g FROM generate_series(1, 3000) AS g")
        // 300 of them fit.
        try await database.sql("UPDATE orders SET item = 'x' WHERE id <= 300")
        try await database.sql("TRUNCATE orders")
        let changes = await recorder.changes(from: 0, count: 3)
        try #require(changes.count == 3, "\(changes.map { $0.table ?? "everything" })")
        #expect(changes[0] == TableChange(table: "orders", values: nil))
        #expect(changes[1].values?["customer"]?.count == 300 && changes[1].table == "orders")
        #expect(changes[2] == TableChange(table: "orders", values: nil))
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aNotificationThatIsNotTheTriggersMeansEverything() async throws {
        let database = try await AppDatabase.make("forged")
        defer { Task { await database.drop() } }
        let recorder = ChangeRecorder(database.store.tableChanges())
        defer { recorder.stop() }
        try await database.sql("SELECT pg_notify('livelist_rows', 'not json'), pg_notify('livelist_rows', '{\"t\": 3}')")
        try await database.sql(#"SELECT pg_notify('livelist_rows', '{"t": "orders", "k": {"customer": ["zoe"]}}')"#)
        // The first `.everything` covers the second, which is not queued behind it: one or two arrive.
        _ = await Postgres.eventually(within: .seconds(20)) { recorder.changes.last?.table == "orders" }
        let changes = recorder.changes
        #expect(changes.last == change("orders", "customer", ["zoe"]))
        #expect(!changes.dropLast().isEmpty && changes.dropLast().allSatisfy { $0 == .everything }, "\(changes)")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func theStreamsEndWhenTheStoreCloses() async throws {
        let database = try await AppDatabase.make("closing")
        defer { Task { await database.drop() } }
        let recorders = [ChangeRecorder(database.store.tableChanges()), ChangeRecorder(database.store.tableChanges())]
        database.store.close()
        #expect(await Postgres.eventually(within: .seconds(10)) { recorders.allSatisfy(\.ended) })
        let late = ChangeRecorder(database.store.tableChanges())
        #expect(await Postgres.eventually(within: .seconds(10)) { late.ended }, "a stream asked for after the store closed ends at once")
    }
}
