import Foundation
import Synchronization
public import LiveListEngine
public import LiveListHTTP

/// A request to a route of the app's own (``LiveListApp/route(_:_:csrf:paced:maximumBodyBytes:_:)``):
/// its head and body, its path parameters, the viewer's identity, and the CSRF token that a form of the
/// page must carry back.
public struct AppRequest: Sendable {
    /// The whole request.
    public let http: HTTPRequest
    /// What `authenticate` sees of it.
    public let head: RequestHead
    /// Who the app's `authenticate` says the viewer is; nil when nobody is signed in or the app has none.
    public let identity: Identity?
    /// The CSRF token of the request's browser session: put it in a form's `csrf` field (``csrfField``)
    /// or a script's `X-CSRF-Token` header. A `GET` without a session gets one, its cookie set by the
    /// response; other methods never mint one.
    public let csrfToken: String
    /// The flash message a redirect left for this request (``redirect(to:flash:)``), nil when none:
    /// ``page(title:status:_:)`` shows it and clears it.
    public let flash: String?
    /// Who asks, as the gate knows it (for embedded lists).
    let subject: AccessGate.Subject
    /// The browser session's id, nil when it has none.
    let session: String?
    /// The app's pages: its layout, and what embeds lists.
    let pages: AppPages

    /// The value of the path parameter `name` (`:name` in the route's pattern).
    public func parameter(_ name: String) -> String? {
        http.pathParameters[name]
    }

    /// The first value of the query parameter `name`.
    public func query(_ name: String) -> String? {
        http.queryValue(name)
    }

    /// The value of the cookie `name`.
    public func cookie(_ name: String) -> String? {
        http.cookie(name)
    }

    /// The fields of a form body (`application/x-www-form-urlencoded`), parsed once; empty for any
    /// other body.
    public let form: [String: String]

    /// The JSON body decoded as `type`.
    ///
    /// - Throws: `HTTPError`: 415 when the body is not `application/json`, 400 when it does not decode
    ///   (the route answers it as thrown).
    public func json<T: Decodable>(_ type: T.Type) throws(HTTPError) -> T {
        guard http.contentMediaType == "application/json" else {
            throw ErrorCode.unsupportedMediaType.error("Content-Type: \(quoted(http.headers["Content-Type"] ?? "")); send application/json")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(http.body))
        } catch {
            throw ErrorCode.malformedJSON.error("body: not a \(T.self): \(error)")
        }
    }

    /// A hidden form field that carries ``csrfToken``: `<input type="hidden" name="csrf" value="…">`.
    public var csrfField: String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(csrfToken)\">"
    }

    /// The `next=` query parameter when it is a path of this server (`/lists/team`), else `fallback`:
    /// where a sign-in form goes after it succeeds, never another origin.
    public func nextPath(or fallback: String = "/") -> String {
        guard let next = http.queryValue("next") ?? form["next"], SameOrigin.isPath(next) else { return fallback }
        return next
    }
}

/// A cookie that an app route sets (``HTTPResponse/setCookie(_:)``). Served over TLS (or with
/// `isSecure`), every cookie an app route sets is `Secure`.
public struct Cookie: Sendable {
    /// `SameSite`: `Lax` (the default) sends it on top-level navigations from elsewhere, `Strict` never
    /// from elsewhere, `None` always (which needs `Secure`).
    public enum SameSite: String, Sendable {
        case lax = "Lax"
        case strict = "Strict"
        case none = "None"
    }

    public var name: String
    public var value: String
    public var path: String
    /// Seconds until it expires; nil for a cookie that ends with the browser session.
    public var maxAge: Int?
    /// Whether scripts may not read it. Default true.
    public var httpOnly: Bool
    /// Whether it is sent over HTTPS only. Default false; the server adds it when served over TLS.
    public var secure: Bool
    public var sameSite: SameSite

    public init(_ name: String, _ value: String, path: String = "/", maxAge: Int? = nil, httpOnly: Bool = true, secure: Bool = false, sameSite: SameSite = .lax) {
        self.name = name
        self.value = value
        self.path = path
        self.maxAge = maxAge
        self.httpOnly = httpOnly
        self.secure = secure
        self.sameSite = sameSite
    }

    /// The `Set-Cookie` value. Bytes that would break the field (`;`, `,`, blanks, controls, quotes,
    /// backslashes) are percent-encoded in the value, and the name keeps token characters only.
    var headerValue: String {
        let safeName = String(name.unicodeScalars.filter { $0.value > 0x20 && $0.value < 0x7F && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains($0) })
        var safeValue = ""
        for byte in value.utf8 {
            if byte > 0x20, byte < 0x7F, byte != 0x22, byte != 0x2C, byte != 0x3B, byte != 0x5C, byte != 0x25 {
                safeValue.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                safeValue += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        // A path that could end the attribute (`;`, `,`) or is not of this origin is `/`.
        let safePath = SameOrigin.isPath(path) && !path.contains(";") && !path.contains(",") && path.allSatisfy(\.isASCII) ? path : "/"
        var text = "\(safeName)=\(safeValue); Path=\(safePath)"
        if let maxAge { text += "; Max-Age=\(max(0, maxAge))" }
        if httpOnly { text += "; HttpOnly" }
        if secure || sameSite == .none { text += "; Secure" }
        text += "; SameSite=\(sameSite.rawValue)"
        return text
    }
}

extension HTTPResponse {
    /// An HTML page of the app's own: `text/html; charset=utf-8`, not cached, with the headers that
    /// keep a page safe by default: `X-Content-Type-Options: nosniff` and a Content-Security-Policy
    /// that loads scripts, styles and images from this origin only, no inline script or style, no
    /// plug-ins, forms posted to this origin, and no framing by another site
    /// (``appPageSecurityPolicy``). A page that needs more sets its own `Content-Security-Policy`.
    public static func page(_ html: String, status: HTTPStatus = .ok) -> HTTPResponse {
        var response = HTTPResponse.html(Array(html.utf8), status: status)
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("Content-Security-Policy", appPageSecurityPolicy)
        response.headers.set("X-Content-Type-Options", "nosniff")
        return response
    }

    /// The Content-Security-Policy of ``page(_:status:)``.
    public static let appPageSecurityPolicy =
        "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"

    /// A redirect to a path of this server (`303 See Other` by default: the answer to a form post).
    /// A location that is not a same-origin path goes to `/` instead.
    public static func redirect(to location: String, status: HTTPStatus = .seeOther) -> HTTPResponse {
        var response = HTTPResponse(status: status)
        response.headers.set("Location", SameOrigin.isPath(location) ? location : "/")
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// JSON of an `Encodable` value (keys sorted).
    public static func json(encoding value: some Encodable, status: HTTPStatus = .ok) throws -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var response = HTTPResponse.json(Array(try encoder.encode(value)), status: status)
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// Adds a `Set-Cookie` field.
    public mutating func setCookie(_ cookie: Cookie) {
        headers.add("Set-Cookie", cookie.headerValue)
    }

    /// Adds a `Set-Cookie` field that removes the cookie `name`.
    public mutating func clearCookie(_ name: String, path: String = "/") {
        setCookie(Cookie(name, "", path: path, maxAge: 0))
    }
}

/// The app's routes, added to the router when the server starts.
final class AppRoutes: Sendable {
    struct Route: Sendable {
        var method: HTTPMethod
        var pattern: String
        var handler: HTTPHandler
    }

    private let routes = Mutex<[Route]>([])

    func add(_ route: Route) {
        routes.withLock { $0.append(route) }
    }

    var all: [Route] { routes.withLock { $0 } }
}

/// Text for HTML (an element's content or a double-quoted attribute value), escaped as LiveList's own
/// pages escape it: what an app's own page puts around a value that came from a request.
public func escapeHTML(_ text: String) -> String {
    ErrorPages.escaped(text)
}
