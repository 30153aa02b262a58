import Markup
// The JSON form of changesets and snapshots (docs/PROTOCOL.md): every operation is an
// object with an "op" field and all of its fields present, null where empty.

extension ListChangeset {
    /// The changeset as one line of JSON.
    public func encodedJSON() -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.bytes = Self.encodedJSONHead(list: list, from: from)
        writeTail(into: &writer)
        return writer.bytes
    }

    /// The start of a changeset's JSON, up to and with its `from` member:
    /// `{"protocol":1,"list":"todo","from":4,`.
    public static func encodedJSONHead(list: String, from: Int) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + list.utf8.count)
        writer.beginObject()
        writer.key("protocol")
        writer.int(protocolVersion)
        writer.key("list")
        writer.string(list)
        writer.key("from")
        writer.int(from)
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: ","))
        return bytes
    }

    /// The changeset's JSON in two parts that join into ``encodedJSON()``: the head
    /// (``encodedJSONHead(list:from:)``) and the rest, which changesets that differ only in where they
    /// start share (a reset sent to streams that resume from different versions).
    public func encodedJSONParts() -> (head: [UInt8], tail: [UInt8]) {
        var writer = JSONWriter(capacity: 256)
        writeTail(into: &writer)
        return (Self.encodedJSONHead(list: list, from: from), writer.bytes)
    }

    /// Writes the members after `from` and the closing brace: the tail continues the head's object,
    /// so it starts at its next member (a writer that has written nothing puts no comma before it).
    private func writeTail(into writer: inout JSONWriter) {
        writer.key("version")
        writer.int(version)
        writer.key("animate")
        writer.bool(animate)
        writer.key("ops")
        writer.beginArray()
        if let windowAbove, case let .reset(_, sections) = operations.first, operations.count == 1,
            case let rendering = RenderedList(sections: sections), rendering.cellCount > windowAbove
        {
            writeWindowedReset(rendering, into: &writer)
        } else {
            for operation in operations {
                operation.write(into: &writer)
            }
        }
        writer.endArray()
        writer.endObject()
    }

    /// A windowed list's reset: the first cells (``UpdaterOptions/windowPageSize``) and every
    /// section with its count (`count`) and the list's (`total`), not every cell.
    private func writeWindowedReset(_ rendering: RenderedList, into writer: inout JSONWriter) {
        let window = rendering.window(from: 0, count: UpdaterOptions.windowPageSize, keepingEverySection: true)
        writer.beginObject()
        writer.key("op")
        writer.string("reset")
        writer.key("html")
        writer.string(RenderedList(sections: window.map(\.section)).html)
        writer.key("sections")
        writeSections(window.map(\.section), counts: window.map(\.count), into: &writer)
        writer.key("total")
        writer.int(rendering.cellCount)
        writer.endObject()
    }
}

extension PatchOperation {
    func write(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("op")
        writer.string(name)
        switch self {
        case let .deleteSection(section):
            writer.key("section")
            writer.string(section)
        case let .insertSection(section, after, html, header, footer):
            writer.key("section")
            writer.string(section)
            writer.key("after")
            writer.string(after)
            writer.key("html")
            writer.string(html)
            writer.key("header")
            writer.string(header)
            writer.key("footer")
            writer.string(footer)
        case let .moveSection(section, after):
            writer.key("section")
            writer.string(section)
            writer.key("after")
            writer.string(after)
        case let .reloadSection(section, header, footer):
            writer.key("section")
            writer.string(section)
            writer.key("header")
            writer.string(header)
            writer.key("footer")
            writer.string(footer)
        case let .delete(cell):
            writer.key("cell")
            writer.string(cell)
        case let .insert(cell, section, after, html):
            writer.key("cell")
            writer.string(cell)
            writer.key("section")
            writer.string(section)
            writer.key("after")
            writer.string(after)
            writer.key("html")
            writer.string(html)
        case let .move(cell, section, after):
            writer.key("cell")
            writer.string(cell)
            writer.key("section")
            writer.string(section)
            writer.key("after")
            writer.string(after)
        case let .reload(cell, html):
            writer.key("cell")
            writer.string(cell)
            writer.key("html")
            writer.string(html)
        case let .reset(html, sections):
            writer.key("html")
            writer.string(html)
            writer.key("sections")
            writeSections(sections, into: &writer)
        }
        writer.endObject()
    }
}

extension ListSnapshot {
    /// The snapshot as one line of JSON, with its `state` when the list is JSON-driven.
    public func encodedJSON() -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        writeDocumentHead(list: list, version: version, into: &writer)
        writer.key("sections")
        writeSections(rendering.sections, into: &writer)
        if let state {
            writer.key("state")
            writer.raw(json: state)
        }
        writer.endObject()
        return writer.bytes
    }
}

/// Opens a document of a list at a version: `{"protocol":1,"list":LIST,"version":VERSION`.
package func writeDocumentHead(list: String, version: Int, into writer: inout JSONWriter) {
    writer.beginObject()
    writer.key("protocol")
    writer.int(ListChangeset.protocolVersion)
    writer.key("list")
    writer.string(list)
    writer.key("version")
    writer.int(version)
}

/// Writes sections in snapshot form: key, cell-less html, header, footer and cells; with `counts`,
/// each section's count of cells (`count`) before its cells (a window of them).
func writeSections(_ sections: [RenderedSection], counts: [Int]? = nil, into writer: inout JSONWriter) {
    writer.beginArray()
    for (index, section) in sections.enumerated() {
        writer.beginObject()
        writer.key("key")
        writer.string(section.key)
        writeSectionElement(section, into: &writer)
        if let counts {
            writer.key("count")
            writer.int(counts[index])
        }
        writer.key("cells")
        writeCells(section.cells, into: &writer)
        writer.endObject()
    }
    writer.endArray()
}

/// Writes a section's `html` (its element without cells), `header` and `footer` members.
package func writeSectionElement(_ section: RenderedSection, into writer: inout JSONWriter) {
    writer.key("html")
    writer.string(section.html)
    writer.key("header")
    writer.string(section.header)
    writer.key("footer")
    writer.string(section.footer)
}

/// Writes cells as an array of `{"key": KEY, "html": HTML}`.
package func writeCells(_ cells: some Sequence<RenderedCell>, into writer: inout JSONWriter) {
    writer.beginArray()
    for cell in cells {
        writer.beginObject()
        writer.key("key")
        writer.string(cell.key)
        writer.key("html")
        writer.string(cell.html)
        writer.endObject()
    }
    writer.endArray()
}
