public import LiveListEngine
import Logging
import PostgresNIO

// The schema: reading its version, creating or migrating it under a lock of `livelist_schema`, and the
// grants of a runtime role (docs/DEPLOYMENT.md, "Several nodes on one PostgreSQL").

extension PostgresListStore {
    /// On `connection`, the one that chose the server (the pool may not run yet). The schema's version
    /// is read first, without a lock: a current schema needs nothing more, so a node whose role may
    /// only read and write LiveList's rows starts. Otherwise the schema table is made (a node that races
    /// to make it too finds it made), then locked for the migration: a table lock, which only a role
    /// with rights on the table can take, so no other role can hold migrations back.
    func migrate(on connection: PostgresConnection) async throws {
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
            if found < 4 {
                // Version 4: ended sign-ins (sign-outs), kept until their cookies expire, which every
                // node reads at start-up; and an index on the revocations' time, so that deleting the
                // old ones (PostgresListStore+Housekeeping.swift) never scans the table.
                try await drained(connection.query("CREATE INDEX livelist_revocations_recorded_at ON livelist_revocations (recorded_at)", logger: logger))
                try await drained(connection.query(
                    "CREATE TABLE livelist_ended_signins (digest text PRIMARY KEY, issued bigint NOT NULL, expires bigint NOT NULL)", logger: logger))
                try await drained(connection.query("CREATE INDEX livelist_ended_signins_expires ON livelist_ended_signins (expires)", logger: logger))
                try await drained(connection.query("INSERT INTO livelist_schema (version) VALUES (4)", logger: logger))
            }
            if found < 5 {
                // Version 5: the function that the triggers of the app's watched tables call, to announce
                // what each statement changed to every node (live queries, PostgresListStore+Triggers.swift).
                try await drained(connection.query(PostgresQuery(unsafeSQL: Self.rowsChangedFunction), logger: logger))
                try await drained(connection.query("INSERT INTO livelist_schema (version) VALUES (5)", logger: logger))
            }
        }
    }

    /// The schema version the database holds: 0 when it holds no LiveList schema.
    static func storedSchemaVersion(_ connection: PostgresConnection, logger: Logger) async throws -> Int {
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

    static func ensureUnderstood(_ found: Int) throws(StoreError) {
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
        try blocking("granting \(role) a node's rights") { [logger] connection in
            for statement in statements {
                try await drained(connection.query(PostgresQuery(unsafeSQL: statement), logger: logger))
            }
        }
    }

    /// The grants of a runtime role (quoted), as docs/DEPLOYMENT.md lists them.
    static func runtimeGrants(to role: String) -> [String] {
        [
            "GRANT USAGE ON SCHEMA public TO \(role)",
            "GRANT SELECT ON livelist_schema TO \(role)",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON livelist_lists, livelist_history, livelist_meta, livelist_revocations, livelist_leases, livelist_idempotency, "
                + "livelist_ended_signins TO \(role)",
            "GRANT USAGE ON SEQUENCE livelist_revocations_id_seq TO \(role)",
            "GRANT EXECUTE ON FUNCTION livelist_write(text, bigint, text, bytea, boolean, bigint, bigint, text, text, bytea, boolean) TO \(role)",
            "GRANT EXECUTE ON FUNCTION livelist_compact(text, bigint, bytea, bigint) TO \(role)",
        ]
    }
}
