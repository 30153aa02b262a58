import LiveListEngine
import Logging
import PostgresNIO

// Housekeeping: revocations past their retention and ended sign-ins whose cookies expired are deleted
// by each node at most once per ``PostgresListStore/Options/housekeepingInterval`` (a minute), never by
// a write, and each statement deletes at most ``PostgresListStore/Options/housekeepingBatch`` rows found
// through an index: what a flood of sign-outs costs the database stays bounded (docs/DEPLOYMENT.md,
// "What each node does").

extension PostgresListStore {
    /// The most statements of each kind one pass runs: the rest waits for the next pass.
    static let housekeepingBatchesPerPass = 20

    /// The rows to delete are gathered into an array first (`= ANY(ARRAY(…))`), so that the DELETE
    /// finds each through the primary key: with `IN (…)` the planner joins the batch against the whole
    /// table instead, a sequential scan.
    ///
    /// Deletes at most `batch` revocations past the retention: the smallest ids first, up to the newest
    /// row past the retention (found through the index on `recorded_at`), and never the newest row of
    /// all. What stays is therefore every id from the smallest kept on, and never nothing once there
    /// was something, so that `revocations(after:)` tells from the smallest id whether a reader missed
    /// some. Answers how many it deleted.
    static func pruneRevocations(batch: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM livelist_revocations WHERE id = ANY(ARRAY(
                SELECT id FROM livelist_revocations
                WHERE id <= (SELECT id FROM livelist_revocations WHERE recorded_at < now() - interval '\(unescaped: revocationRetention)'
                             ORDER BY recorded_at DESC LIMIT 1)
                  AND id < (SELECT max(id) FROM livelist_revocations)
                ORDER BY id LIMIT \(batch)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    /// Deletes at most `batch` ended sign-ins whose cookies expired, the earliest first (through the
    /// index on `expires`). Answers how many it deleted.
    static func pruneEndedSignIns(batch: Int) -> PostgresQuery {
        """
        WITH gone AS (
            DELETE FROM livelist_ended_signins WHERE digest = ANY(ARRAY(
                SELECT digest FROM livelist_ended_signins WHERE expires <= floor(extract(epoch FROM now()))::bigint
                ORDER BY expires LIMIT \(batch)))
            RETURNING 1)
        SELECT count(*) FROM gone
        """
    }

    /// Runs a pass every ``Options/housekeepingInterval`` while the database answers, until cancelled.
    func keepHouse() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: options.housekeepingInterval)
            let (reachable, newer) = state.withLock { ($0.reachable, $0.newerSchema) }
            guard reachable, newer == nil, !Task.isCancelled else { continue }
            do {
                let deleted = try await housekeepingPass()
                if deleted.revocations + deleted.endedSignIns > 0 {
                    logger.debug("housekeeping: deleted \(deleted.revocations) old revocations and \(deleted.endedSignIns) expired ended sign-ins")
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("housekeeping: cannot delete old revocations and ended sign-ins (tried again in \(options.housekeepingInterval)): \(explain(error))")
            }
        }
    }

    /// One pass: each table's statements until one deletes less than a batch, at most
    /// ``housekeepingBatchesPerPass`` of them. Answers how many rows of each it deleted.
    @discardableResult
    func housekeepingPass() async throws -> (revocations: Int, endedSignIns: Int) {
        let batch = max(1, options.housekeepingBatch)
        var counts: [Int] = []
        for statement in [Self.pruneRevocations(batch:), Self.pruneEndedSignIns(batch:)] {
            var total = 0
            for _ in 0 ..< Self.housekeepingBatchesPerPass {
                let deleted = try await withConnection { [logger] connection in
                    var deleted = 0
                    for try await count in try await connection.query(statement(batch), logger: logger).decode(Int.self) {
                        deleted = count
                    }
                    return deleted
                }
                total += deleted
                if deleted < batch { break }
            }
            counts.append(total)
        }
        return (counts[0], counts[1])
    }
}
