import Foundation
import LiveListHTTP
import Testing

/// `PATCH /lists/NAME` in process: keyed operations, answered like a PUT.
@Suite struct PatchRouteTests {
    static let json = [("Content-Type", "application/json")]

    func patch(_ client: RouteClient, _ list: String, _ body: String, headers: [(String, String)] = []) async throws -> RouteResponse {
        try await client.send(.PATCH, "/lists/\(list)", headers: Self.json + headers, body: Array(body.utf8))
    }

    func object(_ response: RouteResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func aPatchIsAnsweredLikeAPutWithItsSkippedCount() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/p", json: RouteTests.list(["a", "b"]))
        let response = try await patch(client, "p", #"""
            {"ops": [{"op": "update", "cell": {"id": "a", "text": "A"}},
                     {"op": "upsert", "cell": {"id": "c", "text": "C"}, "section": "s", "position": {"after": "a"}},
                     {"op": "remove", "cell": "gone"},
                     {"op": "update", "cell": {"id": "gone", "text": "x"}}]}
            """#)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("ETag") == "\"2\"")
        let answer = try object(response)
        #expect(answer["skipped"] as? Int == 2)
        #expect(answer["from"] as? Int == 1 && answer["version"] as? Int == 2)
        let ops = try #require(answer["ops"] as? [[String: Any]])
        #expect(ops.map { $0["op"] as? String } == ["reload", "insert"], "\(response.text)")
        #expect(ops[1]["after"] as? String == "a")
        // The snapshot's state is the PUT body's format, and a PUT of it changes nothing.
        let snapshot = try await client.get("/lists/p", headers: [("Accept", "application/json")])
        let state = try #require(try object(snapshot)["state"] as? [String: Any])
        let body = try JSONSerialization.data(withJSONObject: state)
        #expect(String(decoding: body, as: UTF8.self).contains(#""text":"C""#))
        let again = try await client.put("/lists/p", headers: Self.json, body: Array(body))
        #expect(again.status == 200 && again.header("ETag") == "\"2\"", "\(again.text)")
    }

    @Test func aPatchThatChangesNothingMakesNoVersion() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/same", json: RouteTests.list(["a"]))
        let response = try await patch(client, "same", #"{"ops": [{"op": "update", "cell": {"id": "a", "text": "a"}}, {"op": "remove", "cell": "x"}]}"#)
        #expect(response.status == 200 && response.header("ETag") == "\"1\"", "\(response.text)")
        #expect((try object(response)["ops"] as? [Any])?.isEmpty == true)
    }

    @Test func refusalsNameTheirReason() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/r", json: RouteTests.list(["a"]))
        RouteTests.expectError(try await patch(client, "missing", #"{"ops": []}"#), 404, "not_found")
        let merge = try await client.send(.PATCH, "/lists/r", headers: [("Content-Type", "application/merge-patch+json")], body: Array("{}".utf8))
        RouteTests.expectError(merge, 415, "unsupported_media_type")
        #expect(merge.text.contains("application/json") && merge.text.contains("Merge Patch"), "\(merge.text)")
        RouteTests.expectError(try await patch(client, "r", "{"), 400, "malformed_json")
        let bad = try await patch(client, "r", #"{"ops": [{"op": "update", "cell": {"id": "a", "text": "b"}}, {"op": "upsert", "cell": {"id": "z", "text": "z"}}]}"#)
        RouteTests.expectError(bad, 422, "missing_section")
        #expect(bad.text.contains("ops[1].section"), "\(bad.text)")
        let anchor = try await patch(client, "r", #"{"ops": [{"op": "upsert", "cell": {"id": "z", "text": "z"}, "section": "s", "position": {"after": "nope"}}]}"#)
        RouteTests.expectError(anchor, 422, "unknown_anchor")
        let unknown = try await patch(client, "r", #"{"ops": [{"op": "replace", "cell": "a"}]}"#)
        RouteTests.expectError(unknown, 422, "unknown_operation")
        #expect(unknown.text.contains("ops[0].op"), "\(unknown.text)")
        let field = try await patch(client, "r", #"{"ops": [{"op": "remove", "cell": "a", "section": "s"}]}"#)
        RouteTests.expectError(field, 422, "unknown_field")
        // All or nothing: the first operation of a refused patch changed nothing.
        let snapshot = try await client.get("/lists/r", headers: [("Accept", "application/json")])
        #expect(try object(snapshot)["version"] as? Int == 1 && !snapshot.text.contains(">b<"), "\(snapshot.text)")
        RouteTests.expectError(try await patch(client, "r", #"{"ops": []}"#, headers: [("If-Match", "\"7\"")]), 412, "version_mismatch")
    }

    @Test func anIdempotentPatchIsMadeOnce() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/i", json: RouteTests.list(["a"]))
        let body = #"{"ops": [{"op": "upsert", "cell": {"id": "n", "text": "n"}, "section": "s"}]}"#
        let first = try await patch(client, "i", body, headers: [("Idempotency-Key", "k1")])
        let second = try await patch(client, "i", body, headers: [("Idempotency-Key", "k1")])
        #expect(first.status == 200 && second.status == 200)
        #expect(first.header("ETag") == "\"2\"" && second.header("ETag") == "\"2\"")
        #expect(second.header("Idempotent-Replayed") == "true")
        let other = try await patch(client, "i", #"{"ops": []}"#, headers: [("Idempotency-Key", "k1")])
        RouteTests.expectError(other, 422, "idempotency_key_reused")
    }
}
