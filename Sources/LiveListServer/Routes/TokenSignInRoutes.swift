import LiveListEngine
import LiveListHTTP

/// The bare server's sign-in page for the read token (`--read-token`): a browser cannot send
/// `Authorization` on an event stream, so it gives the token once, in a form, and gets a sign-in cookie
/// of its own (``SignIns``: a nonce, an expiry, a MAC that also covers a MAC of the token, so a new
/// token ends every such sign-in), which `POST /signout` ends on every node. Wrong tokens are paced per
/// address (the actions' pace) and over all addresses together (the read token is one account).
struct TokenSignInRoutes: Sendable {
    let configuration: ServerConfiguration
    let gate: AccessGate
    let keys: SessionKeys
    let cookies: SessionCookies
    let signIns: SignIns
    let pacing: Pacing
    let metrics: Metrics
    let assets: Assets
    let streamAccess: StreamAccess
    let log: ServerLog

    /// The account that wrong read tokens are counted against.
    private static let readTokenAccount = "\u{0}read-token"

    func tokenSignInPage(_ request: HTTPRequest, failed: Bool) -> HTTPResponse {
        var session = keys.session(from: request)
        var setCookie: String?
        if session == nil {
            let (id, cookie) = keys.mintSession()
            session = id
            setCookie = cookies.setCookie(cookie)
        }
        let next = request.queryValue("next") ?? HeaderParsing.form(request.body)["next"] ?? "/"
        let csrf = keys.csrfToken(for: session!)
        let signedIn = request.cookie(AccessGate.readerCookieName).flatMap { signIns.valid($0, purpose: SignIns.readerPurpose) } != nil
        let signOut = signedIn ? """
            <form method="post" action="\(AccessGate.tokenSignOutPath)">
            <input type="hidden" name="csrf" value="\(csrf)">
            <p>This browser is signed in with the read token. <button type="submit">Sign out</button></p>
            </form>
            """ : ""
        let page = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex">
            <title>Sign in · LiveList</title>
            <link rel="stylesheet" href="\(assets.stylesheetURL)">
            <link rel="stylesheet" href="\(assets.siteStylesheetURL)">
            </head>
            <body>
            <header class="page-header"><h1>Sign in</h1></header>
            <main>
            \(failed ? "<p role=\"alert\">That token is not this server's read token.</p>" : "<p>The lists of this server need its read token.</p>")
            \(signOut)
            <form method="post" action="\(AccessGate.tokenSignInPath)">
            <input type="hidden" name="csrf" value="\(csrf)">
            <input type="hidden" name="next" value="\(escapeHTML(SameOrigin.next(next)))">
            <label>Read token <input type="password" name="token" autocomplete="current-password" required></label>
            <button type="submit">Sign in</button>
            </form>
            </main>
            </body>
            </html>

            """
        var response = HTTPResponse.html(Array(page.utf8), status: failed ? .unauthorized : .ok)
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
        response.headers.set("X-Content-Type-Options", "nosniff")
        if failed {
            response.headers.set("WWW-Authenticate", "Bearer realm=\"livelist\"")
        }
        if let setCookie {
            response.headers.add("Set-Cookie", setCookie)
        }
        return response
    }

    func tokenSignIn(_ request: HTTPRequest) -> HTTPResponse {
        guard request.contentMediaType == "application/x-www-form-urlencoded" else {
            return errorResponse(.unsupportedMediaType, "Content-Type: send the sign-in form")
        }
        let fields = HeaderParsing.form(request.body)
        guard let session = keys.session(from: request), let token = fields["csrf"], keys.verify(token: token, sessionID: session) else {
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }
        if let refusal = pacing.pace(session: session, request, what: "sign-in attempts", from: "browser") {
            return refusal
        }
        let failureKeys = signIns.failureKeys(account: Self.readTokenAccount, device: request.cookie(signIns.deviceCookieName))
        if let seconds = signIns.waitBeforeAttempt(failureKeys) {
            metrics.actionPaced()
            return errorResponse(.tooManyAttempts, "too many wrong read tokens; wait \(seconds) s", headers: ["Retry-After": String(seconds)])
        }
        guard let readToken = configuration.readToken, gate.isReadToken(fields["token"] ?? "") else {
            signIns.failed(failureKeys)
            metrics.refused(.unauthenticated)
            return tokenSignInPage(request, failed: true)
        }
        var response = HTTPResponse(status: .seeOther)
        response.headers.set("Location", SameOrigin.next(fields["next"] ?? "/"))
        response.headers.set("Cache-Control", "no-store")
        let lifetime = signIns.settings.lifetime
        let cookie = signIns.mint(SignIns.readerSubject(token: readToken, keys: keys), purpose: SignIns.readerPurpose, lifetime: lifetime).value
        response.headers.add("Set-Cookie", "\(AccessGate.readerCookieName)=\(cookie); Max-Age=\(lifetime.components.seconds)" + cookies.attributes)
        let device = signIns.deviceCookie(account: Self.readTokenAccount)
        response.headers.add("Set-Cookie", "\(signIns.deviceCookieName)=\(device); Max-Age=\(signIns.settings.deviceLifetime.components.seconds)" + cookies.attributes)
        signIns.rotateSession(of: request, in: &response, cookies: cookies, streams: streamAccess)
        return response
    }

    /// `POST /signout`: ends this browser's sign-in with the read token on every node (its streams end),
    /// removes its cookie and gives the browser a new session.
    func tokenSignOut(_ request: HTTPRequest) async -> HTTPResponse {
        let fields = HeaderParsing.form(request.body)
        guard let session = keys.session(from: request), let token = fields["csrf"] ?? request.headers["X-CSRF-Token"],
            keys.verify(token: token, sessionID: session)
        else {
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }
        if let cookie = request.cookie(AccessGate.readerCookieName), let signedIn = signIns.valid(cookie, purpose: SignIns.readerPurpose) {
            do {
                try await signIns.end(signedIn)
            } catch {
                log.error("\(request.method) \(request.path): cannot keep a sign-out: \(error)")
                return errorResponse(.signOutNotKept, "the sign-out could not be kept; try again", headers: ["Retry-After": "2"])
            }
            metrics.revoked()
            streamAccess.endSession(of: request)
        }
        var response = HTTPResponse(status: .seeOther)
        response.headers.set("Location", AccessGate.tokenSignInPath)
        response.headers.set("Cache-Control", "no-store")
        response.headers.add("Set-Cookie", "\(AccessGate.readerCookieName)=; Max-Age=0" + cookies.attributes)
        signIns.rotateSession(of: request, in: &response, cookies: cookies, streams: streamAccess)
        return response
    }
}
