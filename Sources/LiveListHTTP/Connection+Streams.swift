#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL

// A connection that holds an event stream: flushing what its stream wrote, and ending it.
extension Connection {
    // MARK: - Streams

    func flushStream() {
        guard phase == .streaming, let stream else { return }
        let buffers = stream.takePending()
        if !buffers.isEmpty {
            for buffer in buffers { outbound.append(buffer) }
            lastStreamWrite = loop.now
        }
        flush()
        updateInterest()
    }

    /// Tells the configuration's `streamEnded` of the stream's end: since its head (`idleSince` is
    /// set when a response goes out, and a stream leaves it there), with the connection's bytes.
    func reportStreamEnd(_ reason: HTTPStreamCloseReason) {
        guard let ended = configuration.streamEnded else { return }
        ended(HTTPStreamEnd(connectionID: token, remoteAddress: remoteAddress, duration: .nanoseconds(Int64(clamping: loop.now &- idleSince)),
                            bytes: bytesSent, reason: reason))
    }

    func endStream(_ reason: HTTPStreamCloseReason) {
        guard phase == .streaming, let stream else { return }
        let reported = stream.markEnding(reason)
        switch reported {
        case .closed, .serverShutdown, .backlogExceeded:
            // A slow reader past its budget is cut here too, after the whole events already queued,
            // so that it can resume from the last one it got (Last-Event-ID).
            for buffer in stream.takePending() { outbound.append(buffer) }
            if stream.chunked { outbound.append(ResponseEncoder.lastChunk) }
            self.stream = nil
            loop.count {
                $0.streamsOpen -= 1
                if reported == .backlogExceeded { $0.streamsOverflowed += 1 }
            }
            phase = .reading
            if !streamKeepAlive || reported != .closed { closeAfterFlush = true }
            reportStreamEnd(reported)
            idleSince = loop.now
            stream.finish(reported)
            process()
        case let other:
            close(reason: other)
        }
    }
}
