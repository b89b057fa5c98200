/*
 * Arithmetic kernels: + - * / % unary minus and bitwise operators over
 * integers, floats, decimal128 and intervals.
 *
 * One specialised loop per (operator, type, operand shape): vector-vector,
 * vector-constant and constant-vector, with no per-value dispatch, written
 * so that compilers vectorise them.  Integer overflow and division by zero
 * are detected optimistically: the loop ORs a per-row flag without
 * branching (guarding divisors so nothing traps); only when a flag is set
 * does a second pass look at the selected, non-NULL rows to decide whether
 * the problem is real (NULL slots hold arbitrary values, and rows outside
 * the selection of a CASE branch must not raise errors).
 *
 * Semantics follow DataFusion/arrow: integer + - * wrap around in two's
 * complement (9223372036854775807 + 1 is -9223372036854775808, as
 * DataFusion's wrapping kernels); integer division truncates toward
 * zero; x / 0 and x % 0 fail with DF_ERR_DIVISION_BY_ZERO; MIN / -1
 * fails with DF_ERR_NUMERIC_OVERFLOW; -MIN wraps to MIN; MIN % -1 is 0; float
 * arithmetic is IEEE (x / 0.0 is infinity); decimal operands are rescaled
 * to the result scale exactly and the result is checked against 128 bits.
 */
#include "exec/exec_int.h"

#include <math.h>

#include "sql/sql_types.h"

/* ------------------------------------------------------------------------ */
/* Shared frame                                                              */

typedef struct bin {
    df_vec *v;          /* output */
    int64_t n;          /* rows */
} bin;

static df_errkind bin_begin(const df_kargs *k, const df_xreg *a, int32_t na, bin *b) {
    DF_TRY(df__kernel_out(k, 0, &b->v));
    df_errkind e = df__kernel_and_validity(k, a, na, b->v);
    if (e) {
        df_vec_release(b->v);
        return e;
    }
    b->n = k->n;
    return DF_OK;
}

/* True when output row i is selected and non-NULL (so its error is real). */
static bool row_counts(const df_kargs *k, const df_vec *v, int64_t i) {
    return !v->validity || df_bit_get(v->validity->data, i);
    (void)k;
}

static df_errkind fail(const df_kargs *k, df_vec *v, df_errkind kind, const char *what) {
    df_vec_release(v);
    return df_error_set(k->err, kind, "%s", what);
}

/* Checked 128-bit multiplication (portable: no compiler runtime helpers). */
static bool mul_i128_overflow(df_i128 a, df_i128 b, df_i128 *r) {
    bool neg = (a < 0) != (b < 0);
    df_u128 ua = a < 0 ? (df_u128)0 - (df_u128)a : (df_u128)a;
    df_u128 ub = b < 0 ? (df_u128)0 - (df_u128)b : (df_u128)b;
    df_u128 limit = neg ? ((df_u128)1 << 127) : (((df_u128)1 << 127) - 1);
    if (ua != 0 && ub > limit / ua) return true;
    df_u128 p = ua * ub;
    *r = neg ? (df_i128)((df_u128)0 - p) : (df_i128)p;
    return false;
}

static bool add_i128_overflow(df_i128 a, df_i128 b, df_i128 *r) {
    df_u128 s = (df_u128)a + (df_u128)b;
    *r = (df_i128)s;
    return (a >= 0) == (b >= 0) && (*r >= 0) != (a >= 0);
}

static bool sub_i128_overflow(df_i128 a, df_i128 b, df_i128 *r) {
    df_u128 s = (df_u128)a - (df_u128)b;
    *r = (df_i128)s;
    return (a >= 0) != (b >= 0) && (*r >= 0) != (a >= 0);
}

/* ------------------------------------------------------------------------ */
/* Integers                                                                  */

#define CHK_ADD(x, y, r) __builtin_add_overflow((x), (y), (r))
#define CHK_SUB(x, y, r) __builtin_sub_overflow((x), (y), (r))
#define CHK_MUL(x, y, r) __builtin_mul_overflow((x), (y), (r))

/* x op y wrapping on overflow (the builtins store the wrapped result), three operand shapes. */
#define DEFINE_INT_WRAPPING(NAME, T, CHK)                                                    \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        bin b;                                                                               \
        DF_TRY(bin_begin(k, a, na, &b));                                                     \
        T *o = (T *)(void *)b.v->values->data;                                               \
        const T *x = DF_XV(&a[0], T), *y = DF_XV(&a[1], T);                                 \
        if (a[1].is_const) {                                                                 \
            const T c = y[0];                                                                \
            for (int64_t i = 0; i < b.n; i++) (void)CHK(x[i], c, &o[i]);                     \
        } else if (a[0].is_const) {                                                          \
            const T c = x[0];                                                                \
            for (int64_t i = 0; i < b.n; i++) (void)CHK(c, y[i], &o[i]);                     \
        } else {                                                                             \
            for (int64_t i = 0; i < b.n; i++) (void)CHK(x[i], y[i], &o[i]);                  \
        }                                                                                    \
        df__kernel_done(k, b.v, out);                                                         \
        return DF_OK;                                                                        \
    }

/* Division / remainder: guarded divisors, zero and MIN/-1 flags. */
#define DEFINE_INT_DIVREM(NAME, T, MINV, IS_REM)                                             \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        bin b;                                                                               \
        DF_TRY(bin_begin(k, a, na, &b));                                                     \
        T *o = (T *)(void *)b.v->values->data;                                               \
        const T *x = DF_XV(&a[0], T), *y = DF_XV(&a[1], T);                                 \
        int zero = 0, ovf = 0;                                                               \
        for (int64_t i = 0; i < b.n; i++) {                                                  \
            T xi = x[a[0].is_const ? 0 : i], d = y[a[1].is_const ? 0 : i];                   \
            int z = d == 0;                                                                  \
            int ov = (MINV != 0) && xi == (T)(MINV) && d == (T)-1;                           \
            T dd = (z | ov) ? (T)1 : d;                                                      \
            o[i] = IS_REM ? (ov ? (T)0 : (T)(xi % dd)) : (T)(xi / dd);                       \
            zero |= z;                                                                       \
            ovf |= ov;                                                                       \
        }                                                                                    \
        if (zero || (ovf && !IS_REM)) {                                                      \
            DF_FOR_SEL(k, i, {                                                               \
                if (!row_counts(k, b.v, i)) continue;                                        \
                T xi = x[a[0].is_const ? 0 : i], d = y[a[1].is_const ? 0 : i];               \
                if (d == 0) return fail(k, b.v, DF_ERR_DIVISION_BY_ZERO, "division by zero"); \
                if (!IS_REM && (MINV != 0) && xi == (T)(MINV) && d == (T)-1)                 \
                    return fail(k, b.v, DF_ERR_NUMERIC_OVERFLOW, "integer overflow in division"); \
            });                                                                              \
        }                                                                                    \
        df__kernel_done(k, b.v, out);                                                         \
        return DF_OK;                                                                        \
    }

#define DEFINE_INT_FAMILY(SUF, T, MINV)                              \
    DEFINE_INT_WRAPPING(add_##SUF, T, CHK_ADD)                       \
    DEFINE_INT_WRAPPING(sub_##SUF, T, CHK_SUB)                       \
    DEFINE_INT_WRAPPING(mul_##SUF, T, CHK_MUL)                       \
    DEFINE_INT_DIVREM(div_##SUF, T, MINV, 0)                         \
    DEFINE_INT_DIVREM(rem_##SUF, T, MINV, 1)

DEFINE_INT_FAMILY(i8, int8_t, INT8_MIN)
DEFINE_INT_FAMILY(i16, int16_t, INT16_MIN)
DEFINE_INT_FAMILY(i32, int32_t, INT32_MIN)
DEFINE_INT_FAMILY(i64, int64_t, INT64_MIN)
DEFINE_INT_FAMILY(u8, uint8_t, 0)
DEFINE_INT_FAMILY(u16, uint16_t, 0)
DEFINE_INT_FAMILY(u32, uint32_t, 0)
DEFINE_INT_FAMILY(u64, uint64_t, 0)

/* Bitwise operators cannot fail; shifts use the amount modulo the width. */
#define DEFINE_BITWISE(NAME, T, EXPR)                                                        \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        bin b;                                                                               \
        DF_TRY(bin_begin(k, a, na, &b));                                                     \
        T *o = (T *)(void *)b.v->values->data;                                               \
        const T *x = DF_XV(&a[0], T), *y = DF_XV(&a[1], T);                                 \
        for (int64_t i = 0; i < b.n; i++) {                                                  \
            T p = x[a[0].is_const ? 0 : i], q = y[a[1].is_const ? 0 : i];                    \
            o[i] = (T)(EXPR);                                                                \
        }                                                                                    \
        df__kernel_done(k, b.v, out);                                                         \
        return DF_OK;                                                                        \
    }

#define WIDTH_MASK(T) ((unsigned)(sizeof(T) * 8 - 1))
#define DEFINE_BITWISE_FAMILY(SUF, T, UT)                                              \
    DEFINE_BITWISE(band_##SUF, T, p & q)                                               \
    DEFINE_BITWISE(bor_##SUF, T, p | q)                                                \
    DEFINE_BITWISE(bxor_##SUF, T, p ^ q)                                               \
    DEFINE_BITWISE(shl_##SUF, T, (UT)p << ((unsigned)q & WIDTH_MASK(T)))               \
    DEFINE_BITWISE(shr_##SUF, T, p >> ((unsigned)q & WIDTH_MASK(T)))

DEFINE_BITWISE_FAMILY(i8, int8_t, uint8_t)
DEFINE_BITWISE_FAMILY(i16, int16_t, uint16_t)
DEFINE_BITWISE_FAMILY(i32, int32_t, uint32_t)
DEFINE_BITWISE_FAMILY(i64, int64_t, uint64_t)
DEFINE_BITWISE_FAMILY(u8, uint8_t, uint8_t)
DEFINE_BITWISE_FAMILY(u16, uint16_t, uint16_t)
DEFINE_BITWISE_FAMILY(u32, uint32_t, uint32_t)
DEFINE_BITWISE_FAMILY(u64, uint64_t, uint64_t)

#define DEFINE_UNARY(NAME, T, EXPR)                                                          \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        bin b;                                                                               \
        DF_TRY(bin_begin(k, a, na, &b));                                                     \
        T *o = (T *)(void *)b.v->values->data;                                               \
        const T *x = DF_XV(&a[0], T);                                                        \
        for (int64_t i = 0; i < b.n; i++) {                                                  \
            T p = x[i];                                                                      \
            o[i] = (T)(EXPR);                                                                \
        }                                                                                    \
        df__kernel_done(k, b.v, out);                                                         \
        return DF_OK;                                                                        \
    }

DEFINE_UNARY(bnot_i8, int8_t, ~p)
DEFINE_UNARY(bnot_i16, int16_t, ~p)
DEFINE_UNARY(bnot_i32, int32_t, ~p)
DEFINE_UNARY(bnot_i64, int64_t, ~p)
DEFINE_UNARY(bnot_u8, uint8_t, ~p)
DEFINE_UNARY(bnot_u16, uint16_t, ~p)
DEFINE_UNARY(bnot_u32, uint32_t, ~p)
DEFINE_UNARY(bnot_u64, uint64_t, ~p)
DEFINE_UNARY(neg_f32, float, -p)
DEFINE_UNARY(neg_f64, double, -p)

/* Wrapping negation, as DataFusion's column kernels: -MIN is MIN (the builtin stores the wrapped result). */
#define DEFINE_NEG(NAME, T)                                                                  \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        bin b;                                                                               \
        DF_TRY(bin_begin(k, a, na, &b));                                                     \
        T *o = (T *)(void *)b.v->values->data;                                               \
        const T *x = DF_XV(&a[0], T);                                                        \
        for (int64_t i = 0; i < b.n; i++) (void)__builtin_sub_overflow((T)0, x[i], &o[i]);   \
        df__kernel_done(k, b.v, out);                                                         \
        return DF_OK;                                                                        \
    }

DEFINE_NEG(neg_i8, int8_t)
DEFINE_NEG(neg_i16, int16_t)
DEFINE_NEG(neg_i32, int32_t)
DEFINE_NEG(neg_i64, int64_t)

/* ------------------------------------------------------------------------ */
/* Floats                                                                    */

#define DEFINE_FLOAT(NAME, T, EXPR)                                                          \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        bin b;                                                                               \
        DF_TRY(bin_begin(k, a, na, &b));                                                     \
        T *o = (T *)(void *)b.v->values->data;                                               \
        const T *x = DF_XV(&a[0], T), *y = DF_XV(&a[1], T);                                 \
        if (a[1].is_const) {                                                                 \
            const T q = y[0];                                                                \
            for (int64_t i = 0; i < b.n; i++) {                                              \
                T p = x[i];                                                                  \
                o[i] = EXPR;                                                                 \
            }                                                                                \
        } else if (a[0].is_const) {                                                          \
            const T p = x[0];                                                                \
            for (int64_t i = 0; i < b.n; i++) {                                              \
                T q = y[i];                                                                  \
                o[i] = EXPR;                                                                 \
            }                                                                                \
        } else {                                                                             \
            for (int64_t i = 0; i < b.n; i++) {                                              \
                T p = x[i], q = y[i];                                                        \
                o[i] = EXPR;                                                                 \
            }                                                                                \
        }                                                                                    \
        df__kernel_done(k, b.v, out);                                                         \
        return DF_OK;                                                                        \
    }

DEFINE_FLOAT(add_f32, float, p + q)
DEFINE_FLOAT(sub_f32, float, p - q)
DEFINE_FLOAT(mul_f32, float, p * q)
DEFINE_FLOAT(div_f32, float, p / q)
DEFINE_FLOAT(rem_f32, float, fmodf(p, q))
DEFINE_FLOAT(add_f64, double, p + q)
DEFINE_FLOAT(sub_f64, double, p - q)
DEFINE_FLOAT(mul_f64, double, p * q)
DEFINE_FLOAT(div_f64, double, p / q)
DEFINE_FLOAT(rem_f64, double, fmod(p, q))

/* ------------------------------------------------------------------------ */
/* Decimal128                                                                */

typedef struct dec_aux {
    df_i128 lmul;       /* left operand multiplier (rescaling) */
    df_i128 rmul;       /* right operand multiplier */
    int op;             /* DF_FN_ADD ... DF_FN_MOD */
} dec_aux;

static df_i128 pow10_i128(int e) {
    df_i128 r = 1;
    for (int i = 0; i < e; i++) r *= 10;
    return r;
}

/* One decimal row; returns 0 ok, 1 overflow, 2 division by zero. */
static inline int dec_row(const dec_aux *d, df_i128 x, df_i128 y, df_i128 *r) {
    df_i128 xs, ys;
    if (mul_i128_overflow(x, d->lmul, &xs)) return 1;
    if (d->op != DF_FN_MUL && mul_i128_overflow(y, d->rmul, &ys)) return 1;
    switch (d->op) {
    case DF_FN_ADD: return add_i128_overflow(xs, ys, r);
    case DF_FN_SUB: return sub_i128_overflow(xs, ys, r);
    case DF_FN_MUL: return mul_i128_overflow(x, y, r);
    case DF_FN_DIV:
        if (ys == 0) return 2;
        *r = xs / ys;
        return 0;
    default:
        if (ys == 0) return 2;
        *r = xs % ys;
        return 0;
    }
}

static df_errkind dec_arith(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const dec_aux *d = k->aux;
    bin b;
    DF_TRY(bin_begin(k, a, na, &b));
    df_i128 *o = (df_i128 *)(void *)b.v->values->data;
    const df_i128 *x = DF_XV(&a[0], df_i128), *y = DF_XV(&a[1], df_i128);
    int bad = 0;
    for (int64_t i = 0; i < b.n; i++) {
        df_i128 r = 0;
        int e = dec_row(d, x[a[0].is_const ? 0 : i], y[a[1].is_const ? 0 : i], &r);
        o[i] = e ? 0 : r;
        bad |= e;
    }
    if (bad) {
        DF_FOR_SEL(k, i, {
            df_i128 r;
            if (!row_counts(k, b.v, i)) continue;
            int e = dec_row(d, x[a[0].is_const ? 0 : i], y[a[1].is_const ? 0 : i], &r);
            if (e == 2) return fail(k, b.v, DF_ERR_DIVISION_BY_ZERO, "division by zero");
            if (e == 1) return fail(k, b.v, DF_ERR_NUMERIC_OVERFLOW, "decimal overflow");
        });
    }
    df__kernel_done(k, b.v, out);
    return DF_OK;
}

static df_errkind dec_neg(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bin b;
    DF_TRY(bin_begin(k, a, na, &b));
    df_i128 *o = (df_i128 *)(void *)b.v->values->data;
    const df_i128 *x = DF_XV(&a[0], df_i128);
    for (int64_t i = 0; i < b.n; i++) o[i] = (df_i128)((df_u128)0 - (df_u128)x[i]);
    df__kernel_done(k, b.v, out);
    return DF_OK;
}

static df_errkind dec_kernel(const df_expr *call, df_kernel *out, df_error *err) {
    int p1, s1, p2, s2, p, s;
    if (!df__sqlt_decimal_ps(call->args[0]->type, &p1, &s1) || !df__sqlt_decimal_ps(call->args[1]->type, &p2, &s2) ||
        !df__sqlt_decimal_ps(call->type, &p, &s))
        return DF_OK;
    if (call->type->id != DF_TYPE_DECIMAL128 || call->args[0]->type->id != DF_TYPE_DECIMAL128 ||
        call->args[1]->type->id != DF_TYPE_DECIMAL128)
        return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "decimal256 arithmetic is not supported");
    dec_aux *d = df_calloc(1, sizeof *d);
    if (!d) return DF_OOM(err);
    d->op = call->fn;
    switch (call->fn) {
    case DF_FN_ADD: case DF_FN_SUB: case DF_FN_MOD:
        d->lmul = pow10_i128(s - s1 < 0 ? 0 : s - s1);
        d->rmul = pow10_i128(s - s2 < 0 ? 0 : s - s2);
        if (call->fn == DF_FN_MOD) {
            int ms = DF_MAX(s1, s2);
            d->lmul = pow10_i128(ms - s1);
            d->rmul = pow10_i128(ms - s2);
        }
        break;
    case DF_FN_MUL:
        d->lmul = 1;
        d->rmul = 1;
        break;
    default: { /* DIV: l * 10^(s - s1 + s2) / r */
        int mul_pow = s - s1 + s2;
        d->lmul = mul_pow >= 0 ? pow10_i128(mul_pow) : 1;
        d->rmul = mul_pow < 0 ? pow10_i128(-mul_pow) : 1;
        break;
    }
    }
    out->fn = dec_arith;
    out->aux = d;
    out->aux_free = df_free;
    out->can_error = true;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Intervals (month-day-nano): component-wise, checked                      */

typedef struct mdn {
    int32_t months, days;
    int64_t nanos;
} mdn;

static df_errkind interval_addsub(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool sub = k->aux != NULL;
    bin b;
    DF_TRY(bin_begin(k, a, na, &b));
    mdn *o = (mdn *)(void *)b.v->values->data;
    const mdn *x = DF_XV(&a[0], mdn), *y = DF_XV(&a[1], mdn);
    bool bad = false;
    DF_FOR_SEL(k, i, {
        mdn p = x[a[0].is_const ? 0 : i], q = y[a[1].is_const ? 0 : i], r;
        bool ov = sub ? (__builtin_sub_overflow(p.months, q.months, &r.months) |
                         __builtin_sub_overflow(p.days, q.days, &r.days) |
                         __builtin_sub_overflow(p.nanos, q.nanos, &r.nanos))
                      : (__builtin_add_overflow(p.months, q.months, &r.months) |
                         __builtin_add_overflow(p.days, q.days, &r.days) |
                         __builtin_add_overflow(p.nanos, q.nanos, &r.nanos));
        if (ov && row_counts(k, b.v, i)) bad = true;
        o[i] = r;
    });
    if (bad) return fail(k, b.v, DF_ERR_NUMERIC_OVERFLOW, "interval overflow");
    df__kernel_done(k, b.v, out);
    return DF_OK;
}

static df_errkind interval_neg(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bin b;
    DF_TRY(bin_begin(k, a, na, &b));
    mdn *o = (mdn *)(void *)b.v->values->data;
    const mdn *x = DF_XV(&a[0], mdn);
    for (int64_t i = 0; i < b.n; i++) {
        o[i].months = (int32_t)(0u - (uint32_t)x[i].months);
        o[i].days = (int32_t)(0u - (uint32_t)x[i].days);
        o[i].nanos = (int64_t)(0ull - (uint64_t)x[i].nanos);
    }
    df__kernel_done(k, b.v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

typedef struct int_row {
    df_kernel_fn add, sub, mul, div, rem, band, bor, bxor, shl, shr, bnot, neg;
} int_row;

static const int_row *int_kernels(df_type_id id) {
    static const int_row rows[] = {
        {add_i8, sub_i8, mul_i8, div_i8, rem_i8, band_i8, bor_i8, bxor_i8, shl_i8, shr_i8, bnot_i8, neg_i8},
        {add_i16, sub_i16, mul_i16, div_i16, rem_i16, band_i16, bor_i16, bxor_i16, shl_i16, shr_i16, bnot_i16, neg_i16},
        {add_i32, sub_i32, mul_i32, div_i32, rem_i32, band_i32, bor_i32, bxor_i32, shl_i32, shr_i32, bnot_i32, neg_i32},
        {add_i64, sub_i64, mul_i64, div_i64, rem_i64, band_i64, bor_i64, bxor_i64, shl_i64, shr_i64, bnot_i64, neg_i64},
        {add_u8, sub_u8, mul_u8, div_u8, rem_u8, band_u8, bor_u8, bxor_u8, shl_u8, shr_u8, bnot_u8, NULL},
        {add_u16, sub_u16, mul_u16, div_u16, rem_u16, band_u16, bor_u16, bxor_u16, shl_u16, shr_u16, bnot_u16, NULL},
        {add_u32, sub_u32, mul_u32, div_u32, rem_u32, band_u32, bor_u32, bxor_u32, shl_u32, shr_u32, bnot_u32, NULL},
        {add_u64, sub_u64, mul_u64, div_u64, rem_u64, band_u64, bor_u64, bxor_u64, shl_u64, shr_u64, bnot_u64, NULL},
    };
    if (id < DF_TYPE_INT8 || id > DF_TYPE_UINT64) return NULL;
    return &rows[id - DF_TYPE_INT8];
}

df_errkind df__kernels_arith(const df_expr *call, df_kernel *out, df_error *err) {
    df_fn fn = call->fn;
    bool binary = fn == DF_FN_ADD || fn == DF_FN_SUB || fn == DF_FN_MUL || fn == DF_FN_DIV || fn == DF_FN_MOD ||
                  fn == DF_FN_BIT_AND || fn == DF_FN_BIT_OR || fn == DF_FN_BIT_XOR || fn == DF_FN_SHL ||
                  fn == DF_FN_SHR;
    if (!binary && fn != DF_FN_NEG && fn != DF_FN_BIT_NOT) return DF_OK;
    const df_type *t = call->args[0]->type;
    if (binary && !df_type_equals(t, call->args[1]->type) && !df_type_is_decimal(t)) return DF_OK;
    const int_row *ir = int_kernels(t->id);
    if (ir) {
        switch (fn) {
        case DF_FN_ADD: out->fn = ir->add; out->can_error = true; break;
        case DF_FN_SUB: out->fn = ir->sub; out->can_error = true; break;
        case DF_FN_MUL: out->fn = ir->mul; out->can_error = true; break;
        case DF_FN_DIV: out->fn = ir->div; out->can_error = true; break;
        case DF_FN_MOD: out->fn = ir->rem; out->can_error = true; break;
        case DF_FN_BIT_AND: out->fn = ir->band; break;
        case DF_FN_BIT_OR: out->fn = ir->bor; break;
        case DF_FN_BIT_XOR: out->fn = ir->bxor; break;
        case DF_FN_SHL: out->fn = ir->shl; break;
        case DF_FN_SHR: out->fn = ir->shr; break;
        case DF_FN_BIT_NOT: out->fn = ir->bnot; break;
        case DF_FN_NEG: out->fn = ir->neg; out->can_error = true; break;
        default: break;
        }
        return DF_OK;
    }
    if (t->id == DF_TYPE_FLOAT32 || t->id == DF_TYPE_FLOAT64) {
        bool d = t->id == DF_TYPE_FLOAT64;
        switch (fn) {
        case DF_FN_ADD: out->fn = d ? add_f64 : add_f32; break;
        case DF_FN_SUB: out->fn = d ? sub_f64 : sub_f32; break;
        case DF_FN_MUL: out->fn = d ? mul_f64 : mul_f32; break;
        case DF_FN_DIV: out->fn = d ? div_f64 : div_f32; break;
        case DF_FN_MOD: out->fn = d ? rem_f64 : rem_f32; break;
        case DF_FN_NEG: out->fn = d ? neg_f64 : neg_f32; break;
        default: break;
        }
        return DF_OK;
    }
    if (t->id == DF_TYPE_DECIMAL128 && fn == DF_FN_NEG) {
        out->fn = dec_neg;
        return DF_OK;
    }
    if (df_type_is_decimal(t) && binary && fn <= DF_FN_MOD) return dec_kernel(call, out, err);
    if (t->id == DF_TYPE_INTERVAL_MDN) {
        if (fn == DF_FN_NEG) {
            out->fn = interval_neg;
        } else if ((fn == DF_FN_ADD || fn == DF_FN_SUB) && call->args[1]->type->id == DF_TYPE_INTERVAL_MDN) {
            static const char subtract_marker = 1;
            out->fn = interval_addsub;
            out->aux = fn == DF_FN_SUB ? (void *)(uintptr_t)&subtract_marker : NULL; /* non-NULL: subtract */
            out->can_error = true;
        }
        return DF_OK;
    }
    return DF_OK;
}
