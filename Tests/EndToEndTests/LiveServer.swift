import Foundation
import LiveListTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real `livelist` binary, started on a free loopback port with its own data directory.
final class LiveServer: @unchecked Sendable {
    /// The server's process (posix_spawn: Foundation's `Process.run()` crashes now and then on Linux,
    /// see `ChildProcess`).
    let process: ChildProcess
    let port: Int
    let dataDirectory: String
    private let log = LogBuffer()
    /// Set by `stop()`: the thread that drains the server's standard error ends.
    private let stopped = StopFlag()

    /// What the server printed on standard error so far.
    var errorOutput: String { log.text.withLock { $0 } }

    /// The repository root (this file is Tests/EndToEndTests/LiveServer.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The built binary: `LIVELIST_BINARY`, else the debug build beside the sources.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["LIVELIST_BINARY"] {
            return path
        }
        return root + "/.build/debug/livelist"
    }

    /// Starts the server; `arguments` are extra flags (`--write-token`, `--heartbeat`, …).
    init(arguments: [String] = [], dataDirectory: String? = nil) throws {
        self.dataDirectory = dataDirectory ?? NSTemporaryDirectory() + "livelist-e2e-\(UUID().uuidString)"
        process = try ChildProcess(Self.binary, [
            "--port", "0", "--data", self.dataDirectory,
            "--public", Self.root + "/Public", "--templates", Self.root + "/Templates",
            "--log-level", "info",
        ] + arguments, errors: .capture)
        // The banner names the port: "LiveList serving on http://127.0.0.1:PORT" (https with
        // --tls-cert). Read with PipeReading, never FileHandle (which stops the test process on an
        // interrupted read).
        let descriptor = process.errorDescriptor
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        var found: Int?
        reading: while found == nil && Date() < deadline {
            switch PipeReading.read(descriptor, waitingMilliseconds: 100) {
            case let .bytes(chunk): text += String(decoding: chunk, as: UTF8.self)
            case .nothing: continue
            case .end: break reading
            }
            if let range = text.range(of: "serving on http://127.0.0.1:") ?? text.range(of: "serving on https://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                found = Int(digits)
            }
        }
        guard let found else {
            process.terminate()
            process.waitUntilExit()
            while case let .bytes(chunk) = PipeReading.read(descriptor, waitingMilliseconds: 0) {
                text += String(decoding: chunk, as: UTF8.self)
            }
            throw ServerError("the server did not start: \(text)")
        }
        port = found
        // Keep draining stderr so the server never blocks on a full pipe, and keep what it says, until
        // the server's end closes or `stop()` is called.
        let log = self.log
        log.text.withLock { $0 = text }
        let stopped = self.stopped
        // The thread holds the process, whose end of the pipe stays open until the thread is done.
        let process = self.process
        let drain = Thread {
            withExtendedLifetime(process) {
                while !stopped.isSet {
                    switch PipeReading.read(descriptor, waitingMilliseconds: 200) {
                    case let .bytes(chunk): log.text.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
                    case .nothing: continue
                    case .end: return
                    }
                }
            }
        }
        drain.start()
    }

    /// Stops the server with SIGTERM (or SIGKILL) and waits for it.
    func stop(kill: Bool = false) {
        if process.isRunning {
            process.signal(kill ? SIGKILL : SIGTERM)
            process.waitUntilExit()
        }
        stopped.set()
    }

    func removeData() {
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    deinit {
        stop()
    }
}

/// A browser's session on a page of `list`: its cookie (`name=value`) and the CSRF token the page carries.
func pageSession(_ list: String, port: Int) throws -> (cookie: String, token: String) {
    let page = try Client.get("/lists/\(list)", port: port)
    guard let cookie = page.header("Set-Cookie")?.split(separator: ";").first.map(String.init),
        let range = page.text.range(of: #"(?<=name="csrf" value=")[0-9a-f]{64}"#, options: .regularExpression)
    else { throw ServerError("no session cookie or CSRF token on /lists/\(list)") }
    return (cookie, String(page.text[range]))
}

/// Set once, read from any thread.
final class StopFlag: Sendable {
    private let value = Atomic(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}

/// The server's standard error, collected as it arrives.
final class LogBuffer: Sendable {
    let text = Mutex("")
}

struct ServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The end-to-end tests' client and its responses: the tests' one raw client (LiveListTestSupport).
typealias Client = RawHTTP
typealias Response = RawHTTPResponse

/// An open event stream: reads events as they arrive.
final class EventStream {
    let socket: Int32
    private var buffer: [UInt8] = []
    private(set) var headStatus = 0
    private(set) var comments: [String] = []
    /// The stream's opening (its `event: stream`: id and data), once read.
    private(set) var openingEvent: (id: String, data: String)?
    /// A multiplexed stream's token (in its opening), once read: what `POST /events/TOKEN` names.
    private(set) var token: String?
    /// An event read while looking for the opening, given out by the next `next()`.
    private var pending: (id: String, data: String)?

    init(path: String, port: Int, headers: [(String, String)] = []) throws {
        socket = try Client.connect(port: port)
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try Client.send(socket, Array((head + "\r\n").utf8))
        // Read the response head.
        while buffer.firstRange(of: [13, 10, 13, 10]) == nil {
            guard try fill() else { throw ServerError("stream closed before its head") }
        }
        let end = buffer.firstRange(of: [13, 10, 13, 10])!
        let statusLine = String(decoding: buffer[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")[0]
        headStatus = Int(statusLine.split(separator: " ")[1]) ?? 0
        buffer.removeSubrange(..<end.upperBound)
        chunked = true
    }

    private var chunked = true
    private var text = ""

    /// Reads more bytes (false at end of stream). Chunked framing is removed as it comes.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(socket, &chunk, chunk.count, 0)
        if count <= 0 { return false }
        buffer += chunk[0 ..< count]
        return true
    }

    /// The next event (id, data), skipping comments and the opening (kept in `openingEvent`); nil when
    /// the stream ends or `timeout` passes.
    func next(timeout: Double = 10) throws -> (id: String, data: String)? {
        if let event = pending {
            pending = nil
            return event
        }
        while let event = try block(timeout: timeout) {
            if event.kind == "stream" { continue }
            if !event.data.isEmpty { return (event.id, event.data) }
        }
        return nil
    }

    /// The stream's opening (docs/PROTOCOL.md, "Stream framing"), read when it has not been yet; nil
    /// when the first event is something else (kept for `next()`), or none comes.
    func opening(timeout: Double = 10) throws -> (id: String, data: String)? {
        if let openingEvent { return openingEvent }
        guard pending == nil, let event = try block(timeout: timeout) else { return nil }
        if event.kind != "stream" { pending = (event.id, event.data) }
        return openingEvent
    }

    /// The next block that ends with a blank line and holds a field (comment lines go to `comments`,
    /// a heartbeat's too, though no blank line follows it); nil when the stream ends or `timeout` passes.
    private func block(timeout: Double) throws -> (kind: String, id: String, data: String)? {
        // One deadline for the whole call: heartbeat comments must not keep it waiting forever.
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var timeoutValue = timeval(tv_sec: Int(left), tv_usec: max(1_000, Int((left - Double(Int(left))) * 1_000_000)))
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeoutValue, socklen_t(MemoryLayout<timeval>.size))
            decodeChunks()
            // A heartbeat is a comment line with no blank line after it.
            while text.hasPrefix(":"), let end = text.firstIndex(of: "\n") {
                comments.append(String(text[..<end]))
                text = String(text[text.index(after: end)...])
            }
            if let end = text.range(of: "\n\n") {
                let block = String(text[..<end.lowerBound])
                text = String(text[end.upperBound...])
                var id = ""
                var data = ""
                var kind = "message"
                var isEvent = false
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") { comments.append(String(line)) }
                    if line.hasPrefix("event: ") { kind = String(line.dropFirst(7)) }
                    if line.hasPrefix("id: ") { id = String(line.dropFirst(4)); isEvent = true }
                    if line.hasPrefix("data: ") { data = String(line.dropFirst(6)); isEvent = true }
                }
                guard isEvent else { continue }
                if kind == "stream" {
                    // The opening: where the stream starts, and a multiplexed stream's token, kept for the
                    // changes to its lists.
                    openingEvent = (id, data)
                    let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
                    token = object?["stream"] as? String
                }
                return (kind, id, data)
            }
            guard try fill() else { return nil }
        }
    }

    /// Moves complete chunks of the chunked body into `text`.
    private func decodeChunks() {
        while let lineEnd = buffer.firstRange(of: [13, 10]) {
            let sizeText = String(decoding: buffer[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16) else { return }
            guard buffer.count >= lineEnd.upperBound + size + 2 else { return }
            text += String(decoding: buffer[lineEnd.upperBound ..< lineEnd.upperBound + size], as: UTF8.self)
            buffer.removeSubrange(..<(lineEnd.upperBound + size + 2))
        }
    }

    private var isClosed = false

    /// Closes the socket, once: a second close(2) of the same number would close whatever socket of
    /// another test has been given that number since (tests run in parallel, in one process).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(socket)
    }

    deinit {
        close()
    }
}

/// A task executor that runs each job on a thread of its own, off Swift's cooperative pool.
final class BlockingTestExecutor: TaskExecutor {
    static let shared = BlockingTestExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}

/// Runs a test's blocking body (sockets read until an answer comes, processes waited for) off the
/// cooperative pool, in the same task, so that its expectations are still the test's own. On a
/// 2-core machine the pool has two threads: two end-to-end tests blocking them starved every other
/// suite's tasks (an HTTP test's async handler waited past its client's timeout).
func offThePool<T>(_ body: () throws -> T) async throws -> T {
    try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try body() }
}
