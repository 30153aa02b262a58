import Dispatch
import LiveListEngine
import LiveListHTTP

/// The open streams' access after they opened: each is recorded with what its access was decided on,
/// decided again on a revocation, a re-check or a sign-out, and told `denied` and ended when a list is
/// refused (docs/PROTOCOL.md, "Streams: the `denied` event"). Revocations are applied on this node at
/// once, then kept in a shared store, which every other node reads every
/// ``ServerConfiguration/revocationPollInterval`` (through the database, so that a missed notice never
/// leaves a stream open: docs/ARCHITECTURE.md, "Several nodes").
struct StreamAccess: Sendable {
    let gate: AccessGate
    let openStreams: OpenStreams
    let registry: ListRegistry
    let keys: SessionKeys
    let metrics: Metrics
    let signIns: SignIns
    let configuration: ServerConfiguration

    /// Records an event stream for revocation and re-checks; it leaves when it closes. A stream decided
    /// before a revocation that came since (`decidedAt`, the gate's count then) is decided again now,
    /// so that none slips between its decision and its start.
    func trackStream(
        _ stream: HTTPStream, request: HTTPRequest, identity: Identity?, session: String?, names: [ListName], decidedAt: Int,
        source: OpenStreams.Entry.Source
    ) {
        let kept = gate.authenticates || gate.hasReadToken ? Self.keptHead(of: request) : nil
        let entry = openStreams.add(
            stream, request: kept, identity: identity, session: session, sessionDigest: session.map(keys.revocationDigest), names: names,
            source: source)
        if gate.revocationCount != decidedAt {
            Task { await recheck([entry]) }
        }
    }

    /// What a stream keeps of its request to decide it again: the head that `authenticate` and the
    /// read-token check see, in storage of its exact size (no body, no route parameters).
    private static func keptHead(of request: HTTPRequest) -> HTTPRequest {
        var head = request
        head.body = []
        head.pathParameters = [:]
        head.query = []
        head.pathSegments = []
        head.headers = request.headers.compacted()
        return head
    }

    /// Runs the gate again for each stream and list, and ends the streams with a list it no longer
    /// allows, or whose viewer is now someone else (or has other roles).
    func recheck(_ entries: [OpenStreams.Entry]) async {
        for entry in entries where !entry.stream.isClosed {
            // No request kept: the server neither authenticates nor checks a read token, and nobody
            // signed in is who every request is.
            let subject = if let request = entry.request { await gate.subject(request) } else { AccessGate.Subject(identity: nil, isReader: false) }
            let names = entry.names.withLock { $0.all }
            if subject.identity != entry.identity {
                deny(entry, names)
                continue
            }
            var refused: [ListName] = []
            for name in names {
                if case .allowed = await gate.decide(subject, name) { continue }
                refused.append(name)
            }
            if !refused.isEmpty {
                deny(entry, refused)
            }
        }
    }

    /// Ends the streams of the browser session that `request` carries, whatever the rules say, on every
    /// node: what signing out does (see ``LiveListApp/endStreams(ofSessionIn:)``).
    func endSession(of request: HTTPRequest) {
        guard let session = keys.session(from: request) else { return }
        metrics.revoked()
        let digest = keys.revocationDigest(of: session)
        gate.countRevocation()
        endStreams(ofSessions: [digest])
        Task { await share(.session(digest)) }
    }

    /// Ends the streams of the browser sessions that `digests` name, whatever the rules say.
    func endStreams(ofSessions digests: Set<String>) {
        for entry in openStreams.select({ $0.sessionDigest.map(digests.contains) ?? false }) {
            deny(entry, entry.names.withLock { $0.all })
        }
    }

    /// Tells the stream's page that `names` are refused, and ends the stream: nothing more is sent on
    /// it, so no list can slip through before it leaves the list's subscribers. The page reconnects
    /// for its other lists, and that connection is decided anew.
    func deny(_ entry: OpenStreams.Entry, _ names: [ListName]) {
        let denied = entry.names.withLock { held -> [ListName] in
            let denied = names.filter(held.contains)
            held.removeAll(where: denied.contains)
            return denied
        }
        guard !denied.isEmpty else { return }
        for name in denied {
            metrics.streamDenied()
            _ = entry.stream.write(ServerSentEvent(event: "denied", data: "{\"list\":\"\(name.rawValue)\"}").encoded)
        }
        entry.stream.close()
    }

    /// Re-checks every open stream at the configured interval, until cancelled.
    func recheckPeriodically() async {
        let interval = configuration.accessRecheckInterval
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            if gate.authenticates || gate.hasReadToken {
                await revokeHere([.everything])
            }
        }
    }

    // MARK: - Revocations

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
            case let .signInEnded(ended):
                // Refused from now on; the sign-out's node also names its identity, whose streams are checked.
                signIns.ended.add([ended], now: SignIns.now())
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
        if case let .failure(error) = await offThePool({ () throws(StoreError) in try registry.recordRevocation(revocation) }) {
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
            switch await offThePool({ () throws(StoreError) in try registry.revocations(after: asked) }) {
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
}

/// Runs a blocking store call on a thread of Dispatch's, not of Swift's cooperative pool.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) async -> Result<T, StoreError> {
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
