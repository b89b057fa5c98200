/*
 * Row-level predicate evaluation (df_scan_predicate_eval) against a
 * per-element reference: every operator on every evaluable type, nulls,
 * NaN and signed zeros in total order, sliced vectors (non-zero offsets),
 * lengths that are not multiples of 64, IN lists, NULL literals, and
 * types it must refuse.
 */
#include "df_test.h"

#include <math.h>
#include <stdlib.h>

#include "columnar/table_provider.h"

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

static int64_t total_key(double d) {
    int64_t b;
    memcpy(&b, &d, 8);
    return b ^ (int64_t)((uint64_t)(b >> 63) >> 1);
}

/* The reference: does element i satisfy p? */
static bool ref(const df_scan_predicate *p, const df_vec *v, int64_t i) {
    df_error e_ = {0}, *err = &e_;
    if (p->op == DF_PRED_IS_NULL) return df_vec_is_null(v, i);
    if (p->op == DF_PRED_IS_NOT_NULL) return df_vec_is_valid(v, i);
    if (df_vec_is_null(v, i)) return false;
    df_scalar x;
    DF_ASSERT_OK(df_scalar_from_vec(&x, v, i, err), err);
    bool any = false;
    for (int32_t k = 0; k < p->nvalues; k++) {
        if (p->values[k].is_null) continue;
        int c;
        if (df_type_is_floating(x.type)) {
            int64_t a = total_key(x.v.f64), b = total_key(p->values[k].v.f64);
            c = a < b ? -1 : a > b;
        } else {
            bool ok;
            c = df_scalar_compare(&x, &p->values[k], &ok);
            DF_ASSERT(ok);
        }
        switch (p->op) {
        case DF_PRED_EQ:
        case DF_PRED_IN: any |= c == 0; break;
        case DF_PRED_NE: any |= c != 0; break;
        case DF_PRED_LT: any |= c < 0; break;
        case DF_PRED_LE: any |= c <= 0; break;
        case DF_PRED_GT: any |= c > 0; break;
        default: any |= c >= 0; break;
        }
    }
    df_scalar_clear(&x);
    return any;
}

/* A vector of n random values of type t (few distinct values so equality hits), with nulls. */
static df_vec *random_vec(df_type *t, int64_t n) {
    df_error e_ = {0}, *err = &e_;
    df_vec *v;
    DF_ASSERT_OK(df_vec_new(t, n, n * 4, &v, err), err);
    int w = df_type_width(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next() % 7;
        if (t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_BINARY) {
            static const char *const s[] = {"", "a", "ab", "b", "\xc3\xa9t\xc3\xa9", "abc", "B"};
            DF_ASSERT_OK(df_vec_append_bytes(v, next() % 9 == 0 ? NULL : s[r], (int32_t)strlen(s[r]), err), err);
            continue;
        }
        uint8_t *dst = v->values->data + i * w;
        switch (t->id) {
        case DF_TYPE_BOOL: df_bit_put(v->values->data, i, r & 1); break;
        case DF_TYPE_FLOAT32: {
            static const float f[] = {NAN, -0.0f, 0.0f, 1.5f, -2.0f, INFINITY, -NAN};
            memcpy(dst, &f[r], 4);
            break;
        }
        case DF_TYPE_FLOAT64: {
            static const double d[] = {NAN, -0.0, 0.0, 1.5, -2.0, -INFINITY, -NAN};
            memcpy(dst, &d[r], 8);
            break;
        }
        case DF_TYPE_DECIMAL128: {
            df_i128 x = ((df_i128)r - 3) * (df_i128)1000000000000000000LL * 1000;
            memcpy(dst, &x, 16);
            break;
        }
        case DF_TYPE_FIXED_BINARY: memset(dst, (int)(r * 37), (size_t)w); dst[w - 1] = (uint8_t)r; break;
        default: {
            /* Signed types get negative values; unsigned ones the top of their range. */
            int64_t x = df_type_is_unsigned_integer(t) ? (int64_t)(~(uint64_t)0 - r) : (int64_t)r - 3;
            memcpy(dst, &x, (size_t)w);   /* little-endian truncation */
            break;
        }
        }
    }
    if (t->id != DF_TYPE_UTF8 && t->id != DF_TYPE_BINARY) {
        df_vec_set_length(v, n);
        for (int64_t i = 0; i < n; i++)
            if (next() % 9 == 0) DF_ASSERT_OK(df_vec_set_null(v, i, err), err);
    }
    return v;
}

DF_TEST(every_operator_on_every_type_matches_the_reference) {
    df_error e_ = {0}, *err = &e_;
    df_type *types[] = {df_type_bool(), df_type_int8(), df_type_int16(), df_type_int32(), df_type_int64(),
                        df_type_uint8(), df_type_uint16(), df_type_uint32(), df_type_uint64(), df_type_float32(),
                        df_type_float64(), df_type_decimal(30, 3), df_type_date32(),
                        df_type_timestamp(DF_UNIT_MICRO, "UTC"), df_type_utf8(), df_type_binary(),
                        df_type_fixed_binary(5)};
    static const df_pred_op ops[] = {DF_PRED_EQ, DF_PRED_NE, DF_PRED_LT, DF_PRED_LE, DF_PRED_GT,
                                     DF_PRED_GE, DF_PRED_IS_NULL, DF_PRED_IS_NOT_NULL, DF_PRED_IN};
    for (size_t t = 0; t < DF_ARRAY_LEN(types); t++) {
        df_vec *full = random_vec(types[t], 300);
        for (int64_t off = 0; off < 70; off += 23) {
            df_vec *v;
            int64_t len = 300 - off - (off % 2) * 60;
            DF_ASSERT_OK(df_vec_slice(full, off, len, &v, err), err);
            for (size_t o = 0; o < DF_ARRAY_LEN(ops); o++)
                for (int lit = 0; lit < 6; lit++) {
                    df_scalar vals[3];
                    int32_t nv = ops[o] == DF_PRED_IN ? 3 : 1;
                    for (int32_t k = 0; k < nv; k++) {
                        int64_t at = (lit * 41 + k * 17) % full->length;
                        DF_ASSERT_OK(df_scalar_from_vec(&vals[k], full, at, err), err);
                    }
                    df_scan_predicate p = {0, ops[o], ops[o] <= DF_PRED_IN && ops[o] != DF_PRED_IS_NULL &&
                                                      ops[o] != DF_PRED_IS_NOT_NULL ? nv : 0, vals};
                    uint8_t sel[64];
                    memset(sel, 0xff, sizeof sel);
                    sel[2] = 0x5a;   /* bits already clear stay clear */
                    uint8_t before[64];
                    memcpy(before, sel, sizeof sel);
                    DF_ASSERT(df_scan_predicate_eval(&p, v, sel));
                    for (int64_t i = 0; i < len; i++) {
                        bool want = df_bit_get(before, i) && ref(&p, v, i);
                        if (df_bit_get(sel, i) != want)
                            df_test_fail(__FILE__, __LINE__, "type %zu op %d offset %lld row %lld: got %d", t,
                                         (int)ops[o], (long long)off, (long long)i, (int)df_bit_get(sel, i));
                    }
                    for (int64_t i = len; i < 512; i++) DF_ASSERT_EQ_INT(df_bit_get(sel, i), df_bit_get(before, i));
                    for (int32_t k = 0; k < nv; k++) df_scalar_clear(&vals[k]);
                }
            df_vec_release(v);
        }
        df_vec_release(full);
    }
    for (size_t t = 0; t < DF_ARRAY_LEN(types); t++) df_type_release(types[t]);
}

DF_TEST(null_literals_keep_nothing_and_other_types_are_refused) {
    df_error e_ = {0}, *err = &e_;
    df_vec *v = random_vec(df_type_int64(), 100);
    df_scalar null_lit = {.type = df_type_int64(), .is_null = true};
    df_scan_predicate p = {0, DF_PRED_NE, 1, &null_lit};
    uint8_t sel[16];
    memset(sel, 0xff, sizeof sel);
    DF_ASSERT(df_scan_predicate_eval(&p, v, sel));
    DF_ASSERT_EQ_INT(df_bitmap_count(sel, 0, 100), 0);
    /* A literal of another type (int32 against int64) is not evaluated: the selection is untouched. */
    df_scalar i32 = {.type = df_type_int32(), .v.i64 = 1};
    df_scan_predicate q = {0, DF_PRED_EQ, 1, &i32};
    memset(sel, 0xff, sizeof sel);
    DF_ASSERT(!df_scan_predicate_evaluable(&q, v->type));
    DF_ASSERT(!df_scan_predicate_eval(&q, v, sel));
    DF_ASSERT_EQ_INT(df_bitmap_count(sel, 0, 100), 100);
    /* Nested and float16 columns are not evaluable; null tests always are. */
    df_field elem;
    DF_ASSERT_OK(df_field_init(&elem, "item", df_type_int64(), true, err), err);
    df_type *list = df_type_list(&elem);
    df_field_clear(&elem);
    DF_ASSERT(!df_scan_predicate_evaluable(&q, list));
    df_scan_predicate isnull = {0, DF_PRED_IS_NULL, 0, NULL};
    DF_ASSERT(df_scan_predicate_evaluable(&isnull, list));
    df_scalar half = {.type = df_type_float16(), .v.u64 = 0x3c00};
    df_scan_predicate h = {0, DF_PRED_EQ, 1, &half};
    DF_ASSERT(!df_scan_predicate_evaluable(&h, df_type_float16()));
    df_type_release(list);
    df_vec_release(v);
    /* A literal beyond a narrow type's range decides every non-null row. */
    df_vec *i8 = random_vec(df_type_int8(), 100);
    int64_t nonnull = 100 - df_vec_null_count(i8);
    struct { df_pred_op op; int64_t lit; int64_t want; } cases[] = {
        {DF_PRED_EQ, 1000, 0}, {DF_PRED_NE, 1000, nonnull}, {DF_PRED_LT, 1000, nonnull}, {DF_PRED_GT, 1000, 0},
        {DF_PRED_GE, -1000, nonnull}, {DF_PRED_LE, -1000, 0}};
    for (size_t c = 0; c < DF_ARRAY_LEN(cases); c++) {
        df_scalar big = {.type = df_type_int8(), .v.i64 = cases[c].lit};
        df_scan_predicate bp = {0, cases[c].op, 1, &big};
        memset(sel, 0xff, sizeof sel);
        DF_ASSERT(df_scan_predicate_eval(&bp, i8, sel));
        DF_ASSERT_EQ_INT(df_bitmap_count(sel, 0, 100), cases[c].want);
    }
    df_vec_release(i8);
}
