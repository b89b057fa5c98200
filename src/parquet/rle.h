/*
 * Bit unpacking and the RLE / bit-packed hybrid encoding (definition and
 * repetition levels, dictionary indices, RLE booleans).
 *
 * Hybrid runs: a ULEB128 header h; h & 1 = 1 starts a bit-packed run of
 * (h >> 1) groups of 8 values, each group `width` bytes, values packed
 * LSB-first; h & 1 = 0 starts a run of (h >> 1) copies of one value stored
 * in ceil(width / 8) little-endian bytes.  A bit-packed run cut short by the
 * end of the data yields the values that are complete.
 */
#ifndef DF_PARQUET_RLE_H
#define DF_PARQUET_RLE_H

#include "common/common.h"

/*
 * Unpacks `count` values of `width` bits (0..32, or 0..64 for the 64-bit
 * variant) stored LSB-first starting at bit 0 of `in`.  Reads at most
 * ceil(count * width / 8) bytes; `in_len` bytes are readable, which must be
 * at least that many.
 */
void df__parquet_unpack32(const uint8_t *in, size_t in_len, int width, uint32_t *out, size_t count);
void df__parquet_unpack64(const uint8_t *in, size_t in_len, int width, uint64_t *out, size_t count);

/* Number of bits needed for values 0..max. */
static inline int df__parquet_bit_width(uint64_t max) {
    return max == 0 ? 0 : 64 - __builtin_clzll(max);
}

typedef struct pq_rle {
    const uint8_t *p;       /* next run header */
    const uint8_t *end;     /* end of the encoded data */
    int width;              /* bits per value, 0..32 */
    bool failed;            /* a malformed run header was met */
    uint32_t rle_left;      /* values left in the current repeated run */
    uint32_t rle_value;     /* its value */
    uint32_t lit_left;      /* values left in the current bit-packed run (data present) */
    const uint8_t *lit;     /* next unread group of the bit-packed run */
    uint32_t group[8];      /* a partly consumed group */
    int group_pos;          /* next value in `group` (8 = empty) */
} pq_rle;

void df__parquet_rle_init(pq_rle *r, const uint8_t *data, size_t len, int width);
/*
 * Decodes up to `n` values; returns how many were decoded (fewer only at the
 * end of the data or on a malformed header, then r->failed says which).
 */
size_t df__parquet_rle_get_u32(pq_rle *r, uint32_t *out, size_t n);
size_t df__parquet_rle_get_i16(pq_rle *r, int16_t *out, size_t n);
/*
 * Width-1 streams (definition levels of flat optional columns, RLE
 * booleans): decodes up to n values as bits into `bits` starting at bit
 * `offset`; returns how many were decoded.
 */
size_t df__parquet_rle_get_bits(pq_rle *r, uint8_t *bits, int64_t offset, size_t n);
/* Skips up to n values; returns how many were skipped. */
size_t df__parquet_rle_skip(pq_rle *r, size_t n);

/*
 * Decodes values [start, start + n) of the deprecated BIT_PACKED level
 * encoding (MSB-first, no header); the data must hold
 * ceil((start + n) * width / 8) bytes.
 */
void df__parquet_bitpacked_msb_levels(const uint8_t *data, int width, size_t start, int16_t *out, size_t n);

/* Copies n bits from src (at bit soff) to dst (at bit doff); ranges must not overlap. */
void df__parquet_copy_bits(uint8_t *dst, int64_t doff, const uint8_t *src, int64_t soff, int64_t n);

/* Appends the hybrid encoding of `n` values of `width` bits to `out` (writer). */
df_errkind df__parquet_rle_encode(const uint32_t *values, size_t n, int width, df_buf *out, df_error *err);

#endif
