/// A renderer keeps the sections of a list and brings its adapter up to date each time it is
/// given new ones, through its updater.
///
/// The three roles are Carbon's: the renderer says *what* the list holds, the ``Updater`` *how* a
/// change is applied, the ``Adapter`` *how* a node is shown. Each render hands the sections of the
/// last successful render and the new ones to the updater, and returns its output.
///
/// A renderer is not `Sendable`: it belongs to one actor or task (for the web, one browser
/// session's list), which calls ``render(_:)`` in turn.
///
/// Example:
///
///     let renderer = Renderer(adapter: EmptyAdapter(), updater: StagedChangesetUpdater())
///
///     let changes = try renderer.render {
///         Section(id: "greet", header: Header("GREET")) {
///             HelloMessage(name: "Vincent")
///             HelloMessage(name: "Jules")
///             if showMia {
///                 HelloMessage(name: "Mia")
///             }
///         }
///     }
///
/// When the updater throws (``ListDiff/DiffError`` for a duplicate id, with the updaters of this
/// module), the render is refused as a whole: ``data`` and the updater stay as they were, and the
/// next render is diffed against the last one that succeeded.
public final class Renderer<U: Updater> {
    /// The adapter, handed to the updater on each render.
    public var adapter: U.Adapter

    /// The updater, which turns each change of the sections into ``U/Output``.
    public var updater: U

    /// The sections of the last successful render; empty before the first.
    public private(set) var data: [Section] = []

    /// Creates a renderer with no sections.
    ///
    /// - Parameters:
    ///   - adapter: The adapter, handed to the updater on each render.
    ///   - updater: The updater.
    @inlinable
    public init(adapter: U.Adapter, updater: U) {
        self.adapter = adapter
        self.updater = updater
    }

    /// Renders the given sections: hands the previous ``data`` and `sections` to the updater and,
    /// when it succeeds, keeps `sections` as ``data``.
    ///
    /// - Parameter sections: The sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    public func render(_ sections: [Section]) throws -> U.Output {
        var updater = self.updater
        let output = try updater.performUpdates(adapter: adapter, from: data, to: sections)
        self.updater = updater
        data = sections
        return output
    }

    /// Renders the sections listed by a ``SectionsBuilder`` closure (see `render(_ sections: [Section])`).
    ///
    /// - Parameter sections: A closure listing the sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    public func render(@SectionsBuilder _ sections: () -> [Section]) throws -> U.Output {
        try render(sections())
    }
}
