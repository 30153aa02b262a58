#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system facility an `HTTPServer`'s event loops wait on (see `HTTPServerConfiguration.eventLoop`).
public enum EventLoopBackend: String, Sendable, Hashable, CustomStringConvertible {
    /// `LIVELIST_EVENT_LOOP` when it is set (`epoll` or `poll`), else epoll on Linux and poll
    /// elsewhere. Any other value of the variable makes `HTTPServer.start()` throw
    /// `HTTPServerError.eventLoop`.
    case automatic
    /// Linux's epoll: a wait costs O(ready connections) however many are open, and a new connection
    /// wakes one loop only. Linux only.
    case epoll
    /// poll(2), on every POSIX system (Darwin included): each wait costs O(open connections) of the
    /// loop, and every loop wakes for a new connection (one of them accepts it). Fine for
    /// development and for a few thousand connections.
    case poll

    /// The environment variable `.automatic` reads: `epoll` or `poll`.
    public static let environmentVariable = "LIVELIST_EVENT_LOOP"

    public var description: String { rawValue }

    /// This backend with `.automatic` settled from `LIVELIST_EVENT_LOOP` or the platform's default.
    /// Throws `HTTPServerError.eventLoop` for an unknown value of the variable or for a backend
    /// this system does not have (epoll off Linux).
    public func resolved() throws(HTTPServerError) -> EventLoopBackend {
        let variable = getenv(Self.environmentVariable).map { String(cString: $0) }
        return try resolved(environmentValue: variable)
    }

    /// `resolved()` with the variable's value given (nil: not set).
    func resolved(environmentValue: String?) throws(HTTPServerError) -> EventLoopBackend {
        var backend = self
        if backend == .automatic {
            switch environmentValue {
            case nil, "":
                backend = Self.platformDefault
            case let value?:
                guard let named = EventLoopBackend(rawValue: value), named != .automatic else {
                    throw .eventLoop("\(Self.environmentVariable)=\(value) names no event loop (epoll or poll, or unset)")
                }
                backend = named
            }
        }
        guard Self.available.contains(backend) else {
            throw .eventLoop("the \(backend) event loop does not exist on this system (use poll)")
        }
        return backend
    }
}
