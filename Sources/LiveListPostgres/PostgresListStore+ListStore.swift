public import LiveListEngine
import Logging
import NIOCore
import PostgresNIO

// The ListStore and SharedListStore calls: loading, the saves (through `livelist_write`, in +Writes), idempotency keys, app
// states, the session secret, catching up (`update(of:after:)`, `versions`), notices and health.

extension PostgresListStore {
    public func load() throws(StoreError) -> StoredLists {
        try blocking("loading the lists") { [logger] connection in
            var stored = StoredLists()
            var patched: [(name: String, base: StoredLists.JSONList, version: Int)] = []
            let rows = try await connection.query("SELECT name, version, kind, content, base_version FROM livelist_lists", logger: logger)
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
                stored.jsonLists[list.name] = try await Self.patched(list.base, of: list.name, upTo: list.version, connection: connection, logger: logger)
            }
            return stored
        }
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        try blocking("reserving versions of \(name)") { [logger] connection in
            try await drained(connection.query("""
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
        try blocking("looking up an idempotency key of \(name)") { [logger] connection in
            var found: IdempotentWrite?
            let rows = try await connection.query("""
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
        try blocking("reading the state of \(name)") { [logger] connection in
            let rows = try await connection.query(
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
        return try blocking("reading the session secret") { [logger] connection in
            // The first node to ask stores its secret; every node then signs with that one.
            try await drained(connection.query(
                "INSERT INTO livelist_meta (key, value) VALUES ('session_secret', \(fresh)) ON CONFLICT (key) DO NOTHING", logger: logger))
            var secret: [UInt8] = []
            for try await value in try await connection.query("SELECT value FROM livelist_meta WHERE key = 'session_secret'", logger: logger)
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
        try blocking("reading \(name)") { [logger] connection in
            // One statement, so one snapshot: the kept versions after `version`, each row with the list's
            // current version (one row of nulls when none is kept).
            var latestVersion = 0
            var steps: [StoredUpdate.Step] = []
            let rows = try await connection.query("""
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
            for try await (stored, kind, content, base) in try await connection.query(
                "SELECT version, kind, content, base_version FROM livelist_lists WHERE name = \(name)", logger: logger
            ).decode((Int, String, ByteBuffer?, Int).self) {
                latest = Self.step(version: base, kind: kind, content: content)
                if case let .json(body)? = latest?.content, base < stored {
                    let list = try await Self.patched(.init(version: base, body: body), of: name, upTo: stored, connection: connection, logger: logger)
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
        try blocking("reading the versions") { [logger] connection in
            var versions: [String: Int] = [:]
            let rows = try await connection.query(
                "SELECT name, version FROM livelist_lists WHERE kind IN ('json', 'deleted', 'state')", logger: logger)
            for try await (name, version) in rows.decode((String, Int).self) {
                versions[name] = version
            }
            return versions
        }
    }

    public func versions(of names: [String]) throws(StoreError) -> [String: Int] {
        try blocking("reading the versions of \(names.count) lists") { [logger] connection in
            var versions: [String: Int] = [:]
            let rows = try await connection.query(
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
        let reading = gauge.reading
        let pool = StoreHealth.Pool(busy: reading.busy, capacity: reading.capacity, waiting: reading.waiting)
        if let newer {
            return StoreHealth(isReachable: false, description: "database: schema \(newer), newer than this release's \(Self.schemaVersion)", pool: pool)
        }
        if reachable {
            return StoreHealth(isReachable: true, description: "database: ok, \(reading.description)", pool: pool)
        }
        let seconds = since.map { Int((ContinuousClock.now - $0).components.seconds) } ?? 0
        return StoreHealth(isReachable: false, description: "database: unreachable for \(seconds) s", pool: pool)
    }
}
