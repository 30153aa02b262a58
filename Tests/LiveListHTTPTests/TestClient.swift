#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import LiveListHTTP

#if canImport(Glibc)
/// `SOCK_STREAM` as `socket()` takes it (an enum on Glibc, a plain constant on Darwin).
let streamSocketType = Int32(SOCK_STREAM.rawValue)
/// Send flags that keep a closed peer from raising SIGPIPE.
private let noSignalFlags = Int32(MSG_NOSIGNAL)
#else
let streamSocketType = SOCK_STREAM
// Darwin has no MSG_NOSIGNAL; the server under test ignores SIGPIPE in this process anyway.
private let noSignalFlags: Int32 = 0
#endif

/// A blocking test client on a real socket, with a receive timeout as a safety net only.
/// Used by one thread at a time (handed between the test and its helper threads).
final class TestClient: @unchecked Sendable {
    let fd: Int32
    private var buffer: [UInt8] = []

    init?(port: Int, receiveTimeoutSeconds: Int = 10) {
        fd = socket(AF_INET, streamSocketType, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            // deinit closes it (a failed init of a class still runs deinit): closing it here as well
            // would close whatever socket another test has been given the same number since.
            return nil
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sets a small receive buffer (before connecting traffic) so a non-reading client stalls sooner.
    func shrinkReceiveBuffer() {
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { systemSend(fd, $0.baseAddress! + offset, bytes.count - offset, noSignalFlags) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Reads more bytes; false on EOF, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Reads one response. `head` true: the request was HEAD (no body follows).
    func readResponse(head: Bool = false) -> TestResponse? {
        var headEnd: Int?
        while true {
            if let end = find([13, 10, 13, 10]) { headEnd = end; break }
            if !fill() { return nil }
        }
        guard let headEnd else { return nil }
        let headText = String(decoding: buffer[0..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: " ")))
        }
        var response = TestResponse(status: status, headers: headers, body: [])
        if head || status < 200 || status == 204 || status == 304 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            guard let body = readChunked() else { return nil }
            response.body = body
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            while buffer.count < length { if !fill() { return nil } }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else {
            while fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    private func readChunked() -> [UInt8]? {
        var body: [UInt8] = []
        while true {
            guard let line = readLine(), let size = Int(line.split(separator: ";")[0], radix: 16) else { return nil }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return body
            }
            while buffer.count < size + 2 { if !fill() { return nil } }
            body.append(contentsOf: buffer[0..<size])
            buffer.removeFirst(size + 2)
        }
    }

    /// Reads one CRLF-terminated line.
    func readLine() -> String? {
        while true {
            if let end = find([13, 10]) {
                let line = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            if !fill() { return nil }
        }
    }

    /// Reads the chunks of a streamed body until `predicate` holds for the text received so far.
    func readStream(until predicate: (String) -> Bool) -> String? {
        var text = ""
        while !predicate(text) {
            guard let line = readLine(), let size = Int(line.split(separator: ";")[0], radix: 16) else { return nil }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return predicate(text) ? text : nil
            }
            while buffer.count < size + 2 { if !fill() { return nil } }
            text += String(decoding: buffer[0..<size], as: UTF8.self)
            buffer.removeFirst(size + 2)
        }
        return text
    }

    /// Reads a streamed body to its end: the text, and whether the last chunk came (a clean end)
    /// rather than an EOF, a reset or a timeout.
    func readStreamToEnd() -> (text: String, ended: Bool) {
        var text = ""
        while true {
            guard let line = readLine(), let size = Int(line.split(separator: ";")[0], radix: 16) else { return (text, false) }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return (text, true)
            }
            while buffer.count < size + 2 { if !fill() { return (text, false) } }
            text += String(decoding: buffer[0..<size], as: UTF8.self)
            buffer.removeFirst(size + 2)
        }
    }

    /// True when the peer closes the connection (EOF or reset) before `limit` more bytes arrive.
    func waitForClose(limit: Int = 1 << 20) -> Bool {
        var received = 0
        while received < limit {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
            received += count
        }
        return false
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        outer: for index in 0...(buffer.count - pattern.count) {
            for offset in 0..<pattern.count where buffer[index + offset] != pattern[offset] { continue outer }
            return index
        }
        return nil
    }
}

struct TestResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}

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

/// `send(2)`, named where `TestClient.send` does not shadow it.
private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
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
