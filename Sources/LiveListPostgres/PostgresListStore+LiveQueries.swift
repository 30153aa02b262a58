public import LiveListEngine
import Foundation
import Logging
import NIOCore
import PostgresNIO

// Live queries on the app's own tables: triggers that announce what each statement changed
// (PostgresListStore+Triggers.swift), heard on the listener's connection, and one statement that runs
// a query for many parameter sets (docs/LIVE-QUERIES.md).

extension PostgresListStore: LiveQueryDatabase {
    /// Makes sure that the triggers of `table` announce `columns`: nothing when they do (a table may
    /// announce more columns, which other live queries watch); otherwise makes them again, announcing
    /// `columns` and those they announced before, when this node's role may (it owns the table), in a
    /// transaction that other nodes' calls for the table wait for.
    ///
    /// `table` is `TABLE` (found through the search path) or `SCHEMA.TABLE`; its names and the
    /// columns' are matched exactly (a table created without quotes has a lowercase name).
    ///
    /// - Throws: `StoreError` when a name is not a plain one, there is no such table or column, or the
    ///   triggers are missing and this role may not make them: it then gives the statements to run as
    ///   the table's owner.
    public func watch(_ table: String, columns: [String]) async throws {
        let name = try TableName(table)
        var checked = Set<String>()
        for column in columns {
            checked.insert(try Identifier.checked(column, "the column"))
        }
        let wanted = checked
        let what = "watching the table \(table)"
        try await liveCall(what) { [self] connection in
            let found = try await ready(name, wanted, connection)
            guard !found.announces(name.name, wanted) else { return }
            try await install(name, wanted, found, connection)
        }
    }

    /// The table as found, checked: it exists, is a table, has the columns, and the schema has the
    /// function.
    private func ready(_ name: TableName, _ wanted: Set<String>, _ connection: PostgresConnection) async throws -> WatchedTableState {
        guard let found = try await Self.inspect(name, connection, logger: logger) else {
            throw StoreError("""
                there is no table \(name.name) (names are matched exactly: a table created without quotes has a lowercase name\
                \(name.schema == nil ? ", and one without a schema is found through the search path" : ""))
                """)
        }
        guard ["r", "p"].contains(found.kind) else {
            throw StoreError("\(name.name) is not a table (a view, a foreign table or a sequence): only a table's changes can be watched")
        }
        let missing = wanted.subtracting(found.columns).sorted()
        guard missing.isEmpty else {
            throw StoreError("the table \(found.qualified) has no column \(missing.joined(separator: ", ")) (names are matched exactly)")
        }
        guard !found.function.isEmpty else {
            throw StoreError("the database lacks the function livelist_rows_changed() of LiveList's schema: run `livelist migrate` (docs/DEPLOYMENT.md)")
        }
        return found
    }

    /// Makes the triggers again, under a transaction-level advisory lock of the table (any role may take
    /// one; it holds back only the other nodes' `watch`), after reading them again under it.
    private func install(_ name: TableName, _ wanted: Set<String>, _ first: WatchedTableState, _ connection: PostgresConnection) async throws {
        let columns = wanted.union(first.announcedColumns).sorted()
        let statements = Self.triggerStatements(table: name.quoted, function: first.function, arguments: [name.name] + columns)
        do {
            try await connection.withTransaction(logger: logger) { [self] connection in
                let wait = "\(Self.lockTimeoutMilliseconds(within: options.operationTimeout))ms"
                try await drained(connection.query("SELECT set_config('lock_timeout', \(wait), true)", logger: logger))
                // Keys of LiveList's: a constant, and the table's oid (from 0 to 2^32) shifted into int4.
                try await drained(connection.query(
                    "SELECT pg_advisory_xact_lock((\(Self.watchLockKey))::int4, (\(first.oid) - 2147483648)::int4)", logger: logger))
                let again = try await ready(name, wanted, connection)
                guard !again.announces(name.name, wanted) else { return }
                let columns = wanted.union(again.announcedColumns).sorted()
                for statement in Self.triggerStatements(table: name.quoted, function: again.function, arguments: [name.name] + columns) {
                    try await drained(connection.query(PostgresQuery(unsafeSQL: statement), logger: logger))
                }
            }
        } catch let error where (Self.unwrapped(error) as? PSQLError)?.serverInfo?[.sqlState] == "42501" {
            throw StoreError("""
                the changes to the table \(first.qualified) cannot be followed: the triggers that announce them \
                (\(Self.rowTriggers.map(\.name).joined(separator: ", "))) are \(first.triggers.isEmpty ? "missing" : "not as this release makes them"), \
                and this node's role may not make them, as it does not own the table; run this once as its owner \
                (\(first.owner)), and watch it again:

                BEGIN;
                \(statements.map { $0 + ";" }.joined(separator: "\n"))
                COMMIT;
                """)
        } catch let error where (Self.unwrapped(error) as? PSQLError)?.serverInfo?[.sqlState] == "55P03" {
            throw StoreError(.unavailable, """
                the triggers of the table \(first.qualified) could not be made: another transaction held the table (or another \
                node made them) for longer than \(options.operationTimeout); try again
                """)
        }
    }

    /// The first key of the advisory lock that serializes the nodes' `watch` of one table.
    static let watchLockKey = 1_819_047_278

    /// Runs `query` for every set of `sets` in one statement: the sets are bound as arrays (one per
    /// name, and their positions), unnested into the relation `params`, and the query runs for each
    /// row of it (a lateral join), each of its rows numbered in the query's order; at most `limit` + 1
    /// rows a set are read, to tell a set past `limit`.
    ///
    /// The query reads `params.NAME` (`text`); `livelist_set` and `livelist_row` are names of LiveList's.
    /// A trailing `;` is left out.
    ///
    /// - Throws: `StoreError` when a name is not a plain one, a set has not one value for each name,
    ///   the query fails (with the database's message), or a set has more than `limit` rows.
    public func rows(of query: String, names: [String], sets: [[String]], limit: Int) async throws -> [[[UInt8]]] {
        for name in names {
            _ = try Identifier.checked(name, "the parameter")
            guard !["livelist_set", "livelist_row"].contains(name) else { throw StoreError("the parameter name \(name) is LiveList's own") }
        }
        guard Set(names).count == names.count else { throw StoreError("the parameter names \(names) are not distinct") }
        guard limit >= 0 else { throw StoreError("the limit of rows a set, \(limit), is negative") }
        if let odd = sets.firstIndex(where: { $0.count != names.count }) {
            throw StoreError("the parameter set \(odd) has \(sets[odd].count) values for \(names.count) names")
        }
        guard !sets.isEmpty else { return [] }
        let statement = Self.batched(query, names: names)
        var binds = PostgresBindings()
        // Without names every set is the same: the query runs once, for a single row of `params`.
        let runs = names.isEmpty ? 1 : sets.count
        if !names.isEmpty {
            binds.append(Array(0 ..< sets.count))
            for position in names.indices {
                binds.append(sets.map { $0[position] })
            }
        }
        binds.append(min(limit, Int.max - 1) + 1)
        let bound = binds
        let found = try await liveCall("running a live query") { [logger] connection in
            var found = [[[UInt8]]](repeating: [], count: runs)
            let rows = try await connection.query(PostgresQuery(unsafeSQL: statement, binds: bound), logger: logger)
            for try await (set, row) in rows.decode((Int, ByteBuffer).self) {
                guard found.indices.contains(set) else { continue }
                guard found[set].count < limit else {
                    throw StoreError("the live query returned more than its limit of \(limit) rows for the parameter set \(set)")
                }
                found[set].append(Array(row.readableBytesView))
            }
            return found
        }
        return names.isEmpty ? Array(repeating: found[0], count: sets.count) : found
    }

    /// The statement of ``rows(of:names:sets:limit:)``: `$1` the sets' positions, `$2`... each name's
    /// values, the last the most rows a set.
    static func batched(_ query: String, names: [String]) -> String {
        var body = query.trimmingCharacters(in: .whitespacesAndNewlines)
        while body.hasSuffix(";") {
            body = String(body.dropLast()).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let params: String
        if names.isEmpty {
            params = "(SELECT 0::int8 AS livelist_set) AS params"
        } else {
            let arrays = ["$1::int8[]"] + names.indices.map { "$\($0 + 2)::text[]" }
            params = "unnest(\(arrays.joined(separator: ", "))) AS params(livelist_set, \(names.map(Identifier.quoted).joined(separator: ", ")))"
        }
        // The query on lines of its own: a comment on its last line ends there.
        return """
            SELECT params.livelist_set, (to_jsonb(q) - 'livelist_row')::text
            FROM \(params)
            CROSS JOIN LATERAL (SELECT row_number() OVER () AS livelist_row, s.* FROM (
            \(body)
            ) AS s LIMIT $\(names.isEmpty ? 1 : names.count + 2)) AS q
            ORDER BY params.livelist_set, q.livelist_row
            """
    }

    /// Runs a statement of the app's own with `$1`, `$2`… bound to `parameters` as text (nil is NULL):
    /// a `SELECT` (or `WITH`, `VALUES`, `TABLE`) returns its rows, and so does an `INSERT`, `UPDATE`,
    /// `DELETE` or `MERGE` with `RETURNING`, each a JSON object of its columns (`to_jsonb`); any other
    /// statement returns none. One statement, in a transaction of its own.
    ///
    /// - Throws: `StoreError` with the database's message when the statement fails.
    public func execute(_ statement: String, parameters: [String?]) async throws -> [[UInt8]] {
        var body = statement.trimmingCharacters(in: .whitespacesAndNewlines)
        while body.hasSuffix(";") {
            body = String(body.dropLast()).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let sql: String
        switch Self.returns(body) {
        case .query: sql = "SELECT (to_jsonb(livelist_result))::text FROM (\n\(body)\n) AS livelist_result"
        case .returning: sql = "WITH livelist_result AS (\n\(body)\n) SELECT (to_jsonb(livelist_result))::text FROM livelist_result"
        case .nothing: sql = body
        }
        var binds = PostgresBindings()
        for parameter in parameters {
            binds.append(parameter)
        }
        let bound = binds
        let returns = Self.returns(body) != .nothing
        return try await liveCall("running a statement of the app's") { [logger] connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bound), logger: logger)
            var found: [[UInt8]] = []
            if returns {
                for try await (row,) in rows.decode((ByteBuffer,).self) {
                    found.append(Array(row.readableBytesView))
                }
            } else {
                for try await _ in rows {}
            }
            return found
        }
    }

    /// What a statement returns, by its first word (and a `RETURNING` clause).
    enum Returned { case query, returning, nothing }

    static func returns(_ statement: String) -> Returned {
        let words = statement.lowercased().split(whereSeparator: { !($0.isLetter || $0 == "_") })
        switch words.first {
        case "select", "with", "values", "table": return .query
        case "insert", "update", "delete", "merge": return words.contains("returning") ? .returning : .nothing
        default: return .nothing
        }
    }

    /// The changes to the watched tables, heard on the listener's connection: see ``TableChangeFeed``.
    /// Each stream ends when the store closes.
    public func tableChanges() -> AsyncStream<TableChange> {
        tableChangeFeed.subscribe()
    }
}
