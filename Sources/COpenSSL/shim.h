// OpenSSL's headers for LiveList: HMAC for session tokens, TLS for the server and for its health probe.
#ifndef LIVELIST_COPENSSL_SHIM_H
#define LIVELIST_COPENSSL_SHIM_H
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/err.h>

/// Applies LiveList's server settings to a TLS context: TLS 1.2 at least, partial writes that
/// may be retried from a moved buffer, buffers released while idle, no renegotiation, and an
/// EOF without close_notify read as a plain end of input. Returns 1 on success.
static inline int livelist_ssl_ctx_configure_server(SSL_CTX *ctx) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return 0;
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                              | SSL_MODE_RELEASE_BUFFERS);
    uint64_t options = SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION;
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    options |= SSL_OP_IGNORE_UNEXPECTED_EOF;
#endif
    SSL_CTX_set_options(ctx, options);
    return 1;
}

/// Applies the settings of `livelist healthcheck`'s client context: TLS 1.2 at least, no certificate
/// verification (it probes this machine's own node, whose certificate rarely names the address it is
/// reached at), and an EOF without close_notify read as a plain end of input. Returns 1 on success.
static inline int livelist_ssl_ctx_configure_probe(SSL_CTX *ctx) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return 0;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    return 1;
}

/// Names the server a client connection asks for (SNI). Returns 1 on success.
static inline int livelist_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

#endif
