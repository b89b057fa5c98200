/*
 * Value conversions of the peer: decoded TDS values → stored SQLite forms
 * (bulk loads), and stored forms → TDS values (result rows).  Temporal
 * values pass through one normalized form (days since 0001-01-01, 100 ns
 * ticks since midnight, offset minutes) so every source/target pair uses
 * the same rounding: half up at the target scale, carrying into the day.
 */
#include "peer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mssql/mssql_int.h"

#define T7_DAY 864000000000LL

typedef struct tnorm {
    int64_t days;       /* since 0001-01-01 (local time for offsets) */
    int64_t ticks;      /* 100 ns since midnight */
    int offset;         /* minutes east of UTC */
    bool has_offset;    /* the source carried an offset */
} tnorm;

/* Normalizes a decoded temporal value; false for other kinds. */
static bool norm_from_value(const df__tds_typeinfo *ti, const df__tds_value *v, tnorm *t) {
    memset(t, 0, sizeof *t);
    switch (v->kind) {
    case TDS_V_DATE: t->days = v->i; return true;
    case TDS_V_TIME: t->ticks = (int64_t)(v->ticks * df__tds_pow10_u64[7 - ti->scale]); return true;
    case TDS_V_DATETIME2: t->days = v->i; t->ticks = (int64_t)(v->ticks * df__tds_pow10_u64[7 - ti->scale]); return true;
    case TDS_V_DTO: {
        int64_t utc = (int64_t)(v->ticks * df__tds_pow10_u64[7 - ti->scale]) + (int64_t)v->offset_min * 600000000LL;
        t->days = v->i + (utc < 0 ? -1 : utc >= T7_DAY ? 1 : 0);
        t->ticks = utc < 0 ? utc + T7_DAY : utc >= T7_DAY ? utc - T7_DAY : utc;
        t->offset = v->offset_min;
        t->has_offset = true;
        return true;
    }
    case TDS_V_DATETIME:
        t->days = v->i + TDS_DAYS_0001_TO_1900;
        t->ticks = (int64_t)((v->ticks * 100000 + 1) / 3);
        return true;
    case TDS_V_SMALLDT:
        t->days = v->i + TDS_DAYS_0001_TO_1900;
        t->ticks = (int64_t)v->ticks * 600000000LL;
        return true;
    default:
        return false;
    }
}

/* Rounds ticks to `scale` digits (half up) with carry into days. */
static void round_norm(tnorm *t, unsigned scale) {
    int64_t q = (int64_t)df__tds_pow10_u64[7 - scale];
    t->ticks = (t->ticks + q / 2) / q * q;
    if (t->ticks >= T7_DAY) { t->ticks -= T7_DAY; t->days++; }
}

static void fmt_datetime(const tnorm *t, unsigned scale, bool with_offset, char *out, size_t cap) {
    char d[16], tm[24];
    df__tds_format_date(t->days, d, sizeof d);
    df__tds_format_time((uint64_t)(t->ticks / (int64_t)df__tds_pow10_u64[7 - scale]), scale, tm, sizeof tm);
    if (with_offset) {
        int o = t->offset < 0 ? -t->offset : t->offset;
        snprintf(out, cap, "%s %s %c%02d:%02d", d, tm, t->offset < 0 ? '-' : '+', o / 60, o % 60);
    } else {
        snprintf(out, cap, "%s %s", d, tm);
    }
}

/* Legacy datetime: 1/300 s fragments and SQL Server's millisecond display. */
static void fmt_legacy_datetime(tnorm t, char *out, size_t cap) {
    int64_t ms = (t.ticks + 5000) / 10000;
    int64_t frag = (ms * 300 + 500) / 1000;
    if (frag >= 300LL * 86400) { frag -= 300LL * 86400; t.days++; }
    int64_t disp = (frag * 10 + 1) / 3; /* ms as displayed: .000/.003/.007 */
    char d[16];
    df__tds_format_date(t.days, d, sizeof d);
    snprintf(out, cap, "%s %02d:%02d:%02d.%03d", d, (int)(disp / 3600000), (int)(disp / 60000 % 60),
             (int)(disp / 1000 % 60), (int)(disp % 1000));
}

/* Parses stored/literal temporal text: "YYYY-MM-DD[ |T]HH:MM[:SS[.f]][ ][+-HH:MM|Z]" or a time alone. */
static bool parse_temporal(const char *s, tnorm *t) {
    memset(t, 0, sizeof *t);
    int y, mo, d, n = 0;
    while (*s == ' ') s++;
    if (sscanf(s, "%d-%d-%d%n", &y, &mo, &d, &n) == 3 && n >= 8) {
        if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
        t->days = df__tds_days_from_civil(y, (unsigned)mo, (unsigned)d);
        s += n;
        if (*s == ' ' || *s == 'T') s++;
    }
    int h, mi, sec = 0;
    n = 0;
    if (sscanf(s, "%d:%d%n", &h, &mi, &n) == 2 && n >= 3) {
        s += n;
        if (*s == ':') {
            int k = 0;
            if (sscanf(s + 1, "%d%n", &sec, &k) != 1) return false;
            s += 1 + k;
        }
        if (h > 23 || mi > 59 || sec > 59) return false;
        int64_t frac = 0;
        if (*s == '.') {
            s++;
            int digits = 0;
            while (*s >= '0' && *s <= '9') {
                if (digits < 7) { frac = frac * 10 + (*s - '0'); digits++; }
                s++;
            }
            while (digits < 7) { frac *= 10; digits++; }
        }
        t->ticks = ((int64_t)h * 3600 + mi * 60 + sec) * 10000000LL + frac;
    }
    while (*s == ' ') s++;
    if (*s == 'Z') { t->has_offset = true; s++; }
    else if (*s == '+' || *s == '-') {
        int oh, om;
        if (sscanf(s + 1, "%d:%d", &oh, &om) != 2) return false;
        t->offset = (oh * 60 + om) * (*s == '-' ? -1 : 1);
        t->has_offset = true;
        s += 6;
    }
    while (*s == ' ') s++;
    return *s == '\0';
}

/* Parses decimal text into an unscaled value at `scale` (rounding half away from zero). */
static bool parse_decimal(const char *s, int scale, df_i128 *out) {
    while (*s == ' ') s++;
    bool neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    df_u128 v = 0;
    int frac = -1, digits = 0;
    bool round_up = false, any = false;
    for (; *s; s++) {
        if (*s == '.' && frac < 0) { frac = 0; continue; }
        if (*s < '0' || *s > '9') break;
        any = true;
        if (frac >= scale) {
            if (frac == scale) round_up = *s >= '5';
            frac++;
            continue;
        }
        if (++digits > 38) return false;
        v = v * 10 + (df_u128)(*s - '0');
        if (frac >= 0) frac++;
    }
    if (!any || *s) return false;
    for (int f = frac < 0 ? 0 : frac; f < scale; f++) v *= 10;
    if (round_up) v++;
    *out = neg ? -(df_i128)v : (df_i128)v;
    return true;
}

static void format_decimal_at(df_i128 v, int from_scale, int to_scale, char *out, size_t cap) {
    if (to_scale < from_scale) {
        df_i128 q = df__tds_pow10(from_scale - to_scale);
        df_i128 r = v % q;
        v /= q;
        if (2 * (r < 0 ? -r : r) >= q) v += r < 0 ? -1 : 1; /* half away from zero, as SQL Server rounds */
    } else if (to_scale > from_scale) {
        v *= df__tds_pow10(to_scale - from_scale);
    }
    df__tds_format_decimal(v, to_scale, out, cap);
}

/* ------------------------------------------------------------------------ */
/* Bulk values → SQLite                                                      */

static bool is_national_wire(uint8_t t) { return t == TDS_T_NVARCHAR || t == TDS_T_NCHAR || t == TDS_T_NTEXT || t == TDS_T_XML; }
static bool is_char_wire(uint8_t t) { return t == TDS_T_BIGVARCHR || t == TDS_T_BIGCHAR || t == TDS_T_TEXT; }

/* Converts wire string bytes to UTF-8 in tmp. */
static df_errkind wire_text(const df__tds_typeinfo *ti, const df__tds_value *v, df_buf *tmp) {
    df_buf_reset(tmp);
    if (is_national_wire(ti->type)) return df__tds_utf16le_to_utf8(v->bytes, v->len & ~(size_t)1, tmp, NULL);
    if (is_char_wire(ti->type) && !((df_load_le32(ti->collation) >> 26) & 1)) {
        for (size_t i = 0; i < v->len; i++) {
            uint8_t u[2];
            df_store_le16(u, (uint16_t)df__tds_cp1252_to_unicode(v->bytes[i]));
            DF_TRY(df__tds_utf16le_to_utf8(u, 2, tmp, NULL));
        }
        return DF_OK;
    }
    DF_TRY(df_buf_append(tmp, v->bytes, v->len, NULL));
    return DF_OK;
}

static size_t utf8_units16(const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) != 0x80) n++;
        if (*p >= 0xF0) n++;
    }
    return n;
}

df_errkind peer_value_to_sqlite(sqlite3_stmt *st, int idx, const df__tds_typeinfo *ti, const df__tds_value *v,
                                const peer_column *target, df_buf *tmp, const char **why) {
    const df_mssql_column *tc = &target->type;
    char text[96];
    if (v->kind == TDS_V_NULL) {
        sqlite3_bind_null(st, idx);
        return DF_OK;
    }
    switch (tc->type) {
    case DF_MSSQL_BIT: case DF_MSSQL_TINYINT: case DF_MSSQL_SMALLINT: case DF_MSSQL_INT: case DF_MSSQL_BIGINT: {
        int64_t x;
        if (v->kind == TDS_V_BYTES) {
            char *end;
            if (wire_text(ti, v, tmp) != DF_OK || !tmp->data) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
            x = strtoll(tmp->data, &end, 10);
            if (end == tmp->data || *end) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
        } else if (v->kind == TDS_V_INT) x = v->i;
        else if (v->kind == TDS_V_FLOAT) x = (int64_t)v->f;
        else if (v->kind == TDS_V_DECIMAL) {
            int sc = ti->type == TDS_T_MONEYN || ti->type == TDS_T_MONEY || ti->type == TDS_T_MONEY4 ? 4 : ti->scale;
            x = (int64_t)(v->dec / df__tds_pow10(sc));
        } else { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
        int64_t lo = tc->type == DF_MSSQL_TINYINT ? 0 : tc->type == DF_MSSQL_SMALLINT ? INT16_MIN : tc->type == DF_MSSQL_INT ? INT32_MIN : INT64_MIN;
        int64_t hi = tc->type == DF_MSSQL_TINYINT ? 255 : tc->type == DF_MSSQL_SMALLINT ? INT16_MAX : tc->type == DF_MSSQL_INT ? INT32_MAX : INT64_MAX;
        if (tc->type == DF_MSSQL_BIT) x = x != 0;
        else if (x < lo || x > hi) { *why = "overflow"; return DF_ERR_VALUE_CONVERSION; }
        sqlite3_bind_int64(st, idx, x);
        return DF_OK;
    }
    case DF_MSSQL_REAL: case DF_MSSQL_FLOAT: {
        double d;
        if (v->kind == TDS_V_BYTES) {
            char *end;
            if (wire_text(ti, v, tmp) != DF_OK || !tmp->data) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
            d = strtod(tmp->data, &end);
            if (end == tmp->data || *end) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
        } else if (v->kind == TDS_V_FLOAT) d = v->f;
        else if (v->kind == TDS_V_INT) d = (double)v->i;
        else if (v->kind == TDS_V_DECIMAL) {
            int sc = ti->type == TDS_T_DECIMALN || ti->type == TDS_T_NUMERICN ? ti->scale : 4;
            d = (double)v->dec / pow(10, sc);
        } else { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
        if (tc->type == DF_MSSQL_REAL) d = (float)d;
        sqlite3_bind_double(st, idx, d);
        return DF_OK;
    }
    case DF_MSSQL_DECIMAL: case DF_MSSQL_NUMERIC: case DF_MSSQL_MONEY: case DF_MSSQL_SMALLMONEY: {
        int tscale = tc->type == DF_MSSQL_MONEY || tc->type == DF_MSSQL_SMALLMONEY ? 4 : tc->scale;
        int tprec = tc->type == DF_MSSQL_MONEY ? 19 : tc->type == DF_MSSQL_SMALLMONEY ? 10 : tc->precision;
        df_i128 x;
        int sscale;
        if (v->kind == TDS_V_BYTES) {
            if (wire_text(ti, v, tmp) != DF_OK || !tmp->data || !parse_decimal(tmp->data, tscale, &x)) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
            sscale = tscale;
        } else if (v->kind == TDS_V_DECIMAL) { x = v->dec; sscale = ti->type == TDS_T_DECIMALN || ti->type == TDS_T_NUMERICN ? ti->scale : 4; }
        else if (v->kind == TDS_V_INT) { x = v->i; sscale = 0; }
        else if (v->kind == TDS_V_FLOAT) {
            snprintf(text, sizeof text, "%.*f", tscale, v->f);
            if (!parse_decimal(text, tscale, &x)) { *why = "overflow"; return DF_ERR_VALUE_CONVERSION; }
            sscale = tscale;
        } else { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
        format_decimal_at(x, sscale, tscale, text, sizeof text);
        df_i128 check;
        if (!parse_decimal(text, tscale, &check) || check >= df__tds_pow10(tprec) || check <= -df__tds_pow10(tprec)) {
            *why = "overflow";
            return DF_ERR_VALUE_CONVERSION;
        }
        sqlite3_bind_text(st, idx, text, -1, SQLITE_TRANSIENT);
        return DF_OK;
    }
    case DF_MSSQL_DATE: case DF_MSSQL_TIME: case DF_MSSQL_DATETIME2: case DF_MSSQL_DATETIMEOFFSET:
    case DF_MSSQL_DATETIME: case DF_MSSQL_SMALLDATETIME: {
        tnorm t;
        if (!norm_from_value(ti, v, &t)) {
            if (v->kind != TDS_V_BYTES || wire_text(ti, v, tmp) != DF_OK || !parse_temporal(tmp->data ? tmp->data : "", &t)) {
                *why = "type";
                return DF_ERR_VALUE_CONVERSION;
            }
        }
        if (tc->type == DF_MSSQL_DATE) df__tds_format_date(t.days, text, sizeof text);
        else if (tc->type == DF_MSSQL_TIME) {
            round_norm(&t, tc->scale);
            df__tds_format_time((uint64_t)(t.ticks / (int64_t)df__tds_pow10_u64[7 - tc->scale]), tc->scale, text, sizeof text);
        } else if (tc->type == DF_MSSQL_DATETIME) {
            if (t.days < TDS_DAYS_0001_TO_1900 - 53690) { *why = "overflow"; return DF_ERR_VALUE_CONVERSION; }
            fmt_legacy_datetime(t, text, sizeof text);
        } else if (tc->type == DF_MSSQL_SMALLDATETIME) {
            int64_t mins = (t.ticks + 300000000LL) / 600000000LL;
            if (mins >= 1440) { mins -= 1440; t.days++; }
            t.ticks = mins * 600000000LL;
            if (t.days < TDS_DAYS_0001_TO_1900 || t.days > TDS_DAYS_0001_TO_1900 + 65535) { *why = "overflow"; return DF_ERR_VALUE_CONVERSION; }
            fmt_datetime(&t, 0, false, text, sizeof text);
        } else {
            round_norm(&t, tc->scale);
            if (t.days > 3652058) { *why = "overflow"; return DF_ERR_VALUE_CONVERSION; }
            fmt_datetime(&t, tc->scale, tc->type == DF_MSSQL_DATETIMEOFFSET, text, sizeof text);
        }
        sqlite3_bind_text(st, idx, text, -1, SQLITE_TRANSIENT);
        return DF_OK;
    }
    case DF_MSSQL_UNIQUEIDENTIFIER:
        if (v->kind == TDS_V_GUID) {
            df__tds_format_guid(v->bytes, text);
        } else if (v->kind == TDS_V_BYTES && wire_text(ti, v, tmp) == DF_OK && tmp->data &&
                   df__tds_parse_guid(tmp->data, tmp->len, (uint8_t *)text + 64)) {
            df__tds_format_guid((uint8_t *)text + 64, text);
        } else {
            *why = "type";
            return DF_ERR_VALUE_CONVERSION;
        }
        sqlite3_bind_text(st, idx, text, 36, SQLITE_TRANSIENT);
        return DF_OK;
    case DF_MSSQL_BINARY: case DF_MSSQL_VARBINARY:
        if (v->kind != TDS_V_BYTES && v->kind != TDS_V_GUID) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
        if (tc->length >= 0 && v->len > (size_t)tc->length) { *why = "length"; return DF_ERR_VALUE_CONVERSION; }
        if (tc->type == DF_MSSQL_BINARY && v->len < (size_t)tc->length) {
            /* binary(n) is padded with zero bytes */
            df_buf_reset(tmp);
            df_buf_append(tmp, v->bytes, v->len, NULL);
            while (tmp->len < (size_t)tc->length) df_buf_append_char(tmp, 0, NULL);
            sqlite3_bind_blob64(st, idx, tmp->data, tmp->len, SQLITE_TRANSIENT);
            return DF_OK;
        }
        sqlite3_bind_blob64(st, idx, v->len ? v->bytes : (const uint8_t *)"", v->len, SQLITE_TRANSIENT);
        return DF_OK;
    default: { /* character targets */
        const char *s;
        size_t n;
        if (v->kind == TDS_V_BYTES) {
            if (wire_text(ti, v, tmp) != DF_OK) { *why = "type"; return DF_ERR_VALUE_CONVERSION; }
            s = tmp->data ? tmp->data : "";
            n = tmp->len;
        } else if (v->kind == TDS_V_INT) {
            snprintf(text, sizeof text, "%lld", (long long)v->i);
            s = text;
            n = strlen(text);
        } else {
            *why = "type";
            return DF_ERR_VALUE_CONVERSION;
        }
        if (tc->length >= 0) {
            bool national = tc->type == DF_MSSQL_NCHAR || tc->type == DF_MSSQL_NVARCHAR;
            size_t units = national ? utf8_units16(s) : n;
            if (!national) {
                /* varchar length counts code-page bytes: every scalar is one byte in 1252. */
                units = 0;
                for (size_t i = 0; i < n; i++) units += (s[i] & 0xC0) != 0x80;
            }
            if (units > (size_t)tc->length) { *why = "length"; return DF_ERR_VALUE_CONVERSION; }
            if (tc->type == DF_MSSQL_CHAR || tc->type == DF_MSSQL_NCHAR) {
                /* char(n)/nchar(n) are padded with spaces to n characters */
                if (s != tmp->data) {
                    df_buf_reset(tmp);
                    df_buf_append(tmp, s, n, NULL);
                }
                for (; units < (size_t)tc->length; units++) df_buf_append_char(tmp, ' ', NULL);
                s = tmp->data;
                n = tmp->len;
            }
        }
        sqlite3_bind_text64(st, idx, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
        return DF_OK;
    }
    }
}

/* ------------------------------------------------------------------------ */
/* SQLite → result values                                                    */

void peer_result_typeinfo(const df_mssql_column *col, bool nullable, df__tds_typeinfo *ti) {
    df_mssql_column c = *col;
    if (df__mssql_column_typeinfo(&c, ti, NULL) != DF_OK) {
        c.type = DF_MSSQL_NVARCHAR;
        c.length = 4000;
        df__mssql_column_typeinfo(&c, ti, NULL);
    }
    if (nullable) return;
    /* SQL Server describes NOT NULL columns of these types with the fixed types. */
    uint8_t fixed = 0;
    switch (ti->type) {
    case TDS_T_INTN: fixed = ti->max_len == 1 ? TDS_T_INT1 : ti->max_len == 2 ? TDS_T_INT2 : ti->max_len == 4 ? TDS_T_INT4 : TDS_T_INT8; break;
    case TDS_T_BITN: fixed = TDS_T_BIT; break;
    case TDS_T_FLTN: fixed = ti->max_len == 4 ? TDS_T_FLT4 : TDS_T_FLT8; break;
    case TDS_T_MONEYN: fixed = ti->max_len == 4 ? TDS_T_MONEY4 : TDS_T_MONEY; break;
    case TDS_T_DATETIMN: fixed = ti->max_len == 4 ? TDS_T_DATETIM4 : TDS_T_DATETIME; break;
    default: return;
    }
    ti->type = fixed;
    ti->size_class = TDS_SC_FIXED;
}

static df_errkind put_null(df_buf *out, const df__tds_typeinfo *ti) {
    switch (ti->size_class) {
    case TDS_SC_BYTELEN: return df__tds_put_u8(out, 0, NULL);
    case TDS_SC_USHORTLEN: return df__tds_put_u16(out, 0xFFFF, NULL);
    case TDS_SC_PLP: return df__tds_put_u64(out, UINT64_MAX, NULL);
    default: { uint8_t z[8] = {0}; return df_buf_append(out, z, ti->max_len, NULL); } /* NOT NULL column holding NULL */
    }
}

/* Writes a fixed/N value body with or without the length byte. */
static df_errkind put_body(df_buf *out, const df__tds_typeinfo *ti, const void *p, unsigned len) {
    if (ti->size_class == TDS_SC_BYTELEN) DF_TRY(df__tds_put_u8(out, (uint8_t)len, NULL));
    return df_buf_append(out, p, len, NULL);
}

static df_errkind put_string(df_buf *out, const df__tds_typeinfo *ti, sqlite3_stmt *st, int idx, df_error *err) {
    df_buf tmp;
    df_buf_init(&tmp, 0);
    df_errkind k = DF_OK;
    bool national = ti->type == TDS_T_NVARCHAR || ti->type == TDS_T_NCHAR;
    if (ti->type == TDS_T_BIGVARBIN || ti->type == TDS_T_BIGBINARY) {
        const void *b = sqlite3_column_blob(st, idx);
        k = df_buf_append(&tmp, b ? b : "", (size_t)sqlite3_column_bytes(st, idx), err);
    } else {
        const char *s = (const char *)sqlite3_column_text(st, idx);
        if (!s) s = "";
        if (national) k = df__tds_put_utf16(&tmp, s, NULL, err);
        else {
            /* UTF-8 → code page 1252, '?' for what it cannot hold. */
            for (const unsigned char *p = (const unsigned char *)s; *p && k == DF_OK;) {
                uint32_t u = *p++;
                if (u >= 0xC0) {
                    int extra = u >= 0xF0 ? 3 : u >= 0xE0 ? 2 : 1;
                    u &= 0x3F >> extra;
                    for (int e = 0; e < extra && (*p & 0xC0) == 0x80; e++) u = (u << 6) | (*p++ & 0x3F);
                }
                int b = df__tds_unicode_to_cp1252(u);
                k = df__tds_put_u8(&tmp, (uint8_t)(b < 0 ? '?' : b), err);
            }
        }
    }
    if (k == DF_OK) {
        if (ti->plp) {
            k = df__tds_put_u64(out, tmp.len, err);
            if (k == DF_OK && tmp.len) k = df__tds_put_u32(out, (uint32_t)tmp.len, err);
            if (k == DF_OK && tmp.len) k = df_buf_append(out, tmp.data, tmp.len, err);
            if (k == DF_OK) k = df__tds_put_u32(out, 0, err);
        } else {
            size_t n = tmp.len > ti->max_len ? ti->max_len : tmp.len;
            k = df__tds_put_u16(out, (uint16_t)n, err);
            if (k == DF_OK && n) k = df_buf_append(out, tmp.data, n, err);
        }
    }
    df_buf_free(&tmp);
    return k;
}

/* Reads the column as decimal text at `scale`. */
static bool column_decimal(sqlite3_stmt *st, int idx, int scale, df_i128 *v) {
    char buf[96];
    if (sqlite3_column_type(st, idx) == SQLITE_INTEGER) {
        *v = (df_i128)sqlite3_column_int64(st, idx) * df__tds_pow10(scale);
        return true;
    }
    if (sqlite3_column_type(st, idx) == SQLITE_FLOAT) {
        snprintf(buf, sizeof buf, "%.*f", scale, sqlite3_column_double(st, idx));
        return parse_decimal(buf, scale, v);
    }
    const char *s = (const char *)sqlite3_column_text(st, idx);
    return s && parse_decimal(s, scale, v);
}

static df_errkind put_temporal(df_buf *out, const df__tds_typeinfo *ti, sqlite3_stmt *st, int idx, df_error *err) {
    const char *s = (const char *)sqlite3_column_text(st, idx);
    tnorm t;
    if (!s || !parse_temporal(s, &t)) return df_error_set(err, DF_ERR_VALUE_CONVERSION, "stored value is not a date/time");
    uint8_t b[16];
    unsigned tl = df__tds_time_len(ti->scale);
    switch (ti->type) {
    case TDS_T_DATEN:
        for (int i = 0; i < 3; i++) b[i] = (uint8_t)(t.days >> (8 * i));
        return put_body(out, ti, b, 3);
    case TDS_T_TIMEN: case TDS_T_DATETIME2N: case TDS_T_DATETIMEOFFSETN: {
        round_norm(&t, ti->scale);
        int64_t days = t.days, ticks = t.ticks;
        if (ti->type == TDS_T_DATETIMEOFFSETN) { /* stored local → UTC on the wire */
            ticks -= (int64_t)t.offset * 600000000LL;
            if (ticks < 0) { ticks += T7_DAY; days--; }
            if (ticks >= T7_DAY) { ticks -= T7_DAY; days++; }
        }
        uint64_t scaled = (uint64_t)(ticks / (int64_t)df__tds_pow10_u64[7 - ti->scale]);
        for (unsigned i = 0; i < tl; i++) b[i] = (uint8_t)(scaled >> (8 * i));
        unsigned n = tl;
        if (ti->type != TDS_T_TIMEN) { for (int i = 0; i < 3; i++) b[n + (unsigned)i] = (uint8_t)(days >> (8 * i)); n += 3; }
        if (ti->type == TDS_T_DATETIMEOFFSETN) { df_store_le16(b + n, (uint16_t)(int16_t)t.offset); n += 2; }
        return put_body(out, ti, b, n);
    }
    default: { /* datetime / smalldatetime, N or fixed */
        bool small = ti->max_len == 4;
        int64_t days = t.days - TDS_DAYS_0001_TO_1900;
        if (small) {
            int64_t mins = (t.ticks + 300000000LL) / 600000000LL;
            if (mins >= 1440) { mins -= 1440; days++; }
            df_store_le16(b, (uint16_t)days);
            df_store_le16(b + 2, (uint16_t)mins);
            return put_body(out, ti, b, 4);
        }
        int64_t ms = (t.ticks + 5000) / 10000;
        int64_t frag = (ms * 300 + 500) / 1000;
        if (frag >= 300LL * 86400) { frag -= 300LL * 86400; days++; }
        df_store_le32(b, (uint32_t)(int32_t)days);
        df_store_le32(b + 4, (uint32_t)frag);
        return put_body(out, ti, b, 8);
    }
    }
}

df_errkind peer_encode_value(df_buf *out, const df__tds_typeinfo *ti, sqlite3_stmt *st, int idx, df_error *err) {
    if (sqlite3_column_type(st, idx) == SQLITE_NULL) return put_null(out, ti);
    uint8_t b[17];
    switch (ti->type) {
    case TDS_T_INTN: case TDS_T_INT1: case TDS_T_INT2: case TDS_T_INT4: case TDS_T_INT8: case TDS_T_BITN: case TDS_T_BIT: {
        int64_t v = sqlite3_column_int64(st, idx);
        if (sqlite3_column_type(st, idx) == SQLITE_TEXT) v = strtoll((const char *)sqlite3_column_text(st, idx), NULL, 10);
        if (ti->type == TDS_T_BITN || ti->type == TDS_T_BIT) v = v != 0;
        memcpy(b, &v, 8);
        return put_body(out, ti, b, ti->max_len);
    }
    case TDS_T_FLTN: case TDS_T_FLT4: case TDS_T_FLT8: {
        double d = sqlite3_column_double(st, idx);
        if (ti->max_len == 4) { float f = (float)d; memcpy(b, &f, 4); }
        else memcpy(b, &d, 8);
        return put_body(out, ti, b, ti->max_len);
    }
    case TDS_T_MONEYN: case TDS_T_MONEY: case TDS_T_MONEY4: {
        df_i128 v;
        if (!column_decimal(st, idx, 4, &v)) return df_error_set(err, DF_ERR_VALUE_CONVERSION, "stored value is not a number");
        if (ti->max_len == 4) df_store_le32(b, (uint32_t)(int32_t)v);
        else { uint64_t u = (uint64_t)(int64_t)v; df_store_le32(b, (uint32_t)(u >> 32)); df_store_le32(b + 4, (uint32_t)u); }
        return put_body(out, ti, b, ti->max_len);
    }
    case TDS_T_DECIMALN: case TDS_T_NUMERICN: {
        df_i128 v;
        if (!column_decimal(st, idx, ti->scale, &v)) return df_error_set(err, DF_ERR_VALUE_CONVERSION, "stored value is not a number");
        df_u128 m = v < 0 ? (df_u128)0 - (df_u128)v : (df_u128)v;
        unsigned mag = ti->max_len - 1;
        b[0] = v >= 0;
        for (unsigned i = 0; i < mag; i++) { b[1 + i] = (uint8_t)m; m >>= 8; }
        return put_body(out, ti, b, ti->max_len);
    }
    case TDS_T_GUID: {
        const char *s = (const char *)sqlite3_column_text(st, idx);
        if (!s || !df__tds_parse_guid(s, strlen(s), b)) return df_error_set(err, DF_ERR_VALUE_CONVERSION, "stored value is not a GUID");
        return put_body(out, ti, b, 16);
    }
    case TDS_T_DATEN: case TDS_T_TIMEN: case TDS_T_DATETIME2N: case TDS_T_DATETIMEOFFSETN:
    case TDS_T_DATETIMN: case TDS_T_DATETIME: case TDS_T_DATETIM4:
        return put_temporal(out, ti, st, idx, err);
    default:
        return put_string(out, ti, st, idx, err);
    }
}
