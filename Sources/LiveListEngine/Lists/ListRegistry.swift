public import LiveListHTML
import Foundation
import Synchronization

/// Limits on what clients may create.
public struct RegistryLimits: Sendable {
    /// The most JSON-driven lists. Default 1,000.
    public var maximumJSONLists = 1_000
    /// Limits on each PUT body's content.
    public var listLimits = JSONListLimits()
    /// The most names the registry holds at once: lists, deleted lists it still serves, and names
    /// that multiplexed streams wait on. Past it, a stream that names a list that does not exist gets
    /// the list's empty reset but does not wait for it (it sees the list once it reconnects), so that
    /// streams cannot grow the registry without bound. Default 100,000.
    public var maximumNames = 100_000

    public init() {}
}

/// Every list being served, by name: the app lists that Swift code registers and the JSON-driven lists
/// that `PUT` creates, with each name's version high-water mark, so that a name's versions are never
/// reused (not after a restart, not after a `DELETE` and a new `PUT`).
///
/// The registry only finds a name's actor, creating it when needed; every write runs on that actor (the
/// list's one ordered path), so writes to different lists run in parallel and writes to one list in
/// order. The registry itself never suspends between looking a name up and recording a new actor for it.
public actor ListRegistry {
    public nonisolated let configuration: ListConfiguration
    public nonisolated let limits: RegistryLimits
    let store: any ListStore
    /// The store as a shared one (several processes write to it), or nil: asked once, at opening.
    nonisolated let shared: (any SharedListStore)?
    /// Every name's actor: lists that exist, deleted ones (tombstones), and names that streams wait on.
    /// Changed only on the registry's actor, one name at a time; behind a lock so that routes can find a
    /// list without awaiting the registry (``existingList(_:)``).
    private nonisolated let lists = Mutex<[ListName: any ServedList]>([:])
    /// The versions of names that have no actor.
    var highWater: [String: Int]
    /// Multiplexed streams waiting on names that have no actor, with a store of one process: a name
    /// that does not exist costs an entry here, not an actor, and a stream that ends leaves nothing.
    /// When the name gets an actor (a PUT creates the list, an app takes the name), they move to it.
    var waiting: [ListName: [ObjectIdentifier: Subscription]] = [:]
    /// What a registry makes of a shared store's notices (``followStore(log:)``).
    var following = StoreFollowing()
    /// Recent deletions with an idempotency key (`NAME` NUL `KEY`): a deleted list's actor may be gone
    /// when the retry comes.
    var recentDeletions = RecentlyKept<IdempotentWrite>(capacity: 1_000)
    let quota: ListQuota

    /// Opens the registry on `store`, loading its JSON lists.
    ///
    /// - Throws: `StoreError` when the store cannot be read, or a stored list no longer decodes.
    public init(store: any ListStore, configuration: ListConfiguration = ListConfiguration(), limits: RegistryLimits = RegistryLimits()) async throws {
        self.store = store
        shared = store.asShared
        self.configuration = configuration
        self.limits = limits
        let stored = try store.load()
        highWater = stored.highWater
        // A shared store counts the lists of every process itself, in the creating write's transaction.
        quota = ListQuota(limit: shared != nil ? .max : limits.maximumJSONLists, count: stored.jsonLists.count)
        for (rawName, list) in stored.jsonLists.sorted(by: { $0.key < $1.key }) {
            guard let name = ListName(rawName) else {
                throw StoreError("stored list \"\(rawName)\" has an invalid name")
            }
            let state: JSONListState
            do {
                // Limits are not applied to what was accepted before: a lowered limit must not lose data.
                state = try JSONListState.decode(list.body, limits: .unlimited)
            } catch {
                throw StoreError("stored list \(rawName) no longer decodes (\(error)); the data directory is corrupt")
            }
            let hosted = JSONList(name: name, version: list.version, configuration: configuration, store: store, quota: quota)
            try await hosted.load(state: state, body: list.body, version: list.version)
            record(hosted, for: name)
        }
    }

    /// The stored state of an app list, if any (for apps that persist their own state).
    public func appState(_ name: ListName) throws -> [UInt8]? {
        try store.appState(name: name.rawValue)?.bytes
    }

    /// The actor for `name`: the existing one, or a new one for a JSON list that does not exist yet.
    func actor(for name: ListName) -> any ServedList {
        if let hosted = known(name) {
            return hosted
        }
        let waiters = waiting.removeValue(forKey: name).map { Array($0.values) } ?? []
        let hosted = JSONList(name: name, version: highWater[name.rawValue] ?? 0, configuration: configuration,
                              store: store, quota: quota, waiting: waiters)
        record(hosted, for: name)
        return hosted
    }

    /// The JSON list of `name` (a new one when the name has none); refused when Swift code owns it.
    func jsonList(_ name: ListName, _ verb: String) throws(ListWriteError) -> JSONList {
        guard let hosted = actor(for: name) as? JSONList else {
            throw ListWriteError(.conflict, code: "list_owned_by_app", detail: "\(name) is rendered by the server's Swift code and cannot be \(verb) over HTTP")
        }
        return hosted
    }

    /// Records `hosted` as the actor of `name`, for the registry and for readers that do not await.
    func record(_ hosted: any ServedList, for name: ListName) {
        lists.withLock { $0[name] = hosted }
    }

    /// The actor of `name`, if it has one.
    nonisolated func known(_ name: ListName) -> (any ServedList)? {
        lists.withLock { $0[name] }
    }

    /// The list named `name` if it exists, found without awaiting the registry (for routes that can
    /// answer on the event loop). The same as ``list(_:)``.
    package nonisolated func existingList(_ name: ListName) -> (any ServedList)? {
        guard let hosted = known(name), hosted.exists else { return nil }
        return hosted
    }

    /// Forgets a retired actor (if it is still the name's), keeping its version: a name that never
    /// had one (asked for by streams, never created) leaves nothing behind.
    func forget(_ hosted: any ServedList, version: Int) {
        if version > (highWater[hosted.name.rawValue] ?? 0) {
            highWater[hosted.name.rawValue] = version
        }
        lists.withLock { lists in
            if lists[hosted.name] === hosted {
                lists.removeValue(forKey: hosted.name)
            }
        }
    }

    /// Claims `name` for an app list: refused when a list of that name exists; a JSON list's tombstone
    /// or a name that streams wait on is taken over (its version continues, its streams move over).
    func claimForApp<List: ServedList>(
        _ name: ListName, make: (_ version: Int) throws -> List
    ) async throws -> (List, [Subscription]) {
        while true {
            var version = highWater[name.rawValue] ?? 0
            var moved: [Subscription] = []
            if let existing = known(name) {
                guard let existing = existing as? JSONList, !existing.exists else {
                    throw ListWriteError(.conflict, code: "list_exists", detail: "a list named \(name) is already served")
                }
                guard let retired = await existing.retireForApp() else {
                    if known(name) === existing, existing.exists {
                        throw ListWriteError(.conflict, code: "list_exists", detail: "a list named \(name) is already served")
                    }
                    continue
                }
                forget(existing, version: retired.version)
                guard known(name) == nil else { continue }
                version = max(version, retired.version)
                moved = retired.subscriptions
            }
            moved += waiting.removeValue(forKey: name).map { Array($0.values) } ?? []
            let hosted = try make(version)
            record(hosted, for: name)
            return (hosted, moved)
        }
    }

    /// Registers an app list under `name` (see ``claimForApp(_:make:)``), made by `make` at the name's
    /// version with `custom` (or the registry's configuration), and runs its first render; the streams
    /// that waited on the name then catch up on it.
    func hostApp<List: ServedList>(
        _ name: ListName, configuration custom: ListConfiguration?,
        make: (_ version: Int, _ configuration: ListConfiguration) throws -> List, first: (List) async throws -> Void
    ) async throws -> List {
        let configuration = custom ?? configuration
        let (hosted, moved) = try await claimForApp(name) { version in try make(version, configuration) }
        do {
            try await first(hosted)
        } catch {
            forget(hosted, version: await hosted.version)
            throw error
        }
        await hosted.adopt(moved)
        return hosted
    }

    /// Registers a list that Swift code renders, rendering its first sections. Its versions continue
    /// from the name's high-water mark. `configuration` (adapter, updater options such as
    /// `stickToBottom`, log sizes) replaces the registry's for this list only.
    ///
    /// - Throws: when the name is taken, or the sections are bad input.
    public func hostApp(_ name: ListName, configuration: ListConfiguration? = nil, sections: [Section]) async throws -> AppList {
        try await hostApp(name, configuration: configuration, make: { version, configuration in
            AppList(name: name, version: version, configuration: configuration, store: store)
        }, first: { hosted in _ = try await hosted.render(sections) })
    }

    /// Registers a list whose state the store keeps: the stored state when there is one (else
    /// `initial`), rendered by `render`. Change it with ``StateList/updateState(_:_:)``, which persists
    /// each new state with its version before publishing it, in the list's ordered path.
    /// `configuration` (adapter, updater options such as `stickToBottom`, log sizes) replaces the
    /// registry's for this list only.
    ///
    /// - Throws: when the name is taken, the stored state no longer decodes as `State`, or the store fails.
    public func hostApp<State: Codable & Equatable & Sendable>(
        _ name: ListName, configuration: ListConfiguration? = nil, state initial: State, render: @escaping @Sendable (State) -> [Section]
    ) async throws -> StateList<State> {
        var state = initial
        if let stored = try store.appState(name: name.rawValue) {
            do {
                state = try JSONDecoder().decode(State.self, from: Data(stored.bytes))
            } catch {
                throw StoreError("the stored state of \(name) no longer decodes as \(State.self) (\(error))")
            }
            highWater[name.rawValue] = max(highWater[name.rawValue] ?? 0, stored.version)
        }
        return try await hostApp(name, configuration: configuration, make: { [state] version, configuration in
            try StateList(name: name, version: version, configuration: configuration, store: store, state: state, render: render)
        }, first: { hosted in try await hosted.host() })
    }

    /// Registers a list whose render reads the viewer (per-session rendering): each viewing stream holds
    /// its own renderer, fed by `render` for its viewer, with the list's shared versions. Call
    /// ``PerViewerList/refresh()`` when the app's state changes. `configuration` replaces the registry's
    /// for this list only.
    public func hostApp(
        _ name: ListName, configuration: ListConfiguration? = nil, perViewer render: @escaping @Sendable (Viewer) -> [Section]
    ) async throws -> PerViewerList {
        try await hostApp(name, configuration: configuration, make: { version, configuration in
            PerViewerList(name: name, version: version, configuration: configuration, store: store, render: render)
        }, first: { hosted in _ = try await hosted.refresh() })
    }

    /// Registers a list whose viewers fall into groups that see the same thing (``PartitionedList``): a
    /// live query's viewers with the same parameters. `group` names the group of a viewer's identity (nil: none, which
    /// sees no cells); `render` renders a group; `prepare` makes a group's content ready before a viewer
    /// of it reads (nil when ready, else why not). Call ``PartitionedList/refresh(_:)`` with the groups
    /// whose content changed. `configuration` replaces the registry's for this list only.
    public func hostApp(
        _ name: ListName, configuration: ListConfiguration? = nil, groupedBy group: @escaping @Sendable (Identity?) -> String?,
        prepare: @escaping @Sendable (String) async -> String?, render: @escaping @Sendable (String) -> [Section]
    ) async throws -> PartitionedList {
        try await hostApp(name, configuration: configuration, make: { version, configuration in
            PartitionedList(name: name, version: version, configuration: configuration, store: store, group: group, render: render, prepare: prepare)
        }, first: { hosted in _ = try await hosted.refresh([String]()) })
    }

    /// Serves an app's own renderer as the list `name`, in Carbon's style: the app keeps its
    /// `Renderer(adapter:updater:)` and calls `renderer.render { … }` whenever its data changes, from
    /// any thread or task; each successful render becomes a write on the list's one ordered path, in
    /// the order the renderer applied them: it takes the list's next version (its versions continue
    /// from the name's high-water mark), is logged for catch-up and published as a changeset to the
    /// list's streams. What the renderer shows when it is served is the list's first state.
    ///
    /// The renderer's adapter and updater options are the list's (each render's own, so changing them
    /// on the renderer takes effect from its next render); its updater's output stays the app's, with
    /// the renderer's own versions. The list renders each change again with its own updater, so a render
    /// costs about twice what it costs unserved. A renderer serves one list.
    ///
    /// - Parameter onError: hears why a render could not be served (the store could not reserve its
    ///   version, or the versions are exhausted); the list then stays as it was until the next render.
    /// - Throws: when the name is taken, the renderer serves a list already, or the first render cannot
    ///   be stored.
    public func hostApp(
        _ name: ListName, serving renderer: Renderer<PatchUpdater>, onError: (@Sendable (any Error) -> Void)? = nil
    ) async throws -> AppList {
        var custom = configuration
        custom.adapter = renderer.adapter
        custom.adapter.data = []  // the list keeps its own sections: the configuration holds none
        custom.options = renderer.updater.options
        let renders = ServedRenders(onError: onError)
        return try await hostApp(name, configuration: custom, make: { version, configuration in
            AppList(name: name, version: version, configuration: configuration, store: store)
        }, first: { hosted in
            let observing = renderer.observe { sections, adapter, updater in
                guard renders.post(.init(sections: sections, adapter: adapter, options: updater.options)) else { return }
                Task {
                    for error in await hosted.renderServed(renders) {
                        renders.onError?(error)
                    }
                }
            }
            guard observing else {
                throw ListWriteError(.conflict, code: "renderer_served", detail: "this renderer serves a list already")
            }
            // The renderer's current sections wait first: every later render follows them.
            if let error = await hosted.renderServed(renders).first {
                renderer.stopObserving()
                throw error
            }
        })
    }

    /// The list named `name`, if it exists.
    public func list(_ name: ListName) -> (any HostedList)? {
        existingList(name)
    }

    /// The names of the lists that exist, sorted.
    public func names() -> [ListName] {
        lists.withLock { $0.filter { $0.value.exists }.keys.sorted() }
    }

    /// The actors held (lists that exist, tombstones, names that streams wait on), for tests and metrics.
    var actorCount: Int {
        lists.withLock { $0.count }
    }

    /// The names held: actors, names that streams wait on, and the versions of names that have none.
    /// For `/metrics`.
    package var nameCount: Int {
        actorCount + waiting.count + highWater.count
    }

    /// Every list that exists, for metrics.
    package func allLists() -> [any ServedList] {
        lists.withLock { Array($0.values.filter(\.exists)) }
    }

    /// Forgets `hosted` when nothing uses it any more (it does not exist and no stream waits on it), so
    /// that names asked for and never created cost nothing once their streams are gone.
    func retireIfUnused(_ hosted: any ServedList) async {
        guard !hosted.exists, let version = await hosted.retireIfUnused() else { return }
        forget(hosted, version: version)
    }
}
