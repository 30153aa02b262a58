// OpenSSL's headers for LiveList: HMAC for session tokens, and (later) TLS for the server.
#ifndef LIVELIST_COPENSSL_SHIM_H
#define LIVELIST_COPENSSL_SHIM_H
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#endif
