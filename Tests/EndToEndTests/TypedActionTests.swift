import Foundation
import Testing

/// The demo's todo list declares its actions (`ListActions`): over real sockets, what it does not
/// declare, and what names a cell it does not show, is refused with 422 and changes nothing.
@Suite struct TypedActionTests {
    @Test func theTodoDemoRefusesUnknownActionsAndCellsWith422() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let (cookie, token) = try pageSession("todo", port: server.port)
            let before = try snapshot("todo", port: server.port)
            func post(_ json: String) throws -> Response {
                try Client.request("POST", "/lists/todo/actions", port: server.port,
                                   headers: [("Cookie", cookie), ("Content-Type", "application/json"), ("X-CSRF-Token", token)],
                                   body: Array(json.utf8))
            }
            let unknown = try post(#"{"type":"rename","cell":"2"}"#)
            #expect(unknown.status == 422 && unknown.text.contains(#""error":"unknown_action""#), "\(unknown.status) \(unknown.text)")
            let gone = try post(#"{"type":"delete","cell":"99"}"#)
            #expect(gone.status == 422 && gone.text.contains(#""error":"unknown_cell""#), "\(gone.status) \(gone.text)")

            // A browser without JavaScript posting the form gets the HTML error page, not a 303.
            let form = try Client.request("POST", "/lists/todo/actions", port: server.port,
                                          headers: [("Cookie", cookie), ("Content-Type", "application/x-www-form-urlencoded"),
                                                    ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")],
                                          body: Array("csrf=\(token)&action=toggle%3A99".utf8))
            #expect(form.status == 422 && form.header("Content-Type")?.hasPrefix("text/html") == true && form.text.contains("unknown_cell"))
            #expect(try snapshot("todo", port: server.port).version == before.version, "nothing changed")

            #expect(try post(#"{"type":"toggle","cell":"2"}"#).status == 204)
            #expect(try snapshot("todo", port: server.port).version == before.version + 1)
        }
    }
}
