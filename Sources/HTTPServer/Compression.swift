import CZlib

/// gzip for responses, through zlib: negotiated from `Accept-Encoding` (with q-values), skipped for
/// small bodies and for types that are already compressed, with `Vary: Accept-Encoding` on every
/// response that could have been compressed. Static files are compressed once and kept (by ETag).
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
    /// The most bytes of compressed bodies kept for responses with an `ETag`. Default 16 MiB.
    public var cacheBytes = 16 << 20

    public init() {}

    /// Whether `Content-Type` names a compressible type.
    func isCompressible(_ contentType: String?) -> Bool {
        guard let type = contentType?.lowercased() else { return false }
        return compressibleTypes.contains { type.hasPrefix($0) }
    }
}

extension HTTPHandler {
    /// This handler with gzip applied to whole-body responses that the client accepts compressed.
    public func compressed(_ options: Compression = Compression()) -> HTTPHandler {
        let inner = self
        let cache = CompressionCache(limit: options.cacheBytes)
        return .async { request in
            let response = await inner.respond(to: request)
            return compress(response, for: request, options: options, cache: cache)
        }
    }
}

/// Compresses `response` when it qualifies and `request` accepts gzip.
func compress(_ response: HTTPResponse, for request: HTTPRequest, options: Compression, cache: CompressionCache) -> HTTPResponse {
    guard case let .bytes(body) = response.body, response.status.code == 200,
        response.headers["Content-Encoding"] == nil, options.isCompressible(response.headers["Content-Type"])
    else {
        return response
    }
    var result = response
    if let vary = result.headers["Vary"] {
        if !vary.lowercased().contains("accept-encoding") {
            result.headers.set("Vary", vary + ", Accept-Encoding")
        }
    } else {
        result.headers.set("Vary", "Accept-Encoding")
    }
    guard body.count >= options.minimumSize, acceptsGzip(request.headers["Accept-Encoding"]) else {
        return result
    }
    let etag = response.headers["ETag"]
    let compressed: [UInt8]
    if let etag, let cached = cache.get(etag) {
        compressed = cached
    } else {
        guard let fresh = gzip(body, level: options.level) else { return result }
        compressed = fresh
        if let etag {
            cache.put(etag, compressed)
        }
    }
    guard compressed.count < body.count else { return result }
    result.body = .bytes(compressed)
    result.headers.set("Content-Encoding", "gzip")
    if let etag {
        // A representation of its own: a different validator, so caches never mix the two.
        result.headers.set("ETag", etag.hasSuffix("\"") ? String(etag.dropLast()) + "-gzip\"" : etag + "-gzip")
    }
    return result
}

/// Whether `Accept-Encoding` accepts gzip: named with a q-value above 0, or covered by `*`.
func acceptsGzip(_ header: String?) -> Bool {
    guard let header else { return false }
    var star: Double?
    for item in header.split(separator: ",") {
        let parts = item.split(separator: ";").map { trimmed($0) }
        guard let coding = parts.first?.lowercased() else { continue }
        var q = 1.0
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, trimmed(pair[0]).lowercased() == "q" {
                q = Double(trimmed(pair[1])) ?? 0
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

/// `text` without surrounding spaces and tabs.
private func trimmed(_ text: Substring) -> String {
    String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
}

/// gzip of `bytes` (one shot), or nil if zlib fails.
public func gzip(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8]? {
    var stream = z_stream()
    guard livelist_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
    defer { deflateEnd(&stream) }
    let bound = Int(deflateBound(&stream, uLong(bytes.count)))
    var output = [UInt8](repeating: 0, count: bound)
    var input = bytes
    let status = input.withUnsafeMutableBufferPointer { inputBuffer in
        output.withUnsafeMutableBufferPointer { outputBuffer -> Int32 in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputBuffer.count)
            stream.next_out = outputBuffer.baseAddress
            stream.avail_out = uInt(outputBuffer.count)
            return deflate(&stream, Z_FINISH)
        }
    }
    guard status == Z_STREAM_END else { return nil }
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

/// Compressed bodies by ETag, bounded in bytes (oldest out first).
final class CompressionCache: @unchecked Sendable {
    private let lock = Locked(State())
    private let limit: Int

    private struct State {
        var entries: [String: [UInt8]] = [:]
        var order: [String] = []
        var bytes = 0
    }

    init(limit: Int) {
        self.limit = limit
    }

    func get(_ key: String) -> [UInt8]? {
        lock.withLock { $0.entries[key] }
    }

    func put(_ key: String, _ value: [UInt8]) {
        guard value.count <= limit else { return }
        lock.withLock { state in
            if state.entries[key] == nil {
                state.order.append(key)
            } else {
                state.bytes -= state.entries[key]!.count
            }
            state.entries[key] = value
            state.bytes += value.count
            while state.bytes > limit, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.entries.removeValue(forKey: oldest)?.count ?? 0
            }
        }
    }
}
