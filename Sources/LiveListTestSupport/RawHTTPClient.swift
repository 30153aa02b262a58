#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The tests' one raw HTTP/1.1 client, on blocking loopback sockets and written without the server's
// code: the HTTP server's own tests and the end-to-end tests of the real binary both read responses
// with it.

#if canImport(Glibc)
/// `SOCK_STREAM` as `socket()` takes it (an enum on Glibc, a plain constant on Darwin).
public let streamSocketType = Int32(SOCK_STREAM.rawValue)
/// Send flags that keep a closed peer from raising SIGPIPE.
private let noSignalFlags = Int32(MSG_NOSIGNAL)
#else
public let streamSocketType = SOCK_STREAM
// Darwin has no MSG_NOSIGNAL; the servers under test ignore SIGPIPE.
private let noSignalFlags: Int32 = 0
#endif

/// Why a raw request failed.
public struct RawHTTPError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A response read off a socket.
public struct RawHTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header field `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// One connection to a server on 127.0.0.1, with a receive timeout as a safety net only (60 s by
/// default: an in-process server answers many routes from tasks on the cooperative pool, which the
/// suite's CPU-bound tests can hold for tens of seconds on two cores; a read that waits that long is
/// a hang, never a latency to assert). Reads
/// responses one after another (keep-alive, pipelining, streamed bodies). Used by one thread at a
/// time (handed between a test and its helper threads).
public final class RawHTTPConnection: @unchecked Sendable {
    public let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `port`; nil when the connection is refused.
    public init?(port: Int, receiveTimeoutSeconds: Int = 60) {
        guard let fd = try? RawHTTP.connect(port: port, receiveTimeoutSeconds: receiveTimeoutSeconds) else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sets a small receive buffer so that a client that does not read stalls sooner.
    public func shrinkReceiveBuffer() {
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        (try? RawHTTP.send(fd, bytes)) != nil
    }

    /// Reads more bytes; false on EOF, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false }
        buffer.append(contentsOf: chunk[0 ..< count])
        return true
    }

    /// Reads one response. `head` true: the request was HEAD (no body follows).
    public func readResponse(head: Bool = false) -> RawHTTPResponse? {
        var headEnd: Int?
        while true {
            if let end = find([13, 10, 13, 10]) { headEnd = end; break }
            if !fill() { return nil }
        }
        guard let headEnd, let (status, headers) = RawHTTP.parseHead(buffer[0 ..< headEnd]) else { return nil }
        buffer.removeFirst(headEnd + 4)
        var response = RawHTTPResponse(status: status, headers: headers, body: [])
        if head || status < 200 || status == 204 || status == 304 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            let (text, ended) = readChunks { _ in false }
            guard ended else { return nil }
            response.body = text
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            while buffer.count < length { if !fill() { return nil } }
            response.body = Array(buffer[0 ..< length])
            buffer.removeFirst(length)
        } else {
            while fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Reads chunks until the last one (ended: true) or until `enough` holds for the bytes read so
    /// far; ended: false also on EOF, error or timeout.
    private func readChunks(until enough: ([UInt8]) -> Bool) -> (bytes: [UInt8], ended: Bool) {
        var body: [UInt8] = []
        while !enough(body) {
            guard let line = readLine(), let size = Int(line.split(separator: ";").first ?? "", radix: 16) else { return (body, false) }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return (body, true)
            }
            while buffer.count < size + 2 { if !fill() { return (body, false) } }
            body.append(contentsOf: buffer[0 ..< size])
            buffer.removeFirst(size + 2)
        }
        return (body, false)
    }

    /// Reads one CRLF-terminated line.
    public func readLine() -> String? {
        while true {
            if let end = find([13, 10]) {
                let line = String(decoding: buffer[0 ..< end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            if !fill() { return nil }
        }
    }

    /// Reads the chunks of a streamed body until `predicate` holds for the text received so far.
    public func readStream(until predicate: (String) -> Bool) -> String? {
        let (bytes, _) = readChunks { predicate(String(decoding: $0, as: UTF8.self)) }
        let text = String(decoding: bytes, as: UTF8.self)
        return predicate(text) ? text : nil
    }

    /// Reads a streamed body to its end: the text, and whether the last chunk came (a clean end)
    /// rather than an EOF, a reset or a timeout.
    public func readStreamToEnd() -> (text: String, ended: Bool) {
        let (bytes, ended) = readChunks { _ in false }
        return (String(decoding: bytes, as: UTF8.self), ended)
    }

    /// True when the peer closes the connection (EOF or reset) before `limit` more bytes arrive.
    public func waitForClose(limit: Int = 1 << 20) -> Bool {
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
        buffer.firstRange(of: pattern)?.lowerBound
    }
}

/// One request per connection (`Connection: close`), and the socket primitives the tests that speak
/// raw bytes use.
public enum RawHTTP {
    /// Sends one request to 127.0.0.1:`port` and reads its response.
    public static func request(
        _ method: String, _ path: String, port: Int, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> RawHTTPResponse {
        let socket = try connect(port: port)
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "PUT" || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(socket, Array(head.utf8) + body)
        return try parse(readToEnd(socket))
    }

    public static func get(_ path: String, port: Int, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        try request("GET", path, port: port, headers: headers)
    }

    public static func put(_ path: String, port: Int, json: String, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        try request("PUT", path, port: port, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    /// A socket connected to 127.0.0.1:`port`; `receiveBuffer` (SO_RCVBUF) and `segmentSize`
    /// (TCP_MAXSEG, the segment size announced to the server) are set before connecting when given.
    public static func connect(port: Int, receiveBuffer: Int32? = nil, segmentSize: Int32? = nil, receiveTimeoutSeconds: Int = 60) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, streamSocketType, 0)
        guard socket >= 0 else { throw RawHTTPError("socket failed") }
        if var size = receiveBuffer {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if var segment = segmentSize {
            setsockopt(socket, Int32(IPPROTO_TCP), TCP_MAXSEG, &segment, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(socket)
            throw RawHTTPError("connect to \(port) failed")
        }
        return socket
    }

    /// Sends all of `bytes`.
    public static func send(_ socket: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + sent, bytes.count - sent, noSignalFlags) }
            guard count > 0 else { throw RawHTTPError("send failed") }
            sent += count
        }
    }

    /// Everything the server sends on `socket` until it closes the connection (or the receive timeout).
    public static func readToEnd(_ socket: Int32) -> [UInt8] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data += buffer[0 ..< count]
        }
        return data
    }

    /// The response in `data` (a whole exchange read to its end), its chunked body decoded.
    public static func parse(_ data: [UInt8]) throws -> RawHTTPResponse {
        guard let end = data.firstRange(of: [13, 10, 13, 10]) else { throw RawHTTPError("no response head in \(data.count) bytes") }
        guard let (status, headers) = parseHead(data[..<end.lowerBound]) else {
            throw RawHTTPError("bad status line in \(String(decoding: data[..<end.lowerBound].prefix(80), as: UTF8.self))")
        }
        var response = RawHTTPResponse(status: status, headers: headers, body: Array(data[end.upperBound...]))
        if response.header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
            response.body = dechunk(response.body)
        }
        return response
    }

    /// A response head's status and fields; nil when its status line is not one.
    static func parseHead(_ bytes: ArraySlice<UInt8>) -> (status: Int, headers: [(String, String)])? {
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return nil }
        let parts = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            var value = line[line.index(after: colon)...]
            while value.first == " " || value.first == "\t" { value.removeFirst() }
            while value.last == " " || value.last == "\t" { value.removeLast() }
            return (String(line[..<colon]), String(value))
        }
        return (status, headers)
    }

    /// A chunked body's data.
    public static func dechunk(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while let lineEnd = data[index...].firstRange(of: [13, 10]) {
            let sizeText = String(decoding: data[index ..< lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            out += data[start ..< min(start + size, data.count)]
            index = start + size + 2
            if index >= data.count { break }
        }
        return out
    }
}
