import Synchronization
import COpenSSL
import CZlib

/// gzip for responses, through zlib: negotiated from `Accept-Encoding` (with q-values), skipped for
/// small bodies and for types that are already compressed, with `Vary: Accept-Encoding` on every
/// response that could have been compressed. Large bodies are compressed once and kept: under the
/// response's `compressionKey` or their content's hash, never under the `ETag` alone.
///
///     let handler = router.handler.compressed()
public struct Compression: Sendable {
    /// Bodies smaller than this stay as they are. Default 1,024 bytes.
    public var minimumSize = 1_024
    /// zlib's level, 1 (fast) to 9 (small). Default 6.
    public var level: Int32 = 6
    /// Media types worth compressing (prefixes of `Content-Type`).
    public var compressibleTypes = [
        "text/", "application/json", "application/javascript", "application/xml", "image/svg+xml",
    ]
    /// The most bytes of compressed bodies kept. Default 16 MiB.
    public var cacheBytes = 16 << 20
    /// Bodies at least this large are kept compressed under their content's hash when their
    /// response names no `compressionKey` (smaller ones are compressed afresh). Default 16 KiB.
    public var cacheMinimumSize = 16 * 1024

    public init() {}

    /// Whether `Content-Type` names a compressible type.
    func isCompressible(_ contentType: String?) -> Bool {
        guard let type = contentType?.lowercased() else { return false }
        return compressibleTypes.contains { type.hasPrefix($0) }
    }
}

extension HTTPHandler {
    /// This handler with gzip applied to whole-body responses that the client accepts compressed.
    /// Its head check (see `checkingHeads`) is kept.
    public func compressed(_ options: Compression = Compression()) -> HTTPHandler {
        let cache = CompressionCache(limit: options.cacheBytes)
        return mapResponses { request, response in compress(response, for: request, options: options, cache: cache) }
    }
}

/// Compresses `response` when it qualifies and `request` accepts gzip, and answers 304 when the
/// client already holds the compressed representation (its `ETag` ends in `-gzip`).
///
/// Compressed bytes are kept in `cache` under a key that decides them completely: the response's
/// `compressionKey` when its builder set one, otherwise the SHA-256 of the body (for bodies of at
/// least `cacheMinimumSize`). Never under the `ETag` alone: two resources may share an ETag.
func compress(_ response: HTTPResponse, for request: HTTPRequest, options: Compression, cache: CompressionCache) -> HTTPResponse {
    if response.compressionSettled {
        return response
    }
    if response.status.code == 304 {
        // The same Vary as the 200 would carry, so caches keep the two representations apart.
        guard options.isCompressible(response.headers["Content-Type"]) else { return response }
        var result = response
        addVaryAcceptEncoding(&result)
        return result
    }
    guard case let .bytes(body) = response.body, response.status.code == 200,
        response.headers["Content-Encoding"] == nil, options.isCompressible(response.headers["Content-Type"])
    else {
        return response
    }
    var result = response
    addVaryAcceptEncoding(&result)
    guard body.count >= options.minimumSize, acceptsGzip(request.headers["Accept-Encoding"]) else {
        return result
    }
    let etag = response.headers["ETag"]
    let gzipETag = etag.map(gzipVariant)
    if let gzipETag, request.method == .GET || request.method == .HEAD,
        noneMatch(request.headers.values("If-None-Match"), etag: gzipETag)
    {
        return notModified(result, etag: gzipETag)
    }
    let key: CompressionCache.Key?
    if let name = response.compressionKey {
        key = CompressionCache.Key(source: .named(name), length: body.count)
    } else if body.count >= options.cacheMinimumSize, let digest = sha256(body) {
        key = CompressionCache.Key(source: .content(digest), length: body.count)
    } else {
        key = nil
    }
    let compressed: [UInt8]
    if let key, let cached = cache.get(key) {
        compressed = cached
    } else {
        guard let fresh = gzip(body, level: options.level) else { return result }
        compressed = fresh
        if let key { cache.put(key, compressed) }
    }
    guard compressed.count < body.count else { return result }
    return gzipped(result, compressed)
}

/// `response` (with its `Vary`) carrying `compressed`, the gzip of its body.
private func gzipped(_ response: HTTPResponse, _ compressed: [UInt8]) -> HTTPResponse {
    var result = response
    result.body = .bytes(compressed)
    result.headers.set("Content-Encoding", "gzip")
    // A representation of its own: a different validator, so caches never mix the two.
    if let etag = response.headers["ETag"] { result.headers.set("ETag", gzipVariant(etag)) }
    return result
}

/// A 200 response with its whole body, made ready once to be sent many times: its identity and gzip
/// representations, each with its header fields encoded (`HTTPResponse.prepared()`). The one it gives
/// a request is byte for byte what `compressed()` makes of the response for that request, with no
/// work per request but the choice (and the 304 for a client that holds the gzip representation).
///
/// Keep one only under a key that decides the response's bytes completely.
public struct PreparedResponse: Sendable {
    /// The response as sent to a client that does not take gzip (with `Vary: Accept-Encoding` when
    /// it could have been compressed).
    public let identity: HTTPResponse
    /// The gzip representation, when the response qualifies and compression makes it smaller.
    public let gzip: HTTPResponse?

    /// Prepares `response`; `options` must be those of the `compressed()` layer it passes through.
    public init(_ response: HTTPResponse, options: Compression = Compression()) {
        guard case let .bytes(body) = response.body, response.status.code == 200,
            response.headers["Content-Encoding"] == nil, options.isCompressible(response.headers["Content-Type"])
        else {
            identity = Self.settled(response.prepared())
            gzip = nil
            return
        }
        var result = response
        addVaryAcceptEncoding(&result)
        identity = Self.settled(result.prepared())
        if body.count >= options.minimumSize, let compressed = LiveListHTTP.gzip(body, level: options.level), compressed.count < body.count {
            gzip = Self.settled(gzipped(result, compressed).prepared())
        } else {
            gzip = nil
        }
    }

    /// `response`, marked so that the compression layer leaves it as it is: what it would do to it
    /// (for the same options) is done.
    static func settled(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.compressionSettled = true
        return response
    }

    /// The representation for `request`, or the 304 when it already holds the gzip one.
    public func response(for request: HTTPRequest) -> HTTPResponse {
        guard let gzip, acceptsGzip(request.headers["Accept-Encoding"]) else { return identity }
        if let etag = gzip.headers["ETag"], request.method == .GET || request.method == .HEAD {
            let values = request.headers.values("If-None-Match")
            if !values.isEmpty, noneMatch(values, etag: etag) {
                return notModified(identity, etag: etag)
            }
        }
        return gzip
    }
}

/// `"abc"` becomes `"abc-gzip"` (weak tags stay weak).
func gzipVariant(_ etag: String) -> String {
    etag.hasSuffix("\"") ? String(etag.dropLast()) + "-gzip\"" : etag + "-gzip"
}

private func addVaryAcceptEncoding(_ response: inout HTTPResponse) {
    if let vary = response.headers["Vary"] {
        if !containsIgnoringCase(vary, "accept-encoding") {
            response.headers.set("Vary", vary + ", Accept-Encoding")
        }
    } else {
        response.headers.set("Vary", "Accept-Encoding")
    }
}

/// Whether `text` contains `lowercaseASCII` (lowercase ASCII), ignoring ASCII case, compared as bytes.
func containsIgnoringCase(_ text: String, _ lowercaseASCII: StaticString) -> Bool {
    let wanted = UnsafeBufferPointer(start: lowercaseASCII.utf8Start, count: lowercaseASCII.utf8CodeUnitCount)
    let bytes = text.utf8
    guard bytes.count >= wanted.count, let first = wanted.first else { return wanted.isEmpty }
    var start = bytes.startIndex
    while let candidate = bytes[start...].firstIndex(where: { ($0 | 0x20) == first }) {
        var index = candidate
        var matched = 0
        while matched < wanted.count, index < bytes.endIndex {
            let byte = bytes[index]
            let lower = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            guard lower == wanted[matched] else { break }
            matched += 1
            index = bytes.index(after: index)
        }
        if matched == wanted.count { return true }
        start = bytes.index(after: candidate)
    }
    return false
}

/// Whether `If-None-Match` values name `etag` (weak comparison, RFC 9110 §13.1.2) or are `*`.
func noneMatch(_ values: [String], etag: String) -> Bool {
    guard !values.isEmpty else { return false }
    let wanted = etag.hasPrefix("W/") ? etag.dropFirst(2) : Substring(etag)
    for value in values {
        for tag in value.split(separator: ",") {
            let trimmed = tag.trimmingSpaces
            if trimmed == "*" { return true }
            if (trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed) == wanted { return true }
        }
    }
    return false
}

/// The 304 for a 200 `response`: its validators and caching fields, no body.
private func notModified(_ response: HTTPResponse, etag: String) -> HTTPResponse {
    var headers = HTTPHeaders()
    for (name, value) in response.headers {
        for kept in ["Cache-Control", "Content-Location", "Expires", "Last-Modified", "Vary", "X-Content-Type-Options"]
        where HTTPHeaders.same(name, kept) {
            headers.add(name, value)
        }
    }
    headers.set("ETag", etag)
    return HTTPResponse(status: .notModified, headers: headers)
}

/// SHA-256 of `bytes` (OpenSSL), or nil if the digest fails.
func sha256(_ bytes: [UInt8]) -> SIMD32<UInt8>? {
    var digest = SIMD32<UInt8>()
    var size: UInt32 = 0
    let ok = bytes.withUnsafeBytes { input in
        withUnsafeMutableBytes(of: &digest) { output in
            EVP_Digest(input.baseAddress, input.count, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &size, EVP_sha256(), nil)
        }
    }
    return ok == 1 && size == 32 ? digest : nil
}

/// Whether `Accept-Encoding` accepts gzip: named with a q-value above 0, or covered by `*`.
package func acceptsGzip(_ header: String?) -> Bool {
    guard let header else { return false }
    if !header.utf8.contains(0x3B) {
        // No weights (`gzip, deflate, br`, the common case): any item naming gzip or `*` accepts it.
        return header.utf8.split(separator: 0x2C, omittingEmptySubsequences: false).contains { item in
            var start = item.startIndex
            var end = item.endIndex
            while start < end, item[start] == 0x20 || item[start] == 0x09 { start = item.index(after: start) }
            while end > start, item[item.index(before: end)] == 0x20 || item[item.index(before: end)] == 0x09 { end = item.index(before: end) }
            let coding = item[start ..< end]
            return HTTPHeaders.same(Substring(coding), "gzip") || HTTPHeaders.same(Substring(coding), "x-gzip") || coding.elementsEqual([0x2A])
        }
    }
    return acceptsGzipByWeight(header)
}

/// `acceptsGzip` for any header, weights included: the coding's q-value decides, then `*`'s. Items,
/// parameters and their values are cut at the `,`, `;` and `=` bytes, not at Characters (a combining
/// mark after one would otherwise hide it).
package func acceptsGzipByWeight(_ header: String) -> Bool {
    var star: Double?
    for item in header.utf8.split(separator: 0x2C) {
        let parts = item.split(separator: 0x3B).map { Substring($0).trimmingSpaces }
        guard let coding = parts.first?.lowercased() else { continue }
        var q = 1.0
        for parameter in parts.dropFirst() {
            let pair = parameter.utf8.split(separator: 0x3D, maxSplits: 1).map(Substring.init)
            if pair.count == 2, pair[0].trimmingSpaces.lowercased() == "q" {
                // A weight that is not a q-value (RFC 9110 section 12.4.2) refuses the coding.
                q = HeaderParsing.qValue(pair[1].trimmingSpaces) ?? 0
            }
        }
        if coding == "gzip" || coding == "x-gzip" {
            return q > 0
        }
        if coding == "*" {
            star = q
        }
    }
    return (star ?? 0) > 0
}

/// gzip of `bytes` (one shot), or nil if zlib fails.
public func gzip(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8]? {
    var stream = z_stream()
    guard livelist_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
    defer { deflateEnd(&stream) }
    return deflateAll(&stream, bytes, flush: Z_FINISH)
}

/// Runs `stream` (set up for deflate) over all of `bytes` in one call, ending with `flush`: the output,
/// or nil when zlib fails, leaves input behind, or (for `Z_FINISH`) does not end the stream.
func deflateAll(_ stream: inout z_stream, _ bytes: [UInt8], flush: Int32) -> [UInt8]? {
    var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 16)
    var input = bytes
    let status = input.withUnsafeMutableBufferPointer { inputBuffer in
        output.withUnsafeMutableBufferPointer { outputBuffer -> Int32 in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputBuffer.count)
            stream.next_out = outputBuffer.baseAddress
            stream.avail_out = uInt(outputBuffer.count)
            return deflate(&stream, flush)
        }
    }
    guard status == (flush == Z_FINISH ? Z_STREAM_END : Z_OK), stream.avail_in == 0, stream.avail_out > 0 else { return nil }
    output.removeLast(output.count - Int(stream.total_out))
    return output
}

/// The bytes of a gzip stream, or nil when it is not valid gzip (for tests and clients).
public func gunzip(_ bytes: [UInt8]) -> [UInt8]? {
    var stream = z_stream()
    guard livelist_inflate_init_gzip(&stream) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var input = bytes
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    return input.withUnsafeMutableBufferPointer { inputBuffer -> [UInt8]? in
        stream.next_in = inputBuffer.baseAddress
        stream.avail_in = uInt(inputBuffer.count)
        while true {
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { chunkBuffer -> (Int32, Int) in
                stream.next_out = chunkBuffer.baseAddress
                stream.avail_out = uInt(chunkBuffer.count)
                let status = inflate(&stream, Z_NO_FLUSH)
                return (status, chunkBuffer.count - Int(stream.avail_out))
            }
            output.append(contentsOf: chunk[0 ..< produced])
            if status == Z_STREAM_END { return output }
            guard status == Z_OK else { return nil }
        }
    }
}
