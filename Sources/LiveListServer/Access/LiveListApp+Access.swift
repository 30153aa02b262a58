import LiveListEngine
import LiveListHTML
public import LiveListHTTP

extension LiveListApp {
    // MARK: - What apps call

    /// Tells the server who a request's viewer is. Once set, every list needs a rule
    /// (``access(_:_:)``): a list without one is refused, as is a list whose rule throws. Every route
    /// that reads or acts on a list runs `body` (docs/PROTOCOL.md, "Access"), and so does every
    /// re-check of an open stream.
    ///
    ///     app.authenticate { head in
    ///         head.cookie("board_user").flatMap(app.verified).map { Identity(id: $0) }
    ///     }
    public func authenticate(_ body: @escaping Authenticate) {
        gate.setAuthenticate(body)
    }

    /// Gives the list `name` its access rule: what an identity (nil when nobody is signed in) may do.
    /// A rule may be given before the list exists; giving one again replaces it and re-checks the
    /// list's open streams.
    ///
    ///     try await app.access("team") { identity in identity == nil ? .none : .all }
    ///
    /// - Throws: `StartupError` when `name` is not a list name.
    public func access(_ name: String, _ rule: @escaping AccessRule) async throws {
        guard let listName = ListName(name) else {
            throw StartupError("\"\(name)\" is not a list name: names match [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        }
        gate.setRule(rule, for: listName)
        gate.countRevocation()
        await recheck(openStreams.select { $0.names.withLock { $0.contains(listName) } })
    }

    /// The app's sign-in route (`/login`): a page navigation that a rule refuses for want of a viewer is
    /// redirected there with `next=` (the path it asked for, same-origin only) instead of 401.
    ///
    /// - Throws: `StartupError` when `path` is not an absolute path of this origin.
    public func signIn(at path: String) throws {
        guard Self.isSameOriginPath(path) else {
            throw StartupError("\"\(path)\" is not a path of this server (it must start with one \"/\")")
        }
        gate.setSignInPath(path)
    }

    /// Says that what `identity` may see changed: its open streams are re-checked at once (the app's
    /// `authenticate` and the lists' rules run again) and those no longer allowed are told `denied`
    /// and closed. With several nodes on one database, the revocation is kept there and every other
    /// node re-checks within ``ServerConfiguration/revocationPollInterval`` of reading it, after it
    /// has caught up with every write made before it: change what the rules read first, then revoke.
    public func revoke(identity: String) async {
        metrics.revoked()
        await revokeHere([.identity(identity)])
        await share(.identity(identity))
    }

    /// Says that who may see the list `name` changed: its open streams are re-checked at once, on
    /// every node (see ``revoke(identity:)``).
    public func revoke(list name: String) async {
        guard let listName = ListName(name) else { return }
        metrics.revoked()
        await revokeHere([.list(listName.rawValue)])
        await share(.list(listName.rawValue))
    }

    /// Re-checks every open stream now, on every node (see ``revoke(identity:)``).
    public func recheckAllStreams() async {
        await revokeHere([.everything])
        await share(.everything)
    }

    /// Ends the streams of the browser session that `request` carries, whatever the rules say, on
    /// every node: what signing out does. Its pages are told `denied`; their next connection asks
    /// again. Other nodes end theirs within about a second (see ``revoke(identity:)``).
    public func endStreams(ofSessionIn request: HTTPRequest) {
        guard let session = keys.session(from: request) else { return }
        metrics.revoked()
        let digest = keys.revocationDigest(of: session)
        gate.countRevocation()
        endStreams(ofSessions: [digest])
        Task { await share(.session(digest)) }
    }

    // MARK: - What the routes ask

    /// The list the route's `:name` names, if the request may see it: the gate decides first, so that
    /// a refusal never depends on whether the list exists. A viewer signed in but refused gets exactly
    /// the answer of a list that does not exist; nobody signed in gets 401 (or, for a page navigation,
    /// the sign-in route).
    func guardedList(_ request: HTTPRequest, navigable: Bool = false) async -> Result<(list: any ServedList, access: Access, identity: Identity?), RefusedAnswer> {
        guard let raw = request.pathParameters["name"], let name = ListName(raw) else {
            return .failure(RefusedAnswer(missingList(request.pathParameters["name"] ?? "")))
        }
        switch await gate.decide(request, name) {
        case let .signInNeeded(rule):
            return .failure(RefusedAnswer(signInAnswer(request, rule: rule, navigable: navigable)))
        case let .denied(rule):
            return .failure(RefusedAnswer(deniedAnswer(request, name, rule: rule)))
        case let .allowed(access, identity):
            guard let list = registry.existingList(name) else {
                return .failure(RefusedAnswer(missingList(name.rawValue)))
            }
            return .success((list, access, identity))
        }
    }

    /// The answer for a name that no list has.
    func missingList(_ name: String) -> HTTPResponse {
        if let listName = ListName(name) {
            return errorResponse(.notFound, "no list named \(listName)")
        }
        return errorResponse(.notFound, "no list named \(quoted(name))")
    }

    /// A viewer signed in but refused: the answer of a missing list, byte for byte.
    func deniedAnswer(_ request: HTTPRequest, _ name: ListName, rule: String) -> HTTPResponse {
        metrics.refused(.denied)
        let answer = missingList(name.rawValue)
        logRefusal(request, answer, kind: "denied", rule: rule)
        return answer
    }

    /// Nobody signed in where a rule needs someone: 401, or for a page navigation a redirect to the
    /// sign-in route with the path asked for as `next`. The answer is the same whether the list exists.
    func signInAnswer(_ request: HTTPRequest, rule: String, navigable: Bool) -> HTTPResponse {
        let answer = signInResponse(request, rule: rule, navigable: navigable)
        metrics.refused(.unauthenticated)
        logRefusal(request, answer, kind: "unauthenticated", rule: rule)
        return answer
    }

    private func signInResponse(_ request: HTTPRequest, rule: String, navigable: Bool) -> HTTPResponse {
        let isReadToken = rule == "read-token"
        if navigable, request.method == .GET || request.method == .HEAD, request.prefersHTML,
            let path = gate.signInPath(readTokenRefused: isReadToken)
        {
            var response = HTTPResponse(status: .seeOther)
            response.headers.set("Location", path + "?next=" + percentEncoded(Self.sameOriginNext(request.target), keepingSlashes: true))
            response.headers.set("Cache-Control", "no-store")
            return response
        }
        let challenge = isReadToken ? "Bearer realm=\"livelist\"" : "Session realm=\"livelist\""
        return errorResponse(.signInRequired, isReadToken ? "this list needs the read token: Authorization: Bearer TOKEN" : "sign in to see this list",
                             headers: ["WWW-Authenticate": challenge, "Cache-Control": "no-store"])
    }

    private func logRefusal(_ request: HTTPRequest, _ answer: HTTPResponse, kind: String, rule: String) {
        guard logsAccess else { return }
        var entry = Self.accessEntry(request, answer, trustedProxies: trustedProxies)
        entry.event = "refused"
        entry.fields.insert(contentsOf: [("refusal", .text(kind)), ("rule", .text(rule))], at: 0)
        entry.line = "refused \(kind) by rule \(rule): " + entry.line
        logAccess(entry)
    }

    // MARK: - Streams

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

    // MARK: - Paths

    /// Whether `path` is an absolute path on this origin: one leading `/`, no backslash, no control.
    static func isSameOriginPath(_ path: String) -> Bool {
        path.hasPrefix("/") && !path.hasPrefix("//") && !path.contains("\\") && !path.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7F }
    }

    /// `target` when it is a same-origin path, else `/`.
    static func sameOriginNext(_ target: String) -> String {
        isSameOriginPath(target) ? target : "/"
    }
}

/// A route's refusal, carried out of ``LiveListApp/guardedList(_:navigable:)``.
struct RefusedAnswer: Error {
    let response: HTTPResponse

    init(_ response: HTTPResponse) {
        self.response = response
    }
}
