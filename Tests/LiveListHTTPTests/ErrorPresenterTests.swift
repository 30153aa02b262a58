@testable import LiveListHTTP
import Testing

/// The server's own refusals pass through `errorPresenter` with the header fields read so far.
@Suite struct ErrorPresenterTests {
    @Test(arguments: EventLoopBackend.available)
    func refusalsAfterTheRequestLineArePresentedWithTheFieldsReadSoFar(backend: EventLoopBackend) async throws {
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.limits.body = 1_000
        configuration.errorPresenter = { response, headers in
            var presented = response
            presented.headers.set("X-Presented-Accept", headers["Accept"] ?? "none")
            return presented
        }
        var router = Router()
        router.on(.PUT, "/up") { _ in .text("ok") }
        try await withServer(configuration, handler: router.handler) { server in
            let port = server.port
            for (request, status, accept) in [
                ("PUT /up HTTP/1.1\r\nHost: t\r\nAccept: text/html\r\nContent-Length: 5000\r\n\r\n", 413, "text/html"),
                ("GET / HTTP/1.1\r\nHost: t\r\nAccept: text/html\r\nBad Field: x\r\n\r\n", 400, "text/html"),
                ("GET / HTTP/1.1\r\nHost: t\r\nBad Field: x\r\nAccept: text/html\r\n\r\n", 400, "none"),
                ("GET /\(String(repeating: "a", count: 20_000)) HTTP/1.1\r\n\r\n", 414, "none"),
            ] {
                let client = try #require(await onThread { TestClient(port: port) })
                let response = await onThread { () -> TestResponse? in
                    client.send(request)
                    return client.readResponse()
                }
                #expect(response?.status == status, "\(request.prefix(40))")
                #expect(response?.header("X-Presented-Accept") == accept, "\(request.prefix(40))")
            }
        }
    }
}
