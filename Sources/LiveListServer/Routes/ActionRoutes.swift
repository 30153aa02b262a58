import LiveListEngine
import LiveListHTML
import LiveListHTTP

/// `POST /lists/NAME/actions`: a browser event for the app (docs/PROTOCOL.md, "Actions"), paced per
/// session and address, resent ones answered as the first (`Idempotency-Key`).
struct ActionRoutes: Sendable {
    let listAccess: ListAccess
    let keys: SessionKeys
    let sessions: SessionTable
    let pacing: Pacing
    let actionKeys: ActionKeys
    let metrics: Metrics
    let log: ServerLog

    /// What refuses an action on its head alone, before its body is read: a type that is neither JSON
    /// nor a form, or no session the server minted (and for JSON, no token header: a form carries its
    /// token in the body).
    func refuseHead(_ head: HTTPRequest) -> HTTPResponse? {
        let type = head.contentMediaType
        guard type == "application/json" || type == "application/x-www-form-urlencoded" else {
            return errorResponse(.unsupportedMediaType, "Content-Type: send application/json or a form")
        }
        let session = head.cookie(keys.sessionCookieName).flatMap { keys.sessionID(fromCookie: $0) }
        let headerToken = head.headers["X-CSRF-Token"]
        let tokenOK = type != "application/json" || (session.flatMap { id in headerToken.map { keys.verify(token: $0, sessionID: id) } } ?? false)
        guard session != nil, tokenOK else {
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }
        return nil
    }

    /// A page's batched visibility report: `{"type": "visible", "cells": "K1\u0000K2"}` (keys joined by
    /// NUL, which no key holds), each cell reported as a report of its own would be. A cell the list no
    /// longer shows is passed over (it was deleted while the report was on its way); more than
    /// ``maximumReportedCells`` is refused (422 `too_many_cells`). The cells named are paced by their
    /// number (``visibilityPacer``: 2,000 a second after 10,000 by default, per session and address;
    /// 429 past it), and the whole report is handled in one visit to the list.
    private func reportVisibility(
        _ type: String, of joined: String, fields: [String: String], session: String, identity: Identity?, on list: any ServedList, isForm: Bool,
        next: String?, _ request: HTTPRequest
    ) async -> HTTPResponse {
        let keys = joined.split(separator: "\0", omittingEmptySubsequences: true)
        guard keys.count <= Pacing.maximumReportedCells else {
            return errorResponse(.tooManyCells, "cells: \(keys.count) cells, more than the \(Pacing.maximumReportedCells) one report may name")
        }
        if let refusal = pacing.visibility(cells: keys.count, session: session, request) {
            return refusal
        }
        _ = await list.performEach(keys.map { ListAction(type: type, cell: String($0), fields: fields, session: session, identity: identity) })
        return actionTaken(on: list, isForm: isForm, next: next, request)
    }

    /// The answer to an action taken: 303 back to the page for a form posted without JavaScript (the
    /// page that embeds the list when its form says so in `next`, a path of this server; else the
    /// list's own page), 204 otherwise.
    private func actionTaken(on list: any ServedList, isForm: Bool, next: String? = nil, _ request: HTTPRequest) -> HTTPResponse {
        if isForm && request.headers["LiveList-Action"] == nil {
            let back = next.flatMap { SameOrigin.isPath($0) ? $0 : nil } ?? "/lists/\(list.name)"
            return HTTPResponse(status: .seeOther, headers: ["Location": back, "Content-Length": "0"])
        }
        return HTTPResponse(status: .noContent)
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
        switch await listAccess.guardedList(request) {
        case let .success(found): (list, access, identity) = found
        case let .failure(answer): return answer.response
        }
        let isForm = request.contentMediaType == "application/x-www-form-urlencoded"
        guard isForm || request.contentMediaType == "application/json" else {
            return errorResponse(.unsupportedMediaType, "Content-Type: send application/json or a form")
        }
        var fields: [String: String] = [:]
        var token = request.headers["X-CSRF-Token"]
        var next: String?
        if isForm {
            fields = HeaderParsing.form(request.body)
            token = fields.removeValue(forKey: "csrf") ?? token
            // Where the page that posted it wants the browser back (an app's page that embeds the list).
            next = fields.removeValue(forKey: "next")
            // A button of the page's actions form says `name="action" value="TYPE:CELL"`.
            if let combined = fields.removeValue(forKey: "action") {
                let (typed, cell) = HeaderParsing.action(combined)
                // A typed payload rides in the button's value, `NAME;PAYLOAD:CELL`.
                let (type, payload) = HeaderParsing.actionPayload(typed)
                fields["type"] = type
                if let payload {
                    fields["payload"] = payload
                }
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
        guard let session = self.keys.session(from: request), let token, self.keys.verify(token: token, sessionID: session) else {
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }
        guard let type = fields.removeValue(forKey: "type"), !type.isEmpty else {
            return errorResponse(.missingField, "type: missing")
        }
        // A visibility report is part of viewing; anything else needs the rule's `act`.
        guard access.contains(.act) || Pacing.isVisibilityReport(type) else {
            metrics.refused(.denied)
            return errorResponse(.actNotAllowed, "you may view \(list.name) but not act on it")
        }
        sessions.touch(session)
        // Paced before its key is looked at: a refused action keeps nothing.
        if let refusal = pacing.action(type, session: session, request) {
            return refusal
        }
        // A resent action (the same Idempotency-Key, from the same session, on the same list) is
        // answered as the first was, and not run again.
        var scopedKey: String?
        switch WriteRoutes.idempotencyKey(request) {
        case let .success(key?):
            let scoped = ActionKeys.scope(list: list.name.rawValue, session: session, key: key.key)
            switch actionKeys.begin(scoped, fingerprint: key.fingerprint) {
            case .run:
                scopedKey = scoped
            case .handled:
                var response = actionTaken(on: list, isForm: isForm, next: next, request)
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
        if Pacing.isVisibilityReport(type), let joined = fields.removeValue(forKey: "cells") {
            return await reportVisibility(type, of: joined, fields: fields, session: session, identity: identity, on: list, isForm: isForm, next: next,
                                          request)
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
            log.error("\(request.method) \(request.path): the action \(quoted(type)) failed: \(cause)")
            return errorResponse(.actionFailed, "the server could not complete this action; its log says why")
        }
        return actionTaken(on: list, isForm: isForm, next: next, request)
    }
}
