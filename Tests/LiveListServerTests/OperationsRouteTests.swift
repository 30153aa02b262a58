@testable import LiveListServer
import LiveListTestSupport
import Synchronization
import Testing

/// What third-party clients expect of the routes: a coded body refused as RFC 9110 says, `Vary` on
/// both variants of a negotiated error, `Prefer: return=minimal` (RFC 7240), and an action that names
/// an empty cell refused rather than handled as one that names none.
@Suite struct OperationsRouteTests {
    static let body = #"{"sections":[{"id":"s","cells":[{"id":"a","text":"A"}]}]}"#

    @Test func aCodedBodyIsRefusedWith415FromItsHead() async throws {
        let server = try await RouteClient()
        for coding in ["gzip", "br", "identity, gzip"] {
            let refused = try await server.put("/lists/coded", json: Self.body, headers: [("Content-Encoding", coding)])
            #expect(refused.status == 415 && refused.text.contains("unsupported_content_encoding") && refused.header("Accept-Encoding") == "identity", "\(coding)")
            #expect(refused.refusedBeforeBody)
        }
        #expect(try await server.put("/lists/coded", json: Self.body, headers: [("Content-Encoding", "identity")]).status == 201)
    }

    @Test func bothVariantsOfANegotiatedErrorVaryOnAccept() async throws {
        let server = try await RouteClient()
        let json = try await server.get("/lists/missing", headers: [("Accept", "application/json")])
        let html = try await server.get("/lists/missing", headers: [("Accept", "text/html")])
        #expect(json.status == 404 && html.status == 404)
        #expect(json.header("Vary")?.contains("Accept") == true && html.header("Vary")?.contains("Accept") == true, "\(json.headers) \(html.headers)")
    }

    @Test func returnMinimalAnswersWithoutTheChangeset() async throws {
        let server = try await RouteClient()
        let created = try await server.put("/lists/quiet", json: Self.body, headers: [("Prefer", "handling=strict, return=minimal")])
        #expect(created.status == 201 && created.body.isEmpty && created.header("ETag") == "\"1\"" && created.header("Preference-Applied") == "return=minimal")
        let patched = try await server.send(.PATCH, "/lists/quiet", headers: [("Content-Type", "application/json"), ("Prefer", "return=\"minimal\"")],
                                            body: Array(#"{"ops":[{"op":"remove","cell":"zz"},{"op":"update","cell":{"id":"a","text":"B"}}]}"#.utf8))
        #expect(patched.status == 200 && patched.body.isEmpty && patched.header("ETag") == "\"2\"" && patched.header("LiveList-Skipped") == "1")
        let full = try await server.put("/lists/quiet", json: Self.body, headers: [("Prefer", "return=representation")])
        #expect(full.status == 200 && !full.body.isEmpty && full.header("Preference-Applied") == nil)
    }

    @Test func anActionNamingAnEmptyCellIsRefused() async throws {
        let server = try await RouteClient()
        let app = server.app
        let list = try await app.host("cells", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        let ran = Mutex(0)
        await list.onAction(AccessTests.AddAction.self, changing: [String].self) { _, _ in ran.withLock { $0 += 1 } }
        let (id, cookie) = app.services.keys.mintSession()
        let headers = [("Cookie", SessionKeys.cookieName + "=" + cookie), ("X-CSRF-Token", app.services.keys.csrfToken(for: id)), ("Content-Type", "application/json")]
        let refused = try await server.post("/lists/cells/actions", headers: headers, body: Array(#"{"type":"add","cell":""}"#.utf8))
        #expect(refused.status == 422 && refused.text.contains("unknown_cell"))
        #expect(try await server.post("/lists/cells/actions", headers: headers, body: Array(#"{"type":"add"}"#.utf8)).status == 204)
        #expect(ran.withLock { $0 } == 1, "the handler ran for the action without a cell only")
    }
}
