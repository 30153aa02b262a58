import LiveListHTML

/// A list whose viewers fall into groups that see the same thing: a live query's viewers with the same
/// parameters (a customer's tickets: one group per customer). Each group has one rendering, shared by
/// every stream of the group and by every reader of it; a change to one group renders once, is encoded
/// once per version its streams are at, and reaches that group's streams alone. The list's versions
/// are shared by all groups, as for ``PerViewerList``.
///
/// `group` says which group a viewer's identity belongs to (nil: none, and it sees no cells): it reads
/// the identity alone, never the session, so that a group is the same on every way in. `render`
/// renders a group. Call ``refresh(_:)`` with the groups whose content changed.
public actor PartitionedList: ServedList, AppHostedList {
    public nonisolated let name: ListName
    public nonisolated var owner: ListOwner { .app }
    public nonisolated var rendersPerViewer: Bool { true }
    package nonisolated let visibility: ListVisibility
    package let core: ListCore
    private let groups: GroupRenderers
    private nonisolated let group: @Sendable (Identity?) -> String?
    private nonisolated let prepare: @Sendable (String) async -> String?
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
    init(
        name: ListName, version: Int, configuration: ListConfiguration, store: any ListStore,
        group: @escaping @Sendable (Identity?) -> String?, render: @escaping @Sendable (String) -> [Section],
        prepare: @escaping @Sendable (String) async -> String?
    ) {
        self.name = name
        let groups = GroupRenderers(group: group, render: render)
        let core = ListCore(name: name, version: version, configuration: configuration, store: store, perViewer: groups)
        self.core = core
        self.groups = groups
        self.group = group
        self.prepare = prepare
        visibility = core.visibility
        reservedVersion = version
        core.owner = self
    }

    /// Makes what `viewer`'s group shows ready to be read (a live query's rows for its parameters):
    /// every way a viewer reads the list awaits it first. Nil when ready, else why the list cannot be
    /// shown now.
    package nonisolated func prepare(for viewer: Viewer) async -> String? {
        guard let key = group(viewer.identity) else { return nil }
        return await prepare(key)
    }

    /// The groups that streams view now, each with how many.
    public var viewedGroups: [String: Int] {
        groups.viewed
    }

    /// Renders again the groups named (their content changed): each renders once, and its streams get
    /// one changeset. The list takes a new version whenever `keys` is not empty, so that a viewer with a
    /// page of an earlier version and no stream yet catches up when its stream opens; with `always`
    /// false (content that no page has shown yet), only when a viewed group's rendering changed.
    ///
    /// - Returns: the new version, nil when `keys` is empty (after the first refresh), or none changed
    ///   without `always`.
    /// - Throws: the first group's `DiffError` or `RenderError` for bad sections (that group is then as
    ///   it was, and the others are refreshed), or when the version cannot be reserved.
    @discardableResult
    public func refresh(_ keys: some Collection<String>, always: Bool = true) throws -> Int? {
        if keys.isEmpty, exists { return nil }
        try core.reserveNextVersion(&reservedVersion)
        core.setExists(true)
        let (changed, failure) = groups.changesets(for: keys)
        if !always, changed.isEmpty {
            if let failure { throw failure }
            return nil
        }
        // The list's own renderer holds no cells: it keeps the versions all groups share.
        _ = core.renderer.updater.advanceVersion()
        core.noteVersion()
        let version = core.version
        core.counters.changesets += 1
        for (members, changeset) in changed {
            // One encoding per version the group's streams were last sent.
            var encoded: [Int: EncodedChangeset] = [:]
            for id in members {
                guard let subscription = core.subscriptions[id], !subscription.isWaitingForDrain else { continue }
                if subscription.sink.queuedBytes > core.configuration.slowViewerBytes {
                    core.waitForDrain(subscription)
                    continue
                }
                let from = subscription.delivered
                let event =
                    encoded[from]
                    ?? {
                        var own = changeset
                        own.from = from
                        own.version = version
                        let made = EncodedChangeset(own)
                        encoded[from] = made
                        return made
                    }()
                core.send(event, to: subscription)
            }
        }
        if let failure { throw failure }
        return version
    }
}

/// A partitioned list's groups: each viewed group's one renderer and its streams. Owned by the list's
/// actor (and its ``ListCore``, whose readers use it).
final class GroupRenderers: ViewerRenderings {
    struct Group {
        let renderer: Renderer<PatchUpdater>
        var members: Set<ObjectIdentifier>
    }

    let group: @Sendable (Identity?) -> String?
    let render: @Sendable (String) -> [Section]
    private var groups: [String: Group] = [:]
    private var membership: [ObjectIdentifier: String] = [:]
    /// Where each cell of a viewed group's rendering is, by key: built on the first action that needs
    /// it, dropped when the group renders again (an action costs the same on a group of any size).
    private var positions: [String: [ByteKey: (section: Int, cell: Int)]] = [:]

    init(group: @escaping @Sendable (Identity?) -> String?, render: @escaping @Sendable (String) -> [Section]) {
        self.group = group
        self.render = render
    }

    var viewed: [String: Int] {
        groups.mapValues(\.members.count)
    }

    func snapshot(for viewer: Viewer, list name: ListName, version: Int, configuration: ListConfiguration) -> ListSnapshot {
        guard let key = group(viewer.identity) else {
            return ListSnapshot(list: name.rawValue, version: version, rendering: RenderedList())
        }
        if let viewed = groups[key] {
            // The group's rendering is current: it is rendered again whenever its content changes.
            return ListSnapshot(list: name.rawValue, version: version, rendering: viewed.renderer.updater.rendering)
        }
        return PerViewerRenderers.freshSnapshot(of: render(key), list: name, version: version, configuration: configuration)
    }

    func add(_ subscription: Subscription, list name: ListName, configuration: ListConfiguration) {
        guard let key = group(subscription.viewer.identity) else { return }
        membership[subscription.id] = key
        if groups[key] != nil {
            groups[key]?.members.insert(subscription.id)
            return
        }
        let renderer = Renderer(
            adapter: configuration.adapter,
            updater: PatchUpdater(list: name.rawValue, version: 0, options: configuration.options)
        )
        _ = try? renderer.render(render(key))
        groups[key] = Group(renderer: renderer, members: [subscription.id])
    }

    func remove(_ id: ObjectIdentifier) {
        guard let key = membership.removeValue(forKey: id) else { return }
        groups[key]?.members.remove(id)
        if groups[key]?.members.isEmpty == true {
            groups.removeValue(forKey: key)
            positions.removeValue(forKey: key)
        }
    }

    /// The cell shown under `key` to the group of `identity`, and its section's key.
    func findCell(_ key: String, identity: Identity?) -> (CellNode, String)? {
        guard let group = group(identity) else { return nil }
        guard let viewed = groups[group] else {
            // A viewer without a stream: its group's rendering, made for this action.
            for section in render(group) {
                if let node = section.cells.first(where: { $0.id.key.utf8.elementsEqual(key.utf8) }) { return (node, section.id.key) }
            }
            return nil
        }
        let data = viewed.renderer.data
        let places = positions[group] ?? ListCore.cellPositions(of: data)
        positions[group] = places
        guard let (sectionIndex, cellIndex) = places[ByteKey(key)], sectionIndex < data.count, cellIndex < data[sectionIndex].cells.count else { return nil }
        return (data[sectionIndex].cells[cellIndex], data[sectionIndex].id.key)
    }

    /// Renders again each viewed group among `keys`: the members and changeset of each whose rendering
    /// changed, and the first error of a group that could not be rendered (it stays as it was).
    func changesets(for keys: some Collection<String>) -> (changed: [(Set<ObjectIdentifier>, ListChangeset)], failure: (any Error)?) {
        var changed: [(Set<ObjectIdentifier>, ListChangeset)] = []
        var failure: (any Error)?
        for key in Set(keys) {
            guard let viewed = groups[key] else { continue }
            do {
                if let changeset = try viewed.renderer.render(render(key)) {
                    positions.removeValue(forKey: key)
                    changed.append((viewed.members, changeset))
                }
            } catch {
                failure = failure ?? error
            }
        }
        return (changed, failure)
    }
}
