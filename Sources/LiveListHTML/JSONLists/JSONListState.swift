import Markup
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

        /// Equal when id, text and detail have the same bytes: the protocol keeps them byte for
        /// byte, so `"\u{E9}"` and `"e\u{301}"` are two texts (and two ids).
        public static func == (a: Cell, b: Cell) -> Bool {
            sameBytes(a.id, b.id) && sameBytes(a.text, b.text) && sameBytes(a.detail, b.detail)
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

        /// Equal when id, header, footer and cells have the same bytes (see ``JSONListState/Cell``).
        public static func == (a: Section, b: Section) -> Bool {
            sameBytes(a.id, b.id) && sameBytes(a.header, b.header) && sameBytes(a.footer, b.footer) && a.cells == b.cells
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

extension JSONListLimits {
    /// No limits: for what the store holds, which was within the limits of the process that accepted
    /// it (a lowered limit must not lose data).
    public static let unlimited = JSONListLimits(maximumSections: .max, maximumCells: .max, maximumIDLength: .max, maximumTextLength: .max)
}

/// Why a list body was refused: a stable code and a detail naming the path.
public struct ListStateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A stable word for programs: `malformed_json`, `invalid_type`, `missing_field`, `unknown_field`,
    /// `duplicate_key`, `invalid_key`, `too_long`, `too_many_sections`, `too_many_cells`.
    public var code: String
    /// What is wrong and where, e.g. `sections[2].cells[5].id: duplicate "abc"`.
    public var detail: String
    /// True when the text is not JSON at all; false for JSON that breaks the schema or its limits.
    public var isMalformedJSON: Bool

    public init(code: String, detail: String, isMalformedJSON: Bool = false) {
        self.code = code
        self.detail = detail
        self.isMalformedJSON = isMalformedJSON
    }

    public var description: String {
        "\(code): \(detail)"
    }
}

extension JSONListState {
    /// Decodes and validates a PUT body.
    ///
    /// - Throws: ``ListStateError`` marked ``ListStateError/isMalformedJSON`` (`malformed_json`) for text that is not JSON, and unmarked
    ///   for JSON that breaks the schema or the limits; the detail names the offending path.
    public static func decode(
        _ body: [UInt8],
        limits: JSONListLimits = JSONListLimits()
    ) throws(ListStateError) -> JSONListState {
        if let state = JSONParser.listState(body, limits: limits) {
            return state
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw ListStateError(code: "malformed_json", detail: error.description, isMalformedJSON: true)
        }
        var decoder = StateDecoder(limits: limits)
        return try decoder.decodeState(value)
    }
}

extension JSONListState {
    /// Decodes a PUT body as ``decode(_:limits:)`` does, except that ids may be left unchecked for
    /// uniqueness (`idsChecked` false): a list that finds the body's ids to be its own, in order, knows
    /// them unique, and checks the others with ``duplicateID()``. What a valid body decodes to is the same.
    package static func decodeForPut(_ body: [UInt8], limits: JSONListLimits) throws(ListStateError) -> (state: JSONListState, idsChecked: Bool) {
        if let state = JSONParser.listState(body, limits: limits, checkingIDs: false) {
            return (state, false)
        }
        return (try decode(body, limits: limits), true)
    }

    /// The refusal of the first repeated id, in document order, worded as ``decode(_:limits:)`` words it;
    /// nil when every id is unique.
    package func duplicateID() -> ListStateError? {
        var sectionIDs = Set<ByteKey>(minimumCapacity: sections.count)
        var cellIDs = Set<ByteKey>(minimumCapacity: cellCount)
        for (index, section) in sections.enumerated() {
            guard sectionIDs.insert(ByteKey(section.id)).inserted else {
                return ListStateError(code: "duplicate_key", detail: "\(BodyPath(section: index).member("id")): duplicate \(quoted(section.id))")
            }
            for (position, cell) in section.cells.enumerated() where !cellIDs.insert(ByteKey(cell.id)).inserted {
                return ListStateError(code: "duplicate_key",
                                      detail: "\(BodyPath(section: index, cell: position).member("id")): duplicate \(quoted(cell.id))")
            }
        }
        return nil
    }
}

/// Where a value lies in a PUT body, written out (`sections[2].cells[5].id`) only for an error, so that
/// a valid body costs no text per value.
private struct BodyPath: CustomStringConvertible {
    var section: Int?
    var cell: Int?
    var member: String?

    /// The body itself.
    static let body = BodyPath()

    /// The path of a member of this value.
    func member(_ name: String) -> BodyPath {
        BodyPath(section: section, cell: cell, member: name)
    }

    var description: String {
        var text = section.map { "sections[\($0)]" } ?? ""
        if let cell {
            text += ".cells[\(cell)]"
        }
        if let member {
            text += text.isEmpty ? member : "." + member
        }
        return text.isEmpty ? "body" : text
    }
}

/// The members of a JSON object whose names are all allowed. Objects of the schema have at most four
/// members, so a name is found by a scan (no hashing per object).
private struct Members {
    let pairs: [(key: String, value: JSONValue)]

    subscript(name: String) -> JSONValue? {
        pairs.first { $0.key == name }?.value
    }
}

/// Walks a parsed body, checking types, members, ids and limits, and naming the path of any problem.
private struct StateDecoder {
    let limits: JSONListLimits
    // Ids are compared byte for byte, as the DOM compares keys (AnyListID does; String would not).
    var sectionIDs = Set<AnyListID>()
    var cellIDs = Set<AnyListID>()
    var cellCount = 0

    static let bodyMembers = ["sections"]
    static let sectionMembers = ["id", "header", "footer", "cells"]
    static let cellMembers = ["id", "text", "detail"]

    init(limits: JSONListLimits) {
        self.limits = limits
    }

    mutating func decodeState(_ value: JSONValue) throws(ListStateError) -> JSONListState {
        let members = try object(value, at: .body, allowed: Self.bodyMembers)
        guard let sectionsValue = members["sections"] else {
            throw ListStateError(code: "missing_field", detail: "sections: missing")
        }
        guard case let .array(items) = sectionsValue else {
            throw .invalidType(BodyPath.body.member("sections"), expected: "an array", got: sectionsValue)
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
            sections.append(try decodeSection(item, at: BodyPath(section: index)))
        }
        return JSONListState(sections: sections)
    }

    mutating func decodeSection(_ value: JSONValue, at path: BodyPath) throws(ListStateError) -> JSONListState.Section {
        let members = try object(value, at: path, allowed: Self.sectionMembers)
        let id = try key(members["id"], at: path.member("id"))
        try Self.claim(id, at: path.member("id"), in: &sectionIDs)
        let header = try limits.optionalText(members["header"], at: path.member("header"))
        let footer = try limits.optionalText(members["footer"], at: path.member("footer"))
        guard let cellsValue = members["cells"] else {
            throw ListStateError(code: "missing_field", detail: "\(path.member("cells")): missing")
        }
        guard case let .array(items) = cellsValue else {
            throw .invalidType(path.member("cells"), expected: "an array", got: cellsValue)
        }
        cellCount += items.count
        cellIDs.reserveCapacity(cellCount)
        guard cellCount <= limits.maximumCells else {
            throw ListStateError(
                code: "too_many_cells",
                detail: "\(path.member("cells")): the list has more than the limit of \(limits.maximumCells) cells"
            )
        }
        var cells: [JSONListState.Cell] = []
        cells.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            let cellPath = BodyPath(section: path.section, cell: index)
            let cell = try object(item, at: cellPath, allowed: Self.cellMembers)
            let cellID = try key(cell["id"], at: cellPath.member("id"))
            try Self.claim(cellID, at: cellPath.member("id"), in: &cellIDs)
            guard let textValue = cell["text"] else {
                throw ListStateError(code: "missing_field", detail: "\(cellPath.member("text")): missing")
            }
            let text = try limits.text(textValue, at: cellPath.member("text"))
            let detail = try limits.optionalText(cell["detail"], at: cellPath.member("detail"))
            cells.append(JSONListState.Cell(id: cellID, text: text, detail: detail))
        }
        return JSONListState.Section(id: id, header: header, footer: footer, cells: cells)
    }

    /// The members of an object, every one of them in `allowed` (the parser already refused repeated
    /// names).
    func object(_ value: JSONValue, at path: BodyPath, allowed: [String]) throws(ListStateError) -> Members {
        guard case let .object(pairs) = value else {
            throw .invalidType(path, expected: "an object", got: value)
        }
        for (name, _) in pairs where !allowed.contains(name) {
            let known = allowed.sorted().joined(separator: ", ")
            throw ListStateError(
                code: "unknown_field",
                detail: "\(path).\(quoted(name)): unknown field (expected \(known))"
            )
        }
        return Members(pairs: pairs)
    }

    /// Checks an id's type and shape; ``claim(_:at:in:)`` checks that it is unique.
    func key(_ value: JSONValue?, at path: BodyPath) throws(ListStateError) -> String {
        guard let value else {
            throw ListStateError(code: "missing_field", detail: "\(path): missing")
        }
        return try limits.key(value, at: path)
    }

    /// Records `id` in `seen`, refusing a repeated one. Static, so that the set is not also reached
    /// through `self` during the inout access: such an overlap made Swift copy the whole set for every
    /// id, and decoding quadratic.
    static func claim(_ id: String, at path: BodyPath, in seen: inout Set<AnyListID>) throws(ListStateError) {
        guard seen.insert(AnyListID(id)).inserted else {
            throw ListStateError(code: "duplicate_key", detail: "\(path): duplicate \(quoted(id))")
        }
    }
}

// MARK: - Checks that the PUT body and the PATCH body share

extension JSONListLimits {
    /// An id: a string without NUL within ``maximumIDLength``; a refusal names `path`.
    func key(_ value: JSONValue, at path: some CustomStringConvertible) throws(ListStateError) -> String {
        guard case let .string(id) = value else {
            throw .invalidType(path, expected: "a string", got: value)
        }
        guard !id.utf8.contains(0) else {
            throw ListStateError(code: "invalid_key", detail: "\(path): \(quoted(id)) contains NUL")
        }
        guard id.utf8.count <= maximumIDLength else {
            throw ListStateError(code: "too_long", detail: "\(path): \(id.utf8.count) bytes, more than the limit of \(maximumIDLength)")
        }
        return id
    }

    /// A text: a string within ``maximumTextLength``; a refusal names `path`.
    func text(_ value: JSONValue, at path: some CustomStringConvertible) throws(ListStateError) -> String {
        guard case let .string(text) = value else {
            throw .invalidType(path, expected: "a string", got: value)
        }
        guard text.utf8.count <= maximumTextLength else {
            throw ListStateError(code: "too_long", detail: "\(path): \(text.utf8.count) bytes, more than the limit of \(maximumTextLength)")
        }
        return text
    }

    /// An optional text: absent or null is none.
    func optionalText(_ value: JSONValue?, at path: some CustomStringConvertible) throws(ListStateError) -> String? {
        guard let value, value != .null else {
            return nil
        }
        return try text(value, at: path)
    }
}

extension ListStateError {
    /// `invalid_type`: the value at `path` is not of the type expected.
    static func invalidType(_ path: some CustomStringConvertible, expected: String, got value: JSONValue) -> ListStateError {
        ListStateError(code: "invalid_type", detail: "\(path): expected \(expected), got \(value.typeName)")
    }
}

/// A string in double quotes with quotes, backslashes and controls escaped: a JSON string, also used
/// to name values in error details. A string longer than 200 characters or 800 bytes is shown by as
/// many of its first characters as fit both, followed by `…` and its length in bytes: a detail names
/// a value, it does not echo a request back many times its size.
public func quoted(_ string: String) -> String {
    // At most 200 characters and 800 bytes: one character can hold any number of combining marks.
    var end = string.startIndex
    var characters = 0
    while end < string.endIndex, characters < 200 {
        let next = string.index(after: end)
        guard string.utf8.distance(from: string.startIndex, to: next) <= 800 else { break }
        end = next
        characters += 1
    }
    var writer = JSONWriter(capacity: min(string.utf8.count, 1_024) + 2)
    writer.string(String(string[..<end]))
    var text = String(decoding: writer.bytes, as: UTF8.self)
    if end != string.endIndex {
        text += "… (\(string.utf8.count) bytes)"
    }
    return text
}
