public import LiveListEngine
package import LiveListHTTP
import LiveListHTML

extension HTTPRequest {
    /// The value of the cookie `name`, if sent.
    func cookie(_ name: String) -> String? {
        HeaderParsing.cookie(name, in: headers.values("Cookie"))
    }

    /// Whether the client ranks `application/json` above `text/html` in `Accept`.
    var prefersJSON: Bool {
        guard let accept = headers["Accept"] else { return false }
        return HeaderParsing.quality(of: "application", "json", in: accept) > HeaderParsing.quality(of: "text", "html", in: accept)
    }
}

/// The parsers of request text (header values, form bodies), apart from the routes so that the fuzz
/// target `FuzzHeaders` (Scripts/fuzz-headers.sh) reaches them. Each is total and linear: any input
/// gets an answer (nil for nonsense), never a trap.
package enum HeaderParsing {
    /// The value of the cookie `name` in `Cookie` header values (`a=1; b=2`): the first one sent.
    /// Pairs without `=` are skipped.
    package static func cookie(_ name: String, in headers: [String]) -> String? {
        for header in headers {
            for pair in header.split(separator: ";") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                if pair[..<equals].trimmingSpaces == name {
                    return pair[pair.index(after: equals)...].trimmingSpaces
                }
            }
        }
        return nil
    }

    /// The q-value `Accept` gives `type/subtype`: the most specific matching range wins, 0 when none
    /// matches. A range whose weight is not a q-value (RFC 9110 section 12.4.2: 0 to 1, at most three
    /// decimals, so never NaN, infinite or negative) is ignored.
    package static func quality(of type: String, _ subtype: String, in accept: String) -> Double {
        var best: (specificity: Int, q: Double) = (-1, 0)
        ranges: for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
            guard let media = parts.first else { continue }
            let pieces = media.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count == 2 else { continue }
            let specificity: Int
            if pieces[0] == type && pieces[1] == subtype {
                specificity = 2
            } else if pieces[0] == type && pieces[1] == "*" {
                specificity = 1
            } else if pieces[0] == "*" && pieces[1] == "*" {
                specificity = 0
            } else {
                continue
            }
            var q = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                guard let weight = qValue(parameter.dropFirst(2)) else { continue ranges }
                q = weight
            }
            if specificity > best.specificity {
                best = (specificity, q)
            }
        }
        return best.q
    }

    /// A q-value: `0`, `0.5`, `0.125`, `1`, `1.000` (RFC 9110 section 12.4.2); nil for anything else.
    package static func qValue(_ text: some StringProtocol) -> Double? {
        let bytes = Array(text.utf8.prefix(6))
        guard bytes.count <= 5, let first = bytes.first, first == 0x30 || first == 0x31 else { return nil }
        guard bytes.count > 1 else { return first == 0x31 ? 1 : 0 }
        guard bytes[1] == 0x2E else { return nil }
        let decimals = bytes[2...]
        guard decimals.allSatisfy({ (0x30 ... 0x39).contains($0) }) else { return nil }
        if first == 0x31 {
            return decimals.allSatisfy { $0 == 0x30 } ? 1 : nil
        }
        var thousandths = 0
        var scale = 100
        for digit in decimals {
            thousandths += Int(digit - 0x30) * scale
            scale /= 10
        }
        return Double(thousandths) / 1_000
    }

    /// Parses `application/x-www-form-urlencoded`. A field whose name or value is not UTF-8 once
    /// decoded is dropped; of a repeated name, the last wins.
    package static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: 0x26) {
            let equals = pair.firstIndex(of: 0x3D) ?? pair.endIndex
            let name = percentDecode(pair[pair.startIndex ..< equals])
            let value = equals < pair.endIndex ? percentDecode(pair[(equals + 1)...]) : ""
            if let name, let value {
                fields[name] = value
            }
        }
        return fields
    }

    /// Decodes `+` and `%XX` as a form does; a `%` without two hex digits stays as it is. Nil when
    /// the result is not UTF-8.
    package static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x2B {
                out.append(0x20)
            } else if byte == 0x25, bytes.endIndex - index > 2,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30 ... 0x39: byte - 0x30
        case 0x41 ... 0x46: byte - 0x41 + 10
        case 0x61 ... 0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The credentials of `Authorization: Bearer CREDENTIALS`, the scheme in any case (RFC 9110
    /// section 11.1) and followed by one or more spaces; nil for another scheme or no credentials.
    package static func bearerCredentials(_ value: String) -> Substring? {
        let scheme = value.utf8.prefix { $0 != 0x20 }
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let credentials = value[scheme.endIndex...].drop { $0 == " " }
        return credentials.isEmpty ? nil : credentials
    }

    /// The `TYPE:CELL` value of an action button: the type, and the cell when one follows the colon.
    package static func action(_ combined: String) -> (type: String, cell: String?) {
        guard let colon = combined.firstIndex(of: ":") else { return (combined, nil) }
        let cell = combined[combined.index(after: colon)...]
        return (String(combined[..<colon]), cell.isEmpty ? nil : String(cell))
    }

    /// The version in a strong entity tag: `"5"`, or `"5-gzip"`, the tag the server gives the gzip
    /// encoding of the same version. Nil for a weak tag or anything else.
    package static func entityTag(_ text: some StringProtocol) -> Int? {
        let trimmed = text.trimmingSpaces
        guard trimmed.utf8.count >= 3, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") else { return nil }
        var inside = trimmed.dropFirst().dropLast()
        if inside.hasSuffix("-gzip") {
            inside = inside.dropLast(5)
        }
        return ListVersion.parse(inside)
    }
}

extension HeaderParsing {
    /// The precondition of a PUT (RFC 9110 sections 13.1.1 and 13.1.2), checked by the list's ordered
    /// write path, from its `If-Match` and `If-None-Match` values (each field's lines joined
    /// with commas), or the 400 answer: both at once, a weak or foreign tag, tags of different versions,
    /// or an `If-None-Match` other than `*` (a PUT replaces the whole list, so only "not at all" makes sense).
    package static func writeCondition(ifMatch: String?, ifNoneMatch: String?) -> Result<WritePrecondition, HTTPError> {
        switch (ifMatch, ifNoneMatch) {
        case (nil, nil):
            return .success(.none)
        case (.some, .some):
            return .failure(HTTPError(.badRequest, code: "conflicting_preconditions", detail: "If-Match and If-None-Match: send one of them"))
        case let (ifMatch?, nil):
            if ifMatch.trimmingSpaces == "*" {
                return .success(.exists)
            }
            // A list is fine as long as every tag names the same version (`"5", "5-gzip"`); empty
            // elements are ignored (RFC 9110 section 5.6.1.2).
            let malformed = HTTPError(.badRequest, code: "malformed_if_match", detail: "If-Match: \(quoted(ifMatch)) is not a version in quotes (\"5\") or *")
            var versions: Set<Int> = []
            for tag in ifMatch.split(separator: ",", omittingEmptySubsequences: false) where !tag.trimmingSpaces.isEmpty {
                guard let version = entityTag(tag) else { return .failure(malformed) }
                versions.insert(version)
            }
            guard let version = versions.first else { return .failure(malformed) }
            guard versions.count == 1 else {
                return .failure(HTTPError(.badRequest, code: "malformed_if_match", detail: "If-Match: \(quoted(ifMatch)) names several versions; name one (\"5\")"))
            }
            return .success(.version(version))
        case let (nil, ifNoneMatch?):
            guard ifNoneMatch.trimmingSpaces == "*" else {
                return .failure(HTTPError(.badRequest, code: "malformed_if_none_match", detail: "If-None-Match: \(quoted(ifNoneMatch)); a PUT understands only * (create, never replace)"))
            }
            return .success(.absent)
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// FNV-1a 64 of `bytes` in hex: a content hash for cache-busting URLs (not a security measure).
func contentHash(_ bytes: [UInt8]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return String(hash, radix: 16)
}

extension HTTPStream: EventSink {}

extension SessionKeys {
    /// The verified session of a request's cookie, or nil (no cookie, or one the server did not mint).
    func session(from request: HTTPRequest) -> String? {
        request.cookie(Self.cookieName).flatMap(sessionID(fromCookie:))
    }
}
