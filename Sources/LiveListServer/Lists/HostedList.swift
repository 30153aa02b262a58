public import LiveListHTML

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
}

/// One list being served: its shared renderer (a render that does not depend on the viewer is done
/// once per version, and its encoded bytes go to every viewer), its bounded log of changesets, and the
/// streams that view it.
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
    let configuration: ListConfiguration
    let store: any ListStore
    private let renderer: Renderer<PatchUpdater>
    private var log: ChangeLog
    private var subscriptions: [ObjectIdentifier: Subscription] = [:]
    private var encodedSnapshot: (version: Int, bytes: [UInt8])?
    /// For JSON lists: the state and the exact body that produced it.
    private(set) var jsonState: (state: JSONListState, body: [UInt8])?
    /// For app lists: the version up to which the store has reserved.
    private var reservedVersion: Int
    private(set) var isDeleted = false
    private(set) var counters = ListCounters()
    private var actionHandler: (@Sendable (ListAction) async -> Void)?
    /// For a list whose render reads the viewer: the render function, and each stream's own renderer.
    private let perViewer: (@Sendable (Viewer) -> [Section])?
    /// Whether the list renders per viewer (its pages cannot be shared).
    public nonisolated var rendersPerViewer: Bool { perViewer != nil }
    private var viewerRenderers: [ObjectIdentifier: Renderer<PatchUpdater>] = [:]

    /// Creates a list whose next version follows `version` (a name's versions are never reused).
    init(
        name: ListName, owner: Owner, version: Int, configuration: ListConfiguration, store: any ListStore,
        perViewer: (@Sendable (Viewer) -> [Section])? = nil
    ) {
        self.perViewer = perViewer
        self.name = name
        self.owner = owner
        self.configuration = configuration
        self.store = store
        renderer = Renderer(
            adapter: configuration.adapter,
            updater: PatchUpdater(list: name.rawValue, version: version, options: configuration.options)
        )
        log = ChangeLog(maximumCount: configuration.logCount, maximumBytes: configuration.logBytes)
        reservedVersion = version
    }

    /// The current version.
    public var version: Int {
        renderer.updater.version
    }

    /// The number of open streams viewing this list.
    public var viewerCount: Int {
        subscriptions.count
    }

    // MARK: - Rendering

    /// Renders new sections (an app list's new state), and publishes the changeset when the rendering
    /// changed.
    ///
    /// - Throws: `DiffError` for duplicate keys, `RenderError` for a NUL in a key, `StoreError` when the
    ///   version cannot be reserved; the list is then unchanged.
    @discardableResult
    public func render(_ sections: [Section]) throws -> ListChangeset? {
        guard !isDeleted else { return nil }
        precondition(perViewer == nil, "a list rendered per viewer changes through refresh()")
        try reserveNextVersion()
        guard let changeset = try renderer.render(sections) else {
            return nil
        }
        publish(changeset)
        return changeset
    }

    /// Reserves versions in the store ahead of use, so a crash can never lead to reuse.
    private func reserveNextVersion() throws {
        let next = renderer.updater.version + 1
        if owner == .app && next > reservedVersion {
            try store.saveHighWater(next + configuration.versionBlock, for: name.rawValue)
            reservedVersion = next + configuration.versionBlock
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
        guard let perViewer, !isDeleted else { return nil }
        try reserveNextVersion()
        let anonymous = try renderer.render(perViewer(.anonymous))
        var changed: [(Subscription, ListChangeset)] = []
        for subscription in subscriptions.values {
            guard let viewerRenderer = viewerRenderers[subscription.id] else { continue }
            if let changeset = try viewerRenderer.render(perViewer(subscription.viewer)) {
                changed.append((subscription, changeset))
            }
        }
        guard anonymous != nil || !changed.isEmpty else {
            return nil
        }
        if anonymous == nil {
            _ = renderer.updater.advanceVersion()
        }
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
            send(json: own.encodedJSON(), version: version, isReset: false, to: subscription)
        }
        return version
    }

    /// A fresh rendering of a per-viewer list for `viewer`, at the current version.
    private func viewerSnapshot(_ viewer: Viewer) -> ListSnapshot {
        guard let perViewer else { return renderer.updater.snapshot }
        var updater = PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
        let rendered = (try? updater.performUpdates(adapter: configuration.adapter, from: [], to: perViewer(viewer))) != nil
        return ListSnapshot(list: name.rawValue, version: version, rendering: rendered ? updater.rendering : RenderedList())
    }

    /// Renders with the sections builder.
    @discardableResult
    public func render(@SectionsBuilder _ sections: () -> [Section]) throws -> ListChangeset? {
        try render(sections())
    }

    /// Loads a stored JSON list: the list is at exactly `version`, with nothing to publish.
    func load(state: JSONListState, body: [UInt8], version: Int) throws {
        precondition(renderer.updater.version == version - 1, "load() needs an updater one version behind")
        // An empty list renders like no list at all; it still is at `version`.
        if try renderer.render(state.listSections) == nil {
            _ = renderer.updater.advanceVersion()
        }
        jsonState = (state, body)
    }

    /// Outcome of a PUT.
    enum PutOutcome {
        /// The state changed: this changeset took the list to a new version.
        case changed(ListChangeset)
        /// The state is the same: no new version.
        case unchanged(version: Int)
        /// `If-Match` named another version.
        case preconditionFailed(current: Int)
    }

    /// Replaces a JSON list's state: persists the body with its new version, then renders and
    /// publishes. Nothing is published or acknowledged before the store has the body.
    func replace(state: JSONListState, body: [UInt8], ifMatch: Int?) throws -> PutOutcome {
        let current = renderer.updater.version
        if let ifMatch, ifMatch != current {
            return .preconditionFailed(current: current)
        }
        if let jsonState, jsonState.state == state {
            // Equal states render equally (every field is rendered, escaping is injective).
            return .unchanged(version: current)
        }
        try store.saveJSONList(name: name.rawValue, version: current + 1, body: body)
        let isCreation = jsonState == nil
        // A list created empty renders like no list at all, yet it now exists: that is a version.
        guard let changeset = try renderer.render(state.listSections) ?? (isCreation ? renderer.updater.advanceVersion() : nil) else {
            return .unchanged(version: current)
        }
        jsonState = (state, body)
        publish(changeset)
        return .changed(changeset)
    }

    /// Deletes the list: its viewers get a final, empty reset; single-list streams then end, and
    /// multiplexed streams go on for their other lists.
    func delete() throws -> ListChangeset {
        let from = renderer.updater.version
        let final = ListChangeset(
            list: name.rawValue, from: from, version: from + 1, animate: false,
            operations: [.reset(html: "", sections: [])]
        )
        try store.saveHighWater(final.version, for: name.rawValue)
        if owner == .json {
            try store.removeJSONList(name: name.rawValue)
        }
        isDeleted = true
        let json = final.encodedJSON()
        for subscription in subscriptions.values {
            send(json: json, version: final.version, isReset: true, to: subscription)
            if subscription.multiplexed == nil {
                subscription.sink.close()
            }
        }
        subscriptions.removeAll()
        log.clear()
        encodedSnapshot = nil
        return final
    }

    // MARK: - Reading

    /// The current state in snapshot form (with the PUT body for JSON lists).
    public func snapshot(for viewer: Viewer = .anonymous) -> ListSnapshot {
        if perViewer != nil {
            return viewerSnapshot(viewer)
        }
        var snapshot = renderer.updater.snapshot
        snapshot.state = jsonState?.body
        return snapshot
    }

    /// The snapshot's JSON, encoded once per version.
    func snapshotJSON(for viewer: Viewer = .anonymous) -> [UInt8] {
        if perViewer != nil {
            return viewerSnapshot(viewer).encodedJSON()
        }
        let version = renderer.updater.version
        if let encodedSnapshot, encodedSnapshot.version == version {
            return encodedSnapshot.bytes
        }
        let bytes = snapshot().encodedJSON()
        encodedSnapshot = (version, bytes)
        return bytes
    }

    /// The list root with its sections, for a full page.
    func pageHTML(for viewer: Viewer = .anonymous) -> (html: String, version: Int) {
        let snapshot = perViewer != nil ? viewerSnapshot(viewer) : renderer.updater.snapshot
        return (
            configuration.adapter.renderRoot(
                list: name.rawValue, version: snapshot.version, options: configuration.options, rendering: snapshot.rendering
            ),
            snapshot.version
        )
    }

    /// One changeset from `version` to now: empty operations when current, the logged changesets
    /// joined, or a reset when `version` is too old, unknown or in the future.
    func changes(since version: Int, for viewer: Viewer = .anonymous) -> ListChangeset {
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
            if log.bytes(since: version) > snapshotJSON().count {
                return renderer.updater.snapshot.reset(from: version)
            }
            return .joining(changesets, animatableChangeCount: configuration.options.animatableChangeCount)
        case .reset:
            return renderer.updater.snapshot.reset(from: version)
        }
    }

    // MARK: - Actions

    /// Sets what the list does with browser events: selections, visibility changes and form actions
    /// (`POST /lists/NAME/actions`). Selections also reach the adapter's `didSelect`, visibility changes
    /// the component's `contentWillDisplay()`/`contentDidEndDisplay()`.
    public func onAction(_ handler: @escaping @Sendable (ListAction) async -> Void) {
        actionHandler = handler
    }

    /// Handles a browser event; false when nothing handles its type.
    func handle(_ action: ListAction) async -> Bool {
        var known = false
        if let cell = action.cell, let (node, section) = findCell(cell) {
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
        guard let actionHandler else {
            return known
        }
        await actionHandler(action)
        return true
    }

    private func findCell(_ key: String) -> (CellNode, String)? {
        for section in renderer.data {
            for node in section.cells where node.id.key.utf8.elementsEqual(key.utf8) {
                return (node, section.id.key)
            }
        }
        return nil
    }

    // MARK: - Streams

    /// Adds a stream. With `since`, the stream first gets what it missed (one changeset, or a reset);
    /// without, it starts live at the current version.
    func subscribe(_ sink: any EventSink, since: Int?, multiplexed: MultiplexedStream? = nil, viewer: Viewer = .anonymous) {
        let current = renderer.updater.version
        let subscription = Subscription(sink: sink, multiplexed: multiplexed, delivered: since ?? current, viewer: viewer)
        subscriptions[subscription.id] = subscription
        if let perViewer {
            // The stream's own renderer starts from what this viewer sees now.
            let viewerRenderer = Renderer(
                adapter: configuration.adapter,
                updater: PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
            )
            _ = try? viewerRenderer.render(perViewer(viewer))
            viewerRenderers[subscription.id] = viewerRenderer
        }
        if let since, since != current {
            let catchUp = changes(since: since, for: viewer)
            send(json: catchUp.encodedJSON(), version: catchUp.version, isReset: catchUp.isReset, to: subscription)
        } else if let multiplexed {
            // Live from now: the stream's version vector starts at the current version.
            _ = multiplexed.advance(name.rawValue, to: current)
        }
    }

    /// Removes a stream (it ended).
    func unsubscribe(_ sink: any EventSink) {
        for (id, subscription) in subscriptions where subscription.sink === sink {
            subscriptions.removeValue(forKey: id)
            viewerRenderers.removeValue(forKey: id)
        }
    }

    private func publish(_ changeset: ListChangeset) {
        let json = changeset.encodedJSON()
        log.append(changeset, bytes: json.count)
        counters.changesets += 1
        let single = eventBytes(id: String(changeset.version), json: json)
        for subscription in subscriptions.values {
            if subscription.sink.isClosed {
                subscriptions.removeValue(forKey: subscription.id)
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
                send(json: json, version: changeset.version, isReset: changeset.isReset, to: subscription)
            }
        }
    }

    /// Writes one event with the right id for the stream (the version, or the multiplexed vector).
    private func send(json: [UInt8], version: Int, isReset: Bool, to subscription: Subscription) {
        let id = subscription.multiplexed?.advance(name.rawValue, to: version) ?? String(version)
        write(eventBytes(id: id, json: json), version: version, isReset: isReset, to: subscription)
    }

    private func write(_ bytes: [UInt8], version: Int, isReset: Bool, to subscription: Subscription) {
        if subscription.sink.write(bytes) {
            subscription.delivered = version
            counters.eventsSent += 1
            counters.bytesSent += bytes.count
            if isReset {
                counters.resetsSent += 1
            }
        } else {
            subscriptions.removeValue(forKey: subscription.id)
            viewerRenderers.removeValue(forKey: subscription.id)
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
        let changeset = changes(since: subscription.delivered, for: subscription.viewer)
        send(json: changeset.encodedJSON(), version: changeset.version, isReset: changeset.isReset, to: subscription)
    }
}
