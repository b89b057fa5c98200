/*
 * AggregateExec: hash aggregation (GROUP BY) with count, sum, min, max,
 * avg, bool_and, bool_or, first_value, DISTINCT and FILTER.
 *
 * Modes.  SINGLE aggregates raw input to final values.  PARTIAL runs per
 * input partition and emits intermediate states (keys + state columns);
 * FINAL merges those states after a coalesce.  State columns: count ->
 * Int64; sum -> its result type (NULL when no value); avg -> sum
 * (Float64 or Decimal128(38, s)) and count; min/max/first -> the value;
 * bool_and/or -> Boolean.  DISTINCT aggregates run in SINGLE mode.
 *
 * Layout.  Groups get dense ids from the group table (hash_table.c);
 * every aggregate keeps plain arrays indexed by group id (counts, int64 /
 * uint64 / double / int128 sums, min/max values with a presence flag;
 * strings in an append-only byte buffer), grown geometrically.  A batch is
 * processed as: evaluate keys -> group ids for all rows -> for each
 * aggregate evaluate its argument and filter -> one tight loop per
 * (aggregate, type) updating the arrays.  DISTINCT uses a second group
 * table over (group id, value) pairs: a row contributes only when its pair
 * is new.  Memory grows are accounted against the query limit.
 *
 * Semantics follow DataFusion: count never NULL, sum/avg/min/max NULL over
 * no values, integer sums are Int64 (UInt64 for unsigned) and fail on
 * overflow, float sums are Float64, decimal sums widen precision by 10 and
 * avg by 4 (scale + 4, truncated), avg of integers is Float64.
 */
#include "exec/hash_table.h"

#include <stdio.h>

#include "exec/agg_more.h"

#include "sql/sql_types.h"

typedef enum acc_kind {
    ACC_COUNT,
    ACC_SUM_I64,
    ACC_SUM_U64,
    ACC_SUM_F64,
    ACC_SUM_DEC,
    ACC_AVG_F64,
    ACC_AVG_DEC,
    ACC_MIN,
    ACC_MAX,
    ACC_FIRST,
    ACC_LAST,
    ACC_BOOL_AND,
    ACC_BOOL_OR,
    ACC_MORE,       /* single-step aggregate in agg_more.c */
} acc_kind;

typedef struct agg_def {
    acc_kind acc;           /* accumulator */
    bool distinct;          /* DISTINCT */
    bool count_star;        /* count(*) / count(1): counts rows */
    df_xprog *arg;          /* raw argument (SINGLE/PARTIAL), NULL for count(*) */
    df_xprog *arg2;         /* ACC_MORE: second argument (covariance family) or NULL */
    const df_agg *la;       /* the logical aggregate (owned by the plan, which outlives this node) */
    df_xprog *filter;       /* FILTER (SINGLE/PARTIAL) or NULL */
    df_type *val_type;      /* type of the values fed to the accumulator (reference) */
    df_type *out_type;      /* final result type (reference) */
    int32_t nstate;         /* partial state columns */
    df_type *state_types[2];/* their types (references) */
    int32_t state_col;      /* FINAL: first state column in the input */
    int in_scale;           /* decimal scale of summed values */
    bool respect_nulls;     /* first/last: a NULL value is a value (RESPECT NULLS, the default) */
    bool ordered;           /* ORDER BY inside an order-sensitive call: rows are buffered, then fed sorted */
    df__sortspec order;     /* ordered: the keys */
} agg_def;

typedef struct agg_priv {
    df_agg_mode mode;       /* single / partial / final */
    int32_t ngroup;         /* group keys */
    df_xprog **group;       /* key programs (raw modes) */
    df_type **key_types;    /* key types (references) */
    int32_t naggs;
    agg_def *aggs;
    bool empty_set;         /* GROUPING SETS with (): no input still gives its row (final / single modes) */
    uint64_t empty_set_id;  /* that row's grouping id, the last key */
} agg_priv;

/* Per-aggregate running state. */
typedef struct acc {
    int64_t *cnt;           /* counts (count, and values seen for sum/avg/min/max) */
    void *sum;              /* int64 / uint64 / double / df_i128 sums */
    uint8_t *vals;          /* min/max/first/bool values: width bytes per group */
    int64_t *soff;          /* string min/max: offset into sdata */
    int32_t *slen;          /* string min/max: length */
    uint8_t *sdata;         /* string bytes (append-only) */
    int64_t sdlen, sdcap;
    df_group_table dset;    /* DISTINCT: seen (group, value) pairs */
    bool has_dset;
    df__aggm *more;         /* ACC_MORE: the accumulator */
    uint8_t *seen;          /* DISTINCT scratch per batch */
    int64_t seen_cap;
    uint8_t *nul;           /* first/last respecting NULLs: the group's value is NULL */
    df_vec **obuf;          /* ordered: buffered columns, ORD_COLS + keys per batch */
    int64_t nob, obcap;     /* ordered: batches buffered / room */
    df_xstate **ost;        /* ordered: key states */
} acc;

/* Columns buffered per batch by an ordered aggregate: group ids, value, second value, filter, then the keys. */
enum { ORD_GID, ORD_V, ORD_V2, ORD_F, ORD_COLS };

typedef struct agg_op {
    df_op base;
    df_op *child;           /* input (NULL once consumed) */
    df_group_table gt;      /* groups */
    df_xstate **gst;        /* key program states */
    df_vec **keys;          /* scratch: one batch's evaluated group keys, ngroup entries */
    df_xstate **ast;        /* argument states per aggregate */
    df_xstate **fst;        /* filter states per aggregate */
    df_xstate **ast2;       /* second-argument states per aggregate */
    acc *accs;              /* per aggregate */
    int64_t cap;            /* groups the state arrays hold */
    int64_t reserved;       /* bytes of state arrays accounted */
    int32_t *gids;          /* per input row group id */
    uint64_t *hashes;       /* per input row hash */
    int64_t scratch;        /* rows the scratch arrays hold */
    int64_t emitted;        /* groups output so far */
    bool consumed;          /* input exhausted */
    bool emitted_empty_set; /* the () row over no input is out */
} agg_op;

/* ------------------------------------------------------------------------ */
/* State arrays                                                              */

static int32_t val_width(const agg_def *d) {
    if (d->val_type->id == DF_TYPE_BOOL) return 1;
    if (df_type_is_varlen(d->val_type)) return 0;
    return df_type_width(d->val_type);
}

static int32_t sum_width(acc_kind k) {
    switch (k) {
    case ACC_SUM_I64: case ACC_SUM_U64: case ACC_SUM_F64: case ACC_AVG_F64: return 8;
    case ACC_SUM_DEC: case ACC_AVG_DEC: return 16;
    default: return 0;
    }
}

static df_errkind grow_array(void **p, int64_t old, int64_t ncap, size_t w, df_error *err) {
    if (!w) return DF_OK;
    void *n = df_realloc(*p, (size_t)ncap * w);
    if (!n) return DF_OOM(err);
    memset((uint8_t *)n + (size_t)old * w, 0, (size_t)(ncap - old) * w);
    *p = n;
    return DF_OK;
}

static df_errkind ensure_groups(agg_op *a, int64_t need, df_error *err) {
    if (need <= a->cap) return DF_OK;
    const agg_priv *ap = a->base.node->priv;
    int64_t ncap = a->cap ? a->cap : 1024;
    while (ncap < need) ncap *= 2;
    int64_t bytes = 0;
    for (int32_t i = 0; i < ap->naggs; i++) {
        const agg_def *d = &ap->aggs[i];
        acc *s = &a->accs[i];
        DF_TRY(grow_array((void **)&s->cnt, a->cap, ncap, sizeof(int64_t), err));
        bytes += 8;
        int32_t sw = sum_width(d->acc);
        DF_TRY(grow_array(&s->sum, a->cap, ncap, (size_t)sw, err));
        bytes += sw;
        if (d->acc >= ACC_MIN && d->acc != ACC_MORE) {
            int32_t w = val_width(d);
            if (w) {
                DF_TRY(grow_array((void **)&s->vals, a->cap, ncap, (size_t)w, err));
                bytes += w;
            } else {
                DF_TRY(grow_array((void **)&s->soff, a->cap, ncap, sizeof(int64_t), err));
                DF_TRY(grow_array((void **)&s->slen, a->cap, ncap, sizeof(int32_t), err));
                bytes += 12;
            }
        }
        if (d->respect_nulls) {
            DF_TRY(grow_array((void **)&s->nul, a->cap, ncap, 1, err));
            bytes += 1;
        }
    }
    int64_t delta = bytes * (ncap - a->cap);
    DF_TRY(df__exec_mem_reserve(a->base.ctx, delta, err));
    a->reserved += delta;
    a->cap = ncap;
    return DF_OK;
}

static df_errkind ensure_scratch(agg_op *a, int64_t n, df_error *err) {
    if (n <= a->scratch) return DF_OK;
    int32_t *g = df_realloc(a->gids, (size_t)n * sizeof(int32_t));
    if (!g) return DF_OOM(err);
    a->gids = g;
    uint64_t *h = df_realloc(a->hashes, (size_t)n * sizeof(uint64_t));
    if (!h) return DF_OOM(err);
    a->hashes = h;
    a->scratch = n;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Updates                                                                   */

/* Row mask: rows to feed (value valid and filter true); NULL mask means "all valid rows". */
static inline bool feed(const df_vec *v, const df_vec *f, int64_t i) {
    if (v && (v->type->id == DF_TYPE_NULL || !df_vec_is_valid(v, i))) return false;
    if (f && (!df_vec_is_valid(f, i) || !df_vec_bool(f, i))) return false;
    return true;
}

static df_errkind update_sum(const agg_def *d, acc *s, const int32_t *g, const df_vec *v, const df_vec *f,
                             const uint8_t *skip, int64_t n, df_error *err) {
    df_type_id t = v->type->id;
#define LOOP(T, ACC_T, ADD)                                                                  \
    {                                                                                        \
        const T *x = DF_VEC_VALUES(v, T);                                                    \
        ACC_T *sum = (ACC_T *)s->sum;                                                        \
        for (int64_t i = 0; i < n; i++) {                                                    \
            if ((skip && skip[i]) || !feed(v, f, i)) continue;                               \
            int32_t gi = g[i];                                                               \
            ADD;                                                                             \
            s->cnt[gi]++;                                                                    \
        }                                                                                    \
        return DF_OK;                                                                        \
    }
/* Integer sums wrap around on overflow, as DataFusion's (the builtins store the wrapped value). */
#define ADD_I64 (void)__builtin_add_overflow(sum[gi], (int64_t)x[i], &sum[gi])
#define ADD_U64 (void)__builtin_add_overflow(sum[gi], (uint64_t)x[i], &sum[gi])
#define ADD_F64 sum[gi] += (double)x[i]
    if (d->acc == ACC_SUM_I64 || d->acc == ACC_SUM_U64) {
        switch (t) {
        case DF_TYPE_INT8: LOOP(int8_t, int64_t, ADD_I64)
        case DF_TYPE_INT16: LOOP(int16_t, int64_t, ADD_I64)
        case DF_TYPE_INT32: LOOP(int32_t, int64_t, ADD_I64)
        case DF_TYPE_INT64: case DF_TYPE_DURATION: LOOP(int64_t, int64_t, ADD_I64)
        case DF_TYPE_UINT8: LOOP(uint8_t, uint64_t, ADD_U64)
        case DF_TYPE_UINT16: LOOP(uint16_t, uint64_t, ADD_U64)
        case DF_TYPE_UINT32: LOOP(uint32_t, uint64_t, ADD_U64)
        case DF_TYPE_UINT64: LOOP(uint64_t, uint64_t, ADD_U64)
        default: break;
        }
    } else if (d->acc == ACC_SUM_F64 || d->acc == ACC_AVG_F64) {
        switch (t) {
        case DF_TYPE_INT8: LOOP(int8_t, double, ADD_F64)
        case DF_TYPE_INT16: LOOP(int16_t, double, ADD_F64)
        case DF_TYPE_INT32: LOOP(int32_t, double, ADD_F64)
        case DF_TYPE_INT64: LOOP(int64_t, double, ADD_F64)
        case DF_TYPE_UINT8: LOOP(uint8_t, double, ADD_F64)
        case DF_TYPE_UINT16: LOOP(uint16_t, double, ADD_F64)
        case DF_TYPE_UINT32: LOOP(uint32_t, double, ADD_F64)
        case DF_TYPE_UINT64: LOOP(uint64_t, double, ADD_F64)
        case DF_TYPE_FLOAT32: LOOP(float, double, ADD_F64)
        case DF_TYPE_FLOAT64: LOOP(double, double, ADD_F64)
        default: break;
        }
    } else if (t == DF_TYPE_DECIMAL128) {
        const df_i128 *x = DF_VEC_VALUES(v, df_i128);
        df_i128 *sum = (df_i128 *)s->sum;
        for (int64_t i = 0; i < n; i++) {
            if ((skip && skip[i]) || !feed(v, f, i)) continue;
            int32_t gi = g[i];
            df_i128 a = sum[gi], b = x[i];
            df_u128 r = (df_u128)a + (df_u128)b;
            if ((a >= 0) == (b >= 0) && ((df_i128)r >= 0) != (a >= 0)) goto overflow;
            sum[gi] = (df_i128)r;
            s->cnt[gi]++;
        }
        return DF_OK;
    }
#undef LOOP
#undef ADD_I64
#undef ADD_U64
#undef ADD_F64
    return df_error_set(err, DF_ERR_INTERNAL, "sum over an unexpected type");
overflow:
    return df_error_set(err, DF_ERR_NUMERIC_OVERFLOW, "decimal overflow in sum");
}

/* Total-order float key for min/max. */
static inline int64_t fkey(double d) {
    /* Every NaN is the greatest value, whatever its sign bit (0.0 / 0.0 sets it on x86). */
    if (d != d) return INT64_MAX;
    int64_t b;
    df__memcpy(&b, &d, 8);
    return b ^ (int64_t)((uint64_t)(b >> 63) >> 1);
}

static df_errkind store_string(acc *s, int32_t gi, const uint8_t *p, int32_t len, df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(s->sdata, s->sdcap, s->sdlen + len, 4096, err));
    if (len) df__memcpy(s->sdata + s->sdlen, p, (size_t)len); /* sdata stays NULL while only '' was seen */
    s->soff[gi] = s->sdlen;
    s->slen[gi] = len;
    s->sdlen += len;
    return DF_OK;
}

static df_errkind update_value(const agg_def *d, acc *s, const int32_t *g, const df_vec *v, const df_vec *f,
                               const uint8_t *skip, int64_t n, df_error *err) {
    int32_t w = val_width(d);
    bool is_max = d->acc == ACC_MAX, first = d->acc == ACC_FIRST, last = d->acc == ACC_LAST;
    df_type_id t = v->type->id;
    if (d->acc == ACC_BOOL_AND || d->acc == ACC_BOOL_OR) {
        bool and = d->acc == ACC_BOOL_AND;
        for (int64_t i = 0; i < n; i++) {
            if ((skip && skip[i]) || !feed(v, f, i)) continue;
            int32_t gi = g[i];
            uint8_t b = df_vec_bool(v, i);
            s->vals[gi] = s->cnt[gi] ? (and ? (s->vals[gi] & b) : (s->vals[gi] | b)) : b;
            s->cnt[gi]++;
        }
        return DF_OK;
    }
    if (!w) {
        for (int64_t i = 0; i < n; i++) {
            if ((skip && skip[i]) || !feed(v, f, i)) continue;
            int32_t gi = g[i];
            int32_t len;
            const uint8_t *p = df_vec_bytes(v, i, &len);
            bool take = !s->cnt[gi] || last;
            if (!take && !first) {
                int32_t common = DF_MIN(len, s->slen[gi]);
                int c = common ? memcmp(p, s->sdata + s->soff[gi], (size_t)common) : 0; /* sdata may be NULL */
                if (c == 0) c = len < s->slen[gi] ? -1 : len > s->slen[gi];
                take = is_max ? c > 0 : c < 0;
            }
            if (take) DF_TRY(store_string(s, gi, p, len, err));
            s->cnt[gi]++;
        }
        return DF_OK;
    }
    if (t == DF_TYPE_BOOL) {
        for (int64_t i = 0; i < n; i++) {
            if ((skip && skip[i]) || !feed(v, f, i)) continue;
            int32_t gi = g[i];
            uint8_t b = df_vec_bool(v, i);
            if (last || !s->cnt[gi] || (!first && (is_max ? b > s->vals[gi] : b < s->vals[gi]))) s->vals[gi] = b;
            s->cnt[gi]++;
        }
        return DF_OK;
    }
#define MM(T, KEY)                                                                           \
    {                                                                                        \
        const T *x = DF_VEC_VALUES(v, T);                                                    \
        T *cur = (T *)(void *)s->vals;                                                       \
        for (int64_t i = 0; i < n; i++) {                                                    \
            if ((skip && skip[i]) || !feed(v, f, i)) continue;                               \
            int32_t gi = g[i];                                                               \
            if (last || !s->cnt[gi] || (!first && (is_max ? KEY(x[i]) > KEY(cur[gi]) : KEY(x[i]) < KEY(cur[gi])))) \
                cur[gi] = x[i];                                                              \
            s->cnt[gi]++;                                                                    \
        }                                                                                    \
        return DF_OK;                                                                        \
    }
#define ID(x) (x)
    switch (t) {
    case DF_TYPE_INT8: MM(int8_t, ID)
    case DF_TYPE_INT16: MM(int16_t, ID)
    case DF_TYPE_INT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32: MM(int32_t, ID)
    case DF_TYPE_INT64: case DF_TYPE_DATE64: case DF_TYPE_TIME64: case DF_TYPE_TIMESTAMP: case DF_TYPE_DURATION:
        MM(int64_t, ID)
    case DF_TYPE_UINT8: MM(uint8_t, ID)
    case DF_TYPE_UINT16: MM(uint16_t, ID)
    case DF_TYPE_UINT32: MM(uint32_t, ID)
    case DF_TYPE_UINT64: MM(uint64_t, ID)
    case DF_TYPE_FLOAT32: MM(float, fkey)
    case DF_TYPE_FLOAT64: MM(double, fkey)
    case DF_TYPE_DECIMAL128: MM(df_i128, ID)
    default: break;
    }
#undef MM
#undef ID
    /* Other fixed-width types (intervals, fixed binary): compare generically. */
    for (int64_t i = 0; i < n; i++) {
        if ((skip && skip[i]) || !feed(v, f, i)) continue;
        int32_t gi = g[i];
        const uint8_t *p = v->values->data + (v->offset + i) * w;
        int c = s->cnt[gi] ? memcmp(p, s->vals + gi * w, (size_t)w) : 0;
        if (last || !s->cnt[gi] || (!first && (is_max ? c > 0 : c < 0))) df__memcpy(s->vals + gi * w, p, (size_t)w);
        s->cnt[gi]++;
    }
    return DF_OK;
}

/* DISTINCT: marks rows whose (group, value) pair was not seen before in skip[] (1 = skip). */
static df_errkind distinct_filter(acc *s, const int32_t *gids, const df_vec *v, const df_vec *f, int64_t n,
                                  uint8_t *skip, df_error *err) {
    df_vec *gv = NULL;
    df_errkind k = df_vec_new(df_type_int32(), n, 0, &gv, err);
    if (k) return k;
    df__memcpy(gv->values->data, gids, (size_t)n * sizeof(int32_t));
    df_vec_set_length(gv, n);
    df_vec *keys[2] = {gv, df_vec_retain((df_vec *)v)};
    uint64_t *h = df_malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    int32_t *pg = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!h || !pg) k = DF_OOM(err);
    for (int64_t i = 0; !k && i < n; i++) skip[i] = !feed(v, f, i);
    int64_t before = s->dset.ngroups;
    if (!k) k = df__gt_canon_keys(&keys[1], 1, err);
    if (!k) {
        df__gt_hash(&s->dset, keys, n, h);
        k = df__gt_find_or_insert(&s->dset, keys, h, n, skip, pg, err);
    }
    if (!k && s->seen_cap < n) {
        uint8_t *ns = df_realloc(s->seen, (size_t)n);
        if (!ns) k = DF_OOM(err);
        else s->seen = ns, s->seen_cap = n;
    }
    if (!k) {
        memset(s->seen, 0, (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            if (skip[i]) continue;
            int64_t fresh = pg[i] - before;
            if (fresh < 0 || s->seen[fresh]) {
                skip[i] = 1;
            } else {
                s->seen[fresh] = 1;
            }
        }
    }
    df_free(h);
    df_free(pg);
    df_vec_release(gv);
    df_vec_release(keys[1]);
    return k;
}

/*
 * first_value / last_value respecting NULLs: decides which rows of the batch
 * reach the accumulator (use[i]) and records groups whose value becomes
 * NULL.  first: the first row of a group that has none yet; last: the last
 * row of each group in the batch.  Claimed groups are marked by a negative
 * count during the pass (c -> -(c + 1)) and restored after it.
 */
static void respect_nulls_pass(const agg_def *d, acc *s, const int32_t *g, const df_vec *v, const df_vec *f,
                               const uint8_t *skip, int64_t n, uint8_t *use) {
    bool last = d->acc == ACC_LAST;
    memset(use, 0, (size_t)n);
    for (int64_t j = 0; j < n; j++) {
        int64_t i = last ? n - 1 - j : j;
        if ((skip && skip[i]) || !feed(NULL, f, i)) continue;
        int32_t gi = g[i];
        if (s->cnt[gi] < 0 || (!last && s->cnt[gi] > 0)) continue;
        bool is_null = v->type->id == DF_TYPE_NULL || !df_vec_is_valid(v, i);
        s->nul[gi] = is_null;
        if (is_null) s->cnt[gi] = -(s->cnt[gi] + 2);
        else {
            use[i] = 1;
            s->cnt[gi] = -(s->cnt[gi] + 1);
        }
    }
    for (int64_t i = 0; i < n; i++)
        if (s->cnt[g[i]] < 0) s->cnt[g[i]] = -s->cnt[g[i]] - 1;
    for (int64_t i = 0; i < n; i++) use[i] = !use[i]; /* as a skip mask */
}

/* Feeds evaluated rows (group ids g, value v, second value v2, filter f) to aggregate i. */
static df_errkind feed_values(agg_op *a, int32_t i, const int32_t *g, int64_t n, const df_vec *v, const df_vec *v2,
                              const df_vec *f, uint8_t *skip, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    acc *s = &a->accs[i];
    df_errkind k = DF_OK;
    const uint8_t *sk = NULL;
    if (d->distinct && v) {
        DF_TRY(distinct_filter(s, g, v, f, n, skip, err));
        sk = skip;
    }
    if (d->acc == ACC_MORE) return df__aggm_update(s->more, g, n, ap->ngroup ? a->gt.ngroups : 1, v, v2, f, sk, err);
    switch (d->acc) {
    case ACC_COUNT:
        for (int64_t r = 0; r < n; r++)
            if (!(sk && sk[r]) && feed(d->count_star ? NULL : v, f, r)) s->cnt[g[r]]++;
        break;
    case ACC_SUM_I64: case ACC_SUM_U64: case ACC_SUM_F64: case ACC_SUM_DEC: case ACC_AVG_F64: case ACC_AVG_DEC:
        k = update_sum(d, s, g, v, f, sk, n, err);
        break;
    default:
        if (d->respect_nulls) {
            uint8_t *use = df_malloc((size_t)(n ? n : 1));
            if (!use) return DF_OOM(err);
            respect_nulls_pass(d, s, g, v, f, sk, n, use);
            k = update_value(d, s, g, v, f, use, n, err);
            df_free(use);
        } else {
            k = update_value(d, s, g, v, f, sk, n, err);
        }
        break;
    }
    return k;
}

/* Ordered aggregate: keeps one batch's evaluated columns (group ids, arguments, filter, keys) for the final sort. */
static df_errkind buffer_ordered(agg_op *a, int32_t i, const df_batch *b, df_vec *v, df_vec *f, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    acc *s = &a->accs[i];
    int64_t n = b->nrows;
    int32_t oc = ORD_COLS + d->order.nkeys;
    if (s->nob == s->obcap) {
        int64_t ncap = s->obcap ? s->obcap * 2 : 16;
        if (ncap > INT32_MAX / 2) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "too many batches for an ordered aggregate");
        df_vec **nb = df_realloc(s->obuf, (size_t)(ncap * oc) * sizeof(df_vec *));
        if (!nb) return DF_OOM(err);
        s->obuf = nb;
        s->obcap = ncap;
    }
    df_vec **row = s->obuf + s->nob * oc;
    memset(row, 0, (size_t)oc * sizeof(df_vec *));
    df_errkind k = df_vec_new(df_type_int32(), n, 0, &row[ORD_GID], err);
    if (!k) {
        df__memcpy(row[ORD_GID]->values->data, a->gids, (size_t)n * sizeof(int32_t));
        df_vec_set_length(row[ORD_GID], n);
        row[ORD_V] = df_vec_retain(v);
        row[ORD_F] = df_vec_retain(f);
        if (d->arg2) k = df__xprog_eval_vec(d->arg2, a->ast2[i], b, &row[ORD_V2], err);
    }
    if (!k) k = df__sortspec_eval(&d->order, s->ost, b, row + ORD_COLS, err);
    int64_t bytes = 0;
    for (int32_t c = 0; c < oc; c++) bytes += df__vec_bytes(row[c]);
    if (!k) k = df__exec_mem_reserve(a->base.ctx, bytes, err);
    if (k) {
        for (int32_t c = 0; c < oc; c++) df_vec_release(row[c]);
        return k;
    }
    a->reserved += bytes;
    s->nob++;
    return DF_OK;
}

/* Ordered aggregate: sorts the buffered rows by the keys (ties keep input order) and feeds them in that order. */
static df_errkind feed_ordered(agg_op *a, int32_t i, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    acc *s = &a->accs[i];
    if (!s->nob) return DF_OK;
    int32_t oc = ORD_COLS + d->order.nkeys;
    df_vec **cat = df_calloc((size_t)oc, sizeof(df_vec *));
    df_vec **srt = df_calloc((size_t)oc, sizeof(df_vec *));
    df_vec **one = df_calloc((size_t)s->nob, sizeof(df_vec *));
    df_errkind k = cat && srt && one ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < oc && !k; c++) {
        if (!s->obuf[c]) continue;
        for (int64_t j = 0; j < s->nob; j++) one[j] = s->obuf[j * oc + c];
        k = df__vec_concat(one, (int32_t)s->nob, &cat[c], err);
    }
    int64_t n = k ? 0 : cat[ORD_GID]->length;
    if (!k && n > INT32_MAX) k = df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2^31 rows in an ordered aggregate");
    int32_t *idx = k ? NULL : df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    uint8_t *skip = k ? NULL : df_malloc((size_t)(n ? n : 1));
    if (!k && (!idx || !skip)) k = DF_OOM(err);
    if (!k) {
        for (int64_t r = 0; r < n; r++) idx[r] = (int32_t)r;
        k = df__sort_indices_in(a->base.ctx, &d->order, cat + ORD_COLS, idx, n, err);
    }
    for (int32_t c = 0; c < ORD_COLS && !k; c++)
        if (cat[c]) k = df__vec_gather(cat[c], idx, n, &srt[c], err);
    if (!k)
        k = feed_values(a, i, DF_VEC_VALUES(srt[ORD_GID], int32_t), n, srt[ORD_V], srt[ORD_V2], srt[ORD_F], skip, err);
    df_free(idx);
    df_free(skip);
    for (int32_t c = 0; c < oc; c++) {
        if (cat) df_vec_release(cat[c]);
        if (srt) df_vec_release(srt[c]);
    }
    df_free(cat);
    df_free(srt);
    df_free(one);
    for (int64_t j = 0; j < s->nob * oc; j++) df_vec_release(s->obuf[j]);
    s->nob = 0;
    return k;
}

/* Feeds raw rows of one batch to aggregate i. */
static df_errkind update_raw(agg_op *a, int32_t i, const df_batch *b, uint8_t *skip, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    int64_t n = b->nrows;
    df_vec *v = NULL, *f = NULL, *v2 = NULL;
    df_errkind k = DF_OK;
    if (d->arg) k = df__xprog_eval_vec(d->arg, a->ast[i], b, &v, err);
    if (!k && d->filter) k = df__xprog_eval_vec(d->filter, a->fst[i], b, &f, err);
    if (!k && d->ordered) {
        k = buffer_ordered(a, i, b, v, f, err);
    } else {
        if (!k && d->arg2) k = df__xprog_eval_vec(d->arg2, a->ast2[i], b, &v2, err);
        if (!k) k = feed_values(a, i, a->gids, n, v, v2, f, skip, err);
    }
    df_vec_release(v);
    df_vec_release(v2);
    df_vec_release(f);
    return k;
}

/* Merges partial state columns of one batch into aggregate i (FINAL mode). */
static df_errkind update_merge(agg_op *a, int32_t i, const df_batch *b, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    acc *s = &a->accs[i];
    int64_t n = b->nrows;
    const df_vec *v = b->cols[d->state_col];
    switch (d->acc) {
    case ACC_COUNT: {
        const int64_t *c = DF_VEC_VALUES(v, int64_t);
        for (int64_t r = 0; r < n; r++) s->cnt[a->gids[r]] += c[r];
        return DF_OK;
    }
    case ACC_AVG_F64:
    case ACC_AVG_DEC: {
        const df_vec *cv = b->cols[d->state_col + 1];
        const int64_t *c = DF_VEC_VALUES(cv, int64_t);
        int32_t w = d->acc == ACC_AVG_F64 ? 8 : 16;
        for (int64_t r = 0; r < n; r++) {
            int32_t gi = a->gids[r];
            if (!df_vec_is_valid(v, r)) continue;
            if (w == 8) {
                ((double *)s->sum)[gi] += DF_VEC_VALUES(v, double)[r];
            } else {
                df_i128 *sum = s->sum;
                df_i128 x = DF_VEC_VALUES(v, df_i128)[r], y = sum[gi];
                df_u128 z = (df_u128)x + (df_u128)y;
                if ((x >= 0) == (y >= 0) && ((df_i128)z >= 0) != (x >= 0))
                    return df_error_set(err, DF_ERR_NUMERIC_OVERFLOW, "decimal overflow in avg");
                sum[gi] = (df_i128)z;
            }
            s->cnt[gi] += c[r];
        }
        return DF_OK;
    }
    case ACC_SUM_I64: case ACC_SUM_U64: case ACC_SUM_F64: case ACC_SUM_DEC:
        return update_sum(d, s, a->gids, v, NULL, NULL, n, err);
    default:
        return update_value(d, s, a->gids, v, NULL, NULL, n, err);
    }
}

/* ------------------------------------------------------------------------ */
/* Input                                                                     */

static df_errkind consume_batch(agg_op *a, const df_batch *b, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    int64_t n = b->nrows;
    DF_TRY(ensure_scratch(a, n, err));
    df_vec **keys = a->keys;
    int32_t nk = ap->ngroup;
    df_errkind k = DF_OK;
    if (nk == 0) {
        memset(a->gids, 0, (size_t)n * sizeof(int32_t));
    } else {
        for (int32_t c = 0; c < nk; c++) {
            if (ap->mode == DF_AGG_MODE_FINAL) keys[c] = df_vec_retain(b->cols[c]);
            else k = df__xprog_eval_vec(ap->group[c], a->gst[c], b, &keys[c], err);
            if (k) {
                for (int32_t j = 0; j < c; j++) df_vec_release(keys[j]);
                return k;
            }
        }
        k = df__gt_canon_keys(keys, nk, err);
        if (k) {
            for (int32_t c = 0; c < nk; c++) df_vec_release(keys[c]);
            return k;
        }
        df__gt_hash(&a->gt, keys, n, a->hashes);
        k = df__gt_find_or_insert(&a->gt, keys, a->hashes, n, NULL, a->gids, err);
        for (int32_t c = 0; c < nk; c++) df_vec_release(keys[c]);
        if (k) return k;
    }
    DF_TRY(ensure_groups(a, nk ? a->gt.ngroups : 1, err));
    uint8_t *skip = NULL;
    for (int32_t i = 0; i < ap->naggs && !k; i++) {
        if (ap->mode == DF_AGG_MODE_FINAL) {
            k = update_merge(a, i, b, err);
        } else {
            if (ap->aggs[i].distinct && !skip) {
                skip = df_malloc((size_t)(n ? n : 1));
                if (!skip) k = DF_OOM(err);
            }
            if (!k) k = update_raw(a, i, b, skip, err);
        }
    }
    df_free(skip);
    return k;
}

static df_errkind consume(agg_op *a, df_error *err) {
    for (;;) {
        df_batch *b = NULL;
        DF_TRY(df_op_next(a->child, &b, err));
        if (!b) break;
        df_errkind k = consume_batch(a, b, err);
        df_batch_release(b);
        if (k) return k;
    }
    df_op_close(a->child);
    a->child = NULL;
    const agg_priv *ap = a->base.node->priv;
    for (int32_t i = 0; i < ap->naggs; i++)
        if (ap->aggs[i].ordered) DF_TRY(feed_ordered(a, i, err));
    a->consumed = true;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static df_errkind out_vec(df_type *type, int64_t n, df_vec **v, df_error *err) {
    return df_vec_new(type, n, 0, v, err);
}

/* Marks rows NULL where cnt[g] == 0. */
static df_errkind nulls_where_empty(df_vec *v, const int64_t *cnt, int64_t from, int64_t n, df_error *err) {
    bool any = false;
    for (int64_t r = 0; r < n && !any; r++) any = cnt[from + r] == 0;
    if (!any) return DF_OK;
    DF_TRY(df_vec_ensure_validity(v, n, err));
    for (int64_t r = 0; r < n; r++)
        if (cnt[from + r] == 0) df_bit_clear(v->validity->data, r);
    return DF_OK;
}

static df_i128 pow10_i128(int e) {
    df_i128 r = 1;
    for (int i = 0; i < e && i < 38; i++) r *= 10;
    return r;
}

/* Final value column of aggregate i for groups [from, from + n). */
static df_errkind emit_final(agg_op *a, int32_t i, int64_t from, int64_t n, df_vec **out, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    const acc *s = &a->accs[i];
    /* The () row over no input asks for one group beyond the none the table holds. */
    if (d->acc == ACC_MORE)
        return df__aggm_emit(s->more, DF_MAX(ap->ngroup ? a->gt.ngroups : 1, from + n), from, n, out, err);
    df_vec *v;
    DF_TRY(out_vec(d->out_type, n, &v, err));
    df_errkind k = DF_OK;
    switch (d->acc) {
    case ACC_COUNT:
        df__memcpy(v->values->data, s->cnt + from, (size_t)n * 8);
        break;
    case ACC_SUM_I64: case ACC_SUM_U64: case ACC_SUM_F64:
        df__memcpy(v->values->data, (int64_t *)s->sum + from, (size_t)n * 8);
        k = nulls_where_empty(v, s->cnt, from, n, err);
        break;
    case ACC_SUM_DEC:
        df__memcpy(v->values->data, (df_i128 *)s->sum + from, (size_t)n * 16);
        k = nulls_where_empty(v, s->cnt, from, n, err);
        break;
    case ACC_AVG_F64:
        for (int64_t r = 0; r < n; r++) {
            int64_t c = s->cnt[from + r];
            DF_VEC_VALUES(v, double)[r] = c ? ((double *)s->sum)[from + r] / (double)c : 0;
        }
        k = nulls_where_empty(v, s->cnt, from, n, err);
        break;
    case ACC_AVG_DEC: {
        df_i128 mul = pow10_i128(d->out_type->scale - d->in_scale);
        df_i128 lim = pow10_i128(38) - 1;
        for (int64_t r = 0; r < n && !k; r++) {
            int64_t c = s->cnt[from + r];
            df_i128 x = ((df_i128 *)s->sum)[from + r], t = 0, u;
            /* x * mul / c without forming x * mul: (x / c) * mul + (x % c) * mul / c, truncating alike. */
            if (c && (__builtin_mul_overflow(x / c, mul, &t) || __builtin_mul_overflow(x % c, mul, &u) ||
                      __builtin_add_overflow(t, u / c, &t) || t > lim || t < -lim)) {
                k = df_error_set(err, DF_ERR_NUMERIC_OVERFLOW, "decimal overflow in avg");
                break;
            }
            DF_VEC_VALUES(v, df_i128)[r] = t;
        }
        if (!k) k = nulls_where_empty(v, s->cnt, from, n, err);
        break;
    }
    default: {
        int32_t w = val_width(d);
        /* min/max/first of untyped NULLs: a Null vector has no buffers, only its length. */
        if (d->out_type->id == DF_TYPE_NULL) break;
        if (d->out_type->id == DF_TYPE_BOOL) {
            memset(v->values->data, 0, (size_t)df_bitmap_bytes(n));
            for (int64_t r = 0; r < n; r++)
                if (s->vals[from + r]) df_bit_set(v->values->data, r);
        } else if (w) {
            df__memcpy(v->values->data, s->vals + from * w, (size_t)(n * w));
        } else {
            int64_t total = 0;
            for (int64_t r = 0; r < n; r++) total += s->cnt[from + r] ? s->slen[from + r] : 0;
            k = df_vec_reserve_data(v, total, err);
            int32_t *o = (int32_t *)(void *)v->values->data;
            int64_t pos = 0;
            o[0] = 0;
            for (int64_t r = 0; r < n && !k; r++) {
                if (s->cnt[from + r] && s->slen[from + r]) {
                    df__memcpy(v->data->data + pos, s->sdata + s->soff[from + r], (size_t)s->slen[from + r]);
                    pos += s->slen[from + r];
                }
                o[r + 1] = (int32_t)pos;
            }
        }
        if (!k) k = nulls_where_empty(v, s->cnt, from, n, err);
        for (int64_t r = 0; r < n && !k && s->nul; r++) {
            if (!s->nul[from + r]) continue;
            k = df_vec_ensure_validity(v, n, err);
            if (!k) df_bit_clear(v->validity->data, r);
        }
    }
    }
    if (k) {
        df_vec_release(v);
        return k;
    }
    df_vec_set_length(v, n);
    *out = v;
    return DF_OK;
}

/* Partial state columns of aggregate i (1 or 2 vectors). */
static df_errkind emit_partial(agg_op *a, int32_t i, int64_t from, int64_t n, df_vec **out, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    const agg_def *d = &ap->aggs[i];
    const acc *s = &a->accs[i];
    if (d->acc == ACC_AVG_F64 || d->acc == ACC_AVG_DEC) {
        df_vec *sum, *cnt;
        DF_TRY(out_vec(d->state_types[0], n, &sum, err));
        df_errkind k = out_vec(d->state_types[1], n, &cnt, err);
        if (k) {
            df_vec_release(sum);
            return k;
        }
        int32_t w = d->acc == ACC_AVG_F64 ? 8 : 16;
        df__memcpy(sum->values->data, (uint8_t *)s->sum + from * w, (size_t)(n * w));
        df__memcpy(cnt->values->data, s->cnt + from, (size_t)n * 8);
        k = nulls_where_empty(sum, s->cnt, from, n, err);
        df_vec_set_length(sum, n);
        df_vec_set_length(cnt, n);
        if (k) {
            df_vec_release(sum);
            df_vec_release(cnt);
            return k;
        }
        out[0] = sum;
        out[1] = cnt;
        return DF_OK;
    }
    return emit_final(a, i, from, n, &out[0], err);
}

/*
 * The row of the empty grouping set () over no input: NULL keys, its
 * grouping id, and every aggregate over no rows (count 0, the others NULL),
 * as a global aggregate gives.
 */
static df_errkind emit_empty_set(agg_op *a, df_batch **out, df_error *err) {
    const agg_priv *ap = a->base.node->priv;
    a->emitted_empty_set = true;
    DF_TRY(ensure_groups(a, 1, err));
    int32_t ncols = a->base.node->schema->nfields;
    df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    int32_t c = 0;
    for (; c < ap->ngroup - 1 && !k; c++) k = df_vec_new_nulls(ap->key_types[c], 1, &cols[c], err);
    if (!k) k = df_vec_new(ap->key_types[c], 1, 0, &cols[c], err);
    if (!k) {
        DF_VEC_VALUES(cols[c], uint64_t)[0] = ap->empty_set_id;
        df_vec_set_length(cols[c], 1);
        c++;
    }
    for (int32_t i = 0; i < ap->naggs && !k; i++) k = emit_final(a, i, 0, 1, &cols[c++], err);
    if (!k) k = df_batch_new(a->base.node->schema, cols, 1, out, err);
    if (k)
        for (int32_t j = 0; j < ncols; j++) df_vec_release(cols[j]);
    df_free(cols);
    return k;
}

static df_errkind agg_next(df_op *op, df_batch **out, df_error *err) {
    agg_op *a = (agg_op *)op;
    const agg_priv *ap = op->node->priv;
    *out = NULL;
    if (!a->consumed) DF_TRY(consume(a, err));
    int64_t total = ap->ngroup ? a->gt.ngroups : 1;
    if (total == 0 && ap->empty_set && !a->emitted_empty_set) return emit_empty_set(a, out, err);
    if (a->emitted >= total) return DF_OK;
    DF_TRY(ensure_groups(a, total, err));
    int64_t from = a->emitted, n = DF_MIN((int64_t)op->ctx->batch_size, total - from);
    int32_t ncols = op->node->schema->nfields;
    df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    int32_t c = 0;
    for (; c < ap->ngroup && !k; c++) k = df__gt_key_vec(&a->gt, c, from, from + n, &cols[c], err);
    for (int32_t i = 0; i < ap->naggs && !k; i++) {
        if (ap->mode == DF_AGG_MODE_PARTIAL) {
            k = emit_partial(a, i, from, n, &cols[c], err);
            c += ap->aggs[i].nstate;
        } else {
            k = emit_final(a, i, from, n, &cols[c++], err);
        }
    }
    if (!k) {
        k = df_batch_new(op->node->schema, cols, n, out, err);
    } else {
        for (int32_t j = 0; j < ncols; j++) df_vec_release(cols[j]);
    }
    df_free(cols);
    if (!k) a->emitted += n;
    return k;
}

static void agg_close(df_op *op) {
    agg_op *a = (agg_op *)op;
    const agg_priv *ap = op->node->priv;
    df_op_close(a->child);
    df__gt_free(&a->gt);
    if (a->gst)
        for (int32_t c = 0; c < ap->ngroup; c++) df__xstate_free(a->gst[c]);
    for (int32_t i = 0; i < ap->naggs; i++) {
        if (a->ast) df__xstate_free(a->ast[i]);
        if (a->fst) df__xstate_free(a->fst[i]);
        if (a->ast2) df__xstate_free(a->ast2[i]);
        if (a->accs) {
            acc *s = &a->accs[i];
            df_free(s->cnt);
            df_free(s->sum);
            df_free(s->vals);
            df_free(s->soff);
            df_free(s->slen);
            df_free(s->sdata);
            df_free(s->seen);
            df_free(s->nul);
            if (s->obuf) {
                int32_t oc = ORD_COLS + ap->aggs[i].order.nkeys;
                for (int64_t j = 0; j < s->nob * oc; j++) df_vec_release(s->obuf[j]);
                df_free(s->obuf);
            }
            if (s->ost) {
                for (int32_t j = 0; j < ap->aggs[i].order.nkeys; j++) df__xstate_free(s->ost[j]);
                df_free(s->ost);
            }
            if (s->has_dset) df__gt_free(&s->dset);
            df__aggm_free(s->more);
        }
    }
    df_free(a->gst);
    df_free(a->keys);
    df_free(a->ast);
    df_free(a->ast2);
    df_free(a->fst);
    df_free(a->accs);
    df_free(a->gids);
    df_free(a->hashes);
    df__exec_mem_release(op->ctx, a->reserved);
    df_free(a);
}

static const df_op_vt agg_op_vt = {agg_next, agg_close};

static df_errkind agg_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    const agg_priv *ap = n->priv;
    agg_op *a = df_calloc(1, sizeof *a);
    if (!a) return DF_OOM(err);
    df__op_init(&a->base, &agg_op_vt, n, ctx, p);
    a->base.parent = parent;
    int32_t na = ap->naggs ? ap->naggs : 1, ng = ap->ngroup ? ap->ngroup : 1;
    a->gst = df_calloc((size_t)ng, sizeof(df_xstate *));
    a->keys = df_calloc((size_t)ng, sizeof(df_vec *)); /* GROUP BY takes any number of keys */
    a->ast = df_calloc((size_t)na, sizeof(df_xstate *));
    a->fst = df_calloc((size_t)na, sizeof(df_xstate *));
    a->ast2 = df_calloc((size_t)na, sizeof(df_xstate *));
    a->accs = df_calloc((size_t)na, sizeof(acc));
    df_errkind k = (a->gst && a->keys && a->ast && a->fst && a->ast2 && a->accs) ? DF_OK : DF_OOM(err);
    if (!k) k = df__gt_init(&a->gt, ap->ngroup, ap->key_types, ctx, err);
    for (int32_t c = 0; c < ap->ngroup && !k && ap->group; c++) k = df__xstate_new(ap->group[c], &a->gst[c], err);
    for (int32_t i = 0; i < ap->naggs && !k; i++) {
        const agg_def *d = &ap->aggs[i];
        if (d->arg) k = df__xstate_new(d->arg, &a->ast[i], err);
        if (!k && d->filter) k = df__xstate_new(d->filter, &a->fst[i], err);
        if (!k && d->arg2) k = df__xstate_new(d->arg2, &a->ast2[i], err);
        if (!k && d->acc == ACC_MORE) k = df__aggm_new(d->la, ctx, &a->accs[i].more, err);
        if (!k && d->ordered) {
            acc *s = &a->accs[i];
            s->ost = df_calloc((size_t)d->order.nkeys, sizeof(df_xstate *));
            if (!s->ost) k = DF_OOM(err);
            for (int32_t j = 0; j < d->order.nkeys && !k; j++) k = df__xstate_new(d->order.progs[j], &s->ost[j], err);
        }
        if (!k && d->distinct && d->arg) {
            df_type *types[2] = {df_type_int32(), d->val_type};
            k = df__gt_init(&a->accs[i].dset, 2, types, ctx, err);
            if (!k) a->accs[i].has_dset = true;
        }
    }
    if (!k) k = df_pnode_open(n->inputs[0], ctx, p, &a->base, &a->child, err);
    if (k) {
        agg_close(&a->base);
        return k;
    }
    *out = &a->base;
    return DF_OK;
}

static void agg_destroy(df_pnode *n) {
    agg_priv *ap = n->priv;
    if (!ap) return;
    if (ap->group)
        for (int32_t c = 0; c < ap->ngroup; c++) df__xprog_free(ap->group[c]);
    if (ap->key_types)
        for (int32_t c = 0; c < ap->ngroup; c++) df_type_release(ap->key_types[c]);
    for (int32_t i = 0; i < ap->naggs; i++) {
        agg_def *d = &ap->aggs[i];
        df__xprog_free(d->arg);
        df__xprog_free(d->arg2);
        df__xprog_free(d->filter);
        df__sortspec_clear(&d->order);
        df_type_release(d->val_type);
        df_type_release(d->out_type);
        for (int32_t s = 0; s < d->nstate; s++) df_type_release(d->state_types[s]);
    }
    df_free(ap->group);
    df_free(ap->key_types);
    df_free(ap->aggs);
    df_free(ap);
}

static df_errkind agg_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const agg_priv *ap = n->priv;
    const char *mode = ap->mode == DF_AGG_MODE_PARTIAL ? "Partial" : ap->mode == DF_AGG_MODE_FINAL ? "Final" : "Single";
    return df_buf_printf(out, err, " mode=%s groups=%d aggregates=%d", mode, ap->ngroup, ap->naggs);
}

static const df_pnode_vt agg_vt = {"AggregateExec", agg_open, agg_destroy, agg_explain};

/* ------------------------------------------------------------------------ */
/* Construction                                                              */

static df_errkind define(const df_agg *la, agg_def *d, df_error *err) {
    d->distinct = la->distinct;
    d->out_type = df_type_retain(la->type);
    d->val_type = df_type_retain(la->arg ? la->arg->type : df_type_int64());
    d->count_star = la->fn == DF_AGG_COUNT && !la->arg;
    const df_type *t = d->val_type;
    int p, s;
    switch (la->fn) {
    case DF_AGG_COUNT: d->acc = ACC_COUNT; break;
    case DF_AGG_SUM:
        if (df_type_is_signed_integer(t) || t->id == DF_TYPE_DURATION) d->acc = ACC_SUM_I64; /* durations are int64 */
        else if (df_type_is_unsigned_integer(t)) d->acc = ACC_SUM_U64;
        else if (df_type_is_floating(t)) d->acc = ACC_SUM_F64;
        else if (t->id == DF_TYPE_DECIMAL128) d->acc = ACC_SUM_DEC;
        else return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "sum over this type is not supported");
        break;
    case DF_AGG_AVG:
        if (df_type_is_integer(t) || df_type_is_floating(t)) d->acc = ACC_AVG_F64;
        else if (t->id == DF_TYPE_DECIMAL128) d->acc = ACC_AVG_DEC;
        else return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "avg over this type is not supported");
        break;
    case DF_AGG_MIN: d->acc = ACC_MIN; break;
    case DF_AGG_MAX: d->acc = ACC_MAX; break;
    case DF_AGG_FIRST: d->acc = ACC_FIRST; break;
    case DF_AGG_BOOL_AND: d->acc = ACC_BOOL_AND; break;
    case DF_AGG_BOOL_OR: d->acc = ACC_BOOL_OR; break;
    case DF_AGG_LAST: d->acc = ACC_LAST; break;
    default:
        if (!df_agg_fn_single_step(la->fn)) return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "aggregate not supported");
        if (la->distinct && la->arg2 && la->fn >= DF_AGG_COVAR_SAMP && la->fn <= DF_AGG_REGR_SXY)
            return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "DISTINCT is not supported for %s", df_agg_fn_name(la->fn));
        d->acc = ACC_MORE;
        d->la = la;
        break;
    }
    d->respect_nulls = (d->acc == ACC_FIRST || d->acc == ACC_LAST) && !la->ignore_nulls;
    if (la->norder > 0 && df_agg_fn_order_sensitive(la->fn)) {
        DF_TRY(df__sortspec_init(&d->order, la->order, la->norder, err));
        d->ordered = true;
    }
    if (d->acc >= ACC_MIN && df_type_is_nested(t))
        return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "min/max over nested types is not supported");
    if (df__sqlt_decimal_ps(t, &p, &s)) d->in_scale = s;
    /* Partial state columns. */
    if (d->acc == ACC_AVG_F64) {
        d->nstate = 2;
        d->state_types[0] = df_type_float64();
        d->state_types[1] = df_type_int64();
    } else if (d->acc == ACC_AVG_DEC) {
        d->nstate = 2;
        d->state_types[0] = df_type_decimal(38, s);
        d->state_types[1] = df_type_int64();
        if (!d->state_types[0]) return DF_OOM(err);
    } else {
        d->nstate = 1;
        d->state_types[0] = df_type_retain(d->out_type);
    }
    return DF_OK;
}

static df_errkind state_schema(const df_lnode *agg, const agg_priv *ap, df_schema **out, df_error *err) {
    int32_t n = ap->ngroup;
    for (int32_t i = 0; i < ap->naggs; i++) n += ap->aggs[i].nstate;
    df_schema *s;
    DF_TRY(df_schema_alloc(n, &s, err));
    df_errkind k = DF_OK;
    int32_t c = 0;
    for (; c < ap->ngroup && !k; c++)
        k = df_field_init(&s->fields[c], agg->cols[c].name, agg->cols[c].type, true, err);
    for (int32_t i = 0; i < ap->naggs && !k; i++) {
        for (int32_t j = 0; j < ap->aggs[i].nstate && !k; j++) {
            char name[512];
            snprintf(name, sizeof name, "%s[%s]", agg->u.agg.aggs[i].name, j ? "count" : "state");
            k = df_field_init(&s->fields[c++], name, ap->aggs[i].state_types[j], true, err);
        }
    }
    if (k) {
        df_schema_release(s);
        return k;
    }
    *out = s;
    return DF_OK;
}

df_errkind df__op_aggregate_new(df_pnode *input, const df_lnode *agg, df_agg_mode mode, df_schema *schema,
                               df_pnode **out, df_error *err) {
    *out = NULL;
    agg_priv *ap = df_calloc(1, sizeof *ap);
    df_errkind k = ap ? DF_OK : DF_OOM(err);
    int32_t ng = agg->u.agg.ngroup, na = agg->u.agg.naggs;
    if (!k) {
        ap->mode = mode;
        ap->ngroup = ng;
        ap->naggs = na;
        ap->empty_set = agg->u.agg.has_empty_set && mode != DF_AGG_MODE_PARTIAL && ng > 0;
        ap->empty_set_id = agg->u.agg.empty_set_id;
        ap->key_types = df_calloc((size_t)(ng ? ng : 1), sizeof(df_type *));
        ap->aggs = df_calloc((size_t)(na ? na : 1), sizeof(agg_def));
        if (mode != DF_AGG_MODE_FINAL) ap->group = df_calloc((size_t)(ng ? ng : 1), sizeof(df_xprog *));
        if (!ap->key_types || !ap->aggs || (mode != DF_AGG_MODE_FINAL && !ap->group)) k = DF_OOM(err);
    }
    for (int32_t c = 0; c < ng && !k; c++) {
        ap->key_types[c] = df_type_retain(agg->cols[c].type);
        if (ap->group) k = df__xprog_compile(agg->u.agg.group[c], &ap->group[c], err);
    }
    int32_t state_col = ng;
    for (int32_t i = 0; i < na && !k; i++) {
        const df_agg *la = &agg->u.agg.aggs[i];
        agg_def *d = &ap->aggs[i];
        k = define(la, d, err);
        if (!k && mode != DF_AGG_MODE_FINAL && la->arg) k = df__xprog_compile(la->arg, &d->arg, err);
        if (!k && mode != DF_AGG_MODE_FINAL && la->filter) k = df__xprog_compile(la->filter, &d->filter, err);
        if (!k && d->acc == ACC_MORE && la->arg2 && la->fn >= DF_AGG_COVAR_SAMP && la->fn <= DF_AGG_REGR_SXY)
            k = df__xprog_compile(la->arg2, &d->arg2, err);
        if (!k && d->acc == ACC_MORE && mode != DF_AGG_MODE_SINGLE)
            k = df_error_set(err, DF_ERR_INTERNAL, "%s runs in a single aggregation step", df_agg_fn_name(la->fn));
        if (!k && mode != DF_AGG_MODE_SINGLE && df_agg_single_step(la) && d->acc != ACC_MORE)
            k = df_error_set(err, DF_ERR_INTERNAL, "%s runs in a single aggregation step", la->name);
        if (!k && mode == DF_AGG_MODE_FINAL && d->distinct)
            k = df_error_set(err, DF_ERR_INTERNAL, "DISTINCT aggregates cannot be merged from partial states");
        d->state_col = state_col;
        state_col += d->nstate;
        if (!k && mode == DF_AGG_MODE_FINAL && d->acc >= ACC_MIN) {
            /* Partial min/max/... states carry values of the result type. */
            df_type_release(d->val_type);
            d->val_type = df_type_retain(d->out_type);
        }
    }
    df_schema *own = NULL;
    if (!k && mode == DF_AGG_MODE_PARTIAL) k = state_schema(agg, ap, &own, err);
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(&agg_vt, own ? own : schema, mode == DF_AGG_MODE_PARTIAL ? input->partitions : 1, 1, &n, err);
    df_schema_release(own);
    if (k) {
        if (ap) {
            df_pnode tmp = {.priv = ap};
            agg_destroy(&tmp);
        }
        df__pnode_free(input);
        return k;
    }
    n->inputs[0] = input;
    n->priv = ap;
    *out = n;
    return DF_OK;
}
