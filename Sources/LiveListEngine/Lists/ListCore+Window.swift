import LiveListHTML
import Markup

/// Windowed lists (docs/PROTOCOL.md, "Windowed lists"): a page that starts at a cell, and the range
/// route's answer.
extension ListCore {
    /// The position of `key` in the whole list as `rendering` shows it. For a list shown alike to every
    /// viewer, through the index that actions use (``currentPositions()``, built once per version: one
    /// lookup and a walk over the sections per request, on a list of any length); the renderer's
    /// sections must be current (a JSON list refreshes them first).
    func position(ofCell key: String, in rendering: RenderedList, shared: Bool) -> Int? {
        guard shared else { return rendering.position(ofCell: key) }
        let sections = rendering.sections
        guard let (section, cell) = currentPositions()[ByteKey(key)], section < sections.count, cell < sections[section].cells.count,
            sameBytes(sections[section].cells[cell].key, key)
        else { return nil }
        return sections[..<section].reduce(cell) { $0 + $1.cells.count }
    }

    /// The list root of a page whose window starts at the cell `key`, or nil when the list has no such
    /// cell. A list that is not windowed is rendered whole.
    func pageHTML(for viewer: Viewer, at key: String) -> (html: String, version: Int)? {
        let snapshot = perViewer != nil ? snapshot(for: viewer) : renderer.updater.snapshot
        guard let first = position(ofCell: key, in: snapshot.rendering, shared: perViewer == nil) else { return nil }
        let html = configuration.adapter.renderRoot(
            list: name.rawValue, version: snapshot.version, options: configuration.options, rendering: snapshot.rendering,
            startingAt: first
        )
        return (html, snapshot.version)
    }

    /// The range route's answer: the cells at positions `from ..< from + count` of the whole list at
    /// the current version, with the changeset that brings a client at `since` there (null when it is
    /// there, or ahead), every section's place and count (with its HTML when it has cells in the range
    /// or `keys` asks for every section), and with `keys` every cell's key in order.
    func window(from: Int, count: Int, since: Int?, keys: Bool, for viewer: Viewer) -> [UInt8] {
        let snapshot = perViewer != nil ? snapshot(for: viewer) : renderer.updater.snapshot
        let rendering = snapshot.rendering
        var writer = JSONWriter(capacity: 1024)
        writeDocumentHead(list: name.rawValue, version: snapshot.version, into: &writer)
        writer.key("total")
        writer.int(rendering.cellCount)
        writer.key("from")
        writer.int(from)
        writer.key("changes")
        if let since, since < snapshot.version {
            writer.raw(json: changes(since: since, for: viewer).encodedJSON())
        } else {
            writer.null()
        }
        writer.key("sections")
        if keys {
            if perViewer == nil, let encodedWindowKeys, encodedWindowKeys.version == snapshot.version {
                writer.raw(json: encodedWindowKeys.bytes)
            } else {
                var sections = JSONWriter(capacity: rendering.cellCount * 12 + 256)
                Self.writeWindowSections(rendering, from: 0, count: 0, keys: true, into: &sections)
                if perViewer == nil {
                    encodedWindowKeys = (snapshot.version, sections.bytes)
                }
                writer.raw(json: sections.bytes)
            }
        } else {
            Self.writeWindowSections(rendering, from: from, count: count, keys: false, into: &writer)
        }
        writer.key("cells")
        writeCells(rendering.window(from: from, count: count).lazy.flatMap(\.section.cells), into: &writer)
        writer.endObject()
        return writer.bytes
    }

    /// Every section's key, first position (`start`) and count; its HTML, header and footer when it
    /// has cells in the range (or an empty section at its positions) or with `keys`, which also adds
    /// every cell's key.
    private static func writeWindowSections(_ rendering: RenderedList, from: Int, count: Int, keys: Bool, into writer: inout JSONWriter) {
        let end = from + count
        writer.beginArray()
        var start = 0
        for section in rendering.sections {
            let cells = section.cells.count
            writer.beginObject()
            writer.key("key")
            writer.string(section.key)
            writer.key("start")
            writer.int(start)
            writer.key("count")
            writer.int(cells)
            if keys || RenderedList.window(from: from, end: end, holdsSectionAt: start, count: cells) {
                writeSectionElement(section, into: &writer)
            }
            if keys {
                writer.key("keys")
                writer.beginArray()
                for cell in section.cells {
                    writer.string(cell.key)
                }
                writer.endArray()
            }
            writer.endObject()
            start += cells
        }
        writer.endArray()
    }
}
