import LiveListHTML
import Foundation

/// A list whose state the store keeps (``ListRegistry/hostApp(_:configuration:state:render:)``): the
/// state is stored with each version before the version is published, so that a restart, or another
/// node of a shared store, serves the same state under the same version. Change it with
/// ``updateState(_:_:)``.
public actor StateList<State: Codable & Equatable & Sendable>: ServedList, AppHostedList {
    public nonisolated let name: ListName
    public nonisolated var owner: ListOwner { .app }
    package nonisolated let visibility: ListVisibility
    package let core: ListCore
    /// The state, and its stored encoding.
    private var state: State
    private var bytes: [UInt8]
    private let render: @Sendable (State) -> [Section]
    /// Told of every state the list publishes (``follow(_:)``), in version order.
    private var followers: [@Sendable (State) -> Void] = []
    private nonisolated let executor = ListExecutor()
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    public func onAction(_ handler: @escaping @Sendable (ListAction) async throws -> Void) {
        core.setActions(handler, accepting: nil)
    }

    public func onAction(accepting types: @escaping @Sendable (String) -> Bool, _ handler: @escaping @Sendable (ListAction) async throws -> Void) {
        core.setActions(handler, accepting: types)
    }

    /// Creates a list at `version` keeping `state`; it exists once ``host()`` rendered it.
    ///
    /// - Throws: `ListWriteError` when the state does not encode.
    init(name: ListName, version: Int, configuration: ListConfiguration, store: any ListStore,
         state: State, render: @escaping @Sendable (State) -> [Section]) throws {
        self.name = name
        let core = ListCore(name: name, version: version, configuration: configuration, store: store)
        self.core = core
        visibility = core.visibility
        self.state = state
        bytes = try Self.encode(state, list: name)
        self.render = render
        core.owner = self
    }

    /// Renders the state first. With a shared store whose other processes serve it already, at its
    /// stored version (so that their viewers' versions hold here too); otherwise as a new version,
    /// stored with the state and published as a reset.
    func host() throws {
        if core.shared != nil, core.version > 0 {
            try core.resetRenderer(to: render(state), at: core.version)
            core.log.start(at: core.version, rendering: core.renderer.updater.snapshot.rendering)
            core.setExists(true)
            return
        }
        let changeset = try core.renderer.render(render(state))
        core.setExists(true)
        guard let changeset else { return }
        // The first rendering of a restarted list: a version of its own, stored with the state.
        do {
            try core.store.saveAppState(name: name.rawValue, version: changeset.version, bytes: bytes)
        } catch {
            // Another process of a shared store stored the first state: serve what it stored.
            guard case .stale = error.kind else { throw error }
            try core.resetRenderer(to: [], at: changeset.from)
            try catchUpWithStore(noticed: nil)
            core.log.start(at: core.version, rendering: core.renderer.updater.snapshot.rendering)
            return
        }
        core.publish(core.firstRendering(changeset))
        tellFollowers()
    }

    /// Calls `body` with every state this list publishes from now on, in version order: its own changes
    /// and, with a shared store, those other processes stored, as this process follows them. It runs on
    /// the list's executor, so it must only hand the state on (a list derived from this one keeps it
    /// and refreshes). Returns the state now, so that nothing falls between.
    package func follow(_ body: @escaping @Sendable (State) -> Void) -> State {
        followers.append(body)
        return state
    }

    private func tellFollowers() {
        for follower in followers {
            follower(state)
        }
    }

    /// The state as of this list's version on this process (with a shared store, other processes'
    /// changes arrive here as the list follows them).
    public var currentState: State { state }

    /// Changes the state in the list's ordered path: `change` runs on the current state; when the
    /// state changed, it is persisted with the list's new version, then rendered and published. An
    /// action on any viewer's page applies to the latest state, and no change overwrites another.
    ///
    /// - Returns: whether the state changed.
    /// - Throws: what `change` throws, `ListWriteError` when the state cannot be stored (the list is
    ///   then unchanged), or when the versions are exhausted.
    @discardableResult
    public func updateState(_ type: State.Type = State.self, _ change: @Sendable (inout State) throws -> Void) throws -> Bool {
        var race = ListCore.Race(confirmed: core.shared == nil)
        let catchUp = { () throws(ListWriteError) in try self.catchUpWithStore(noticed: nil) }
        while true {
            do {
                let changed = try updateStateOnce(change)
                // Unchanged here: perhaps not on the latest stored state.
                if !changed, try core.confirm(&race, catchUp: catchUp) { continue }
                return changed
            } catch let error as ListWriteError where error.staleVersion != nil {
                // Another process of a shared store changed the state first: change the latest one.
                try core.recover(&race, from: error, catchUp: catchUp)
            }
        }
    }

    private func updateStateOnce(_ change: @Sendable (inout State) throws -> Void) throws -> Bool {
        var next = state
        try change(&next)
        let nextBytes = try Self.encode(next, list: name)
        // Unchanged only when equal and stored alike: Swift's `==` takes canonically equivalent
        // texts for one, the page and the store do not.
        guard next != state || nextBytes != bytes else { return false }
        let current = core.version
        _ = try core.nextVersion()
        let previous = core.renderer.data
        let changeset: ListChangeset
        do {
            // A state that renders as before still takes a version of its own (a changeset without
            // operations): other processes of a shared store learn of a state by its version.
            changeset = try core.renderer.render(render(next)) ?? core.renderer.updater.advanceVersion()
            try core.store.saveAppState(name: name.rawValue, version: changeset.version, bytes: nextBytes)
        } catch {
            try? core.resetRenderer(to: previous, at: current)
            throw core.storageFailed("the state of \(name) could not be stored", error)
        }
        state = next
        bytes = nextBytes
        core.publish(changeset)
        tellFollowers()
        return true
    }

    private static func encode(_ state: State, list name: ListName) throws(ListWriteError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            return Array(try encoder.encode(state))
        } catch {
            throw ListWriteError(.internal, code: "internal", detail: "the state of \(name) does not encode: \(error)")
        }
    }

    // MARK: - Other processes' writes

    /// Follows the states that other processes stored: each is rendered and published as if it were
    /// changed here.
    package func catchUpWithStore(noticed: Int?) throws(ListWriteError) {
        try core.followStore(noticed: noticed) { step in try apply(step) }
    }

    private func apply(_ step: StoredUpdate.Step) throws {
        guard case let .state(stored) = step.content else {
            // Not this list's kind (a name another process uses otherwise): only its version moves on.
            core.skipVersion(to: step.version)
            return
        }
        let next = try JSONDecoder().decode(State.self, from: Data(stored))
        let changeset = try core.renderer.render(render(next)) ?? core.renderer.updater.advanceVersion()
        state = next
        bytes = stored
        core.publish(core.skipping(changeset, to: step.version))
        tellFollowers()
    }
}
