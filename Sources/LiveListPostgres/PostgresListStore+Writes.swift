public import LiveListEngine
import Logging
import NIOCore
import PostgresNIO

// Writes: `livelist_write` and `livelist_compact`, one statement per write, and what a stored row holds.

extension PostgresListStore {
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
    static func patched(_ base: StoredLists.JSONList, of name: String, upTo version: Int, connection: PostgresConnection, logger: Logger) async throws -> StoredLists.JSONList {
        var patches: [[UInt8]] = []
        let rows = try await connection.query("""
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
    static func bytes(_ content: ByteBuffer?) -> [UInt8] {
        content.map { Array(buffer: $0) } ?? []
    }

    /// A row of `livelist_lists` or `livelist_history` as one stored version.
    static func step(version: Int, kind: String, content: ByteBuffer?) -> StoredUpdate.Step {
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
    enum Refusal: Error {
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
            try blocking("compacting \(name)", write: true) { [logger] connection in
                try await drained(connection.query("SELECT livelist_compact(\(name), \(version), \(buffer), \(keep))", logger: logger))
            }
        } catch {
            logger.warning("cannot compact \(name) at version \(version) (its patches stay until the next try): \(error)")
        }
    }

    /// Writes `name` at `version` with `livelist_write` (one statement, see there); returns whether the
    /// list is due for compaction.
    @discardableResult
    func write(name: String, version: Int, kind: Kind, content: [UInt8]?, idempotency: IdempotentWrite? = nil) throws(StoreError) -> Bool {
        let options = self.options
        let buffer = content.map { ByteBuffer(bytes: $0) }
        let (key, fingerprint, created) = (idempotency?.key.key, idempotency.map { ByteBuffer(bytes: $0.key.fingerprint) }, idempotency?.created)
        let kept = (content?.count ?? 0) <= options.largestKeptContent
        let lockTimeout = "\(Self.lockTimeoutMilliseconds(within: options.operationTimeout))ms"
        return try blocking("writing \(name)", write: true) { [logger] connection in
            do {
                var due = false
                for try await value in try await connection.query("""
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
}
