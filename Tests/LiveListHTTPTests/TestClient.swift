#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import LiveListHTTP
import LiveListTestSupport

/// The HTTP tests' client and its responses: the tests' one raw client (LiveListTestSupport).
typealias TestClient = RawHTTPConnection
typealias TestResponse = RawHTTPResponse

/// A configuration for tests on 127.0.0.1, port 0. Timeouts are long (the machine is shared and
/// noisy); a test that exercises one sets it short with `shortTimeouts`. Tests that run on every
/// backend take theirs as an argument (`@Test(arguments: EventLoopBackend.available)`); the others
/// use `.automatic`, which follows `LIVELIST_EVENT_LOOP`.
func testConfiguration(loops: Int = 2, backend: EventLoopBackend = .automatic) -> HTTPServerConfiguration {
    var configuration = HTTPServerConfiguration()
    configuration.eventLoop = backend
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.loopCount = loops
    configuration.headerTimeout = .seconds(30)
    configuration.bodyTimeout = .seconds(30)
    configuration.idleTimeout = .seconds(30)
    configuration.writeTimeout = .seconds(30)
    configuration.lingerTimeout = .milliseconds(200)
    configuration.shutdownGracePeriod = .seconds(5)
    return configuration
}

extension HTTPServerConfiguration {
    /// The same with the given timeouts shortened to 300 ms.
    func shortTimeouts(header: Bool = false, body: Bool = false, idle: Bool = false, write: Bool = false) -> Self {
        var copy = self
        if header { copy.headerTimeout = .milliseconds(300) }
        if body { copy.bodyTimeout = .milliseconds(300) }
        if idle { copy.idleTimeout = .milliseconds(300) }
        if write { copy.writeTimeout = .milliseconds(300) }
        return copy
    }
}

/// Starts a server, runs `body`, and shuts the server down.
func withServer(
    _ configuration: HTTPServerConfiguration = testConfiguration(), handler: HTTPHandler,
    _ body: (HTTPServer) async throws -> Void
) async throws {
    let server = HTTPServer(configuration: configuration, handler: handler)
    try server.start()
    do {
        try await body(server)
    } catch {
        await server.shutdown(gracePeriod: .milliseconds(100))
        throw error
    }
    await server.shutdown(gracePeriod: .milliseconds(500))
}

/// Runs blocking client code on a thread of its own, off the cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let box = Unmanaged.passRetained(ThreadBox { continuation.resume(returning: body()) })
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let box = Unmanaged<ThreadBox>.fromOpaque(context!).takeRetainedValue()
            box.body()
            return nil
        }, box.toOpaque())
        precondition(result == 0)
        pthread_detach(thread)
    }
}

final class ThreadBox: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}
