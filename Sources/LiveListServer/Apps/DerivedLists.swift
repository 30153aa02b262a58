public import LiveListEngine
import Synchronization

extension LiveListApp {
    /// A list derived from the state of `source` and rendered for each viewer: "my tickets" from the
    /// desk's tickets, filtered by the viewer's identity. It follows every state `source` publishes
    /// (its own changes, and with a shared store those of every other node, as this node follows
    /// them), so it is right on whichever node serves the viewer, with no write of its own: the
    /// source's one stored write is all there is.
    ///
    ///     let desk = try await app.host("desk", state: Desk())  { desk in … }
    ///     try await app.derive("tickets", title: "My tickets", from: desk) { desk, viewer in
    ///         Section(id: "mine", cells: desk.tickets.filter { $0.customer == viewer.identity?.id }.map(CellNode.init))
    ///     }
    ///
    /// A burst of changes costs one rendering per viewer for the burst, not one per change: refreshes
    /// that wait are taken together, each rendering the latest state. Its access is the app's rule for
    /// `name`, as for any list; what `render` leaves out for a viewer never reaches their page or
    /// stream.
    ///
    /// - Throws: `StartupError` when `name` is not a list name, and what hosting throws.
    @discardableResult
    public func derive<State: Codable & Equatable & Sendable>(
        _ name: String, title: String? = nil, from source: StateList<State>,
        @SectionsBuilder render: @escaping @Sendable (State, Viewer) -> [Section]
    ) async throws -> PerViewerList {
        let listName = try Self.listName(name)
        if let title { services.pages.setTitle(title, for: listName) }
        let latest = LatestState<State>(await source.currentState)
        let list = try await registry.hostApp(listName, perViewer: { viewer in render(latest.value, viewer) })
        let log = services.log
        let now = await source.follow { state in
            guard latest.set(state) else { return }
            // One refresh at a time is waiting: it renders whatever state is latest when it runs.
            Task {
                latest.refreshing()
                do {
                    try await list.refresh(always: true)
                } catch {
                    log.error("\(listName): the list derived from \(source.name) could not be refreshed: \(error)")
                }
            }
        }
        if latest.setFirst(now) {
            latest.refreshing()
            try await list.refresh(always: true)
        }
        return list
    }
}

/// The latest state of a derived list's source, and whether a refresh waits to render it.
private final class LatestState<State: Sendable>: Sendable {
    private let state: Mutex<(value: State, waiting: Bool, followed: Bool)>

    init(_ value: State) {
        state = Mutex((value, false, false))
    }

    var value: State { state.withLock { $0.value } }

    /// Keeps `value`; true when a refresh must be started (none waits yet).
    func set(_ value: State) -> Bool {
        state.withLock { state in
            state.value = value
            state.followed = true
            defer { state.waiting = true }
            return !state.waiting
        }
    }

    /// Keeps the state the source had when it was followed, unless a state it published since is kept
    /// already (newer, with its refresh on the way); true when a refresh must be started.
    func setFirst(_ value: State) -> Bool {
        state.withLock { state in
            guard !state.followed else { return false }
            state.value = value
            defer { state.waiting = true }
            return !state.waiting
        }
    }

    /// A refresh starts: states kept from now on need another.
    func refreshing() {
        state.withLock { $0.waiting = false }
    }
}
