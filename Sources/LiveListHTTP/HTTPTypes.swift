import Markup

/// A request method. The parser knows these; any other token is answered 501.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    case GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH

    init?(bytes: UnsafeBufferPointer<UInt8>) {
        switch bytes.count {
        case 3:
            if bytes[0] == 0x47, bytes[1] == 0x45, bytes[2] == 0x54 { self = .GET; return }
            if bytes[0] == 0x50, bytes[1] == 0x55, bytes[2] == 0x54 { self = .PUT; return }
        case 4:
            if Self.equal(bytes, "HEAD") { self = .HEAD; return }
            if Self.equal(bytes, "POST") { self = .POST; return }
        case 5:
            if Self.equal(bytes, "PATCH") { self = .PATCH; return }
        case 6:
            if Self.equal(bytes, "DELETE") { self = .DELETE; return }
        case 7:
            if Self.equal(bytes, "OPTIONS") { self = .OPTIONS; return }
        default:
            break
        }
        return nil
    }

    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        let pointer = text.utf8Start
        for index in 0..<bytes.count where bytes[index] != pointer[index] { return false }
        return true
    }
}

/// The protocol version of a request. Only HTTP/1.0 and HTTP/1.1 are spoken; `HTTP/1.x`
/// with a higher minor version is treated as 1.1, any other major version is answered 505.
public enum HTTPVersion: Sendable, Hashable {
    case http1_0
    case http1_1
}

/// A response status: its code and reason phrase.
public struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    /// The three-digit status code.
    public let code: Int
    /// The reason phrase sent on the status line.
    public let reasonPhrase: String

    /// A status with the given code; the reason phrase is the standard one when known.
    public init(_ code: Int, reasonPhrase: String? = nil) {
        self.code = code
        self.reasonPhrase = reasonPhrase ?? HTTPStatus.standardPhrase(code)
    }

    public var description: String { "\(code) \(reasonPhrase)" }

    /// Whether a response with this status never carries content (1xx, 204, 304).
    public var forbidsBody: Bool { code < 200 || code == 204 || code == 304 }

    public static let `continue` = HTTPStatus(100)
    public static let ok = HTTPStatus(200)
    public static let created = HTTPStatus(201)
    public static let noContent = HTTPStatus(204)
    public static let partialContent = HTTPStatus(206)
    public static let movedPermanently = HTTPStatus(301)
    public static let seeOther = HTTPStatus(303)
    public static let notModified = HTTPStatus(304)
    public static let badRequest = HTTPStatus(400)
    public static let unauthorized = HTTPStatus(401)
    public static let forbidden = HTTPStatus(403)
    public static let notFound = HTTPStatus(404)
    public static let methodNotAllowed = HTTPStatus(405)
    public static let requestTimeout = HTTPStatus(408)
    public static let conflict = HTTPStatus(409)
    public static let lengthRequired = HTTPStatus(411)
    public static let preconditionFailed = HTTPStatus(412)
    public static let contentTooLarge = HTTPStatus(413)
    public static let uriTooLong = HTTPStatus(414)
    public static let unsupportedMediaType = HTTPStatus(415)
    public static let expectationFailed = HTTPStatus(417)
    public static let unprocessableContent = HTTPStatus(422)
    public static let tooManyRequests = HTTPStatus(429)
    public static let requestHeaderFieldsTooLarge = HTTPStatus(431)
    public static let internalServerError = HTTPStatus(500)
    public static let notImplemented = HTTPStatus(501)
    public static let serviceUnavailable = HTTPStatus(503)
    public static let gatewayTimeout = HTTPStatus(504)
    public static let httpVersionNotSupported = HTTPStatus(505)
    public static let found = HTTPStatus(302)
    public static let temporaryRedirect = HTTPStatus(307)
    public static let permanentRedirect = HTTPStatus(308)
    public static let notAcceptable = HTTPStatus(406)
    public static let gone = HTTPStatus(410)
    public static let badGateway = HTTPStatus(502)

    // The names of RFC 9110's predecessors, which Swift users reach for first (Vapor, Hummingbird,
    // Foundation's HTTPURLResponse documentation): the same statuses.

    /// 422, named in RFC 4918: ``unprocessableContent``.
    public static let unprocessableEntity = unprocessableContent
    /// 413, named in RFC 7231: ``contentTooLarge``.
    public static let payloadTooLarge = contentTooLarge
    /// 413, named in RFC 2616: ``contentTooLarge``.
    public static let requestEntityTooLarge = contentTooLarge
    /// 414, named in RFC 2616: ``uriTooLong``.
    public static let requestURITooLong = uriTooLong

    static func standardPhrase(_ code: Int) -> String {
        switch code {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Unknown"
        }
    }
}

/// Header fields in the order received or set. Names compare case-insensitively (ASCII).
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields as (name, value) pairs.
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { fields.append((name, value)) }
    }

    /// The value of the first field with this name.
    public subscript(name: String) -> String? {
        for field in fields where Self.same(field.name, name) { return field.value }
        return nil
    }

    /// Every value of the fields with this name, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.same($0.name, name) }.map(\.value)
    }

    /// Whether a field with this name is present.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Makes room for `count` fields.
    mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// The same fields in storage of their exact size (a parsed request's room for more let go), for
    /// headers kept long, such as an event stream's.
    package func compacted() -> HTTPHeaders {
        var copy = HTTPHeaders()
        copy.fields = fields.withUnsafeBufferPointer { Array($0) }
        return copy
    }

    /// Appends a field (keeping any others of the same name).
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field of this name by one with `value`.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    /// Removes every field with this name.
    public mutating func remove(_ name: String) { fields.removeAll { Self.same($0.name, name) } }

    /// Whether a comma-separated list field (such as `Connection`) holds `token`, case-insensitively.
    public func hasToken(_ token: String, in name: String) -> Bool {
        for value in values(name) {
            for part in value.split(separator: ",") {
                if Self.same(part.trimmingSpaces, token) { return true }
            }
        }
        return false
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    static func same<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        // Field names are compared on every lookup: over contiguous bytes (native and small strings)
        // when both have them, not through the views' iterators.
        let contiguous = x.withContiguousStorageIfAvailable { xs in
            y.withContiguousStorageIfAvailable { ys in equalIgnoringASCIICase(xs, ys) }
        }
        if let result = contiguous ?? nil { return result }
        return equalIgnoringASCIICase(x, y)
    }
}

/// Whether two byte strings are equal once their ASCII letters are lowercased (other bytes compare
/// as they are): field names, media types, tokens.
func equalIgnoringASCIICase(_ x: some Collection<UInt8>, _ y: some Collection<UInt8>) -> Bool {
    guard x.count == y.count else { return false }
    for (p, q) in zip(x, y) where p != q {
        let lp = (p >= 0x41 && p <= 0x5A) ? p | 0x20 : p
        let lq = (q >= 0x41 && q <= 0x5A) ? q | 0x20 : q
        if lp != lq { return false }
    }
    return true
}

extension StringProtocol {
    /// The text without surrounding spaces and tabs (optional whitespace, RFC 9110 section 5.6.3).
    package var trimmingSpaces: Substring {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}

/// A refusal by the HTTP layer (or by a handler that wants the same error shape).
public struct HTTPError: Error, Sendable, Hashable {
    /// The status to answer with.
    public var status: HTTPStatus
    /// A stable word naming the problem, such as `body_too_large`.
    public var code: String
    /// A human-readable explanation.
    public var detail: String
    /// Seconds after which the request may be sent again (`Retry-After`), for a 429 or a 503.
    public var retryAfter: Int?

    public init(_ status: HTTPStatus, code: String, detail: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.detail = detail
        self.retryAfter = retryAfter
    }
}

/// Turns an `HTTPError` into a response body and its content type. The server and the router
/// use it for their own refusals, so the layer above can give every error the same shape.
public typealias HTTPErrorFormatter = @Sendable (HTTPError) -> (contentType: String, body: [UInt8])

/// The default formatter: `{"error": CODE, "detail": TEXT}` as `application/json`.
public let defaultHTTPErrorFormatter: HTTPErrorFormatter = { error in
    var writer = JSONWriter(capacity: error.code.utf8.count + error.detail.utf8.count + 32)
    writer.beginObject()
    writer.key("error")
    writer.string(error.code)
    writer.key("detail")
    writer.string(error.detail)
    writer.endObject()
    return ("application/json", writer.bytes)
}
