public import LiveListHTML
import Foundation
import Synchronization

// The writes of JSON-driven lists, each in its list's ordered path.
extension ListRegistry {
    /// Creates or replaces a JSON-driven list from a PUT body, in the list's ordered path. With an
    /// `idempotency` key that an earlier write of the list used (with the same request), nothing is
    /// written again: the answer is what that write made (``ListWrite/replayed``).
    ///
    /// - Returns: the write: whether the list was created, and the changeset the PUT caused.
    public func put(
        _ name: ListName, body: [UInt8], precondition: WritePrecondition = .none, idempotency: IdempotencyKey? = nil
    ) async throws(ListWriteError) -> ListWrite {
        let state: JSONListState
        let idsChecked: Bool
        do {
            (state, idsChecked) = try JSONListState.decodeForPut(body, limits: limits.listLimits)
        } catch {
            throw ListWriteError(error.isMalformedJSON ? .malformed : .invalid, code: error.code, detail: error.detail)
        }
        while true {
            let hosted = try jsonList(name, "written")
            let outcome: JSONList.WriteOutcome
            do {
                outcome = try await hosted.put(state: state, body: body, precondition: precondition, idempotency: idempotency, idsChecked: idsChecked)
            } catch {
                // A refused write on a name that does not exist leaves nothing behind.
                await retireIfUnused(hosted)
                throw error
            }
            switch outcome {
            case .created(var changeset, var json):
                // To the writer, a creation starts from nothing; streams got it from the high-water mark.
                if changeset.from != 0 {
                    changeset.from = 0
                    json = changeset.encodedJSON()
                }
                return ListWrite(created: true, changeset: changeset, json: json)
            case let .changed(changeset, json):
                return ListWrite(created: false, changeset: changeset, json: json)
            case let .unchanged(version):
                let changeset = ListChangeset(list: name.rawValue, from: version, version: version, animate: false, operations: [])
                return ListWrite(created: false, changeset: changeset, json: changeset.encodedJSON())
            case let .retired(version):
                forget(hosted, version: version)
            case let .replayed(earlier):
                return await replayedPut(earlier, of: hosted)
            }
        }
    }

    /// Applies a PATCH body (``JSONListPatch``) to an existing JSON-driven list, in the list's ordered
    /// path, all or nothing. Idempotency keys work as for ``put(_:body:precondition:idempotency:)``.
    ///
    /// - Returns: the write (its changeset has no operations and no new version when nothing changed)
    ///   and how many operations were skipped because their cell or section was missing.
    public func patch(
        _ name: ListName, body: [UInt8], precondition: WritePrecondition = .none, idempotency: IdempotencyKey? = nil
    ) async throws(ListWriteError) -> (write: ListWrite, skipped: Int) {
        let decoded: JSONListPatch
        do {
            decoded = try JSONListPatch.decode(body, limits: limits.listLimits)
        } catch {
            throw ListWriteError(error.isMalformedJSON ? .malformed : .invalid, code: error.code, detail: error.detail)
        }
        return try await self.patch(name, decoded, precondition: precondition, idempotency: idempotency)
    }

    /// Applies `patch` to an existing JSON-driven list (see ``patch(_:body:precondition:idempotency:)``):
    /// for an app that feeds a large list without rendering it whole.
    public func patch(
        _ name: ListName, _ patch: JSONListPatch, precondition: WritePrecondition = .none, idempotency: IdempotencyKey? = nil
    ) async throws(ListWriteError) -> (write: ListWrite, skipped: Int) {
        while true {
            // With a shared store, a list that another process created may not be known here yet: its
            // actor catches up before it decides.
            guard shared != nil || known(name) != nil else {
                throw ListWriteError(.notFound, code: "not_found", detail: "no list named \(name)")
            }
            let hosted = try jsonList(name, "patched")
            let result: (outcome: JSONList.WriteOutcome, skipped: Int)
            do {
                result = try await hosted.patch(patch, precondition: precondition, idempotency: idempotency, limits: limits.listLimits)
            } catch {
                await retireIfUnused(hosted)
                throw error
            }
            switch result.outcome {
            case let .changed(changeset, json):
                return (ListWrite(created: false, changeset: changeset, json: json), result.skipped)
            case let .unchanged(version):
                let changeset = ListChangeset(list: name.rawValue, from: version, version: version, animate: false, operations: [])
                return (ListWrite(created: false, changeset: changeset, json: changeset.encodedJSON()), result.skipped)
            case let .retired(version):
                forget(hosted, version: version)
            case let .replayed(earlier):
                return (await replayedPut(earlier, of: hosted), 0)
            case .created:
                throw ListWriteError(.internal, code: "internal", detail: "a patch of \(name) had an unexpected outcome")
            }
        }
    }

    /// What an earlier PUT with the same idempotency key answered: its changeset while the list is
    /// still at the version it made, else a changeset that names that version only.
    func replayedPut(_ earlier: IdempotentWrite, of hosted: any ServedList) async -> ListWrite {
        var changeset = ListChangeset(list: hosted.name.rawValue, from: earlier.version, version: earlier.version, animate: false, operations: [])
        if await hosted.version == earlier.version, earlier.version > 0 {
            changeset = await hosted.changes(since: earlier.version - 1)
            if earlier.created { changeset.from = 0 }
        }
        return ListWrite(created: earlier.created, changeset: changeset, json: changeset.encodedJSON(), replayed: true)
    }

    /// What an earlier deletion with the same idempotency key answered: its final empty reset, which
    /// its version alone makes again.
    private static func replayedDeletion(_ earlier: IdempotentWrite, of name: ListName) -> ListWrite {
        let final = ListChangeset(list: name.rawValue, from: earlier.version - 1, version: earlier.version, animate: false,
                                  operations: [.reset(html: "", sections: [])])
        return ListWrite(created: false, changeset: final, json: final.encodedJSON(), replayed: true)
    }

    /// Creates or replaces a JSON-driven list; `ifMatch` is `If-Match: "V"`.
    public func put(_ name: ListName, body: [UInt8], ifMatch: Int?) async throws(ListWriteError) -> ListWrite {
        try await put(name, body: body, precondition: ifMatch.map(WritePrecondition.version) ?? .none)
    }

    /// Deletes a JSON-driven list: its viewers get the final empty reset, which is also the answer.
    public func delete(_ name: ListName, idempotency: IdempotencyKey? = nil) async throws(ListWriteError) -> ListWrite {
        if let idempotency, let earlier = recentDeletions[name.rawValue + "\u{0}" + idempotency.key] {
            return Self.replayedDeletion(try earlier.replayed(for: idempotency, on: name), of: name)
        }
        while true {
            // With a shared store, a list that another process created may not be known here yet: its
            // actor catches up before it decides.
            guard shared != nil || known(name) != nil else {
                throw ListWriteError(.notFound, code: "not_found", detail: "no list named \(name)")
            }
            let hosted = try jsonList(name, "deleted")
            let outcome: JSONList.WriteOutcome
            do {
                outcome = try await hosted.delete(idempotency: idempotency)
            } catch {
                await retireIfUnused(hosted)
                throw error
            }
            switch outcome {
            case let .changed(final, json):
                await retireIfUnused(hosted)
                if let idempotency {
                    recentDeletions.keep(IdempotentWrite(key: idempotency, version: final.version, created: false),
                                         for: name.rawValue + "\u{0}" + idempotency.key)
                }
                return ListWrite(created: false, changeset: final, json: json)
            case let .retired(version):
                forget(hosted, version: version)
            case let .replayed(earlier):
                return Self.replayedDeletion(earlier, of: name)
            case .created, .unchanged:
                throw ListWriteError(.internal, code: "internal", detail: "a deletion of \(name) had an unexpected outcome")
            }
        }
    }
}
