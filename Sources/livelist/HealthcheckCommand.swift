import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `livelist healthcheck`: asks a running server for `GET /healthz` and exits 0 when it answers 200,
/// 1 otherwise. It is the Docker `HEALTHCHECK` (the slim image has no curl), so it uses plain POSIX
/// sockets, with OpenSSL for a node that serves HTTPS itself, and gives up after `--timeout` seconds in
/// total (docs/DEPLOYMENT.md, "Operating a node").
struct HealthcheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Check that a server answers GET /healthz with 200 (exit 0), else exit 1.",
        discussion: """
            The address falls back to LIVELIST_HOST and LIVELIST_PORT, as the server's does; a wildcard \
            host (0.0.0.0, ::) is reached on loopback.

            It speaks TLS when LIVELIST_TLS_CERT is set (the server then serves HTTPS; a container's \
            HEALTHCHECK runs with the server's environment) or with --tls, and plain HTTP with --no-tls. \
            Over TLS it does not verify the server's certificate: it probes this machine's own node, whose \
            certificate rarely names the address it is reached at (127.0.0.1). It sends the host as the \
            server name (SNI) when it is a name.
            """
    )

    @Option(help: "The server's address (env LIVELIST_HOST; default 127.0.0.1; 0.0.0.0 means 127.0.0.1).")
    var host: String?

    @Option(help: "The server's port (env LIVELIST_PORT; default 8080).")
    var port: Int?

    @Option(help: "Seconds to wait for the whole exchange.")
    var timeout: Double = 5

    @Flag(inversion: .prefixedNo, help: "Speak TLS (HTTPS), without verifying the certificate, or plain HTTP (default: TLS when LIVELIST_TLS_CERT is set).")
    var tls: Bool?

    @Flag(help: "Print nothing, only set the exit status.")
    var quiet = false

    /// The port probed: the flag's, else `LIVELIST_PORT`'s (which must read as one), else 8080.
    private func probedPort() throws -> Int {
        if let port { return port }
        guard let text = given(nil, "LIVELIST_PORT") else { return 8080 }
        guard let port = Int(text) else { throw ValidationError("LIVELIST_PORT: \(text) is not a port number (1 to 65535)") }
        return port
    }

    func validate() throws {
        let port = try probedPort()
        guard (1 ... 65_535).contains(port) else {
            throw ValidationError("--port (LIVELIST_PORT): \(port) is not a port (1 to 65535)")
        }
        guard timeout > 0, timeout <= 3_600 else {
            throw ValidationError("--timeout: \(timeout) is not between 0 and 3600 seconds")
        }
    }

    func run() throws {
        let port = try probedPort()
        let host = given(host, "LIVELIST_HOST") ?? "127.0.0.1"
        let target: String
        switch host {
        case "0.0.0.0", "": target = "127.0.0.1"
        case "::", "[::]": target = "::1"
        default: target = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        }
        // The server serves HTTPS when it has a certificate: the same variable decides here.
        let secure = tls ?? (given(nil, "LIVELIST_TLS_CERT") != nil)
        #if canImport(Glibc)
        let what = "GET /healthz on \(target):\(port)" + (secure ? " over TLS" : "")
        let deadline = Deadline(seconds: timeout)
        do {
            let status = try HealthProbe.status(host: target, port: port, path: "/healthz", tls: secure, deadline: deadline)
            guard status == 200 else {
                if !quiet { printError("unhealthy: \(what) answered \(status)") }
                throw ExitCode(1)
            }
            if !quiet { print("healthy: \(what) answered 200") }
        } catch let error as ProbeError {
            if !quiet { printError("unhealthy: \(what): \(error.message)") }
            throw ExitCode(1)
        }
        #else
        // The probe is the Linux container's HEALTHCHECK; elsewhere, use curl.
        print("livelist healthcheck runs on Linux (the container image); here, try: curl \(secure ? "-k https" : "http")://\(target):\(port)/healthz")
        throw ExitCode(1)
        #endif
    }
}

#if canImport(Glibc)

private func printError(_ text: String) {
    let line = Array((text + "\n").utf8)
    line.withUnsafeBytes { bytes in
        _ = Glibc.write(2, bytes.baseAddress, bytes.count)
    }
}

struct ProbeError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// A point in time on the monotonic clock.
struct Deadline {
    private let end: ContinuousClock.Instant

    init(seconds: Double) {
        end = .now + .milliseconds(Int(seconds * 1000))
    }

    /// Milliseconds left, for `poll` (0 once passed).
    var remainingMilliseconds: Int32 {
        let left = ContinuousClock.now.duration(to: end)
        let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}

/// A connected socket that the probe writes its request to and reads the answer from: plain, or TLS.
protocol ProbeChannel {
    /// Sends some of `bytes` (at least one), waiting within the deadline; answers how many were sent.
    func send(_ bytes: ArraySlice<UInt8>, deadline: Deadline) throws -> Int
    /// Reads into `buffer`, waiting within the deadline; answers how many bytes came, 0 at the end.
    func receive(_ buffer: inout [UInt8], deadline: Deadline) throws -> Int
}

/// The socket itself.
struct PlainProbeChannel: ProbeChannel {
    let fd: Int32

    func send(_ bytes: ArraySlice<UInt8>, deadline: Deadline) throws -> Int {
        while true {
            try HealthProbe.wait(fd, for: Int16(POLLOUT), deadline: deadline, doing: "send")
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 { return count }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard count < 0 else { throw ProbeError("send: the connection closed") }
            throw ProbeError("send: \(String(cString: strerror(errno)))")
        }
    }

    func receive(_ buffer: inout [UInt8], deadline: Deadline) throws -> Int {
        while true {
            try HealthProbe.wait(fd, for: Int16(POLLIN), deadline: deadline, doing: "receive")
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return count }
            if errno == EAGAIN || errno == EINTR { continue }
            throw ProbeError("receive: \(String(cString: strerror(errno)))")
        }
    }
}

/// One HTTP/1.1 GET over a non-blocking socket, every step bounded by the deadline.
enum HealthProbe {
    /// The status code of `GET path` on `host:port`, over TLS when `tls` is set.
    static func status(host: String, port: Int, path: String, tls: Bool, deadline: Deadline) throws -> Int {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw ProbeError("cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }

        var lastError = ProbeError("no address for \(host)")
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            do {
                let fd = try connect(info.pointee, deadline: deadline)
                defer { close(fd) }
                guard tls else {
                    return try exchange(PlainProbeChannel(fd: fd), host: host, port: port, path: path, deadline: deadline)
                }
                let channel = try TLSProbeChannel(fd: fd, serverName: isAddress(host) ? nil : host, deadline: deadline)
                return try exchange(channel, host: host, port: port, path: path, deadline: deadline)
            } catch let error as ProbeError {
                lastError = error
            }
        }
        throw lastError
    }

    private static func connect(_ info: addrinfo, deadline: Deadline) throws -> Int32 {
        let fd = socket(info.ai_family, info.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), info.ai_protocol)
        guard fd >= 0 else {
            throw ProbeError("socket: \(String(cString: strerror(errno)))")
        }
        if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw ProbeError("connect: \(reason)")
            }
            do {
                try wait(fd, for: Int16(POLLOUT), deadline: deadline, doing: "connect")
            } catch {
                close(fd)
                throw error
            }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
            guard failure == 0 else {
                close(fd)
                throw ProbeError("connect: \(String(cString: strerror(failure)))")
            }
        }
        return fd
    }

    private static func exchange(_ channel: some ProbeChannel, host: String, port: Int, path: String, deadline: Deadline) throws -> Int {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: livelist-healthcheck\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            sent += try channel.send(request[sent...], deadline: deadline)
        }
        // The status line is all we need: "HTTP/1.1 200 OK\r\n".
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while !received.contains(0x0A) {
            let count = try channel.receive(&buffer, deadline: deadline)
            if count == 0 { break }
            received += buffer[..<count]
            if received.count > 8_192 { break }
        }
        let line = String(decoding: received.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = line.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            guard received.isEmpty else {
                throw ProbeError("not an HTTP answer: \(line.prefix(80))")
            }
            // What a node that serves HTTPS does with a request in clear text.
            let hint = channel is PlainProbeChannel ? " (a node that serves HTTPS closes plain connections: try --tls)" : ""
            throw ProbeError("the connection closed without an answer" + hint)
        }
        return status
    }

    /// Whether `host` is an IPv4 or IPv6 address rather than a name (SNI names only names).
    private static func isAddress(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
    }

    /// Waits until `fd` is ready for `events`; throws once the deadline has passed.
    static func wait(_ fd: Int32, for events: Int16, deadline: Deadline, doing step: String) throws {
        while true {
            let left = deadline.remainingMilliseconds
            guard left > 0 else {
                throw ProbeError("\(step): timed out")
            }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, left)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR {
                throw ProbeError("\(step): poll: \(String(cString: strerror(errno)))")
            }
        }
    }
}
#endif
