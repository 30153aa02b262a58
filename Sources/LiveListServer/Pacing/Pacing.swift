import LiveListHTTP

/// The pace of what a client sends (``ActionPace``): actions and the app's paced routes per session
/// and per client address, and the cells named by visibility reports (200 for each action of the
/// actions' pace, so 2,000 a second after 10,000 by default). Nil pacers when actions are not paced.
struct Pacing: Sendable {
    let actions: ActionPacer?
    let visibility: ActionPacer?
    let metrics: Metrics
    let trustedProxies: TrustedProxies

    /// The most cells one batched visibility report may name.
    static let maximumReportedCells = 1_000

    init(pace: ActionPace?, metrics: Metrics, trustedProxies: TrustedProxies) {
        actions = pace.map { ActionPacer(pace: $0) }
        visibility = pace.map { pace in
            ActionPacer(pace: ActionPace(rate: pace.rate * 200, burst: max(Self.maximumReportedCells, pace.burst * 250)))
        }
        self.metrics = metrics
        self.trustedProxies = trustedProxies
    }

    /// Whether an action's type is a visibility report (`visible`, `hidden`): paced by the cells it
    /// names, possibly many at once.
    static func isVisibilityReport(_ type: String) -> Bool {
        type == "visible" || type == "hidden"
    }

    /// 429 when the session, or the client's address, sends actions faster than the pace allows; nil
    /// when the action may go on (and it is counted). A visibility report is paced by its cells
    /// (``visibility(cells:session:_:)``), not here.
    func action(_ type: String, session: String, _ request: HTTPRequest) -> HTTPResponse? {
        guard !Self.isVisibilityReport(type) else { return nil }
        return pace(session: session, request, what: "actions", from: "page")
    }

    /// 429 when the session (if any), or the client's address, goes faster than the pace allows; nil
    /// when the request may go on (and it is counted). Actions and the app's paced routes (sign-in
    /// attempts) share the one pacer.
    func pace(session: String?, _ request: HTTPRequest, what: String, from: String) -> HTTPResponse? {
        guard let actions else { return nil }
        guard let seconds = actions.take(keys(session: session, request)) else { return nil }
        metrics.actionPaced()
        let pace = actions.pace
        return errorResponse(.tooManyActions,
                             "more than \(pace.burst) \(what) at once or \(pace.rate == pace.rate.rounded() ? String(Int(pace.rate)) : String(pace.rate)) a second from this \(from) or address; wait \(seconds) s",
                             headers: ["Retry-After": String(seconds)])
    }

    /// 429 when the cells a visibility report names take the session or the address past their pace.
    func visibility(cells: Int, session: String, _ request: HTTPRequest) -> HTTPResponse? {
        guard let visibility, let seconds = visibility.take(keys(session: session, request), cost: cells) else { return nil }
        metrics.actionPaced()
        return errorResponse(.tooManyActions, "more cells reported visible or hidden than \(Int(visibility.pace.rate)) a second from this page or address; wait \(seconds) s",
                             headers: ["Retry-After": String(seconds)])
    }

    /// What a request is paced by: its session (if any) and its client's address.
    private func keys(session: String?, _ request: HTTPRequest) -> [String] {
        var keys: [String] = []
        if let session {
            keys.append("s:" + session)
        }
        if let address = trustedProxies.clientAddress(request) {
            keys.append("a:" + address)
        }
        return keys
    }
}
