/*
 * write_all caches: the batches of a shared alias, held in memory up to a
 * budget and spilled to a temporary file beyond it, served back to the
 * query engine as a table provider (one scan unit per batch).  The provider
 * is an adapter over the columnar memory provider (see "Provider" below),
 * which owns projection, slicing and the scan counters.
 *
 * Spill format (our own temporary file, unlinked as soon as it is created,
 * so it disappears with the process): per batch, per column, a header
 * {length, has_validity} then the validity bitmap, the values buffer
 * (bit-packed booleans, fixed-width values, or length+1 int32 offsets
 * rebased to 0) and the string/binary bytes.  The index (file offset and
 * size of every spilled batch) stays in memory.  Nested columns (lists,
 * structs, maps) are never spilled: such batches stay in memory.  Reads are
 * pread()s of one batch at a time, checked against the index sizes, so a
 * scan holds one spilled batch per worker in memory.
 */
#include "load/write_cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* One unit: a batch in memory or a spilled batch's file range. */
typedef struct cache_unit {
    df_batch *batch;                 /* in memory (owned), NULL when spilled or once moved to the memory provider */
    int64_t offset;                  /* spilled: file offset */
    int64_t size;                    /* spilled: bytes */
    int64_t rows;                    /* rows of the batch */
} cache_unit;

struct df_wcache {
    df_schema *schema;               /* owned reference */
    cache_unit *units;               /* owned */
    int64_t nunits, cap;             /* units used / allocated */
    int64_t budget;                  /* bytes kept in memory at most */
    int64_t mem_bytes;               /* bytes of in-memory batches */
    int64_t spilled_bytes;           /* bytes written to the spill file */
    int64_t rows;                    /* total rows */
    int fd;                          /* spill file or -1 */
    char dir[512];                   /* spill directory */
    df_buf scratch;                  /* serialization buffer */
};

/* ------------------------------------------------------------------------ */
/* Sizes                                                                     */

static bool spillable_type(const df_type *t) {
    return t->id != DF_TYPE_LIST && t->id != DF_TYPE_STRUCT && t->id != DF_TYPE_MAP && t->id != DF_TYPE_NULL;
}

static bool is_varlen(const df_type *t) { return t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_BINARY; }

/* Bytes of the values buffer for `n` elements. */
static int64_t values_bytes(const df_type *t, int64_t n) {
    if (t->id == DF_TYPE_BOOL) return df_bitmap_bytes(n);
    if (is_varlen(t)) return (n + 1) * 4;
    return (int64_t)df_type_width(t) * n;
}

static int64_t vec_bytes(const df_vec *v) {
    int64_t n = values_bytes(v->type, v->length) + (v->validity ? df_bitmap_bytes(v->length) : 0);
    if (is_varlen(v->type)) {
        const int32_t *off = DF_VEC_VALUES(v, const int32_t);
        n += off[v->length] - off[0];
    }
    for (int32_t i = 0; i < v->nchildren; i++) n += vec_bytes(v->children[i]);
    return n;
}

int64_t df__wcache_batch_bytes(const df_batch *b) {
    int64_t n = 0;
    for (int32_t j = 0; j < b->ncols; j++) n += vec_bytes(b->cols[j]);
    return n;
}

/* ------------------------------------------------------------------------ */
/* Spill                                                                     */

static df_errkind put(df_buf *out, const void *p, size_t n, df_error *err) { return df_buf_append(out, p, n, err); }

static df_errkind serialize_vec(const df_vec *v, df_buf *out, df_error *err) {
    int64_t n = v->length;
    uint8_t has_validity = v->validity != NULL;
    DF_TRY(put(out, &n, sizeof n, err));
    DF_TRY(put(out, &has_validity, 1, err));
    int64_t nb = df_bitmap_bytes(n);
    if (has_validity || v->type->id == DF_TYPE_BOOL) DF_TRY(df_buf_reserve(out, (size_t)nb * 2, err));
    if (has_validity) {
        size_t at = out->len;
        DF_TRY(df_buf_reserve(out, (size_t)nb, err));
        memset(out->data + at, 0, (size_t)nb);
        df_bitmap_copy((uint8_t *)out->data + at, 0, v->validity->data, v->offset, n);
        out->len += (size_t)nb;
    }
    if (v->type->id == DF_TYPE_BOOL) {
        size_t at = out->len;
        DF_TRY(df_buf_reserve(out, (size_t)nb, err));
        memset(out->data + at, 0, (size_t)nb);
        df_bitmap_copy((uint8_t *)out->data + at, 0, v->values->data, v->offset, n);
        out->len += (size_t)nb;
    } else if (is_varlen(v->type)) {
        const int32_t *off = DF_VEC_VALUES(v, const int32_t);
        int32_t base = off[0];
        DF_TRY(df_buf_reserve(out, (size_t)(n + 1) * 4, err));
        for (int64_t i = 0; i <= n; i++) {
            int32_t o = off[i] - base;
            memcpy(out->data + out->len, &o, 4);
            out->len += 4;
        }
        DF_TRY(put(out, v->data ? v->data->data + base : (const uint8_t *)"", (size_t)(off[n] - base), err));
    } else {
        int32_t w = df_type_width(v->type);
        DF_TRY(put(out, v->values->data + (size_t)v->offset * (size_t)w, (size_t)w * (size_t)n, err));
    }
    return DF_OK;
}

static df_errkind write_all_fd(int fd, const char *p, size_t n, df_error *err) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return df_error_set(err, DF_ERR_IO, "writing the write_all cache spill file failed: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return DF_OK;
}

static df_errkind open_spill(df_wcache *c, df_error *err) {
    char path[600];
    snprintf(path, sizeof path, "%s/deltafunnel-cache-XXXXXX", c->dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return df_error_set(err, DF_ERR_IO, "cannot create a write_all cache spill file in the spill directory: %s",
                            strerror(errno));
    unlink(path); /* gone when closed, whatever happens to the process */
    c->fd = fd;
    return DF_OK;
}

static df_errkind spill(df_wcache *c, cache_unit *u, const df_batch *b, df_error *err) {
    if (c->fd < 0) DF_TRY(open_spill(c, err));
    df_buf_reset(&c->scratch);
    for (int32_t j = 0; j < b->ncols; j++) DF_TRY(serialize_vec(b->cols[j], &c->scratch, err));
    u->offset = c->spilled_bytes;
    u->size = (int64_t)c->scratch.len;
    DF_TRY(write_all_fd(c->fd, c->scratch.data, c->scratch.len, err));
    c->spilled_bytes += u->size;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading spilled batches                                                   */

typedef struct reader {
    const uint8_t *p, *end;          /* bounded cursor over one batch's bytes */
} reader;

static bool take(reader *r, void *dst, size_t n) {
    if ((size_t)(r->end - r->p) < n) return false;
    memcpy(dst, r->p, n);
    r->p += n;
    return true;
}

static df_errkind deserialize_vec(reader *r, df_type *t, df_vec **out, df_error *err) {
    *out = NULL;
    int64_t n;
    uint8_t has_validity;
    if (!take(r, &n, sizeof n) || !take(r, &has_validity, 1) || n < 0 || n > ((int64_t)1 << 40))
        return df_error_set(err, DF_ERR_INTERNAL, "the write_all cache spill file is corrupt");
    int64_t nb = df_bitmap_bytes(n);
    int64_t vb = values_bytes(t, n);
    const uint8_t *validity = NULL, *values = NULL;
    if (has_validity) {
        if (r->end - r->p < nb) return df_error_set(err, DF_ERR_INTERNAL, "the write_all cache spill file is corrupt");
        validity = r->p;
        r->p += nb;
    }
    if (r->end - r->p < vb) return df_error_set(err, DF_ERR_INTERNAL, "the write_all cache spill file is corrupt");
    values = r->p;
    r->p += vb;
    int64_t data_len = 0;
    if (is_varlen(t)) {
        int32_t last;
        memcpy(&last, values + n * 4, 4);
        data_len = last;
        if (data_len < 0 || r->end - r->p < data_len)
            return df_error_set(err, DF_ERR_INTERNAL, "the write_all cache spill file is corrupt");
    }
    df_vec *v = NULL;
    DF_TRY(df_vec_new(t, n, data_len, &v, err));
    if (has_validity) {
        df_errkind k = df_vec_ensure_validity(v, n, err);
        if (k != DF_OK) {
            df_vec_release(v);
            return k;
        }
        memcpy(v->validity->data, validity, (size_t)nb);
        v->validity->size = nb;
    }
    memcpy(v->values->data, values, (size_t)vb);
    v->values->size = vb;
    if (is_varlen(t)) {
        memcpy(v->data->data, r->p, (size_t)data_len);
        v->data->size = data_len;
        r->p += data_len;
    }
    v->length = n;
    v->null_count = -1;
    *out = v;
    return DF_OK;
}

static df_errkind read_unit(const df_wcache *c, const cache_unit *u, df_batch **out, df_error *err) {
    *out = NULL;
    uint8_t *bytes = df_malloc((size_t)DF_MAX(u->size, 1));
    if (!bytes) return DF_OOM(err);
    int64_t got = 0;
    while (got < u->size) {
        ssize_t n = pread(c->fd, bytes + got, (size_t)(u->size - got), (off_t)(u->offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            df_free(bytes);
            return df_error_set(err, DF_ERR_IO, "reading the write_all cache spill file failed");
        }
        got += n;
    }
    reader r = {bytes, bytes + u->size};
    int32_t ncols = c->schema->nfields;
    df_vec **cols = df_calloc((size_t)DF_MAX(ncols, 1), sizeof *cols);
    df_errkind k = cols ? DF_OK : DF_OOM(err);
    for (int32_t j = 0; k == DF_OK && j < ncols; j++) {
        k = deserialize_vec(&r, c->schema->fields[j].type, &cols[j], err);
        if (k == DF_OK && cols[j]->length != u->rows)
            k = df_error_set(err, DF_ERR_INTERNAL, "the write_all cache spill file is corrupt");
    }
    df_free(bytes);
    if (k == DF_OK) {
        k = df_batch_new(c->schema, cols, u->rows, out, err); /* takes the column references, not the array */
        df_free(cols);
        return k;
    }
    for (int32_t j = 0; cols && j < ncols; j++)
        if (cols[j]) df_vec_release(cols[j]);
    df_free(cols);
    return k;
}

/* ------------------------------------------------------------------------ */
/* The cache                                                                 */

df_errkind df__wcache_new(df_schema *schema, int64_t budget, const char *dir, df_wcache **out, df_error *err) {
    *out = NULL;
    df_wcache *c = df_calloc(1, sizeof *c);
    if (!c) return DF_OOM(err);
    c->schema = df_schema_retain(schema);
    c->budget = budget;
    c->fd = -1;
    const char *d = dir && *dir ? dir : getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s", d && *d ? d : "/tmp");
    df_buf_init(&c->scratch, 0);
    *out = c;
    return DF_OK;
}

void df__wcache_free(df_wcache *c) {
    if (!c) return;
    for (int64_t i = 0; i < c->nunits; i++) df_batch_release(c->units[i].batch);
    df_free(c->units);
    if (c->fd >= 0) close(c->fd);
    df_buf_free(&c->scratch);
    df_schema_release(c->schema);
    df_free(c);
}

/*
 * A reference to `b` labelled with the cache's schema (the memory provider
 * requires equal schemas): `b` itself when its schema is equal, else a batch
 * sharing its columns (a stream's batches may differ from its schema in
 * nullability only; column types are checked).
 */
static df_errkind as_cache_schema(const df_wcache *c, df_batch *b, df_batch **out, df_error *err) {
    *out = NULL;
    if (df_schema_equals(b->schema, c->schema)) {
        *out = df_batch_retain(b);
        return DF_OK;
    }
    if (b->ncols != c->schema->nfields)
        return df_error_set(err, DF_ERR_INTERNAL, "a write_all cache batch does not have the cache's columns");
    df_vec **cols = df_malloc((size_t)DF_MAX(b->ncols, 1) * sizeof *cols);
    if (!cols) return DF_OOM(err);
    for (int32_t j = 0; j < b->ncols; j++) cols[j] = df_vec_retain(b->cols[j]);
    df_errkind k = df_batch_new(c->schema, cols, b->nrows, out, err); /* takes the column references */
    df_free(cols);
    return k;
}

df_errkind df__wcache_add(df_wcache *c, df_batch *b, df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(c->units, c->cap, c->nunits + 1, 64, err));
    cache_unit *u = &c->units[c->nunits];
    memset(u, 0, sizeof *u);
    u->rows = b->nrows;
    int64_t bytes = df__wcache_batch_bytes(b);
    bool can_spill = true;
    for (int32_t j = 0; j < b->ncols; j++)
        if (!spillable_type(b->cols[j]->type)) can_spill = false;
    if (!can_spill || c->mem_bytes + bytes <= c->budget) {
        DF_TRY(as_cache_schema(c, b, &u->batch, err));
        c->mem_bytes += bytes;
    } else {
        DF_TRY(spill(c, u, b, err));
    }
    c->rows += b->nrows;
    c->nunits++;
    return DF_OK;
}

int64_t df__wcache_rows(const df_wcache *c) { return c->rows; }
int64_t df__wcache_spilled_bytes(const df_wcache *c) { return c->spilled_bytes; }
int64_t df__wcache_memory_bytes(const df_wcache *c) { return c->mem_bytes; }

/* ------------------------------------------------------------------------ */
/* Provider                                                                  */

/*
 * The provider is an adapter over the columnar memory provider, which owns
 * the unit-stream logic (projection, slicing into batch_size rows, scan
 * counters):
 *   - the in-memory batches form one memory provider (`memory`), built once
 *     when the cache becomes a provider; a scan plans it with the caller's
 *     request and the cache plan shares that plan's counters;
 *   - a spilled batch is read back when its unit is opened and served by a
 *     one-batch memory provider, whose stream is wrapped so that its
 *     counters land in the cache plan's.
 * Cache units keep their order (in-memory and spilled batches interleave
 * when nested batches, which never spill, follow spilled ones).
 */

typedef struct cache_provider {
    df_table_provider base;          /* vtable, refs, schema */
    df_wcache *cache;                /* owned */
    df_table_provider *memory;       /* owned reference: the in-memory batches, in unit order */
    int64_t *memory_unit;            /* per cache unit: its unit in `memory`, -1 when spilled; owned */
} cache_provider;

typedef struct plan_state {
    df_scan_plan *memory_plan;       /* `memory` planned with the same request; owns the counters */
    int32_t *projection;             /* the request's projection (copy, owned), NULL = all columns */
    int32_t nprojection;             /* its length */
    int32_t batch_size;              /* the request's rows per batch */
} plan_state;

/* A spilled unit's stream: the one-batch memory provider's stream, with the counters forwarded. */
typedef struct spill_stream {
    df_batch_stream base;            /* vtable and schema */
    df_batch_stream *inner;          /* owned: the one-batch provider's unit stream */
    df_scan_plan *inner_plan;        /* owned: that provider's plan (outlives `inner`) */
    df_table_provider *one;          /* owned reference: the one-batch provider */
    df_scan_metrics *metrics;        /* the cache plan's counters (borrowed) */
} spill_stream;

static df_errkind spill_next(df_batch_stream *s, df_batch **out, df_error *err) {
    spill_stream *u = (spill_stream *)s;
    DF_TRY(df_batch_stream_next(u->inner, out, err));
    if (*out) {
        atomic_fetch_add_explicit(&u->metrics->rows_produced, (*out)->nrows, memory_order_relaxed);
        atomic_fetch_add_explicit(&u->metrics->batches_produced, 1, memory_order_relaxed);
    }
    return DF_OK;
}

static void spill_close(df_batch_stream *s) {
    spill_stream *u = (spill_stream *)s;
    df_batch_stream_close(u->inner);
    int64_t done = atomic_load_explicit(&u->inner_plan->metrics->files_completed, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->metrics->files_completed, done, memory_order_relaxed);
    u->one->vt->free_plan(u->one, u->inner_plan);
    df_table_provider_release(u->one);
    df_schema_release(u->base.schema);
    df_free(u);
}

static const df_batch_stream_vt spill_stream_vt = {spill_next, spill_close};

static void free_plan(df_table_provider *p, df_scan_plan *plan) {
    if (!plan) return;
    plan_state *st = plan->provider_state;
    if (st) {
        df_table_provider *memory = ((cache_provider *)p)->memory;
        if (st->memory_plan) memory->vt->free_plan(memory, st->memory_plan);
        df_free(st->projection);
    }
    df_free(st);
    df_free(plan->units);
    df_schema_release(plan->schema);
    df_free(plan); /* plan->metrics belonged to the memory plan */
}

/* The caller's request as it applies to every batch (predicates are hints: not pushed). */
static df_scan_request unit_request(const plan_state *st) {
    df_scan_request r = {0};
    r.projection = st->projection;
    r.nprojection = st->nprojection;
    r.limit = -1;
    r.batch_size = st->batch_size;
    return r;
}

static df_errkind plan_scan(df_table_provider *p, const df_scan_request *req, df_scan_plan **out, df_error *err) {
    cache_provider *cp = (cache_provider *)p;
    df_wcache *c = cp->cache;
    *out = NULL;
    df_scan_plan *plan = df_calloc(1, sizeof *plan);
    plan_state *st = df_calloc(1, sizeof *st);
    if (plan) plan->provider_state = st;
    if (st && req->projection) st->projection = df_malloc((size_t)DF_MAX(req->nprojection, 1) * sizeof(int32_t));
    if (plan) plan->units = df_malloc((size_t)DF_MAX(c->nunits, 1) * sizeof(int64_t));
    if (!plan || !st || (req->projection && !st->projection) || !plan->units) {
        if (!plan) df_free(st);
        free_plan(p, plan);
        return DF_OOM(err);
    }
    plan->provider = p;
    if (req->projection) memcpy(st->projection, req->projection, (size_t)req->nprojection * sizeof(int32_t));
    st->nprojection = req->projection ? req->nprojection : 0;
    st->batch_size = req->batch_size > 0 ? req->batch_size : 8192;
    df_scan_request r = unit_request(st);
    df_errkind k = cp->memory->vt->plan_scan(cp->memory, &r, &st->memory_plan, err);
    if (k != DF_OK) {
        free_plan(p, plan);
        return k;
    }
    plan->schema = df_schema_retain(st->memory_plan->schema);
    plan->metrics = st->memory_plan->metrics;
    for (int64_t i = 0; i < c->nunits; i++) plan->units[i] = i;
    plan->nunits = c->nunits;
    plan->estimated_rows = c->rows;
    atomic_store(&plan->metrics->files_total, c->nunits);
    atomic_store(&plan->metrics->files_planned, c->nunits);
    *out = plan;
    return DF_OK;
}

/* Opens a spilled unit: reads the batch back and serves it through a one-batch memory provider. */
static df_errkind open_spilled(df_wcache *c, df_scan_plan *plan, const cache_unit *cu, df_batch_stream **out,
                               df_error *err) {
    plan_state *st = plan->provider_state;
    df_batch *whole = NULL;
    DF_TRY(read_unit(c, cu, &whole, err));
    spill_stream *u = df_calloc(1, sizeof *u);
    df_errkind k = u ? df_memory_provider_new(c->schema, &whole, 1, &u->one, err) : DF_OOM(err);
    df_batch_release(whole);
    df_scan_request r = unit_request(st);
    if (k == DF_OK) k = u->one->vt->plan_scan(u->one, &r, &u->inner_plan, err);
    if (k == DF_OK) k = u->one->vt->open_unit(u->one, u->inner_plan, 0, &u->inner, err);
    if (k != DF_OK) {
        if (u && u->inner_plan) u->one->vt->free_plan(u->one, u->inner_plan);
        if (u) df_table_provider_release(u->one);
        df_free(u);
        return k;
    }
    u->base.vt = &spill_stream_vt;
    u->base.schema = df_schema_retain(plan->schema);
    u->metrics = plan->metrics;
    atomic_fetch_add_explicit(&plan->metrics->files_opened, 1, memory_order_relaxed);
    *out = &u->base;
    return DF_OK;
}

static df_errkind open_unit(df_table_provider *p, df_scan_plan *plan, int64_t i, df_batch_stream **out, df_error *err) {
    cache_provider *cp = (cache_provider *)p;
    plan_state *st = plan->provider_state;
    *out = NULL;
    if (i < 0 || i >= plan->nunits) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "scan unit out of range");
    int64_t unit = plan->units[i];
    int64_t m = cp->memory_unit[unit];
    if (m >= 0) return cp->memory->vt->open_unit(cp->memory, st->memory_plan, m, out, err);
    return open_spilled(cp->cache, plan, &cp->cache->units[unit], out, err);
}

static void destroy(df_table_provider *p) {
    cache_provider *cp = (cache_provider *)p;
    df_table_provider_release(cp->memory);
    df_free(cp->memory_unit);
    df__wcache_free(cp->cache);
    df_schema_release(p->schema);
    df_free(cp);
}

static const df_table_provider_vt cache_vt = {plan_scan, open_unit, free_plan, destroy};

/*
 * Builds the memory provider over the cache's in-memory batches (unit order)
 * and the cache-unit -> memory-unit map.  The batches move from the cache
 * to the provider (the cache's units keep no reference).
 */
static df_errkind build_memory(cache_provider *cp, df_error *err) {
    df_wcache *c = cp->cache;
    cp->memory_unit = df_malloc((size_t)DF_MAX(c->nunits, 1) * sizeof(int64_t));
    df_batch **batches = df_malloc((size_t)DF_MAX(c->nunits, 1) * sizeof *batches);
    if (!cp->memory_unit || !batches) {
        df_free(batches);
        return DF_OOM(err);
    }
    int64_t n = 0;
    for (int64_t i = 0; i < c->nunits; i++) {
        cp->memory_unit[i] = c->units[i].batch ? n : -1;
        if (c->units[i].batch) batches[n++] = c->units[i].batch;
    }
    df_errkind k = df_memory_provider_new(c->schema, batches, n, &cp->memory, err);
    df_free(batches);
    if (k != DF_OK) return k;
    for (int64_t i = 0; i < c->nunits; i++) {
        df_batch_release(c->units[i].batch);
        c->units[i].batch = NULL;
    }
    return DF_OK;
}

df_errkind df__wcache_provider(df_wcache *c, df_table_provider **out, df_error *err) {
    *out = NULL;
    cache_provider *cp = df_calloc(1, sizeof *cp);
    if (!cp) {
        df__wcache_free(c);
        return DF_OOM(err);
    }
    cp->cache = c;
    df_errkind k = build_memory(cp, err);
    if (k != DF_OK) {
        df_table_provider_release(cp->memory);
        df_free(cp->memory_unit);
        df__wcache_free(c);
        df_free(cp);
        return k;
    }
    cp->base.vt = &cache_vt;
    atomic_init(&cp->base.refs, 1);
    cp->base.schema = df_schema_retain(c->schema);
    cp->base.kind = "write_all_cache";
    *out = &cp->base;
    return DF_OK;
}
