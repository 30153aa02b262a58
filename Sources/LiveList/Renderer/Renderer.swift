import Synchronization

/// A renderer keeps the sections of a list and brings its adapter up to date each time it is
/// given new ones, through its updater.
///
/// The three roles are Carbon's: the renderer says *what* the list holds, the ``Updater`` *how* a
/// change is applied, the ``Adapter`` *how* a node is shown. Each render hands the sections of the
/// last successful render and the new ones to the updater, and returns its output.
///
/// A renderer is `Sendable`: its sections, adapter, updater and completion sit behind a lock, so
/// renders from several tasks or threads are applied one after the other, each diffed against the
/// one before it. (For the web, a list's renderer usually belongs to one actor anyway.)
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
/// Cells without a section are put in one implicit section, as in Carbon (see
/// ``render(cells:)`` and ``Section/implicitID``):
///
///     try renderer.render {
///         HelloMessage(name: "Vincent")
///         HelloMessage(name: "Jules")
///     }
///
/// When the updater throws (`ListDiff.DiffError` for a duplicate id, with the updaters of this
/// module), the render is refused as a whole: ``data`` and the updater stay as they were, and the
/// next render is diffed against the last one that succeeded.
public final class Renderer<U: Updater>: Sendable {
    /// What the lock guards.
    struct State {
        var adapter: U.Adapter
        var updater: U
        var data: [Section] = []
        var completion: (@Sendable (Result<U.Output, any Error>) -> Void)?
        /// Told of each successful render inside the lock (see ``observe(_:)``).
        var observer: Observer?
    }

    /// What an observer is told of a successful render: its sections, and the adapter and updater
    /// after it (see ``observe(_:)``).
    package typealias Observer = @Sendable (_ sections: [Section], _ adapter: U.Adapter, _ updater: U) -> Void

    private let state: Mutex<State>

    /// Creates a renderer with no sections.
    ///
    /// - Parameters:
    ///   - adapter: The adapter, handed to the updater on each render.
    ///   - updater: The updater.
    public init(adapter: U.Adapter, updater: U) {
        var adapter = adapter
        adapter.data = []
        state = Mutex(State(adapter: adapter, updater: updater))
    }

    /// The adapter, handed to the updater on each render. Read, it carries the renderer's ``data``
    /// (`renderer.adapter.cellNode(at:)` finds a node, as in Carbon); set, it configures the
    /// renderer, and its `data` is not kept (the renderer keeps its sections itself: render to change
    /// them).
    public var adapter: U.Adapter {
        get {
            state.withLock { state in
                var adapter = state.adapter
                adapter.data = state.data
                return adapter
            }
        }
        set {
            var adapter = newValue
            adapter.data = []
            state.withLock { $0.adapter = adapter }
        }
    }

    /// The updater, which turns each change of the sections into ``Updater/Output``.
    ///
    /// Reading it gives a copy; `renderer.updater.options = …` replaces it between two renders.
    public var updater: U {
        get { state.withLock { $0.updater } }
        set { state.withLock { $0.updater = newValue } }
    }

    /// Called after each render, with what the updater produced, or the error that refused it.
    ///
    /// "After an update is applied" means, on the server, once the render is done: the updater's
    /// output (for ``Updater``s of the HTML module, the changeset to send, or `nil` when nothing
    /// changed) is computed and the sections are kept as ``data``. The browser has not received it
    /// yet: sending it is the caller's work. The completion runs on the rendering thread, after the
    /// renderer's lock is released, so it may render again; renders from several threads may then
    /// call it in another order than they were applied (each changeset carries its version).
    ///
    /// It is called for every render, from ``render(_:)-([Section])``, the other `render`
    /// methods and by setting ``data``: this is how a render through the ``data`` setter reports
    /// its output and any error. Default: `nil`.
    ///
    ///     renderer.completion = { result in
    ///         if case let .success(changeset?) = result { broadcast(changeset) }
    ///     }
    ///     renderer.data = sections
    public var completion: (@Sendable (Result<U.Output, any Error>) -> Void)? {
        get { state.withLock { $0.completion } }
        set { state.withLock { $0.completion = newValue } }
    }

    /// The sections of the last successful render; empty before the first.
    ///
    /// Setting it renders the sections, as Carbon's `data` setter does. A setter cannot throw nor
    /// return: the updater's output, or the error that refused the sections (which then leaves
    /// ``data`` as it was), goes to ``completion``. Prefer ``render(_:)-([Section])``, which returns
    /// them.
    public var data: [Section] {
        get { state.withLock { $0.data } }
        set { _ = try? render(newValue) }
    }

    /// Renders the given sections: hands the previous ``data`` and `sections` to the updater and,
    /// when it succeeds, keeps `sections` as ``data``; then calls ``completion``.
    ///
    /// - Parameter sections: The sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    public func render(_ sections: [Section]) throws -> U.Output {
        let (result, completion) = state.withLock { state in
            var updater = state.updater
            let result = Result { try updater.performUpdates(adapter: state.adapter, from: state.data, to: sections) }
            if case .success = result {
                state.updater = updater
                state.data = sections
                state.observer?(sections, state.adapter, updater)
            }
            return (result, state.completion)
        }
        completion?(result)
        return try result.get()
    }

    /// Runs `body` on the sections and the updater in place, inside the lock: for an updater that
    /// applies a change it is told of rather than one it finds by a diff (a JSON list's patch). Neither
    /// the observer nor the completion hears of it.
    package func modify<R: Sendable, E: Error>(_ body: (inout [Section], inout U, U.Adapter) throws(E) -> R) throws(E) -> R {
        try state.withLock { (state: inout State) throws(E) -> R in
            try body(&state.data, &state.updater, state.adapter)
        }
    }

    /// Starts telling `observer` of every successful render: at once of the current sections (the
    /// last successful render's, empty before the first), then of each render that succeeds, with
    /// the adapter and updater after it. It is called inside the renderer's lock, so in the order the
    /// renders were applied, never two at once: it must be quick and must not use this renderer. A
    /// server that hosts the renderer as a list hears its renders this way.
    ///
    /// - Returns: false, with nothing changed, when the renderer has an observer already.
    package func observe(_ observer: @escaping Observer) -> Bool {
        state.withLock { state in
            guard state.observer == nil else { return false }
            state.observer = observer
            observer(state.data, state.adapter, state.updater)
            return true
        }
    }

    /// Stops telling the observer that ``observe(_:)`` set.
    package func stopObserving() {
        state.withLock { $0.observer = nil }
    }

    /// Renders the given sections, leaving out the `nil`s (as Carbon's `render(_:)` does with
    /// optional sections).
    ///
    /// - Parameter sections: The sections to render; `nil` elements are left out.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    @_disfavoredOverload
    public func render(_ sections: [Section?]) throws -> U.Output {
        try render(sections.compactMap { $0 })
    }

    /// Renders any collection of sections (a slice, a lazy map), as Carbon's `render(_:)` does.
    ///
    /// - Parameter sections: The sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    @_disfavoredOverload
    public func render<Sections: Collection>(_ sections: Sections) throws -> U.Output where Sections.Element == Section {
        try render(Array(sections))
    }

    /// Renders any collection of optional sections, leaving out the `nil`s, as Carbon's `render(_:)`
    /// does.
    ///
    /// - Parameter sections: The sections to render; `nil`s are left out.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    @_disfavoredOverload
    public func render<Sections: Collection>(_ sections: Sections) throws -> U.Output where Sections.Element == Section? {
        try render(sections.compactMap { $0 })
    }

    /// Renders the sections given one by one: `renderer.render(top, bottom)`.
    ///
    /// - Parameter sections: The sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    public func render(_ sections: Section...) throws -> U.Output {
        try render(sections)
    }

    /// Renders the sections given one by one, leaving out the `nil`s: `renderer.render(top, extra)`.
    ///
    /// - Parameter sections: The sections to render; `nil`s are left out.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    @_disfavoredOverload
    public func render(_ sections: Section?...) throws -> U.Output {
        try render(sections.compactMap { $0 })
    }

    /// Renders the sections listed by a ``SectionsBuilder`` closure (see ``render(_:)-([Section])``).
    ///
    /// - Parameter sections: A closure listing the sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    public func render(@SectionsBuilder _ sections: () -> [Section]) throws -> U.Output {
        try render(sections())
    }

    /// Renders the sections listed by a ``SectionsBuilder`` closure, with Carbon's label:
    /// `renderer.render(sections: { … })`.
    ///
    /// - Parameter sections: A closure listing the sections to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    @_disfavoredOverload
    public func render(@SectionsBuilder sections: () -> [Section]) throws -> U.Output {
        try render(sections())
    }

    /// Renders the cells listed by a ``CellsBuilder`` closure in one section, as Carbon's
    /// `render(cells:)` does: the section's id is ``Section/implicitID`` on every render, so the
    /// cells are diffed from one render to the next like those of any section.
    ///
    ///     try renderer.render {
    ///         HelloMessage(name: "Vincent")
    ///         HelloMessage(name: "Jules")
    ///     }
    ///
    /// A closure that lists sections is taken by ``render(_:)-(()->[Section])``; an empty closure too.
    ///
    /// - Parameter cells: A closure listing the cells to render.
    /// - Returns: The updater's output for the change.
    /// - Throws: What the updater throws; ``data`` and the updater are then left unchanged.
    @discardableResult
    @_disfavoredOverload
    public func render(@CellsBuilder cells: () -> [CellNode]) throws -> U.Output {
        try render([Section(id: Section.implicitID, cells: cells())])
    }
}
