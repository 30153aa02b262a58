// zlib for LiveList's gzip responses.
#ifndef LIVELIST_CZLIB_SHIM_H
#define LIVELIST_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 and inflateInit2 are macros; these wrappers make them callable from Swift.
static inline int livelist_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

static inline int livelist_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}
#endif
