import Testing
@testable import LiveListHTTP

/// A loop with work that never runs out (changes faster than it sends them to its streams: the fan-out
/// queues more flushes while it runs the last ones) still reads and answers its requests, between
/// rounds of that work.
struct FloodedLoopTests {
    @Test(arguments: EventLoopBackend.available) func aLoopWithWorkWithoutEndStillAnswersARequest(backend: EventLoopBackend) async throws {
        var router = Router()
        router.on(.GET, "/ping") { _ in .text("pong") }
        try await withServer(testConfiguration(loops: 1, backend: backend), handler: router.handler) { server in
            let port = server.port
            let loop = try #require(server.eventLoops.first)
            let working = Locked(true)
            let rounds = Locked(0)
            // Work that queues more of itself on the loop, from the loop, for as long as `working`.
            @Sendable func again() {
                rounds.withLock { $0 += 1 }
                if working.withLock({ $0 }) { loop.execute(again) }
            }
            loop.execute(again)
            #expect(await eventually { rounds.withLock { $0 } > 100 })
            let answer = await onThread { () -> String in
                guard let probe = TestClient(port: port, receiveTimeoutSeconds: 30) else { return "connect failed" }
                probe.send("GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
                guard let response = probe.readResponse() else { return "no answer" }
                return "\(response.status) \(response.text)"
            }
            // Answered while the work went on; only then is it stopped.
            let stillWorking = working.withLock { $0 }
            working.withLock { $0 = false }
            #expect(answer == "200 pong")
            #expect(stillWorking)
        }
    }
}
