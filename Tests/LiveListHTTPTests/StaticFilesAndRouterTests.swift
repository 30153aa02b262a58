#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@_spi(Benchmarks) @testable import LiveListHTTP

/// A temporary tree: root/{index.html, app.js, style.css, data.json, .hidden, sub/index.html,
/// inside-link -> app.js, outside-link -> ../secret.txt} and a sibling secret.txt.
private final class TempTree {
    let base: String
    var root: String { base + "/root" }

    init() {
        var template = Array("/tmp/livelist-static-XXXXXX".utf8CString)
        base = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        mkdir(root, 0o755)
        mkdir(root + "/sub", 0o755)
        write("root/index.html", "<h1>home</h1>")
        write("root/app.js", "console.log(1)")
        write("root/style.css", "body{}")
        write("root/data.json", "{}")
        write("root/.hidden", "hidden")
        write("root/sub/index.html", "<h1>sub</h1>")
        write("secret.txt", "secret")
        symlink(root + "/app.js", root + "/inside-link")
        symlink(base + "/secret.txt", root + "/outside-link")
        symlink(base, root + "/escape-dir")
    }

    func write(_ path: String, _ text: String) {
        let fd = open(base + "/" + path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
    }

    deinit {
        for path in ["root/index.html", "root/app.js", "root/style.css", "root/data.json", "root/.hidden",
                     "root/sub/index.html", "secret.txt", "root/inside-link", "root/outside-link", "root/escape-dir"] {
            unlink(base + "/" + path)
        }
        rmdir(root + "/sub")
        rmdir(root)
        rmdir(base)
    }
}

@Suite struct StaticFilesTests {
    @Test func servesTypesValidatorsAndRefusesEscapes() async throws {
        let tree = TempTree()
        guard let files = StaticFiles(directory: tree.root) else {
            Issue.record("root not found")
            return
        }
        var router = Router()
        router.on(.GET, "/api/ping") { _ in .text("pong") }
        router.fallback = files.handler
        try await withServer(handler: router.handler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let client = TestClient(port: port) else { return [] }
                func get(_ target: String, _ extra: String = "", method: String = "GET") -> TestResponse? {
                    client.send("\(method) \(target) HTTP/1.1\r\nHost: t\r\n\(extra)\r\n")
                    return client.readResponse(head: method == "HEAD")
                }
                var results: [String] = []
                func line(_ response: TestResponse?, _ fields: String...) {
                    guard let response else { results.append("none"); return }
                    results.append(([String(response.status), response.text] + fields.map { response.header($0) ?? "-" }).joined(separator: "|"))
                }
                line(get("/"), "Content-Type")
                let app = get("/app.js")
                line(app, "Content-Type", "Cache-Control", "X-Content-Type-Options")
                let etag = app?.header("ETag") ?? "none"
                let modified = app?.header("Last-Modified") ?? "none"
                line(get("/app.js?v=abc123"), "Cache-Control")
                line(get("/app.js", "If-None-Match: \(etag)\r\n"), "ETag", "Content-Length")
                line(get("/app.js", "If-None-Match: \"other\", W/\(etag)\r\n"))
                line(get("/app.js", "If-None-Match: \"other\"\r\n"))
                line(get("/app.js", "If-Modified-Since: \(modified)\r\n"))
                line(get("/app.js", method: "HEAD"), "Content-Length")
                line(get("/style.css"), "Content-Type")
                line(get("/data.json"), "Content-Type")
                line(get("/sub/"))
                line(get("/sub"))
                line(get("/inside-link"))
                line(get("/api/ping"))
                results.append(get("/app.js", method: "POST").map { "\($0.status) \($0.header("Allow") ?? "-")" } ?? "none")
                // Ways out of the root: each must fail (404 after normalisation, or 400 from the parser).
                let escapes = ["/missing", "/.hidden", "/outside-link", "/escape-dir/secret.txt", "/../secret.txt",
                               "/%2e%2e/secret.txt", "/sub/%2E%2E/%2e%2e/secret.txt", "/sub/../../secret.txt"]
                for target in escapes {
                    let response = get(target)
                    results.append("\(target) \(response?.status ?? 0) \(response?.text == "secret" ? "LEAK" : "ok")")
                    if response?.status == 400 {
                        // The parser closes after a 400: reconnect for the next attempt.
                        return results + ["reconnect needed after \(target)"]
                    }
                }
                return results
            }
            #expect(Array(results.prefix(15)) == [
                "200|<h1>home</h1>|text/html; charset=utf-8",
                "200|console.log(1)|text/javascript; charset=utf-8|no-cache|nosniff",
                "200|console.log(1)|public, max-age=31536000, immutable",
                "304||\(results.count > 3 ? etagFrom(results[3]) : "")|-",
                "304|",
                "200|console.log(1)",
                "304|",
                "200||14",
                "200|body{}|text/css; charset=utf-8",
                "200|{}|application/json",
                "200|<h1>sub</h1>",
                "200|<h1>sub</h1>",
                "200|console.log(1)",
                "200|pong",
                "405 GET, HEAD",
            ])
            let escapes = Array(results.dropFirst(15))
            #expect(escapes == [
                "/missing 404 ok", "/.hidden 404 ok", "/outside-link 404 ok", "/escape-dir/secret.txt 404 ok",
                "/../secret.txt 404 ok", "/%2e%2e/secret.txt 404 ok", "/sub/%2E%2E/%2e%2e/secret.txt 404 ok",
                "/sub/../../secret.txt 404 ok",
            ])
        }
    }

    @Test func encodedEscapesAreRefusedByTheParser() async throws {
        let tree = TempTree()
        let files = try #require(StaticFiles(directory: tree.root))
        try await withServer(handler: files.handler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                ["/%2e%2e/%2e%2e/secret.txt", "/..%2fsecret.txt", "/%2e%2e%2fsecret.txt", "/sub%2f..%2f..%2fsecret.txt",
                 "/app.js%00.png", "/sub/..%5c..%5csecret.txt", "/sub/..\\..\\secret.txt"].map { target in
                    guard let client = TestClient(port: port) else { return "no connection" }
                    client.send("GET \(target) HTTP/1.1\r\nHost: t\r\n\r\n")
                    let response = client.readResponse()
                    return "\(response?.status ?? 0)\(response?.text == "secret" ? " LEAK" : "")"
                }
            }
            #expect(results == ["404", "400", "400", "400", "400", "400", "400"])
        }
    }

    @Test func mediaTypes() {
        #expect(StaticFiles.mediaType(for: "a/b.HTML") == "text/html; charset=utf-8")
        #expect(StaticFiles.mediaType(for: "x.woff2") == "font/woff2")
        #expect(StaticFiles.mediaType(for: "x.svg") == "image/svg+xml")
        #expect(StaticFiles.mediaType(for: ".bashrc") == "application/octet-stream")
        #expect(StaticFiles.mediaType(for: "noextension") == "application/octet-stream")
    }
}

private func etagFrom(_ line: String) -> String {
    let parts = line.split(separator: "|", omittingEmptySubsequences: false)
    return parts.count > 2 ? String(parts[2]) : ""
}

private func request(_ text: String) -> HTTPRequest {
    var parser = RequestParser()
    parser.append(contentsOf: Array(text.utf8))
    var event = parser.next()
    if case .head = event { event = parser.next() }
    guard case .request(let request) = event else { fatalError("fixture does not parse: \(text)") }
    return request
}

@Suite struct RouterTests {
    private var router: Router {
        var router = Router()
        router.on(.GET, "/lists/:name") { request in .text("list \(request.pathParameters["name"] ?? "?")") }
        router.on(.GET, "/lists/:name/events") { request in .text("events \(request.pathParameters["name"] ?? "?")") }
        router.on(.PUT, "/lists/:name") { (request: HTTPRequest) async -> HTTPResponse in
            .text("put \(request.pathParameters["name"] ?? "?") \(request.body.count)")
        }
        router.on(.DELETE, "/lists/:name") { _ in HTTPResponse(status: .noContent) }
        router.on(.GET, "/files/*path") { request in .text("file \(request.pathParameters["path"] ?? "?")") }
        return router
    }

    private func answer(_ router: Router, _ text: String) async -> String {
        let response = await router.handler.respond(to: request(text))
        guard case .bytes(let body) = response.body else { return "stream" }
        return "\(response.status.code) \(String(decoding: body, as: UTF8.self)) \(response.headers["Allow"] ?? "")"
    }

    @Test func parametersMethodsAndFallback() async {
        let router = self.router
        #expect(await answer(router, "GET /lists/todo%20x HTTP/1.1\r\nHost: h\r\n\r\n") == "200 list todo x ")
        #expect(await answer(router, "GET /lists/todo/events/ HTTP/1.1\r\nHost: h\r\n\r\n") == "200 events todo ")
        #expect(await answer(router, "PUT /lists/a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc") == "200 put a 3 ")
        #expect(await answer(router, "HEAD /lists/a HTTP/1.1\r\nHost: h\r\n\r\n") == "200 list a ")
        #expect(await answer(router, "GET /files/a/b/c.txt HTTP/1.1\r\nHost: h\r\n\r\n") == "200 file a/b/c.txt ")
        #expect(await answer(router, "GET /files HTTP/1.1\r\nHost: h\r\n\r\n") == "200 file  ")
        let notAllowed = await answer(router, "POST /lists/a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        #expect(notAllowed.hasPrefix("405 ") && notAllowed.hasSuffix(" GET, HEAD, PUT, DELETE"))
        #expect(await answer(router, "GET /lists HTTP/1.1\r\nHost: h\r\n\r\n").hasPrefix("404 {\"error\":\"not_found\""))
        var withFallback = router
        withFallback.fallback = .sync { _ in .text("fallback") }
        #expect(await answer(withFallback, "GET /other HTTP/1.1\r\nHost: h\r\n\r\n") == "200 fallback ")
    }

    /// The first route that matches with the method wins, whatever comes later; every parameter of the
    /// chosen route is captured, and a rest takes what is left, down to nothing.
    @Test func earlierRoutesWinAndEveryParameterIsCaptured() async {
        var router = Router()
        func echo(_ label: String) -> @Sendable (HTTPRequest) -> HTTPResponse {
            { request in .text(label + " " + request.pathParameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")) }
        }
        router.on(.GET, "/a/:x", echo("param"))
        router.on(.GET, "/a/b", echo("literal"))
        router.on(.GET, "/p/:one/q/:two", echo("two"))
        router.on(.POST, "/p/:one/q/:two", echo("post"))
        router.on(.GET, "/r/:first/*rest", echo("rest"))
        #expect(await answer(router, "GET /a/b HTTP/1.1\r\nHost: h\r\n\r\n") == "200 param x=b ")
        #expect(await answer(router, "GET /p/1/q/2 HTTP/1.1\r\nHost: h\r\n\r\n") == "200 two one=1,two=2 ")
        #expect(await answer(router, "HEAD /p/1/q/2 HTTP/1.1\r\nHost: h\r\n\r\n") == "200 two one=1,two=2 ")
        #expect(await answer(router, "POST /p/1/q/2 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n") == "200 post one=1,two=2 ")
        #expect(await answer(router, "GET /p/1/x/2 HTTP/1.1\r\nHost: h\r\n\r\n").hasPrefix("404 "))
        #expect(await answer(router, "GET /p/1/q HTTP/1.1\r\nHost: h\r\n\r\n").hasPrefix("404 "))
        #expect(await answer(router, "GET /p/1/q/2/3 HTTP/1.1\r\nHost: h\r\n\r\n").hasPrefix("404 "))
        #expect(await answer(router, "GET /r/1/x/y HTTP/1.1\r\nHost: h\r\n\r\n") == "200 rest first=1,rest=x/y ")
        #expect(await answer(router, "GET /r/1 HTTP/1.1\r\nHost: h\r\n\r\n") == "200 rest first=1,rest= ")
        #expect(await answer(router, "GET /r HTTP/1.1\r\nHost: h\r\n\r\n").hasPrefix("404 "))
        let notAllowed = await answer(router, "PUT /p/1/q/2 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        #expect(notAllowed.hasPrefix("405 ") && notAllowed.hasSuffix(" GET, HEAD, POST"))
    }
}

@Suite struct EncodingTests {
    @Test func serverSentEventsCannotBreakTheFraming() {
        let event = ServerSentEvent(id: "7\n\0x", event: "patch\r\nevil: 1", data: "a\r\nb\rc\nd", retry: 100)
        #expect(String(decoding: event.encoded, as: UTF8.self) == "event: patchevil: 1\nid: 7x\nretry: 100\ndata: a\ndata: b\ndata: c\ndata: d\n\n")
        #expect(String(decoding: ServerSentEvent(data: "").encoded, as: UTF8.self) == "data: \n\n")
    }

    @Test func responseHeadersAreSanitisedAndManaged() {
        var response = HTTPResponse.text("hi")
        response.headers.set("X-Evil", "a\r\nSet-Cookie: x=1")
        response.headers.set("Content-Length", "999")
        let head = ResponseEncoder.head(response, contentLength: 2, chunked: false, close: true, keepAliveHeader: false,
                                        date: Array("DATE".utf8), server: Array("S".utf8), capacity: 0)
        #expect(String(decoding: head, as: UTF8.self) == "HTTP/1.1 200 OK\r\nDate: DATE\r\nServer: S\r\nContent-Type: text/plain; charset=utf-8\r\nX-Evil: aSet-Cookie: x=1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
    }

    @Test func defaultErrorFormatterWritesEscapedJSON() {
        let (type, body) = defaultHTTPErrorFormatter(HTTPError(.badRequest, code: "bad", detail: "quote \" and \\ and \n and \u{01}"))
        #expect(type == "application/json")
        #expect(String(decoding: body, as: UTF8.self) == "{\"error\":\"bad\",\"detail\":\"quote \\\" and \\\\ and \\n and \\u0001\"}")
    }

    @Test func httpDates() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("garbage") == nil)
    }

    @Test func reasonPhrases() {
        #expect(HTTPStatus(431).description == "431 Request Header Fields Too Large")
        #expect(HTTPStatus(299).reasonPhrase == "Unknown")
        #expect(HTTPStatus.notModified.forbidsBody && !HTTPStatus.ok.forbidsBody)
    }
}

/// The memory cache of small static files: every hit is revalidated, so a replaced, removed or
/// re-linked file is never served from memory.
@Suite struct StaticFileCacheTests {
    private static func request(_ target: String) -> HTTPRequest? {
        var parser = RequestParser()
        parser.append(contentsOf: Array("GET \(target) HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
        if case .request(let request) = parser.next() { return request }
        return nil
    }

    private static func body(_ files: StaticFiles, _ target: String) -> String {
        guard let request = request(target) else { return "no request" }
        let response = files.respond(to: request)
        guard case .bytes(let bytes) = response.body else { return "stream" }
        return "\(response.status.code) \(String(decoding: bytes, as: UTF8.self))"
    }

    @Test func hitsAreRevalidatedAndNeverEscapeTheRoot() throws {
        let tree = TempTree()
        guard var files = StaticFiles(directory: tree.root) else {
            Issue.record("root not found")
            return
        }
        files.cacheMinimumAge = 0
        #expect(Self.body(files, "/app.js") == "200 console.log(1)")
        #expect(files.cache.count == 1)
        #expect(Self.body(files, "/app.js") == "200 console.log(1)")

        // A new file renamed over the cached one (another inode) is read again.
        tree.write("root/app.js.new", "console.log(2)")
        rename(tree.base + "/root/app.js.new", tree.root + "/app.js")
        #expect(Self.body(files, "/app.js") == "200 console.log(2)")
        // Rewritten in place with another size.
        tree.write("root/app.js", "console.log(333)")
        #expect(Self.body(files, "/app.js") == "200 console.log(333)")

        // Replaced by a symlink that leaves the root: 404, never the cached bytes or the secret.
        #expect(Self.body(files, "/style.css") == "200 body{}")
        unlink(tree.root + "/style.css")
        symlink(tree.base + "/secret.txt", tree.root + "/style.css")
        #expect(Self.body(files, "/style.css").hasPrefix("404 "))
        unlink(tree.root + "/style.css")
        #expect(Self.body(files, "/style.css").hasPrefix("404 "))

        // Files reached through a directory index are not cached; fresh files are not cached by default.
        #expect(Self.body(files, "/sub/") == "200 <h1>sub</h1>")
        let fresh = try #require(StaticFiles(directory: tree.root))
        tree.write("root/data.json", "{\"a\":1}")
        #expect(Self.body(fresh, "/data.json") == "200 {\"a\":1}")
        #expect(fresh.cache.count == 0)
    }
}
