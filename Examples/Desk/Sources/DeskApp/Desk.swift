import Foundation
import LiveListServer

// A help desk: customers file tickets and see their own live; agents see a queue of every open ticket in
// sections by priority, and close or re-prioritise them, on one node or on several over PostgreSQL.

public enum Priority: String, Codable, CaseIterable, Sendable { case urgent, normal, low }

public struct Ticket: Codable, Equatable, Sendable {
    public var id: Int, customer: String, title: String, priority: Priority, isOpen = true
}

public struct DeskState: Codable, Equatable, Sendable {
    public var tickets: [Ticket] = []
    public var nextID = 1
}

enum DeskAction: String, ListActions { case close, setPriority }

/// A ticket in the agents' queue: close it, or move it to another priority.
struct QueueRow: IdentifiableComponent, Equatable {
    var ticket: Ticket
    var id: Int { ticket.id }
    var body: some HTML {
        span(.class("title")) { "#\(ticket.id) \(ticket.title)" }
        span(.class("detail")) { ticket.customer }
        for priority in Priority.allCases where priority != ticket.priority {
            actionButton(DeskAction.setPriority, cell: ticket.id, payload: priority) { priority.rawValue.capitalized }
        }
        actionButton(DeskAction.close, cell: ticket.id, .aria("label", "Close #\(ticket.id)")) { "Close" }
    }
}

/// A ticket as its customer sees it.
struct CustomerRow: IdentifiableComponent, Equatable {
    var ticket: Ticket
    var id: Int { ticket.id }
    var body: some HTML {
        span(.class(ticket.isOpen ? "title" : "title status-closed")) { "#\(ticket.id) \(ticket.title)" }
        span(.class("detail")) { ticket.isOpen ? ticket.priority.rawValue : "closed" }
    }
}

/// What the filing form posts.
struct NewTicket: Decodable {
    var title: String
    var priority: Priority
}

public enum Desk {
    /// Users from `DESK_USERS` (`name:password:role,…`, role `customer` or `agent`).
    public static func users(_ text: String?) -> [String: (password: String, role: String)] {
        var users: [String: (password: String, role: String)] = [:]
        for entry in (text ?? "alice:alice-password:customer,carol:carol-password:agent").split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            if parts.count == 3, ["customer", "agent"].contains(parts[2]) { users[parts[0]] = (parts[1], parts[2]) }
        }
        return users
    }

    /// Adds the desk's lists, pages and routes to `app`.
    public static func configure(_ app: LiveListApp, users: [String: (password: String, role: String)]) async throws {
        app.useSignIn()
        try app.signIn(at: "/login")
        if let files = Bundle.module.url(forResource: "Public", withExtension: nil) {
            try app.files(at: "/desk", from: files.path)
        }
        app.layout { page in DeskLayout(page: page) }

        // On PostgreSQL the tickets are a table of the desk's own, which any program may write; on one node
        // they are a stored list's state (Lists.swift).
        let file = if let database = app.database { try await tickets(in: database, app) } else { try await tickets(in: app) }
        try await app.access("queue") { identity in identity?.roles.contains("agent") == true ? .all : .none }
        try await app.access("tickets") { identity in identity == nil ? .none : .view }

        try app.route(.GET, "/") { request in
            guard let identity = request.identity else { return .redirect(to: "/login") }
            return .redirect(to: identity.roles.contains("agent") ? "/queue" : "/tickets")
        }
        try app.route(.GET, "/login") { request in signInPage(request) }
        try app.route(.POST, "/login", paced: true) { request in
            let user = request.form["user"] ?? ""
            let signedIn = try await app.signIn(request, account: user, next: request.nextPath(or: "/")) {
                guard let known = users[user], app.passwordMatches(request.form["password"] ?? "", known.password) else { return nil }
                return Identity(id: user, roles: [known.role])
            }
            return signedIn ?? signInPage(request, failed: true)
        }
        try app.route(.POST, "/logout", paced: true) { request in try await app.signOut(request, redirectTo: "/login") }
        try app.route(.GET, "/queue") { request in
            let list = await request.embed("queue")
            guard list.isShown else { throw HTTPError(.forbidden, code: "agents_only", detail: "the queue is for agents") }
            return request.page(title: "Queue") {
                h1 { "Open tickets" }
                list
            }
        }
        try app.route(.GET, "/tickets") { request in
            let list = await request.embed("tickets")
            return request.page(title: "My tickets") {
                h1 { "My tickets" }
                p { a(.href("/tickets/new")) { "File a ticket" } }
                list
            }
        }
        try app.route(.GET, "/tickets/new") { request in ticketForm(request) }
        try app.route(.POST, "/tickets/new") { request in
            guard let customer = request.identity?.id else { return .redirect(to: "/login") }
            switch request.decodeForm(NewTicket.self) {
            case let .failure(errors):
                return ticketForm(request, errors)
            case let .success(new) where new.title.count > 200:
                return ticketForm(request, FormErrors(["title": "At most 200 characters."]))
            case let .success(new):
                let filed = try await file(customer, new)
                return request.redirect(to: "/tickets", flash: "Ticket #\(filed) filed.")
            }
        }
    }

    static func signInPage(_ request: AppRequest, failed: Bool = false) -> HTTPResponse {
        request.page(title: "Sign in", status: failed ? .unauthorized : .ok) {
            h1 { "Sign in" }
            form(.class("stacked"), .method("post"), .action("/login")) {
                input(.type("hidden"), .name("csrf"), .value(request.csrfToken))
                input(.type("hidden"), .name("next"), .value(request.nextPath(or: "/")))
                if failed { p(.class("field-error")) { "Wrong user or password." } }
                label(.for("user")) { "User" }
                input(.id("user"), .name("user"), .autocomplete("username"), .required)
                label(.for("password")) { "Password" }
                input(.id("password"), .name("password"), .type("password"), .autocomplete("current-password"), .required)
                button { "Sign in" }
            }
        }
    }

    static func ticketForm(_ request: AppRequest, _ errors: FormErrors = FormErrors()) -> HTTPResponse {
        request.page(title: "File a ticket", status: errors.isEmpty ? .ok : .unprocessableContent) {
            h1 { "File a ticket" }
            form(.class("stacked"), .method("post"), .action("/tickets/new")) {
                input(.type("hidden"), .name("csrf"), .value(request.csrfToken))
                label(.for("title")) { "What is wrong?" }
                input(.id("title"), .name("title"), .value(request.form["title"] ?? ""), .required)
                if let message = errors["title"] { p(.class("field-error")) { message } }
                label(.for("priority")) { "Priority" }
                select(.id("priority"), .name("priority")) {
                    for priority in Priority.allCases.reversed() {
                        if request.form["priority"] == priority.rawValue {
                            option(.value(priority.rawValue), .selected) { priority.rawValue }
                        } else {
                            option(.value(priority.rawValue)) { priority.rawValue }
                        }
                    }
                }
                if let message = errors["priority"] { p(.class("field-error")) { message } }
                button { "File" }
            }
        }
    }
}

/// The desk's pages: its header with navigation by role and sign-out, the flash, the page.
struct DeskLayout: HTML {
    var page: AppPage

    func render(into writer: inout HTMLWriter) {
        document {
            html(.lang("en")) {
                head {
                    meta(.custom("charset", "utf-8"))
                    meta(.name("viewport"), .custom("content", "width=device-width, initial-scale=1"))
                    title { page.title + " · Desk" }
                    page.liveListHead
                    stylesheet("/desk/desk.css")
                }
                body {
                    header(.class("desk-header")) {
                        nav(.aria("label", "Desk")) {
                            if page.identity?.roles.contains("agent") == true { a(.href("/queue")) { "Queue" } }
                            if page.identity?.roles.contains("customer") == true { a(.href("/tickets")) { "My tickets" } }
                        }
                        if let identity = page.identity {
                            form(.method("post"), .action("/logout")) {
                                input(.type("hidden"), .name("csrf"), .value(page.csrfToken))
                                button { "Sign out \(identity.id)" }
                            }
                        }
                    }
                    main {
                        if let flash = page.flash { p(.class("flash"), .role("status")) { flash } }
                        page.content
                    }
                    page.liveListRegions
                }
            }
        }.render(into: &writer)
    }
}
