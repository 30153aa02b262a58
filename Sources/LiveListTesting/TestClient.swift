import Foundation
public import LiveListHTTP
public import LiveListServer

/// Drives a LiveList app in process, with no socket, event loop or browser: a request goes in, the
/// answer comes out, decided as the server decides it (a request with a body is checked on its head
/// first; an answer the head check gives is final). Build the app as `main` does, hand it over, and
/// test its pages, forms and lists:
///
///     let app = try await LiveListApp(configuration: configuration)
///     try await Desk.configure(app)
///     let client = TestClient(app)
///     let alice = client.browser()
///     try await alice.get("/login")
///     try await alice.submit("/login", ["user": "alice", "password": "…"])
///     let page = try await alice.get("/tickets")
///     #expect(page.text.contains("Printer jammed"))
///
/// ``TestBrowser`` keeps cookies, the page's CSRF token and the versions of the lists it shows; its
/// ``TestBrowser/changes(_:)`` reads what each viewer's stream would carry since then.
public final class TestClient: Sendable {
    /// The app under test.
    public let app: LiveListApp

    /// A client of `app`. Routes the app adds later are served too.
    public init(_ app: LiveListApp) {
        self.app = app
    }

    /// A new browser: no cookies, no page yet. `headers` go with every request it sends (an
    /// `Accept-Language`, or a header the app's `authenticate` reads in a test).
    public func browser(headers: [(String, String)] = [], from address: String = "127.0.0.1") -> TestBrowser {
        TestBrowser(client: self, headers: headers, address: address)
    }

    /// One request, answered as the server answers it.
    ///
    /// - Throws: ``TestClientError`` for a target the server's parser refuses, and for an answer that
    ///   is an event stream (read streams' changesets with ``TestBrowser/changes(_:)``).
    public func send(
        _ method: HTTPMethod, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [], from address: String = "127.0.0.1"
    ) async throws -> TestResponse {
        let request: HTTPRequest
        switch HTTPRequest.inProcess(method, target, headers: headers, body: body, from: address) {
        case let .success(made): request = made
        case let .failure(error): throw TestClientError("the server's parser refuses \(method) \(target): \(error.detail)")
        }
        let handler = app.handler
        let chunked = request.headers.contains("Transfer-Encoding")
        let length = Int(request.headers["Content-Length"] ?? "") ?? 0
        if chunked || length > 0 {
            var head = request
            head.body = []
            let http = app.httpConfiguration
            switch handler.decideBeforeBody(head, contentLength: chunked ? nil : length, serverLimit: http.limits.body) {
            case let .refused(response):
                return try TestResponse(response, method: method)
            case let .tooLarge(limit):
                let response = HTTPHandler.bodyTooLarge(head, limit: limit, formatter: http.errorFormatter)
                return try TestResponse(http.errorPresenter?(response, request.headers) ?? response, method: method)
            case .read:
                break
            }
        }
        return try TestResponse(await handler.respond(to: request), method: method)
    }
}

/// An answer as a client reads it.
public struct TestResponse: Sendable {
    /// The status code.
    public let status: Int
    /// The header fields.
    public let headers: HTTPHeaders
    /// The body (none for `HEAD`).
    public let body: [UInt8]

    init(_ response: HTTPResponse, method: HTTPMethod) throws(TestClientError) {
        status = response.status.code
        headers = response.headers
        switch response.body {
        case let .bytes(bytes): body = method == .HEAD ? [] : bytes
        case .stream: throw TestClientError("the answer is an event stream: read a list's changesets with TestBrowser.changes(_:)")
        }
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The first value of the header field `name`.
    public func header(_ name: String) -> String? { headers[name] }

    /// Where a redirect sends the browser, nil for another answer.
    public var location: String? { (300 ..< 400).contains(status) ? headers["Location"] : nil }
}

/// What a test client cannot do, said in words.
public struct TestClientError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
