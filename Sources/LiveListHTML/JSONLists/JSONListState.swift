import LiveList

/// The state of a JSON-driven list: the body of `PUT /lists/NAME`, validated.
///
///     {"sections": [{"id": "a", "header": "Groceries", "footer": null,
///                    "cells": [{"id": "x", "text": "Milk", "detail": "2 l"}]}]}
///
/// Ids and texts are strings; `header`, `footer` and `detail` are optional (absent or null); any other
/// member is refused, so that a typo never goes unnoticed. Section ids are unique among the sections and
/// cell ids across the whole list, and no id contains NUL.
public struct JSONListState: Sendable, Equatable {
    /// A cell: its id (the DOM key), its text and an optional detail line.
    public struct Cell: Sendable, Equatable {
        public var id: String
        public var text: String
        public var detail: String?

        public init(id: String, text: String, detail: String? = nil) {
            self.id = id
            self.text = text
            self.detail = detail
        }
    }

    /// A section: its id, optional header and footer text, and its cells.
    public struct Section: Sendable, Equatable {
        public var id: String
        public var header: String?
        public var footer: String?
        public var cells: [Cell]

        public init(id: String, header: String? = nil, footer: String? = nil, cells: [Cell]) {
            self.id = id
            self.header = header
            self.footer = footer
            self.cells = cells
        }
    }

    /// The sections, in order.
    public var sections: [Section]

    public init(sections: [Section]) {
        self.sections = sections
    }

    /// The number of cells over all sections.
    public var cellCount: Int {
        sections.reduce(0) { $0 + $1.cells.count }
    }
}

/// Limits on what a PUT may hold, with their defaults.
public struct JSONListLimits: Sendable, Equatable {
    /// The most sections in one list.
    public var maximumSections: Int
    /// The most cells in one list, over all its sections.
    public var maximumCells: Int
    /// The longest id, in bytes of UTF-8.
    public var maximumIDLength: Int
    /// The longest text, header, footer or detail, in bytes of UTF-8.
    public var maximumTextLength: Int

    public init(
        maximumSections: Int = 1_000,
        maximumCells: Int = 100_000,
        maximumIDLength: Int = 1_024,
        maximumTextLength: Int = 65_536
    ) {
        self.maximumSections = maximumSections
        self.maximumCells = maximumCells
        self.maximumIDLength = maximumIDLength
        self.maximumTextLength = maximumTextLength
    }
}

/// Why a PUT body was refused: a stable code, the HTTP status, and a detail naming the path.
public struct ListStateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A stable word for programs: `malformed_json`, `invalid_type`, `missing_field`, `unknown_field`,
    /// `duplicate_key`, `invalid_key`, `too_long`, `too_many_sections`, `too_many_cells`.
    public var code: String
    /// What is wrong and where, e.g. `sections[2].cells[5].id: duplicate "abc"`.
    public var detail: String
    /// 400 for malformed JSON, 422 for valid JSON that breaks the schema.
    public var status: Int

    public init(code: String, detail: String, status: Int = 422) {
        self.code = code
        self.detail = detail
        self.status = status
    }

    public var description: String {
        "\(code): \(detail)"
    }
}

extension JSONListState {
    /// Decodes and validates a PUT body.
    ///
    /// - Throws: ``ListStateError`` with status 400 (`malformed_json`) for text that is not JSON, and 422
    ///   for JSON that breaks the schema or the limits; the detail names the offending path.
    public static func decode(
        _ body: [UInt8],
        limits: JSONListLimits = JSONListLimits()
    ) throws(ListStateError) -> JSONListState {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw ListStateError(code: "malformed_json", detail: error.description, status: 400)
        }
        var decoder = StateDecoder(limits: limits)
        return try decoder.decodeState(value)
    }
}

/// Walks a parsed body, checking types, members, ids and limits, and naming the path of any problem.
private struct StateDecoder {
    let limits: JSONListLimits
    // Ids are compared byte for byte, as the DOM compares keys (AnyListID does; String would not).
    var sectionIDs = Set<AnyListID>()
    var cellIDs = Set<AnyListID>()
    var cellCount = 0

    init(limits: JSONListLimits) {
        self.limits = limits
    }

    mutating func decodeState(_ value: JSONValue) throws(ListStateError) -> JSONListState {
        let members = try object(value, at: "body", allowed: ["sections"])
        guard let sectionsValue = members["sections"] else {
            throw ListStateError(code: "missing_field", detail: "sections: missing")
        }
        guard case let .array(items) = sectionsValue else {
            throw invalidType("sections", expected: "an array", got: sectionsValue)
        }
        guard items.count <= limits.maximumSections else {
            throw ListStateError(
                code: "too_many_sections",
                detail: "sections: \(items.count) sections, more than the limit of \(limits.maximumSections)"
            )
        }
        var sections: [JSONListState.Section] = []
        sections.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            sections.append(try decodeSection(item, at: "sections[\(index)]"))
        }
        return JSONListState(sections: sections)
    }

    mutating func decodeSection(_ value: JSONValue, at path: String) throws(ListStateError) -> JSONListState.Section {
        let members = try object(value, at: path, allowed: ["id", "header", "footer", "cells"])
        let id = try key(members["id"], at: path + ".id", in: &sectionIDs)
        let header = try optionalText(members["header"], at: path + ".header")
        let footer = try optionalText(members["footer"], at: path + ".footer")
        guard let cellsValue = members["cells"] else {
            throw ListStateError(code: "missing_field", detail: "\(path).cells: missing")
        }
        guard case let .array(items) = cellsValue else {
            throw invalidType(path + ".cells", expected: "an array", got: cellsValue)
        }
        cellCount += items.count
        guard cellCount <= limits.maximumCells else {
            throw ListStateError(
                code: "too_many_cells",
                detail: "\(path).cells: the list has more than the limit of \(limits.maximumCells) cells"
            )
        }
        var cells: [JSONListState.Cell] = []
        cells.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            let cellPath = "\(path).cells[\(index)]"
            let cell = try object(item, at: cellPath, allowed: ["id", "text", "detail"])
            let cellID = try key(cell["id"], at: cellPath + ".id", in: &cellIDs)
            guard let textValue = cell["text"] else {
                throw ListStateError(code: "missing_field", detail: "\(cellPath).text: missing")
            }
            let text = try self.text(textValue, at: cellPath + ".text")
            let detail = try optionalText(cell["detail"], at: cellPath + ".detail")
            cells.append(JSONListState.Cell(id: cellID, text: text, detail: detail))
        }
        return JSONListState.Section(id: id, header: header, footer: footer, cells: cells)
    }

    func object(_ value: JSONValue, at path: String, allowed: Set<String>) throws(ListStateError) -> [String: JSONValue] {
        guard case let .object(members) = value else {
            throw invalidType(path, expected: "an object", got: value)
        }
        var result: [String: JSONValue] = [:]
        for (name, member) in members {
            guard allowed.contains(name) else {
                let known = allowed.sorted().joined(separator: ", ")
                throw ListStateError(
                    code: "unknown_field",
                    detail: "\(path).\(quoted(name)): unknown field (expected \(known))"
                )
            }
            result[name] = member
        }
        return result
    }

    func key(_ value: JSONValue?, at path: String, in seen: inout Set<AnyListID>) throws(ListStateError) -> String {
        guard let value else {
            throw ListStateError(code: "missing_field", detail: "\(path): missing")
        }
        guard case let .string(id) = value else {
            throw invalidType(path, expected: "a string", got: value)
        }
        guard !id.utf8.contains(0) else {
            throw ListStateError(code: "invalid_key", detail: "\(path): \(quoted(id)) contains NUL")
        }
        guard id.utf8.count <= limits.maximumIDLength else {
            throw ListStateError(
                code: "too_long",
                detail: "\(path): \(id.utf8.count) bytes, more than the limit of \(limits.maximumIDLength)"
            )
        }
        guard seen.insert(AnyListID(id)).inserted else {
            throw ListStateError(code: "duplicate_key", detail: "\(path): duplicate \(quoted(id))")
        }
        return id
    }

    func text(_ value: JSONValue, at path: String) throws(ListStateError) -> String {
        guard case let .string(text) = value else {
            throw invalidType(path, expected: "a string", got: value)
        }
        guard text.utf8.count <= limits.maximumTextLength else {
            throw ListStateError(
                code: "too_long",
                detail: "\(path): \(text.utf8.count) bytes, more than the limit of \(limits.maximumTextLength)"
            )
        }
        return text
    }

    func optionalText(_ value: JSONValue?, at path: String) throws(ListStateError) -> String? {
        guard let value, value != .null else {
            return nil
        }
        return try text(value, at: path)
    }

    func invalidType(_ path: String, expected: String, got value: JSONValue) -> ListStateError {
        ListStateError(code: "invalid_type", detail: "\(path): expected \(expected), got \(value.typeName)")
    }
}

/// A string in double quotes with quotes, backslashes and controls escaped: a JSON string, also used
/// to name values in error details.
public func quoted(_ string: String) -> String {
    var writer = JSONWriter(capacity: string.utf8.count + 2)
    writer.string(string)
    return String(decoding: writer.bytes, as: UTF8.self)
}
