import Foundation
import LiveListTestSupport
import Testing
@testable import LiveListServer

/// Pages of the app's own: a layout written in the DSL, live lists embedded in any page under the same
/// access rule as their own route, forms of embedded lists that come back to their page, flash messages,
/// error pages in the layout, the app's own static files.
@Suite struct AppPageTests {
    enum Action: String, ListActions { case close }

    struct Ticket: IdentifiableComponent, Equatable {
        var id: Int
        var title: String
        var body: some HTML {
            span { title }
            actionButton(Action.close, cell: id) { "Close" }
        }
    }

    static func render(_ titles: [String]) -> [Section] {
        [Section(id: "open", cells: titles.enumerated().map { CellNode(Ticket(id: $0.offset, title: $0.element)) })]
    }

    /// An app with a layout that marks its pages, lists `queue` (agents only) and `mine` (anyone signed
    /// in), and the page `/desk` that embeds both. `X-User: NAME[:agent]` signs a request in.
    static func desk() async throws -> RouteClient {
        let server = try await RouteClient()
        let app = server.app
        app.authenticate { head in
            guard let user = head.headers["X-User"] else { return nil }
            let parts = user.split(separator: ":").map(String.init)
            return Identity(id: parts[0], roles: Set(parts.dropFirst()))
        }
        app.layout { page in
            document {
                html(.lang("en")) {
                    head {
                        title { page.title + " · Desk" }
                        page.liveListHead
                    }
                    body {
                        header(.class("desk-header")) {
                            if let identity = page.identity { "Signed in as \(identity.id)" } else { "Desk" }
                        }
                        if let flash = page.flash { p(.class("flash")) { flash } }
                        main { page.content }
                        page.liveListRegions
                    }
                }
            }
        }
        let queue = try await app.host("queue", title: "Open <tickets>", state: ["Printer <b>jammed</b>", "VPN down"], render: render)
        await queue.onAction(Action.self, changing: [String].self) { action, titles in
            if let index = action.cell(as: Int.self) { titles.remove(at: index) }
        }
        try await app.host("mine", state: ["My laptop"], render: render)
        try await app.access("queue") { identity in identity?.roles.contains("agent") == true ? .all : .none }
        try await app.access("mine") { identity in identity == nil ? .none : .all }
        try app.route(.GET, "/desk") { request in
            let queue = await request.embed("queue")
            let mine = await request.embed("mine")
            return request.page(title: "Desk") {
                h1 { "Desk" }
                queue
                if !queue.isShown { p(.class("no-queue")) { "Agents see the queue here." } }
                mine
            }
        }
        try app.route(.POST, "/file", csrf: false) { request in
            request.redirect(to: "/desk", flash: "Filed <\(request.form["title"] ?? "")>")
        }
        return server
    }

    @Test func aListsControlsBelongToItsOwnFormOnItsOwnPage() async throws {
        let server = try await RouteClient()
        try await server.app.host("todo", title: "Things <to> do", state: ["Milk"], render: Self.render)
        let page = try await server.get("/lists/todo").text
        #expect(page.contains(#"<form id="livelist-actions-todo" method="post" action="/lists/todo/actions">"#))
        #expect(page.contains(#"<button form="livelist-actions-todo" name="action" value="close:0">Close</button>"#))
        #expect(page.contains("<title>Things &lt;to&gt; do</title>") && page.contains("<h1>Things &lt;to&gt; do</h1>"))
        #expect(!page.contains("livelist-actions\""), "no control points at a form the page does not have")
    }

    @Test func aPageOfTheAppsOwnEmbedsEveryListTheViewerMaySee() async throws {
        let server = try await Self.desk()
        let agent = try await server.get("/desk", headers: [("X-User", "carol:agent")])
        #expect(agent.status == 200)
        let html = agent.text
        #expect(html.hasPrefix("<!doctype html>\n<html lang=\"en\"><head><title>Desk · Desk</title>"))
        #expect(html.contains("Signed in as carol"))
        for list in ["queue", "mine"] {
            #expect(html.contains(#"data-list="\#(list)""#))
            #expect(html.contains(#"<form id="livelist-actions-\#(list)" method="post" action="/lists/\#(list)/actions">"#))
            #expect(html.contains(#"<input type="hidden" name="next" value="/desk">"#))
            #expect(html.contains(#"form="livelist-actions-\#(list)""#))
        }
        #expect(html.contains("Printer &lt;b&gt;jammed&lt;/b&gt;"), "cells are escaped as on the list's own page")
        // One script and no inline one: the lists share the page's stream.
        #expect(html.components(separatedBy: "<script ").count == 2 && html.contains(#"<script src="/livelist.js?v="#))
        #expect(html.contains(#"<meta name="livelist-csrf" content=""#) && html.contains(#"id="livelist-news""#))
        #expect(agent.header("Content-Security-Policy") == HTTPResponse.appPageSecurityPolicy)
        #expect(agent.header("Cache-Control") == "no-store")
    }

    @Test func aListTheViewerMayNotSeeIsNotInTheEmbeddingPage() async throws {
        let server = try await Self.desk()
        let customer = try await server.get("/desk", headers: [("X-User", "alice")]).text
        #expect(!customer.contains(#"data-list="queue""#) && !customer.contains("Printer") && !customer.contains("livelist-actions-queue"))
        #expect(customer.contains("Agents see the queue here.") && customer.contains(#"data-list="mine""#))
        let nobody = try await server.get("/desk").text
        #expect(!nobody.contains("data-list=") && !nobody.contains("Printer") && !nobody.contains("My laptop"))
        // The list's own routes say the same (the page, its JSON, its stream).
        #expect(try await server.get("/lists/queue", headers: [("X-User", "alice")]).status == 404)
        #expect(try await server.get("/lists/queue", headers: [("X-User", "alice"), ("Accept", "application/json")]).status == 404)
        #expect(try await server.get("/lists/queue/events", headers: [("X-User", "alice")]).status == 404)
    }

    @Test func aListsOwnPageTakesTheLayoutAndItsTitle() async throws {
        let server = try await Self.desk()
        let page = try await server.get("/lists/queue", headers: [("X-User", "carol:agent")])
        #expect(page.status == 200)
        #expect(page.text.contains("<title>Open &lt;tickets&gt; · Desk</title>") && page.text.contains("<h1>Open &lt;tickets&gt;</h1>"))
        #expect(page.text.contains(#"<input type="hidden" name="next" value="/lists/queue">"#) && page.text.contains("Signed in as carol"))
        // Twice alike: the layout page is rendered per request, never from another viewer's cache.
        let other = try await server.get("/lists/mine", headers: [("X-User", "dave")])
        #expect(other.text.contains("Signed in as dave") && !other.text.contains("carol"))
    }

    @Test func aFormPostedFromAnEmbeddingPageComesBackToIt() async throws {
        let server = try await Self.desk()
        let page = try await server.get("/desk", headers: [("X-User", "carol:agent")])
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(page.text.components(separatedBy: #"name="csrf" value=""#).dropFirst().first?.prefix { $0 != "\"" })
        let headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Cookie", cookie), ("X-User", "carol:agent")]
        let back = try await server.post("/lists/queue/actions", headers: headers, body: Array("csrf=\(csrf)&next=%2Fdesk&action=close%3A1".utf8))
        #expect(back.status == 303 && back.header("Location") == "/desk")
        let elsewhere = try await server.post("/lists/queue/actions", headers: headers, body: Array("csrf=\(csrf)&next=%2F%2Fevil.example&action=close%3A0".utf8))
        #expect(elsewhere.status == 303 && elsewhere.header("Location") == "/lists/queue", "another origin is never a way back")
        let after = try await server.get("/desk", headers: [("X-User", "carol:agent")]).text
        #expect(after.contains(#"data-list="queue""#) && !after.contains("VPN down") && !after.contains("Printer"), "both actions were taken")
    }

    @Test func aFlashIsShownOnceAfterItsRedirect() async throws {
        let server = try await Self.desk()
        let filed = try await server.post("/file", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("title=%3Cb%3EPrinter".utf8))
        #expect(filed.status == 303 && filed.header("Location") == "/desk")
        let cookie = try #require(filed.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        #expect(cookie.hasPrefix("livelist_flash="))
        let shown = try await server.get("/desk", headers: [("Cookie", cookie)])
        #expect(shown.text.contains(#"<p class="flash">Filed &lt;&lt;b&gt;Printer&gt;</p>"#))
        #expect(shown.headers.values("Set-Cookie").contains { $0.hasPrefix("livelist_flash=;") && $0.contains("Max-Age=0") }, "shown once")
        let forged = cookie.dropLast(2) + "AA"
        #expect(try await !server.get("/desk", headers: [("Cookie", String(forged))]).text.contains("class=\"flash\""))
        let long = FlashCookie(keys: server.app.services.keys).value(of: String(repeating: "é", count: 2_000))
        let cut = try #require(FlashCookie(keys: server.app.services.keys).message(of: long))
        #expect(cut.utf8.count <= FlashCookie.maximumBytes && cut.hasSuffix("…"))
    }

    @Test func errorPagesTakeTheLayoutAndWithoutOneNameNoServer() async throws {
        let server = try await Self.desk()
        let browser = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"), ("X-User", "alice")]
        let missing = try await server.get("/nothing/here", headers: browser)
        #expect(missing.status == 404 && missing.text.contains("<title>404 Not Found · Desk</title>"))
        #expect(missing.text.contains(#"<code>not_found</code>"#) && !missing.text.contains("LiveList"))
        let plain = try await RouteClient()
        let bare = try await plain.get("/nothing/here", headers: browser)
        #expect(bare.status == 404 && bare.text.contains("<title>404 Not Found</title>") && !bare.text.contains("LiveList"))
        #expect(try await server.get("/nothing/here").text.hasPrefix("{"), "a client that takes JSON keeps JSON")
    }

    @Test func theAppsFilesAreServedBesideLiveListsOwn() async throws {
        let server = try await RouteClient()
        let directory = NSTemporaryDirectory() + "desk-files-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/css", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("body { color: teal }".utf8).write(to: URL(fileURLWithPath: directory + "/css/desk.css"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: directory + "/.env"))
        try server.app.files(at: "/desk", from: directory)
        let css = try await server.get("/desk/css/desk.css")
        #expect(css.status == 200 && css.text == "body { color: teal }" && css.header("Content-Type")?.hasPrefix("text/css") == true)
        #expect(try await server.get("/desk/.env").status == 404)
        #expect(try await server.get("/desk/nothing.css").status == 404)
        #expect(try await server.get("/livelist.css").status == 200, "LiveList's own files stay")
        #expect(throws: StartupError.self) { try server.app.files(at: "/lists", from: directory) }
        #expect(throws: StartupError.self) { try server.app.files(at: "/assets", from: directory + "/missing") }
    }
}
