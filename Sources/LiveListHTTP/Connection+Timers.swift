#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL

// A connection's timers (header, body, idle, write progress, lingering close) and its graceful end.
extension Connection {
    // MARK: - Timers

    /// Called by the loop's periodic scan.
    func checkTimers(now: UInt64) {
        switch phase {
        case .closed, .handling:
            return
        case .lingering:
            if now >= requestState.pointee.lingerDeadline { close(reason: .closed) }
            return
        case .streaming:
            if outbound.bytes > 0, now - lastWriteProgress > configuration.writeTimeout.nanoseconds {
                close(reason: .writeTimeout)
                return
            }
            if streamHeartbeat > 0, now - lastStreamWrite >= streamHeartbeat, outbound.bytes == 0, let stream {
                lastStreamWrite = now
                stream.write(stream.heartbeatBytes)
            }
            return
        case .reading:
            break
        }
        if outbound.bytes > 0 {
            if now - lastWriteProgress > configuration.writeTimeout.nanoseconds { close(reason: .writeTimeout) }
            return
        }
        if parser.isIdle {
            let limit = hasServed ? configuration.idleTimeout : configuration.headerTimeout
            if now - idleSince > limit.nanoseconds { close(reason: .closed) }
        } else if parser.isReadingBody {
            let bodyStarted = requestState.pointee.bodyStarted
            if bodyStarted > 0, now - bodyStarted > configuration.bodyTimeout.nanoseconds { timedOut("body") }
        } else if requestStarted > 0, now - requestStarted > configuration.headerTimeout.nanoseconds {
            timedOut("request head")
        }
    }

    func timedOut(_ what: String) {
        loop.count { $0.protocolErrors += 1 }
        currentIsHead = false
        currentKeepAlive = false
        readEOF = false
        phase = .reading
        send(presented(HTTPResponse.error(
            HTTPError(.requestTimeout, code: "request_timeout", detail: "the \(what) did not arrive in time"),
            formatter: configuration.errorFormatter)))
        closeAfterFlush = true
        flush()
        updateInterest()
    }

    // MARK: - Shutdown

    /// Starts a graceful close: idle connections close now, streams end, others after their response.
    func beginDraining() {
        switch phase {
        case .reading:
            if parser.isIdle && outbound.bytes == 0 {
                close(reason: .serverShutdown)
            } else {
                currentKeepAlive = false
            }
        case .streaming:
            endStream(.serverShutdown)
        case .handling, .lingering, .closed:
            break
        }
    }

    /// Closes the connection; a stream it holds ends for `reason` (`detail`: what failed, for the
    /// notice of a failed send).
    func close(reason: HTTPStreamCloseReason, detail: String? = nil) {
        guard phase != .closed else { return }
        phase = .closed
        if reason == .writeTimeout || reason == .backlogExceeded {
            // Abortive close (RST): the kernel drops what is still queued for this stalled peer
            // instead of keeping it in an orphaned socket.
            var option = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        if let ssl {
            SSL_free(ssl)
            self.ssl = nil
        }
        systemClose(fd)
        releaseBody()
        loop.connectionClosed(self)
        if let stream {
            self.stream = nil
            let reported = stream.markEnding(reason)
            streamClosed(reported, detail: reported == reason ? detail : nil)
            stream.finish(reported)
        }
    }
}
