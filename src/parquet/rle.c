/*
 * Bit unpacking and the RLE / bit-packed hybrid (see rle.h).
 *
 * Unpacking works on groups of 8 values, which take exactly `width` bytes.
 * One function per width (generated below) extracts the 8 values with
 * constant shifts from unaligned 64-bit loads, which compilers unroll into
 * straight-line code.  The loads may read up to 8 bytes past the group, so
 * groups near the end of the input are first copied into a zero-padded
 * local buffer.
 */
#include "parquet/rle.h"

typedef void (*unpack8_fn)(const uint8_t *in, uint32_t *out);

#define DEFINE_UNPACK8(W)                                                             \
    static void unpack8_##W(const uint8_t *in, uint32_t *out) {                       \
        const uint64_t mask = (W) == 32 ? 0xffffffffull : ((1ull << (W)) - 1);        \
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {                          \
            const int bit = j * (W);                                                  \
            out[j] = (uint32_t)((df_load_le64(in + (bit >> 3)) >> (bit & 7)) & mask); \
        }                                                                             \
    }

static void unpack8_0(const uint8_t *in, uint32_t *out) {
    (void)in;
    memset(out, 0, 8 * sizeof *out);
}
DEFINE_UNPACK8(1) DEFINE_UNPACK8(2) DEFINE_UNPACK8(3) DEFINE_UNPACK8(4) DEFINE_UNPACK8(5) DEFINE_UNPACK8(6)
DEFINE_UNPACK8(7) DEFINE_UNPACK8(8) DEFINE_UNPACK8(9) DEFINE_UNPACK8(10) DEFINE_UNPACK8(11) DEFINE_UNPACK8(12)
DEFINE_UNPACK8(13) DEFINE_UNPACK8(14) DEFINE_UNPACK8(15) DEFINE_UNPACK8(16) DEFINE_UNPACK8(17) DEFINE_UNPACK8(18)
DEFINE_UNPACK8(19) DEFINE_UNPACK8(20) DEFINE_UNPACK8(21) DEFINE_UNPACK8(22) DEFINE_UNPACK8(23) DEFINE_UNPACK8(24)
DEFINE_UNPACK8(25) DEFINE_UNPACK8(26) DEFINE_UNPACK8(27) DEFINE_UNPACK8(28) DEFINE_UNPACK8(29) DEFINE_UNPACK8(30)
DEFINE_UNPACK8(31) DEFINE_UNPACK8(32)

static const unpack8_fn unpack8[33] = {
    unpack8_0,  unpack8_1,  unpack8_2,  unpack8_3,  unpack8_4,  unpack8_5,  unpack8_6,  unpack8_7,  unpack8_8,
    unpack8_9,  unpack8_10, unpack8_11, unpack8_12, unpack8_13, unpack8_14, unpack8_15, unpack8_16, unpack8_17,
    unpack8_18, unpack8_19, unpack8_20, unpack8_21, unpack8_22, unpack8_23, unpack8_24, unpack8_25, unpack8_26,
    unpack8_27, unpack8_28, unpack8_29, unpack8_30, unpack8_31, unpack8_32,
};

void df__parquet_unpack32(const uint8_t *in, size_t in_len, int width, uint32_t *out, size_t count) {
    unpack8_fn fn = unpack8[width];
    size_t groups = count / 8, g = 0;
    const uint8_t *p = in;
    /* Fast groups: at least width + 8 readable bytes from the group start. */
    while (g < groups && (size_t)(in + in_len - p) >= (size_t)width + 8) {
        fn(p, out + g * 8);
        p += width;
        g++;
    }
    uint8_t pad[48];
    for (; g < groups; g++) {
        memset(pad, 0, sizeof pad);
        memcpy(pad, p, (size_t)width);
        fn(pad, out + g * 8);
        p += width;
    }
    size_t rem = count - groups * 8;
    if (rem) {
        uint32_t tmp[8];
        size_t bytes = (rem * (size_t)width + 7) / 8;
        memset(pad, 0, sizeof pad);
        memcpy(pad, p, bytes);
        fn(pad, tmp);
        memcpy(out + groups * 8, tmp, rem * sizeof *tmp);
    }
}

/* Extracts value j of width w (<= 64) from a buffer with 9 readable bytes past the value's first byte. */
static inline uint64_t extract64(const uint8_t *in, size_t j, int w, uint64_t mask) {
    size_t bit = j * (size_t)w;
    const uint8_t *p = in + (bit >> 3);
    int s = (int)(bit & 7);
    uint64_t v = df_load_le64(p) >> s;
    if (s + w > 64) v |= (uint64_t)p[8] << (64 - s);
    return v & mask;
}

void df__parquet_unpack64(const uint8_t *in, size_t in_len, int width, uint64_t *out, size_t count) {
    if (width <= 32) {
        /* Reuse the 32-bit unpackers, widening in place from the back. */
        uint32_t *tmp = (uint32_t *)(void *)out;
        df__parquet_unpack32(in, in_len, width, tmp, count);
        for (size_t i = count; i-- > 0;) out[i] = tmp[i];
        return;
    }
    const uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
    size_t groups = count / 8, g = 0;
    const uint8_t *p = in;
    while (g < groups && (size_t)(in + in_len - p) >= (size_t)width + 9) {
        for (size_t j = 0; j < 8; j++) out[g * 8 + j] = extract64(p, j, width, mask);
        p += width;
        g++;
    }
    uint8_t pad[80];
    for (; g <= groups; g++) {
        size_t n = g < groups ? 8 : count - groups * 8;
        if (n == 0) break;
        size_t bytes = (n * (size_t)width + 7) / 8;
        memset(pad, 0, sizeof pad);
        memcpy(pad, p, bytes);
        for (size_t j = 0; j < n; j++) out[g * 8 + j] = extract64(pad, j, width, mask);
        p += width;
    }
}

/* ---- hybrid decoder ------------------------------------------------------- */

void df__parquet_rle_init(pq_rle *r, const uint8_t *data, size_t len, int width) {
    r->p = data;
    r->end = data + len;
    r->width = width;
    r->failed = false;
    r->rle_left = r->lit_left = 0;
    r->rle_value = 0;
    r->lit = NULL;
    r->group_pos = 8;
}

/* Reads the next run header; false at the end of the data or on a malformed header. */
static bool next_run(pq_rle *r) {
    for (;;) {
        if (r->p >= r->end) return false;
        uint64_t h = 0;
        int shift = 0;
        for (;;) {
            if (r->p >= r->end || shift > 63) {
                r->failed = true;
                return false;
            }
            uint8_t b = *r->p++;
            h |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80)) break;
        }
        if (h & 1) {
            uint64_t groups = h >> 1;
            size_t avail = (size_t)(r->end - r->p);
            uint64_t values;
            size_t bytes;
            if (r->width == 0) {
                values = groups > UINT32_MAX / 8 ? UINT32_MAX : groups * 8;
                bytes = 0;
            } else if (groups <= avail / (size_t)r->width) {
                values = groups * 8;
                bytes = (size_t)groups * (size_t)r->width;
            } else {
                /* Cut short: keep the complete values. */
                values = (uint64_t)avail * 8 / (uint64_t)r->width;
                bytes = avail;
            }
            r->lit = r->p;
            r->p += bytes;
            r->lit_left = values > UINT32_MAX ? UINT32_MAX : (uint32_t)values;
            r->group_pos = 8;
            if (r->lit_left == 0) {
                if (bytes == 0 && groups == 0) continue;
                return false;
            }
            return true;
        }
        int nbytes = (r->width + 7) / 8;
        if (r->end - r->p < nbytes) {
            r->failed = true;
            return false;
        }
        uint32_t v = 0;
        for (int i = 0; i < nbytes; i++) v |= (uint32_t)r->p[i] << (8 * i);
        r->p += nbytes;
        uint64_t count = h >> 1;
        r->rle_value = v;
        r->rle_left = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
        if (r->rle_left) return true;
    }
}

size_t df__parquet_rle_get_u32(pq_rle *r, uint32_t *out, size_t n) {
    size_t done = 0;
    while (done < n) {
        if (r->rle_left) {
            size_t m = DF_MIN((size_t)r->rle_left, n - done);
            uint32_t v = r->rle_value;
            for (size_t i = 0; i < m; i++) out[done + i] = v;
            r->rle_left -= (uint32_t)m;
            done += m;
            continue;
        }
        if (r->lit_left) {
            if (r->group_pos < 8) {
                size_t m = DF_MIN((size_t)(8 - r->group_pos), DF_MIN((size_t)r->lit_left, n - done));
                memcpy(out + done, r->group + r->group_pos, m * sizeof *out);
                r->group_pos += (int)m;
                r->lit_left -= (uint32_t)m;
                done += m;
                continue;
            }
            size_t groups = DF_MIN((n - done) / 8, (size_t)r->lit_left / 8);
            if (groups) {
                df__parquet_unpack32(r->lit, (size_t)(r->end - r->lit), r->width, out + done, groups * 8);
                r->lit += groups * (size_t)r->width;
                r->lit_left -= (uint32_t)(groups * 8);
                done += groups * 8;
                continue;
            }
            size_t vals = DF_MIN((size_t)8, (size_t)r->lit_left);
            df__parquet_unpack32(r->lit, (size_t)(r->end - r->lit), r->width, r->group, vals);
            r->lit += vals == 8 ? (size_t)r->width : (vals * (size_t)r->width + 7) / 8;
            r->group_pos = 0;
            if (vals < 8) {
                /* A truncated last group: park its values at the end of `group`. */
                memmove(r->group + (8 - vals), r->group, vals * sizeof *r->group);
                r->group_pos = (int)(8 - vals);
            }
            continue;
        }
        if (!next_run(r)) break;
    }
    return done;
}

size_t df__parquet_rle_get_i16(pq_rle *r, int16_t *out, size_t n) {
    uint32_t tmp[256];
    size_t done = 0;
    while (done < n) {
        if (r->rle_left) {
            /* Repeated runs dominate level streams: fill directly. */
            size_t m = DF_MIN((size_t)r->rle_left, n - done);
            int16_t v = (int16_t)r->rle_value;
            for (size_t i = 0; i < m; i++) out[done + i] = v;
            r->rle_left -= (uint32_t)m;
            done += m;
            continue;
        }
        if (!r->lit_left && !next_run(r)) break;
        if (r->rle_left) continue;
        size_t want = DF_MIN(DF_MIN(n - done, DF_ARRAY_LEN(tmp)), (size_t)r->lit_left);
        size_t got = df__parquet_rle_get_u32(r, tmp, want);
        for (size_t i = 0; i < got; i++) out[done + i] = (int16_t)tmp[i];
        done += got;
        if (got < want) break;
    }
    return done;
}

/* The k (1..8) bits of src from bit soff, reading the second byte only when they reach into it. */
static inline unsigned bits_upto8(const uint8_t *src, int64_t soff, int k) {
    const uint8_t *p = src + (soff >> 3);
    int sh = (int)(soff & 7);
    unsigned v = (unsigned)p[0] >> sh;
    if (sh + k > 8) v |= (unsigned)p[1] << (8 - sh);
    return v & ((1u << k) - 1);
}

/* Stores the k (1..8) low bits of v at bit doff of dst, keeping the other bits of that byte. */
static inline void put_upto8(uint8_t *dst, int64_t doff, unsigned v, int k) {
    int sh = (int)(doff & 7);
    unsigned mask = ((1u << k) - 1) << sh;
    uint8_t *d = dst + (doff >> 3);
    *d = (uint8_t)((*d & ~mask) | ((v << sh) & mask));
}

/*
 * Copies n bits; the bits of dst around [doff, doff + n) are kept.  The
 * unaligned head and the tail take one masked byte step each (level
 * streams call this for every short literal run, so bit-by-bit loops
 * showed in profiles); the middle moves 64 bits per step.
 */
void df__parquet_copy_bits(uint8_t *dst, int64_t doff, const uint8_t *src, int64_t soff, int64_t n) {
    if (n <= 0) return;
    if (doff & 7) {
        int k = (int)DF_MIN((int64_t)(8 - (doff & 7)), n);
        put_upto8(dst, doff, bits_upto8(src, soff, k), k);
        doff += k;
        soff += k;
        n -= k;
    }
    uint8_t *d = dst + (doff >> 3);
    const uint8_t *s = src + (soff >> 3);
    int sh = (int)(soff & 7);
    int64_t bytes = n >> 3;
    if (sh == 0) {
        memcpy(d, s, (size_t)bytes);
    } else {
        /* s[i + 1] is in range: the n bits reach into it whenever sh > 0. */
        int64_t i = 0;
        for (; i + 8 <= bytes; i += 8) {
            uint64_t w = (df_load_le64(s + i) >> sh) | ((uint64_t)s[i + 8] << (64 - sh));
            memcpy(d + i, &w, 8);
        }
        for (; i < bytes; i++) d[i] = (uint8_t)((s[i] >> sh) | (s[i + 1] << (8 - sh)));
    }
    doff += bytes * 8;
    soff += bytes * 8;
    n -= bytes * 8;
    if (n > 0) put_upto8(dst, doff, bits_upto8(src, soff, (int)n), (int)n);
}

/* Sets or clears bits [off, off + n). */
static void fill_bits(uint8_t *bits, int64_t off, int64_t n, bool v) {
    if (n <= 0) return;
    unsigned ones = v ? 0xffu : 0u;
    if (off & 7) {
        int k = (int)DF_MIN((int64_t)(8 - (off & 7)), n);
        put_upto8(bits, off, ones, k);
        off += k;
        n -= k;
    }
    memset(bits + (off >> 3), (int)ones, (size_t)(n >> 3));
    off += n & ~(int64_t)7;
    n &= 7;
    if (n > 0) put_upto8(bits, off, ones, (int)n);
}

size_t df__parquet_rle_get_bits(pq_rle *r, uint8_t *bits, int64_t offset, size_t n) {
    size_t done = 0;
    while (done < n) {
        if (r->rle_left) {
            size_t m = DF_MIN((size_t)r->rle_left, n - done);
            fill_bits(bits, offset + (int64_t)done, (int64_t)m, r->rle_value & 1);
            r->rle_left -= (uint32_t)m;
            done += m;
            continue;
        }
        if (r->lit_left && r->group_pos == 8 && r->width == 1) {
            /* Width-1 groups are whole bytes: copy bits straight from the run. */
            size_t m = DF_MIN((size_t)r->lit_left, n - done) & ~(size_t)7;
            if (m) {
                df__parquet_copy_bits(bits, offset + (int64_t)done, r->lit, 0, (int64_t)m);
                r->lit += m / 8;
                r->lit_left -= (uint32_t)m;
                done += m;
                continue;
            }
        }
        if (r->lit_left) {
            uint32_t tmp[8];
            size_t m = df__parquet_rle_get_u32(r, tmp, DF_MIN((size_t)8, n - done));
            for (size_t i = 0; i < m; i++) {
                int64_t o = offset + (int64_t)(done + i);
                if (tmp[i] & 1) bits[o >> 3] |= (uint8_t)(1u << (o & 7));
                else bits[o >> 3] &= (uint8_t) ~(1u << (o & 7));
            }
            done += m;
            if (m == 0) break;
            continue;
        }
        if (!next_run(r)) break;
    }
    return done;
}

size_t df__parquet_rle_skip(pq_rle *r, size_t n) {
    size_t done = 0;
    while (done < n) {
        if (r->rle_left) {
            size_t m = DF_MIN((size_t)r->rle_left, n - done);
            r->rle_left -= (uint32_t)m;
            done += m;
            continue;
        }
        if (r->lit_left && r->group_pos == 8) {
            size_t groups = DF_MIN((n - done) / 8, (size_t)r->lit_left / 8);
            if (groups) {
                r->lit += groups * (size_t)r->width;
                r->lit_left -= (uint32_t)(groups * 8);
                done += groups * 8;
                continue;
            }
        }
        if (r->lit_left) {
            uint32_t tmp[8];
            size_t m = df__parquet_rle_get_u32(r, tmp, DF_MIN((size_t)8, n - done));
            done += m;
            if (m == 0) break;
            continue;
        }
        if (!next_run(r)) break;
    }
    return done;
}

void df__parquet_bitpacked_msb_levels(const uint8_t *data, int width, size_t start, int16_t *out, size_t n) {
    size_t bit = start * (size_t)width;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = 0;
        for (int b = 0; b < width; b++, bit++) v = (v << 1) | ((data[bit >> 3] >> (7 - (bit & 7))) & 1u);
        out[i] = (int16_t)v;
    }
}

/* ---- hybrid encoder ------------------------------------------------------- */

static df_errkind put_varint(df_buf *out, uint64_t v, df_error *err) {
    uint8_t tmp[10];
    int n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    return df_buf_append(out, tmp, (size_t)n, err);
}

/* Length of the run of equal values starting at i. */
static size_t run_length(const uint32_t *v, size_t n, size_t i) {
    size_t j = i + 1;
    while (j < n && v[j] == v[i]) j++;
    return j - i;
}

/* Packs 8 values (already below 2^width) LSB-first into `width` bytes. */
static void pack8(const uint32_t *v, int width, uint8_t *out) {
    uint64_t acc = 0;
    int nbits = 0;
    size_t o = 0;
    for (int j = 0; j < 8; j++) {
        acc |= (uint64_t)v[j] << nbits;   /* nbits < 8 here, so at most 39 bits are live */
        nbits += width;
        while (nbits >= 8) {
            out[o++] = (uint8_t)acc;
            acc >>= 8;
            nbits -= 8;
        }
    }
}

df_errkind df__parquet_rle_encode(const uint32_t *values, size_t n, int width, df_buf *out, df_error *err) {
    size_t i = 0;
    int vbytes = (width + 7) / 8;
    while (i < n) {
        size_t run = run_length(values, n, i);
        if (run >= 8) {
            DF_TRY(put_varint(out, (uint64_t)run << 1, err));
            uint8_t tmp[4];
            for (int b = 0; b < vbytes; b++) tmp[b] = (uint8_t)(values[i] >> (8 * b));
            DF_TRY(df_buf_append(out, tmp, (size_t)vbytes, err));
            i += run;
            continue;
        }
        /* A bit-packed run: whole groups until a long repeated run starts at a group boundary. */
        size_t j = i;
        while (j < n && (j == i || run_length(values, n, j) < 8)) j += 8;
        size_t groups = (DF_MIN(j, n) - i + 7) / 8;
        DF_TRY(put_varint(out, ((uint64_t)groups << 1) | 1, err));
        for (size_t g = 0; g < groups; g++) {
            uint32_t v8[8] = {0};
            size_t base = i + g * 8;
            for (size_t k = 0; k < 8 && base + k < n; k++) v8[k] = values[base + k];
            uint8_t packed[32];
            pack8(v8, width, packed);
            DF_TRY(df_buf_append(out, packed, (size_t)width, err));
        }
        i = DF_MIN(i + groups * 8, n);
    }
    return DF_OK;
}
