/// A response: status, header fields and either the whole body or a stream.
///
/// The server adds `Date`, `Server`, `Content-Length` or `Transfer-Encoding` and `Connection`
/// itself; fields of those names set here are replaced.
public struct HTTPResponse: Sendable {
    /// The content of a response.
    public enum Body: Sendable {
        /// The whole body, sent with `Content-Length`.
        case bytes([UInt8])
        /// A body written over time through an `HTTPStream` (chunked on HTTP/1.1, close-delimited
        /// on HTTP/1.0). `start` runs on the connection's event loop once the head is queued; it
        /// must not block. Not called for `HEAD` requests.
        case stream(StreamOptions, @Sendable (HTTPStream) -> Void)
    }

    /// Settings of a streamed body.
    public struct StreamOptions: Sendable {
        /// Bytes sent together with the head (for SSE a `retry:` line or a comment, so that the
        /// client's `onopen` fires and proxies commit the response).
        public var initialBytes: [UInt8]
        /// When set, `heartbeatBytes` are written whenever nothing was written for this long.
        public var heartbeatInterval: Duration?
        /// The heartbeat (for SSE the comment line `: ping`).
        public var heartbeatBytes: [UInt8]

        public init(initialBytes: [UInt8] = [], heartbeatInterval: Duration? = nil, heartbeatBytes: [UInt8] = []) {
            self.initialBytes = initialBytes
            self.heartbeatInterval = heartbeatInterval
            self.heartbeatBytes = heartbeatBytes
        }
    }

    /// The status.
    public var status: HTTPStatus
    /// Header fields.
    public var headers: HTTPHeaders {
        didSet { encodedFields = nil }
    }
    /// The fields as they go on the wire, when ``prepared()`` encoded them (dropped on any change).
    var encodedFields: [UInt8]?
    /// Set on the representations a ``PreparedResponse`` chose between: the compression layer made
    /// its decision for them already, so it passes them through untouched. A handler that settles
    /// its own encoding (a page spliced into gzip, or plain for a client that takes none, already
    /// carrying `Vary: Accept-Encoding`) may set it too.
    package var compressionSettled = false
    /// The content.
    public var body: Body
    /// Names these exact body bytes for the compression cache (`HTTPHandler.compressed`), so that
    /// their gzip is made once and reused: set it only to a value that decides the body completely,
    /// such as the resource's path with its version. Without it, large bodies are kept under the
    /// hash of their content. Never sent.
    public var compressionKey: String?
    /// The refusal this response answers, when it was made by ``error(_:formatter:)``: lets the layer
    /// above present it again (an HTML page for a browser) from its fields instead of its body.
    public var refusal: HTTPError?

    /// A response with the whole body.
    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = .bytes(body)
    }

    /// A response with a streamed body.
    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), options: StreamOptions = StreamOptions(), stream start: @escaping @Sendable (HTTPStream) -> Void) {
        self.status = status
        self.headers = headers
        self.body = .stream(options, start)
    }

    /// This response with its header fields encoded now, for a response kept and sent many times:
    /// each send then copies them as one piece. Changing `headers` later drops the encoding.
    public func prepared() -> HTTPResponse {
        var response = self
        response.encodedFields = ResponseEncoder.fields(headers)
        return response
    }

    /// Adds a field as `headers.add` does, and when the fields were prepared, appends it to their
    /// encoding instead of dropping it: a prepared response given one field of its own per request
    /// (a page's `Set-Cookie`) is not encoded again whole.
    package mutating func addField(_ name: String, _ value: String) {
        let encoded = encodedFields
        headers.add(name, value)
        if var encoded {
            ResponseEncoder.appendFields([(name: name, value: value)], to: &encoded)
            encodedFields = encoded
        }
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// A `text/html; charset=utf-8` response.
    public static func html(_ bytes: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8"], body: bytes)
    }

    /// An `application/json` response.
    public static func json(_ bytes: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: bytes)
    }

    /// The response for an error, shaped by `formatter`.
    public static func error(_ error: HTTPError, formatter: HTTPErrorFormatter = defaultHTTPErrorFormatter) -> HTTPResponse {
        let (contentType, body) = formatter(error)
        var response = HTTPResponse(status: error.status, headers: ["Content-Type": contentType], body: body)
        if let seconds = error.retryAfter {
            response.headers.set("Retry-After", String(max(0, seconds)))
        }
        response.refusal = error
        return response
    }

    /// A Server-Sent Events stream: `text/event-stream`, `Cache-Control: no-cache`,
    /// `X-Accel-Buffering: no`; sent with the head, the `opening` event (carrying `retry:` when given),
    /// else a `retry:` line alone, else the comment `: open`; and after `heartbeat` without writes, the
    /// comment line `: ping`.
    ///
    /// The heartbeat is one line with no blank line after it, so that no parser ends an event there:
    /// some clients hand out an event with empty data for every blank line once they have seen an id.
    /// A `retry:` line alone is such a block too; give an `opening` with data to carry it.
    public static func eventStream(
        headers extra: HTTPHeaders = HTTPHeaders(), retry: Int? = nil, opening: ServerSentEvent? = nil,
        heartbeat: Duration? = .seconds(15),
        start: @escaping @Sendable (HTTPStream) -> Void
    ) -> HTTPResponse {
        var headers: HTTPHeaders = [
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]
        for (name, value) in extra { headers.set(name, value) }
        let initial: [UInt8]
        if var opening {
            opening.retry = retry ?? opening.retry
            initial = opening.encoded
        } else {
            initial = retry.map { Array("retry: \($0)\n\n".utf8) } ?? Array(": open\n\n".utf8)
        }
        let options = StreamOptions(initialBytes: initial, heartbeatInterval: heartbeat, heartbeatBytes: ping)
        return HTTPResponse(status: .ok, headers: headers, options: options, stream: start)
    }

    /// An event stream's heartbeat, one buffer that every stream's refers to (an idle stream holds
    /// no copy of its own).
    private static let ping = Array(": ping\n".utf8)
}

/// One Server-Sent Event. Encoding splits `data` into one `data:` line per line and removes
/// CR, LF and NUL from `id` and `event`, so no field can break the framing.
public struct ServerSentEvent: Sendable, Hashable {
    public var id: String?
    public var event: String?
    public var data: String
    public var retry: Int?

    public init(id: String? = nil, event: String? = nil, data: String, retry: Int? = nil) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
    }

    /// The event in the wire format, ending with the blank line.
    public var encoded: [UInt8] {
        Self.encode(id: id, event: event, data: Array(data.utf8), retry: retry)
    }

    /// An event in the wire format (WHATWG HTML, "Server-sent events"), ending with the blank line: the
    /// server's one SSE framer. Line breaks in `data` (CR, LF or CRLF) start new `data:` lines; CR, LF
    /// and NUL are dropped from the other fields. Data without line breaks, such as JSON, is copied in
    /// one piece.
    public static func encode(id: String?, event: String?, data: [UInt8], retry: Int? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + (id?.utf8.count ?? 0) + (event?.utf8.count ?? 0) + 32)
        func field(_ name: String, _ value: String) {
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            for byte in value.utf8 where byte != 0x0D && byte != 0x0A && byte != 0 { bytes.append(byte) }
            bytes.append(0x0A)
        }
        if let event { field("event", event) }
        if let id { field("id", id) }
        if let retry { field("retry", String(retry)) }
        var lineStart = 0
        var index = 0
        while index < data.count {
            let byte = data[index]
            guard byte == 0x0D || byte == 0x0A else {
                index += 1
                continue
            }
            bytes.append(contentsOf: "data: ".utf8)
            bytes.append(contentsOf: data[lineStart ..< index])
            bytes.append(0x0A)
            // CRLF is one line break.
            index += byte == 0x0D && index + 1 < data.count && data[index + 1] == 0x0A ? 2 : 1
            lineStart = index
        }
        bytes.append(contentsOf: "data: ".utf8)
        bytes.append(contentsOf: data[lineStart...])
        bytes.append(0x0A)
        bytes.append(0x0A)
        return bytes
    }
}

extension ServerSentEvent {
    /// The start of an event whose data is one line given in two parts: `event:`, `id:` and
    /// `data: ` followed by the first part. With ``encodeEnd(data:)`` of the second part it makes
    /// the same bytes as ``encode(id:event:data:retry:)`` of both parts joined, so that a second
    /// part that several events share (one changeset sent from different starts, or under
    /// different ids) is framed once and queued by reference. Nil when the part holds a line break.
    public static func encodeStart(id: String?, event: String?, data: [UInt8]) -> [UInt8]? {
        guard !data.contains(where: { $0 == 0x0D || $0 == 0x0A }) else { return nil }
        var bytes = encode(id: id, event: event, data: data)
        bytes.removeLast(2)
        return bytes
    }

    /// The end of an event begun by ``encodeStart(id:event:data:)``: the rest of its data line and the
    /// blank line. Nil when the part holds a line break.
    public static func encodeEnd(data: [UInt8]) -> [UInt8]? {
        guard !data.contains(where: { $0 == 0x0D || $0 == 0x0A }) else { return nil }
        var bytes = data
        bytes.append(0x0A)
        bytes.append(0x0A)
        return bytes
    }
}

/// Encodes response heads.
enum ResponseEncoder {
    static let continueBytes: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    static let managedFields = ["Date", "Server", "Content-Length", "Transfer-Encoding", "Connection"]

    /// The status line and fields. `contentLength` nil and `chunked` false mean neither is sent.
    static func head(
        _ response: HTTPResponse, contentLength: Int?, chunked: Bool, close: Bool, keepAliveHeader: Bool,
        date: [UInt8], server: [UInt8], capacity: Int
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity + 160 + response.headers.count * 40)
        bytes.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(response.status.code, to: &bytes)
        bytes.append(0x20)
        bytes.append(contentsOf: response.status.reasonPhrase.utf8)
        bytes.append(contentsOf: "\r\nDate: ".utf8)
        bytes.append(contentsOf: date)
        if !server.isEmpty {
            bytes.append(contentsOf: "\r\nServer: ".utf8)
            bytes.append(contentsOf: server)
        }
        if let fields = response.encodedFields {
            bytes.append(contentsOf: fields)
        } else {
            appendFields(response.headers, to: &bytes)
        }
        if let contentLength {
            bytes.append(contentsOf: "\r\nContent-Length: ".utf8)
            appendDecimal(contentLength, to: &bytes)
        }
        if chunked { bytes.append(contentsOf: "\r\nTransfer-Encoding: chunked".utf8) }
        if close {
            bytes.append(contentsOf: "\r\nConnection: close".utf8)
        } else if keepAliveHeader {
            bytes.append(contentsOf: "\r\nConnection: keep-alive".utf8)
        }
        bytes.append(contentsOf: "\r\n\r\n".utf8)
        return bytes
    }

    /// The fields a handler set, each as `\r\nName: value`, without those the server sets itself.
    static func fields(_ headers: HTTPHeaders) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headers.count * 40)
        appendFields(headers, to: &bytes)
        return bytes
    }

    static func appendFields(_ headers: some Sequence<(name: String, value: String)>, to bytes: inout [UInt8]) {
        for (name, value) in headers {
            if isManaged(name) { continue }
            bytes.append(contentsOf: "\r\n".utf8)
            appendSanitized(name, to: &bytes)
            bytes.append(contentsOf: ": ".utf8)
            appendSanitized(value, to: &bytes)
        }
    }

    /// Whether the server sets this field itself (compares lengths first: most names differ there).
    @inline(__always)
    static func isManaged(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: HTTPHeaders.same(name, "Date")
        case 6: HTTPHeaders.same(name, "Server")
        case 10: HTTPHeaders.same(name, "Connection")
        case 14: HTTPHeaders.same(name, "Content-Length")
        case 17: HTTPHeaders.same(name, "Transfer-Encoding")
        default: false
        }
    }

    /// Appends header text, dropping CR, LF and NUL so a handler can never split a response.
    private static func appendSanitized(_ text: String, to bytes: inout [UInt8]) {
        let copied = text.utf8.withContiguousStorageIfAvailable { buffer -> Bool in
            for byte in buffer where byte == 0x0D || byte == 0x0A || byte == 0 { return false }
            bytes.append(contentsOf: buffer)
            return true
        }
        if copied == true { return }
        for byte in text.utf8 where byte != 0x0D && byte != 0x0A && byte != 0 { bytes.append(byte) }
    }

    static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        if value < 10 { bytes.append(UInt8(0x30 + value)); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[count] = UInt8(0x30 + rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// Frames `payload` as one chunk.
    static func appendChunk(_ payload: [UInt8], to bytes: inout [UInt8]) {
        guard !payload.isEmpty else { return }
        bytes.append(contentsOf: String(payload.count, radix: 16).utf8)
        bytes.append(0x0D); bytes.append(0x0A)
        bytes.append(contentsOf: payload)
        bytes.append(0x0D); bytes.append(0x0A)
    }

    /// The size line that opens a chunk of `count` bytes (`count` > 0).
    static func chunkHeader(_ count: Int) -> [UInt8] {
        var header = Array(String(count, radix: 16).utf8)
        header.append(0x0D)
        header.append(0x0A)
        return header
    }

    static let crlf: [UInt8] = [0x0D, 0x0A]
    static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
}
