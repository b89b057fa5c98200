/*
 * Group table implementation (see hash_table.h).
 */
#include "exec/hash_table.h"

#define NULL_HASH 0x2545f4914f6cdd1dULL

static bool type_supported(const df_type *t) {
    return !df_type_is_nested(t);
}

df_errkind df__gt_init(df_group_table *gt, int32_t nkeys, df_type *const *types, df_exec_ctx *ctx, df_error *err) {
    memset(gt, 0, sizeof *gt);
    gt->ctx = ctx;
    gt->nkeys = nkeys;
    gt->cols = df_calloc((size_t)(nkeys ? nkeys : 1), sizeof(df_keycol));
    if (!gt->cols) return DF_OOM(err);
    for (int32_t c = 0; c < nkeys; c++) {
        df_keycol *k = &gt->cols[c];
        if (!type_supported(types[c])) {
            df__gt_free(gt);
            return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "grouping or joining on nested types is not supported");
        }
        k->type = df_type_retain(types[c]);
        k->varlen = df_type_is_varlen(types[c]);
        k->is_bool = types[c]->id == DF_TYPE_BOOL;
        k->width = k->is_bool ? 1 : (k->varlen || types[c]->id == DF_TYPE_NULL) ? 0 : df_type_width(types[c]);
    }
    gt->slots = df_calloc(64, sizeof(uint64_t));
    if (!gt->slots) {
        df__gt_free(gt);
        return DF_OOM(err);
    }
    gt->mask = 63;
    return DF_OK;
}

void df__gt_free(df_group_table *gt) {
    if (gt->cols) {
        for (int32_t c = 0; c < gt->nkeys; c++) {
            df_keycol *k = &gt->cols[c];
            df_type_release(k->type);
            df_free(k->vals);
            df_free(k->valid);
            df_free(k->offs);
            df_free(k->data);
        }
    }
    df_free(gt->cols);
    df_free(gt->hashes);
    df_free(gt->slots);
    df_free(gt->dense);
    if (gt->ctx && gt->reserved) df__exec_mem_release(gt->ctx, gt->reserved);
    memset(gt, 0, sizeof *gt);
}

static df_errkind account(df_group_table *gt, int64_t delta, df_error *err) {
    if (!gt->ctx || delta <= 0) return DF_OK;
    DF_TRY(df__exec_mem_reserve(gt->ctx, delta, err));
    gt->reserved += delta;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Hashing                                                                   */

/*
 * Hash of a string at p of len bytes, where end bounds the readable bytes
 * after p (the end of the vector's data buffer).  Short strings, the usual
 * keys, take one or two whole-word loads (bytes past the string masked off,
 * never reading past `end`) and one or two mixing rounds, instead of a
 * byte-length-driven loop.  Every string key in a group table hashes here,
 * so build and probe sides agree.
 */
static inline uint64_t str_hash(const uint8_t *p, int64_t len, const uint8_t *end) {
    uint64_t h = (uint64_t)len * 0x9e3779b97f4a7c15ULL;
    if (len <= 8) {
        uint64_t x = 0;
        if (len > 0) {
            if (end - p >= 8) x = df_load_le64(p) & (~0ULL >> (64 - 8 * len));
            else memcpy(&x, p, (size_t)len);
        }
        return df_hash_u64(h ^ x);
    }
    if (len <= 16) return df_hash_u64(df_hash_u64(h ^ df_load_le64(p)) ^ df_load_le64(p + len - 8));
    for (int64_t i = 0; i + 8 <= len; i += 8) h = df_hash_u64(h ^ df_load_le64(p + i));
    return df_hash_u64(h ^ df_load_le64(p + len - 8));
}

/* Hash of rows [from, from + n) of one key column into ch[0..n); NULL rows get NULL_HASH. */
static void hash_column(const df_keycol *k, const df_vec *v, int64_t from, int64_t n, uint64_t *ch) {
    if (v->type->id == DF_TYPE_NULL) {
        for (int64_t i = 0; i < n; i++) ch[i] = NULL_HASH;
        return;
    }
    if (k->varlen) {
        const int32_t *o = df_vec_offsets(v) + from;
        const uint8_t *d = v->data->data, *end = d + v->data->size;
        for (int64_t i = 0; i < n; i++) ch[i] = str_hash(d + o[i], o[i + 1] - o[i], end);
    } else if (k->is_bool) {
        for (int64_t i = 0; i < n; i++) ch[i] = df_vec_bool(v, from + i) ? 2 : 1;
    } else {
        const uint8_t *p = v->values->data + (v->offset + from) * k->width;
        switch (k->width) {
#define H(W, T)                                                                       \
    case W: {                                                                         \
        const T *s = (const T *)(const void *)p;                                      \
        for (int64_t i = 0; i < n; i++) ch[i] = df_hash_u64((uint64_t)s[i]);          \
        break;                                                                        \
    }
            H(1, uint8_t)
            H(2, uint16_t)
            H(4, uint32_t)
            H(8, uint64_t)
#undef H
        default:
            for (int64_t i = 0; i < n; i++) ch[i] = df_hash_bytes(p + i * k->width, (size_t)k->width, 0);
        }
    }
    if (v->validity)
        for (int64_t i = 0; i < n; i++)
            if (!df_bit_get(v->validity->data, v->offset + from + i)) ch[i] = NULL_HASH;
}

static bool has_negative_zero(const df_vec *v) {
    int64_t n = v->length;
    if (v->type->id == DF_TYPE_FLOAT64) {
        const uint64_t *x = DF_VEC_VALUES(v, uint64_t);
        for (int64_t i = 0; i < n; i++)
            if (x[i] == 0x8000000000000000ULL) return true;
    } else if (v->type->id == DF_TYPE_FLOAT32) {
        const uint32_t *x = DF_VEC_VALUES(v, uint32_t);
        for (int64_t i = 0; i < n; i++)
            if (x[i] == 0x80000000U) return true;
    }
    return false;
}

df_errkind df__gt_canon_keys(df_vec **keys, int32_t nkeys, df_error *err) {
    for (int32_t c = 0; c < nkeys; c++) {
        df_vec *v = keys[c];
        if ((v->type->id != DF_TYPE_FLOAT64 && v->type->id != DF_TYPE_FLOAT32) || !has_negative_zero(v)) continue;
        int64_t n = v->length;
        int32_t w = v->type->id == DF_TYPE_FLOAT64 ? 8 : 4;
        df_vec *o;
        DF_TRY(df_vec_new(v->type, n, 0, &o, err));
        if (n) df__memcpy(o->values->data, v->values->data + v->offset * w, (size_t)(n * w));
        if (v->validity) {
            df_errkind k = df_vec_ensure_validity(o, n, err);
            if (k) {
                df_vec_release(o);
                return k;
            }
            df_bitmap_copy(o->validity->data, 0, v->validity->data, v->offset, n);
        }
        for (int64_t i = 0; i < n; i++) {
            if (w == 8) {
                double *d = &DF_VEC_VALUES(o, double)[i];
                if (*d == 0) *d = 0;
            } else {
                float *f = &DF_VEC_VALUES(o, float)[i];
                if (*f == 0) *f = 0;
            }
        }
        df_vec_set_length(o, n);
        df_vec_release(v);
        keys[c] = o;
    }
    return DF_OK;
}

void df__gt_hash(const df_group_table *gt, df_vec *const *keys, int64_t n, uint64_t *h) {
    if (gt->nkeys == 1) {
        /* One column: its hash is the row hash (no combining round). */
        for (int64_t from = 0; from < n; from += 1024)
            hash_column(&gt->cols[0], keys[0], from, DF_MIN(1024, n - from), h + from);
        return;
    }
    uint64_t ch[1024];
    for (int64_t i = 0; i < n; i++) h[i] = 0x9e3779b97f4a7c15ULL;
    for (int64_t from = 0; from < n; from += 1024) {
        int64_t m = DF_MIN(1024, n - from);
        for (int32_t c = 0; c < gt->nkeys; c++) {
            hash_column(&gt->cols[c], keys[c], from, m, ch);
            for (int64_t i = 0; i < m; i++) h[from + i] = df_hash_combine(h[from + i], ch[i]);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Key storage                                                               */

static df_errkind grow_keys(df_group_table *gt, int64_t need, df_error *err) {
    if (need <= gt->cap) return DF_OK;
    int64_t ncap = gt->cap ? gt->cap : 1024;
    while (ncap < need) ncap *= 2;
    int64_t delta = (ncap - gt->cap) * 8;
    uint64_t *nh = df_realloc(gt->hashes, (size_t)ncap * sizeof(uint64_t));
    if (!nh) return DF_OOM(err);
    gt->hashes = nh;
    for (int32_t c = 0; c < gt->nkeys; c++) {
        df_keycol *k = &gt->cols[c];
        uint8_t *nv = df_realloc(k->valid, (size_t)ncap);
        if (!nv) return DF_OOM(err);
        k->valid = nv;
        delta += ncap - gt->cap;
        if (k->width) {
            uint8_t *nvals = df_realloc(k->vals, (size_t)(ncap * k->width));
            if (!nvals) return DF_OOM(err);
            k->vals = nvals;
            delta += (ncap - gt->cap) * k->width;
        }
        if (k->varlen) {
            int64_t *no = df_realloc(k->offs, (size_t)(ncap + 1) * sizeof(int64_t));
            if (!no) return DF_OOM(err);
            if (!k->offs) no[0] = 0;
            k->offs = no;
            delta += (ncap - gt->cap) * 8;
        }
    }
    gt->cap = ncap;
    return account(gt, delta, err);
}

static df_errkind append_key(df_group_table *gt, df_vec *const *keys, int64_t row, int64_t gid, df_error *err) {
    for (int32_t c = 0; c < gt->nkeys; c++) {
        df_keycol *k = &gt->cols[c];
        const df_vec *v = keys[c];
        bool valid = v->type->id != DF_TYPE_NULL && df_vec_is_valid(v, row);
        k->valid[gid] = valid;
        if (k->varlen) {
            int32_t len = 0;
            const uint8_t *p = valid ? df_vec_bytes(v, row, &len) : NULL;
            if (k->dlen + len > k->dcap) {
                int64_t ncap = k->dcap ? k->dcap * 2 : 4096;
                while (ncap < k->dlen + len) ncap *= 2;
                /* 8 bytes of slack so short keys can be compared with whole-word loads. */
                uint8_t *nd = df_realloc(k->data, (size_t)ncap + 8);
                if (!nd) return DF_OOM(err);
                DF_TRY(account(gt, ncap - k->dcap, err));
                k->data = nd;
                k->dcap = ncap;
            }
            if (len) df__memcpy(k->data + k->dlen, p, (size_t)len);
            k->dlen += len;
            k->offs[gid + 1] = k->dlen;
        } else if (k->is_bool) {
            k->vals[gid] = valid && df_vec_bool(v, row);
        } else if (k->width) {
            if (valid)
                df__memcpy(k->vals + gid * k->width, v->values->data + (v->offset + row) * k->width, (size_t)k->width);
            else
                memset(k->vals + gid * k->width, 0, (size_t)k->width);
        }
    }
    return DF_OK;
}

/* True when the stored key of group g equals row `row` of the key vectors. */
static inline bool key_equals(const df_group_table *gt, df_vec *const *keys, int64_t row, int64_t g) {
    for (int32_t c = 0; c < gt->nkeys; c++) {
        const df_keycol *k = &gt->cols[c];
        const df_vec *v = keys[c];
        bool valid = v->type->id != DF_TYPE_NULL && df_vec_is_valid(v, row);
        if (valid != (bool)k->valid[g]) return false;
        if (!valid) continue;
        if (k->varlen) {
            int32_t len;
            const uint8_t *p = df_vec_bytes(v, row, &len);
            int64_t glen = k->offs[g + 1] - k->offs[g];
            if (glen != len || (len && memcmp(k->data + k->offs[g], p, (size_t)len) != 0)) return false;
        } else if (k->is_bool) {
            if (k->vals[g] != df_vec_bool(v, row)) return false;
        } else if (k->width) {
            if (memcmp(k->vals + g * k->width, v->values->data + (v->offset + row) * k->width, (size_t)k->width) != 0)
                return false;
        }
    }
    return true;
}

static df_errkind rehash(df_group_table *gt, df_error *err) {
    uint64_t nslots = (gt->mask + 1) * 2;
    uint64_t *ns = df_calloc((size_t)nslots, sizeof(uint64_t));
    if (!ns) return DF_OOM(err);
    df_errkind k = account(gt, (int64_t)(nslots / 2 * sizeof(uint64_t)), err);
    if (k) {
        df_free(ns);
        return k;
    }
    uint64_t mask = nslots - 1;
    for (int64_t g = 0; g < gt->ngroups; g++) {
        uint64_t h = gt->hashes[g], pos = h & mask;
        while (ns[pos]) pos = (pos + 1) & mask;
        ns[pos] = (h & 0xFFFFFFFF00000000ULL) | (uint64_t)(g + 1);
    }
    df_free(gt->slots);
    gt->slots = ns;
    gt->mask = mask;
    return DF_OK;
}

/*
 * Single fixed-width key (the common GROUP BY / join key): the key is
 * compared as one integer load instead of the generic per-column loop.
 */
static inline bool single_fixed(const df_group_table *gt, df_vec *const *keys) {
    return gt->nkeys == 1 && gt->cols[0].width > 0 && !gt->cols[0].is_bool && gt->cols[0].width <= 8 &&
           (gt->cols[0].width & (gt->cols[0].width - 1)) == 0 && keys[0]->type->id != DF_TYPE_NULL;
}

static inline uint64_t load_key(const uint8_t *p, int32_t w) {
    switch (w) {
    case 1: return *p;
    case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
    default: { uint64_t x; memcpy(&x, p, 8); return x; }
    }
}

/* Probe for row i of a single fixed-width key; returns the group or -1 and the slot where it would go. */
static inline int64_t probe_fixed(const df_group_table *gt, const df_vec *v, int64_t i, uint64_t h, uint64_t *slot_out) {
    const df_keycol *k = &gt->cols[0];
    int32_t w = k->width;
    bool valid = !v->validity || df_bit_get(v->validity->data, v->offset + i);
    uint64_t key = valid ? load_key(v->values->data + (v->offset + i) * w, w) : 0;
    uint64_t tag = h & 0xFFFFFFFF00000000ULL, pos = h & gt->mask;
    for (;;) {
        uint64_t s = gt->slots[pos];
        if (!s) {
            *slot_out = pos;
            return -1;
        }
        if ((s & 0xFFFFFFFF00000000ULL) == tag) {
            int64_t g = (int64_t)(s & 0xFFFFFFFFULL) - 1;
            if (k->valid[g] == valid && (!valid || load_key(k->vals + g * w, w) == key)) return g;
        }
        pos = (pos + 1) & gt->mask;
    }
}


/* ------------------------------------------------------------------------ */
/* Dense direct map (single integer key)                                     */

#define DENSE_MIN_SPAN ((int64_t)1 << 16)   /* always acceptable span */
#define DENSE_MAX_SPAN ((int64_t)1 << 22)   /* never larger (16 MiB of map) */

/* Integer-like key types whose value order is the signed (or small unsigned) integer order. */
static bool dense_type(const df_type *t) {
    switch (t->id) {
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64:
    case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32:
    case DF_TYPE_DATE32: case DF_TYPE_DATE64: case DF_TYPE_TIME32: case DF_TYPE_TIME64:
    case DF_TYPE_TIMESTAMP: case DF_TYPE_DURATION: return true;
    default: return false;
    }
}

/* Value i of an integer vector (or of stored keys at p), widened to int64. */
static inline int64_t load_int(const uint8_t *p, int32_t w, bool is_unsigned) {
    switch (w) {
    case 1: return is_unsigned ? (int64_t)*p : (int64_t)(int8_t)*p;
    case 2: { uint16_t x; memcpy(&x, p, 2); return is_unsigned ? (int64_t)x : (int64_t)(int16_t)x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return is_unsigned ? (int64_t)x : (int64_t)(int32_t)x; }
    default: { int64_t x; memcpy(&x, p, 8); return x; }
    }
}

static inline bool type_unsigned(const df_type *t) {
    return t->id == DF_TYPE_UINT8 || t->id == DF_TYPE_UINT16 || t->id == DF_TYPE_UINT32;
}

/* Min and max of the valid values among rows [0, n) of v; false when none is valid. */
static bool int_range(const df_vec *v, int64_t n, int64_t *lo_out, int64_t *hi_out) {
    int32_t w = df_type_width(v->type);
    bool uns = type_unsigned(v->type);
    const uint8_t *p = v->values->data + v->offset * w;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    bool any = false;
    for (int64_t i = 0; i < n; i++) {
        if (v->validity && !df_bit_get(v->validity->data, v->offset + i)) continue;
        int64_t x = load_int(p + i * w, w, uns);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        any = true;
    }
    *lo_out = lo;
    *hi_out = hi;
    return any;
}

static void dense_drop(df_group_table *gt) {
    df_free(gt->dense);
    gt->dense = NULL;
    if (gt->ctx && gt->dense_bytes) {
        df__exec_mem_release(gt->ctx, gt->dense_bytes);
        gt->reserved -= gt->dense_bytes;
    }
    gt->dense_bytes = 0;
    gt->dense_state = -1;
}

/*
 * Makes the dense map cover every valid key of this batch as well as the
 * groups already stored, when the combined range stays within the bound
 * (DENSE_MIN_SPAN, or up to DENSE_MAX_SPAN when the map would be at least a
 * quarter full).  Returns true when the map can serve the batch.  Failure
 * to allocate simply drops the map (the hash index remains complete).
 */
static bool dense_fit(df_group_table *gt, const df_vec *v, int64_t n) {
    if (gt->dense_state < 0) return false;
    if (gt->dense_state == 0 && (gt->nkeys != 1 || !dense_type(gt->cols[0].type) || gt->ngroups > 0)) {
        gt->dense_state = -1;
        return false;
    }
    int64_t lo, hi;
    if (!int_range(v, n, &lo, &hi)) return gt->dense_state == 1;
    /* Keys may reach both ends of int64: differences are taken unsigned (exact since hi >= lo >= dense_min). */
    if (gt->dense_state == 1 && lo >= gt->dense_min &&
        (uint64_t)hi - (uint64_t)gt->dense_min < (uint64_t)gt->dense_span)
        return true;
    if (gt->dense_state == 1) {
        lo = DF_MIN(lo, gt->dense_min);
        hi = DF_MAX(hi, gt->dense_min + (gt->dense_span - 1));
    }
    /* span = hi - lo + 1 without overflow. */
    if (hi - (uint64_t)lo >= (uint64_t)DENSE_MAX_SPAN ||
        ((int64_t)((uint64_t)hi - (uint64_t)lo) + 1 > DENSE_MIN_SPAN &&
         (int64_t)((uint64_t)hi - (uint64_t)lo) + 1 > 4 * (gt->ngroups + n))) {
        dense_drop(gt);
        return false;
    }
    int64_t span = (int64_t)((uint64_t)hi - (uint64_t)lo) + 1;
    int64_t bytes = span * (int64_t)sizeof(int32_t);
    int32_t *d = df_malloc((size_t)bytes);
    if (!d || (gt->ctx && df__exec_mem_reserve(gt->ctx, bytes, NULL) != DF_OK)) {
        df_free(d);
        dense_drop(gt);
        return false;
    }
    memset(d, 0xFF, (size_t)bytes);
    const df_keycol *k = &gt->cols[0];
    bool uns = type_unsigned(k->type);
    for (int64_t g = 0; g < gt->ngroups; g++)
        if (k->valid[g]) d[load_int(k->vals + g * k->width, k->width, uns) - lo] = (int32_t)g;
    int64_t old = gt->dense_bytes;
    df_free(gt->dense);
    if (gt->ctx) {
        if (old) df__exec_mem_release(gt->ctx, old);
        gt->reserved += bytes - old;
    }
    gt->dense = d;
    gt->dense_min = lo;
    gt->dense_span = span;
    gt->dense_bytes = gt->ctx ? bytes : 0;
    gt->dense_state = 1;
    return true;
}

/*
 * Equality of a stored key q (which always has 8 readable bytes past it)
 * and p of the same length len, with p's readable bytes ending at `end`:
 * keys of up to 8 bytes compare as one masked word.
 */
static inline bool str_equal(const uint8_t *q, const uint8_t *p, int64_t len, const uint8_t *end) {
    if (len == 0) return true;
    if (len <= 8 && end - p >= 8) {
        uint64_t m = ~0ULL >> (64 - 8 * len);
        return ((df_load_le64(q) ^ df_load_le64(p)) & m) == 0;
    }
    return memcmp(q, p, (size_t)len) == 0;
}

/* Single string key: probe for row i, comparing lengths before bytes; returns the group or -1 and the free slot. */
static inline int64_t probe_str(const df_group_table *gt, const df_vec *v, int64_t i, uint64_t h, uint64_t *slot_out) {
    const df_keycol *k = &gt->cols[0];
    bool valid = !v->validity || df_bit_get(v->validity->data, v->offset + i);
    const int32_t *o = df_vec_offsets(v) + i;
    int64_t len = valid ? o[1] - o[0] : 0;
    const uint8_t *p = valid && len ? v->data->data + o[0] : NULL;
    const uint8_t *end = p ? v->data->data + v->data->size : NULL;
    uint64_t tag = h & 0xFFFFFFFF00000000ULL, pos = h & gt->mask;
    for (;;) {
        uint64_t s = gt->slots[pos];
        if (!s) {
            *slot_out = pos;
            return -1;
        }
        if ((s & 0xFFFFFFFF00000000ULL) == tag) {
            int64_t g = (int64_t)(s & 0xFFFFFFFFULL) - 1;
            /* No key bytes stored yet (only empty strings) leaves k->data NULL: offset it only when there are. */
            if (k->valid[g] == valid && k->offs[g + 1] - k->offs[g] == len &&
                (len == 0 || str_equal(k->data + k->offs[g], p, len, end)))
                return g;
        }
        pos = (pos + 1) & gt->mask;
    }
}

static inline bool single_str(const df_group_table *gt, df_vec *const *keys) {
    return gt->nkeys == 1 && gt->cols[0].varlen && keys[0]->type->id != DF_TYPE_NULL;
}

df_errkind df__gt_find_or_insert(df_group_table *gt, df_vec *const *keys, const uint64_t *hashes, int64_t n,
                                const uint8_t *skip, int32_t *gids, df_error *err) {
    if (single_str(gt, keys)) {
        for (int64_t i = 0; i < n; i++) {
            if (skip && skip[i]) {
                gids[i] = -1;
                continue;
            }
            if ((uint64_t)(gt->ngroups + 1) * 2 > gt->mask + 1) DF_TRY(rehash(gt, err));
            uint64_t slot = 0;
            int64_t g = probe_str(gt, keys[0], i, hashes[i], &slot);
            if (g < 0) {
                if (gt->ngroups >= INT32_MAX - 1) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2^31 groups");
                g = gt->ngroups;
                DF_TRY(grow_keys(gt, g + 1, err));
                DF_TRY(append_key(gt, keys, i, g, err));
                gt->hashes[g] = hashes[i];
                gt->ngroups++;
                gt->slots[slot] = (hashes[i] & 0xFFFFFFFF00000000ULL) | (uint64_t)(g + 1);
            }
            gids[i] = (int32_t)g;
        }
        return DF_OK;
    }
    if (single_fixed(gt, keys)) {
        const df_vec *v = keys[0];
        bool dense = dense_fit(gt, v, n), uns = type_unsigned(v->type);
        int32_t w = gt->cols[0].width;
        const uint8_t *vals = v->values->data + v->offset * w;
        for (int64_t i = 0; i < n; i++) {
            if (skip && skip[i]) {
                gids[i] = -1;
                continue;
            }
            int32_t *dslot = NULL;
            if (dense && (!v->validity || df_bit_get(v->validity->data, v->offset + i))) {
                dslot = &gt->dense[load_int(vals + i * w, w, uns) - gt->dense_min];
                if (*dslot >= 0) {
                    gids[i] = *dslot;
                    continue;
                }
            }
            if ((uint64_t)(gt->ngroups + 1) * 2 > gt->mask + 1) DF_TRY(rehash(gt, err));
            uint64_t slot = 0;
            int64_t g = probe_fixed(gt, v, i, hashes[i], &slot);
            if (dslot && g >= 0) *dslot = (int32_t)g;
            if (g < 0) {
                if (gt->ngroups >= INT32_MAX - 1) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2^31 groups");
                g = gt->ngroups;
                DF_TRY(grow_keys(gt, g + 1, err));
                DF_TRY(append_key(gt, keys, i, g, err));
                gt->hashes[g] = hashes[i];
                gt->ngroups++;
                gt->slots[slot] = (hashes[i] & 0xFFFFFFFF00000000ULL) | (uint64_t)(g + 1);
                if (dslot) *dslot = (int32_t)g;
            }
            gids[i] = (int32_t)g;
        }
        return DF_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        if (skip && skip[i]) {
            gids[i] = -1;
            continue;
        }
        if ((uint64_t)(gt->ngroups + 1) * 2 > gt->mask + 1) DF_TRY(rehash(gt, err));
        uint64_t h = hashes[i], tag = h & 0xFFFFFFFF00000000ULL, pos = h & gt->mask;
        for (;;) {
            uint64_t s = gt->slots[pos];
            if (!s) {
                if (gt->ngroups >= INT32_MAX - 1)
                    return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2^31 groups");
                int64_t g = gt->ngroups;
                DF_TRY(grow_keys(gt, g + 1, err));
                DF_TRY(append_key(gt, keys, i, g, err));
                gt->hashes[g] = h;
                gt->ngroups++;
                gt->slots[pos] = tag | (uint64_t)(g + 1);
                gids[i] = (int32_t)g;
                break;
            }
            if ((s & 0xFFFFFFFF00000000ULL) == tag) {
                int64_t g = (int64_t)(s & 0xFFFFFFFFULL) - 1;
                if (key_equals(gt, keys, i, g)) {
                    gids[i] = (int32_t)g;
                    break;
                }
            }
            pos = (pos + 1) & gt->mask;
        }
    }
    return DF_OK;
}

bool df__gt_find_needs_hashes(const df_group_table *gt) { return gt->dense_state != 1; }

void df__gt_find(const df_group_table *gt, df_vec *const *keys, const uint64_t *hashes, int64_t n,
                const uint8_t *skip, int32_t *gids) {
    if (gt->dense_state == 1 && keys[0]->type->id == DF_TYPE_NULL) {
        /* All-NULL keys: the NULL group (at most one), found without hashes. */
        int32_t ng = -1;
        for (int64_t g = 0; g < gt->ngroups && ng < 0; g++)
            if (!gt->cols[0].valid[g]) ng = (int32_t)g;
        for (int64_t i = 0; i < n; i++) gids[i] = (skip && skip[i]) ? -1 : ng;
        return;
    }
    if (gt->dense_state == 1) {
        /* Every stored valid key is in the map: values outside it have no group. */
        const df_vec *v = keys[0];
        int32_t w = gt->cols[0].width;
        bool uns = type_unsigned(v->type);
        const uint8_t *vals = v->values->data + v->offset * w;
        const int32_t *d = gt->dense;
        uint64_t lo = (uint64_t)gt->dense_min, span = (uint64_t)gt->dense_span;
        for (int64_t i = 0; i < n; i++) {
            uint64_t x = (uint64_t)load_int(vals + i * w, w, uns) - lo;
            gids[i] = x < span ? d[x] : -1;
        }
        for (int64_t i = 0; i < n; i++) {
            if (skip && skip[i]) gids[i] = -1;
            else if (v->validity && !df_bit_get(v->validity->data, v->offset + i)) {
                uint64_t slot = 0; /* a NULL's hash is NULL_HASH (one key column) */
                gids[i] = (int32_t)probe_fixed(gt, v, i, NULL_HASH, &slot);
            }
        }
        return;
    }
    if (single_str(gt, keys)) {
        for (int64_t i = 0; i < n; i++) {
            uint64_t slot = 0;
            gids[i] = (skip && skip[i]) ? -1 : (int32_t)probe_str(gt, keys[0], i, hashes[i], &slot);
        }
        return;
    }
    if (single_fixed(gt, keys)) {
        for (int64_t i = 0; i < n; i++) {
            uint64_t slot = 0;
            gids[i] = (skip && skip[i]) ? -1 : (int32_t)probe_fixed(gt, keys[0], i, hashes[i], &slot);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        gids[i] = -1;
        if (skip && skip[i]) continue;
        uint64_t h = hashes[i], tag = h & 0xFFFFFFFF00000000ULL, pos = h & gt->mask;
        for (;;) {
            uint64_t s = gt->slots[pos];
            if (!s) break;
            if ((s & 0xFFFFFFFF00000000ULL) == tag) {
                int64_t g = (int64_t)(s & 0xFFFFFFFFULL) - 1;
                if (key_equals(gt, keys, i, g)) {
                    gids[i] = (int32_t)g;
                    break;
                }
            }
            pos = (pos + 1) & gt->mask;
        }
    }
}

df_errkind df__gt_key_vec(const df_group_table *gt, int32_t col, int64_t from, int64_t to, df_vec **out,
                         df_error *err) {
    *out = NULL;
    const df_keycol *k = &gt->cols[col];
    int64_t n = to - from;
    if (k->type->id == DF_TYPE_NULL) return df_vec_new_nulls(k->type, n, out, err);
    int64_t data = k->varlen ? k->offs[to] - k->offs[from] : 0;
    if (data > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "group keys exceed 2 GiB");
    df_vec *v;
    DF_TRY(df_vec_new(k->type, n, data, &v, err));
    bool any_null = false;
    for (int64_t g = from; g < to && !any_null; g++) any_null = !k->valid[g];
    if (any_null) {
        df_errkind e = df_vec_ensure_validity(v, n, err);
        if (e) {
            df_vec_release(v);
            return e;
        }
        for (int64_t g = from; g < to; g++)
            if (!k->valid[g]) df_bit_clear(v->validity->data, g - from);
    }
    if (k->varlen) {
        int32_t *o = (int32_t *)(void *)v->values->data;
        int64_t base = k->offs[from];
        for (int64_t g = from; g <= to; g++) o[g - from] = (int32_t)(k->offs[g] - base);
        if (data) memcpy(v->data->data, k->data + base, (size_t)data);
    } else if (k->is_bool) {
        memset(v->values->data, 0, (size_t)df_bitmap_bytes(n));
        for (int64_t g = from; g < to; g++)
            if (k->vals[g]) df_bit_set(v->values->data, g - from);
    } else {
        df__memcpy(v->values->data, k->vals + from * k->width, (size_t)(n * k->width));
    }
    df_vec_set_length(v, n);
    *out = v;
    return DF_OK;
}
