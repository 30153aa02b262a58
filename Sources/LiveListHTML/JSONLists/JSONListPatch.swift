import Markup

/// A keyed partial write to a JSON-driven list: the body of `PATCH /lists/NAME`, validated.
///
///     {"ops": [{"op": "upsert", "cell": {"id": "x", "text": "Milk"}, "section": "a", "position": "first"},
///              {"op": "update", "cell": {"id": "y", "text": "Bread", "detail": "1"}},
///              {"op": "remove", "cell": "z"},
///              {"op": "upsertSection", "section": {"id": "b", "header": "Later"}, "position": {"after": "a"}},
///              {"op": "removeSection", "section": "c"}]}
///
/// The operations apply in order and atomically (docs/PROTOCOL.md, "PATCH"). Decoding checks each
/// operation's shape and the list's limits on ids and texts; what an operation means for the list
/// (a missing anchor, a missing section) is checked when it is applied, on the list as it is then.
public struct JSONListPatch: Sendable, Equatable {
    /// Where an upserted cell or section goes.
    public enum Position: Sendable, Equatable {
        /// First of its section (a cell) or of the list (a section).
        case first
        /// Last of its section or of the list.
        case last
        /// Right after the cell (or section) with this id.
        case after(String)
    }

    /// One operation.
    public enum Operation: Sendable, Equatable {
        /// Replaces an existing cell's text and detail, or inserts the cell (`section` then required).
        /// An existing cell moves only when `section` or `position` names a place other than its own.
        case upsert(cell: JSONListState.Cell, section: String?, position: Position?)
        /// Replaces an existing cell's text and detail; a missing cell is skipped.
        case update(cell: JSONListState.Cell)
        /// Removes a cell; a missing cell is skipped.
        case remove(cell: String)
        /// Replaces an existing section's header and footer (its cells stay), or inserts it empty. It
        /// moves only when `position` names a place other than its own.
        case upsertSection(id: String, header: String?, footer: String?, position: Position?)
        /// Removes a section and its cells; a missing section is skipped.
        case removeSection(id: String)
    }

    /// The most operations one patch may hold.
    public static let maximumOperations = 10_000

    /// The operations, in order.
    public var operations: [Operation]

    public init(operations: [Operation]) {
        self.operations = operations
    }

    /// Decodes and checks a PATCH body.
    ///
    /// - Throws: ``ListStateError`` marked ``ListStateError/isMalformedJSON`` for text that is not JSON;
    ///   unmarked for JSON that is not a patch, with a detail that names the first bad operation's index
    ///   (`ops[3].cell.id: missing`).
    public static func decode(_ body: [UInt8], limits: JSONListLimits = JSONListLimits()) throws(ListStateError) -> JSONListPatch {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw ListStateError(code: "malformed_json", detail: error.description, isMalformedJSON: true)
        }
        let top = try PatchDecoder.members(value, at: "body", allowed: ["ops"])
        guard let opsValue = top["ops"] else {
            throw ListStateError(code: "missing_field", detail: "ops: missing")
        }
        guard case let .array(items) = opsValue else {
            throw .invalidType("ops", expected: "an array", got: opsValue)
        }
        guard items.count <= maximumOperations else {
            throw ListStateError(code: "too_many_operations", detail: "ops: \(items.count) operations, more than the limit of \(maximumOperations)")
        }
        let decoder = PatchDecoder(limits: limits)
        var operations: [Operation] = []
        operations.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            operations.append(try decoder.operation(item, at: "ops[\(index)]"))
        }
        return JSONListPatch(operations: operations)
    }

    /// The patch as JSON, in the format ``decode(_:limits:)`` reads (what a store keeps of it).
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(capacity: 64 * operations.count + 16)
        writer.beginObject()
        writer.key("ops")
        writer.beginArray()
        for operation in operations {
            writer.beginObject()
            switch operation {
            case let .upsert(cell, section, position):
                writer.key("op")
                writer.string("upsert")
                Self.write(cell, into: &writer)
                if let section {
                    writer.key("section")
                    writer.string(section)
                }
                Self.write(position, into: &writer)
            case let .update(cell):
                writer.key("op")
                writer.string("update")
                Self.write(cell, into: &writer)
            case let .remove(cell):
                writer.key("op")
                writer.string("remove")
                writer.key("cell")
                writer.string(cell)
            case let .upsertSection(id, header, footer, position):
                writer.key("op")
                writer.string("upsertSection")
                writer.key("section")
                writer.beginObject()
                writer.key("id")
                writer.string(id)
                if let header {
                    writer.key("header")
                    writer.string(header)
                }
                if let footer {
                    writer.key("footer")
                    writer.string(footer)
                }
                writer.endObject()
                Self.write(position, into: &writer)
            case let .removeSection(id):
                writer.key("op")
                writer.string("removeSection")
                writer.key("section")
                writer.string(id)
            }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }

    private static func write(_ cell: JSONListState.Cell, into writer: inout JSONWriter) {
        writer.key("cell")
        cell.write(into: &writer)
    }

    private static func write(_ position: Position?, into writer: inout JSONWriter) {
        guard let position else { return }
        writer.key("position")
        switch position {
        case .first: writer.string("first")
        case .last: writer.string("last")
        case let .after(id):
            writer.beginObject()
            writer.key("after")
            writer.string(id)
            writer.endObject()
        }
    }
}

/// Reads the operations of a patch body, naming the path of the first problem.
private struct PatchDecoder {
    let limits: JSONListLimits

    /// An object's members, each of them in `allowed`.
    static func members(_ value: JSONValue, at path: String, allowed: [String]) throws(ListStateError) -> [String: JSONValue] {
        guard case let .object(pairs) = value else {
            throw .invalidType(path, expected: "an object", got: value)
        }
        var members: [String: JSONValue] = [:]
        for (name, member) in pairs {
            guard allowed.contains(name) else {
                throw ListStateError(code: "unknown_field",
                                     detail: "\(path).\(quoted(name)): unknown field (expected \(allowed.sorted().joined(separator: ", ")))")
            }
            members[name] = member
        }
        return members
    }

    static let operationMembers: [String: [String]] = [
        "upsert": ["op", "cell", "section", "position"],
        "update": ["op", "cell"],
        "remove": ["op", "cell"],
        "upsertSection": ["op", "section", "position"],
        "removeSection": ["op", "section"],
    ]

    func operation(_ value: JSONValue, at path: String) throws(ListStateError) -> JSONListPatch.Operation {
        guard case let .object(pairs) = value else {
            throw .invalidType(path, expected: "an object", got: value)
        }
        guard let opValue = pairs.first(where: { $0.key == "op" })?.value else {
            throw ListStateError(code: "missing_field", detail: "\(path).op: missing")
        }
        guard case let .string(op) = opValue, let allowed = Self.operationMembers[op] else {
            throw ListStateError(code: "unknown_operation",
                                 detail: "\(path).op: \(opValue.typeName == "string" ? "unknown operation" : "expected a string") (expected remove, removeSection, update, upsert, upsertSection)")
        }
        let members = try Self.members(value, at: path, allowed: allowed)
        switch op {
        case "upsert":
            let cell = try self.cell(members["cell"], at: path + ".cell")
            let section = try members["section"].map { value throws(ListStateError) in try limits.key(value, at: path + ".section") }
            return .upsert(cell: cell, section: section, position: try position(members["position"], at: path + ".position"))
        case "update":
            return .update(cell: try cell(members["cell"], at: path + ".cell"))
        case "remove":
            return .remove(cell: try limits.key(required(members["cell"], at: path + ".cell"), at: path + ".cell"))
        case "upsertSection":
            let sectionPath = path + ".section"
            let section = try Self.members(required(members["section"], at: sectionPath), at: sectionPath, allowed: ["id", "header", "footer"])
            return .upsertSection(id: try limits.key(required(section["id"], at: sectionPath + ".id"), at: sectionPath + ".id"),
                                  header: try limits.optionalText(section["header"], at: sectionPath + ".header"),
                                  footer: try limits.optionalText(section["footer"], at: sectionPath + ".footer"),
                                  position: try position(members["position"], at: path + ".position"))
        default:
            return .removeSection(id: try limits.key(required(members["section"], at: path + ".section"), at: path + ".section"))
        }
    }

    func required(_ value: JSONValue?, at path: String) throws(ListStateError) -> JSONValue {
        guard let value else {
            throw ListStateError(code: "missing_field", detail: "\(path): missing")
        }
        return value
    }

    func cell(_ value: JSONValue?, at path: String) throws(ListStateError) -> JSONListState.Cell {
        let members = try Self.members(required(value, at: path), at: path, allowed: ["id", "text", "detail"])
        return JSONListState.Cell(id: try limits.key(required(members["id"], at: path + ".id"), at: path + ".id"),
                                  text: try limits.text(required(members["text"], at: path + ".text"), at: path + ".text"),
                                  detail: try limits.optionalText(members["detail"], at: path + ".detail"))
    }

    func position(_ value: JSONValue?, at path: String) throws(ListStateError) -> JSONListPatch.Position? {
        switch value {
        case nil, .null?: return nil
        case .string("first")?: return .first
        case .string("last")?: return .last
        case let .object(pairs)? where pairs.count == 1 && pairs[0].key == "after":
            return .after(try limits.key(pairs[0].value, at: path + ".after"))
        case let value?:
            throw ListStateError(code: "invalid_position", detail: "\(path): expected \"first\", \"last\" or {\"after\": ID}, got \(value.typeName)")
        }
    }
}
