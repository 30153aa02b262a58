import Dispatch
import LiveListEngine

/// Revocations on this node and across the nodes of one database: a revocation is applied to this
/// node's streams at once, then kept in the store, which every other node reads every
/// ``ServerConfiguration/revocationPollInterval`` (through the database, so that a missed notice
/// never leaves a stream open: docs/ARCHITECTURE.md, "Several nodes").
extension LiveListApp {
    /// Applies `revocations` to this node's open streams: a session's end at once, the others by
    /// running the gate again for the streams they name, each stream once.
    func revokeHere(_ revocations: [Revocation]) async {
        gate.countRevocation()
        var identities: Set<String> = []
        var lists: Set<ListName> = []
        var sessions: Set<String> = []
        var everything = false
        for revocation in revocations {
            switch revocation {
            case let .identity(id): identities.insert(id)
            case let .list(name): if let name = ListName(name) { lists.insert(name) }
            case let .session(digest): sessions.insert(digest)
            case .everything: everything = true
            // Not a change of a stream's rights: the sign-in's own handling applies it.
            case .signInEnded: break
            }
        }
        if !sessions.isEmpty {
            endStreams(ofSessions: sessions)
        }
        guard everything || !identities.isEmpty || !lists.isEmpty else { return }
        await recheck(openStreams.select { entry in
            everything || entry.identityID.map(identities.contains) == true || entry.names.withLock { $0.containsAny(of: lists) }
        })
    }

    /// Keeps `revocation` in a shared store for the other nodes. A store that fails is logged: the
    /// other nodes then re-check at their interval.
    func share(_ revocation: Revocation) async {
        guard registry.isStoreShared else { return }
        let registry = self.registry
        if case let .failure(error) = await Self.offThePool({ () throws(StoreError) in try registry.recordRevocation(revocation) }) {
            configuration.errorLog?("cannot keep a revocation for the other nodes (\(error)); they re-check their streams within \(configuration.accessRecheckInterval)")
        }
    }

    /// Reads the other nodes' revocations from a shared store until cancelled, and applies each batch
    /// once this node has caught up with every list (so that the rules see what was written before
    /// the revocation). After the store failed, or dropped revocations this node had not read, every
    /// stream is re-checked.
    func followRevocations() async {
        guard registry.isStoreShared else { return }
        let registry = self.registry
        let errorLog = configuration.errorLog
        var position: Int?
        var failing = false
        while !Task.isCancelled {
            let asked = position
            switch await Self.offThePool({ () throws(StoreError) in try registry.revocations(after: asked) }) {
            case let .success(batch):
                let missed = failing || batch.isIncomplete
                if failing { errorLog?("revocations: the store answers again; every stream is re-checked") }
                failing = false
                position = batch.position
                if missed || !batch.revocations.isEmpty {
                    await registry.catchUpEverything { line in errorLog?(line) }
                    await revokeHere(missed ? [.everything] : batch.revocations)
                }
                // More may wait beyond a full batch: ask again at once while the position moves.
                if asked != nil, batch.position != asked { continue }
            case let .failure(error):
                if !failing { errorLog?("revocations: cannot read the other nodes' (\(error)); trying again") }
                failing = true
            }
            try? await Task.sleep(for: configuration.revocationPollInterval)
        }
    }

    /// Runs a blocking store call on a thread of Dispatch's, not of Swift's cooperative pool.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) async -> Result<T, StoreError> {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                do throws(StoreError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
    }
}
