#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHTTPSystem
import COpenSSL

// TLS on a connection: the handshake driven by the loop, reads and writes through OpenSSL.
extension Connection {
    // MARK: - TLS

    /// Drives the handshake one step: refuses input that is not a TLS record, then SSL_accept
    /// until it completes, waiting for whichever direction OpenSSL asks for.
    func continueHandshake() {
        guard let ssl else { return }
        if !sawClientHello {
            var first: UInt8 = 0
            let count = recv(fd, &first, 1, Int32(MSG_PEEK))
            if count == 0 {
                close(reason: .closed)
                return
            }
            if count < 0 {
                if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { close(reason: .peerGone) }
                return
            }
            guard first == 0x16 else {
                // Plain HTTP (or anything else) on the TLS port: answer nothing, send FIN and drain.
                loop.count { $0.protocolErrors += 1 }
                handshaking = false
                SSL_free(ssl)
                self.ssl = nil
                readEOF = false
                beginLingeringClose()
                return
            }
            sawClientHello = true
        }
        ERR_clear_error()
        let result = SSL_accept(ssl)
        if result == 1 {
            handshaking = false
            idleSince = loop.now
            // The first request may already sit in OpenSSL's buffer or the socket.
            readTLS(ssl)
            guard phase != .closed else { return }
            process()
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            setHandshakeInterest(.readable)
        case SSL_ERROR_WANT_WRITE:
            setHandshakeInterest(.writable)
        default:
            ERR_clear_error()
            close(reason: .peerGone)
        }
    }

    func setHandshakeInterest(_ wanted: IOEvents) {
        if wanted != interest {
            interest = wanted
            loop.setInterest(fd: fd, token: token, events: wanted)
        }
    }

    /// Reads decrypted bytes into the parser: about one read buffer's worth, then whatever
    /// OpenSSL still holds, since no readiness event announces data already taken off the socket.
    func readTLS(_ ssl: OpaquePointer) {
        let buffer = loop.readBuffer
        var total = 0
        while total < buffer.count || SSL_has_pending(ssl) == 1 {
            ERR_clear_error()
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                parser.append(UnsafeRawBufferPointer(start: buffer.baseAddress, count: Int(count)))
                if requestStarted == 0 { requestStarted = loop.now }
                total += Int(count)
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                readEOF = true
                return
            case SSL_ERROR_SYSCALL where errno == EINTR:
                continue
            default:
                ERR_clear_error()
                close(reason: .peerGone)
                return
            }
        }
    }

    /// Writes queued output through SSL_write. Returns false if the connection was closed.
    func flushTLS(_ ssl: OpaquePointer) -> Bool {
        guard let scratch = loop.tlsWriteBuffer else { return true }
        while outbound.bytes > 0 {
            ERR_clear_error()
            let written = outbound.send(ssl, scratch: scratch)
            if written > 0 {
                bytesSent += Int(written)
                lastWriteProgress = loop.now
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ:
                return true
            case SSL_ERROR_SYSCALL where errno == EINTR:
                continue
            case SSL_ERROR_SYSCALL:
                let code = errno
                ERR_clear_error()
                failSend(errno: code)
                return false
            default:
                ERR_clear_error()
                close(reason: .writeFailed, detail: "a TLS error")
                return false
            }
        }
        return true
    }
}
