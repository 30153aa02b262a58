import Foundation
import LiveListHTML
import LiveListHTTP
import LiveListServer
import Testing

/// The HTTP contract of the routes (docs/PROTOCOL.md and the README), in process through `RouteClient`:
/// exact statuses, error codes and headers. Event streams are covered here up to their head; their
/// events over real sockets in EndToEndTests.
@Suite struct RouteTests {
    /// A PUT body of one section `s` holding `cells` (id and text alike).
    static func list(_ cells: [String]) -> String {
        #"{"sections":[{"id":"s","cells":["# + cells.map { #"{"id":"\#($0)","text":"\#($0)"}"# }.joined(separator: ",") + "]}]}"
    }

    /// The changeset of a response body: its `from`, `version` and operation names.
    static func changeset(_ response: RouteResponse) throws -> (from: Int, version: Int, ops: [String]) {
        let json = try #require(response.json, "a JSON changeset: \(response.text)")
        #expect(json["protocol"] as? Int == 1)
        let operations = try #require(json["ops"] as? [[String: Any]], "\(response.text)")
        return (try #require(json["from"] as? Int), try #require(json["version"] as? Int), operations.compactMap { $0["op"] as? String })
    }

    /// Expects an error answer: the status, a JSON body with this code and a detail.
    static func expectError(_ response: RouteResponse, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.errorCode == code, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/json", sourceLocation: sourceLocation)
        #expect((response.json?["detail"] as? String)?.isEmpty == false, "\(response.text)", sourceLocation: sourceLocation)
    }

    // MARK: - Reads

    @Test func theListPageIs200AndAnUnknownListIs404() async throws {
        let client = try await RouteClient()
        #expect(try await client.put("/lists/g", json: Self.list(["milk"])).status == 201)
        let page = try await client.get("/lists/g")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.text.contains(#"data-list="g""#) && page.text.contains(#"data-version="1""#), "\(page.text.prefix(2000))")
        #expect(page.text.contains(#"data-cell="milk""#))
        #expect(page.header("Set-Cookie")?.hasPrefix("livelist_session=") == true)
        Self.expectError(try await client.get("/lists/nothing"), 404, "not_found")
        Self.expectError(try await client.get("/lists/-not-a-name"), 404, "not_found")
    }

    @Test func theSnapshotIsJSONWithThePutBodyAsState() async throws {
        let client = try await RouteClient()
        let body = Self.list(["milk", "eggs"])
        #expect(try await client.put("/lists/g", json: body).status == 201)
        let snapshot = try await client.get("/lists/g", headers: [("Accept", "application/json")])
        #expect(snapshot.status == 200)
        #expect(snapshot.header("Content-Type") == "application/json")
        #expect(snapshot.header("Vary")?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.contains("Accept") == true)
        let json = try #require(snapshot.json)
        #expect(json["protocol"] as? Int == 1 && json["list"] as? String == "g" && json["version"] as? Int == 1)
        let sections = try #require(json["sections"] as? [[String: Any]])
        #expect(sections.map { $0["key"] as? String } == ["s"])
        let cells = try #require(sections.first?["cells"] as? [[String: Any]])
        #expect(cells.map { $0["key"] as? String } == ["milk", "eggs"])
        let state = try #require(json["state"])
        let sent = try JSONSerialization.jsonObject(with: Data(body.utf8))
        #expect(NSDictionary(dictionary: try #require(state as? [String: Any])).isEqual(to: try #require(sent as? [String: Any])))
        Self.expectError(try await client.get("/lists/nothing", headers: [("Accept", "application/json")]), 404, "not_found")
    }

    @Test func changesSinceTheCurrentVersionAreEmpty() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        _ = try await client.put("/lists/g", json: Self.list(["a", "b"]))
        let current = try await client.get("/lists/g/changes?since=2")
        #expect(current.status == 200 && current.header("Content-Type") == "application/json")
        #expect(current.header("Cache-Control") == "no-store")
        let changes = try Self.changeset(current)
        #expect(changes.from == 2 && changes.version == 2 && changes.ops.isEmpty)
    }

    @Test func changesSinceAVersionInTheLogAreOneDiff() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        _ = try await client.put("/lists/g", json: Self.list(["a", "b"]))
        _ = try await client.put("/lists/g", json: Self.list(["b", "c"]))
        let changes = try Self.changeset(try await client.get("/lists/g/changes?since=1"))
        #expect(changes.from == 1 && changes.version == 3)
        #expect(changes.ops.sorted() == ["delete", "insert", "insert"], "a compacted diff: a goes, b and c come")
    }

    @Test func changesSinceAVersionTooOldForTheLogAreAReset() async throws {
        let client = try await RouteClient { $0.lists.logCount = 2 }
        for cells in [["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"], ["d"]] {
            _ = try await client.put("/lists/g", json: Self.list(cells))
        }
        let changes = try Self.changeset(try await client.get("/lists/g/changes?since=1"))
        #expect(changes.version == 5 && changes.ops == ["reset"])
    }

    @Test func changesSinceAFutureVersionAreAReset() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        let changes = try Self.changeset(try await client.get("/lists/g/changes?since=99"))
        #expect(changes.version == 1 && changes.ops == ["reset"])
    }

    @Test func changesNeedAVersionAndAList() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        Self.expectError(try await client.get("/lists/g/changes"), 400, "malformed_since")
        Self.expectError(try await client.get("/lists/g/changes?since=x"), 400, "malformed_since")
        Self.expectError(try await client.get("/lists/g/changes?since=-1"), 400, "malformed_since")
        Self.expectError(try await client.get("/lists/nothing/changes?since=0"), 404, "not_found")
    }

    /// The event stream's head, as far as an in-process client can see (see `RouteClient`).
    @Test func eventsAnswerAStreamHeadOrAnError() async throws {
        let client = try await RouteClient { $0.retryMilliseconds = 1_500 }
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        let stream = try await client.get("/lists/g/events")
        #expect(stream.status == 200 && stream.isStream)
        #expect(stream.header("Content-Type") == "text/event-stream")
        #expect(stream.header("Cache-Control") == "no-cache")
        #expect(stream.text == "event: stream\nid: 1\nretry: 1500\ndata: {\"protocol\":1,\"list\":\"g\",\"version\":1}\n\n")
        Self.expectError(try await client.get("/lists/g/events?since=x"), 400, "malformed_since")
        Self.expectError(try await client.get("/lists/nothing/events"), 404, "not_found")
        #expect(try await client.get("/events?list=g&list=h").isStream)
        Self.expectError(try await client.get("/events"), 400, "missing_list")
    }

    /// The route that changes an open stream's lists answers alike for a token no stream has and for
    /// one it cannot tell from it, and refuses before reading a body of another type or past its limit
    /// (joining and leaving over a real stream: EndToEndTests' StreamTests).
    @Test func changesToAStreamNeedItsTokenJSONAndASmallBody() async throws {
        let client = try await RouteClient()
        let json = [("Content-Type", "application/json")]
        Self.expectError(try await client.post("/events/0123456789abcdef0123456789abcdef", headers: json, body: Array(#"{"add":["g"]}"#.utf8)),
                         404, "unknown_stream")
        Self.expectError(try await client.post("/events/x", headers: json, body: Array("{}".utf8)), 404, "unknown_stream")
        let plain = try await client.post("/events/x", headers: [("Content-Type", "text/plain")], body: Array("{}".utf8))
        Self.expectError(plain, 415, "unsupported_media_type")
        #expect(plain.refusedBeforeBody)
        let large = try await client.post("/events/x", headers: json, body: [UInt8](repeating: 0x20, count: 40 << 10))
        #expect(large.status == 413 && large.refusedBeforeBody)
    }

    // MARK: - PUT

    @Test func aPutCreatesWith201ThenReplacesWith200() async throws {
        let client = try await RouteClient()
        let created = try await client.put("/lists/g", json: Self.list(["a"]))
        #expect(created.status == 201)
        #expect(created.header("Location") == "/lists/g")
        #expect(created.header("ETag") == "\"1\"")
        let first = try Self.changeset(created)
        #expect(first.from == 0 && first.version == 1 && first.ops == ["insertSection", "insert"])
        let replaced = try await client.put("/lists/g", json: Self.list(["b", "a"]))
        #expect(replaced.status == 200)
        #expect(replaced.header("Location") == nil)
        #expect(replaced.header("ETag") == "\"2\"")
        let second = try Self.changeset(replaced)
        #expect(second.from == 1 && second.version == 2 && second.ops == ["insert"])
        let same = try await client.put("/lists/g", json: Self.list(["b", "a"]))
        #expect(same.status == 200 && same.header("ETag") == "\"2\"", "an identical PUT takes no version")
        #expect(try Self.changeset(same).ops.isEmpty)
    }

    @Test func ifMatchNamesTheCurrentVersion() async throws {
        let client = try await RouteClient()
        Self.expectError(try await client.put("/lists/g", json: Self.list(["a"]), headers: [("If-Match", "\"1\"")]), 412, "version_mismatch")
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        #expect(try await client.put("/lists/g", json: Self.list(["b"]), headers: [("If-Match", "\"1\"")]).status == 200)
        let stale = try await client.put("/lists/g", json: Self.list(["c"]), headers: [("If-Match", "\"1\"")])
        Self.expectError(stale, 412, "version_mismatch")
        Self.expectError(try await client.put("/lists/g", json: Self.list(["c"]), headers: [("If-Match", "five")]), 400, "malformed_if_match")
        let snapshot = try #require(try await client.get("/lists/g", headers: [("Accept", "application/json")]).json)
        #expect(snapshot["version"] as? Int == 2, "no refused PUT wrote")
    }

    @Test func ifMatchStarNeedsTheListAndIfNoneMatchStarItsAbsence() async throws {
        let client = try await RouteClient()
        Self.expectError(try await client.put("/lists/g", json: Self.list(["a"]), headers: [("If-Match", "*")]), 412, "precondition_failed")
        #expect(try await client.put("/lists/g", json: Self.list(["a"]), headers: [("If-None-Match", "*")]).status == 201)
        Self.expectError(try await client.put("/lists/g", json: Self.list(["b"]), headers: [("If-None-Match", "*")]), 412, "precondition_failed")
        #expect(try await client.put("/lists/g", json: Self.list(["b"]), headers: [("If-Match", "*")]).status == 200)
    }

    @Test func aBodyThatIsNotJSONIs400() async throws {
        let client = try await RouteClient()
        let response = try await client.put("/lists/g", json: #"{"sections": [}"#)
        Self.expectError(response, 400, "malformed_json")
        #expect((response.json?["detail"] as? String)?.hasPrefix("at byte ") == true, "\(response.text)")
        Self.expectError(try await client.get("/lists/g"), 404, "not_found")
    }

    @Test func aBodyOfTheWrongShapeIs422WithItsPath() async throws {
        let client = try await RouteClient()
        let cases: [(String, String, String)] = [
            (#"{"sections":[{"id":"a","cells":[{"id":"x","text":null}]}]}"#, "invalid_type", "sections[0].cells[0].text: "),
            (#"{"sections":[{"id":"a"}]}"#, "missing_field", "sections[0].cells: "),
            (#"{"sections":[{"id":"a","cells":[],"colour":"red"}]}"#, "unknown_field", #"sections[0]."colour": "#),
            (#"{"sections":[{"id":"a","cells":[{"id":"x","text":"1"},{"id":"x","text":"2"}]}]}"#, "duplicate_key", "sections[0].cells[1].id: "),
        ]
        for (body, code, path) in cases {
            let response = try await client.put("/lists/g", json: body)
            Self.expectError(response, 422, code)
            #expect((response.json?["detail"] as? String)?.hasPrefix(path) == true, "\(response.text)")
        }
    }

    @Test func aBodyThatIsNotJSONByItsMediaTypeIs415BeforeItIsRead() async throws {
        let client = try await RouteClient()
        for headers in [[("Content-Type", "text/plain")], [("Content-Type", "application/x-www-form-urlencoded")], []] {
            let response = try await client.put("/lists/g", headers: headers, body: Array(Self.list(["a"]).utf8))
            Self.expectError(response, 415, "unsupported_media_type")
            #expect(response.refusedBeforeBody, "\(headers)")
        }
    }

    @Test func aBodyOverTheLimitIs413() async throws {
        let client = try await RouteClient { $0.maximumBodyBytes = 100 }
        let big = #"{"sections":[{"id":"s","cells":[{"id":"x","text":""# + String(repeating: "x", count: 200) + #""}]}]}"#
        Self.expectError(try await client.put("/lists/g", json: big), 413, "body_too_large")
        #expect(try await client.put("/lists/g", json: Self.list(["a"])).status == 201, "a body within the limit is taken")
    }

    @Test func aPutToAnInvalidNameIs404BeforeItsBodyIsRead() async throws {
        let client = try await RouteClient()
        let response = try await client.put("/lists/.hidden", json: Self.list(["a"]))
        Self.expectError(response, 404, "not_found")
        #expect(response.refusedBeforeBody)
    }

    @Test func theLimitOnJSONListsIs422() async throws {
        let client = try await RouteClient { $0.limits.maximumJSONLists = 1 }
        #expect(try await client.put("/lists/a", json: Self.list(["x"])).status == 201)
        Self.expectError(try await client.put("/lists/b", json: Self.list(["x"])), 422, "too_many_lists")
        #expect(try await client.put("/lists/a", json: Self.list(["y"])).status == 200, "an existing list still takes writes")
    }

    @Test func aListOfTheAppTakesNoWrites() async throws {
        let client = try await RouteClient()
        let name = try #require(ListName("app"))
        _ = try await client.app.registry.hostApp(name, sections: [Section(id: "s", cells: [])])
        Self.expectError(try await client.put("/lists/app", json: Self.list(["a"])), 409, "list_owned_by_app")
        Self.expectError(try await client.delete("/lists/app"), 409, "list_owned_by_app")
        #expect(try await client.get("/lists/app").status == 200)
    }

    @Test func writesFromTheNetworkNeedTheToken() async throws {
        let open = try await RouteClient()
        Self.expectError(try await open.put("/lists/g", json: Self.list(["a"]), from: "203.0.113.9"), 403, "writes_need_token")
        Self.expectError(try await open.put("/lists/g", json: Self.list(["a"]), headers: [("X-Forwarded-For", "203.0.113.9")]), 403, "writes_need_token")
        let guarded = try await RouteClient { $0.writeToken = "s3cret" }
        let missing = try await guarded.put("/lists/g", json: Self.list(["a"]))
        Self.expectError(missing, 401, "unauthorized")
        #expect(missing.header("WWW-Authenticate") == "Bearer realm=\"livelist\"")
        #expect(try await guarded.put("/lists/g", json: Self.list(["a"]), headers: [("Authorization", "Bearer s3cret")], from: "203.0.113.9").status == 201)
        Self.expectError(try await guarded.delete("/lists/g"), 401, "unauthorized")
    }

    // MARK: - DELETE

    @Test func aDeleteAnswersTheFinalResetThen404() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        let deleted = try await client.delete("/lists/g")
        #expect(deleted.status == 200 && deleted.header("Content-Type") == "application/json")
        let final = try Self.changeset(deleted)
        #expect(final.from == 1 && final.version == 2 && final.ops == ["reset"])
        Self.expectError(try await client.get("/lists/g"), 404, "not_found")
        Self.expectError(try await client.delete("/lists/g"), 404, "not_found")
        Self.expectError(try await client.delete("/lists/never"), 404, "not_found")
        let again = try await client.put("/lists/g", json: Self.list(["a"]))
        #expect(again.status == 201 && again.header("ETag") == "\"3\"", "versions are never reused after a DELETE")
    }

    // MARK: - Routing

    @Test func anUnknownPathIs404() async throws {
        let client = try await RouteClient()
        for path in ["/nope", "/lists", "/lists/g/nope", "/lists/g/changes/x", "/nope.js"] {
            let response = try await client.get(path)
            #expect(response.status == 404, "\(path): \(response.text)")
            #expect(response.errorCode == "not_found", "\(path): \(response.text)")
        }
    }

    @Test func aMethodARouteDoesNotTakeIs405WithAllow() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        let cases: [(HTTPMethod, String, String)] = [
            (.POST, "/lists/g", "GET, HEAD, PUT, DELETE, PATCH"),
            (.PATCH, "/lists/g/events", "GET, HEAD"),
            (.DELETE, "/lists/g/changes", "GET, HEAD"),
            (.PUT, "/lists/g/events", "GET, HEAD"),
            (.GET, "/lists/g/actions", "POST"),
            (.POST, "/healthz", "GET, HEAD"),
        ]
        for (method, path, allow) in cases {
            let response = try await client.send(method, path)
            Self.expectError(response, 405, "method_not_allowed")
            #expect(response.header("Allow") == allow, "\(method) \(path)")
        }
        let withBody = try await client.post("/lists/g", headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
        Self.expectError(withBody, 405, "method_not_allowed")
        #expect(withBody.refusedBeforeBody, "refused on its head")
    }

    @Test func headAnswersTheHeadersOfGetWithoutTheBody() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        let json = [("Accept", "application/json")]
        let get = try await client.get("/lists/g", headers: json)
        let head = try await client.head("/lists/g", headers: json)
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.header("Content-Type") == get.header("Content-Type"))
        #expect(head.header("Content-Length") == String(get.body.count) && !get.body.isEmpty)
        #expect(try await client.head("/lists/g").header("Content-Type") == "text/html; charset=utf-8")
        #expect(try await client.head("/healthz").status == 200)
        let missing = try await client.head("/lists/nothing")
        #expect(missing.status == 404 && missing.body.isEmpty)
        let stream = try await client.head("/lists/g/events")
        #expect(stream.status == 200 && stream.isStream && stream.body.isEmpty)
    }

    @Test func healthzIsOK() async throws {
        let client = try await RouteClient()
        let response = try await client.get("/healthz")
        #expect(response.status == 200 && response.header("Cache-Control") == "no-store")
    }

    // MARK: - Actions

    @Test func anActionNeedsAListAMediaTypeAndASession() async throws {
        let client = try await RouteClient()
        _ = try await client.put("/lists/g", json: Self.list(["a"]))
        let json = [("Content-Type", "application/json")]
        let body = Array(#"{"type":"x"}"#.utf8)
        let plain = try await client.post("/lists/g/actions", headers: [("Content-Type", "text/plain")], body: body)
        Self.expectError(plain, 415, "unsupported_media_type")
        #expect(plain.refusedBeforeBody)
        Self.expectError(try await client.post("/lists/g/actions", headers: json, body: body), 403, "csrf_failed")
        Self.expectError(try await client.post("/lists/g/actions", headers: json + [("X-CSRF-Token", "forged")], body: body), 403, "csrf_failed")
    }
}
