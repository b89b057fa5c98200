/*
 * libFuzzer target for the Snappy block decoder (src/parquet/snappy.c),
 * checked against the system libsnappy: for any input, both must agree on
 * whether it is a valid block and, when it is, on every output byte.  The
 * output size is the one the block announces, capped so a hostile preamble
 * cannot ask for a huge buffer.
 *
 * One known divergence is allowed: libsnappy adds 1 to a literal's 4-byte
 * length in 32 bits, so a length field of 0xFFFFFFFF wraps to an empty
 * literal that it accepts.  The format means a literal of 2^32 bytes, which
 * no block holds; our decoder refuses it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "parquet/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* True when the tag stream holds a literal whose 4-byte length field is 0xFFFFFFFF. */
static bool has_wrapping_literal(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n && (p[i] & 0x80)) i++; /* the length preamble (varint) */
    i++;
    while (i < n) {
        uint8_t tag = p[i++];
        switch (tag & 3) {
        case 0: {
            uint64_t len = (uint64_t)(tag >> 2) + 1;
            if (len > 60) {
                size_t w = len - 60;
                if (n - i < w) return false;
                uint64_t v = 0;
                for (size_t b = 0; b < w; b++) v |= (uint64_t)p[i + b] << (8 * b);
                if (w == 4 && v == 0xFFFFFFFFu) return true;
                i += w;
                len = v + 1;
            }
            if (n - i < len) return false;
            i += (size_t)len;
            break;
        }
        case 1: i += 1; break;
        case 2: i += 2; break;
        default: i += 4; break;
        }
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t n;
    bool ours_len = df__parquet_snappy_length(data, size, &n);
    size_t theirs_n;
    bool theirs_len = snappy_uncompressed_length((const char *)data, size, &theirs_n) == SNAPPY_OK;
    if (!ours_len || n > (1u << 20)) return 0;
    if (!theirs_len || theirs_n != n) abort();
    uint8_t *a = malloc(n ? n : 1), *b = malloc(n ? n : 1);
    if (!a || !b) abort();
    bool ok = df__parquet_snappy_decompress(data, size, a, (size_t)n);
    size_t got = (size_t)n;
    bool ref = snappy_uncompress((const char *)data, size, (char *)b, &got) == SNAPPY_OK && got == n;
    if (ok != ref && !(ref && !ok && has_wrapping_literal(data, size))) abort();
    if (ok && n && memcmp(a, b, (size_t)n) != 0) abort();
    free(a);
    free(b);
    return 0;
}
