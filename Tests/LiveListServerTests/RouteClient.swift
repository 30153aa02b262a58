import Foundation
import LiveListTestSupport
@testable import LiveListHTTP
import LiveListServer
import LiveListEngine

/// Drives a LiveList app's HTTP handler in process: a request goes in, the response comes out, with no
/// socket, event loop or parser between them, so a route's behaviour is checked in milliseconds.
///
/// It does what the server's connection does with a parsed request (see `Connection` in LiveListHTTP):
/// a request with a body goes first to the handler's head check, whose answer, if any, is final (the
/// body is never read); otherwise the handler answers. A `HEAD` answer has the headers of a `GET` and
/// no body. `Content-Length` is added as the server would add it.
///
/// The app is built from `ServerConfiguration` alone (the repository's templates and static files, a
/// fresh data directory), through its public API, so that these tests do not depend on how the server
/// module is split inside.
///
/// Event streams: a `.stream` body is started by the connection with an `HTTPStream`, which needs a
/// connection on a running event loop, so the client cannot read events. For a stream it gives the
/// status, the headers and the bytes sent with the head (`body`); the events themselves are tested
/// over real sockets (EndToEndTests/StreamTests, LiveListHTTPTests/StreamAndShutdownTests).
final class RouteClient: Sendable {
    let app: LiveListApp
    /// The app's handler, built for each request so that routes the app adds later are served.
    var handler: HTTPHandler { app.handler }
    /// The data directory, removed when the client goes.
    let dataDirectory: String

    /// The repository's root (this file is Tests/LiveListServerTests/RouteClient.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// A client of a new app on `store` (by default a file store in a fresh data directory);
    /// `configure` changes the configuration before the app starts.
    init(store: (any ListStore)? = nil, _ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws {
        var configuration = ServerConfiguration()
        configuration.templatesDirectory = Self.root + "/Templates"
        configuration.publicDirectory = Self.root + "/Public"
        configuration.dataDirectory = NSTemporaryDirectory() + "livelist-routes-\(UUID().uuidString)"
        configure(&configuration)
        dataDirectory = configuration.dataDirectory
        if let store {
            app = try await LiveListApp(configuration: configuration, store: store)
        } else {
            app = try await LiveListApp(configuration: configuration)
        }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    func get(_ target: String, headers: [(String, String)] = [], from address: String = "127.0.0.1") async throws -> RouteResponse {
        try await send(.GET, target, headers: headers, from: address)
    }

    func head(_ target: String, headers: [(String, String)] = [], from address: String = "127.0.0.1") async throws -> RouteResponse {
        try await send(.HEAD, target, headers: headers, from: address)
    }

    func put(_ target: String, headers: [(String, String)] = [], body: [UInt8] = [], from address: String = "127.0.0.1") async throws -> RouteResponse {
        try await send(.PUT, target, headers: headers, body: body, from: address)
    }

    /// A PUT of `json` as `application/json`.
    func put(_ target: String, json: String, headers: [(String, String)] = [], from address: String = "127.0.0.1") async throws -> RouteResponse {
        try await send(.PUT, target, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8), from: address)
    }

    /// Creates or replaces the JSON-driven list `list` with one section of `cells`, from loopback.
    @discardableResult
    func put(_ list: String, _ cells: [String]) async throws -> RouteResponse {
        try await send(.PUT, "/lists/\(list)", headers: [("Content-Type", "application/json")], body: jsonBody(cells))
    }

    func post(_ target: String, headers: [(String, String)] = [], body: [UInt8] = [], from address: String = "127.0.0.1") async throws -> RouteResponse {
        try await send(.POST, target, headers: headers, body: body, from: address)
    }

    func delete(_ target: String, headers: [(String, String)] = [], from address: String = "127.0.0.1") async throws -> RouteResponse {
        try await send(.DELETE, target, headers: headers, from: address)
    }

    /// Sends one request. `target` is the request target as on the request line (path and query,
    /// percent-encoded); a target the server's parser refuses throws its `HTTPError`.
    func send(_ method: HTTPMethod, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
              from address: String = "127.0.0.1") async throws -> RouteResponse {
        var request = try HTTPRequest.inProcess(method, target, headers: headers, body: body, from: address).get()
        request.body = []
        let fields = request.headers
        // A request that announces a body is decided from its head first, as the connection does it.
        let chunked = fields.contains("Transfer-Encoding")
        let length = Int(fields["Content-Length"] ?? "") ?? 0
        if chunked || length > 0 {
            let http = app.httpConfiguration
            switch handler.decideBeforeBody(request, contentLength: chunked ? nil : length, serverLimit: http.limits.body) {
            case let .refused(response):
                return RouteResponse(response, method: method, refusedBeforeBody: true)
            case let .tooLarge(limit):
                var response = HTTPHandler.bodyTooLarge(request, limit: limit, formatter: http.errorFormatter)
                response = http.errorPresenter?(response, fields) ?? response
                return RouteResponse(response, method: method, refusedBeforeBody: true)
            case .read:
                break
            }
        }
        request.body = body
        return RouteResponse(await handler.respond(to: request), method: method, refusedBeforeBody: false)
    }
}

/// A response as a client sees it: status, header fields, body bytes.
struct RouteResponse {
    var status: Int
    var headers: HTTPHeaders
    /// The body; for an event stream, the bytes sent with the head (a `retry:` line or a comment).
    var body: [UInt8]
    /// Whether the answer came from the head check, before the body was read.
    var refusedBeforeBody: Bool
    /// Whether the body is an event stream (whose events the client cannot read; see `RouteClient`).
    var isStream: Bool

    init(_ response: HTTPResponse, method: HTTPMethod, refusedBeforeBody: Bool) {
        status = response.status.code
        headers = response.headers
        self.refusedBeforeBody = refusedBeforeBody
        switch response.body {
        case let .bytes(bytes):
            isStream = false
            body = method == .HEAD ? [] : bytes
            if !response.status.forbidsBody {
                headers.set("Content-Length", String(bytes.count))
            }
        case let .stream(options, _):
            isStream = true
            body = method == .HEAD ? [] : options.initialBytes
        }
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? { headers[name] }

    /// The body as a JSON object, nil when it is not one.
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// The `error` code of an error body (`{"error": CODE, "detail": TEXT}`).
    var errorCode: String? { json?["error"] as? String }
}
