import Foundation
import LiveListTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `livelist healthcheck` against the real binary (docs/DEPLOYMENT.md, "Operating a node"): over TLS
/// to a node that serves HTTPS itself, and on a node whose every connection within the cap holds an
/// event stream.
@Suite(.enabled(if: commandPath("openssl") != nil, "needs the openssl command line tool"))
struct HealthcheckTLSTests {
    @Test func theProbeSpeaksTLSToANodeThatServesHTTPS() async throws {
        try await offThePool {
            let certificate = try SelfSignedCertificate()
            defer { certificate.remove() }
            let server = try LiveServer(arguments: ["--no-demo", "--tls-cert", certificate.certificate, "--tls-key", certificate.key])
            defer { server.stop(); server.removeData() }
            let port = String(server.port)

            let withFlag = try runLivelist(["healthcheck", "--port", port, "--tls"])
            #expect(withFlag.status == 0, "\(withFlag)")
            #expect(withFlag.output.contains("healthy: GET /healthz on 127.0.0.1:\(port) over TLS answered 200"), "\(withFlag)")
            // The container's HEALTHCHECK: no flag, and the server's environment.
            let fromEnvironment = try runLivelist(["healthcheck", "--port", port], set: ["LIVELIST_TLS_CERT": certificate.certificate])
            #expect(fromEnvironment.status == 0, "\(fromEnvironment)")
            // By name, with SNI, through localhost's addresses.
            let byName = try runLivelist(["healthcheck", "--host", "localhost", "--port", port, "--tls"])
            #expect(byName.status == 0, "\(byName)")

            // In clear text the node closes the connection: unhealthy, and the probe says why in words.
            let plain = try runLivelist(["healthcheck", "--port", port])
            let forcedPlain = try runLivelist(["healthcheck", "--port", port, "--no-tls"], set: ["LIVELIST_TLS_CERT": certificate.certificate])
            for probe in [plain, forcedPlain] {
                #expect(probe.status == 1, "\(probe)")
                #expect(probe.errors.contains("unhealthy: GET /healthz on 127.0.0.1:\(port): the connection closed without an answer"), "\(probe)")
                #expect(probe.errors.contains("serves HTTPS") && probe.errors.contains("try --tls"), "\(probe)")
            }
            #expect(server.process.isRunning, "the node serves on: \(server.errorOutput)")
        }
    }

    @Test func tlsToANodeInClearTextFailsInWords() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--no-demo"])
            defer { server.stop(); server.removeData() }
            let port = String(server.port)
            let plain = try runLivelist(["healthcheck", "--port", port])
            #expect(plain.status == 0, "\(plain)")
            let tls = try runLivelist(["healthcheck", "--port", port, "--tls", "--timeout", "3"])
            #expect(tls.status == 1, "\(tls)")
            #expect(tls.errors.contains("unhealthy: GET /healthz on 127.0.0.1:\(port) over TLS: TLS handshake failed"), "\(tls)")
            #expect(tls.errors.contains("try --no-tls"), "\(tls)")
        }
    }
}

@Suite struct HealthcheckOnAFullNodeTests {
    /// The reserve of connections beyond `--max-connections` answers the probe, `/readyz` and
    /// `/metrics` while every connection within the cap holds a stream, and refuses a stream there.
    @Test func aNodeFullOfStreamsStaysHealthyToItsProbe() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--max-connections", "20"])
            defer { server.stop(); server.removeData() }
            var streams: [EventStream] = []
            defer { for stream in streams { stream.close() } }
            // The demo's todo list, so that no other connection came before (a closed connection's slot
            // is freed just after its descriptor: a stream opened at that moment may be refused, and is
            // opened again).
            let deadline = Date().addingTimeInterval(10)
            while streams.count < 20 && Date() < deadline {
                let stream = try EventStream(path: "/lists/todo/events", port: server.port)
                if stream.headStatus == 200 {
                    streams.append(stream)
                } else {
                    stream.close()
                    usleep(50_000)
                }
            }
            try #require(streams.count == 20, "20 streams open on a node of 20 connections")

            let probe = try runLivelist(["healthcheck", "--port", String(server.port), "--no-tls"])
            #expect(probe.status == 0, "\(probe)")
            #expect(try Client.get("/readyz", port: server.port).status == 200)
            let metrics = try Client.get("/metrics", port: server.port)
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("\nlivelist_streams_open 20\n"), "\(metrics.text.prefix(2_000))")

            let refused = try Client.get("/lists/todo/events", port: server.port, headers: [("Accept", "text/event-stream")])
            #expect(refused.status == 503)
            #expect(refused.text.contains("too_many_streams"), "\(refused.text)")
            #expect(refused.header("Retry-After").flatMap { Int($0) }.map { $0 > 0 } == true, "Retry-After: \(refused.header("Retry-After") ?? "none")")
            let after = try Client.get("/metrics", port: server.port).text
            #expect(after.contains("\nlivelist_streams_refused_total 1\n"), "\(after.prefix(4_000))")
            // The streams within the cap are still open.
            #expect(after.contains("\nlivelist_streams_open 20\n"))
        }
    }
}

/// What a run of the `livelist` binary printed, and its exit status.
struct CommandRun: CustomStringConvertible {
    var status: Int32
    var output: String
    var errors: String

    var description: String { "exit \(status), output \(output.debugDescription), errors \(errors.debugDescription)" }
}

/// Runs the built `livelist` with `arguments` through env(1), with `set` added to the environment and
/// `LIVELIST_TLS_CERT`, `LIVELIST_HOST` and `LIVELIST_PORT` removed unless `set` gives them.
func runLivelist(_ arguments: [String], set: [String: String] = [:]) throws -> CommandRun {
    var environment: [String] = []
    for name in ["LIVELIST_TLS_CERT", "LIVELIST_HOST", "LIVELIST_PORT"] where set[name] == nil {
        environment += ["-u", name]
    }
    environment += set.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    let process = try ChildProcess("/usr/bin/env", environment + [LiveServer.binary] + arguments, output: .capture, errors: .capture)
    // A few lines each, far below a pipe's capacity: read one after the other.
    let output = PipeReading.readToEnd(process.outputDescriptor)
    let errors = PipeReading.readToEnd(process.errorDescriptor)
    return CommandRun(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self), errors: String(decoding: errors, as: UTF8.self))
}

/// The path of the executable `name` on PATH, if any.
func commandPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// A self-signed certificate for 127.0.0.1 and its key, made with `openssl req -x509` in a folder of its own.
struct SelfSignedCertificate {
    let folder: String
    var certificate: String { folder + "/cert.pem" }
    var key: String { folder + "/key.pem" }

    init() throws {
        folder = NSTemporaryDirectory() + "livelist-e2e-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let openssl = try #require(commandPath("openssl"))
        let arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ]
        let made = try ChildProcess(openssl, arguments)
        try #require(made.terminationStatus == 0, "openssl could not make a certificate")
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: folder)
    }
}
