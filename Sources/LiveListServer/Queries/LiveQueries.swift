import Foundation
import LiveListEngine
import Synchronization

/// A table a live query reads, and how its rows meet the query's parameters.
public struct WatchedTable: Sendable, Equatable {
    /// The table, as the query names it (`tickets`, `desk.tickets`): one way in every live query.
    public let table: String
    /// For each parameter that the query compares with a column of the table (`customer =
    /// params.customer`), that column: a change runs the query again only for the parameter sets whose
    /// values the changed rows had, before or after. Empty: every change to the table runs the query
    /// again for every parameter set.
    public let matching: [String: String]

    /// `table`, whose column `matching[parameter]` holds the rows a parameter selects.
    public static func table(_ table: String, matching: [String: String] = [:]) -> WatchedTable {
        WatchedTable(table: table, matching: matching)
    }
}

/// A live query as the app declared it: its SQL, its parameters (each taken from the viewer's identity),
/// the tables it reads.
struct LiveQueryDefinition: Sendable {
    let sql: String
    /// The parameters' names, sorted: the columns of the `params` row the query reads.
    let names: [String]
    let parameters: [String: @Sendable (Identity?) -> String?]
    let tables: [WatchedTable]
    let limit: Int

    /// The group of viewers with `identity`: its parameter values, encoded; nil when a parameter has no
    /// value for it (the viewer sees no rows).
    func group(of identity: Identity?) -> String? {
        var values: [String] = []
        for name in names {
            guard let value = parameters[name]?(identity) else { return nil }
            values.append(value)
        }
        return Self.group(values)
    }

    static func group(_ values: [String]) -> String {
        // A JSON array: one string per set of values, and the values back from it.
        String(decoding: (try? JSONEncoder().encode(values)) ?? Data("[]".utf8), as: UTF8.self)
    }

    static func values(ofGroup key: String) -> [String]? {
        try? JSONDecoder().decode([String].self, from: Data(key.utf8))
    }

    /// Whether `change` may touch the rows of the parameter set `values` (never false when it does).
    func isTouched(by change: TableChange, values: [String]) -> Bool {
        guard let table = change.table else { return true }
        for watched in tables where watched.table == table {
            guard let changed = change.values, !watched.matching.isEmpty else { return true }
            let selects = watched.matching.allSatisfy { parameter, column in
                // A column the change does not report may hold anything.
                guard let index = names.firstIndex(of: parameter), let reported = changed[column] else { return true }
                return reported.contains(values[index])
            }
            if selects { return true }
        }
        return false
    }
}

/// The app's live queries on this node: each one's runner, and the one task that hears the changes
/// committed to the watched tables and passes each to every query, in commit order.
final class LiveQueries: Sendable {
    let database: (any LiveQueryDatabase)?
    private let followers = Mutex<[any LiveQueryFollower]>([])
    /// The columns each table's changes report: every live query's on that table.
    private let columns = Mutex<[String: Set<String>]>([:])
    private let listening = Mutex<Task<Void, Never>?>(nil)

    init(database: (any LiveQueryDatabase)?) {
        self.database = database
    }

    deinit {
        listening.withLock { $0?.cancel() }
    }

    /// Has changes to `table` reported with `columns` as well as the columns other queries need.
    func watch(_ table: String, columns needed: some Sequence<String>, database: any LiveQueryDatabase) async throws {
        let all = columns.withLock { columns in
            columns[table, default: []].formUnion(needed)
            return columns[table] ?? []
        }
        try await database.watch(table, columns: all.sorted())
    }

    /// Adds a query; the first starts hearing changes (before any query loads, so none is missed).
    func add(_ follower: any LiveQueryFollower, database: any LiveQueryDatabase) {
        followers.withLock { $0.append(follower) }
        listening.withLock { task in
            guard task == nil else { return }
            let changes = database.tableChanges()
            task = Task { [weak self] in
                for await change in changes {
                    guard let self else { return }
                    for follower in followers.withLock({ $0 }) {
                        follower.changed(change)
                    }
                }
            }
        }
    }

    /// Each query's counters, by list.
    var counters: [(list: String, counters: LiveQueryCounters)] {
        followers.withLock { $0 }.map { ($0.name.rawValue, $0.counters) }.sorted { $0.list < $1.list }
    }
}
