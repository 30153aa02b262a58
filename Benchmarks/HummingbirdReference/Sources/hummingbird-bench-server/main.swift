// The Hummingbird 2 reference server of Benchmarks/run http, serving the same bytes as
// http-bench-server: `GET /body` from memory (a file read once at start) and every other path
// through FileMiddleware over a directory.
//
//     hummingbird-bench-server --port 8082 --body body.html --root www
//
// Prints `listening PORT` once serving; stops on SIGTERM or SIGINT (Hummingbird's service lifecycle).
#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import Logging

@main
struct HummingbirdBenchServer {
    static func main() async throws {
        var port = 8082
        var bodyPath = ""
        var root = ""
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            let value = arguments.next() ?? ""
            switch argument {
            case "--port": port = Int(value) ?? port
            case "--body": bodyPath = value
            case "--root": root = value
            default: fail("unknown argument \(argument)")
            }
        }
        guard let bytes = readFile(bodyPath) else { fail("cannot read --body \(bodyPath)") }
        let body = ByteBuffer(bytes: bytes)
        var logger = Logger(label: "hummingbird-bench")
        logger.logLevel = .error
        let router = Router()
        router.middlewares.add(FileMiddleware(root, logger: logger))
        router.get("/body") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: body))
        }
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "Hummingbird"),
            onServerRunning: { [port] channel in
                print("listening \(channel.localAddress?.port ?? port)")
            },
            logger: logger
        )
        try await app.runService()
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }

    static func fail(_ message: String) -> Never {
        let line = "hummingbird-bench-server: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
}
