/// One DOM operation of a changeset (docs/PROTOCOL.md, "Changesets"). Operations apply in order; every anchor (`after`)
/// names an element in the state left by the operations before it, and `nil` means "first".
public enum PatchOperation: Sendable, Equatable {
    /// Remove the section and the cells still in it.
    case deleteSection(section: String)
    /// Insert the section element, rendered with its header and footer and no cells, after the section
    /// `after`. Its cells follow as `insert` and `move` operations.
    case insertSection(section: String, after: String?, html: String, header: String?, footer: String?)
    /// Move the section element after the section `after`, keeping its DOM.
    case moveSection(section: String, after: String?)
    /// Set the header and footer elements to these (nil removes one); the cells stay.
    case reloadSection(section: String, header: String?, footer: String?)
    /// Remove the cell element.
    case delete(cell: String)
    /// Insert the cell element into `section`'s cells container after the cell `after`.
    case insert(cell: String, section: String, after: String?, html: String)
    /// Move the existing cell element into `section`'s cells container after the cell `after`.
    case move(cell: String, section: String, after: String?)
    /// Replace the cell element.
    case reload(cell: String, html: String)
    /// Replace the list root's children with `html`; `sections` is the same state in snapshot form.
    case reset(html: String, sections: [RenderedSection])

    /// The operation's name on the wire.
    public var name: String {
        switch self {
        case .deleteSection: "deleteSection"
        case .insertSection: "insertSection"
        case .moveSection: "moveSection"
        case .reloadSection: "reloadSection"
        case .delete: "delete"
        case .insert: "insert"
        case .move: "move"
        case .reload: "reload"
        case .reset: "reset"
        }
    }
}

/// The operations from one version of a list to the next, as sent to browsers and JSON readers.
public struct ListChangeset: Sendable, Equatable {
    /// The protocol version of the format.
    public static let protocolVersion = 1

    /// The list's name.
    public var list: String
    /// The version the operations apply to.
    public var from: Int
    /// The version they produce.
    public var version: Int
    /// Whether the browser should animate these operations.
    public var animate: Bool
    /// The operations, in order.
    public var operations: [PatchOperation]
    /// For a reset of a list windowed above this many cells (``UpdaterOptions/windowAbove``): when its
    /// state holds more cells, the reset is encoded windowed, with the first
    /// ``UpdaterOptions/windowPageSize`` cells and every section's count instead of every cell
    /// (docs/PROTOCOL.md, "Windowed lists"). Its operations keep the whole state.
    public var windowAbove: Int?

    /// Creates a changeset from its list, the version it applies to, the version it makes, whether it animates, and its operations.
    public init(list: String, from: Int, version: Int, animate: Bool, operations: [PatchOperation], windowAbove: Int? = nil) {
        self.list = list
        self.from = from
        self.version = version
        self.animate = animate
        self.operations = operations
        self.windowAbove = windowAbove
    }

    /// Whether this changeset replaces the whole list.
    public var isReset: Bool {
        operations.count == 1 && operations.first?.name == "reset"
    }
}

/// A list's state at one version, as JSON readers get it.
public struct ListSnapshot: Sendable, Equatable {
    /// The list's name.
    public var list: String
    /// The version.
    public var version: Int
    /// The rendering.
    public var rendering: RenderedList
    /// For JSON-driven lists: the state in the PUT body's format (the last PUT's own bytes, or the
    /// state encoded after patches), else nil.
    public var state: [UInt8]?

    /// Creates a snapshot of a list at a version, with its rendering and the state it was rendered from, if any.
    public init(list: String, version: Int, rendering: RenderedList, state: [UInt8]? = nil) {
        self.list = list
        self.version = version
        self.rendering = rendering
        self.state = state
    }
}
