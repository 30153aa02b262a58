import Foundation
import LiveListTestSupport
import Synchronization
import Testing
@testable import LiveListHTTP
@testable import LiveListServer

/// Access to lists (docs/PROTOCOL.md, "Access"): one rule per list decides every way in, a signed-in
/// viewer refused gets exactly a missing list's answer, nobody signed in gets 401 or the sign-in route.
@Suite struct AccessTests {
    enum AddAction: String, ListActions { case add }

    /// The rules the property test draws from.
    enum RuleKind: CaseIterable {
        case everyone, signedIn, viewOnlyForU0, allForU1, nothing, actOnlyForU2, throwing

        var rule: AccessRule {
            switch self {
            case .everyone: { _ in .all }
            case .signedIn: { identity in identity == nil ? .none : .all }
            case .viewOnlyForU0: { identity in identity?.id == "u0" ? .view : .none }
            case .allForU1: { identity in identity?.id == "u1" ? .all : .none }
            case .nothing: { _ in .none }
            case .actOnlyForU2: { identity in identity?.id == "u2" ? .act : .none }
            case .throwing: { _ in throw CancellationError() }
            }
        }
    }

    /// What the documented rule says (docs/PROTOCOL.md, "Access"), restated without the server's code.
    enum Expected: Equatable {
        case allowed(Access)
        case signIn
        case denied
    }

    static func expected(authenticates: Bool, rule: RuleKind?, user claimed: String?) -> Expected {
        // Without an authenticate, nobody is ever signed in, whatever the request claims.
        let user = authenticates ? claimed : nil
        var granted: Access
        if let rule {
            switch rule {
            case .everyone: granted = .all
            case .signedIn: granted = user == nil ? .none : .all
            case .viewOnlyForU0: granted = user == "u0" ? .view : .none
            case .allForU1: granted = user == "u1" ? .all : .none
            case .nothing, .throwing: granted = .none
            case .actOnlyForU2: granted = .none  // acting without viewing grants nothing
            }
        } else {
            granted = authenticates ? .none : .all
        }
        if granted.contains(.view) { return .allowed(granted) }
        if user == nil, authenticates || rule != nil { return .signIn }
        return .denied
    }

    /// Whether two answers have the same body; for a multiplexed stream, but for its token (random,
    /// in its opening): the rest is the same byte for byte when they say the same.
    static func sameBody(_ one: RouteResponse, _ other: RouteResponse) -> Bool {
        func untokened(_ response: RouteResponse) -> String {
            response.text.replacing(/"stream":"[0-9a-f]{32}"/, with: #""stream":"TOKEN""#)
        }
        return one.body == other.body || (one.isStream && other.isStream && untokened(one) == untokened(other))
    }

    /// One way into a list: a route of the router, with the request's variations.
    struct WayIn: CustomStringConvertible {
        var method: HTTPMethod
        var target: String
        var headers: [(String, String)]
        var body: [UInt8] = []
        var isPage = false
        var isAction = false
        var isStream = false

        var description: String { "\(method) \(target) \(headers.map { "\($0.0): \($0.1)" })" }
    }

    /// Every way into the list `name`, from the router's own routes (so that a route added later is
    /// covered): each `:name` route with `GET`, `HEAD`, JSON, gzip, HTML navigation and a conditional
    /// request; the actions route with a valid CSRF token; the multiplexed stream naming the list.
    static func waysIn(_ router: Router, name: String, cookie: String, token: String) -> [WayIn] {
        var ways: [WayIn] = []
        let session = [("Cookie", cookie)]
        for (method, pattern) in router.patterns {
            if pattern == "/events", method == .GET {
                ways.append(WayIn(method: .GET, target: "/events?list=\(name)", headers: session, isStream: true))
                continue
            }
            guard pattern.contains(":name") else { continue }
            var target = pattern.replacingOccurrences(of: ":name", with: name)
            if pattern.hasSuffix("/changes") { target += "?since=0" }
            switch method {
            case .GET:
                let isPage = pattern == "/lists/:name"
                let isStream = pattern.hasSuffix("/events")
                for headers in [[], [("Accept", "application/json")], [("Accept-Encoding", "gzip")], [("Accept", "text/html"), ("Accept-Encoding", "gzip")],
                                [("If-None-Match", "\"v1\""), ("Accept", "application/json")]] as [[(String, String)]]
                {
                    ways.append(WayIn(method: .GET, target: target, headers: session + headers, isPage: isPage, isStream: isStream))
                    if !isStream {
                        ways.append(WayIn(method: .HEAD, target: target, headers: session + headers, isPage: isPage))
                    }
                }
            case .POST where pattern.hasSuffix("/actions"):
                ways.append(WayIn(method: .POST, target: target, headers: session + [("Content-Type", "application/json"), ("X-CSRF-Token", token)],
                                  body: Array(#"{"type":"noop"}"#.utf8), isAction: true))
            default:
                // PUT and DELETE are the operator's routes: the write token decides them (docs/PROTOCOL.md).
                continue
            }
        }
        return ways
    }

    /// A client of a new app whose data directory holds `secret`: two apps with one secret accept
    /// each other's session cookies and CSRF tokens.
    static func client(secret: [UInt8], _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws -> RouteClient {
        let directory = NSTemporaryDirectory() + "livelist-access-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(secret).write(to: URL(fileURLWithPath: directory + "/secret"))
        try Data("LiveList data directory, format 1\n".utf8).write(to: URL(fileURLWithPath: directory + "/livelist-data"))
        return try await RouteClient { configuration in
            configuration.dataDirectory = directory
            configuration.actionPace = nil
            configure(&configuration)
        }
    }

    @Test func everyWayInAgreesWithTheRule() async throws {
        let seed = UInt64.random(in: 0 ... UInt64.max)
        print("AccessTests.everyWayInAgreesWithTheRule seed \(seed)")
        var random = SplitMix64(seed: seed)
        let secret = (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255, using: &random) }
        let names = ["a0", "a1", "j0", "ghost"]
        let users: [String?] = [nil, "u0", "u1", "u2"]
        // The reference: an app with no lists and no rules, where every name is a missing list.
        let missing = try await Self.client(secret: secret)
        for round in 0 ..< 6 {
            let authenticates = Bool.random(using: &random)
            let signInPath: String? = Bool.random(using: &random) ? "/login" : nil
            var rules: [String: RuleKind] = [:]
            for name in names where Int.random(in: 0 ..< 4, using: &random) > 0 {
                rules[name] = RuleKind.allCases.randomElement(using: &random)!
            }
            let server = try await Self.client(secret: secret)
            let app = server.app
            _ = try await app.host("a0", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
            _ = try await app.host("a1", state: ["y"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
            #expect(try await server.put("j0", ["z"]).status == 201)
            if authenticates {
                app.authenticate { head in head.headers["X-Test-User"].map { Identity(id: $0) } }
            }
            if let signInPath { try app.signIn(at: signInPath) }
            for (name, kind) in rules { try await app.access(name, kind.rule) }
            let (id, cookieValue) = app.services.keys.mintSession()
            let cookie = SessionKeys.cookieName + "=" + cookieValue
            let token = app.services.keys.csrfToken(for: id)
            let context = "seed \(seed) round \(round): authenticates \(authenticates), sign-in \(signInPath ?? "none"), rules \(rules)"
            for name in names {
                for user in users {
                    let expected = Self.expected(authenticates: authenticates, rule: rules[name], user: user)
                    for var way in Self.waysIn(app.router, name: name, cookie: cookie, token: token) {
                        if let user { way.headers.append(("X-Test-User", user)) }
                        let answer = try await server.send(way.method, way.target, headers: way.headers, body: way.body)
                        let reference = try await missing.send(way.method, way.target, headers: way.headers, body: way.body)
                        let what = "\(context): \(user ?? "nobody") \(way) on \(name), expected \(expected)"
                        switch expected {
                        case .denied:
                            #expect(answer.status == reference.status && Self.sameBody(answer, reference), "\(what): \(answer.status) \(answer.text)")
                            #expect(answer.headers.fields.map { "\($0.name): \($0.value)" } == reference.headers.fields.map { "\($0.name): \($0.value)" }, "\(what)")
                        case .signIn:
                            if way.isPage, signInPath != nil, way.headers.contains(where: { $0 == ("Accept", "text/html") }) {
                                #expect(answer.status == 303 && answer.header("Location") == "/login?next=/lists/\(name)", "\(what): \(answer.status)")
                            } else {
                                #expect(answer.status == 401, "\(what): \(answer.status) \(answer.text)")
                                let html = way.headers.contains { $0 == ("Accept", "text/html") }
                                #expect(way.method == .HEAD || (html ? answer.text.contains("sign_in_required") : answer.errorCode == "sign_in_required"), "\(what): \(answer.text)")
                            }
                        case let .allowed(access):
                            if name == "ghost" {
                                // Allowed, and no such list: the missing list's own answer.
                                #expect(answer.status == reference.status && Self.sameBody(answer, reference), "\(what): \(answer.status)")
                            } else if way.isAction && !access.contains(.act) {
                                #expect(answer.status == 403 && answer.errorCode == "act_not_allowed", "\(what): \(answer.status) \(answer.text)")
                            } else {
                                #expect(![401, 403, 404].contains(answer.status), "\(what): \(answer.status) \(answer.text)")
                                if way.isPage, way.method == .GET {
                                    // Asked again (the page cached on the event loop, when nothing guards it): the same bytes.
                                    let again = try await server.send(way.method, way.target, headers: way.headers, body: way.body)
                                    #expect(again.status == answer.status && again.body == answer.body, "\(what): asked twice")
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    @Test func theIndexListsOnlyWhatTheViewerMayView() async throws {
        let server = try await RouteClient()
        let app = server.app
        _ = try await app.host("open", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        _ = try await app.host("mine", state: ["y"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        app.authenticate { head in head.headers["X-Test-User"].map { Identity(id: $0) } }
        try await app.access("open") { _ in .view }
        try await app.access("mine") { identity in identity?.id == "me" ? .all : .none }
        let anonymous = try await server.get("/").text
        #expect(anonymous.contains("/lists/open") && !anonymous.contains("/lists/mine"))
        let other = try await server.get("/", headers: [("X-Test-User", "other")]).text
        #expect(other.contains("/lists/open") && !other.contains("/lists/mine"))
        let me = try await server.get("/", headers: [("X-Test-User", "me")]).text
        #expect(me.contains("/lists/open") && me.contains("/lists/mine"))
    }

    @Test func anActionKnowsWhoSentIt() async throws {
        let server = try await RouteClient()
        let app = server.app
        let list = try await app.host("board", state: [String]()) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        await list.onAction(AddAction.self, changing: [String].self) { action, items in
            items.append(action.identity?.name ?? "nobody")
        }
        app.authenticate { head in head.headers["X-Test-User"].map { Identity(id: $0, name: "Name of \($0)") } }
        try await app.access("board") { identity in identity == nil ? .none : .all }
        let (id, cookieValue) = app.services.keys.mintSession()
        let answer = try await server.post("/lists/board/actions", headers: [
            ("Cookie", SessionKeys.cookieName + "=" + cookieValue), ("X-CSRF-Token", app.services.keys.csrfToken(for: id)),
            ("Content-Type", "application/json"), ("X-Test-User", "ann"),
        ], body: Array(#"{"type":"add"}"#.utf8))
        #expect(answer.status == 204, "\(answer.text)")
        let snapshot = try await server.get("/lists/board", headers: [("Accept", "application/json"), ("X-Test-User", "ann")])
        #expect(snapshot.text.contains("Name of ann"))
    }

    @Test func theReadTokenGuardsEveryReadOfAJSONList() async throws {
        let server = try await RouteClient { $0.readToken = "s3cret" }
        let app = server.app
        _ = try await app.host("own", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        #expect(try await server.put("feed", ["a"]).status == 201)
        let bearer = [("Authorization", "Bearer s3cret")]
        for target in ["/lists/feed", "/lists/feed/changes?since=0", "/lists/feed/events", "/events?list=feed", "/lists/nothing", "/lists/nothing/events"] {
            let refused = try await server.get(target)
            #expect(refused.status == 401 && refused.errorCode == "sign_in_required", "\(target): \(refused.status)")
            #expect(refused.header("WWW-Authenticate") == "Bearer realm=\"livelist\"", "\(target)")
            let wrong = try await server.get(target, headers: [("Authorization", "Bearer nope")])
            #expect(wrong.status == 401, "\(target) with a wrong token: \(wrong.status)")
            let allowed = try await server.get(target, headers: bearer)
            #expect(allowed.status == (target.contains("nothing") ? 404 : 200), "\(target) with the token: \(allowed.status)")
        }
        // A list without a rule needs the token too, whatever kind it is; one with a rule follows it alone.
        #expect(try await server.get("/lists/own").status == 401)
        try await app.access("own") { _ in .view }
        #expect(try await server.get("/lists/own").status == 200)
        // A browser navigation goes to the token sign-in page, which sets a cookie bound to the token.
        let navigation = try await server.get("/lists/feed", headers: [("Accept", "text/html")])
        #expect(navigation.status == 303 && navigation.header("Location") == "/signin?next=/lists/feed")
        let form = try await server.get("/signin?next=/lists/feed")
        let cookie = try #require(form.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(form.text.firstMatch(of: /name="csrf" value="([0-9a-f]+)"/)?.1)
        #expect(form.text.contains(#"name="next" value="/lists/feed""#))
        let formHeaders = [("Cookie", cookie), ("Content-Type", "application/x-www-form-urlencoded")]
        let failed = try await server.post("/signin", headers: formHeaders, body: Array("csrf=\(csrf)&next=%2Flists%2Ffeed&token=nope".utf8))
        #expect(failed.status == 401)
        let signedIn = try await server.post("/signin", headers: formHeaders, body: Array("csrf=\(csrf)&next=%2Flists%2Ffeed&token=s3cret".utf8))
        #expect(signedIn.status == 303 && signedIn.header("Location") == "/lists/feed")
        let reader = try #require(signedIn.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        #expect(reader.hasPrefix("livelist_reader="))
        #expect(try await server.get("/lists/feed/events", headers: [("Cookie", reader)]).status == 200)
        // Another token makes the cookie worthless.
        let other = try await Self.client(secret: server.app.services.keys.secret) { $0.readToken = "other" }
        #expect(try await other.get("/lists/feed/events", headers: [("Cookie", reader)]).status == 401)
        // A next that leaves the origin is not followed.
        let away = try await server.post("/signin", headers: formHeaders, body: Array("csrf=\(csrf)&next=%2F%2Fevil.example&token=s3cret".utf8))
        #expect(away.header("Location") == "/")
    }

    @Test func appRoutesGetParametersCookiesRedirectsAndCSRF() async throws {
        let server = try await RouteClient { $0.isSecure = true }
        let app = server.app
        try app.route(.GET, "/hello/:who") { request in
            var response = HTTPResponse.page("<p>hello \(escapeHTML(request.parameter("who") ?? ""))</p>\(request.csrfField)")
            response.setCookie(Cookie("greeted", "yes; evil=1"))
            return response
        }
        try app.route(.POST, "/form") { request in .redirect(to: request.nextPath(or: "/done")) }
        try app.route(.POST, "/hook", csrf: false) { request in try .json(encoding: ["got": String(decoding: request.http.body, as: UTF8.self)]) }
        try app.route(.GET, "/fails") { _ in throw CancellationError() }
        #expect(throws: StartupError.self) { try app.route(.GET, "/lists/mine") { _ in .page("") } }
        #expect(throws: StartupError.self) { try app.route(.GET, "/events") { _ in .page("") } }

        let page = try await server.get("/hello/%3Cb%3E")
        #expect(page.status == 200 && page.text.contains("hello &lt;b&gt;"))
        let cookies = page.headers.values("Set-Cookie")
        #expect(cookies.contains { $0.hasPrefix("greeted=yes%3B%20evil=1; Path=/; HttpOnly; Secure; SameSite=Lax") || $0.hasPrefix("greeted=yes%3B%20evil=1; Path=/; HttpOnly; SameSite=Lax; Secure") },
                "\(cookies)")
        // Served with Secure cookies, the session cookie has the __Host- prefix (this host, HTTPS, the whole site).
        let session = try #require(cookies.first { $0.hasPrefix("__Host-" + SessionKeys.cookieName + "=") }?.split(separator: ";").first.map(String.init))
        #expect(cookies.first { $0.hasPrefix("__Host-") }?.contains("; Path=/") == true && cookies.first { $0.hasPrefix("__Host-") }?.contains("Secure") == true)
        let token = try #require(page.text.firstMatch(of: /name="csrf" value="([0-9a-f]+)"/)?.1)
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        #expect(try await server.post("/form", headers: form, body: Array("csrf=x".utf8)).status == 403, "no session")
        #expect(try await server.post("/form", headers: form + [("Cookie", session)], body: Array("csrf=forged".utf8)).status == 403)
        let posted = try await server.post("/form", headers: form + [("Cookie", session)], body: Array("csrf=\(token)&next=%2Fthere".utf8))
        #expect(posted.status == 303 && posted.header("Location") == "/there")
        let offsite = try await server.post("/form", headers: form + [("Cookie", session)], body: Array("csrf=\(token)&next=https%3A%2F%2Fevil".utf8))
        #expect(offsite.header("Location") == "/done")
        let hook = try await server.post("/hook", headers: [("Content-Type", "text/plain")], body: Array("ping".utf8))
        #expect(hook.status == 200 && hook.text == #"{"got":"ping"}"#)
        let failed = try await server.get("/fails")
        #expect(failed.status == 500 && failed.errorCode == "route_failed")
        #expect(try await server.head("/hello/x").status == 200)
    }

    @Test func signInAttemptsArePaced() async throws {
        let server = try await RouteClient { $0.actionPace = ActionPace(rate: 1, burst: 2) }
        try server.app.route(.POST, "/login", csrf: false, paced: true) { _ in .page("no", status: .unauthorized) }
        var statuses: [Int] = []
        for _ in 0 ..< 4 {
            statuses.append(try await server.post("/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("user=a".utf8)).status)
        }
        #expect(statuses == [401, 401, 429, 429])
    }

    /// Over sockets: a revocation ends a stream at once (well within 1 s), with a `denied` event for
    /// each list refused; a multiplexed stream is told only of the list revoked.
    @Test func aRevocationEndsTheStreamsItRefuses() async throws {
        let server = try await RouteClient { $0.port = 0 }
        let app = server.app
        _ = try await app.host("team", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        _ = try await app.host("lobby", state: ["y"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        let allowed = Mutex<Set<String>>(["ann"])
        app.authenticate { head in head.headers["X-Test-User"].map { Identity(id: $0) } }
        try await app.access("team") { identity in allowed.withLock { $0.contains(identity?.id ?? "") } ? .all : .none }
        try await app.access("lobby") { _ in .view }
        let port = Mutex(0)
        let running = Task { try await app.run { serving in port.withLock { $0 = serving } } }
        defer { running.cancel() }
        while port.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        let serving = port.withLock { $0 }
        let single = try #require(RawHTTPConnection(port: serving))
        let multiplexed = try #require(RawHTTPConnection(port: serving))
        #expect(single.send("GET /lists/team/events HTTP/1.1\r\nHost: localhost\r\nX-Test-User: ann\r\n\r\n"))
        #expect(multiplexed.send("GET /events?list=team&list=lobby&since=team:0,lobby:0 HTTP/1.1\r\nHost: localhost\r\nX-Test-User: ann\r\n\r\n"))
        let (singleHead, multiplexedHead) = try await onThread { (single.readResponse(head: true), multiplexed.readResponse(head: true)) }
        #expect(singleHead?.status == 200 && multiplexedHead?.status == 200)
        #expect(try await onThread { multiplexed.readStream { $0.contains("\"list\":\"lobby\"") } } != nil)
        allowed.withLock { $0.removeAll() }
        let start = ContinuousClock.now
        await app.revoke(identity: "ann")
        let (ended, closedAt) = try await onThread { () -> (String, ContinuousClock.Instant) in
            let (text, _) = single.readStreamToEnd()
            return (text, ContinuousClock.now)
        }
        #expect(ended.contains("event: denied\ndata: {\"list\":\"team\"}"), "\(ended)")
        #expect(closedAt - start < .seconds(1), "closed after \(closedAt - start)")
        let rest = try await onThread { multiplexed.readStreamToEnd().text }
        #expect(rest.contains("event: denied\ndata: {\"list\":\"team\"}") && !rest.contains("{\"list\":\"lobby\"}\n"), "\(rest)")
        #expect(app.services.openStreams.count == 0)
        // Reconnecting is refused as a missing list would be.
        #expect(try RawHTTP.get("/lists/team/events", port: serving, headers: [("X-Test-User", "ann")]).status == 404)
        await app.stop()
    }

    /// Runs blocking socket reads on a thread of their own, off the cooperative pool.
    func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
