import LiveListEngine
import LiveListHTML
import LiveListHTTP

/// What the routes ask the gate about a list: whether the request may see the list its path names,
/// and the answers that refuse it (the same for a list that does not exist: docs/PROTOCOL.md, "Access").
struct ListAccess: Sendable {
    let gate: AccessGate
    let registry: ListRegistry
    let metrics: Metrics
    let log: ServerLog

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
            guard let list = await registry.storedList(name) else {
                return .failure(RefusedAnswer(missingList(name.rawValue)))
            }
            if let problem = await list.prepare(for: Viewer(session: nil, identity: identity)) {
                return .failure(RefusedAnswer(outOfService(name, problem)))
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

    /// A list whose content cannot be read now (a live query that fails): 503, with the cause in the log
    /// (it may name the app's tables), not in the answer.
    func outOfService(_ name: ListName, _ problem: String) -> HTTPResponse {
        errorResponse(.listUnavailable, "list \(name) cannot be shown now: \(problem)")
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
            response.headers.set("Location", path + "?next=" + percentEncoded(SameOrigin.next(request.target), keepingSlashes: true))
            response.headers.set("Cache-Control", "no-store")
            return response
        }
        let challenge = isReadToken ? "Bearer realm=\"livelist\"" : "Session realm=\"livelist\""
        return errorResponse(.signInRequired, isReadToken ? "this list needs the read token: Authorization: Bearer TOKEN" : "sign in to see this list",
                             headers: ["WWW-Authenticate": challenge, "Cache-Control": "no-store"])
    }

    private func logRefusal(_ request: HTTPRequest, _ answer: HTTPResponse, kind: String, rule: String) {
        log.refusal(request, answer, kind: kind, rule: rule)
    }

    /// Each of `names` decided on its own for `subject`, as a multiplexed stream carries them: those it
    /// may view, the others, and the rule of the first refused for want of a viewer or of the read token.
    func decideEach(
        _ names: [ListName], for subject: AccessGate.Subject
    ) async -> (allowed: [ListName], refused: [ListName], signInRule: String?) {
        var allowed: [ListName] = []
        var refused: [ListName] = []
        var signInRule: String?
        for name in names {
            switch await gate.decide(subject, name) {
            case .allowed: allowed.append(name)
            case let .signInNeeded(rule):
                signInRule = signInRule ?? rule
                refused.append(name)
            case .denied:
                refused.append(name)
            }
        }
        return (allowed, refused, signInRule)
    }

    /// Where a multiplexed stream starts each of `names`, decided before it opens: the client's version
    /// (`since`), else for a list its viewer may see its version now, else 0 (a name without a list, and
    /// a refused list, whose version is never told). Each list subscribes from there, so that the
    /// opening's vector never claims a version that the stream would not deliver after it.
    func startingVersions(of names: [ListName], since: [String: Int], allowed: [ListName]) -> [String: Int] {
        var versions: [String: Int] = [:]
        for name in names {
            versions[name.rawValue] = since[name.rawValue] ?? (allowed.contains(name) ? registry.existingList(name)?.currentVersion : nil) ?? 0
        }
        return versions
    }
}

/// A route's refusal, carried out of ``ListAccess/guardedList(_:navigable:)``.
struct RefusedAnswer: Error {
    let response: HTTPResponse

    init(_ response: HTTPResponse) {
        self.response = response
    }
}

/// Paths of this origin, for redirects that a request names (`next=`).
enum SameOrigin {
    /// Whether `path` is an absolute path on this origin: one leading `/`, no backslash, no control.
    static func isPath(_ path: String) -> Bool {
        path.hasPrefix("/") && !path.hasPrefix("//") && !path.contains("\\") && !path.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7F }
    }

    /// `target` when it is a same-origin path, else `/`.
    static func next(_ target: String) -> String {
        isPath(target) ? target : "/"
    }
}
