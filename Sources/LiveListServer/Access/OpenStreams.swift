import Synchronization
import LiveListEngine
import LiveListHTTP

/// The event streams open on this node, with what their access was decided on: the request's head
/// (to run `authenticate` again), the identity it gave, its session's revocation digest, and the lists
/// still granted.
/// Revocation and the periodic re-check read it; a stream leaves it when it closes. A multiplexed
/// stream is also found by its token, for the requests that change its lists.
final class OpenStreams: Sendable {
    final class Entry: Sendable {
        /// The stream's request head, kept to run `authenticate` and the read-token check again; nil
        /// when the server does neither (its access then depends on no header).
        private let head: KeptRequest?
        var request: HTTPRequest? { head?.request }
        /// The identity its access was decided for, on the heap: nobody signed in costs a word.
        private let decidedFor: KeptIdentity?
        var identity: Identity? { decidedFor?.identity }
        var identityID: String? { identity?.id }
        /// What names its browser session in a revocation (``SessionKeys/revocationDigest(of:)``),
        /// made once when the stream opens.
        let sessionDigest: String?
        let stream: HTTPStream
        /// The lists the stream is still granted.
        let names: Mutex<[ListName]>
        /// What changes a multiplexed stream's lists; nil for a list's own stream.
        let control: StreamControl?

        init(request: HTTPRequest?, identity: Identity?, sessionDigest: String?, stream: HTTPStream, names: [ListName],
             control: StreamControl? = nil) {
            head = request.map(KeptRequest.init)
            decidedFor = identity.map(KeptIdentity.init)
            self.sessionDigest = sessionDigest
            self.stream = stream
            self.names = Mutex(names)
            self.control = control
        }
    }

    /// An identity held on the heap, so that an entry without one is small.
    private final class KeptIdentity: Sendable {
        let identity: Identity

        init(_ identity: Identity) {
            self.identity = identity
        }
    }

    /// A request held on the heap, so that an entry without one is small.
    private final class KeptRequest: Sendable {
        let request: HTTPRequest

        init(_ request: HTTPRequest) {
            self.request = request
        }
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var byToken: [String: Entry] = [:]
    }

    private let state = Mutex(State())

    func add(_ entry: Entry) {
        state.withLock { state in
            state.entries[ObjectIdentifier(entry.stream)] = entry
            if let token = entry.control?.token {
                state.byToken[token] = entry
            }
        }
    }

    func remove(_ stream: HTTPStream) {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: ObjectIdentifier(stream)) else { return }
            if let token = entry.control?.token {
                state.byToken.removeValue(forKey: token)
            }
        }
    }

    /// The open multiplexed stream that `token` names.
    func entry(token: String) -> Entry? {
        state.withLock { $0.byToken[token] }
    }

    /// The open streams that `include` selects.
    func select(_ include: (Entry) -> Bool) -> [Entry] {
        state.withLock { state in state.entries.values.filter(include) }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

/// What lets lists join and leave an open multiplexed stream (`POST /events/TOKEN`): the token that
/// names it (sent as the stream's first event), its state, the session it was opened with, and a
/// chain that runs its changes one at a time, in the order they came.
final class StreamControl: Sendable {
    let token: String
    let multiplexed: MultiplexedStream
    /// The session of the request that opened the stream: a change must come from the same one.
    let session: String?
    private let last = Mutex<Task<Void, Never>?>(nil)

    init(token: String, multiplexed: MultiplexedStream, session: String?) {
        self.token = token
        self.multiplexed = multiplexed
        self.session = session
    }

    /// Runs `change` once every change that came before it has run.
    func serially<Result: Sendable>(_ change: @escaping @Sendable () async -> Result) async -> Result {
        let task = last.withLock { last -> Task<Result, Never> in
            let previous = last
            let task = Task {
                await previous?.value
                return await change()
            }
            last = Task { _ = await task.value }
            return task
        }
        return await task.value
    }
}
