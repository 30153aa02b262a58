import Markup

/// A strict, bounded JSON parser over UTF-8 bytes.
///
/// It accepts exactly RFC 8259 (no comments, trailing commas, single quotes, NaN, leading zeros or lone
/// surrogates), refuses an object with a repeated member name (which readers would resolve differently)
/// and nesting deeper than `maximumDepth`, and never recurses without bound.
struct JSONParser {
    let bytes: [UInt8]
    var position = 0
    let maximumDepth: Int

    /// Parses `bytes` as one JSON text.
    static func parse(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else {
            throw parser.error("unexpected data after the JSON value")
        }
        return value
    }

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func error(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: position, reason: reason)
    }

    var current: UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            position += 1
        }
    }

    mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count,
              literal.withUTF8Buffer({ bytes[position ..< position + count].elementsEqual($0) })
        else {
            throw error("invalid literal")
        }
        position += count
        return value
    }

    mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard let byte = current else {
            throw error("unexpected end of input")
        }
        switch byte {
        case 0x7B: return try parseObject(depth: depth + 1)
        case 0x5B: return try parseArray(depth: depth + 1)
        case 0x22: return .string(try parseString())
        case 0x74: return try expect("true", .bool(true))
        case 0x66: return try expect("false", .bool(false))
        case 0x6E: return try expect("null", .null)
        case 0x2D, 0x30 ... 0x39: return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= maximumDepth else {
            throw error("nesting deeper than \(maximumDepth)")
        }
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(4)
        // Names are compared directly while an object is small, and through a set once it grows.
        var seen: Set<String>?
        skipWhitespace()
        if current == 0x7D {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == 0x22 else {
                throw error("expected a member name in quotes")
            }
            let keyStart = position
            let key = try parseString()
            if Self.isRepeated(key, in: members, seen: &seen) {
                throw JSONSyntaxError(offset: keyStart, reason: "repeated member name \"\(key)\"")
            }
            skipWhitespace()
            guard current == 0x3A else {
                throw error("expected ':'")
            }
            position += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            switch current {
            case 0x2C: position += 1
            case 0x7D:
                position += 1
                return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    /// Whether `key` names a member already read: a scan of the few first members, then a set that
    /// holds every name, so that a large object costs linear time.
    static func isRepeated(_ key: String, in members: [(key: String, value: JSONValue)], seen: inout Set<String>?) -> Bool {
        let scanLimit = 8
        if seen == nil {
            if members.count < scanLimit {
                return members.contains { $0.key == key }
            }
            seen = Set(members.map(\.key))
        }
        return seen?.insert(key).inserted == false
    }

    mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= maximumDepth else {
            throw error("nesting deeper than \(maximumDepth)")
        }
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if current == 0x5D {
            position += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case 0x2C: position += 1
            case 0x5D:
                position += 1
                return .array(items)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
        let start = position
        if current == 0x2D {
            position += 1
        }
        guard let first = current, (0x30 ... 0x39).contains(first) else {
            throw error("invalid number")
        }
        position += 1
        if first != 0x30 {
            while let byte = current, (0x30 ... 0x39).contains(byte) { position += 1 }
        }
        if current == 0x2E {
            position += 1
            guard let byte = current, (0x30 ... 0x39).contains(byte) else { throw error("invalid number") }
            while let byte = current, (0x30 ... 0x39).contains(byte) { position += 1 }
        }
        if current == 0x65 || current == 0x45 {
            position += 1
            if current == 0x2B || current == 0x2D { position += 1 }
            guard let byte = current, (0x30 ... 0x39).contains(byte) else { throw error("invalid number") }
            while let byte = current, (0x30 ... 0x39).contains(byte) { position += 1 }
        }
        return .number(String(decoding: bytes[start ..< position], as: UTF8.self))
    }

    /// Reads a string; `position` is at its opening quote. A string without escapes is validated and
    /// copied in one piece; with escapes, its raw runs are validated one by one (an error names the
    /// run's first byte) and joined with the escaped characters.
    mutating func parseString() throws(JSONSyntaxError) -> String {
        position += 1
        var result = ""
        var hasEscapes = false
        var runStart = position
        while true {
            guard let byte = current else {
                throw error("unterminated string")
            }
            switch byte {
            case 0x22:
                let run = try validatedRun(from: runStart)
                position += 1
                guard hasEscapes else {
                    return run
                }
                result += run
                return result
            case 0x5C:
                result += try validatedRun(from: runStart)
                hasEscapes = true
                position += 1
                result.unicodeScalars.append(try parseEscape())
                runStart = position
            case 0x00 ..< 0x20:
                throw error("control character in a string (escape it)")
            default:
                position += 1
            }
        }
    }

    /// The bytes from `start` to `position` as a string, if they are valid UTF-8.
    func validatedRun(from start: Int) throws(JSONSyntaxError) -> String {
        guard start < position else {
            return ""
        }
        let end = position
        let run = bytes.withUnsafeBufferPointer { buffer -> String? in
            let slice = UnsafeBufferPointer(rebasing: buffer[start ..< end])
            // ASCII needs no validation; `String(validating:)` looks up generic metadata on every call,
            // which cost more than the rest of the parse.
            var high: UInt8 = 0
            for byte in slice { high |= byte }
            return high < 0x80 ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self)
        }
        guard let run else {
            throw JSONSyntaxError(offset: start, reason: "invalid UTF-8 in a string")
        }
        return run
    }

    /// Reads an escape; `position` is just past its backslash. Errors point at the backslash.
    mutating func parseEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        let escapeStart = position - 1
        func failure(_ reason: String) -> JSONSyntaxError {
            JSONSyntaxError(offset: escapeStart, reason: reason)
        }
        guard let byte = current else {
            throw error("unterminated escape")
        }
        position += 1
        switch byte {
        case 0x22: return "\""
        case 0x5C: return "\\"
        case 0x2F: return "/"
        case 0x62: return "\u{8}"
        case 0x66: return "\u{C}"
        case 0x6E: return "\n"
        case 0x72: return "\r"
        case 0x74: return "\t"
        case 0x75:
            let unit = try parseHex4()
            if (0xD800 ..< 0xDC00).contains(unit) {
                guard current == 0x5C, position + 1 < bytes.count, bytes[position + 1] == 0x75 else {
                    throw failure("lone high surrogate")
                }
                position += 2
                let low = try parseHex4()
                guard (0xDC00 ..< 0xE000).contains(low) else {
                    throw failure("high surrogate without a low one")
                }
                return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(unit) else {
                throw failure("lone low surrogate")
            }
            return scalar
        default:
            throw failure("invalid escape")
        }
    }

    mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else {
            throw error("truncated \\u escape")
        }
        var value: UInt32 = 0
        for _ in 0 ..< 4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case 0x30 ... 0x39: digit = UInt32(byte - 0x30)
            case 0x41 ... 0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61 ... 0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }
}
