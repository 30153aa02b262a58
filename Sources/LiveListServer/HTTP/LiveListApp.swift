import Foundation
import Synchronization
// An app that imports LiveListServer gets the engine's types too (HostedList, ListName, ListStore…).
@_exported public import LiveListEngine
public import LiveListHTTP
import LiveListHTML

/// The LiveList server: the registry of lists, sessions, templates, static files, and the routes of
/// the HTTP contract (docs/PROTOCOL.md and the README) on the hand-written HTTP server.
///
///     let app = try await LiveListApp(configuration: configuration)
///     let todo = try await app.registry.hostApp(ListName("todo")!, sections: render(state))
///     try await app.run()
public final class LiveListApp: Sendable {
    public let configuration: ServerConfiguration
    public let registry: ListRegistry
    let keys: SessionKeys
    let sessions: SessionTable
    let templates: Templates
    /// `Public/`: the directory configured, or the built-in files.
    let staticFiles: HTTPHandler
    /// `/livelist.js?v=HASH` and `/livelist.css?v=HASH`: cache-busted, served as immutable.
    let scriptURL: String
    let stylesheetURL: String
    /// `/site.css?v=HASH`: the look of the page around the lists.
    let siteStylesheetURL: String
    /// `/livelist-drag.js?v=HASH`: drag to reorder, for cells with a `data-drag-action` handle.
    let dragScriptURL: String
    let metrics = Metrics()
    /// The actions' pace, per session and per client address; nil for none.
    let actionPacer: ActionPacer?
    /// The pace of cells named by visibility reports (200 for each action of the actions' pace), per
    /// session and per client address; nil when actions are not paced.
    let visibilityPacer: ActionPacer?
    /// Recent actions' idempotency keys.
    let actionKeys = ActionKeys()
    let pageCache: PageCache
    /// The `Set-Cookie` value of a new session around its cookie value: made once, joined per view.
    let sessionCookiePrefix: String
    let sessionCookieAttributes: String
    let serverBox = ServerBox()
    /// Decides who may view and act on each list: the one place (``AccessGate``).
    let gate: AccessGate
    /// The event streams open on this node, for revocation and re-checks.
    let openStreams: OpenStreams
    /// Routes of the app's own (``route(_:_:csrf:paced:maximumBodyBytes:_:)``).
    let appRoutes = AppRoutes()
    /// The peers whose `X-Forwarded-For` names the client.
    let trustedProxies: TrustedProxies
    /// Sign-in cookies, ended sign-ins, the pace of wrong attempts.
    let signIns: SignIns

    /// Opens the data directory, loads the templates and the stored lists.
    ///
    /// - Throws: `StartupError` or `StoreError` with a message for the operator.
    public init(configuration: ServerConfiguration, store: (any ListStore)? = nil) async throws {
        var configuration = configuration
        // Served over TLS: the session cookie is Secure.
        if configuration.tlsCertificate != nil && configuration.tlsKey != nil { configuration.isSecure = true }
        self.configuration = configuration
        sessionCookieAttributes = "; Path=/; HttpOnly; SameSite=Lax" + (configuration.isSecure ? "; Secure" : "")
        let store = try store ?? FileListStore(directory: configuration.dataDirectory)
        registry = try await ListRegistry(store: store, configuration: configuration.lists, limits: configuration.limits)
        pageCache = PageCache { [registry] name in registry.existingList(name) != nil }
        // The operator's secrets when given (the first signs), else the one the store keeps.
        if let secrets = configuration.sessionSecrets, let first = secrets.first {
            keys = SessionKeys(secret: first, previous: Array(secrets.dropFirst()), secure: configuration.isSecure)
        } else {
            keys = SessionKeys(secret: try store.secret(), secure: configuration.isSecure)
        }
        sessionCookiePrefix = keys.sessionCookieName + "="
        trustedProxies = try TrustedProxies(configuration.trustedProxies)
        signIns = SignIns(keys: keys, store: store)
        let now = SignIns.now()
        signIns.ended.add(try store.endedSignIns(now: now), now: now)
        let readerSubject = configuration.readToken.map { [keys] token in SignIns.readerSubject(token: token, keys: keys) }
        gate = AccessGate(readToken: configuration.readToken, secret: keys.secret, trustedProxies: trustedProxies) { [signIns] cookie in
            readerSubject != nil && signIns.valid(cookie, purpose: SignIns.readerPurpose)?.subject == readerSubject
        }
        sessions = SessionTable(capacity: configuration.sessionCapacity, idleTimeout: configuration.sessionIdleTimeout)
        openStreams = OpenStreams(metrics: metrics, sessions: sessions, registry: registry)
        actionPacer = configuration.actionPace.map { ActionPacer(pace: $0) }
        visibilityPacer = configuration.actionPace.map { pace in
            ActionPacer(pace: ActionPace(rate: pace.rate * 200, burst: max(Self.maximumReportedCells, pace.burst * 250)))
        }
        templates = try await Templates(directory: configuration.templatesDirectory)
        let read: (String) -> [UInt8]?
        if let directory = configuration.publicDirectory {
            guard let files = StaticFiles(directory: directory, errorFormatter: liveListErrorFormatter) else {
                throw StartupError("the public directory \(directory) does not exist")
            }
            staticFiles = files.handler
            read = { file in try? FileListStore.read(directory + "/" + file) }
        } else {
            staticFiles = MemoryFiles(BuiltInFiles.publicFiles, errorFormatter: liveListErrorFormatter).handler
            read = BuiltInFiles.publicFile
        }
        scriptURL = Self.bustedURL("livelist.js", read)
        stylesheetURL = Self.bustedURL("livelist.css", read)
        siteStylesheetURL = Self.bustedURL("site.css", read)
        dragScriptURL = Self.bustedURL("livelist-drag.js", read)
    }

    private static func bustedURL(_ file: String, _ read: (String) -> [UInt8]?) -> String {
        guard let bytes = read(file) else {
            return "/" + file
        }
        return "/\(file)?v=\(contentHash(bytes))"
    }

    /// The routes: the app's own, then the server's (docs/PROTOCOL.md).
    package var router: Router {
        var router = Router(errorFormatter: liveListErrorFormatter)
        // The app's routes first: the app may take `/` (no other path of the server's own: `route`).
        for route in appRoutes.all {
            router.add(route.method, route.pattern, route.handler)
        }
        if gate.hasReadToken {
            addTokenSignIn(to: &router)
        }
        router.on(.GET, "/") { [self] request in await index(request) }
        if registry.isStoreShared {
            router.on(.GET, "/healthz") { [self] _ in storeHealthz() }
            router.on(.GET, "/readyz") { [self] _ in readyz() }
        } else {
            router.on(.GET, "/healthz") { _ in Self.healthz() }
            router.on(.GET, "/readyz") { _ in Self.healthz() }
        }
        router.on(.GET, "/metrics") { [self] request in await serveMetrics(request) }
        router.on(.GET, "/events") { [self] request in await multiplexedEvents(request) }
        router.add(.POST, "/events/:token", HTTPHandler.async { [self] request in await changeStream(request) }.checkingHeads { head in
            head.contentMediaType == "application/json" ? nil : errorResponse(.unsupportedMediaType, "Content-Type: send application/json")
        }.acceptingBodies(upTo: StreamChange.maximumBodyBytes))
        // A page cached at its list's current version is answered on the event loop; any other
        // request for the page goes to a task.
        router.add(.GET, "/lists/:name", HTTPHandler.dispatch { [self] request in
            if let answer = cachedPage(request) {
                return .sync { _ in answer }
            }
            return .async { [self] request in await page(request) }
        })
        // Writes are decided on their head, before any body is read: who may write, which list, which
        // media type (the same rules the routes apply again to the whole request).
        router.add(.PUT, "/lists/:name", HTTPHandler.async { [self] request in await put(request) }.checkingHeads { [self] head in
            refusePut(head)
        }.acceptingBodies(upTo: configuration.maximumBodyBytes))
        router.add(.PATCH, "/lists/:name", HTTPHandler.async { [self] request in await patch(request) }.checkingHeads { [self] head in
            refusePut(head)
        }.acceptingBodies(upTo: configuration.maximumBodyBytes))
        router.add(.DELETE, "/lists/:name", HTTPHandler.async { [self] request in await delete(request) }.checkingHeads { [self] head in
            refuseWrite(head)
        })
        router.on(.GET, "/lists/:name/events") { [self] request in await events(request) }
        router.on(.GET, "/lists/:name/changes") { [self] request in await changes(request) }
        router.on(.GET, "/lists/:name/cells") { [self] request in await cells(request) }
        router.add(.POST, "/lists/:name/actions", HTTPHandler.async { [self] request in await action(request) }.checkingHeads { [self] head in
            let type = head.contentMediaType
            guard type == "application/json" || type == "application/x-www-form-urlencoded" else {
                return errorResponse(.unsupportedMediaType, "Content-Type: send application/json or a form")
            }
            // A session the server minted always, and for JSON the token header: a form carries its token
            // in the body.
            let session = head.cookie(keys.sessionCookieName).flatMap { keys.sessionID(fromCookie: $0) }
            let headerToken = head.headers["X-CSRF-Token"]
            let tokenOK = type != "application/json" || (session.flatMap { id in headerToken.map { keys.verify(token: $0, sessionID: id) } } ?? false)
            guard session != nil, tokenOK else {
                return errorResponse(.csrfFailed, "the CSRF token is missing, stale or forged; reload the page")
            }
            return nil
        }.acceptingBodies(upTo: configuration.maximumActionBodyBytes))
        router.fallback = staticFiles
        return router
    }

    /// The HTTP handler of every route (also usable without sockets, in tests).
    public var handler: HTTPHandler {
        let routes = router.handler
        let metrics = self.metrics
        let warningLog = configuration.warningLog ?? configuration.errorLog
        let trustedProxies = self.trustedProxies
        let routesHeadCheck = routes.headCheck
        let logsAccess = self.logsAccess
        // Synchronous routes (static files, /healthz) stay on the event loop: no task per request.
        let counted = routes.mapResponses { [self] request, routed in
            let response = ErrorPages.negotiated(routed, for: request)
            if request.headers["X-Forwarded-For"] != nil || request.headers["Forwarded"] != nil, !trustedProxies.contains(request.remoteAddress),
                let line = trustedProxies.noteUntrustedForwarding(from: request.remoteAddress)
            {
                warningLog?(line)
            }
            metrics.count(request, status: response.status.code)
            if logsAccess {
                logAccess(Self.accessEntry(request, response, trustedProxies: trustedProxies))
            }
            return response
        }.checkingHeads { [self] head in
            guard let response = (Self.refuseContentEncoding(head) ?? routesHeadCheck?(head)).map({ ErrorPages.negotiated($0, for: head) }) else {
                return nil
            }
            metrics.count(head, status: response.status.code)
            if logsAccess {
                logAccess(Self.accessEntry(head, response, trustedProxies: trustedProxies))
            }
            return response
        }
        return counted.compressed()
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
        http.errorPresenter = { response, headers in ErrorPages.negotiated(response, headers: headers) }
        http.limits.body = max(configuration.maximumBodyBytes, configuration.maximumActionBodyBytes)
        http.requestBodyBudget = configuration.bodyBudgetBytes
        http.maxConnections = configuration.maximumConnections
        http.reservedConnections = configuration.reservedConnections
        http.notice = configuration.warningLog ?? configuration.errorLog
        if logsAccess {
            http.streamEnded = { [self] ended in logAccess(Self.accessEntry(ended)) }
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
    /// `announcing: false` leaves the line out, for a caller that logs its own.
    public func run(announcing: Bool = true, onStart: @Sendable (Int) -> Void = { _ in }) async throws {
        let server = HTTPServer(configuration: httpConfiguration, handler: handler)
        serverBox.set(server)
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
        // Other nodes' writes on a shared store reach this node's lists and streams.
        let registry = self.registry
        let errorLog = configuration.errorLog
        let follower = Task { await registry.followStore { line in errorLog?(line) } }
        let rechecks = Task { [self] in await recheckPeriodically() }
        let revocations = Task { [self] in await followRevocations() }
        if announcing {
            let scheme = configuration.tlsCertificate == nil ? "http" : "https"
            FileHandle.standardError.write(Data("LiveList serving on \(scheme)://\(configuration.host):\(server.port)\n".utf8))
        }
        onStart(server.port)
        await server.waitUntilStopped()
        follower.cancel()
        rechecks.cancel()
        revocations.cancel()
    }

    /// The event loop backend the running server chose (`epoll` or `poll`); nil before `run` started it.
    public var eventLoopBackend: EventLoopBackend? {
        serverBox.get()?.eventLoopBackend
    }

    /// Stops a running server (in-flight responses finish, streams end).
    public func stop() async {
        await serverBox.get()?.shutdown()
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

    /// The client's address: the peer's, or the last address of `X-Forwarded-For` when the peer is a
    /// trusted proxy (the address that proxy saw); nil when unknown.
    static func clientAddress(_ request: HTTPRequest, trustedProxies: TrustedProxies) -> String? {
        if trustedProxies.contains(request.remoteAddress), let forwarded = request.headers["X-Forwarded-For"],
            let last = forwarded.split(separator: ",").last?.trimmingSpaces, !last.isEmpty
        {
            return String(last)
        }
        return request.remoteAddress.isEmpty ? nil : request.remoteAddress
    }

    var httpStatistics: HTTPServerStatistics? {
        serverBox.get()?.statistics
    }
}

/// Holds the running HTTP server for `/metrics` and `stop()`.
final class ServerBox: Sendable {
    private let server = Mutex<HTTPServer?>(nil)

    func set(_ server: HTTPServer) { self.server.withLock { $0 = server } }
    func get() -> HTTPServer? { server.withLock { $0 } }
}
