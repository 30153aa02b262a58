#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL

/// Output waiting for the socket: whole buffers, the first one partly sent.
///
/// One buffer waiting, the common case of a stream's event, is held without an array; several are
/// held in one, which is let go once they are sent. An idle connection's queue holds nothing.
struct OutboundQueue {
    private enum Buffers {
        case none
        case one([UInt8])
        case many([[UInt8]])
    }

    private var buffers = Buffers.none
    /// In `many`, the first buffer not yet wholly sent.
    private var first = 0
    /// How much of the first buffer not wholly sent was sent.
    private var offset = 0
    private(set) var bytes = 0

    /// How many buffers are held, sent ones included (`first` of them, in `many`).
    private var count: Int {
        switch buffers {
        case .none: 0
        case .one: 1
        case let .many(list): list.count
        }
    }

    private func buffer(_ index: Int) -> [UInt8] {
        switch buffers {
        case .none: preconditionFailure("no buffer is waiting")
        case let .one(buffer): buffer
        case let .many(list): list[index]
        }
    }

    mutating func append(_ chunk: [UInt8]) {
        guard !chunk.isEmpty else { return }
        switch buffers {
        case .none:
            buffers = .one(chunk)
        case let .one(waiting):
            buffers = .many([waiting, chunk])
        case var .many(list):
            buffers = .none // so that `list` is the array's only reference and grows in place
            list.append(chunk)
            buffers = .many(list)
        }
        bytes += chunk.count
    }

    /// One sendmsg of up to `maxIovecs` buffers. Returns bytes sent, or -1 with errno.
    mutating func send(_ fd: Int32, iovecs: UnsafeMutablePointer<iovec>, maxIovecs: Int) -> Int {
        let taken = min(count - first, maxIovecs)
        let sent = gather(fd, index: first, filled: 0, count: taken, iovecs: iovecs)
        if sent > 0 { consume(sent) }
        return sent
    }

    private func gather(_ fd: Int32, index: Int, filled: Int, count: Int, iovecs: UnsafeMutablePointer<iovec>) -> Int {
        if filled == count { return cs_sendv(fd, UnsafeRawPointer(iovecs), Int32(count)) }
        let skip = index == first ? offset : 0
        return buffer(index).withUnsafeBytes { buffer in
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
        let head = buffer(first).count - offset
        let written: Int32
        if head >= scratch.count || first + 1 == count {
            written = buffer(first).withUnsafeBytes { buffer in
                SSL_write(ssl, buffer.baseAddress! + offset, Int32(clamping: head))
            }
        } else {
            var filled = 0
            var index = first
            while index < count, filled < scratch.count {
                let skip = index == first ? offset : 0
                let take = min(buffer(index).count - skip, scratch.count - filled)
                buffer(index).withUnsafeBytes { buffer in
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
            let available = buffer(first).count - offset
            if rest >= available {
                rest -= available
                first += 1
                offset = 0
            } else {
                offset += rest
                rest = 0
            }
        }
        if first == count {
            buffers = .none
            first = 0
        } else if first > 32, case var .many(list) = buffers {
            buffers = .none
            list.removeFirst(first)
            buffers = .many(list)
            first = 0
        }
    }
}
