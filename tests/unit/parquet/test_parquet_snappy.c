/* The Snappy block decoder against blocks made by the system libsnappy, and on hostile blocks. */
#include <snappy-c.h>

#include "df_test.h"
#include "parquet/codec.h"
#include "parquet_test_util.h"

/* Compresses src with libsnappy, decodes it with ours into a buffer of exactly n bytes and compares. */
static bool roundtrip(const uint8_t *src, size_t n) {
    size_t clen = snappy_max_compressed_length(n);
    char *c = malloc(clen ? clen : 1);
    uint8_t *out = malloc(n ? n : 1);
    bool ok = c && out && snappy_compress((const char *)src, n, c, &clen) == SNAPPY_OK &&
              df__parquet_snappy_decompress((const uint8_t *)c, clen, out, n) && (n == 0 || memcmp(out, src, n) == 0);
    free(c);
    free(out);
    return ok;
}

DF_TEST(snappy_roundtrips_every_shape) {
    enum { MAX = 200000 };
    uint8_t *buf = calloc(MAX, 1);
    DF_ASSERT(buf != NULL);
    for (size_t n = 0; n < MAX; n = n < 300 ? n + 1 : n * 3 + 7) {
        /* Random bytes: long literals. */
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rnd();
        DF_ASSERT(roundtrip(buf, n));
        /* Small integers: short literals and short matches (offsets 1..16). */
        for (size_t i = 0; i < n; i++) buf[i] = (i % 8) < 3 ? (uint8_t)rnd() : 0;
        DF_ASSERT(roundtrip(buf, n));
        /* Short repeating patterns of every period up to 20: overlapping copies. */
        size_t period = 1 + n % 20;
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(i < period ? rnd() : buf[i - period]);
        DF_ASSERT(roundtrip(buf, n));
        /* Words from a small vocabulary: copies with 1- and 2-byte offsets. */
        static const char *words[] = {"alpha ", "kilo ", "papa ", "sierra golf ", "x"};
        for (size_t i = 0; i < n;) {
            const char *w = words[rnd() % 5];
            for (size_t j = 0; w[j] && i < n; j++) buf[i++] = (uint8_t)w[j];
        }
        DF_ASSERT(roundtrip(buf, n));
    }
    free(buf);
}

DF_TEST(snappy_rejects_hostile_blocks) {
    uint8_t out[64];
    uint64_t n;
    /* Preamble: missing, unterminated, above 32 bits. */
    DF_ASSERT(!df__parquet_snappy_length((const uint8_t *)"", 0, &n));
    static const uint8_t endless[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    DF_ASSERT(!df__parquet_snappy_length(endless, sizeof endless, &n));
    static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x7f};
    DF_ASSERT(!df__parquet_snappy_length(huge, sizeof huge, &n));
    /* Announced size differs from the buffer. */
    static const uint8_t four[] = {4, 3 << 2, 'a', 'b', 'c', 'd'};
    DF_ASSERT(df__parquet_snappy_decompress(four, sizeof four, out, 4));
    DF_ASSERT(memcmp(out, "abcd", 4) == 0);
    DF_ASSERT(!df__parquet_snappy_decompress(four, sizeof four, out, 5));
    /* Literal longer than the input left, longer than the output left. */
    static const uint8_t cut[] = {4, 3 << 2, 'a', 'b'};
    DF_ASSERT(!df__parquet_snappy_decompress(cut, sizeof cut, out, 4));
    static const uint8_t over[] = {2, 3 << 2, 'a', 'b', 'c', 'd'};
    DF_ASSERT(!df__parquet_snappy_decompress(over, sizeof over, out, 2));
    /* Copy reaching before the start, copy with offset 0, copy past the end. */
    static const uint8_t before[] = {6, 1 << 2, 'a', 'b', 0x01, 0x03};
    DF_ASSERT(!df__parquet_snappy_decompress(before, sizeof before, out, 6));
    static const uint8_t zero[] = {6, 1 << 2, 'a', 'b', 0x01, 0x00};
    DF_ASSERT(!df__parquet_snappy_decompress(zero, sizeof zero, out, 6));
    static const uint8_t past[] = {6, 1 << 2, 'a', 'b', 0x01 | (7 << 2), 0x02};
    DF_ASSERT(!df__parquet_snappy_decompress(past, sizeof past, out, 6));
    /* A valid overlapping copy: "ab" then 4 bytes from offset 2 -> "ababab". */
    static const uint8_t ok[] = {6, 1 << 2, 'a', 'b', 0x01, 0x02};
    DF_ASSERT(df__parquet_snappy_decompress(ok, sizeof ok, out, 6));
    DF_ASSERT(memcmp(out, "ababab", 6) == 0);
    /* Truncated copy operands and literal length bytes. */
    static const uint8_t op2[] = {6, 1 << 2, 'a', 'b', 0x02, 0x02};
    DF_ASSERT(!df__parquet_snappy_decompress(op2, sizeof op2, out, 6));
    static const uint8_t op4[] = {6, 1 << 2, 'a', 'b', 0x03, 0x02, 0x00, 0x00};
    DF_ASSERT(!df__parquet_snappy_decompress(op4, sizeof op4, out, 6));
    static const uint8_t litlen[] = {6, 62 << 2, 0x01};
    DF_ASSERT(!df__parquet_snappy_decompress(litlen, sizeof litlen, out, 6));
    /* Input left over after the output is complete. */
    static const uint8_t extra[] = {2, 1 << 2, 'a', 'b', 0x00};
    DF_ASSERT(!df__parquet_snappy_decompress(extra, sizeof extra, out, 2));
}
