#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import CHTTPSystem

/// Errors from starting a server.
public enum HTTPServerError: Error, Sendable, Hashable {
    /// A system call failed (its name and errno).
    case system(String, Int32)
    /// The host is not an IPv4 or IPv6 literal.
    case invalidHost(String)
    /// `start()` was called twice.
    case alreadyStarted
    /// The TLS certificate or key could not be loaded (OpenSSL's reason included).
    case tls(String)
    /// The event-loop backend cannot be used: `LIVELIST_EVENT_LOOP` names none, or the system
    /// lacks the one asked for (epoll off Linux). The reason is included.
    case eventLoop(String)
}

/// An HTTP/1.1 server on non-blocking sockets and event loops (one per core by default, on epoll
/// or poll: see `EventLoopBackend`) that share one listening socket.
///
/// ```swift
/// let server = HTTPServer(configuration: config, handler: router.handler)
/// try server.start()
/// server.shutdownOnSignals()
/// await server.waitUntilStopped()
/// ```
public final class HTTPServer: @unchecked Sendable {
    private enum Phase { case idle, running, stopping, stopped }

    private struct State {
        var phase: Phase = .idle
        var loops: [EventLoop] = []
        var listenFd: Int32 = -1
        var port = 0
        var finishedLoops = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var backend = EventLoopBackend.automatic
    }

    /// The settings given at creation.
    public let configuration: HTTPServerConfiguration
    let handler: HTTPHandler
    private let state = Mutex(State())
    /// Connections open within the cap, and in the reserve beyond it.
    private let slots = Mutex((open: 0, reserve: 0, released: 0))
    /// Bytes of request bodies held, over every connection.
    let bodyBudget: ByteBudget
    /// Bytes queued for event streams, over every connection.
    let streamOutput: ByteBudget
    /// `configuration.maxConnections` lowered to what the file limit allows (set by `start()`).
    private let connectionCap = Mutex(0)
    /// When each kind of notice was last said, and how many were not said since.
    private let notices = Mutex<[String: (last: ContinuousClock.Instant?, unsaid: Int)]>([:])

    /// A server answering with `handler`. Nothing happens until `start()`.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration(), handler: HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        bodyBudget = ByteBudget(limit: configuration.requestBodyBudget)
        streamOutput = ByteBudget(limit: configuration.streamOutputBudget)
    }

    /// The event loops (empty before `start()`).
    var eventLoops: [EventLoop] { state.withLock { $0.loops } }

    /// Bytes queued for event streams now, over every connection (for tests and metrics).
    public var streamBytesQueued: Int { streamOutput.held }

    /// The event loops' backend: the configuration's until `start()`, settled from then on (never
    /// `.automatic` once started), for the server's startup log.
    public var eventLoopBackend: EventLoopBackend {
        state.withLock { $0.phase == .idle ? configuration.eventLoop : $0.backend }
    }

    /// The bound port (useful after binding port 0); 0 before `start()`.
    public var port: Int { state.withLock { $0.port } }

    /// Counters summed over the loops.
    public var statistics: HTTPServerStatistics {
        let loops = state.withLock { $0.loops }
        var total = HTTPServerStatistics()
        for loop in loops {
            let part = loop.statistics
            total.connectionsAccepted += part.connectionsAccepted
            total.connectionsRefused += part.connectionsRefused
            total.requests += part.requests
            total.protocolErrors += part.protocolErrors
            total.streamsOverflowed += part.streamsOverflowed
            total.streamsClosed.merge(part.streamsClosed, uniquingKeysWith: +)
            total.streamWritesDeferred += part.streamWritesDeferred
            total.refusedBeforeBody += part.refusedBeforeBody
            total.streamsOpen += part.streamsOpen
            total.connectionsReserved += part.connectionsReserved
            total.streamsRefused += part.streamsRefused
        }
        total.connectionsOpen = slots.withLock { $0.open + $0.reserve }
        return total
    }

    /// Binds, listens and starts the event loops. Ignores SIGPIPE process-wide.
    public func start() throws(HTTPServerError) {
        let fresh = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .running
            return true
        }
        guard fresh else { throw .alreadyStarted }
        let backend: EventLoopBackend
        do {
            backend = try configuration.eventLoop.resolved()
        } catch {
            state.withLock { $0.phase = .idle }
            throw error
        }
        cs_ignore_sigpipe()
        connectionCap.withLock { $0 = Self.connectionCap(configuration, fileLimit: Self.fileLimit(), openNow: Self.openDescriptors()) }
        let tls: TLSContext?
        do {
            tls = try configuration.tls.map { tls throws(HTTPServerError) in try TLSContext(tls) }
        } catch {
            state.withLock { $0.phase = .idle }
            throw error
        }
        let (fd, port) = try bind()
        var loops: [EventLoop] = []
        do {
            for _ in 0..<max(1, configuration.loopCount) {
                loops.append(try EventLoop(server: self, listenFd: fd, backend: backend, tls: tls))
            }
        } catch {
            systemClose(fd)
            throw error
        }
        state.withLock {
            $0.backend = backend
            $0.loops = loops
            $0.listenFd = fd
            $0.port = port
        }
        for loop in loops {
            let context = Unmanaged.passRetained(loop).toOpaque()
            let result = cs_thread_start({ context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
                loop.run()
                return nil
            }, context)
            if result != 0 { fatalError("HTTPServer: pthread_create failed (\(result))") }
        }
    }

    private func bind() throws(HTTPServerError) -> (Int32, Int) {
        var address4 = sockaddr_in()
        var address6 = sockaddr_in6()
        let isIPv4 = inet_pton(AF_INET, configuration.host, &address4.sin_addr) == 1
        let isIPv6 = !isIPv4 && inet_pton(AF_INET6, configuration.host, &address6.sin6_addr) == 1
        guard isIPv4 || isIPv6 else { throw .invalidHost(configuration.host) }
        let fd = cs_socket_stream(isIPv4 ? AF_INET : AF_INET6)
        guard fd >= 0 else { throw .system("socket", errno) }
        _ = cs_set_reuseaddr(fd)
        let port = UInt16(truncatingIfNeeded: configuration.port)
        let bound: Int32
        if isIPv4 {
            address4.sin_family = sa_family_t(AF_INET)
            address4.sin_port = port.bigEndian
            bound = withUnsafePointer(to: &address4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemBind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        } else {
            address6.sin6_family = sa_family_t(AF_INET6)
            address6.sin6_port = port.bigEndian
            bound = withUnsafePointer(to: &address6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemBind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        guard bound == 0 else {
            let code = errno
            systemClose(fd)
            throw .system("bind", code)
        }
        let listening = listen(fd, configuration.backlog)
        guard listening == 0 else {
            let code = errno
            systemClose(fd)
            throw .system("listen", code)
        }
        var storage = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        // sin_port and sin6_port sit at the same offset.
        return (fd, Int(UInt16(bigEndian: storage.sin6_port)))
    }

    /// Stops accepting, lets in-flight responses finish and ends streams; connections still
    /// open after `gracePeriod` (default: the configuration's) are closed. Returns when every
    /// loop has stopped. Calling it again just waits.
    public func shutdown(gracePeriod: Duration? = nil) async {
        let (loops, listenFd) = state.withLock { state -> ([EventLoop], Int32) in
            guard state.phase == .running else { return ([], -1) }
            state.phase = .stopping
            return (state.loops, state.listenFd)
        }
        if !loops.isEmpty {
            let deadline = monotonicNanoseconds() + (gracePeriod ?? configuration.shutdownGracePeriod).nanoseconds
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let remaining = Locked(loops.count)
                for loop in loops {
                    loop.execute {
                        loop.beginDraining(deadline: deadline)
                        if remaining.withLock({ $0 -= 1; return $0 }) == 0 { continuation.resume() }
                    }
                }
            }
            // Every loop has dropped the listener; now it can be closed safely.
            systemClose(listenFd)
        }
        await waitUntilStopped()
    }

    /// Returns once the server has stopped (at once if it never started).
    public func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.phase == .stopped || state.phase == .idle { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Shuts down gracefully (with the configured grace period) on the first SIGTERM or SIGINT.
    /// Installs process-wide handlers for both signals; meant for the one server of a process.
    public func shutdownOnSignals() {
        _ = cs_signal_watch(SIGTERM)
        let fd = cs_signal_watch(SIGINT)
        let context = Unmanaged.passRetained(SignalWatch(server: self, fd: fd)).toOpaque()
        let result = cs_thread_start({ context in
            let watch = Unmanaged<SignalWatch>.fromOpaque(context!).takeRetainedValue()
            cs_signal_wait(watch.fd)
            let server = watch.server
            Task { await server.shutdown() }
            return nil
        }, context)
        if result != 0 { fatalError("HTTPServer: pthread_create failed (\(result))") }
    }

    // MARK: - Loop callbacks

    func loopFinished() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.finishedLoops += 1
            guard state.finishedLoops == state.loops.count else { return [] }
            state.phase = .stopped
            let waiters = state.waiters
            state.waiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The most connections: `maxConnections`, but never more than the file limit less the
    /// descriptors open at start and the reserve (at least `fileDescriptorReserve` and 5%).
    static func connectionCap(_ configuration: HTTPServerConfiguration, fileLimit: Int?, openNow: Int) -> Int {
        guard let fileLimit else { return configuration.maxConnections }
        let reserve = max(configuration.fileDescriptorReserve, fileLimit / 20)
        return max(1, min(configuration.maxConnections, fileLimit - openNow - reserve))
    }

    /// The soft `RLIMIT_NOFILE`, or nil when unlimited or unknown.
    static func fileLimit() -> Int? {
        let limit = cs_file_limit()
        return limit < 0 ? nil : Int(clamping: limit)
    }

    /// Descriptors open in this process now (0 when /proc is not there).
    static func openDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != 0x2E { count += 1 }
        }
        return count
    }

    /// The connection cap in force (after `start()`).
    public var maxConnections: Int { connectionCap.withLock { $0 } }

    /// Bytes of request bodies held now.
    public var bodyBytesHeld: Int { bodyBudget.held }

    /// A slot for a new connection: within the cap, else one of the reserve (which may not hold an
    /// event stream: probes, writes and `/metrics` are answered when the node holds its most streams),
    /// else none.
    func reserveConnectionSlot() -> ConnectionSlot {
        let cap = connectionCap.withLock { $0 }
        let reserve = reservedConnections
        return slots.withLock { slots in
            if slots.open < cap {
                slots.open += 1
                return .regular
            }
            guard slots.reserve < reserve else { return .none }
            slots.reserve += 1
            return .reserve
        }
    }

    /// Whether a new connection would find a slot now, within the cap or on the reserve, and how many
    /// slots were given back so far (a count that moves while a full node's slots turn over).
    var connectionSlots: (free: Bool, released: Int) {
        let cap = connectionCap.withLock { $0 }
        let (open, reserveHeld, released) = slots.withLock { ($0.open, $0.reserve, $0.released) }
        // The reserve's size (which reads the file limit) only matters once the cap is reached: an
        // accept below it pays for that once, in `reserveConnectionSlot`, as before.
        return (open < cap || reserveHeld < reservedConnections, released)
    }

    func releaseConnectionSlot(_ slot: ConnectionSlot) {
        slots.withLock { slots in
            slots.released &+= 1
            switch slot {
            case .regular: slots.open -= 1
            case .reserve: slots.reserve -= 1
            case .none: break
            }
        }
    }

    /// Connections beyond the cap that may serve requests but not hold a stream: the configuration's,
    /// at most half of the descriptors kept free of connections.
    var reservedConnections: Int {
        let fileLimit = Self.fileLimit()
        let free = fileLimit.map { max(configuration.fileDescriptorReserve, $0 / 20) } ?? configuration.fileDescriptorReserve
        return max(0, min(configuration.reservedConnections, free / 2))
    }

    /// Says `line` through the configuration's notice hook, at most once per `interval` for `kind`
    /// (with the count of what was not said since).
    func notice(_ kind: String, every interval: Duration = .seconds(60), _ line: @autoclosure () -> String) {
        guard let hook = configuration.notice else { return }
        let now = ContinuousClock.now
        let unsaid = notices.withLock { notices -> Int? in
            var entry = notices[kind] ?? (last: nil, unsaid: 0)
            if let last = entry.last, now - last < interval {
                entry.unsaid += 1
                notices[kind] = entry
                return nil
            }
            let unsaid = entry.unsaid
            notices[kind] = (now, 0)
            return unsaid
        }
        guard let unsaid else { return }
        hook(line() + (unsaid > 0 ? " (\(unsaid) more since the last notice)" : ""))
    }
}

/// What a new connection holds: a slot within the connection cap, one of the reserve beyond it, or none.
enum ConnectionSlot {
    case regular, reserve, none
}

private final class SignalWatch: Sendable {
    let server: HTTPServer
    let fd: Int32

    init(server: HTTPServer, fd: Int32) {
        self.server = server
        self.fd = fd
    }
}
