/// Chooses a handler by method and path pattern.
///
/// Patterns are segments separated by `/`: literal text, `:name` (one segment, captured into
/// `pathParameters["name"]`) or, last, `*name` (the rest of the path, possibly empty). Patterns
/// match the decoded, normalised path; a trailing slash is ignored. `GET` routes also answer
/// `HEAD`. A path that some route matches with another method gets 405 with `Allow`; a path no
/// route matches goes to `fallback`, or gets 404.
///
/// The handler checks the head of a request that announces a body before the body is read: 404
/// and 405 are answered then, and a route's own head check (`HTTPHandler.checkingHeads`) runs
/// with the path parameters captured.
public struct Router: Sendable {
    private struct Route: Sendable {
        var method: HTTPMethod
        var pattern: [Segment]
        var text: String
        var handler: HTTPHandler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case rest(String)
    }

    private var routes: [Route] = []
    /// Answers requests whose path no route matches (for example `StaticFiles`).
    public var fallback: HTTPHandler?
    /// Shapes the 404 and 405 responses.
    public var errorFormatter: HTTPErrorFormatter

    public init(errorFormatter: @escaping HTTPErrorFormatter = defaultHTTPErrorFormatter) {
        self.errorFormatter = errorFormatter
    }

    /// Adds a route.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: HTTPHandler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            if part.hasPrefix(":") { return .parameter(String(part.dropFirst())) }
            if part.hasPrefix("*") { return .rest(String(part.dropFirst())) }
            return .literal(String(part))
        }
        routes.append(Route(method: method, pattern: segments, text: pattern, handler: handler))
    }

    /// Every route's method and pattern, in the order added: what a test that must cover every route
    /// (also those added later) enumerates.
    package var patterns: [(method: HTTPMethod, pattern: String)] {
        routes.map { ($0.method, $0.text) }
    }

    /// Adds a route answered synchronously on the event loop.
    public mutating func on(_ method: HTTPMethod, _ pattern: String, _ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        add(method, pattern, .sync(body))
    }

    /// Adds a route answered by an `async` closure.
    public mutating func on(_ method: HTTPMethod, _ pattern: String, _ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) {
        add(method, pattern, .async(body))
    }

    /// The handler to give the server.
    public var handler: HTTPHandler {
        let router = self
        return HTTPHandler.dispatch { request in router.choose(&request) }
            .checkingHeads { head in router.checkHead(head) }
            .withBodyLimit { head in router.bodyLimit(head) }
    }

    /// The largest body the route of `head` reads: its own limit (`HTTPHandler.acceptingBodies`),
    /// else none for the methods whose requests carry no content (`GET`, `HEAD`, `DELETE`,
    /// `OPTIONS`), else the server's limit (nil).
    func bodyLimit(_ head: HTTPRequest) -> Int? {
        switch select(head) {
        case let .route(handler, parameters):
            var head = head
            head.pathParameters = parameters
            if let limit = handler.bodyLimit { return limit(head) }
        case let .fallback(handler):
            if let limit = handler.bodyLimit { return limit(head) }
        case .notAllowed, .notFound:
            break
        }
        switch head.method {
        case .GET, .HEAD, .DELETE, .OPTIONS: return 0
        default: return nil
        }
    }

    /// What a request's method and path lead to.
    private enum Choice {
        case route(HTTPHandler, [String: String])
        case notAllowed(allow: String)
        case fallback(HTTPHandler)
        case notFound
    }

    private func select(_ request: HTTPRequest) -> Choice {
        var allowed: Set<HTTPMethod> = []
        var headFallback: Route?
        let segments = request.pathSegments
        // Routes are tried without building anything; only the chosen one captures its parameters.
        for route in routes where Self.matches(route.pattern, segments) {
            if route.method == request.method { return .route(route.handler, Self.parameters(route.pattern, segments)) }
            if request.method == .HEAD, route.method == .GET, headFallback == nil { headFallback = route }
            allowed.insert(route.method)
            if route.method == .GET { allowed.insert(.HEAD) }
        }
        if let route = headFallback { return .route(route.handler, Self.parameters(route.pattern, segments)) }
        if !allowed.isEmpty {
            return .notAllowed(allow: HTTPMethod.allCases.filter(allowed.contains).map(\.rawValue).joined(separator: ", "))
        }
        if let fallback { return .fallback(fallback) }
        return .notFound
    }

    func choose(_ request: inout HTTPRequest) -> HTTPHandler {
        switch select(request) {
        case let .route(handler, parameters):
            request.pathParameters = parameters
            return handler
        case let .fallback(handler):
            return handler
        case let .notAllowed(allow):
            let response = methodNotAllowed(request, allow: allow)
            return .sync { _ in response }
        case .notFound:
            let response = notFound(request)
            return .sync { _ in response }
        }
    }

    /// The answer decided by the head alone: 404, 405, or the chosen handler's own head check.
    func checkHead(_ head: HTTPRequest) -> HTTPResponse? {
        switch select(head) {
        case let .route(handler, parameters):
            guard let check = handler.headCheck else { return nil }
            var head = head
            head.pathParameters = parameters
            return check(head)
        case let .fallback(handler):
            return handler.headCheck?(head)
        case let .notAllowed(allow):
            return methodNotAllowed(head, allow: allow)
        case .notFound:
            return notFound(head)
        }
    }

    private func methodNotAllowed(_ request: HTTPRequest, allow: String) -> HTTPResponse {
        var response = HTTPResponse.error(
            HTTPError(.methodNotAllowed, code: "method_not_allowed", detail: "\(request.method.rawValue) is not allowed here"),
            formatter: errorFormatter)
        response.headers.set("Allow", allow)
        return response
    }

    private func notFound(_ request: HTTPRequest) -> HTTPResponse {
        HTTPResponse.error(HTTPError(.notFound, code: "not_found", detail: "\(request.path) does not exist"), formatter: errorFormatter)
    }

    /// Whether `segments` match `pattern`.
    private static func matches(_ pattern: [Segment], _ segments: [String]) -> Bool {
        for (index, part) in pattern.enumerated() {
            switch part {
            case .literal(let text):
                guard index < segments.count, segments[index] == text else { return false }
            case .parameter:
                guard index < segments.count else { return false }
            case .rest:
                return true
            }
        }
        return pattern.count == segments.count
    }

    /// The parameters that `pattern` captures from `segments`, which match it.
    private static func parameters(_ pattern: [Segment], _ segments: [String]) -> [String: String] {
        var parameters: [String: String] = [:]
        for (index, part) in pattern.enumerated() {
            switch part {
            case .literal:
                continue
            case .parameter(let name):
                parameters[name] = segments[index]
            case .rest(let name):
                parameters[name] = segments[index...].joined(separator: "/")
                return parameters
            }
        }
        return parameters
    }
}
