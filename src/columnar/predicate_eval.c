/*
 * Row-level evaluation of pushed-down scan predicates (see
 * table_provider.h): readers use it to drop rows inside a scan, before the
 * other columns of those rows are decoded.
 *
 * The answer must never drop a row that the executor's filter would keep,
 * so comparisons follow the executor's kernels exactly: integers, decimals
 * and temporal values numerically, floats in IEEE total order (NaN equals
 * NaN and sorts last, -0 < +0, as arrow compares them), strings and
 * binaries bytewise, false < true.  A comparison with NULL (either side) is
 * not true, so the row goes; IS NULL / IS NOT NULL look at validity only.
 *
 * Evaluation runs 64 rows at a time: a typed loop builds a 64-bit mask of
 * the rows that pass, which is ANDed with the validity word and the caller's
 * selection word.  No allocation, one pass over the values per literal.
 */
#include "columnar/table_provider.h"

/* Loads `n` (<= 64) bits of `bits` starting at bit `off`, without reading past the last byte needed. */
static inline uint64_t load_bits(const uint8_t *bits, int64_t off, int64_t n) {
    uint64_t w = 0;
    int64_t first = off >> 3, shift = off & 7, bytes = (shift + n + 7) >> 3;
    if (bytes == 9) {
        uint64_t lo = df_load_le64(bits + first);
        w = (lo >> shift) | ((uint64_t)bits[first + 8] << (64 - shift));
    } else {
        for (int64_t b = 0; b < bytes; b++) w |= (uint64_t)bits[first + b] << (8 * b);
        w >>= shift;
    }
    return n == 64 ? w : w & ((UINT64_C(1) << n) - 1);
}

/* ANDs the first n bits of keep into word `word` of sel; bits past n stay as they are. */
static inline void and_word(uint8_t *sel, int64_t word, int64_t n, uint64_t keep) {
    uint8_t *p = sel + word * 8;
    int64_t bytes = (n + 7) >> 3;
    if (n < 64) keep |= ~UINT64_C(0) << n;
    for (int64_t b = 0; b < bytes; b++) p[b] &= (uint8_t)(keep >> (8 * b));
}

/* Total-order keys: integers that compare as the executor compares floats. */
static inline int64_t f64_key(double d) {
    int64_t b;
    memcpy(&b, &d, 8);
    return b ^ (int64_t)((uint64_t)(b >> 63) >> 1);
}
static inline int32_t f32_key(float f) {
    int32_t b;
    memcpy(&b, &f, 4);
    return b ^ (int32_t)((uint32_t)(b >> 31) >> 1);
}

/* Three-way bytewise comparison of two byte strings. */
static inline int bytes_cmp(const uint8_t *a, int64_t al, const uint8_t *b, int64_t bl) {
    int64_t m = al < bl ? al : bl;
    int c = m ? memcmp(a, b, (size_t)m) : 0;
    if (c) return c;
    return al < bl ? -1 : al > bl;
}

static inline bool cmp_holds(df_pred_op op, int c) {
    switch (op) {
    case DF_PRED_EQ:
    case DF_PRED_IN: return c == 0;
    case DF_PRED_NE: return c != 0;
    case DF_PRED_LT: return c < 0;
    case DF_PRED_LE: return c <= 0;
    case DF_PRED_GT: return c > 0;
    default: return c >= 0;
    }
}

/* Packs 64 bytes of 0/1 into 64 bits (byte j -> bit j): a multiply gathers eight bytes' low bits at once. */
static inline uint64_t pack_bytes(const uint8_t *b) {
    uint64_t m = 0;
    for (int k = 0; k < 8; k++) {
        uint64_t w;
        memcpy(&w, b + 8 * k, 8);
        m |= ((w * UINT64_C(0x0102040810204080)) >> 56) << (8 * k);
    }
    return m;
}

/*
 * Mask of rows [i, i + n) (n <= 64) of x[] that satisfy `KEY(x) op key`.
 * The comparison writes one byte per row (a loop the compiler vectorises),
 * then the bytes are packed into bits; one instantiation per key type.
 */
#define CMP_LOOP(EXPR)                                                                     \
    do {                                                                                   \
        for (int64_t j = 0; j < n; j++) hit[j] = (uint8_t)(EXPR);                          \
    } while (0)
#define DEFINE_MASK(NAME, T, K, KEY)                                                       \
    static uint64_t NAME(const T *x, int64_t n, df_pred_op op, K c) {                      \
        uint8_t hit[64] = {0};                                                             \
        switch (op) {                                                                      \
        case DF_PRED_EQ:                                                                   \
        case DF_PRED_IN: CMP_LOOP(KEY(x[j]) == c); break;                                  \
        case DF_PRED_NE: CMP_LOOP(KEY(x[j]) != c); break;                                  \
        case DF_PRED_LT: CMP_LOOP(KEY(x[j]) < c); break;                                   \
        case DF_PRED_LE: CMP_LOOP(KEY(x[j]) <= c); break;                                  \
        case DF_PRED_GT: CMP_LOOP(KEY(x[j]) > c); break;                                   \
        default: CMP_LOOP(KEY(x[j]) >= c); break;                                          \
        }                                                                                  \
        return pack_bytes(hit);                                                            \
    }

/* Integers compare at their own width (the literal is brought into range first, see narrow_literal). */
#define AS_IS(v) (v)
DEFINE_MASK(mask_i8, int8_t, int8_t, AS_IS)
DEFINE_MASK(mask_i16, int16_t, int16_t, AS_IS)
DEFINE_MASK(mask_i32, int32_t, int32_t, AS_IS)
DEFINE_MASK(mask_i64, int64_t, int64_t, AS_IS)
DEFINE_MASK(mask_u8, uint8_t, uint8_t, AS_IS)
DEFINE_MASK(mask_u16, uint16_t, uint16_t, AS_IS)
DEFINE_MASK(mask_u32, uint32_t, uint32_t, AS_IS)
DEFINE_MASK(mask_u64, uint64_t, uint64_t, AS_IS)
DEFINE_MASK(mask_f32, float, int32_t, f32_key)
DEFINE_MASK(mask_f64, double, int64_t, f64_key)
DEFINE_MASK(mask_d128, df_i128, df_i128, AS_IS)

/* How a type is compared (NONE: not evaluable). */
typedef enum cmp_kind { CK_NONE, CK_BOOL, CK_SIGNED, CK_UNSIGNED, CK_F32, CK_F64, CK_D128, CK_BYTES, CK_FIXED } cmp_kind;

static cmp_kind kind_of(const df_type *t) {
    switch (t->id) {
    case DF_TYPE_BOOL: return CK_BOOL;
    case DF_TYPE_INT8:
    case DF_TYPE_INT16:
    case DF_TYPE_INT32:
    case DF_TYPE_INT64:
    case DF_TYPE_DATE32:
    case DF_TYPE_DATE64:
    case DF_TYPE_TIME32:
    case DF_TYPE_TIME64:
    case DF_TYPE_TIMESTAMP:
    case DF_TYPE_DURATION: return CK_SIGNED;
    case DF_TYPE_UINT8:
    case DF_TYPE_UINT16:
    case DF_TYPE_UINT32:
    case DF_TYPE_UINT64: return CK_UNSIGNED;
    case DF_TYPE_FLOAT32: return CK_F32;
    case DF_TYPE_FLOAT64: return CK_F64;
    case DF_TYPE_DECIMAL128: return CK_D128;
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: return CK_BYTES;
    case DF_TYPE_FIXED_BINARY: return CK_FIXED;
    default: return CK_NONE;
    }
}

bool df_scan_predicate_evaluable(const df_scan_predicate *p, const df_type *t) {
    if (!p || !t) return false;
    if (p->op == DF_PRED_IS_NULL || p->op == DF_PRED_IS_NOT_NULL) return true;
    if (kind_of(t) == CK_NONE || p->nvalues < 1 || (p->op != DF_PRED_IN && p->nvalues != 1)) return false;
    for (int32_t i = 0; i < p->nvalues; i++)
        if (!p->values[i].type || !df_type_equals(p->values[i].type, t)) return false;
    return true;
}

/*
 * A literal outside the range [lo, hi] of a narrow column type decides the
 * comparison for every value: returns 0 (none) or 1 (all) then, and -1 when
 * the literal is in range and the values must be compared.
 */
static int out_of_range(df_pred_op op, bool below) {
    switch (op) {
    case DF_PRED_EQ:
    case DF_PRED_IN: return 0;
    case DF_PRED_NE: return 1;
    case DF_PRED_LT:
    case DF_PRED_LE: return below ? 0 : 1;   /* x < c: every x when c is above the range */
    default: return below ? 1 : 0;           /* x > c: every x when c is below the range */
    }
}

static uint64_t mask_signed(const df_vec *v, int64_t i, int64_t n, df_pred_op op, int64_t c) {
    int w = df_type_width(v->type);
    const uint8_t *base = v->values->data;
    int64_t at = v->offset + i;
    if (w < 8) {
        int64_t hi = (INT64_C(1) << (8 * w - 1)) - 1, lo = -hi - 1;
        if (c < lo || c > hi) return out_of_range(op, c < lo) ? ~UINT64_C(0) : 0;
    }
    switch (w) {
    case 1: return mask_i8((const int8_t *)(const void *)base + at, n, op, (int8_t)c);
    case 2: return mask_i16((const int16_t *)(const void *)base + at, n, op, (int16_t)c);
    case 4: return mask_i32((const int32_t *)(const void *)base + at, n, op, (int32_t)c);
    default: return mask_i64((const int64_t *)(const void *)base + at, n, op, c);
    }
}

static uint64_t mask_unsigned(const df_vec *v, int64_t i, int64_t n, df_pred_op op, uint64_t c) {
    int w = df_type_width(v->type);
    const uint8_t *base = v->values->data;
    int64_t at = v->offset + i;
    if (w < 8 && c > (UINT64_C(1) << (8 * w)) - 1) return out_of_range(op, false) ? ~UINT64_C(0) : 0;
    switch (w) {
    case 1: return mask_u8(base + at, n, op, (uint8_t)c);
    case 2: return mask_u16((const uint16_t *)(const void *)base + at, n, op, (uint16_t)c);
    case 4: return mask_u32((const uint32_t *)(const void *)base + at, n, op, (uint32_t)c);
    default: return mask_u64((const uint64_t *)(const void *)base + at, n, op, c);
    }
}

/* Booleans: the answer is a function of the value bit alone. */
static uint64_t mask_bool(const df_vec *v, int64_t i, int64_t n, df_pred_op op, bool c) {
    uint64_t bits = load_bits(v->values->data, v->offset + i, n);
    uint64_t all = n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
    bool if_false = cmp_holds(op, c ? -1 : 0);   /* value false compared with c */
    bool if_true = cmp_holds(op, c ? 0 : 1);     /* value true compared with c */
    return ((if_true ? bits : 0) | (if_false ? ~bits : 0)) & all;
}

static uint64_t mask_bytes(const df_vec *v, int64_t i, int64_t n, df_pred_op op, const df_scalar *c, int kind) {
    uint64_t m = 0;
    const uint8_t *lit = c->v.bytes.ptr;
    int64_t llen = c->v.bytes.len;
    for (int64_t j = 0; j < n; j++) {
        const uint8_t *x;
        int64_t xl;
        if (kind == CK_FIXED) {
            xl = v->type->byte_width;
            x = v->values->data + (v->offset + i + j) * xl;
        } else {
            int32_t l32;
            x = df_vec_bytes(v, i + j, &l32);
            xl = l32;
        }
        bool hit;
        if (op == DF_PRED_EQ || op == DF_PRED_IN || op == DF_PRED_NE) {
            bool eq = xl == llen && (xl == 0 || memcmp(x, lit, (size_t)xl) == 0);
            hit = op == DF_PRED_NE ? !eq : eq;
        } else {
            hit = cmp_holds(op, bytes_cmp(x, xl, lit, llen));
        }
        m |= (uint64_t)hit << j;
    }
    return m;
}

/* Rows of [i, i + n) whose value satisfies `value op c` (validity not considered). */
static uint64_t mask_values(const df_vec *v, cmp_kind kind, int64_t i, int64_t n, df_pred_op op, const df_scalar *c) {
    if (c->is_null) return 0;   /* comparing with NULL is never true */
    switch (kind) {
    case CK_BOOL: return mask_bool(v, i, n, op, c->v.b);
    case CK_SIGNED: return mask_signed(v, i, n, op, c->v.i64);
    case CK_UNSIGNED: return mask_unsigned(v, i, n, op, c->v.u64);
    case CK_F32:
        return mask_f32((const float *)(const void *)v->values->data + v->offset + i, n, op, f32_key((float)c->v.f64));
    case CK_F64:
        return mask_f64((const double *)(const void *)v->values->data + v->offset + i, n, op, f64_key(c->v.f64));
    case CK_D128:
        return mask_d128((const df_i128 *)(const void *)v->values->data + v->offset + i, n, op, c->v.i128);
    case CK_BYTES:
    case CK_FIXED: return mask_bytes(v, i, n, op, c, kind);
    default: return ~UINT64_C(0);
    }
}

bool df_scan_predicate_eval(const df_scan_predicate *p, const df_vec *v, uint8_t *sel) {
    if (!df_scan_predicate_evaluable(p, v->type)) return false;
    cmp_kind kind = kind_of(v->type);
    const uint8_t *valid = v->validity ? v->validity->data : NULL;
    for (int64_t i = 0, word = 0; i < v->length; i += 64, word++) {
        int64_t n = DF_MIN((int64_t)64, v->length - i);
        uint64_t all = n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
        uint64_t ok = valid ? load_bits(valid, v->offset + i, n) : all;
        uint64_t keep;
        if (p->op == DF_PRED_IS_NULL) {
            keep = ~ok & all;
        } else if (p->op == DF_PRED_IS_NOT_NULL) {
            keep = ok;
        } else {
            keep = 0;
            for (int32_t k = 0; k < p->nvalues; k++) keep |= mask_values(v, kind, i, n, p->op, &p->values[k]);
            keep &= ok;
        }
        and_word(sel, word, n, keep);
    }
    return true;
}
