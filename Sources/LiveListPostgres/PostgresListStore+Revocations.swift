public import LiveListEngine
import Logging
import PostgresNIO

// Revocations that every node reads through the database (docs/ARCHITECTURE.md, "Several nodes").

extension PostgresListStore {
    /// How long revocations are kept for nodes that fall behind: an hour.
    static let revocationRetention = "1 hour"
    /// The most revocations one read returns.
    static let revocationBatch = 500

    /// Inserts the revocation: one row, nothing else (the old ones are deleted by the housekeeping,
    /// at most once a minute, PostgresListStore+Housekeeping.swift). An ended sign-in is kept as
    /// ``recordEndedSignIn(_:)`` keeps it.
    public func recordRevocation(_ revocation: Revocation) throws(StoreError) {
        if case let .signInEnded(ended) = revocation {
            return try recordEndedSignIn(ended)
        }
        let (kind, subject) = Self.row(revocation)
        let origin = self.origin
        try blocking("recording a revocation") { [logger] connection in
            try await drained(connection.query(
                "INSERT INTO livelist_revocations (origin, kind, subject) VALUES (\(origin), \(kind), \(subject))", logger: logger))
        }
    }

    /// One statement: the revocations after `position` (at most ``revocationBatch``), each row with the
    /// oldest id still kept, which says whether some after `position` were dropped (the housekeeping
    /// deletes the smallest ids first, so every id from the oldest kept on is kept).
    public func revocations(after position: Int?) throws(StoreError) -> RevocationBatch {
        let origin = self.origin
        return try blocking("reading revocations") { [logger] connection in
            guard let position else {
                var latest = 0
                for try await id in try await connection.query("SELECT coalesce(max(id), 0) FROM livelist_revocations", logger: logger).decode(Int.self) {
                    latest = id
                }
                return RevocationBatch(revocations: [], position: latest)
            }
            var batch = RevocationBatch(revocations: [], position: position)
            let rows = try await connection.query("""
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

    /// One statement, so one transaction: keeps `ended` in `livelist_ended_signins` and, when it was not
    /// kept already, records it as a revocation of kind `sign-in` (subject `DIGEST ISSUED EXPIRES`) for
    /// the other nodes. A sign-out sent again therefore costs no second revocation.
    public func recordEndedSignIn(_ ended: EndedSignIn) throws(StoreError) {
        let ended = try ended.checked()
        let (kind, subject) = Self.row(.signInEnded(ended))
        let origin = self.origin
        try blocking("recording a sign-out") { [logger] connection in
            try await drained(connection.query("""
                WITH ended AS (
                    INSERT INTO livelist_ended_signins (digest, issued, expires) VALUES (\(ended.digest), \(ended.issued), \(ended.expires))
                    ON CONFLICT (digest) DO NOTHING RETURNING digest)
                INSERT INTO livelist_revocations (origin, kind, subject) SELECT \(origin), \(kind), \(subject) FROM ended
                """, logger: logger))
        }
    }

    /// The ended sign-ins whose cookies have not expired at `now` (through the index on `expires`), in
    /// no particular order.
    public func endedSignIns(now: Int) throws(StoreError) -> [EndedSignIn] {
        try blocking("reading the sign-outs") { [logger] connection in
            var found: [EndedSignIn] = []
            let rows = try await connection.query(
                "SELECT digest, issued, expires FROM livelist_ended_signins WHERE expires > \(now)", logger: logger)
            for try await (digest, issued, expires) in rows.decode((String, Int, Int).self) {
                found.append(EndedSignIn(digest: digest, issued: issued, expires: expires))
            }
            return found
        }
    }

    static func row(_ revocation: Revocation) -> (kind: String, subject: String) {
        switch revocation {
        case let .identity(id): ("identity", id)
        case let .list(name): ("list", name)
        case let .session(digest): ("session", digest)
        case .everything: ("everything", "")
        case let .signInEnded(ended): ("sign-in", ended.line)
        }
    }

    static func revocation(kind: String, subject: String) -> Revocation? {
        switch kind {
        case "identity": .identity(subject)
        case "list": .list(subject)
        case "session": .session(subject)
        case "everything": .everything
        case "sign-in": EndedSignIn(line: subject).map { .signInEnded($0) }
        default: nil
        }
    }
}
