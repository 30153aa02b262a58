#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Limits applied while parsing a request. Every limit is in bytes unless said otherwise.
public struct HTTPParserLimits: Sendable, Hashable {
    /// Longest request line (method, target and version, without CRLF); beyond it 414.
    public var requestLine: Int = 8 * 1024
    /// Largest header section (all field lines with their CRLFs); beyond it 431.
    public var headerBlock: Int = 32 * 1024
    /// Most header fields (and, separately, trailer fields); beyond it 431.
    public var headerCount: Int = 100
    /// Largest body, whether Content-Length or chunked; beyond it 413.
    public var body: Int = 8 * 1024 * 1024
    /// Longest chunk-size line, extensions included; beyond it 400.
    public var chunkLine: Int = 4 * 1024

    public init() {}
}

/// An incremental, strict HTTP/1.1 request parser (RFC 9112). Bytes are appended in pieces of
/// any size; `next()` yields complete requests in order (pipelining) or the first error.
/// After an error the parser stays failed: the framing of what follows cannot be trusted.
/// The incremental request parser (RFC 9112); package-visible for the `FuzzRequestParser` harness.
/// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
@_spi(Benchmarks) public struct RequestParser {
    /// What ``next()`` found in the bytes buffered so far.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public enum Event {
        /// More bytes are needed.
        case needMore
        /// The head of a request that announces a body, before any of the body is read (reported
        /// once per such request, before `continueExpected`): the request with an empty body, and
        /// the `Content-Length` (nil for a chunked body).
        case head(HTTPRequest, contentLength: Int?)
        /// The head asked for `100-continue` and a body is expected (reported once per request).
        case continueExpected
        /// A complete request.
        case request(HTTPRequest)
        /// A refusal; the connection must be closed after answering it.
        case error(HTTPError)
    }

    enum State {
        case requestLine
        case headers
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case failed(HTTPError)
    }

    let limits: HTTPParserLimits
    var buffer: [UInt8] = []
    var start = 0
    var scanFrom = 0
    var state: State = .requestLine
    var emptyLinesSkipped = 0

    // The request being assembled.
    var method: HTTPMethod = .GET
    var version: HTTPVersion = .http1_1
    var rawTarget: [UInt8] = []
    var headers = HTTPHeaders()
    var trailers = HTTPHeaders()
    /// The header fields of the request being read (or refused), as far as they were read.
    package var headersSoFar: HTTPHeaders { headers }
    var sectionBytes = 0
    var sectionCount = 0
    var body: [UInt8] = []
    var pendingContinue = false
    var pendingHead = false
    var announcedLength: Int?
    /// The largest body of the request being read: the server's limit, or less where its route
    /// says so (`limitBody(to:)`).
    var bodyLimit: Int
    var decoded = DecodedTarget(path: "/", segments: [], query: [], authority: nil)
    var keepAlive = true
    var host = ""

    /// A parser at the start of a connection, refusing what exceeds `limits`.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
        bodyLimit = limits.body
    }

    /// Lowers the body limit of the request whose head was just returned: a chunked body is refused
    /// (413) once it passes `limit`. A fixed body's announced length is checked by the caller.
    mutating func limitBody(to limit: Int) {
        bodyLimit = min(limits.body, max(0, limit))
    }

    /// Whether no byte of a next request has arrived.
    var isIdle: Bool {
        if case .requestLine = state { return start == buffer.count && emptyLinesSkipped == 0 }
        return false
    }

    /// Whether the head is complete and the body is being read.
    var isReadingBody: Bool {
        switch state {
        case .fixedBody, .chunkSize, .chunkData, .chunkDataEnd, .trailers: true
        default: false
        }
    }

    /// Bytes held but not yet consumed.
    var bufferedBytes: Int { buffer.count - start }

    /// Bytes of the current request's body read so far.
    var bodyBytes: Int { body.count }

    /// Appends received bytes.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends received bytes.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public mutating func append<S: Sequence>(contentsOf bytes: S) where S.Element == UInt8 {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Frees the buffer's storage when everything has been consumed (idle connections stay small).
    mutating func releaseMemoryIfIdle() {
        if start == buffer.count, buffer.capacity > 0 {
            buffer = []
            start = 0
            scanFrom = 0
        }
    }

    mutating func compact() {
        if start == buffer.count {
            if start > 0 { buffer.removeAll(keepingCapacity: true) }
            start = 0
            scanFrom = 0
        } else if start >= 4096, start * 2 >= buffer.count {
            buffer.removeFirst(start)
            scanFrom -= start
            start = 0
        }
    }

    /// Parses as far as the buffered bytes allow.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public mutating func next() -> Event {
        if pendingContinue {
            pendingContinue = false
            return .continueExpected
        }
        while true {
            switch state {
            case .failed(let error):
                return .error(error)
            case .requestLine:
                switch readLine(limit: limits.requestLine) {
                case .needMore: return .needMore
                case .tooLong: return fail(requestLineTooLong())
                case .bareLF: return fail(bad("bare_lf", "request line ends in LF without CR"))
                case .bareCR: return fail(bad("bare_cr", "bare CR in request line"))
                case .line(let range):
                    if range.isEmpty {
                        emptyLinesSkipped += 1
                        if emptyLinesSkipped > 4 { return fail(bad("malformed_request_line", "too many empty lines before the request line")) }
                        continue
                    }
                    if let error = parseRequestLine(range) { return fail(error) }
                    state = .headers
                }
            case .headers:
                switch readLine(limit: max(0, limits.headerBlock - sectionBytes)) {
                case .needMore: return .needMore
                case .tooLong: return fail(HTTPError(.requestHeaderFieldsTooLarge, code: "headers_too_large", detail: "header section exceeds \(limits.headerBlock) bytes"))
                case .bareLF: return fail(bad("bare_lf", "header line ends in LF without CR"))
                case .bareCR: return fail(bad("bare_cr", "bare CR in header section"))
                case .line(let range):
                    if range.isEmpty {
                        if let error = finishHead() { return fail(error) }
                        if case .requestLine = state { return .request(completeRequest()) }
                        if pendingHead {
                            pendingHead = false
                            return .head(headRequest(), contentLength: announcedLength)
                        }
                        if pendingContinue {
                            pendingContinue = false
                            return .continueExpected
                        }
                        continue
                    }
                    switch parseField(range) {
                    case .failure(let error): return fail(error)
                    case .success(let field):
                        // One allocation for the fields of most requests (a browser sends about ten).
                        if sectionCount == 1 { headers.reserveCapacity(12) }
                        headers.add(field.name, field.value)
                    }
                }
            case .fixedBody(let remaining):
                let take = min(remaining, buffer.count - start)
                if take == 0 { return .needMore }
                body.append(contentsOf: buffer[start..<(start + take)])
                start += take
                scanFrom = start
                if take == remaining { return .request(completeRequest()) }
                state = .fixedBody(remaining: remaining - take)
                return .needMore
            case .chunkSize:
                switch readLine(limit: limits.chunkLine) {
                case .needMore: return .needMore
                case .tooLong: return fail(bad("invalid_chunk", "chunk-size line exceeds \(limits.chunkLine) bytes"))
                case .bareLF: return fail(bad("bare_lf", "chunk-size line ends in LF without CR"))
                case .bareCR: return fail(bad("bare_cr", "bare CR in chunk-size line"))
                case .line(let range):
                    switch parseChunkSize(range) {
                    case .failure(let error): return fail(error)
                    case .success(0):
                        sectionBytes = 0
                        sectionCount = 0
                        state = .trailers
                    case .success(let size):
                        if size > bodyLimit - body.count { return fail(tooLarge()) }
                        state = .chunkData(remaining: size)
                    }
                }
            case .chunkData(let remaining):
                let take = min(remaining, buffer.count - start)
                if take == 0 { return .needMore }
                body.append(contentsOf: buffer[start..<(start + take)])
                start += take
                scanFrom = start
                state = take == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            case .chunkDataEnd:
                if buffer.count - start < 2 {
                    if buffer.count - start == 1, buffer[start] != 0x0D {
                        return fail(bad("invalid_chunk", "chunk data not followed by CRLF"))
                    }
                    return .needMore
                }
                guard buffer[start] == 0x0D, buffer[start + 1] == 0x0A else {
                    return fail(bad("invalid_chunk", "chunk data not followed by CRLF"))
                }
                start += 2
                scanFrom = start
                state = .chunkSize
            case .trailers:
                switch readLine(limit: max(0, limits.headerBlock - sectionBytes)) {
                case .needMore: return .needMore
                case .tooLong: return fail(HTTPError(.requestHeaderFieldsTooLarge, code: "headers_too_large", detail: "trailer section exceeds \(limits.headerBlock) bytes"))
                case .bareLF: return fail(bad("bare_lf", "trailer line ends in LF without CR"))
                case .bareCR: return fail(bad("bare_cr", "bare CR in trailer section"))
                case .line(let range):
                    if range.isEmpty { return .request(completeRequest()) }
                    let name: String
                    switch parseField(range) {
                    case .failure(let error): return fail(error)
                    case .success(let field):
                        trailers.add(field.name, field.value)
                        name = field.name
                    }
                    for forbidden in ["content-length", "transfer-encoding", "host", "connection", "trailer", "te", "expect", "content-encoding", "content-type"]
                    where HTTPHeaders.same(name, forbidden) {
                        return fail(bad("forbidden_trailer", "trailer field \(name) is not allowed"))
                    }
                }
            }
        }
    }

    // MARK: - Lines

    enum LineResult {
        case line(Range<Int>)
        case needMore
        case tooLong
        case bareLF
        case bareCR
    }

    /// Finds the next CRLF-terminated line; `limit` bounds its length without the CRLF.
    mutating func readLine(limit: Int) -> LineResult {
        let count = buffer.count
        let scan = scanFrom
        let lf: Int? = buffer.withUnsafeBufferPointer { pointer -> Int? in
            guard scan < count, let base = pointer.baseAddress else { return nil }
            guard let hit = memchr(base + scan, 0x0A, count - scan) else { return nil }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
        guard let lf else {
            if count - start > limit + 1 { return .tooLong }
            scanFrom = count
            return .needMore
        }
        guard lf > start, buffer[lf - 1] == 0x0D else { return .bareLF }
        let end = lf - 1
        if end - start > limit { return .tooLong }
        let lineStart = start
        let hasCR: Bool = buffer.withUnsafeBufferPointer { pointer in
            guard end > lineStart, let base = pointer.baseAddress else { return false }
            return memchr(base + lineStart, 0x0D, end - lineStart) != nil
        }
        if hasCR { return .bareCR }
        start = lf + 1
        scanFrom = start
        return .line(lineStart..<end)
    }

    // MARK: - Request line

    mutating func parseRequestLine(_ range: Range<Int>) -> HTTPError? {
        let line = buffer[range]
        guard let firstSpace = line.firstIndex(of: 0x20) else {
            return bad("malformed_request_line", "request line has no spaces")
        }
        let afterMethod = firstSpace + 1
        guard let secondSpace = line[afterMethod...].firstIndex(of: 0x20) else {
            return bad("malformed_request_line", "request line needs method, target and version")
        }
        let methodBytes = line[line.startIndex..<firstSpace]
        let targetBytes = line[afterMethod..<secondSpace]
        let versionBytes = line[(secondSpace + 1)...]
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(isTokenByte) else {
            return bad("malformed_request_line", "method is not a token")
        }
        guard !targetBytes.isEmpty else { return bad("malformed_request_line", "empty request target") }
        guard targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return bad("malformed_request_line", "request target contains a space, control character or non-ASCII byte")
        }
        // HTTP-version = "HTTP/" DIGIT "." DIGIT
        let v = versionBytes.startIndex
        guard versionBytes.count == 8, line[v] == 0x48, line[v + 1] == 0x54, line[v + 2] == 0x54, line[v + 3] == 0x50,
              line[v + 4] == 0x2F, isDigit(line[v + 5]), line[v + 6] == 0x2E, isDigit(line[v + 7])
        else { return bad("malformed_request_line", "malformed HTTP version") }
        guard line[v + 5] == 0x31 else {
            return HTTPError(.httpVersionNotSupported, code: "unsupported_version", detail: "only HTTP/1.0 and HTTP/1.1 are supported")
        }
        version = line[v + 7] == 0x30 ? .http1_0 : .http1_1
        let known: HTTPMethod? = buffer.withUnsafeBufferPointer { pointer in
            HTTPMethod(bytes: UnsafeBufferPointer(rebasing: pointer[methodBytes.startIndex..<methodBytes.endIndex]))
        }
        guard let known else {
            return HTTPError(.notImplemented, code: "unsupported_method", detail: "method \(String(decoding: methodBytes, as: UTF8.self)) is not implemented")
        }
        method = known
        rawTarget = Array(targetBytes)
        return nil
    }

    func requestLineTooLong() -> HTTPError {
        // Classify by the first limit + 1 bytes only, so any split of the input gives the same answer.
        let partial = buffer[start..<min(buffer.count, start + limits.requestLine + 1)]
        var spaces = 0
        for byte in partial where byte == 0x20 { spaces += 1; if spaces > 1 { break } }
        switch spaces {
        case 0 where partial.allSatisfy(isTokenByte):
            return HTTPError(.notImplemented, code: "unsupported_method", detail: "method is longer than any implemented")
        case 1:
            return HTTPError(.uriTooLong, code: "uri_too_long", detail: "request target exceeds \(limits.requestLine) bytes")
        default:
            return bad("malformed_request_line", "request line exceeds \(limits.requestLine) bytes")
        }
    }

    // MARK: - Completion

    /// The request being read, without its body (for `Event.head`).
    func headRequest() -> HTTPRequest {
        HTTPRequest(
            method: method, version: version,
            target: String(decoding: rawTarget, as: UTF8.self),
            path: decoded.path, pathSegments: decoded.segments, query: decoded.query,
            headers: headers, body: [], trailers: HTTPHeaders(), keepAlive: keepAlive, host: host)
    }

    mutating func completeRequest() -> HTTPRequest {
        let request = HTTPRequest(
            method: method, version: version,
            target: String(decoding: rawTarget, as: UTF8.self),
            path: decoded.path, pathSegments: decoded.segments, query: decoded.query,
            headers: headers, body: body, trailers: trailers, keepAlive: keepAlive, host: host)
        headers = HTTPHeaders()
        trailers = HTTPHeaders()
        body = []
        rawTarget = []
        sectionBytes = 0
        sectionCount = 0
        emptyLinesSkipped = 0
        pendingContinue = false
        pendingHead = false
        state = .requestLine
        return request
    }

    mutating func fail(_ error: HTTPError) -> Event {
        state = .failed(error)
        pendingContinue = false
        pendingHead = false
        return .error(error)
    }

    func bad(_ code: String, _ detail: String) -> HTTPError {
        HTTPError(.badRequest, code: code, detail: detail)
    }

    func tooLarge() -> HTTPError {
        HTTPError(.contentTooLarge, code: "body_too_large", detail: "body exceeds \(bodyLimit) bytes")
    }
}

/// qdtext of RFC 9110 §5.6.4 without the quote and the backslash: HTAB, SP, VCHAR, obs-text.
@inline(__always)
func isQuotedTextByte(_ byte: UInt8) -> Bool {
    byte == 0x09 || byte == 0x20 || (byte >= 0x21 && byte != 0x22 && byte != 0x5C && byte != 0x7F)
}

@inline(__always)
func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

/// tchar of RFC 9110 §5.6.2.
@inline(__always)
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
    case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
    default: false
    }
}
