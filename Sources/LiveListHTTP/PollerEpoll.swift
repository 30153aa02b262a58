#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem

// Everything that depends on the system having epoll lives in this file, the only one of the module
// with `#if os(Linux)`: the epoll backend, which backends exist, and the loop's dispatch to them;
// and the one field Glibc and Darwin name differently. (The C shims keep their own Linux variants
// behind `#ifdef __linux__`.)

#if os(Linux)

/// The Linux backend: epoll, level-triggered. A wait costs O(ready events), not O(watched
/// descriptors); the listener is registered with EPOLLEXCLUSIVE so one connection wakes one loop.
final class EpollPoller: Poller {
    private static let capacity: Int32 = 512
    private let epfd: Int32
    private let wakeChannel: WakeChannel
    /// The events buffer epoll_wait fills, allocated once.
    private let buffer: UnsafeMutableRawPointer
    private var closed = false

    init() throws(HTTPServerError) {
        assert(IOEvents.readable.rawValue == CS_EPOLLIN && IOEvents.writable.rawValue == CS_EPOLLOUT
               && IOEvents.error.rawValue == CS_EPOLLERR && IOEvents.hangup.rawValue == CS_EPOLLHUP
               && IOEvents.peerClosed.rawValue == CS_EPOLLRDHUP && IOEvents.exclusive.rawValue == CS_EPOLLEXCLUSIVE,
               "IOEvents must keep epoll's bits")
        epfd = cs_epoll_create()
        guard epfd >= 0 else { throw .system("epoll_create1", errno) }
        do {
            wakeChannel = try WakeChannel()
        } catch {
            Glibc.close(epfd)
            throw error
        }
        buffer = cs_epoll_events_alloc(Self.capacity)
        // Every property is set by now, so deinit runs on this throw and closes both descriptors.
        guard cs_epoll_ctl(epfd, CS_EPOLL_CTL_ADD, wakeChannel.readFd, CS_EPOLLIN, Self.wakeToken) == 0 else {
            throw .system("epoll_ctl", errno)
        }
    }

    deinit {
        close()
        cs_epoll_events_free(buffer)
    }

    @inline(__always)
    func register(_ fd: Int32, interest: IOEvents, token: UInt64) -> Bool {
        cs_epoll_ctl(epfd, CS_EPOLL_CTL_ADD, fd, interest.rawValue, token) == 0
    }

    @inline(__always)
    func modify(_ fd: Int32, interest: IOEvents, token: UInt64) {
        _ = cs_epoll_ctl(epfd, CS_EPOLL_CTL_MOD, fd, interest.rawValue, token)
    }

    func unregister(_ fd: Int32) {
        _ = cs_epoll_ctl(epfd, CS_EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Nothing to do: closing its only descriptor took it out of the epoll set.
    @inline(__always)
    func forgetClosed(_ fd: Int32) {}

    @inline(__always)
    func wait(timeoutMilliseconds: Int32) -> Int {
        Int(max(0, cs_epoll_wait(epfd, buffer, Self.capacity, timeoutMilliseconds)))
    }

    @inline(__always)
    func token(at index: Int) -> UInt64 { cs_epoll_event_data(buffer, Int32(truncatingIfNeeded: index)) }

    @inline(__always)
    func events(at index: Int) -> IOEvents {
        IOEvents(rawValue: cs_epoll_event_flags(buffer, Int32(truncatingIfNeeded: index)))
    }

    func wake() { wakeChannel.signal() }

    func drainWake() { wakeChannel.drain() }

    var wakeDescriptor: Int32 { wakeChannel.writeFd }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(epfd)
        wakeChannel.close()
    }
}

extension EventLoopBackend {
    /// What `.automatic` means when `LIVELIST_EVENT_LOOP` is not set.
    static let platformDefault = EventLoopBackend.epoll
    /// The backends this system has.
    static let available: [EventLoopBackend] = [.epoll, .poll]
}

/// The poller of a settled backend (`.epoll` or `.poll`).
func makePoller(_ backend: EventLoopBackend) throws(HTTPServerError) -> any Poller {
    switch backend {
    case .epoll: return try EpollPoller()
    case .poll, .automatic: return try PollPoller()
    }
}

extension stat {
    /// The time of last modification (`st_mtim` here, `st_mtimespec` on Darwin).
    var modificationTime: timespec { st_mtim }
}

extension EventLoop {
    /// Runs the loop specialized for its concrete poller, so that waiting and reading events back
    /// are direct calls.
    func run() {
        if let epoll = poller as? EpollPoller {
            run(with: epoll)
        } else if let poll = poller as? PollPoller {
            run(with: poll)
        } else {
            run(with: poller)
        }
    }
}

#else

extension EventLoopBackend {
    /// What `.automatic` means when `LIVELIST_EVENT_LOOP` is not set.
    static let platformDefault = EventLoopBackend.poll
    /// The backends this system has.
    static let available: [EventLoopBackend] = [.poll]
}

/// The poller of a settled backend (only `.poll` here: `resolved()` refuses `.epoll`).
func makePoller(_ backend: EventLoopBackend) throws(HTTPServerError) -> any Poller {
    switch backend {
    case .epoll: throw .eventLoop("epoll exists on Linux only (use poll)")
    case .poll, .automatic: return try PollPoller()
    }
}

extension stat {
    /// The time of last modification (`st_mtimespec` here, `st_mtim` on Linux).
    var modificationTime: timespec { st_mtimespec }
}

extension EventLoop {
    /// Runs the loop specialized for its concrete poller.
    func run() {
        if let poll = poller as? PollPoller {
            run(with: poll)
        } else {
            run(with: poller)
        }
    }
}

#endif
