import LiveListEngine
import LiveListHTTP

/// The route families, each a type holding only what its routes use, made from the server's services.
struct RouteFamilies: Sendable {
    let pages: PageRoutes
    let reads: ListReadRoutes
    let writes: WriteRoutes
    let streams: StreamRoutes
    let streamChanges: StreamChangeRoutes
    let actions: ActionRoutes
    let health: HealthRoutes
    let tokenSignIn: TokenSignInRoutes
    let appOwn: AppOwnRoutes
    let services: ServerServices

    init(_ services: ServerServices) {
        let s = services
        self.services = s
        pages = PageRoutes(registry: s.registry, gate: s.gate, listAccess: s.listAccess, keys: s.keys, cookies: s.cookies, pageCache: s.pageCache, assets: s.assets,
                           appPages: s.pages)
        reads = ListReadRoutes(listAccess: s.listAccess, keys: s.keys)
        writes = WriteRoutes(registry: s.registry, listAccess: s.listAccess, pageCache: s.pageCache, server: s.server, configuration: s.configuration, log: s.log)
        streams = StreamRoutes(registry: s.registry, gate: s.gate, listAccess: s.listAccess, streamAccess: s.streamAccess, keys: s.keys, metrics: s.metrics,
                               configuration: s.configuration)
        streamChanges = StreamChangeRoutes(registry: s.registry, gate: s.gate, listAccess: s.listAccess, streamAccess: s.streamAccess, openStreams: s.openStreams,
                                           keys: s.keys, metrics: s.metrics, configuration: s.configuration)
        actions = ActionRoutes(listAccess: s.listAccess, keys: s.keys, sessions: s.sessions, pacing: s.pacing, actionKeys: s.actionKeys, metrics: s.metrics, log: s.log)
        health = HealthRoutes(registry: s.registry, metrics: s.metrics, server: s.server, configuration: s.configuration, sessions: s.sessions, pacing: s.pacing,
                              actionKeys: s.actionKeys, pageCache: s.pageCache, signIns: s.signIns, trustedProxies: s.trustedProxies,
                              liveQueries: s.liveQueries)
        tokenSignIn = TokenSignInRoutes(configuration: s.configuration, gate: s.gate, keys: s.keys, cookies: s.cookies, signIns: s.signIns, pacing: s.pacing,
                                        metrics: s.metrics, assets: s.assets, streamAccess: s.streamAccess, log: s.log)
        appOwn = AppOwnRoutes(configuration: s.configuration, gate: s.gate, keys: s.keys, cookies: s.cookies, pacing: s.pacing, trustedProxies: s.trustedProxies,
                              pages: s.pages, log: s.log)
    }
}

/// The server's own routes (docs/PROTOCOL.md): the one table that the router is made from, and with
/// it the paths an app's own route may not take and the words that refuse one. Adding a route is a
/// row here and a method in its family.
enum RouteTable {
    struct Row: Sendable {
        let method: HTTPMethod
        let pattern: String
        /// Served only when the server has a read token (its sign-in pages).
        var withReadTokenOnly = false
        let handler: @Sendable (RouteFamilies) -> HTTPHandler

        init(_ method: HTTPMethod, _ pattern: String, withReadTokenOnly: Bool = false, _ handler: @escaping @Sendable (RouteFamilies) -> HTTPHandler) {
            self.method = method
            self.pattern = pattern
            self.withReadTokenOnly = withReadTokenOnly
            self.handler = handler
        }
    }

    static let rows: [Row] = [
        Row(.GET, "/") { f in .async { await f.pages.index($0) } },
        // A page cached at its list's current version is answered on the event loop; any other request
        // for the page goes to a task.
        Row(.GET, "/lists/:name") { f in
            .dispatch { request in
                if let answer = f.pages.cachedPage(request) { return .sync { _ in answer } }
                return .async { await f.pages.page($0) }
            }
        },
        // Writes are decided on their head, before any body is read: who may write, which list, which
        // media type (the same rules the routes apply again to the whole request).
        Row(.PUT, "/lists/:name") { f in
            HTTPHandler.async { await f.writes.put($0) }.checkingHeads { f.writes.refusePut($0) }.acceptingBodies(upTo: f.writes.configuration.maximumBodyBytes)
        },
        Row(.PATCH, "/lists/:name") { f in
            HTTPHandler.async { await f.writes.patch($0) }.checkingHeads { f.writes.refusePut($0) }.acceptingBodies(upTo: f.writes.configuration.maximumBodyBytes)
        },
        Row(.DELETE, "/lists/:name") { f in HTTPHandler.async { await f.writes.delete($0) }.checkingHeads { f.writes.refuseWrite($0) } },
        Row(.GET, "/lists/:name/events") { f in .async { await f.streams.events($0) } },
        Row(.GET, "/lists/:name/changes") { f in .async { await f.reads.changes($0) } },
        Row(.GET, "/lists/:name/cells") { f in .async { await f.reads.cells($0) } },
        Row(.POST, "/lists/:name/actions") { f in
            HTTPHandler.async { await f.actions.action($0) }.checkingHeads { f.actions.refuseHead($0) }
                .acceptingBodies(upTo: f.services.configuration.maximumActionBodyBytes)
        },
        Row(.GET, "/events") { f in .async { await f.streams.multiplexedEvents($0) } },
        Row(.POST, "/events/:token") { f in
            HTTPHandler.async { await f.streamChanges.changeStream($0) }.checkingHeads { head in
                head.contentMediaType == "application/json" ? nil : errorResponse(.unsupportedMediaType, "Content-Type: send application/json")
            }.acceptingBodies(upTo: StreamChange.maximumBodyBytes)
        },
        Row(.GET, "/healthz") { f in .sync { _ in f.health.liveness() } },
        Row(.GET, "/readyz") { f in .sync { _ in f.health.readiness() } },
        Row(.GET, "/metrics") { f in .async { await f.health.serveMetrics($0) } },
        Row(.GET, AccessGate.tokenSignInPath, withReadTokenOnly: true) { f in .sync { f.tokenSignIn.tokenSignInPage($0, failed: false) } },
        Row(.POST, AccessGate.tokenSignInPath, withReadTokenOnly: true) { f in HTTPHandler.sync { f.tokenSignIn.tokenSignIn($0) }.acceptingBodies(upTo: 4_096) },
        Row(.POST, AccessGate.tokenSignOutPath, withReadTokenOnly: true) { f in
            HTTPHandler.async { await f.tokenSignIn.tokenSignOut($0) }.acceptingBodies(upTo: 4_096)
        },
    ]

    /// The first segments of the server's own paths: an app's route may take none of them (it may take
    /// `/`, whose index page it replaces).
    static let reservedSegments: [String] = {
        var seen: [String] = []
        for row in rows {
            guard let first = row.pattern.split(separator: "/").first.map(String.init), !seen.contains(first) else { continue }
            seen.append(first)
        }
        return seen
    }()

    /// Why an app's route with `pattern` is refused, or nil when it may be added.
    static func refusal(of pattern: String) -> String? {
        guard pattern.hasPrefix("/") else {
            return "the route \"\(pattern)\" must start with \"/\""
        }
        // A parameter or a rest first would match the server's own paths too.
        guard let first = pattern.split(separator: "/").first else { return nil }
        guard !reservedSegments.contains(String(first)), !first.hasPrefix(":"), !first.hasPrefix("*") else {
            let paths = reservedSegments.map { "/" + $0 }.joined(separator: ", ")
            return "the route \"\(pattern)\" could answer the server's own paths (\(paths)): start it with a literal segment of its own"
        }
        return nil
    }

    /// The router: the app's routes first (an app may take `/`), then the table, then the static files.
    static func router(_ families: RouteFamilies) -> Router {
        var router = Router(errorFormatter: liveListErrorFormatter)
        for route in families.services.appRoutes.all {
            router.add(route.method, route.pattern, route.handler)
        }
        let hasReadToken = families.services.gate.hasReadToken
        for row in rows where hasReadToken || !row.withReadTokenOnly {
            router.add(row.method, row.pattern, row.handler(families))
        }
        router.fallback = families.services.assets.staticFiles
        return router
    }
}
