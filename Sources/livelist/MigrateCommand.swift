import ArgumentParser
import Foundation
import LiveListPostgres
import Logging

/// `livelist migrate`: creates or migrates LiveList's schema in a PostgreSQL database, then exits.
/// Run it with the migration role's URL (the role that owns LiveList's tables), so that the nodes can
/// run with a role that may only read and write LiveList's rows (docs/DEPLOYMENT.md).
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create or migrate LiveList's schema in PostgreSQL, then exit.",
        discussion: """
            The URL falls back to LIVELIST_DATABASE_URL, and its password to the file that \
            LIVELIST_DATABASE_PASSWORD_FILE names. Nodes migrate at start-up too when their role may; \
            with a runtime role that may not, run this first, with the migration role.
            """
    )

    @Option(help: "postgres://USER@HOST:PORT/DATABASE of the migration role (env LIVELIST_DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "A role to grant what a node needs (read and write LiveList's rows), and nothing more.")
    var grantTo: String?

    @Option(
        name: .customLong("watch"),
        help: ArgumentHelp(
            "A table of the app's whose changes live queries follow, with the columns they select rows by: TABLE[:COLUMN,...] (repeatable).",
            discussion: "Makes the table's triggers, which only its owner may: run it as the role that owns the table (docs/LIVE-QUERIES.md).",
            valueName: "table:columns"))
    var watch: [String] = []

    /// The tables of `--watch`, each with its columns, checked for form (the names themselves are
    /// checked by the store).
    func watchedTables() throws -> [(table: String, columns: [String])] {
        try watch.map { text in
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let columns = parts.count == 2 ? parts[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init) : []
            guard !parts[0].isEmpty, !columns.contains(where: \.isEmpty), parts.count == 1 || !columns.isEmpty else {
                throw ValidationError("--watch \(text): give TABLE or TABLE:COLUMN,COLUMN (for example tickets:customer)")
            }
            return (parts[0], columns)
        }
    }

    func run() async throws {
        guard let text = given(databaseURL, "LIVELIST_DATABASE_URL") else {
            throw ValidationError("--database-url (or LIVELIST_DATABASE_URL) is required")
        }
        let url = try readDatabaseURL(text)
        let tables = try watchedTables()
        for warning in url.warnings {
            print("livelist migrate: \(warning)")
        }
        do {
            let store = try await PostgresListStore.connect(url: url)
            defer { store.close() }
            if let grantTo {
                try store.grantRuntimeAccess(to: grantTo)
                print("livelist migrate: \(grantTo) may read and write LiveList's rows, and not change its schema")
            }
            for (table, columns) in tables {
                try await store.watch(table, columns: columns)
                let by = columns.isEmpty ? "" : " by \(columns.joined(separator: ", "))"
                print("livelist migrate: the changes to \(table) are announced to live queries\(by)")
            }
        } catch {
            print("livelist migrate: \(error)")
            throw ExitCode(1)
        }
        print("livelist migrate: the schema of \(url) is current (version \(PostgresListStore.schemaVersion))")
    }
}
