import DeskApp
import Foundation
import LiveListPostgres
import LiveListServer

// One node keeps the desk in LIVELIST_DATA; several nodes share one PostgreSQL (LIVELIST_DATABASE_URL).
var store: PostgresListStore?
if let url = try DatabaseURL.fromEnvironment() {
    store = try await PostgresListStore.connect(url: url)
}
let app = try await LiveListApp(configuration: .fromEnvironment(), store: store)
try await Desk.configure(app, users: Desk.users(ProcessInfo.processInfo.environment["DESK_USERS"]))
try await app.run { port in print("desk: http://127.0.0.1:\(port)/login", terminator: "\n") }
