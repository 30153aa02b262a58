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
public final class PostgresListStore: ListStore, Sendable {
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
        /// The most pooled connections to the database (besides the listener and the leases). Default 16.
        public var maximumConnections = 16
        /// How often a running node reads the schema's version, to stop serving once a newer release
        /// migrated it. Default 30 s.
        public var schemaCheckInterval: Duration = .seconds(30)

        public init() {}
    }

    /// The schema version this release creates and understands.
    public static let schemaVersion = 3
    /// The NOTIFY channel.
    static let channel = "livelist"

    let options: Options
    let url: DatabaseURL
    let logger: Logger
    private let client: PostgresClient
    private let executor = StoreExecutor()
    private let state = Mutex(SharedState())
    private let noticeBox: NoticeQueue
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// The TLS of the connections this store opens itself (the listener, the leases, migrations).
    private let connectionTLS: PostgresConnection.Configuration.TLS
    /// This process among the store's: its own revocations are not read back.
    private let origin = UUID().uuidString

    private struct SharedState {
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
        let store = PostgresListStore(url: url, tls: tls, options: options, logger: logger)
        store.start()
        do {
            try await store.migrate()
            try await store.checkNotificationsArrive()
        } catch {
            store.close()
            throw StoreError("cannot prepare the database \(url): \(Self.certificateFailure(error, url) ?? Self.describe(error))")
        }
        return store
    }

    private init(url: DatabaseURL, tls: (configuration: TLSConfiguration, context: NIOSSLContext)?, options: Options, logger: Logger) {
        self.url = url
        self.options = options
        self.logger = logger
        connectionTLS = tls.map { .require($0.context) } ?? .disable
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: tls.map { .require($0.configuration) } ?? .disable)
        configuration.options.maximumConnections = max(2, options.maximumConnections)
        configuration.options.connectTimeout = .seconds(3)
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        noticeBox = NoticeQueue()
    }

    /// Starts the client's pool and the listener, on this store's executor.
    private func start() {
        let client = self.client
        let pool = Task(executorPreference: executor) { await client.run() }
        let listener = Task(executorPreference: executor) { [self] in await listen() }
        let schema = Task(executorPreference: executor) { [self] in await watchSchema() }
        tasks.withLock { $0 += [pool, listener, schema] }
    }

    /// Reads the schema's version every ``Options/schemaCheckInterval``: once a newer release has migrated the
    /// database past what this one understands, this node refuses every store call (its writes would
    /// use functions and tables that changed) and says why in `/healthz` and its log, so that nodes of
    /// different schema versions never run side by side.
    private func watchSchema() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: options.schemaCheckInterval)
            let logger = self.logger
            guard let found = try? await client.withConnection({ connection in try await Self.storedSchemaVersion(connection, logger: logger) })
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

    /// Stops the pool, the listener, the schema watcher and the leases (each lease task gives its lease
    /// back as it ends, when the database still answers; else the lease expires).
    public func close() {
        for task in tasks.withLock({ tasks in defer { tasks.removeAll() }; return tasks }) {
            task.cancel()
        }
        noticeBox.finish()
    }

    deinit {
        close()
    }

    // MARK: - Schema

    /// On a connection of its own: the pool may not run yet. The schema's version is read first,
    /// without a lock: a current schema needs nothing more, so a node whose role may only read and
    /// write LiveList's rows starts. Otherwise the schema table is made (a node that races to make it
    /// too finds it made), then locked for the migration: a table lock, which only a role with rights
    /// on the table can take, so no other role can hold migrations back.
    private func migrate() async throws {
        let connection = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 0, logger: logger)
        defer { Task { try? await connection.close() } }
        let found = try await Self.storedSchemaVersion(connection, logger: logger)
        guard found != Self.schemaVersion else { return }
        try Self.ensureUnderstood(found)
        do {
            try await drained(connection.query("CREATE TABLE IF NOT EXISTS livelist_schema (version integer NOT NULL)", logger: logger))
        } catch let error as PSQLError where ["42P07", "42710", "23505"].contains(error.serverInfo?[.sqlState] ?? "") {
            // Another node made it at the same moment.
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42501" {
            throw StoreError("the database's LiveList schema is version \(found), and this release needs version \(Self.schemaVersion); "
                + "this node's role may not change the schema: run `livelist migrate` with the migration role's URL first (docs/DEPLOYMENT.md)")
        }
        try await connection.withTransaction(logger: logger) { connection in
            try await drained(connection.query("LOCK TABLE livelist_schema IN EXCLUSIVE MODE", logger: logger))
            let found = try await Self.storedSchemaVersion(connection, logger: logger)
            try Self.ensureUnderstood(found)
            if found < 1 {
                try await drained(connection.query("""
                    CREATE TABLE livelist_lists (
                        name text PRIMARY KEY,
                        version bigint NOT NULL,
                        kind text NOT NULL,
                        content bytea,
                        updated_at timestamptz NOT NULL DEFAULT now()
                    )
                    """, logger: logger))
                try await drained(connection.query("""
                    CREATE TABLE livelist_history (
                        name text NOT NULL,
                        version bigint NOT NULL,
                        kind text NOT NULL,
                        content bytea,
                        PRIMARY KEY (name, version)
                    )
                    """, logger: logger))
                try await drained(connection.query("CREATE TABLE livelist_meta (key text PRIMARY KEY, value bytea NOT NULL)", logger: logger))
                try await drained(connection.query("INSERT INTO livelist_schema (version) VALUES (1)", logger: logger))
            }
            if found < 2 {
                // Version 2: `livelist_write` takes its lock timeout and locks a row of `livelist_meta` for
                // creations (version 1's took an advisory lock, which any role can take too); revocations,
                // which every node reads (see `revocations(after:)`); leases in a table of their own.
                try await drained(connection.query(
                    "DROP FUNCTION IF EXISTS livelist_write(text, bigint, text, bytea, boolean, bigint, bigint)", logger: logger))
                try await drained(connection.query(
                    "INSERT INTO livelist_meta (key, value) VALUES ('creation_lock', ''::bytea) ON CONFLICT (key) DO NOTHING", logger: logger))
                try await drained(connection.query("""
                    CREATE TABLE livelist_revocations (
                        id bigserial PRIMARY KEY,
                        origin text NOT NULL,
                        kind text NOT NULL,
                        subject text NOT NULL,
                        recorded_at timestamptz NOT NULL DEFAULT now()
                    )
                    """, logger: logger))
                try await drained(connection.query(
                    "CREATE TABLE livelist_leases (name text PRIMARY KEY, holder text NOT NULL, expires_at timestamptz NOT NULL)", logger: logger))
                try await drained(connection.query("""
                    CREATE TABLE livelist_idempotency (
                        name text NOT NULL,
                        key text NOT NULL,
                        fingerprint bytea NOT NULL,
                        version bigint NOT NULL,
                        created boolean NOT NULL,
                        recorded_at timestamptz NOT NULL DEFAULT now(),
                        PRIMARY KEY (name, key)
                    )
                    """, logger: logger))
                try await drained(connection.query("INSERT INTO livelist_schema (version) VALUES (2)", logger: logger))
            }
            if found < 3 {
                // Version 3: patches. A list's content is the body at its `base_version`, followed by
                // the patches after it in `livelist_history`; `patch_bytes` counts their bytes, and
                // `livelist_write` (which now says when the list is due for compaction) keeps them until
                // `livelist_compact` writes a new base.
                try await drained(connection.query(
                    "ALTER TABLE livelist_lists ADD COLUMN base_version bigint NOT NULL DEFAULT 0, ADD COLUMN patch_bytes bigint NOT NULL DEFAULT 0", logger: logger))
                try await drained(connection.query("UPDATE livelist_lists SET base_version = version", logger: logger))
                try await drained(connection.query(
                    "DROP FUNCTION IF EXISTS livelist_write(text, bigint, text, bytea, boolean, bigint, bigint, text, text, bytea, boolean)", logger: logger))
                try await drained(connection.query(PostgresQuery(unsafeSQL: Self.writeFunction), logger: logger))
                try await drained(connection.query(PostgresQuery(unsafeSQL: Self.compactFunction), logger: logger))
                try await drained(connection.query("INSERT INTO livelist_schema (version) VALUES (3)", logger: logger))
            }
        }
    }

    /// The schema version the database holds: 0 when it holds no LiveList schema.
    private static func storedSchemaVersion(_ connection: PostgresConnection, logger: Logger) async throws -> Int {
        var exists = false
        for try await found in try await connection.query("SELECT to_regclass('livelist_schema') IS NOT NULL", logger: logger).decode(Bool.self) {
            exists = found
        }
        guard exists else { return 0 }
        var version = 0
        for try await found in try await connection.query("SELECT coalesce(max(version), 0) FROM livelist_schema", logger: logger).decode(Int.self) {
            version = found
        }
        return version
    }

    private static func ensureUnderstood(_ found: Int) throws(StoreError) {
        guard found <= schemaVersion else {
            throw StoreError("the database's LiveList schema is version \(found), newer than this release understands (\(schemaVersion)); run a newer livelist")
        }
    }

    /// Grants `role` what a node needs and nothing more: to read and write LiveList's rows, use the
    /// revocations' sequence and call `livelist_write`; never to change the schema. Run by the
    /// migration role, which owns the tables (`livelist migrate --grant-to ROLE`).
    ///
    /// - Throws: ``StoreError`` when `role` is not a plain role name, or the database refuses.
    public func grantRuntimeAccess(to role: String) throws(StoreError) {
        guard let first = role.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic),
            role.count <= 63, role.unicodeScalars.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0" ... "9").contains($0))) })
        else {
            throw StoreError("\(role) is not a plain role name (letters, digits and _, up to 63)")
        }
        let statements = Self.runtimeGrants(to: "\"\(role)\"")
        try blocking("granting \(role) a node's rights") { [client, logger] in
            for statement in statements {
                try await drained(client.query(PostgresQuery(unsafeSQL: statement), logger: logger))
            }
        }
    }

    /// The grants of a runtime role (quoted), as docs/DEPLOYMENT.md lists them.
    static func runtimeGrants(to role: String) -> [String] {
        [
            "GRANT USAGE ON SCHEMA public TO \(role)",
            "GRANT SELECT ON livelist_schema TO \(role)",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON livelist_lists, livelist_history, livelist_meta, livelist_revocations, livelist_leases, livelist_idempotency TO \(role)",
            "GRANT USAGE ON SEQUENCE livelist_revocations_id_seq TO \(role)",
            "GRANT EXECUTE ON FUNCTION livelist_write(text, bigint, text, bytea, boolean, bigint, bigint, text, text, bytea, boolean) TO \(role)",
            "GRANT EXECUTE ON FUNCTION livelist_compact(text, bigint, bytea, bigint) TO \(role)",
        ]
    }

    // MARK: - ListStore

    public var isShared: Bool { true }

    public func load() throws(StoreError) -> StoredLists {
        try blocking("loading the lists") { [client, logger] in
            var stored = StoredLists()
            var patched: [(name: String, base: StoredLists.JSONList, version: Int)] = []
            let rows = try await client.query("SELECT name, version, kind, content, base_version FROM livelist_lists", logger: logger)
            for try await (name, version, kind, content, base) in rows.decode((String, Int, String, ByteBuffer?, Int).self) {
                guard kind != Kind.none.rawValue else { continue }
                stored.highWater[name] = version
                switch Self.step(version: base, kind: kind, content: content).content {
                case let .json(body):
                    if base < version {
                        patched.append((name, .init(version: base, body: body), version))
                    } else {
                        stored.jsonLists[name] = .init(version: version, body: body)
                    }
                case let .state(bytes): stored.appStates[name] = .init(version: version, bytes: bytes)
                case .deleted, .reserved, .patch: break
                }
            }
            for list in patched {
                stored.jsonLists[list.name] = try await Self.patched(list.base, of: list.name, upTo: list.version, client: client, logger: logger)
            }
            return stored
        }
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        try blocking("reserving versions of \(name)") { [client, logger] in
            try await drained(client.query("""
                INSERT INTO livelist_lists (name, version, kind) VALUES (\(name), \(version), \(Kind.reserved.rawValue))
                ON CONFLICT (name) DO UPDATE SET version = greatest(livelist_lists.version, excluded.version)
                """, logger: logger))
        }
    }

    public func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        try write(name: name, version: version, kind: .json, content: body)
    }

    public func deleteJSONList(name: String, version: Int) throws(StoreError) {
        try write(name: name, version: version, kind: .deleted, content: nil)
    }

    public func saveJSONList(name: String, version: Int, body: [UInt8], idempotency: IdempotentWrite?) throws(StoreError) {
        try write(name: name, version: version, kind: .json, content: body, idempotency: idempotency)
    }

    public func deleteJSONList(name: String, version: Int, idempotency: IdempotentWrite?) throws(StoreError) {
        try write(name: name, version: version, kind: .deleted, content: nil, idempotency: idempotency)
    }

    /// How long idempotency keys are kept: a day.
    static let idempotencyRetention = "24 hours"

    public func idempotentWrite(of name: String, key: String) throws(StoreError) -> IdempotentWrite? {
        try blocking("looking up an idempotency key of \(name)") { [client, logger] in
            var found: IdempotentWrite?
            let rows = try await client.query("""
                SELECT fingerprint, version, created FROM livelist_idempotency
                WHERE name = \(name) AND key = \(key) AND recorded_at >= now() - interval '\(unescaped: Self.idempotencyRetention)'
                """, logger: logger)
            for try await (fingerprint, version, created) in rows.decode((ByteBuffer, Int, Bool).self) {
                found = IdempotentWrite(key: IdempotencyKey(key: key, fingerprint: Array(buffer: fingerprint)), version: version, created: created)
            }
            return found
        }
    }

    public func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        try write(name: name, version: version, kind: .state, content: bytes)
    }

    public func appState(name: String) throws(StoreError) -> StoredLists.AppState? {
        try blocking("reading the state of \(name)") { [client, logger] in
            let rows = try await client.query(
                "SELECT version, content FROM livelist_lists WHERE name = \(name) AND kind = \(Kind.state.rawValue)", logger: logger)
            var found: StoredLists.AppState?
            for try await (version, content) in rows.decode((Int, ByteBuffer?).self) {
                found = .init(version: version, bytes: Self.bytes(content))
            }
            return found
        }
    }

    public func secret() throws(StoreError) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let fresh = ByteBuffer(bytes: (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        return try blocking("reading the session secret") { [client, logger] in
            // The first node to ask stores its secret; every node then signs with that one.
            try await drained(client.query(
                "INSERT INTO livelist_meta (key, value) VALUES ('session_secret', \(fresh)) ON CONFLICT (key) DO NOTHING", logger: logger))
            var secret: [UInt8] = []
            for try await value in try await client.query("SELECT value FROM livelist_meta WHERE key = 'session_secret'", logger: logger)
                .decode(ByteBuffer.self)
            {
                secret = Array(buffer: value)
            }
            guard secret.count == 32 else {
                throw StoreError("the stored session secret does not hold 32 bytes; delete the row session_secret of livelist_meta to make a new one")
            }
            return secret
        }
    }

    public func update(of name: String, after version: Int) throws(StoreError) -> StoredUpdate? {
        try blocking("reading \(name)") { [client, logger] in
            // One statement, so one snapshot: the kept versions after `version`, each row with the list's
            // current version (one row of nulls when none is kept).
            var latestVersion = 0
            var steps: [StoredUpdate.Step] = []
            let rows = try await client.query("""
                SELECT l.version, h.version, h.kind, h.content FROM livelist_lists l
                LEFT JOIN livelist_history h ON h.name = l.name AND h.version > \(version)
                WHERE l.name = \(name) ORDER BY h.version
                """, logger: logger)
            for try await (current, stored, kind, content) in rows.decode((Int, Int?, String?, ByteBuffer?).self) {
                latestVersion = current
                if let stored, let kind {
                    steps.append(Self.step(version: stored, kind: kind, content: content))
                }
            }
            guard latestVersion > version else { return nil }
            // Every version in between, each with its content, or else only the latest.
            let complete = steps.count == latestVersion - version && steps.last?.version == latestVersion
                && zip(steps, steps.dropFirst()).allSatisfy { $0.version + 1 == $1.version }
                && !steps.contains { $0.content == .reserved }
            if complete { return StoredUpdate(steps: steps) }
            var latest: StoredUpdate.Step?
            for try await (stored, kind, content, base) in try await client.query(
                "SELECT version, kind, content, base_version FROM livelist_lists WHERE name = \(name)", logger: logger
            ).decode((Int, String, ByteBuffer?, Int).self) {
                latest = Self.step(version: base, kind: kind, content: content)
                if case let .json(body)? = latest?.content, base < stored {
                    let list = try await Self.patched(.init(version: base, body: body), of: name, upTo: stored, client: client, logger: logger)
                    latest = .init(version: list.version, content: .json(list.body))
                } else {
                    latest?.version = stored
                }
            }
            guard let latest, latest.version > version else { return nil }
            return StoredUpdate(steps: [latest])
        }
    }

    public func versions() throws(StoreError) -> [String: Int] {
        try blocking("reading the versions") { [client, logger] in
            var versions: [String: Int] = [:]
            let rows = try await client.query(
                "SELECT name, version FROM livelist_lists WHERE kind IN ('json', 'deleted', 'state')", logger: logger)
            for try await (name, version) in rows.decode((String, Int).self) {
                versions[name] = version
            }
            return versions
        }
    }

    public func versions(of names: [String]) throws(StoreError) -> [String: Int] {
        try blocking("reading the versions of \(names.count) lists") { [client, logger] in
            var versions: [String: Int] = [:]
            let rows = try await client.query(
                "SELECT name, version FROM livelist_lists WHERE name = ANY(\(names)) AND kind <> \(Kind.none.rawValue)", logger: logger)
            for try await (name, version) in rows.decode((String, Int).self) {
                versions[name] = version
            }
            return versions
        }
    }

    public func notices() -> AsyncStream<StoreNotice> {
        let box = noticeBox
        return AsyncStream { await box.next() }
    }

    public var health: StoreHealth {
        let (reachable, since, newer) = state.withLock { ($0.reachable, $0.unreachableSince, $0.newerSchema) }
        if let newer {
            return StoreHealth(isReachable: false, description: "database: schema \(newer), newer than this release's \(Self.schemaVersion)")
        }
        if reachable {
            return StoreHealth(isReachable: true, description: "database: ok")
        }
        let seconds = since.map { Int((ContinuousClock.now - $0).components.seconds) } ?? 0
        return StoreHealth(isReachable: false, description: "database: unreachable for \(seconds) s")
    }

    // MARK: - Writes

    /// What a row holds.
    enum Kind: String {
        /// The placeholder row `livelist_write` makes for a new name before it locks it; a refused
        /// write rolls it back with everything else, so no committed row should hold it.
        case none
        case json
        /// A patch of a JSON list (in `livelist_history` only: the list's row stays `json`).
        case patch
        case deleted
        case state
        /// Versions reserved by a list that each node renders on its own.
        case reserved
    }

    /// The list whose base is `base`, with its patches up to `version` applied (they follow the base in
    /// `livelist_history`; compaction removes none of them before it writes a base past them, and
    /// later patches are left for the notices).
    private static func patched(_ base: StoredLists.JSONList, of name: String, upTo version: Int, client: PostgresClient, logger: Logger) async throws -> StoredLists.JSONList {
        var patches: [[UInt8]] = []
        let rows = try await client.query("""
            SELECT version, content FROM livelist_history
            WHERE name = \(name) AND version > \(base.version) AND version <= \(version) AND kind = 'patch' ORDER BY version
            """, logger: logger)
        for try await (stored, content) in rows.decode((Int, ByteBuffer?).self) {
            guard stored == base.version + patches.count + 1 else { break }
            patches.append(bytes(content))
        }
        guard base.version + patches.count == version else {
            throw StoreError("the patches of \(name) from version \(base.version + 1) to \(version) are not all in livelist_history; the database is inconsistent")
        }
        return try base.applying(patches, what: "list \(name)")
    }

    /// A `bytea` column's bytes (none for NULL).
    private static func bytes(_ content: ByteBuffer?) -> [UInt8] {
        content.map { Array(buffer: $0) } ?? []
    }

    /// A row of `livelist_lists` or `livelist_history` as one stored version.
    private static func step(version: Int, kind: String, content: ByteBuffer?) -> StoredUpdate.Step {
        let bytes = Self.bytes(content)
        switch Kind(rawValue: kind) {
        case .json?: return .init(version: version, content: .json(bytes))
        case .patch?: return .init(version: version, content: .patch(bytes))
        case .deleted?: return .init(version: version, content: .deleted)
        case .state?: return .init(version: version, content: .state(bytes))
        default: return .init(version: version, content: .reserved)
        }
    }

    /// A write refused inside its transaction.
    private enum Refusal: Error {
        case stale(Int)
        case limit(Int)
        case keyUsed
    }

    /// SQLSTATEs that `livelist_write` raises (their class, LL, is not PostgreSQL's).
    static let staleState = "LL001"
    static let limitState = "LL002"
    static let keyUsedState = "LL003"

    /// One write in one statement (one round trip, its own transaction): sets the transaction's lock
    /// timeout (shorter than the store's own deadline, so that a write waiting for a lock is refused
    /// by the database, rolled back, before the node stops waiting), locks the list's row (made
    /// when missing), checks that the version follows the stored one (else raises LL001 with the stored
    /// version as its message), counts the lists for a creation under the `creation_lock` row's lock (else LL002),
    /// stores the content, keeps it in the history (or only its version when too big: p_kept is false)
    /// and drops the history beyond p_keep versions, then notifies every node on commit. A refusal rolls
    /// everything back, the placeholder row too.
    static let writeFunction = """
        CREATE FUNCTION livelist_write(p_name text, p_version bigint, p_kind text, p_content bytea,
                                       p_kept boolean, p_keep bigint, p_limit bigint, p_lock_timeout text,
                                       p_key text, p_fingerprint bytea, p_created boolean) RETURNS boolean AS $$
        DECLARE
            stored_version bigint;
            stored_kind text;
            json_lists bigint;
            base bigint;
            due boolean := false;
        BEGIN
            PERFORM set_config('lock_timeout', p_lock_timeout, true);
            IF p_key IS NOT NULL THEN
                -- First, so that a retry racing this write waits for it, then finds its key.
                INSERT INTO livelist_idempotency (name, key, fingerprint, version, created)
                    VALUES (p_name, p_key, p_fingerprint, p_version, p_created) ON CONFLICT (name, key) DO NOTHING;
                IF NOT FOUND THEN
                    RAISE EXCEPTION USING ERRCODE = '\(keyUsedState)', MESSAGE = 'idempotency key used';
                END IF;
                DELETE FROM livelist_idempotency WHERE name = p_name AND recorded_at < now() - interval '\(idempotencyRetention)';
            END IF;
            INSERT INTO livelist_lists (name, version, kind) VALUES (p_name, 0, 'none') ON CONFLICT (name) DO NOTHING;
            SELECT version, kind INTO stored_version, stored_kind FROM livelist_lists WHERE name = p_name FOR UPDATE;
            IF stored_version <> p_version - 1 THEN
                RAISE EXCEPTION USING ERRCODE = '\(staleState)', MESSAGE = stored_version::text;
            END IF;
            IF p_kind = 'json' AND stored_kind <> 'json' THEN
                PERFORM 1 FROM livelist_meta WHERE key = 'creation_lock' FOR UPDATE;
                SELECT count(*) INTO json_lists FROM livelist_lists WHERE kind = 'json';
                IF json_lists >= p_limit THEN
                    RAISE EXCEPTION USING ERRCODE = '\(limitState)', MESSAGE = p_limit::text;
                END IF;
            END IF;
            IF p_kind = 'patch' THEN
                IF stored_kind <> 'json' THEN
                    RAISE EXCEPTION USING ERRCODE = '\(staleState)', MESSAGE = stored_version::text;
                END IF;
                -- The content stays the base's; the patch is kept in the history until a compaction.
                UPDATE livelist_lists SET version = p_version, patch_bytes = patch_bytes + length(p_content), updated_at = now()
                    WHERE name = p_name
                    RETURNING base_version, patch_bytes > coalesce(length(content), 0) INTO base, due;
                INSERT INTO livelist_history (name, version, kind, content) VALUES (p_name, p_version, 'patch', p_content)
                    ON CONFLICT (name, version) DO UPDATE SET kind = excluded.kind, content = excluded.content;
            ELSE
                UPDATE livelist_lists SET version = p_version, kind = p_kind, content = p_content, base_version = p_version,
                                          patch_bytes = 0, updated_at = now()
                    WHERE name = p_name;
                base := p_version;
                INSERT INTO livelist_history (name, version, kind, content)
                    VALUES (p_name, p_version, CASE WHEN p_kept THEN p_kind ELSE 'reserved' END,
                            CASE WHEN p_kept THEN p_content END)
                    ON CONFLICT (name, version) DO UPDATE SET kind = excluded.kind, content = excluded.content;
            END IF;
            DELETE FROM livelist_history WHERE name = p_name AND version <= p_version - p_keep AND version <= base;
            PERFORM pg_notify('\(channel)', p_name || ' ' || p_version);
            RETURN due;
        END
        $$ LANGUAGE plpgsql
        """

    /// Makes the body of a JSON list at `p_version` its new base, when the list is still at that version
    /// (a later patch leaves it to the node that writes the next one), and drops the patches before it
    /// that the history keeps no longer.
    static let compactFunction = """
        CREATE FUNCTION livelist_compact(p_name text, p_version bigint, p_content bytea, p_keep bigint) RETURNS void AS $$
        BEGIN
            UPDATE livelist_lists SET content = p_content, base_version = p_version, patch_bytes = 0
                WHERE name = p_name AND version = p_version AND kind = 'json';
            IF FOUND THEN
                DELETE FROM livelist_history WHERE name = p_name AND version <= p_version - p_keep;
            END IF;
        END
        $$ LANGUAGE plpgsql
        """

    /// Keeps a patch as the list's `version` (see ``ListStore/appendJSONPatch(name:version:patch:idempotency:body:)``),
    /// then, when `livelist_write` says the patches since the base outweigh it, writes `body()` as the
    /// new base. A compaction that fails leaves the patches (the write is kept either way); the next
    /// patch tries again.
    public func appendJSONPatch(name: String, version: Int, patch: [UInt8], idempotency: IdempotentWrite?, body: () -> [UInt8]) throws(StoreError) {
        guard try write(name: name, version: version, kind: .patch, content: patch, idempotency: idempotency) else { return }
        let buffer = ByteBuffer(bytes: body())
        let keep = options.keptVersions
        do {
            try blocking("compacting \(name)", write: true) { [client, logger] in
                try await drained(client.query("SELECT livelist_compact(\(name), \(version), \(buffer), \(keep))", logger: logger))
            }
        } catch {
            logger.warning("cannot compact \(name) at version \(version) (its patches stay until the next try): \(error)")
        }
    }

    /// Writes `name` at `version` with `livelist_write` (one statement, see there); returns whether the
    /// list is due for compaction.
    @discardableResult
    private func write(name: String, version: Int, kind: Kind, content: [UInt8]?, idempotency: IdempotentWrite? = nil) throws(StoreError) -> Bool {
        let options = self.options
        let buffer = content.map { ByteBuffer(bytes: $0) }
        let (key, fingerprint, created) = (idempotency?.key.key, idempotency.map { ByteBuffer(bytes: $0.key.fingerprint) }, idempotency?.created)
        let kept = (content?.count ?? 0) <= options.largestKeptContent
        let lockTimeout = "\(Self.lockTimeoutMilliseconds(within: options.operationTimeout))ms"
        return try blocking("writing \(name)", write: true) { [client, logger] in
            do {
                var due = false
                for try await value in try await client.query("""
                    SELECT livelist_write(\(name), \(version), \(kind.rawValue), \(buffer), \(kept || kind == .patch), \(options.keptVersions), \(options.maximumJSONLists), \(lockTimeout),
                                          \(key), \(fingerprint), \(created))
                    """, logger: logger).decode(Bool.self) {
                    due = value
                }
                return due
            } catch let error as PSQLError {
                switch error.serverInfo?[.sqlState] {
                case Self.staleState?: throw Refusal.stale(Int(error.serverInfo?[.message] ?? "") ?? 0)
                case Self.limitState?: throw Refusal.limit(options.maximumJSONLists)
                case Self.keyUsedState?: throw Refusal.keyUsed
                default: throw error
                }
            }
        }
    }

    // MARK: - Revocations

    /// How long revocations are kept for nodes that fall behind: an hour.
    static let revocationRetention = "1 hour"
    /// The most revocations one read returns.
    static let revocationBatch = 500

    /// Inserts the revocation, and drops those older than ``revocationRetention``.
    public func recordRevocation(_ revocation: Revocation) throws(StoreError) {
        let (kind, subject) = Self.row(revocation)
        let origin = self.origin
        try blocking("recording a revocation") { [client, logger] in
            try await drained(client.query(
                "INSERT INTO livelist_revocations (origin, kind, subject) VALUES (\(origin), \(kind), \(subject))", logger: logger))
            try await drained(client.query(PostgresQuery(unsafeSQL:
                "DELETE FROM livelist_revocations WHERE recorded_at < now() - interval '\(Self.revocationRetention)'"), logger: logger))
        }
    }

    /// One statement: the revocations after `position` (at most ``revocationBatch``), each row with the
    /// oldest id still kept, which says whether some after `position` were dropped.
    public func revocations(after position: Int?) throws(StoreError) -> RevocationBatch {
        let origin = self.origin
        return try blocking("reading revocations") { [client, logger] in
            guard let position else {
                var latest = 0
                for try await id in try await client.query("SELECT coalesce(max(id), 0) FROM livelist_revocations", logger: logger).decode(Int.self) {
                    latest = id
                }
                return RevocationBatch(revocations: [], position: latest)
            }
            var batch = RevocationBatch(revocations: [], position: position)
            let rows = try await client.query("""
                SELECT id, origin, kind, subject, (SELECT min(id) FROM livelist_revocations) FROM livelist_revocations
                WHERE id > \(position) ORDER BY id LIMIT \(Self.revocationBatch)
                """, logger: logger)
            for try await (id, from, kind, subject, oldest) in rows.decode((Int, String, String, String, Int).self) {
                batch.position = id
                batch.isIncomplete = batch.isIncomplete || (position > 0 && oldest > position + 1)
                if from != origin, let revocation = Self.revocation(kind: kind, subject: subject) {
                    batch.revocations.append(revocation)
                }
            }
            return batch
        }
    }

    private static func row(_ revocation: Revocation) -> (kind: String, subject: String) {
        switch revocation {
        case let .identity(id): ("identity", id)
        case let .list(name): ("list", name)
        case let .session(digest): ("session", digest)
        case .everything: ("everything", "")
        case let .signInEnded(ended): ("sign-in", "\(ended.digest) \(ended.issued) \(ended.expires)")
        }
    }

    private static func revocation(kind: String, subject: String) -> Revocation? {
        switch kind {
        case "identity": .identity(subject)
        case "list": .list(subject)
        case "session": .session(subject)
        case "everything": .everything
        default: nil
        }
    }

    // MARK: - Leases

    public func holdsLease(_ name: String) -> Bool {
        let (held, started) = state.withLock { state -> (Bool, Bool) in
            if let held = state.leases[name] { return (held, true) }
            state.leases[name] = false
            return (false, false)
        }
        if !started {
            let task = Task(executorPreference: executor) { [self] in await keepLease(name) }
            tasks.withLock { $0.append(task) }
        }
        return held
    }

    /// How long a lease lasts unless its holder renews it (every second).
    static let leaseSeconds = 5

    /// Takes or renews the lease `name` every second: a row of `livelist_leases` that names this
    /// process until a few seconds ahead, taken over only once it has expired. A table, not an
    /// advisory lock, so that no role without rights on LiveList's tables can hold it. A node that
    /// ends gives its leases back; one that dies loses them within ``leaseSeconds``.
    private func keepLease(_ name: String) async {
        let origin = self.origin
        while !Task.isCancelled {
            do {
                var held = false
                for try await holder in try await client.query("""
                    INSERT INTO livelist_leases (name, holder, expires_at)
                    VALUES (\(name), \(origin), now() + make_interval(secs => \(Self.leaseSeconds)))
                    ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                    WHERE livelist_leases.holder = excluded.holder OR livelist_leases.expires_at < now()
                    RETURNING holder
                    """, logger: logger).decode(String.self) {
                    held = holder == origin
                }
                setLease(name, held)
            } catch {
                setLease(name, false)
            }
            try? await Task.sleep(for: .seconds(1))
        }
        setLease(name, false)
        try? await drained(client.query("DELETE FROM livelist_leases WHERE name = \(name) AND holder = \(origin)", logger: logger))
    }

    private func setLease(_ name: String, _ held: Bool) {
        state.withLock { $0.leases[name] = held }
    }

    // MARK: - Listening

    private var connectionConfiguration: PostgresConnection.Configuration {
        PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database, tls: connectionTLS)
    }

    // MARK: - TLS

    /// The TLS of every connection, as the URL's `sslmode` says (see ``DatabaseURL``): nil for none.
    /// Its files are read now, so that a missing or unreadable one stops start-up with its name.
    static func tlsConfiguration(for url: DatabaseURL) throws(StoreError) -> (configuration: TLSConfiguration, context: NIOSSLContext)? {
        guard url.tlsMode != .disable else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        switch url.tlsMode {
        case .disable, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        for (what, path) in [("sslrootcert", url.rootCertificatePath), ("sslcert", url.clientCertificatePath), ("sslkey", url.clientKeyPath)] {
            if let path, !FileManager.default.isReadableFile(atPath: path) {
                throw StoreError("the database URL's \(what) \(path) is not a readable file")
            }
        }
        if let root = url.rootCertificatePath {
            tls.trustRoots = .file(root)
        }
        do {
            if let certificate = url.clientCertificatePath, let key = url.clientKeyPath {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
            return (tls, try NIOSSLContext(configuration: tls))
        } catch {
            throw StoreError("the database URL's TLS files cannot be used: \(error)")
        }
    }

    /// Listens for other nodes' writes on a connection of its own; reconnects with backoff (0.1 s
    /// doubling to 2 s) when the connection is lost, and after each (re)connection has every list
    /// catch up (notices sent meanwhile are lost).
    private func listen() async {
        var backoff = Duration.milliseconds(100)
        var id = 0
        while !Task.isCancelled {
            id += 1
            do {
                let connection = try await PostgresConnection.connect(configuration: connectionConfiguration, id: id, logger: logger)
                defer { Task { try? await connection.close() } }
                try await connection.listen(on: Self.channel) { notifications in
                    state.withLock { $0.listening = true }
                    defer { state.withLock { $0.listening = false } }
                    setReachable(true)
                    backoff = .milliseconds(100)
                    noticeBox.post(.reconnected)
                    for try await notification in notifications {
                        received(notification.payload)
                    }
                }
                throw StoreError(.unavailable, "the database ended the listening connection")
            } catch {
                if Task.isCancelled { break }
                if setReachable(false) {
                    logger.error("the database \(url) is unreachable (\(Self.describe(error))); reconnecting")
                }
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(2))
        }
    }

    /// What starts a start-up probe's notification (no list name starts with `~`).
    static let probePrefix = "~probe "

    /// Checks that a notification sent through the pool reaches this process's listener: it does not
    /// through a connection pooler in transaction or statement mode, where LISTEN is accepted but
    /// notifications never come, and nodes would never see each other's writes. Such a setup stops
    /// start-up with that cause.
    private func checkNotificationsArrive() async throws {
        let listening = ContinuousClock.now + .seconds(10)
        while !state.withLock({ $0.listening }) {
            guard ContinuousClock.now < listening else {
                throw StoreError("could not LISTEN on \(url) within 10 s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await drained(client.query("SELECT pg_notify(\(Self.channel), \(Self.probePrefix + origin))", logger: logger))
        let heard = ContinuousClock.now + .seconds(5)
        while !state.withLock({ $0.heardProbe }) {
            guard ContinuousClock.now < heard else {
                throw StoreError("""
                    a notification sent through \(url) did not reach this node's listener within 5 s: a connection \
                    pooler in transaction or statement mode (PgBouncer's pool_mode = transaction) accepts LISTEN \
                    but never delivers, and nodes would not see each other's writes; connect directly, or \
                    through session pooling
                    """)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// `NAME VERSION`. A notification is a hint, never a work order: any role may send one, so one
    /// that is not a list name and a version is dropped (counted, and logged once a minute at most),
    /// and the queue bounds what a flood of valid-looking ones costs (``NoticeQueue``).
    private func received(_ payload: String) {
        if payload.hasPrefix(Self.probePrefix) {
            // A node's start-up probe: this process's own, or another's, which is no news.
            if payload == Self.probePrefix + origin { state.withLock { $0.heardProbe = true } }
            return
        }
        guard let space = payload.lastIndex(of: " "), let version = Int(payload[payload.index(after: space)...]),
            (1 ... ListVersion.maximum).contains(version), ListName(String(payload[..<space])) != nil
        else {
            let (count, report) = state.withLock { state -> (Int, Bool) in
                state.droppedNotices += 1
                let now = ContinuousClock.now
                guard state.lastDropReport.map({ now - $0 >= .seconds(60) }) ?? true else { return (state.droppedNotices, false) }
                state.lastDropReport = now
                return (state.droppedNotices, true)
            }
            if report {
                logger.warning("ignoring notifications on \(Self.channel) that are not NAME VERSION (\(count) so far): some role other than LiveList's sends them")
            }
            return
        }
        noticeBox.post(.changed(name: String(payload[..<space]), version: version))
    }

    /// Records reachability; true when it changed.
    @discardableResult
    private func setReachable(_ reachable: Bool) -> Bool {
        let changed = state.withLock { state -> Bool in
            guard state.reachable != reachable else { return false }
            state.reachable = reachable
            state.unreachableSince = reachable ? nil : .now
            return true
        }
        if changed && reachable {
            logger.notice("the database \(url) is reachable again")
        }
        return changed
    }

    // MARK: - Waiting

    /// The lock timeout of a write: what leaves the database time to answer within `deadline`
    /// (a second less, or three quarters of a deadline of under four seconds).
    static func lockTimeoutMilliseconds(within deadline: Duration) -> Int {
        let milliseconds = Int(deadline.components.seconds) * 1000 + Int(deadline.components.attoseconds / 1_000_000_000_000_000)
        return max(1, milliseconds >= 4000 ? milliseconds - 1000 : milliseconds * 3 / 4)
    }

    /// Runs `body` on this store's executor and waits for it, at most ``Options/operationTimeout``.
    /// Fails at once as unavailable while the listener finds the database unreachable.
    ///
    /// A `write` whose answer does not come within the deadline, or whose connection is lost once it
    /// was sent, fails as ``StoreError/Kind/outcomeUnknown``: the database may still commit it, so it
    /// is never reported as unavailable, which promises that nothing changed. The database's own
    /// refusals (a lock timeout, a cancelled statement) roll the write back: those are unavailable.
    private func blocking<T: Sendable>(_ what: String, write: Bool = false, _ body: @escaping @Sendable () async throws -> T) throws(StoreError) -> T {
        let (reachable, newer) = state.withLock { ($0.reachable, $0.newerSchema) }
        if let newer {
            throw StoreError(.unavailable, "\(what): the database \(url) holds schema \(newer), newer than this release's \(Self.schemaVersion)")
        }
        guard reachable else {
            throw StoreError(.unavailable, "\(what): the database \(url) is unreachable")
        }
        let outcome = Outcome<T>()
        Task(executorPreference: executor) {
            do {
                outcome.finish(.success(try await body()))
            } catch {
                outcome.finish(.failure(error))
            }
        }
        let timeout = options.operationTimeout.components
        let nanoseconds = Int(timeout.seconds) * 1_000_000_000 + Int(timeout.attoseconds / 1_000_000_000)
        guard let result = outcome.wait(until: .now() + .nanoseconds(nanoseconds)) else {
            if write {
                throw StoreError(.outcomeUnknown, "\(what): the database \(url) did not answer within \(options.operationTimeout); the write may be kept")
            }
            throw StoreError(.unavailable, "\(what): the database \(url) did not answer within \(options.operationTimeout)")
        }
        switch result.mapError(Self.unwrapped) {
        case let .success(value):
            return value
        case let .failure(error as StoreError):
            throw error
        case let .failure(Refusal.stale(version)):
            throw StoreError(.stale(version: version), "\(what): another node wrote version \(version) first")
        case .failure(Refusal.keyUsed):
            throw StoreError(.idempotencyKeyUsed, "\(what): another write kept its idempotency key first")
        case let .failure(Refusal.limit(limit)):
            throw StoreError(.limitReached(limit: limit), "\(what): the database holds its limit of \(limit) JSON lists")
        case let .failure(error):
            if write, Self.mayHaveBeenSent(error) {
                throw StoreError(.outcomeUnknown, "\(what): \(Self.describe(error)); the write may be kept")
            }
            throw StoreError(Self.isConnectionFailure(error) || Self.isRolledBackTimeout(error) ? .unavailable : .failed, "\(what): \(Self.describe(error))")
        }
    }

    /// The error inside a transaction's: what failed first (its begin, its body or its commit).
    static func unwrapped(_ error: any Error) -> any Error {
        guard let failed = error as? PostgresTransactionError else { return error }
        return failed.beginError ?? failed.closureError ?? failed.commitError ?? error
    }

    /// Whether `error` means the database could not be reached (rather than refused a statement):
    /// no connection, a lost one, or the server shutting down (SQLSTATE class 08 or 57).
    static func isConnectionFailure(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            return state.hasPrefix("08") || state.hasPrefix("57")
        }
        return true
    }

    /// Whether a statement that failed with `error` may have reached the database, and so may commit:
    /// the connection was lost or closed under it. A connection that could not be made, or a pool
    /// that closed, sent nothing; an answer of the server itself is an outcome.
    static func mayHaveBeenSent(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .uncleanShutdown, .clientClosedConnection, .messageDecodingFailure, .unexpectedBackendMessage:
            return true
        default:
            return false
        }
    }

    /// Whether the database refused a statement for a lock timeout (55P03) or cancelled it (57014):
    /// its transaction is rolled back, so nothing changed.
    static func isRolledBackTimeout(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return state == "55P03" || state == "57014"
    }

    /// Why the database's TLS certificate was refused, in words; nil when `error` is not that.
    static func certificateFailure(_ error: any Error, _ url: DatabaseURL) -> String? {
        let text = describe(error)
        if text.contains("failedToValidateHostname") {
            return "its TLS certificate does not name the host \(url.host) (sslmode=verify-full checks the name: connect by a name it holds)"
        }
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            let roots = url.rootCertificatePath.map { "sslrootcert \($0)" } ?? "the system's roots"
            return "its TLS certificate did not verify against \(roots): signed by another root, or expired (CERTIFICATE_VERIFY_FAILED)"
        }
        return nil
    }

    /// An error for the log: the server's message when there is one, else the cause beneath the client's
    /// code (a refused connection, a timeout, a name that did not resolve).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return "\(message) (\(error.serverInfo?[.sqlState] ?? "?"))"
        }
        if let underlying = error.underlying {
            return "\(error.code): \(underlying)"
        }
        return "\(error.code)"
    }
}

/// Runs a statement to its end. A statement's error can come after its first answer (a function that
/// raises, a failed commit): unless its rows are read to the end, it would go unseen.
func drained(_ rows: PostgresRowSequence) async throws {
    for try await _ in rows {}
}

/// The result of a store call, handed from the task that ran it to the thread that waits.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<T, any Error>?

    func finish(_ result: Result<T, any Error>) {
        self.result = result
        done.signal()
    }

    /// The result, or nil when `deadline` passed first.
    func wait(until deadline: DispatchTime) -> Result<T, any Error>? {
        guard done.wait(timeout: deadline) == .success else { return nil }
        return result
    }
}

/// A task executor on a Dispatch queue of its own: the store's tasks never wait for Swift's cooperative
/// pool, whose threads may be the very ones blocked waiting for them (the registry loads the store
/// from an actor on that pool).
final class StoreExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "livelist.postgres")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// Other nodes' writes waiting for the engine: coalesced per list (only the highest version noticed
/// matters), and at most ``maximumPending`` lists: past that, what is pending is dropped for one
/// `.reconnected` (every list catches up, in one query for the versions). A flood of notices, however
/// many names it makes up, so holds bounded memory and costs bounded work.
final class NoticeQueue: Sendable {
    /// The most lists whose notices wait one by one.
    static let maximumPending = 256

    private struct Pending {
        var versions: [String: Int] = [:]
        var order: [String] = []
        var head = 0
        var reconnected = false
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?

        /// Forgets the lists waiting one by one (a catch-up of every list covers them).
        mutating func dropChanges() {
            versions.removeAll()
            order.removeAll()
            head = 0
        }
    }

    private let pending = Mutex(Pending())

    func post(_ notice: StoreNotice) {
        let waiter = pending.withLock { pending -> CheckedContinuation<Void, Never>? in
            switch notice {
            case .reconnected:
                pending.reconnected = true
            case let .changed(name, version):
                if pending.reconnected {
                    // Every list catches up anyway.
                    break
                } else if let known = pending.versions[name] {
                    pending.versions[name] = max(known, version)
                } else if pending.versions.count >= Self.maximumPending {
                    pending.reconnected = true
                    pending.dropChanges()
                } else {
                    pending.versions[name] = version
                    pending.order.append(name)
                }
            }
            defer { pending.waiter = nil }
            return pending.waiter
        }
        waiter?.resume()
    }

    /// How many lists' notices wait (for tests).
    var pendingCount: Int { pending.withLock { $0.versions.count } }

    func finish() {
        let waiter = pending.withLock { pending -> CheckedContinuation<Void, Never>? in
            pending.finished = true
            defer { pending.waiter = nil }
            return pending.waiter
        }
        waiter?.resume()
    }

    /// The next notice, waiting for one; nil once finished or cancelled.
    func next() async -> StoreNotice? {
        while true {
            if Task.isCancelled { return nil }
            enum Step {
                case notice(StoreNotice)
                case finished
                case wait
            }
            let step = pending.withLock { pending -> Step in
                if pending.finished { return .finished }
                if pending.reconnected {
                    // Every list catches up: what was pending is covered.
                    pending.reconnected = false
                    pending.dropChanges()
                    return .notice(.reconnected)
                }
                guard pending.head < pending.order.count else {
                    pending.order.removeAll()
                    pending.head = 0
                    return .wait
                }
                let name = pending.order[pending.head]
                pending.head += 1
                let version = pending.versions.removeValue(forKey: name) ?? 0
                return .notice(.changed(name: name, version: version))
            }
            switch step {
            case let .notice(notice): return notice
            case .finished: return nil
            case .wait:
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let resumeNow = pending.withLock { pending -> Bool in
                            if pending.finished || pending.reconnected || pending.head < pending.order.count { return true }
                            pending.waiter = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.finish()
                }
            }
        }
    }
}
