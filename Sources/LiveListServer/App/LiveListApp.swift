import Foundation
public import LiveListEngine
public import LiveListHTTP
public import LiveListHTML

/// The LiveList server: the registry of lists and the routes of the HTTP contract (docs/PROTOCOL.md
/// and the README) on the hand-written HTTP server, with the app's own routes beside them.
///
///     let app = try await LiveListApp(configuration: configuration)
///     let todo = try await app.host("todo", state: [Item]()) { items in Section(id: "todo") { items } }
///     try await app.run()
///
/// The app type keeps the author's surface: starting and stopping, hosting lists, routes of the app's
/// own, identity and access, signing. What answers requests are the route families of ``RouteTable``,
/// each holding only what it uses of the services made once here (``ServerServices``).
public final class LiveListApp: Sendable {
    public let configuration: ServerConfiguration
    public let registry: ListRegistry
    /// What the route families share.
    let services: ServerServices

    /// The release: what `/metrics` says in `livelist_build_info`.
    public static let version = "0.4.0"

    /// Opens the data directory, loads the templates and the stored lists.
    ///
    /// - Throws: `StartupError` or `StoreError` with a message for the operator.
    public init(configuration: ServerConfiguration, store: (any ListStore)? = nil) async throws {
        var configuration = configuration
        // Served over TLS: the session cookie is Secure.
        if configuration.tlsCertificate != nil && configuration.tlsKey != nil { configuration.isSecure = true }
        self.configuration = configuration
        let store = try store ?? FileListStore(directory: configuration.dataDirectory)
        registry = try await ListRegistry(store: store, configuration: configuration.lists, limits: configuration.limits)
        services = try await ServerServices(configuration: configuration, registry: registry, store: store)
    }

    /// An app configured by the `LIVELIST_*` environment variables, as the `livelist` executable is
    /// (``ServerConfiguration/fromEnvironment(_:)``): `try await LiveListApp()`.
    ///
    /// - Parameter environment: the variables; nil reads the process's environment.
    /// - Throws: `StartupError` for a variable that makes no sense, or `StoreError` when the data
    ///   directory cannot be opened.
    public convenience init(environment: [String: String]? = nil) async throws {
        try await self.init(configuration: .fromEnvironment(environment))
    }

    // MARK: - Hosting

    /// Serves a list whose state the store keeps, rendered by `render` (see
    /// ``ListRegistry/hostApp(_:configuration:state:render:)``); change it with `onAction(_:changing:)`
    /// or ``StateList/updateState(_:_:)``.
    ///
    ///     let todo = try await app.host("todo", state: [Item]()) { items in
    ///         Section(id: "todo", header: Header("To do")) { items }
    ///     }
    ///
    /// `title` names the list's own page (its `<title>` and heading) in place of its name.
    ///
    /// - Throws: `StartupError` when `name` is not a list name, and what `hostApp` throws.
    @discardableResult
    public func host<State: Codable & Equatable & Sendable>(
        _ name: String, title: String? = nil, configuration: ListConfiguration? = nil, state: State,
        @SectionsBuilder render: @escaping @Sendable (State) -> [Section]
    ) async throws -> StateList<State> {
        let listName = try Self.listName(name)
        if let title { services.pages.setTitle(title, for: listName) }
        return try await registry.hostApp(listName, configuration: configuration, state: state, render: render)
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
        let log = services.log
        return try await registry.hostApp(listName, serving: renderer) { error in
            log.error("\(listName): a render could not be served: \(error)")
        }
    }

    static func listName(_ text: String) throws(StartupError) -> ListName {
        guard let name = ListName(text) else {
            throw StartupError("\"\(text)\" is not a list name: names match [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        }
        return name
    }

    // MARK: - Serving

    /// The routes: the app's own, then the server's (``RouteTable``).
    package var router: Router {
        RouteTable.router(RouteFamilies(services))
    }

    /// The HTTP handler of every route (also usable without sockets, in tests): every answer negotiated
    /// (an HTML error page for a browser), counted in `/metrics` and written to the access log; a body
    /// in a content coding refused from its head.
    public var handler: HTTPHandler {
        let routes = router.handler
        let metrics = services.metrics
        let log = services.log
        let trustedProxies = services.trustedProxies
        let pages = services.pages
        let routesHeadCheck = routes.headCheck
        let logsAccess = log.takesAccess
        // Synchronous routes (static files, /healthz) stay on the event loop: no task per request.
        let counted = routes.mapResponses { request, routed in
            let response = ErrorPages.negotiated(routed, for: request, layout: pages)
            if request.headers["X-Forwarded-For"] != nil || request.headers["Forwarded"] != nil, !trustedProxies.contains(request.remoteAddress),
                let line = trustedProxies.noteUntrustedForwarding(from: request.remoteAddress)
            {
                log.warning(line)
            }
            metrics.count(request, status: response.status.code)
            if logsAccess {
                log.access(ServerLog.accessEntry(request, response, trustedProxies: trustedProxies))
            }
            return response
        }.checkingHeads { head in
            guard let response = (Self.refuseContentEncoding(head) ?? routesHeadCheck?(head)).map({ ErrorPages.negotiated($0, for: head, layout: pages) }) else {
                return nil
            }
            metrics.count(head, status: response.status.code)
            if logsAccess {
                log.access(ServerLog.accessEntry(head, response, trustedProxies: trustedProxies))
            }
            return response
        }
        return counted.compressed()
    }

    /// 415 for a body in a content coding (`Content-Encoding: gzip`): the server reads bodies as
    /// sent, and says so with `Accept-Encoding: identity` (RFC 9110 section 8.4.1, RFC 7694). Decided
    /// from the head, before the body is read.
    static func refuseContentEncoding(_ head: HTTPRequest) -> HTTPResponse? {
        guard let coding = head.headers.joinedValues("Content-Encoding"),
            coding.split(separator: ",").contains(where: { $0.trimmingSpaces.lowercased() != "identity" })
        else { return nil }
        return errorResponse(.unsupportedContentEncoding, "Content-Encoding: \(quoted(coding)); send the body as it is (identity)",
                             headers: ["Accept-Encoding": "identity"])
    }

    /// The HTTP server's settings for this app: its limits, error answers and TLS (also what the
    /// in-process route tests decide a request's head with).
    package var httpConfiguration: HTTPServerConfiguration {
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.errorFormatter = liveListErrorFormatter
        http.serverName = "LiveList"
        // The HTTP layer's own refusals get an HTML page too when a browser asks for one.
        let pages = services.pages
        http.errorPresenter = { response, headers in ErrorPages.negotiated(response, headers: headers, layout: pages) }
        http.limits.body = max(configuration.maximumBodyBytes, configuration.maximumActionBodyBytes)
        http.requestBodyBudget = configuration.bodyBudgetBytes
        http.maxConnections = configuration.maximumConnections
        http.reservedConnections = configuration.reservedConnections
        http.streamSendBuffer = configuration.streamSendBufferBytes
        http.streamOutputBudget = configuration.streamOutputBudgetBytes
        let log = services.log
        http.notice = { line in log.warning(line) }
        if log.takesAccess {
            http.streamEnded = { ended in log.access(ServerLog.accessEntry(ended)) }
        }
        if let loops = configuration.eventLoops { http.loopCount = loops }
        if let certificate = configuration.tlsCertificate, let key = configuration.tlsKey {
            http.tls = TLSConfiguration(certificateChainPath: certificate, privateKeyPath: key)
        }
        return http
    }

    /// Starts serving and returns when the server stops (SIGTERM or SIGINT end it gracefully).
    ///
    /// Once it listens it writes one line to standard error, which is not buffered (so it shows at
    /// once also when the output goes to a file): `LiveList serving on http://HOST:PORT`, with the
    /// port it chose when the configuration's is 0; then it calls `onStart` with that port.
    /// `announcing: false` leaves the line out, for a caller that logs its own. Its loops (following
    /// a shared store's writes and revocations, re-checking open streams) run as child tasks of this
    /// call and end with it.
    public func run(announcing: Bool = true, onStart: @Sendable (Int) -> Void = { _ in }) async throws {
        let server = HTTPServer(configuration: httpConfiguration, handler: handler)
        services.server.set(server)
        do {
            try server.start()
        } catch HTTPServerError.tls(let reason) {
            throw StartupError("cannot start TLS: \(reason)")
        } catch HTTPServerError.eventLoop(let reason) {
            throw StartupError(reason)
        } catch {
            throw StartupError("cannot listen on \(configuration.host):\(configuration.port): \(error)")
        }
        server.shutdownOnSignals()
        if announcing {
            let scheme = configuration.tlsCertificate == nil ? "http" : "https"
            FileHandle.standardError.write(Data("LiveList serving on \(scheme)://\(configuration.host):\(server.port)\n".utf8))
        }
        onStart(server.port)
        let registry = self.registry
        let log = services.log
        let streamAccess = services.streamAccess
        await withDiscardingTaskGroup { group in
            // Other nodes' writes on a shared store reach this node's lists and streams.
            group.addTask { await registry.followStore { line in log.error(line) } }
            group.addTask { await streamAccess.recheckPeriodically() }
            group.addTask { await streamAccess.followRevocations() }
            await server.waitUntilStopped()
            group.cancelAll()
        }
    }

    /// The event loop backend the running server chose (`epoll` or `poll`); nil before `run` started it.
    public var eventLoopBackend: EventLoopBackend? {
        services.server.get()?.eventLoopBackend
    }

    /// Stops a running server (in-flight responses finish, streams end).
    public func stop() async {
        await services.server.get()?.shutdown()
    }
}
