/* Helpers shared by the Parquet unit tests: a deterministic generator and
 * independent reference encoders (bit packing, DELTA_BINARY_PACKED). */
#ifndef PARQUET_TEST_UTIL_H
#define PARQUET_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "parquet/rle.h"

/* A fresh empty file made from the mkstemp `pattern` (e.g. "/tmp/dfpqXXXXXX"); the path
 * lives until the next call.  Aborts the test process when no file can be made. */
static inline const char *tmp_file_named(const char *pattern) {
    static char path[64];
    snprintf(path, sizeof path, "%s", pattern);
    int fd = mkstemp(path);
    if (fd < 0) abort();
    close(fd);
    return path;
}

/* The parquet-testing corpus of the shared test data, in dir[cap]: false (with a
 * "skipped: ..." line) when DF_SHARED_TESTDATA is unset or the corpus is absent. */
static inline bool shared_parquet_corpus(char *dir, size_t cap) {
    const char *base = getenv("DF_SHARED_TESTDATA");
    if (!base) {
        printf("skipped: DF_SHARED_TESTDATA is not set\n");
        return false;
    }
    snprintf(dir, cap, "%s/parquet-testing", base);
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("skipped: %s is absent\n", dir);
        return false;
    }
    return true;
}

/* A tiny deterministic generator (xorshift). */
static uint64_t rng_state = 88172645463325252ull;
static inline uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Reference LSB-first bit packing, written independently of rle.c. */
static inline void ref_pack(const uint64_t *v, size_t n, int w, uint8_t *out) {
    size_t bit = 0;
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < w; b++, bit++)
            if ((v[i] >> b) & 1) out[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

static inline void put_uvarint(df_buf *b, uint64_t v) {
    while (v >= 0x80) {
        df_buf_append_char(b, (char)(v | 0x80), NULL);
        v >>= 7;
    }
    df_buf_append_char(b, (char)v, NULL);
}

static inline void put_zigzag(df_buf *b, int64_t v) {
    put_uvarint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/*
 * Encodes values with DELTA_BINARY_PACKED (block 128, 4 miniblocks of 32),
 * independently of the decoder; miniblocks after the last value are left
 * out, as the format allows.
 */
static inline void dbp_encode_w(const int64_t *v, size_t n, df_buf *b, bool is32) {
    put_uvarint(b, 128);
    put_uvarint(b, 4);
    put_uvarint(b, n);
    put_zigzag(b, n ? v[0] : 0);
    for (size_t start = 1; start < n; start += 128) {
        uint64_t deltas[128];
        size_t m = DF_MIN((size_t)128, n - start);
        int64_t min = INT64_MAX;
        for (size_t i = 0; i < m; i++) {
            deltas[i] = (uint64_t)v[start + i] - (uint64_t)v[start + i - 1];
            /* INT32 writers wrap at 32 bits, which keeps every width within 32. */
            if (is32) deltas[i] = (uint64_t)(int64_t)(int32_t)(uint32_t)deltas[i];
            if ((int64_t)deltas[i] < min) min = (int64_t)deltas[i];
        }
        put_zigzag(b, min);
        uint8_t widths[4] = {0};
        for (size_t mb = 0; mb < 4; mb++) {
            uint64_t mx = 0;
            for (size_t i = mb * 32; i < DF_MIN(m, mb * 32 + 32); i++) {
                uint64_t rel = deltas[i] - (uint64_t)min;
                if (is32) rel = (uint32_t)rel;
                mx = DF_MAX(mx, rel);
            }
            widths[mb] = (uint8_t)df__parquet_bit_width(mx);
        }
        df_buf_append(b, widths, 4, NULL);
        for (size_t mb = 0; mb < 4 && mb * 32 < m; mb++) {
            uint64_t rel[32] = {0};
            for (size_t i = 0; i < 32 && mb * 32 + i < m; i++) {
                rel[i] = deltas[mb * 32 + i] - (uint64_t)min;
                if (is32) rel[i] = (uint32_t)rel[i];
            }
            uint8_t packed[32 * 8 + 8] = {0};
            ref_pack(rel, 32, widths[mb], packed);
            df_buf_append(b, packed, (size_t)widths[mb] * 4, NULL);
        }
    }
}

static inline void dbp_encode(const int64_t *v, size_t n, df_buf *b) {
    dbp_encode_w(v, n, b, false);
}

static inline void dbp_encode32(const int64_t *v, size_t n, df_buf *b) {
    dbp_encode_w(v, n, b, true);
}

#endif
