#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A child process started with `posix_spawn`, for tests that run the real binary or a tool.
///
/// Not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` by copying each directory
/// entry's whole 256-byte name field, which reads past glibc's buffer when the next page is unmapped
/// and crashes the test process now and then (swift-corelibs-foundation pull request 5472, in Swift
/// releases after 6.3.1). Its reads of a child's pipe also stop the process on EINTR (see
/// ``PipeReading``).
///
/// Standard input is `/dev/null`; standard output and error are discarded or captured in a pipe
/// whose read end is ``outputDescriptor`` / ``errorDescriptor`` (closed when this object goes). The
/// pipes are made close-on-exec at once, so that children of other tests do not keep them open. The
/// environment is the test process's own. A child still running when this object goes is killed.
public final class ChildProcess: Sendable {
    /// What becomes of one of the child's output streams.
    public enum Sink: Sendable {
        case discard
        case capture
    }

    /// The child's process id.
    public let processIdentifier: Int32
    /// The read end of the captured standard output; -1 when discarded.
    public let outputDescriptor: Int32
    /// The read end of the captured standard error; -1 when discarded.
    public let errorDescriptor: Int32
    /// The exit status once reaped (nil while it runs).
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable` (a path) with `arguments`.
    public init(_ executable: String, _ arguments: [String], output: Sink = .discard, errors: Sink = .discard) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var readEnds: [Int32] = []
        func route(_ sink: Sink, to target: Int32) throws -> Int32 {
            guard sink == .capture else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                return -1
            }
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw ChildProcessError("pipe failed: errno \(errno)") }
            // Close-on-exec at once (Glibc's module has no pipe2): another test's child started in
            // between would only hold them open a little longer.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            readEnds.append(ends[0])
            // dup2 clears close-on-exec on the child's copy only.
            posix_spawn_file_actions_adddup2(&actions, ends[1], target)
            writeEnds.append(ends[1])
            return ends[0]
        }
        var writeEnds: [Int32] = []
        let outputEnd: Int32
        let errorEnd: Int32
        do {
            outputEnd = try route(output, to: 1)
            errorEnd = try route(errors, to: 2)
        } catch {
            for fd in readEnds + writeEnds { close(fd) }
            throw error
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: Int32 = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        for fd in writeEnds { close(fd) }
        guard result == 0 else {
            for fd in readEnds { close(fd) }
            throw ChildProcessError("cannot start \(executable): errno \(result)")
        }
        processIdentifier = pid
        outputDescriptor = outputEnd
        errorDescriptor = errorEnd
    }

    deinit {
        if outputDescriptor >= 0 { close(outputDescriptor) }
        if errorDescriptor >= 0 { close(errorDescriptor) }
        // Never leaves a zombie: a child still running is stopped and reaped.
        if isRunning {
            kill(processIdentifier, SIGKILL)
            waitUntilExit()
        }
    }

    /// Whether the child still runs (it is reaped once it has ended).
    public var isRunning: Bool {
        status.withLock { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            let reaped = waitpid(processIdentifier, &raw, WNOHANG)
            if reaped == processIdentifier {
                status = Self.exitStatus(raw)
                return false
            }
            // -1: not our child any more (reaped elsewhere): it has ended.
            if reaped < 0 && errno != EINTR { status = -1 }
            return reaped == 0 || (reaped < 0 && errno == EINTR)
        }
    }

    /// Sends SIGTERM.
    public func terminate() {
        signal(SIGTERM)
    }

    /// Sends `signal`.
    public func signal(_ signal: Int32) {
        if isRunning { kill(processIdentifier, signal) }
    }

    /// Waits until the child has ended.
    public func waitUntilExit() {
        while isRunning { usleep(1_000) }
    }

    /// The exit status (128 + the signal's number when a signal ended it), once it has ended.
    public var terminationStatus: Int32 {
        waitUntilExit()
        return status.withLock { $0 ?? -1 }
    }

    private static func exitStatus(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }
}

/// A child process that could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
