import Foundation
import LiveListTestSupport
import Synchronization
import Testing
@testable import LiveListServer

/// The API an app author serves their own lists with: typed actions, their HTML helpers, per-list
/// configuration, and the configuration from the environment.
@Suite struct AppAPITests {
    enum Action: String, ListActions { case add, toggle }

    struct Items: Codable, Equatable, Sendable {
        var titles: [String] = []
        var done: Set<Int> = []
    }

    struct Row: IdentifiableComponent, Equatable {
        var id: Int
        var title: String
        var body: some HTML {
            span { title }
            actionButton(Action.toggle, cell: id, .aria("label", "Toggle \(title)")) { "Toggle" }
        }
    }

    static func render(_ items: Items) -> [Section] {
        [Section(id: "items", cells: items.titles.enumerated().map { CellNode(Row(id: $0.offset, title: $0.element)) })]
    }

    @Test func aTypedActionDecodesItsTypeAndCell() {
        let typed = TypedAction<Action>(ListAction(type: "toggle", cell: "12", fields: ["text": "x"], session: "s"))
        #expect(typed?.kind == .toggle)
        #expect(typed?.cell(as: Int.self) == 12)
        #expect(typed?.fields == ["text": "x"])
        #expect(TypedAction<Action>(ListAction(type: "select", cell: "1")) == nil)
        #expect(TypedAction<Action>(ListAction(type: "add", cell: ""))?.cell == nil, "a button without a cell sends NAME:")
    }

    @Test func theHelpersPointAtThePagesActionsForm() {
        let button = actionButton(Action.toggle, cell: 3, .class("b")) { "Done" }.renderedString()
        #expect(button == #"<button form="livelist-actions" name="action" value="toggle:3" class="b">Done</button>"#)
        #expect(actionButton(Action.add) { "Add" }.renderedString().contains(#"value="add:""#))
        let field = actionField("text", value: "<milk>", .placeholder("New")).renderedString()
        #expect(field == #"<input form="livelist-actions" name="text" value="&lt;milk&gt;" placeholder="New">"#)
    }

    @Test func typedActionsChangeTheStateThroughThePagesForm() async throws {
        let server = try await RouteClient()
        var chat = server.app.registry.configuration
        chat.options.stickToBottom = true
        let list = try await server.app.registry.hostApp(ListName("items")!, configuration: chat, state: Items(), render: Self.render)
        await list.onAction(Action.self, changing: Items.self) { action, items in
            switch action.kind {
            case .add: items.titles.append(action.fields["text"] ?? "")
            case .toggle: if let index = action.cell(as: Int.self) { items.done.insert(index) }
            }
        }
        let page = try await server.get("/lists/items")
        #expect(page.text.contains(#"data-stick-bottom="true""#), "the list's own options")
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(page.text.components(separatedBy: #"name="csrf" value=""#).dropFirst().first?.prefix { $0 != "\"" })
        let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Cookie", cookie)]
        let added = try await server.post("/lists/items/actions", headers: form, body: Array("csrf=\(csrf)&action=add%3A&text=Milk".utf8))
        #expect(added.status == 303)
        let toggled = try await server.post("/lists/items/actions", headers: form, body: Array("csrf=\(csrf)&action=toggle%3A0".utf8))
        #expect(toggled.status == 303)
        let stored = try #require(try await server.app.registry.appState(ListName("items")!))
        #expect(try JSONDecoder().decode(Items.self, from: Data(stored)) == Items(titles: ["Milk"], done: [0]))
        #expect(try await server.get("/lists/items").text.contains(#"value="toggle:0""#))

        // Another list keeps the server's options.
        _ = try await server.app.registry.hostApp(ListName("plain")!, state: Items(), render: Self.render)
        #expect(try await server.get("/lists/plain").text.contains(#"data-stick-bottom="false""#))
    }

    @Test func anActionTheAppDoesNotDeclareOrAboutNoCellIsRefused() async throws {
        let server = try await RouteClient()
        let list = try await server.app.host("items", state: Items(titles: ["Milk"]), render: Self.render)
        let heard = Mutex<[String]>([])
        await list.onAction(Action.self, changing: Items.self) { action, items in
            heard.withLock { $0.append(action.kind.rawValue + ":" + (action.cell ?? "")) }
            if action.kind == .toggle, let index = action.cell(as: Int.self) { items.done.insert(index) }
        }
        let page = try await server.get("/lists/items")
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(page.text.components(separatedBy: #"name="csrf" value=""#).dropFirst().first?.prefix { $0 != "\"" })
        let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Cookie", cookie)]
        func post(_ action: String, accept: String = "*/*") async throws -> RouteResponse {
            try await server.post("/lists/items/actions", headers: form + [("Accept", accept)], body: Array("csrf=\(csrf)&action=\(action)".utf8))
        }
        let json = [("Content-Type", "application/json"), ("Cookie", cookie), ("X-CSRF-Token", String(csrf))]

        let unknown = try await post("rename%3A0")
        #expect(unknown.status == 422 && unknown.text.contains(#""error":"unknown_action""#), "\(unknown.status) \(unknown.text)")
        let noCell = try await post("toggle%3A7")
        #expect(noCell.status == 422 && noCell.text.contains(#""error":"unknown_cell""#) && noCell.text.contains("7"), "\(noCell.text)")
        let browser = try await post("toggle%3A7", accept: "text/html,application/xhtml+xml,*/*;q=0.8")
        #expect(browser.status == 422 && browser.header("Content-Type")?.hasPrefix("text/html") == true && browser.text.contains("unknown_cell"))
        let jsonUnknown = try await server.post("/lists/items/actions", headers: json, body: Array(#"{"type":"rename"}"#.utf8))
        #expect(jsonUnknown.status == 422 && jsonUnknown.text.contains("unknown_action"))
        let missingSelection = try await server.post("/lists/items/actions", headers: json, body: Array(#"{"type":"select","cell":"9"}"#.utf8))
        #expect(missingSelection.status == 422 && missingSelection.text.contains("unknown_cell"))
        #expect(heard.withLock { $0 }.isEmpty, "the handler heard none of them")

        // What the app declares, about a cell it shows (or none), and the list's own events still go through.
        #expect(try await post("toggle%3A0").status == 303)
        #expect(try await post("add%3A").status == 303)
        let selection = try await server.post("/lists/items/actions", headers: json, body: Array(#"{"type":"select","cell":"0"}"#.utf8))
        #expect(selection.status == 204)
        #expect(await eventually { heard.withLock { $0 } == ["toggle:0", "add:"] })
    }

    @Test func aTypedActionFindsItsCellAndReadsBoundedText() throws {
        let rows = [Row(id: 4, title: "a"), Row(id: 12, title: "b")]
        #expect(TypedAction<Action>(ListAction(type: "toggle", cell: "12"))?.index(in: rows) == 1)
        #expect(TypedAction<Action>(ListAction(type: "toggle", cell: "5"))?.index(in: rows) == nil)
        #expect(TypedAction<Action>(ListAction(type: "add"))?.index(in: rows) == nil)
        let typed = TypedAction<Action>(ListAction(type: "add", fields: ["title": "  Milk and honey \n", "blank": " \t"]))
        #expect(try typed?.text("title", maxCharacters: 200, maxBytes: 800) == "Milk and honey")
        #expect(throws: ActionRefusal.self) { try typed?.text("title", maxCharacters: 4, maxBytes: 800) }
        #expect(try typed?.text("blank", maxCharacters: 200, maxBytes: 800) == nil && typed?.text("missing", maxCharacters: 200, maxBytes: 800) == nil)
        // One character of 4,001 bytes (an "a" and 2,000 combining accents): within any character
        // limit, refused by the byte limit, and the refusal names the field.
        let marks = TypedAction<Action>(ListAction(type: "add", fields: ["title": "a" + String(repeating: "\u{301}", count: 2_000)]))
        #expect(marks?.fields["title"]?.count == 1)
        do {
            _ = try marks?.text("title", maxCharacters: 200, maxBytes: 800)
            Issue.record("a 4,001-byte character was taken")
        } catch {
            #expect(error.code == "text_too_long" && error.field == "title" && error.detail.contains("title"))
        }
        // Exactly at both limits is taken whole, never cut.
        let exact = TypedAction<Action>(ListAction(type: "add", fields: ["title": String(repeating: "é", count: 200)]))
        #expect(try exact?.text("title", maxCharacters: 200, maxBytes: 400)?.count == 200)
    }

    @Test func aTextEntryIsAFieldAndTheButtonThatSendsIt() {
        let entry = TextEntry(Action.add, field: "title", label: "New item", button: "Add")
        #expect(entry.body.renderedString() == #"<input form="livelist-actions" name="title" placeholder="New item" aria-label="New item" autocomplete="off" data-reset="true">"#
            + #"<button form="livelist-actions" name="action" value="add:">Add</button>"#)
        #expect(TextEntry(Action.add, field: "t", label: "L", placeholder: "<say>", button: "Go").body.renderedString().contains(#"placeholder="&lt;say&gt;""#))
    }

    @Test func theEnvironmentConfiguresTheServer() throws {
        let configuration = try ServerConfiguration.fromEnvironment([
            "LIVELIST_PORT": "0", "LIVELIST_DATA": "/tmp/d", "LIVELIST_PUBLIC": "", "LIVELIST_TRUSTED_PROXIES": "127.0.0.1, ::1",
        ])
        #expect(configuration.port == 0)
        #expect(configuration.dataDirectory == "/tmp/d")
        #expect(configuration.publicDirectory == nil, "empty is unset: the built-in files")
        #expect(configuration.trustedProxies == ["127.0.0.1", "::1"])
        #expect(try ServerConfiguration.fromEnvironment([:]).port == 8080)
        #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_PORT": "80a"]) }
        #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_TLS_CERT": "c.pem"]) }
        #expect(try ServerConfiguration.fromEnvironment(["LIVELIST_EVENT_LOOPS": "3"]).eventLoops == 3)
        #expect(try ServerConfiguration.fromEnvironment([:]).eventLoops == nil, "one loop per processor")
        for bad in ["0", "1025", "two", "-1"] {
            #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_EVENT_LOOPS": bad]) }
        }
    }
}
