import LiveListHTML

/// The source of an app list whose render reads the viewer (`ListRegistry.hostApp(_:perViewer:)`): the
/// render function, and each viewing stream's own renderer, fed for its viewer.
struct PerViewerSource {
    let render: @Sendable (Viewer) -> [Section]
    private var renderers: [ObjectIdentifier: Renderer<PatchUpdater>] = [:]

    init(render: @escaping @Sendable (Viewer) -> [Section]) {
        self.render = render
    }

    /// A fresh rendering for `viewer`, at `version`.
    func snapshot(for viewer: Viewer, list name: ListName, version: Int, configuration: ListConfiguration) -> ListSnapshot {
        var updater = PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
        let rendered = (try? updater.performUpdates(adapter: configuration.adapter, from: [], to: render(viewer))) != nil
        return ListSnapshot(list: name.rawValue, version: version, rendering: rendered ? updater.rendering : RenderedList())
    }

    /// Gives a new stream its own renderer, starting from what its viewer sees now.
    mutating func add(_ subscription: Subscription, list name: ListName, configuration: ListConfiguration) {
        let renderer = Renderer(
            adapter: configuration.adapter,
            updater: PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
        )
        _ = try? renderer.render(render(subscription.viewer))
        renderers[subscription.id] = renderer
    }

    /// Forgets a stream's renderer.
    mutating func remove(_ id: ObjectIdentifier) {
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
