/*
 * Per-file statistics (the `stats` JSON of add actions) as df_column_stats.
 *
 * Statistics mirror the physical schema: {"numRecords": n, "minValues":
 * {col: v}, "maxValues": {...}, "nullCount": {...}, "tightBounds": b}, keyed
 * by physical column names.  Only top-level primitive columns are used.
 * Values are parsed from their text (numbers keep their exact text, so
 * big integers and decimals are exact) into the column's type.  Rules that
 * keep pruning safe:
 *   - timestamps are truncated to milliseconds in statistics, so a maximum
 *     is rounded up to the end of its millisecond and marked inexact;
 *   - strings are cut to a prefix (32 characters by default): a minimum of
 *     that length is still a lower bound but inexact, and a maximum of that
 *     length is no upper bound at all, so it is dropped;
 *   - NaN bounds and values that do not parse as the column type are
 *     ignored (no bound rather than a wrong one);
 *   - with tightBounds = false (deletion vectors), a null count is kept only
 *     when it is 0 or equals numRecords, the two cases the protocol keeps
 *     meaningful.
 */
#include "delta/delta_int.h"

#include <math.h>

#define STRING_PREFIX_CHARS 32

static df_errkind parse_stats(const char *stats, df_arena *scratch, df_json_value **out, df_error *err) {
    df_json_options opts = {.max_depth = 64};
    df_errkind k = df_json_parse(stats, strlen(stats), scratch, &opts, out, err);
    if (k == DF_ERR_JSON_FORMAT) {
        df_error_prefix(err, "file statistics");
        k = df__delta_rekind(err, DF_ERR_DELTA_LOG_FORMAT);
    }
    return k;
}

df_errkind df__delta_stats_num_records(const char *stats, df_arena *scratch, int64_t *out, df_error *err) {
    *out = -1;
    df_json_value *v;
    DF_TRY(parse_stats(stats, scratch, &v, err));
    int64_t n;
    if (df_json_get_i64(v, "numRecords", &n) && n >= 0) *out = n;
    return DF_OK;
}

/* Parses one bound; false (nothing set) when absent or unusable. */
static bool bound(const df_json_value *v, df_type *type, df_scalar *out) {
    const char *text;
    size_t len;
    if (df_json_is_number(v)) {
        text = v->u.num.text;
        len = v->u.num.len;
    } else if (df_json_is_string(v)) {
        text = v->u.str.ptr;
        len = v->u.str.len;
    } else {
        return false;
    }
    if (df__delta_value_parse(text, len, type, out, NULL) != DF_OK) return false;
    if ((type->id == DF_TYPE_FLOAT32 || type->id == DF_TYPE_FLOAT64) && isnan(out->v.f64)) {
        df_scalar_clear(out);
        return false;
    }
    return true;
}

static bool stats_type_ok(const df_type *t) {
    switch (t->id) {
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64:
    case DF_TYPE_FLOAT32: case DF_TYPE_FLOAT64: case DF_TYPE_DECIMAL128:
    case DF_TYPE_DATE32: case DF_TYPE_TIMESTAMP: case DF_TYPE_UTF8: case DF_TYPE_BOOL:
        return true;
    default:
        return false;
    }
}

/* Fills one column's statistics. */
static void column_stats(const df__delta_column *col, const df_json_value *root, bool tight, int64_t nrec,
                         df_column_stats *st) {
    const char *key = col->physical;
    df_type *t = col->type;
    int64_t nc;
    if (df_json_get_i64(df_json_get(root, "nullCount"), key, &nc) && nc >= 0 &&
        (tight || nc == 0 || (nrec >= 0 && nc == nrec))) {
        st->has_null_count = true;
        st->null_count = nc;
    }
    if (!stats_type_ok(t)) return;
    if (bound(df_json_get(df_json_get(root, "minValues"), key), t, &st->min)) {
        st->has_min = true;
        st->min_exact = tight;
        if (t->id == DF_TYPE_UTF8 && df_utf8_count(st->min.v.bytes.ptr, (size_t)st->min.v.bytes.len) >= STRING_PREFIX_CHARS)
            st->min_exact = false;
    }
    if (bound(df_json_get(df_json_get(root, "maxValues"), key), t, &st->max)) {
        st->has_max = true;
        st->max_exact = tight;
        if (t->id == DF_TYPE_UTF8 && df_utf8_count(st->max.v.bytes.ptr, (size_t)st->max.v.bytes.len) >= STRING_PREFIX_CHARS) {
            df_scalar_clear(&st->max);
            st->has_max = false;
            st->max_exact = false;
        } else if (t->id == DF_TYPE_TIMESTAMP) {
            /* Truncated to the millisecond: the true maximum may be up to 999 us larger. */
            int64_t ms_units = t->unit == DF_UNIT_NANO ? 1000000 : t->unit == DF_UNIT_MICRO ? 1000 : 1;
            if (st->max.v.i64 <= INT64_MAX - (ms_units - 1)) st->max.v.i64 += ms_units - 1;
            st->max_exact = false;
        }
    }
}

df_errkind df__delta_stats_columns(const df_delta_snapshot *s, const char *stats, df_arena *scratch,
                                   const int32_t *fields, int32_t nfields, df_column_stats *out,
                                   int64_t *num_records, df_error *err) {
    memset(out, 0, (size_t)nfields * sizeof *out);
    *num_records = -1;
    if (!stats) return DF_OK;
    df_json_value *root;
    DF_TRY(parse_stats(stats, scratch, &root, err));
    int64_t nrec = -1;
    if (df_json_get_i64(root, "numRecords", &nrec) && nrec >= 0) *num_records = nrec;
    bool tight = true;
    df_json_get_bool(root, "tightBounds", &tight);
    for (int32_t i = 0; i < nfields; i++) {
        if (fields[i] < 0 || fields[i] >= s->schema.ncolumns) continue;
        column_stats(&s->schema.columns[fields[i]], root, tight, nrec, &out[i]);
    }
    return DF_OK;
}
