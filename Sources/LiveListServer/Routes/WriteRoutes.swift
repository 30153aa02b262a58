import LiveListEngine
import LiveListHTML
import LiveListHTTP

/// The writes of JSON-driven lists: `PUT`, `PATCH` and `DELETE /lists/NAME` (docs/PROTOCOL.md,
/// "Writes"), decided first on their head (who may write, which list, which media type), before any
/// body is read.
struct WriteRoutes: Sendable {
    let registry: ListRegistry
    let listAccess: ListAccess
    let pageCache: PageCache
    let server: ServerBox
    let configuration: ServerConfiguration
    let log: ServerLog

    /// The port the server listens on (the configured one until it runs).
    var servingPort: Int {
        server.get()?.port ?? configuration.port
    }

    /// Writes need the bearer token when one is configured; without one, only loopback clients that
    /// came through no proxy may write, so an unconfigured server is never writable from the network,
    /// also not behind nginx.
    func refuseWrite(_ request: HTTPRequest) -> HTTPResponse? {
        Self.refuseUnlessAuthorized(request, token: configuration.writeToken, what: "writes", tokenName: "write token",
                                    forbidden: ErrorCode.writesNeedToken.error("this server accepts writes only from loopback clients until a write token is configured (--write-token)"),
                                    port: servingPort)
    }

    /// Nil when `request` may go on. With `token`, it must say `Authorization: Bearer TOKEN` (the
    /// scheme in any case; 401 otherwise); without one, it must come from a loopback client through no
    /// proxy (`forbidden` otherwise).
    static func refuseUnlessAuthorized(_ request: HTTPRequest, token: String?, what: String, tokenName: String, forbidden: HTTPError, port: Int) -> HTTPResponse? {
        if let token {
            let given = request.headers["Authorization"] ?? ""
            // The scheme is not secret; the credentials are compared in constant time.
            guard let credentials = HeaderParsing.bearerCredentials(given), constantTimeEqual(Array(token.utf8), Array(credentials.utf8)) else {
                return errorResponse(.unauthorized, given.isEmpty ? "Authorization: missing; \(what) need \"Bearer TOKEN\"" : "Authorization: the \(tokenName) is wrong",
                                     headers: ["WWW-Authenticate": "Bearer realm=\"livelist\""])
            }
            return nil
        }
        let proxied = ["Forwarded", "X-Forwarded-For", "X-Real-IP"].contains { request.headers[$0] != nil }
        guard request.isFromLoopback && !proxied else {
            return forbidden.response
        }
        // A loopback peer may be a browser whose page rebound its own name to 127.0.0.1 (DNS
        // rebinding): the request must name this server by a loopback name, and a browser's Origin
        // must be the server's own.
        if let problem = LoopbackNames.problem(host: request.headers["Host"], origin: request.headers["Origin"], port: port) {
            return HTTPError(forbidden.status, code: forbidden.code, detail: "\(problem); \(forbidden.detail)").response
        }
        return nil
    }

    /// What refuses a PUT on its head alone: who may write, which list, which media type. The server
    /// asks it before reading any body (see `handler`); the route asks again, for callers without one.
    func refusePut(_ request: HTTPRequest) -> HTTPResponse? {
        if let refusal = refuseWrite(request) {
            return refusal
        }
        guard let raw = request.pathParameters["name"], ListName(raw) != nil else {
            return errorResponse(.notFound, "no list named \(quoted(request.pathParameters["name"] ?? "")); names match [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        }
        guard request.contentMediaType == "application/json" else {
            let other = request.contentMediaType == "application/merge-patch+json" ? " (a JSON Merge Patch is not a LiveList patch: send {\"ops\": [...]})" : ""
            return errorResponse(.unsupportedMediaType, "Content-Type: \(quoted(request.headers["Content-Type"] ?? ""))\(other); send application/json")
        }
        return nil
    }

    /// `PATCH /lists/NAME`: applies keyed operations to an existing JSON-driven list, all or nothing;
    /// answers like a PUT (the changeset, the new version as the ETag), with `skipped`, the number of
    /// operations whose cell or section was missing, as the answer's first member.
    func patch(_ request: HTTPRequest) async -> HTTPResponse {
        let (name, precondition, idempotency): (ListName, WritePrecondition, IdempotencyKey?)
        switch bodyWrite(request) {
        case let .success(parsed): (name, precondition, idempotency) = parsed
        case let .failure(refusal): return refusal.response
        }
        do {
            let (write, skipped) = try await registry.patch(name, body: request.body, precondition: precondition, idempotency: idempotency)
            var response = HTTPResponse.json(Array("{\"skipped\":\(skipped),".utf8) + write.json.dropFirst())
            response.headers.set("ETag", "\"\(write.version)\"")
            response.headers.set("LiveList-Skipped", String(skipped))
            if write.replayed {
                response.headers.set("Idempotent-Replayed", "true")
            }
            return Self.minimalIfPreferred(response, request)
        } catch {
            return writeFailure(error, request)
        }
    }

    /// `PUT /lists/NAME`: creates (201) or replaces (200) a JSON-driven list; answers the changeset.
    func put(_ request: HTTPRequest) async -> HTTPResponse {
        let (name, precondition, idempotency): (ListName, WritePrecondition, IdempotencyKey?)
        switch bodyWrite(request) {
        case let .success(parsed): (name, precondition, idempotency) = parsed
        case let .failure(refusal): return refusal.response
        }
        do {
            let write = try await registry.put(name, body: request.body, precondition: precondition, idempotency: idempotency)
            var response = HTTPResponse.json(write.json, status: write.created ? .created : .ok)
            response.headers.set("ETag", "\"\(write.version)\"")
            if write.created {
                response.headers.set("Location", "/lists/\(name)")
            }
            if write.replayed {
                response.headers.set("Idempotent-Replayed", "true")
            }
            return Self.minimalIfPreferred(response, request)
        } catch {
            return writeFailure(error, request)
        }
    }

    /// `response` without its body when the request says `Prefer: return=minimal` (RFC 7240): the
    /// same status and header fields (the new version in `ETag`), with `Preference-Applied`. A PUT of
    /// a large list then costs its writer no changeset as big as the list.
    static func minimalIfPreferred(_ response: HTTPResponse, _ request: HTTPRequest) -> HTTPResponse {
        guard prefersMinimalReturn(request) else { return response }
        var minimal = response
        minimal.body = .bytes([])
        minimal.headers.set("Preference-Applied", "return=minimal")
        return minimal
    }

    /// Whether a `Prefer` field asks for `return=minimal` (preferences are comma-separated, their
    /// names and tokens case-insensitive, a value possibly quoted).
    static func prefersMinimalReturn(_ request: HTTPRequest) -> Bool {
        guard let prefer = request.headers.joinedValues("Prefer") else { return false }
        return prefer.split(separator: ",").contains { preference in
            let first = preference.split(separator: ";").first ?? ""
            let parts = first.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces.lowercased() }
            return parts.count == 2 && parts[0] == "return" && (parts[1] == "minimal" || parts[1] == "\"minimal\"")
        }
    }

    /// What a PUT or a PATCH asks on its head, or the answer that refuses it: who may write, which
    /// list, which media type, the body's size, the preconditions and the idempotency key.
    private func bodyWrite(_ request: HTTPRequest) -> Result<(ListName, WritePrecondition, IdempotencyKey?), RefusedAnswer> {
        if let refusal = refusePut(request) {
            return .failure(RefusedAnswer(refusal))
        }
        guard let name = request.pathParameters["name"].flatMap(ListName.init) else {
            return .failure(RefusedAnswer(listAccess.missingList(request.pathParameters["name"] ?? "")))
        }
        guard request.body.count <= configuration.maximumBodyBytes else {
            return .failure(RefusedAnswer(errorResponse(.bodyTooLarge, "the body has \(request.body.count) bytes, more than the limit of \(configuration.maximumBodyBytes)")))
        }
        let precondition: WritePrecondition
        switch HeaderParsing.writeCondition(ifMatch: request.headers.joinedValues("If-Match"), ifNoneMatch: request.headers.joinedValues("If-None-Match")) {
        case let .success(parsed): precondition = parsed
        case let .failure(answer): return .failure(RefusedAnswer(answer.response))
        }
        return Self.idempotencyKey(request).map { (name, precondition, $0) }
    }

    /// The request's `Idempotency-Key` with a fingerprint of the request (its method, preconditions
    /// and body), nil without one; 400 `invalid_idempotency_key` for a key that is not 1 to 255
    /// visible ASCII characters, or for several.
    static func idempotencyKey(_ request: HTTPRequest) -> Result<IdempotencyKey?, RefusedAnswer> {
        let keys = request.headers.values("Idempotency-Key")
        guard let key = keys.first else { return .success(nil) }
        guard keys.count == 1, IdempotencyKey.isValid(key) else {
            return .failure(RefusedAnswer(errorResponse(HTTPError(.badRequest, code: "invalid_idempotency_key",
                detail: "Idempotency-Key must be one key of 1 to 255 visible ASCII characters"))))
        }
        var message = Array("\(request.method)\n\(request.headers.joinedValues("If-Match") ?? "")\n\(request.headers.joinedValues("If-None-Match") ?? "")\n".utf8)
        message += request.body
        return .success(IdempotencyKey(key: key, fingerprint: Array(hmacSHA256(key: Self.fingerprintKey, message: message).utf8)))
    }

    /// What the fingerprints of idempotent requests are MACs under (any fixed key: they are digests).
    private static let fingerprintKey = Array("livelist-idempotency".utf8)

    /// The answer to a write that failed. A failure of the server (5xx, such as storage) is logged whole
    /// and answered without its cause, which can name the server's files.
    func writeFailure(_ error: ListWriteError, _ request: HTTPRequest) -> HTTPResponse {
        let status = error.kind.status
        guard status.code >= 500 else {
            return errorResponse(HTTPError(status, code: error.code, detail: error.detail))
        }
        log.error("\(request.method) \(request.path): \(error.code): \(error.cause ?? error.detail)")
        switch error.kind {
        case .unavailable:
            // The database is restarting: nothing changed, and the write may be sent again shortly.
            return errorResponse(HTTPError(status, code: error.code, detail: error.detail), headers: ["Retry-After": "2"])
        case .outcomeUnknown:
            // The write may still be kept: say so, with no promise of either outcome.
            return errorResponse(HTTPError(status, code: error.code, detail: error.detail))
        default:
            return errorResponse(HTTPError(status, code: error.code, detail: "the server could not complete this write; its log says why"))
        }
    }

    /// `DELETE /lists/NAME`: removes a JSON-driven list; answers its final (empty) reset.
    func delete(_ request: HTTPRequest) async -> HTTPResponse {
        if let refusal = refuseWrite(request) {
            return refusal
        }
        guard let raw = request.pathParameters["name"], let name = ListName(raw) else {
            return listAccess.missingList(request.pathParameters["name"] ?? "")
        }
        let idempotency: IdempotencyKey?
        switch Self.idempotencyKey(request) {
        case let .success(key): idempotency = key
        case let .failure(answer): return answer.response
        }
        do {
            let write = try await registry.delete(name, idempotency: idempotency)
            pageCache.forget(name)
            var response = HTTPResponse.json(write.json)
            if write.replayed {
                response.headers.set("Idempotent-Replayed", "true")
            }
            return Self.minimalIfPreferred(response, request)
        } catch {
            return writeFailure(error, request)
        }
    }
}

/// The names under which a loopback client reaches the server: what the loopback trust (writes and
/// `/metrics` without a token) asks of `Host` and `Origin`.
enum LoopbackNames {
    /// Nil when `host`, when present, names a loopback address (`127.0.0.1` or any `127.x.y.z`,
    /// `[::1]`, `localhost`) with `port` (or without a port), and `origin`, when present, is
    /// `http://` or `https://` with such a host and port; otherwise what is wrong, for the answer.
    /// A browser always sends `Host` (an HTTP/1.0 client without one is no browser). Port 0 (a
    /// server that does not know its port, as in tests without sockets) takes any port.
    static func problem(host: String?, origin: String?, port: Int) -> String? {
        if let host, !isLoopback(authority: host, port: port) {
            return "Host: \(quoted(host)) does not name this server's loopback address (127.0.0.1, [::1] or localhost with port \(port))"
        }
        guard let origin else { return nil }
        let authority: Substring
        if origin.hasPrefix("http://") {
            authority = origin.dropFirst(7)
        } else if origin.hasPrefix("https://") {
            authority = origin.dropFirst(8)
        } else {
            return "Origin: \(quoted(origin)) is not this server"
        }
        guard isLoopback(authority: authority, port: port) else {
            return "Origin: \(quoted(origin)) is not this server"
        }
        return nil
    }

    /// Whether `authority` is a loopback name with `port` or none.
    static func isLoopback(authority: some StringProtocol, port: Int) -> Bool {
        let name: Substring
        var given: Substring?
        let text = Substring(authority)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return false }
            name = text[text.index(after: text.startIndex) ..< close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return false }
                given = rest.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            name = text[..<colon]
            given = text[text.index(after: colon)...]
        } else {
            name = text
        }
        if let given, port != 0 {
            guard let number = ListVersion.parse(given), number == port else { return false }
        }
        let lowered = name.lowercased()
        if lowered == "localhost" || lowered == "::1" { return true }
        let parts = lowered.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber) && Int(part).map { $0 <= 255 } == true
        }
    }
}
