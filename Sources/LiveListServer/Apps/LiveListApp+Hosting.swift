public import LiveListEngine
public import LiveListHTML

extension LiveListApp {
    /// An app configured by the `LIVELIST_*` environment variables, as the `livelist` executable is
    /// (``ServerConfiguration/fromEnvironment(_:)``): `try await LiveListApp()`.
    ///
    /// - Parameter environment: the variables; nil reads the process's environment.
    /// - Throws: `StartupError` for a variable that makes no sense, or `StoreError` when the data
    ///   directory cannot be opened.
    public convenience init(environment: [String: String]? = nil) async throws {
        try await self.init(configuration: .fromEnvironment(environment))
    }

    /// Serves a list whose state the store keeps, rendered by `render` (see
    /// ``ListRegistry/hostApp(_:configuration:state:render:)``); change it with `onAction(_:changing:)`
    /// or ``StateList/updateState(_:_:)``.
    ///
    ///     let todo = try await app.host("todo", state: [Item]()) { items in
    ///         Section(id: "todo", header: Header("To do")) { items }
    ///     }
    ///
    /// - Throws: `StartupError` when `name` is not a list name, and what `hostApp` throws.
    @discardableResult
    public func host<State: Codable & Equatable & Sendable>(
        _ name: String, configuration: ListConfiguration? = nil, state: State,
        @SectionsBuilder render: @escaping @Sendable (State) -> [Section]
    ) async throws -> StateList<State> {
        try await registry.hostApp(try Self.listName(name), configuration: configuration, state: state, render: render)
    }

    /// Serves the app's own renderer as a list, in Carbon's style: every `renderer.render { … }` the
    /// app calls afterwards, from any thread, is published to the list's viewers in order (see
    /// ``ListRegistry/hostApp(_:serving:onError:)``). The list is named after the renderer's updater
    /// unless `name` is given; its adapter and updater options are the renderer's. A render that
    /// cannot be served is reported to the configuration's `errorLog`.
    ///
    ///     let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "board"))
    ///     try await app.serve(renderer)
    ///     try renderer.render { Section(id: "scores") { scores } }
    ///
    /// - Throws: `StartupError` when the name is not a list name, and what `hostApp` throws.
    @discardableResult
    public func serve(_ renderer: Renderer<PatchUpdater>, at name: String? = nil) async throws -> AppList {
        let listName = try Self.listName(name ?? renderer.updater.list)
        let errorLog = configuration.errorLog
        return try await registry.hostApp(listName, serving: renderer) { error in
            errorLog?("\(listName): a render could not be served: \(error)")
        }
    }

    private static func listName(_ text: String) throws(StartupError) -> ListName {
        guard let name = ListName(text) else {
            throw StartupError("\"\(text)\" is not a list name: names match [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        }
        return name
    }
}
