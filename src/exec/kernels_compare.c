/*
 * Comparison and predicate kernels: = <> < <= > >=, IS [NOT] DISTINCT
 * FROM, IS [NOT] NULL/TRUE/FALSE, [NOT] [I]LIKE, regular expression
 * matches, IN lists with constant elements, NULLIF, GREATEST and LEAST.
 *
 * Fixed-width comparisons run one loop per (operator, type, operand shape)
 * and pack eight results into a byte at a time.  Floats compare in IEEE
 * total order with the two zeros equal (as DataFusion does: NaN equals NaN
 * and is greater than every number, -0 = +0) by mapping their bits to
 * integers that compare the same way.  Sorting (df__cmp_values) keeps the
 * pure total order (-0 before +0).  Strings and
 * binaries compare bytewise.  LIKE patterns known at compile time are
 * classified once (exact / prefix / suffix / contains / general) so most
 * rows cost a memcmp or memmem; ILIKE folds ASCII letters only.
 */
#include "exec/exec_int.h"
#include "exec/regex_int.h"

#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Boolean output helpers                                                    */

static df_errkind bool_out(const df_kargs *k, const df_xreg *a, int32_t na, df_vec **v) {
    DF_TRY(df__kernel_out(k, 0, v));
    memset((*v)->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    if (na == 0) return DF_OK;
    df_errkind e = df__kernel_and_validity(k, a, na, *v);
    if (e) df_vec_release(*v);
    return e;
}

/* Total-order keys for floats. */
static inline int64_t f64_key(double d) {
    int64_t b;
    df__memcpy(&b, &d, 8);
    return b ^ (int64_t)((uint64_t)(b >> 63) >> 1);
}
static inline int32_t f32_key(float f) {
    int32_t b;
    df__memcpy(&b, &f, 4);
    return b ^ (int32_t)((uint32_t)(b >> 31) >> 1);
}

/* The same keys with -0 mapped to +0: the order of SQL comparisons. */
static inline int64_t f64_ckey(double d) {
    return f64_key(d == 0 ? 0.0 : d);
}
static inline int32_t f32_ckey(float f) {
    return f32_key(f == 0 ? 0.0f : f);
}

/* Equality as SQL comparisons see it: df__cmp_values except that -0 equals +0. */
static bool values_equal(const df_vec *a, int64_t i, const df_vec *b, int64_t j) {
    if (a->type->id == DF_TYPE_FLOAT64 && b->type->id == DF_TYPE_FLOAT64)
        return f64_ckey(DF_VEC_VALUES(a, double)[i]) == f64_ckey(DF_VEC_VALUES(b, double)[j]);
    if (a->type->id == DF_TYPE_FLOAT32 && b->type->id == DF_TYPE_FLOAT32)
        return f32_ckey(DF_VEC_VALUES(a, float)[i]) == f32_ckey(DF_VEC_VALUES(b, float)[j]);
    return df__cmp_values(a, i, b, j) == 0;
}

/* ------------------------------------------------------------------------ */
/* Fixed-width comparisons                                                   */

#define PACK_LOOP(n, bits, EXPR)                                              \
    do {                                                                      \
        int64_t full_ = (n) / 8;                                              \
        for (int64_t b_ = 0; b_ < full_; b_++) {                              \
            uint8_t byte_ = 0;                                                \
            for (int j_ = 0; j_ < 8; j_++) {                                  \
                int64_t i = b_ * 8 + j_;                                      \
                byte_ |= (uint8_t)((EXPR) ? 1u << j_ : 0u);                   \
            }                                                                 \
            (bits)[b_] = byte_;                                               \
        }                                                                     \
        for (int64_t i = full_ * 8; i < (n); i++)                             \
            if (EXPR) df_bit_set((bits), i);                                  \
    } while (0)

#define DEFINE_CMP(NAME, T, KEY, OP)                                                         \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {  \
        df_vec *v;                                                                           \
        DF_TRY(bool_out(k, a, na, &v));                                                      \
        uint8_t *bits = v->values->data;                                                     \
        const T *x = DF_XV(&a[0], T), *y = DF_XV(&a[1], T);                                 \
        int64_t n = k->n;                                                                    \
        if (a[1].is_const) {                                                                 \
            const T c = y[0];                                                                \
            PACK_LOOP(n, bits, KEY(x[i]) OP KEY(c));                                         \
        } else if (a[0].is_const) {                                                          \
            const T c = x[0];                                                                \
            PACK_LOOP(n, bits, KEY(c) OP KEY(y[i]));                                         \
        } else {                                                                             \
            PACK_LOOP(n, bits, KEY(x[i]) OP KEY(y[i]));                                      \
        }                                                                                    \
        df__kernel_done(k, v, out);                                                           \
        return DF_OK;                                                                        \
    }

#define ID(x) (x)
#define DEFINE_CMP_FAMILY(SUF, T, KEY)          \
    DEFINE_CMP(eq_##SUF, T, KEY, ==)            \
    DEFINE_CMP(ne_##SUF, T, KEY, !=)            \
    DEFINE_CMP(lt_##SUF, T, KEY, <)             \
    DEFINE_CMP(le_##SUF, T, KEY, <=)            \
    DEFINE_CMP(gt_##SUF, T, KEY, >)             \
    DEFINE_CMP(ge_##SUF, T, KEY, >=)

DEFINE_CMP_FAMILY(i8, int8_t, ID)
DEFINE_CMP_FAMILY(i16, int16_t, ID)
DEFINE_CMP_FAMILY(i32, int32_t, ID)
DEFINE_CMP_FAMILY(i64, int64_t, ID)
DEFINE_CMP_FAMILY(u8, uint8_t, ID)
DEFINE_CMP_FAMILY(u16, uint16_t, ID)
DEFINE_CMP_FAMILY(u32, uint32_t, ID)
DEFINE_CMP_FAMILY(u64, uint64_t, ID)
DEFINE_CMP_FAMILY(f32, float, f32_ckey)
DEFINE_CMP_FAMILY(f64, double, f64_ckey)
DEFINE_CMP_FAMILY(i128, df_i128, ID)

typedef struct cmp_row {
    df_kernel_fn eq, ne, lt, le, gt, ge;
} cmp_row;

#define ROW(SUF) {eq_##SUF, ne_##SUF, lt_##SUF, le_##SUF, gt_##SUF, ge_##SUF}

static const cmp_row *fixed_cmp(const df_type *t) {
    static const cmp_row rows[] = {ROW(i8), ROW(i16), ROW(i32), ROW(i64), ROW(u8), ROW(u16),
                                   ROW(u32), ROW(u64), ROW(f32), ROW(f64), ROW(i128)};
    switch (t->id) {
    case DF_TYPE_INT8: return &rows[0];
    case DF_TYPE_INT16: return &rows[1];
    case DF_TYPE_INT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32: return &rows[2];
    case DF_TYPE_INT64: case DF_TYPE_DATE64: case DF_TYPE_TIME64: case DF_TYPE_TIMESTAMP:
    case DF_TYPE_DURATION: return &rows[3];
    case DF_TYPE_UINT8: return &rows[4];
    case DF_TYPE_UINT16: return &rows[5];
    case DF_TYPE_UINT32: return &rows[6];
    case DF_TYPE_UINT64: return &rows[7];
    case DF_TYPE_FLOAT32: return &rows[8];
    case DF_TYPE_FLOAT64: return &rows[9];
    case DF_TYPE_DECIMAL128: return &rows[10];
    default: return NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Generic value comparison (strings, booleans, intervals, slow paths)       */

int df__cmp_values(const df_vec *a, int64_t i, const df_vec *b, int64_t j) {
    switch (a->type->id) {
    case DF_TYPE_BOOL: return (int)df_vec_bool(a, i) - (int)df_vec_bool(b, j);
#define CMPT(T, KEY)                                                                \
    {                                                                               \
        T x = DF_VEC_VALUES(a, T)[i], y = DF_VEC_VALUES(b, T)[j];                   \
        return KEY(x) < KEY(y) ? -1 : KEY(x) > KEY(y);                              \
    }
    case DF_TYPE_INT8: CMPT(int8_t, ID)
    case DF_TYPE_INT16: CMPT(int16_t, ID)
    case DF_TYPE_INT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32: CMPT(int32_t, ID)
    case DF_TYPE_INT64: case DF_TYPE_DATE64: case DF_TYPE_TIME64: case DF_TYPE_TIMESTAMP:
    case DF_TYPE_DURATION: CMPT(int64_t, ID)
    case DF_TYPE_UINT8: CMPT(uint8_t, ID)
    case DF_TYPE_UINT16: CMPT(uint16_t, ID)
    case DF_TYPE_UINT32: CMPT(uint32_t, ID)
    case DF_TYPE_UINT64: CMPT(uint64_t, ID)
    case DF_TYPE_FLOAT32: CMPT(float, f32_key)
    case DF_TYPE_FLOAT64: CMPT(double, f64_key)
    case DF_TYPE_DECIMAL128: CMPT(df_i128, ID)
#undef CMPT
    case DF_TYPE_INTERVAL_MDN: {
        const uint8_t *p = a->values->data + (a->offset + i) * 16, *q = b->values->data + (b->offset + j) * 16;
        int32_t m1, m2, d1, d2;
        int64_t n1, n2;
        df__memcpy(&m1, p, 4), df__memcpy(&d1, p + 4, 4), df__memcpy(&n1, p + 8, 8);
        df__memcpy(&m2, q, 4), df__memcpy(&d2, q + 4, 4), df__memcpy(&n2, q + 8, 8);
        if (m1 != m2) return m1 < m2 ? -1 : 1;
        if (d1 != d2) return d1 < d2 ? -1 : 1;
        return n1 < n2 ? -1 : n1 > n2;
    }
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        int32_t la, lb;
        const uint8_t *pa = df_vec_bytes(a, i, &la), *pb = df_vec_bytes(b, j, &lb);
        int c = memcmp(pa, pb, (size_t)DF_MIN(la, lb));
        if (c) return c < 0 ? -1 : 1;
        return la < lb ? -1 : la > lb;
    }
    case DF_TYPE_FIXED_BINARY: {
        int32_t w = a->type->byte_width;
        int c = memcmp(a->values->data + (a->offset + i) * w, b->values->data + (b->offset + j) * w, (size_t)w);
        return c < 0 ? -1 : c > 0;
    }
    default: return 0;
    }
}

uint64_t df__hash_value(const df_vec *v, int64_t i) {
    if (v->type->id == DF_TYPE_NULL || !df_vec_is_valid(v, i)) return 0x9e3779b97f4a7c15ULL;
    switch (v->type->id) {
    case DF_TYPE_BOOL: return df_hash_u64(df_vec_bool(v, i) ? 2 : 1);
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        int32_t len;
        const uint8_t *p = df_vec_bytes(v, i, &len);
        return df_hash_bytes(p, (size_t)len, 0);
    }
    case DF_TYPE_FLOAT64: {
        double d = DF_VEC_VALUES(v, double)[i];
        if (d == 0) d = 0; /* -0 and +0 differ in total order but both hash alike: fine */
        return df_hash_u64((uint64_t)f64_key(d));
    }
    case DF_TYPE_FLOAT32: return df_hash_u64((uint64_t)(int64_t)f32_ckey(DF_VEC_VALUES(v, float)[i]));
    default: {
        int32_t w = df_type_width(v->type);
        if (w <= 0) return 0;
        if (w <= 8) {
            uint64_t x = 0;
            df__memcpy(&x, v->values->data + (v->offset + i) * w, (size_t)w);
            return df_hash_u64(x ^ (uint64_t)w);
        }
        return df_hash_bytes(v->values->data + (v->offset + i) * w, (size_t)w, 0);
    }
    }
}

/* Row-by-row comparison for types without a fixed-width loop. */
static df_errkind cmp_generic(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(bool_out(k, a, na, &v));
    uint8_t *bits = v->values->data;
    for (int64_t i = 0; i < k->n; i++) {
        if (!df_xreg_valid(&a[0], i) || !df_xreg_valid(&a[1], i)) continue;
        int c = df__cmp_values(a[0].vec, a[0].is_const ? 0 : i, a[1].vec, a[1].is_const ? 0 : i);
        bool r;
        switch (fn) {
        case DF_FN_EQ: r = c == 0; break;
        case DF_FN_NE: r = c != 0; break;
        case DF_FN_LT: r = c < 0; break;
        case DF_FN_LE: r = c <= 0; break;
        case DF_FN_GT: r = c > 0; break;
        default: r = c >= 0; break;
        }
        if (r) df_bit_set(bits, i);
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* Strings: equality by length + memcmp, ordering by bytes. */
static df_errkind cmp_strings(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(bool_out(k, a, na, &v));
    uint8_t *bits = v->values->data;
    const df_vec *x = a[0].vec, *y = a[1].vec;
    const int32_t *xo = df_vec_offsets(x), *yo = df_vec_offsets(y);
    const uint8_t *xd = x->data->data, *yd = y->data->data;
    bool xc = a[0].is_const, yc = a[1].is_const;
    for (int64_t i = 0; i < k->n; i++) {
        int64_t xi = xc ? 0 : i, yi = yc ? 0 : i;
        int32_t lx = xo[xi + 1] - xo[xi], ly = yo[yi + 1] - yo[yi];
        bool r;
        if (fn == DF_FN_EQ || fn == DF_FN_NE) {
            bool eq = lx == ly && memcmp(xd + xo[xi], yd + yo[yi], (size_t)lx) == 0;
            r = fn == DF_FN_EQ ? eq : !eq;
        } else {
            int c = memcmp(xd + xo[xi], yd + yo[yi], (size_t)DF_MIN(lx, ly));
            if (c == 0) c = lx < ly ? -1 : lx > ly;
            r = fn == DF_FN_LT ? c < 0 : fn == DF_FN_LE ? c <= 0 : fn == DF_FN_GT ? c > 0 : c >= 0;
        }
        if (r) df_bit_set(bits, i);
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* IS [NOT] DISTINCT FROM: NULL-aware equality that never returns NULL. */
static df_errkind distinct(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool want_distinct = k->aux != NULL;
    df_vec *v;
    DF_TRY(bool_out(k, a, 0, &v));
    uint8_t *bits = v->values->data;
    for (int64_t i = 0; i < k->n; i++) {
        bool va = df_xreg_valid(&a[0], i), vb = df_xreg_valid(&a[1], i);
        bool same;
        if (!va || !vb)
            same = va == vb;
        else
            same = values_equal(a[0].vec, a[0].is_const ? 0 : i, a[1].vec, a[1].is_const ? 0 : i);
        if (same != want_distinct) df_bit_set(bits, i);
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* IS [NOT] NULL / TRUE / FALSE (never NULL). */
static df_errkind is_test(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(bool_out(k, a, 0, &v));
    uint8_t *bits = v->values->data;
    const df_xreg *x = &a[0];
    bool is_bool = x->vec->type->id == DF_TYPE_BOOL;
    for (int64_t i = 0; i < k->n; i++) {
        bool valid = df_xreg_valid(x, i);
        bool val = valid && is_bool && df_vec_bool(x->vec, x->is_const ? 0 : i);
        bool r;
        switch (fn) {
        case DF_FN_IS_NULL: r = !valid; break;
        case DF_FN_IS_NOT_NULL: r = valid; break;
        case DF_FN_IS_TRUE: r = valid && val; break;
        case DF_FN_IS_NOT_TRUE: r = !(valid && val); break;
        case DF_FN_IS_FALSE: r = valid && !val; break;
        default: r = !(valid && !val); break;
        }
        if (r) df_bit_set(bits, i);
    }
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* LIKE                                                                      */

enum { TOK_ANY = 256, TOK_ONE = 257 };

typedef enum like_kind { LK_EXACT, LK_PREFIX, LK_SUFFIX, LK_CONTAINS, LK_GENERAL, LK_ALL } like_kind;

typedef struct like_pat {
    like_kind kind;         /* fast path class */
    bool ci;                /* ILIKE */
    bool negate;            /* NOT LIKE */
    uint8_t *lit;           /* literal part for the fast kinds */
    int32_t nlit;
    int16_t *tok;           /* general pattern tokens */
    int32_t ntok;
    bool has_escape_arg;    /* pattern given per row: compiled per row */
    int escape;             /* escape character or -1 */
} like_pat;

static void like_free(void *p) {
    like_pat *lp = p;
    if (!lp) return;
    df_free(lp->lit);
    df_free(lp->tok);
    df_free(lp);
}

static inline uint8_t fold(uint8_t c) { return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c; }

/* Tokenizes a pattern; fills lp->tok / lit / kind.  Returns false on OOM. */
static bool like_compile(like_pat *lp, const uint8_t *p, int32_t n) {
    lp->tok = df_malloc((size_t)(n ? n : 1) * sizeof(int16_t));
    if (!lp->tok) return false;
    lp->ntok = 0;
    for (int32_t i = 0; i < n; i++) {
        int c = p[i];
        if (lp->escape >= 0 && c == lp->escape && i + 1 < n) {
            c = p[++i];
            lp->tok[lp->ntok++] = (int16_t)(lp->ci ? fold((uint8_t)c) : c);
        } else if (c == '%') {
            if (lp->ntok == 0 || lp->tok[lp->ntok - 1] != TOK_ANY) lp->tok[lp->ntok++] = TOK_ANY;
        } else if (c == '_') {
            lp->tok[lp->ntok++] = TOK_ONE;
        } else {
            lp->tok[lp->ntok++] = (int16_t)(lp->ci ? fold((uint8_t)c) : c);
        }
    }
    /* Classify: literal runs with % only at the ends. */
    int32_t first = 0, last = lp->ntok;
    bool lead = lp->ntok > 0 && lp->tok[0] == TOK_ANY, trail = lp->ntok > 0 && lp->tok[lp->ntok - 1] == TOK_ANY;
    if (lead) first = 1;
    if (trail && last > first) last--;
    bool plain = true;
    for (int32_t i = first; i < last; i++)
        if (lp->tok[i] >= 256) plain = false;
    lp->kind = LK_GENERAL;
    if (plain) {
        lp->lit = df_malloc((size_t)(last - first + 1));
        if (!lp->lit) return false;
        lp->nlit = last - first;
        for (int32_t i = first; i < last; i++) lp->lit[i - first] = (uint8_t)lp->tok[i];
        if (lp->ntok == 1 && lead) lp->kind = LK_ALL;
        else if (lead && trail) lp->kind = LK_CONTAINS;
        else if (lead) lp->kind = LK_SUFFIX;
        else if (trail) lp->kind = LK_PREFIX;
        else lp->kind = LK_EXACT;
    }
    return true;
}

/* Greedy wildcard matching with backtracking to the last `%` (linear for typical patterns). */
static bool like_general(const int16_t *t, int32_t nt, const uint8_t *s, int32_t ns) {
    int32_t ti = 0, si = 0, star = -1, mark = 0;
    while (si < ns) {
        if (ti < nt && t[ti] == TOK_ONE) {
            si++;
            while (si < ns && (s[si] & 0xC0) == 0x80) si++; /* one whole UTF-8 character */
            ti++;
        } else if (ti < nt && t[ti] < 256 && t[ti] == s[si]) {
            si++;
            ti++;
        } else if (ti < nt && t[ti] == TOK_ANY) {
            star = ti++;
            mark = si;
        } else if (star >= 0) {
            ti = star + 1;
            mark++;
            while (mark < ns && (s[mark] & 0xC0) == 0x80) mark++;
            si = mark;
        } else {
            return false;
        }
    }
    while (ti < nt && t[ti] == TOK_ANY) ti++;
    return ti == nt;
}

static bool like_match(const like_pat *lp, const uint8_t *s, int32_t n) {
    const uint8_t *l = lp->lit;
    int32_t m = lp->nlit;
    switch (lp->kind) {
    case LK_ALL: return true;
    case LK_EXACT: return n == m && memcmp(s, l, (size_t)m) == 0;
    case LK_PREFIX: return n >= m && memcmp(s, l, (size_t)m) == 0;
    case LK_SUFFIX: return n >= m && memcmp(s + n - m, l, (size_t)m) == 0;
    case LK_CONTAINS: return m == 0 || memmem(s, (size_t)n, l, (size_t)m) != NULL;
    default: return like_general(lp->tok, lp->ntok, s, n);
    }
}

/* Folds a row into scratch for ILIKE; returns the pointer to match against. */
static const uint8_t *fold_row(const uint8_t *s, int32_t n, uint8_t **scratch, int64_t *cap) {
    if (*cap < n) {
        uint8_t *ns = df_realloc(*scratch, (size_t)n);
        if (!ns) return NULL;
        *scratch = ns;
        *cap = n;
    }
    for (int32_t i = 0; i < n; i++) (*scratch)[i] = fold(s[i]);
    return *scratch;
}

static df_errkind like_kernel(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const like_pat *fixed = k->aux;
    df_vec *v;
    DF_TRY(bool_out(k, a, na > 2 ? 2 : na, &v));
    uint8_t *bits = v->values->data;
    uint8_t *scratch = NULL;
    int64_t cap = 0;
    like_pat row_pat = {0};
    if (!fixed->lit && !fixed->tok) row_pat = *fixed;
    df_errkind e = DF_OK;
    const df_vec *sv = a[0].vec;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!df_xreg_valid(&a[0], i) || !df_xreg_valid(&a[1], i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(sv, a[0].is_const ? 0 : i, &n);
        const like_pat *lp = fixed;
        if (!fixed->lit && !fixed->tok) {
            int32_t pn;
            const uint8_t *p = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &pn);
            df_free(row_pat.lit);
            df_free(row_pat.tok);
            row_pat.lit = NULL;
            row_pat.tok = NULL;
            if (!like_compile(&row_pat, p, pn)) {
                e = DF_OOM(k->err);
                break;
            }
            lp = &row_pat;
        }
        if (lp->ci && n > 0 && !(s = fold_row(s, n, &scratch, &cap))) {
            e = DF_OOM(k->err);
            break;
        }
        if (like_match(lp, s, n) != lp->negate) df_bit_set(bits, i);
    });
    df_free(row_pat.lit);
    df_free(row_pat.tok);
    df_free(scratch);
    return df__kernel_finish(k, v, e, out);
}

static df_errkind like_kernel_for(const df_expr *call, df_kernel *out, df_error *err) {
    like_pat *lp = df_calloc(1, sizeof *lp);
    if (!lp) return DF_OOM(err);
    lp->ci = call->fn == DF_FN_ILIKE || call->fn == DF_FN_NOT_ILIKE;
    lp->negate = call->fn == DF_FN_NOT_LIKE || call->fn == DF_FN_NOT_ILIKE;
    lp->escape = '\\';
    if (call->nargs == 3) {
        const df_scalar *esc = call->args[2]->lit;
        lp->escape = esc->v.bytes.len ? esc->v.bytes.ptr[0] : -1;
    }
    const df_expr *pat = call->args[1];
    if (pat->kind == DF_EX_LITERAL && !pat->lit->is_null && pat->type->id == DF_TYPE_UTF8) {
        if (!like_compile(lp, pat->lit->v.bytes.ptr, (int32_t)pat->lit->v.bytes.len)) {
            like_free(lp);
            return DF_OOM(err);
        }
    }
    out->fn = like_kernel;
    out->aux = lp;
    out->aux_free = like_free;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Regular expressions: ~ ~* !~ !~* (the engine of regex_int.h)              */

typedef struct regex_aux {
    df__regex *re;          /* the pattern compiled once when it is a literal, else NULL */
    bool negate;            /* !~ */
    uint32_t flags;         /* DF__RX_* flags (i for ~*) */
} regex_aux;

static void regex_free(void *p) {
    regex_aux *r = p;
    if (!r) return;
    df__regex_free(r->re);
    df_free(r);
}

static df_errkind regex_kernel(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const regex_aux *ra = k->aux;
    df_vec *v;
    DF_TRY(bool_out(k, a, na, &v));
    uint8_t *bits = v->values->data;
    df__rx_scratch sc = {0};
    df__rx_cancel cancel = {{k->ctx ? &k->ctx->cancel : NULL, k->ctx ? k->ctx->user_cancel : NULL}};
    df__regex *row_re = NULL;          /* the last per-row pattern, reused while rows repeat it */
    const uint8_t *row_p = NULL;
    int32_t row_pn = -1;
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!df_xreg_valid(&a[0], i) || !df_xreg_valid(&a[1], i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        const df__regex *re = ra->re;
        if (!re) {
            int32_t pn;
            const uint8_t *p = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &pn);
            if (!row_re || pn != row_pn || (pn && memcmp(p, row_p, (size_t)pn) != 0)) {
                df__regex_free(row_re);
                row_re = NULL;
                e = df__regex_new(p, (size_t)pn, ra->flags, &row_re, k->err);
                if (e) break;
                row_p = p;
                row_pn = pn;
            }
            re = row_re;
        }
        bool m;
        e = df__regex_find(re, &sc, s, (size_t)n, 0, NULL, 0, &cancel, &m, k->err);
        if (e) break;
        if (m != ra->negate) df_bit_set(bits, i);
    });
    df__regex_free(row_re);
    df__rx_scratch_free(&sc);
    return df__kernel_finish(k, v, e, out);
}

static df_errkind regex_kernel_for(const df_expr *call, df_kernel *out, df_error *err) {
    regex_aux *ra = df_calloc(1, sizeof *ra);
    if (!ra) return DF_OOM(err);
    ra->negate = call->fn == DF_FN_REGEX_NMATCH || call->fn == DF_FN_REGEX_NIMATCH;
    ra->flags = (call->fn == DF_FN_REGEX_IMATCH || call->fn == DF_FN_REGEX_NIMATCH) ? DF__RX_ICASE : 0;
    const df_expr *pat = call->args[1];
    if (pat->kind == DF_EX_LITERAL && !pat->lit->is_null && pat->type->id == DF_TYPE_UTF8) {
        df_errkind k = df__regex_new(pat->lit->v.bytes.ptr, pat->lit->v.bytes.len, ra->flags, &ra->re, err);
        if (k) {
            df_free(ra);
            return k;
        }
    }
    out->fn = regex_kernel;
    out->aux = ra;
    out->aux_free = regex_free;
    out->can_error = true;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* IN lists over constants                                                   */

typedef struct in_set {
    df_vec *values;         /* the distinct non-NULL list values */
    int64_t *slots;         /* open-addressing table of indices into values (-1 = empty) */
    uint64_t mask;          /* slots - 1 */
    bool has_null;          /* the list contains NULL */
    bool negate;            /* NOT IN */
} in_set;

static void in_set_free(void *p) {
    in_set *s = p;
    if (!s) return;
    df_vec_release(s->values);
    df_free(s->slots);
    df_free(s);
}

static bool in_set_contains(const in_set *s, const df_vec *v, int64_t i) {
    uint64_t h = df__hash_value(v, i) & s->mask;
    for (;;) {
        int64_t idx = s->slots[h];
        if (idx < 0) return false;
        if (values_equal(s->values, idx, v, i)) return true;
        h = (h + 1) & s->mask;
    }
}

static df_errkind in_kernel(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const in_set *s = k->aux;
    df_vec *v;
    DF_TRY(bool_out(k, a, na, &v));
    uint8_t *bits = v->values->data;
    bool any_null_result = false;
    DF_FOR_SEL(k, i, {
        if (!df_xreg_valid(&a[0], i)) continue;
        bool found = in_set_contains(s, a[0].vec, a[0].is_const ? 0 : i);
        if (!found && s->has_null) {
            /* x IN (..., NULL) without a match is NULL. */
            if (!any_null_result) {
                if (df_vec_ensure_validity(v, k->n, k->err)) {
                    df_vec_release(v);
                    return k->err ? k->err->kind : DF_ERR_OUT_OF_MEMORY;
                }
                any_null_result = true;
            }
            df_bit_clear(v->validity->data, i);
            continue;
        }
        if (found != s->negate) df_bit_set(bits, i);
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

df_errkind df__kernel_in_list(const df_expr *e, df_kernel *out, df_error *err) {
    memset(out, 0, sizeof *out);
    int32_t n = e->nargs - 1;
    in_set *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    s->negate = e->flag;
    df_type *t = e->args[0]->type;
    /* One vector per literal, concatenated once: appending them one by one copied the
     * list so far each time, quadratic in the length of generated lists. */
    df_vec **parts = df_calloc((size_t)(n + 1), sizeof(df_vec *));
    int32_t np = 0;
    df_errkind k = parts ? df_vec_new(t, 0, 0, &parts[np++], err) : DF_OOM(err);
    for (int32_t i = 0; !k && i < n; i++) {
        const df_scalar *lit = e->args[i + 1]->lit;
        if (lit->is_null || lit->type->id == DF_TYPE_NULL) {
            s->has_null = true;
            continue;
        }
        k = df_vec_from_scalar(lit, 1, &parts[np], err);
        if (!k) np++;
    }
    if (!k) k = df__vec_concat(parts, np, &s->values, err);
    for (int32_t i = 0; i < np; i++) df_vec_release(parts[i]);
    df_free(parts);
    if (!k) {
        int64_t cap = 16;
        while (cap < 2 * (s->values->length + 1)) cap *= 2;
        s->slots = df_malloc((size_t)cap * sizeof(int64_t));
        if (!s->slots) k = DF_OOM(err);
        else {
            s->mask = (uint64_t)cap - 1;
            for (int64_t i = 0; i < cap; i++) s->slots[i] = -1;
            for (int64_t i = 0; i < s->values->length; i++) {
                if (in_set_contains(s, s->values, i)) continue;
                uint64_t h = df__hash_value(s->values, i) & s->mask;
                while (s->slots[h] >= 0) h = (h + 1) & s->mask;
                s->slots[h] = i;
            }
        }
    }
    if (k) {
        in_set_free(s);
        return k;
    }
    out->fn = in_kernel;
    out->aux = s;
    out->aux_free = in_set_free;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* NULLIF, GREATEST, LEAST                                                   */

static df_errkind nullif_kernel(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    int8_t *which = df_malloc((size_t)(k->n ? k->n : 1));
    if (!which) return DF_OOM(k->err);
    for (int64_t i = 0; i < k->n; i++) {
        bool va = df_xreg_valid(&a[0], i), vb = df_xreg_valid(&a[1], i);
        bool eq = va && vb && df__cmp_values(a[0].vec, a[0].is_const ? 0 : i, a[1].vec, a[1].is_const ? 0 : i) == 0;
        which[i] = (va && !eq) ? 0 : -1;
    }
    const df_xreg *srcs[1] = {&a[0]};
    df_errkind e = df__kernel_choose(k->type, k->n, srcs, which, &out->vec, k->err);
    df_free(which);
    return e;
}

static df_errkind extreme_kernel(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool greatest = k->aux != NULL;
    if (na > 127) return df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "too many arguments");
    int8_t *which = df_malloc((size_t)(k->n ? k->n : 1));
    if (!which) return DF_OOM(k->err);
    const df_xreg *srcs[128];
    for (int32_t j = 0; j < na; j++) srcs[j] = &a[j];
    for (int64_t i = 0; i < k->n; i++) {
        int8_t best = -1;
        for (int32_t j = 0; j < na; j++) {
            if (!df_xreg_valid(&a[j], i)) continue;
            if (best < 0) {
                best = (int8_t)j;
                continue;
            }
            int c = df__cmp_values(a[j].vec, a[j].is_const ? 0 : i, a[best].vec, a[best].is_const ? 0 : i);
            if (greatest ? c > 0 : c < 0) best = (int8_t)j;
        }
        which[i] = best;
    }
    df_errkind e = df__kernel_choose(k->type, k->n, srcs, which, &out->vec, k->err);
    df_free(which);
    return e;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

df_errkind df__kernels_compare(const df_expr *call, df_kernel *out, df_error *err) {
    df_fn fn = call->fn;
    switch (fn) {
    case DF_FN_EQ: case DF_FN_NE: case DF_FN_LT: case DF_FN_LE: case DF_FN_GT: case DF_FN_GE: {
        const df_type *t = call->args[0]->type;
        const cmp_row *r = fixed_cmp(t);
        if (r && df_type_equals(t, call->args[1]->type)) {
            out->fn = fn == DF_FN_EQ ? r->eq : fn == DF_FN_NE ? r->ne : fn == DF_FN_LT ? r->lt
                    : fn == DF_FN_LE ? r->le : fn == DF_FN_GT ? r->gt : r->ge;
            return DF_OK;
        }
        if (t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_BINARY) {
            out->fn = cmp_strings;
            out->aux = (void *)(intptr_t)fn;
            return DF_OK;
        }
        if (t->id == DF_TYPE_BOOL || t->id == DF_TYPE_INTERVAL_MDN || t->id == DF_TYPE_FIXED_BINARY ||
            t->id == DF_TYPE_NULL) {
            out->fn = cmp_generic;
            out->aux = (void *)(intptr_t)fn;
        }
        return DF_OK;
    }
    case DF_FN_IS_DISTINCT:
    case DF_FN_IS_NOT_DISTINCT:
        out->fn = distinct;
        out->aux = fn == DF_FN_IS_DISTINCT ? (void *)(intptr_t)1 : NULL;
        return DF_OK;
    case DF_FN_IS_NULL: case DF_FN_IS_NOT_NULL: case DF_FN_IS_TRUE: case DF_FN_IS_NOT_TRUE:
    case DF_FN_IS_FALSE: case DF_FN_IS_NOT_FALSE:
        out->fn = is_test;
        out->aux = (void *)(intptr_t)fn;
        return DF_OK;
    case DF_FN_LIKE: case DF_FN_ILIKE: case DF_FN_NOT_LIKE: case DF_FN_NOT_ILIKE:
        return like_kernel_for(call, out, err);
    case DF_FN_REGEX_MATCH: case DF_FN_REGEX_IMATCH: case DF_FN_REGEX_NMATCH: case DF_FN_REGEX_NIMATCH:
        return regex_kernel_for(call, out, err);
    case DF_FN_NULLIF:
        out->fn = nullif_kernel;
        return DF_OK;
    case DF_FN_GREATEST:
    case DF_FN_LEAST:
        out->fn = extreme_kernel;
        out->aux = fn == DF_FN_GREATEST ? (void *)(intptr_t)1 : NULL;
        return DF_OK;
    default:
        return DF_OK;
    }
}
