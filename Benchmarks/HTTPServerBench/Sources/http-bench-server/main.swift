// The server side of Benchmarks/run http for LiveList's own HTTPServer: `GET /body` answers the
// bytes of a file read once at start (from memory on every request), and every other path goes to
// `StaticFiles` over a directory, exactly as LiveListServer mounts `Public/`.
//
//     http-bench-server --port 8081 --body body.html --root www [--loops N] [--event-loop epoll|poll]
//
// `--event-loop` picks the event-loop backend (default: LIVELIST_EVENT_LOOP, else epoll on Linux).
//
// Prints `listening PORT` once serving; stops gracefully on SIGTERM or SIGINT.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveListHTTP

@main
struct BenchServer {
    static func main() async {
        var port = 8081
        var bodyPath = ""
        var root = ""
        var loops: Int?
        var backend = EventLoopBackend.automatic
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            let value = arguments.next() ?? ""
            switch argument {
            case "--port": port = Int(value) ?? port
            case "--body": bodyPath = value
            case "--root": root = value
            case "--loops": loops = Int(value)
            case "--event-loop":
                guard let named = EventLoopBackend(rawValue: value) else { fail("--event-loop takes epoll or poll") }
                backend = named
            default: fail("unknown argument \(argument)")
            }
        }
        guard let body = readFile(bodyPath) else { fail("cannot read --body \(bodyPath)") }
        guard let files = StaticFiles(directory: root) else { fail("--root \(root) is not a directory") }
        var router = Router()
        router.on(.GET, "/body") { _ in HTTPResponse.html(body) }
        router.fallback = files.handler
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = port
        if let loops { configuration.loopCount = loops }
        configuration.eventLoop = backend
        let server = HTTPServer(configuration: configuration, handler: router.handler)
        do {
            try server.start()
        } catch {
            fail("cannot start: \(error)")
        }
        server.shutdownOnSignals()
        print("listening \(server.port) (\(server.eventLoopBackend) event loop)")
        // Flushed at once (every stream): a script reading the port through a pipe would wait for a full buffer.
        fflush(nil)
        await server.waitUntilStopped()
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
        let line = "http-bench-server: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
}
