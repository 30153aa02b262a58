public import LiveListEngine

extension LiveListApp {
    /// The database of the app's own tables, when the store has one (the PostgreSQL store): where live
    /// queries read, and where the app may run statements of its own
    /// (``LiveQueryDatabase/execute(_:parameters:)``). Nil with the embedded store.
    public var database: (any LiveQueryDatabase)? {
        services.liveQueries.database
    }

    /// Serves a list that is a query over the app's own tables (a live query): whoever commits a change
    /// to them (this app, another node, `psql`, another service), every viewer of every parameter set it
    /// touches sees it, on every node, a transaction's changes together. It needs the PostgreSQL store
    /// (`LiveListPostgres`); docs/LIVE-QUERIES.md says what the database needs.
    ///
    ///     try await app.liveQuery(
    ///         "tickets", title: "My tickets",
    ///         sql: "SELECT id, title, priority FROM tickets WHERE customer = params.customer ORDER BY id DESC",
    ///         parameters: ["customer": { identity in identity?.id }],
    ///         watching: [.table("tickets", matching: ["customer": "customer"])]
    ///     ) { (tickets: [Ticket]) in
    ///         Section(id: "mine", cells: tickets.map { CellNode(TicketRow(ticket: $0)) })
    ///     }
    ///
    /// - The query reads its parameters as `params.NAME` (text; cast them in SQL as needed). Each comes
    ///   from the viewer's identity, never from the request's text; a parameter without a value (no one
    ///   signed in) shows the viewer no rows. The query is the access rule of its rows: what it does not
    ///   select for a viewer never reaches their page, stream or range route. The list's own access rule
    ///   (``access(_:_:)``) still decides who may open it.
    /// - Each row decodes as `Row` from a JSON object of its columns (`Decodable`, keys as the columns
    ///   are named); `render` makes the sections of one parameter set's rows, in the query's order.
    /// - Viewers with the same parameters share one rendering; the parameter sets that need running are
    ///   run together, in one statement for up to 500 sets. A change runs the query again only for the
    ///   sets whose values the changed rows had (``WatchedTable/matching``); a set whose rows came back
    ///   the same costs no rendering and no changeset.
    /// - A query that fails (a dropped column, a row that no longer decodes, more than `limit` rows for
    ///   one set) takes the list out of service: its routes answer 503 `list_unavailable`, the log says
    ///   why, `/metrics` counts it, and it is tried again until it runs.
    ///
    /// - Throws: `StartupError` without the PostgreSQL store, or when `name` is not a list name or a
    ///   parameter's name is not a plain lowercase identifier; `StoreError` when changes to a watched
    ///   table cannot be followed (what to run is in its message).
    @discardableResult
    public func liveQuery<Row: Decodable & Sendable>(
        _ name: String, title: String? = nil, sql: String, parameters: [String: @Sendable (Identity?) -> String?] = [:],
        watching tables: [WatchedTable], limit: Int = 10_000, configuration: ListConfiguration? = nil,
        @SectionsBuilder render: @escaping @Sendable ([Row]) -> [Section]
    ) async throws -> PartitionedList {
        let listName = try Self.listName(name)
        guard let database = services.liveQueries.database else {
            throw StartupError(
                "the live query \(name) needs the PostgreSQL store (LiveListPostgres: PostgresListStore.connect, LIVELIST_DATABASE_URL); the embedded store keeps no tables of the app's"
            )
        }
        for parameter in parameters.keys where !Self.isPlainIdentifier(parameter) {
            throw StartupError("the live query \(name)'s parameter \(parameter) is not a plain lowercase identifier (a-z, 0-9, _)")
        }
        guard !tables.isEmpty else {
            throw StartupError("the live query \(name) watches no table: name the tables it reads, so that their changes reach it")
        }
        guard limit > 0 else { throw StartupError("the live query \(name)'s limit must be positive") }
        for table in tables {
            try await services.liveQueries.watch(table.table, columns: table.matching.values, database: database)
        }
        if let title { services.pages.setTitle(title, for: listName) }
        let query = LiveQueryDefinition(sql: sql, names: parameters.keys.sorted(), parameters: parameters, tables: tables, limit: limit)
        let runner = LiveQueryRunner<Row>(name: listName, query: query, database: database, log: services.log)
        services.liveQueries.add(runner, database: database)
        let list = try await registry.hostApp(
            listName, configuration: configuration, groupedBy: { identity in query.group(of: identity) },
            prepare: { key in await runner.prepare(key) }, render: { key in render(runner.rows(of: key)) }
        )
        runner.serve(list)
        return list
    }

    static func isPlainIdentifier(_ text: String) -> Bool {
        guard let first = text.utf8.first, (UInt8(ascii: "a") ... UInt8(ascii: "z")).contains(first) || first == UInt8(ascii: "_"), text.utf8.count <= 63
        else { return false }
        return text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a") ... UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
