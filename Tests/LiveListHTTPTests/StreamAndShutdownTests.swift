#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import LiveListHTTP

/// Waits (with a generous safety bound, never asserted as a timing) until `condition` holds.
func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    for _ in 0..<6_000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// A gate async handlers wait on.
final class Gate: Sendable {
    private let state = Locked<(open: Bool, entered: Int, waiters: [CheckedContinuation<Void, Never>])>((false, 0, []))

    var entered: Int { state.withLock { $0.entered } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let pass = state.withLock { state -> Bool in
                state.entered += 1
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if pass { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            let waiters = state.waiters
            state.waiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Streams opened by the `/events` route, and a log of their callbacks.
/// Opens `count` event streams (`GET /events`), each on a client of its own, and waits until `book`'s
/// handler has them all; nil, with an issue recorded, when it does not. A shrunk receive buffer makes a
/// client that reads nothing stall the server sooner.
func openEventStreams(_ count: Int, port: Int, book: StreamBook, shrinkReceiveBuffer: Bool = false) async -> [TestClient]? {
    var clients: [TestClient] = []
    for _ in 0 ..< count {
        guard let client = await onThread({ TestClient(port: port) }) else {
            Issue.record("no connection")
            return nil
        }
        if shrinkReceiveBuffer { client.shrinkReceiveBuffer() }
        _ = await onThread { client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n") }
        clients.append(client)
    }
    guard await eventually({ book.count == count }) else {
        Issue.record("the streams did not open")
        return nil
    }
    return clients
}

final class StreamBook: Sendable {
    let streams = Locked<[HTTPStream]>([])
    let log = Locked<[String]>([])

    var count: Int { streams.withLock { $0.count } }
    func stream(_ index: Int) -> HTTPStream { streams.withLock { $0[index] } }
    func record(_ entry: String) { log.withLock { $0.append(entry) } }
    func logged(_ entry: String) -> Bool { log.withLock { $0.contains(entry) } }

    func handler(gate: Gate? = nil, heartbeat: Duration? = nil) -> HTTPHandler {
        var router = Router()
        router.on(.GET, "/events") { [self] _ in
            .eventStream(retry: 1500, heartbeat: heartbeat) { stream in
                let index = self.streams.withLock { streams in
                    streams.append(stream)
                    return streams.count - 1
                }
                stream.onClose { reason in self.record("closed \(index) \(reason)") }
                stream.send(ServerSentEvent(id: "1", event: "patch", data: "first"))
            }
        }
        router.on(.GET, "/hold") { (_: HTTPRequest) async -> HTTPResponse in
            await gate?.wait()
            return .text("held")
        }
        router.on(.GET, "/quick") { _ in .text("quick") }
        return router.handler
    }
}

@Suite struct StreamTests {
    @Test(arguments: EventLoopBackend.available) func eventStreamHeadWriteDrainAndPeerGone(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        try await withServer(testConfiguration(backend: backend), handler: book.handler(heartbeat: .milliseconds(50))) { server in
            let port = server.port
            guard let client = await onThread({ TestClient(port: port) }) else {
                Issue.record("no connection")
                return
            }
            let head = await onThread { () -> String in
                client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
                guard let response = client.readResponse(head: true) else { return "none" }
                return [response.status.description, response.header("Content-Type") ?? "-", response.header("Cache-Control") ?? "-",
                        response.header("X-Accel-Buffering") ?? "-", response.header("Transfer-Encoding") ?? "-",
                        response.header("Content-Length") ?? "no length"].joined(separator: "|")
            }
            #expect(head == "200|text/event-stream|no-cache|no|chunked|no length")
            let first = await onThread { client.readStream { $0.contains("data: first\n\n") } }
            #expect(first?.replacingPings == "retry: 1500\n\nevent: patch\nid: 1\ndata: first\n\n")
            guard await eventually({ book.count == 1 }) else {
                Issue.record("the stream did not open")
                return
            }
            let stream = book.stream(0)
            #expect(stream.send(ServerSentEvent(id: "2", data: "two\nlines")))
            let second = await onThread { client.readStream { $0.contains("data: lines\n\n") } }
            // Heartbeats may come in between; they are comments and carry no id.
            #expect(second?.replacingPings == "id: 2\ndata: two\ndata: lines\n\n")
            // A heartbeat is one comment line: no blank line after it ends an event in any parser.
            let heartbeat = await onThread { client.readStream { $0.contains(": ping\n") } }
            #expect(heartbeat.map { !$0.contains(": ping\n\n") && !$0.contains(": ping\r") } == true)
            // What is queued when the drain is reported: read then, because a heartbeat (12 bytes,
            // chunked) may be queued at any moment after it.
            let drained = Locked<Int?>(nil)
            stream.whenDrained { [stream] in drained.withLock { $0 = stream.queuedBytes } }
            #expect(await eventually { drained.withLock { $0 } != nil })
            #expect(drained.withLock { $0 } == 0)
            #expect(server.statistics.streamsOpen == 1)
            // The peer goes away: the stream learns it and refuses writes.
            await onThread { _ = shutdown(client.fd, Int32(SHUT_RDWR)) }
            #expect(await eventually { book.logged("closed 0 peerGone") })
            #expect(stream.isClosed)
            #expect(!stream.write("late"))
            #expect(await eventually { server.statistics.streamsOpen == 0 })
        }
    }

    /// A writer may keep a stream after its server shut down and was let go: its writes are refused,
    /// and nothing of the gone server is reached (a stream reads its budget through its connection).
    @Test func aStreamOutlivingItsServerRefusesWrites() async throws {
        let book = StreamBook()
        var server: HTTPServer? = HTTPServer(configuration: testConfiguration(), handler: book.handler(heartbeat: nil))
        try server?.start()
        let port = try #require(server?.port)
        let client = try #require(await onThread { TestClient(port: port) })
        let opened = await onThread { () -> Bool in
            client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
            return client.readResponse(head: true) != nil
        }
        #expect(opened)
        #expect(await eventually { book.count == 1 })
        let stream = book.stream(0)
        await server?.shutdown(gracePeriod: .milliseconds(200))
        weak let gone = server
        server = nil
        #expect(stream.isClosed)
        #expect(!stream.write("after the server"))
        #expect(!stream.send(ServerSentEvent(data: "after the server")))
        _ = gone
        withExtendedLifetime(client) {}
    }

    @Test(arguments: EventLoopBackend.available) func closingAStreamEndsTheBodyAndKeepsTheConnection(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        try await withServer(testConfiguration(backend: backend), handler: book.handler()) { server in
            let port = server.port
            let client = try #require(await onThread { TestClient(port: port) }, "no connection")
            _ = await onThread { () -> String? in
                client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = client.readResponse(head: true)
                return client.readStream { $0.contains("first") }
            }
            guard await eventually({ book.count == 1 }) else {
                Issue.record("the stream did not open")
                return
            }
            let stream = book.stream(0)
            stream.send(ServerSentEvent(data: "last"))
            stream.close()
            let results = await onThread { () -> [String] in
                let rest = client.readStream { _ in false }  // until the last chunk
                client.send("GET /quick HTTP/1.1\r\nHost: t\r\n\r\n")
                return [rest ?? "ended", client.readResponse()?.text ?? "-"]
            }
            #expect(results == ["ended", "quick"])
            #expect(await eventually { book.logged("closed 0 closed") })
        }
    }

    @Test(arguments: EventLoopBackend.available) func aStreamPastItsBacklogLimitIsClosedAndCounted(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.streamBacklogLimit = 256 * 1024
        configuration.writeTimeout = .seconds(30)
        try await withServer(configuration, handler: book.handler()) { server in
            let port = server.port
            let client = try #require(await onThread { TestClient(port: port) }, "no connection")
            await onThread {
                client.shrinkReceiveBuffer()
                client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
            }
            guard await eventually({ book.count == 1 }) else {
                Issue.record("the stream did not open")
                return
            }
            let stream = book.stream(0)
            let payload = String(repeating: "x", count: 4096)
            var accepted = 0
            // The client never reads: writes must stop being accepted after a bounded number.
            while accepted < 100_000, stream.send(ServerSentEvent(data: payload)) {
                accepted += 1
                if accepted % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }
            }
            #expect(accepted < 100_000)
            #expect(await eventually { book.logged("closed 0 backlogExceeded") })
            #expect(await eventually { server.statistics.streamsOverflowed == 1 })
            _ = client
        }
    }
}

@Suite struct ShutdownTests {
    @Test(arguments: EventLoopBackend.available) func gracefulShutdownFinishesInFlightEndsStreamsAndStopsAccepting(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        let gate = Gate()
        let server = HTTPServer(configuration: testConfiguration(backend: backend), handler: book.handler(gate: gate))
        try server.start()
        let port = server.port
        guard let held = await onThread({ TestClient(port: port) }),
              let streaming = await onThread({ TestClient(port: port) }),
              let idle = await onThread({ TestClient(port: port) })
        else {
            Issue.record("no connections")
            return
        }
        _ = await onThread { held.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n") }
        #expect(await eventually { gate.entered == 1 })
        let opened = await onThread { () -> String? in
            streaming.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
            _ = streaming.readResponse(head: true)
            return streaming.readStream { $0.contains("first") }
        }
        #expect(opened != nil)
        let quick = await onThread { () -> String in
            idle.send("GET /quick HTTP/1.1\r\nHost: t\r\n\r\n")
            return idle.readResponse()?.text ?? "-"
        }
        #expect(quick == "quick")

        let stopping = Task { await server.shutdown(gracePeriod: .seconds(20)) }
        let ended = await onThread { () -> [String] in
            let rest = streaming.readStream { _ in false }
            return [rest == nil ? "stream ended" : "stream open", idle.waitForClose() ? "idle closed" : "idle open"]
        }
        #expect(ended == ["stream ended", "idle closed"])
        #expect(await eventually { book.logged("closed 0 serverShutdown") })
        gate.open()
        let final = await onThread { () -> String in
            let response = held.readResponse()
            return "\(response?.text ?? "-") \(response?.header("Connection") ?? "-") \(held.waitForClose())"
        }
        #expect(final == "held close true")
        await stopping.value
        let refused = await onThread { TestClient(port: port) == nil }
        #expect(refused)
    }

    @Test(arguments: EventLoopBackend.available) func shutdownClosesWhatIsStillOpenAtTheDeadline(backend: EventLoopBackend) async throws {
        let gate = Gate()
        let server = HTTPServer(configuration: testConfiguration(backend: backend), handler: StreamBook().handler(gate: gate))
        try server.start()
        let port = server.port
        let held = try #require(await onThread { TestClient(port: port) }, "no connection")
        _ = await onThread { held.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n") }
        #expect(await eventually { gate.entered == 1 })
        await server.shutdown(gracePeriod: .milliseconds(100))
        let closed = await onThread { held.waitForClose() }
        #expect(closed)
        gate.open()
    }

    /// An async handler that finishes after its loop stopped must not wake the loop through the
    /// descriptor number the loop closed: by then the kernel may have given it to another socket or
    /// file (here, a socket of ours), which would receive the wake-up's eight bytes.
    @Test(arguments: EventLoopBackend.available) func workFinishingAfterShutdownWritesToNoDescriptor(backend: EventLoopBackend) async throws {
        let gate = Gate()
        let finished = Locked(0)
        var router = Router()
        router.on(.GET, "/hold") { (_: HTTPRequest) async -> HTTPResponse in
            await gate.wait()
            finished.withLock { $0 += 1 }
            return .text("held")
        }
        let server = HTTPServer(configuration: testConfiguration(loops: 1, backend: backend), handler: router.handler)
        try server.start()
        let port = server.port
        let loop = try #require(server.eventLoops.first)
        let held = try #require(await onThread { TestClient(port: port) }, "no connection")
        _ = await onThread { held.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n") }
        #expect(await eventually { gate.entered == 1 })
        await server.shutdown(gracePeriod: .milliseconds(100))
        #expect(loop.hasStopped)

        // Take the loop's old descriptor number for a socket pair of ours (the kernel hands out the
        // lowest free number; other tests running meanwhile may take it first, so try a few).
        var pairs: [(Int32, Int32)] = []
        defer { for (a, b) in pairs { close(a); close(b) } }
        var watched: (mine: Int32, peer: Int32)?
        for _ in 0 ..< 64 where watched == nil {
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &ends) == 0 else { break }
            pairs.append((ends[0], ends[1]))
            if ends[0] == loop.wakeFd { watched = (ends[0], ends[1]) }
            if ends[1] == loop.wakeFd { watched = (ends[1], ends[0]) }
        }

        gate.open()
        #expect(await eventually { finished.withLock { $0 } == 1 })
        let ran = Locked(false)
        loop.execute { ran.withLock { $0 = true } }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!ran.withLock { $0 }, "a stopped loop runs nothing")
        if let watched {
            var byte: UInt8 = 0
            let received = recv(watched.peer, &byte, 1, 0)
            #expect(received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "nothing was written to descriptor \(watched.mine)")
        }
        withExtendedLifetime(held) {}
    }
}

extension String {
    /// The text without `: ping` heartbeat comment lines.
    var replacingPings: String {
        // One pass: the text of a large event is megabytes.
        replacing(": ping\n", with: "")
    }
}
