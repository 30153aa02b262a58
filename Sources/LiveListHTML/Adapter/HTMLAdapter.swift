public import LiveList

/// Renders sections into the DOM that the LiveList client patches (docs/PROTOCOL.md, "The DOM").
///
/// As in Carbon, a component renders its content and the adapter hosts it: the list root, the section
/// elements, the header and footer elements, the cells container and the cell elements belong to the
/// adapter, whose tags and classes are configurable; a component's `body` goes inside. The
/// `data-*` attributes are fixed, since the client finds elements by them:
///
///     <div class="livelist" data-list="todo" data-version="4" data-animate="true" …>
///       <section class="livelist-section" data-section="a">
///         <header class="livelist-header">…</header>
///         <ul class="livelist-cells">
///           <li class="livelist-cell" data-cell="x">…</li>
///         </ul>
///         <footer class="livelist-footer">…</footer>
///       </section>
///     </div>
///
/// Keys may hold any Unicode but NUL: they are written as escaped attribute values (quotes, `<`, `&`,
/// CR, LF and TAB as character references), so every key survives the HTML parser. A key with NUL is
/// refused with ``RenderError/invalidKey(_:kind:)``.
public struct HTMLAdapter: Adapter {
    /// The sections shown: a renderer's `adapter` carries its `data` here (see the `Adapter`
    /// protocol of the LiveList module).
    public var data: [Section] = []
    /// The id of the form that the controls of the cells, headers and footers rendered belong to
    /// (`HTMLWriter.formID` of the Markup module): the updater of a list sets its list's (``listFormID(_:)``).
    public var formID: String?

    /// The tag and classes of an element that the adapter owns.
    public struct Container: Sendable, Equatable {
        /// The tag name.
        public var tag: HTMLTag
        /// The `class` attribute, or nil for none.
        public var classes: String?

        /// Creates a container from a tag and its classes.
        public init(_ tag: HTMLTag, classes: String? = nil) {
            self.tag = tag
            self.classes = classes
        }
    }

    /// What a selection callback learns: which cell of which section was selected, and its node.
    public struct SelectionContext: Sendable {
        /// The list's name.
        public var list: String
        /// The selected cell's key.
        public var cellKey: String
        /// The key of the section that holds it.
        public var sectionKey: String
        /// The cell's node, with its component.
        public var node: CellNode

        /// Creates a context (for tests and custom dispatch; the server fills it).
        public init(list: String, cellKey: String, sectionKey: String, node: CellNode) {
            self.list = list
            self.cellKey = cellKey
            self.sectionKey = sectionKey
            self.node = node
        }
    }

    /// The list root. Default `<div class="livelist">`.
    public var root = Container(.div, classes: "livelist")
    /// Each section. Default `<section class="livelist-section">`.
    public var section = Container(.section, classes: "livelist-section")
    /// A section's header. Default `<header class="livelist-header">`.
    public var header = Container(.header, classes: "livelist-header")
    /// A section's cells container. Default `<ul class="livelist-cells">`.
    public var cells = Container(.ul, classes: "livelist-cells")
    /// Each cell. Default `<li class="livelist-cell">`.
    public var cell = Container(.li, classes: "livelist-cell")
    /// A section's footer. Default `<footer class="livelist-footer">`.
    public var footer = Container(.footer, classes: "livelist-footer")

    /// Called when the browser reports that a cell was selected (clicked or activated).
    public var didSelect: (@Sendable (SelectionContext) -> Void)?

    /// Creates an adapter with the default elements.
    public init() {}

    // MARK: - Rendering

    /// Renders a cell element: the cell container with its key, hosting the component's body.
    public func renderCell(_ node: CellNode) throws(RenderError) -> RenderedCell {
        let key = node.id.key
        try Self.validate(key, kind: "cell")
        var writer = HTMLWriter(capacity: 128)
        writer.formID = formID
        open(cell, into: &writer)
        writer.appendAttribute(name: "data-cell", value: key)
        if node.component.reportsVisibility {
            writer.appendAttribute(name: "data-visibility", value: "true")
        }
        writer.bytes.append(0x3E)
        node.component.renderBody(into: &writer)
        close(cell, into: &writer)
        return RenderedCell(key: key, html: writer.string)
    }

    /// Renders a header element around `node`'s body.
    public func renderHeader(_ node: ViewNode) -> String {
        renderSupplementary(node, in: header)
    }

    /// Renders a footer element around `node`'s body.
    public func renderFooter(_ node: ViewNode) -> String {
        renderSupplementary(node, in: footer)
    }

    /// Renders a section element, with its header and footer, around already rendered cells.
    public func renderSection(_ section: Section, cells: [RenderedCell]) throws(RenderError) -> RenderedSection {
        try renderSection(
            key: section.id.key,
            header: section.header.map(renderHeader),
            footer: section.footer.map(renderFooter),
            cells: cells
        )
    }

    /// Renders a section element from its key, its rendered header and footer, and its cells.
    func renderSection(
        key: String,
        header: String?,
        footer: String?,
        cells renderedCells: [RenderedCell]
    ) throws(RenderError) -> RenderedSection {
        try Self.validate(key, kind: "section")
        var writer = HTMLWriter(capacity: 256)
        open(section, into: &writer)
        writer.appendAttribute(name: "data-section", value: key)
        writer.bytes.append(0x3E)
        if let header {
            writer.appendRaw(header)
        }
        open(cells, into: &writer)
        writer.bytes.append(0x3E)
        let opening = writer.string
        writer = HTMLWriter(capacity: 128)
        close(cells, into: &writer)
        if let footer {
            writer.appendRaw(footer)
        }
        close(section, into: &writer)
        return RenderedSection(
            key: key,
            opening: opening,
            closing: writer.string,
            header: header,
            footer: footer,
            cells: renderedCells
        )
    }

    /// Renders every section and cell.
    public func render(_ sections: [Section]) throws(RenderError) -> RenderedList {
        var rendered: [RenderedSection] = []
        rendered.reserveCapacity(sections.count)
        for section in sections {
            var renderedCells: [RenderedCell] = []
            renderedCells.reserveCapacity(section.cells.count)
            for node in section.cells {
                renderedCells.append(try renderCell(node))
            }
            rendered.append(try renderSection(section, cells: renderedCells))
        }
        return RenderedList(sections: rendered)
    }

    /// The list root element with its data attributes, around `rendering` (for a full page). A list
    /// that `options` window (``UpdaterOptions/windows(cellCount:)``) gets its windowed root from its
    /// first cell (``renderRoot(list:version:options:rendering:startingAt:)``).
    public func renderRoot(list: String, version: Int, options: UpdaterOptions, rendering: RenderedList) -> String {
        renderRoot(list: list, version: version, options: options, rendering: rendering, startingAt: 0)
    }

    /// The list root for a page whose window starts at the cell at position `first` of the whole list
    /// (clamped to the list): for a windowed list, its root holds that window of
    /// ``UpdaterOptions/windowPageSize`` cells (fewer at the list's end) between two placeholders of the height of the cells
    /// around it, followed by a `<nav class="livelist-pages">` of links through the list for pages
    /// without JavaScript (docs/PROTOCOL.md, "Windowed lists"). Any other list is rendered whole.
    public func renderRoot(list: String, version: Int, options: UpdaterOptions, rendering: RenderedList, startingAt first: Int) -> String {
        let total = rendering.cellCount
        let windowed = options.windows(cellCount: total)
        var writer = HTMLWriter(capacity: 256)
        open(root, into: &writer)
        writer.appendAttribute(name: "data-list", value: list)
        writer.appendAttribute(name: "data-version", value: String(version))
        for (name, value) in options.rootAttributes {
            writer.appendAttribute(name: name, value: value ? "true" : "false")
        }
        guard windowed else {
            writer.bytes.append(0x3E)
            writer.appendRaw(rendering.html)
            close(root, into: &writer)
            return writer.string
        }
        let size = UpdaterOptions.windowPageSize
        let from = max(0, min(first, total - 1))
        let window = rendering.window(from: from, count: size)
        let shown = window.reduce(0) { $0 + $1.section.cells.count }
        let height = options.cellHeight ?? options.estimatedCellHeight
        writer.appendAttribute(name: "data-window", value: "true")
        writer.appendAttribute(name: "data-total", value: String(total))
        writer.appendAttribute(name: "data-first", value: String(from))
        writer.appendAttribute(name: "data-cell-height", value: String(height))
        writer.appendAttribute(name: "data-fixed-height", value: options.cellHeight == nil ? "false" : "true")
        writer.bytes.append(0x3E)
        writeGap("before", height: from * height, into: &writer)
        for part in window {
            part.section.write(into: &writer.bytes)
        }
        writeGap("after", height: (total - from - shown) * height, into: &writer)
        close(root, into: &writer)
        writePageLinks(list: list, rendering: rendering, from: from, shown: shown, total: total, into: &writer)
        return writer.string
    }

    /// A placeholder for cells not in the window: sized by attributes, which a strict
    /// Content-Security-Policy allows where it refuses a `style` attribute; hidden without JavaScript
    /// by livelist.css.
    private func writeGap(_ side: String, height: Int, into writer: inout HTMLWriter) {
        writer.appendRaw("<svg class=\"livelist-gap\" data-gap=\"\(side)\" aria-hidden=\"true\" width=\"1\" height=\"\(height)\"></svg>")
    }

    /// Links to the first, previous, next and last pages of a windowed list, as `?at=KEY` (a page
    /// that starts at that cell), for pages without JavaScript; livelist.css hides them with it.
    private func writePageLinks(list: String, rendering: RenderedList, from: Int, shown: Int, total: Int, into writer: inout HTMLWriter) {
        let size = UpdaterOptions.windowPageSize
        writer.appendRaw("<nav class=\"livelist-pages\"")
        writer.appendAttribute(name: "aria-label", value: "Pages of \(list)")
        writer.appendRaw("><span>Cells \(from + 1)–\(from + shown) of \(total)</span>")
        let links: [(label: String, rel: String?, position: Int?)] = [
            ("First", nil, from > 0 ? 0 : nil),
            ("Previous", "prev", from > 0 ? max(0, from - size) : nil),
            ("Next", "next", from + shown < total ? from + shown : nil),
            ("Last", nil, from + shown < total ? total - size : nil),
        ]
        for link in links {
            guard let position = link.position, let key = rendering.cellKey(at: position) else { continue }
            writer.appendRaw(" <a")
            writer.appendAttribute(name: "href", value: position == 0 ? "?" : "?at=" + percentEncoded(key))
            if let rel = link.rel {
                writer.appendAttribute(name: "rel", value: rel)
            }
            writer.bytes.append(0x3E)
            writer.appendText(link.label)
            writer.appendRaw("</a>")
        }
        writer.appendRaw("</nav>")
    }

    // MARK: - Helpers

    private func renderSupplementary(_ node: ViewNode, in container: Container) -> String {
        var writer = HTMLWriter(capacity: 128)
        writer.formID = formID
        open(container, into: &writer)
        if node.component.reportsVisibility {
            writer.appendAttribute(name: "data-visibility", value: "true")
        }
        writer.bytes.append(0x3E)
        node.renderBody(into: &writer)
        close(container, into: &writer)
        return writer.string
    }

    /// Writes `<tag class="…"` (the caller adds attributes and `>`).
    private func open(_ container: Container, into writer: inout HTMLWriter) {
        writer.bytes.append(0x3C)
        writer.appendRaw(container.tag.name)
        if let classes = container.classes {
            writer.appendAttribute(name: "class", value: classes)
        }
    }

    private func close(_ container: Container, into writer: inout HTMLWriter) {
        writer.appendRaw("</")
        writer.appendRaw(container.tag.name)
        writer.bytes.append(0x3E)
    }

    static func validate(_ key: String, kind: String) throws(RenderError) {
        if key.utf8.contains(0) {
            throw .invalidKey(key, kind: kind)
        }
    }
}

/// A rendering that cannot be done.
public enum RenderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key holds NUL, which no HTML attribute can carry. `kind` is `cell` or `section`.
    case invalidKey(String, kind: String)

    /// The error in words.
    public var description: String {
        switch self {
        case let .invalidKey(key, kind):
            "\(kind) key \(quoted(key)) contains NUL"
        }
    }
}

/// `text` percent-encoded for a URL's query value: every byte but the unreserved ones of RFC 3986
/// (letters, digits, `-`, `.`, `_`, `~`), and `/` as well when `keepingSlashes` (a path carried in a
/// query, as a sign-in's `next`). Hex digits are upper case.
package func percentEncoded(_ text: String, keepingSlashes: Bool = false) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case 0x30 ... 0x39, 0x41 ... 0x5A, 0x61 ... 0x7A, 0x2D, 0x2E, 0x5F, 0x7E:
            out.unicodeScalars.append(Unicode.Scalar(byte))
        case 0x2F where keepingSlashes:
            out.unicodeScalars.append("/")
        default:
            out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
        }
    }
    return out
}

/// The id of list `list`'s actions form, `livelist-actions-LIST`: the form that its cells' buttons and
/// fields post (their `form` attribute, ``HTMLAdapter/formID``), which every page that shows the list
/// writes beside it (the list's own page, and an app's page that embeds it).
public func listFormID(_ list: String) -> String {
    "livelist-actions-" + list
}
