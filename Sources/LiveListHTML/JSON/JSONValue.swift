/// A parsed JSON value (RFC 8259), objects keeping their members in document order.
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept as the text it was written with.
    case number(String)
    /// A string, unescaped.
    case string(String)
    /// An array of values.
    case array([JSONValue])
    /// An object's members, in document order (a duplicate name is the parser's to refuse).
    case object([(key: String, value: JSONValue)])

    /// Values are equal when they have the same kind and contents: numbers by their text, objects
    /// member by member in order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// The JSON type's name, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Malformed JSON text: where and what.
public struct JSONSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The byte offset of the problem.
    public var offset: Int
    /// What is wrong.
    public var reason: String

    /// `at byte OFFSET: REASON`.
    public var description: String {
        "at byte \(offset): \(reason)"
    }
}

/// A strict, bounded JSON parser over UTF-8 bytes.
///
/// It accepts exactly RFC 8259 (no comments, trailing commas, single quotes, NaN, leading zeros or lone
/// surrogates), refuses an object with a repeated member name (which readers would resolve differently)
/// and nesting deeper than `maximumDepth`, and never recurses without bound.
struct JSONParser {
    private let bytes: [UInt8]
    private var position = 0
    private let maximumDepth: Int

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

    private init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    private func error(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: position, reason: reason)
    }

    private var current: UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            position += 1
        }
    }

    private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count,
              literal.withUTF8Buffer({ bytes[position ..< position + count].elementsEqual($0) })
        else {
            throw error("invalid literal")
        }
        position += count
        return value
    }

    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
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

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
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
    private static func isRepeated(_ key: String, in members: [(key: String, value: JSONValue)], seen: inout Set<String>?) -> Bool {
        let scanLimit = 8
        if seen == nil {
            if members.count < scanLimit {
                return members.contains { $0.key == key }
            }
            seen = Set(members.map(\.key))
        }
        return seen?.insert(key).inserted == false
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
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

    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
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
    private mutating func parseString() throws(JSONSyntaxError) -> String {
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
    private func validatedRun(from start: Int) throws(JSONSyntaxError) -> String {
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
    private mutating func parseEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
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

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
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

extension JSONValue {
    /// Parses one JSON text strictly (see the parser's rules: RFC 8259 only, no repeated member names,
    /// nesting at most `maximumDepth`).
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONSyntaxError) -> JSONValue {
        try JSONParser.parse(bytes, maximumDepth: maximumDepth)
    }
}

extension JSONParser {
    /// Reads a PUT body straight into a ``JSONListState``, without building the JSON tree, or nil when
    /// the body is anything but a valid list within `limits` (then ``JSONListState/decode(_:limits:)``
    /// reads it the general way, which names the problem). The same rules as the general way: the
    /// members the schema allows, in any order and each once, strings for ids and texts, null for a
    /// missing header, footer or detail, unique ids without NUL, and the limits.
    ///
    /// With `checkingIDs` false, ids are not checked for uniqueness: for a caller that checks them
    /// otherwise (see ``JSONListState/decodeForPut(_:limits:)``).
    static func listState(_ bytes: [UInt8], limits: JSONListLimits, checkingIDs: Bool = true) -> JSONListState? {
        var parser = JSONParser(bytes: bytes, maximumDepth: 64)
        return try? parser.readListState(limits: limits, checkingIDs: checkingIDs)
    }

    /// Any refusal: the general decoder takes over.
    private struct NotFast: Error {}

    private mutating func readListState(limits: JSONListLimits, checkingIDs: Bool) throws -> JSONListState {
        skipWhitespace()
        var sections: [JSONListState.Section]?
        try readObject { parser, name throws in
            guard name == "sections", sections == nil else { throw NotFast() }
            sections = try parser.readSections(limits: limits, checkingIDs: checkingIDs)
        }
        skipWhitespace()
        guard position == bytes.count, let sections else { throw NotFast() }
        return JSONListState(sections: sections)
    }

    private mutating func readSections(limits: JSONListLimits, checkingIDs: Bool) throws -> [JSONListState.Section] {
        var sections: [JSONListState.Section] = []
        var sectionIDs = Set<ByteKey>()
        var cellIDs = Set<ByteKey>(minimumCapacity: checkingIDs ? min(bytes.count / 24, limits.maximumCells) : 0)
        var cellCount = 0
        try readArray { parser throws in
            guard sections.count < limits.maximumSections else { throw NotFast() }
            var id: String?
            var header: String??
            var footer: String??
            var cells: [JSONListState.Cell]?
            try parser.readObject { parser, name throws in
                switch name {
                case "id" where id == nil: id = try parser.readKey(limits: limits)
                case "header" where header == nil: header = .some(try parser.readOptionalText(limits: limits))
                case "footer" where footer == nil: footer = .some(try parser.readOptionalText(limits: limits))
                case "cells" where cells == nil:
                    var list: [JSONListState.Cell] = []
                    try parser.readArray { parser throws in
                        cellCount += 1
                        guard cellCount <= limits.maximumCells else { throw NotFast() }
                        var cellID: String?
                        var text: String?
                        var detail: String??
                        try parser.readObject { parser, name throws in
                            switch name {
                            case "id" where cellID == nil: cellID = try parser.readKey(limits: limits)
                            case "text" where text == nil: text = try parser.readText(limits: limits)
                            case "detail" where detail == nil: detail = .some(try parser.readOptionalText(limits: limits))
                            default: throw NotFast()
                            }
                        }
                        guard let cellID, let text, !checkingIDs || cellIDs.insert(ByteKey(cellID)).inserted else { throw NotFast() }
                        list.append(JSONListState.Cell(id: cellID, text: text, detail: detail ?? nil))
                    }
                    cells = list
                default: throw NotFast()
                }
            }
            guard let id, let cells, !checkingIDs || sectionIDs.insert(ByteKey(id)).inserted else { throw NotFast() }
            sections.append(JSONListState.Section(id: id, header: header ?? nil, footer: footer ?? nil, cells: cells))
        }
        return sections
    }

    /// Reads an object, handing each member's name to `member`, which reads its value.
    private mutating func readObject(_ member: (inout JSONParser, String) throws -> Void) throws {
        guard current == 0x7B else { throw NotFast() }
        position += 1
        skipWhitespace()
        if current == 0x7D {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            guard current == 0x22 else { throw NotFast() }
            let name = try parseString()
            skipWhitespace()
            guard current == 0x3A else { throw NotFast() }
            position += 1
            skipWhitespace()
            try member(&self, name)
            skipWhitespace()
            switch current {
            case 0x2C: position += 1
            case 0x7D:
                position += 1
                return
            default: throw NotFast()
            }
        }
    }

    /// Reads an array, calling `element` at each element's start.
    private mutating func readArray(_ element: (inout JSONParser) throws -> Void) throws {
        guard current == 0x5B else { throw NotFast() }
        position += 1
        skipWhitespace()
        if current == 0x5D {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            try element(&self)
            skipWhitespace()
            switch current {
            case 0x2C: position += 1
            case 0x5D:
                position += 1
                return
            default: throw NotFast()
            }
        }
    }

    private mutating func readKey(limits: JSONListLimits) throws -> String {
        guard current == 0x22 else { throw NotFast() }
        let start = position
        let id = try parseString()
        // A NUL comes only from an escape (a raw one is refused as a control character): a key whose
        // bytes are its quoted text's has none.
        let escaped = position - start - 2 != id.utf8.count
        guard id.utf8.count <= limits.maximumIDLength, !escaped || !id.utf8.contains(0) else { throw NotFast() }
        return id
    }

    private mutating func readText(limits: JSONListLimits) throws -> String {
        guard current == 0x22 else { throw NotFast() }
        let text = try parseString()
        guard text.utf8.count <= limits.maximumTextLength else { throw NotFast() }
        return text
    }

    private mutating func readOptionalText(limits: JSONListLimits) throws -> String? {
        if current == 0x6E {
            _ = try expect("null", .null)
            return nil
        }
        return try readText(limits: limits)
    }
}
