#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

// MARK: - What every static answer shares (StaticFiles from a directory, MemoryFiles from memory)

/// A static file handler: `respond` answers GET and HEAD; the head check answers 405 to any other
/// method before a body is read.
func staticFilesHandler(formatter: @escaping HTTPErrorFormatter, respond: @escaping @Sendable (HTTPRequest) -> HTTPResponse) -> HTTPHandler {
    HTTPHandler.sync(respond)
        .checkingHeads { request in
            request.method == .GET || request.method == .HEAD ? nil : staticMethodNotAllowed(formatter: formatter)
        }
}

/// A static file's answer: 304 when `notModified`, else 200 with the bytes `body` gives (500 when it
/// gives nil), with the validators, the caching (immutable with a `v=` query, else `no-cache`) and
/// the type every static answer carries. The path and the ETag decide the bytes, so their gzip is
/// made once.
func staticFileResponse(
    to request: HTTPRequest, etag: String, lastModified: String?, mediaType: String, notModified: Bool,
    formatter: HTTPErrorFormatter, body: () -> [UInt8]?
) -> HTTPResponse {
    staticFileResponse(
        immutable: request.queryValue("v") != nil, path: request.path, etag: etag, lastModified: lastModified, mediaType: mediaType,
        notModified: notModified, formatter: formatter, body: body)
}

/// The same, for a request with (`immutable`) or without a `v=` query; `path` names the bytes for
/// the compression cache (empty: not kept there).
func staticFileResponse(
    immutable: Bool, path: String, etag: String, lastModified: String?, mediaType: String, notModified: Bool,
    formatter: HTTPErrorFormatter, body: () -> [UInt8]?
) -> HTTPResponse {
    let cacheControl = immutable ? "public, max-age=31536000, immutable" : "no-cache"
    // Content-Type on the 304 too, so that a compressing layer gives it the same Vary as the 200.
    var headers: HTTPHeaders = ["ETag": etag, "Cache-Control": cacheControl, "X-Content-Type-Options": "nosniff", "Content-Type": mediaType]
    if let lastModified { headers.set("Last-Modified", lastModified) }
    if notModified {
        return HTTPResponse(status: .notModified, headers: headers)
    }
    guard let bytes = body() else {
        return HTTPResponse.error(HTTPError(.internalServerError, code: "unreadable_file", detail: "the file cannot be served"), formatter: formatter)
    }
    var response = HTTPResponse(status: .ok, headers: headers, body: bytes)
    if !path.isEmpty { response.compressionKey = "static " + path + " " + etag }
    return response
}

func staticMethodNotAllowed(formatter: HTTPErrorFormatter) -> HTTPResponse {
    var response = HTTPResponse.error(
        HTTPError(.methodNotAllowed, code: "method_not_allowed", detail: "static files answer GET and HEAD"), formatter: formatter)
    response.headers.set("Allow", "GET, HEAD")
    return response
}

func staticNotFound(_ request: HTTPRequest, formatter: HTTPErrorFormatter) -> HTTPResponse {
    HTTPResponse.error(HTTPError(.notFound, code: "not_found", detail: "\(request.path) does not exist"), formatter: formatter)
}

/// Files held in memory (compiled into the program, say), served as ``StaticFiles`` serves a
/// directory: `Content-Type` by extension, the content's hash as `ETag` answered 304 on
/// `If-None-Match`, `HEAD`, and a `v=` query served as immutable. Any other path is 404.
public struct MemoryFiles: Sendable {
    private struct File: Sendable {
        var bytes: [UInt8]
        var etag: String
        var mediaType: String
        var answers: PreparedFileAnswers
    }

    private let files: [String: File]
    /// Shapes the 404 and 405 responses.
    public let errorFormatter: HTTPErrorFormatter

    /// Serves `files`, keyed by request path (`/livelist.js`). `compression` gives the options of the
    /// `compressed()` layer in front: each file's answers are made ready once in both encodings.
    public init(
        _ files: [String: [UInt8]], errorFormatter: @escaping HTTPErrorFormatter = defaultHTTPErrorFormatter,
        compression: Compression = Compression()
    ) {
        self.files = files.reduce(into: [:]) { served, entry in
            let etag = "\"\(contentHash(entry.value))\""
            let mediaType = StaticFiles.mediaType(for: entry.key)
            let answers = PreparedFileAnswers(
                bytes: entry.value, etag: etag, lastModified: nil, mediaType: mediaType, compression: compression, formatter: errorFormatter)
            served[entry.key] = File(bytes: entry.value, etag: etag, mediaType: mediaType, answers: answers)
        }
        self.errorFormatter = errorFormatter
    }

    /// The handler; its head check answers 405 to methods other than GET and HEAD before any body is read.
    public var handler: HTTPHandler {
        let files = self
        return staticFilesHandler(formatter: errorFormatter) { request in files.respond(to: request) }
    }

    /// The response for `request`.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == .GET || request.method == .HEAD else { return staticMethodNotAllowed(formatter: errorFormatter) }
        guard let file = files[request.path] else { return staticNotFound(request, formatter: errorFormatter) }
        if !hasValidators(request) {
            return file.answers.answer(to: request)
        }
        return staticFileResponse(
            to: request, etag: file.etag, lastModified: nil, mediaType: file.mediaType,
            notModified: noneMatch(request.headers.values("If-None-Match"), etag: file.etag), formatter: errorFormatter
        ) { file.bytes }
    }
}

/// FNV-1a 64 of `bytes` in hex: a content hash for ETags and cache-busting URLs (not a security measure).
package func contentHash(_ bytes: [UInt8]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return String(hash, radix: 16)
}
