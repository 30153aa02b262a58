import Foundation
import LiveListPostgres
import LiveListServer

// Users from BOARD_USERS ("alice:secret1,bob:secret2"). A sign-in is a signed cookie naming the user, a
// random nonce and when it expires; signing out records the nonce among the sign-ins that ended.
let users = Dictionary((ProcessInfo.processInfo.environment["BOARD_USERS"] ?? "alice:secret1,bob:secret2")
    .split(separator: ",").compactMap { pair in pair.split(separator: ":", maxSplits: 1).map(String.init) }
    .filter { $0.count == 2 }.map { ($0[0], $0[1]) }, uniquingKeysWith: { first, _ in first })
let signInSeconds = 43_200

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
// Sign-ins that ended (nonce: when its cookie expires), kept by the store so that every node knows
// them: a list that no rule lets anyone see. A bigger app keeps these in a table of its own.
let signedOut = try await app.host("signed-out", state: [String: Int]()) { _ in [Section]() }
try await app.access("signed-out") { _ in .none }
// Who the viewer is: the user that a valid cookie names, unless it expired or was signed out.
app.authenticate { head in
    guard let value = head.cookie("board_user").flatMap(app.verified) else { return nil }
    let parts = value.split(separator: ":").map(String.init)
    let ended = await signedOut.currentState
    guard parts.count == 3, let until = Int(parts[2]), until > Int(Date().timeIntervalSince1970), ended[parts[1]] == nil else { return nil }
    return Identity(id: parts[0])
}
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
    let form = request.form
    // Compared as MACs, so the time the comparison takes says nothing about the password.
    guard let user = form["user"], let password = form["password"], let expected = users[user],
        app.signed(password) == app.signed(expected) else {
        return .page("<!doctype html><title>Sign in</title><p>Wrong user or password. <a href=\"/login\">Try again</a>", status: .unauthorized)
    }
    let until = Int(Date().timeIntervalSince1970) + signInSeconds
    var response = HTTPResponse.redirect(to: request.nextPath(or: "/"))
    response.setCookie(Cookie("board_user", app.signed("\(user):\(UUID().uuidString):\(until)"), maxAge: signInSeconds))
    return response
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
try app.route(.POST, "/logout") { request in
    let parts = request.cookie("board_user").flatMap(app.verified)?.split(separator: ":").map(String.init) ?? []
    if parts.count == 3, let until = Int(parts[2]) {
        // Recorded first (every node's rules then see it), then every node's streams are checked again.
        let now = Int(Date().timeIntervalSince1970)
        try await signedOut.updateState { ended in
            ended = ended.filter { $0.value > now }
            ended[parts[1]] = until
        }
        app.endStreams(ofSessionIn: request.http)
        await app.revoke(identity: parts[0])
    }
    var response = HTTPResponse.redirect(to: "/login")
    response.clearCookie("board_user")
    return response
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
