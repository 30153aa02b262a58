import LiveListEngine
public import LiveListHTTP

// Who a viewer is and what they may do (docs/PROTOCOL.md, "Access"): the app's `authenticate`, each
// list's rule, revocations, and sign-in done by the library (a signed cookie per sign-in, sessions
// rotated at sign-in and sign-out, wrong attempts paced per address and per account, passwords compared
// in constant time, sign-outs that end a sign-in on every node at O(1) a check).
extension LiveListApp {
    /// Tells the server who a request's viewer is. Once set, every list needs a rule
    /// (``access(_:_:)``): a list without one is refused, as is a list whose rule throws. Every route
    /// that reads or acts on a list runs `body` (docs/PROTOCOL.md, "Access"), and so does every
    /// re-check of an open stream.
    ///
    ///     app.authenticate { head in
    ///         head.cookie("board_user").flatMap(app.verified).map { Identity(id: $0) }
    ///     }
    public func authenticate(_ body: @escaping Authenticate) {
        services.gate.setAuthenticate(body)
    }

    /// Gives the list `name` its access rule: what an identity (nil when nobody is signed in) may do.
    /// A rule may be given before the list exists; giving one again replaces it and re-checks the
    /// list's open streams.
    ///
    ///     try await app.access("team") { identity in identity == nil ? .none : .all }
    ///
    /// - Throws: `StartupError` when `name` is not a list name.
    public func access(_ name: String, _ rule: @escaping AccessRule) async throws {
        let listName = try Self.listName(name)
        services.gate.setRule(rule, for: listName)
        services.gate.countRevocation()
        await services.streamAccess.recheck(services.openStreams.select { $0.names.withLock { $0.contains(listName) } })
    }

    /// The app's sign-in route (`/login`): a page navigation that a rule refuses for want of a viewer is
    /// redirected there with `next=` (the path it asked for, same-origin only) instead of 401.
    ///
    /// - Throws: `StartupError` when `path` is not an absolute path of this origin.
    public func signIn(at path: String) throws {
        guard SameOrigin.isPath(path) else {
            throw StartupError("\"\(path)\" is not a path of this server (it must start with one \"/\")")
        }
        services.gate.setSignInPath(path)
    }

    /// Says that what `identity` may see changed: its open streams are re-checked at once (the app's
    /// `authenticate` and the lists' rules run again) and those no longer allowed are told `denied`
    /// and closed. With several nodes on one database, the revocation is kept there and every other
    /// node re-checks within ``ServerConfiguration/revocationPollInterval`` of reading it, after it
    /// has caught up with every write made before it: change what the rules read first, then revoke.
    public func revoke(identity: String) async {
        services.metrics.revoked()
        await services.streamAccess.revokeHere([.identity(identity)])
        await services.streamAccess.share(.identity(identity))
    }

    /// Says that who may see the list `name` changed: its open streams are re-checked at once, on
    /// every node (see ``revoke(identity:)``).
    ///
    /// - Throws: `StartupError` when `name` is not a list name (as ``access(_:_:)`` does).
    public func revoke(list name: String) async throws {
        let listName = try Self.listName(name)
        services.metrics.revoked()
        await services.streamAccess.revokeHere([.list(listName.rawValue)])
        await services.streamAccess.share(.list(listName.rawValue))
    }

    /// Re-checks every open stream now, on every node (see ``revoke(identity:)``).
    public func recheckAllStreams() async {
        await services.streamAccess.revokeHere([.everything])
        await services.streamAccess.share(.everything)
    }

    /// Ends the streams of the browser session that `request` carries, whatever the rules say, on
    /// every node: what signing out does. Its pages are told `denied`; their next connection asks
    /// again. Other nodes end theirs within about a second (see ``revoke(identity:)``).
    public func endStreams(ofSessionIn request: AppRequest) {
        services.streamAccess.endSession(of: request.http)
    }

    // MARK: - Signing in

    /// Turns on the library's sign-in with `settings`, and makes it the app's `authenticate`: a
    /// viewer is who their sign-in cookie names (``signedInIdentity(_:)``). An app that decides more
    /// (roles read from its database) calls `authenticate` after this and ``signedInIdentity(_:)`` in it.
    public func useSignIn(_ settings: SignInSettings = SignInSettings()) {
        services.signIns.settings = settings
        authenticate { [self] head in signedInIdentity(head) }
    }

    /// The identity of the request's sign-in: its cookie's tag verifies, it has not expired, and it
    /// was not signed out (on any node). Nil otherwise.
    public func signedInIdentity(_ head: RequestHead) -> Identity? {
        guard let cookie = head.cookie(signInCookieName), let signedIn = services.signIns.valid(cookie, purpose: SignIns.userPurpose) else { return nil }
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
        let failureKeys = services.signIns.failureKeys(account: account, device: request.cookie(services.signIns.deviceCookieName))
        if let seconds = services.signIns.waitBeforeAttempt(failureKeys) {
            services.metrics.actionPaced()
            throw ErrorCode.tooManyAttempts.error("too many wrong attempts for this account; wait \(seconds) s", retryAfter: seconds)
        }
        let identity: Identity?
        do {
            identity = try await verify()
        } catch let error as HTTPError {
            throw error
        } catch {
            services.log.error("\(request.http.method) \(request.http.path): the sign-in check failed: \(error)")
            throw ErrorCode.routeFailed.error("the server could not complete this request; its log says why")
        }
        guard let identity else {
            services.signIns.failed(failureKeys)
            services.metrics.refused(.unauthenticated)
            return nil
        }
        var response = HTTPResponse.redirect(to: next ?? request.nextPath(or: "/"))
        let lifetime = services.signIns.settings.lifetime
        let cookie = services.signIns.mint(SignIns.subject(of: identity), purpose: SignIns.userPurpose, lifetime: lifetime).value
        response.setCookie(Cookie(signInCookieName, cookie, maxAge: Int(lifetime.components.seconds), secure: configuration.isSecure))
        let deviceLifetime = services.signIns.settings.deviceLifetime
        response.setCookie(Cookie(services.signIns.deviceCookieName, services.signIns.deviceCookie(account: account), maxAge: Int(deviceLifetime.components.seconds),
                                  secure: configuration.isSecure))
        services.signIns.rotateSession(of: request.http, in: &response, cookies: services.cookies, streams: services.streamAccess)
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
        if let cookie = request.cookie(signInCookieName), let signedIn = services.signIns.valid(cookie, purpose: SignIns.userPurpose) {
            do {
                try await services.signIns.end(signedIn)
            } catch {
                services.log.error("\(request.http.method) \(request.http.path): cannot keep a sign-out: \(error)")
                throw ErrorCode.signOutNotKept.error("the sign-out could not be kept; try again", retryAfter: 2)
            }
            services.metrics.revoked()
            if let identity = SignIns.identity(ofSubject: signedIn.subject) {
                await services.streamAccess.revokeHere([.identity(identity.id)])
                await services.streamAccess.share(.identity(identity.id))
            }
            services.streamAccess.endSession(of: request.http)
        }
        var response = HTTPResponse.redirect(to: location)
        response.clearCookie(signInCookieName)
        services.signIns.rotateSession(of: request.http, in: &response, cookies: services.cookies, streams: services.streamAccess)
        return response
    }

    /// Whether the password `given` is `expected`, in a time that depends on neither: both are
    /// MACed under the server's secret first, and the MACs compared in constant time. With
    /// `expected` nil (no such account) the same work is done and the answer is false, so the time
    /// does not tell which accounts exist.
    public func passwordMatches(_ given: String, _ expected: String?) -> Bool {
        let presented = services.keys.tag("password", given)
        let wanted = services.keys.tag("password", expected ?? "\u{0}no such account\u{0}")
        return constantTimeEqual(Array(wanted.utf8), Array(presented.utf8)) && expected != nil
    }

    /// The sign-in cookie's name: `__Host-livelist_signin` when cookies are `Secure` (a prefix that
    /// browsers accept only from this host, over HTTPS, for the whole site), else `livelist_signin`.
    public var signInCookieName: String {
        services.signIns.signInCookieName
    }
}
