import LiveListEngine
import LiveListHTML
import LiveListHTTP

/// What a script or the client reads of a list besides its page: `GET /lists/NAME/changes` and
/// `GET /lists/NAME/cells` (docs/PROTOCOL.md, "Catching up" and "The range route").
struct ListReadRoutes: Sendable {
    let listAccess: ListAccess
    let keys: SessionKeys

    /// The version the query parameter `name` gives: nil when there is none, 400 `malformed_since` when it
    /// is not a version.
    static func versionQuery(_ name: String, of request: HTTPRequest) -> Result<Int?, RefusedAnswer> {
        guard let text = request.queryValue(name) else { return .success(nil) }
        guard let version = ListVersion.parse(text) else {
            return .failure(RefusedAnswer(errorResponse(.malformedSince, "\(name): \(quoted(text)) is not a version (a non-negative integer)")))
        }
        return .success(version)
    }

    /// `GET /lists/NAME/changes?since=V`: one changeset from V to now.
    func changes(_ request: HTTPRequest) async -> HTTPResponse {
        let list: any ServedList
        let identity: Identity?
        switch await listAccess.guardedList(request) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        let since: Int
        switch Self.versionQuery("since", of: request) {
        case let .success(version?): since = version
        case .success(nil): return errorResponse(.malformedSince, "since: missing; ask for changes?since=VERSION")
        case let .failure(answer): return answer.response
        }
        let viewer = Viewer(session: self.keys.session(from: request), identity: identity)
        var response = HTTPResponse.json(await list.changes(since: since, for: viewer).encodedJSON())
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// `GET /lists/NAME/cells?from=I&count=N[&version=V][&keys=1]`: the cells of a windowed list that
    /// scroll into view, at the current version, with the changeset that brings a client at V there
    /// (docs/PROTOCOL.md, "Windowed lists").
    func cells(_ request: HTTPRequest) async -> HTTPResponse {
        let list: any ServedList
        let identity: Identity?
        switch await listAccess.guardedList(request) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        func number(_ name: String, default value: Int?, limit: Int) -> Result<Int, HTTPError> {
            guard let text = request.queryValue(name) else {
                return value.map { .success($0) } ?? .failure(ErrorCode.malformedRange.error("\(name): missing"))
            }
            guard let number = ListVersion.parse(text), number <= limit else {
                return .failure(ErrorCode.malformedRange.error("\(name): \(quoted(text)) is not an integer from 0 to \(limit)"))
            }
            return .success(number)
        }
        let from: Int
        let count: Int
        switch (number("from", default: 0, limit: Int(Int32.max)), number("count", default: nil, limit: Self.maximumRangeCount)) {
        case let (.success(first), .success(size)): (from, count) = (first, size)
        case let (.failure(error), _), let (_, .failure(error)): return errorResponse(error)
        }
        let since: Int?
        switch Self.versionQuery("version", of: request) {
        case let .success(version): since = version
        case let .failure(answer): return answer.response
        }
        let keys: Bool
        switch request.queryValue("keys") {
        case nil, "0": keys = false
        case "1": keys = true
        case let text?: return errorResponse(.malformedRange, "keys: \(quoted(text)) is not 0 or 1")
        }
        let viewer = Viewer(session: self.keys.session(from: request), identity: identity)
        var response = HTTPResponse.json(await list.window(from: from, count: count, since: since, keys: keys, for: viewer))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// The most cells one range request may ask for.
    static let maximumRangeCount = 1_000
}
