/*
 * Page compression codecs over Debian's libraries (snappy, zlib, zstd, lz4,
 * brotli); Snappy blocks are decompressed by our own decoder (snappy.c).  Decompression is exact: the output must have exactly the size
 * the page header announces, anything else is DF_ERR_CODEC.
 */
#ifndef DF_PARQUET_CODEC_H
#define DF_PARQUET_CODEC_H

#include "common/common.h"

/* Reusable per-stream codec state (a zstd context); zero-initialise, free with _clear. */
typedef struct pq_codec_ctx {
    void *zstd_dctx;        /* ZSTD_DCtx *, created on first use */
    void *zstd_cctx;        /* ZSTD_CCtx *, created on first use (writer) */
} pq_codec_ctx;

void df__parquet_codec_clear(pq_codec_ctx *ctx);

/* True when `codec` can be decompressed. */
bool df__parquet_codec_supported(int32_t codec);

/*
 * Decompresses [src, src+srclen) into exactly `dstlen` bytes at dst.
 * LZ4 (the deprecated codec) is tried with Hadoop framing first, then as a
 * raw LZ4 block, then as an LZ4 frame, as other readers do.
 */
df_errkind df__parquet_decompress(pq_codec_ctx *ctx, int32_t codec, const uint8_t *src, size_t srclen, uint8_t *dst,
                                  size_t dstlen, df_error *err);

/* Appends the compressed form of [src, src+len) to `out` (SNAPPY, GZIP, ZSTD, LZ4_RAW, BROTLI). */
df_errkind df__parquet_compress(pq_codec_ctx *ctx, int32_t codec, int level, const uint8_t *src, size_t len,
                                df_buf *out, df_error *err);

/*
 * Raw Snappy block decompression (snappy.c): true when [src, src+srclen)
 * is a valid block that expands to exactly dstlen bytes, written to dst.
 * Never reads or writes outside the two ranges.
 */
bool df__parquet_snappy_decompress(const uint8_t *src, size_t srclen, uint8_t *dst, size_t dstlen);
/* The uncompressed length a Snappy block announces; false when its preamble is malformed. */
bool df__parquet_snappy_length(const uint8_t *src, size_t srclen, uint64_t *out);

/* CRC-32 (the gzip polynomial) of a page's stored bytes. */
uint32_t df__parquet_crc32(const uint8_t *data, size_t len);

#endif
