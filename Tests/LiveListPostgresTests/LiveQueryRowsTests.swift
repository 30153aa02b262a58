import Foundation
import LiveListEngine
@testable import LiveListPostgres
import Testing

/// `rows(of:names:sets:limit:)`: one statement for every parameter set, each set's rows in the query's
/// order, as JSON objects; the query's failures and a set past the limit are errors, never a silent
/// truncation.
@Suite(.serialized, .usesTheDatabase) struct LiveQueryRowsTests {
    /// A database whose orders are 1 alice apple, 2 bob bread, 3 alice avocado, 4 (none) plum.
    private func ordersDatabase(_ label: String) async throws -> AppDatabase {
        let database = try await AppDatabase.make(label)
        try await database.sql("""
            INSERT INTO orders (customer, item) VALUES ('alice', 'apple'), ('bob', 'bread'), ('alice', 'avocado'), (NULL, 'plum')
            """)
        return database
    }

    private func text(_ sets: [[[UInt8]]]) -> [[String]] {
        sets.map { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func eachSetGetsItsRowsInTheQuerysOrder() async throws {
        let database = try await ordersDatabase("rows")
        defer { Task { await database.drop() } }
        let store = database.store
        let sets = [["alice"], ["nobody"], ["bob"]]
        let descending = try await store.rows(
            of: "SELECT id, item FROM orders WHERE customer = params.customer ORDER BY id DESC", names: ["customer"], sets: sets, limit: 10)
        #expect(text(descending) == [[#"{"id": 3, "item": "avocado"}"#, #"{"id": 1, "item": "apple"}"#], [], [#"{"id": 2, "item": "bread"}"#]])
        let ascending = try await store.rows(
            of: "SELECT item FROM orders WHERE customer = params.customer ORDER BY id;\n", names: ["customer"], sets: sets, limit: 10)
        #expect(text(ascending) == [[#"{"item": "apple"}"#, #"{"item": "avocado"}"#], [], [#"{"item": "bread"}"#]])
        // Two names; a value that would break a statement built from text is a value like any other.
        let two = try await store.rows(
            of: "SELECT id FROM orders WHERE customer = params.customer AND item LIKE params.initial || '%' ORDER BY id",
            names: ["customer", "initial"], sets: [["alice", "av"], ["o'brien'); DROP TABLE orders; --", "a"], ["alice", "a"]], limit: 10)
        #expect(text(two) == [[#"{"id": 3}"#], [], [#"{"id": 1}"#, #"{"id": 3}"#]])
        #expect(try await database.sql("SELECT count(*) FROM orders") == "4")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func withoutNamesEverySetHasTheQuerysRows() async throws {
        let database = try await ordersDatabase("unnamed")
        defer { Task { await database.drop() } }
        let counted = try await database.store.rows(of: "SELECT count(*) AS n FROM orders -- every order", names: [], sets: [[], []], limit: 1)
        #expect(text(counted) == [[#"{"n": 4}"#], [#"{"n": 4}"#]])
        #expect(try await database.store.rows(of: "SELECT 1", names: [], sets: [], limit: 1).isEmpty)
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aSetPastTheLimitIsAnErrorNotATruncation() async throws {
        let database = try await ordersDatabase("limit")
        defer { Task { await database.drop() } }
        let query = "SELECT id FROM orders WHERE customer = params.customer ORDER BY id"
        let exact = try await database.store.rows(of: query, names: ["customer"], sets: [["bob"], ["alice"]], limit: 2)
        #expect(exact.map(\.count) == [1, 2])
        let error = await #expect(throws: StoreError.self) {
            _ = try await database.store.rows(of: query, names: ["customer"], sets: [["bob"], ["alice"]], limit: 1)
        }
        #expect(error?.description.contains("more than its limit of 1 rows for the parameter set 1") == true, "\(String(describing: error))")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func theQuerysFailuresAreStoreErrorsWithTheDatabasesMessage() async throws {
        let database = try await ordersDatabase("failures")
        defer { Task { await database.drop() } }
        let store = database.store
        let column = await #expect(throws: StoreError.self) {
            _ = try await store.rows(of: "SELECT nope FROM orders WHERE customer = params.customer", names: ["customer"], sets: [["alice"]], limit: 5)
        }
        #expect(column?.kind == .failed)
        #expect(column?.description.contains(#"column "nope" does not exist (42703)"#) == true, "\(String(describing: column))")
        let parameter = await #expect(throws: StoreError.self) {
            _ = try await store.rows(of: "SELECT id FROM orders WHERE customer = params.owner", names: ["customer"], sets: [["alice"]], limit: 5)
        }
        #expect(parameter?.description.contains("params.owner") == true, "\(String(describing: parameter))")
        let refusals: [([String], [[String]], String)] = [
            (["customer; DROP TABLE orders"], [["x"]], "is not a plain name"),
            (["livelist_set"], [["x"]], "is LiveList's own"),
            (["customer", "customer"], [["x", "y"]], "are not distinct"),
            (["customer"], [["x"], ["y", "z"]], "the parameter set 1 has 2 values for 1 names"),
        ]
        for (names, sets, expected) in refusals {
            let error = await #expect(throws: StoreError.self) {
                _ = try await store.rows(of: "SELECT 1", names: names, sets: sets, limit: 5)
            }
            #expect(error?.description.contains(expected) == true, "\(names): \(String(describing: error))")
        }
        #expect(try await database.sql("SELECT count(*) FROM orders") == "4")
    }

    @Test(.enabled(if: AppDatabase.needs, "needs LIVELIST_TEST_DATABASE_URL and LIVELIST_TEST_PSQL"))
    func aStatementOfTheAppsOwnReturnsItsRowsAndBindsItsValues() async throws {
        let database = try await ordersDatabase("execute")
        defer { Task { await database.drop() } }
        let store = database.store
        let added = try await store.execute("INSERT INTO orders (customer, item) VALUES ($1, $2) RETURNING id, item;", parameters: ["carol", "o'clock"])
        #expect(text([added]) == [[#"{"id": 5, "item": "o'clock"}"#]])
        #expect(try await store.execute("UPDATE orders SET customer = $1 WHERE id = $2::bigint", parameters: [nil, "5"]).isEmpty, "no RETURNING: no rows")
        let read = try await store.execute("SELECT item FROM orders WHERE customer IS NULL ORDER BY id", parameters: [])
        #expect(text([read]) == [[#"{"item": "plum"}"#, #"{"item": "o'clock"}"#]])
        let error = await #expect(throws: StoreError.self) { _ = try await store.execute("SELECT nothing FROM orders", parameters: []) }
        #expect(error?.description.contains("nothing") == true, "the database's message: \(String(describing: error))")
    }
}
