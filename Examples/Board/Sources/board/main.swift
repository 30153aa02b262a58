import Foundation
import LiveListPostgres
import LiveListServer

// Users from BOARD_USERS ("alice:secret1,bob:secret2"). Signing in and out is the library's
// (app.useSignIn): a signed cookie per sign-in, sessions rotated, wrong passwords paced per account.
let users = Dictionary((ProcessInfo.processInfo.environment["BOARD_USERS"] ?? "alice:secret1,bob:secret2")
    .split(separator: ",").compactMap { pair in pair.split(separator: ":", maxSplits: 1).map(String.init) }
    .filter { $0.count == 2 }.map { ($0[0], $0[1]) }, uniquingKeysWith: { first, _ in first })

enum BoardAction: String, ListActions { case post, enter, remove }

struct Note: IdentifiableComponent, Codable, Equatable {
    var id: Int, text: String, author: String
    var body: some HTML {
        span(.class("title")) { text }
        span(.class("detail")) { author }
        actionButton(BoardAction.remove, cell: id, .aria("label", "Remove \(text)")) { "✕" }
    }
}

// One node keeps its lists in LIVELIST_DATA; several nodes share one PostgreSQL (LIVELIST_DATABASE_URL).
var store: PostgresListStore?
if let url = try DatabaseURL.fromEnvironment() {
    store = try await PostgresListStore.connect(url: url)
}
let app = try await LiveListApp(configuration: .fromEnvironment(), store: store)
// Who the viewer is: the user of a valid sign-in cookie (not expired, not signed out on any node).
app.useSignIn()
try app.signIn(at: "/login")

// `team`: every signed-in user views and acts; `notes-USER`: only that user.
func board(_ name: String, title: String, rule: @escaping AccessRule) async throws {
    let list = try await app.host(name, state: [Note]()) { notes in
        Section(id: "notes", header: Header(title), footer: TextEntry(BoardAction.post, field: "text", label: "New note", button: "Post")) { notes }
    }
    await list.onAction(BoardAction.self, changing: [Note].self) { action, notes in
        switch action.kind {
        case .post, .enter:
            guard let text = try action.text("text", maxCharacters: 200, maxBytes: 800), notes.count < 200 else { return }
            notes.append(Note(id: (notes.map(\.id).max() ?? 0) + 1, text: text, author: action.identity?.name ?? "?"))
        case .remove:
            notes.removeAll { $0.id == action.cell(as: Int.self) }
        }
    }
    try await app.access(name, rule)
}
try await board("team", title: "Team") { identity in identity == nil ? .none : .all }
for user in users.keys {
    try await board("notes-\(user)", title: "\(user)'s notes") { identity in identity?.id == user ? .all : .none }
}

try app.route(.GET, "/login") { request in
    .page("""
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body>
        <h1>Sign in</h1><form method="post" action="/login">\(request.csrfField)
        <input type="hidden" name="next" value="\(escapeHTML(request.nextPath(or: "/")))">
        <label>User <input name="user" autocomplete="username" required></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
        <button>Sign in</button></form></body></html>
        """)
}
try app.route(.POST, "/login", paced: true) { request in
    let user = request.form["user"] ?? ""
    // Paced per account as well as per address; the password compared as MACs, in constant time.
    let signedIn = try await app.signIn(request, account: user) {
        app.passwordMatches(request.form["password"] ?? "", users[user]) ? Identity(id: user) : nil
    }
    return signedIn ?? .page("<!doctype html><title>Sign in</title><p>Wrong user or password. <a href=\"/login\">Try again</a>", status: .unauthorized)
}
// Home: the lists this user may see, and a sign-out button.
try app.route(.GET, "/") { request in
    guard let user = request.identity?.id else { return .redirect(to: "/login") }
    return .page("""
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Board</title></head><body>
        <h1>Signed in as \(escapeHTML(user))</h1>
        <p><a href="/lists/team">Team</a> · <a href="/lists/notes-\(escapeHTML(user))">My notes</a></p>
        <form method="post" action="/logout">\(request.csrfField)<button>Sign out</button></form></body></html>
        """)
}
// Ends this sign-in on every node (its streams are told `denied`); a replayed or forged cookie changes nothing.
try app.route(.POST, "/logout", paced: true) { request in
    try await app.signOut(request, redirectTo: "/login")
}
// A small JSON API: who am I.
try app.route(.GET, "/api/me") { request in
    guard let identity = request.identity else {
        var refusal = try HTTPResponse.json(encoding: ["error": "sign_in_required"], status: .unauthorized)
        refusal.headers.set("WWW-Authenticate", "Session realm=\"board\"")
        return refusal
    }
    return try .json(encoding: ["id": identity.id])
}
try await app.run { port in print("board: http://127.0.0.1:\(port)/login", terminator: "\n") }
