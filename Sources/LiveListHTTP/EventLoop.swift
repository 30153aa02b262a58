#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import Synchronization

/// One event loop on its own thread, owning the connections it accepted. It waits on a `Poller`
/// (epoll or poll, see `EventLoopBackend`); `run()` (in PollerEpoll.swift) picks the concrete one.
final class EventLoop: @unchecked Sendable {
    static let maxIovecs = 64
    private static let listenerToken: UInt64 = 0

    let configuration: HTTPServerConfiguration
    let handler: HTTPHandler
    let serverNameBytes: [UInt8]
    unowned let server: HTTPServer
    /// What the loop waits on; its wake-up channel is closed when the loop stops.
    let poller: any Poller
    /// The descriptor other threads write to wake the loop (closed when the loop stops).
    var wakeFd: Int32 { poller.wakeDescriptor }
    private let listenFd: Int32

    /// Tasks from other threads, waiting for the loop.
    private struct Tasks {
        var waiting: [@Sendable () -> Void] = []
        /// Connections whose stream has output to send, flushed after the tasks: the writes of one
        /// fan-out to this loop's streams wake it once and are sent in one pass, with no task each.
        var flushes: [Connection] = []
        var wakePending = false
        /// Set when the loop has stopped and closed its poller: tasks are dropped from then on,
        /// because the wake-up descriptor's number may already belong to another file or socket.
        var stopped = false
    }

    private let tasks = Mutex(Tasks())

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
    /// Whether a new connection waits in the backlog for a slot; see `acceptConnections`.
    private var slotWait = SlotWait()
    /// Whether accepting waits for a slot to free (resumed by the next connection this loop closes).
    private var waitingForSlot = false
    private let resolution: UInt64
    /// The shared TLS context when the server speaks TLS.
    let tls: TLSContext?
    /// Scratch space where small queued buffers are joined into one TLS record (TLS only).
    let tlsWriteBuffer: UnsafeMutableRawBufferPointer?

    private let stats = Mutex(HTTPServerStatistics())

    private var dateSecond = -1
    private var cachedDate: [UInt8] = []

    /// A loop on `backend` (settled: `.epoll` or `.poll`).
    init(server: HTTPServer, listenFd: Int32, backend: EventLoopBackend, tls: TLSContext? = nil) throws(HTTPServerError) {
        self.server = server
        self.tls = tls
        self.configuration = server.configuration
        self.handler = server.handler
        self.serverNameBytes = Array(server.configuration.serverName.utf8)
        self.listenFd = listenFd
        poller = try makePoller(backend)
        readBuffer = .allocate(capacity: 64 * 1024)
        iovecs = .allocate(capacity: EventLoop.maxIovecs)
        tlsWriteBuffer = tls == nil ? nil : .allocate(byteCount: 16 * 1024, alignment: 16)
        now = monotonicNanoseconds()
        let timeouts = [configuration.headerTimeout, configuration.bodyTimeout, configuration.idleTimeout,
                        configuration.writeTimeout, configuration.lingerTimeout].map(\.nanoseconds)
        resolution = min(max((timeouts.min() ?? 1_000_000_000) / 4, 1_000_000), 250_000_000)
        // Every property is set by now, so deinit runs on this throw and closes the poller.
        guard poller.register(listenFd, interest: [.readable, .exclusive], token: EventLoop.listenerToken)
        else { throw HTTPServerError.system("register the listener", errno) }
        listenerRegistered = true
        reserveFd = systemOpen("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        // A loop that never ran (the server failed to start) still holds its descriptors.
        if !tasks.withLock({ $0.stopped }) {
            poller.close()
            if reserveFd >= 0 { systemClose(reserveFd) }
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
        let accepted = tasks.withLock { tasks -> Bool in
            guard !tasks.stopped else { return false }
            tasks.waiting.append(task)
            if tasks.wakePending || onLoop { return true }
            tasks.wakePending = true
            poller.wake()
            return true
        }
        // A task refused by a stopped loop is released when this returns, outside the lock (what it
        // holds may enqueue more).
        _ = accepted
    }

    /// Sends `connection`'s stream output on this loop's thread, in the next pass over the streams
    /// written to (a write queued meanwhile goes with it).
    func scheduleFlush(_ connection: Connection) {
        let onLoop = isOnLoop
        tasks.withLock { tasks in
            guard !tasks.stopped else { return }
            tasks.flushes.append(connection)
            if tasks.wakePending || onLoop { return }
            tasks.wakePending = true
            poller.wake()
        }
    }

    /// True once the loop has stopped; later tasks are dropped.
    var hasStopped: Bool { tasks.withLock { $0.stopped } }

    /// Runs the tasks, then flushes the streams written to, until none are left. Tasks go first: one
    /// may start the stream that a flush sends (an answer that opens a stream), and one that ends a
    /// stream takes what it holds queued with it.
    private func runTasks() {
        while true {
            let (batch, flushes) = tasks.withLock { tasks -> ([@Sendable () -> Void], [Connection]) in
                tasks.wakePending = false
                defer { (tasks.waiting, tasks.flushes) = ([], []) }
                return (tasks.waiting, tasks.flushes)
            }
            if batch.isEmpty && flushes.isEmpty { return }
            for task in batch { task() }
            for connection in flushes { connection.flushStream() }
        }
    }

    // MARK: - Loop

    /// The loop, specialized per backend: `poller` is `self.poller`, its concrete type known.
    func run<P: Poller>(with poller: P) {
        cs_set_thread_context(Unmanaged.passUnretained(self).toOpaque())
        var nextScan = monotonicNanoseconds() + resolution
        let timeoutMs = Int32(max(1, resolution / 1_000_000))
        while true {
            let count = poller.wait(timeoutMilliseconds: timeoutMs)
            now = monotonicNanoseconds()
            if count > 0 {
                for index in 0..<count {
                    let token = poller.token(at: index)
                    let flags = poller.events(at: index)
                    if token == EventLoop.listenerToken {
                        if listenerRegistered { acceptConnections(poller) }
                    } else if token == P.wakeToken {
                        poller.drainWake()
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
        let dropped = tasks.withLock { tasks -> ([@Sendable () -> Void], [Connection]) in
            tasks.stopped = true
            poller.close()
            defer { (tasks.waiting, tasks.flushes) = ([], []) }
            return (tasks.waiting, tasks.flushes)
        }
        // Released here, outside the lock (what they hold may call `execute`).
        withExtendedLifetime(dropped) {}
        if reserveFd >= 0 { systemClose(reserveFd) }
        cs_set_thread_context(nil)
        server.loopFinished()
    }

    // MARK: - Connections

    private func acceptConnections<P: Poller>(_ poller: P) {
        for _ in 0..<64 {
            // No slot, not even on the reserve: a crowd (viewers coming back from a dead node, whose
            // streams the reserve refuses from their heads) gives slots back within a pass or two, so the
            // rest wait in the kernel's backlog rather than be refused, a write or a probe among them.
            // Only a node that gave no slot back for half a second (`SlotWait`; a flood of connections
            // that send nothing) accepts and refuses them. Slots given back on any loop count.
            let slots = server.connectionSlots
            if slotWait.waits(free: slots.free, released: slots.released, now: now) {
                waitForSlot()
                return
            }
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
                        systemClose(reserveFd)
                        reserveFd = -1
                        let dropped = cs_accept(listenFd, nil, nil)
                        if dropped >= 0 { refuse(dropped) } else { count { $0.connectionsRefused += 1 } }
                        reserveFd = systemOpen("/dev/null", O_RDONLY | O_CLOEXEC)
                    } else {
                        count { $0.connectionsRefused += 1 }
                    }
                    if reserveFd < 0 { pauseAccepting() }
                    return
                default:
                    return
                }
            }
            let slot = server.reserveConnectionSlot()
            guard slot != .none else {
                refuse(fd)
                continue
            }
            if slot == .reserve { count { $0.connectionsReserved += 1 } }
            _ = cs_set_nodelay(fd)
            let token = nextToken << 32 | UInt64(UInt32(bitPattern: fd))
            nextToken += 1
            var session: OpaquePointer?
            if let tls {
                session = tls.session(fd: fd)
                if session == nil {
                    server.releaseConnectionSlot(slot)
                    systemClose(fd)
                    continue
                }
            }
            let connection = Connection(
                fd: fd, token: token, loop: self, remoteAddress: Self.address(storage), now: now, ssl: session, isReserve: slot == .reserve)
            let index = Int(fd)
            if index >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: max(index + 1 - connections.count, connections.count)))
            }
            connections[index] = connection
            connection.openIndex = Int32(openConnections.count)
            openConnections.append(connection)
            count { $0.connectionsAccepted += 1 }
            guard poller.register(fd, interest: .readable, token: token) else {
                connection.close(reason: .peerGone)
                continue
            }
            connection.start()
        }
    }

    /// Stops watching the listener for 100 ms (the other loops go on if they can).
    private func pauseAccepting() {
        guard listenerRegistered else { return }
        poller.unregister(listenFd)
        listenerRegistered = false
        acceptPausedUntil = now + 100_000_000
    }

    /// Stops watching the listener until this loop closes a connection or its next timer scan (a slot
    /// another loop gave back is seen there).
    private func waitForSlot() {
        guard listenerRegistered else { return }
        poller.unregister(listenFd)
        listenerRegistered = false
        waitingForSlot = true
        acceptPausedUntil = now + 1
    }

    private func resumeAcceptingIfDue() {
        guard acceptPausedUntil > 0, now >= acceptPausedUntil, !isDraining else { return }
        if reserveFd < 0 { reserveFd = systemOpen("/dev/null", O_RDONLY | O_CLOEXEC) }
        guard reserveFd >= 0 else {
            acceptPausedUntil = now + 100_000_000
            return
        }
        acceptPausedUntil = 0
        waitingForSlot = false
        if poller.register(listenFd, interest: [.readable, .exclusive], token: EventLoop.listenerToken) {
            listenerRegistered = true
        }
    }

    private func refuse(_ fd: Int32) {
        count { $0.connectionsRefused += 1 }
        server.notice("refused", "refusing connections: \(server.maxConnections) open and \(server.reservedConnections) more on the reserve, "
            + "the most this node takes (--max-connections, and the file limit); they are answered 503 too_many_connections")
        let error = HTTPError(.serviceUnavailable, code: "too_many_connections", detail: "the server is at its connection limit")
        var response = HTTPResponse.error(error, formatter: configuration.errorFormatter)
        response.headers.set("Retry-After", "1")
        guard case .bytes(let body) = response.body else { return }
        var bytes = ResponseEncoder.head(response, contentLength: body.count, chunked: false, close: true,
                                         keepAliveHeader: false, date: dateBytes(), server: serverNameBytes, capacity: body.count)
        bytes.append(contentsOf: body)
        _ = bytes.withUnsafeBytes { cs_send(fd, $0.baseAddress, $0.count) }
        shutdown(fd, Int32(SHUT_WR))
        systemClose(fd)
    }

    func setInterest(fd: Int32, token: UInt64, events: IOEvents) {
        poller.modify(fd, interest: events, token: token)
    }

    /// Called by a connection that has just closed its descriptor.
    func connectionClosed(_ connection: Connection) {
        poller.forgetClosed(connection.fd)
        let slot = Int(connection.fd)
        if slot < connections.count, connections[slot] === connection { connections[slot] = nil }
        let index = Int(connection.openIndex)
        if index >= 0, index < openConnections.count, openConnections[index] === connection {
            let last = openConnections.removeLast()
            if index < openConnections.count {
                openConnections[index] = last
                last.openIndex = Int32(index)
            }
            connection.openIndex = -1
        }
        server.releaseConnectionSlot(connection.isReserve ? .reserve : .regular)
        if waitingForSlot, !isDraining {
            acceptPausedUntil = now
            resumeAcceptingIfDue()
        }
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
            poller.unregister(listenFd)
            listenerRegistered = false
        }
        for connection in openConnections { connection.beginDraining() }
    }

    // MARK: - Shared values

    func count(_ body: (inout HTTPServerStatistics) -> Void) {
        stats.withLock { body(&$0) }
    }

    var statistics: HTTPServerStatistics { stats.withLock { $0 } }

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
