/*
 * Math kernels: abs, round, trunc, ceil, floor (floats and decimals),
 * power, logarithms, trigonometry, signum, gcd/lcm/factorial, isnan,
 * iszero, nanvl, pi and random.
 *
 * Floating functions compute in double precision; a Float32 argument is
 * widened and the result narrowed back.  Decimal rounding keeps the scale
 * and rounds half away from zero, as DataFusion does.  Domain errors of
 * floating functions give NaN (ln(-1)), as IEEE/Rust do; integer functions
 * fail on overflow.
 */
#include "exec/exec_int.h"

#include <inttypes.h>
#include <math.h>

typedef double (*dfn1)(double);

/* Frame: output with the AND of argument validity. */
static df_errkind math_begin(const df_kargs *k, const df_xreg *a, int32_t na, df_vec **v) {
    DF_TRY(df__kernel_out(k, 0, v));
    df_errkind e = df__kernel_and_validity(k, a, na, *v);
    if (e) df_vec_release(*v);
    return e;
}

static inline double rd(const df_xreg *a, int64_t i) {
    int64_t j = a->is_const ? 0 : i;
    return a->vec->type->id == DF_TYPE_FLOAT32 ? (double)DF_VEC_VALUES(a->vec, float)[j]
                                               : DF_VEC_VALUES(a->vec, double)[j];
}

static inline void wd(df_vec *v, int64_t i, double d) {
    if (v->type->id == DF_TYPE_FLOAT32) ((float *)(void *)v->values->data)[i] = (float)d;
    else ((double *)(void *)v->values->data)[i] = d;
}

static double degrees(double x) { return x * (180.0 / M_PI); }
static double radians(double x) { return x * (M_PI / 180.0); }
static double signum(double x) { return isnan(x) ? x : (x > 0) - (x < 0); }

static df_errkind unary_float(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    dfn1 f = (dfn1)(uintptr_t)k->aux;
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    for (int64_t i = 0; i < k->n; i++) wd(v, i, f(rd(&a[0], i)));
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* Fails on the first selected, non-NULL row where bad(x, y) holds (a domain error). */
static df_errkind domain_check(const df_kargs *k, const df_xreg *a, int32_t na, df_vec *v,
                               bool (*bad)(double, double), const char *what) {
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        if (bad(rd(&a[0], i), na > 1 ? rd(&a[1], i) : 0))
            return df_error_set(k->err, DF_ERR_EXECUTION, "%s", what);
    });
    return DF_OK;
}

static bool zero_to_negative(double x, double y) { return x == 0 && y < 0; }
static bool negative(double x, double y) { return (void)y, x < 0; }

/* sqrt: a negative operand is a domain error (as DataFusion), not NaN. */
static df_errkind sqrt_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    for (int64_t i = 0; i < k->n; i++) wd(v, i, sqrt(rd(&a[0], i)));
    df_errkind e = domain_check(k, a, na, v, negative, "cannot take square root of a negative number");
    return df__kernel_finish(k, v, e, out);
}

static df_errkind binary_float(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    for (int64_t i = 0; i < k->n; i++) {
        double x = rd(&a[0], i), y = na > 1 ? rd(&a[1], i) : 0, r;
        switch (fn) {
        case DF_FN_POWER: r = pow(x, y); break;
        case DF_FN_ATAN2: r = atan2(x, y); break;
        case DF_FN_NANVL: r = isnan(x) ? y : x; break;
        case DF_FN_LOG: r = na == 1 ? log10(x) : log(y) / log(x); break;
        default: r = NAN;
        }
        wd(v, i, r);
    }
    df_errkind e = fn == DF_FN_POWER ? domain_check(k, a, na, v, zero_to_negative,
                                                    "zero raised to a negative power is undefined")
                                     : DF_OK;
    return df__kernel_finish(k, v, e, out);
}

/* DataFusion casts round's places to Int32: a value beyond it fails (on a selected, non-NULL row). */
static df_errkind digits_fit_int32(const df_kargs *k, const df_xreg *a, int32_t na, const df_vec *v) {
    if (na < 2) return DF_OK;
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int64_t d = DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i];
        if (d > INT32_MAX || d < INT32_MIN)
            return df_error_set(k->err, DF_ERR_CAST, "Cast error: Can't cast value %" PRId64 " to type Int32", d);
    });
    return DF_OK;
}

/* round / trunc / ceil / floor on floats, with optional digits. */
static df_errkind round_float(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    for (int64_t i = 0; i < k->n; i++) {
        double x = rd(&a[0], i);
        int64_t digits = na > 1 ? DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i] : 0;
        if (digits > 300) digits = 300;
        if (digits < -300) digits = -300;
        double m = pow(10.0, (double)digits), r;
        switch (fn) {
        case DF_FN_ROUND: r = digits ? round(x * m) / m : round(x); break;
        case DF_FN_TRUNC: r = digits ? trunc(x * m) / m : trunc(x); break;
        case DF_FN_CEIL: r = ceil(x); break;
        default: r = floor(x); break;
        }
        wd(v, i, r);
    }
    return df__kernel_finish(k, v, digits_fit_int32(k, a, na, v), out);
}

static df_i128 p10(int e) {
    df_i128 r = 1;
    for (int i = 0; i < e && i < 38; i++) r *= 10;
    return r;
}

/* Decimal rounding to `digits` places keeping the scale (ceil/floor: 0 digits). */
static df_errkind round_decimal(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    /* The result may have fewer places than the input (round(x, 2) of DECIMAL(38, 10) is DECIMAL(38, 2)). */
    int scale = a[0].vec->type->scale, drop = scale - k->type->scale;
    df_i128 down = p10(drop > 0 ? drop : 0);
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    df_i128 *o = (df_i128 *)(void *)v->values->data;
    for (int64_t i = 0; i < k->n; i++) {
        df_i128 x = DF_VEC_VALUES(a[0].vec, df_i128)[a[0].is_const ? 0 : i];
        int64_t digits = na > 1 ? DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i] : 0;
        if (digits >= scale || scale - digits > 38) {
            o[i] = digits >= scale ? x / down : 0;
            continue;
        }
        df_i128 q = p10((int)(scale - digits));
        df_i128 t = x / q, r = x % q;
        switch (fn) {
        case DF_FN_ROUND:
            if ((r < 0 ? -r : r) * 2 >= q) t += x < 0 ? -1 : 1;
            break;
        case DF_FN_CEIL:
            if (r > 0) t += 1;
            break;
        case DF_FN_FLOOR:
            if (r < 0) t -= 1;
            break;
        default: break;
        }
        /* t * q is exact in the input's places; dropping places divides exactly (they are zeros). */
        o[i] = drop > 0 && drop <= scale - digits ? t * (q / down) : t * q / down;
    }
    /* Rounding up can carry past the type's precision (ceil(9.23) in DECIMAL(3, 2)). */
    df_i128 lim = p10(k->type->precision) - 1;
    df_errkind e = digits_fit_int32(k, a, na, v);
    if (!e) DF_FOR_SEL(k, i, {
        if ((fn == DF_FN_CEIL || fn == DF_FN_FLOOR) && (o[i] > lim || o[i] < -lim) &&
            (!v->validity || df_bit_get(v->validity->data, i))) {
            e = df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "Decimal overflow while applying %s", df_fn_name(fn));
            break;
        }
    });
    return df__kernel_finish(k, v, e, out);
}

/* abs for every numeric type; integer MIN fails. */
static df_errkind abs_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    const df_vec *x = a[0].vec;
    uint8_t *o = v->values->data;
    bool bad = false;
    switch (x->type->id) {
#define ABS_INT(T, MINV)                                                   \
    {                                                                      \
        const T *s = DF_VEC_VALUES(x, T);                                  \
        for (int64_t i = 0; i < k->n; i++) {                               \
            T p = s[a[0].is_const ? 0 : i];                                \
            bad |= p == (MINV) && (!v->validity || df_bit_get(v->validity->data, i)); \
            ((T *)(void *)o)[i] = p < 0 ? (T)(0 - (uint64_t)p) : p; /* no UB at MIN */ \
        }                                                                  \
        break;                                                             \
    }
    case DF_TYPE_INT8: ABS_INT(int8_t, INT8_MIN)
    case DF_TYPE_INT16: ABS_INT(int16_t, INT16_MIN)
    case DF_TYPE_INT32: ABS_INT(int32_t, INT32_MIN)
    case DF_TYPE_INT64: ABS_INT(int64_t, INT64_MIN)
#undef ABS_INT
    case DF_TYPE_FLOAT32:
    case DF_TYPE_FLOAT64:
        for (int64_t i = 0; i < k->n; i++) wd(v, i, fabs(rd(&a[0], i)));
        break;
    case DF_TYPE_DECIMAL128: {
        const df_i128 *s = DF_VEC_VALUES(x, df_i128);
        for (int64_t i = 0; i < k->n; i++) {
            df_i128 p = s[a[0].is_const ? 0 : i];
            ((df_i128 *)(void *)o)[i] = p < 0 ? -p : p;
        }
        break;
    }
    default: {
        /* unsigned: identity */
        int32_t w = df_type_width(x->type);
        for (int64_t i = 0; i < k->n; i++)
            df__memcpy(o + i * w, x->values->data + (x->offset + (a[0].is_const ? 0 : i)) * w, (size_t)w);
    }
    }
    if (bad) {
        /* Only a selected row counts (a CASE branch not taken must not fail); abs(MIN) stays negative. */
        int32_t w = df_type_width(x->type);
        bool real = false;
        DF_FOR_SEL(k, i, {
            if (!real && (!v->validity || df_bit_get(v->validity->data, i))) {
                const uint8_t *p = o + i * w;
                real = w == 1 ? *(const int8_t *)p < 0
                     : w == 2 ? *(const int16_t *)(const void *)p < 0
                     : w == 4 ? *(const int32_t *)(const void *)p < 0
                              : *(const int64_t *)(const void *)p < 0;
            }
        });
        if (real) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "integer overflow in abs");
        }
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* gcd / lcm of two decimals of one type, on their unscaled values; an lcm beyond the precision fails. */
static df_errkind dec_gcd_lcm(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    df_i128 *o = (df_i128 *)(void *)v->values->data, lim = p10(k->type->precision) - 1;
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        df_i128 x = DF_VEC_VALUES(a[0].vec, df_i128)[a[0].is_const ? 0 : i];
        df_i128 y = DF_VEC_VALUES(a[1].vec, df_i128)[a[1].is_const ? 0 : i];
        df_i128 g = x < 0 ? -x : x, h = y < 0 ? -y : y; /* |x| <= 10^38 - 1: no overflow */
        df_i128 p = g, q = h;
        while (h) {
            df_i128 t = g % h;
            g = h;
            h = t;
        }
        df_i128 r = g;
        if (fn == DF_FN_LCM) {
            r = 0;
            if (p && q && (__builtin_mul_overflow(p / g, q, &r) || r > lim)) {
                if (!v->validity || df_bit_get(v->validity->data, i)) {
                    e = df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "decimal overflow in lcm");
                    break;
                }
                r = 0;
            }
        }
        o[i] = r;
    });
    return df__kernel_finish(k, v, e, out);
}

static df_errkind int_math(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    int64_t *o = (int64_t *)(void *)v->values->data;
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        bool valid = !v->validity || df_bit_get(v->validity->data, i);
        int64_t x = DF_VEC_VALUES(a[0].vec, int64_t)[a[0].is_const ? 0 : i];
        int64_t y = na > 1 ? DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i] : 0;
        int64_t r = 0;
        bool ovf = false;
        switch (fn) {
        case DF_FN_POWER:
            if (y < 0) {
                if (valid) e = df_error_set(k->err, DF_ERR_EXECUTION, "integer power with a negative exponent");
                break;
            }
            r = 1;
            for (int64_t t = 0; t < y && !ovf; t++) ovf = __builtin_mul_overflow(r, x, &r);
            if (y > 64 && (x == 0 || x == 1 || x == -1)) ovf = false, r = x == 0 ? 0 : (x == 1 ? 1 : ((y & 1) ? -1 : 1));
            break;
        case DF_FN_GCD:
        case DF_FN_LCM: {
            uint64_t p = x < 0 ? 0ull - (uint64_t)x : (uint64_t)x, q = y < 0 ? 0ull - (uint64_t)y : (uint64_t)y;
            uint64_t g = p, h = q;
            while (h) {
                uint64_t t = g % h;
                g = h;
                h = t;
            }
            if (fn == DF_FN_GCD) {
                ovf = g > (uint64_t)INT64_MAX;
                r = (int64_t)g;
            } else if (p == 0 || q == 0) {
                r = 0;
            } else {
                uint64_t l;
                ovf = __builtin_mul_overflow(p / g, q, &l) || l > (uint64_t)INT64_MAX;
                r = (int64_t)l;
            }
            break;
        }
        case DF_FN_FACTORIAL:
            if (x < 0) {
                if (valid) e = df_error_set(k->err, DF_ERR_EXECUTION, "factorial of a negative number is undefined");
                break;
            }
            r = 1;
            for (int64_t t = 2; t <= x && !ovf; t++) ovf = __builtin_mul_overflow(r, t, &r);
            break;
        default: break;
        }
        if (e) break;
        if (ovf && valid) {
            e = df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "integer overflow in %s", df_fn_name(fn));
            break;
        }
        o[i] = r;
    });
    return df__kernel_finish(k, v, e, out);
}

static df_errkind float_test(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool nan = k->aux != NULL;
    df_vec *v;
    DF_TRY(math_begin(k, a, na, &v));
    memset(v->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    for (int64_t i = 0; i < k->n; i++) {
        double x = rd(&a[0], i);
        if (nan ? isnan(x) : x == 0) df_bit_set(v->values->data, i);
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

static df_errkind pi_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    for (int64_t i = 0; i < k->n; i++) ((double *)(void *)v->values->data)[i] = M_PI;
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* random(): a SplitMix64 stream seeded from the clock and the output address. */
static df_errkind random_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    uint64_t s = df_now_ns() ^ (uint64_t)(uintptr_t)v;
    for (int64_t i = 0; i < k->n; i++) {
        s += 0x9e3779b97f4a7c15ULL;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        ((double *)(void *)v->values->data)[i] = (double)(z >> 11) * (1.0 / 9007199254740992.0);
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

df_errkind df__kernels_math(const df_expr *call, df_kernel *out, df_error *err) {
    df_fn fn = call->fn;
    const df_type *t = call->nargs ? call->args[0]->type : NULL;
    dfn1 f = NULL;
    switch (fn) {
    case DF_FN_CBRT: f = cbrt; break;
    case DF_FN_EXP: f = exp; break;
    case DF_FN_LN: f = log; break;
    case DF_FN_LOG10: f = log10; break;
    case DF_FN_LOG2: f = log2; break;
    case DF_FN_SIN: f = sin; break;
    case DF_FN_COS: f = cos; break;
    case DF_FN_TAN: f = tan; break;
    case DF_FN_ASIN: f = asin; break;
    case DF_FN_ACOS: f = acos; break;
    case DF_FN_ATAN: f = atan; break;
    case DF_FN_DEGREES: f = degrees; break;
    case DF_FN_RADIANS: f = radians; break;
    case DF_FN_SIGN: f = signum; break;
    case DF_FN_SINH: f = sinh; break;
    case DF_FN_COSH: f = cosh; break;
    case DF_FN_TANH: f = tanh; break;
    case DF_FN_ASINH: f = asinh; break;
    case DF_FN_ACOSH: f = acosh; break;
    case DF_FN_ATANH: f = atanh; break;
    default: break;
    }
    if (f) {
        out->fn = unary_float;
        out->aux = (void *)(uintptr_t)f;
        return DF_OK;
    }
    switch (fn) {
    case DF_FN_ABS: out->fn = abs_k; out->can_error = true; return DF_OK;
    case DF_FN_SQRT: out->fn = sqrt_k; out->can_error = true; return DF_OK;
    case DF_FN_ROUND: case DF_FN_TRUNC: case DF_FN_CEIL: case DF_FN_FLOOR:
        out->fn = df_type_is_decimal(t) ? round_decimal : round_float;
        out->aux = (void *)(intptr_t)fn;
        out->can_error = df_type_is_decimal(t);
        if (df_type_is_decimal(t) && t->id != DF_TYPE_DECIMAL128)
            return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "decimal256 rounding is not supported");
        return DF_OK;
    case DF_FN_POWER:
        out->fn = df_type_is_integer(t) ? int_math : binary_float;
        out->aux = (void *)(intptr_t)fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_ATAN2: case DF_FN_NANVL: case DF_FN_LOG:
        out->fn = binary_float;
        out->aux = (void *)(intptr_t)fn;
        return DF_OK;
    case DF_FN_GCD: case DF_FN_LCM: case DF_FN_FACTORIAL:
        out->fn = t && t->id == DF_TYPE_DECIMAL128 ? dec_gcd_lcm : int_math;
        out->aux = (void *)(intptr_t)fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_ISNAN: out->fn = float_test; out->aux = (void *)(intptr_t)1; return DF_OK;
    case DF_FN_ISZERO: out->fn = float_test; return DF_OK;
    case DF_FN_PI: out->fn = pi_k; return DF_OK;
    case DF_FN_RANDOM: out->fn = random_k; return DF_OK;
    default: return DF_OK;
    }
}
