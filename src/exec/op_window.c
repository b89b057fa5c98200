/*
 * WindowExec: window functions over one partition of input.
 *
 * The operator buffers its whole input (memory accounted), concatenates it
 * and computes each window function in turn: evaluate its PARTITION BY and
 * ORDER BY keys, stable-sort the row indices by (partition keys, order
 * keys), find partition and peer-group boundaries in that order, then fill
 * one result per input row.  Rows come out in the last function's sort
 * order, each with the input columns followed by the function results.
 *
 * Frames are computed per row as a half-open range [fs, fe) of sorted
 * positions: ROWS by offsets, GROUPS by peer groups, RANGE by the ORDER BY
 * value (binary search over the non-NULL part of the partition; a NULL
 * current value frames the NULL peers).  fs and fe never move backwards
 * within a partition, so count / sum / avg slide in O(1) per row (adding
 * rows entering the frame, retracting rows leaving it, as DataFusion's
 * sliding accumulators do) and min / max rescan only when the frame start
 * moves.  Value functions (lag/lead/first/last/nth_value, min/max) pick a
 * source row per output row and gather, so they work for every type.
 */
#include <inttypes.h>
#include <math.h>

#include "exec/agg_more.h"
#include "exec/exec_int.h"
#include "sql/sql_types.h"

/* ------------------------------------------------------------------------ */
/* Node                                                                      */

typedef struct win_priv {
    int32_t nwin;               /* window functions */
    const df_window *wins;      /* their definitions (owned by the plan, which outlives the node) */
    df__sortspec *specs;        /* per function: partition keys ++ order keys */
    df_xprog **args;            /* per function: up to 2 argument programs (nwin * 2) */
} win_priv;

typedef struct win_op {
    df_op base;
    df_op *child;               /* input (NULL once consumed) */
    df_batch **buf;             /* buffered input */
    int32_t nbuf, cap;
    int64_t reserved;           /* bytes accounted */
    df_batch *all;              /* the input, concatenated */
    df_vec **results;           /* per function: values in input row order */
    int32_t *order;             /* output row order */
    int64_t emitted;            /* rows output */
} win_op;

/* ------------------------------------------------------------------------ */
/* Sorted layout                                                             */

/* Per function: the sort and its partitions / peer groups, by sorted position. */
typedef struct layout {
    int64_t n;                  /* rows */
    int32_t *perm;              /* sorted position -> input row */
    int64_t *pstart;            /* sorted position -> start of its partition */
    int64_t *pend;              /* sorted position -> end of its partition */
    int64_t *gstart;            /* sorted position -> start of its peer group */
    int64_t *gend;              /* sorted position -> end of its peer group */
    int64_t *gnum;              /* sorted position -> peer group number within its partition */
    int64_t *gpos;              /* global peer group g (gbase[p] + gnum) -> its start position */
    int64_t *gbase;             /* sorted position -> global number of its partition's first group */
    int64_t ngroups;            /* groups in all */
    df_vec **keys;              /* evaluated partition ++ order keys */
    int32_t nkeys;
} layout;

static void layout_free(layout *l) {
    df_free(l->perm);
    df_free(l->pstart);
    df_free(l->pend);
    df_free(l->gstart);
    df_free(l->gend);
    df_free(l->gnum);
    df_free(l->gpos);
    df_free(l->gbase);
    for (int32_t k = 0; l->keys && k < l->nkeys; k++) df_vec_release(l->keys[k]);
    df_free(l->keys);
    memset(l, 0, sizeof *l);
}

static inline bool key_valid(const df_vec *v, int64_t i) {
    return v->type->id != DF_TYPE_NULL && df_vec_is_valid(v, i);
}

/* True when rows i and j agree on keys [from, to) (NULLs equal each other). */
static bool keys_equal(df_vec *const *keys, int32_t from, int32_t to, int64_t i, int64_t j) {
    for (int32_t k = from; k < to; k++) {
        bool a = key_valid(keys[k], i), b = key_valid(keys[k], j);
        if (a != b) return false;
        if (a && df__cmp_values(keys[k], i, keys[k], j) != 0) return false;
    }
    return true;
}

static df_errkind build_layout(const win_priv *wp, int32_t w, const df_batch *all, layout *l, df_error *err) {
    const df_window *win = &wp->wins[w];
    const df__sortspec *sp = &wp->specs[w];
    int64_t n = all->nrows;
    memset(l, 0, sizeof *l);
    l->n = n;
    l->nkeys = sp->nkeys;
    size_t sz = (size_t)(n ? n : 1);
    l->keys = df_calloc((size_t)(sp->nkeys ? sp->nkeys : 1), sizeof(df_vec *));
    l->perm = df_malloc(sz * sizeof(int32_t));
    l->pstart = df_malloc(sz * sizeof(int64_t));
    l->pend = df_malloc(sz * sizeof(int64_t));
    l->gstart = df_malloc(sz * sizeof(int64_t));
    l->gend = df_malloc(sz * sizeof(int64_t));
    l->gnum = df_malloc(sz * sizeof(int64_t));
    l->gpos = df_malloc((sz + 1) * sizeof(int64_t));
    l->gbase = df_malloc(sz * sizeof(int64_t));
    if (!l->keys || !l->perm || !l->pstart || !l->pend || !l->gstart || !l->gend || !l->gnum || !l->gpos || !l->gbase)
        return DF_OOM(err);
    df_xstate **st = df_calloc((size_t)(sp->nkeys ? sp->nkeys : 1), sizeof(df_xstate *));
    df_errkind k = st ? DF_OK : DF_OOM(err);
    for (int32_t i = 0; i < sp->nkeys && !k; i++) k = df__xstate_new(sp->progs[i], &st[i], err);
    if (!k && sp->nkeys) k = df__sortspec_eval(sp, st, all, l->keys, err);
    for (int32_t i = 0; st && i < sp->nkeys; i++) df__xstate_free(st[i]);
    df_free(st);
    if (k) {
        memset(l->keys, 0, (size_t)(sp->nkeys ? sp->nkeys : 1) * sizeof(df_vec *));
        return k;
    }
    for (int64_t i = 0; i < n; i++) l->perm[i] = (int32_t)i;
    if (sp->nkeys) DF_TRY(df__sort_indices(sp, l->keys, l->perm, n, err));
    /* Partitions and peer groups, front to back. */
    int64_t ps = 0, gs = 0, g = -1, gbase = 0;
    for (int64_t p = 0; p < n; p++) {
        bool newpart = p == 0 || !keys_equal(l->keys, 0, win->npart, l->perm[p - 1], l->perm[p]);
        bool newgroup = newpart || !keys_equal(l->keys, win->npart, sp->nkeys, l->perm[p - 1], l->perm[p]);
        if (newpart) {
            ps = p;
            gbase = g + 1;
        }
        if (newgroup) {
            gs = p;
            g++;
            l->gpos[g] = p;
        }
        l->pstart[p] = ps;
        l->gstart[p] = gs;
        l->gnum[p] = g - gbase;
        l->gbase[p] = gbase;
    }
    l->ngroups = g + 1;
    l->gpos[l->ngroups] = n;
    int64_t pe = n, ge = n;
    for (int64_t p = n - 1; p >= 0; p--) {
        l->pend[p] = pe;
        l->gend[p] = ge;
        if (l->pstart[p] == p) pe = p;
        if (l->gstart[p] == p) ge = p;
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Frames                                                                    */

/* RANGE offsets: the ORDER BY key as a number (exact 128-bit integer or double). */
typedef struct range_key {
    bool is_float;              /* double domain (floats, decimals) */
    int per_day;                /* temporal: key units per day (1 for dates), 0 otherwise */
    __int128 lo_off[2];         /* integer offsets for start, end */
    double fo_off[2];           /* float offsets for start, end */
} range_key;

static int64_t per_sec_of(const df_type *t) {
    switch (t->unit) {
    case DF_UNIT_SECOND: return 1;
    case DF_UNIT_MILLI: return 1000;
    case DF_UNIT_MICRO: return 1000000;
    default: return 1000000000;
    }
}

static double dec_scale(const df_type *t) {
    int p, s;
    double d = 1;
    if (df__sqlt_decimal_ps(t, &p, &s))
        for (int i = 0; i < s; i++) d *= 10;
    return d;
}

/* Converts the frame offsets for the key type; interval offsets in months are rejected. */
static df_errkind range_prepare(const df_window *w, range_key *rk, df_error *err) {
    memset(rk, 0, sizeof *rk);
    const df_type *kt = w->order[0].expr->type;
    rk->is_float = df_type_is_floating(kt) || kt->id == DF_TYPE_DECIMAL128;
    const df_frame_bound *b[2] = {&w->start, &w->end};
    for (int e = 0; e < 2; e++) {
        const df_expr *o = b[e]->offset;
        if (!o) continue;
        const df_scalar *v = o->lit;
        const df_type *ot = v->type;
        if (ot->id == DF_TYPE_INTERVAL_MDN) {
            if (v->v.interval.months)
                return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "RANGE offsets in months are not supported");
            __int128 per_day = kt->id == DF_TYPE_TIMESTAMP ? (__int128)per_sec_of(kt) * 86400
                               : kt->id == DF_TYPE_DATE64 ? 86400000 : 1;
            __int128 nanos_per_unit = kt->id == DF_TYPE_TIMESTAMP ? 1000000000 / per_sec_of(kt)
                                      : kt->id == DF_TYPE_DATE64 ? 1000000 : (__int128)86400 * 1000000000;
            if (kt->id == DF_TYPE_DATE32 && v->v.interval.nanos % ((int64_t)86400 * 1000000000) != 0)
                return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "RANGE offsets over dates must be whole days");
            rk->lo_off[e] = (__int128)v->v.interval.days * per_day + v->v.interval.nanos / nanos_per_unit;
        } else if (df_type_is_floating(ot)) {
            rk->fo_off[e] = v->v.f64;
            rk->lo_off[e] = (__int128)v->v.f64;
        } else if (ot->id == DF_TYPE_DECIMAL128) {
            rk->fo_off[e] = (double)v->v.i128 / dec_scale(ot);
            rk->lo_off[e] = (__int128)rk->fo_off[e];
        } else {
            rk->lo_off[e] = df_type_is_unsigned_integer(ot) ? (__int128)v->v.u64 : (__int128)v->v.i64;
            rk->fo_off[e] = (double)rk->lo_off[e];
        }
        if (rk->lo_off[e] < 0 || rk->fo_off[e] < 0)
            return df_error_set(err, DF_ERR_EXECUTION, "window frame offsets must not be negative");
    }
    return DF_OK;
}

/* Key of input row i as 128-bit integer or double. */
static void key_num(const df_vec *k, int64_t i, __int128 *iv, double *dv) {
    switch (k->type->id) {
    case DF_TYPE_INT8: *iv = DF_VEC_VALUES(k, int8_t)[i]; break;
    case DF_TYPE_INT16: *iv = DF_VEC_VALUES(k, int16_t)[i]; break;
    case DF_TYPE_INT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32: *iv = DF_VEC_VALUES(k, int32_t)[i]; break;
    case DF_TYPE_UINT8: *iv = DF_VEC_VALUES(k, uint8_t)[i]; break;
    case DF_TYPE_UINT16: *iv = DF_VEC_VALUES(k, uint16_t)[i]; break;
    case DF_TYPE_UINT32: *iv = DF_VEC_VALUES(k, uint32_t)[i]; break;
    case DF_TYPE_UINT64: *iv = DF_VEC_VALUES(k, uint64_t)[i]; break;
    case DF_TYPE_FLOAT32: *dv = DF_VEC_VALUES(k, float)[i]; break;
    case DF_TYPE_FLOAT64: *dv = DF_VEC_VALUES(k, double)[i]; break;
    case DF_TYPE_DECIMAL128: *dv = (double)DF_VEC_VALUES(k, df_i128)[i] / dec_scale(k->type); break;
    default: *iv = DF_VEC_VALUES(k, int64_t)[i]; break;
    }
}

/*
 * First position q in [lo, hi) whose key (direction-adjusted, so ascending)
 * is >= t (strict: > t); hi when none.
 */
static int64_t range_search(const layout *l, const df_vec *k, bool desc, bool is_float, int64_t lo, int64_t hi,
                            __int128 ti, double tf, bool strict) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        __int128 iv = 0;
        double dv = 0;
        key_num(k, l->perm[mid], &iv, &dv);
        if (desc) {
            iv = -iv;
            dv = -dv;
        }
        bool below = is_float ? (strict ? dv <= tf : dv < tf) : (strict ? iv <= ti : iv < ti);
        if (below) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The frame [*fs, *fe) of sorted position p. */
static void frame_of(const df_window *w, const layout *l, const range_key *rk, int64_t p, int64_t *fs_out,
                     int64_t *fe_out) {
    int64_t ps = l->pstart[p], pe = l->pend[p];
    int64_t fs = ps, fe = pe;
    const df_frame_bound *b[2] = {&w->start, &w->end};
    for (int e = 0; e < 2; e++) {
        const df_frame_bound *bd = b[e];
        int64_t pos = e == 0 ? ps : pe;
        if (bd->kind == DF_BOUND_UNBOUNDED_PRECEDING) {
            pos = ps;
        } else if (bd->kind == DF_BOUND_UNBOUNDED_FOLLOWING) {
            pos = pe;
        } else if (w->units == DF_FRAME_ROWS) {
            __int128 off = bd->offset ? rk->lo_off[e] : 0;
            __int128 at = bd->kind == DF_BOUND_PRECEDING ? p - off : bd->kind == DF_BOUND_FOLLOWING ? p + off : p;
            if (e == 1) at += 1;
            pos = at < ps ? ps : at > pe ? pe : (int64_t)at;
        } else if (w->units == DF_FRAME_GROUPS || bd->kind == DF_BOUND_CURRENT) {
            __int128 off = bd->offset ? rk->lo_off[e] : 0;
            __int128 g128 = l->gnum[p] + (bd->kind == DF_BOUND_PRECEDING ? -off : bd->kind == DF_BOUND_FOLLOWING ? off : 0);
            int64_t g = g128 < -1 ? -1 : g128 > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)g128;
            int64_t ng_part = l->gnum[pe - 1] + 1;
            if (g < 0) pos = ps;
            else if (g >= ng_part) pos = pe;
            else {
                int64_t gg = l->gbase[p] + g;
                pos = e == 0 ? l->gpos[gg] : l->gpos[gg + 1];
                if (e == 1 && pos > pe) pos = pe;
            }
            if (e == 1 && g < 0) pos = ps;
        } else {
            /* RANGE with an offset over the single ORDER BY key. */
            const df_vec *k = l->keys[w->npart];
            int32_t row = l->perm[p];
            if (!key_valid(k, row)) {
                pos = e == 0 ? l->gstart[p] : l->gend[p];
            } else {
                bool desc = w->order[0].desc, nf = w->order[0].nulls_first;
                /* The non-NULL part of the partition. */
                int64_t lo = ps, hi = pe;
                if (nf) {
                    if (!key_valid(k, l->perm[ps])) lo = l->gend[ps];
                } else if (!key_valid(k, l->perm[pe - 1])) {
                    hi = l->gstart[pe - 1];
                }
                __int128 iv = 0;
                double dv = 0;
                key_num(k, row, &iv, &dv);
                if (desc) {
                    iv = -iv;
                    dv = -dv;
                }
                bool prec = bd->kind == DF_BOUND_PRECEDING;
                __int128 ti = prec ? iv - rk->lo_off[e] : iv + rk->lo_off[e];
                double tf = prec ? dv - rk->fo_off[e] : dv + rk->fo_off[e];
                pos = range_search(l, k, desc, rk->is_float, lo, hi, ti, tf, e == 1);
            }
        }
        if (pos < ps) pos = ps;
        if (pos > pe) pos = pe;
        if (e == 0) fs = pos;
        else fe = pos;
    }
    if (fe < fs) fe = fs;
    *fs_out = fs;
    *fe_out = fe;
}

/* ------------------------------------------------------------------------ */
/* Functions                                                                 */

/* Result vector of type t over n rows, all valid. */
static df_errkind new_result(const df_type *t, int64_t n, df_vec **out, df_error *err) {
    DF_TRY(df_vec_new((df_type *)t, n, 0, out, err));
    df_vec_set_length(*out, n);
    return DF_OK;
}

static df_errkind set_null(df_vec *v, int64_t i, df_error *err) {
    if (!v->validity) DF_TRY(df_vec_ensure_validity(v, v->length, err));
    df_bit_clear(v->validity->data, i);
    return DF_OK;
}

/* row_number, rank, dense_rank, percent_rank, cume_dist, ntile. */
static df_errkind ranking(const df_window *w, const layout *l, df_vec **out, df_error *err) {
    int64_t n = l->n;
    DF_TRY(new_result(w->type, n, out, err));
    df_vec *v = *out;
    for (int64_t p = 0; p < n; p++) {
        int64_t ps = l->pstart[p], np = l->pend[p] - ps, row = l->perm[p];
        int64_t rank = l->gstart[p] - ps + 1;
        switch (w->fn) {
        case DF_WIN_ROW_NUMBER: DF_VEC_VALUES(v, uint64_t)[row] = (uint64_t)(p - ps + 1); break;
        case DF_WIN_RANK: DF_VEC_VALUES(v, uint64_t)[row] = (uint64_t)rank; break;
        case DF_WIN_DENSE_RANK: DF_VEC_VALUES(v, uint64_t)[row] = (uint64_t)(l->gnum[p] + 1); break;
        case DF_WIN_PERCENT_RANK:
            DF_VEC_VALUES(v, double)[row] = np > 1 ? (double)(rank - 1) / (double)(np - 1) : 0.0;
            break;
        case DF_WIN_CUME_DIST: DF_VEC_VALUES(v, double)[row] = (double)(l->gend[p] - ps) / (double)np; break;
        default: { /* NTILE: the first np % buckets buckets hold one row more */
            uint64_t nb = (uint64_t)w->param < (uint64_t)np ? (uint64_t)w->param : (uint64_t)np;
            uint64_t q = (uint64_t)np / nb, r = (uint64_t)np % nb, i = (uint64_t)(p - ps);
            DF_VEC_VALUES(v, uint64_t)[row] = (i < r * (q + 1) ? i / (q + 1) : r + (i - r * (q + 1)) / q) + 1;
        }
        }
    }
    return DF_OK;
}

/* lag / lead / first_value / last_value / nth_value: a source row per output row, then a gather. */
static df_errkind value_fn(const df_window *w, const layout *l, const range_key *rk, df_vec *arg, df_vec *dflt,
                           df_vec **out, df_error *err) {
    int64_t n = l->n;
    int32_t *src = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!src) return DF_OOM(err);
    /* IGNORE NULLS: nn[j] = j-th sorted position holding a value, before[p] = how many precede p. */
    int64_t *nn = NULL, *before = NULL, nnn = 0;
    if (w->ignore_nulls) {
        nn = df_malloc((size_t)(n ? n : 1) * sizeof(int64_t));
        before = df_malloc((size_t)(n + 1) * sizeof(int64_t));
        if (!nn || !before) {
            df_free(src);
            df_free(nn);
            df_free(before);
            return DF_OOM(err);
        }
        for (int64_t p = 0; p < n; p++) {
            before[p] = nnn;
            if (key_valid(arg, l->perm[p])) nn[nnn++] = p;
        }
        before[n] = nnn;
    }
    for (int64_t p = 0; p < n; p++) {
        int64_t ps = l->pstart[p], pe = l->pend[p], q = -1;
        int32_t row = l->perm[p];
        if (w->ignore_nulls) {
            __int128 j;
            int64_t fs = 0, fe = 0;
            if (w->fn == DF_WIN_LAG) {
                j = (__int128)before[p] - w->param;
            } else if (w->fn == DF_WIN_LEAD) {
                j = (__int128)before[p + 1] + w->param - 1;
            } else {
                frame_of(w, l, rk, p, &fs, &fe);
                j = w->fn == DF_WIN_FIRST_VALUE ? before[fs]
                    : w->fn == DF_WIN_LAST_VALUE ? before[fe] - 1
                    : w->param > 0 ? (__int128)before[fs] + w->param - 1
                                   : (__int128)before[fe] + w->param;
                if (w->fn == DF_WIN_NTH_VALUE && w->param == 0) j = -1;
            }
            bool lagged = w->fn == DF_WIN_LAG || w->fn == DF_WIN_LEAD;
            int64_t lo = lagged ? ps : fs, hi = lagged ? pe : fe;
            if (j >= 0 && j < nnn && nn[(int64_t)j] >= lo && nn[(int64_t)j] < hi) q = l->perm[nn[(int64_t)j]];
            else if (lagged && dflt) q = n + row;
            src[row] = (int32_t)q;
            continue;
        }
        if (w->fn == DF_WIN_LAG || w->fn == DF_WIN_LEAD) {
            __int128 t = (__int128)p + (w->fn == DF_WIN_LAG ? -(__int128)w->param : (__int128)w->param);
            if (t >= ps && t < pe) q = l->perm[(int64_t)t];
            else if (dflt) q = n + row; /* the default, from the concatenated vector */
        } else {
            int64_t fs, fe;
            frame_of(w, l, rk, p, &fs, &fe);
            /* nth_value: n > 0 counts from the frame's first row, n < 0 from its last. */
            __int128 t = w->fn == DF_WIN_FIRST_VALUE ? fs
                         : w->fn == DF_WIN_LAST_VALUE ? fe - 1
                         : w->param > 0 ? (__int128)fs + w->param - 1
                                        : (__int128)fe + w->param;
            if (w->fn == DF_WIN_NTH_VALUE && w->param == 0) t = -1;
            if (fe > fs && t >= fs && t < fe) q = l->perm[(int64_t)t];
        }
        src[row] = (int32_t)q;
    }
    df_free(nn);
    df_free(before);
    df_errkind k;
    if (dflt) {
        df_vec *both = NULL;
        df_vec *parts[2] = {arg, dflt};
        k = df__vec_concat(parts, 2, &both, err);
        if (!k) k = df__vec_gather(both, src, n, out, err);
        df_vec_release(both);
    } else {
        k = df__vec_gather(arg, src, n, out, err);
    }
    df_free(src);
    return k;
}

/* Running state of count / sum / avg over the current frame. */
typedef struct slide {
    int64_t cnt;                /* non-NULL values in the frame */
    int64_t si;                 /* integer sum */
    uint64_t su;                /* unsigned sum */
    double sf;                  /* float sum */
    df_i128 sd;                 /* decimal sum */
} slide;

typedef enum num_kind { NK_INT, NK_UINT, NK_FLOAT, NK_DEC } num_kind;

static num_kind num_kind_of(const df_type *t) {
    if (df_type_is_unsigned_integer(t)) return NK_UINT;
    if (df_type_is_floating(t)) return NK_FLOAT;
    if (t->id == DF_TYPE_DECIMAL128) return NK_DEC;
    return NK_INT;
}

static inline int64_t get_i64(const df_vec *v, int64_t i) {
    switch (v->type->id) {
    case DF_TYPE_INT8: return DF_VEC_VALUES(v, int8_t)[i];
    case DF_TYPE_INT16: return DF_VEC_VALUES(v, int16_t)[i];
    case DF_TYPE_INT32: return DF_VEC_VALUES(v, int32_t)[i];
    default: return DF_VEC_VALUES(v, int64_t)[i];
    }
}
static inline uint64_t get_u64(const df_vec *v, int64_t i) {
    switch (v->type->id) {
    case DF_TYPE_UINT8: return DF_VEC_VALUES(v, uint8_t)[i];
    case DF_TYPE_UINT16: return DF_VEC_VALUES(v, uint16_t)[i];
    case DF_TYPE_UINT32: return DF_VEC_VALUES(v, uint32_t)[i];
    default: return DF_VEC_VALUES(v, uint64_t)[i];
    }
}
static inline double get_f64(const df_vec *v, int64_t i) {
    if (v->type->id == DF_TYPE_FLOAT32) return DF_VEC_VALUES(v, float)[i];
    if (v->type->id == DF_TYPE_FLOAT64) return DF_VEC_VALUES(v, double)[i];
    if (df_type_is_unsigned_integer(v->type)) return (double)get_u64(v, i);
    return (double)get_i64(v, i);
}

/* Adds (sign 1) or retracts (sign -1) input row `row` into the running state. */
static df_errkind slide_apply(slide *s, const df_vec *x, num_kind nk, bool avg, bool count_only, int64_t row,
                              int sign, df_error *err) {
    if (!key_valid(x, row)) return DF_OK;
    s->cnt += sign;
    if (count_only) return DF_OK;
    if (avg || nk == NK_FLOAT) {
        if (nk == NK_DEC) {
            df_i128 d = DF_VEC_VALUES(x, df_i128)[row];
            s->sd = sign > 0 ? s->sd + d : s->sd - d;
        } else {
            double d = get_f64(x, row);
            s->sf = sign > 0 ? s->sf + d : s->sf - d;
        }
        return DF_OK;
    }
    /* integer sums wrap around on overflow, as DataFusion's (the builtins store the wrapped value) */
    switch (nk) {
    case NK_INT: (void)(sign > 0 ? __builtin_add_overflow(s->si, get_i64(x, row), &s->si)
                                 : __builtin_sub_overflow(s->si, get_i64(x, row), &s->si)); break;
    case NK_UINT: (void)(sign > 0 ? __builtin_add_overflow(s->su, get_u64(x, row), &s->su)
                                  : __builtin_sub_overflow(s->su, get_u64(x, row), &s->su)); break;
    case NK_DEC: {
        df_i128 d = DF_VEC_VALUES(x, df_i128)[row];
        s->sd = sign > 0 ? s->sd + d : s->sd - d;
        break;
    }
    default: break;
    }
    return DF_OK;
}

static df_i128 pow10i(int e) {
    df_i128 r = 1;
    for (int i = 0; i < e && i < 38; i++) r *= 10;
    return r;
}

/* Writes the aggregate of the current state into result row `row`. */
static df_errkind slide_emit(const df_window *w, const slide *s, int64_t frame_rows, num_kind nk, df_vec *v,
                             int64_t row, int in_scale, df_error *err) {
    if (w->agg == DF_AGG_COUNT) {
        DF_VEC_VALUES(v, int64_t)[row] = w->count_star ? frame_rows : s->cnt;
        return DF_OK;
    }
    if (s->cnt == 0) return set_null(v, row, err);
    if (w->agg == DF_AGG_AVG) {
        if (nk == NK_DEC) {
            int p, os;
            df__sqlt_decimal_ps(w->type, &p, &os);
            DF_VEC_VALUES(v, df_i128)[row] = s->sd * pow10i(os - in_scale) / s->cnt;
        } else {
            DF_VEC_VALUES(v, double)[row] = s->sf / (double)s->cnt;
        }
        return DF_OK;
    }
    switch (nk) {
    case NK_INT: DF_VEC_VALUES(v, int64_t)[row] = s->si; break;
    case NK_UINT: DF_VEC_VALUES(v, uint64_t)[row] = s->su; break;
    case NK_FLOAT: DF_VEC_VALUES(v, double)[row] = s->sf; break;
    case NK_DEC: DF_VEC_VALUES(v, df_i128)[row] = s->sd; break;
    }
    return DF_OK;
}

/* count / sum / avg over sliding frames. */
static df_errkind sliding_agg(const df_window *w, const layout *l, const range_key *rk, const df_vec *x,
                              df_vec **out, df_error *err) {
    int64_t n = l->n;
    DF_TRY(new_result(w->type, n, out, err));
    df_vec *v = *out;
    num_kind nk = x && w->agg != DF_AGG_COUNT ? num_kind_of(x->type) : NK_INT;
    int p_, in_scale = 0;
    if (x && nk == NK_DEC) df__sqlt_decimal_ps(x->type, &p_, &in_scale);
    bool avg = w->agg == DF_AGG_AVG, count_only = w->agg == DF_AGG_COUNT;
    slide s;
    int64_t cs = 0, ce = 0; /* current frame */
    for (int64_t p = 0; p < n; p++) {
        int64_t fs, fe;
        frame_of(w, l, rk, p, &fs, &fe);
        if (p == l->pstart[p] || fs < cs || fe < ce) {
            memset(&s, 0, sizeof s);
            cs = ce = fs;
        }
        for (; ce < fe; ce++)
            if (x) DF_TRY(slide_apply(&s, x, nk, avg, count_only, l->perm[ce], 1, err));
        for (; cs < fs; cs++)
            if (x && cs < ce) DF_TRY(slide_apply(&s, x, nk, avg, count_only, l->perm[cs], -1, err));
        if (ce < cs) ce = cs;
        DF_TRY(slide_emit(w, &s, fe - fs, nk, v, l->perm[p], in_scale, err));
    }
    return DF_OK;
}

/* min / max over frames: the best row's index, rescanning when the frame start moves. */
static df_errkind minmax(const df_window *w, const layout *l, const range_key *rk, df_vec *x, df_vec **out,
                         df_error *err) {
    int64_t n = l->n;
    int32_t *src = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!src) return DF_OOM(err);
    int sign = w->agg == DF_AGG_MAX ? 1 : -1;
    int64_t cs = 0, ce = 0, best = -1;
    for (int64_t p = 0; p < n; p++) {
        int64_t fs, fe;
        frame_of(w, l, rk, p, &fs, &fe);
        if (p == l->pstart[p] || fs != cs || fe < ce) {
            cs = ce = fs;
            best = -1;
        }
        for (; ce < fe; ce++) {
            int32_t r = l->perm[ce];
            if (!key_valid(x, r)) continue;
            if (best < 0 || sign * df__cmp_values(x, r, x, best) > 0) best = r;
        }
        src[l->perm[p]] = (int32_t)best;
    }
    df_errkind k = df__vec_gather(x, src, n, out, err);
    df_free(src);
    return k;
}

/*
 * Any other single-step aggregate (median, percentile_cont, var_pop,
 * covar_pop, bit_and, ..): each distinct frame is one group of the
 * aggregate's own accumulator, fed the frame's rows.  Whole-partition and
 * peer-group frames cost their rows once; sliding frames cost the sum of
 * their sizes, which is bounded.
 */
#define MORE_FRAME_ROWS_MAX (64LL * 1024 * 1024)

static df_errkind frames_agg(win_op *o, const df_window *w, const layout *l, const range_key *rk, df_vec *x,
                             df_vec *x2, df_vec **out, df_error *err) {
    int64_t n = l->n, ngroups = 0, fed = 0;
    int32_t *fid = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    int64_t *fs_of = df_malloc((size_t)(n ? n : 1) * sizeof(int64_t)), *fe_of = df_malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    df_errkind k = fid && fs_of && fe_of ? DF_OK : DF_OOM(err);
    int64_t ps = -1, pe = -1;
    for (int64_t p = 0; p < n && !k; p++) {
        int64_t fs, fe;
        frame_of(w, l, rk, p, &fs, &fe);
        if (fs != ps || fe != pe || p == l->pstart[p]) {
            fs_of[ngroups] = fs, fe_of[ngroups] = fe;
            fed += fe > fs ? fe - fs : 0;
            ngroups++;
            ps = fs, pe = fe;
        }
        fid[l->perm[p]] = (int32_t)(ngroups - 1);
    }
    if (!k && fed > MORE_FRAME_ROWS_MAX)
        k = df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "%s over these window frames would read %" PRId64
                         " rows (at most %lld): use a frame that does not slide, or fewer rows",
                         df_agg_fn_name(w->more->fn), fed, MORE_FRAME_ROWS_MAX);
    int32_t *rows = NULL, *gids = NULL;
    if (!k) {
        rows = df_malloc((size_t)(fed ? fed : 1) * sizeof(int32_t));
        gids = df_malloc((size_t)(fed ? fed : 1) * sizeof(int32_t));
        if (!rows || !gids) k = DF_OOM(err);
    }
    int64_t m = 0;
    for (int64_t g = 0; g < ngroups && !k; g++)
        for (int64_t q = fs_of[g]; q < fe_of[g]; q++) {
            rows[m] = l->perm[q];
            gids[m++] = (int32_t)g;
        }
    df_vec *gx = NULL, *gx2 = NULL, *res = NULL;
    df__aggm *acc = NULL;
    if (!k) k = df__vec_gather(x, rows, m, &gx, err);
    if (!k && x2) k = df__vec_gather(x2, rows, m, &gx2, err);
    if (!k) k = df__aggm_new(w->more, o->base.ctx, &acc, err);
    if (!k) k = df__aggm_update(acc, gids, m, ngroups, gx, gx2, NULL, NULL, err);
    if (!k) k = df__aggm_emit(acc, ngroups, 0, ngroups, &res, err);
    if (!k) k = df__vec_gather(res, fid, n, out, err);
    df__aggm_free(acc);
    df_vec_release(gx);
    df_vec_release(gx2);
    df_vec_release(res);
    df_free(rows);
    df_free(gids);
    df_free(fid);
    df_free(fs_of);
    df_free(fe_of);
    return k;
}

/* Computes window function w into out (input row order). */
static df_errkind compute(win_op *o, int32_t w, int32_t **order_out, df_vec **out, df_error *err) {
    const win_priv *wp = o->base.node->priv;
    const df_window *win = &wp->wins[w];
    const df_batch *all = o->all;
    layout l;
    df_errkind k = build_layout(wp, w, all, &l, err);
    range_key rk;
    memset(&rk, 0, sizeof rk);
    if (!k && win->units == DF_FRAME_RANGE && (win->start.offset || win->end.offset)) k = range_prepare(win, &rk, err);
    if (!k && win->units != DF_FRAME_RANGE) {
        /* ROWS / GROUPS offsets are plain counts. */
        const df_frame_bound *bs[2] = {&win->start, &win->end};
        for (int e = 0; e < 2; e++)
            if (bs[e]->offset)
                rk.lo_off[e] = df_type_is_unsigned_integer(bs[e]->offset->type) ? (__int128)bs[e]->offset->lit->v.u64
                                                                               : (__int128)bs[e]->offset->lit->v.i64;
    }
    df_vec *args[2] = {NULL, NULL};
    for (int32_t a = 0; a < win->nargs && a < 2 && !k; a++) {
        df_xstate *st = NULL;
        k = df__xstate_new(wp->args[2 * w + a], &st, err);
        if (!k) k = df__xprog_eval_vec(wp->args[2 * w + a], st, all, &args[a], err);
        df__xstate_free(st);
    }
    if (!k) {
        switch (win->fn) {
        case DF_WIN_AGG:
            if (win->more) k = frames_agg(o, win, &l, &rk, args[0], args[1], out, err);
            else if (win->agg == DF_AGG_MIN || win->agg == DF_AGG_MAX) k = minmax(win, &l, &rk, args[0], out, err);
            else k = sliding_agg(win, &l, &rk, win->count_star ? NULL : args[0], out, err);
            break;
        case DF_WIN_LAG: case DF_WIN_LEAD: case DF_WIN_FIRST_VALUE: case DF_WIN_LAST_VALUE: case DF_WIN_NTH_VALUE:
            k = value_fn(win, &l, &rk, args[0], args[1], out, err);
            break;
        default: k = ranking(win, &l, out, err);
        }
    }
    df_vec_release(args[0]);
    df_vec_release(args[1]);
    if (!k && order_out) {
        *order_out = l.perm;
        l.perm = NULL;
    }
    layout_free(&l);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Operator                                                                  */

static df_errkind consume(win_op *o, df_error *err) {
    const win_priv *wp = o->base.node->priv;
    df_pnode *in = o->base.node->inputs[0];
    for (;;) {
        df_batch *b = NULL;
        DF_TRY(df_op_next(o->child, &b, err));
        if (!b) break;
        int64_t bytes = df__batch_bytes(b);
        df_errkind k = df__exec_mem_reserve(o->base.ctx, bytes, err);
        if (!k) {
            k = DF_ARRAY_RESERVE(o->buf, o->cap, o->nbuf + 1, 16, err);
            if (k) df__exec_mem_release(o->base.ctx, bytes);
        }
        if (k) {
            df_batch_release(b);
            return k;
        }
        o->reserved += bytes;
        o->buf[o->nbuf++] = b;
    }
    df_op_close(o->child);
    o->child = NULL;
    DF_TRY(df__batch_concat(o->buf, o->nbuf, in->schema, &o->all, err));
    for (int32_t i = 0; i < o->nbuf; i++) df_batch_release(o->buf[i]);
    o->nbuf = 0;
    if (o->all->nrows > INT32_MAX - 1)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "window input has more than 2^31 rows");
    o->results = df_calloc((size_t)wp->nwin, sizeof(df_vec *));
    if (!o->results) return DF_OOM(err);
    for (int32_t w = 0; w < wp->nwin; w++) {
        DF_TRY(df__exec_check_cancel(o->base.ctx, err));
        /* Rows leave in the last function's order (as a chain of window sorts would). */
        DF_TRY(compute(o, w, w == wp->nwin - 1 ? &o->order : NULL, &o->results[w], err));
    }
    return DF_OK;
}

static df_errkind win_next(df_op *op, df_batch **out, df_error *err) {
    win_op *o = (win_op *)op;
    const win_priv *wp = op->node->priv;
    *out = NULL;
    if (o->child) DF_TRY(consume(o, err));
    int64_t total = o->all ? o->all->nrows : 0;
    if (o->emitted >= total) return DF_OK;
    int64_t n = DF_MIN((int64_t)op->ctx->batch_size, total - o->emitted);
    const int32_t *idx = o->order + o->emitted;
    int32_t nin = o->all->ncols, ncols = nin + wp->nwin;
    df_vec **cols = df_calloc((size_t)ncols, sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int32_t c = 0; c < nin && !k; c++) k = df__vec_gather(o->all->cols[c], idx, n, &cols[c], err);
    for (int32_t w = 0; w < wp->nwin && !k; w++) k = df__vec_gather(o->results[w], idx, n, &cols[nin + w], err);
    if (!k) k = df_batch_new(op->node->schema, cols, n, out, err);
    if (k)
        for (int32_t c = 0; c < ncols; c++) df_vec_release(cols[c]);
    df_free(cols);
    if (!k) o->emitted += n;
    return k;
}

static void win_close(df_op *op) {
    win_op *o = (win_op *)op;
    const win_priv *wp = op->node->priv;
    df_op_close(o->child);
    for (int32_t i = 0; i < o->nbuf; i++) df_batch_release(o->buf[i]);
    df_free(o->buf);
    df_batch_release(o->all);
    if (o->results)
        for (int32_t w = 0; w < wp->nwin; w++) df_vec_release(o->results[w]);
    df_free(o->results);
    df_free(o->order);
    df__exec_mem_release(op->ctx, o->reserved);
    df_free(o);
}

static const df_op_vt win_op_vt = {win_next, win_close};

static df_errkind win_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    win_op *o = df_calloc(1, sizeof *o);
    if (!o) return DF_OOM(err);
    df__op_init(&o->base, &win_op_vt, n, ctx, p);
    o->base.parent = parent;
    df_errkind k = df_pnode_open(n->inputs[0], ctx, p, &o->base, &o->child, err);
    if (k) {
        win_close(&o->base);
        return k;
    }
    *out = &o->base;
    return DF_OK;
}

static void win_destroy(df_pnode *n) {
    win_priv *wp = n->priv;
    if (!wp) return;
    for (int32_t w = 0; w < wp->nwin; w++) {
        if (wp->specs) df__sortspec_clear(&wp->specs[w]);
        if (wp->args) {
            df__xprog_free(wp->args[2 * w]);
            df__xprog_free(wp->args[2 * w + 1]);
        }
    }
    df_free(wp->specs);
    df_free(wp->args);
    df_free(wp);
}

static df_errkind win_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const win_priv *wp = n->priv;
    DF_TRY(df_buf_append_str(out, " [", err));
    for (int32_t w = 0; w < wp->nwin; w++)
        DF_TRY(df_buf_printf(out, err, "%s%s", w ? ", " : "", df_win_fn_name(&wp->wins[w])));
    return df_buf_append_char(out, ']', err);
}

static const df_pnode_vt win_vt = {"WindowAggExec", win_open, win_destroy, win_explain};

/* Sort keys of function w: partition keys (ascending) then its ORDER BY. */
static df_errkind spec_of(const df_window *w, df__sortspec *sp, df_error *err) {
    int32_t nk = w->npart + w->norder;
    df_sort_key *keys = df_calloc((size_t)(nk ? nk : 1), sizeof *keys);
    if (!keys) return DF_OOM(err);
    for (int32_t i = 0; i < w->npart; i++) keys[i] = (df_sort_key){.expr = w->part[i]};
    for (int32_t i = 0; i < w->norder; i++) keys[w->npart + i] = w->order[i];
    df_errkind k = df__sortspec_init(sp, keys, nk, err);
    df_free(keys);
    return k;
}

df_errkind df__op_window_new(df_pnode *input, const df_lnode *window, df_schema *schema, df_pnode **out,
                            df_error *err) {
    *out = NULL;
    int32_t nw = window->u.window.nwin;
    win_priv *wp = df_calloc(1, sizeof *wp);
    df_errkind k = wp ? DF_OK : DF_OOM(err);
    if (!k) {
        wp->nwin = nw;
        wp->wins = window->u.window.wins;
        wp->specs = df_calloc((size_t)(nw ? nw : 1), sizeof(df__sortspec));
        wp->args = df_calloc((size_t)(nw ? nw : 1) * 2, sizeof(df_xprog *));
        if (!wp->specs || !wp->args) k = DF_OOM(err);
    }
    for (int32_t w = 0; w < nw && !k; w++) {
        const df_window *win = &wp->wins[w];
        k = spec_of(win, &wp->specs[w], err);
        for (int32_t a = 0; a < win->nargs && a < 2 && !k; a++) k = df__xprog_compile(win->args[a], &wp->args[2 * w + a], err);
    }
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(&win_vt, schema, 1, 1, &n, err);
    if (k) {
        if (wp) {
            df_pnode tmp = {.priv = wp};
            win_destroy(&tmp);
        }
        df__pnode_free(input);
        return k;
    }
    n->inputs[0] = input;
    n->priv = wp;
    *out = n;
    return DF_OK;
}
