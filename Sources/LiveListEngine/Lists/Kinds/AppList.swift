public import LiveListHTML

/// A list that Swift code renders (``ListRegistry/hostApp(_:configuration:sections:)``, or an app's own
/// `Renderer` served with ``ListRegistry/hostApp(_:serving:onError:)``): each ``render(_:)-([Section])``
/// takes the next version and is published. What it shows is the process's own: its versions are
/// reserved in the store, its content is not stored.
public actor AppList: ServedList, AppHostedList {
    public nonisolated let name: ListName
    public nonisolated var owner: ListOwner { .app }
    package nonisolated let visibility: ListVisibility
    package let core: ListCore
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

    /// Creates a list whose next version follows `version`; it exists once first rendered.
    init(name: ListName, version: Int, configuration: ListConfiguration, store: any ListStore) {
        self.name = name
        let core = ListCore(name: name, version: version, configuration: configuration, store: store)
        self.core = core
        visibility = core.visibility
        reservedVersion = version
        core.owner = self
    }

    /// Renders new sections (the app's new state), and publishes the changeset when the rendering
    /// changed. The first rendering in this process is published as a reset.
    ///
    /// - Throws: `DiffError` for duplicate keys, `RenderError` for a NUL in a key, `StoreError` when the
    ///   version cannot be reserved; the list is then unchanged.
    @discardableResult
    public func render(_ sections: [Section]) throws -> ListChangeset? {
        try core.reserveNextVersion(&reservedVersion)
        let first = !exists
        let rendered = try core.renderer.render(sections)
        core.setExists(true)
        guard let changeset = rendered else { return nil }
        let published = first ? core.firstRendering(changeset) : changeset
        core.publish(published)
        return published
    }

    /// Renders with the sections builder.
    @discardableResult
    public func render(@SectionsBuilder _ sections: () -> [Section]) throws -> ListChangeset? {
        try render(sections())
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
            core.configuration.adapter = next.adapter
            core.configuration.options = next.options
            core.renderer.adapter = next.adapter
            core.renderer.updater.options = next.options
            do {
                try render(next.sections)
            } catch {
                errors.append(error)
            }
        }
        return errors
    }
}
