/*
 * libFuzzer target for the Snappy block decoder (src/parquet/snappy.c),
 * checked against the system libsnappy: for any input, both must agree on
 * whether it is a valid block and, when it is, on every output byte.  The
 * output size is the one the block announces, capped so a hostile preamble
 * cannot ask for a huge buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "parquet/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    if (ok != ref) abort();
    if (ok && n && memcmp(a, b, (size_t)n) != 0) abort();
    free(a);
    free(b);
    return 0;
}
