import LiveListEngine
import LiveListHTTP
import LiveListHTML

extension LiveListApp {
    /// Writes need the bearer token when one is configured; without one, only loopback clients that
    /// came through no proxy may write, so an unconfigured server is never writable from the network,
    /// also not behind nginx.
    func refuseWrite(_ request: HTTPRequest) -> HTTPResponse? {
        refuseUnlessAuthorized(request, token: configuration.writeToken, what: "writes", tokenName: "write token",
                               forbidden: ErrorCode.writesNeedToken.error("this server accepts writes only from loopback clients until a write token is configured (--write-token)"))
    }

    /// Nil when `request` may go on. With `token`, it must say `Authorization: Bearer TOKEN` (the
    /// scheme in any case; 401 otherwise); without one, it must come from a loopback client through no
    /// proxy (`forbidden` otherwise).
    func refuseUnlessAuthorized(_ request: HTTPRequest, token: String?, what: String, tokenName: String, forbidden: HTTPError) -> HTTPResponse? {
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
        if let problem = LoopbackNames.problem(host: request.headers["Host"], origin: request.headers["Origin"], port: servingPort) {
            return HTTPError(forbidden.status, code: forbidden.code, detail: "\(problem); \(forbidden.detail)").response
        }
        return nil
    }

    /// The port the server listens on (the configured one until it runs).
    var servingPort: Int {
        serverBox.get()?.port ?? configuration.port
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
            return .failure(RefusedAnswer(missingList(request.pathParameters["name"] ?? "")))
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

    /// `DELETE /lists/NAME`: removes a JSON-driven list; answers its final (empty) reset.
    func delete(_ request: HTTPRequest) async -> HTTPResponse {
        if let refusal = refuseWrite(request) {
            return refusal
        }
        guard let raw = request.pathParameters["name"], let name = ListName(raw) else {
            return missingList(request.pathParameters["name"] ?? "")
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

    /// The most cells one batched visibility report may name.
    static let maximumReportedCells = 1_000

    /// A page's batched visibility report: `{"type": "visible", "cells": "K1\u0000K2"}` (keys joined by
    /// NUL, which no key holds), each cell reported as a report of its own would be. A cell the list no
    /// longer shows is passed over (it was deleted while the report was on its way); more than
    /// ``maximumReportedCells`` is refused (422 `too_many_cells`). The cells named are paced by their
    /// number (``visibilityPacer``: 2,000 a second after 10,000 by default, per session and address;
    /// 429 past it), and the whole report is handled in one visit to the list.
    private func reportVisibility(
        _ type: String, of joined: String, fields: [String: String], session: String, identity: Identity?, on list: any ServedList, isForm: Bool,
        _ request: HTTPRequest
    ) async -> HTTPResponse {
        let keys = joined.split(separator: "\0", omittingEmptySubsequences: true)
        guard keys.count <= Self.maximumReportedCells else {
            return errorResponse(.tooManyCells, "cells: \(keys.count) cells, more than the \(Self.maximumReportedCells) one report may name")
        }
        if let visibilityPacer, let seconds = visibilityPacer.take(paceKeys(session: session, request), cost: keys.count) {
            metrics.actionPaced()
            return errorResponse(.tooManyActions, "more cells reported visible or hidden than \(Int(visibilityPacer.pace.rate)) a second from this page or address; wait \(seconds) s",
                                 headers: ["Retry-After": String(seconds)])
        }
        _ = await list.performEach(keys.map { ListAction(type: type, cell: String($0), fields: fields, session: session, identity: identity) })
        return actionTaken(on: list, isForm: isForm, request)
    }

    /// The answer to an action taken: 303 back to the page for a form posted without JavaScript,
    /// 204 otherwise.
    private func actionTaken(on list: any ServedList, isForm: Bool, _ request: HTTPRequest) -> HTTPResponse {
        if isForm && request.headers["LiveList-Action"] == nil {
            return HTTPResponse(status: .seeOther, headers: ["Location": "/lists/\(list.name)", "Content-Length": "0"])
        }
        return HTTPResponse(status: .noContent)
    }

    /// Whether an action's type is a visibility report (`visible`, `hidden`): never paced, and
    /// possibly about many cells at once.
    private static func isVisibilityReport(_ type: String) -> Bool {
        type == "visible" || type == "hidden"
    }

    /// 429 when the session, or the client's address, sends actions faster than the pace allows; nil
    /// when the action may go on (and it is counted). Visibility reports are not paced: a page
    /// scrolled quickly sends many, and they change nothing.
    func pace(_ type: String, session: String, _ request: HTTPRequest) -> HTTPResponse? {
        guard !Self.isVisibilityReport(type) else { return nil }
        return pace(session: session, request, what: "actions", from: "page")
    }

    /// 429 when the session (if any), or the client's address, goes faster than the pace allows; nil
    /// when the request may go on (and it is counted). Actions and the app's paced routes (sign-in
    /// attempts) share the one pacer.
    func pace(session: String?, _ request: HTTPRequest, what: String, from: String) -> HTTPResponse? {
        guard let actionPacer else { return nil }
        guard let seconds = actionPacer.take(paceKeys(session: session, request)) else { return nil }
        metrics.actionPaced()
        let pace = actionPacer.pace
        return errorResponse(.tooManyActions,
                             "more than \(pace.burst) \(what) at once or \(pace.rate == pace.rate.rounded() ? String(Int(pace.rate)) : String(pace.rate)) a second from this \(from) or address; wait \(seconds) s",
                             headers: ["Retry-After": String(seconds)])
    }

    /// What a request is paced by: its session (if any) and its client's address.
    private func paceKeys(session: String?, _ request: HTTPRequest) -> [String] {
        var keys: [String] = []
        if let session {
            keys.append("s:" + session)
        }
        if let address = Self.clientAddress(request, trustedProxies: trustedProxies) {
            keys.append("a:" + address)
        }
        return keys
    }

    /// The answer to a write that failed. A failure of the server (5xx, such as storage) is logged whole
    /// and answered without its cause, which can name the server's files.
    func writeFailure(_ error: ListWriteError, _ request: HTTPRequest) -> HTTPResponse {
        let status = error.kind.status
        guard status.code >= 500 else {
            return errorResponse(HTTPError(status, code: error.code, detail: error.detail))
        }
        configuration.errorLog?("\(request.method) \(request.path): \(error.code): \(error.cause ?? error.detail)")
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

    /// `POST /lists/NAME/actions`: a browser event for the app. JSON with `X-CSRF-Token` is answered
    /// 204; a form posted without JavaScript (its token in the `csrf` field) is answered 303 back to
    /// the page, and 204 when the page's script posts it with `LiveList-Action: 1` (no navigation). An
    /// action that nothing handles, or (for an app's typed actions) that names a cell the list does not
    /// show, is answered 422.
    func action(_ request: HTTPRequest) async -> HTTPResponse {
        let list: any ServedList
        let access: Access
        let identity: Identity?
        switch await guardedList(request) {
        case let .success(found): (list, access, identity) = found
        case let .failure(answer): return answer.response
        }
        let isForm = request.contentMediaType == "application/x-www-form-urlencoded"
        guard isForm || request.contentMediaType == "application/json" else {
            return errorResponse(.unsupportedMediaType, "Content-Type: send application/json or a form")
        }
        var fields: [String: String] = [:]
        var token = request.headers["X-CSRF-Token"]
        if isForm {
            fields = HeaderParsing.form(request.body)
            token = fields.removeValue(forKey: "csrf") ?? token
            // A button of the page's actions form says `name="action" value="TYPE:CELL"`.
            if let combined = fields.removeValue(forKey: "action") {
                let (type, cell) = HeaderParsing.action(combined)
                fields["type"] = type
                if let cell {
                    fields["cell"] = cell
                }
            }
        } else {
            do {
                guard case let .object(members) = try JSONValue.parse(request.body) else {
                    return errorResponse(.invalidType, "body: expected an object")
                }
                for (key, value) in members {
                    guard case let .string(text) = value else {
                        return errorResponse(.invalidType, "\(key): expected a string")
                    }
                    fields[key] = text
                }
            } catch {
                return errorResponse(.malformedJSON, error.description)
            }
        }
        guard let session = keys.session(from: request), let token, keys.verify(token: token, sessionID: session) else {
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }
        guard let type = fields.removeValue(forKey: "type"), !type.isEmpty else {
            return errorResponse(.missingField, "type: missing")
        }
        // A visibility report is part of viewing; anything else needs the rule's `act`.
        guard access.contains(.act) || Self.isVisibilityReport(type) else {
            metrics.refused(.denied)
            return errorResponse(.actNotAllowed, "you may view \(list.name) but not act on it")
        }
        sessions.touch(session)
        // Paced before its key is looked at: a refused action keeps nothing.
        if let refusal = pace(type, session: session, request) {
            return refusal
        }
        // A resent action (the same Idempotency-Key, from the same session, on the same list) is
        // answered as the first was, and not run again.
        var scopedKey: String?
        switch Self.idempotencyKey(request) {
        case let .success(key?):
            let scoped = ActionKeys.scope(list: list.name.rawValue, session: session, key: key.key)
            switch actionKeys.begin(scoped, fingerprint: key.fingerprint) {
            case .run:
                scopedKey = scoped
            case .handled:
                var response = actionTaken(on: list, isForm: isForm, request)
                response.headers.set("Idempotent-Replayed", "true")
                return response
            case .inFlight:
                return errorResponse(HTTPError(.conflict, code: "idempotency_key_in_flight",
                                               detail: "an action with this Idempotency-Key is running; try again shortly"), headers: ["Retry-After": "1"])
            case .reused:
                return errorResponse(HTTPError(.unprocessableContent, code: "idempotency_key_reused",
                                               detail: "this Idempotency-Key came with another action; a new action needs a new key"))
            }
        case .success(nil):
            break
        case let .failure(answer):
            return answer.response
        }
        var handled = false
        defer { scopedKey.map { actionKeys.finish($0, handled: handled) } }
        if Self.isVisibilityReport(type), let joined = fields.removeValue(forKey: "cells") {
            return await reportVisibility(type, of: joined, fields: fields, session: session, identity: identity, on: list, isForm: isForm, request)
        }
        let cell = fields.removeValue(forKey: "cell")
        if cell == "" {
            // No cell has an empty key: an action that names one names none the list shows.
            return errorResponse(.unknownCell, "cell: empty; name a cell of \(list.name), or send no cell")
        }
        switch await list.perform(ListAction(type: type, cell: cell, fields: fields, session: session, identity: identity)) {
        case .handled:
            handled = true
        case .unknownType:
            return errorResponse(.unknownAction, "type: \(quoted(type)) is not an action of \(list.name)")
        case .unknownCell:
            return errorResponse(.unknownCell, "cell: \(quoted(cell ?? "")) is not a cell of \(list.name)")
        case let .refused(refusal):
            // The app's own code: a refusal of what the action carries.
            return errorResponse(HTTPError(.unprocessableContent, code: refusal.code, detail: refusal.detail))
        case let .failed(cause):
            configuration.errorLog?("\(request.method) \(request.path): the action \(quoted(type)) failed: \(cause)")
            return errorResponse(.actionFailed, "the server could not complete this action; its log says why")
        }
        return actionTaken(on: list, isForm: isForm, request)
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
