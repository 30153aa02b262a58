import Foundation
@testable import LiveListHTTP
import LiveListHTML
@testable import LiveListServer
@testable import LiveListEngine
import Synchronization
import LiveListTestSupport
import Testing

@Suite struct RouteHardeningTests {
    /// Content types that have no media type at all once the parameters are cut off.
    static let emptyContentTypes = ["", ";", ";;;", "\t", " ", " ; ", ";charset=utf-8", "=;="]

    @Test(arguments: emptyContentTypes)
    func anEmptyContentTypeOnAnActionIsRefusedNotFatal(_ contentType: String) async throws {
        let server = try await RouteClient()
        try await server.put("todo", ["a"])
        let answer = try await server.send(.POST, "/lists/todo/actions", headers: [("Content-Type", contentType)], body: Array("type=x".utf8))
        #expect(answer.status == 415, "\(answer.text)")
        #expect(answer.text.contains("unsupported_media_type"))
    }

    @Test(arguments: emptyContentTypes)
    func anEmptyContentTypeOnAPutIsRefusedNotFatal(_ contentType: String) async throws {
        let server = try await RouteClient()
        let answer = try await server.send(.PUT, "/lists/g", headers: [("Content-Type", contentType)], body: jsonBody(["a"]))
        #expect(answer.status == 415, "\(answer.text)")
        let missing = try await server.send(.PUT, "/lists/g", body: jsonBody(["a"]))
        #expect(missing.status == 415)
    }

    @Test func parametersAndCaseOfTheMediaTypeDoNotMatter() async throws {
        let server = try await RouteClient()
        let answer = try await server.send(.PUT, "/lists/g", headers: [("Content-Type", " Application/JSON ; charset=utf-8")], body: jsonBody(["a"]))
        #expect(answer.status == 201, "\(answer.text)")
    }

    @Test func oddFormsAndActionsAreAnsweredNotFatal() async throws {
        let server = try await RouteClient()
        try await server.put("todo", ["a"])
        for form in ["", "&", "&&&", "=", "==", "action", "action=", "action=:", "action=%", "action=%3", "action=%zz:x",
                     "%ff%fe=1", "csrf=&action=:::", "action=%3A%3A", String(repeating: "a=b&", count: 1000)] {
            let answer = try await server.send(.POST, "/lists/todo/actions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                               body: Array(form.utf8))
            #expect(answer.status == 403, "\(form): \(answer.text)")
        }
    }

    @Test func oddCookiesAreIgnoredNotFatal() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        for cookie in ["", ";", "=", "==;=", "livelist_session", "livelist_session=", "=livelist_session", ";;livelist_session=;;", "\t"] {
            let answer = try await server.send(.GET, "/lists/g", headers: [("Cookie", cookie)])
            #expect(answer.status == 200, "\(cookie): \(answer.text)")
            #expect(answer.header("Set-Cookie") != nil, "\(cookie): a fresh session")
        }
    }

    /// A malformed q-value makes its range count for nothing: never NaN, never more than 1.
    @Test func qValuesOutsideTheGrammarDoNotWin() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        for accept in ["application/json;q=nan, text/html;q=0.1", "application/json;q=inf, text/html;q=0.9", "application/json;q=2, text/html",
                       "application/json;q=1.5, text/html", "application/json;q=-1, text/html;q=0", "application/json;q=, text/html;q=0.5",
                       "application/json;q=0.5000, text/html;q=0.4", "application/json;q=1e0, text/html;q=0.9", "application/json;q=0x1, text/html;q=0.9"] {
            let answer = try await server.send(.GET, "/lists/g", headers: [("Accept", accept)])
            #expect(answer.header("Content-Type")?.hasPrefix("text/html") == true, "\(accept)")
        }
        for accept in ["application/json;q=1.000, text/html;q=0.999", "application/json, text/html;q=0", "text/html;q=0.5, application/json;Q=0.6"] {
            let answer = try await server.send(.GET, "/lists/g", headers: [("Accept", accept)])
            #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true, "\(accept)")
        }
    }

    @Test func oddVersionsAndIfMatchAreRefusedNotFatal() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        for since in ["", "-1", "+1", "1e3", "99999999999999999999", "%20", "0x1", "１"] {
            let answer = try await server.send(.GET, "/lists/g/changes?since=\(since)")
            #expect(answer.status == 400, "\(since): \(answer.text)")
        }
        for ifMatch in ["\"", "\"\"", "\"5", "5\"", "W/\"1\"", "\"-1\"", "\"99999999999999999999\"", "\" 1\"", ","] {
            let answer = try await server.send(.PUT, "/lists/g", headers: [("Content-Type", "application/json"), ("If-Match", ifMatch)], body: jsonBody(["b"]))
            #expect(answer.status == 400 && answer.text.contains("malformed_if_match"), "\(ifMatch): \(answer.text)")
        }
    }

    // MARK: - The page cache

    /// The CSRF token of the session that the answer's cookie names (or the request's).
    func token(_ server: RouteClient, _ answer: RouteResponse) throws -> String {
        let cookie = try #require(answer.header("Set-Cookie"))
        let value = try #require(cookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last)
        let session = try #require(server.app.services.keys.sessionID(fromCookie: String(value)), "the server minted the cookie")
        return server.app.services.keys.csrfToken(for: session)
    }

    @Test func aCellSayingThePlaceholderNeverShowsTheToken() async throws {
        let server = try await RouteClient()
        let texts = ["livelistcsrfplaceholder0d6f2c1e9b8a7f3e5d4c2b1a0f9e8d7c"] + server.app.services.pageCache.markers
        try #require(try await server.put("g", texts).status == 201)
        for _ in 0 ..< 2 {  // rendered, then from the cache
            let answer = try await server.send(.GET, "/lists/g")
            let token = try token(server, answer)
            #expect(answer.text.components(separatedBy: token).count - 1 == 2, "the token is in the meta tag and the form, nowhere else")
            for text in texts {
                #expect(answer.text.contains(">\(text)<"), "the cell's text is shown as written: \(text)")
            }
        }
    }

    @Test func everyViewerGetsTheirOwnTokenFromTheCachedPage() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        let first = try await server.send(.GET, "/lists/g")
        let second = try await server.send(.GET, "/lists/g")
        let firstToken = try token(server, first), secondToken = try token(server, second)
        #expect(firstToken != secondToken)
        #expect(first.text.replacingOccurrences(of: firstToken, with: "T") == second.text.replacingOccurrences(of: secondToken, with: "T"))
        try await server.put("g", ["a", "b"])
        let third = try await server.send(.GET, "/lists/g")
        #expect(third.text.contains(">b<"), "a new version renders anew")
    }

    @Test func aPerViewerListSayingTheMarkersNeverShowsTheToken() async throws {
        let server = try await RouteClient()
        let markers = server.app.services.pageCache.markers
        _ = try await server.app.registry.hostApp(listName("mine"), perViewer: { viewer in
            [Section(id: "s", cells: [CellNode(Echo(id: "who", text: viewer.session ?? "nobody"))]
                + markers.enumerated().map { CellNode(Echo(id: "m\($0.offset)", text: $0.element)) })]
        })
        for _ in 0 ..< 2 {
            let answer = try await server.send(.GET, "/lists/mine")
            let token = try token(server, answer)
            #expect(answer.text.components(separatedBy: token).count - 1 == 2)
            for marker in markers {
                #expect(answer.text.contains(">\(marker)<"))
            }
        }
    }

    @Test func pagePartsCutAtMarkersAndFillTheirSlots() {
        let markers: [(bytes: [UInt8], slot: PageParts.Slot)] = [(Array("<R>".utf8), .root), (Array("<C>".utf8), .csrf)]
        let parts = PageParts(rendered: Array("a<C>b<R>c<C><R><R>".utf8), markers: markers)
        #expect(parts.slots == [.csrf, .root, .csrf, .root, .root])
        #expect(String(decoding: parts.bytes(root: Array("<C>".utf8), csrf: Array("T".utf8)), as: UTF8.self) == "aTb<C>cT<C><C>")
        let filled = parts.filling(root: Array("<C>".utf8))
        #expect(filled.slots == [.csrf, .csrf])
        #expect(String(decoding: filled.bytes(root: [], csrf: Array("T".utf8)), as: UTF8.self) == "aTb<C>cT<C><C>")
        let plain = PageParts(rendered: Array("<R".utf8), markers: markers)
        #expect(plain.slots.isEmpty && plain.bytes(root: [1], csrf: [2]) == Array("<R".utf8))
        #expect(PageParts(rendered: [], markers: markers).bytes(root: [1], csrf: [2]).isEmpty)
    }

    // MARK: - Authorization

    @Test(arguments: ["Bearer w-token", "bearer w-token", "BEARER w-token", "bEaReR  w-token"])
    func theBearerSchemeIsCaseInsensitive(_ authorization: String) async throws {
        let server = try await RouteClient { $0.writeToken = "w-token" }
        let answer = try await server.send(.PUT, "/lists/g", headers: [("Content-Type", "application/json"), ("Authorization", authorization)],
                                           body: jsonBody(["a"]), from: "203.0.113.9")
        #expect(answer.status == 201, "\(authorization): \(answer.text)")
    }

    @Test(arguments: ["", "Bearer", "Bearer ", "Bearerw-token", "Basic w-token", "Bearer w-tokenx", "Bearer w-toke", "Bearer\tw-token", "w-token"])
    func aWrongAuthorizationIsRefused(_ authorization: String) async throws {
        let server = try await RouteClient { $0.writeToken = "w-token" }
        let answer = try await server.send(.PUT, "/lists/g", headers: [("Content-Type", "application/json"), ("Authorization", authorization)],
                                           body: jsonBody(["a"]), from: "127.0.0.1")
        #expect(answer.status == 401, "\(authorization): \(answer.text)")
        #expect(answer.header("WWW-Authenticate") != nil)
    }

    // MARK: - /metrics

    @Test func metricsWithoutATokenAreForLoopbackClientsOnly() async throws {
        let server = try await RouteClient()
        #expect(try await server.send(.GET, "/metrics").status == 200)
        #expect(try await server.send(.GET, "/metrics", from: "203.0.113.9").status == 403)
        #expect(try await server.send(.GET, "/metrics", from: "").status == 403, "an unknown peer is not loopback")
        for proxy in ["Forwarded", "X-Forwarded-For", "X-Real-IP"] {
            #expect(try await server.send(.GET, "/metrics", headers: [(proxy, "203.0.113.9")]).status == 403, "\(proxy)")
        }
    }

    @Test func theWriteTokenDoesNotOpenMetrics() async throws {
        let server = try await RouteClient { $0.writeToken = "w-token" }
        #expect(try await server.send(.GET, "/metrics", headers: [("Authorization", "Bearer w-token")], from: "203.0.113.9").status == 403)
    }

    @Test func aMetricsTokenIsNeededWhenSet() async throws {
        let server = try await RouteClient {
            $0.metricsToken = "m-token"
            $0.writeToken = "w-token"
        }
        let missing = try await server.send(.GET, "/metrics")
        #expect(missing.status == 401 && missing.header("WWW-Authenticate") != nil, "also from loopback")
        #expect(try await server.send(.GET, "/metrics", headers: [("Authorization", "Bearer w-token")]).status == 401, "the write token is not the metrics token")
        #expect(try await server.send(.GET, "/metrics", headers: [("Authorization", "Bearer m-tokenx")]).status == 401)
        let given = try await server.send(.GET, "/metrics", headers: [("Authorization", "bearer m-token")], from: "203.0.113.9")
        #expect(given.status == 200 && given.text.contains("livelist_lists "))
        #expect(try await server.send(.PUT, "/lists/g", headers: [("Content-Type", "application/json"), ("Authorization", "Bearer m-token")],
                                      body: jsonBody(["a"])).status == 401, "the metrics token does not write")
    }

    // MARK: - Cache-Control

    @Test(arguments: ["/", "/healthz", "/metrics"])
    func dynamicAnswersAreNotStored(_ path: String) async throws {
        let server = try await RouteClient()
        let answer = try await server.send(.GET, path)
        #expect(answer.status == 200)
        #expect(answer.header("Cache-Control") == "no-store", "\(path)")
    }

    // MARK: - Conditional PUT

    func put(_ server: RouteClient, _ list: String, _ headers: [(String, String)]) async throws -> RouteResponse {
        try await server.send(.PUT, "/lists/\(list)", headers: [("Content-Type", "application/json")] + headers, body: jsonBody(["x"]))
    }

    @Test func ifMatchStarWritesOnlyAnExistingList() async throws {
        let server = try await RouteClient()
        let missing = try await put(server, "g", [("If-Match", "*")])
        #expect(missing.status == 412, "\(missing.text)")
        try await server.put("g", ["a"])
        let existing = try await put(server, "g", [("If-Match", "*")])
        #expect(existing.status == 200, "\(existing.text)")
    }

    @Test func ifNoneMatchStarOnlyCreates() async throws {
        let server = try await RouteClient()
        let created = try await put(server, "g", [("If-None-Match", "*")])
        #expect(created.status == 201, "\(created.text)")
        let again = try await put(server, "g", [("If-None-Match", "*")])
        #expect(again.status == 412, "\(again.text)")
    }

    @Test func ifMatchNamesOneVersion() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        #expect(try await put(server, "g", [("If-Match", "\"1\", \"1-gzip\"")]).status == 200, "tags of the same version")
        #expect(try await put(server, "g", [("If-Match", "\"2\""), ("If-Match", "\"2-gzip\"")]).status == 200, "over several lines")
        #expect(try await put(server, "g", [("If-Match", "\"1\"")]).status == 412)
        let several = try await put(server, "g", [("If-Match", "\"3\", \"4\"")])
        #expect(several.status == 400 && several.text.contains("several versions"), "\(several.text)")
    }

    @Test func malformedOrConflictingConditionsAre400() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        for headers in [[("If-Match", "*"), ("If-None-Match", "*")], [("If-None-Match", "\"1\"")], [("If-None-Match", "")],
                        [("If-Match", "\"1\""), ("If-None-Match", "*")], [("If-Match", "W/\"1\"")], [("If-Match", "*, \"1\"")]] {
            let answer = try await put(server, "g", headers)
            #expect(answer.status == 400, "\(headers): \(answer.text)")
        }
    }

    // MARK: - Server paths

    @Test func aStorageFailureDoesNotShowTheServersPaths() async throws {
        let store = FailingStore()
        let logged = Mutex<[String]>([])
        let server = try await RouteClient(store: store) { configuration in
            configuration.errorLog = { line in logged.withLock { $0.append(line) } }
        }
        let put = try await server.put("g", ["a"])
        #expect(put.status == 500)
        #expect(put.text.contains("storage_failed"))
        #expect(!put.text.contains(store.path) && !put.text.contains("/srv"), "\(put.text)")
        #expect(logged.withLock { $0 }.contains { $0.contains(store.path) }, "the operator still learns the cause")
    }

    @Test func noAnswerShowsTheServersDirectories() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        let requests: [(HTTPMethod, String, [(String, String)], [UInt8])] = [
            (.GET, "/", [], []), (.GET, "/lists/g", [], []), (.GET, "/lists/nope", [], []), (.GET, "/lists/g/changes?since=x", [], []),
            (.GET, "/nope.js", [], []), (.GET, "/lists/..%2f", [], []), (.DELETE, "/lists/nope", [], []), (.POST, "/metrics", [], []),
            (.PUT, "/lists/h", [("Content-Type", "application/json")], Array("{".utf8)), (.GET, "/lists/g", [("Accept", "application/json")], []),
        ]
        for (method, target, headers, body) in requests {
            let answer: RouteResponse
            do {
                answer = try await server.send(method, target, headers: headers, body: body)
            } catch let error as HTTPError {
                // Refused by the parser, before any route: its detail must not show the directories either.
                #expect(!error.detail.contains(RouteClient.root), "\(method) \(target): \(error.detail)")
                continue
            }
            #expect(!answer.text.contains(RouteClient.root), "\(method) \(target): \(answer.text)")
            #expect(!answer.text.contains("no-such-data-directory"), "\(method) \(target)")
        }
    }
}

/// The list-specific parsers of request text (actions, entity tags, write preconditions), on the
/// inputs that used to trap or mislead; the generic ones are tested in LiveListHTTPTests.
@Suite struct ListHeaderParsingTests {
    @Test func actions() {
        #expect(HeaderParsing.action("") == ("", nil))
        #expect(HeaderParsing.action(":") == ("", nil))
        #expect(HeaderParsing.action("toggle") == ("toggle", nil))
        #expect(HeaderParsing.action("toggle:c1") == ("toggle", "c1"))
        #expect(HeaderParsing.action("a:b:c") == ("a", "b:c"))
    }

    @Test func writeConditions() {
        func condition(_ ifMatch: String?, _ ifNoneMatch: String?) -> WritePrecondition? {
            try? HeaderParsing.writeCondition(ifMatch: ifMatch, ifNoneMatch: ifNoneMatch).get()
        }
        #expect(condition(nil, nil) == WritePrecondition.none)
        #expect(condition("*", nil) == .exists)
        #expect(condition(" * ", nil) == .exists)
        #expect(condition("\"5\"", nil) == .version(5))
        #expect(condition("\"5\", \"5-gzip\", ", nil) == .version(5))
        #expect(condition(nil, "*") == .absent)
        for (ifMatch, ifNoneMatch) in [("*", "*"), ("\"5\"", "*"), ("\"4\", \"5\"", nil), ("", nil), (",", nil), ("*, \"5\"", nil), ("W/\"5\"", nil),
                                       ("5", nil), (nil, "\"5\""), (nil, ""), (nil, "W/\"5\""), (nil, "*, \"5\"")] as [(String?, String?)] {
            switch HeaderParsing.writeCondition(ifMatch: ifMatch, ifNoneMatch: ifNoneMatch) {
            case let .failure(answer): #expect(answer.status == .badRequest, "\(String(describing: ifMatch)) \(String(describing: ifNoneMatch))")
            case let .success(condition): Issue.record("\(String(describing: ifMatch)) \(String(describing: ifNoneMatch)) was taken as \(condition)")
            }
        }
    }

    @Test func versionsAndEntityTags() {
        #expect(ListVersion.parse("0") == 0)
        #expect(ListVersion.parse("123456789012345678") == 123_456_789_012_345_678)
        for bad in ["", "-1", "+1", " 1", "1 ", "1234567890123456789", "1e3", "١"] {
            #expect(ListVersion.parse(bad) == nil, "\(bad)")
        }
        #expect(HeaderParsing.entityTag("\"5\"") == 5)
        #expect(HeaderParsing.entityTag(" \"5\" ") == 5)
        #expect(HeaderParsing.entityTag("\"5-gzip\"") == 5, "the tag of the version's gzip encoding names the same version")
        for bad in ["", "\"", "\"\"", "\"5", "5\"", "5", "W/\"5\"", "\"-gzip\"", "\"5-gzip-gzip\"", "\"5\", \"6\"", "*"] {
            #expect(HeaderParsing.entityTag(bad) == nil, "\(bad)")
        }
    }
}
