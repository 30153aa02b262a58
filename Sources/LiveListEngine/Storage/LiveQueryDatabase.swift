/// A database that live queries read: the app's own tables, and what its writers changed in them
/// (`LiveListPostgres`'s store is one). A live query is a list declared by a SQL query over those
/// tables, served like any other list and kept live for every viewer on every node, whoever commits a
/// change to them (docs/LIVE-QUERIES.md).
public protocol LiveQueryDatabase: Sendable {
    /// Makes sure that every change committed to `table` is announced with the values of `columns` in
    /// the changed rows (before and after the change), as well as the columns it announced before;
    /// installs what announces them when it is missing and the node's role may (it owns the table).
    /// Name each table one way everywhere (`tickets`, or `desk.tickets`): changes are announced under
    /// that name.
    ///
    /// - Throws: `StoreError` saying why changes to `table` cannot be followed: no such table or column,
    ///   or the statements to run as the table's owner when this role may not install them.
    func watch(_ table: String, columns: [String]) async throws

    /// Runs `query` once for each parameter set of `sets`, in one statement: the query reads its
    /// parameters as `params.NAME` (the columns of a row that holds one set, named by `names`, each a
    /// `text`: cast them in SQL as needed). For each set, in order, the rows the query returns, in its
    /// order, each a JSON object of the row's columns; at most `limit` rows a set. `livelist_set` and
    /// `livelist_row` are names of LiveList's, for neither a parameter nor a column of the query.
    ///
    /// - Throws: `StoreError` when the query fails (a dropped column, a type that changed) or a set
    ///   has more than `limit` rows.
    func rows(of query: String, names: [String], sets: [[String]], limit: Int) async throws -> [[[UInt8]]]

    /// Runs one statement of the app's own, in a transaction of its own, with `$1`, `$2`… bound to
    /// `parameters` (text; cast them in SQL as needed; nil is NULL): the rows it returns (a `SELECT`, or
    /// an `INSERT`, `UPDATE` or `DELETE` with `RETURNING`), each a JSON object of its columns, and none
    /// for a statement that returns no rows. Its changes reach the live queries as anyone's do.
    ///
    /// - Throws: `StoreError` with the database's message when the statement fails.
    func execute(_ statement: String, parameters: [String?]) async throws -> [[UInt8]]

    /// The changes committed to the watched tables, in commit order, a transaction's together, from
    /// now on; one stream for each caller. After a lost connection to the database (when changes may
    /// have been missed) it yields ``TableChange/everything``.
    func tableChanges() -> AsyncStream<TableChange>
}

/// What a committed change touched: a table, and the values its watched columns had in the changed
/// rows, before and after.
public struct TableChange: Sendable, Equatable {
    /// The table, nil for every table (``everything``).
    public var table: String?
    /// The watched columns' values in the changed rows (as text), by column: nil when any row may have
    /// changed (a statement that changed too many rows to list, or a `TRUNCATE`); a column not listed
    /// may hold any value. A row whose value is NULL is selected by no parameter, and not listed.
    public var values: [String: Set<String>]?

    public init(table: String?, values: [String: Set<String>]?) {
        self.table = table
        self.values = values
    }

    /// Any row of any table may have changed: the node may have missed changes (its connection to the
    /// database was lost), so every live query runs again.
    public static let everything = TableChange(table: nil, values: nil)
}
