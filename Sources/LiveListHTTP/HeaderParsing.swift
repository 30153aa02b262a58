// Parsers of request text that any HTTP application needs: cookies, q-values, form bodies and
// credentials. Each is total and linear: any input gets an answer (nil for nonsense), never a trap;
// the fuzz target `FuzzHeaders` (Scripts/fuzz-headers.sh) runs them on arbitrary bytes.

extension HTTPRequest {
    /// The value of the cookie `name` (the first one sent), if any.
    public func cookie(_ name: String) -> String? {
        HeaderParsing.cookie(name, in: headers.values("Cookie"))
    }

    /// Whether the client ranks `application/json` strictly above `text/html` in `Accept`.
    package var prefersJSON: Bool {
        guard let accept = headers.joinedValues("Accept") else { return false }
        return HeaderParsing.quality(of: "application", "json", in: accept) > HeaderParsing.quality(of: "text", "html", in: accept)
    }

    /// Whether the client ranks `text/html` strictly above `application/json` in `Accept`: a browser's
    /// navigation does; `*/*` and `application/json` do not.
    package var prefersHTML: Bool {
        headers.prefersHTML
    }
}

extension HTTPHeaders {
    /// Whether these fields' `Accept` ranks `text/html` strictly above `application/json`.
    package var prefersHTML: Bool {
        guard let accept = joinedValues("Accept") else { return false }
        return HeaderParsing.quality(of: "text", "html", in: accept) > HeaderParsing.quality(of: "application", "json", in: accept)
    }
}

extension HTTPHeaders {
    /// The values of every field `name`, joined with commas as one list (RFC 9110 section 5.3); nil
    /// when there is none.
    public func joinedValues(_ name: String) -> String? {
        let values = values(name)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}

/// The parsers of header values and form bodies.
package enum HeaderParsing {
    /// The value of the cookie `name` in `Cookie` header values (`a=1; b=2`): the first one sent.
    /// Pairs without `=` are skipped.
    package static func cookie(_ name: String, in headers: [String]) -> String? {
        for header in headers {
            if let value = cookie(name, in: header) { return value }
        }
        return nil
    }

    /// The same in one `Cookie` value, scanned as UTF-8 bytes (every delimiter is ASCII, so a cut
    /// never falls inside a character): one pass, no intermediate strings.
    private static func cookie(_ name: String, in header: String) -> String? {
        var name = name
        var header = header
        return name.withUTF8 { wanted in
            header.withUTF8 { bytes -> String? in
                var pairStart = 0
                while pairStart <= bytes.count {
                    var pairEnd = pairStart
                    while pairEnd < bytes.count, bytes[pairEnd] != 0x3B { pairEnd += 1 }  // ;
                    var equals = pairStart
                    while equals < pairEnd, bytes[equals] != 0x3D { equals += 1 }  // =
                    if equals < pairEnd {
                        let (nameStart, nameEnd) = trimmed(bytes, pairStart, equals)
                        if nameEnd - nameStart == wanted.count, (0 ..< wanted.count).allSatisfy({ bytes[nameStart + $0] == wanted[$0] }) {
                            let (valueStart, valueEnd) = trimmed(bytes, equals + 1, pairEnd)
                            return String(decoding: UnsafeBufferPointer(rebasing: bytes[valueStart ..< valueEnd]), as: UTF8.self)
                        }
                    }
                    pairStart = pairEnd + 1
                }
                return nil
            }
        }
    }

    /// `start ..< end` of `bytes` without surrounding spaces and tabs.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start
        var end = end
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return (start, end)
    }

    /// The q-value that `accept` (an `Accept` value) gives `type/subtype`: that of the most specific
    /// matching range (`type/subtype`, `type/*`, `*/*`), 0 when none matches (RFC 9110 section 12.5.1).
    /// Media types compare ignoring ASCII case. A range whose weight is not a q-value (section 12.4.2:
    /// 0 to 1, at most three decimals, so never NaN, infinite or negative) is ignored.
    ///
    /// One pass over the value's bytes, with no strings made: it runs for every page request that
    /// carries `Accept` (a browser's is about 100 bytes), twice.
    package static func quality(of type: String, _ subtype: String, in accept: String) -> Double {
        var accept = accept
        var type = type
        var subtype = subtype
        return accept.withUTF8 { bytes in
            type.withUTF8 { type in
                subtype.withUTF8 { subtype in quality(of: type, subtype, in: bytes) }
            }
        }
    }

    private static func quality(of type: UnsafeBufferPointer<UInt8>, _ subtype: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Double {
        var best: (specificity: Int, q: Double) = (-1, 0)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x2C { end += 1 }  // ,
            if let ranked = rank(bytes, start, end, type: type, subtype: subtype), ranked.specificity > best.specificity {
                best = ranked
            }
            start = end + 1
        }
        return best.q
    }

    /// How the media range `bytes[start ..< end]` matches `type/subtype` (2 exactly, 1 as `type/*`,
    /// 0 as `*/*`) and its q; nil when it does not match or its q is malformed. Its pieces are those
    /// between semicolons, empty ones skipped: the first is the media type, the others parameters.
    private static func rank(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, type: UnsafeBufferPointer<UInt8>, subtype: UnsafeBufferPointer<UInt8>
    ) -> (specificity: Int, q: Double)? {
        var pieceStart = start
        var specificity: Int?
        var q = 1.0
        while pieceStart < end {
            var pieceEnd = pieceStart
            while pieceEnd < end, bytes[pieceEnd] != 0x3B { pieceEnd += 1 }  // ;
            let (from, to) = trimmed(bytes, pieceStart, pieceEnd)
            let isEmpty = pieceEnd == pieceStart
            pieceStart = pieceEnd + 1
            if isEmpty { continue }
            if specificity == nil {
                guard let matched = mediaSpecificity(bytes, from, to, type: type, subtype: subtype) else { return nil }
                specificity = matched
            } else if to - from >= 2, bytes[from] | 0x20 == 0x71, bytes[from + 1] == 0x3D {  // q= or Q=
                guard let weight = qValue(UnsafeBufferPointer(rebasing: bytes[(from + 2) ..< to])) else { return nil }
                q = weight
            }
        }
        return specificity.map { ($0, q) }
    }

    /// 2 when `bytes[from ..< to]` is `type/subtype`, 1 when `type/*`, 0 when `*/*`, else nil.
    private static func mediaSpecificity(
        _ bytes: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, type: UnsafeBufferPointer<UInt8>, subtype: UnsafeBufferPointer<UInt8>
    ) -> Int? {
        var slash = from
        while slash < to, bytes[slash] != 0x2F { slash += 1 }  // /
        guard slash < to else { return nil }
        var second = slash + 1
        while second < to, bytes[second] != 0x2F { second += 1 }
        guard second == to else { return nil }  // exactly one slash
        let first = UnsafeBufferPointer(rebasing: bytes[from ..< slash])
        let last = UnsafeBufferPointer(rebasing: bytes[(slash + 1) ..< to])
        func isStar(_ piece: UnsafeBufferPointer<UInt8>) -> Bool { piece.count == 1 && piece[0] == 0x2A }
        if equalIgnoringASCIICase(first, type) {
            if equalIgnoringASCIICase(last, subtype) { return 2 }
            if isStar(last) { return 1 }
        }
        if isStar(first), isStar(last) { return 0 }
        return nil
    }

    /// A q-value: `0`, `0.5`, `0.125`, `1`, `1.000` (RFC 9110 section 12.4.2); nil for anything else.
    package static func qValue(_ text: some StringProtocol) -> Double? {
        qValue(text.utf8)
    }

    /// The same, of UTF-8 bytes.
    package static func qValue(_ text: some Collection<UInt8>) -> Double? {
        let bytes = Array(text.prefix(6))
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
            let name = formDecode(pair[pair.startIndex ..< equals])
            let value = equals < pair.endIndex ? formDecode(pair[(equals + 1)...]) : ""
            if let name, let value {
                fields[name] = value
            }
        }
        return fields
    }

    /// Decodes a form name or value: `+` is a space, `%XX` a byte. Nil when a `%` is not followed by
    /// two hex digits or the result is not UTF-8 (browsers always encode `%` itself as `%25`).
    package static func formDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        TargetDecoder.percentDecode(bytes, plusIsSpace: true).flatMap { TargetDecoder.utf8String($0[...]) }
    }

    /// The credentials of `Authorization: Bearer CREDENTIALS`, the scheme in any case (RFC 9110
    /// section 11.1) and followed by one or more spaces; nil for another scheme or no credentials.
    package static func bearerCredentials(_ value: String) -> Substring? {
        let scheme = value.utf8.prefix { $0 != 0x20 }
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let credentials = value[scheme.endIndex...].drop { $0 == " " }
        return credentials.isEmpty ? nil : credentials
    }
}
