import Foundation
import LiveListTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What an attacker with an HTTP client could do to the real binary, each answered with a clear status
/// and the server still serving (the in-process suites test each piece in detail).
@Suite struct HostileInputTests {
    /// Sends raw bytes on one connection and reads until the server closes it or `timeout` passes.
    private func raw(_ text: String, port: Int, timeout: Int = 5) throws -> String {
        let socket = try Client.connect(port: port)
        defer { close(socket) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        try Client.send(socket, Array(text.utf8))
        return String(decoding: Client.readToEnd(socket), as: UTF8.self)
    }

    private func alive(_ server: LiveServer) throws -> Bool {
        try Client.get("/healthz", port: server.port).status == 200
    }

    /// `--event-loops 1` serves as the default does (pages and many connections at once, all on one
    /// thread); a number of loops out of range is refused at start-up with its flag named.
    @Test func eventLoopsAreChosenAndCheckedAtStartUp() async throws {
        let server = try LiveServer(arguments: ["--event-loops", "1"])
        defer { server.stop(); server.removeData() }
        let port = server.port
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0 ..< 16 {
                group.addTask { try Client.get("/lists/todo", port: port).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 16))
        for bad in ["0", "-2", "many", "1025"] {
            #expect {
                _ = try LiveServer(arguments: ["--event-loops", bad])
            } throws: { error in
                String(describing: error).contains("--event-loops")
            }
        }
    }

    @Test func oddContentTypesAreRefusedNeverFatal() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for type in ["", ";", ";;;", "\t", " ; "] {
                let put = try Client.request("PUT", "/lists/ct", port: server.port, headers: [("Content-Type", type)], body: Array(#"{"sections":[]}"#.utf8))
                #expect(put.status == 415, "PUT with Content-Type \(type.debugDescription): \(put.status)")
                let action = try Client.request("POST", "/lists/todo/actions", port: server.port, headers: [("Content-Type", type)], body: Array("type=add".utf8))
                #expect(action.status == 415, "action with Content-Type \(type.debugDescription): \(action.status)")
            }
            #expect(try alive(server))
        }
    }

    @Test func malformedChunkExtensionsAreRefused() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for size in ["2;", "2;a=\"b", "2 ", "2;a b=c"] {
                let answer = try raw("PUT /lists/ch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\n{}\r\n0\r\n\r\n", port: server.port)
                #expect(answer.hasPrefix("HTTP/1.1 400 "), "chunk size line \(size.debugDescription): \(answer.prefix(60))")
            }
            #expect(try alive(server))
        }
    }

    @Test func aRefusedUploadIsAnsweredOnItsHeadWithoutContinue() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--write-token", "secret"])
            defer { server.stop(); server.removeData() }
            // Expect: 100-continue, no token: 401 at once, never 100 Continue, and no body is waited for.
            let answer = try raw("PUT /lists/up HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 8000000\r\nExpect: 100-continue\r\n\r\n", port: server.port)
            #expect(answer.hasPrefix("HTTP/1.1 401 "), "\(answer.prefix(80))")
            #expect(!answer.contains("100 Continue"))
            // The scheme is case-insensitive.
            let lower = try Client.put("/lists/up", port: server.port, json: #"{"sections":[]}"#, headers: [("Authorization", "bearer secret")])
            #expect(lower.status == 201, "\(lower.status) \(lower.text)")
            #expect(try alive(server))
        }
    }

    /// The HTTP layer's own refusals, once the request line was read, answer a browser with an HTML page
    /// and a script with the JSON error, like the routes' refusals.
    @Test func theHTTPLayersRefusalsAreAPageForBrowsers() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let tooLarge = "PUT /lists/big HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 999999999999\r\n"
            let page = try raw(tooLarge + "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\n\r\n", port: server.port)
            #expect(page.hasPrefix("HTTP/1.1 413 "), "\(page.prefix(80))")
            #expect(page.contains("Content-Type: text/html") && page.contains("<a class=\"button-link\" href=\"/\">"), "\(page.prefix(400))")
            let json = try raw(tooLarge + "Accept: */*\r\n\r\n", port: server.port)
            #expect(json.hasPrefix("HTTP/1.1 413 ") && json.contains("Content-Type: application/json") && json.contains("\"error\":"), "\(json.prefix(300))")
            // A malformed field after Accept: the fields read so far decide.
            let malformed = try raw("GET / HTTP/1.1\r\nHost: t\r\nAccept: text/html\r\nBad Field: x\r\n\r\n", port: server.port)
            #expect(malformed.hasPrefix("HTTP/1.1 400 ") && malformed.contains("Content-Type: text/html"), "\(malformed.prefix(300))")
            #expect(try alive(server))
        }
    }

    @Test func conditionalPutsFollowRFC9110() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let body = #"{"sections":[{"id":"s","cells":[{"id":"a","text":"A"}]}]}"#
            #expect(try Client.put("/lists/cond", port: server.port, json: body, headers: [("If-Match", "*")]).status == 412)
            #expect(try Client.put("/lists/cond", port: server.port, json: body, headers: [("If-None-Match", "*")]).status == 201)
            #expect(try Client.put("/lists/cond", port: server.port, json: body, headers: [("If-None-Match", "*")]).status == 412)
            let changed = #"{"sections":[{"id":"s","cells":[{"id":"a","text":"B"}]}]}"#
            #expect(try Client.put("/lists/cond", port: server.port, json: changed, headers: [("If-Match", "*")]).status == 200)
        }
    }

    @Test func metricsAndStatusRoutesAreGuardedAndNeverCached() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--metrics-token", "m"])
            defer { server.stop(); server.removeData() }
            #expect(try Client.get("/metrics", port: server.port).status == 401)
            let metrics = try Client.get("/metrics", port: server.port, headers: [("Authorization", "Bearer m")])
            #expect(metrics.status == 200 && metrics.header("Cache-Control") == "no-store")
            for path in ["/", "/healthz"] {
                #expect(try Client.get(path, port: server.port).header("Cache-Control") == "no-store", "\(path)")
            }
        }
    }

    @Test func answersNeverShowTheServersPaths() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for path in ["/lists/nope", "/nope.txt", "/../etc/passwd", "/lists/nope/events", "/lists/nope/changes?since=1"] {
                let answer = try Client.get(path, port: server.port)
                #expect(!answer.text.contains(server.dataDirectory) && !answer.text.contains(LiveServer.root), "\(path) shows a path: \(answer.text)")
            }
        }
    }

    @Test func theTodoDemoStaysBounded() async throws {
        try await offThePool {
            // No pace here: this is about the demo's own bounds.
            let server = try LiveServer(arguments: ["--action-rate", "0"])
            defer { server.stop(); server.removeData() }
            let (cookie, token) = try pageSession("todo", port: server.port)
            func add(_ title: String) throws -> Int {
                try Client.request("POST", "/lists/todo/actions", port: server.port,
                                   headers: [("Cookie", cookie), ("Content-Type", "application/json"), ("X-CSRF-Token", token)],
                                   body: Array(#"{"type":"add","text":"\#(title)"}"#.utf8)).status
            }
            #expect(try add(String(repeating: "x", count: 5_000)) == 422, "a title past 200 characters is refused, never cut")
            for index in 0 ..< 110 {
                #expect(try add("item \(index)") == 204)
            }
            let todo = try snapshot("todo", port: server.port).model
            #expect(todo.sections.reduce(0) { $0 + $1.cells.count } == 100, "at most 100 items")
            #expect(!(try Client.get("/lists/todo", port: server.port).text.contains("xxxx")), "the refused title is nowhere")
        }
    }
}
