/*
 * One value of a column rendered as Arrow displays it.
 *
 * Scalars dispatch to fmt_number.c and fmt_time.c; binary data is lower-case
 * hex; nested values recurse: lists "[1, 2, ]", structs "{a: 1, b: x}",
 * maps "{k1: 1, k2: }".  Nulls, also inside nested values, print as the
 * context's null text ("" in text grids, "null" in HTML).  Nesting depth is
 * bounded by the type, which the columnar layer caps.
 */
#include "format/format_int.h"

#define MAX_FORMAT_DEPTH 64

void df__fmt_ctx_init(df_fmt_ctx *ctx, const char *null_text) {
    memset(ctx, 0, sizeof *ctx);
    ctx->null_text = null_text;
}

void df__fmt_ctx_clear(df_fmt_ctx *ctx) {
    for (int i = 0; i < ctx->ntz; i++) df__tz_free(ctx->tzs[i]);
    ctx->ntz = 0;
}

/* The zone of a timestamp type, opened once per call; NULL when unknown (rendered as UTC). */
static const df_tz *zone_for(df_fmt_ctx *ctx, const char *name) {
    for (int i = 0; i < ctx->ntz; i++)
        if (strcmp(ctx->tz_names[i], name) == 0) return ctx->tzs[i];
    df_tz *tz = NULL;
    if (df__tz_open(name, &tz, NULL) != DF_OK) tz = NULL;
    if (ctx->ntz < DF_FMT_TZ_CACHE && tz) {
        ctx->tz_names[ctx->ntz] = name;
        ctx->tzs[ctx->ntz++] = tz;
        return tz;
    }
    /* Cache full: keep nothing (the caller renders in UTC). */
    df__tz_free(tz);
    return NULL;
}

static df_errkind write_hex(df_buf *out, const uint8_t *p, int64_t n, df_error *err) {
    DF_TRY(df_buf_reserve(out, (size_t)n * 2, err));
    df_hex_encode(p, (size_t)n, out->data + out->len, false);
    out->len += (size_t)n * 2;
    out->data[out->len] = '\0';
    return DF_OK;
}

static df_errkind fmt_at(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, int depth, df_error *err);

static df_errkind fmt_list(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, int depth, df_error *err) {
    const int32_t *o = df_vec_offsets(v);
    DF_TRY(df_buf_append_char(out, '[', err));
    for (int32_t k = o[i]; k < o[i + 1]; k++) {
        if (k > o[i]) DF_TRY(df_buf_append(out, ", ", 2, err));
        DF_TRY(fmt_at(out, ctx, v->children[0], k, depth + 1, err));
    }
    return df_buf_append_char(out, ']', err);
}

static df_errkind fmt_struct(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, int depth, df_error *err) {
    const df_type *t = v->type;
    DF_TRY(df_buf_append_char(out, '{', err));
    for (int32_t f = 0; f < t->nchildren && f < v->nchildren; f++) {
        if (f) DF_TRY(df_buf_append(out, ", ", 2, err));
        DF_TRY(df_buf_append_str(out, t->children[f].name, err));
        DF_TRY(df_buf_append(out, ": ", 2, err));
        /* A struct's own offset applies to its children (Arrow layout). */
        DF_TRY(fmt_at(out, ctx, v->children[f], v->offset + i, depth + 1, err));
    }
    return df_buf_append_char(out, '}', err);
}

static df_errkind fmt_map(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, int depth, df_error *err) {
    const int32_t *o = df_vec_offsets(v);
    const df_vec *entries = v->children[0];
    if (entries->nchildren < 2) return df_error_set(err, DF_ERR_INTERNAL, "map entries without key and value");
    DF_TRY(df_buf_append_char(out, '{', err));
    for (int32_t k = o[i]; k < o[i + 1]; k++) {
        if (k > o[i]) DF_TRY(df_buf_append(out, ", ", 2, err));
        DF_TRY(fmt_at(out, ctx, entries->children[0], entries->offset + k, depth + 1, err));
        DF_TRY(df_buf_append(out, ": ", 2, err));
        DF_TRY(fmt_at(out, ctx, entries->children[1], entries->offset + k, depth + 1, err));
    }
    return df_buf_append_char(out, '}', err);
}

static df_errkind fmt_timestamp(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, df_error *err) {
    int64_t x = DF_VEC_VALUES(v, int64_t)[i];
    if (!v->type->timezone) return df__fmt_naive_datetime(out, x, v->type->unit, err);
    const df_tz *tz = zone_for(ctx, v->type->timezone);
    if (tz) return df__fmt_zoned_datetime(out, x, v->type->unit, tz, err);
    DF_TRY(df__fmt_naive_datetime(out, x, v->type->unit, err));
    return df_buf_append_char(out, 'Z', err);
}

static df_errkind fmt_scalar(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, df_error *err) {
    const df_type *t = v->type;
    switch (t->id) {
    case DF_TYPE_BOOL: return df_buf_append_str(out, df_vec_bool(v, i) ? "true" : "false", err);
    case DF_TYPE_INT8: return df_buf_printf(out, err, "%d", DF_VEC_VALUES(v, int8_t)[i]);
    case DF_TYPE_INT16: return df_buf_printf(out, err, "%d", DF_VEC_VALUES(v, int16_t)[i]);
    case DF_TYPE_INT32: return df_buf_printf(out, err, "%d", DF_VEC_VALUES(v, int32_t)[i]);
    case DF_TYPE_INT64: return df_buf_printf(out, err, "%lld", (long long)DF_VEC_VALUES(v, int64_t)[i]);
    case DF_TYPE_UINT8: return df_buf_printf(out, err, "%u", DF_VEC_VALUES(v, uint8_t)[i]);
    case DF_TYPE_UINT16: return df_buf_printf(out, err, "%u", DF_VEC_VALUES(v, uint16_t)[i]);
    case DF_TYPE_UINT32: return df_buf_printf(out, err, "%u", DF_VEC_VALUES(v, uint32_t)[i]);
    case DF_TYPE_UINT64:
        return df_buf_printf(out, err, "%llu", (unsigned long long)DF_VEC_VALUES(v, uint64_t)[i]);
    case DF_TYPE_FLOAT16: return df__fmt_float16(out, DF_VEC_VALUES(v, uint16_t)[i], err);
    case DF_TYPE_FLOAT32: return df__fmt_float(out, DF_VEC_VALUES(v, float)[i], true, err);
    case DF_TYPE_FLOAT64: return df__fmt_float(out, DF_VEC_VALUES(v, double)[i], false, err);
    case DF_TYPE_DECIMAL128: return df__fmt_decimal128(out, DF_VEC_VALUES(v, df_i128)[i], t->scale, err);
    case DF_TYPE_DECIMAL256: return df__fmt_decimal256(out, v->values->data + (v->offset + i) * 32, t->scale, err);
    case DF_TYPE_DATE32: return df__fmt_date(out, DF_VEC_VALUES(v, int32_t)[i], err);
    case DF_TYPE_DATE64: return df__fmt_naive_datetime(out, DF_VEC_VALUES(v, int64_t)[i], DF_UNIT_MILLI, err);
    case DF_TYPE_TIME32: return df__fmt_time_of_day(out, DF_VEC_VALUES(v, int32_t)[i], t->unit, err);
    case DF_TYPE_TIME64: return df__fmt_time_of_day(out, DF_VEC_VALUES(v, int64_t)[i], t->unit, err);
    case DF_TYPE_TIMESTAMP: return fmt_timestamp(out, ctx, v, i, err);
    case DF_TYPE_DURATION: return df__fmt_duration(out, DF_VEC_VALUES(v, int64_t)[i], t->unit, err);
    case DF_TYPE_INTERVAL_MDN: {
        const uint8_t *p = v->values->data + (v->offset + i) * 16;
        int32_t months, days;
        int64_t nanos;
        memcpy(&months, p, 4);
        memcpy(&days, p + 4, 4);
        memcpy(&nanos, p + 8, 8);
        return df__fmt_interval_mdn(out, months, days, nanos, err);
    }
    case DF_TYPE_UTF8: {
        int32_t len;
        const uint8_t *p = df_vec_bytes(v, i, &len);
        return df_buf_append(out, p, (size_t)len, err);
    }
    case DF_TYPE_BINARY: {
        int32_t len;
        const uint8_t *p = df_vec_bytes(v, i, &len);
        return write_hex(out, p, len, err);
    }
    case DF_TYPE_FIXED_BINARY:
        return write_hex(out, v->values->data + (v->offset + i) * t->byte_width, t->byte_width, err);
    default: return df_error_set(err, DF_ERR_UNSUPPORTED, "cannot display a value of this type");
    }
}

static df_errkind fmt_at(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, int depth, df_error *err) {
    if (depth > MAX_FORMAT_DEPTH) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "value nesting is too deep");
    if (v->type->id == DF_TYPE_NULL || df_vec_is_null(v, i)) return df_buf_append_str(out, ctx->null_text, err);
    switch (v->type->id) {
    case DF_TYPE_LIST: return fmt_list(out, ctx, v, i, depth, err);
    case DF_TYPE_STRUCT: return fmt_struct(out, ctx, v, i, depth, err);
    case DF_TYPE_MAP: return fmt_map(out, ctx, v, i, depth, err);
    default: return fmt_scalar(out, ctx, v, i, err);
    }
}

df_errkind df__fmt_value(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, df_error *err) {
    return fmt_at(out, ctx, v, i, 0, err);
}
