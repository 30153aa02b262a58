#if canImport(Glibc)
import COpenSSL
import Glibc

/// TLS on the probe's socket, through OpenSSL: a non-blocking handshake driven by `poll` within the
/// probe's deadline, the host as the server name (SNI) when it is a name, and no certificate
/// verification: the probe asks this machine's own node, whose certificate rarely names the address it
/// is reached at (docs/DEPLOYMENT.md, "Operating a node").
final class TLSProbeChannel: ProbeChannel {
    private let fd: Int32
    private let context: OpaquePointer
    private let ssl: OpaquePointer

    /// Connects over `fd` (connected, non-blocking), or throws why not in words.
    init(fd: Int32, serverName: String?, deadline: Deadline) throws {
        // A write to a peer that has gone would raise SIGPIPE inside OpenSSL: the probe reports it instead.
        signal(SIGPIPE, SIG_IGN)
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw ProbeError("cannot create a TLS context: \(Self.errors())")
        }
        guard livelist_ssl_ctx_configure_probe(context) == 1, let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw ProbeError("cannot set up TLS: \(Self.errors())")
        }
        self.fd = fd
        self.context = context
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1, serverName.map({ livelist_ssl_set_server_name(ssl, $0) == 1 }) ?? true else {
            throw ProbeError("cannot set up TLS: \(Self.errors())")
        }
        SSL_set_connect_state(ssl)
        let done = try drive("TLS handshake", deadline: deadline) { SSL_connect(ssl) }
        guard done > 0 else {
            throw ProbeError("the connection closed during the TLS handshake")
        }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    func send(_ bytes: ArraySlice<UInt8>, deadline: Deadline) throws -> Int {
        let count = try bytes.withUnsafeBytes { raw in
            try drive("send", deadline: deadline) { SSL_write(ssl, raw.baseAddress, Int32(clamping: raw.count)) }
        }
        guard count > 0 else { throw ProbeError("send: the connection closed") }
        return Int(count)
    }

    func receive(_ buffer: inout [UInt8], deadline: Deadline) throws -> Int {
        let count = try buffer.withUnsafeMutableBytes { raw in
            try drive("receive", deadline: deadline) { SSL_read(ssl, raw.baseAddress, Int32(clamping: raw.count)) }
        }
        return Int(count)
    }

    /// Calls `operation` (an OpenSSL call on `ssl`) until it succeeds, waiting on the socket for what
    /// it wants; answers its result, or 0 when the peer closed the connection.
    private func drive(_ step: String, deadline: Deadline, _ operation: () -> Int32) throws -> Int32 {
        while true {
            ERR_clear_error()
            let result = operation()
            if result > 0 { return result }
            let reason = SSL_get_error(ssl, result)
            let systemError = errno
            switch reason {
            case SSL_ERROR_WANT_READ:
                try HealthProbe.wait(fd, for: Int16(POLLIN), deadline: deadline, doing: step)
            case SSL_ERROR_WANT_WRITE:
                try HealthProbe.wait(fd, for: Int16(POLLOUT), deadline: deadline, doing: step)
            case SSL_ERROR_ZERO_RETURN:
                return 0
            case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
                if systemError == EINTR { continue }
                // The peer closed the connection without a word (no close_notify).
                if result == 0 || systemError == 0 { return 0 }
                throw ProbeError("\(step): \(String(cString: strerror(systemError)))")
            default:
                let errors = Self.errors()
                // A server in clear text answers the ClientHello with HTTP, which is no TLS record.
                let hint = step == "TLS handshake" ? " (a node that serves plain HTTP fails this: try --no-tls)" : ""
                throw ProbeError("\(step) failed: \(errors)\(hint)")
            }
        }
    }

    /// OpenSSL's queued errors of this thread, joined (and cleared).
    private static func errors() -> String {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "unknown error" : messages.joined(separator: "; ")
    }
}
#endif
