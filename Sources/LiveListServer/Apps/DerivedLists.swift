public import LiveListEngine
import Synchronization

extension LiveListApp {
    /// A list derived from the state of a stored list and rendered for each viewer: "my tickets" from
    /// the desk's tickets, filtered by the viewer's identity. It follows every state its source
    /// publishes (its own changes, and with a shared store those of every other node, as this node
    /// follows them), so it is right on whichever node serves the viewer, with no write of its own: the
    /// source's stored write is all there is.
    ///
    ///     let desk = try await app.host("desk", state: Desk()) { desk in … }
    ///     try await app.derive("tickets", title: "My tickets", from: desk, perViewer: { desk, viewer in
    ///         Section(id: "mine", cells: desk.tickets.filter { $0.customer == viewer.identity?.id }.map(CellNode.init))
    ///     })
    ///
    /// Two sources: ``derive(_:title:from:_:perViewer:)``.
    ///
    /// A burst of changes costs one rendering per viewer for the burst, not one per change: changes
    /// that come while a refresh runs are taken together by the next, which renders the latest state.
    /// Its access is the app's rule for `name`, as for any list; what `perViewer` leaves out for a
    /// viewer never reaches their page or stream.
    ///
    /// - Throws: `StartupError` when `name` is not a list name, and what hosting throws.
    @discardableResult
    public func derive<State: Codable & Equatable & Sendable>(
        _ name: String, title: String? = nil, from source: StateList<State>,
        @SectionsBuilder perViewer render: @escaping @Sendable (State, Viewer) -> [Section]
    ) async throws -> PerViewerList {
        let state = await FollowedState(source)
        return try await derive(name, title: title, following: [state]) { viewer in render(state.value, viewer) }
    }

    /// A list derived from the states of two stored lists and rendered for each viewer, as
    /// ``derive(_:title:from:perViewer:)`` derives one from a single list: `perViewer` takes both
    /// states, in the order they are named, then the viewer. Either source's change refreshes it.
    @discardableResult
    public func derive<First: Codable & Equatable & Sendable, Second: Codable & Equatable & Sendable>(
        _ name: String, title: String? = nil, from first: StateList<First>, _ second: StateList<Second>,
        @SectionsBuilder perViewer render: @escaping @Sendable (First, Second, Viewer) -> [Section]
    ) async throws -> PerViewerList {
        let (one, two) = (await FollowedState(first), await FollowedState(second))
        return try await derive(name, title: title, following: [one, two]) { viewer in render(one.value, two.value, viewer) }
    }

    /// A list derived from the state of a stored list, the same for every viewer: the desk's open
    /// tickets by agent, counts, a summary. It follows every state its source publishes, on this node
    /// and (with a shared store) every other, with no write of its own; each refresh renders once for
    /// all its viewers, and publishes a changeset only when the rendering changed.
    ///
    ///     try await app.derive("open", title: "Open tickets", from: desk) { desk in
    ///         Section(id: "open", cells: desk.tickets.filter(\.isOpen).map(CellNode.init))
    ///     }
    ///
    /// Changes that come while a refresh runs are taken together by the next, which renders the latest
    /// state; refreshes run one at a time, so the list never shows an older state after a newer one.
    ///
    /// - Throws: `StartupError` when `name` is not a list name, and what hosting throws (bad sections
    ///   in the first rendering among them).
    @discardableResult
    public func derive<State: Codable & Equatable & Sendable>(
        _ name: String, title: String? = nil, from source: StateList<State>,
        @SectionsBuilder render: @escaping @Sendable (State) -> [Section]
    ) async throws -> AppList {
        let state = await FollowedState(source)
        return try await derive(name, title: title, following: [state]) { render(state.value) }
    }

    /// A list derived from the states of two stored lists, the same for every viewer, as
    /// ``derive(_:title:from:render:)`` derives one from a single list: `render` takes both states, in
    /// the order they are named. Either source's change refreshes it.
    @discardableResult
    public func derive<First: Codable & Equatable & Sendable, Second: Codable & Equatable & Sendable>(
        _ name: String, title: String? = nil, from first: StateList<First>, _ second: StateList<Second>,
        @SectionsBuilder render: @escaping @Sendable (First, Second) -> [Section]
    ) async throws -> AppList {
        let (one, two) = (await FollowedState(first), await FollowedState(second))
        return try await derive(name, title: title, following: [one, two]) { render(one.value, two.value) }
    }

    /// Hosts a per-viewer list rendered from `sources`' latest states, then follows them.
    private func derive(
        _ name: String, title: String?, following sources: [any Followed], perViewer render: @escaping @Sendable (Viewer) -> [Section]
    ) async throws -> PerViewerList {
        let listName = try Self.listName(name)
        if let title { services.pages.setTitle(title, for: listName) }
        let list = try await registry.hostApp(listName, perViewer: render)
        let log = services.log
        await follow(sources) {
            do {
                try await list.refresh(always: true)
            } catch {
                log.error("\(listName): the list derived from \(sources.map(\.name).joined(separator: ", ")) could not be refreshed: \(error)")
            }
        }
        return list
    }

    /// Hosts a list rendered once for every viewer from `sources`' latest states, then follows them.
    private func derive(
        _ name: String, title: String?, following sources: [any Followed], render: @escaping @Sendable () -> [Section]
    ) async throws -> AppList {
        let listName = try Self.listName(name)
        if let title { services.pages.setTitle(title, for: listName) }
        let list = try await registry.hostApp(listName, sections: render())
        let log = services.log
        await follow(sources) {
            do {
                try await list.render(render())
            } catch {
                log.error("\(listName): the list derived from \(sources.map(\.name).joined(separator: ", ")) could not be rendered: \(error)")
            }
        }
        return list
    }

    /// Follows every source: each state one publishes runs `refresh` (one at a time, a burst taken
    /// together), as does a state published between the derived list's first rendering and now.
    private func follow(_ sources: [any Followed], refresh: @escaping @Sendable () async -> Void) async {
        let refreshes = DerivedRefreshes(refresh)
        for source in sources {
            await source.follow(refreshes)
        }
    }
}

/// A source of a derived list, followed.
private protocol Followed: Sendable {
    var name: String { get }
    func follow(_ refreshes: DerivedRefreshes) async
}

/// The latest state of one of a derived list's sources, as the derived list last heard it.
private final class FollowedState<State: Codable & Equatable & Sendable>: Followed {
    let source: StateList<State>
    private let state: Mutex<(value: State, heard: Bool)>

    init(_ source: StateList<State>) async {
        self.source = source
        state = Mutex((await source.currentState, false))
    }

    var name: String { source.name.rawValue }
    var value: State { state.withLock { $0.value } }

    /// Follows the source: each state it publishes is kept and refreshes the derived list. A state it
    /// published between the derived list's first rendering and now refreshes it too.
    func follow(_ refreshes: DerivedRefreshes) async {
        let now = await source.follow { [self] published in
            state.withLock { $0 = (published, true) }
            refreshes.changed()
        }
        let missed = state.withLock { state in
            // A state heard already is newer than `now`, with its refresh on the way.
            guard !state.heard, state.value != now else { return false }
            state.value = now
            return true
        }
        if missed { refreshes.changed() }
    }
}

/// A derived list's refreshes, run one at a time, each on the latest states: changes that come while
/// one runs are taken together by the next. One at a time keeps the order of what viewers see; taking
/// a burst together keeps its cost to one refresh.
private final class DerivedRefreshes: Sendable {
    private let state = Mutex((running: false, again: false))
    private let refresh: @Sendable () async -> Void

    init(_ refresh: @escaping @Sendable () async -> Void) {
        self.refresh = refresh
    }

    /// A source changed: a refresh starts, or the one running is followed by another.
    func changed() {
        let start = state.withLock { state in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start {
            Task { await run() }
        }
    }

    private func run() async {
        while true {
            await refresh()
            let again = state.withLock { state in
                guard state.again else {
                    state.running = false
                    return false
                }
                state.again = false
                return true
            }
            if !again { return }
        }
    }
}
