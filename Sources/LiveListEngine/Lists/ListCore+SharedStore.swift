import Foundation
import LiveListHTML

/// The writes of lists whose content the store keeps (``JSONList``, ``StateList``), against the
/// other processes of a shared store: failures named, stale writes run again on the latest state,
/// other processes' versions followed.
extension ListCore {
    /// A failed store write: its cause (which names the store's files) stays out of the detail, for
    /// the operator's log only. A shared store's refusals keep their kind: unreachable, at its limit of
    /// lists, or written first by another process (``ListWriteError/staleVersion``).
    func storageFailed(_ what: String, _ error: any Error) -> ListWriteError {
        var failure = ListWriteError(.storageFailed, code: "storage_failed", detail: what)
        if let error = error as? StoreError {
            switch error.kind {
            case .failed:
                break
            case .unavailable:
                failure = ListWriteError(.unavailable, code: "store_unavailable", detail: "\(what): the database cannot be reached now; try again shortly")
            case .outcomeUnknown:
                failure = ListWriteError(.outcomeUnknown, code: "outcome_unknown",
                                         detail: "\(what): the database did not answer whether it kept the write; read the list's version to learn whether it did")
            case let .limitReached(limit):
                failure = ListWriteError(.limitReached, code: "too_many_lists", detail: "the server holds its limit of \(limit) JSON lists")
            case let .stale(version):
                failure.staleVersion = version
            case .idempotencyKeyUsed:
                failure.idempotencyKeyUsed = true
            }
        }
        failure.cause = "\(name): \(what): \(error)"
        return failure
    }

    /// How often a write runs again after another process of a shared store wrote first.
    private static let staleRetries = 40

    /// Where one write stands against the other processes of a shared store.
    struct Race {
        /// The races lost so far.
        var attempts = 0
        /// Whether the write is decided on the latest stored version (always, with a store of one process).
        var confirmed: Bool
    }

    /// Runs `write` in the ordered path; when another process of a shared store wrote the list first,
    /// catches up on what it wrote (`catchUp`) and runs `write` again, on the latest state.
    ///
    /// A write that changes nothing (`unchanged` says which outcome that is) or is refused here (a
    /// precondition, a missing list) was decided on what this process knows: with a shared store it is
    /// decided again once caught up, so that every decision holds for the latest stored version. A
    /// write that goes ahead costs no extra round trip: the store itself refuses it when it does not
    /// follow the stored version.
    func retryingStale<Outcome>(
        _ write: () throws(ListWriteError) -> Outcome, unchanged: (Outcome) -> Bool, catchUp: () throws(ListWriteError) -> Void
    ) throws(ListWriteError) -> Outcome {
        var race = Race(confirmed: shared == nil)
        while true {
            do throws(ListWriteError) {
                let outcome = try write()
                if unchanged(outcome), try confirm(&race, catchUp: catchUp) { continue }
                return outcome
            } catch where error.staleVersion != nil {
                try recover(&race, from: error, catchUp: catchUp)
            } catch where error.kind == .preconditionFailed || error.kind == .notFound {
                guard try confirm(&race, catchUp: catchUp) else { throw error }
            }
        }
    }

    /// Catches up once with the store when the write was decided on what this process knew (it changed
    /// nothing, or was refused here); false when it was decided on the latest stored version already.
    func confirm(_ race: inout Race, catchUp: () throws(ListWriteError) -> Void) throws(ListWriteError) -> Bool {
        guard !race.confirmed else { return false }
        race.confirmed = true
        try catchUp()
        return true
    }

    /// After the store refused the write as stale: waits (``backOff(after:)``) and catches up, so that
    /// the write runs again on the latest state; past ``staleRetries`` losses, gives up with
    /// `write_contention`.
    func recover(_ race: inout Race, from error: ListWriteError, catchUp: () throws(ListWriteError) -> Void) throws(ListWriteError) {
        guard race.attempts < Self.staleRetries else { throw contention(error) }
        race.attempts += 1
        race.confirmed = true
        backOff(after: race.attempts)
        try catchUp()
    }

    /// A write that lost every race to other processes: nothing changed, and it may be sent again.
    private func contention(_ error: ListWriteError) -> ListWriteError {
        var failure = ListWriteError(.unavailable, code: "write_contention",
                                     detail: "other nodes kept writing \(name) first; nothing changed, try again shortly")
        failure.cause = error.cause
        return failure
    }

    /// After a write lost a race to another process a second time and more, waits a random while that
    /// grows with the losses (up to 64 ms), so that nodes writing one list at full speed take turns
    /// rather than lose to each other forever. The list's own queue waits, as it does for a slow disk.
    private func backOff(after attempts: Int) {
        guard attempts > 1 else { return }
        let ceiling = 1 << min(attempts, 6)
        usleep(useconds_t(Int.random(in: 0 ..< ceiling * 1_000)))
    }

    /// Catches up with what other processes wrote to a shared store: `apply` renders each stored
    /// version after this one, in order, and publishes it as if it were written here, so that every
    /// process sends the same diffs under the same versions. When the store no longer holds every
    /// version in between, one diff spans them. Nothing to do with a store of one process, or once
    /// `noticed` is reached.
    func followStore(noticed: Int?, apply: (StoredUpdate.Step) throws -> Void) throws(ListWriteError) {
        guard let shared, !isRetired else { return }
        if let noticed, noticed <= renderer.updater.version { return }
        let update: StoredUpdate?
        do {
            update = try shared.update(of: name.rawValue, after: renderer.updater.version)
        } catch {
            throw storageFailed("the list could not be read", error)
        }
        guard let update else { return }
        for step in update.steps where step.version > renderer.updater.version {
            do {
                try apply(step)
            } catch {
                var failure = ListWriteError(.internal, code: "internal", detail: "\(name) could not follow version \(step.version) of the store")
                failure.cause = "\(name): version \(step.version) of the store does not render: \(error)"
                throw failure
            }
        }
    }

    /// `changeset`, ending at `version` instead (the renderer moves there too): a stored version
    /// followed past versions the store no longer holds.
    func skipping(_ changeset: ListChangeset, to version: Int) -> ListChangeset {
        guard version > changeset.version else { return changeset }
        renderer.updater.skipVersion(to: version)
        var skipped = changeset
        skipped.version = version
        return skipped
    }
}
