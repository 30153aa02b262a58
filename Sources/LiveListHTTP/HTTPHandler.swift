#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What answers requests: a synchronous closure (run on the connection's event loop; it must be
/// quick and never block), an `async` one (run as a task; the loop keeps serving other
/// connections meanwhile), or a router that picks one of those per request.
public struct HTTPHandler: Sendable {
    enum Kind: Sendable {
        case sync(@Sendable (HTTPRequest) -> HTTPResponse)
        case async(@Sendable (HTTPRequest) async -> HTTPResponse)
        case dispatch(@Sendable (inout HTTPRequest) -> HTTPHandler)
        /// `mapResponses`: kept apart from `dispatch` so that a synchronous answer passes through
        /// its transforms without a closure made per request (see `outcome`).
        indirect case mapped(HTTPHandler, @Sendable (HTTPRequest, HTTPResponse) -> HTTPResponse)
    }

    let kind: Kind
    /// Decides from the head alone, before a body is read; see `checkingHeads`.
    public internal(set) var headCheck: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    /// The largest body this handler reads for a request with this head, in bytes; nil for the
    /// server's limit (`HTTPParserLimits.body`). See `acceptingBodies(upTo:)`.
    public internal(set) var bodyLimit: (@Sendable (HTTPRequest) -> Int?)?

    init(kind: Kind, headCheck: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil, bodyLimit: (@Sendable (HTTPRequest) -> Int?)? = nil) {
        self.kind = kind
        self.headCheck = headCheck
        self.bodyLimit = bodyLimit
    }

    /// This handler with `check` run on the head of every request that announces a body, as soon as
    /// the head is parsed: `check` gets the request with an empty body (and its remote address) and
    /// returns nil to go on, or the final answer. A request answered this way has its body never
    /// read: no `100 Continue` is sent and the connection closes after the answer. Use it for what
    /// the headers decide (authorization, media type, size), so refused uploads cost nothing.
    /// Runs on the event loop: it must be quick and never block. Replaces any earlier check.
    public func checkingHeads(_ check: @escaping @Sendable (HTTPRequest) -> HTTPResponse?) -> HTTPHandler {
        HTTPHandler(kind: kind, headCheck: check, bodyLimit: bodyLimit)
    }

    /// This handler reading bodies of at most `limit` bytes (never more than the server's own
    /// limit): a request announcing a larger one is answered 413 from its head, its body never
    /// read, and a chunked body is refused once it passes `limit`. `0` takes no body at all. A
    /// `Router` gives routes that do not say otherwise no body for `GET`, `HEAD`, `DELETE` and
    /// `OPTIONS`, and the server's limit for the other methods.
    public func acceptingBodies(upTo limit: Int) -> HTTPHandler {
        let limit = max(0, limit)
        return HTTPHandler(kind: kind, headCheck: headCheck, bodyLimit: { _ in limit })
    }

    /// What the server decides from the head of a request that announces a body, before it reads
    /// any of it.
    package enum BodyDecision {
        /// The head check answered: the body is never read.
        case refused(HTTPResponse)
        /// The body announced, or any body on a route that takes none, is larger than `limit`: 413.
        case tooLarge(limit: Int)
        /// Read the body, up to `limit` bytes.
        case read(limit: Int)
    }

    /// Decides from `head` (a request that announces a body of `contentLength` bytes, or a chunked
    /// one of unknown length) what to do before reading it: the handler's head check first, then the
    /// route's body limit, never above `serverLimit`. The connection decides with it, and so do the
    /// in-process route tests, so that both refuse alike.
    package func decideBeforeBody(_ head: HTTPRequest, contentLength: Int?, serverLimit: Int) -> BodyDecision {
        if let headCheck, let response = headCheck(head) {
            return .refused(response)
        }
        // The route says how large a body it reads (none for most GETs): a larger one is refused
        // from its head, before any of it is read or held.
        let limit = min(bodyLimit?(head) ?? serverLimit, serverLimit)
        if contentLength.map({ $0 > limit }) ?? (limit == 0) {
            return .tooLarge(limit: limit)
        }
        return .read(limit: limit)
    }

    /// The 413 answer to `head`, whose body is larger than `limit` (0: the route takes none).
    package static func bodyTooLarge(_ head: HTTPRequest, limit: Int, formatter: HTTPErrorFormatter) -> HTTPResponse {
        let detail = limit == 0
            ? "\(head.method.rawValue) \(head.path) takes no body"
            : "\(head.method.rawValue) \(head.path) takes bodies of at most \(limit) bytes"
        return HTTPResponse.error(HTTPError(.contentTooLarge, code: "body_too_large", detail: detail), formatter: formatter)
    }

    /// This handler with the body limit `limit` decides per request (a router's, by route).
    func withBodyLimit(_ limit: (@Sendable (HTTPRequest) -> Int?)?) -> HTTPHandler {
        HTTPHandler(kind: kind, headCheck: headCheck, bodyLimit: limit)
    }

    /// A handler run inline on the event loop.
    public static func sync(_ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse) -> HTTPHandler {
        HTTPHandler(kind: .sync(body))
    }

    /// A handler run as a task; its response goes back to the connection's loop, in order.
    public static func async(_ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) -> HTTPHandler {
        HTTPHandler(kind: .async(body))
    }

    /// A handler that chooses another handler per request (and may edit the request, as the
    /// router does with path parameters).
    public static func dispatch(_ choose: @escaping @Sendable (inout HTTPRequest) -> HTTPHandler) -> HTTPHandler {
        HTTPHandler(kind: .dispatch(choose))
    }

    /// This handler with `transform` applied to every response it gives. A request that this handler
    /// answers synchronously is still answered synchronously (on the event loop, no task), an `async`
    /// one as a task; the head check is kept.
    public func mapResponses(_ transform: @escaping @Sendable (HTTPRequest, HTTPResponse) -> HTTPResponse) -> HTTPHandler {
        HTTPHandler(kind: .mapped(self, transform), headCheck: headCheck, bodyLimit: bodyLimit)
    }

    /// What the server does with a request.
    enum Outcome {
        /// Answered on the spot (a synchronous handler, through its transforms).
        case response(HTTPResponse)
        /// To run as a task.
        case async(@Sendable (HTTPRequest) async -> HTTPResponse)
    }

    /// Answers `request` now when its handler is synchronous (through every `dispatch`, which may
    /// edit the request, and every transform, with no closure made per request); otherwise gives the
    /// closure to run as a task.
    func outcome(_ request: inout HTTPRequest) -> Outcome {
        switch kind {
        case .sync(let body): return .response(body(request))
        case .async(let body): return .async(body)
        case .dispatch(let choose): return choose(&request).outcome(&request)
        case .mapped(let inner, let transform):
            switch inner.outcome(&request) {
            case .response(let response): return .response(transform(request, response))
            case .async(let body): return .async { request in transform(request, await body(request)) }
            }
        }
    }

    /// Runs the handler to completion (for tests and for composing handlers).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        var request = request
        switch outcome(&request) {
        case .response(let response): return response
        case .async(let body): return await body(request)
        }
    }
}

/// Settings of an `HTTPServer`. Every timeout is configurable so tests can run fast.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind (IPv4 or IPv6 literal).
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks a free one (read it from `HTTPServer.port`).
    public var port: Int = 8080
    /// Number of event loops (threads); defaults to the number of online processors.
    public var loopCount: Int = HTTPServerConfiguration.processorCount
    /// listen() backlog.
    public var backlog: Int32 = 1024
    /// Parser limits.
    public var limits = HTTPParserLimits()
    /// Time allowed for a complete request head, from its first byte (or from accepting the
    /// connection); past it 408 and close. Total, not per read, so slowloris cannot stretch it.
    public var headerTimeout: Duration = .seconds(10)
    /// Time allowed for a complete body after the head; past it 408 and close.
    public var bodyTimeout: Duration = .seconds(30)
    /// Time an idle keep-alive connection stays open between requests.
    public var idleTimeout: Duration = .seconds(60)
    /// Time queued output may go without any progress before the connection is closed.
    public var writeTimeout: Duration = .seconds(30)
    /// How long to drain input after shutting down writes on a connection being closed.
    public var lingerTimeout: Duration = .seconds(2)
    /// Most open connections; past it new ones get 503 and are closed. The server lowers it to the
    /// process's file limit (`RLIMIT_NOFILE`) less `fileDescriptorReserve`, so that files, the store
    /// and the 503 itself always find a descriptor.
    public var maxConnections: Int = 20_000
    /// Descriptors kept free of connections: at least this many, and at least 5% of the file limit.
    public var fileDescriptorReserve: Int = 64
    /// Connections accepted beyond `maxConnections` (at most half of the descriptors kept free):
    /// each serves its requests but may not hold an event stream (503 `too_many_streams` with
    /// `Retry-After`, and the connection closes after each answer), so that liveness and readiness
    /// probes, writes and `/metrics` are answered while the server holds its most streams. Past them,
    /// a new connection waits in the listen backlog while the server gives slots back, and gets 503
    /// `too_many_connections` once none was given back for half a second. Default 64.
    public var reservedConnections: Int = 64
    /// Where the server's own notices go (connections refused at the limit, streams refused on the
    /// reserve), each kind at most once a minute with the count of those not said; nil for nowhere.
    public var notice: (@Sendable (String) -> Void)?
    /// Told of every event stream that ends: for a log of streams with their duration and bytes.
    public var streamEnded: (@Sendable (HTTPStreamEnd) -> Void)?
    /// Most bytes of request bodies held at once over all connections: reserved as a body's bytes
    /// arrive (never from what `Content-Length` announces), only for a body that its route reads
    /// (after the head checks and the route's body limit), until the answer is queued; past it 503
    /// with `Retry-After: 1`. Default 64 MiB.
    public var requestBodyBudget: Int = 64 << 20
    /// Queued output beyond which a connection stops reading further (pipelined) requests.
    public var writeQueueLimit: Int = 256 * 1024
    /// A stream's output budget: an event written while more than this is still queued for the
    /// peer (a slow reader) is refused and the stream ends after the events already queued, at an
    /// event boundary (counted in `streamsOverflowed`). A single event of any size written to a
    /// reader that keeps up is always accepted.
    public var streamBacklogLimit: Int = 1024 * 1024
    /// The most bytes queued for event streams over all connections: past it, a write to a stream is
    /// refused (unless it is small and the stream has nothing queued) and the stream stays open, its
    /// writer told to wait for it to drain (`HTTPStream.whenDrained`), so that the streams together
    /// cannot hold more than about this much while the node is overloaded (counted in
    /// `streamWritesDeferred`). A reader that takes nothing is closed by the write timeout. Default 256 MiB.
    public var streamOutputBudget: Int = 256 << 20
    /// The kernel's send buffer of a connection once it holds an event stream (`SO_SNDBUF`, which
    /// Linux doubles for its bookkeeping); 0 keeps the kernel's own, which grows to megabytes per
    /// socket. What a slow reader leaves unsent then waits in the server, where the stream output
    /// budget counts it and a list's fan-out skips the stream until it drains, instead of in kernel
    /// memory that every socket shares (`tcp_mem`) and nothing here counts. Default 64 KiB.
    public var streamSendBuffer: Int = 64 << 10
    /// The `Server` field; empty (the default) sends none.
    public var serverName: String = ""
    /// How long `shutdown()` waits for in-flight responses by default.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// Shapes the server's own error responses.
    public var errorFormatter: HTTPErrorFormatter = defaultHTTPErrorFormatter
    /// Presents the server's own refusals of a request once its request line was read (a body too
    /// large, a malformed header, a timeout, the body budget): called with the formatted response
    /// and the header fields read so far (all of them once the head was whole), so that the layer
    /// above can, say, answer a browser with an HTML page. Nil (the default) sends the formatted
    /// response as it is.
    public var errorPresenter: (@Sendable (HTTPResponse, HTTPHeaders) -> HTTPResponse)?
    /// Certificate and key for TLS on every connection; nil serves plain HTTP.
    public var tls: TLSConfiguration?
    /// What the event loops wait on. `.automatic` (the default) reads `LIVELIST_EVENT_LOOP`
    /// (`epoll` or `poll`) and otherwise takes epoll on Linux, poll elsewhere; `start()` throws
    /// `HTTPServerError.eventLoop` for any other value of the variable, or for epoll off Linux.
    public var eventLoop: EventLoopBackend = .automatic

    public init() {}

    static var processorCount: Int {
        let count = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return max(1, count)
    }
}

/// An event stream that ended, as ``HTTPServerConfiguration/streamEnded`` tells it.
public struct HTTPStreamEnd: Sendable {
    /// The connection's number, the same as its request's ``HTTPRequest/connectionID``.
    public var connectionID: UInt64
    /// The peer's address.
    public var remoteAddress: String
    /// From the request that opened the stream to its end.
    public var duration: Duration
    /// Bytes written on the connection, the response's head included.
    public var bytes: Int
    /// Why it ended.
    public var reason: HTTPStreamCloseReason
}

/// Counters of a running server.
public struct HTTPServerStatistics: Sendable, Hashable {
    /// Connections accepted since start.
    public var connectionsAccepted = 0
    /// Connections refused with 503 because `maxConnections` and the reserve were open.
    public var connectionsRefused = 0
    /// Connections accepted beyond `maxConnections`, on the reserve (serving requests, never streams).
    public var connectionsReserved = 0
    /// Event streams refused because their connection was on the reserve.
    public var streamsRefused = 0
    /// Connections open now.
    public var connectionsOpen = 0
    /// Requests parsed completely.
    public var requests = 0
    /// Requests refused by the parser or for a timeout (4xx/5xx from the HTTP layer).
    public var protocolErrors = 0
    /// Requests answered from their head alone (their body never read): refused by the handler's
    /// head check or past `requestBodyBudget`.
    public var refusedBeforeBody = 0
    /// Streams closed because their queued output passed `streamBacklogLimit`.
    public var streamsOverflowed = 0
    /// Writes to streams refused for the stream output budget (the streams stayed open).
    public var streamWritesDeferred = 0
    /// Streams ended, by reason (a reason that never ended a stream is absent).
    public var streamsClosed: [HTTPStreamCloseReason: Int] = [:]
    /// Streams open now.
    public var streamsOpen = 0

    public init() {}
}
