import Foundation
import LiveListTesting
import Testing
@testable import LiveListServer

/// Forms that decode into a type with their errors shown in the form, and the test client an app's own
/// tests drive it with.
@Suite struct AppFormTests {
    enum Priority: String, Decodable, CaseIterable { case low, normal, urgent }
    enum Action: String, ListActions { case close }

    struct NewTicket: Decodable, Equatable {
        var title: String
        var priority: Priority
        var minutes: Int?
        var notify: Bool
    }

    struct Ticket: IdentifiableComponent, Equatable {
        var id: Int
        var title: String
        var body: some HTML {
            span { title }
            actionButton(Action.close, cell: id) { "Close" }
        }
    }

    @Test func statusesAnswerToTheirOlderNamesToo() {
        #expect(HTTPStatus.unprocessableEntity.code == 422 && HTTPStatus.payloadTooLarge.code == 413 && HTTPStatus.requestEntityTooLarge.code == 413)
        #expect(HTTPStatus.requestURITooLong.code == 414 && HTTPStatus.gone.reasonPhrase == "Gone" && HTTPStatus.found.code == 302)
    }

    @Test func aFormDecodesIntoItsTypeOrSaysWhatIsWrongFieldByField() {
        let good = FormDecoding.decode(NewTicket.self, from: ["title": "Printer", "priority": "urgent", "minutes": "15", "notify": "on"])
        #expect(good == .success(NewTicket(title: "Printer", priority: .urgent, minutes: 15, notify: true)))
        let bare = FormDecoding.decode(NewTicket.self, from: ["title": "Printer", "priority": "low", "minutes": " "])
        #expect(bare == .success(NewTicket(title: "Printer", priority: .low, minutes: nil, notify: false)), "blank optionals are nil, an absent checkbox false")
        #expect(FormDecoding.decode(NewTicket.self, from: ["title": "  ", "priority": "normal", "minutes": "soon"])
            == .failure(FormErrors(["title": "Required.", "minutes": "Enter a whole number."])))
        #expect(FormDecoding.decode(NewTicket.self, from: ["title": "x", "priority": "<script>"]) == .failure(FormErrors(["priority": "Choose one of the values offered."])))
        #expect(FormDecoding.decode(NewTicket.self, from: ["title": "x"]) == .failure(FormErrors(["priority": "Required."])))
    }

    /// A desk: `/new` files a ticket into `queue` (a form shown again with its errors, 422), `/desk`
    /// embeds the queue for agents. `X-User: NAME[:agent]` signs a request in. Keep the route client: its
    /// data directory goes with it.
    static func desk() async throws -> (RouteClient, TestClient) {
        let server = try await RouteClient()
        let app = server.app
        app.authenticate { head in
            guard let user = head.headers["X-User"] else { return nil }
            let parts = user.split(separator: ":").map(String.init)
            return Identity(id: parts[0], roles: Set(parts.dropFirst()))
        }
        let queue = try await app.host("queue", state: ["Printer jammed", "VPN down"]) { titles in
            Section(id: "open", cells: titles.enumerated().map { CellNode(Ticket(id: $0.offset, title: $0.element)) })
        }
        try await app.access("queue") { identity in identity?.roles.contains("agent") == true ? .all : .none }
        await queue.onAction(Action.self, changing: [String].self) { action, titles in
            if let index = action.cell(as: Int.self) { titles.remove(at: index) }
        }
        @Sendable func ticketForm(_ request: AppRequest, _ errors: FormErrors = FormErrors()) -> HTTPResponse {
            request.page(title: "New ticket", status: errors.isEmpty ? .ok : .unprocessableContent) {
                form(.method("post"), .action("/new")) {
                    input(.type("hidden"), .name("csrf"), .value(request.csrfToken))
                    label { "Title"; input(.name("title"), .value(request.form["title"] ?? "")) }
                    if let message = errors["title"] { p(.class("field-error")) { message } }
                    select(.name("priority")) {
                        for priority in Priority.allCases { option(.value(priority.rawValue)) { priority.rawValue } }
                    }
                    if let message = errors["priority"] { p(.class("field-error")) { message } }
                    button { "File" }
                }
            }
        }
        try app.route(.GET, "/new") { request in ticketForm(request) }
        try app.route(.POST, "/new") { request in
            switch request.decodeForm(NewTicket.self) {
            case let .failure(errors):
                return ticketForm(request, errors)
            case let .success(ticket):
                _ = try await queue.updateState { $0.append(ticket.title) }
                return request.redirect(to: "/desk", flash: "Filed: \(ticket.title)")
            }
        }
        try app.route(.GET, "/desk") { request in
            let embedded = await request.embed("queue")
            return request.page(title: "Desk") { embedded }
        }
        return (server, TestClient(server.app))
    }

    @Test func aFormWithErrorsIsAnsweredAgainWithThemAnd422() async throws {
        let (server, client) = try await Self.desk()
        defer { withExtendedLifetime(server) {} }
        let alice = client.browser(headers: [("X-User", "alice")])
        #expect(try await alice.get("/new").status == 200)
        let wrong = try await alice.submit("/new", ["title": "<b>Printer</b>", "priority": "soon"])
        #expect(wrong.status == 422)
        #expect(wrong.text.contains(#"<p class="field-error">Choose one of the values offered.</p>"#))
        #expect(wrong.text.contains(#"value="&lt;b&gt;Printer&lt;/b&gt;""#), "what was typed comes back, escaped")
        let filed = try await alice.submit("/new", ["title": "Printer", "priority": "urgent"])
        #expect(filed.status == 303 && filed.location == "/desk")
        let desk = try await alice.follow(filed)
        #expect(desk.text.contains("Filed: Printer") && alice.cookie("livelist_flash") == nil, "the flash is shown once")
        #expect(!desk.text.contains("data-list=\"queue\""), "a customer's desk has no queue")
    }

    @Test func theTestClientReadsWhatEachViewersStreamCarries() async throws {
        let (server, client) = try await Self.desk()
        defer { withExtendedLifetime(server) {} }
        let carol = client.browser(headers: [("X-User", "carol:agent")])
        let alice = client.browser(headers: [("X-User", "alice")])
        let page = try await carol.get("/desk")
        #expect(page.status == 200 && carol.lists["queue"] != nil)
        try await alice.get("/desk")
        #expect(alice.lists["queue"] == nil)

        #expect(try await carol.act("queue", "close", cell: "1").status == 204)
        let closed = try #require(try await carol.changes("queue"))
        #expect(closed.kinds.contains("delete") && closed.version == closed.from + 1)
        #expect(try await carol.changes("queue") == nil, "nothing since")
        #expect(try await carol.act("queue", "close", cell: "9").status == 422, "no such cell")
        #expect(try await alice.act("queue", "close", cell: "0").status == 404, "a customer cannot act on the queue")
        await #expect(throws: TestClientError.self) { try await alice.changes("queue") }
        #expect(try await alice.send(.GET, "/lists/queue/changes?since=0").status == 404)
    }
}

extension AppFormTests {
    enum DeskAction: String, ListActions { case setPriority }

    struct Row: IdentifiableComponent, Equatable {
        var id: Int
        var priority: String
        var body: some HTML {
            span { priority }
            actionButton(DeskAction.setPriority, cell: id, payload: "urgent") { "Urgent" }
        }
    }

    @Test func anActionCarriesATypedPayloadCheckedLikeEveryField() async throws {
        let server = try await RouteClient()
        let list = try await server.app.host("rows", state: ["low"]) { rows in
            Section(id: "s", cells: rows.enumerated().map { CellNode(Row(id: $0.offset, priority: $0.element)) })
        }
        await list.onAction(DeskAction.self, changing: [String].self) { action, rows in
            let priority = try action.payload(as: Priority.self, maxBytes: 64)
            if let index = action.cell(as: Int.self) { rows[index] = priority.rawValue }
        }
        let client = TestClient(server.app)
        let browser = client.browser()
        let page = try await browser.get("/lists/rows")
        // "urgent" as JSON, base64url: the button's value is NAME;PAYLOAD:CELL.
        #expect(page.text.contains(#"value="setPriority;InVyZ2VudCI:0""#))
        #expect(try await browser.act("rows", "setPriority;InVyZ2VudCI", cell: "0").status == 204)
        #expect(try await browser.changes("rows")?.mentions("urgent") == true)
        let bad = try await browser.act("rows", "setPriority;InNvb24i", cell: "0")  // "soon"
        #expect(bad.status == 422 && bad.text.contains("invalid_payload"))
        let missing = try await browser.act("rows", "setPriority", cell: "0")
        #expect(missing.status == 422 && missing.text.contains("missing_payload"))
        let large = try await browser.act("rows", "setPriority", cell: "0", fields: ["payload": "\"" + String(repeating: "a", count: 100) + "\""])
        #expect(large.status == 422 && large.text.contains("payload_too_large"))
        #expect(try await browser.changes("rows") == nil, "no refused action changed the list")
    }
}
