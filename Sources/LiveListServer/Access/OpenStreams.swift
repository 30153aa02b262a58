import Synchronization
import LiveListEngine
import LiveListHTTP

/// The event streams open on this node, with what their access was decided on: the request's head
/// (to run `authenticate` again), the identity it gave, its session's revocation digest, and the lists
/// still granted.
/// Revocation and the periodic re-check read it; a stream leaves it when it closes. A multiplexed
/// stream is also found by its token, for the requests that change its lists.
///
/// An idle stream is held by many objects (its connection, its `HTTPStream`, its subscription, this
/// entry): the entry is one allocation, and its close handler captures nothing but the entry.
final class OpenStreams: Sendable {
    final class Entry: Sendable {
        /// What its access was decided on, on the heap: a stream of nobody signed in, without a session
        /// and on a server that neither authenticates nor checks a read token, keeps a nil word.
        private let kept: Kept?
        /// The stream's request head, kept to run `authenticate` and the read-token check again; nil
        /// when the server does neither (its access then depends on no header).
        var request: HTTPRequest? { kept?.request }
        /// The identity its access was decided for.
        var identity: Identity? { kept?.identity }
        var identityID: String? { identity?.id }
        /// What names its browser session in a revocation (``SessionKeys/revocationDigest(of:)``),
        /// made once when the stream opens.
        var sessionDigest: String? { kept?.sessionDigest }
        let stream: HTTPStream
        /// The lists the stream is still granted.
        let names: Mutex<GrantedLists>
        /// What the stream reads: one list, or the lists of a multiplexed stream.
        private let source: Source
        /// The table it is in, which also holds what a closing stream tells.
        private let table: OpenStreams

        enum Source: Sendable {
            /// A list's own stream.
            case list(any ServedList)
            /// A multiplexed stream, with what changes its lists.
            case multiplexed(StreamControl)

            /// The lists the stream asked for, as its session records them.
            var requested: [String] {
                switch self {
                case let .list(list): [list.name.rawValue]
                case let .multiplexed(control): control.multiplexed.names
                }
            }
        }

        /// What changes a multiplexed stream's lists; nil for a list's own stream.
        var control: StreamControl? {
            if case let .multiplexed(control) = source { return control }
            return nil
        }

        fileprivate init(
            request: HTTPRequest?, identity: Identity?, session: String?, sessionDigest: String?, stream: HTTPStream,
            names: [ListName], source: Source, table: OpenStreams
        ) {
            kept = request == nil && identity == nil && session == nil
                ? nil : Kept(request: request, identity: identity, session: session, sessionDigest: sessionDigest)
            self.stream = stream
            self.names = Mutex(GrantedLists(names))
            self.source = source
            self.table = table
        }

        /// The stream ended: it leaves the table, its session and its lists.
        fileprivate func closed() {
            table.metrics.streamClosed()
            table.remove(stream)
            if let session = kept?.session {
                table.sessions.streamClosed(session)
            }
            let stream = self.stream
            switch source {
            case let .list(list):
                Task { await list.unsubscribe(stream) }
            case let .multiplexed(control):
                // Leaves every list the stream named, and forgets the names only it waited on.
                let registry = table.registry
                Task { await registry.forget(control.multiplexed) }
            }
        }
    }

    /// What a stream's access was decided on, and its browser session.
    private final class Kept: Sendable {
        let request: HTTPRequest?
        let identity: Identity?
        /// The browser session it was opened with, for the session table.
        let session: String?
        let sessionDigest: String?

        init(request: HTTPRequest?, identity: Identity?, session: String?, sessionDigest: String?) {
            self.request = request
            self.identity = identity
            self.session = session
            self.sessionDigest = sessionDigest
        }
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var byToken: [String: Entry] = [:]
    }

    private let state = Mutex(State())
    fileprivate let metrics: Metrics
    fileprivate let sessions: SessionTable
    fileprivate let registry: ListRegistry

    init(metrics: Metrics, sessions: SessionTable, registry: ListRegistry) {
        self.metrics = metrics
        self.sessions = sessions
        self.registry = registry
    }

    /// Records an open stream (counted, and in its session's record) and undoes it all when the stream
    /// ends (an entry of a stream that ended already is not kept).
    @discardableResult
    func add(
        _ stream: HTTPStream, request: HTTPRequest?, identity: Identity?, session: String?, sessionDigest: String?,
        names: [ListName], source: Entry.Source
    ) -> Entry {
        metrics.streamOpened()
        if let session {
            _ = sessions.streamOpened(session, lists: source.requested)
        }
        let entry = Entry(
            request: request, identity: identity, session: session, sessionDigest: sessionDigest, stream: stream, names: names,
            source: source, table: self)
        state.withLock { state in
            state.entries[ObjectIdentifier(entry.stream)] = entry
            if let token = entry.control?.token {
                state.byToken[token] = entry
            }
        }
        // Captures the entry alone: the closure needs no storage of its own.
        stream.onClose { [entry] _ in entry.closed() }
        return entry
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

/// The lists a stream is still granted, in order: the first inline, so that a list's own stream (one
/// list) allocates nothing for them.
struct GrantedLists: Sendable {
    private var first: ListName?
    private var more: [ListName] = []

    init(_ names: [ListName]) {
        first = names.first
        more = Array(names.dropFirst())
    }

    /// The lists, in order.
    var all: [ListName] { first.map { [$0] + more } ?? [] }

    func contains(_ name: ListName) -> Bool {
        first == name || more.contains(name)
    }

    /// Whether any of `names` is granted.
    func containsAny(of names: Set<ListName>) -> Bool {
        first.map(names.contains) == true || more.contains(where: names.contains)
    }

    mutating func append(contentsOf names: [ListName]) {
        for name in names {
            if first == nil { first = name } else { more.append(name) }
        }
    }

    /// Removes the lists `remove` selects.
    mutating func removeAll(where remove: (ListName) -> Bool) {
        var kept = all
        kept.removeAll(where: remove)
        self = GrantedLists(kept)
    }
}

/// What lets lists join and leave an open multiplexed stream (`POST /events/TOKEN`): the token that
/// names it (sent as the stream's first event), its state, the session it was opened with, and a
/// chain that runs its changes one at a time, in the order they came.
final class StreamControl: Sendable {
    /// What names the stream to the requests that change its lists; nil for a stream opened without a
    /// browser session, whose lists nobody may change.
    let token: String?
    let multiplexed: MultiplexedStream
    /// The session of the request that opened the stream: a change must come from the same one.
    let session: String?
    private let last = Mutex<Task<Void, Never>?>(nil)

    init(token: String?, multiplexed: MultiplexedStream, session: String?) {
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
