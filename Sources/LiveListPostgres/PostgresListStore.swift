public import LiveListEngine
public import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization
import Dispatch
import Foundation

/// A ``ListStore`` on PostgreSQL that several `livelist` processes (nodes) share: every node serves
/// every list. See docs/DEPLOYMENT.md ("Several nodes on one PostgreSQL") for its schema and its
/// operation.
///
/// - A write's version is checked and taken in a transaction that locks the list's row: a write whose
///   version does not follow the stored one is refused as stale, and the engine catches up and writes
///   again, so racing writes on different nodes never share a version. Creations also lock a
///   row of `livelist_meta` (`creation_lock`) to count the lists against the limit.
/// - A patch (`PATCH`, or a PUT that changes only contents) keeps only itself: `livelist_lists` keeps the
///   body of the list's `base_version`, and the patches after it stay in `livelist_history` until the
///   list is compacted (once they hold more bytes than that body, the node that wrote the last one
///   writes the whole body as the new base).
/// - Each write keeps its content in `livelist_history` (the last ``Options/keptVersions`` versions of
///   each list, bodies up to ``Options/largestKeptContent``) and sends `NOTIFY livelist, 'NAME VERSION'`
///   on commit. Every node listens, fetches the versions it lacks, and renders and publishes them as the
///   writing node did, under the same versions.
/// - The engine's store calls are synchronous (a list's ordered path runs on a queue of its own): each
///   runs as a task on this store's own executor, off the cooperative pool, and is waited for at most
///   ``Options/operationTimeout``. While the database is unreachable, calls fail at once as
///   ``StoreError/Kind/unavailable`` (503 with `Retry-After`), and the listener reconnects with backoff.
public final class PostgresListStore: SharedListStore, Sendable {
    /// Settings of the store.
    public struct Options: Sendable {
        /// The most JSON-driven lists over all nodes (`--max-lists`). Default 1,000.
        public var maximumJSONLists = 1_000
        /// The versions of each list kept for other nodes to render (as many as the change log keeps).
        /// Default 256.
        public var keptVersions = 256
        /// The largest body or state kept per version; a node behind a larger one renders one diff
        /// over the versions it missed. Default 1 MiB.
        public var largestKeptContent = 1 << 20
        /// The longest a store call waits for the database before it answers unavailable. Default 5 s.
        public var operationTimeout: Duration = .seconds(5)
        /// The most pooled connections to the database (`--database-pool`); the leases use them too,
        /// and the listener has one more of its own. Default 16.
        public var maximumConnections = 16
        /// How often a running node reads the schema's version, to stop serving once a newer release
        /// migrated it. Default 30 s.
        public var schemaCheckInterval: Duration = .seconds(30)
        /// How often a node deletes revocations past their hour and ended sign-ins whose cookies
        /// expired: never on a write, so that what a flood of revocations costs stays bounded.
        /// Default 60 s.
        public var housekeepingInterval: Duration = .seconds(60)
        /// The most rows one statement of that housekeeping deletes. Default 10,000.
        public var housekeepingBatch = 10_000

        public init() {}

        /// The sizes `--database-pool` accepts.
        public static let poolSizes = 2 ... 1_000

        /// Reads a pool size given as `text` by `name` (the flag and its variable, for the refusal).
        ///
        /// - Throws: ``StoreError`` naming `name` when `text` is not a whole number within ``poolSizes``.
        public static func poolSize(_ text: String, name: String) throws(StoreError) -> Int {
            guard let size = Int(text.trimmingCharacters(in: .whitespaces)), poolSizes.contains(size) else {
                throw StoreError("\(name): \(text) is not a number of connections from \(poolSizes.lowerBound) to \(poolSizes.upperBound)")
            }
            return size
        }
    }

    /// The schema version this release creates and understands.
    public static let schemaVersion = 5
    /// The NOTIFY channel.
    static let channel = "livelist"

    let options: Options
    let url: DatabaseURL
    let logger: Logger
    /// The pool on the server this node uses now (see PostgresListStore+Servers.swift).
    let pool: Mutex<ServerPool>
    let executor = StoreExecutor()
    /// How busy the pool is (``PoolGauge``).
    let gauge: PoolGauge
    let state = Mutex(SharedState())
    let noticeBox: NoticeQueue
    /// The streams of ``tableChanges()``.
    let tableChangeFeed = TableChangeFeed()
    let tasks = Mutex<[Task<Void, Never>]>([])
    /// The TLS of the connections this store opens itself (the listener, migrations) and of its pools.
    let connectionTLS: PostgresConnection.Configuration.TLS
    let clientTLS: TLSConfiguration?
    /// This process among the store's: its own revocations are not read back.
    let origin = UUID().uuidString

    struct SharedState {
        var reachable = true
        var unreachableSince: ContinuousClock.Instant?
        var leases: [String: Bool] = [:]
        /// Whether the listener listens now, and whether it heard this process's start-up probe.
        var listening = false
        var heardProbe = false
        /// A schema newer than this release's, found while running.
        var newerSchema: Int?
        var droppedNotices = 0
        var lastDropReport: ContinuousClock.Instant?
        /// Notifications on the channel of the app's tables that the triggers did not send.
        var droppedRowNotices = 0
        var lastRowDropReport: ContinuousClock.Instant?
        /// The listener's connection while it has one: closed to have it choose a server again.
        var listener: PostgresConnection?
        /// Whether the listener's connection was closed on purpose, to choose a server again.
        var choosingAgain = false
        var closed = false
    }

    /// The pool's client on the server this node uses now.
    var client: PostgresClient {
        pool.withLock { $0.client }
    }

    /// Connects to the database at `url`, creates or migrates the schema when it is not current (once,
    /// under a lock of the schema table, whichever node comes first; a role that may not change the
    /// schema is told to run `livelist migrate` first), and starts listening for other nodes' writes.
    ///
    /// - Throws: ``StoreError`` when the database cannot be reached, its schema is newer than this
    ///   release understands, or it needs a migration that this role may not make.
    public static func connect(
        url: DatabaseURL, options: Options = Options(), logger: Logger = Logger(label: "livelist.postgres")
    ) async throws(StoreError) -> PostgresListStore {
        let tls = try Self.tlsConfiguration(for: url)
        let connectionTLS: PostgresConnection.Configuration.TLS = tls.map { .require($0.context) } ?? .disable
        let chosen: (server: DatabaseURL.Server, connection: PostgresConnection)
        do {
            chosen = try await Self.choose(url, tls: connectionTLS, id: 0, logger: logger)
        } catch {
            throw StoreError("cannot connect to the database \(url): \(error)")
        }
        let store = PostgresListStore(url: url, tls: tls, server: chosen.server, options: options, logger: logger)
        store.start()
        do {
            defer { Task { try? await chosen.connection.close() } }
            try await store.migrate(on: chosen.connection)
            try await store.checkNotificationsArrive()
        } catch {
            store.close()
            throw StoreError("cannot prepare the database \(url): \(Self.failure(error, at: chosen.server, url))")
        }
        return store
    }

    init(url: DatabaseURL, tls: (configuration: TLSConfiguration, context: NIOSSLContext)?, server: DatabaseURL.Server, options: Options, logger: Logger) {
        self.url = url
        self.options = options
        self.logger = logger
        connectionTLS = tls.map { .require($0.context) } ?? .disable
        clientTLS = tls?.configuration
        pool = Mutex(ServerPool(server: server, client: PostgresClient(
            configuration: Self.clientConfiguration(for: server, url, tls: tls?.configuration, options: options), backgroundLogger: logger)))
        noticeBox = NoticeQueue()
        gauge = PoolGauge(capacity: max(2, options.maximumConnections))
    }

    /// Starts the pool, the listener, the schema watcher and the housekeeping, on this store's executor.
    func start() {
        let task = runPool()
        let listener = Task(executorPreference: executor) { [self] in await listen() }
        let schema = Task(executorPreference: executor) { [self] in await watchSchema() }
        let housekeeping = Task(executorPreference: executor) { [self] in await keepHouse() }
        tasks.withLock { $0 += [task, listener, schema, housekeeping] }
    }

    /// Reads the schema's version every ``Options/schemaCheckInterval``: once a newer release has migrated the
    /// database past what this one understands, this node refuses every store call (its writes would
    /// use functions and tables that changed) and says why in `/healthz` and its log, so that nodes of
    /// different schema versions never run side by side.
    func watchSchema() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: options.schemaCheckInterval)
            let logger = self.logger
            guard let found = try? await withConnection({ connection in try await Self.storedSchemaVersion(connection, logger: logger) })
            else { continue }
            if found > Self.schemaVersion, state.withLock({ state in
                defer { state.newerSchema = found }
                return state.newerSchema == nil
            }) {
                logger.critical("""
                    the database \(url) was migrated to LiveList schema \(found) by a newer release; this node understands \
                    \(Self.schemaVersion) and refuses to read or write it: replace it with the newer release
                    """)
            }
        }
    }

    /// Stops the pool, the listener, the schema watcher, the housekeeping and the leases (each lease task gives its lease
    /// back as it ends, when the database still answers; else the lease expires), and ends the streams of
    /// ``tableChanges()``.
    public func close() {
        state.withLock { $0.closed = true }
        for task in tasks.withLock({ tasks in defer { tasks.removeAll() }; return tasks }) {
            task.cancel()
        }
        pool.withLock { $0.task }?.cancel()
        noticeBox.finish()
        tableChangeFeed.finish()
    }

    deinit {
        close()
    }
}
