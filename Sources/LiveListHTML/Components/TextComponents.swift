public import LiveList
import Markup

/// A header of plain text: `Section(id: "a", header: Header("Groceries")) { … }`.
public struct Header: Component, Equatable {
    /// The text, escaped when rendered.
    public var text: String

    /// Creates a header of the given text.
    public init(_ text: String) {
        self.text = text
    }

    /// Equal when the texts have the same bytes (not merely canonically equivalent ones).
    public static func == (a: Header, b: Header) -> Bool { sameBytes(a.text, b.text) }

    /// The text in a `<span class="livelist-header-text">`.
    public var body: some HTML {
        span(.class("livelist-header-text")) { text }
    }
}

/// A footer of plain text.
public struct Footer: Component, Equatable {
    /// The text, escaped when rendered.
    public var text: String

    /// Creates a footer of the given text.
    public init(_ text: String) {
        self.text = text
    }

    /// Equal when the texts have the same bytes (not merely canonically equivalent ones).
    public static func == (a: Footer, b: Footer) -> Bool { sameBytes(a.text, b.text) }

    /// The text in a `<span class="livelist-footer-text">`.
    public var body: some HTML {
        span(.class("livelist-footer-text")) { text }
    }
}

/// A cell of text with an optional detail line: the cells of JSON-driven lists.
public struct TextCell: IdentifiableComponent, Equatable {
    /// The id of the cell.
    public var id: String
    /// The main text.
    public var text: String
    /// The detail line, if any.
    public var detail: String?

    /// Creates a cell from its id, text and optional detail line.
    public init(id: String, text: String, detail: String? = nil) {
        self.id = id
        self.text = text
        self.detail = detail
    }

    /// Equal when id, text and detail have the same bytes (not merely canonically equivalent ones).
    public static func == (a: TextCell, b: TextCell) -> Bool {
        sameBytes(a.id, b.id) && sameBytes(a.text, b.text) && sameBytes(a.detail, b.detail)
    }

    /// The text in a `<span class="livelist-text">`, and the detail in a `<small class="livelist-detail">`.
    public var body: some HTML {
        span(.class("livelist-text")) { text }
        if let detail {
            small(.class("livelist-detail")) { detail }
        }
    }
}

extension JSONListState {
    /// The sections of this state, built from ``TextCell``, ``Header`` and ``Footer``.
    public var listSections: [LiveList.Section] {
        sections.map { section in section.node(cells: section.cells.map(\.node)) }
    }
}

extension JSONListState.Cell {
    /// The cell's node: a ``TextCell``.
    var node: CellNode {
        CellNode(TextCell(id: id, text: text, detail: detail))
    }
}

extension JSONListState.Section {
    /// The section's node, with its ``Header`` and ``Footer``, holding `cells` (its own cells' nodes, or
    /// others: a patch renders a section's shell alone).
    func node(cells: [CellNode]) -> LiveList.Section {
        LiveList.Section(id: id, header: header.map(Header.init), cells: cells, footer: footer.map(Footer.init))
    }
}
