import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import LiveListHTTP

/// A handler for live tests: `/echo/...` answers its path, `/slow/...` answers it from a task,
/// `/big` answers 1 MiB, `/status/N` answers status N.
private let echoHandler: HTTPHandler = {
    var router = Router()
    router.on(.GET, "/echo/*rest") { request in .text(request.path) }
    router.on(.POST, "/echo/*rest") { request in .text("\(request.path) \(String(decoding: request.body, as: UTF8.self))") }
    // The hostile fixtures post to `/`: a route there lets their bodies reach the parser.
    router.on(.POST, "/") { request in .text("/ \(request.body.count)") }
    router.on(.GET, "/slow/*rest") { (request: HTTPRequest) async -> HTTPResponse in
        await Task.yield()
        return .text(request.path)
    }
    router.on(.GET, "/big") { _ in HTTPResponse(body: [UInt8](repeating: 0x61, count: 1 << 20)) }
    router.on(.GET, "/stream") { _ in .eventStream(retry: 1000, heartbeat: nil) { _ in } }
    router.on(.GET, "/status/:code") { request in
        HTTPResponse(status: HTTPStatus(Int(request.pathParameters["code"] ?? "") ?? 500))
    }
    return router.handler
}()

@Suite struct LiveServerTests {
    /// The receive timeout of clients that wait for `/slow`, answered by a task (see its test).
    static let poolTaskTimeout = 120

    @Test(arguments: EventLoopBackend.available) func keepAliveServesSeveralRequestsOnOneConnection(backend: EventLoopBackend) async throws {
        try await withServer(testConfiguration(backend: backend), handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let client = TestClient(port: port) else { return ["connect failed"] }
                var results: [String] = []
                for index in 0..<5 {
                    client.send("GET /echo/\(index) HTTP/1.1\r\nHost: t\r\n\r\n")
                    guard let response = client.readResponse() else { return results + ["no response"] }
                    results.append("\(response.status) \(response.text) \(response.header("Connection") ?? "-")")
                    if response.header("Date") == nil || response.header("Server") != nil { results.append("missing Date, or a Server field nobody configured") }
                }
                return results
            }
            #expect(results == (0..<5).map { "200 /echo/\($0) -" })
        }
    }

    @Test(arguments: EventLoopBackend.available) func pipelinedRequestsAreAnsweredInOrderAcrossSyncAndAsyncHandlers(backend: EventLoopBackend) async throws {
        try await withServer(testConfiguration(backend: backend), handler: echoHandler) { server in
            let port = server.port
            let paths = (0..<20).map { $0 % 3 == 0 ? "/slow/\($0)" : "/echo/\($0)" }
            let results = await onThread { () -> [String] in
                // `/slow` answers from a task on the cooperative pool, which the suite's CPU-bound
                // tests can hold for tens of seconds on two cores: the receive timeout is a safety net
                // against a hang, not a latency bound, so it is long.
                guard let client = TestClient(port: port, receiveTimeoutSeconds: Self.poolTaskTimeout) else { return [] }
                var batch = paths.map { "GET \($0) HTTP/1.1\r\nHost: t\r\n\r\n" }.joined()
                batch += "POST /echo/body HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                batch += "HEAD /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                client.send(batch)
                var results: [String] = []
                for _ in paths { results.append(client.readResponse()?.text ?? "missing") }
                results.append(client.readResponse()?.text ?? "missing")
                if let head = client.readResponse(head: true) {
                    results.append("\(head.status) \(head.header("Content-Length") ?? "-") \(head.header("Connection") ?? "-")")
                }
                results.append(client.waitForClose() ? "closed" : "open")
                return results
            }
            #expect(results == paths + ["/echo/body abc", "200 1048576 close", "closed"])
        }
    }

    @Test func hostileFixturesOverRealSockets() async throws {
        try await withServer(handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                HostileFixture.all.map { fixture in
                    guard let client = TestClient(port: port) else { return "\(fixture.name): connect failed" }
                    client.send(fixture.request)
                    guard let response = client.readResponse() else { return "\(fixture.name): no response" }
                    let json = response.header("Content-Type") == "application/json" && response.text.hasPrefix("{\"error\":")
                    let closed = response.header("Connection") == "close" && client.waitForClose()
                    return "\(fixture.name): \(response.status) json=\(json) closed=\(closed)"
                }
            }
            #expect(results == HostileFixture.all.map { "\($0.name): \($0.status) json=true closed=true" })
        }
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() async throws {
        try await withServer(handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                var results: [String] = []
                if let client = TestClient(port: port) {
                    client.send("GET /echo/a HTTP/1.0\r\n\r\n")
                    results.append(client.readResponse()?.header("Connection") ?? "-")
                    results.append(client.waitForClose() ? "closed" : "open")
                }
                if let client = TestClient(port: port) {
                    client.send("GET /echo/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                    results.append(client.readResponse()?.header("Connection") ?? "-")
                    client.send("GET /echo/b HTTP/1.0\r\n\r\n")
                    results.append(client.readResponse()?.text ?? "-")
                }
                return results
            }
            #expect(results == ["close", "closed", "keep-alive", "/echo/b"])
        }
    }

    @Test func expectContinueGetsAnInterimResponse() async throws {
        try await withServer(handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let client = TestClient(port: port) else { return [] }
                client.send("POST /echo/up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
                let interim = client.readResponse()
                client.send("hello")
                let final = client.readResponse()
                return ["\(interim?.status ?? 0)", "\(final?.status ?? 0) \(final?.text ?? "")"]
            }
            #expect(results == ["100", "200 /echo/up hello"])
        }
    }

    @Test func headMatchesGetWithoutBody() async throws {
        try await withServer(handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let client = TestClient(port: port) else { return [] }
                client.send("GET /echo/same HTTP/1.1\r\nHost: t\r\n\r\n")
                let get = client.readResponse()
                client.send("HEAD /echo/same HTTP/1.1\r\nHost: t\r\n\r\n")
                let head = client.readResponse(head: true)
                client.send("GET /status/204 HTTP/1.1\r\nHost: t\r\n\r\n")
                let noContent = client.readResponse()
                client.send("GET /echo/after HTTP/1.1\r\nHost: t\r\n\r\n")
                let after = client.readResponse()
                return [get?.header("Content-Length") ?? "-", head?.header("Content-Length") ?? "-",
                        "\(noContent?.status ?? 0) \(noContent?.header("Content-Length") ?? "none")", after?.text ?? "-"]
            }
            #expect(results == ["10", "10", "204 none", "/echo/after"])
        }
    }

    @Test func routerAnswers404And405WithAllow() async throws {
        try await withServer(handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let client = TestClient(port: port) else { return [] }
                client.send("DELETE /big HTTP/1.1\r\nHost: t\r\n\r\nGET /nothing HTTP/1.1\r\nHost: t\r\n\r\n")
                let notAllowed = client.readResponse()
                let notFound = client.readResponse()
                return ["\(notAllowed?.status ?? 0) \(notAllowed?.header("Allow") ?? "-")",
                        "\(notFound?.status ?? 0) \(notFound?.text ?? "")"]
            }
            #expect(results == ["405 GET, HEAD", "404 {\"error\":\"not_found\",\"detail\":\"/nothing does not exist\"}"])
        }
    }

    @Test(arguments: EventLoopBackend.available) func hundredsOfConcurrentConnections(backend: EventLoopBackend) async throws {
        try await withServer(testConfiguration(backend: backend), handler: echoHandler) { server in
            let port = server.port
            let served = await onThread { () -> Int in
                let clients = (0..<300).compactMap { _ in TestClient(port: port, receiveTimeoutSeconds: Self.poolTaskTimeout) }
                for (index, client) in clients.enumerated() { client.send("GET /echo/\(index) HTTP/1.1\r\nHost: t\r\n\r\n") }
                var served = 0
                for (index, client) in clients.enumerated() where client.readResponse()?.text == "/echo/\(index)" { served += 1 }
                for (index, client) in clients.enumerated() { client.send("GET /slow/\(index) HTTP/1.1\r\nHost: t\r\n\r\n") }
                for (index, client) in clients.enumerated() where client.readResponse()?.text == "/slow/\(index)" { served += 1 }
                return served
            }
            #expect(served == 600)
            #expect(server.statistics.connectionsAccepted >= 300)
        }
    }

    @Test(arguments: EventLoopBackend.available) func aClientThatNeverReadsDoesNotStallOthersAndIsCut(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend).shortTimeouts(write: true)
        configuration.writeQueueLimit = 64 * 1024
        try await withServer(configuration, handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let stalled = TestClient(port: port) else { return [] }
                stalled.shrinkReceiveBuffer()
                // Ask for 200 MiB without ever reading.
                stalled.send(String(repeating: "GET /big HTTP/1.1\r\nHost: t\r\n\r\n", count: 200))
                var results: [String] = []
                guard let other = TestClient(port: port) else { return [] }
                for index in 0..<10 {
                    other.send("GET /echo/\(index) HTTP/1.1\r\nHost: t\r\n\r\n")
                    results.append(other.readResponse()?.text ?? "missing")
                }
                // The stalled connection is closed by the write timeout (only `other` stays open).
                var waited = 0
                while server.statistics.connectionsOpen > 1, waited < 2_000 {
                    usleep(5_000)
                    waited += 1
                }
                results.append(server.statistics.connectionsOpen == 1 ? "stalled cut" : "stalled open")
                // What reaches the client is what the kernel buffered, far below the 200 MiB asked for.
                results.append(stalled.waitForClose(limit: 32 << 20) ? "stalled closed" : "stalled open")
                return results
            }
            #expect(results == (0..<10).map { "/echo/\($0)" } + ["stalled cut", "stalled closed"])
        }
    }

    @Test(arguments: EventLoopBackend.available) func slowlorisIsCutAtTheHeaderTimeout(backend: EventLoopBackend) async throws {
        try await withServer(testConfiguration(backend: backend).shortTimeouts(header: true), handler: echoHandler) { server in
            let port = server.port
            let result = await onThread { () -> String in
                guard let client = TestClient(port: port) else { return "no connection" }
                client.send("GET / HTTP/1.1\r\nHost: t\r\n")
                // Drip a header byte at a time; the total header timeout must end this.
                var drips = 0
                var shutDown = false
                while drips < 10_000 {
                    if !client.send("X") { shutDown = true; break }
                    drips += 1
                    var pollDescriptor = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
                    if poll(&pollDescriptor, 1, 20) > 0 { break }
                }
                let response = client.readResponse()
                return "\(response?.status ?? 0) \(response?.header("Connection") ?? "-") bounded=\(drips < 10_000 || shutDown)"
            }
            #expect(result == "408 close bounded=true")
            #expect(server.statistics.protocolErrors >= 1)
        }
    }

    @Test func idleConnectionsAreClosedQuietly() async throws {
        try await withServer(testConfiguration().shortTimeouts(header: true, idle: true), handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                var results: [String] = []
                if let silent = TestClient(port: port) {
                    results.append(silent.waitForClose() ? "silent closed" : "silent open")
                }
                if let client = TestClient(port: port) {
                    client.send("GET /echo/once HTTP/1.1\r\nHost: t\r\n\r\n")
                    results.append(client.readResponse()?.text ?? "missing")
                    results.append(client.waitForClose() ? "idle closed" : "idle open")
                }
                return results
            }
            #expect(results == ["silent closed", "/echo/once", "idle closed"])
        }
    }

    @Test func bodyTimeoutAnswers408() async throws {
        try await withServer(testConfiguration().shortTimeouts(body: true), handler: echoHandler) { server in
            let port = server.port
            let result = await onThread { () -> String in
                guard let client = TestClient(port: port) else { return "" }
                client.send("POST /echo/x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly a part")
                let response = client.readResponse()
                return "\(response?.status ?? 0) \(client.waitForClose())"
            }
            #expect(result == "408 true")
        }
    }

    @Test(arguments: EventLoopBackend.available) func connectionsPastTheLimitGet503(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.maxConnections = 2
        configuration.reservedConnections = 0
        try await withServer(configuration, handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let first = TestClient(port: port), let second = TestClient(port: port) else { return [] }
                first.send("GET /echo/1 HTTP/1.1\r\nHost: t\r\n\r\n")
                second.send("GET /echo/2 HTTP/1.1\r\nHost: t\r\n\r\n")
                let answers = [first.readResponse()?.text ?? "-", second.readResponse()?.text ?? "-"]
                guard let third = TestClient(port: port) else { return answers + ["connect failed"] }
                let refused = third.readResponse()
                return answers + ["\(refused?.status ?? 0) \(refused?.header("Retry-After") ?? "-")"]
            }
            #expect(results == ["/echo/1", "/echo/2", "503 1"])
            #expect(server.statistics.connectionsRefused == 1)
        }
    }

    /// Past the cap, a reserve of connections still answers requests (a probe, a write, /metrics), one
    /// each and then closed, but never holds a stream (503 too_many_streams with Retry-After); past the
    /// reserve, 503 too_many_connections; each refusal is noticed once, with a count after.
    @Test(arguments: EventLoopBackend.available) func theReserveAnswersRequestsButNoStreams(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.maxConnections = 2
        configuration.reservedConnections = 2
        let notices = Mutex<[String]>([])
        configuration.notice = { line in notices.withLock { $0.append(line) } }
        try await withServer(configuration, handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let first = TestClient(port: port), let second = TestClient(port: port) else { return [] }
                // Two streams hold the cap.
                first.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
                second.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
                var answers = [first.readResponse(head: true)?.status ?? 0, second.readResponse(head: true)?.status ?? 0].map(String.init)
                do {
                    // A probe and a stream on the reserve; each is closed by both sides after its answer.
                    guard let probe = TestClient(port: port), let streamer = TestClient(port: port) else { return answers + ["connect failed"] }
                    probe.send("GET /echo/healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                    let probed = probe.readResponse()
                    answers.append("\(probed?.status ?? 0) \(probed?.text ?? "-") \(probed?.header("Connection") ?? "-") \(probe.waitForClose())")
                    streamer.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
                    let refused = streamer.readResponse()
                    answers.append("\(refused?.status ?? 0) \(refused?.text.contains("too_many_streams") == true) \(refused?.header("Retry-After") != nil)")
                }
                usleep(200_000)
                // Both reserve slots are free again once those closed; hold them, then one more is refused.
                guard let held1 = TestClient(port: port), let held2 = TestClient(port: port) else { return answers + ["connect failed"] }
                // Heads not finished: each holds its connection until the head's timeout.
                held1.send("GET /echo/a HTTP/1.1\r\nHost: t\r\n")
                held2.send("GET /echo/b HTTP/1.1\r\nHost: t\r\n")
                usleep(200_000)
                guard let late = TestClient(port: port) else { return answers + ["connect failed"] }
                let beyond = late.readResponse()
                answers.append("\(beyond?.status ?? 0) \(beyond?.text.contains("too_many_connections") == true)")
                return answers
            }
            #expect(results == ["200", "200", "200 /echo/healthz close true", "503 true true", "503 true"], "\(results)")
            let said = notices.withLock { $0 }
            #expect(said.count == 2 && said.contains { $0.contains("refusing event streams") } && said.contains { $0.contains("refusing connections") }, "\(said)")
            let statistics = server.statistics
            #expect(statistics.connectionsRefused == 1 && statistics.streamsRefused == 1 && statistics.connectionsReserved >= 2, "\(statistics)")
        }
    }

    /// A stream whose head asks for an event stream, on the reserve, is refused before its handler
    /// runs, so that the reserve's slot is not held while a doomed stream's route works. One without
    /// that Accept runs its handler and is refused on its answer, as before.
    @Test(arguments: EventLoopBackend.available) func aStreamOnTheReserveIsRefusedFromItsHead(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.maxConnections = 1
        configuration.reservedConnections = 2
        let handled = Mutex(0)
        var router = Router()
        router.on(.GET, "/stream") { _ in
            handled.withLock { $0 += 1 }
            return .eventStream(retry: 1000, heartbeat: nil) { _ in }
        }
        try await withServer(configuration, handler: router.handler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let holder = TestClient(port: port) else { return ["connect failed"] }
                holder.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
                var answers = [String(holder.readResponse(head: true)?.status ?? 0)]
                for accept in ["text/event-stream", "Text/Event-Stream; q=1", "*/*"] {
                    guard let viewer = TestClient(port: port) else { return answers + ["connect failed"] }
                    viewer.send("GET /stream HTTP/1.1\r\nHost: t\r\nAccept: \(accept)\r\n\r\n")
                    let refused = viewer.readResponse()
                    answers.append("\(refused?.status ?? 0) \(refused?.text.contains("too_many_streams") == true) \(viewer.waitForClose())")
                }
                return answers
            }
            #expect(results == ["200", "503 true true", "503 true true", "503 true true"], "\(results)")
            // The holder's handler, and the one whose head did not ask for an event stream.
            #expect(handled.withLock { $0 } == 2)
            #expect(server.statistics.streamsRefused == 3)
        }
    }

    /// A connection of the reserve whose request was its last byte closes once its answer is sent, with
    /// a FIN, not a reset: a refused stream whose client is slow to hang up gives the slot back at once,
    /// so a probe right after it is answered. One that sent more after its request lingers as before
    /// (its client reads the whole answer), and holds its slot meanwhile.
    @Test(arguments: EventLoopBackend.available) func aReserveConnectionGivesItsSlotBackOnceAnswered(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.maxConnections = 1
        configuration.reservedConnections = 1
        configuration.lingerTimeout = .seconds(10)
        var router = Router()
        router.on(.GET, "/stream") { _ in .eventStream(retry: 1000, heartbeat: nil) { _ in } }
        router.on(.GET, "/healthz") { _ in .text("ok") }
        try await withServer(configuration, handler: router.handler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                let streamHead = "GET /stream HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n"
                guard let holder = TestClient(port: port) else { return ["connect failed"] }
                holder.send(streamHead)
                var answers = [String(holder.readResponse(head: true)?.status ?? 0)]
                for extra in ["", "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"] {
                    // The viewer keeps its socket open after its answer, as a crowd's slow clients do.
                    guard let viewer = TestClient(port: port) else { return answers + ["connect failed"] }
                    viewer.send(streamHead + extra)
                    let refused = viewer.readResponse()
                    answers.append("\(refused?.status ?? 0) \(refused?.text.contains("too_many_streams") == true)")
                    guard let probe = TestClient(port: port) else { return answers + ["connect failed"] }
                    probe.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                    let probed = probe.readResponse()
                    answers.append("\(probed?.status ?? 0) \(probed?.text.contains("too_many_connections") == true ? "refused" : probed?.text ?? "-")")
                    if extra.isEmpty {
                        var byte: UInt8 = 0
                        let count = recv(viewer.fd, &byte, 1, 0)
                        answers.append("end " + (count == 0 ? "fin" : count < 0 && errno == ECONNRESET ? "reset" : "\(count)"))
                    }
                }
                return answers
            }
            #expect(results == ["200", "503 true", "200 ok", "end fin", "503 true", "503 refused"], "\(results)")
        }
    }

    /// With no slot left, not even on the reserve, a new connection waits in the kernel's backlog for
    /// one to free (as in a crowd of viewers coming back from a dead node) rather than be refused: a
    /// probe that arrives then is answered once a slot frees, and nothing is refused.
    @Test(arguments: EventLoopBackend.available) func aConnectionWaitsBrieflyForASlotRatherThanBeRefused(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.maxConnections = 1
        configuration.reservedConnections = 1
        try await withServer(configuration, handler: echoHandler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let holder = TestClient(port: port), let squatter = TestClient(port: port) else { return ["connect failed"] }
                holder.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
                var answers = [String(holder.readResponse(head: true)?.status ?? 0)]
                // The reserve's one slot, held by a head not finished.
                squatter.send("GET /echo/a HTTP/1.1\r\nHost: t\r\n")
                usleep(100_000)
                guard let probe = TestClient(port: port, receiveTimeoutSeconds: 10) else { return answers + ["connect failed"] }
                probe.send("GET /echo/healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                usleep(100_000)
                shutdown(squatter.fd, Int32(SHUT_RDWR))
                let probed = probe.readResponse()
                answers.append("\(probed?.status ?? 0) \(probed?.text ?? "-")")
                return answers
            }
            #expect(results == ["200", "200 /echo/healthz"], "\(results)")
            #expect(server.statistics.connectionsRefused == 0)
        }
    }
}
