import LiveListEngine
public import LiveListHTTP

// Routes of the app's own (a sign-in form, a webhook, a small API), served by the same server, and the
// signing of the app's own cookies.
extension LiveListApp {
    /// Adds a route of the app's own, served by the same server with its limits, budgets, HTML error
    /// pages and access log. Patterns are literal segments, `:name` parameters and a last `*rest`
    /// (`/users/:id`); `GET` routes also answer `HEAD`. The app may take `/` (the index page) but no
    /// path under the server's own routes (``RouteTable``: `/lists`, `/events`, `/healthz`, `/readyz`,
    /// `/metrics`, `/signin`, `/signout`). Add routes before ``run(onStart:)``.
    ///
    /// - Parameters:
    ///   - csrf: for methods other than `GET` and `HEAD`, whether the request must carry the CSRF token
    ///     of its browser session (a form's `csrf` field or `X-CSRF-Token`); refused with 403
    ///     otherwise. Default true; a webhook says false.
    ///   - paced: whether the request counts against the actions' pace (per session and client
    ///     address), refused with 429 past it: what a sign-in form wants.
    ///   - maximumBodyBytes: the largest body; larger ones are answered 413 from their head. Default
    ///     the actions' limit (64 KiB).
    ///   - handler: the answer. A thrown `HTTPError` is answered as it says; any other error is
    ///     logged and answered 500.
    /// - Throws: `StartupError` for a pattern under the server's own routes.
    public func route(
        _ method: HTTPMethod, _ pattern: String, csrf: Bool = true, paced: Bool = false, maximumBodyBytes: Int? = nil,
        _ handler: @escaping @Sendable (AppRequest) async throws -> HTTPResponse
    ) throws {
        if let refusal = RouteTable.refusal(of: pattern) {
            throw StartupError(refusal)
        }
        let checksToken = csrf && method != .GET && method != .HEAD && method != .OPTIONS
        let limit = maximumBodyBytes ?? configuration.maximumActionBodyBytes
        let serve = RouteFamilies(services).appOwn.handler(checksToken: checksToken, paced: paced, limit: limit, handler)
        services.appRoutes.add(AppRoutes.Route(method: method, pattern: pattern, handler: serve))
    }

    /// Serves the files of the app's own `directory` under `prefix`, beside LiveList's (`/desk/desk.css`
    /// is `DIRECTORY/desk.css` for the prefix `/desk`), as LiveList serves its own: types by extension,
    /// `ETag` and 304, immutable when asked with `?v=`, nothing outside the directory and no dot files.
    /// Nothing is copied: an app keeps its stylesheets and scripts in its own package.
    ///
    ///     try app.files(at: "/desk", from: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Public").path)
    ///
    /// - Throws: `StartupError` when the directory does not exist, or the prefix is not literal
    ///   segments of the app's own (``route(_:_:csrf:paced:maximumBodyBytes:_:)``'s rule).
    public func files(at prefix: String, from directory: String) throws {
        let segments = prefix.split(separator: "/").map(String.init)
        guard !segments.isEmpty, segments.allSatisfy({ !$0.hasPrefix(":") && !$0.hasPrefix("*") }) else {
            throw StartupError("the prefix \"\(prefix)\" of the files of \(directory) must be literal segments, such as /assets")
        }
        if let refusal = RouteTable.refusal(of: prefix) {
            throw StartupError(refusal)
        }
        guard let files = StaticFiles(directory: directory, errorFormatter: liveListErrorFormatter) else {
            throw StartupError("the directory \(directory) of the app's files (\(prefix)) does not exist")
        }
        let depth = segments.count
        let handler = HTTPHandler.sync { request in
            var inside = request
            inside.pathSegments.removeFirst(min(depth, inside.pathSegments.count))
            inside.path = "/" + inside.pathSegments.joined(separator: "/")
            return files.respond(to: inside)
        }
        services.appRoutes.add(AppRoutes.Route(method: .GET, pattern: "/" + segments.joined(separator: "/") + "/*path", handler: handler))
    }

    /// Signs `value` with the server's secret (HMAC-SHA256), for a cookie of the app's own that
    /// browsers must not forge: `VALUE.TAG`. Anyone can read the value; put nothing secret in it.
    public func signed(_ value: String) -> String {
        value + "." + hmacSHA256(key: services.keys.secret, message: Array("livelist-app:\(value)".utf8))
    }

    /// The value of a ``signed(_:)`` text, or nil when its tag does not match (forged, altered, or
    /// signed under a secret the server no longer has). A value signed under a previous session
    /// secret (``ServerConfiguration/sessionSecrets``) still verifies.
    public func verified(_ signedValue: String) -> String? {
        guard let dot = signedValue.lastIndex(of: ".") else { return nil }
        let value = String(signedValue[..<dot])
        let presented = Array(signedValue.utf8)
        for secret in services.keys.verifyingSecrets {
            let expected = value + "." + hmacSHA256(key: secret, message: Array("livelist-app:\(value)".utf8))
            if constantTimeEqual(Array(expected.utf8), presented) { return value }
        }
        return nil
    }
}
