/*
 * TDS types: the bounded reader, TYPE_INFO parsing/writing, value decoding
 * (shared by result rows and bulk rows) and text formatting of decoded
 * values.  Every length read from the wire is checked against the bytes
 * left and against the declared type before it is used.
 */
#include "mssql/tds.h"

#include <stdio.h>

const uint64_t df__tds_pow10_u64[20] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
    100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
    10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
    100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
};

df_i128 df__tds_pow10(int n) {
    df_i128 v = 1;
    for (int i = 0; i < n; i++) v *= 10;
    return v;
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */

df_errkind df__tds_rd_short(const df__tds_rd *r, size_t n, const char *what, df_error *err) {
    df_error_set(err, DF_ERR_TDS_PROTOCOL, "truncated TDS data: %s needs %zu bytes, %zu left", what, n,
                 df__tds_rd_left(r));
    df_error_set_offset(err, (int64_t)(r->p - r->start));
    df_error_set_subkind(err, DF_ERR_TDS_TRUNCATED);
    return DF_ERR_TDS_PROTOCOL;
}

/* Converts `units` UTF-16LE code units to UTF-8 into a fixed buffer (truncating). */
static void utf16_to_fixed(const uint8_t *s, size_t units, char *dst, size_t cap) {
    if (!dst || cap == 0) return;
    size_t o = 0;
    for (size_t i = 0; i < units; i++) {
        uint32_t u = df_load_le16(s + 2 * i);
        if (u >= 0xD800 && u <= 0xDBFF && i + 1 < units) {
            uint32_t lo = df_load_le16(s + 2 * i + 2);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                i++;
            }
        }
        if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD;
        uint8_t tmp[4];
        size_t n = df_utf8_encode(u, tmp);
        if (o + n >= cap) break;
        memcpy(dst + o, tmp, n);
        o += n;
    }
    dst[o] = '\0';
}

df_errkind df__tds_rd_bvarchar(df__tds_rd *r, char *dst, size_t cap, df_error *err) {
    uint8_t n;
    const uint8_t *s;
    DF_TRY(df__tds_rd_u8(r, &n, err));
    DF_TRY(df__tds_rd_bytes(r, (size_t)n * 2, &s, err));
    utf16_to_fixed(s, n, dst, cap);
    return DF_OK;
}

df_errkind df__tds_rd_usvarchar(df__tds_rd *r, char *dst, size_t cap, df_error *err) {
    uint16_t n;
    const uint8_t *s;
    DF_TRY(df__tds_rd_u16(r, &n, err));
    DF_TRY(df__tds_rd_bytes(r, (size_t)n * 2, &s, err));
    utf16_to_fixed(s, n, dst, cap);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* TYPE_INFO                                                                 */

static df_errkind bad_type(df_error *err, const char *what, unsigned type, unsigned value) {
    return df_error_set(err, DF_ERR_TDS_PROTOCOL, "invalid TYPE_INFO: %s (type 0x%02X, value %u)", what, type, value);
}

/* Fixed-length types: their byte size, or 0 when `t` is not one. */
static unsigned fixed_size(uint8_t t) {
    switch (t) {
    case TDS_T_INT1: case TDS_T_BIT: return 1;
    case TDS_T_INT2: return 2;
    case TDS_T_INT4: case TDS_T_DATETIM4: case TDS_T_FLT4: case TDS_T_MONEY4: return 4;
    case TDS_T_INT8: case TDS_T_DATETIME: case TDS_T_FLT8: case TDS_T_MONEY: return 8;
    default: return 0;
    }
}

static df_errkind read_bytelen(df__tds_rd *r, df__tds_typeinfo *ti, bool bulk, df_error *err) {
    uint8_t len;
    DF_TRY(df__tds_rd_u8(r, &len, err));
    ti->max_len = len;
    switch (ti->type) {
    case TDS_T_INTN:
        if (len != 1 && len != 2 && len != 4 && len != 8) return bad_type(err, "INTN length", ti->type, len);
        break;
    case TDS_T_BITN: if (len != 1) return bad_type(err, "BITN length", ti->type, len); break;
    case TDS_T_FLTN: case TDS_T_MONEYN: case TDS_T_DATETIMN:
        if (len != 4 && len != 8) return bad_type(err, "length", ti->type, len);
        break;
    case TDS_T_GUID: if (len != 16) return bad_type(err, "GUID length", ti->type, len); break;
    default: /* DECIMALN / NUMERICN */
        /*
         * Bulk clients send odd maximum lengths (FreeTDS 6 for precision 10;
         * mssql-python's bulk copy repeats the type byte) and SQL Server
         * accepts them: in bulk metadata the precision rules, and each
         * value's own length byte is validated when it is read.
         */
        if (bulk) len = 17;
        if (len < 2 || len > 17) return bad_type(err, "decimal length", ti->type, len);
        ti->max_len = len;
        DF_TRY(df__tds_rd_u8(r, &ti->precision, err));
        DF_TRY(df__tds_rd_u8(r, &ti->scale, err));
        if (ti->precision < 1 || ti->precision > 38) return bad_type(err, "decimal precision", ti->type, ti->precision);
        if (ti->scale > ti->precision) return bad_type(err, "decimal scale", ti->type, ti->scale);
        break;
    }
    return DF_OK;
}

static df_errkind read_tabname(df__tds_rd *r, bool bulk, df_error *err) {
    uint16_t n;
    if (bulk) {
        DF_TRY(df__tds_rd_u16(r, &n, err));
        return df__tds_rd_skip(r, (size_t)n * 2, err);
    }
    uint8_t parts;
    DF_TRY(df__tds_rd_u8(r, &parts, err));
    for (unsigned i = 0; i < parts; i++) {
        DF_TRY(df__tds_rd_u16(r, &n, err));
        DF_TRY(df__tds_rd_skip(r, (size_t)n * 2, err));
    }
    return DF_OK;
}

df_errkind df__tds_typeinfo_read(df__tds_rd *r, df__tds_typeinfo *ti, bool bulk_tabname, df_error *err) {
    memset(ti, 0, sizeof *ti);
    DF_TRY(df__tds_rd_u8(r, &ti->type, err));
    unsigned fs = fixed_size(ti->type);
    if (fs) {
        ti->size_class = TDS_SC_FIXED;
        ti->max_len = fs;
        return DF_OK;
    }
    switch (ti->type) {
    case TDS_T_INTN: case TDS_T_BITN: case TDS_T_FLTN: case TDS_T_MONEYN: case TDS_T_DATETIMN:
    case TDS_T_GUID: case TDS_T_DECIMALN: case TDS_T_NUMERICN:
        ti->size_class = TDS_SC_BYTELEN;
        return read_bytelen(r, ti, bulk_tabname, err);
    case TDS_T_DATEN:
        ti->size_class = TDS_SC_BYTELEN;
        ti->max_len = 3;
        return DF_OK;
    case TDS_T_TIMEN: case TDS_T_DATETIME2N: case TDS_T_DATETIMEOFFSETN:
        ti->size_class = TDS_SC_BYTELEN;
        DF_TRY(df__tds_rd_u8(r, &ti->scale, err));
        if (ti->scale > 7) return bad_type(err, "time scale", ti->type, ti->scale);
        ti->max_len = df__tds_time_len(ti->scale) + (ti->type == TDS_T_TIMEN ? 0 : 3) +
                      (ti->type == TDS_T_DATETIMEOFFSETN ? 2 : 0);
        return DF_OK;
    case TDS_T_BIGVARBIN: case TDS_T_BIGBINARY: case TDS_T_BIGVARCHR: case TDS_T_BIGCHAR:
    case TDS_T_NVARCHAR: case TDS_T_NCHAR: {
        uint16_t len;
        DF_TRY(df__tds_rd_u16(r, &len, err));
        ti->max_len = len;
        bool chr = ti->type == TDS_T_BIGVARCHR || ti->type == TDS_T_BIGCHAR || ti->type == TDS_T_NVARCHAR ||
                   ti->type == TDS_T_NCHAR;
        if (chr) {
            const uint8_t *c;
            DF_TRY(df__tds_rd_bytes(r, 5, &c, err));
            memcpy(ti->collation, c, 5);
            ti->has_collation = true;
        }
        if (len == 0xFFFF) {
            if (ti->type == TDS_T_BIGBINARY || ti->type == TDS_T_BIGCHAR || ti->type == TDS_T_NCHAR)
                return bad_type(err, "fixed-length type declared max", ti->type, len);
            ti->size_class = TDS_SC_PLP;
            ti->plp = true;
        } else {
            if (len > 8000) return bad_type(err, "length above 8000", ti->type, len);
            if ((ti->type == TDS_T_NVARCHAR || ti->type == TDS_T_NCHAR) && (len & 1))
                return bad_type(err, "odd national length", ti->type, len);
            ti->size_class = TDS_SC_USHORTLEN;
        }
        return DF_OK;
    }
    case TDS_T_TEXT: case TDS_T_NTEXT: case TDS_T_IMAGE: {
        uint32_t len;
        DF_TRY(df__tds_rd_u32(r, &len, err));
        ti->max_len = len;
        ti->size_class = TDS_SC_LONGLEN;
        if (ti->type != TDS_T_IMAGE) {
            const uint8_t *c;
            DF_TRY(df__tds_rd_bytes(r, 5, &c, err));
            memcpy(ti->collation, c, 5);
            ti->has_collation = true;
        }
        return read_tabname(r, bulk_tabname, err);
    }
    case TDS_T_XML: {
        uint8_t schema_present;
        DF_TRY(df__tds_rd_u8(r, &schema_present, err));
        if (schema_present) return bad_type(err, "XML schema collections are not supported", ti->type, 1);
        ti->size_class = TDS_SC_PLP;
        ti->plp = true;
        ti->max_len = 0xFFFF;
        return DF_OK;
    }
    case TDS_T_JSON:
        ti->size_class = TDS_SC_PLP;
        ti->plp = true;
        ti->max_len = 0xFFFF;
        return DF_OK;
    default:
        return bad_type(err, "unsupported type", ti->type, ti->type);
    }
}

df_errkind df__tds_typeinfo_write(df_buf *b, const df__tds_typeinfo *ti, df_error *err) {
    DF_TRY(df__tds_put_u8(b, ti->type, err));
    switch (ti->size_class) {
    case TDS_SC_FIXED:
        return DF_OK;
    case TDS_SC_BYTELEN:
        if (ti->type == TDS_T_DATEN) return DF_OK;
        if (ti->type == TDS_T_TIMEN || ti->type == TDS_T_DATETIME2N || ti->type == TDS_T_DATETIMEOFFSETN)
            return df__tds_put_u8(b, ti->scale, err);
        DF_TRY(df__tds_put_u8(b, (uint8_t)ti->max_len, err));
        if (ti->type == TDS_T_DECIMALN || ti->type == TDS_T_NUMERICN) {
            DF_TRY(df__tds_put_u8(b, ti->precision, err));
            DF_TRY(df__tds_put_u8(b, ti->scale, err));
        }
        return DF_OK;
    case TDS_SC_USHORTLEN:
    case TDS_SC_PLP:
        DF_TRY(df__tds_put_u16(b, ti->plp ? 0xFFFF : (uint16_t)ti->max_len, err));
        if (ti->has_collation) DF_TRY(df_buf_append(b, ti->collation, 5, err));
        return DF_OK;
    default:
        return df_error_set(err, DF_ERR_INTERNAL, "cannot write TYPE_INFO of size class %u", ti->size_class);
    }
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */

static uint64_t load_uint_le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static df_errkind bad_len(df_error *err, const df__tds_typeinfo *ti, size_t len) {
    return df_error_set(err, DF_ERR_TDS_PROTOCOL, "invalid value length %zu for type 0x%02X", len, ti->type);
}

/* Decodes the fixed-width body of a numeric/temporal value (already length-checked by the caller). */
static df_errkind decode_body(const df__tds_typeinfo *ti, uint8_t t, const uint8_t *p, size_t len,
                              df__tds_value *v, df_error *err) {
    switch (t) {
    case TDS_T_INT1: case TDS_T_BIT:
        v->kind = TDS_V_INT; v->i = p[0];
        if (t == TDS_T_BIT) v->i = p[0] != 0;
        return DF_OK;
    case TDS_T_INT2: v->kind = TDS_V_INT; v->i = (int16_t)df_load_le16(p); return DF_OK;
    case TDS_T_INT4: v->kind = TDS_V_INT; v->i = (int32_t)df_load_le32(p); return DF_OK;
    case TDS_T_INT8: v->kind = TDS_V_INT; v->i = (int64_t)df_load_le64(p); return DF_OK;
    case TDS_T_FLT4: { float f; memcpy(&f, p, 4); v->kind = TDS_V_FLOAT; v->f = f; return DF_OK; }
    case TDS_T_FLT8: { double f; memcpy(&f, p, 8); v->kind = TDS_V_FLOAT; v->f = f; return DF_OK; }
    case TDS_T_MONEY4: v->kind = TDS_V_DECIMAL; v->dec = (int32_t)df_load_le32(p); return DF_OK;
    case TDS_T_MONEY: {
        uint64_t hi = df_load_le32(p), lo = df_load_le32(p + 4);
        v->kind = TDS_V_DECIMAL;
        v->dec = (int64_t)((hi << 32) | lo);
        return DF_OK;
    }
    case TDS_T_DATETIM4:
        v->kind = TDS_V_SMALLDT; v->i = df_load_le16(p); v->ticks = df_load_le16(p + 2);
        if (v->ticks >= 1440) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "smalldatetime minutes out of range");
        return DF_OK;
    case TDS_T_DATETIME:
        v->kind = TDS_V_DATETIME; v->i = (int32_t)df_load_le32(p); v->ticks = df_load_le32(p + 4);
        if (v->ticks >= 300u * 86400u) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "datetime ticks out of range");
        return DF_OK;
    case TDS_T_GUID:
        v->kind = TDS_V_GUID; v->bytes = p; v->len = 16; return DF_OK;
    case TDS_T_DECIMALN: case TDS_T_NUMERICN: {
        if (len < 2 || len > 17) return bad_len(err, ti, len);
        if (p[0] > 1) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "decimal sign byte %u", p[0]);
        df_u128 mag = 0;
        for (size_t i = len - 1; i >= 1; i--) mag = (mag << 8) | p[i];
        df_u128 limit = (df_u128)df__tds_pow10(ti->precision);
        if (mag >= limit)
            return df_error_set(err, DF_ERR_TDS_PROTOCOL, "decimal value exceeds precision %u", ti->precision);
        v->kind = TDS_V_DECIMAL;
        v->dec = p[0] ? (df_i128)mag : -(df_i128)mag;
        return DF_OK;
    }
    case TDS_T_DATEN: {
        v->kind = TDS_V_DATE; v->i = (int64_t)load_uint_le(p, 3);
        if (v->i > 3652058) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "date out of range");
        return DF_OK;
    }
    case TDS_T_TIMEN: case TDS_T_DATETIME2N: case TDS_T_DATETIMEOFFSETN: {
        unsigned tl = df__tds_time_len(ti->scale);
        size_t want = tl + (t == TDS_T_TIMEN ? 0 : 3) + (t == TDS_T_DATETIMEOFFSETN ? 2 : 0);
        if (len != want) return bad_len(err, ti, len);
        v->ticks = load_uint_le(p, tl);
        if (v->ticks >= 86400ULL * df__tds_pow10_u64[ti->scale])
            return df_error_set(err, DF_ERR_TDS_PROTOCOL, "time of day out of range");
        if (t == TDS_T_TIMEN) { v->kind = TDS_V_TIME; return DF_OK; }
        v->i = (int64_t)load_uint_le(p + tl, 3);
        if (v->i > 3652058) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "date out of range");
        if (t == TDS_T_DATETIME2N) { v->kind = TDS_V_DATETIME2; return DF_OK; }
        v->offset_min = (int16_t)df_load_le16(p + tl + 3);
        if (v->offset_min < -840 || v->offset_min > 840)
            return df_error_set(err, DF_ERR_TDS_PROTOCOL, "datetimeoffset offset out of range");
        v->kind = TDS_V_DTO;
        return DF_OK;
    }
    default:
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "no decoder for type 0x%02X", t);
    }
}

/* The fixed type a nullable N-type value of `len` bytes decodes as. */
static uint8_t ntype_body(uint8_t t, size_t len) {
    switch (t) {
    case TDS_T_INTN: return len == 1 ? TDS_T_INT1 : len == 2 ? TDS_T_INT2 : len == 4 ? TDS_T_INT4 : TDS_T_INT8;
    case TDS_T_BITN: return TDS_T_BIT;
    case TDS_T_FLTN: return len == 4 ? TDS_T_FLT4 : TDS_T_FLT8;
    case TDS_T_MONEYN: return len == 4 ? TDS_T_MONEY4 : TDS_T_MONEY;
    case TDS_T_DATETIMN: return len == 4 ? TDS_T_DATETIM4 : TDS_T_DATETIME;
    default: return t;
    }
}

static df_errkind read_plp(df__tds_rd *r, df_buf *scratch, df__tds_value *v, df_error *err) {
    uint64_t total;
    DF_TRY(df__tds_rd_u64(r, &total, err));
    if (total == UINT64_MAX) { v->kind = TDS_V_NULL; return DF_OK; }
    bool known = total != 0xFFFFFFFFFFFFFFFEULL;
    if (known && total > TDS_MAX_VALUE) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "PLP value of %llu bytes is too large", (unsigned long long)total);
    size_t start = scratch->len;
    const uint8_t *first = NULL;
    size_t first_len = 0;
    unsigned chunks = 0;
    for (;;) {
        uint32_t n;
        DF_TRY(df__tds_rd_u32(r, &n, err));
        if (n == 0) break;
        const uint8_t *c;
        DF_TRY(df__tds_rd_bytes(r, n, &c, err));
        if (chunks == 0) { first = c; first_len = n; }
        else {
            if (chunks == 1) DF_TRY(df_buf_append(scratch, first, first_len, err));
            DF_TRY(df_buf_append(scratch, c, n, err));
        }
        chunks++;
    }
    v->kind = TDS_V_BYTES;
    if (chunks <= 1) {
        v->bytes = first ? first : (const uint8_t *)"";
        v->len = first_len;
    } else {
        v->bytes = (const uint8_t *)scratch->data + start;
        v->len = scratch->len - start;
    }
    if (known && v->len != total)
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PLP chunks total %zu bytes, header said %llu", v->len,
                            (unsigned long long)total);
    return DF_OK;
}

df_errkind df__tds_value_read(df__tds_rd *r, const df__tds_typeinfo *ti, df_buf *scratch,
                              df__tds_value *v, df_error *err) {
    v->kind = TDS_V_NULL;
    switch (ti->size_class) {
    case TDS_SC_FIXED: {
        const uint8_t *p;
        DF_TRY(df__tds_rd_bytes(r, ti->max_len, &p, err));
        return decode_body(ti, ti->type, p, ti->max_len, v, err);
    }
    case TDS_SC_BYTELEN: {
        uint8_t len;
        const uint8_t *p;
        DF_TRY(df__tds_rd_u8(r, &len, err));
        if (len == 0) return DF_OK;
        if (ti->type == TDS_T_DECIMALN || ti->type == TDS_T_NUMERICN) {
            if (len < 2) return bad_len(err, ti, len);
        } else if (ti->type == TDS_T_INTN || ti->type == TDS_T_FLTN || ti->type == TDS_T_MONEYN ||
                   ti->type == TDS_T_DATETIMN) {
            if (len != 1 && len != 2 && len != 4 && len != 8) return bad_len(err, ti, len);
            if (ti->type != TDS_T_INTN && len < 4) return bad_len(err, ti, len);
        } else if (ti->type == TDS_T_BITN) {
            if (len != 1) return bad_len(err, ti, len);
        } else if (ti->type == TDS_T_GUID) {
            if (len != 16) return bad_len(err, ti, len);
        } else if (ti->type == TDS_T_DATEN) {
            if (len != 3) return bad_len(err, ti, len);
        }
        DF_TRY(df__tds_rd_bytes(r, len, &p, err));
        return decode_body(ti, ntype_body(ti->type, len), p, len, v, err);
    }
    case TDS_SC_USHORTLEN: {
        uint16_t len;
        DF_TRY(df__tds_rd_u16(r, &len, err));
        if (len == 0xFFFF) return DF_OK;
        if (len > ti->max_len) return bad_len(err, ti, len);
        DF_TRY(df__tds_rd_bytes(r, len, &v->bytes, err));
        v->kind = TDS_V_BYTES;
        v->len = len;
        return DF_OK;
    }
    case TDS_SC_LONGLEN: {
        uint8_t ptrlen;
        uint32_t len;
        DF_TRY(df__tds_rd_u8(r, &ptrlen, err));
        if (ptrlen == 0) return DF_OK;
        DF_TRY(df__tds_rd_skip(r, (size_t)ptrlen + 8, err));
        DF_TRY(df__tds_rd_u32(r, &len, err));
        if (len > TDS_MAX_VALUE) return bad_len(err, ti, len);
        DF_TRY(df__tds_rd_bytes(r, len, &v->bytes, err));
        v->kind = TDS_V_BYTES;
        v->len = len;
        return DF_OK;
    }
    case TDS_SC_PLP:
        return read_plp(r, scratch, v, err);
    default:
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "unknown size class");
    }
}

/* ------------------------------------------------------------------------ */
/* Calendar and formatting                                                   */

/* TDS counts days from 0001-01-01; the common calendar counts from 1970-01-01. */
int64_t df__tds_days_from_civil(int64_t y, unsigned m, unsigned d) {
    return df_days_from_civil(y, (int)m, (int)d) + TDS_DAYS_0001_TO_1970;
}

void df__tds_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d) {
    int month, day;
    df_civil_from_days(days - TDS_DAYS_0001_TO_1970, y, &month, &day);
    *m = (unsigned)month;
    *d = (unsigned)day;
}

void df__tds_format_decimal(df_i128 v, int scale, char *out, size_t cap) {
    char digits[48];
    int n = 0;
    bool neg = v < 0;
    df_u128 mag = neg ? (df_u128)0 - (df_u128)v : (df_u128)v;
    do {
        digits[n++] = (char)('0' + (int)(mag % 10));
        mag /= 10;
    } while (mag && n < 45);
    while (n <= scale) digits[n++] = '0';
    size_t o = 0;
    if (neg && o + 1 < cap) out[o++] = '-';
    for (int i = n - 1; i >= 0 && o + 2 < cap; i--) {
        out[o++] = digits[i];
        if (i == scale && scale > 0) out[o++] = '.';
    }
    out[o] = '\0';
}

void df__tds_format_date(int64_t days, char *out, size_t cap) {
    int64_t y;
    unsigned m, d;
    df__tds_civil_from_days(days, &y, &m, &d);
    snprintf(out, cap, "%04lld-%02u-%02u", (long long)y, m, d);
}

void df__tds_format_time(uint64_t ticks, unsigned scale, char *out, size_t cap) {
    uint64_t per_sec = df__tds_pow10_u64[scale];
    uint64_t secs = ticks / per_sec, frac = ticks % per_sec;
    int n = snprintf(out, cap, "%02u:%02u:%02u", (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60),
                     (unsigned)(secs % 60));
    if (scale > 0 && n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, ".%0*llu", (int)scale, (unsigned long long)frac);
}

/* Wire order of the 16 bytes for each text position pair. */
static const uint8_t guid_order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};

void df__tds_format_guid(const uint8_t wire[16], char out[37]) {
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        df_hex_encode(&wire[guid_order[i]], 1, out + o, true);
        o += 2;
    }
    out[o] = '\0';
}

bool df__tds_parse_guid(const char *s, size_t n, uint8_t wire[16]) {
    if (n == 38 && s[0] == '{' && s[37] == '}') { s++; n -= 2; }
    if (n != 36) return false;
    int bi = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return false;
            i++;
            continue;
        }
        if (!df_hex_decode(s + i, 2, &wire[guid_order[bi++]])) return false;
        i += 2;
    }
    return true;
}
