package import LiveListHTML

/// What the registry and the routes ask of a list of any kind: reading, streams, browser events. Each
/// kind holds a ``ListCore`` that answers them; a kind whose content another process of a shared store
/// may write (``JSONList``, ``StateList``) follows the store in ``catchUpWithStore(noticed:)``.
package protocol ServedList: HostedList {
    /// What every kind shares, used only on the list's actor.
    var core: ListCore { get }
    /// Whether the list exists and its version, readable without awaiting.
    nonisolated var visibility: ListVisibility { get }
    /// Catches up with what other processes wrote to a shared store, up to `noticed` when given.
    func catchUpWithStore(noticed: Int?) throws(ListWriteError)
    /// A slow stream drained (``ListCore/waitForDrain(_:)``).
    func drained(_ subscription: Subscription)
    /// Goes on with the fan-out in progress (``ListCore/continueFanOut()``).
    func continueFanOut()
    /// The current state in snapshot form, as `viewer` sees it.
    func snapshot(for viewer: Viewer) -> ListSnapshot
    /// The snapshot's JSON with the version it shows, encoded once per version.
    func versionedSnapshotJSON(for viewer: Viewer) -> (version: Int, bytes: [UInt8])
    /// The list root with its sections, for a full page.
    func pageHTML(for viewer: Viewer) -> (html: String, version: Int)
    /// The list root for a page whose window starts at the cell `key`, nil when there is no such cell.
    func pageHTML(for viewer: Viewer, at key: String) -> (html: String, version: Int)?
    /// The range route's answer (see ``ListCore/window(from:count:since:keys:for:)``).
    func window(from: Int, count: Int, since: Int?, keys: Bool, for viewer: Viewer) -> [UInt8]
    /// One changeset from `version` to now (see ``ListCore/changes(since:for:)``).
    func changes(since version: Int, for viewer: Viewer) -> ListChangeset
    /// Adds a stream (see ``ListCore/subscribe(_:since:multiplexed:viewer:)``); false when this list was
    /// retired.
    func subscribe(_ sink: any EventSink, since: Int?, multiplexed: MultiplexedStream?, viewer: Viewer) -> Bool
    /// Removes a stream (it ended).
    func unsubscribe(_ sink: any EventSink)
    /// Handles a browser event, or says why it is refused.
    func perform(_ action: ListAction) async -> ActionOutcome
    /// Handles several browser events in order, in one visit to the list (a batched visibility report).
    func performEach(_ actions: [ListAction]) async -> [ActionOutcome]
    /// Retires a list that does not exist and that no stream waits on; nil when it is in use.
    func retireIfUnused() -> Int?
    /// Adopts streams that waited on the name before this list took it.
    func adopt(_ moved: [Subscription])
    /// Counters that `/metrics` reports.
    var counters: ListCounters { get }
    /// Makes what `viewer` reads ready (a live query's rows for the viewer's parameters); every way a
    /// viewer reads the list or opens a stream on it awaits it first. Nil when ready, else why the list
    /// cannot be shown now.
    nonisolated func prepare(for viewer: Viewer) async -> String?
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

extension ServedList {
    public nonisolated var exists: Bool {
        visibility.exists
    }

    public nonisolated var rendersPerViewer: Bool {
        false
    }

    /// The current version, read without awaiting: what a page served now shows (a list rendered per
    /// viewer aside). Every acknowledged write is seen.
    package nonisolated var currentVersion: Int {
        visibility.version
    }

    public var version: Int {
        core.version
    }

    public var viewerCount: Int {
        core.subscriptions.count
    }

    package var counters: ListCounters {
        core.counters
    }

    package func catchUpWithStore(noticed: Int?) throws(ListWriteError) {}

    package nonisolated func prepare(for viewer: Viewer) async -> String? {
        nil
    }

    package func drained(_ subscription: Subscription) {
        core.drained(subscription)
    }

    package func continueFanOut() {
        core.continueFanOut()
    }

    public func snapshot(for viewer: Viewer) -> ListSnapshot {
        core.snapshot(for: viewer)
    }

    package func versionedSnapshotJSON(for viewer: Viewer) -> (version: Int, bytes: [UInt8]) {
        core.versionedSnapshotJSON(for: viewer)
    }

    /// The snapshot's JSON, encoded once per version.
    package func snapshotJSON(for viewer: Viewer = .anonymous) -> [UInt8] {
        versionedSnapshotJSON(for: viewer).bytes
    }

    package func pageHTML(for viewer: Viewer) -> (html: String, version: Int) {
        core.pageHTML(for: viewer)
    }

    /// The list root with its sections, as a viewer without a session sees it.
    package func pageHTML() -> (html: String, version: Int) {
        pageHTML(for: .anonymous)
    }

    package func changes(since version: Int, for viewer: Viewer) -> ListChangeset {
        core.changes(since: version, for: viewer)
    }

    package func pageHTML(for viewer: Viewer, at key: String) -> (html: String, version: Int)? {
        core.pageHTML(for: viewer, at: key)
    }

    package func window(from: Int, count: Int, since: Int?, keys: Bool, for viewer: Viewer) -> [UInt8] {
        if let since, since > core.version {
            // A client that another process of a shared store served further: follow the store first
            // (when that fails, the answer is at this version, which the client sees as behind it).
            try? catchUpWithStore(noticed: since)
        }
        return core.window(from: from, count: count, since: since, keys: keys, for: viewer)
    }

    /// One changeset from `version` to now, as a viewer without a session sees it.
    package func changes(since version: Int) -> ListChangeset {
        changes(since: version, for: .anonymous)
    }

    @discardableResult
    package func subscribe(_ sink: any EventSink, since: Int?, multiplexed: MultiplexedStream? = nil, viewer: Viewer = .anonymous) -> Bool {
        subscribe(sink, since: since, multiplexed: multiplexed, viewer: viewer, followingStore: true)
    }

    /// Adds a stream; with `followingStore` false, a viewer ahead of this process is not caught up
    /// with the store first (the registry found that the store holds nothing it saw: one query for
    /// every list of a multiplexed stream).
    @discardableResult
    package func subscribe(_ sink: any EventSink, since: Int?, multiplexed: MultiplexedStream?, viewer: Viewer, followingStore: Bool) -> Bool {
        if followingStore, let since, since > core.version {
            // A viewer that another process of a shared store served further: follow the store first.
            try? catchUpWithStore(noticed: since)
        }
        return core.subscribe(sink, since: since, multiplexed: multiplexed, viewer: viewer)
    }

    package func unsubscribe(_ sink: any EventSink) {
        core.drop(ObjectIdentifier(sink))
    }

    package func retireIfUnused() -> Int? {
        core.retireIfUnused()
    }

    package func adopt(_ moved: [Subscription]) {
        core.adopt(moved)
    }

    /// Handles a browser event; false when nothing handles its type.
    package func handle(_ action: ListAction) async -> Bool {
        await perform(action) == .handled
    }

    package func perform(_ action: ListAction) async -> ActionOutcome {
        await performAction(action)
    }

    package func performEach(_ actions: [ListAction]) async -> [ActionOutcome] {
        var outcomes: [ActionOutcome] = []
        outcomes.reserveCapacity(actions.count)
        for action in actions {
            outcomes.append(await perform(action))
        }
        return outcomes
    }

    /// What ``perform(_:)`` does by default: a visibility report or a selection goes to the component
    /// or the adapter, any other action to the app's handler.
    package func performAction(_ action: ListAction) async -> ActionOutcome {
        var known = false
        if action.cell == nil, action.type == "visible" || action.type == "hidden",
            let key = action.fields["section"], let part = action.fields["part"],
            let component = core.findSupplementary(part, ofSection: key)
        {
            // A header or footer that reports its visibility: `{"type": "visible", "section": KEY,
            // "part": "header"}` (docs/PROTOCOL.md).
            if action.type == "visible" { component.contentWillDisplay() } else { component.contentDidEndDisplay() }
            return .handled
        }
        let found = action.cell.flatMap { core.findCell($0, identity: action.identity) }
        if let cell = action.cell, let (node, section) = found {
            switch action.type {
            case "select":
                core.configuration.adapter.didSelect?(.init(list: name.rawValue, cellKey: cell, sectionKey: section, node: node))
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
        if !known, let actionTypes = core.actionTypes {
            // A selection or visibility change that found nothing is refused like the app's actions.
            let isEvent = ["select", "visible", "hidden"].contains(action.type)
            guard actionTypes(action.type) || isEvent else { return .unknownType }
            if let cell = action.cell, !cell.isEmpty, found == nil {
                return .unknownCell
            }
            guard actionTypes(action.type) else { return .unknownType }
        }
        guard let actionHandler = core.actionHandler else {
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
}

