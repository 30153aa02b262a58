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


extension JSONValue {
    /// Parses one JSON text strictly (see the parser's rules: RFC 8259 only, no repeated member names,
    /// nesting at most `maximumDepth`).
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONSyntaxError) -> JSONValue {
        try JSONParser.parse(bytes, maximumDepth: maximumDepth)
    }
}
