/*
 * Single-step aggregates: bit_and/or/xor, variance and standard deviation,
 * covariance, correlation and the regr_* family, median, percentile_cont
 * and string_agg.  AggregateExec (op_aggregate.c) owns one df__aggm per
 * such aggregate and feeds it group ids and argument vectors; these
 * aggregates never split into partial and final steps (the planner gives
 * them one aggregation over all input).
 *
 * Statistics use Welford's online updates per group (count, means, second
 * moments and the co-moment), the numerically stable form DataFusion
 * uses, with its NULL rules: var_samp/stddev/covar_samp/corr need two
 * values, the population forms one; corr and regr_slope/intercept/r2 are
 * NULL when a variance is zero.  Holistic aggregates (median, percentile,
 * string_agg) append (group, value) pairs to flat arrays while reading and
 * compute every group's result once, at the first emit: a counting sort
 * by group, then a per-group sort of the values (median, percentile) or a
 * concatenation in input order (string_agg).  Median of integers takes the
 * truncated midpoint of the two middle values (without overflow);
 * percentiles interpolate linearly between the two nearest ranks.
 */
#include <math.h>
#include <stdlib.h>

#include "exec/agg_more.h"
#include "sql/sql_types.h"

typedef enum more_kind { MK_BIT, MK_MOMENTS, MK_COMOMENTS, MK_COLLECT, MK_STRING, MK_HLL } more_kind;

/* HyperLogLog: 2^14 one-byte registers per group (allocated at the group's first value). */
#define HLL_P 14
#define HLL_M (1 << HLL_P)
#define HLL_Q (64 - HLL_P)


struct df__aggm {
    df_agg_fn fn;           /* which aggregate */
    more_kind kind;         /* state layout */
    df_type *in_type;       /* argument type (reference) */
    df_type *out_type;      /* result type (reference) */
    df_exec_ctx *ctx;       /* memory accounting */
    int64_t reserved;       /* bytes accounted */
    int64_t ngroups;        /* groups the per-group arrays hold */
    int64_t *cnt;           /* per group: values fed */
    double *st;             /* per group: nst doubles of moment state */
    int32_t nst;            /* doubles per group in st */
    uint64_t *bits;         /* MK_BIT: per group running value */
    uint8_t **hll;          /* MK_HLL: per group registers or NULL */
    /* MK_COLLECT / MK_STRING: appended pairs */
    int32_t *pg;            /* group of each pair */
    uint8_t *pv;            /* MK_COLLECT: value bytes (width each) */
    int32_t width;          /* MK_COLLECT: value width */
    int64_t *poff;          /* MK_STRING: pair i's bytes are sdata[poff[i] .. poff[i + 1]) */
    uint8_t *sdata;         /* MK_STRING: bytes */
    int64_t sdlen, sdcap;   /* MK_STRING: bytes used / allocated */
    int64_t npairs, pcap;   /* pairs used / allocated */
    double fraction;        /* percentile in [0, 1] */
    char *delim;            /* string_agg delimiter (owned, NUL-terminated) */
    int32_t delim_len;
    df_vec *result;         /* holistic: results of all groups, built at the first emit */
};

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */

static df_errkind account(df__aggm *m, int64_t bytes, df_error *err) {
    if (bytes <= 0 || !m->ctx) return DF_OK;
    DF_TRY(df__exec_mem_reserve(m->ctx, bytes, err));
    m->reserved += bytes;
    return DF_OK;
}

static df_errkind grow(void **p, int64_t old, int64_t n, size_t w, df_error *err) {
    void *q = df_realloc(*p, (size_t)n * w);
    if (!q) return DF_OOM(err);
    memset((uint8_t *)q + (size_t)old * w, 0, (size_t)(n - old) * w);
    *p = q;
    return DF_OK;
}

/* Per-group arrays cover groups [0, need). */
static df_errkind ensure_groups(df__aggm *m, int64_t need, df_error *err) {
    if (need <= m->ngroups) return DF_OK;
    int64_t n = m->ngroups ? m->ngroups : 256;
    while (n < need) n *= 2;
    DF_TRY(grow((void **)&m->cnt, m->ngroups, n, sizeof(int64_t), err));
    int64_t per = 8;
    if (m->nst) {
        DF_TRY(grow((void **)&m->st, m->ngroups * m->nst, n * m->nst, sizeof(double), err));
        per += 8 * m->nst;
    }
    if (m->kind == MK_BIT) {
        DF_TRY(grow((void **)&m->bits, m->ngroups, n, sizeof(uint64_t), err));
        per += 8;
    }
    if (m->kind == MK_HLL) {
        DF_TRY(grow((void **)&m->hll, m->ngroups, n, sizeof(uint8_t *), err));
        per += 8;
    }
    DF_TRY(account(m, per * (n - m->ngroups), err));
    m->ngroups = n;
    return DF_OK;
}

/* Pair arrays hold `need` pairs. */
static df_errkind ensure_pairs(df__aggm *m, int64_t need, df_error *err) {
    if (need <= m->pcap) return DF_OK;
    if (need > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2^31 values collected");
    int64_t n = m->pcap ? m->pcap : 1024;
    while (n < need) n *= 2;
    DF_TRY(grow((void **)&m->pg, m->pcap, n, sizeof(int32_t), err));
    int64_t per = 4;
    if (m->kind == MK_COLLECT) {
        DF_TRY(grow((void **)&m->pv, m->pcap, n, (size_t)m->width, err));
        per += m->width;
    } else {
        DF_TRY(grow((void **)&m->poff, m->pcap + 1, n + 1, sizeof(int64_t), err));
        per += 8;
    }
    DF_TRY(account(m, per * (n - m->pcap), err));
    m->pcap = n;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Construction                                                              */

df_errkind df__aggm_new(const df_agg *la, df_exec_ctx *ctx, df__aggm **out, df_error *err) {
    *out = NULL;
    df__aggm *m = df_calloc(1, sizeof *m);
    if (!m) return DF_OOM(err);
    m->fn = la->fn;
    m->ctx = ctx;
    m->in_type = df_type_retain(la->arg->type);
    m->out_type = df_type_retain(la->type);
    df_errkind k = DF_OK;
    switch (la->fn) {
    case DF_AGG_BIT_AND: case DF_AGG_BIT_OR: case DF_AGG_BIT_XOR: m->kind = MK_BIT; break;
    case DF_AGG_APPROX_DISTINCT: m->kind = MK_HLL; break;
    case DF_AGG_VAR_SAMP: case DF_AGG_VAR_POP: case DF_AGG_STDDEV_SAMP: case DF_AGG_STDDEV_POP:
        m->kind = MK_MOMENTS;
        m->nst = 2; /* mean, m2 */
        break;
    case DF_AGG_MEDIAN:
    case DF_AGG_PERCENTILE:
        m->kind = MK_COLLECT;
        m->width = df_type_width(m->in_type);
        if (m->width <= 0 || m->width > 16) k = df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "%s over this type is not supported", df_agg_fn_name(la->fn));
        if (la->fn == DF_AGG_PERCENTILE) m->fraction = la->arg2->lit->v.f64;
        break;
    case DF_AGG_STRING_AGG: {
        m->kind = MK_STRING;
        const df_scalar *d = la->arg2->lit;
        int64_t n = d->is_null ? 0 : d->v.bytes.len;
        m->delim = df_malloc((size_t)n + 1);
        if (!m->delim) {
            k = DF_OOM(err);
            break;
        }
        if (n) df__memcpy(m->delim, d->v.bytes.ptr, (size_t)n);
        m->delim[n] = '\0';
        m->delim_len = (int32_t)n;
        break;
    }
    default:
        if (la->fn >= DF_AGG_COVAR_SAMP && la->fn <= DF_AGG_REGR_SXY) {
            m->kind = MK_COMOMENTS;
            m->nst = 5; /* mean_y, mean_x, m2_y, m2_x, c_xy */
        } else {
            k = df_error_set(err, DF_ERR_INTERNAL, "aggregate %s has no single-step accumulator", df_agg_fn_name(la->fn));
        }
    }
    if (k) {
        df__aggm_free(m);
        return k;
    }
    *out = m;
    return DF_OK;
}

void df__aggm_free(df__aggm *m) {
    if (!m) return;
    df_type_release(m->in_type);
    df_type_release(m->out_type);
    df_free(m->cnt);
    df_free(m->st);
    df_free(m->bits);
    if (m->hll)
        for (int64_t g = 0; g < m->ngroups; g++) df_free(m->hll[g]);
    df_free(m->hll);
    df_free(m->pg);
    df_free(m->pv);
    df_free(m->poff);
    df_free(m->sdata);
    df_free(m->delim);
    df_vec_release(m->result);
    if (m->ctx && m->reserved) df__exec_mem_release(m->ctx, m->reserved);
    df_free(m);
}

/* ------------------------------------------------------------------------ */
/* Updates                                                                   */

static inline bool row_fed(const df_vec *v, const df_vec *f, const uint8_t *skip, int64_t i) {
    if (skip && skip[i]) return false;
    if (v->type->id == DF_TYPE_NULL || !df_vec_is_valid(v, i)) return false;
    return !f || (df_vec_is_valid(f, i) && df_vec_bool(f, i));
}

/* Integer value i of v as 64 bits (sign-extended for signed types). */
static inline uint64_t int_bits(const df_vec *v, int64_t i) {
    switch (v->type->id) {
    case DF_TYPE_INT8: return (uint64_t)(int64_t)DF_VEC_VALUES(v, int8_t)[i];
    case DF_TYPE_INT16: return (uint64_t)(int64_t)DF_VEC_VALUES(v, int16_t)[i];
    case DF_TYPE_INT32: return (uint64_t)(int64_t)DF_VEC_VALUES(v, int32_t)[i];
    case DF_TYPE_UINT8: return DF_VEC_VALUES(v, uint8_t)[i];
    case DF_TYPE_UINT16: return DF_VEC_VALUES(v, uint16_t)[i];
    case DF_TYPE_UINT32: return DF_VEC_VALUES(v, uint32_t)[i];
    default: return DF_VEC_VALUES(v, uint64_t)[i];
    }
}

static void update_bits(df__aggm *m, const int32_t *g, int64_t n, const df_vec *v, const df_vec *f,
                        const uint8_t *skip) {
    for (int64_t i = 0; i < n; i++) {
        if (!row_fed(v, f, skip, i)) continue;
        int32_t gi = g[i];
        uint64_t x = int_bits(v, i);
        uint64_t *b = &m->bits[gi];
        if (!m->cnt[gi]) *b = x;
        else if (m->fn == DF_AGG_BIT_AND) *b &= x;
        else if (m->fn == DF_AGG_BIT_OR) *b |= x;
        else *b ^= x;
        m->cnt[gi]++;
    }
}

static void update_moments(df__aggm *m, const int32_t *g, int64_t n, const df_vec *v, const df_vec *f,
                           const uint8_t *skip) {
    const double *x = DF_VEC_VALUES(v, double);
    for (int64_t i = 0; i < n; i++) {
        if (!row_fed(v, f, skip, i)) continue;
        int32_t gi = g[i];
        double *s = m->st + (int64_t)gi * 2;
        int64_t c = ++m->cnt[gi];
        double delta = x[i] - s[0];
        s[0] += delta / (double)c;
        s[1] += delta * (x[i] - s[0]);
    }
}

static void update_comoments(df__aggm *m, const int32_t *g, int64_t n, const df_vec *vy, const df_vec *vx,
                             const df_vec *f, const uint8_t *skip) {
    const double *y = DF_VEC_VALUES(vy, double), *x = DF_VEC_VALUES(vx, double);
    for (int64_t i = 0; i < n; i++) {
        if (!row_fed(vy, f, skip, i) || vx->type->id == DF_TYPE_NULL || !df_vec_is_valid(vx, i)) continue;
        int32_t gi = g[i];
        double *s = m->st + (int64_t)gi * 5;
        int64_t c = ++m->cnt[gi];
        double dy = y[i] - s[0], dx = x[i] - s[1];
        s[0] += dy / (double)c;
        s[1] += dx / (double)c;
        s[2] += dy * (y[i] - s[0]);
        s[3] += dx * (x[i] - s[1]);
        s[4] += dx * (y[i] - s[0]);
    }
}

static df_errkind update_collect(df__aggm *m, const int32_t *g, int64_t n, const df_vec *v, const df_vec *f,
                                 const uint8_t *skip, df_error *err) {
    DF_TRY(ensure_pairs(m, m->npairs + n, err));
    int32_t w = m->width;
    const uint8_t *src = v->values->data + v->offset * w;
    for (int64_t i = 0; i < n; i++) {
        if (!row_fed(v, f, skip, i)) continue;
        m->pg[m->npairs] = g[i];
        df__memcpy(m->pv + m->npairs * w, src + i * w, (size_t)w);
        m->npairs++;
        m->cnt[g[i]]++;
    }
    return DF_OK;
}

static df_errkind update_strings(df__aggm *m, const int32_t *g, int64_t n, const df_vec *v, const df_vec *f,
                                 const uint8_t *skip, df_error *err) {
    DF_TRY(ensure_pairs(m, m->npairs + n, err));
    for (int64_t i = 0; i < n; i++) {
        if (!row_fed(v, f, skip, i)) continue;
        int32_t len;
        const uint8_t *p = df_vec_bytes(v, i, &len);
        if (m->sdlen + len > m->sdcap) {
            int64_t old_cap = m->sdcap;
            DF_TRY(DF_ARRAY_RESERVE(m->sdata, m->sdcap, m->sdlen + len, 4096, err));
            DF_TRY(account(m, m->sdcap - old_cap, err));
        }
        if (len) df__memcpy(m->sdata + m->sdlen, p, (size_t)len);
        m->poff[m->npairs] = m->sdlen;
        m->sdlen += len;
        m->poff[m->npairs + 1] = m->sdlen;
        m->pg[m->npairs] = g[i];
        m->npairs++;
        m->cnt[g[i]]++;
    }
    return DF_OK;
}

/*
 * HyperLogLog update: the low HLL_P bits of a 64-bit hash choose the
 * register, which keeps the maximum of 1 + the trailing zeros of the
 * remaining bits.  The value hash is mixed once more (splitmix64's
 * finalizer) so every bit is well distributed.
 */
static df_errkind update_hll(df__aggm *m, const int32_t *g, int64_t n, const df_vec *v, const df_vec *f,
                             const uint8_t *skip, df_error *err) {
    for (int64_t i = 0; i < n; i++) {
        if (!row_fed(v, f, skip, i)) continue;
        int32_t gi = g[i];
        if (!m->hll[gi]) {
            DF_TRY(account(m, HLL_M, err));
            m->hll[gi] = df_calloc(HLL_M, 1);
            if (!m->hll[gi]) return DF_OOM(err);
        }
        uint64_t h = df__hash_value(v, i);
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebULL;
        h ^= h >> 31;
        uint32_t idx = (uint32_t)(h & (HLL_M - 1));
        uint8_t rho = (uint8_t)(__builtin_ctzll((h >> HLL_P) | (1ULL << HLL_Q)) + 1);
        if (rho > m->hll[gi][idx]) m->hll[gi][idx] = rho;
        m->cnt[gi]++;
    }
    return DF_OK;
}

/* Ertl's estimator ("New cardinality estimation algorithms for HyperLogLog sketches", 2017). */
static double hll_sigma(double x) {
    if (x == 1) return INFINITY;
    double y = 1, z = x;
    for (int it = 0; it < 1000; it++) {
        x *= x;
        double zp = z;
        z += x * y;
        y += y;
        if (zp == z) break;
    }
    return z;
}

static double hll_tau(double x) {
    if (x == 0 || x == 1) return 0;
    double y = 1, z = 1 - x;
    for (int it = 0; it < 1000; it++) {
        x = sqrt(x);
        double zp = z;
        y *= 0.5;
        z -= (1 - x) * (1 - x) * y;
        if (zp == z) break;
    }
    return z / 3;
}

static uint64_t hll_count(const uint8_t *r) {
    if (!r) return 0;
    int64_t hist[HLL_Q + 2] = {0};
    for (int32_t i = 0; i < HLL_M; i++) hist[r[i]]++;
    double mm = HLL_M;
    double z = mm * hll_tau((mm - (double)hist[HLL_Q + 1]) / mm);
    for (int32_t k = HLL_Q; k >= 1; k--) {
        z += (double)hist[k];
        z *= 0.5;
    }
    z += mm * hll_sigma((double)hist[0] / mm);
    return (uint64_t)llround(0.5 / log(2) * mm * mm / z);
}

df_errkind df__aggm_update(df__aggm *m, const int32_t *gids, int64_t n, int64_t ngroups, const df_vec *v,
                           const df_vec *v2, const df_vec *f, const uint8_t *skip, df_error *err) {
    if (m->result) return df_error_set(err, DF_ERR_INTERNAL, "aggregate updated after its results were built");
    DF_TRY(ensure_groups(m, ngroups, err));
    switch (m->kind) {
    case MK_BIT: update_bits(m, gids, n, v, f, skip); return DF_OK;
    case MK_MOMENTS: update_moments(m, gids, n, v, f, skip); return DF_OK;
    case MK_COMOMENTS: update_comoments(m, gids, n, v, v2, f, skip); return DF_OK;
    case MK_COLLECT: return update_collect(m, gids, n, v, f, skip, err);
    case MK_STRING: return update_strings(m, gids, n, v, f, skip, err);
    case MK_HLL: return update_hll(m, gids, n, v, f, skip, err);
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Results                                                                   */

/* The statistic of one group, or false for NULL. */
static bool moment_value(const df__aggm *m, int64_t g, double *out) {
    int64_t c = m->cnt[g];
    const double *s = m->st + g * m->nst;
    double n = (double)c;
    switch (m->fn) {
    case DF_AGG_VAR_SAMP: *out = s[1] / (n - 1); return c > 1;
    case DF_AGG_VAR_POP: *out = s[1] / n; return c > 0;
    case DF_AGG_STDDEV_SAMP: *out = sqrt(s[1] / (n - 1)); return c > 1;
    case DF_AGG_STDDEV_POP: *out = sqrt(s[1] / n); return c > 0;
    default: break;
    }
    /* Co-moments: s = mean_y, mean_x, m2_y, m2_x, c_xy. */
    double my = s[0], mx = s[1], vy = s[2] / n, vx = s[3] / n, cov = s[4] / n;
    switch (m->fn) {
    case DF_AGG_COVAR_SAMP: *out = s[4] / (n - 1); return c > 1;
    case DF_AGG_COVAR_POP: *out = cov; return c > 0;
    case DF_AGG_CORR:
        if (c > 0 && isnan(mx) && isnan(my)) {
            *out = NAN;
            return true;
        }
        if (c < 2 || isnan(mx) || isnan(my)) return false;
        if (sqrt(vx) == 0 || sqrt(vy) == 0) return false;
        *out = cov / sqrt(vy) / sqrt(vx);
        return true;
    case DF_AGG_REGR_SLOPE: *out = cov / vx; return c > 1 && vx != 0;
    case DF_AGG_REGR_INTERCEPT: *out = my - cov / vx * mx; return c > 1 && vx != 0;
    case DF_AGG_REGR_R2: *out = cov * cov / (vx * vy); return c > 1 && vx != 0 && vy != 0;
    case DF_AGG_REGR_AVGX: *out = mx; return c > 0;
    case DF_AGG_REGR_AVGY: *out = my; return c > 0;
    case DF_AGG_REGR_SXX: *out = s[3]; return c > 0;
    case DF_AGG_REGR_SYY: *out = s[2]; return c > 0;
    case DF_AGG_REGR_SXY: *out = s[4]; return c > 0;
    default: return false;
    }
}

/* Orders values of the collected type (NaN last); qsort has no context argument, hence the thread-local. */
static _Thread_local const df__aggm *sort_ctx;
static int cmp_collected(const void *pa, const void *pb) {
    const uint8_t *a = pa, *b = pb;
    switch (sort_ctx->in_type->id) {
#define C(T)                                                                   \
    {                                                                          \
        T x, y;                                                                \
        df__memcpy(&x, a, sizeof x);                                           \
        df__memcpy(&y, b, sizeof y);                                           \
        return x < y ? -1 : x > y;                                             \
    }
    case DF_TYPE_INT8: C(int8_t)
    case DF_TYPE_INT16: C(int16_t)
    case DF_TYPE_INT32: C(int32_t)
    case DF_TYPE_INT64: C(int64_t)
    case DF_TYPE_UINT8: C(uint8_t)
    case DF_TYPE_UINT16: C(uint16_t)
    case DF_TYPE_UINT32: C(uint32_t)
    case DF_TYPE_UINT64: C(uint64_t)
    case DF_TYPE_DECIMAL128: C(df_i128)
#undef C
    case DF_TYPE_FLOAT32: {
        float x, y;
        df__memcpy(&x, a, 4);
        df__memcpy(&y, b, 4);
        if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
        return x < y ? -1 : x > y;
    }
    default: {
        double x, y;
        df__memcpy(&x, a, 8);
        df__memcpy(&y, b, 8);
        if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
        return x < y ? -1 : x > y;
    }
    }
}

/* A collected value as a double. */
static double as_double(const df__aggm *m, const uint8_t *p) {
    switch (m->in_type->id) {
#define D(T)                                                                   \
    {                                                                          \
        T x;                                                                   \
        df__memcpy(&x, p, sizeof x);                                           \
        return (double)x;                                                      \
    }
    case DF_TYPE_INT8: D(int8_t)
    case DF_TYPE_INT16: D(int16_t)
    case DF_TYPE_INT32: D(int32_t)
    case DF_TYPE_INT64: D(int64_t)
    case DF_TYPE_UINT8: D(uint8_t)
    case DF_TYPE_UINT16: D(uint16_t)
    case DF_TYPE_UINT32: D(uint32_t)
    case DF_TYPE_UINT64: D(uint64_t)
    case DF_TYPE_FLOAT32: D(float)
#undef D
    case DF_TYPE_DECIMAL128: {
        df_i128 x;
        df__memcpy(&x, p, 16);
        int pr, sc;
        double d = (double)x;
        if (df__sqlt_decimal_ps(m->in_type, &pr, &sc))
            for (int i = 0; i < sc; i++) d /= 10;
        return d;
    }
    default: {
        double x;
        df__memcpy(&x, p, 8);
        return x;
    }
    }
}

/* Midpoint of two sorted neighbours a <= b, truncated toward zero for integers, without overflow. */
static void midpoint(const df__aggm *m, const uint8_t *a, const uint8_t *b, uint8_t *out) {
    switch (m->in_type->id) {
#define SMID(T)                                                                \
    {                                                                          \
        T x, y, r;                                                             \
        df__memcpy(&x, a, sizeof x);                                           \
        df__memcpy(&y, b, sizeof y);                                           \
        if (__builtin_add_overflow(x, y, &r))                                  \
            r = (T)(x / 2 + y / 2 + (x % 2 + y % 2) / 2);                      \
        else                                                                   \
            r = (T)(r / 2);                                                    \
        df__memcpy(out, &r, sizeof r);                                         \
        return;                                                                \
    }
    case DF_TYPE_INT8: SMID(int8_t)
    case DF_TYPE_INT16: SMID(int16_t)
    case DF_TYPE_INT32: SMID(int32_t)
    case DF_TYPE_INT64: SMID(int64_t)
    case DF_TYPE_UINT8: SMID(uint8_t)
    case DF_TYPE_UINT16: SMID(uint16_t)
    case DF_TYPE_UINT32: SMID(uint32_t)
    case DF_TYPE_UINT64: SMID(uint64_t)
    case DF_TYPE_DECIMAL128: SMID(df_i128)
#undef SMID
    case DF_TYPE_FLOAT32: {
        float x, y, r;
        df__memcpy(&x, a, 4);
        df__memcpy(&y, b, 4);
        r = (x + y) / 2;
        df__memcpy(out, &r, 4);
        return;
    }
    default: {
        double x, y, r;
        df__memcpy(&x, a, 8);
        df__memcpy(&y, b, 8);
        r = (x + y) / 2;
        df__memcpy(out, &r, 8);
        return;
    }
    }
}

/* Writes a double into row r of an integer or float result vector. */
static void put_double(df_vec *v, int64_t r, double d) {
    switch (v->type->id) {
    case DF_TYPE_INT8: DF_VEC_VALUES(v, int8_t)[r] = (int8_t)d; break;
    case DF_TYPE_INT16: DF_VEC_VALUES(v, int16_t)[r] = (int16_t)d; break;
    case DF_TYPE_INT32: DF_VEC_VALUES(v, int32_t)[r] = (int32_t)d; break;
    case DF_TYPE_INT64: DF_VEC_VALUES(v, int64_t)[r] = (int64_t)d; break;
    case DF_TYPE_UINT8: DF_VEC_VALUES(v, uint8_t)[r] = (uint8_t)d; break;
    case DF_TYPE_UINT16: DF_VEC_VALUES(v, uint16_t)[r] = (uint16_t)d; break;
    case DF_TYPE_UINT32: DF_VEC_VALUES(v, uint32_t)[r] = (uint32_t)d; break;
    case DF_TYPE_UINT64: DF_VEC_VALUES(v, uint64_t)[r] = (uint64_t)d; break;
    case DF_TYPE_FLOAT32: DF_VEC_VALUES(v, float)[r] = (float)d; break;
    default: DF_VEC_VALUES(v, double)[r] = d; break;
    }
}

/* Pair order grouped by group id, input order within a group (counting sort); start[g] = first position. */
static df_errkind group_pairs(const df__aggm *m, int64_t ng, int32_t **order_out, int64_t **start_out, df_error *err) {
    int64_t *start = df_calloc((size_t)ng + 1, sizeof(int64_t));
    int32_t *order = df_malloc((size_t)(m->npairs ? m->npairs : 1) * sizeof(int32_t));
    if (!start || !order) {
        df_free(start);
        df_free(order);
        return DF_OOM(err);
    }
    for (int64_t i = 0; i < m->npairs; i++) start[m->pg[i] + 1]++;
    for (int64_t g = 0; g < ng; g++) start[g + 1] += start[g];
    int64_t *fill = df_malloc((size_t)(ng ? ng : 1) * sizeof(int64_t));
    if (!fill) {
        df_free(start);
        df_free(order);
        return DF_OOM(err);
    }
    df__memcpy(fill, start, (size_t)ng * sizeof(int64_t));
    for (int64_t i = 0; i < m->npairs; i++) order[fill[m->pg[i]]++] = (int32_t)i;
    df_free(fill);
    *order_out = order;
    *start_out = start;
    return DF_OK;
}

static df_errkind build_collect(df__aggm *m, int64_t ng, df_vec *v, df_error *err) {
    int32_t *order;
    int64_t *start;
    DF_TRY(group_pairs(m, ng, &order, &start, err));
    int32_t w = m->width;
    uint8_t *vals = df_malloc((size_t)(m->npairs ? m->npairs : 1) * (size_t)w);
    if (!vals) {
        df_free(order);
        df_free(start);
        return DF_OOM(err);
    }
    for (int64_t i = 0; i < m->npairs; i++) df__memcpy(vals + i * w, m->pv + (int64_t)order[i] * w, (size_t)w);
    sort_ctx = m;
    int32_t ow = df_type_width(v->type);
    for (int64_t g = 0; g < ng; g++) {
        int64_t n = start[g + 1] - start[g];
        uint8_t *gv = vals + start[g] * w;
        if (n == 0) continue;
        qsort(gv, (size_t)n, (size_t)w, cmp_collected);
        if (m->fn == DF_AGG_MEDIAN) {
            uint8_t *dst = v->values->data + g * ow;
            if (n % 2) df__memcpy(dst, gv + (n / 2) * w, (size_t)w);
            else midpoint(m, gv + (n / 2 - 1) * w, gv + (n / 2) * w, dst);
        } else {
            double pos = m->fraction * (double)(n - 1);
            int64_t lo = (int64_t)floor(pos), hi = (int64_t)ceil(pos);
            double a = as_double(m, gv + lo * w), b = as_double(m, gv + hi * w);
            put_double(v, g, lo == hi ? a : a + (b - a) * (pos - (double)lo));
        }
    }
    df_free(vals);
    df_free(order);
    df_free(start);
    return DF_OK;
}

static df_errkind build_strings(df__aggm *m, int64_t ng, df_vec *v, df_error *err) {
    int32_t *order;
    int64_t *start;
    DF_TRY(group_pairs(m, ng, &order, &start, err));
    int64_t total = 0;
    for (int64_t g = 0; g < ng; g++) {
        int64_t n = start[g + 1] - start[g];
        if (n > 0) total += (n - 1) * m->delim_len;
    }
    total += m->sdlen;
    df_errkind k = total > INT32_MAX ? df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "string_agg result exceeds 2 GiB")
                                     : df_vec_reserve_data(v, total, err);
    if (!k) {
        int32_t *o = (int32_t *)(void *)v->values->data;
        uint8_t *d = v->data->data;
        int64_t pos = 0;
        o[0] = 0;
        for (int64_t g = 0; g < ng; g++) {
            for (int64_t j = start[g]; j < start[g + 1]; j++) {
                if (j > start[g] && m->delim_len) {
                    df__memcpy(d + pos, m->delim, (size_t)m->delim_len);
                    pos += m->delim_len;
                }
                int64_t i = order[j], len = m->poff[i + 1] - m->poff[i];
                if (len) df__memcpy(d + pos, m->sdata + m->poff[i], (size_t)len);
                pos += len;
            }
            o[g + 1] = (int32_t)pos;
        }
    }
    df_free(order);
    df_free(start);
    return k;
}

/* Results of every group into m->result (holistic aggregates). */
static df_errkind build_result(df__aggm *m, int64_t ng, df_error *err) {
    df_vec *v;
    DF_TRY(df_vec_new(m->out_type, ng, 0, &v, err));
    df_errkind k = m->kind == MK_COLLECT ? build_collect(m, ng, v, err) : build_strings(m, ng, v, err);
    if (!k) {
        bool any_null = false;
        for (int64_t g = 0; g < ng && !any_null; g++) any_null = m->cnt[g] == 0;
        if (any_null) {
            k = df_vec_ensure_validity(v, ng, err);
            for (int64_t g = 0; g < ng && !k; g++)
                if (!m->cnt[g]) df_bit_clear(v->validity->data, g);
        }
    }
    if (k) {
        df_vec_release(v);
        return k;
    }
    df_vec_set_length(v, ng);
    m->result = v;
    return DF_OK;
}

df_errkind df__aggm_emit(df__aggm *m, int64_t total, int64_t from, int64_t n, df_vec **out, df_error *err) {
    *out = NULL;
    DF_TRY(ensure_groups(m, total, err));
    if (m->kind == MK_COLLECT || m->kind == MK_STRING) {
        if (!m->result) DF_TRY(build_result(m, total, err));
        return df_vec_slice(m->result, from, n, out, err);
    }
    df_vec *v;
    DF_TRY(df_vec_new(m->out_type, n, 0, &v, err));
    if (m->out_type->id == DF_TYPE_NULL) { /* bit_*(NULL) */
        df_vec_set_length(v, n);
        *out = v;
        return DF_OK;
    }
    df_errkind k = df_vec_ensure_validity(v, n, err);
    for (int64_t r = 0; r < n && !k; r++) {
        int64_t g = from + r;
        bool valid;
        if (m->kind == MK_BIT) {
            valid = m->cnt[g] > 0;
            uint64_t x = m->bits[g];
            int32_t w = df_type_width(v->type);
            df__memcpy(v->values->data + r * w, &x, (size_t)w); /* little-endian truncation */
        } else if (m->kind == MK_HLL) {
            valid = true;
            DF_VEC_VALUES(v, uint64_t)[r] = hll_count(m->hll[g]);
        } else if (m->fn == DF_AGG_REGR_COUNT) {
            valid = true;
            DF_VEC_VALUES(v, uint64_t)[r] = (uint64_t)m->cnt[g];
        } else {
            double d = 0;
            valid = moment_value(m, g, &d);
            DF_VEC_VALUES(v, double)[r] = valid ? d : 0;
        }
        if (valid) df_bit_set(v->validity->data, r);
        else df_bit_clear(v->validity->data, r);
    }
    if (k) {
        df_vec_release(v);
        return k;
    }
    df_vec_set_length(v, n);
    *out = v;
    return DF_OK;
}
