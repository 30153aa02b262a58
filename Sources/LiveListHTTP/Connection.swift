#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL

/// Output waiting for the socket: whole buffers, the first one partly sent.
struct OutboundQueue {
    private var chunks: [[UInt8]] = []
    private var first = 0
    private var offset = 0
    private(set) var bytes = 0

    mutating func append(_ chunk: [UInt8]) {
        guard !chunk.isEmpty else { return }
        chunks.append(chunk)
        bytes += chunk.count
    }

    /// One sendmsg of up to `maxIovecs` buffers. Returns bytes sent, or -1 with errno.
    mutating func send(_ fd: Int32, iovecs: UnsafeMutablePointer<iovec>, maxIovecs: Int) -> Int {
        let count = min(chunks.count - first, maxIovecs)
        let sent = gather(fd, index: first, filled: 0, count: count, iovecs: iovecs)
        if sent > 0 { consume(sent) }
        return sent
    }

    private func gather(_ fd: Int32, index: Int, filled: Int, count: Int, iovecs: UnsafeMutablePointer<iovec>) -> Int {
        if filled == count { return cs_sendv(fd, UnsafeRawPointer(iovecs), Int32(count)) }
        let skip = index == first ? offset : 0
        return chunks[index].withUnsafeBytes { buffer in
            iovecs[filled] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress! + skip), iov_len: buffer.count - skip)
            return gather(fd, index: index + 1, filled: filled + 1, count: count, iovecs: iovecs)
        }
    }

    /// One SSL_write of the first buffer's rest, or of the first buffers joined in `scratch` when
    /// the first is small (one TLS record instead of several). Built the same way from the same
    /// queue, so a retry after WANT_WRITE repeats the same bytes, as OpenSSL requires.
    /// Returns bytes written, or the SSL_write result (<= 0) for SSL_get_error.
    mutating func send(_ ssl: OpaquePointer, scratch: UnsafeMutableRawBufferPointer) -> Int32 {
        let head = chunks[first].count - offset
        let written: Int32
        if head >= scratch.count || first + 1 == chunks.count {
            written = chunks[first].withUnsafeBytes { buffer in
                SSL_write(ssl, buffer.baseAddress! + offset, Int32(clamping: head))
            }
        } else {
            var filled = 0
            var index = first
            while index < chunks.count, filled < scratch.count {
                let skip = index == first ? offset : 0
                let take = min(chunks[index].count - skip, scratch.count - filled)
                chunks[index].withUnsafeBytes { buffer in
                    (scratch.baseAddress! + filled).copyMemory(from: buffer.baseAddress! + skip, byteCount: take)
                }
                filled += take
                index += 1
            }
            written = SSL_write(ssl, scratch.baseAddress!, Int32(filled))
        }
        if written > 0 { consume(Int(written)) }
        return written
    }

    private mutating func consume(_ sent: Int) {
        var rest = sent
        bytes -= sent
        while rest > 0 {
            let available = chunks[first].count - offset
            if rest >= available {
                rest -= available
                first += 1
                offset = 0
            } else {
                offset += rest
                rest = 0
            }
        }
        if first == chunks.count {
            // Keeps a small array's storage for the next response; drops a large one.
            if chunks.capacity <= 4 {
                chunks.removeAll(keepingCapacity: true)
            } else {
                chunks = []
            }
            first = 0
        } else if first > 32 {
            chunks.removeFirst(first)
            first = 0
        }
    }
}

/// One accepted socket. Owned by its event loop: every method runs on that loop's thread.
final class Connection: @unchecked Sendable {
    enum Phase {
        case reading
        case handling
        case streaming
        case lingering
        case closed
    }

    // Words first, then the 4-byte and 1-byte fields together: every connection, an idle event stream's
    // too, pays for padding between fields declared apart.
    let token: UInt64
    let loop: EventLoop
    let remoteAddress: String
    /// What reading requests needs (the parser, the body's progress, a lingering close's), on the heap:
    /// made when a request starts, and let go by an event stream while it holds nothing, so that an
    /// idle stream keeps none of it (see `parser`). A pointer rather than an object: a request reaches
    /// its parser several times, with no reference count or exclusivity check on each.
    private var requestStorage: UnsafeMutablePointer<RequestState>?
    private var outbound = OutboundQueue()
    private var stream: HTTPStream?
    private var streamHeartbeat: UInt64 = 0
    private var lastStreamWrite: UInt64 = 0
    private var requestStarted: UInt64
    private var idleSince: UInt64
    private var lastWriteProgress: UInt64 = 0
    /// The TLS session when the server speaks TLS; nil on the plain path.
    private var ssl: OpaquePointer?
    let fd: Int32
    /// Position in the loop's list of open connections (-1 once removed); 4 bytes, beside `fd`.
    var openIndex: Int32 = -1
    private var interest: IOEvents = []
    private(set) var phase: Phase = .reading
    private var streamKeepAlive = false
    private var closeAfterFlush = false
    private var readEOF = false
    private var currentIsHead = false
    private var currentKeepAlive = true
    private var currentVersion: HTTPVersion = .http1_1
    /// Set when input arrived while a handler ran: the read interest is dropped until the answer is
    /// queued (otherwise it stays, so that a request costs no interest change).
    private var inputWhileHandling = false
    /// The method of the request being read.
    private var currentMethod: HTTPMethod = .GET
    /// True until the TLS handshake completes.
    private var handshaking = false
    /// True once the first byte was seen to be a TLS handshake record.
    private var sawClientHello = false
    /// True once a response was queued: the idle limit, not the first request's, applies then.
    private var hasServed = false
    /// Accepted beyond the connection cap: it serves requests, one at a time and then closes, and never
    /// holds an event stream.
    let isReserve: Bool
    /// Bytes written to the peer so far (a stream's end reports them).
    private var bytesSent = 0

    init(fd: Int32, token: UInt64, loop: EventLoop, remoteAddress: String, now: UInt64, ssl: OpaquePointer? = nil, isReserve: Bool = false) {
        self.isReserve = isReserve
        self.ssl = ssl
        self.handshaking = ssl != nil
        self.fd = fd
        self.token = token
        self.loop = loop
        self.remoteAddress = remoteAddress
        self.requestStarted = now
        self.idleSince = now
    }

    private var configuration: HTTPServerConfiguration { loop.configuration }

    /// What reading requests needs beside the connection's own fields.
    private struct RequestState {
        var parser: RequestParser
        /// When the body being read began to arrive (0: none is being read).
        var bodyStarted: UInt64 = 0
        /// Bytes of the server's body budget held for the request being read or answered.
        var bodyReserved = 0
        /// The `Content-Length` of the body being read; nil for a chunked one.
        var announcedBody: Int?
        /// When a lingering close gives up, and how much it has discarded.
        var lingerDeadline: UInt64 = 0
        var lingerDrained = 0
    }

    /// The request state, made on first use.
    private var requestState: UnsafeMutablePointer<RequestState> { requestStorage ?? makeRequestState() }

    /// The request parser, made on first use, reached in place (no copy of it, no coroutine).
    private var parser: RequestParser {
        unsafeAddress { UnsafePointer(requestState.pointer(to: \.parser)!) }
        unsafeMutableAddress { requestState.pointer(to: \.parser)! }
    }

    private func makeRequestState() -> UnsafeMutablePointer<RequestState> {
        let storage = UnsafeMutablePointer<RequestState>.allocate(capacity: 1)
        storage.initialize(to: RequestState(parser: RequestParser(limits: configuration.limits)))
        requestStorage = storage
        return storage
    }

    /// Lets the request state go (made again by the next access). Nothing of the body budget is held
    /// then: an answer gives it back before any stream starts, and `close` before the connection goes.
    private func releaseRequestState() {
        guard let requestStorage else { return }
        requestStorage.deinitialize(count: 1)
        requestStorage.deallocate()
        self.requestStorage = nil
    }

    deinit {
        releaseRequestState()
    }

    /// Bodies up to this size are copied behind the head; larger ones are sent from their own buffer.
    static let inlineBodyLimit = 2048

    // MARK: - Events

    func handle(events: IOEvents) {
        if !events.isDisjoint(with: [.error, .hangup]) && !events.contains(.readable) {
            close(reason: .peerGone)
            return
        }
        if handshaking {
            continueHandshake()
            return
        }
        if phase == .streaming, !events.isDisjoint(with: [.peerClosed, .hangup, .error]) {
            close(reason: .peerGone)
            return
        }
        if events.contains(.writable) {
            flush()
            if phase == .closed { return }
        }
        if phase == .handling, !events.isDisjoint(with: [.readable, .hangup, .error]) {
            // Pipelined input (or the peer's end) while the handler runs: stop watching until the
            // answer is queued, so that level-triggered readiness cannot spin the loop.
            inputWhileHandling = true
        }
        if !events.isDisjoint(with: [.readable, .hangup, .error]) {
            if phase == .lingering {
                drainLingering()
                return
            }
            if phase == .reading { readAvailable() }
        }
        guard phase != .closed else { return }
        process()
    }

    /// Called once the socket is registered for input.
    func start() {
        interest = .readable
    }

    private func readAvailable() {
        if let ssl {
            readTLS(ssl)
            return
        }
        let buffer = loop.readBuffer
        let count = systemRead(fd, buffer.baseAddress, buffer.count)
        if count > 0 {
            parser.append(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
            if requestStarted == 0 { requestStarted = loop.now }
        } else if count == 0 {
            readEOF = true
        } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            close(reason: .peerGone)
        }
    }

    private var paused: Bool { outbound.bytes >= configuration.writeQueueLimit }

    /// Parses and answers buffered requests as far as the state allows, then writes.
    func process() {
        while phase == .reading, !closeAfterFlush {
            if paused {
                // Write first; go on with buffered (pipelined) requests only if the queue drained.
                flush()
                if paused || phase != .reading { break }
            }
            switch parser.next() {
            case .needMore:
                if parser.isReadingBody, parser.bodyBytes > requestState.pointee.bodyReserved {
                    // Reserved as the bytes arrive (never from what the head announced), in steps
                    // of 64 KiB so that an upload costs few atomic operations, and never past the
                    // announced length.
                    let reserved = requestState.pointee.bodyReserved
                    var wanted = (parser.bodyBytes - reserved + 0xFFFF) & ~0xFFFF
                    if let announced = requestState.pointee.announcedBody { wanted = min(wanted, announced - reserved) }
                    guard reserveBody(wanted) else {
                        refuseBeforeBody(overBudget(), method: currentMethod, version: currentVersion)
                        continue
                    }
                }
                if readEOF {
                    // Nothing more will come: finish what is queued, then close.
                    closeAfterFlush = true
                } else if !parser.isIdle, requestStarted == 0 {
                    requestStarted = loop.now
                }
                if parser.isReadingBody, requestState.pointee.bodyStarted == 0 { requestState.pointee.bodyStarted = loop.now }
                if parser.isIdle { parser.releaseMemoryIfIdle() }
                flush()
                updateInterest()
                return
            case .head(var head, let contentLength):
                head.remoteAddress = remoteAddress
                // A refusal from the head is timed and logged as its request would be.
                head.receivedAt = requestStarted
                head.connectionID = token
                currentVersion = head.version
                currentMethod = head.method
                let limit: Int
                switch loop.handler.decideBeforeBody(head, contentLength: contentLength, serverLimit: configuration.limits.body) {
                case let .refused(response):
                    refuseBeforeBody(response, method: head.method, version: head.version)
                    continue
                case let .tooLarge(limit):
                    let response = HTTPHandler.bodyTooLarge(head, limit: limit, formatter: configuration.errorFormatter)
                    refuseBeforeBody(presented(response), method: head.method, version: head.version)
                    continue
                case let .read(bodyLimit):
                    limit = bodyLimit
                }
                parser.limitBody(to: limit)
                requestState.pointee.announcedBody = contentLength
            case .continueExpected:
                if parser.bufferedBytes == 0 { outbound.append(ResponseEncoder.continueBytes) }
                if requestState.pointee.bodyStarted == 0 { requestState.pointee.bodyStarted = loop.now }
            case .request(var request):
                request.remoteAddress = remoteAddress
                loop.count { $0.requests += 1 }
                let reserved = requestState.pointee.bodyReserved
                if request.body.count > reserved, !reserveBody(request.body.count - reserved) {
                    // The rest of the body came with its head in one read: it is held now, and
                    // counts like any other before its handler runs.
                    refuseBeforeBody(overBudget(), method: request.method, version: request.version)
                    continue
                }
                request.receivedAt = requestStarted
                requestStarted = parser.isIdle ? 0 : loop.now
                requestState.pointee.bodyStarted = 0
                dispatch(request)
            case .error(let error):
                loop.count { $0.protocolErrors += 1 }
                currentIsHead = false
                currentKeepAlive = false
                send(presented(HTTPResponse.error(error, formatter: configuration.errorFormatter)))
                closeAfterFlush = true
            }
        }
        flush()
        updateInterest()
    }

    /// Answers from the head alone: the body is never read (the lingering close discards what the
    /// client still sends), and no `100 Continue` goes out.
    private func refuseBeforeBody(_ response: HTTPResponse, method: HTTPMethod, version: HTTPVersion) {
        loop.count { $0.refusedBeforeBody += 1 }
        currentIsHead = method == .HEAD
        currentVersion = version
        currentKeepAlive = false
        send(response)
        closeAfterFlush = true
    }

    /// 413 for a body larger than its route reads (`limit` 0: the route takes none).
    private func overBudget() -> HTTPResponse {
        var response = HTTPResponse.error(
            HTTPError(.serviceUnavailable, code: "overloaded", detail: "the server holds too many request bodies now; retry shortly"),
            formatter: configuration.errorFormatter)
        response.headers.set("Retry-After", "1")
        return presented(response)
    }

    /// One of the server's own refusals, as the layer above presents it (`errorPresenter`), given the
    /// header fields read so far.
    private func presented(_ response: HTTPResponse) -> HTTPResponse {
        guard let present = configuration.errorPresenter else { return response }
        return present(response, parser.headersSoFar)
    }

    /// Takes `bytes` more of the server's body budget; false (taking nothing) past it.
    private func reserveBody(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        guard loop.server.bodyBudget.reserve(bytes) else { return false }
        requestState.pointee.bodyReserved += bytes
        return true
    }

    private func releaseBody() {
        // Never makes the request state: without it, nothing is held.
        guard let requestStorage, requestStorage.pointee.bodyReserved > 0 else { return }
        loop.server.bodyBudget.add(-requestStorage.pointee.bodyReserved)
        requestStorage.pointee.bodyReserved = 0
    }

    private func dispatch(_ incoming: HTTPRequest) {
        var request = incoming
        request.connectionID = token
        currentIsHead = request.method == .HEAD
        currentVersion = request.version
        currentKeepAlive = request.keepAlive && !loop.isDraining
        switch loop.handler.outcome(&request) {
        case .response(let response):
            send(response)
        case .async(let body):
            phase = .handling
            let loop = self.loop
            Task { [self] in
                let response = await body(request)
                loop.execute { self.asyncCompleted(response) }
            }
        }
    }

    private func asyncCompleted(_ response: HTTPResponse) {
        guard phase == .handling else { return }
        phase = .reading
        inputWhileHandling = false
        if loop.isDraining { currentKeepAlive = false }
        send(response)
        process()
    }

    /// Queues a response to the current request.
    private func send(_ incoming: HTTPResponse) {
        // The request's body is answered: its share of the budget goes back.
        releaseBody()
        hasServed = true
        idleSince = loop.now
        var response = incoming
        if isReserve {
            // Beyond the cap: one answer, then the slot goes back; a stream is refused politely.
            closeAfterFlush = true
            if case .stream = response.body, !response.status.forbidsBody {
                loop.count { $0.streamsRefused += 1 }
                loop.server.notice("streams-refused", "refusing event streams: the node holds its most connections (\(loop.server.maxConnections)); "
                    + "requests on its reserve are answered, streams get 503 too_many_streams with Retry-After")
                let error = HTTPError(.serviceUnavailable, code: "too_many_streams", detail: "the server holds its most streams; try again shortly",
                                      retryAfter: Int.random(in: 2 ... 10))
                response = presented(HTTPResponse.error(error, formatter: configuration.errorFormatter))
            }
        }
        let keepAlive = currentKeepAlive && !closeAfterFlush
        let server = loop.serverNameBytes
        switch response.body {
        case .bytes(let body):
            let noBody = response.status.forbidsBody
            let length: Int? = noBody ? nil : body.count
            // Small bodies share the head's buffer; larger ones go as a second buffer of the same
            // sendmsg (one syscall either way), which saves copying them.
            let inline = body.count <= Connection.inlineBodyLimit
            var head = ResponseEncoder.head(
                response, contentLength: length, chunked: false, close: !keepAlive,
                keepAliveHeader: currentVersion == .http1_0, date: loop.dateBytes(), server: server,
                capacity: inline ? body.count : 0)
            if noBody || currentIsHead {
                outbound.append(head)
            } else if inline {
                head.append(contentsOf: body)
                outbound.append(head)
            } else {
                outbound.append(head)
                outbound.append(body)
            }
            if !keepAlive { closeAfterFlush = true }
        case .stream(let options, let start):
            let chunked = currentVersion == .http1_1
            let streamKeepAlive = keepAlive && chunked
            var head = ResponseEncoder.head(
                response, contentLength: nil, chunked: chunked && !response.status.forbidsBody, close: !streamKeepAlive,
                keepAliveHeader: false, date: loop.dateBytes(), server: server, capacity: options.initialBytes.count + 16)
            if currentIsHead || response.status.forbidsBody {
                outbound.append(head)
                if !streamKeepAlive { closeAfterFlush = true }
                return
            }
            if chunked {
                ResponseEncoder.appendChunk(options.initialBytes, to: &head)
            } else {
                head.append(contentsOf: options.initialBytes)
            }
            outbound.append(head)
            let stream = HTTPStream(connection: self, chunked: chunked, heartbeatBytes: options.heartbeatBytes)
            self.stream = stream
            self.streamKeepAlive = streamKeepAlive
            streamHeartbeat = options.heartbeatInterval?.nanoseconds ?? 0
            lastStreamWrite = loop.now
            phase = .streaming
            if parser.isIdle {
                // Nothing is read while it streams: made again if the connection serves requests after.
                releaseRequestState()
            }
            loop.count { $0.streamsOpen += 1 }
            start(stream)
        }
    }

    // MARK: - Streams

    func flushStream() {
        guard phase == .streaming, let stream else { return }
        let buffers = stream.takePending()
        if !buffers.isEmpty {
            for buffer in buffers { outbound.append(buffer) }
            lastStreamWrite = loop.now
        }
        flush()
        updateInterest()
    }

    /// Tells the configuration's `streamEnded` of the stream's end: since its head (`idleSince` is
    /// set when a response goes out, and a stream leaves it there), with the connection's bytes.
    private func reportStreamEnd(_ reason: HTTPStreamCloseReason) {
        guard let ended = configuration.streamEnded else { return }
        ended(HTTPStreamEnd(connectionID: token, remoteAddress: remoteAddress, duration: .nanoseconds(Int64(clamping: loop.now &- idleSince)),
                            bytes: bytesSent, reason: reason))
    }

    func endStream(_ reason: HTTPStreamCloseReason) {
        guard phase == .streaming, let stream else { return }
        let reported = stream.markEnding(reason)
        switch reported {
        case .closed, .serverShutdown, .backlogExceeded:
            // A slow reader past its budget is cut here too, after the whole events already queued,
            // so that it can resume from the last one it got (Last-Event-ID).
            for buffer in stream.takePending() { outbound.append(buffer) }
            if stream.chunked { outbound.append(ResponseEncoder.lastChunk) }
            self.stream = nil
            loop.count {
                $0.streamsOpen -= 1
                if reported == .backlogExceeded { $0.streamsOverflowed += 1 }
            }
            phase = .reading
            if !streamKeepAlive || reported != .closed { closeAfterFlush = true }
            reportStreamEnd(reported)
            idleSince = loop.now
            stream.finish(reported)
            process()
        case let other:
            close(reason: other)
        }
    }

    // MARK: - Writing

    private func flush() {
        if let ssl {
            guard flushTLS(ssl) else { return }
        } else {
            while outbound.bytes > 0 {
                let sent = outbound.send(fd, iovecs: loop.iovecs, maxIovecs: EventLoop.maxIovecs)
                if sent > 0 {
                    bytesSent += sent
                    lastWriteProgress = loop.now
                    continue
                }
                if sent < 0 && errno == EINTR { continue }
                if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                close(reason: .peerGone)
                return
            }
        }
        if let stream { stream.socketQueueChanged(outbound.bytes) }
        if outbound.bytes == 0, closeAfterFlush, phase == .reading {
            beginLingeringClose()
        }
    }

    private func beginLingeringClose() {
        if readEOF {
            close(reason: .closed)
            return
        }
        if let ssl {
            // close_notify, best effort: a full socket buffer just loses it.
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
        }
        shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        requestState.pointee.lingerDeadline = loop.now + configuration.lingerTimeout.nanoseconds
        updateInterest()
    }

    private func drainLingering() {
        let buffer = loop.readBuffer
        while true {
            let count = systemRead(fd, buffer.baseAddress, buffer.count)
            if count > 0 {
                requestState.pointee.lingerDrained += count
                // Room for a whole refused body, so that the client reads the answer before any reset.
                if requestState.pointee.lingerDrained > max(1 << 20, configuration.limits.body + (64 << 10)) { close(reason: .closed); return }
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            if count < 0 && errno == EINTR { continue }
            close(reason: .closed)
            return
        }
    }

    private func updateInterest() {
        guard phase != .closed else { return }
        var wanted: IOEvents = []
        switch phase {
        case .reading:
            if !readEOF && !closeAfterFlush && !paused { wanted.insert(.readable) }
        case .handling:
            // The read interest stays while the handler runs (a keep-alive client waits for the
            // answer, so nothing comes), and goes only once input did come.
            if !inputWhileHandling { wanted.formUnion(interest.intersection(.readable)) }
        case .streaming:
            wanted.insert(.peerClosed)
        case .lingering:
            wanted.insert(.readable)
        case .closed:
            return
        }
        if outbound.bytes > 0 { wanted.insert(.writable) }
        if wanted != interest {
            interest = wanted
            loop.setInterest(fd: fd, token: token, events: wanted)
        }
    }

    // MARK: - Timers

    /// Called by the loop's periodic scan.
    func checkTimers(now: UInt64) {
        switch phase {
        case .closed, .handling:
            return
        case .lingering:
            if now >= requestState.pointee.lingerDeadline { close(reason: .closed) }
            return
        case .streaming:
            if outbound.bytes > 0, now - lastWriteProgress > configuration.writeTimeout.nanoseconds {
                close(reason: .writeTimeout)
                return
            }
            if streamHeartbeat > 0, now - lastStreamWrite >= streamHeartbeat, outbound.bytes == 0, let stream {
                lastStreamWrite = now
                stream.write(stream.heartbeatBytes)
            }
            return
        case .reading:
            break
        }
        if outbound.bytes > 0 {
            if now - lastWriteProgress > configuration.writeTimeout.nanoseconds { close(reason: .writeTimeout) }
            return
        }
        if parser.isIdle {
            let limit = hasServed ? configuration.idleTimeout : configuration.headerTimeout
            if now - idleSince > limit.nanoseconds { close(reason: .closed) }
        } else if parser.isReadingBody {
            let bodyStarted = requestState.pointee.bodyStarted
            if bodyStarted > 0, now - bodyStarted > configuration.bodyTimeout.nanoseconds { timedOut("body") }
        } else if requestStarted > 0, now - requestStarted > configuration.headerTimeout.nanoseconds {
            timedOut("request head")
        }
    }

    private func timedOut(_ what: String) {
        loop.count { $0.protocolErrors += 1 }
        currentIsHead = false
        currentKeepAlive = false
        readEOF = false
        phase = .reading
        send(presented(HTTPResponse.error(
            HTTPError(.requestTimeout, code: "request_timeout", detail: "the \(what) did not arrive in time"),
            formatter: configuration.errorFormatter)))
        closeAfterFlush = true
        flush()
        updateInterest()
    }

    // MARK: - Shutdown

    /// Starts a graceful close: idle connections close now, streams end, others after their response.
    func beginDraining() {
        switch phase {
        case .reading:
            if parser.isIdle && outbound.bytes == 0 {
                close(reason: .serverShutdown)
            } else {
                currentKeepAlive = false
            }
        case .streaming:
            endStream(.serverShutdown)
        case .handling, .lingering, .closed:
            break
        }
    }

    func close(reason: HTTPStreamCloseReason) {
        guard phase != .closed else { return }
        phase = .closed
        if reason == .writeTimeout || reason == .backlogExceeded {
            // Abortive close (RST): the kernel drops what is still queued for this stalled peer
            // instead of keeping it in an orphaned socket.
            var option = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        if let ssl {
            SSL_free(ssl)
            self.ssl = nil
        }
        systemClose(fd)
        releaseBody()
        loop.connectionClosed(self)
        if let stream {
            self.stream = nil
            loop.count { $0.streamsOpen -= 1 }
            let reported = stream.markEnding(reason)
            if reported == .backlogExceeded { loop.count { $0.streamsOverflowed += 1 } }
            reportStreamEnd(reported)
            stream.finish(reported)
        }
    }

    // MARK: - TLS

    /// Drives the handshake one step: refuses input that is not a TLS record, then SSL_accept
    /// until it completes, waiting for whichever direction OpenSSL asks for.
    private func continueHandshake() {
        guard let ssl else { return }
        if !sawClientHello {
            var first: UInt8 = 0
            let count = recv(fd, &first, 1, Int32(MSG_PEEK))
            if count == 0 {
                close(reason: .closed)
                return
            }
            if count < 0 {
                if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { close(reason: .peerGone) }
                return
            }
            guard first == 0x16 else {
                // Plain HTTP (or anything else) on the TLS port: answer nothing, send FIN and drain.
                loop.count { $0.protocolErrors += 1 }
                handshaking = false
                SSL_free(ssl)
                self.ssl = nil
                readEOF = false
                beginLingeringClose()
                return
            }
            sawClientHello = true
        }
        ERR_clear_error()
        let result = SSL_accept(ssl)
        if result == 1 {
            handshaking = false
            idleSince = loop.now
            // The first request may already sit in OpenSSL's buffer or the socket.
            readTLS(ssl)
            guard phase != .closed else { return }
            process()
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            setHandshakeInterest(.readable)
        case SSL_ERROR_WANT_WRITE:
            setHandshakeInterest(.writable)
        default:
            ERR_clear_error()
            close(reason: .peerGone)
        }
    }

    private func setHandshakeInterest(_ wanted: IOEvents) {
        if wanted != interest {
            interest = wanted
            loop.setInterest(fd: fd, token: token, events: wanted)
        }
    }

    /// Reads decrypted bytes into the parser: about one read buffer's worth, then whatever
    /// OpenSSL still holds, since no readiness event announces data already taken off the socket.
    private func readTLS(_ ssl: OpaquePointer) {
        let buffer = loop.readBuffer
        var total = 0
        while total < buffer.count || SSL_has_pending(ssl) == 1 {
            ERR_clear_error()
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                parser.append(UnsafeRawBufferPointer(start: buffer.baseAddress, count: Int(count)))
                if requestStarted == 0 { requestStarted = loop.now }
                total += Int(count)
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                readEOF = true
                return
            case SSL_ERROR_SYSCALL where errno == EINTR:
                continue
            default:
                ERR_clear_error()
                close(reason: .peerGone)
                return
            }
        }
    }

    /// Writes queued output through SSL_write. Returns false if the connection was closed.
    private func flushTLS(_ ssl: OpaquePointer) -> Bool {
        guard let scratch = loop.tlsWriteBuffer else { return true }
        while outbound.bytes > 0 {
            ERR_clear_error()
            let written = outbound.send(ssl, scratch: scratch)
            if written > 0 {
                bytesSent += Int(written)
                lastWriteProgress = loop.now
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ:
                return true
            case SSL_ERROR_SYSCALL where errno == EINTR:
                continue
            default:
                ERR_clear_error()
                close(reason: .peerGone)
                return false
            }
        }
        return true
    }
}
