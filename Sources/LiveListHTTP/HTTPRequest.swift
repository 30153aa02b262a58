/// A complete request: head, decoded target and the whole body.
public struct HTTPRequest: Sendable {
    /// The method.
    public var method: HTTPMethod
    /// The protocol version.
    public var version: HTTPVersion
    /// The request target exactly as received.
    public var target: String
    /// The percent-decoded, normalised path: always starts with `/`, no `.` or `..` segments,
    /// no empty segments, a trailing `/` kept when the target had one.
    public var path: String
    /// The decoded path segments (`/a/b%20c` gives `["a", "b c"]`).
    public var pathSegments: [String]
    /// The query parameters in order, decoded (`+` is a space).
    public var query: [(name: String, value: String)]
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body (empty when there is none).
    public var body: [UInt8]
    /// Trailer fields of a chunked body.
    public var trailers: HTTPHeaders
    /// Whether the client allows the connection to stay open after this request.
    public var keepAlive: Bool
    /// The authority from an absolute-form target or the `Host` field.
    public var host: String
    /// Parameters captured by the router (`:name` segments).
    public var pathParameters: [String: String] = [:]
    /// The peer's address (`127.0.0.1`, `::1`, …), empty when unknown.
    public var remoteAddress: String = ""
    /// When the request's first byte arrived, in nanoseconds of the monotonic clock (0 for a request
    /// made without a connection): what a log's duration counts from.
    public var receivedAt: UInt64 = 0
    /// The number of the connection it came on (0 without one): the same number names the connection
    /// in ``HTTPStreamEnd``.
    public var connectionID: UInt64 = 0

    /// The time since the request's first byte arrived (zero for a request made without a connection).
    public var elapsed: Duration {
        receivedAt == 0 ? .zero : .nanoseconds(Int64(clamping: monotonicNanoseconds() &- receivedAt))
    }

    /// The first value of the query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// Every value of the query parameter `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }

    /// The media type of the body: `Content-Type` without its parameters, lowercased and trimmed;
    /// nil when the field is absent or names no type (empty, `;`, blanks).
    public var contentMediaType: String? {
        headers["Content-Type"].flatMap(Self.mediaType(ofContentType:))
    }

    /// The media type a `Content-Type` value names: without its parameters, lowercased and trimmed;
    /// nil when it names none (``, `;`, `;charset=utf-8`, blanks).
    public static func mediaType(ofContentType value: String) -> String? {
        // Cut and trimmed on bytes: as Characters, a ';' or a blank followed by a combining mark is
        // another Character and would stay in the type, and U+037E (canonically ';') would cut it.
        let bytes = value.utf8
        var lower = bytes.startIndex
        var upper = bytes.firstIndex(of: 0x3B) ?? bytes.endIndex
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower = bytes.index(after: lower) }
        while upper > lower {
            let last = bytes.index(before: upper)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            upper = last
        }
        guard lower < upper else { return nil }
        // The cuts are at ASCII bytes, so the bytes between are whole UTF-8.
        return String(decoding: bytes[lower ..< upper], as: UTF8.self).lowercased()
    }

    /// Whether the peer is a loopback address.
    public var isFromLoopback: Bool {
        remoteAddress == "::1" || remoteAddress.hasPrefix("127.") || remoteAddress.hasPrefix("::ffff:127.")
    }
}

/// The decoded parts of a request target.
struct DecodedTarget {
    var path: String
    var segments: [String]
    var query: [(name: String, value: String)]
    var authority: String?
}

package enum TargetDecoder {
    /// Decodes an origin-form or absolute-form target. Refuses malformed percent-encoding,
    /// encoded `/` or NUL in a segment, invalid UTF-8, and fragments.
    static func decode(_ raw: [UInt8], method: HTTPMethod) -> Result<DecodedTarget, HTTPError> {
        var bytes = raw[...]
        var authority: String?
        if bytes.first == 0x2F {
            // origin-form
        } else if bytes.count == 1, bytes.first == 0x2A {
            guard method == .OPTIONS else { return .failure(bad("asterisk-form is for OPTIONS only")) }
            return .success(DecodedTarget(path: "*", segments: [], query: [], authority: nil))
        } else if let rest = stripScheme(bytes) {
            // absolute-form: authority up to the first '/', '?' or end
            let end = rest.firstIndex { $0 == 0x2F || $0 == 0x3F } ?? rest.endIndex
            let authorityBytes = rest[rest.startIndex..<end]
            guard !authorityBytes.isEmpty, HostValidator.isValid(authorityBytes)
            else { return .failure(bad("invalid authority in absolute-form target")) }
            authority = String(decoding: authorityBytes, as: UTF8.self)
            bytes = rest[end...]
            if bytes.isEmpty { bytes = [0x2F][...] }
            if bytes.first == 0x3F { bytes = ([0x2F] + bytes)[...] }
        } else {
            return .failure(bad("request target must be origin-form or absolute-form"))
        }
        if bytes.contains(0x23) { return .failure(bad("request target contains a fragment")) }
        let queryStart = bytes.firstIndex(of: 0x3F)
        let pathBytes = bytes[bytes.startIndex..<(queryStart ?? bytes.endIndex)]
        var segments: [String] = []
        var trailingSlash = false
        // Whether the path is already in normal form (nothing decoded, no dot or empty segments): then
        // it is its own bytes, not joined again from its segments.
        var normal = true
        var segmentStart = pathBytes.startIndex + 1
        var index = segmentStart
        while true {
            if index == pathBytes.endIndex || pathBytes[index] == 0x2F {
                let segment = pathBytes[segmentStart..<index]
                if !segment.isEmpty {
                    let text: String
                    if !segment.contains(0x25) {
                        // Nothing to decode. (The request line has no control bytes, and '/' ends a segment.)
                        if segment.contains(0x5C) { return .failure(bad("encoded slash, backslash or NUL in path")) }
                        guard let plain = utf8String(segment) else {
                            return .failure(bad("path is not valid UTF-8"))
                        }
                        text = plain
                    } else {
                        normal = false
                        guard let decoded = percentDecode(segment, plusIsSpace: false) else {
                            return .failure(bad("malformed percent-encoding in path"))
                        }
                        if decoded.contains(0x2F) || decoded.contains(0x00) || decoded.contains(0x5C) {
                            return .failure(bad("encoded slash, backslash or NUL in path"))
                        }
                        guard let decodedText = utf8String(decoded[...]) else {
                            return .failure(bad("path is not valid UTF-8"))
                        }
                        text = decodedText
                    }
                    if text == "." {
                        normal = false
                    } else if text == ".." {
                        normal = false
                        if !segments.isEmpty { segments.removeLast() }
                    } else {
                        segments.append(text)
                    }
                    trailingSlash = index < pathBytes.endIndex || text == "." || text == ".."
                } else {
                    trailingSlash = index == pathBytes.endIndex && index > pathBytes.startIndex + 1
                    if index < pathBytes.endIndex { normal = false }
                }
                if index == pathBytes.endIndex { break }
                segmentStart = index + 1
            }
            index += 1
        }
        if segments.isEmpty { trailingSlash = false }
        // (The target's bytes are printable ASCII: the request line allows no others.)
        let path = normal && !(segments.isEmpty && pathBytes.count > 1)
            ? String(decoding: pathBytes, as: UTF8.self)
            : "/" + segments.joined(separator: "/") + (trailingSlash ? "/" : "")
        var query: [(name: String, value: String)] = []
        if let queryStart {
            for pair in bytes[(queryStart + 1)...].split(separator: 0x26, omittingEmptySubsequences: true) {
                let equals = pair.firstIndex(of: 0x3D)
                let nameBytes = pair[pair.startIndex..<(equals ?? pair.endIndex)]
                let valueBytes = equals.map { pair[($0 + 1)...] } ?? []
                guard let name = percentDecode(nameBytes, plusIsSpace: true),
                      let value = percentDecode(valueBytes, plusIsSpace: true),
                      let nameText = utf8String(name[...]),
                      let valueText = utf8String(value[...])
                else { return .failure(bad("malformed query string")) }
                query.append((nameText, valueText))
            }
        }
        return .success(DecodedTarget(path: path, segments: segments, query: query, authority: authority))
    }

    private static func stripScheme(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        for scheme in ["http://", "https://"] {
            let prefix = Array(scheme.utf8)
            guard bytes.count > prefix.count else { continue }
            var match = true
            for (offset, byte) in prefix.enumerated() {
                let actual = bytes[bytes.startIndex + offset]
                let lower = (actual >= 0x41 && actual <= 0x5A) ? actual | 0x20 : actual
                if lower != byte { match = false; break }
            }
            if match { return bytes[(bytes.startIndex + prefix.count)...] }
        }
        return nil
    }

    /// Percent-decodes bytes (paths, queries and forms all use it); nil when a `%` is not followed by
    /// two hex digits.
    static func percentDecode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x25 {
                guard index + 2 < bytes.endIndex,
                      let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(plusIsSpace && byte == 0x2B ? 0x20 : byte)
                index += 1
            }
        }
        return output
    }

    /// `bytes` as a string when they are valid UTF-8, else nil. ASCII, as every segment without a `%`
    /// is (the request line allows no other bytes), becomes a string at once: `String(validating:)`
    /// goes through generic, unspecialised validation, which looked up type metadata on every request.
    static func utf8String(_ bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            var ascii = true
            for byte in buffer where byte >= 0x80 {
                ascii = false
                break
            }
            return ascii ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
        }
    }

    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    private static func bad(_ detail: String) -> HTTPError {
        HTTPError(.badRequest, code: "bad_request_target", detail: detail)
    }
}

enum HostValidator {
    /// `uri-host [ ":" port ]`: reg-name characters, pct-encoded, or an IP literal in brackets.
    static func isValid<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        for byte in bytes {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: continue
            case 0x2D, 0x2E, 0x5F, 0x7E, 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D,
                 0x25, 0x3A, 0x5B, 0x5D:
                continue
            default: return false
            }
        }
        return true
    }
}
