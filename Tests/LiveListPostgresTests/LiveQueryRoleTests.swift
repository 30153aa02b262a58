import Foundation
import LiveListEngine
@testable import LiveListPostgres
import Testing

/// Live queries under least privilege: the app's writers need no more than their row rights; a node
/// whose role does not own a table is told what its owner must run; and a restart of the database
/// makes every stream start over with `.everything`.
@Suite(.serialized, .usesTheDatabase) struct LiveQueryRoleTests {
    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aWriterWithOnlyRowRightsWritesAndItsChangesArrive() async throws {
        let database = try await AppDatabase.make("writer")
        defer { Task { await database.drop() } }
        try await database.store.watch("orders", columns: ["customer"])
        let recorder = ChangeRecorder(database.store.tableChanges())
        defer { recorder.stop() }
        try await withRole("writer", on: database) { writer in
            try await database.sql("GRANT INSERT, UPDATE, DELETE ON orders TO \(writer); GRANT USAGE ON SEQUENCE orders_id_seq TO \(writer)")
            let address = try database.address(as: writer)
            // Without SELECT, no WHERE: every row.
            _ = try await Postgres.query(address, "INSERT INTO orders (customer) VALUES ('carol')")
            _ = try await Postgres.query(address, "UPDATE orders SET customer = 'dave'")
            _ = try await Postgres.query(address, "DELETE FROM orders")
            #expect(
                await recorder.changes(from: 0, count: 3) == [
                    change("orders", "customer", ["carol"]), change("orders", "customer", ["carol", "dave"]), change("orders", "customer", ["dave"]),
                ])
        }
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aNodeThatDoesNotOwnTheTableIsToldWhatItsOwnerMustRun() async throws {
        let database = try await AppDatabase.make("owner")
        defer { Task { await database.drop() } }
        try await withRole("runtime", on: database) { runtime in
            try await Postgres.offThread { try database.store.grantRuntimeAccess(to: runtime) }
            try await database.sql("GRANT SELECT ON orders TO \(runtime)")
            let node = try await database.store(as: runtime)
            defer { node.close() }
            let refusal = await #expect(throws: StoreError.self) { try await node.watch("orders", columns: ["customer"]) }
            let message = try #require(refusal?.description)
            #expect(message.contains("its owner (postgres)") && message.contains("does not own the table"), "\(message)")
            #expect(try await database.sql("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'orders'::regclass") == "0")
            // The statements it names, run by the owner, make the triggers; the node then watches.
            let statements = String(try #require(message.range(of: "\n\n").map { message[$0.upperBound...] }))
            #expect(statements.hasPrefix("BEGIN;\n") && statements.contains("CREATE TRIGGER livelist_rows_upd AFTER UPDATE ON \"orders\""), "\(statements)")
            try await database.sql(statements)
            try await node.watch("orders", columns: ["customer"])
            let recorder = ChangeRecorder(node.tableChanges())
            defer { recorder.stop() }
            try await database.sql("INSERT INTO orders (customer) VALUES ('frank')")
            #expect(await recorder.changes(from: 0, count: 1) == [change("orders", "customer", ["frank"])])
            // Another column: the statements keep the one watched already.
            let again = await #expect(throws: StoreError.self) { try await node.watch("orders", columns: ["item"]) }
            #expect(again?.description.contains("livelist_rows_changed('orders', 'customer', 'item')") == true, "\(String(describing: again))")
        }
    }

    /// Stops and starts the database (`LIVELIST_TEST_PGCTL`): some seconds.
    @Test(
        .enabled(if: AppDatabase.needs && TestDatabase.pgctl != nil, "needs LIVELIST_TEST_DATABASE_URL, LIVELIST_TEST_PSQL and LIVELIST_TEST_PGCTL"),
        .restartsTheDatabase)
    func afterARestartEveryStreamYieldsEverythingAndChangesArriveAgain() async throws {
        let pgctl = try #require(TestDatabase.pgctl)
        let database = try await AppDatabase.make("restart")
        defer { Task { await database.drop() } }
        try await database.store.watch("orders", columns: ["customer"])
        let recorders = [ChangeRecorder(database.store.tableChanges()), ChangeRecorder(database.store.tableChanges())]
        defer { recorders.forEach { $0.stop() } }
        try await database.sql("INSERT INTO orders (customer) VALUES ('before')")
        for recorder in recorders {
            #expect(await recorder.changes(from: 0, count: 1) == [change("orders", "customer", ["before"])])
        }
        do {
            try await Postgres.run(pgctl, ["stop"])
        } catch {
            try? await Postgres.run(pgctl, ["start"])
            throw error
        }
        try await Postgres.run(pgctl, ["start"])
        for recorder in recorders {
            #expect(await recorder.changes(from: 1, count: 1) == [.everything], "no .everything once the listener reconnected")
        }
        try await database.sql("INSERT INTO orders (customer) VALUES ('after')")
        for recorder in recorders {
            #expect(await recorder.changes(from: 2, count: 1) == [change("orders", "customer", ["after"])])
        }
        #expect(recorders.allSatisfy { $0.changes.count == 3 }, "\(recorders.map(\.changes))")
    }
}
