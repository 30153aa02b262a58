import LiveListEngine
import Synchronization

/// The sign-ins that ended before their cookies expired, as this node knows them: checked in O(1) on
/// every request that carries a sign-in cookie, and bounded.
///
/// Records leave when their cookie expires (swept once the records added since the last sweep
/// outnumber half of those held, so a sweep costs O(1) per record). Past ``capacity`` the records of
/// the oldest sign-ins are dropped, and every sign-in made at or before the newest of them is refused
/// from then on (``notBefore``): a record is never dropped in a way that lets its cookie in again,
/// though some sign-ins that did not end must then sign in again (counted in ``sweptForCapacity``).
final class EndedSignIns: Sendable {
    private struct State {
        var records: [String: (issued: Int, expires: Int)] = [:]
        var notBefore = 0
        var addedSinceSweep = 0
        var droppedForCapacity = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Whether the sign-in `digest`, made at `issued`, has ended (or was made before ``notBefore``).
    func hasEnded(_ digest: String, issued: Int) -> Bool {
        state.withLock { state in issued < state.notBefore || state.records[digest] != nil }
    }

    /// Records ended sign-ins (a sign-out here, another node's, or those the store kept). Those
    /// already expired at `now` are not kept.
    func add(_ ended: [EndedSignIn], now: Int) {
        state.withLock { state in
            for record in ended where record.expires > now {
                if state.records[record.digest] == nil { state.addedSinceSweep += 1 }
                state.records[record.digest] = (record.issued, record.expires)
            }
            guard state.addedSinceSweep > max(64, state.records.count / 2) || state.records.count > capacity else { return }
            state.addedSinceSweep = 0
            state.records = state.records.filter { $0.value.expires > now }
            guard state.records.count > capacity else { return }
            // Drop the oldest sign-ins, a tenth more than needed so that this happens seldom, and refuse
            // every sign-in made up to the newest of them.
            let excess = state.records.count - capacity + capacity / 10
            let oldest = state.records.sorted { $0.value.issued < $1.value.issued }.prefix(excess)
            let newestDropped = oldest.map(\.value.issued).max() ?? 0
            for (digest, _) in oldest {
                state.records.removeValue(forKey: digest)
            }
            state.notBefore = max(state.notBefore, newestDropped + 1)
            state.records = state.records.filter { $0.value.issued >= state.notBefore }
            state.droppedForCapacity += excess
        }
    }

    /// Sign-ins made before this second are refused (0: none).
    var notBefore: Int { state.withLock { $0.notBefore } }

    /// Records held now.
    var count: Int { state.withLock { $0.records.count } }

    /// Records dropped to stay under ``capacity`` (each with every sign-in made before it).
    var sweptForCapacity: Int { state.withLock { $0.droppedForCapacity } }
}
