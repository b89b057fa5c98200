/*
 * Kernel registry and helpers shared by the kernel families.
 *
 * df__kernel_for_fn asks each family in turn for a kernel matching the
 * call's function id and argument types; the binder guarantees argument
 * types match the function's signature, so each family only has to switch
 * on the (already coerced) types.  Families return fn == NULL when they do
 * not handle a call.
 */
#include "exec/exec_int.h"

#include <stdio.h>

#include "sql/sql_types.h"

df_errkind df__kernel_out(const df_kargs *k, int64_t data_cap, df_vec **out) {
    return df_vec_new(k->type, k->n, data_cap, out, k->err);
}

/* dst[0..n) &= src bits [off, off+n). */
static void and_bits(uint8_t *dst, const uint8_t *src, int64_t off, int64_t n) {
    int64_t nbytes = df_bitmap_bytes(n);
    if ((off & 7) == 0) {
        const uint8_t *s = src + (off >> 3);
        for (int64_t b = 0; b < nbytes; b++) dst[b] &= s[b];
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (!df_bit_get(src, off + i)) df_bit_clear(dst, i);
}

df_errkind df__kernel_and_validity(const df_kargs *k, const df_xreg *args, int32_t nargs, df_vec *out) {
    int64_t n = k->n;
    for (int32_t a = 0; a < nargs; a++) {
        if (df_xreg_const_null(&args[a]) || args[a].vec->type->id == DF_TYPE_NULL) {
            DF_TRY(df_vec_ensure_validity(out, n, k->err));
            memset(out->validity->data, 0, (size_t)df_bitmap_bytes(n));
            out->null_count = -1;
            return DF_OK;
        }
    }
    bool first = true;
    for (int32_t a = 0; a < nargs; a++) {
        const df_vec *v = args[a].vec;
        if (args[a].is_const || !v->validity) continue;
        if (first) {
            DF_TRY(df_vec_ensure_validity(out, n, k->err));
            df_bitmap_copy(out->validity->data, 0, v->validity->data, v->offset, n);
            first = false;
        } else {
            and_bits(out->validity->data, v->validity->data, v->offset, n);
        }
    }
    return DF_OK;
}

void df__kernel_done(const df_kargs *k, df_vec *v, df_xreg *out) {
    df_vec_set_length(v, k->n);
    out->vec = v;
}

df_errkind df__kernel_out_valid(const df_kargs *k, const df_xreg *args, int32_t nargs, df_vec **out) {
    DF_TRY(df__kernel_out(k, 0, out));
    df_errkind e = df__kernel_and_validity(k, args, nargs, *out);
    if (e) {
        df_vec_release(*out);
        *out = NULL;
    }
    return e;
}

df_errkind df__kernel_finish(const df_kargs *k, df_vec *v, df_errkind e, df_xreg *out) {
    if (e) {
        df_vec_release(v);
        return e;
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

df_errkind df__kernel_choose(df_type *type, int64_t n, const df_xreg *const *srcs, const int8_t *which,
                             df_vec **out, df_error *err) {
    *out = NULL;
    int64_t data = 0;
    bool varlen = df_type_is_varlen(type);
    if (varlen) {
        for (int64_t i = 0; i < n; i++) {
            if (which[i] < 0) continue;
            const df_xreg *r = srcs[which[i]];
            if (!df_xreg_valid(r, i)) continue;
            int32_t len;
            df_vec_bytes(r->vec, r->is_const ? 0 : i, &len);
            data += len;
        }
        if (data > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "string result larger than 2 GiB");
    }
    if (type->id == DF_TYPE_NULL) return df_vec_new_nulls(type, n, out, err);
    df_vec *v;
    DF_TRY(df_vec_new(type, n, data, &v, err));
    bool any_null = false;
    for (int64_t i = 0; i < n && !any_null; i++) any_null = which[i] < 0 || !df_xreg_valid(srcs[which[i]], i);
    if (any_null) {
        df_errkind k = df_vec_ensure_validity(v, n, err);
        if (k) {
            df_vec_release(v);
            return k;
        }
    }
    int32_t w = df_type_width(type);
    int32_t *offs = varlen ? (int32_t *)(void *)v->values->data : NULL;
    if (type->id == DF_TYPE_BOOL) memset(v->values->data, 0, (size_t)df_bitmap_bytes(n));
    int64_t pos = 0;
    for (int64_t i = 0; i < n; i++) {
        const df_xreg *r = which[i] >= 0 ? srcs[which[i]] : NULL;
        bool valid = r && df_xreg_valid(r, i);
        if (any_null) df_bit_put(v->validity->data, i, valid);
        int64_t j = r && r->is_const ? 0 : i;
        if (varlen) {
            if (valid) {
                int32_t len;
                const uint8_t *p = df_vec_bytes(r->vec, j, &len);
                df__memcpy(v->data->data + pos, p, (size_t)len);
                pos += len;
            }
            offs[i + 1] = (int32_t)pos;
        } else if (type->id == DF_TYPE_BOOL) {
            if (valid && df_vec_bool(r->vec, j)) df_bit_set(v->values->data, i);
        } else if (valid) {
            df__memcpy(v->values->data + i * w, r->vec->values->data + (r->vec->offset + j) * w, (size_t)w);
        } else {
            memset(v->values->data + i * w, 0, (size_t)w);
        }
    }
    df_vec_set_length(v, n);
    *out = v;
    return DF_OK;
}

df_errkind df__kernel_materialize(const df_xreg *r, int64_t n, df_vec **out, df_error *err) {
    *out = NULL;
    if (!r->is_const) {
        *out = df_vec_retain(r->vec);
        return DF_OK;
    }
    if (r->vec->type->id == DF_TYPE_NULL) return df_vec_new_nulls(r->vec->type, n, out, err);
    int8_t stack[256];
    int8_t *which = n <= 256 ? stack : df_malloc((size_t)n);
    if (!which) return DF_OOM(err);
    memset(which, 0, (size_t)n);
    const df_xreg *srcs[1] = {r};
    df_errkind k = df__kernel_choose(r->vec->type, n, srcs, which, out, err);
    if (which != stack) df_free(which);
    return k;
}

df_errkind df__sb_begin(df__sbuilder *sb, const df_kargs *k, const df_xreg *args, int32_t nargs,
                        int64_t data_estimate) {
    memset(sb, 0, sizeof *sb);
    sb->n = k->n;
    sb->err = k->err;
    if (data_estimate < 64) data_estimate = 64;
    if (data_estimate > INT32_MAX) data_estimate = INT32_MAX;
    DF_TRY(df__kernel_out(k, data_estimate, &sb->v));
    df_errkind e = nargs ? df__kernel_and_validity(k, args, nargs, sb->v) : DF_OK;
    if (e) {
        df_vec_release(sb->v);
        sb->v = NULL;
        return e;
    }
    sb->offs = (int32_t *)(void *)sb->v->values->data;
    sb->offs[0] = 0;
    return DF_OK;
}

/* Fills offsets of rows [next, i) as empty strings. */
static void sb_fill(df__sbuilder *sb, int64_t i) {
    int32_t pos = (int32_t)sb->pos;
    for (int64_t r = sb->next; r < i; r++) sb->offs[r + 1] = pos;
    if (i > sb->next) sb->next = i;
}

df_errkind df__sb_reserve(df__sbuilder *sb, int64_t extra) {
    int64_t need = sb->pos + extra;
    if (need > INT32_MAX) return df_error_set(sb->err, DF_ERR_LIMIT_EXCEEDED, "string result larger than 2 GiB");
    if (need <= sb->v->data->capacity) return DF_OK;
    /* Buffers keep only `size` bytes when they grow: declare what is written so far. */
    sb->v->data->size = sb->pos;
    return df_vec_reserve_data(sb->v, need, sb->err);
}

df_errkind df__sb_put(df__sbuilder *sb, int64_t i, const void *p, int64_t len) {
    sb_fill(sb, i);
    DF_TRY(df__sb_reserve(sb, len));
    if (len) df__memcpy(sb->v->data->data + sb->pos, p, (size_t)len);
    sb->pos += len;
    sb->offs[i + 1] = (int32_t)sb->pos;
    sb->next = i + 1;
    return DF_OK;
}

void df__sb_commit(df__sbuilder *sb, int64_t i, int64_t len) {
    sb_fill(sb, i);
    sb->pos += len;
    sb->offs[i + 1] = (int32_t)sb->pos;
    sb->next = i + 1;
}

df_errkind df__sb_null(df__sbuilder *sb, int64_t i) {
    sb_fill(sb, i);
    sb->offs[i + 1] = (int32_t)sb->pos;
    sb->next = i + 1;
    DF_TRY(df_vec_ensure_validity(sb->v, sb->n, sb->err));
    df_bit_clear(sb->v->validity->data, i);
    return DF_OK;
}

void df__sb_finish(df__sbuilder *sb, df_xreg *out) {
    sb_fill(sb, sb->n);
    df_vec_set_length(sb->v, sb->n);
    out->vec = sb->v;
    sb->v = NULL;
}

void df__sb_abort(df__sbuilder *sb) {
    df_vec_release(sb->v);
    sb->v = NULL;
}

static df_errkind unsupported(const df_expr *call, df_error *err) {
    char types[256] = "";
    size_t used = 0;
    for (int32_t i = 0; i < call->nargs && used < sizeof types - 40; i++) {
        df_buf b;
        df_buf_init(&b, 128);
        if (df__sqlt_display(call->args[i]->type, &b, NULL) == DF_OK && b.data) {
            int n = snprintf(types + used, sizeof types - used, "%s%s", i ? ", " : "", b.data);
            if (n > 0) used += (size_t)n;
        }
        df_buf_free(&b);
    }
    return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "%s(%s) is not supported", df_fn_name(call->fn), types);
}

df_errkind df__kernel_for_fn(const df_expr *call, df_kernel *out, df_error *err) {
    memset(out, 0, sizeof *out);
    df_errkind (*families[])(const df_expr *, df_kernel *, df_error *) = {
        df__kernels_time, df__kernels_datetime, df__kernels_arith, df__kernels_compare, df__kernels_string, df__kernels_math,
        df__kernels_more,
    };
    for (size_t f = 0; f < DF_ARRAY_LEN(families); f++) {
        DF_TRY(families[f](call, out, err));
        if (out->fn) return DF_OK;
    }
    return unsupported(call, err);
}
