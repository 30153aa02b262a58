import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveListTestSupport
import Testing
@testable import LiveListHTTP

/// A self-signed certificate for 127.0.0.1 and its key, made once with the `openssl` CLI.
private struct TestCertificate: Sendable {
    let directory: String
    var certificate: String { directory + "/c.pem" }
    var key: String { directory + "/k.pem" }

    static let shared: TestCertificate? = {
        let directory = NSTemporaryDirectory() + "livelist-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil else {
            return nil
        }
        let result = runTool("openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory + "/k.pem",
            "-out", directory + "/c.pem", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        return result.status == 0 ? TestCertificate(directory: directory) : nil
    }()
}

/// The path of an executable named `name` on PATH, if any.
private func toolPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

private struct ToolResult: Sendable {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs a command line tool to completion (blocking: call it off the cooperative pool).
private func runTool(_ name: String, _ arguments: [String]) -> ToolResult {
    guard let path = toolPath(name) else { return ToolResult(status: -1, output: "", errors: "\(name) not found") }
    let process: ChildProcess
    do {
        process = try ChildProcess(path, arguments, output: .capture, errors: .capture)
    } catch {
        return ToolResult(status: -1, output: "", errors: "\(error)")
    }
    // Read both pipes before waiting, so a chatty tool cannot block on a full pipe. PipeReading, never
    // FileHandle (which stops the test process on an interrupted read).
    let errorData = Locked([UInt8]())
    let errorReader = Thread { errorData.withLock { $0 = PipeReading.readToEnd(process.errorDescriptor) } }
    errorReader.start()
    let outputData = PipeReading.readToEnd(process.outputDescriptor)
    process.waitUntilExit()
    while errorReader.isExecuting || !errorReader.isFinished { usleep(1000) }
    return ToolResult(
        status: process.terminationStatus,
        output: String(decoding: outputData, as: UTF8.self),
        errors: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
}

private let toolsAvailable = toolPath("openssl") != nil && toolPath("curl") != nil

/// `/echo/...` answers its path (GET) or path and body (POST), `/big` 1 MiB, `/events` an SSE
/// stream that sends one event at once and then stays open.
private let tlsHandler: HTTPHandler = {
    var router = Router()
    router.on(.GET, "/echo/*rest") { request in .text(request.path) }
    router.on(.POST, "/echo/*rest") { request in .text("\(request.path) \(String(decoding: request.body, as: UTF8.self))") }
    router.on(.GET, "/slow/*rest") { (request: HTTPRequest) async -> HTTPResponse in
        await Task.yield()
        return .text(request.path)
    }
    router.on(.GET, "/big") { _ in HTTPResponse(body: [UInt8](repeating: 0x61, count: 1 << 20)) }
    router.on(.GET, "/events") { _ in
        .eventStream(retry: 1500, heartbeat: nil) { stream in
            _ = stream.send(ServerSentEvent(id: "1", event: "hello", data: "first"))
        }
    }
    return router.handler
}()

@Suite(.enabled(if: toolsAvailable, "needs the openssl and curl command line tools"), .serialized)
struct TLSTests {
    private func tlsConfiguration() throws -> HTTPServerConfiguration {
        let certificate = try #require(TestCertificate.shared, "openssl could not make a certificate")
        var configuration = testConfiguration()
        configuration.tls = TLSConfiguration(certificateChainPath: certificate.certificate, privateKeyPath: certificate.key)
        return configuration
    }

    /// curl with the test certificate as its only trust anchor.
    private func curl(_ arguments: [String]) async throws -> ToolResult {
        let certificate = try #require(TestCertificate.shared)
        return await onThread { runTool("curl", ["-sS", "--cacert", certificate.certificate] + arguments) }
    }

    @Test func getOverTLS() async throws {
        try await withServer(try tlsConfiguration(), handler: tlsHandler) { server in
            let result = try await curl(["https://127.0.0.1:\(server.port)/echo/hello"])
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output == "/echo/hello")
        }
    }

    @Test func keepAliveServesTwoRequestsOnOneConnection() async throws {
        try await withServer(try tlsConfiguration(), handler: tlsHandler) { server in
            let base = "https://127.0.0.1:\(server.port)"
            let result = try await curl(["\(base)/echo/one", "\(base)/slow/two"])
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output == "/echo/one/slow/two")
            #expect(server.statistics.connectionsAccepted == 1)
            #expect(server.statistics.requests == 2)
        }
    }

    @Test func postWithBody() async throws {
        try await withServer(try tlsConfiguration(), handler: tlsHandler) { server in
            let body = String(repeating: "payload-", count: 5000)
            let result = try await curl(["--data-binary", body, "https://127.0.0.1:\(server.port)/echo/post"])
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output == "/echo/post \(body)")
        }
    }

    @Test func largeResponseSurvivesPartialWrites() async throws {
        try await withServer(try tlsConfiguration(), handler: tlsHandler) { server in
            let result = try await curl(["-o", "/dev/null", "-w", "%{size_download}", "https://127.0.0.1:\(server.port)/big"])
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.output == "\(1 << 20)")
        }
    }

    @Test func serverSentEventsArriveOverTLS() async throws {
        try await withServer(try tlsConfiguration(), handler: tlsHandler) { server in
            let result = try await curl(["-N", "--max-time", "2", "https://127.0.0.1:\(server.port)/events"])
            // curl ends on its time limit (28) with the stream still open.
            #expect(result.status == 28, "\(result.errors)")
            #expect(result.output.hasPrefix("retry: 1500\n\n"))
            #expect(result.output.contains("event: hello\nid: 1\ndata: first\n\n"))
        }
    }

    @Test func plainHTTPToTheTLSPortIsClosedAndServingGoesOn() async throws {
        try await withServer(try tlsConfiguration(), handler: tlsHandler) { server in
            let port = server.port
            let plain = try await curl(["--max-time", "5", "http://127.0.0.1:\(port)/echo/plain"])
            #expect(plain.status != 0)
            #expect(plain.output.isEmpty)
            // A raw client sees no byte, then a clean end of stream (FIN, not a reset).
            let raw = await onThread { () -> String in
                guard let client = TestClient(port: port) else { return "connect failed" }
                client.send("GET /echo/plain HTTP/1.1\r\nHost: t\r\n\r\n")
                var chunk = [UInt8](repeating: 0, count: 1024)
                let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                return count == 0 ? "eof" : "recv \(count) errno \(errno)"
            }
            #expect(raw == "eof")
            let secure = try await curl(["https://127.0.0.1:\(port)/echo/after"])
            #expect(secure.status == 0, "\(secure.errors)")
            #expect(secure.output == "/echo/after")
        }
    }

    @Test func badKeyPathFailsStartWithAClearError() throws {
        var configuration = try tlsConfiguration()
        configuration.tls?.privateKeyPath = "/nonexistent/livelist-key.pem"
        let server = HTTPServer(configuration: configuration, handler: tlsHandler)
        do {
            try server.start()
            Issue.record("start() succeeded with a missing key")
        } catch {
            guard case .tls(let message) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(message.contains("/nonexistent/livelist-key.pem"))
        }
    }

    @Test func keyNotMatchingTheCertificateFailsStart() throws {
        let certificate = try #require(TestCertificate.shared)
        let otherKey = certificate.directory + "/other.pem"
        let made = runTool("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", otherKey])
        try #require(made.status == 0, "\(made.errors)")
        var configuration = try tlsConfiguration()
        configuration.tls?.privateKeyPath = otherKey
        let server = HTTPServer(configuration: configuration, handler: tlsHandler)
        #expect(throws: HTTPServerError.self) { try server.start() }
    }
}
