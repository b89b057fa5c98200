/*
 * UTF-8 <-> UTF-16LE and code page 1252, for nvarchar/varchar values.
 *
 * The encoder is on the bulk-load hot path.  Strings are mostly ASCII, so
 * both the length count and the conversion walk 8 bytes at a time while the
 * word has no high bit set, widening bytes with a loop the compiler turns
 * into vector unpack instructions; other bytes take the scalar decoder.
 * Input is validated by df__tds_utf16_len (which the bulk encoder calls
 * first for sizing), so the converter can assume well-formed UTF-8.
 */
#include "mssql/tds.h"

#define HIGH_BITS 0x8080808080808080ULL

size_t df__tds_utf16_len(const uint8_t *s, size_t n) {
    size_t i = 0, units = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if ((w & HIGH_BITS) == 0) {
                i += 8;
                units += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) { i++; units++; continue; }
        /* Its own decoder, not df_utf8_next: checking only what each length can get
         * wrong measured faster on this hot path. */
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
        else return SIZE_MAX;
        if (i + need >= n) return SIZE_MAX;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return SIZE_MAX;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return SIZE_MAX;
        units += need == 3 ? 2 : 1;
        i += need + 1;
    }
    return units;
}

size_t df__tds_utf8_to_utf16le(const uint8_t *s, size_t n, uint8_t *dst) {
    size_t i = 0;
    uint8_t *o = dst;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if ((w & HIGH_BITS) == 0) {
                /* Widen 8 ASCII bytes: byte k goes to o[2k], zero to o[2k+1]. */
                for (int k = 0; k < 8; k++) {
                    o[2 * k] = s[i + k];
                    o[2 * k + 1] = 0;
                }
                o += 16;
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        uint32_t cp;
        if (c < 0x80) { cp = c; i += 1; }
        else if (c < 0xE0) { cp = ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F); i += 2; }
        else if (c < 0xF0) {
            cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            i += 3;
        } else {
            cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                 ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            i += 4;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            uint16_t hi = (uint16_t)(0xD800 + (cp >> 10)), lo = (uint16_t)(0xDC00 + (cp & 0x3FF));
            df_store_le16(o, hi);
            df_store_le16(o + 2, lo);
            o += 4;
        } else {
            df_store_le16(o, (uint16_t)cp);
            o += 2;
        }
    }
    return (size_t)(o - dst);
}

df_errkind df__tds_utf16le_to_utf8(const uint8_t *s, size_t nbytes, df_buf *out, df_error *err) {
    size_t units = nbytes / 2;
    /* Worst case 3 bytes per unit (a surrogate pair gives 4 bytes for 2 units). */
    size_t need;
    if (df_mul_overflow_size(units, 3, &need)) return DF_OOM(err);
    DF_TRY(df_buf_reserve(out, need + 1, err));
    uint8_t *o = (uint8_t *)out->data + out->len;
    size_t i = 0;
    while (i < units) {
        /* ASCII fast path: four units at a time. */
        if (i + 4 <= units) {
            uint64_t w;
            memcpy(&w, s + 2 * i, 8);
            if ((w & 0xFF80FF80FF80FF80ULL) == 0) {
                o[0] = s[2 * i]; o[1] = s[2 * i + 2]; o[2] = s[2 * i + 4]; o[3] = s[2 * i + 6];
                o += 4;
                i += 4;
                continue;
            }
        }
        uint32_t u = df_load_le16(s + 2 * i);
        i++;
        if (u >= 0xD800 && u <= 0xDBFF && i < units) {
            uint32_t lo = df_load_le16(s + 2 * i);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                i++;
            }
        }
        if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD;
        o += df_utf8_encode(u, o);
    }
    out->len = (size_t)(o - (uint8_t *)out->data);
    out->data[out->len] = '\0';
    return DF_OK;
}

/* Code page 1252 bytes 0x80..0x9F; 0 marks the five undefined positions (mapped to the C1 control). */
static const uint16_t cp1252_high[32] = {
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
    0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
};

uint32_t df__tds_cp1252_to_unicode(uint8_t c) {
    if (c >= 0x80 && c <= 0x9F) return cp1252_high[c - 0x80] ? cp1252_high[c - 0x80] : c;
    return c;
}

int df__tds_unicode_to_cp1252(uint32_t u) {
    if (u < 0x80 || (u >= 0xA0 && u <= 0xFF)) return (int)u;
    for (int i = 0; i < 32; i++)
        if (cp1252_high[i] == u) return 0x80 + i;
    return -1;
}

df_errkind df__tds_put_utf16(df_buf *b, const char *s, size_t *units, df_error *err) {
    size_t n = strlen(s);
    size_t u = df__tds_utf16_len((const uint8_t *)s, n);
    if (u == SIZE_MAX) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "string is not valid UTF-8");
    DF_TRY(df_buf_reserve(b, 2 * u + 1, err));
    b->len += df__tds_utf8_to_utf16le((const uint8_t *)s, n, (uint8_t *)b->data + b->len);
    b->data[b->len] = '\0';
    if (units) *units = u;
    return DF_OK;
}

df_errkind df__tds_put_bvarchar(df_buf *b, const char *s, df_error *err) {
    size_t at = b->len, units = 0;
    DF_TRY(df__tds_put_u8(b, 0, err));
    DF_TRY(df__tds_put_utf16(b, s ? s : "", &units, err));
    if (units > 255) {
        units = 255;
        b->len = at + 1 + 2 * 255;
    }
    ((uint8_t *)b->data)[at] = (uint8_t)units;
    return DF_OK;
}

df_errkind df__tds_put_usvarchar(df_buf *b, const char *s, df_error *err) {
    size_t at = b->len, units = 0;
    DF_TRY(df__tds_put_u16(b, 0, err));
    DF_TRY(df__tds_put_utf16(b, s ? s : "", &units, err));
    if (units > 65535) {
        units = 65535;
        b->len = at + 2 + 2 * 65535;
    }
    df_store_le16(b->data + at, (uint16_t)units);
    return DF_OK;
}
