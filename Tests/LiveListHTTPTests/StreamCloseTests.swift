#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import LiveListHTTP
import Testing

/// Every end of an event stream is counted by its reason, and an end that the server caused is said in
/// its notices, at most once a minute per reason with the count of those not said.
@Suite struct StreamCloseTests {
    /// A configuration whose notices go to `notices`.
    private func configuration(_ notices: Locked<[String]>, backend: EventLoopBackend) -> HTTPServerConfiguration {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.notice = { line in notices.withLock { $0.append(line) } }
        return configuration
    }

    @Test(arguments: EventLoopBackend.available) func aReaderLeavingIsCountedAndNotLogged(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        let notices = Locked<[String]>([])
        try await withServer(configuration(notices, backend: backend), handler: book.handler()) { server in
            let port = server.port
            let client = try #require(await onThread { TestClient(port: port) }, "no connection")
            _ = await onThread { () -> String? in
                client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = client.readResponse(head: true)
                return client.readStream { $0.contains("first") }
            }
            #expect(await eventually { book.count == 1 })
            await onThread { _ = shutdown(client.fd, Int32(SHUT_RDWR)) }
            #expect(await eventually { book.logged("closed 0 peerGone") })
            #expect(await eventually { server.statistics.streamsClosed == [.peerGone: 1] })
            #expect(notices.withLock { $0 }.isEmpty)
        }
    }

    @Test(arguments: EventLoopBackend.available) func aStalledReaderIsCountedAndLoggedOnce(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        let notices = Locked<[String]>([])
        var configuration = configuration(notices, backend: backend).shortTimeouts(write: true)
        configuration.streamBacklogLimit = 64 << 20
        try await withServer(configuration, handler: book.handler()) { server in
            let port = server.port
            var clients: [TestClient] = []
            for _ in 0 ..< 2 {
                let client = try #require(await onThread { TestClient(port: port) }, "no connection")
                await onThread {
                    client.shrinkReceiveBuffer()
                    client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
                }
                clients.append(client)
            }
            #expect(await eventually { book.count == 2 })
            // Neither client reads: each stream's queue stops draining, and the write timeout ends it.
            let payload = String(repeating: "x", count: 64 << 10)
            for index in 0 ..< 2 {
                let stream = book.stream(index)
                for _ in 0 ..< 256 where stream.send(ServerSentEvent(data: payload)) {}
            }
            #expect(await eventually { server.statistics.streamsClosed[.writeTimeout] == 2 })
            #expect(await eventually { book.logged("closed 0 writeTimeout") && book.logged("closed 1 writeTimeout") })
            let said = notices.withLock { $0 }
            #expect(said.count == 1)
            #expect(said.first?.contains("livelist_streams_closed_total{reason=\"write_timeout\"}") == true)
            withExtendedLifetime(clients) {}
        }
    }

    @Test func everyReasonHasItsOwnName() {
        let names = HTTPStreamCloseReason.allCases.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.contains("backlog_exceeded") && names.contains("write_failed"))
    }
}
