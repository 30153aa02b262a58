#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a child process's pipe with plain `poll` and `read`, retrying reads a signal interrupted.
///
/// Foundation's `FileHandle.availableData` and `readDataToEndOfFile()` stop the whole test process
/// when a read fails with EINTR, and a process that starts and stops many children gets signals (a
/// child's exit) at any moment: seen as rare crashes of the test run while a server was starting.
public enum PipeReading {
    /// What one read gives.
    public enum Chunk: Equatable, Sendable {
        /// Bytes that arrived.
        case bytes([UInt8])
        /// Nothing arrived within the wait.
        case nothing
        /// The writing end is closed and everything was read (or the descriptor failed).
        case end
    }

    /// Up to 64 KiB from `fd`, waiting at most `milliseconds` for them (-1: as long as it takes).
    public static func read(_ fd: Int32, waitingMilliseconds milliseconds: Int32) -> Chunk {
        var watched = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&watched, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { return .end }
            if ready == 0 { return .nothing }
            break
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count > 0 { return .bytes(Array(buffer[0 ..< count])) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .nothing }
            return .end
        }
    }

    /// Everything `fd` gives until its writing end closes.
    public static func readToEnd(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            switch read(fd, waitingMilliseconds: -1) {
            case let .bytes(chunk): bytes += chunk
            case .nothing: continue
            case .end: return bytes
            }
        }
    }
}

private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}
