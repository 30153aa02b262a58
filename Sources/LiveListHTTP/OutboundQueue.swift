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
