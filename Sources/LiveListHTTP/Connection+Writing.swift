#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL

// A connection's writes, its lingering close and the readiness it asks the loop for.
extension Connection {
    // MARK: - Writing

    func flush() {
        // The write timeout runs from the last send that moved output, or from when output was queued
        // after none waited: never from a send long before it.
        if !outputWaiting { lastWriteProgress = loop.now }
        defer { outputWaiting = outbound.bytes > 0 }
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
                failSend(errno: sent < 0 ? errno : 0)
                return
            }
        }
        if let stream { stream.socketQueueChanged(outbound.bytes) }
        if outbound.bytes == 0, closeAfterFlush, phase == .reading {
            beginLingeringClose()
        }
    }

    /// Closes after a send failed with `code`: the peer's reset, a broken pipe or an unreachable
    /// peer is the peer gone; anything else (`ENOBUFS`, `ENOMEM`) is the server's own failure.
    func failSend(errno code: Int32) {
        switch code {
        case 0, ECONNRESET, EPIPE, ENOTCONN, ECONNABORTED, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH:
            close(reason: .peerGone)
        default:
            close(reason: .writeFailed, detail: String(cString: strerror(code)))
        }
    }

    /// Closes after the poller reported an error on the socket: its pending error (`SO_ERROR`) tells
    /// the peer's reset from a failure of the server's own.
    func failSocket() {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) != 0 { code = 0 }
        failSend(errno: code)
    }

    func beginLingeringClose() {
        if readEOF || (isReserve && nothingMoreReceived()) {
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

    /// Whether every byte the peer sent was a request already answered: nothing unparsed, nothing in
    /// the socket's receive queue (nor in TLS's). Closing then sends a FIN after the answer, never a
    /// reset, so a connection of the reserve, whose client was told `Connection: close`, gives its slot
    /// back at once rather than after the lingering close (up to `lingerTimeout`): a crowd of refused
    /// streams that are slow to hang up would otherwise hold the reserve that probes and writes need.
    func nothingMoreReceived() -> Bool {
        // Never makes the request state: without it, nothing was received to parse.
        if let requestStorage, !requestStorage.pointee.parser.isIdle { return false }
        if let ssl, SSL_pending(ssl) > 0 { return false }
        var byte: UInt8 = 0
        let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK))
        return peeked == 0 || (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }

    func drainLingering() {
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

    func updateInterest() {
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
}
