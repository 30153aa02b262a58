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

    /// Counts a stream's end by its reason and reports it; an end that the server caused (a reader
    /// cut for its backlog or the budget, a write timeout, a failed send) is also said in the
    /// server's notices, at most once a minute per reason with the count of those not said.
    func streamClosed(_ reason: HTTPStreamCloseReason, detail: String? = nil) {
        loop.count {
            $0.streamsOpen -= 1
            $0.streamsClosed[reason, default: 0] += 1
            if reason == .backlogExceeded { $0.streamsOverflowed += 1 }
        }
        if reason.isServerFault {
            loop.server.notice("stream-closed-\(reason.name)", Self.closeNotice(reason, configuration: configuration, detail: detail))
        }
        reportStreamEnd(reason)
    }

    /// The notice of a stream that the server closed for `reason`.
    static func closeNotice(_ reason: HTTPStreamCloseReason, configuration: HTTPServerConfiguration, detail: String?) -> String {
        let what: String
        switch reason {
        case .backlogExceeded:
            what = "its reader fell behind: more than the stream backlog limit (\(configuration.streamBacklogLimit) bytes) was queued for it, "
                + "or the node's stream output budget (\(configuration.streamOutputBudget) bytes) was spent"
        case .writeTimeout:
            what = "its reader took nothing for the write timeout (\(configuration.writeTimeout))"
        case .writeFailed:
            what = "sending to it failed (\(detail ?? "an error"))"
        case .closed, .peerGone, .serverShutdown:
            what = "\(reason)"
        }
        return "closed an event stream because \(what); counted in livelist_streams_closed_total{reason=\"\(reason.name)\"}"
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
            phase = .reading
            if !streamKeepAlive || reported != .closed { closeAfterFlush = true }
            streamClosed(reported)
            idleSince = loop.now
            stream.finish(reported)
            process()
        case let other:
            close(reason: other)
        }
    }
}
