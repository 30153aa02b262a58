import Foundation
@testable import LiveListHTTP
@testable import LiveListServer
@testable import LiveListEngine
import LiveListTestSupport
import Synchronization
import Testing

/// The library's sign-in (hostile input, round three): rotated sessions, checked cookies on sign-out,
/// wrong attempts paced per account across addresses, constant-time password checks, and ended
/// sign-ins that cost O(1) to check and nothing to replay.
@Suite struct SignInTests {
    static let users = ["alice": "secret1", "bob": "secret2"]

    /// An app with the library's sign-in, `/login` and `/logout`, and a list `team` for anyone signed in.
    private func app(_ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) async throws -> RouteClient {
        let server = try await RouteClient(configure)
        let app = server.app
        var settings = SignInSettings()
        settings.failurePace = ActionPace(rate: 0.001, burst: 10)
        app.useSignIn(settings)
        _ = try await app.host("team", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        try await app.access("team") { identity in identity == nil ? .none : .all }
        try app.route(.GET, "/login") { request in .page("<form>\(request.csrfField)</form>") }
        try app.route(.POST, "/login", paced: true) { request in
            let user = request.form["user"] ?? ""
            let answer = try await app.signIn(request, account: user) {
                app.passwordMatches(request.form["password"] ?? "", Self.users[user]) ? Identity(id: user, roles: ["member"]) : nil
            }
            return answer ?? .page("wrong", status: .unauthorized)
        }
        try app.route(.POST, "/logout", paced: true) { request in try await app.signOut(request, redirectTo: "/login") }
        return server
    }

    /// A browser: its cookies by name, kept from every answer.
    final class Browser: @unchecked Sendable {
        var cookies: [String: String] = [:]
        let address: String

        init(address: String = "127.0.0.1") { self.address = address }

        var cookieHeader: [(String, String)] {
            cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; "))]
        }

        func keep(_ answer: RouteResponse) {
            for field in answer.headers.values("Set-Cookie") {
                let pair = field.split(separator: ";")[0]
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if field.contains("Max-Age=0") { cookies.removeValue(forKey: parts[0]) } else { cookies[parts[0]] = parts.count > 1 ? parts[1] : "" }
            }
        }

        func session(_ app: LiveListApp) -> String? { cookies[SessionKeys.cookieName].flatMap(app.services.keys.sessionID(fromCookie:)) }

        @discardableResult
        func get(_ server: RouteClient, _ target: String) async throws -> RouteResponse {
            let answer = try await server.get(target, headers: cookieHeader, from: address)
            keep(answer)
            return answer
        }

        @discardableResult
        func post(_ server: RouteClient, _ target: String, _ fields: String) async throws -> RouteResponse {
            if session(server.app) == nil { try await get(server, server.app.services.gate.hasReadToken ? "/signin" : "/login") }
            let token = server.app.services.keys.csrfToken(for: session(server.app) ?? "")
            let answer = try await server.post(target, headers: cookieHeader + [("Content-Type", "application/x-www-form-urlencoded")],
                                               body: Array("csrf=\(token)&\(fields)".utf8), from: address)
            keep(answer)
            return answer
        }
    }

    @Test func aSignInRotatesTheSessionAndItsCookieNamesTheIdentity() async throws {
        let server = try await app()
        let alice = Browser()
        try await alice.get(server, "/login")
        let planted = try #require(alice.session(server.app))
        let answer = try await alice.post(server, "/login", "user=alice&password=secret1")
        #expect(answer.status == 303)
        let rotated = try #require(alice.session(server.app))
        #expect(rotated != planted, "a session planted before the sign-in is not the session after it")
        #expect(alice.cookies["livelist_signin"] != nil && alice.cookies["livelist_device"] != nil)
        #expect(try await alice.get(server, "/lists/team").status == 200)
        let head = RequestHead(try #require(request(alice.cookieHeader)), trustedProxies: try TrustedProxies([]))
        #expect(server.app.signedInIdentity(head) == Identity(id: "alice", roles: ["member"]))
        // A sign-in cookie altered by a byte is nobody.
        var forged = try #require(alice.cookies["livelist_signin"])
        forged = String(forged.dropLast()) + (forged.hasSuffix("0") ? "1" : "0")
        let forgedHead = RequestHead(try #require(request([("Cookie", "livelist_signin=\(forged)")])), trustedProxies: try TrustedProxies([]))
        #expect(server.app.signedInIdentity(forgedHead) == nil)
    }

    @Test func aSignOutEndsTheSignInAndAReplayCostsNothing() async throws {
        let server = try await app()
        let alice = Browser()
        #expect(try await alice.post(server, "/login", "user=alice&password=secret1").status == 303)
        let cookie = try #require(alice.cookies["livelist_signin"])
        let before = server.app.services.metrics.access.revocations
        #expect(try await alice.post(server, "/logout", "").status == 303)
        let revocations = server.app.services.metrics.access.revocations
        #expect(server.app.services.signIns.ended.count == 1 && revocations > before)
        // The cookie signed out is nobody, from any browser.
        let thief = Browser(address: "127.0.0.2")
        thief.cookies["livelist_signin"] = cookie
        #expect(try await thief.get(server, "/lists/team").status == 401)
        // Replayed sign-outs of the ended cookie record nothing and revoke nothing (within the
        // route's pace: 40 at once from one address).
        for _ in 0 ..< 30 {
            #expect(try await thief.post(server, "/logout", "").status == 303)
            thief.cookies["livelist_signin"] = cookie
        }
        #expect(server.app.services.signIns.ended.count == 1 && server.app.services.metrics.access.revocations == revocations)
        // An expired cookie is nobody either, and its sign-out does nothing.
        let expired = server.app.services.signIns.mint(SignIns.subject(of: Identity(id: "alice")), purpose: SignIns.userPurpose, lifetime: .seconds(1),
                                              now: SignIns.now() - 3_600).value
        let late = Browser(address: "127.0.0.3")
        late.cookies["livelist_signin"] = expired
        #expect(try await late.get(server, "/lists/team").status == 401)
        #expect(try await late.post(server, "/logout", "").status == 303)
        #expect(server.app.services.signIns.ended.count == 1)
    }

    /// Bob plants his session in alice's browser; she signs in; bob signs out with his own cookie and
    /// the planted session: her stream stays, because her session was rotated at sign-in.
    @Test func aPlantedSessionCannotEndAnotherViewersStreams() async throws {
        let server = try await app { $0.port = 0 }
        let app = server.app
        let bob = Browser()
        #expect(try await bob.post(server, "/login", "user=bob&password=secret2").status == 303)
        let alice = Browser()
        alice.cookies[SessionKeys.cookieName] = bob.cookies[SessionKeys.cookieName]
        #expect(try await alice.post(server, "/login", "user=alice&password=secret1").status == 303)
        #expect(alice.cookies[SessionKeys.cookieName] != bob.cookies[SessionKeys.cookieName])
        let port = Mutex(0)
        let running = Task { try await app.run(announcing: false) { serving in port.withLock { $0 = serving } } }
        defer { running.cancel() }
        while port.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        let stream = try #require(RawHTTPConnection(port: port.withLock { $0 }))
        let cookieLine = alice.cookieHeader.map { "\($0.0): \($0.1)\r\n" }.joined()
        #expect(stream.send("GET /lists/team/events HTTP/1.1\r\nHost: localhost\r\n\(cookieLine)\r\n"))
        #expect(try await onThread { stream.readResponse(head: true) }?.status == 200)
        while app.services.openStreams.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
        // Bob signs out with the session he planted.
        #expect(try await bob.post(server, "/logout", "").status == 303)
        try await Task.sleep(for: .milliseconds(200))
        #expect(app.services.openStreams.count == 1, "alice's stream is still open")
        // Alice's own sign-out ends it.
        #expect(try await alice.post(server, "/logout", "").status == 303)
        let ended = try await onThread { stream.readStreamToEnd() }
        #expect(ended.text.contains("event: denied"), "\(ended.text)")
        await app.stop()
    }

    /// Wrong passwords for one account from many addresses are paced together; a browser that signed
    /// in to the account before keeps its own bucket, so an attacker cannot keep the owner out.
    @Test func wrongAttemptsArePacedPerAccountAcrossAddresses() async throws {
        let server = try await app()
        let owner = Browser(address: "127.0.0.200")
        #expect(try await owner.post(server, "/login", "user=alice&password=secret1").status == 303)
        #expect(try await owner.post(server, "/logout", "").status == 303)
        var statuses: [Int] = []
        for index in 0 ..< 45 {
            let attacker = Browser(address: "127.0.1.\(index)")
            statuses.append(try await attacker.post(server, "/login", "user=alice&password=guess\(index)").status)
        }
        #expect(statuses.prefix(10).allSatisfy { $0 == 401 } && statuses.dropFirst(10).allSatisfy { $0 == 429 }, "\(statuses)")
        let newcomer = Browser(address: "127.0.2.1")
        let paced = try await newcomer.post(server, "/login", "user=alice&password=secret1")
        #expect(paced.status == 429 && paced.header("Retry-After") != nil, "the account is paced for browsers it does not know")
        #expect(try await owner.post(server, "/login", "user=alice&password=secret1").status == 303, "its owner's browser signs in")
        #expect(try await newcomer.post(server, "/login", "user=bob&password=secret2").status == 303, "another account is not paced")
    }

    @Test func passwordsAreComparedAsMACs() async throws {
        let server = try await app()
        let app = server.app
        #expect(app.passwordMatches("secret1", "secret1"))
        #expect(!app.passwordMatches("secret1", "secret2") && !app.passwordMatches("", "secret1") && !app.passwordMatches("secret1", nil))
        #expect(!app.passwordMatches("\u{0}no such account\u{0}", nil), "no password matches an account that does not exist")
    }

    /// The read token's cookie is a sign-in of its own: a new one each time, with an expiry, ended by
    /// `POST /signout` on every way in; wrong tokens are paced over all addresses.
    @Test func theReadTokensCookieIsASignInThatEnds() async throws {
        let server = try await RouteClient { $0.readToken = "reader-secret" }
        try await server.put("private", ["a"])
        func signIn(_ browser: Browser, _ token: String) async throws -> RouteResponse {
            try await browser.get(server, "/signin")
            return try await browser.post(server, "/signin", "token=\(token)&next=%2Flists%2Fprivate")
        }
        let first = Browser()
        let second = Browser()
        #expect(try await signIn(first, "reader-secret").status == 303)
        #expect(try await signIn(second, "reader-secret").status == 303)
        let cookie = try #require(first.cookies["livelist_reader"])
        #expect(cookie != second.cookies["livelist_reader"], "one cookie per sign-in, not one for everyone")
        #expect(try await first.get(server, "/lists/private").status == 200)
        #expect(try await first.post(server, "/signout", "").status == 303)
        let thief = Browser(address: "127.0.0.9")
        thief.cookies["livelist_reader"] = cookie
        #expect(try await thief.get(server, "/lists/private").status == 401, "signed out everywhere")
        #expect(try await second.get(server, "/lists/private").status == 200, "the other sign-in goes on")
        var statuses: [Int] = []
        for index in 0 ..< 45 {
            statuses.append(try await signIn(Browser(address: "127.0.3.\(index)"), "wrong\(index)").status)
        }
        #expect(statuses.filter { $0 == 401 }.count <= 10 && statuses.suffix(30).allSatisfy { $0 == 429 }, "\(statuses)")
    }

    private func request(_ headers: [(String, String)]) -> HTTPRequest? {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name, value) }
        return HTTPRequest(method: .GET, version: .http1_1, target: "/", path: "/", pathSegments: [], query: [], headers: fields, body: [],
                           trailers: HTTPHeaders(), keepAlive: true, host: "localhost")
    }

    private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
