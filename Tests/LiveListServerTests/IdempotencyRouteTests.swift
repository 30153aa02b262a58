@testable import LiveListServer
import LiveListTestSupport
import Testing

/// `Idempotency-Key` on `PUT` and `DELETE /lists/NAME`: a retry gets the first answer (marked
/// `Idempotent-Replayed: true`) and makes no version; the key with another request is 422; a key that
/// is not 1 to 255 visible ASCII characters, or two keys, are 400.
@Suite struct IdempotencyRouteTests {
    @Test func retriesGetTheFirstAnswerAndBadKeysAreRefused() async throws {
        let server = try await RouteClient()
        let body = #"{"sections":[{"id":"s","cells":[{"id":"a","text":"A"}]}]}"#
        let first = try await server.put("/lists/keyed", json: body, headers: [("Idempotency-Key", "create-keyed")])
        #expect(first.status == 201 && first.header("Idempotent-Replayed") == nil)
        let retry = try await server.put("/lists/keyed", json: body, headers: [("Idempotency-Key", "create-keyed")])
        #expect(retry.status == 201 && retry.header("Idempotent-Replayed") == "true" && retry.text == first.text)
        #expect(retry.header("ETag") == first.header("ETag"))
        let reused = try await server.put("/lists/keyed", json: #"{"sections":[]}"#, headers: [("Idempotency-Key", "create-keyed")])
        #expect(reused.status == 422 && reused.text.contains("idempotency_key_reused"))
        for bad in ["", String(repeating: "k", count: 256), "with space", "tab\tkey", "é"] {
            let refused = try await server.put("/lists/keyed", json: body, headers: [("Idempotency-Key", bad)])
            #expect(refused.status == 400 && refused.text.contains("invalid_idempotency_key"), "\(bad)")
        }
        let twice = try await server.put("/lists/keyed", json: body, headers: [("Idempotency-Key", "a"), ("Idempotency-Key", "b")])
        #expect(twice.status == 400)
        let deleted = try await server.delete("/lists/keyed", headers: [("Idempotency-Key", "drop-keyed")])
        let again = try await server.delete("/lists/keyed", headers: [("Idempotency-Key", "drop-keyed")])
        #expect(deleted.status == 200 && again.status == 200 && again.text == deleted.text && again.header("Idempotent-Replayed") == "true")
        #expect(try await server.delete("/lists/keyed").status == 404)
    }

    /// An action resent with its key (what the page's script does after a lost answer) is answered as
    /// the first and its handler does not run again; the key with another action is 422; an action
    /// that nothing handled keeps no key, so its retry runs.
    @Test func aResentActionRunsOnce() async throws {
        let server = try await RouteClient()
        let app = server.app
        let list = try await app.host("keyed-actions", state: [String]()) { items in
            Section(id: "s", cells: items.enumerated().map { CellNode(TextCell(id: String($0.offset), text: $0.element)) })
        }
        await list.onAction(AccessTests.AddAction.self, changing: [String].self) { _, items in items.append("added") }
        let (id, cookie) = app.services.keys.mintSession()
        let headers = [("Cookie", SessionKeys.cookieName + "=" + cookie), ("X-CSRF-Token", app.services.keys.csrfToken(for: id)),
                       ("Content-Type", "application/json")]
        func post(_ body: String, key: String?) async throws -> RouteResponse {
            try await server.post("/lists/keyed-actions/actions", headers: headers + (key.map { [("Idempotency-Key", $0)] } ?? []), body: Array(body.utf8))
        }
        let first = try await post(#"{"type":"add"}"#, key: "add-once")
        let again = try await post(#"{"type":"add"}"#, key: "add-once")
        #expect(first.status == 204 && again.status == 204 && again.header("Idempotent-Replayed") == "true")
        #expect(await list.currentState == ["added"], "the handler ran once")
        #expect(try await post(#"{"type":"add","x":"1"}"#, key: "add-once").status == 422)
        #expect(try await post(#"{"type":"nope"}"#, key: "unknown").status == 422)
        #expect(try await post(#"{"type":"nope"}"#, key: "unknown").status == 422, "a refused action keeps no key")
        #expect(try await post(#"{"type":"add"}"#, key: "add-twice").status == 204)
        #expect(await list.currentState == ["added", "added"])
    }

    /// Actions refused with a fresh key each (unknown, or past the pace) keep no key and leave no place
    /// behind: the keys' memory stays bounded, whatever one viewer of a public list sends.
    @Test func refusedKeyedActionsKeepNothing() async throws {
        let server = try await RouteClient { $0.actionPace = ActionPace(rate: 1, burst: 5) }
        let app = server.app
        let list = try await app.host("refused-keys", state: [String]()) { items in
            Section(id: "s", cells: items.enumerated().map { CellNode(TextCell(id: String($0.offset), text: $0.element)) })
        }
        await list.onAction(AccessTests.AddAction.self, changing: [String].self) { _, items in items.append("added") }
        let (id, cookie) = app.services.keys.mintSession()
        let headers = [("Cookie", SessionKeys.cookieName + "=" + cookie), ("X-CSRF-Token", app.services.keys.csrfToken(for: id)),
                       ("Content-Type", "application/json")]
        var statuses: [Int: Int] = [:]
        for index in 0 ..< 2_000 {
            let key = "fresh-\(index)-" + String(repeating: "k", count: 150)
            let answer = try await server.post("/lists/refused-keys/actions", headers: headers + [("Idempotency-Key", key)],
                                               body: Array(#"{"type":"nope"}"#.utf8))
            statuses[answer.status, default: 0] += 1
        }
        #expect(statuses[429, default: 0] > 1_000 && statuses[422, default: 0] >= 5, "\(statuses)")
        // Only the actions that got past the pace ever held a key, and none is held now.
        let held = app.services.actionKeys.held
        #expect(held.keys == 0 && held.places <= statuses[422, default: 0], "\(held), \(statuses)")
    }
}
