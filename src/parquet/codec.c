/*
 * Page codecs.  Each decompressor is given the exact output size from the
 * page header and fails unless it produces exactly that many bytes, so a
 * corrupt page can neither overflow nor leave uninitialised bytes behind.
 *
 * The library contexts (zstd) are allocated by the libraries themselves;
 * zlib and brotli go through df_malloc.
 */
#include "parquet/codec.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "parquet/metadata.h"

void df__parquet_codec_clear(pq_codec_ctx *ctx) {
    if (ctx->zstd_dctx) ZSTD_freeDCtx(ctx->zstd_dctx);
    if (ctx->zstd_cctx) ZSTD_freeCCtx(ctx->zstd_cctx);
    ctx->zstd_dctx = ctx->zstd_cctx = NULL;
}

bool df__parquet_codec_supported(int32_t codec) {
    switch (codec) {
    case DF_PARQUET_UNCOMPRESSED:
    case DF_PARQUET_SNAPPY:
    case DF_PARQUET_GZIP:
    case DF_PARQUET_BROTLI:
    case DF_PARQUET_LZ4:
    case DF_PARQUET_ZSTD:
    case DF_PARQUET_LZ4_RAW: return true;
    default: return false;
    }
}

static df_errkind codec_fail(df_error *err, int32_t codec, const char *what, size_t got, size_t want) {
    return df_error_set(err, DF_ERR_CODEC, "%s decompression failed: %s (got %zu bytes, expected %zu)",
                        df__parquet_codec_name(codec), what, got, want);
}

static void *z_alloc(void *opaque, uInt items, uInt size) {
    (void)opaque;
    return df_calloc(items, size);
}

static void z_free(void *opaque, void *p) {
    (void)opaque;
    df_free(p);
}

/* Inflates gzip or zlib data (possibly several concatenated gzip members). */
static df_errkind gunzip(const uint8_t *src, size_t srclen, uint8_t *dst, size_t dstlen, df_error *err) {
    if (srclen > UINT32_MAX || dstlen > UINT32_MAX) return codec_fail(err, DF_PARQUET_GZIP, "page too large", 0, dstlen);
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    if (inflateInit2(&z, 15 + 32) != Z_OK) return df_error_set(err, DF_ERR_OUT_OF_MEMORY, "cannot start inflate");
    /* An empty page still holds a gzip stream: give inflate a byte to write into so it can
     * reach the stream's end (and a byte written there means the page was not empty). */
    uint8_t spare;
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)srclen;
    z.next_out = dstlen ? dst : &spare;
    z.avail_out = dstlen ? (uInt)dstlen : 1;
    df_errkind k = DF_OK;
    for (;;) {
        /* Both buffers are whole, so Z_OK always means progress; no progress ends in an error code. */
        int rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_OK) continue;
        if (rc == Z_STREAM_END) {
            while (z.avail_in > 0 && *z.next_in == 0) {   /* padding between or after members */
                z.next_in++;
                z.avail_in--;
            }
            if (z.avail_in == 0) break;
            if (inflateReset(&z) == Z_OK) continue;
        }
        k = codec_fail(err, DF_PARQUET_GZIP, rc == Z_BUF_ERROR ? "data ends early or is too long"
                                                               : (z.msg ? z.msg : "corrupt data"),
                       dstlen - z.avail_out, dstlen);
        break;
    }
    if (k == DF_OK && z.avail_out != (dstlen ? 0u : 1u))
        k = codec_fail(err, DF_PARQUET_GZIP, "output size differs", dstlen - z.avail_out, dstlen);
    inflateEnd(&z);
    return k;
}

static uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Hadoop's LZ4 framing: repeated [BE u32 raw size][BE u32 compressed size][LZ4 block]. */
static bool lz4_hadoop(const uint8_t *src, size_t srclen, uint8_t *dst, size_t dstlen) {
    size_t in = 0, out = 0;
    while (in < srclen) {
        if (srclen - in < 8) return false;
        uint32_t raw = load_be32(src + in), comp = load_be32(src + in + 4);
        in += 8;
        if (comp > srclen - in || raw > dstlen - out || comp > INT32_MAX || raw > INT32_MAX) return false;
        int n = LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)comp, (int)raw);
        if (n < 0 || (uint32_t)n != raw) return false;
        in += comp;
        out += raw;
    }
    return out == dstlen;
}

static bool lz4_frame(const uint8_t *src, size_t srclen, uint8_t *dst, size_t dstlen) {
    LZ4F_dctx *dctx;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) return false;
    size_t in = 0, out = 0;
    bool ok = false;
    for (;;) {
        size_t in_n = srclen - in, out_n = dstlen - out;
        size_t rc = LZ4F_decompress(dctx, dst + out, &out_n, src + in, &in_n, NULL);
        if (LZ4F_isError(rc)) break;
        in += in_n;
        out += out_n;
        if (rc == 0) {
            ok = in == srclen && out == dstlen;
            break;
        }
        if (in_n == 0 && out_n == 0) break;   /* no progress: truncated */
    }
    LZ4F_freeDecompressionContext(dctx);
    return ok;
}

static df_errkind lz4_legacy(const uint8_t *src, size_t srclen, uint8_t *dst, size_t dstlen, df_error *err) {
    if (lz4_hadoop(src, srclen, dst, dstlen)) return DF_OK;
    if (srclen <= INT32_MAX && dstlen <= INT32_MAX) {
        int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)srclen, (int)dstlen);
        if (n >= 0 && (size_t)n == dstlen) return DF_OK;
    }
    if (lz4_frame(src, srclen, dst, dstlen)) return DF_OK;
    return codec_fail(err, DF_PARQUET_LZ4, "data is neither Hadoop-framed LZ4, an LZ4 block nor an LZ4 frame", 0,
                      dstlen);
}

df_errkind df__parquet_decompress(pq_codec_ctx *ctx, int32_t codec, const uint8_t *src, size_t srclen, uint8_t *dst,
                                  size_t dstlen, df_error *err) {
    switch (codec) {
    case DF_PARQUET_UNCOMPRESSED:
        if (srclen != dstlen) return codec_fail(err, codec, "sizes differ", srclen, dstlen);
        if (dstlen) memcpy(dst, src, dstlen);
        return DF_OK;
    case DF_PARQUET_SNAPPY: {
        uint64_t n;
        if (!df__parquet_snappy_length(src, srclen, &n)) return codec_fail(err, codec, "corrupt header", 0, dstlen);
        if (n != dstlen) return codec_fail(err, codec, "size mismatch", (size_t)n, dstlen);
        if (!df__parquet_snappy_decompress(src, srclen, dst, dstlen))
            return codec_fail(err, codec, "corrupt data", 0, dstlen);
        return DF_OK;
    }
    case DF_PARQUET_GZIP: return gunzip(src, srclen, dst, dstlen, err);
    case DF_PARQUET_ZSTD: {
        if (!ctx->zstd_dctx && !(ctx->zstd_dctx = ZSTD_createDCtx()))
            return df_error_set(err, DF_ERR_OUT_OF_MEMORY, "cannot create a zstd context");
        size_t n = ZSTD_decompressDCtx(ctx->zstd_dctx, dst, dstlen, src, srclen);
        if (ZSTD_isError(n)) return codec_fail(err, codec, ZSTD_getErrorName(n), 0, dstlen);
        if (n != dstlen) return codec_fail(err, codec, "size mismatch", n, dstlen);
        return DF_OK;
    }
    case DF_PARQUET_BROTLI: {
        size_t n = dstlen;
        BrotliDecoderResult r = BrotliDecoderDecompress(srclen, src, &n, dst);
        if (r != BROTLI_DECODER_RESULT_SUCCESS) return codec_fail(err, codec, "corrupt data or size mismatch", n, dstlen);
        if (n != dstlen) return codec_fail(err, codec, "size mismatch", n, dstlen);
        return DF_OK;
    }
    case DF_PARQUET_LZ4_RAW: {
        if (srclen > INT32_MAX || dstlen > INT32_MAX) return codec_fail(err, codec, "page too large", 0, dstlen);
        int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)srclen, (int)dstlen);
        if (n < 0) return codec_fail(err, codec, "corrupt data", 0, dstlen);
        if ((size_t)n != dstlen) return codec_fail(err, codec, "size mismatch", (size_t)n, dstlen);
        return DF_OK;
    }
    case DF_PARQUET_LZ4: return lz4_legacy(src, srclen, dst, dstlen, err);
    default:
        return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "Parquet compression codec %s is not supported",
                            df__parquet_codec_name(codec));
    }
}

df_errkind df__parquet_compress(pq_codec_ctx *ctx, int32_t codec, int level, const uint8_t *src, size_t len,
                                df_buf *out, df_error *err) {
    size_t bound;
    switch (codec) {
    case DF_PARQUET_UNCOMPRESSED: return df_buf_append(out, src, len, err);
    case DF_PARQUET_SNAPPY: bound = snappy_max_compressed_length(len); break;
    case DF_PARQUET_GZIP: bound = compressBound((uLong)len) + 32; break;
    case DF_PARQUET_ZSTD: bound = ZSTD_compressBound(len); break;
    case DF_PARQUET_LZ4_RAW:
        if (len > LZ4_MAX_INPUT_SIZE) return df_error_set(err, DF_ERR_CODEC, "page too large for LZ4");
        bound = (size_t)LZ4_compressBound((int)len);
        break;
    case DF_PARQUET_BROTLI: bound = BrotliEncoderMaxCompressedSize(len); break;
    default:
        return df_error_set(err, DF_ERR_UNSUPPORTED, "writing Parquet codec %s is not supported",
                            df__parquet_codec_name(codec));
    }
    DF_TRY(df_buf_reserve(out, bound, err));
    uint8_t *dst = (uint8_t *)out->data + out->len;
    size_t n = bound;
    switch (codec) {
    case DF_PARQUET_SNAPPY:
        if (snappy_compress((const char *)src, len, (char *)dst, &n) != SNAPPY_OK)
            return df_error_set(err, DF_ERR_CODEC, "snappy compression failed");
        break;
    case DF_PARQUET_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        z.zalloc = z_alloc;
        z.zfree = z_free;
        if (deflateInit2(&z, level > 0 && level <= 9 ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return df_error_set(err, DF_ERR_OUT_OF_MEMORY, "cannot start deflate");
        z.next_in = (Bytef *)src;
        z.avail_in = (uInt)len;
        z.next_out = dst;
        z.avail_out = (uInt)bound;
        int rc = deflate(&z, Z_FINISH);
        n = bound - z.avail_out;
        deflateEnd(&z);
        if (rc != Z_STREAM_END) return df_error_set(err, DF_ERR_CODEC, "gzip compression failed");
        break;
    }
    case DF_PARQUET_ZSTD:
        if (!ctx->zstd_cctx && !(ctx->zstd_cctx = ZSTD_createCCtx()))
            return df_error_set(err, DF_ERR_OUT_OF_MEMORY, "cannot create a zstd context");
        n = ZSTD_compressCCtx(ctx->zstd_cctx, dst, bound, src, len, level ? level : 3);
        if (ZSTD_isError(n)) return df_error_set(err, DF_ERR_CODEC, "zstd compression failed: %s", ZSTD_getErrorName(n));
        break;
    case DF_PARQUET_LZ4_RAW: {
        int r = LZ4_compress_default((const char *)src, (char *)dst, (int)len, (int)bound);
        if (r <= 0 && len > 0) return df_error_set(err, DF_ERR_CODEC, "lz4 compression failed");
        n = (size_t)(r > 0 ? r : 0);
        break;
    }
    case DF_PARQUET_BROTLI:
        if (!BrotliEncoderCompress(level > 0 && level <= 11 ? level : 8, BROTLI_DEFAULT_WINDOW,
                                   BROTLI_MODE_GENERIC, len, src, &n, dst))
            return df_error_set(err, DF_ERR_CODEC, "brotli compression failed");
        break;
    default: break;
    }
    out->len += n;
    return DF_OK;
}
