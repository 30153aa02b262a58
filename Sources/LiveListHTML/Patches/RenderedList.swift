import Markup
/// A cell as the browser has it: its key and the HTML of the whole cell element.
public struct RenderedCell: Sendable, Equatable {
    /// The cell's key (`data-cell`).
    public var key: String
    /// The cell element's HTML, the same string in `insert`, `reload`, `reset` and the snapshot.
    public var html: String

    /// Creates a rendered cell from its key and HTML.
    public init(key: String, html: String) {
        self.key = key
        self.html = html
    }

    /// Equal when key and HTML have the same bytes (not merely canonically equivalent ones).
    public static func == (a: RenderedCell, b: RenderedCell) -> Bool {
        sameBytes(a.key, b.key) && sameBytes(a.html, b.html)
    }
}

/// A section as the browser has it: the section element without its cells, split around the empty
/// cells container, its header and footer elements, and its cells.
public struct RenderedSection: Sendable, Equatable {
    /// The section's key (`data-section`).
    public var key: String
    /// The section element up to and including the cells container's start tag (header included).
    public var opening: String
    /// From the cells container's end tag to the end of the section element (footer included).
    public var closing: String
    /// The header element's HTML, or nil.
    public var header: String?
    /// The footer element's HTML, or nil.
    public var footer: String?
    /// The cells, in order.
    public var cells: [RenderedCell]

    /// Creates a rendered section from its key, its HTML around the cells, its header and footer, and its cells.
    public init(key: String, opening: String, closing: String, header: String?, footer: String?, cells: [RenderedCell]) {
        self.key = key
        self.opening = opening
        self.closing = closing
        self.header = header
        self.footer = footer
        self.cells = cells
    }

    /// Equal when every part has the same bytes (not merely canonically equivalent ones).
    public static func == (a: RenderedSection, b: RenderedSection) -> Bool {
        sameBytes(a.key, b.key) && sameBytes(a.opening, b.opening) && sameBytes(a.closing, b.closing)
            && sameBytes(a.header, b.header) && sameBytes(a.footer, b.footer) && a.cells == b.cells
    }

    /// The section element rendered with its header and footer and no cells (`insertSection`'s `html`).
    public var html: String {
        opening + closing
    }

    /// Writes the whole section element, cells included.
    func write(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: opening.utf8)
        for cell in cells {
            bytes.append(contentsOf: cell.html.utf8)
        }
        bytes.append(contentsOf: closing.utf8)
    }
}

/// The rendering of a whole list: what a page shows, and what a snapshot describes.
public struct RenderedList: Sendable, Equatable {
    /// The sections, in order.
    public var sections: [RenderedSection]

    /// Creates a rendering from its sections; empty by default.
    public init(sections: [RenderedSection] = []) {
        self.sections = sections
    }

    /// The list root's children: every section element with its cells.
    public var html: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sections.reduce(0) { $0 + $1.opening.utf8.count + $1.closing.utf8.count } * 2)
        for section in sections {
            section.write(into: &bytes)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The number of cells over all sections.
    public var cellCount: Int {
        sections.reduce(0) { $0 + $1.cells.count }
    }
}

extension RenderedList {
    /// A window of the list: the cells at positions `from ..< from + count` of the whole list (in
    /// order over all sections), each section holding only its cells of the window. `start` is the
    /// position of a section's first cell in the whole list and `count` its number of cells. The
    /// sections returned are those with cells in the window, and the empty ones at its positions,
    /// or every section with `keepingEverySection`.
    package func window(
        from: Int, count: Int, keepingEverySection: Bool = false
    ) -> [(section: RenderedSection, start: Int, count: Int)] {
        let end = from + max(0, count)
        var result: [(section: RenderedSection, start: Int, count: Int)] = []
        var start = 0
        for section in sections {
            let cells = section.cells.count
            let lower = max(from, start)
            let upper = min(end, start + cells)
            if keepingEverySection || Self.window(from: from, end: end, holdsSectionAt: start, count: cells) {
                var windowed = section
                windowed.cells = lower < upper ? Array(section.cells[(lower - start) ..< (upper - start)]) : []
                result.append((windowed, start, cells))
            }
            start += cells
        }
        return result
    }

    /// Whether the window of positions `from ..< end` holds a section whose first cell is at `start` and
    /// that has `count` cells: one of its cells is in the window, or it is empty and sits at the window's
    /// positions (its ends included).
    package static func window(from: Int, end: Int, holdsSectionAt start: Int, count: Int) -> Bool {
        max(from, start) < min(end, start + count) || (count == 0 && start >= from && start <= end)
    }

    /// The key of the cell at position `index` of the whole list, or nil past its end.
    package func cellKey(at index: Int) -> String? {
        guard index >= 0 else { return nil }
        var start = 0
        for section in sections {
            if index < start + section.cells.count {
                return section.cells[index - start].key
            }
            start += section.cells.count
        }
        return nil
    }

    /// The position of the cell `key` in the whole list, or nil when it has none (a scan: callers with
    /// many requests keep an index instead).
    package func position(ofCell key: String) -> Int? {
        var start = 0
        for section in sections {
            if let index = section.cells.firstIndex(where: { sameBytes($0.key, key) }) {
                return start + index
            }
            start += section.cells.count
        }
        return nil
    }
}
