/*
 * Row-group statistics -> df_column_stats, and row-group pruning.
 *
 * Which bounds are trustworthy:
 *   - min_value/max_value (format 2.x) follow the column order: they are
 *     used unless the footer lists an order we do not know for the column;
 *   - the deprecated min/max were written with signed comparison, so they
 *     are used only for types whose order is signed (signed integers, dates,
 *     times, timestamps, decimals stored as integers, floats, booleans);
 *     never for unsigned integers, byte arrays (PARQUET-251) or INT96;
 *   - floating-point bounds that are NaN are dropped; a zero minimum is
 *     widened to -0 and a zero maximum to +0 (the format's rules).
 * Bounds of byte arrays are exact only when the writer says so.
 */
#include "parquet/reader_int.h"

#include <math.h>

void df_parquet_column_stats_clear(df_column_stats *s) {
    if (!s) return;
    df_scalar_clear(&s->min);
    df_scalar_clear(&s->max);
    memset(s, 0, sizeof *s);
}

static bool signed_order(const pq_leaf *leaf) {
    switch (leaf->type->id) {
    case DF_TYPE_BOOL:
    case DF_TYPE_INT8:
    case DF_TYPE_INT16:
    case DF_TYPE_INT32:
    case DF_TYPE_INT64:
    case DF_TYPE_FLOAT32:
    case DF_TYPE_FLOAT64:
    case DF_TYPE_DATE32:
    case DF_TYPE_TIME32:
    case DF_TYPE_TIME64: return true;
    case DF_TYPE_TIMESTAMP: return leaf->physical == DF_PARQUET_INT64;
    case DF_TYPE_DECIMAL128:
    case DF_TYPE_DECIMAL256: return leaf->physical == DF_PARQUET_INT32 || leaf->physical == DF_PARQUET_INT64;
    default: return false;
    }
}

/* Half-precision bits -> double (for NaN checks and zero handling). */
static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/*
 * Decodes one plain-encoded bound into a scalar of the leaf's Arrow type.
 * Returns false (scalar untouched) when the bytes do not fit the type.
 */
static bool decode_bound(const pq_leaf *leaf, pq_bytes b, df_scalar *out, df_error *err, df_errkind *k) {
    df_type *t = leaf->type;
    memset(out, 0, sizeof *out);
    int phys = leaf->physical;
    int64_t i64 = 0;
    switch (phys) {
    case DF_PARQUET_BOOLEAN:
        if (b.len < 1) return false;
        out->v.b = b.ptr[0] != 0;
        break;
    case DF_PARQUET_INT32:
    case DF_PARQUET_INT64:
        if (b.len != (phys == DF_PARQUET_INT32 ? 4u : 8u)) return false;
        i64 = phys == DF_PARQUET_INT32 ? (int32_t)df_load_le32(b.ptr) : (int64_t)df_load_le64(b.ptr);
        if (df_type_is_unsigned_integer(t)) out->v.u64 = phys == DF_PARQUET_INT32 ? df_load_le32(b.ptr) : (uint64_t)i64;
        else if (t->id == DF_TYPE_DECIMAL128) out->v.i128 = i64;
        else if (t->id == DF_TYPE_DECIMAL256) {
            memcpy(out->v.d256, &i64, 8);
            memset(out->v.d256 + 8, i64 < 0 ? 0xff : 0, 24);
        } else out->v.i64 = i64;
        if (t->id == DF_TYPE_UINT8) out->v.u64 &= 0xff;
        if (t->id == DF_TYPE_UINT16) out->v.u64 &= 0xffff;
        if (t->id == DF_TYPE_INT8) out->v.i64 = (int8_t)i64;
        if (t->id == DF_TYPE_INT16) out->v.i64 = (int16_t)i64;
        break;
    case DF_PARQUET_FLOAT:
    case DF_PARQUET_DOUBLE: {
        if (b.len != (phys == DF_PARQUET_FLOAT ? 4u : 8u)) return false;
        double d;
        if (phys == DF_PARQUET_FLOAT) {
            uint32_t u = df_load_le32(b.ptr);
            float f;
            memcpy(&f, &u, 4);
            d = f;
        } else {
            uint64_t u = df_load_le64(b.ptr);
            memcpy(&d, &u, 8);
        }
        if (isnan(d)) return false;
        out->v.f64 = d;
        break;
    }
    case DF_PARQUET_BYTE_ARRAY:
    case DF_PARQUET_FIXED_LEN_BYTE_ARRAY:
        if (phys == DF_PARQUET_FIXED_LEN_BYTE_ARRAY && (int32_t)b.len != leaf->type_length) return false;
        if (t->id == DF_TYPE_FLOAT16) {
            uint16_t h = df_load_le16(b.ptr);
            if (isnan(half_to_double(h))) return false;
            out->v.u64 = h;
        } else if (t->id == DF_TYPE_DECIMAL128 || t->id == DF_TYPE_DECIMAL256) {
            int w = t->id == DF_TYPE_DECIMAL128 ? 16 : 32;
            uint8_t le[32];
            if (b.len > (uint32_t)w) return false;
            uint8_t fill = b.len && (b.ptr[0] & 0x80) ? 0xff : 0;
            for (uint32_t i = 0; i < b.len; i++) le[i] = b.ptr[b.len - 1 - i];
            memset(le + b.len, fill, (size_t)w - b.len);
            if (w == 16) memcpy(&out->v.i128, le, 16);
            else memcpy(out->v.d256, le, 32);
        } else {
            out->v.bytes.ptr = df_malloc((size_t)b.len + 1);
            if (!out->v.bytes.ptr) {
                *k = DF_OOM(err);
                return false;
            }
            if (b.len) memcpy(out->v.bytes.ptr, b.ptr, b.len);
            out->v.bytes.ptr[b.len] = '\0';
            out->v.bytes.len = b.len;
        }
        break;
    default: return false;   /* INT96 statistics are not trusted */
    }
    out->type = df_type_retain(t);
    return true;
}

/* Applies the format's zero rules to floating bounds. */
static void widen_zero(df_scalar *s, bool is_min) {
    if (s->type->id == DF_TYPE_FLOAT32 || s->type->id == DF_TYPE_FLOAT64) {
        if (s->v.f64 == 0) s->v.f64 = is_min ? -0.0 : 0.0;
    } else if (s->type->id == DF_TYPE_FLOAT16) {
        if ((s->v.u64 & 0x7fff) == 0) s->v.u64 = is_min ? 0x8000 : 0;
    }
}

df_errkind df_parquet_file_column_stats(const df_parquet_file *f, int32_t rg, int32_t field, df_column_stats *out,
                                        df_error *err) {
    memset(out, 0, sizeof *out);
    if (rg < 0 || (uint32_t)rg >= f->meta.nrow_groups || field < 0 || field >= f->schema.root.nchildren)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "row group %d or field %d out of range", rg, field);
    const pq_node *node = &f->schema.root.children[field];
    if (node->kind != PQ_NODE_LEAF) return DF_OK;
    const pq_leaf *leaf = &f->schema.leaves[node->leaf];
    const pq_column_chunk *cc = &f->meta.row_groups[rg].columns[node->leaf];
    if (!cc->has_meta || !cc->meta.stats.present || leaf->conv == PQ_CONV_TO_NULL) return DF_OK;
    const pq_statistics *st = &cc->meta.stats;
    if (st->has_null_count && st->null_count >= 0) {
        out->has_null_count = true;
        out->null_count = st->null_count;
    }
    int order = (uint32_t)node->leaf < f->meta.ncolumn_orders ? f->meta.column_orders[node->leaf] : -1;
    pq_bytes min = {0}, max = {0};
    bool has_min = false, has_max = false, exact_min = true, exact_max = true;
    if ((st->has_min_value || st->has_max_value) && (order == -1 || order == 1 || order == 2)) {
        has_min = st->has_min_value;
        has_max = st->has_max_value;
        min = st->min_value;
        max = st->max_value;
        bool varlen = leaf->physical == DF_PARQUET_BYTE_ARRAY;
        exact_min = st->has_min_exact ? st->is_min_exact : !varlen;
        exact_max = st->has_max_exact ? st->is_max_exact : !varlen;
    } else if ((st->has_min || st->has_max) && signed_order(leaf)) {
        has_min = st->has_min;
        has_max = st->has_max;
        min = st->min;
        max = st->max;
    }
    df_errkind k = DF_OK;
    if (has_min && decode_bound(leaf, min, &out->min, err, &k)) {
        out->has_min = true;
        out->min_exact = exact_min;
        widen_zero(&out->min, true);
    }
    if (k == DF_OK && has_max && decode_bound(leaf, max, &out->max, err, &k)) {
        out->has_max = true;
        out->max_exact = exact_max;
        widen_zero(&out->max, false);
    }
    if (k != DF_OK) df_parquet_column_stats_clear(out);
    return k;
}

bool df_parquet_row_group_may_match(const df_parquet_file *f, int32_t rg, const df_scan_predicate *preds,
                                    int32_t npreds) {
    if (rg < 0 || (uint32_t)rg >= f->meta.nrow_groups) return true;
    int64_t rows = f->meta.row_groups[rg].num_rows;
    for (int32_t i = 0; i < npreds; i++) {
        df_column_stats st;
        if (preds[i].column < 0 || preds[i].column >= f->schema.root.nchildren) continue;
        if (df_parquet_file_column_stats(f, rg, preds[i].column, &st, NULL) != DF_OK) continue;
        bool may = df_scan_predicate_may_match(&preds[i], &st, rows);
        df_parquet_column_stats_clear(&st);
        if (!may) return false;
    }
    return true;
}
