import LiveListEngine
public import LiveListHTTP

// Sign-in done by the library (docs/GUIDE.md, "Users and access"): a signed cookie per sign-in,
// sessions rotated at sign-in and sign-out, wrong attempts paced per address and per account,
// passwords compared in constant time, and sign-outs that end a sign-in on every node at O(1) a check.
extension LiveListApp {
    /// Turns on the library's sign-in with `settings`, and makes it the app's `authenticate`: a
    /// viewer is who their sign-in cookie names (``signedInIdentity(_:)``). An app that decides more
    /// (roles read from its database) calls `authenticate` after this and ``signedInIdentity(_:)`` in it.
    public func useSignIn(_ settings: SignInSettings = SignInSettings()) {
        signIns.settings = settings
        authenticate { [self] head in signedInIdentity(head) }
    }

    /// The identity of the request's sign-in: its cookie's tag verifies, it has not expired, and it
    /// was not signed out (on any node). Nil otherwise.
    public func signedInIdentity(_ head: RequestHead) -> Identity? {
        guard let cookie = head.cookie(signInCookieName), let signedIn = signIns.valid(cookie, purpose: SignIns.userPurpose) else { return nil }
        return SignIns.identity(ofSubject: signedIn.subject)
    }

    /// Tries to sign `account` in: `verify` checks the credentials (with ``passwordMatches(_:_:)``)
    /// and answers the identity, or nil when they are wrong. It runs only when the account may be
    /// tried now: wrong attempts are paced per account (``SignInSettings/failurePace``; a browser
    /// that signed in to the account before counts on its own), on top of the route's pace per
    /// address (`paced: true`).
    ///
    /// On success the answer is a redirect to `next` (``AppRequest/nextPath(or:)`` by default) that
    /// sets the sign-in cookie, remembers the browser for the account, and gives the browser a new
    /// session: a session planted before the sign-in (and its CSRF token) is worth nothing after it.
    /// Nil when the credentials were wrong: the route answers its form again (401).
    ///
    /// - Throws: `HTTPError` 429 `too_many_attempts` with `Retry-After` when the account is paced.
    public func signIn(
        _ request: AppRequest, account: String, next: String? = nil, verify: () async throws -> Identity?
    ) async throws(HTTPError) -> HTTPResponse? {
        let failureKeys = signIns.failureKeys(account: account, device: request.cookie(deviceCookieName))
        if let seconds = signIns.waitBeforeAttempt(failureKeys) {
            metrics.actionPaced()
            throw ErrorCode.tooManyAttempts.error("too many wrong attempts for this account; wait \(seconds) s", retryAfter: seconds)
        }
        let identity: Identity?
        do {
            identity = try await verify()
        } catch let error as HTTPError {
            throw error
        } catch {
            configuration.errorLog?("\(request.http.method) \(request.http.path): the sign-in check failed: \(error)")
            throw ErrorCode.routeFailed.error("the server could not complete this request; its log says why")
        }
        guard let identity else {
            signIns.failed(failureKeys)
            metrics.refused(.unauthenticated)
            return nil
        }
        var response = HTTPResponse.redirect(to: next ?? request.nextPath(or: "/"))
        let lifetime = signIns.settings.lifetime
        let cookie = signIns.mint(SignIns.subject(of: identity), purpose: SignIns.userPurpose, lifetime: lifetime).value
        response.setCookie(Cookie(signInCookieName, cookie, maxAge: Int(lifetime.components.seconds), secure: configuration.isSecure))
        let deviceLifetime = signIns.settings.deviceLifetime
        response.setCookie(Cookie(deviceCookieName, signIns.deviceCookie(account: account), maxAge: Int(deviceLifetime.components.seconds),
                                  secure: configuration.isSecure))
        rotateSession(of: request.http, in: &response)
        return response
    }

    /// Ends the request's sign-in on every node and answers a redirect to `location` that removes its
    /// cookie and gives the browser a new session; the streams of the browser session it came from end
    /// (told `denied`), and those of the same sign-in are checked again. A cookie that is not a valid
    /// sign-in (forged, expired, already signed out) changes nothing on the server, so a replayed
    /// sign-out costs one MAC.
    ///
    /// - Throws: `HTTPError` 503 when the store could not keep the sign-out (the cookie then stays,
    ///   so that the viewer can try again; nothing was promised).
    public func signOut(_ request: AppRequest, redirectTo location: String = "/") async throws(HTTPError) -> HTTPResponse {
        if let cookie = request.cookie(signInCookieName), let signedIn = signIns.valid(cookie, purpose: SignIns.userPurpose) {
            do {
                try await signIns.end(signedIn)
            } catch {
                configuration.errorLog?("\(request.http.method) \(request.http.path): cannot keep a sign-out: \(error)")
                throw ErrorCode.signOutNotKept.error("the sign-out could not be kept; try again", retryAfter: 2)
            }
            metrics.revoked()
            if let identity = SignIns.identity(ofSubject: signedIn.subject) {
                await revokeHere([.identity(identity.id)])
                await share(.identity(identity.id))
            }
            endStreams(ofSessionIn: request.http)
        }
        var response = HTTPResponse.redirect(to: location)
        response.clearCookie(signInCookieName)
        rotateSession(of: request.http, in: &response)
        return response
    }

    /// Whether the password `given` is `expected`, in a time that depends on neither: both are
    /// MACed under the server's secret first, and the MACs compared in constant time. With
    /// `expected` nil (no such account) the same work is done and the answer is false, so the time
    /// does not tell which accounts exist.
    public func passwordMatches(_ given: String, _ expected: String?) -> Bool {
        let presented = keys.tag("password", given)
        let wanted = keys.tag("password", expected ?? "\u{0}no such account\u{0}")
        return constantTimeEqual(Array(wanted.utf8), Array(presented.utf8)) && expected != nil
    }

    /// The sign-in cookie's name: `__Host-livelist_signin` when cookies are `Secure` (a prefix that
    /// browsers accept only from this host, over HTTPS, for the whole site), else `livelist_signin`.
    public var signInCookieName: String {
        configuration.isSecure ? "__Host-livelist_signin" : "livelist_signin"
    }

    /// The cookie that remembers a browser that signed in to an account.
    var deviceCookieName: String {
        configuration.isSecure ? "__Host-livelist_device" : "livelist_device"
    }

    /// Gives the browser a new session in `response`, and ends the streams of the one it had.
    func rotateSession(of request: HTTPRequest, in response: inout HTTPResponse) {
        if let old = keys.session(from: request) {
            endStreams(ofSessions: [keys.revocationDigest(of: old)])
        }
        let (_, cookie) = keys.mintSession()
        response.headers.add("Set-Cookie", sessionCookiePrefix + cookie + sessionCookieAttributes)
    }
}
