/*
 * Number rendering for previews, matching Arrow's display of each type:
 *
 *   integers   plain decimal
 *   Float32/64 the shortest digits that read back to the same value, laid
 *              out like Rust's ryu "pretty" form: plain notation while the
 *              decimal exponent is small ("0.000025", "123456789.0"),
 *              scientific otherwise ("1e16", "1.2345678901234568e17"); the
 *              plain/scientific switch is at 10^16 for Float64 and 10^13
 *              for Float32; "NaN", "inf", "-inf", "-0.0"
 *   Float16    Rust's Display of the value widened to f32: shortest digits,
 *              never an exponent, no ".0" ("1", "0.000061035156")
 *   decimals   the exact unscaled integer with the point inserted (scale
 *              zeros kept: "1.50"); a negative scale appends zeros
 *
 * Shortest digits: the candidates "%.{p}e" for p = 1.. are the correctly
 * rounded p-digit decimals; the first one that parses back to the same
 * value is the shortest round-trip representation, and the nearest one of
 * that length.
 */
#include "format/format_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Splits "d.ddde±x" into bare digits and a decimal exponent (value = 0.digits * 10^exp... see below). */
static void split_sci(const char *s, char *digits, int *ndigits, int *exp10) {
    int n = 0;
    const char *p = s;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[n++] = *p;
    int e = *p == 'e' ? atoi(p + 1) : 0;
    /* Drop trailing zeros of the mantissa; they are not significant. */
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = '\0';
    *ndigits = n;
    *exp10 = e;   /* value = d.ddd * 10^e */
}

void df__fmt_shortest(double v, bool single, char *digits, int *ndigits, int *exp10) {
    char buf[40];
    int max_p = single ? 9 : 17;
    for (int p = 1; p <= max_p; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (single) {
            if (strtof(buf, NULL) == (float)v) break;
        } else if (strtod(buf, NULL) == v) {
            break;
        }
    }
    split_sci(buf, digits, ndigits, exp10);
}

/* Writes the ryu-style layout of a finite, non-zero magnitude. */
static df_errkind write_ryu(df_buf *out, const char *digits, int n, int e, int plain_limit, df_error *err) {
    int kk = e + 1;   /* the decimal point sits after kk digits */
    int k = kk - n;   /* value = digits * 10^k */
    if (k >= 0 && kk <= plain_limit) {
        DF_TRY(df_buf_append(out, digits, (size_t)n, err));
        for (int i = 0; i < k; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return df_buf_append(out, ".0", 2, err);
    }
    if (kk > 0 && kk <= plain_limit) {
        DF_TRY(df_buf_append(out, digits, (size_t)kk, err));
        DF_TRY(df_buf_append_char(out, '.', err));
        return df_buf_append(out, digits + kk, (size_t)(n - kk), err);
    }
    if (kk > -5 && kk <= 0) {
        DF_TRY(df_buf_append(out, "0.", 2, err));
        for (int i = 0; i < -kk; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return df_buf_append(out, digits, (size_t)n, err);
    }
    DF_TRY(df_buf_append_char(out, digits[0], err));
    if (n > 1) {
        DF_TRY(df_buf_append_char(out, '.', err));
        DF_TRY(df_buf_append(out, digits + 1, (size_t)(n - 1), err));
    }
    return df_buf_printf(out, err, "e%d", kk - 1);
}

df_errkind df__fmt_float(df_buf *out, double v, bool single, df_error *err) {
    if (isnan(v)) return df_buf_append(out, "NaN", 3, err);
    if (isinf(v)) return df_buf_append_str(out, v < 0 ? "-inf" : "inf", err);
    if (signbit(v)) DF_TRY(df_buf_append_char(out, '-', err));
    v = fabs(v);
    if (v == 0) return df_buf_append(out, "0.0", 3, err);
    char digits[32];
    int n, e;
    df__fmt_shortest(v, single, digits, &n, &e);
    return write_ryu(out, digits, n, e, single ? 13 : 16, err);
}

/* Decodes IEEE half-precision bits. */
static double half_to_double(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
    double v;
    if (exp == 0)
        v = ldexp((double)frac, -24);
    else if (exp == 31)
        v = frac ? NAN : INFINITY;
    else
        v = ldexp((double)(frac | 0x400), exp - 25);
    return sign ? -v : v;
}

df_errkind df__fmt_float16(df_buf *out, uint16_t bits, df_error *err) {
    double v = half_to_double(bits);
    if (isnan(v)) return df_buf_append(out, "NaN", 3, err);
    if (isinf(v)) return df_buf_append_str(out, v < 0 ? "-inf" : "inf", err);
    if (signbit(v)) DF_TRY(df_buf_append_char(out, '-', err));
    v = fabs(v);
    if (v == 0) return df_buf_append_char(out, '0', err);
    char digits[32];
    int n, e;
    df__fmt_shortest(v, true, digits, &n, &e);
    int kk = e + 1;
    if (kk <= 0) {
        DF_TRY(df_buf_append(out, "0.", 2, err));
        for (int i = 0; i < -kk; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return df_buf_append(out, digits, (size_t)n, err);
    }
    if (kk >= n) {
        DF_TRY(df_buf_append(out, digits, (size_t)n, err));
        for (int i = n; i < kk; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return DF_OK;
    }
    DF_TRY(df_buf_append(out, digits, (size_t)kk, err));
    DF_TRY(df_buf_append_char(out, '.', err));
    return df_buf_append(out, digits + kk, (size_t)(n - kk), err);
}

/* ------------------------------------------------------------------------ */
/* Decimals                                                                  */

/* Writes the decimal digits of a magnitude held in little-endian 32-bit limbs (destroyed). */
static int limbs_to_digits(uint32_t *limb, int nlimbs, char *buf, int cap) {
    int len = 0;
    for (;;) {
        /* Divide the whole number by 10^9, collecting the remainder. */
        uint64_t rem = 0;
        bool nonzero = false;
        for (int i = nlimbs - 1; i >= 0; i--) {
            uint64_t cur = (rem << 32) | limb[i];
            limb[i] = (uint32_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
            if (limb[i]) nonzero = true;
        }
        for (int d = 0; d < 9 && len < cap; d++) {
            buf[len++] = (char)('0' + rem % 10);
            rem /= 10;
            if (!nonzero && rem == 0) break;
        }
        if (!nonzero) break;
    }
    while (len > 1 && buf[len - 1] == '0') len--;
    /* Digits were produced least significant first. */
    for (int i = 0; i < len / 2; i++) {
        char t = buf[i];
        buf[i] = buf[len - 1 - i];
        buf[len - 1 - i] = t;
    }
    return len;
}

/* Places the decimal point `scale` digits from the right of a digit string. */
static df_errkind write_scaled(df_buf *out, bool negative, const char *digits, int n, int scale, df_error *err) {
    if (negative) DF_TRY(df_buf_append_char(out, '-', err));
    if (scale <= 0) {
        DF_TRY(df_buf_append(out, digits, (size_t)n, err));
        if (!(n == 1 && digits[0] == '0'))
            for (int i = 0; i < -scale; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return DF_OK;
    }
    if (n <= scale) {
        DF_TRY(df_buf_append(out, "0.", 2, err));
        for (int i = n; i < scale; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return df_buf_append(out, digits, (size_t)n, err);
    }
    DF_TRY(df_buf_append(out, digits, (size_t)(n - scale), err));
    DF_TRY(df_buf_append_char(out, '.', err));
    return df_buf_append(out, digits + n - scale, (size_t)scale, err);
}

df_errkind df__fmt_decimal128(df_buf *out, df_i128 v, int scale, df_error *err) {
    bool neg = v < 0;
    df_u128 mag = neg ? (df_u128)0 - (df_u128)v : (df_u128)v;
    uint32_t limb[4];
    for (int i = 0; i < 4; i++) limb[i] = (uint32_t)(mag >> (32 * i));
    char digits[48];
    int n = limbs_to_digits(limb, 4, digits, (int)sizeof digits);
    return write_scaled(out, neg, digits, n, scale, err);
}

df_errkind df__fmt_decimal256(df_buf *out, const uint8_t *le32, int scale, df_error *err) {
    uint32_t limb[8];
    for (int i = 0; i < 8; i++) limb[i] = df_load_le32(le32 + 4 * i);
    bool neg = (limb[7] >> 31) != 0;
    if (neg) {
        /* Two's complement negation: invert and add one. */
        uint64_t carry = 1;
        for (int i = 0; i < 8; i++) {
            uint64_t s = (uint64_t)(uint32_t)~limb[i] + carry;
            limb[i] = (uint32_t)s;
            carry = s >> 32;
        }
    }
    char digits[96];
    int n = limbs_to_digits(limb, 8, digits, (int)sizeof digits);
    return write_scaled(out, neg, digits, n, scale, err);
}
