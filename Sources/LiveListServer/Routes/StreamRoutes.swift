import LiveListEngine
import LiveListHTML
import LiveListHTTP

/// The event streams: a list's own (`GET /lists/NAME/events`) and the multiplexed one of a page or a
/// browser (`GET /events?list=…`), each opened with where it starts (docs/PROTOCOL.md, "Stream framing").
struct StreamRoutes: Sendable {
    let registry: ListRegistry
    let gate: AccessGate
    let listAccess: ListAccess
    let streamAccess: StreamAccess
    let keys: SessionKeys
    let metrics: Metrics
    let configuration: ServerConfiguration

    /// `GET /lists/NAME/events[?since=V]`: the list's changesets as Server-Sent Events.
    func events(_ request: HTTPRequest) async -> HTTPResponse {
        let decidedAt = gate.revocationCount
        let list: any ServedList
        let identity: Identity?
        switch await listAccess.guardedList(request) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        var since: Int?
        switch ListReadRoutes.versionQuery("since", of: request) {
        case let .success(version): since = version
        case let .failure(answer): return answer.response
        }
        if let lastEventID = request.headers["Last-Event-ID"] {
            // A restarted EventSource must recover by itself: a bad id gets a reset, never an error.
            since = ListVersion.parse(lastEventID) ?? -1
        }
        let session = keys.session(from: request)
        // Where the stream starts, decided before it opens: the client's version, else the list's now.
        // The opening says it, sent with the head, and the stream subscribes from it, so a write that
        // lands in between reaches the stream as a catch-up (docs/PROTOCOL.md, "Stream framing").
        let resume = since ?? list.currentVersion
        // A list name needs no escaping in JSON (ListName: letters, digits, `.`, `_`, `-`).
        let opening = ServerSentEvent(id: String(resume), event: "stream", data: #"{"protocol":1,"list":"\#(list.name.rawValue)","version":\#(resume)}"#)
        return HTTPResponse.eventStream(retry: configuration.retryMilliseconds, opening: opening, heartbeat: configuration.heartbeat) { [streamAccess] stream in
            streamAccess.trackStream(stream, request: request, identity: identity, session: session, names: [list.name], decidedAt: decidedAt,
                        source: .list(list))
            Task {
                let viewer = Viewer(session: session, identity: identity)
                // Ready before it subscribes (a live query's rows); a list out of service streams what it
                // shows, and what it shows once back.
                _ = await list.prepare(for: viewer)
                await list.subscribe(stream, since: resume, viewer: viewer)
            }
        }
    }

    /// `GET /events?list=A&list=B[&since=A:3,B:7]`: one stream for every list of a page.
    func multiplexedEvents(_ request: HTTPRequest) async -> HTTPResponse {
        let raw = request.queryValues("list")
        guard !raw.isEmpty else {
            return errorResponse(.missingList, "list: name at least one list (events?list=A&list=B)")
        }
        guard raw.count <= configuration.maximumListsPerStream else {
            return errorResponse(.tooManyLists, "list: \(raw.count) lists, more than the limit of \(configuration.maximumListsPerStream)")
        }
        var names: [ListName] = []
        for text in raw {
            guard let name = ListName(text) else {
                return listAccess.missingList(text)
            }
            if !names.contains(name) {
                names.append(name)
            }
        }
        var since: [String: Int] = [:]
        if let text = request.queryValue("since") {
            guard let vector = MultiplexedStream.parseVector(text) else {
                return errorResponse(.malformedSince, "since: \(quoted(text)) is not a version vector (A:3,B:7)")
            }
            since = vector
        }
        if let lastEventID = request.headers["Last-Event-ID"] {
            since = MultiplexedStream.parseVector(lastEventID) ?? Dictionary(uniqueKeysWithValues: names.map { ($0.rawValue, -1) })
        }
        // Each list is decided on its own: the stream carries those its viewer may see, and answers
        // the others as names of no list (an empty reset, never joined). Nobody signed in and no list
        // allowed: 401, as the single-list routes answer.
        let decidedAt = gate.revocationCount
        let subject = await gate.subject(request)
        let (allowed, refused, signInRule) = await listAccess.decideEach(names, for: subject)
        if allowed.isEmpty, let signInRule {
            return listAccess.signInAnswer(request, rule: signInRule, navigable: false)
        }
        if !refused.isEmpty {
            metrics.refused(subject.identity == nil ? .unauthenticated : .denied)
        }
        let session = keys.session(from: request)
        let listNames = names
        let registry = self.registry
        let resume = listAccess.startingVersions(of: names, since: since, allowed: allowed)
        let viewer = Viewer(session: session, identity: subject.identity)
        // Its opening says where each list starts (docs/PROTOCOL.md, "Stream framing") and names it to
        // the requests that add and drop its lists (POST /events/TOKEN), which only its browser session
        // may send: a stream opened without a session (a script's, with the read token) has no token,
        // and its lists are the ones it asked for.
        let token = session == nil ? nil : SessionKeys.mintToken()
        let versions = names.map { #""\#($0.rawValue)":\#(resume[$0.rawValue] ?? 0)"# }.joined(separator: ",")
        let member = token.map { #""stream":"\#($0)","# } ?? ""
        let opening = ServerSentEvent(id: MultiplexedStream.vector(names.map(\.rawValue), resume), event: "stream",
                                      data: #"{"protocol":1,\#(member)"versions":{\#(versions)}}"#)
        return HTTPResponse.eventStream(retry: configuration.retryMilliseconds, opening: opening, heartbeat: configuration.heartbeat) {
            [streamAccess, registry, allowed, refused] stream in
            let multiplexed = MultiplexedStream(sink: stream, names: listNames.map(\.rawValue), versions: resume)
            let control = StreamControl(token: token, multiplexed: multiplexed, session: session)
            streamAccess.trackStream(stream, request: request, identity: subject.identity, session: session, names: allowed, decidedAt: decidedAt,
                        source: .multiplexed(control))
            registry.refuse(multiplexed, names: refused, since: resume)
            guard !allowed.isEmpty else {
                // Nothing it may see: the refusals are all it gets.
                stream.close()
                return
            }
            Task { await registry.subscribe(multiplexed, names: allowed, since: resume, viewer: viewer) }
        }
    }
}
