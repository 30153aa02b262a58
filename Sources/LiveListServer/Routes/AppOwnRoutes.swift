import Foundation
import LiveListEngine
import LiveListHTTP

/// What serves a route of the app's own (``LiveListApp/route(_:_:csrf:paced:maximumBodyBytes:_:)``):
/// the CSRF token checked (or a session minted for a `GET`), the pace, the viewer, and the answer with
/// its cookies `Secure` over TLS.
struct AppOwnRoutes: Sendable {
    let configuration: ServerConfiguration
    let gate: AccessGate
    let keys: SessionKeys
    let cookies: SessionCookies
    let pacing: Pacing
    let trustedProxies: TrustedProxies
    let pages: AppPages
    let log: ServerLog

    /// The handler of one route: its head checked (a post without a session is refused before its
    /// body is read), its body read up to `limit`.
    func handler(checksToken: Bool, paced: Bool, limit: Int, _ handler: @escaping @Sendable (AppRequest) async throws -> HTTPResponse) -> HTTPHandler {
        HTTPHandler.async { [self] request in
            await answer(request, checksToken: checksToken, paced: paced, handler)
        }.checkingHeads { [keys] head in
            guard checksToken, keys.session(from: head) == nil else { return nil }
            return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
        }.acceptingBodies(upTo: limit)
    }

    func answer(
        _ request: HTTPRequest, checksToken: Bool, paced: Bool, _ handler: @Sendable (AppRequest) async throws -> HTTPResponse
    ) async -> HTTPResponse {
        let form = request.contentMediaType == "application/x-www-form-urlencoded" ? HeaderParsing.form(request.body) : [:]
        var session = keys.session(from: request)
        var setCookie: String?
        if checksToken {
            let token = request.headers["X-CSRF-Token"] ?? form["csrf"]
            guard let session, let token, keys.verify(token: token, sessionID: session) else {
                return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
            }
        } else if session == nil, request.method == .GET || request.method == .HEAD {
            let (id, cookie) = keys.mintSession()
            session = id
            setCookie = cookies.setCookie(cookie)
        }
        if paced, let refusal = pacing.pace(session: session, request, what: "requests", from: "browser") {
            return refusal
        }
        let subject = await gate.subject(request)
        let appRequest = AppRequest(
            http: request, head: RequestHead(request, trustedProxies: trustedProxies), identity: subject.identity,
            csrfToken: session.map { keys.csrfToken(for: $0) } ?? "", flash: request.cookie(FlashCookie.name).flatMap(pages.flashCookie.message(of:)),
            subject: subject, session: session, pages: pages, form: form)
        var response: HTTPResponse
        do {
            response = try await handler(appRequest)
        } catch let error as HTTPError {
            response = errorResponse(error)
        } catch {
            log.error("\(request.method) \(request.path): the app's route failed: \(error)")
            response = errorResponse(.routeFailed, "the server could not complete this request; its log says why")
        }
        if configuration.isSecure {
            // Over TLS every cookie an app route sets is Secure.
            let set = response.headers.values("Set-Cookie")
            response.headers.remove("Set-Cookie")
            for cookie in set {
                response.headers.add("Set-Cookie", cookie.lowercased().contains("; secure") ? cookie : cookie + "; Secure")
            }
        }
        if let setCookie {
            response.headers.add("Set-Cookie", setCookie)
        }
        return response
    }
}
