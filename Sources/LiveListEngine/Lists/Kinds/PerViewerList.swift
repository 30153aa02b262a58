import LiveListHTML

/// A list whose render reads the viewer (``ListRegistry/hostApp(_:configuration:perViewer:)``): each
/// viewing stream holds its own renderer, fed by the render function for its viewer, with the list's
/// shared versions. Call ``refresh()`` when the app's state changes.
public actor PerViewerList: ServedList, AppHostedList {
    public nonisolated let name: ListName
    public nonisolated var owner: ListOwner { .app }
    public nonisolated var rendersPerViewer: Bool { true }
    package nonisolated let visibility: ListVisibility
    package let core: ListCore
    private let renderers: PerViewerRenderers
    /// The version up to which the store has reserved.
    private var reservedVersion: Int
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

    /// Creates a list whose next version follows `version`; it exists once first refreshed.
    init(name: ListName, version: Int, configuration: ListConfiguration, store: any ListStore, render: @escaping @Sendable (Viewer) -> [Section]) {
        self.name = name
        let renderers = PerViewerRenderers(render: render)
        let core = ListCore(name: name, version: version, configuration: configuration, store: store, perViewer: renderers)
        self.core = core
        self.renderers = renderers
        visibility = core.visibility
        reservedVersion = version
        core.owner = self
    }

    /// Renders again for every viewer (the app's state changed). The list gets a new version when any
    /// viewer's rendering changed, and each stream gets its own changeset, from the version it was
    /// last sent to the new one; viewers whose rendering did not change get nothing and catch up with
    /// their next changeset.
    ///
    /// A viewer who has a page but no stream yet (it opens once the page loaded) is seen by neither:
    /// with `always`, the list takes a version even when no stream's rendering changed, so that such a
    /// stream, opening from the page's version, catches up with its viewer's state anew. A list whose
    /// state changed for viewers it cannot see (a list derived from another's state) says `always`.
    ///
    /// - Returns: the new version, or nil when no rendering changed (and not `always`).
    @discardableResult
    public func refresh(always: Bool = false) throws -> Int? {
        try core.reserveNextVersion(&reservedVersion)
        let anonymous = try core.renderer.render(renderers.render(.anonymous))
        core.setExists(true)
        let changed = try renderers.changesets(for: core.subscriptions.values)
        guard anonymous != nil || !changed.isEmpty || always else {
            return nil
        }
        if anonymous == nil {
            _ = core.renderer.updater.advanceVersion()
        }
        core.noteVersion()
        let version = core.version
        core.counters.changesets += 1
        for (subscription, changeset) in changed where !subscription.isWaitingForDrain {
            var own = changeset
            own.from = subscription.delivered
            own.version = version
            if subscription.sink.queuedBytes > core.configuration.slowViewerBytes {
                core.waitForDrain(subscription)
                continue
            }
            core.send(EncodedChangeset(own), to: subscription)
        }
        return version
    }
}

/// What a list rendered per viewer holds for its readers and streams (``ListCore/perViewer``): owned by
/// the list's actor.
protocol ViewerRenderings: AnyObject {
    /// A rendering for `viewer`, at `version`.
    func snapshot(for viewer: Viewer, list name: ListName, version: Int, configuration: ListConfiguration) -> ListSnapshot
    /// A new stream: it gets its rendering, starting from what its viewer sees now.
    func add(_ subscription: Subscription, list name: ListName, configuration: ListConfiguration)
    /// A stream ended.
    func remove(_ id: ObjectIdentifier)
}

/// The render function of a list rendered per viewer, and each viewing stream's own renderer, fed for
/// its viewer. Owned by the list's actor (and its ``ListCore``, whose fan-out and readers use it).
final class PerViewerRenderers: ViewerRenderings {
    let render: @Sendable (Viewer) -> [Section]
    private var renderers: [ObjectIdentifier: Renderer<PatchUpdater>] = [:]

    init(render: @escaping @Sendable (Viewer) -> [Section]) {
        self.render = render
    }

    /// A fresh rendering for `viewer`, at `version`.
    func snapshot(for viewer: Viewer, list name: ListName, version: Int, configuration: ListConfiguration) -> ListSnapshot {
        Self.freshSnapshot(of: render(viewer), list: name, version: version, configuration: configuration)
    }

    /// `sections` rendered anew, at `version` (no cells when they cannot be rendered).
    static func freshSnapshot(of sections: [Section], list name: ListName, version: Int, configuration: ListConfiguration) -> ListSnapshot {
        var updater = PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
        let rendered = (try? updater.performUpdates(adapter: configuration.adapter, from: [], to: sections)) != nil
        return ListSnapshot(list: name.rawValue, version: version, rendering: rendered ? updater.rendering : RenderedList())
    }

    /// Gives a new stream its own renderer, starting from what its viewer sees now.
    func add(_ subscription: Subscription, list name: ListName, configuration: ListConfiguration) {
        let renderer = Renderer(
            adapter: configuration.adapter,
            updater: PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
        )
        _ = try? renderer.render(render(subscription.viewer))
        renderers[subscription.id] = renderer
    }

    /// Forgets a stream's renderer.
    func remove(_ id: ObjectIdentifier) {
        renderers.removeValue(forKey: id)
    }

    /// Renders again for every stream; the changesets of those whose rendering changed.
    func changesets(for subscriptions: some Sequence<Subscription>) throws -> [(Subscription, ListChangeset)] {
        var changed: [(Subscription, ListChangeset)] = []
        for subscription in subscriptions {
            guard let renderer = renderers[subscription.id] else { continue }
            if let changeset = try renderer.render(render(subscription.viewer)) {
                changed.append((subscription, changeset))
            }
        }
        return changed
    }
}
