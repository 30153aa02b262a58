#if canImport(Glibc)
import Glibc
#endif
import CHTTPSystem

/// One epoll loop on its own thread, owning the connections it accepted.
final class EventLoop: @unchecked Sendable {
    static let maxIovecs = 64
    private static let listenerToken: UInt64 = 0
    private static let wakeToken: UInt64 = .max

    let configuration: HTTPServerConfiguration
    let handler: HTTPHandler
    let serverNameBytes: [UInt8]
    unowned let server: HTTPServer
    private let epfd: Int32
    /// The eventfd other threads write to wake the loop (closed when the loop stops).
    let wakeFd: Int32
    private let listenFd: Int32

    private let taskLock = Lock()
    private var tasks: [@Sendable () -> Void] = []
    private var wakePending = false
    /// Set (under `taskLock`) when the loop has stopped and closed `wakeFd`: tasks are dropped from
    /// then on, because the descriptor's number may already belong to another file or socket.
    private var stopped = false

    /// Open connections by descriptor (descriptors are small and dense, so an array beats hashing).
    private var connections: [Connection?] = []
    private var openConnections: [Connection] = []
    let readBuffer: UnsafeMutableBufferPointer<UInt8>
    let iovecs: UnsafeMutablePointer<iovec>
    private(set) var now: UInt64
    private var nextToken: UInt64 = 1
    private(set) var isDraining = false
    private var drainDeadline: UInt64 = 0
    private var listenerRegistered = false
    private var reserveFd: Int32 = -1
    /// When accepting was paused for want of descriptors: the time to resume it (0 when not paused).
    private var acceptPausedUntil: UInt64 = 0
    private let resolution: UInt64
    /// The shared TLS context when the server speaks TLS.
    let tls: TLSContext?
    /// Scratch space where small queued buffers are joined into one TLS record (TLS only).
    let tlsWriteBuffer: UnsafeMutableRawBufferPointer?

    private let statsLock = Lock()
    private var stats = HTTPServerStatistics()

    private var dateSecond = -1
    private var cachedDate: [UInt8] = []

    init(server: HTTPServer, listenFd: Int32, tls: TLSContext? = nil) throws(HTTPServerError) {
        self.server = server
        self.tls = tls
        self.configuration = server.configuration
        self.handler = server.handler
        self.serverNameBytes = Array(server.configuration.serverName.utf8)
        self.listenFd = listenFd
        epfd = cs_epoll_create()
        guard epfd >= 0 else { throw HTTPServerError.system("epoll_create1", errno) }
        wakeFd = cs_eventfd()
        guard wakeFd >= 0 else {
            let code = errno
            Glibc.close(epfd)
            throw HTTPServerError.system("eventfd", code)
        }
        readBuffer = .allocate(capacity: 64 * 1024)
        iovecs = .allocate(capacity: EventLoop.maxIovecs)
        tlsWriteBuffer = tls == nil ? nil : .allocate(byteCount: 16 * 1024, alignment: 16)
        now = monotonicNanoseconds()
        let timeouts = [configuration.headerTimeout, configuration.bodyTimeout, configuration.idleTimeout,
                        configuration.writeTimeout, configuration.lingerTimeout].map(\.nanoseconds)
        resolution = min(max((timeouts.min() ?? 1_000_000_000) / 4, 1_000_000), 250_000_000)
        guard cs_epoll_ctl(epfd, CS_EPOLL_CTL_ADD, wakeFd, CS_EPOLLIN, EventLoop.wakeToken) == 0,
              cs_epoll_ctl(epfd, CS_EPOLL_CTL_ADD, listenFd, CS_EPOLLIN | CS_EPOLLEXCLUSIVE, EventLoop.listenerToken) == 0
        // Every property is set by now, so deinit runs on this throw and closes both descriptors.
        else { throw HTTPServerError.system("epoll_ctl", errno) }
        listenerRegistered = true
        reserveFd = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        // A loop that never ran (the server failed to start) still holds its descriptors.
        if !stopped {
            Glibc.close(epfd)
            Glibc.close(wakeFd)
            if reserveFd >= 0 { Glibc.close(reserveFd) }
        }
        readBuffer.deallocate()
        iovecs.deallocate()
        tlsWriteBuffer?.deallocate()
    }

    // MARK: - Tasks from other threads

    private var isOnLoop: Bool { cs_thread_context() == Unmanaged.passUnretained(self).toOpaque() }

    /// Runs `task` on this loop's thread.
    func execute(_ task: @escaping @Sendable () -> Void) {
        let onLoop = isOnLoop
        // The wake-up is written under the lock, so that it can never reach a descriptor the loop
        // closed meanwhile (and the kernel gave to someone else).
        let accepted = taskLock.withLock { () -> Bool in
            guard !stopped else { return false }
            tasks.append(task)
            if wakePending || onLoop { return true }
            wakePending = true
            _ = cs_eventfd_signal(wakeFd)
            return true
        }
        // A task refused by a stopped loop is released when this returns, outside the lock (what it
        // holds may enqueue more).
        _ = accepted
    }

    /// True once the loop has stopped; later tasks are dropped.
    var hasStopped: Bool { taskLock.withLock { stopped } }

    private func runTasks() {
        while true {
            let batch = taskLock.withLock { () -> [@Sendable () -> Void] in
                wakePending = false
                let batch = tasks
                tasks = []
                return batch
            }
            if batch.isEmpty { return }
            for task in batch { task() }
        }
    }

    // MARK: - Loop

    func run() {
        cs_set_thread_context(Unmanaged.passUnretained(self).toOpaque())
        let capacity: Int32 = 512
        let events = cs_epoll_events_alloc(capacity)!
        var nextScan = monotonicNanoseconds() + resolution
        let timeoutMs = Int32(max(1, resolution / 1_000_000))
        while true {
            let count = cs_epoll_wait(epfd, events, capacity, timeoutMs)
            now = monotonicNanoseconds()
            if count > 0 {
                for index in 0..<Int32(count) {
                    let token = cs_epoll_event_data(events, index)
                    let flags = cs_epoll_event_flags(events, index)
                    if token == EventLoop.listenerToken {
                        if listenerRegistered { acceptConnections() }
                    } else if token == EventLoop.wakeToken {
                        cs_eventfd_drain(wakeFd)
                    } else {
                        let fd = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
                        if fd < connections.count, let connection = connections[fd], connection.token == token {
                            connection.handle(events: flags)
                        }
                    }
                }
            }
            runTasks()
            if now >= nextScan {
                nextScan = now + resolution
                for connection in openConnections { connection.checkTimers(now: now) }
                resumeAcceptingIfDue()
            }
            if isDraining {
                if openConnections.isEmpty { break }
                if now >= drainDeadline {
                    for connection in openConnections { connection.close(reason: .serverShutdown) }
                    runTasks()
                    break
                }
            }
        }
        cs_epoll_events_free(events)
        Glibc.close(epfd)
        let dropped = taskLock.withLock { () -> [@Sendable () -> Void] in
            stopped = true
            Glibc.close(wakeFd)
            defer { tasks = [] }
            return tasks
        }
        // Released here, outside the lock (what they hold may call `execute`).
        withExtendedLifetime(dropped) {}
        if reserveFd >= 0 { Glibc.close(reserveFd) }
        cs_set_thread_context(nil)
        server.loopFinished()
    }

    // MARK: - Connections

    private func acceptConnections() {
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { cs_accept(listenFd, $0, &length) }
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED:
                    continue
                case EMFILE, ENFILE:
                    // Out of descriptors: the spare one lets a waiting client have its 503; without
                    // it, accepting pauses for a moment instead of spinning on the listener.
                    if reserveFd >= 0 {
                        Glibc.close(reserveFd)
                        reserveFd = -1
                        let dropped = cs_accept(listenFd, nil, nil)
                        if dropped >= 0 { refuse(dropped) } else { count { $0.connectionsRefused += 1 } }
                        reserveFd = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    } else {
                        count { $0.connectionsRefused += 1 }
                    }
                    if reserveFd < 0 { pauseAccepting() }
                    return
                default:
                    return
                }
            }
            guard server.reserveConnectionSlot() else {
                refuse(fd)
                continue
            }
            _ = cs_set_nodelay(fd)
            let token = nextToken << 32 | UInt64(UInt32(bitPattern: fd))
            nextToken += 1
            var session: OpaquePointer?
            if let tls {
                session = tls.session(fd: fd)
                if session == nil {
                    server.releaseConnectionSlot()
                    Glibc.close(fd)
                    continue
                }
            }
            let connection = Connection(
                fd: fd, token: token, loop: self, remoteAddress: Self.address(storage), now: now, ssl: session)
            let slot = Int(fd)
            if slot >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: max(slot + 1 - connections.count, connections.count)))
            }
            connections[slot] = connection
            connection.openIndex = openConnections.count
            openConnections.append(connection)
            count { $0.connectionsAccepted += 1 }
            guard cs_epoll_ctl(epfd, CS_EPOLL_CTL_ADD, fd, CS_EPOLLIN, token) == 0 else {
                connection.close(reason: .peerGone)
                continue
            }
            connection.start()
        }
    }

    /// Stops watching the listener for 100 ms (the other loops go on if they can).
    private func pauseAccepting() {
        guard listenerRegistered else { return }
        _ = cs_epoll_ctl(epfd, CS_EPOLL_CTL_DEL, listenFd, 0, 0)
        listenerRegistered = false
        acceptPausedUntil = now + 100_000_000
    }

    private func resumeAcceptingIfDue() {
        guard acceptPausedUntil > 0, now >= acceptPausedUntil, !isDraining else { return }
        if reserveFd < 0 { reserveFd = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        guard reserveFd >= 0 else {
            acceptPausedUntil = now + 100_000_000
            return
        }
        acceptPausedUntil = 0
        if cs_epoll_ctl(epfd, CS_EPOLL_CTL_ADD, listenFd, CS_EPOLLIN | CS_EPOLLEXCLUSIVE, EventLoop.listenerToken) == 0 {
            listenerRegistered = true
        }
    }

    private func refuse(_ fd: Int32) {
        count { $0.connectionsRefused += 1 }
        let error = HTTPError(.serviceUnavailable, code: "too_many_connections", detail: "the server is at its connection limit")
        var response = HTTPResponse.error(error, formatter: configuration.errorFormatter)
        response.headers.set("Retry-After", "1")
        guard case .bytes(let body) = response.body else { return }
        var bytes = ResponseEncoder.head(response, contentLength: body.count, chunked: false, close: true,
                                         keepAliveHeader: false, date: dateBytes(), server: serverNameBytes, capacity: body.count)
        bytes.append(contentsOf: body)
        _ = bytes.withUnsafeBytes { cs_send(fd, $0.baseAddress, $0.count) }
        shutdown(fd, Int32(SHUT_WR))
        Glibc.close(fd)
    }

    func setInterest(fd: Int32, token: UInt64, events: UInt32) {
        _ = cs_epoll_ctl(epfd, CS_EPOLL_CTL_MOD, fd, events, token)
    }

    func connectionClosed(_ connection: Connection) {
        let slot = Int(connection.fd)
        if slot < connections.count, connections[slot] === connection { connections[slot] = nil }
        let index = connection.openIndex
        if index >= 0, index < openConnections.count, openConnections[index] === connection {
            let last = openConnections.removeLast()
            if index < openConnections.count {
                openConnections[index] = last
                last.openIndex = index
            }
            connection.openIndex = -1
        }
        server.releaseConnectionSlot()
    }

    var connectionCount: Int { openConnections.count }

    // MARK: - Shutdown

    /// Stops accepting and starts closing connections gracefully.
    func beginDraining(deadline: UInt64) {
        guard !isDraining else { return }
        isDraining = true
        drainDeadline = deadline
        acceptPausedUntil = 0
        if listenerRegistered {
            _ = cs_epoll_ctl(epfd, CS_EPOLL_CTL_DEL, listenFd, 0, 0)
            listenerRegistered = false
        }
        for connection in openConnections { connection.beginDraining() }
    }

    // MARK: - Shared values

    func count(_ body: (inout HTTPServerStatistics) -> Void) {
        statsLock.withLock { body(&stats) }
    }

    var statistics: HTTPServerStatistics { statsLock.withLock { stats } }

    /// The `Date` value, formatted once per second.
    func dateBytes() -> [UInt8] {
        let second = time(nil)
        if second != dateSecond {
            dateSecond = second
            cachedDate = Array(HTTPDate.format(second).utf8)
        }
        return cachedDate
    }

    private static func address(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(storage.ss_family)
        let result: UnsafePointer<CChar>? = withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET {
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    var address = inet.pointee.sin_addr
                    return inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
                }
            } else if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet6 in
                    var address = inet6.pointee.sin6_addr
                    return inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
                }
            }
            return nil
        }
        guard result != nil else { return "" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
