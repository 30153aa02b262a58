public import LiveListHTML
import Synchronization
import Foundation

/// Settings of every hosted list.
public struct ListConfiguration: Sendable {
    /// The most changesets kept for viewers that reconnect or fall behind. Default 256.
    public var logCount = 256
    /// The most bytes of encoded changesets kept. Default 4 MiB.
    public var logBytes = 4 << 20
    /// A viewer with more than this many bytes queued is not written to until its socket drains; then
    /// it gets one changeset from its last delivered version to now. Default 64 KiB.
    public var slowViewerBytes = 64 << 10
    /// App lists reserve versions in blocks of this size in the store, so that a restart never reuses
    /// a version without a disk write per change. Default 1,000.
    public var versionBlock = 1_000
    /// The adapter that renders every list.
    public var adapter = HTMLAdapter()
    /// The updater options of every list.
    public var options = UpdaterOptions()

    public init() {}
}

/// Counters that `/metrics` reports.
public struct ListCounters: Sendable, Equatable {
    public var changesets = 0
    public var eventsSent = 0
    public var bytesSent = 0
    public var resetsSent = 0
    public var coalescedViewers = 0

    public init() {}
}

/// One list being served: its shared renderer (a render that does not depend on the viewer is done
/// once per version, and its encoded bytes go to every viewer), its bounded log of changesets, and the
/// streams that view it.
///
/// The actor is the list's one ordered write path: every write (a PUT, a DELETE, an app's render or
/// state change) runs on it from start to end without suspending, in this order: check the
/// precondition, take the next version, render, persist durably, then publish to readers and streams.
/// A write that fails to persist leaves the list as it was. A JSON list that does not exist (not created
/// yet, or deleted: a tombstone that keeps its version) is still an actor, so that creations, deletions
/// and the streams that wait for a list are ordered with everything else.
public actor HostedList {
    /// Who owns the list's content.
    public enum Owner: Sendable, Equatable {
        /// Swift code renders it; writes over HTTP are refused (409).
        case app
        /// `PUT` and `DELETE` drive it.
        case json
    }

    public nonisolated let name: ListName
    public nonisolated let owner: Owner
    /// The list runs on a queue of its own, off the cooperative pool (its writes block on `fsync`).
    private nonisolated let executor: ListExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }
    /// The list's settings (a served renderer's adapter and options follow its renders).
    private(set) var configuration: ListConfiguration
    let store: any ListStore
    private var renderer: Renderer<PatchUpdater>
    private var log: ChangeLog
    private var subscriptions: [ObjectIdentifier: Subscription] = [:]
    private var encodedSnapshot: (version: Int, bytes: [UInt8])?
    /// Catch-ups to the current version encoded once and shared by every stream that needs the same
    /// one (``encodedChanges(since:for:)``); emptied whenever the version moves.
    private var catchUps = CatchUpCache()
    /// Where each cell of the current rendering is (section and cell index), by key, at a version.
    private var cellPositions: (version: Int, positions: [ByteKey: (section: Int, cell: Int)])?
    /// Where the list's content comes from: each kind of list is a small type of its own.
    private var source: Source
    /// For app lists: the version up to which the store has reserved.
    private var reservedVersion: Int
    /// Whether the list exists, readable without awaiting: readers that see `true` see every write that
    /// was acknowledged before.
    private let existence = Atomic<Bool>(false)
    /// The version readers see, readable without awaiting: set before a write is acknowledged (with
    /// its publication, or the renderer's reset), so a reader that sees it sees that write.
    private let visibleVersion = Atomic<Int>(0)
    /// Set once the registry dropped this actor (an unused placeholder); every later write is refused
    /// with ``WriteOutcome/retired(version:)`` and goes to a new actor for the name.
    private var isRetired = false
    package private(set) var counters = ListCounters()
    private var actionHandler: (@Sendable (ListAction) async throws -> Void)?
    /// The action types of the app, when it declared them (``onAction(accepting:_:)``).
    private var actionTypes: (@Sendable (String) -> Bool)?
    /// Whether the list renders per viewer (its pages cannot be shared).
    public nonisolated let rendersPerViewer: Bool

    /// Where a list's content comes from.
    private enum Source {
        /// `PUT` and `DELETE` drive it.
        case json(JSONSource)
        /// Swift code renders it (``render(_:)-(([Section])``).
        case rendered
        /// Swift code changes a state that the store keeps (``updateState(_:_:)``).
        case state(StateSource)
        /// Swift code renders it for each viewer (``refresh()``).
        case perViewer(PerViewerSource)
    }

    private var json: JSONSource? {
        if case let .json(json) = source { json } else { nil }
    }

    private var perViewer: PerViewerSource? {
        if case let .perViewer(perViewer) = source { perViewer } else { nil }
    }

    /// Creates a list whose next version follows `version` (a name's versions are never reused). It
    /// exists once it is first rendered (app lists) or created by a PUT (JSON lists).
    init(
        name: ListName, owner: Owner, version: Int, configuration: ListConfiguration, store: any ListStore,
        quota: ListQuota? = nil, perViewer: (@Sendable (Viewer) -> [Section])? = nil, waiting: [Subscription] = []
    ) {
        switch (owner, perViewer) {
        case (.json, _): source = .json(JSONSource(quota: quota))
        case let (.app, render?): source = .perViewer(PerViewerSource(render: render))
        case (.app, nil): source = .rendered
        }
        rendersPerViewer = perViewer != nil
        self.name = name
        self.owner = owner
        executor = ListExecutor()
        self.configuration = configuration
        self.store = store
        renderer = Self.makeRenderer(name: name, version: version, configuration: configuration)
        log = ChangeLog(maximumCount: configuration.logCount, maximumBytes: configuration.logBytes)
        reservedVersion = version
        visibleVersion.store(version, ordering: .releasing)
        // Streams that waited on the name before it had an actor wait here now (a JSON list that does
        // not exist yet).
        for subscription in waiting {
            subscriptions[subscription.id] = subscription
        }
    }

    private static func makeRenderer(name: ListName, version: Int, configuration: ListConfiguration) -> Renderer<PatchUpdater> {
        Renderer(
            adapter: configuration.adapter,
            updater: PatchUpdater(list: name.rawValue, version: version, options: configuration.options)
        )
    }

    /// Puts the renderer at exactly `version`, showing `sections`: a stored list loaded, a write that
    /// could not be stored undone, a deleted list emptied.
    private func resetRenderer(to sections: [Section], at version: Int) throws {
        renderer = Self.makeRenderer(name: name, version: version - 1, configuration: configuration)
        // Rendering from nothing takes one version; an empty list renders like no list, so step by hand.
        if try renderer.render(sections) == nil {
            _ = renderer.updater.advanceVersion()
        }
        encodedSnapshot = nil
        noteVersion()
    }

    /// Makes the renderer's version the one readers see without awaiting (``currentVersion``).
    private func noteVersion() {
        visibleVersion.store(renderer.updater.version, ordering: .releasing)
        if !catchUps.isEmpty { catchUps = CatchUpCache() }
    }

    /// The current version, read without awaiting: what a page served now shows (a list rendered per
    /// viewer aside). Every acknowledged write is seen.
    package nonisolated var currentVersion: Int {
        visibleVersion.load(ordering: .acquiring)
    }

    /// The current version.
    public var version: Int {
        renderer.updater.version
    }

    /// Whether the list exists (a JSON list not created yet or deleted does not).
    public nonisolated var exists: Bool {
        existence.load(ordering: .acquiring)
    }

    private func setExists(_ value: Bool) {
        existence.store(value, ordering: .releasing)
    }

    /// The number of open streams viewing this list.
    public var viewerCount: Int {
        subscriptions.count
    }

    /// A failed store write: its cause (which names the store's files) stays out of the detail, for
    /// the operator's log only. A shared store's refusals keep their kind: unreachable, at its limit of
    /// lists, or written first by another process (``ListWriteError/staleVersion``).
    private func storageFailed(_ what: String, _ error: any Error) -> ListWriteError {
        var failure = ListWriteError(.storageFailed, code: "storage_failed", detail: what)
        if let error = error as? StoreError {
            switch error.kind {
            case .failed:
                break
            case .unavailable:
                failure = ListWriteError(.unavailable, code: "store_unavailable", detail: "\(what): the database cannot be reached now; try again shortly")
            case let .limitReached(limit):
                failure = ListWriteError(.limitReached, code: "too_many_lists", detail: "the server holds its limit of \(limit) JSON lists")
            case let .stale(version):
                failure.staleVersion = version
            }
        }
        failure.cause = "\(name): \(what): \(error)"
        return failure
    }

    /// How often a write runs again after another process of a shared store wrote first.
    private static let staleRetries = 40

    /// Runs `write` in the ordered path; when another process of a shared store wrote the list first,
    /// catches up on what it wrote and runs `write` again, on the latest state.
    ///
    /// A write that changes nothing or is refused here (a precondition, a missing list) was decided on
    /// what this process knows: with a shared store it is decided again once caught up, so that every
    /// decision holds for the latest stored version. A write that goes ahead costs no extra round trip:
    /// the store itself refuses it when it does not follow the stored version.
    private func retryingStale(_ write: () throws(ListWriteError) -> WriteOutcome) throws(ListWriteError) -> WriteOutcome {
        var race = Race(confirmed: !store.isShared)
        while true {
            do throws(ListWriteError) {
                let outcome = try write()
                if case .unchanged = outcome, try confirm(&race) { continue }
                return outcome
            } catch where error.staleVersion != nil {
                try recover(&race, from: error)
            } catch where error.kind == .preconditionFailed || error.kind == .notFound {
                guard try confirm(&race) else { throw error }
            }
        }
    }

    /// Where one write stands against the other processes of a shared store.
    private struct Race {
        /// The races lost so far.
        var attempts = 0
        /// Whether the write is decided on the latest stored version (always, with a store of one process).
        var confirmed: Bool
    }

    /// Catches up once with the store when the write was decided on what this process knew (it changed
    /// nothing, or was refused here); false when it was decided on the latest stored version already.
    private func confirm(_ race: inout Race) throws(ListWriteError) -> Bool {
        guard !race.confirmed else { return false }
        race.confirmed = true
        try catchUpWithStore()
        return true
    }

    /// After the store refused the write as stale: waits (``backOff(after:)``) and catches up, so that
    /// the write runs again on the latest state; past ``staleRetries`` losses, gives up with
    /// `write_contention`.
    private func recover(_ race: inout Race, from error: ListWriteError) throws(ListWriteError) {
        guard race.attempts < Self.staleRetries else { throw contention(error) }
        race.attempts += 1
        race.confirmed = true
        backOff(after: race.attempts)
        try catchUpWithStore()
    }

    /// A write that lost every race to other processes: nothing changed, and it may be sent again.
    private func contention(_ error: ListWriteError) -> ListWriteError {
        var failure = ListWriteError(.unavailable, code: "write_contention",
                                     detail: "other nodes kept writing \(name) first; nothing changed, try again shortly")
        failure.cause = error.cause
        return failure
    }

    /// After a write lost a race to another process a second time and more, waits a random while that
    /// grows with the losses (up to 64 ms), so that nodes writing one list at full speed take turns
    /// rather than lose to each other forever. The list's own queue waits, as it does for a slow disk.
    private func backOff(after attempts: Int) {
        guard attempts > 1 else { return }
        let ceiling = 1 << min(attempts, 6)
        usleep(useconds_t(Int.random(in: 0 ..< ceiling * 1_000)))
    }

    /// The next version, or `version_exhausted` past ``ListVersion/maximum``.
    private func nextVersion() throws(ListWriteError) -> Int {
        let current = renderer.updater.version
        guard current < ListVersion.maximum else {
            throw ListWriteError(.conflict, code: "version_exhausted",
                                 detail: "\(name) is at version \(current), the largest a client can hold exactly; it takes no more writes")
        }
        return current + 1
    }

    // MARK: - Rendering

    /// Renders new sections (an app list's new state), and publishes the changeset when the rendering
    /// changed.
    ///
    /// - Throws: `DiffError` for duplicate keys, `RenderError` for a NUL in a key, `StoreError` when the
    ///   version cannot be reserved; the list is then unchanged.
    @discardableResult
    public func render(_ sections: [Section]) throws -> ListChangeset? {
        guard !isRetired else { return nil }
        switch source {
        case .rendered: break
        case .perViewer: preconditionFailure("a list rendered per viewer changes through refresh()")
        case .state: preconditionFailure("a list whose state the store keeps changes through updateState()")
        case .json: preconditionFailure("a JSON list changes through PUT and DELETE")
        }
        try reserveNextVersion()
        let first = !exists
        guard let changeset = try renderer.render(sections) else {
            setExists(true)
            return nil
        }
        setExists(true)
        let published = first ? firstRendering(changeset) : changeset
        publish(published)
        return published
    }

    /// An app list's first rendering in this process, as a reset. The renderer started empty, so its
    /// diff inserts everything; but the version it starts from is one that an earlier process may have
    /// served with content (the last reserved version, or the stored state's), so a viewer resuming
    /// from there must be told to replace what it shows, not to insert it again.
    private func firstRendering(_ changeset: ListChangeset) -> ListChangeset {
        let rendering = renderer.updater.snapshot.rendering
        return ListChangeset(list: name.rawValue, from: changeset.from, version: changeset.version, animate: false,
                             operations: [.reset(html: rendering.html, sections: rendering.sections)])
    }

    /// Renders what an app's own renderer rendered (``ListRegistry/hostApp(_:serving:onError:)``): every
    /// render waiting in `renders`, in order, each with the adapter and updater options it had, through
    /// ``render(_:)-([Section])``, so that each takes the next version, reserved in the store, and is
    /// published. A render that cannot be served leaves the list as it was; the next one is diffed from
    /// there.
    ///
    /// - Returns: why renders could not be served, in order; empty when all were.
    func renderServed(_ renders: ServedRenders) -> [any Error] {
        var errors: [any Error] = []
        let (waiting, replaced) = renders.takeAll()
        if replaced > 0 {
            errors.append(ListWriteError(.limitReached, code: "renders_coalesced",
                                         detail: "\(replaced) renders of \(name) came while \(ServedRenders.capacity) waited; each was replaced by the next, and the list shows the latest"))
        }
        for next in waiting {
            configuration.adapter = next.adapter
            configuration.options = next.options
            renderer.adapter = next.adapter
            renderer.updater.options = next.options
            do {
                try render(next.sections)
            } catch {
                errors.append(error)
            }
        }
        return errors
    }

    /// Reserves versions in the store ahead of use, so a crash can never lead to reuse.
    private func reserveNextVersion() throws {
        let next = try nextVersion()
        if owner == .app && next > reservedVersion {
            let reserve = next + min(configuration.versionBlock, ListVersion.maximum - next)
            try store.saveHighWater(reserve, for: name.rawValue)
            reservedVersion = reserve
        }
    }

    /// For a list rendered per viewer: renders again for every viewer (the app's state changed). The
    /// list gets a new version when any viewer's rendering changed, and each stream gets its own
    /// changeset, from the version it was last sent to the new one; viewers whose rendering did not
    /// change get nothing and catch up with their next changeset.
    ///
    /// - Returns: the new version, or nil when no rendering changed.
    @discardableResult
    public func refresh() throws -> Int? {
        guard let perViewer, !isRetired else { return nil }
        try reserveNextVersion()
        let anonymous = try renderer.render(perViewer.render(.anonymous))
        setExists(true)
        let changed = try perViewer.changesets(for: subscriptions.values)
        guard anonymous != nil || !changed.isEmpty else {
            return nil
        }
        if anonymous == nil {
            _ = renderer.updater.advanceVersion()
        }
        noteVersion()
        let version = renderer.updater.version
        counters.changesets += 1
        for (subscription, changeset) in changed where !subscription.isWaitingForDrain {
            var own = changeset
            own.from = subscription.delivered
            own.version = version
            if subscription.sink.queuedBytes > configuration.slowViewerBytes {
                waitForDrain(subscription)
                continue
            }
            send(EncodedChangeset(own), to: subscription)
        }
        return version
    }

    /// What `viewer` sees now: the shared rendering, or for a per-viewer list a fresh one of its own.
    private func viewerSnapshot(_ viewer: Viewer) -> ListSnapshot {
        guard let perViewer else { return renderer.updater.snapshot }
        return perViewer.snapshot(for: viewer, list: name, version: version, configuration: configuration)
    }

    /// Renders with the sections builder.
    @discardableResult
    public func render(@SectionsBuilder _ sections: () -> [Section]) throws -> ListChangeset? {
        try render(sections())
    }

    /// Loads a stored JSON list: the list is at exactly `version`, with nothing to publish.
    func load(state: JSONListState, body: [UInt8], version: Int) throws {
        guard var json else { preconditionFailure("only a JSON list loads a stored body") }
        try resetRenderer(to: state.listSections, at: version)
        json.set(state, body: body)
        source = .json(json)
        log.start(at: version, rendering: renderer.updater.snapshot.rendering)
        setExists(true)
    }

    /// Outcome of a write.
    enum WriteOutcome {
        /// The list was created: this changeset took it from its high-water mark to its first version
        /// (with its JSON as published).
        case created(ListChangeset, json: [UInt8])
        /// The state changed: this changeset took the list to a new version (with its JSON as published).
        case changed(ListChangeset, json: [UInt8])
        /// The state is the same: no new version.
        case unchanged(version: Int)
        /// This actor was retired; the write must go to the registry's new actor for the name.
        case retired(version: Int)
    }

    /// Creates or replaces a JSON list's state, in the ordered path: checks `precondition`, renders,
    /// persists the body with its new version, then publishes. Nothing is published or acknowledged
    /// before the store has the body; a write that cannot be stored leaves the list as it was.
    func put(state: JSONListState, body: [UInt8], precondition: WritePrecondition) throws(ListWriteError) -> WriteOutcome {
        try retryingStale { () throws(ListWriteError) in try putOnce(state: state, body: body, precondition: precondition) }
    }

    private func putOnce(state: JSONListState, body: [UInt8], precondition: WritePrecondition) throws(ListWriteError) -> WriteOutcome {
        guard !isRetired else { return .retired(version: renderer.updater.version) }
        guard var json else { preconditionFailure("only a JSON list takes a PUT") }
        let current = renderer.updater.version
        let exists = json.exists
        try json.check(precondition, version: current)
        if json.shows(state) {
            return .unchanged(version: current)
        }
        _ = try nextVersion()
        try json.takePlace()
        let previous = renderer.data
        let changeset: ListChangeset
        do {
            // A list created empty renders like no list at all, yet it now exists: that is a version.
            guard let rendered = try renderer.render(state.listSections) ?? (exists ? nil : renderer.updater.advanceVersion()) else {
                return .unchanged(version: current)
            }
            changeset = rendered
            try store.saveJSONList(name: name.rawValue, version: changeset.version, body: body)
        } catch {
            // Sections that rendered before render again.
            try? resetRenderer(to: previous, at: current)
            json.giveBackPlace()
            throw storageFailed("the list could not be stored", error)
        }
        json.set(state, body: body)
        source = .json(json)
        setExists(true)
        let encoded = publish(changeset)
        return exists ? .changed(changeset, json: encoded) : .created(changeset, json: encoded)
    }

    /// Deletes a JSON list: the deletion takes a version of its own (a tombstone in the store, so that a
    /// re-created list continues after it); its viewers get a final, empty reset; single-list streams
    /// then end, and multiplexed streams go on (and see the list again if it is re-created).
    func delete() throws(ListWriteError) -> WriteOutcome {
        try retryingStale { () throws(ListWriteError) in try deleteOnce() }
    }

    private func deleteOnce() throws(ListWriteError) -> WriteOutcome {
        guard !isRetired else { return .retired(version: renderer.updater.version) }
        guard let json, json.exists else {
            throw ListWriteError(.notFound, code: "not_found", detail: "no list named \(name)")
        }
        let from = renderer.updater.version
        let final = ListChangeset(
            list: name.rawValue, from: from, version: try nextVersion(), animate: false,
            operations: [.reset(html: "", sections: [])]
        )
        do {
            try store.deleteJSONList(name: name.rawValue, version: final.version)
        } catch {
            throw storageFailed("the deletion could not be stored", error)
        }
        return .changed(final, json: finishDeletion(final))
    }

    /// After a deletion is stored (here or by another process): the list is gone at the final
    /// changeset's version; its viewers get that final empty reset, and single-list streams end.
    /// Returns the final changeset's JSON.
    private func finishDeletion(_ final: ListChangeset) -> [UInt8] {
        guard var json else { preconditionFailure("only a JSON list is deleted") }
        json.remove()
        source = .json(json)
        setExists(false)
        try? resetRenderer(to: [], at: final.version)
        log.clear()
        let encoded = EncodedChangeset(final)
        for subscription in subscriptions.values {
            send(encoded, to: subscription)
            if subscription.multiplexed == nil {
                subscription.sink.close()
                subscriptions.removeValue(forKey: subscription.id)
            }
        }
        return encoded.json
    }

    /// Retires an unused actor of a list that does not exist and that no stream waits on, so the
    /// registry can forget it; nil when it is in use. Its version goes back to the registry.
    func retireIfUnused() -> Int? {
        guard !isRetired, !exists, subscriptions.isEmpty else { return nil }
        isRetired = true
        return renderer.updater.version
    }

    /// Retires a list that does not exist so that an app list can take its name: the streams waiting on
    /// it move to the app list.
    func retireForApp() -> (version: Int, subscriptions: [Subscription])? {
        guard !isRetired, !exists else { return nil }
        isRetired = true
        let moved = Array(subscriptions.values)
        subscriptions.removeAll()
        return (renderer.updater.version, moved)
    }

    /// Adopts streams that waited on the name before this app list took it: each catches up from the
    /// version it was last sent.
    func adopt(_ moved: [Subscription]) {
        for subscription in moved where !subscription.sink.isClosed {
            subscribe(subscription.sink, since: subscription.delivered, multiplexed: subscription.multiplexed, viewer: subscription.viewer)
        }
    }

    // MARK: - App state

    /// Makes this app list keep `state` (at the list's current version) and render it.
    func host<State: Codable & Equatable & Sendable>(state: State, render: @escaping @Sendable (State) -> [Section]) throws {
        guard case .rendered = source else { preconditionFailure("only an app list rendered by Swift code takes a state") }
        let kept = try StateSource(state: state, render: render)
        source = .state(kept)
        if store.isShared, version > 0 {
            // Other processes serve this state at its stored version: render it at that very version,
            // so that their viewers' versions hold here too.
            try resetRenderer(to: kept.sections, at: version)
            log.start(at: version, rendering: renderer.updater.snapshot.rendering)
            setExists(true)
            return
        }
        let changeset = try renderer.render(kept.sections)
        setExists(true)
        if let changeset {
            // The first rendering of a restarted list: a version of its own, stored with the state.
            do {
                try store.saveAppState(name: name.rawValue, version: changeset.version, bytes: kept.bytes)
            } catch {
                // Another process of a shared store stored the first state: serve what it stored.
                guard case .stale = error.kind else { throw error }
                try resetRenderer(to: [], at: changeset.from)
                try catchUpWithStore()
                log.start(at: version, rendering: renderer.updater.snapshot.rendering)
                return
            }
            publish(firstRendering(changeset))
        }
    }

    /// Changes an app list's state in the list's ordered path: `change` runs on the current state; when
    /// the state changed, it is persisted with the list's new version, then rendered and published. An
    /// action on any viewer's page applies to the latest state, and no change overwrites another.
    ///
    /// - Returns: whether the state changed.
    /// - Throws: what `change` throws, `ListWriteError` when the state cannot be stored (the list is
    ///   then unchanged), or when the versions are exhausted.
    @discardableResult
    public func updateState<State: Codable & Equatable & Sendable>(
        _ type: State.Type, _ change: @Sendable (inout State) throws -> Void
    ) throws -> Bool {
        var race = Race(confirmed: !store.isShared)
        while true {
            do {
                let changed = try updateStateOnce(type, change)
                // Unchanged here: perhaps not on the latest stored state.
                if !changed, try confirm(&race) { continue }
                return changed
            } catch let error as ListWriteError where error.staleVersion != nil {
                // Another process of a shared store changed the state first: change the latest one.
                try recover(&race, from: error)
            }
        }
    }

    private func updateStateOnce<State: Codable & Equatable & Sendable>(
        _ type: State.Type, _ change: @Sendable (inout State) throws -> Void
    ) throws -> Bool {
        guard case let .state(kept) = source else {
            throw ListWriteError(.internal, code: "internal", detail: "\(name) does not keep a state of type \(State.self)")
        }
        guard let next = try kept.changed(type, by: change, list: name) else { return false }
        let current = renderer.updater.version
        _ = try nextVersion()
        let previous = renderer.data
        let changeset: ListChangeset?
        do {
            changeset = try renderer.render(next.sections)
            try store.saveAppState(name: name.rawValue, version: changeset?.version ?? current, bytes: next.bytes)
        } catch {
            try? resetRenderer(to: previous, at: current)
            throw storageFailed("the state of \(name) could not be stored", error)
        }
        source = .state(next)
        if let changeset {
            publish(changeset)
        }
        return true
    }

    // MARK: - Other processes' writes

    /// Catches up with what other processes wrote to a shared store: renders each stored version after
    /// this one, in order, and publishes it as if it were written here, so that every process sends
    /// the same diffs under the same versions. When the store no longer holds every version in between,
    /// one diff spans them. Nothing to do with a store of one process, or once `noticed` is reached.
    ///
    /// A list rendered by Swift code without a stored state is each process's own and does not follow.
    package func catchUpWithStore(noticed: Int? = nil) throws(ListWriteError) {
        guard store.isShared, !isRetired else { return }
        if let noticed, noticed <= renderer.updater.version { return }
        switch source {
        case .json, .state: break
        case .rendered, .perViewer: return
        }
        let update: StoredUpdate?
        do {
            update = try store.update(of: name.rawValue, after: renderer.updater.version)
        } catch {
            throw storageFailed("the list could not be read", error)
        }
        guard let update else { return }
        for step in update.steps where step.version > renderer.updater.version {
            do {
                try apply(step)
            } catch {
                var failure = ListWriteError(.internal, code: "internal", detail: "\(name) could not follow version \(step.version) of the store")
                failure.cause = "\(name): version \(step.version) of the store does not render: \(error)"
                throw failure
            }
        }
    }

    /// Renders one stored version written by another process and publishes the diff to it.
    private func apply(_ step: StoredUpdate.Step) throws {
        if case let .json(json) = source, case let .json(body) = step.content {
            // Limits are not applied to what another process accepted.
            let state = try JSONListState.decode(body, limits: JSONListLimits(
                maximumSections: .max, maximumCells: .max, maximumIDLength: .max, maximumTextLength: .max))
            let changeset = try renderer.render(state.listSections) ?? renderer.updater.advanceVersion()
            var followed = json
            followed.set(state, body: body)
            source = .json(followed)
            setExists(true)
            publish(skipping(changeset, to: step.version))
        } else if case let .json(json) = source, case .deleted = step.content {
            guard json.exists else {
                try resetRenderer(to: [], at: step.version)
                return
            }
            let final = ListChangeset(list: name.rawValue, from: renderer.updater.version, version: step.version, animate: false,
                                      operations: [.reset(html: "", sections: [])])
            _ = finishDeletion(final)
        } else if case let .state(kept) = source, case let .state(bytes) = step.content {
            let next = try kept.replaced(by: bytes)
            let changeset = try renderer.render(next.sections) ?? renderer.updater.advanceVersion()
            source = .state(next)
            publish(skipping(changeset, to: step.version))
        } else {
            // Not this list's kind (a name another process uses otherwise): only its version moves on.
            renderer.updater.skipVersion(to: step.version)
            noteVersion()
        }
    }

    /// `changeset`, ending at `version` instead (the renderer moves there too).
    private func skipping(_ changeset: ListChangeset, to version: Int) -> ListChangeset {
        guard version > changeset.version else { return changeset }
        renderer.updater.skipVersion(to: version)
        var skipped = changeset
        skipped.version = version
        return skipped
    }

    // MARK: - Reading

    /// The current state in snapshot form (with the PUT body for JSON lists).
    public func snapshot(for viewer: Viewer = .anonymous) -> ListSnapshot {
        if perViewer != nil {
            return viewerSnapshot(viewer)
        }
        var snapshot = renderer.updater.snapshot
        snapshot.state = json?.body
        return snapshot
    }

    /// The snapshot's JSON, encoded once per version.
    package func snapshotJSON(for viewer: Viewer = .anonymous) -> [UInt8] {
        versionedSnapshotJSON(for: viewer).bytes
    }

    /// ``snapshotJSON(for:)`` with the version it shows.
    package func versionedSnapshotJSON(for viewer: Viewer = .anonymous) -> (version: Int, bytes: [UInt8]) {
        if perViewer != nil {
            let snapshot = viewerSnapshot(viewer)
            return (snapshot.version, snapshot.encodedJSON())
        }
        let version = renderer.updater.version
        if let encodedSnapshot, encodedSnapshot.version == version {
            return encodedSnapshot
        }
        let bytes = snapshot().encodedJSON()
        encodedSnapshot = (version, bytes)
        return (version, bytes)
    }

    /// The list root with its sections, for a full page.
    package func pageHTML(for viewer: Viewer = .anonymous) -> (html: String, version: Int) {
        let snapshot = perViewer != nil ? viewerSnapshot(viewer) : renderer.updater.snapshot
        return (
            configuration.adapter.renderRoot(
                list: name.rawValue, version: snapshot.version, options: configuration.options, rendering: snapshot.rendering
            ),
            snapshot.version
        )
    }

    /// One changeset from `version` to now: empty operations when current, the logged changesets
    /// joined into one compacted diff, or a reset when `version` is too old, unknown or in the future.
    package func changes(since version: Int, for viewer: Viewer = .anonymous) -> ListChangeset {
        let current = renderer.updater.version
        if perViewer != nil {
            // Per-viewer changesets are not logged: a viewer that missed some gets its state anew.
            guard version != current else {
                return ListChangeset(list: name.rawValue, from: current, version: current, animate: false, operations: [])
            }
            return viewerSnapshot(viewer).reset(from: version)
        }
        switch log.lookup(since: version, current: current) {
        case .current:
            return ListChangeset(list: name.rawValue, from: current, version: current, animate: false, operations: [])
        case let .changesets(changesets):
            let limit = configuration.options.animatableChangeCount
            return log.compactedJoin(changesets, to: renderer.updater.rendering, animatableChangeCount: limit)
        case .reset:
            return renderer.updater.snapshot.reset(from: version)
        }
    }

    // MARK: - Actions

    /// Sets what the list does with browser events: selections, visibility changes and form actions
    /// (`POST /lists/NAME/actions`). Selections also reach the adapter's `didSelect`, visibility changes
    /// the component's `contentWillDisplay()`/`contentDidEndDisplay()`. A handler that throws an
    /// ``ActionRefusal`` refuses the action (422, with its code and detail); any other error it
    /// throws is the server's fault (500, logged).
    public func onAction(_ handler: @escaping @Sendable (ListAction) async throws -> Void) {
        actionHandler = handler
        actionTypes = nil
    }

    /// Sets what the list does with browser events, as ``onAction(_:)``, for an app that declares its
    /// action types: an action of another type, or about a cell the list does not show, is refused
    /// (``ActionOutcome``) and `handler` never hears it. Selections and visibility changes that the
    /// list handles itself are still passed on.
    package func onAction(accepting types: @escaping @Sendable (String) -> Bool, _ handler: @escaping @Sendable (ListAction) async throws -> Void) {
        actionHandler = handler
        actionTypes = types
    }

    /// What became of a browser event.
    package enum ActionOutcome: Sendable, Equatable {
        /// The list or its app took it.
        case handled
        /// Nothing handles its type.
        case unknownType
        /// It names a cell that the list does not show when it arrives (one deleted afterwards, before
        /// the handler runs, is the handler's business).
        case unknownCell
        /// The handler refused what it carries.
        case refused(ActionRefusal)
        /// The handler failed with another error (described here, for the log).
        case failed(String)
    }

    /// Handles a browser event; false when nothing handles its type.
    package func handle(_ action: ListAction) async -> Bool {
        await perform(action) == .handled
    }

    /// Handles a browser event, or says why it is refused.
    package func perform(_ action: ListAction) async -> ActionOutcome {
        var known = false
        if action.cell == nil, action.type == "visible" || action.type == "hidden",
            let key = action.fields["section"], let part = action.fields["part"],
            let component = findSupplementary(part, ofSection: key)
        {
            // A header or footer that reports its visibility: `{"type": "visible", "section": KEY,
            // "part": "header"}` (docs/PROTOCOL.md).
            if action.type == "visible" { component.contentWillDisplay() } else { component.contentDidEndDisplay() }
            return .handled
        }
        let found = action.cell.flatMap { findCell($0) }
        if let cell = action.cell, let (node, section) = found {
            switch action.type {
            case "select":
                configuration.adapter.didSelect?(.init(list: name.rawValue, cellKey: cell, sectionKey: section, node: node))
                known = true
            case "visible":
                node.component.contentWillDisplay()
                known = true
            case "hidden":
                node.component.contentDidEndDisplay()
                known = true
            default:
                break
            }
        }
        if !known, let actionTypes {
            // A selection or visibility change that found nothing is refused like the app's actions.
            let isEvent = ["select", "visible", "hidden"].contains(action.type)
            guard actionTypes(action.type) || isEvent else { return .unknownType }
            if let cell = action.cell, !cell.isEmpty, found == nil {
                return .unknownCell
            }
            guard actionTypes(action.type) else { return .unknownType }
        }
        guard let actionHandler else {
            return known ? .handled : .unknownType
        }
        do {
            try await actionHandler(action)
        } catch let refusal as ActionRefusal {
            return .refused(refusal)
        } catch {
            return .failed(String(describing: error))
        }
        return .handled
    }

    /// The component of a section's `header` or `footer`, when it reports its visibility.
    private func findSupplementary(_ part: String, ofSection key: String) -> AnyComponent? {
        guard let section = renderer.data.first(where: { $0.id.key.utf8.elementsEqual(key.utf8) }) else { return nil }
        let node = part == "header" ? section.header : part == "footer" ? section.footer : nil
        guard let node, node.component.reportsVisibility else { return nil }
        return node.component
    }

    /// The cell shown under `key` and its section's key: found through ``cellPositions``, so that an
    /// action costs the same on a list of any length (a scan of 100,000 cells per visibility report
    /// was a request costing the server hundreds of times what it cost its sender).
    private func findCell(_ key: String) -> (CellNode, String)? {
        let data = renderer.data
        if cellPositions?.version != renderer.updater.version {
            // Built once per version, on the first action that needs it. Without a new version the
            // rendering is the same, and so are the keys and their places.
            var positions: [ByteKey: (section: Int, cell: Int)] = [:]
            positions.reserveCapacity(data.reduce(0) { $0 + $1.cells.count })
            for (sectionIndex, section) in data.enumerated() {
                for (cellIndex, node) in section.cells.enumerated() {
                    positions[ByteKey(node.id.key)] = (sectionIndex, cellIndex)
                }
            }
            cellPositions = (renderer.updater.version, positions)
        }
        guard let (sectionIndex, cellIndex) = cellPositions?.positions[ByteKey(key)], sectionIndex < data.count,
            cellIndex < data[sectionIndex].cells.count
        else { return nil }
        let node = data[sectionIndex].cells[cellIndex]
        guard node.id.key.utf8.elementsEqual(key.utf8) else { return nil }
        return (node, data[sectionIndex].id.key)
    }

    // MARK: - Streams

    /// Adds a stream. With `since`, the stream first gets what it missed (one changeset, or a reset);
    /// without, it starts live at the current version.
    ///
    /// - Returns: false when this actor was retired (subscribe on the registry's new one).
    @discardableResult
    package func subscribe(_ sink: any EventSink, since: Int?, multiplexed: MultiplexedStream? = nil, viewer: Viewer = .anonymous) -> Bool {
        guard !isRetired else { return false }
        guard !sink.isClosed else { return true }
        if let since, since > renderer.updater.version {
            // A viewer that another process of a shared store served further: follow the store first.
            try? catchUpWithStore(noticed: since)
        }
        let current = renderer.updater.version
        guard exists else {
            // No such list (not yet, or no longer): an empty reset at its version. A multiplexed stream
            // waits for it; a single-list stream ends (its list was deleted after it was found).
            let empty = ListChangeset(list: name.rawValue, from: since ?? 0, version: current, animate: false,
                                      operations: [.reset(html: "", sections: [])])
            let id = multiplexed?.advance(name.rawValue, to: current) ?? String(current)
            sink.send(EncodedChangeset(empty).event(id: id))
            if multiplexed != nil {
                let subscription = Subscription(sink: sink, multiplexed: multiplexed, delivered: current, viewer: viewer)
                subscriptions[subscription.id] = subscription
            } else {
                sink.close()
            }
            return true
        }
        let subscription = Subscription(sink: sink, multiplexed: multiplexed, delivered: since ?? current, viewer: viewer)
        subscriptions[subscription.id] = subscription
        if var perViewer {
            perViewer.add(subscription, list: name, configuration: configuration)
            source = .perViewer(perViewer)
        }
        if let since, since != current {
            send(encodedChanges(since: since, for: viewer), to: subscription)
        } else if let multiplexed {
            // Live from now: the stream's version vector starts at the current version.
            _ = multiplexed.advance(name.rawValue, to: current)
        }
        return true
    }

    /// Removes a stream (it ended).
    package func unsubscribe(_ sink: any EventSink) {
        drop(ObjectIdentifier(sink))
    }

    /// Forgets a stream, with its own renderer for a per-viewer list.
    private func drop(_ id: ObjectIdentifier) {
        subscriptions.removeValue(forKey: id)
        if var perViewer {
            perViewer.remove(id)
            source = .perViewer(perViewer)
        }
    }

    /// Logs and sends a new changeset; returns its JSON, encoded once for the log, every stream and the
    /// writer's answer.
    @discardableResult
    private func publish(_ changeset: ListChangeset) -> [UInt8] {
        noteVersion()
        let encoded = EncodedChangeset(changeset)
        log.append(changeset, bytes: encoded.count)
        counters.changesets += 1
        let single = encoded.event(id: String(changeset.version))
        for subscription in subscriptions.values {
            if subscription.sink.isClosed {
                drop(subscription.id)
                continue
            }
            if subscription.isWaitingForDrain {
                continue
            }
            if subscription.delivered != changeset.from {
                // Behind (it was skipped while slow): catch it up from its own version.
                catchUp(subscription)
                continue
            }
            if subscription.sink.queuedBytes > configuration.slowViewerBytes {
                waitForDrain(subscription)
                continue
            }
            if subscription.multiplexed == nil {
                write(single, version: changeset.version, isReset: changeset.isReset, to: subscription)
            } else {
                send(encoded, to: subscription)
            }
        }
        return encoded.json
    }

    /// Writes one event with the right id for the stream (the version, or the multiplexed vector);
    /// its tail is shared with every other stream that gets the same changeset.
    private func send(_ encoded: EncodedChangeset, to subscription: Subscription) {
        let id = subscription.multiplexed?.advance(name.rawValue, to: encoded.version) ?? String(encoded.version)
        write(encoded.event(id: id), version: encoded.version, isReset: encoded.isReset, to: subscription)
    }

    private func write(_ event: ListEvent, version: Int, isReset: Bool, to subscription: Subscription) {
        if subscription.sink.send(event) {
            subscription.delivered = version
            counters.eventsSent += 1
            counters.bytesSent += event.count
            if isReset {
                counters.resetsSent += 1
            }
        } else {
            drop(subscription.id)
        }
    }

    /// Stops writing to a slow stream until its socket drains, then sends one changeset for all it
    /// missed: a slow viewer costs one diff, never an unbounded queue.
    private func waitForDrain(_ subscription: Subscription) {
        subscription.isWaitingForDrain = true
        counters.coalescedViewers += 1
        subscription.sink.whenDrained { [weak self, subscription] in
            guard let self else { return }
            Task { await self.drained(subscription) }
        }
    }

    private func drained(_ subscription: Subscription) {
        subscription.isWaitingForDrain = false
        guard subscriptions[subscription.id] != nil else { return }
        catchUp(subscription)
    }

    private func catchUp(_ subscription: Subscription) {
        let current = renderer.updater.version
        guard subscription.delivered != current else { return }
        if subscription.sink.queuedBytes > configuration.slowViewerBytes {
            waitForDrain(subscription)
            return
        }
        send(encodedChanges(since: subscription.delivered, for: subscription.viewer), to: subscription)
    }

    /// ``changes(since:for:)`` encoded for streams, once per version for a list shown alike to every
    /// viewer: streams that resume from the same version share one catch-up, and every stream that
    /// needs a reset shares its tail (only the head, which says where it starts, is each one's own).
    /// A list rendered per viewer encodes each viewer's own, never shared.
    private func encodedChanges(since version: Int, for viewer: Viewer) -> EncodedChangeset {
        guard perViewer == nil else {
            return EncodedChangeset(changes(since: version, for: viewer))
        }
        let current = renderer.updater.version
        if catchUps.version != current {
            catchUps = CatchUpCache(version: current)
        }
        let key: Int
        switch log.lookup(since: version, current: current) {
        case .current:
            return EncodedChangeset(changes(since: version))
        case .changesets:
            key = version
        case .reset:
            key = CatchUpCache.reset
        }
        if let tail = catchUps.entries[key] {
            let head = ListChangeset.encodedJSONHead(list: name.rawValue, from: version)
            return EncodedChangeset(head: head, tail: tail, version: current, isReset: key == CatchUpCache.reset)
        }
        let encoded = EncodedChangeset(changes(since: version))
        catchUps.keep(encoded.tail, for: key)
        return encoded
    }
}

/// The catch-ups of one list to one version (its current one), by the version they start from (a
/// reset by ``reset``: its tail is the same from any start). At most ``capacity`` are kept; others
/// are encoded for their stream alone, and count for it in the server's stream budget.
struct CatchUpCache {
    static let reset = Int.min
    static let capacity = 16
    /// The version every entry goes to.
    var version = -1
    private(set) var entries: [Int: EventTail] = [:]

    var isEmpty: Bool { entries.isEmpty }

    mutating func keep(_ tail: EventTail, for key: Int) {
        guard entries.count < Self.capacity else { return }
        entries[key] = tail
    }
}
