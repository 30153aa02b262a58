#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem

/// Readiness of a descriptor, as an event loop asks for it (interest) and learns of it (events).
/// The bits are epoll's, which are also poll's for the first four, so that the epoll backend passes
/// them through untouched; the poll backend translates (see `PollPoller`).
struct IOEvents: OptionSet, Hashable {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Input (or an end of input) can be read.
    static let readable = IOEvents(rawValue: 0x001)
    /// Output can be written.
    static let writable = IOEvents(rawValue: 0x004)
    /// An error is pending (always reported, never asked for).
    static let error = IOEvents(rawValue: 0x008)
    /// Both directions are shut (always reported, never asked for).
    static let hangup = IOEvents(rawValue: 0x010)
    /// The peer shut its writing side, asked for alone while the loop reads nothing (a stream).
    static let peerClosed = IOEvents(rawValue: 0x2000)
    /// Interest only, for a descriptor that several loops watch (the listener): wake one loop per
    /// event rather than all (epoll's EPOLLEXCLUSIVE; poll has no such thing and ignores it).
    static let exclusive = IOEvents(rawValue: 1 << 28)
}

/// What an event loop waits on: a set of descriptors, each with an interest and a 64-bit token
/// handed back with its events, plus a wake-up channel other threads can signal.
///
/// Every method but `wake()` runs on the loop's thread. The loop's hot path (`wait` and the events
/// it reads back) runs specialized for the concrete backend (see `EventLoop.run()`), never through
/// this protocol's witness table.
protocol Poller: AnyObject {
    /// Starts watching `fd`; false (errno set) if the system refuses.
    func register(_ fd: Int32, interest: IOEvents, token: UInt64) -> Bool
    /// Changes the interest of a watched `fd`.
    func modify(_ fd: Int32, interest: IOEvents, token: UInt64)
    /// Stops watching `fd`, which stays open (the listener when accepting pauses or stops).
    func unregister(_ fd: Int32)
    /// Forgets `fd`, just closed by the loop (epoll dropped it with the close; poll must too).
    func forgetClosed(_ fd: Int32)
    /// Waits up to `timeoutMilliseconds` and returns how many events are ready (0 on a timeout or
    /// an interrupted wait); read them with `token(at:)` and `events(at:)` before the next wait.
    func wait(timeoutMilliseconds: Int32) -> Int
    func token(at index: Int) -> UInt64
    func events(at index: Int) -> IOEvents
    /// Wakes the loop from any thread: `wait` returns an event with `Poller.wakeToken`.
    func wake()
    /// Clears the wake-ups that made `wait` report `Poller.wakeToken`.
    func drainWake()
    /// The descriptor `wake()` writes to (for tests: closed by `close()`, never written after).
    var wakeDescriptor: Int32 { get }
    /// Closes the poller's own descriptors (not the watched ones). Once.
    func close()
}

extension Poller {
    /// The token the wake-up channel's events carry.
    static var wakeToken: UInt64 { .max }
}

/// The channel that wakes a loop (see `cs_wake_open`): an eventfd on Linux, a pipe elsewhere.
struct WakeChannel {
    /// The end to poll and drain.
    let readFd: Int32
    /// The end other threads write to (the same descriptor as `readFd` for an eventfd).
    let writeFd: Int32

    init() throws(HTTPServerError) {
        var fds: (Int32, Int32) = (-1, -1)
        let result = withUnsafeMutableBytes(of: &fds) { cs_wake_open($0.baseAddress!.assumingMemoryBound(to: Int32.self)) }
        guard result == 0 else { throw .system("wake channel", errno) }
        readFd = fds.0
        writeFd = fds.1
    }

    func signal() { _ = cs_wake_signal(writeFd) }
    func drain() { cs_wake_drain(readFd) }
    func close() { cs_wake_close(readFd, writeFd) }
}

// MARK: - System calls named without their module

// Inside types that have methods of the same name (`close(reason:)`, `bind()`), the C functions
// must be named with their module, which is Glibc on Linux and Darwin on macOS: these wrappers,
// declared where nothing shadows them, spare the callers that choice.

@inline(__always)
func systemClose(_ fd: Int32) {
    _ = close(fd)
}

@inline(__always)
func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

@inline(__always)
func systemBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    bind(fd, address, length)
}

@inline(__always)
func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
    open(path, flags)
}
