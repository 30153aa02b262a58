import COpenSSL

/// Where the server's certificate and key live. Given to `HTTPServerConfiguration.tls`, it turns
/// every connection into TLS (1.2 or later); both files are read once by `HTTPServer.start()`.
public struct TLSConfiguration: Sendable, Hashable {
    /// PEM file with the server certificate first, then any intermediates.
    public var certificateChainPath: String
    /// PEM file with the unencrypted private key.
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

/// One `SSL_CTX` shared by every loop (OpenSSL makes a context safe to use from many threads
/// once it is set up); each connection gets its own `SSL` from it.
final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    init(_ configuration: TLSConfiguration) throws(HTTPServerError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw .tls("cannot create a TLS context: \(TLSContext.drainErrors())")
        }
        guard livelist_ssl_ctx_configure_server(context) == 1 else {
            SSL_CTX_free(context)
            throw .tls("cannot configure the TLS context: \(TLSContext.drainErrors())")
        }
        guard SSL_CTX_use_certificate_chain_file(context, configuration.certificateChainPath) == 1 else {
            SSL_CTX_free(context)
            throw .tls("cannot load the certificate chain \(configuration.certificateChainPath): \(TLSContext.drainErrors())")
        }
        guard SSL_CTX_use_PrivateKey_file(context, configuration.privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            SSL_CTX_free(context)
            throw .tls("cannot load the private key \(configuration.privateKeyPath): \(TLSContext.drainErrors())")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            SSL_CTX_free(context)
            throw .tls("the private key \(configuration.privateKeyPath) does not match the certificate: \(TLSContext.drainErrors())")
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    /// A new server-side `SSL` on `fd`, or nil if OpenSSL refuses.
    func session(fd: Int32) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        guard SSL_set_fd(ssl, fd) == 1 else {
            SSL_free(ssl)
            return nil
        }
        SSL_set_accept_state(ssl)
        return ssl
    }

    /// OpenSSL's queued error messages of this thread, joined (and cleared).
    static func drainErrors() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "unknown error" : messages.joined(separator: "; ")
    }
}
