import Markup

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
