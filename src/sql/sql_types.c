/*
 * SQL type names, Arrow type names and DataFusion's coercion rules.
 *
 * Coercion follows DataFusion (datafusion/expr-common type_coercion) so that
 * result types match the reference engine: integer operands widen to the
 * narrowest type holding both (UInt64 with a signed type -> Decimal128(20,0)),
 * floats win over integers, decimals win over integers (which become
 * Decimal(3|5|10|20, 0)), decimals compared with floats become
 * Decimal128(30, 15) but decimal arithmetic with floats is done in Float64,
 * strings compared with numbers are cast to the number's type (an error
 * for text that is not such a number), strings compared with
 * temporals are parsed as the temporal type, two timestamps meet at the
 * coarser unit.  Decimal arithmetic result types are arrow's (Hive rules;
 * division adds 4 to the scale).
 */
#include "sql/sql_types.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/logical_plan.h"
#include "sql/sql_ast.h"
#include "sql/sql_lexer.h"

static df_type *ref(df_type *t) { return df_type_retain(t); }

bool df__sqlt_decimal_ps(const df_type *t, int *p, int *s) {
    if (!t || (t->id != DF_TYPE_DECIMAL128 && t->id != DF_TYPE_DECIMAL256)) return false;
    *p = t->precision;
    *s = t->scale;
    return true;
}

bool df__sqlt_is_string(const df_type *t) { return t && t->id == DF_TYPE_UTF8; }
bool df__sqlt_is_null(const df_type *t) { return t && t->id == DF_TYPE_NULL; }

static bool is_int(const df_type *t) { return df_type_is_integer(t); }
static bool is_float(const df_type *t) { return df_type_is_floating(t); }
static bool is_dec(const df_type *t) { return df_type_is_decimal(t); }
static bool is_num(const df_type *t) { return df_type_is_numeric(t); }

df_type *df__sqlt_numeric_to_decimal(const df_type *t) {
    switch (t->id) {
    case DF_TYPE_INT8: case DF_TYPE_UINT8: return df_type_decimal(3, 0);
    case DF_TYPE_INT16: case DF_TYPE_UINT16: return df_type_decimal(5, 0);
    case DF_TYPE_INT32: case DF_TYPE_UINT32: return df_type_decimal(10, 0);
    case DF_TYPE_INT64: case DF_TYPE_UINT64: return df_type_decimal(20, 0);
    case DF_TYPE_FLOAT16: return df_type_decimal(6, 3);
    case DF_TYPE_FLOAT32: return df_type_decimal(14, 7);
    case DF_TYPE_FLOAT64: return df_type_decimal(30, 15);
    case DF_TYPE_DECIMAL128: case DF_TYPE_DECIMAL256: return ref((df_type *)t);
    default: return NULL;
    }
}

/* Decimal holding both: (max(s1,s2) + max(p1-s1, p2-s2), max(s1,s2)), capped. */
static df_type *wider_decimal(const df_type *a, const df_type *b) {
    int p1, s1, p2, s2;
    if (!df__sqlt_decimal_ps(a, &p1, &s1) || !df__sqlt_decimal_ps(b, &p2, &s2)) return NULL;
    int s = DF_MAX(s1, s2);
    int range = DF_MAX(p1 - s1, p2 - s2);
    int p = range + s;
    bool wide = a->id == DF_TYPE_DECIMAL256 || b->id == DF_TYPE_DECIMAL256;
    int maxp = wide ? 76 : SQLT_MAX_PRECISION;
    if (p > maxp) p = maxp;
    if (s > maxp) s = maxp;
    if (!wide && p <= SQLT_MAX_PRECISION) return df_type_decimal(p, s);
    return df_type_decimal(DF_MAX(p, 39), s);
}

/* DataFusion numerical_coercion for two different numeric non-decimal types. */
static df_type *numerical(const df_type *a, const df_type *b) {
    df_type_id x = a->id, y = b->id;
    if (x == DF_TYPE_FLOAT64 || y == DF_TYPE_FLOAT64) return df_type_float64();
    if (x == DF_TYPE_FLOAT32 || y == DF_TYPE_FLOAT32) return df_type_float32();
    if (x == DF_TYPE_FLOAT16 || y == DF_TYPE_FLOAT16) return df_type_float16();
#define SIGNED(t) ((t) == DF_TYPE_INT8 || (t) == DF_TYPE_INT16 || (t) == DF_TYPE_INT32 || (t) == DF_TYPE_INT64)
    if ((x == DF_TYPE_UINT64 && SIGNED(y)) || (y == DF_TYPE_UINT64 && SIGNED(x))) return df_type_decimal(20, 0);
    if (x == DF_TYPE_UINT64 || y == DF_TYPE_UINT64) return df_type_uint64();
    if (x == DF_TYPE_INT64 || y == DF_TYPE_INT64) return df_type_int64();
    if ((x == DF_TYPE_UINT32 && SIGNED(y)) || (y == DF_TYPE_UINT32 && SIGNED(x))) return df_type_int64();
    if (x == DF_TYPE_UINT32 || y == DF_TYPE_UINT32) return df_type_uint32();
    if (x == DF_TYPE_INT32 || y == DF_TYPE_INT32) return df_type_int32();
    if ((x == DF_TYPE_UINT16 && SIGNED(y)) || (y == DF_TYPE_UINT16 && SIGNED(x))) return df_type_int32();
    if (x == DF_TYPE_UINT16 || y == DF_TYPE_UINT16) return df_type_uint16();
    if (x == DF_TYPE_INT16 || y == DF_TYPE_INT16) return df_type_int16();
    if ((x == DF_TYPE_UINT8 && SIGNED(y)) || (y == DF_TYPE_UINT8 && SIGNED(x))) return df_type_int16();
    if (x == DF_TYPE_INT8 || y == DF_TYPE_INT8) return df_type_int8();
    if (x == DF_TYPE_UINT8 || y == DF_TYPE_UINT8) return df_type_uint8();
#undef SIGNED
    return NULL;
}

/* binary_numeric_coercion: decimals first (wider / common decimal), then numerical. */
static df_type *binary_numeric(const df_type *a, const df_type *b) {
    if (!is_num(a) || !is_num(b)) return NULL;
    if (df_type_equals(a, b)) return ref((df_type *)a);
    if (is_dec(a) || is_dec(b)) {
        df_type *da = df__sqlt_numeric_to_decimal(a), *db = df__sqlt_numeric_to_decimal(b);
        df_type *r = (da && db) ? wider_decimal(da, db) : NULL;
        df_type_release(da);
        df_type_release(db);
        return r;
    }
    return numerical(a, b);
}

static df_time_unit coarser_unit(df_time_unit a, df_time_unit b) { return a < b ? a : b; }

static df_type *temporal(const df_type *a, const df_type *b) {
    df_type_id x = a->id, y = b->id;
    if (x == DF_TYPE_TIMESTAMP && y == DF_TYPE_TIMESTAMP) {
        const char *tz = a->timezone ? a->timezone : b->timezone;
        return df_type_timestamp(coarser_unit(a->unit, b->unit), tz);
    }
    if ((x == DF_TYPE_INTERVAL_MDN || x == DF_TYPE_DURATION) && (y == DF_TYPE_INTERVAL_MDN || y == DF_TYPE_DURATION))
        return df_type_interval_mdn();
    if ((x == DF_TYPE_DATE32 && is_int(b)) || (y == DF_TYPE_DATE32 && is_int(a))) return df_type_date32();
    if ((x == DF_TYPE_DATE64 && is_int(b)) || (y == DF_TYPE_DATE64 && is_int(a))) return df_type_date64();
    if ((x == DF_TYPE_DATE32 && y == DF_TYPE_DATE64) || (x == DF_TYPE_DATE64 && y == DF_TYPE_DATE32))
        return df_type_date64();
    bool xd = x == DF_TYPE_DATE32 || x == DF_TYPE_DATE64, yd = y == DF_TYPE_DATE32 || y == DF_TYPE_DATE64;
    bool xt = x == DF_TYPE_TIME32 || x == DF_TYPE_TIME64, yt = y == DF_TYPE_TIME32 || y == DF_TYPE_TIME64;
    if ((xd && yt) || (xt && yd)) return df_type_timestamp(DF_UNIT_NANO, NULL);
    if ((x == DF_TYPE_TIMESTAMP && yd) || (xd && y == DF_TYPE_TIMESTAMP)) return df_type_timestamp(DF_UNIT_NANO, NULL);
    if (xt && yt) return df_type_time(a->unit > b->unit ? a->unit : b->unit);
    return NULL;
}

/* String compared with a temporal: the temporal type (timestamps at nanoseconds). */
static df_type *string_temporal(const df_type *a, const df_type *b) {
    const df_type *s = df__sqlt_is_string(a) ? a : df__sqlt_is_string(b) ? b : NULL;
    const df_type *t = s == a ? b : a;
    if (!s) return NULL;
    switch (t->id) {
    case DF_TYPE_DATE32: case DF_TYPE_DATE64: case DF_TYPE_TIME32: case DF_TYPE_TIME64:
    case DF_TYPE_INTERVAL_MDN:
        return ref((df_type *)t);
    case DF_TYPE_TIMESTAMP: return df_type_timestamp(DF_UNIT_NANO, t->timezone);
    default: return NULL;
    }
}

df_type *df__sqlt_comparison(const df_type *a, const df_type *b) {
    if (df_type_equals(a, b)) return ref((df_type *)a);
    df_type *r = binary_numeric(a, b);
    if (!r) r = temporal(a, b);
    if (!r && df__sqlt_is_null(a)) r = ref((df_type *)b);
    if (!r && df__sqlt_is_null(b)) r = ref((df_type *)a);
    if (!r && df__sqlt_is_string(a) && is_num(b)) r = ref((df_type *)b);
    if (!r && df__sqlt_is_string(b) && is_num(a)) r = ref((df_type *)a);
    if (!r) r = string_temporal(a, b);
    if (!r && ((a->id == DF_TYPE_BINARY && (b->id == DF_TYPE_UTF8 || b->id == DF_TYPE_FIXED_BINARY)) ||
               (b->id == DF_TYPE_BINARY && (a->id == DF_TYPE_UTF8 || a->id == DF_TYPE_FIXED_BINARY))))
        r = df_type_binary();
    return r;
}

static bool arith_decimal(sqlt_arith_op op, const df_type *a, const df_type *b, df_type **ret) {
    int p1, s1, p2, s2, p, s;
    if (!df__sqlt_decimal_ps(a, &p1, &s1) || !df__sqlt_decimal_ps(b, &p2, &s2)) return false;
    int maxp = (a->id == DF_TYPE_DECIMAL256 || b->id == DF_TYPE_DECIMAL256) ? 76 : SQLT_MAX_PRECISION;
    switch (op) {
    case SQLT_ADD:
    case SQLT_SUB:
        s = DF_MAX(s1, s2);
        p = DF_MIN(s + DF_MAX(p1 - s1, p2 - s2) + 1, maxp);
        break;
    case SQLT_MUL:
        s = s1 + s2;
        if (s > maxp) return false;
        p = DF_MIN(p1 + p2 + 1, maxp);
        break;
    case SQLT_DIV:
        s = DF_MIN(s1 + 4, maxp);
        p = DF_MIN(p1 - s1 + s2 + s, maxp);
        break;
    case SQLT_MOD:
    default:
        s = DF_MAX(s1, s2);
        p = DF_MIN(s + DF_MIN(p1 - s1, p2 - s2), maxp);
        break;
    }
    if (p < 1) p = 1;
    if (s > p) p = DF_MIN(s, maxp);
    *ret = (maxp == 76 && p <= 38) ? df_type_decimal(39, s) : df_type_decimal(p, s);
    return *ret != NULL;
}

bool df__sqlt_arith(sqlt_arith_op op, const df_type *a, const df_type *b, df_type **lt, df_type **rt, df_type **ret) {
    *lt = *rt = *ret = NULL;
    bool an = df__sqlt_is_null(a), bn = df__sqlt_is_null(b);
    if (an && bn) {
        *lt = df_type_int64();
        *rt = df_type_int64();
        *ret = df_type_int64();
        return true;
    }
    if (an) a = b;
    if (bn) b = a;
    /* Temporal arithmetic. */
    df_type_id x = a->id, y = b->id;
    bool xdate = x == DF_TYPE_DATE32 || x == DF_TYPE_DATE64, ydate = y == DF_TYPE_DATE32 || y == DF_TYPE_DATE64;
    bool xtime = x == DF_TYPE_TIME32 || x == DF_TYPE_TIME64, ytime = y == DF_TYPE_TIME32 || y == DF_TYPE_TIME64;
    if (op == SQLT_SUB && xdate && x == y) {
        /* date - date: the number of days */
        *lt = ref((df_type *)a);
        *rt = ref((df_type *)b);
        *ret = df_type_int64();
        return true;
    }
    if (((op == SQLT_ADD || op == SQLT_SUB) && xdate && is_int(b)) || (op == SQLT_ADD && ydate && is_int(a))) {
        /* date +/- integer: that many days */
        *lt = xdate ? ref((df_type *)a) : df_type_int64();
        *rt = xdate ? df_type_int64() : ref((df_type *)b);
        *ret = ref((df_type *)(xdate ? a : b));
        return true;
    }
    if (((op == SQLT_ADD || op == SQLT_SUB) && xdate && ytime) || (op == SQLT_ADD && xtime && ydate)) {
        /* date +/- time of day: a timestamp */
        *lt = ref((df_type *)a);
        *rt = ref((df_type *)b);
        *ret = df_type_timestamp(DF_UNIT_NANO, NULL);
        return true;
    }
    if ((op == SQLT_SUB && xtime && ytime) || ((op == SQLT_ADD || op == SQLT_SUB) && xtime && y == DF_TYPE_INTERVAL_MDN) ||
        (op == SQLT_ADD && x == DF_TYPE_INTERVAL_MDN && ytime)) {
        /* time - time, time +/- interval: an interval (times count as the interval since midnight) */
        *lt = ref((df_type *)a);
        *rt = ref((df_type *)b);
        *ret = df_type_interval_mdn();
        return true;
    }
    if ((op == SQLT_ADD || op == SQLT_SUB) && x == DF_TYPE_TIMESTAMP && y == DF_TYPE_DURATION) {
        /* timestamp +/- duration: the duration as an interval, the result in the timestamp's unit */
        *lt = ref((df_type *)a);
        *rt = df_type_interval_mdn();
        *ret = ref((df_type *)a);
        return true;
    }
    if (op == SQLT_ADD && x == DF_TYPE_DURATION && y == DF_TYPE_TIMESTAMP) {
        *lt = df_type_interval_mdn();
        *rt = ref((df_type *)b);
        *ret = ref((df_type *)b);
        return true;
    }
    if ((op == SQLT_ADD || op == SQLT_SUB) && (xdate || x == DF_TYPE_TIMESTAMP) && y == DF_TYPE_INTERVAL_MDN) {
        *lt = ref((df_type *)a);
        *rt = df_type_interval_mdn();
        *ret = ref((df_type *)a);
        return true;
    }
    if (op == SQLT_ADD && (ydate || y == DF_TYPE_TIMESTAMP) && x == DF_TYPE_INTERVAL_MDN) {
        *lt = df_type_interval_mdn();
        *rt = ref((df_type *)b);
        *ret = ref((df_type *)b);
        return true;
    }
    if (op == SQLT_SUB && ((x == DF_TYPE_TIMESTAMP && ydate) || (xdate && y == DF_TYPE_TIMESTAMP))) {
        /* timestamp - date, date - timestamp: both as nanosecond timestamps (dates at midnight UTC) */
        df_type *c = df_type_timestamp(DF_UNIT_NANO, x == DF_TYPE_TIMESTAMP ? a->timezone : b->timezone);
        *lt = c;
        *rt = c ? ref(c) : NULL;
        *ret = df_type_duration(DF_UNIT_NANO);
        return *lt && *rt && *ret;
    }
    if (op == SQLT_SUB && x == DF_TYPE_TIMESTAMP && y == DF_TYPE_TIMESTAMP) {
        /* two different time zones do not meet (a zone and none do) */
        if (a->timezone && b->timezone && strcmp(a->timezone, b->timezone) != 0) return false;
        df_type *c = df_type_timestamp(coarser_unit(a->unit, b->unit), a->timezone ? a->timezone : b->timezone);
        *lt = c;
        *rt = ref(c);
        *ret = df_type_duration(c ? c->unit : DF_UNIT_NANO);
        return *lt && *rt && *ret;
    }
    if ((op == SQLT_ADD || op == SQLT_SUB) && x == DF_TYPE_INTERVAL_MDN && y == DF_TYPE_INTERVAL_MDN) {
        *lt = ref((df_type *)a);
        *rt = ref((df_type *)b);
        *ret = ref((df_type *)a);
        return true;
    }
    if (!is_num(a) || !is_num(b)) return false;
    if (is_dec(a) || is_dec(b)) {
        if (is_float(a) || is_float(b)) {
            *lt = df_type_float64();
            *rt = df_type_float64();
            *ret = df_type_float64();
            return true;
        }
        *lt = df__sqlt_numeric_to_decimal(a);
        *rt = df__sqlt_numeric_to_decimal(b);
        if (*lt && *rt && arith_decimal(op, *lt, *rt, ret)) return true;
        df_type_release(*lt);
        df_type_release(*rt);
        *lt = *rt = NULL;
        return false;
    }
    df_type *c = df_type_equals(a, b) ? ref((df_type *)a) : numerical(a, b);
    if (!c) return false;
    *lt = c;
    *rt = ref(c);
    *ret = ref(c);
    return true;
}

/* type_union_resolution_coercion for two non-null types. */
static df_type *union2(const df_type *a, const df_type *b, bool text_wins) {
    if (df_type_equals(a, b)) return ref((df_type *)a);
    df_type *r = binary_numeric(a, b);
    if (!r) {
        /* Timestamps: union keeps the finer unit only if equal; use comparison rules. */
        r = temporal(a, b);
    }
    if (!r && df__sqlt_is_string(a) && df__sqlt_is_string(b)) r = df_type_utf8();
    if (!r && text_wins && ((df__sqlt_is_string(a) && is_num(b)) || (df__sqlt_is_string(b) && is_num(a))))
        r = df_type_utf8();
    if (!r && df__sqlt_is_string(a) && is_num(b)) r = ref((df_type *)b);
    if (!r && df__sqlt_is_string(b) && is_num(a)) r = ref((df_type *)a);
    if (!r && ((a->id == DF_TYPE_BINARY && b->id == DF_TYPE_UTF8) || (a->id == DF_TYPE_UTF8 && b->id == DF_TYPE_BINARY)))
        r = df_type_binary();
    return r;
}

typedef enum { CAT_NUMERIC, CAT_BOOL, CAT_DATETIME, CAT_UNKNOWN, CAT_OTHER } type_cat;

static type_cat category(const df_type *t) {
    if (is_num(t)) return CAT_NUMERIC;
    if (t->id == DF_TYPE_BOOL) return CAT_BOOL;
    if (t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_NULL) return CAT_UNKNOWN;
    if (df_type_is_temporal(t) || t->id == DF_TYPE_INTERVAL_MDN) return CAT_DATETIME;
    return CAT_OTHER;
}

static df_type *union_n(const df_type *const *types, int32_t n, bool text_wins) {
    if (n <= 0) return NULL;
    bool all_same = true, all_null = true;
    for (int32_t i = 0; i < n; i++) {
        if (!df_type_equals(types[i], types[0])) all_same = false;
        if (!df__sqlt_is_null(types[i])) all_null = false;
    }
    if (all_same) return ref((df_type *)types[0]);
    if (all_null) return df_type_null();
    /* All non-null, non-string categories must agree. */
    type_cat cat = CAT_UNKNOWN;
    for (int32_t i = 0; i < n; i++) {
        type_cat c = category(types[i]);
        if (c == CAT_UNKNOWN) continue;
        if (cat == CAT_UNKNOWN) cat = c;
        else if (c != cat) return NULL;
    }
    df_type *cand = NULL;
    for (int32_t i = 0; i < n; i++) {
        if (df__sqlt_is_null(types[i])) continue;
        if (!cand) {
            cand = ref((df_type *)types[i]);
            continue;
        }
        df_type *next = union2(types[i], cand, text_wins);
        df_type_release(cand);
        if (!next) return NULL;
        cand = next;
    }
    return cand;
}

df_type *df__sqlt_union(const df_type *const *types, int32_t n) { return union_n(types, n, false); }
df_type *df__sqlt_union_text(const df_type *const *types, int32_t n) { return union_n(types, n, true); }

bool df__sqlt_can_cast(const df_type *from, const df_type *to) {
    if (df_type_equals(from, to) || from->id == DF_TYPE_NULL) return true;
    bool fs = from->id == DF_TYPE_UTF8, ts = to->id == DF_TYPE_UTF8;
    bool fn = is_num(from), tn = is_num(to);
    bool fb = from->id == DF_TYPE_BOOL, tb = to->id == DF_TYPE_BOOL;
    bool ft = df_type_is_temporal(from), tt = df_type_is_temporal(to);
    if (df_type_is_nested(from) || df_type_is_nested(to)) return false;
    if (ts) return true;                        /* anything scalar prints */
    if (fs) return tn || tb || tt || to->id == DF_TYPE_BINARY || to->id == DF_TYPE_INTERVAL_MDN;
    if (fn && (tn || tb)) return true;
    if (fb && tn) return true;
    if (ft && tt) return true;
    if ((is_int(from) && tt) || (ft && is_int(to))) return true;
    if (fn && to->id == DF_TYPE_TIMESTAMP) return true;
    if (from->id == DF_TYPE_BINARY && to->id == DF_TYPE_FIXED_BINARY) return true;
    if (from->id == DF_TYPE_FIXED_BINARY && to->id == DF_TYPE_BINARY) return true;
    if (from->id == DF_TYPE_DURATION && to->id == DF_TYPE_INTERVAL_MDN) return true;
    return false;
}

static const char *unit_short(df_time_unit u) {
    switch (u) {
    case DF_UNIT_SECOND: return "s";
    case DF_UNIT_MILLI: return "ms";
    case DF_UNIT_MICRO: return "\xC2\xB5s";
    default: return "ns";
    }
}

df_errkind df__sqlt_display(const df_type *t, df_buf *out, df_error *err) {
    switch (t->id) {
    case DF_TYPE_NULL: return df_buf_append_str(out, "Null", err);
    case DF_TYPE_BOOL: return df_buf_append_str(out, "Boolean", err);
    case DF_TYPE_INT8: return df_buf_append_str(out, "Int8", err);
    case DF_TYPE_INT16: return df_buf_append_str(out, "Int16", err);
    case DF_TYPE_INT32: return df_buf_append_str(out, "Int32", err);
    case DF_TYPE_INT64: return df_buf_append_str(out, "Int64", err);
    case DF_TYPE_UINT8: return df_buf_append_str(out, "UInt8", err);
    case DF_TYPE_UINT16: return df_buf_append_str(out, "UInt16", err);
    case DF_TYPE_UINT32: return df_buf_append_str(out, "UInt32", err);
    case DF_TYPE_UINT64: return df_buf_append_str(out, "UInt64", err);
    case DF_TYPE_FLOAT16: return df_buf_append_str(out, "Float16", err);
    case DF_TYPE_FLOAT32: return df_buf_append_str(out, "Float32", err);
    case DF_TYPE_FLOAT64: return df_buf_append_str(out, "Float64", err);
    case DF_TYPE_DECIMAL128: return df_buf_printf(out, err, "Decimal128(%d, %d)", t->precision, t->scale);
    case DF_TYPE_DECIMAL256: return df_buf_printf(out, err, "Decimal256(%d, %d)", t->precision, t->scale);
    case DF_TYPE_DATE32: return df_buf_append_str(out, "Date32", err);
    case DF_TYPE_DATE64: return df_buf_append_str(out, "Date64", err);
    case DF_TYPE_TIME32: return df_buf_printf(out, err, "Time32(%s)", unit_short(t->unit));
    case DF_TYPE_TIME64: return df_buf_printf(out, err, "Time64(%s)", unit_short(t->unit));
    case DF_TYPE_TIMESTAMP:
        if (t->timezone) return df_buf_printf(out, err, "Timestamp(%s, \"%s\")", unit_short(t->unit), t->timezone);
        return df_buf_printf(out, err, "Timestamp(%s)", unit_short(t->unit));
    case DF_TYPE_DURATION: return df_buf_printf(out, err, "Duration(%s)", unit_short(t->unit));
    case DF_TYPE_INTERVAL_MDN: return df_buf_append_str(out, "Interval(MonthDayNano)", err);
    case DF_TYPE_UTF8: return df_buf_append_str(out, "Utf8", err);
    case DF_TYPE_BINARY: return df_buf_append_str(out, "Binary", err);
    case DF_TYPE_FIXED_BINARY: return df_buf_printf(out, err, "FixedSizeBinary(%d)", t->byte_width);
    default: return df_type_display(t, out, err);
    }
}

/* ------------------------------------------------------------------------ */
/* SQL type names                                                            */

static bool name_in(const char *name, const char *const *list) {
    for (; *list; list++)
        if (strcmp(name, *list) == 0) return true;
    return false;
}

df_type *df__sql_type_from_ast(const ast_type *t, const char *text, int32_t text_len, df_error *err) {
    static const char *const k_bool[] = {"boolean", "bool", NULL};
    static const char *const k_i8[] = {"tinyint", "int1", NULL};
    static const char *const k_i16[] = {"smallint", "int2", NULL};
    static const char *const k_i32[] = {"int", "integer", "int4", "mediumint", "signed", NULL};
    static const char *const k_i64[] = {"bigint", "int8", "long", NULL};
    static const char *const k_f32[] = {"real", "float", "float4", NULL};
    static const char *const k_f64[] = {"double", "float8", NULL};
    static const char *const k_dec[] = {"decimal", "numeric", "dec", NULL};
    static const char *const k_str[] = {"varchar", "text", "string", "char", "character", "nvarchar",
                                        "nchar", "bpchar", "clob", NULL};
    static const char *const k_bin[] = {"bytea", "blob", "binary", "varbinary", "bytes", NULL};
    static const char *const k_ts[] = {"timestamp", "datetime", NULL};
    if (t->is_array) {
        df__sql_error_at(err, DF_ERR_SQL_UNSUPPORTED, text, text_len, t->pos, "array types are not supported");
        return NULL;
    }
    const char *n = t->name;
    bool u = t->is_unsigned;
    df_type *r = NULL;
    if (name_in(n, k_bool)) r = df_type_bool();
    else if (name_in(n, k_i8)) r = u ? df_type_uint8() : df_type_int8();
    else if (name_in(n, k_i16)) r = u ? df_type_uint16() : df_type_int16();
    else if (name_in(n, k_i32)) r = u ? df_type_uint32() : df_type_int32();
    else if (name_in(n, k_i64)) r = u ? df_type_uint64() : df_type_int64();
    else if (strcmp(n, "unsigned") == 0) r = df_type_uint32();
    else if (strcmp(n, "uint8") == 0) r = df_type_uint8();
    else if (strcmp(n, "uint16") == 0) r = df_type_uint16();
    else if (strcmp(n, "uint32") == 0) r = df_type_uint32();
    else if (strcmp(n, "uint64") == 0) r = df_type_uint64();
    else if (name_in(n, k_f32)) r = df_type_float32();
    else if (name_in(n, k_f64)) r = df_type_float64();
    else if (name_in(n, k_dec)) {
        int64_t p = t->nparams >= 1 ? t->params[0] : 38, s = t->nparams >= 2 ? t->params[1] : (t->nparams ? 0 : 10);
        if (p < 1 || p > 76 || s > p || s < -p) {
            df__sql_error_at(err, DF_ERR_SQL_TYPE, text, text_len, t->pos,
                         "decimal precision must be between 1 and 76 and scale at most the precision");
            return NULL;
        }
        r = df_type_decimal((int)p, (int)s);
    } else if (name_in(n, k_str)) r = df_type_utf8();
    else if (name_in(n, k_bin)) r = df_type_binary();
    else if (strcmp(n, "date") == 0) r = df_type_date32();
    else if (strcmp(n, "time") == 0) r = df_type_time(DF_UNIT_NANO);
    else if (name_in(n, k_ts)) {
        df_time_unit unit = DF_UNIT_NANO;
        if (t->nparams >= 1) {
            int64_t prec = t->params[0];
            unit = prec == 0 ? DF_UNIT_SECOND : prec <= 3 ? DF_UNIT_MILLI : prec <= 6 ? DF_UNIT_MICRO : DF_UNIT_NANO;
        }
        r = df_type_timestamp(unit, t->with_tz ? "+00:00" : NULL);
    } else if (strcmp(n, "timestamptz") == 0) r = df_type_timestamp(DF_UNIT_NANO, "+00:00");
    else if (strcmp(n, "interval") == 0) r = df_type_interval_mdn();
    else {
        df__sql_error_at(err, DF_ERR_SQL_TYPE, text, text_len, t->pos, "unknown type name `%s`", n);
        return NULL;
    }
    if (!r) DF_OOM(err);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Arrow type names (arrow_cast)                                             */

static const char *skip_ws(const char *s) {
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

static bool eat(const char **s, const char *word) {
    const char *p = skip_ws(*s);
    size_t n = strlen(word);
    if (strncmp(p, word, n) != 0) return false;
    *s = p + n;
    return true;
}

static bool parse_unit(const char **s, df_time_unit *u) {
    static const struct {
        const char *w;
        df_time_unit u;
    } units[] = {{"Second", DF_UNIT_SECOND}, {"Millisecond", DF_UNIT_MILLI}, {"Microsecond", DF_UNIT_MICRO},
                 {"Nanosecond", DF_UNIT_NANO}, {"ms", DF_UNIT_MILLI}, {"\xC2\xB5s", DF_UNIT_MICRO},
                 {"us", DF_UNIT_MICRO}, {"ns", DF_UNIT_NANO}, {"s", DF_UNIT_SECOND}};
    for (size_t k = 0; k < DF_ARRAY_LEN(units); k++) {
        if (eat(s, units[k].w)) {
            *u = units[k].u;
            return true;
        }
    }
    return false;
}

/* Reads an optional timezone after a comma: None | Some("tz") | "tz". */
static bool parse_tz(const char **s, char *tz, size_t size, bool *has) {
    *has = false;
    if (!eat(s, ",")) return true;
    if (eat(s, "None")) return true;
    bool some = eat(s, "Some(");
    if (!eat(s, "\"")) return false;
    const char *end = strchr(*s, '"');
    if (!end || (size_t)(end - *s) >= size) return false;
    memcpy(tz, *s, (size_t)(end - *s));
    tz[end - *s] = '\0';
    *s = end + 1;
    if (some && !eat(s, ")")) return false;
    *has = true;
    return true;
}

df_type *df__sql_type_from_arrow_name(const char *name, df_error *err) {
    static const struct {
        const char *name;
        df_type *(*fn)(void);
    } simple[] = {
        {"Null", df_type_null},        {"Boolean", df_type_bool},       {"Int8", df_type_int8},
        {"Int16", df_type_int16},      {"Int32", df_type_int32},        {"Int64", df_type_int64},
        {"UInt8", df_type_uint8},      {"UInt16", df_type_uint16},      {"UInt32", df_type_uint32},
        {"UInt64", df_type_uint64},    {"Float16", df_type_float16},    {"Float32", df_type_float32},
        {"Float64", df_type_float64},  {"Utf8", df_type_utf8},          {"LargeUtf8", df_type_utf8},
        {"Utf8View", df_type_utf8},    {"Binary", df_type_binary},      {"LargeBinary", df_type_binary},
        {"BinaryView", df_type_binary}, {"Date32", df_type_date32},     {"Date64", df_type_date64},
    };
    const char *s = skip_ws(name);
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    for (size_t k = 0; k < DF_ARRAY_LEN(simple); k++) {
        if (strlen(simple[k].name) == len && strncmp(s, simple[k].name, len) == 0) return simple[k].fn();
    }
    const char *p = s;
    df_type *r = NULL;
    if (eat(&p, "Decimal128(") || eat(&p, "Decimal256(") || eat(&p, "Decimal32(") || eat(&p, "Decimal64(")) {
        char *end;
        long prec = strtol(skip_ws(p), &end, 10);
        p = end;
        if (!eat(&p, ",")) goto bad;
        long scale = strtol(skip_ws(p), &end, 10);
        p = end;
        if (!eat(&p, ")") || prec < 1 || prec > 76 || scale > prec) goto bad;
        r = df_type_decimal((int)prec, (int)scale);
    } else if (eat(&p, "Timestamp(")) {
        df_time_unit u;
        char tz[64];
        bool has;
        if (!parse_unit(&p, &u) || !parse_tz(&p, tz, sizeof tz, &has) || !eat(&p, ")")) goto bad;
        r = df_type_timestamp(u, has ? tz : NULL);
    } else if (eat(&p, "Time32(") || eat(&p, "Time64(")) {
        df_time_unit u;
        if (!parse_unit(&p, &u) || !eat(&p, ")")) goto bad;
        r = df_type_time(u);
    } else if (eat(&p, "Duration(")) {
        df_time_unit u;
        if (!parse_unit(&p, &u) || !eat(&p, ")")) goto bad;
        r = df_type_duration(u);
    } else if (eat(&p, "Interval(")) {
        if (!(eat(&p, "MonthDayNano") || eat(&p, "DayTime") || eat(&p, "YearMonth")) || !eat(&p, ")")) goto bad;
        r = df_type_interval_mdn();
    } else {
        goto bad;
    }
    if (*skip_ws(p) != '\0' && (size_t)(skip_ws(p) - s) < len) goto bad;
    if (!r) DF_OOM(err);
    return r;
bad:
    df_error_set(err, DF_ERR_SQL_TYPE, "unsupported Arrow type name `%.64s`", name);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Interval text                                                             */

typedef struct ival {
    double months, days, nanos;  /* accumulated parts */
} ival;

static bool ival_add_unit(ival *iv, double v, const char *u) {
    static const struct {
        const char *name;
        int part;       /* 0 months, 1 days, 2 nanos */
        double mult;
    } units[] = {
        {"millennium", 0, 12000}, {"millenniums", 0, 12000}, {"millennia", 0, 12000}, {"century", 0, 1200},
        {"centuries", 0, 1200}, {"decade", 0, 120}, {"decades", 0, 120}, {"year", 0, 12}, {"years", 0, 12},
        {"y", 0, 12}, {"yr", 0, 12}, {"yrs", 0, 12}, {"quarter", 0, 3}, {"quarters", 0, 3}, {"month", 0, 1},
        {"months", 0, 1}, {"mon", 0, 1}, {"mons", 0, 1}, {"week", 1, 7}, {"weeks", 1, 7}, {"w", 1, 7},
        {"day", 1, 1}, {"days", 1, 1}, {"d", 1, 1}, {"hour", 2, 3600e9}, {"hours", 2, 3600e9}, {"h", 2, 3600e9},
        {"hr", 2, 3600e9}, {"hrs", 2, 3600e9}, {"minute", 2, 60e9}, {"minutes", 2, 60e9}, {"min", 2, 60e9},
        {"mins", 2, 60e9}, {"m", 2, 60e9}, {"second", 2, 1e9}, {"seconds", 2, 1e9}, {"sec", 2, 1e9},
        {"secs", 2, 1e9}, {"s", 2, 1e9}, {"millisecond", 2, 1e6}, {"milliseconds", 2, 1e6}, {"ms", 2, 1e6},
        {"microsecond", 2, 1e3}, {"microseconds", 2, 1e3}, {"us", 2, 1e3}, {"nanosecond", 2, 1},
        {"nanoseconds", 2, 1}, {"ns", 2, 1},
    };
    for (size_t k = 0; k < DF_ARRAY_LEN(units); k++) {
        if (df_ascii_casecmp(units[k].name, u) != 0) continue;
        double x = v * units[k].mult;
        if (units[k].part == 0) {
            double whole = trunc(x);
            iv->months += whole;
            iv->days += (x - whole) * 30;   /* fractional months carry as 30-day months */
        } else if (units[k].part == 1) {
            double whole = trunc(x);
            iv->days += whole;
            iv->nanos += (x - whole) * 86400e9;
        } else {
            iv->nanos += x;
        }
        return true;
    }
    return false;
}

/* "HH:MM[:SS[.fff]]" with an optional sign. */
static bool ival_add_clock(ival *iv, const char *s) {
    int sign = 1;
    if (*s == '-') sign = -1, s++;
    else if (*s == '+') s++;
    char *end;
    long h = strtol(s, &end, 10);
    if (*end != ':') return false;
    long m = strtol(end + 1, &end, 10);
    double sec = 0;
    if (*end == ':') sec = strtod(end + 1, &end);
    if (*end != '\0' || m >= 60 || sec >= 60) return false;
    iv->nanos += sign * ((double)h * 3600e9 + (double)m * 60e9 + sec * 1e9);
    return true;
}

/*
 * Parses interval text ("1 day 2 hours", "3", "-1 month", "01:30:00") with
 * an optional default unit for bare numbers (seconds when NULL).  Returns 0
 * with the parts, 1 when out of range, 2 when the text does not parse.
 */
int df__sqlt_parse_interval(const char *text, size_t len, const char *unit, int32_t *months, int32_t *days,
                        int64_t *nanos) {
    ival iv = {0};
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 255 ? len : 255), text);
    if (len > 255) return 2;
    char *save = NULL;
    char *tok = strtok_r(buf, " \t", &save);
    bool any = false;
    while (tok) {
        if (strchr(tok, ':')) {
            if (!ival_add_clock(&iv, tok)) return 2;
            any = true;
            tok = strtok_r(NULL, " \t", &save);
            continue;
        }
        char *end;
        errno = 0;
        double v = strtod(tok, &end);
        if (end == tok || errno) return 2;
        const char *u = NULL;
        if (*end) {
            u = end; /* "1day" */
        } else {
            char *next = strtok_r(NULL, " \t", &save);
            if (next && !(next[0] == '-' || next[0] == '+' || (next[0] >= '0' && next[0] <= '9') || next[0] == '.')) {
                u = next;
            } else if (unit && !next) {
                /* INTERVAL 'n' UNIT: the qualifier is the last number's unit */
                if (!ival_add_unit(&iv, v, unit)) return 2;
                any = true;
                unit = NULL;
                tok = next;
                continue;
            } else {
                if (unit || !ival_add_unit(&iv, v, "second")) return 2;
                any = true;
                tok = next;
                continue;
            }
        }
        if (!ival_add_unit(&iv, v, u)) return 2;
        any = true;
        tok = strtok_r(NULL, " \t", &save);
    }
    if (!any || unit) return 2; /* a qualifier needs a bare number at the end ('5 day' HOUR is refused) */
    if (fabs(iv.months) > 2147483647.0 || fabs(iv.days) > 2147483647.0 || fabs(iv.nanos) > 9.2e18) return 1;
    *months = (int32_t)iv.months;
    *days = (int32_t)iv.days;
    *nanos = (int64_t)llround(iv.nanos);
    return 0;
}
