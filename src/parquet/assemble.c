/*
 * Record assembly: leaf levels and dense values -> Arrow vectors.
 *
 * For an Arrow node (schema_map.h) and the levels of one leaf below it, the
 * node's *slots* are the level entries with rep <= slot_rep and
 * def >= slot_def, in order; a slot is valid when def >= node.def.  A
 * struct's validity comes from its first leaf and each child is assembled
 * from its own leaves; a list's offsets count, for each of its slots, the
 * entries that are slots of its element (rep <= slot_rep + 1 and
 * def >= elem_def); a leaf takes one dense value per valid slot.
 *
 * Flat columns (no repetition, no nullable ancestors) have one slot per
 * entry, and their dense values are spread in place inside the buffer the
 * decoder filled, so a flat column costs no copy after decoding.
 */
#include "parquet/assemble.h"

#include <stdatomic.h>

/* Slots of a node: entry indices, or NULL when every entry is a slot. */
typedef struct slots {
    int32_t *idx;           /* owned, or NULL for the identity */
    int64_t n;              /* slot count */
} slots;

static inline int64_t slot_at(const slots *s, int64_t k) {
    return s->idx ? s->idx[k] : k;
}

static df_errkind asm_error(const pq_leaf *leaf, df_error *err, const char *what) {
    return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet data in column '%s': %s", leaf->path, what);
}

/* The first leaf under a (possibly pruned) node. */
static const pq_node *first_leaf_node(const pq_node *n) {
    while (n->kind != PQ_NODE_LEAF && n->nchildren > 0) n = &n->children[0];
    return n;
}

static df_errkind compute_slots(const pq_node *n, const pq_leaf *leaf, const pq_leaf_out *o, slots *s,
                                df_error *err) {
    s->idx = NULL;
    s->n = o->nlevels;
    if (leaf->max_rep == 0 && n->slot_def == 0) return DF_OK;
    if (o->nlevels > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "too many values in one batch");
    s->idx = df_malloc((size_t)(o->nlevels ? o->nlevels : 1) * sizeof *s->idx);
    if (!s->idx) return DF_OOM(err);
    int64_t k = 0;
    int16_t sd = n->slot_def, sr = n->slot_rep;
    for (int64_t i = 0; i < o->nlevels; i++) {
        int16_t d = leaf->max_def ? o->def[i] : 0, r = leaf->max_rep ? o->rep[i] : 0;
        if (r <= sr && d >= sd) s->idx[k++] = (int32_t)i;
    }
    s->n = k;
    return DF_OK;
}

/*
 * Validity of the slots (NULL buffer when all are valid); *valid counts the
 * valid slots.
 */
static df_errkind compute_validity(const pq_node *n, const pq_leaf *leaf, pq_leaf_out *o, const slots *s,
                                   df_buffer **out, int64_t *valid, df_error *err) {
    *out = NULL;
    *valid = s->n;
    if (leaf->max_def == 0 || n->def == 0) return DF_OK;
    if (o->defbits) {
        /* Flat optional leaf: its definition bits are the validity (slots are the entries). */
        *valid = o->def_ones;
        if (o->def_ones == s->n) return DF_OK;
        o->defbits->size = df_bitmap_bytes(s->n);
        *out = df_buffer_retain(o->defbits);
        return DF_OK;
    }
    df_buffer *b = df_buffer_new(df_bitmap_bytes(s->n));
    if (!b) return DF_OOM(err);
    uint8_t *bits = b->data;
    const int16_t *def = o->def;
    int16_t d = n->def;
    int64_t count = 0, k = 0;
    if (!s->idx) {
        for (; k + 8 <= s->n; k += 8) {
            uint8_t byte = 0;
            for (int j = 0; j < 8; j++) byte |= (uint8_t)((def[k + j] >= d) << j);
            bits[k >> 3] = byte;
            count += df_popcount64(byte);
        }
    }
    if (k < s->n) memset(bits + (k >> 3), 0, (size_t)(df_bitmap_bytes(s->n) - (k >> 3)));
    for (; k < s->n; k++) {
        if (def[slot_at(s, k)] >= d) {
            df_bit_set(bits, k);
            count++;
        }
    }
    b->size = df_bitmap_bytes(s->n);
    *valid = count;
    if (count == s->n) {
        df_buffer_release(b);
        return DF_OK;
    }
    *out = b;
    return DF_OK;
}

static df_errkind new_vec(const df_field *f, int64_t length, df_buffer *validity, int64_t valid, df_vec **out,
                          df_error *err) {
    df_vec *v = df_calloc(1, sizeof *v);
    if (!v) {
        df_buffer_release(validity);
        return DF_OOM(err);
    }
    atomic_init(&v->refs, 1);
    v->type = df_type_retain(f->type);
    v->length = length;
    v->validity = validity;
    v->null_count = length - valid;
    *out = v;
    return DF_OK;
}

/* ---- leaves ------------------------------------------------------------------- */

/* Makes sure the dense buffer can hold `bytes` (moving the first `used` bytes when it grows). */
static df_errkind ensure_dense(pq_leaf_out *o, int64_t bytes, int64_t used, df_error *err);


/*
 * Spreads dense fixed-width values over the slots, in place, from the back
 * (a value only moves up, so nothing is overwritten before it is read).
 * Whole bytes of the bitmap that are all valid or all null move 8 slots at
 * once; the 4- and 8-byte cases are typed so the compiler inlines the moves.
 */
#define SPREAD_TYPED(T)                                                        \
    do {                                                                       \
        T *v = (T *)(void *)vals;                                              \
        while (i > 0) {                                                        \
            if ((i & 7) == 0 && bits[(i - 8) >> 3] == 0xff && k >= 8) {        \
                for (int j = 1; j <= 8; j++) v[i - j] = v[k - j];              \
                i -= 8;                                                        \
                k -= 8;                                                        \
                continue;                                                      \
            }                                                                  \
            /* Branchless: a null reads some earlier slot and masks it to 0. */ \
            i--;                                                               \
            T b = (T)((bits[i >> 3] >> (i & 7)) & 1);                          \
            k -= (int64_t)b;                                                   \
            v[i] = v[k] & (T)(0 - b);                                          \
        }                                                                      \
    } while (0)

static void spread_fixed(uint8_t *vals, int w, const uint8_t *bits, int64_t n, int64_t dense) {
    int64_t k = dense, i = n;
    if (w == 4) {
        SPREAD_TYPED(uint32_t);
        return;
    }
    if (w == 8) {
        SPREAD_TYPED(uint64_t);
        return;
    }
    size_t sw = (size_t)w;
    while (i > 0) {
        i--;
        if (df_bit_get(bits, i)) {
            k--;
            if (k != i) memmove(vals + i * w, vals + k * w, sw);
        } else {
            memset(vals + i * w, 0, sw);
        }
    }
}

/* Spreads dense offsets (dense + 1 of them) over n slots in place. */
static void spread_offsets(int32_t *off, const uint8_t *bits, int64_t n, int64_t dense) {
    int64_t k = dense;
    for (int64_t i = n; i-- > 0;) {
        off[i + 1] = off[k];
        if (df_bit_get(bits, i)) k--;
    }
    off[0] = 0;
}

/* Sign-extends a big-endian two's complement number into `w` little-endian bytes. */
static bool be_to_le(const uint8_t *src, int32_t len, uint8_t *dst, int w) {
    if (len >= 1 && len <= 8) {
        /* The common case (precision <= 18): assemble one 64-bit word, then sign-extend. */
        uint64_t v = 0;
        for (int32_t i = 0; i < len; i++) v = (v << 8) | src[i];
        int shift = 64 - 8 * len;
        int64_t sv = shift ? (int64_t)(v << shift) >> shift : (int64_t)v;
        memcpy(dst, &sv, 8);
        memset(dst + 8, sv < 0 ? 0xff : 0x00, (size_t)(w - 8));
        return true;
    }
    uint8_t fill = len > 0 && (src[0] & 0x80) ? 0xff : 0x00;
    if (len > w) {
        for (int32_t i = 0; i < len - w; i++)
            if (src[i] != fill) return false;
        if ((src[len - w] & 0x80) != (fill & 0x80)) return false;
        src += len - w;
        len = w;
    }
    for (int32_t i = 0; i < len; i++) dst[i] = src[len - 1 - i];
    memset(dst + len, fill, (size_t)(w - len));
    return true;
}

/*
 * Spreads converted dense values over n slots: slot i takes the next dense
 * value when bits (NULL = all valid) has bit i set, else zero.  Branch-free:
 * every slot converts the value under the dense cursor (the dense buffer has
 * room for n values, so the cursor never leaves it) and keeps it or zero.
 */
#define SPREAD_CONVERTED(DST_T, SRC_T, EXPR)                                    \
    do {                                                                        \
        DST_T *o = (DST_T *)(void *)dst;                                        \
        const SRC_T *x = (const SRC_T *)(const void *)src;                      \
        for (int64_t i = 0, k = 0; i < n; i++) {                                \
            uint64_t b = bits ? (bits[i >> 3] >> (i & 7)) & 1 : 1;              \
            SRC_T v = x[k];                                                     \
            o[i] = (DST_T)((EXPR) & (0 - (DST_T)b));                            \
            k += (int64_t)b;                                                    \
        }                                                                       \
    } while (0)

/* Integers to decimal128/256: little-endian low word, then sign extension. */
static void spread_int_to_decimal(uint8_t *dst, int w, const uint8_t *src, bool is32, const uint8_t *bits,
                                  int64_t n) {
    for (int64_t i = 0, k = 0; i < n; i++, dst += w) {
        uint64_t b = bits ? (bits[i >> 3] >> (i & 7)) & 1 : 1;
        int64_t v = is32 ? ((const int32_t *)(const void *)src)[k] : ((const int64_t *)(const void *)src)[k];
        v &= -(int64_t)b;
        uint64_t hi = (uint64_t)(v >> 63);
        memcpy(dst, &v, 8);
        memcpy(dst + 8, &hi, 8);
        if (w > 16) {
            memcpy(dst + 16, &hi, 8);
            memcpy(dst + 24, &hi, 8);
        }
        k += (int64_t)b;
    }
}

/* Builds the values buffer of a converted leaf (narrowing ints, decimals). */
static df_errkind convert_values(const pq_leaf *leaf, pq_leaf_out *o, const uint8_t *bits, int64_t n,
                                 df_buffer **out, df_error *err) {
    int w = df_type_width(leaf->type);
    df_buffer *b = df_buffer_new(n * w);
    if (!b) return DF_OOM(err);
    uint8_t *dst = b->data;
    /* The dense cursor may point one past the last value: keep that slot readable. */
    if (leaf->conv != PQ_CONV_BE_TO_DEC) {
        int pw = leaf->physical == DF_PARQUET_INT64 ? 8 : 4;
        df_errkind k = ensure_dense(o, (o->nvalues + 1) * pw, o->nvalues * pw, err);
        if (k != DF_OK) {
            df_buffer_release(b);
            return k;
        }
    }
    const uint8_t *src = o->values ? o->values->data : NULL;
    switch (leaf->conv) {
    case PQ_CONV_I32_TO_8: SPREAD_CONVERTED(uint8_t, int32_t, (uint8_t)v); break;
    case PQ_CONV_I32_TO_16: SPREAD_CONVERTED(uint16_t, int32_t, (uint16_t)v); break;
    case PQ_CONV_I32_TO_DEC:
    case PQ_CONV_I64_TO_DEC: spread_int_to_decimal(dst, w, src, leaf->conv == PQ_CONV_I32_TO_DEC, bits, n); break;
    case PQ_CONV_BE_TO_DEC: {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++, dst += w) {
            if (bits && !df_bit_get(bits, i)) {
                memset(dst, 0, (size_t)w);
                continue;
            }
            const uint8_t *p;
            int32_t len;
            if (leaf->physical == DF_PARQUET_BYTE_ARRAY) {
                const int32_t *off = (const int32_t *)(const void *)src;
                p = o->data ? o->data->data + off[k] : NULL;
                len = off[k + 1] - off[k];
            } else {
                p = src + k * leaf->type_length;
                len = leaf->type_length;
            }
            if (!be_to_le(p, len, dst, w)) {
                df_buffer_release(b);
                return asm_error(leaf, err, "decimal value does not fit its precision");
            }
            k++;
        }
        break;
    }
    default: memset(dst, 0, (size_t)(n * w)); break;
    }
    b->size = n * w;
    *out = b;
    return DF_OK;
}

/* Makes sure the dense buffer can hold `bytes` (moving the first `used` bytes when it grows). */
static df_errkind ensure_dense(pq_leaf_out *o, int64_t bytes, int64_t used, df_error *err) {
    if (o->values && o->values->capacity >= bytes) return DF_OK;
    df_buffer *nb = df_buffer_new(DF_MAX(bytes, 1));
    if (!nb) return DF_OOM(err);
    if (o->values && used) memcpy(nb->data, o->values->data, (size_t)used);
    df_buffer_release(o->values);
    o->values = nb;
    return DF_OK;
}

/* The `cnt` (<= 64) bits of src from bit `off`, reading no byte past the last one needed. */
static inline uint64_t bits_at(const uint8_t *src, int64_t off, int cnt) {
    if (cnt == 0) return 0;
    const uint8_t *p = src + (off >> 3);
    int sh = (int)(off & 7), bytes = (sh + cnt + 7) >> 3;
    uint64_t w = 0;
    for (int b = 0; b < bytes && b < 8; b++) w |= (uint64_t)p[b] << (8 * b);
    w >>= sh;
    if (bytes == 9) w |= (uint64_t)p[8] << (64 - sh);
    return cnt == 64 ? w : w & ((UINT64_C(1) << cnt) - 1);
}

/* Booleans: the dense bitmap is the values buffer when no slot is null; else spread by validity words. */
static df_errkind leaf_bools(pq_leaf_out *o, const uint8_t *bits, int64_t n, df_vec *v, df_error *err) {
    if (!bits && o->values) {
        o->values->size = df_bitmap_bytes(n);
        v->values = o->values;
        o->values = NULL;
        return DF_OK;
    }
    df_buffer *b = df_buffer_new(df_bitmap_bytes(n) + 8);
    if (!b) return DF_OOM(err);
    static const uint8_t none[8];
    const uint8_t *src = o->values ? o->values->data : none;   /* all slots null: no dense bit is read */
    memset(b->data, 0, (size_t)df_bitmap_bytes(n) + 8);
    /*
     * 8 slots (one validity byte) at a time: a byte whose slots are all
     * valid takes the next 8 dense bits as they are (the common case: nulls
     * are rare); otherwise the next popcount(valid byte) dense bits are
     * deposited, lowest first, at the byte's valid positions.
     */
    int64_t j = 0;
    for (int64_t i = 0; i < n; i += 8) {
        int64_t m = DF_MIN((int64_t)8, n - i);
        unsigned valid = bits ? bits[i >> 3] : 0xffu;
        if (m < 8) valid &= (1u << m) - 1;
        unsigned byte;
        if (valid == 0xffu) {
            byte = (unsigned)bits_at(src, j, 8);
            j += 8;
        } else {
            int cnt = df_popcount64(valid);
            uint64_t dense = bits_at(src, j, cnt);
            byte = 0;
            for (unsigned rest = valid; rest; rest &= rest - 1, dense >>= 1)
                byte |= (unsigned)(dense & 1) << __builtin_ctz(rest);
            j += cnt;
        }
        b->data[i >> 3] = (uint8_t)byte;
    }
    b->size = df_bitmap_bytes(n);
    v->values = b;
    return DF_OK;
}

/* Byte arrays: the dense offsets become the slot offsets in place; the bytes move as they are. */
static df_errkind leaf_bytes(pq_leaf_out *o, const uint8_t *bits, int64_t n, df_vec *v, df_error *err) {
    DF_TRY(ensure_dense(o, (n + 1) * 4, (o->nvalues + 1) * 4, err));
    int32_t *off = (int32_t *)(void *)o->values->data;
    if (o->nvalues == 0) off[0] = 0;   /* no value decoded in this batch: nothing wrote offsets[0] */
    if (bits) spread_offsets(off, bits, n, o->nvalues);
    v->data = o->data ? o->data : df_buffer_new(0);
    o->data = NULL;
    if (!v->data) return DF_OOM(err);
    v->data->size = off[n];
    o->values->size = (n + 1) * 4;
    v->values = o->values;
    o->values = NULL;
    return DF_OK;
}

/* Fixed-width values: spread in place over the slots. */
static df_errkind leaf_fixed(pq_leaf_out *o, const uint8_t *bits, int64_t n, int w, df_vec *v, df_error *err) {
    DF_TRY(ensure_dense(o, n * w, o->nvalues * w, err));
    if (bits) spread_fixed(o->values->data, w, bits, n, o->nvalues);
    o->values->size = n * w;
    v->values = o->values;
    o->values = NULL;
    return DF_OK;
}

static df_errkind build_leaf(const pq_node *n, const pq_leaf *leaf, pq_leaf_out *o, const slots *s, df_vec **out,
                             df_error *err) {
    df_buffer *validity;
    int64_t valid;
    DF_TRY(compute_validity(n, leaf, o, s, &validity, &valid, err));
    if (leaf->conv == PQ_CONV_TO_NULL) {
        df_buffer_release(validity);
        return df_vec_new_nulls(n->field.type, s->n, out, err);
    }
    if (valid != o->nvalues) {
        df_buffer_release(validity);
        return asm_error(leaf, err, "levels and values disagree");
    }
    const uint8_t *bits = validity ? validity->data : NULL;
    df_vec *v = NULL;
    DF_TRY(new_vec(&n->field, s->n, validity, valid, &v, err));
    df_errkind k;
    if (n->field.type->id == DF_TYPE_BOOL) k = leaf_bools(o, bits, s->n, v, err);
    else if (leaf->conv != PQ_CONV_NONE) k = convert_values(leaf, o, bits, s->n, &v->values, err);
    else if (leaf->physical == DF_PARQUET_BYTE_ARRAY) k = leaf_bytes(o, bits, s->n, v, err);
    else k = leaf_fixed(o, bits, s->n, df_type_width(n->field.type), v, err);
    if (k != DF_OK) {
        df_vec_release(v);
        return k;
    }
    *out = v;
    return DF_OK;
}

/* ---- nested ------------------------------------------------------------------ */

static df_errkind build_node(const pq_node *n, pq_leaf_out *outs, const pq_leaf *leaves, df_vec **out,
                             df_error *err);

/* Offsets of a list/map node: per slot, the number of element slots. */
static df_errkind list_offsets(const pq_node *n, const pq_leaf *leaf, const pq_leaf_out *o, int64_t nslots,
                               df_buffer **out, int64_t *nelems, df_error *err) {
    df_buffer *b = df_buffer_new((nslots + 1) * 4);
    if (!b) return DF_OOM(err);
    int32_t *off = (int32_t *)(void *)b->data;
    int16_t sd = n->slot_def, sr = n->slot_rep, ed = n->elem_def;
    int64_t k = -1, count = 0;
    for (int64_t i = 0; i < o->nlevels; i++) {
        int16_t d = leaf->max_def ? o->def[i] : 0, r = leaf->max_rep ? o->rep[i] : 0;
        if (r <= sr && d >= sd) {
            if (++k >= nslots) break;
            off[k] = (int32_t)count;
        }
        if (r <= sr + 1 && d >= ed) count++;
        if (count > INT32_MAX) {
            df_buffer_release(b);
            return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2^31 list elements in one batch");
        }
    }
    if (k + 1 != nslots) {
        df_buffer_release(b);
        return asm_error(leaf, err, "list levels are inconsistent");
    }
    off[nslots] = (int32_t)count;
    b->size = (nslots + 1) * 4;
    *out = b;
    *nelems = count;
    return DF_OK;
}

static df_errkind build_children(const pq_node *n, pq_leaf_out *outs, const pq_leaf *leaves, df_vec *v,
                                 int64_t expect, df_error *err) {
    v->children = df_calloc((size_t)(n->nchildren ? n->nchildren : 1), sizeof *v->children);
    if (!v->children) return DF_OOM(err);
    v->nchildren = n->nchildren;
    for (int32_t i = 0; i < n->nchildren; i++) {
        DF_TRY(build_node(&n->children[i], outs, leaves, &v->children[i], err));
        if (v->children[i]->length != expect)
            return asm_error(&leaves[first_leaf_node(&n->children[i])->leaf], err,
                             "columns of one group have different lengths");
    }
    return DF_OK;
}

static df_errkind build_node(const pq_node *n, pq_leaf_out *outs, const pq_leaf *leaves, df_vec **out,
                             df_error *err) {
    *out = NULL;
    const pq_node *ln = first_leaf_node(n);
    if (ln->kind != PQ_NODE_LEAF) return df_error_set(err, DF_ERR_INTERNAL, "group without leaves");
    const pq_leaf *leaf = &leaves[ln->leaf];
    pq_leaf_out *o = &outs[ln->leaf];
    slots s;
    DF_TRY(compute_slots(n, leaf, o, &s, err));
    df_errkind k;
    if (n->kind == PQ_NODE_LEAF) {
        k = build_leaf(n, leaf, o, &s, out, err);
        df_free(s.idx);
        return k;
    }
    df_buffer *validity;
    int64_t valid;
    k = compute_validity(n, leaf, o, &s, &validity, &valid, err);
    df_free(s.idx);
    DF_TRY(k);
    df_vec *v = NULL;
    DF_TRY(new_vec(&n->field, s.n, validity, valid, &v, err));
    if (n->kind == PQ_NODE_STRUCT) {
        k = build_children(n, outs, leaves, v, s.n, err);
    } else {
        int64_t nelems = 0;
        k = list_offsets(n, leaf, o, s.n, &v->values, &nelems, err);
        if (k == DF_OK && n->kind == PQ_NODE_LIST) {
            k = build_children(n, outs, leaves, v, nelems, err);
        } else if (k == DF_OK) {
            /* Map: one non-null entries struct holding key and value. */
            const df_field *entries = &n->field.type->children[0];
            df_vec *e = NULL;
            v->children = df_calloc(1, sizeof *v->children);
            if (!v->children) k = DF_OOM(err);
            else v->nchildren = 1;
            if (k == DF_OK) k = new_vec(entries, nelems, NULL, nelems, &e, err);
            if (k == DF_OK) {
                v->children[0] = e;
                k = build_children(n, outs, leaves, e, nelems, err);
            }
        }
    }
    if (k != DF_OK) {
        df_vec_release(v);
        return k;
    }
    *out = v;
    return DF_OK;
}

df_errkind df__parquet_assemble(const pq_node *field, pq_leaf_out *outs, const pq_leaf *leaves, int64_t nrows,
                                df_vec **out, df_error *err) {
    DF_TRY(build_node(field, outs, leaves, out, err));
    if ((*out)->length != nrows) {
        const pq_leaf *leaf = &leaves[first_leaf_node(field)->leaf];
        df_vec_release(*out);
        *out = NULL;
        return asm_error(leaf, err, "the column has a different number of rows than the row group");
    }
    return DF_OK;
}
