/*
 * An in-memory table provider: each batch is one scan unit.  Used by tests
 * and by caches of intermediate results.  Streams project the unit's batch
 * and hand it out in slices of at most batch_size rows.
 */
#include "columnar/table_provider.h"

typedef struct memory_provider {
    df_table_provider base;
    df_batch **batches;     /* owned references */
    int64_t nbatches;
} memory_provider;

typedef struct plan_state {
    int32_t *projection;    /* output column -> provider column */
    int32_t nprojection;
    int32_t batch_size;
} plan_state;

typedef struct unit_stream {
    df_batch_stream base;
    df_batch *batch;        /* projected unit batch (reference) */
    int64_t pos;            /* next row to hand out */
    int32_t batch_size;
    df_scan_metrics *metrics;
} unit_stream;

static df_errkind unit_next(df_batch_stream *s, df_batch **out, df_error *err) {
    unit_stream *u = (unit_stream *)s;
    *out = NULL;
    if (!u->batch || u->pos >= u->batch->nrows) return DF_OK;
    int64_t n = DF_MIN((int64_t)u->batch_size, u->batch->nrows - u->pos);
    if (u->pos == 0 && n == u->batch->nrows) {
        *out = df_batch_retain(u->batch);
    } else {
        DF_TRY(df_batch_slice(u->batch, u->pos, n, out, err));
    }
    u->pos += n;
    atomic_fetch_add_explicit(&u->metrics->rows_produced, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->metrics->batches_produced, 1, memory_order_relaxed);
    return DF_OK;
}

static void unit_close(df_batch_stream *s) {
    unit_stream *u = (unit_stream *)s;
    if (u->batch && u->pos >= u->batch->nrows)
        atomic_fetch_add_explicit(&u->metrics->files_completed, 1, memory_order_relaxed);
    df_batch_release(u->batch);
    df_schema_release(u->base.schema);
    df_free(u);
}

static const df_batch_stream_vt unit_stream_vt = {unit_next, unit_close};

static void free_plan(df_table_provider *p, df_scan_plan *plan) {
    (void)p;
    if (!plan) return;
    plan_state *st = plan->provider_state;
    if (st) df_free(st->projection);
    df_free(st);
    df_free(plan->units);
    df_free(plan->metrics);
    df_schema_release(plan->schema);
    df_free(plan);
}

static df_errkind plan_scan(df_table_provider *p, const df_scan_request *req, df_scan_plan **out, df_error *err) {
    memory_provider *mp = (memory_provider *)p;
    *out = NULL;
    df_scan_plan *plan = df_calloc(1, sizeof *plan);
    plan_state *st = df_calloc(1, sizeof *st);
    df_scan_metrics *m = df_calloc(1, sizeof *m);
    if (plan) {
        plan->provider_state = st;
        plan->metrics = m;
    }
    if (!plan || !st || !m) {
        if (!plan) {
            df_free(st);
            df_free(m);
        }
        free_plan(p, plan);
        return DF_OOM(err);
    }
    plan->provider = p;
    int32_t nproj = req->projection ? req->nprojection : p->schema->nfields;
    st->projection = df_malloc((size_t)DF_MAX(nproj, 1) * sizeof(int32_t));
    plan->units = df_malloc((size_t)DF_MAX(mp->nbatches, 1) * sizeof(int64_t));
    if (!st->projection || !plan->units) {
        free_plan(p, plan);
        return DF_OOM(err);
    }
    for (int32_t i = 0; i < nproj; i++) st->projection[i] = req->projection ? req->projection[i] : i;
    st->nprojection = nproj;
    st->batch_size = req->batch_size > 0 ? req->batch_size : 8192;
    df_errkind k = df_schema_project(p->schema, st->projection, nproj, &plan->schema, err);
    if (k != DF_OK) {
        free_plan(p, plan);
        return k;
    }
    plan->estimated_rows = 0;
    for (int64_t i = 0; i < mp->nbatches; i++) {
        plan->units[i] = i;
        plan->estimated_rows += mp->batches[i]->nrows;
    }
    plan->nunits = mp->nbatches;
    atomic_store(&m->files_total, mp->nbatches);
    atomic_store(&m->files_planned, mp->nbatches);
    *out = plan;
    return DF_OK;
}

static df_errkind open_unit(df_table_provider *p, df_scan_plan *plan, int64_t i, df_batch_stream **out, df_error *err) {
    memory_provider *mp = (memory_provider *)p;
    plan_state *st = plan->provider_state;
    *out = NULL;
    if (i < 0 || i >= plan->nunits) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "scan unit %lld out of range", (long long)i);
    unit_stream *u = df_calloc(1, sizeof *u);
    if (!u) return DF_OOM(err);
    df_errkind k = df_batch_project(mp->batches[plan->units[i]], st->projection, st->nprojection, &u->batch, err);
    if (k != DF_OK) {
        df_free(u);
        return k;
    }
    u->base.vt = &unit_stream_vt;
    u->base.schema = df_schema_retain(plan->schema);
    u->batch_size = st->batch_size;
    u->metrics = plan->metrics;
    atomic_fetch_add_explicit(&plan->metrics->files_opened, 1, memory_order_relaxed);
    *out = &u->base;
    return DF_OK;
}

static void destroy(df_table_provider *p) {
    memory_provider *mp = (memory_provider *)p;
    for (int64_t i = 0; i < mp->nbatches; i++) df_batch_release(mp->batches[i]);
    df_free(mp->batches);
    df_schema_release(p->schema);
    df_free(mp);
}

static const df_table_provider_vt memory_vt = {plan_scan, open_unit, free_plan, destroy};

df_errkind df_memory_provider_new(df_schema *schema, df_batch *const *batches, int64_t nbatches,
                                  df_table_provider **out, df_error *err) {
    *out = NULL;
    for (int64_t i = 0; i < nbatches; i++)
        if (!df_schema_equals(batches[i]->schema, schema))
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "batch %lld does not match the table schema", (long long)i);
    memory_provider *mp = df_calloc(1, sizeof *mp);
    if (!mp) return DF_OOM(err);
    mp->batches = df_calloc((size_t)DF_MAX(nbatches, 1), sizeof(df_batch *));
    if (!mp->batches) {
        df_free(mp);
        return DF_OOM(err);
    }
    for (int64_t i = 0; i < nbatches; i++) mp->batches[i] = df_batch_retain(batches[i]);
    mp->nbatches = nbatches;
    mp->base.vt = &memory_vt;
    atomic_init(&mp->base.refs, 1);
    mp->base.schema = df_schema_retain(schema);
    mp->base.kind = "memory";
    *out = &mp->base;
    return DF_OK;
}
