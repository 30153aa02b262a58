public import LiveListEngine
/// Everything the LiveList server can be told (the executable maps flags and environment onto it).
public struct ServerConfiguration: Sendable {
    /// The address to listen on. Default 127.0.0.1 (never reachable from the network by default).
    public var host = "127.0.0.1"
    /// The port. Default 8080; 0 picks a free one.
    public var port = 8080
    /// A directory of static files served at the root (`/livelist.js`) instead of the built-in ones.
    /// Default nil: the files of the repository's `Public/`, compiled into the server, so that an app
    /// serves its pages from any working directory.
    public var publicDirectory: String?
    /// A directory of Mustache page templates (`page.mustache`, `index.mustache`) used instead of the
    /// built-in ones. Default nil: the repository's `Templates/`, compiled into the server.
    public var templatesDirectory: String?
    /// Where lists are stored. Default `data`.
    public var dataDirectory = "data"
    /// When set, writes need `Authorization: Bearer TOKEN`; when nil, only loopback clients that came
    /// through no proxy may write.
    public var writeToken: String?
    /// When set, reading a JSON-driven list (its page, snapshot, changes and streams) needs
    /// `Authorization: Bearer TOKEN`, or the cookie that the token sign-in page (`/signin`) sets for a
    /// browser; the app's own lists keep their rules.
    public var readToken: String?
    /// How often every open event stream's access is checked again (the app's `authenticate` and the
    /// lists' rules, or the read token). Default 60 s; a revocation re-checks at once.
    public var accessRecheckInterval: Duration = .seconds(60)
    /// With several nodes on one database, how often this node reads the revocations that the others
    /// recorded there (``LiveListApp/revoke(identity:)`` and its kin). Default 0.5 s: a revocation on
    /// one node closes the streams it refuses on the others within about a second.
    public var revocationPollInterval: Duration = .milliseconds(500)
    /// The secrets that sign sessions, CSRF tokens and signed cookies, instead of the one the store
    /// keeps (the data directory's, or PostgreSQL's `livelist_meta`), for those who want it out of the
    /// store: the first signs, and the others (those that signed before a rotation) still verify what
    /// they signed. Each at least 32 bytes. `LIVELIST_SESSION_SECRETS_FILE` sets it (one per line),
    /// or `LIVELIST_SESSION_SECRETS` (comma-separated). Nil: the store's.
    public var sessionSecrets: [[UInt8]]?
    /// When set, `/metrics` needs `Authorization: Bearer TOKEN`; when nil, only loopback clients that
    /// came through no proxy may read it.
    public var metricsToken: String?
    /// The interval of heartbeat comments on event streams. Default 15 s.
    public var heartbeat: Duration = .seconds(15)
    /// The `retry:` advice to EventSource, in milliseconds. Default 2,000.
    public var retryMilliseconds = 2_000
    /// The largest PUT body. Default 8 MiB.
    public var maximumBodyBytes = 8 << 20
    /// The largest body of an action (`POST /lists/NAME/actions`): a form or a small JSON object.
    /// Default 64 KiB; a larger one is answered 413 from its head, its body never read.
    public var maximumActionBodyBytes = 64 << 10
    /// How fast a session, and a client address (the one a trusted proxy names), may send actions;
    /// past it 429 with `Retry-After`. Visibility reports (`visible`, `hidden`) do not count. Nil
    /// sends actions at any pace. Default ``ActionPace/standard``, 10 a second after 40 at once.
    public var actionPace: ActionPace? = .standard
    /// The most bytes of request bodies held at once over all connections; past it a request with a
    /// body is answered 503 with `Retry-After`. Default 64 MiB.
    public var bodyBudgetBytes = 64 << 20
    /// The most connections at once (idle event streams included); the server also keeps it below the
    /// process's file limit, leaving descriptors for files and the store, and answers 503 when full.
    /// Default 20,000.
    public var maximumConnections = 20_000
    /// Event loops (threads) that serve connections, within ``eventLoopRange``; nil (the default) runs
    /// one per processor.
    public var eventLoops: Int?
    /// The numbers of event loops that `--event-loops` and `LIVELIST_EVENT_LOOPS` accept.
    package static let eventLoopRange = 1 ... 1_024
    /// The most lists one multiplexed stream may carry, at connect and after lists join it
    /// (`POST /events/TOKEN`). Default 64: one stream serves every tab of a browser, and each event's
    /// id names every list of its stream.
    public var maximumListsPerStream = 64
    /// The most sessions held. Default 100,000.
    public var sessionCapacity = 100_000
    /// Sessions without a stream expire after this. Default 30 minutes.
    public var sessionIdleTimeout: Duration = .seconds(1_800)
    /// Whether the server is reached over TLS (session cookies are then `Secure`).
    public var isSecure = false
    /// PEM certificate chain for TLS; with `tlsKey`, the server speaks HTTPS itself (and cookies are `Secure`).
    public var tlsCertificate: String?
    /// PEM private key matching `tlsCertificate`.
    public var tlsKey: String?
    /// Where one line per request goes (`access log`), or nil for none. The line names the client:
    /// the peer's address, or the last address of `X-Forwarded-For` when the peer is a trusted proxy.
    public var accessLog: (@Sendable (String) -> Void)?
    /// Where the access log goes as fields (``AccessLogEntry``: each answered request, and each event
    /// stream that ended with its duration and bytes), for a log in JSON or logfmt; nil for nowhere.
    /// `accessLog` gets the same entries as lines.
    public var accessLogEntries: (@Sendable (AccessLogEntry) -> Void)?
    /// Where the server's warnings go: connections and streams refused at the limit (each kind once a
    /// minute at most), forwarding headers from a peer that is not a trusted proxy (once an hour);
    /// nil sends them to `errorLog`.
    public var warningLog: (@Sendable (String) -> Void)?
    /// Connections accepted beyond ``maximumConnections`` that serve requests but never hold an event
    /// stream, so that probes, writes and `/metrics` are answered when the node holds its most streams
    /// (at most half of the descriptors kept free of connections). Default 64.
    public var reservedConnections = 64
    /// Where the causes of the server's own failures go (a storage error, with its file), or nil for
    /// nowhere. Answers never carry them: they can name the server's paths.
    public var errorLog: (@Sendable (String) -> Void)?
    /// Peers whose `X-Forwarded-For` is believed (a reverse proxy's address, such as 127.0.0.1 for nginx
    /// on the same host). A header from anyone else is logged as what it is: a claim.
    public var trustedProxies: Set<String> = []
    /// The kernel's send buffer of a connection once it holds an event stream (`SO_SNDBUF`), in bytes;
    /// 0 keeps the kernel's own, which grows to megabytes per socket. What a slow reader leaves unsent
    /// then waits in the server, where ``streamOutputBudgetBytes`` counts it. Default 64 KiB.
    public var streamSendBufferBytes = 64 << 10
    /// The most bytes queued for event streams over all connections: past it, streams are written to
    /// as they drain, and a stream that falls behind gets one changeset that covers what it missed.
    /// Default 256 MiB.
    public var streamOutputBudgetBytes = 256 << 20
    /// Settings of every hosted list (``ListConfiguration/fanOutSlice`` among them).
    public var lists = ListConfiguration()
    /// Limits on JSON-driven lists.
    public var limits = RegistryLimits()

    public init() {}
}
