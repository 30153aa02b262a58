import Foundation
import LiveListEngine
import LiveListHTTP
import Synchronization

/// What the route families share, made once when the app starts: each family (``RouteTable``) keeps
/// only the services it uses. One owner each: the gate decides access, the open streams are kept by
/// ``OpenStreams``, sessions' tokens by ``SessionKeys``, and so on.
final class ServerServices: Sendable {
    let configuration: ServerConfiguration
    let registry: ListRegistry
    let keys: SessionKeys
    let sessions: SessionTable
    let cookies: SessionCookies
    let assets: Assets
    let metrics = Metrics()
    let pacing: Pacing
    /// Recent actions' idempotency keys.
    let actionKeys = ActionKeys()
    let pageCache: PageCache
    /// Decides who may view and act on each list: the one place (``AccessGate``).
    let gate: AccessGate
    /// The event streams open on this node, for revocation and re-checks.
    let openStreams: OpenStreams
    /// Routes of the app's own (``LiveListApp/route(_:_:csrf:paced:maximumBodyBytes:_:)``).
    let appRoutes = AppRoutes()
    /// The peers whose `X-Forwarded-For` names the client.
    let trustedProxies: TrustedProxies
    /// Sign-in cookies, ended sign-ins, the pace of wrong attempts.
    let signIns: SignIns
    /// The running HTTP server, for `/metrics`, the loopback rule's port and `stop()`.
    let server = ServerBox()
    let listAccess: ListAccess
    let streamAccess: StreamAccess
    /// The app's layout and list titles (``LiveListApp/layout(_:)``).
    let pages: AppPages
    let log: ServerLog
    /// The app's live queries, over the store's database when it has one (``LiveListApp/liveQuery(_:title:sql:parameters:watching:limit:configuration:render:)``).
    let liveQueries: LiveQueries

    init(configuration: ServerConfiguration, registry: ListRegistry, store: any ListStore) async throws {
        self.configuration = configuration
        self.registry = registry
        liveQueries = LiveQueries(database: store as? any LiveQueryDatabase)
        pageCache = PageCache { [registry] name in registry.existingList(name) != nil }
        // The operator's secrets when given (the first signs), else the one the store keeps.
        if let secrets = configuration.sessionSecrets, let first = secrets.first {
            keys = SessionKeys(secret: first, previous: Array(secrets.dropFirst()), secure: configuration.isSecure)
        } else {
            keys = SessionKeys(secret: try store.secret(), secure: configuration.isSecure)
        }
        cookies = SessionCookies(keys: keys, secure: configuration.isSecure)
        trustedProxies = try TrustedProxies(configuration.trustedProxies)
        log = ServerLog(configuration: configuration, trustedProxies: trustedProxies)
        signIns = SignIns(keys: keys, store: store)
        let now = SignIns.now()
        signIns.ended.add(try store.endedSignIns(now: now), now: now)
        let readerSubject = configuration.readToken.map { [keys] token in SignIns.readerSubject(token: token, keys: keys) }
        gate = AccessGate(readToken: configuration.readToken, secret: keys.secret, trustedProxies: trustedProxies) { [signIns] cookie in
            readerSubject != nil && signIns.valid(cookie, purpose: SignIns.readerPurpose)?.subject == readerSubject
        }
        sessions = SessionTable(capacity: configuration.sessionCapacity, idleTimeout: configuration.sessionIdleTimeout)
        openStreams = OpenStreams(metrics: metrics, sessions: sessions, registry: registry)
        pacing = Pacing(pace: configuration.actionPace, metrics: metrics, trustedProxies: trustedProxies)
        assets = try await Assets(configuration: configuration)
        listAccess = ListAccess(gate: gate, registry: registry, metrics: metrics, log: log)
        pages = AppPages(gate: gate, registry: registry, assets: assets, keys: keys)
        streamAccess = StreamAccess(
            gate: gate, openStreams: openStreams, registry: registry, keys: keys, metrics: metrics, signIns: signIns, configuration: configuration)
    }

    /// The port the server listens on (the configured one until it runs).
    var servingPort: Int {
        server.get()?.port ?? configuration.port
    }
}

/// The session cookie as this server sets it: its name and attributes, made once.
struct SessionCookies: Sendable {
    /// The `Set-Cookie` value of a new session around its cookie value: made once, joined per view.
    let prefix: String
    let attributes: String

    init(keys: SessionKeys, secure: Bool) {
        prefix = keys.sessionCookieName + "="
        attributes = "; Path=/; HttpOnly; SameSite=Lax" + (secure ? "; Secure" : "")
    }

    /// The `Set-Cookie` value of the session cookie `value`.
    func setCookie(_ value: String) -> String {
        prefix + value + attributes
    }
}

/// The static files and the cache-busted URLs of the client's files.
struct Assets: Sendable {
    /// `Public/`: the directory configured, or the built-in files.
    let staticFiles: HTTPHandler
    let templates: Templates
    /// `/livelist.js?v=HASH` and `/livelist.css?v=HASH`: cache-busted, served as immutable.
    let scriptURL: String
    let stylesheetURL: String
    /// `/site.css?v=HASH`: the look of the page around the lists.
    let siteStylesheetURL: String
    /// `/livelist-drag.js?v=HASH`: drag to reorder, for cells with a `data-drag-action` handle.
    let dragScriptURL: String

    init(configuration: ServerConfiguration) async throws {
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
}

/// Holds the running HTTP server for `/metrics` and `stop()`.
final class ServerBox: Sendable {
    private let server = Mutex<HTTPServer?>(nil)

    func set(_ server: HTTPServer) { self.server.withLock { $0 = server } }
    func get() -> HTTPServer? { server.withLock { $0 } }
}
