#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL


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
    var requestStorage: UnsafeMutablePointer<RequestState>?
    var outbound = OutboundQueue()
    var stream: HTTPStream?
    var streamHeartbeat: UInt64 = 0
    var lastStreamWrite: UInt64 = 0
    var requestStarted: UInt64
    var idleSince: UInt64
    var lastWriteProgress: UInt64 = 0
    /// The TLS session when the server speaks TLS; nil on the plain path.
    var ssl: OpaquePointer?
    let fd: Int32
    /// Position in the loop's list of open connections (-1 once removed); 4 bytes, beside `fd`.
    var openIndex: Int32 = -1
    var interest: IOEvents = []
    var phase: Phase = .reading
    var streamKeepAlive = false
    var closeAfterFlush = false
    /// Set while queued output waits for the socket (the write timeout runs from when it began to).
    var outputWaiting = false
    var readEOF = false
    var currentIsHead = false
    var currentKeepAlive = true
    var currentVersion: HTTPVersion = .http1_1
    /// Set when input arrived while a handler ran: the read interest is dropped until the answer is
    /// queued (otherwise it stays, so that a request costs no interest change).
    var inputWhileHandling = false
    /// The method of the request being read.
    var currentMethod: HTTPMethod = .GET
    /// True until the TLS handshake completes.
    var handshaking = false
    /// True once the first byte was seen to be a TLS handshake record.
    var sawClientHello = false
    /// True once a response was queued: the idle limit, not the first request's, applies then.
    var hasServed = false
    /// Accepted beyond the connection cap: it serves requests, one at a time and then closes, and never
    /// holds an event stream.
    let isReserve: Bool
    /// Bytes written to the peer so far (a stream's end reports them).
    var bytesSent = 0

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

    var configuration: HTTPServerConfiguration { loop.configuration }

    /// What reading requests needs beside the connection's own fields.
    struct RequestState {
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
    var requestState: UnsafeMutablePointer<RequestState> { requestStorage ?? makeRequestState() }

    /// The request parser, made on first use, reached in place (no copy of it, no coroutine).
    var parser: RequestParser {
        unsafeAddress { UnsafePointer(requestState.pointer(to: \.parser)!) }
        unsafeMutableAddress { requestState.pointer(to: \.parser)! }
    }

    func makeRequestState() -> UnsafeMutablePointer<RequestState> {
        let storage = UnsafeMutablePointer<RequestState>.allocate(capacity: 1)
        storage.initialize(to: RequestState(parser: RequestParser(limits: configuration.limits)))
        requestStorage = storage
        return storage
    }

    /// Lets the request state go (made again by the next access). Nothing of the body budget is held
    /// then: an answer gives it back before any stream starts, and `close` before the connection goes.
    func releaseRequestState() {
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
            if events.contains(.error) { failSocket() } else { close(reason: .peerGone) }
            return
        }
        if handshaking {
            continueHandshake()
            return
        }
        if phase == .streaming, !events.isDisjoint(with: [.peerClosed, .hangup, .error]) {
            if events.contains(.error) { failSocket() } else { close(reason: .peerGone) }
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

    func readAvailable() {
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

    var paused: Bool { outbound.bytes >= configuration.writeQueueLimit }

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
    func refuseBeforeBody(_ response: HTTPResponse, method: HTTPMethod, version: HTTPVersion) {
        loop.count { $0.refusedBeforeBody += 1 }
        currentIsHead = method == .HEAD
        currentVersion = version
        currentKeepAlive = false
        send(response)
        closeAfterFlush = true
    }

    /// 413 for a body larger than its route reads (`limit` 0: the route takes none).
    func overBudget() -> HTTPResponse {
        var response = HTTPResponse.error(
            HTTPError(.serviceUnavailable, code: "overloaded", detail: "the server holds too many request bodies now; retry shortly"),
            formatter: configuration.errorFormatter)
        response.headers.set("Retry-After", "1")
        return presented(response)
    }

    /// One of the server's own refusals, as the layer above presents it (`errorPresenter`), given the
    /// header fields read so far.
    func presented(_ response: HTTPResponse) -> HTTPResponse {
        guard let present = configuration.errorPresenter else { return response }
        return present(response, parser.headersSoFar)
    }

    /// Takes `bytes` more of the server's body budget; false (taking nothing) past it.
    func reserveBody(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        guard loop.server.bodyBudget.reserve(bytes) else { return false }
        requestState.pointee.bodyReserved += bytes
        return true
    }

    func releaseBody() {
        // Never makes the request state: without it, nothing is held.
        guard let requestStorage, requestStorage.pointee.bodyReserved > 0 else { return }
        loop.server.bodyBudget.add(-requestStorage.pointee.bodyReserved)
        requestStorage.pointee.bodyReserved = 0
    }

    func dispatch(_ incoming: HTTPRequest) {
        var request = incoming
        request.connectionID = token
        currentIsHead = request.method == .HEAD
        currentVersion = request.version
        currentKeepAlive = request.keepAlive && !loop.isDraining
        // An event stream asked for on the reserve is refused from its head, its handler never run: a
        // stream that cannot be held costs the reserve neither its route's work (authentication, a
        // list's lookup) nor the slot for that long. (A stream the head does not announce is refused
        // when its handler answers.)
        if isReserve, request.method == .GET, request.headers["Accept"]?.lowercased().contains("text/event-stream") == true {
            send(streamRefusal())
            return
        }
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

    /// 503 too_many_streams, with a Retry-After spread over 2 to 10 s: the answer to a stream asked for
    /// on a connection of the reserve (counted, and logged at most once a minute).
    func streamRefusal() -> HTTPResponse {
        loop.count { $0.streamsRefused += 1 }
        loop.server.notice("streams-refused", "refusing event streams: the node holds its most connections (\(loop.server.maxConnections)); "
            + "requests on its reserve are answered, streams get 503 too_many_streams with Retry-After")
        let error = HTTPError(.serviceUnavailable, code: "too_many_streams", detail: "the server holds its most streams; try again shortly",
                              retryAfter: Int.random(in: 2 ... 10))
        return presented(HTTPResponse.error(error, formatter: configuration.errorFormatter))
    }

    func asyncCompleted(_ response: HTTPResponse) {
        guard phase == .handling else { return }
        phase = .reading
        inputWhileHandling = false
        if loop.isDraining { currentKeepAlive = false }
        send(response)
        process()
    }

    /// Queues a response to the current request.
    func send(_ incoming: HTTPResponse) {
        // The request's body is answered: its share of the budget goes back.
        releaseBody()
        hasServed = true
        idleSince = loop.now
        var response = incoming
        if isReserve {
            // Beyond the cap: one answer, then the slot goes back; a stream is refused politely.
            closeAfterFlush = true
            if case .stream = response.body, !response.status.forbidsBody {
                response = streamRefusal()
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
            if configuration.streamSendBuffer > 0 {
                var size = Int32(clamping: configuration.streamSendBuffer)
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
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
}
