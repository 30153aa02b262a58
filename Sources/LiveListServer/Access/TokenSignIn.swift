import LiveListEngine
import LiveListHTTP

/// Text for HTML (an element's content or a double-quoted attribute value), escaped as LiveList's own
/// pages escape it: what an app's own page puts around a value that came from a request.
public func escapeHTML(_ text: String) -> String {
    ErrorPages.escaped(text)
}

// The bare server's sign-in page for the read token (`--read-token`): a browser cannot send
// `Authorization` on an event stream, so it gives the token once, in a form, and gets a cookie that
// stands for it (a MAC of the token under the session secret: a new token ends every such cookie).
extension LiveListApp {
    func addTokenSignIn(to router: inout Router) {
        router.on(.GET, AccessGate.tokenSignInPath) { [self] request in
            tokenSignInPage(request, failed: false)
        }
        router.add(.POST, AccessGate.tokenSignInPath, HTTPHandler.sync { [self] request in
            tokenSignIn(request)
        }.acceptingBodies(upTo: 4_096))
    }

    private func tokenSignInPage(_ request: HTTPRequest, failed: Bool) -> HTTPResponse {
        var session = keys.session(from: request)
        var setCookie: String?
        if session == nil {
            let (id, cookie) = keys.mintSession()
            session = id
            setCookie = sessionCookiePrefix + cookie + sessionCookieAttributes
        }
        let next = request.queryValue("next") ?? HeaderParsing.form(request.body)["next"] ?? "/"
        let page = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex">
            <title>Sign in · LiveList</title>
            <link rel="stylesheet" href="\(stylesheetURL)">
            <link rel="stylesheet" href="\(siteStylesheetURL)">
            </head>
            <body>
            <header class="page-header"><h1>Sign in</h1></header>
            <main>
            \(failed ? "<p role=\"alert\">That token is not this server's read token.</p>" : "<p>The lists of this server need its read token.</p>")
            <form method="post" action="\(AccessGate.tokenSignInPath)">
            <input type="hidden" name="csrf" value="\(keys.csrfToken(for: session!))">
            <input type="hidden" name="next" value="\(escapeHTML(Self.sameOriginNext(next)))">
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
        if failed {
            response.headers.set("WWW-Authenticate", "Bearer realm=\"livelist\"")
        }
        if let setCookie {
            response.headers.add("Set-Cookie", setCookie)
        }
        return response
    }

    private func tokenSignIn(_ request: HTTPRequest) -> HTTPResponse {
        guard request.contentMediaType == "application/x-www-form-urlencoded" else {
            return errorResponse(.unsupportedMediaType, "Content-Type: send the sign-in form")
        }
        let fields = HeaderParsing.form(request.body)
        guard let session = keys.session(from: request), let token = fields["csrf"], keys.verify(token: token, sessionID: session) else {
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }
        if let refusal = pace(session: session, request, what: "sign-in attempts", from: "browser") {
            return refusal
        }
        guard gate.isReadToken(fields["token"] ?? ""), let value = gate.readerCookieValue else {
            metrics.refused(.unauthenticated)
            return tokenSignInPage(request, failed: true)
        }
        var response = HTTPResponse(status: .seeOther)
        response.headers.set("Location", Self.sameOriginNext(fields["next"] ?? "/"))
        response.headers.set("Cache-Control", "no-store")
        response.headers.add("Set-Cookie", "\(AccessGate.readerCookieName)=\(value)" + sessionCookieAttributes)
        return response
    }
}
