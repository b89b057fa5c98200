/*
 * The Delta table provider: a snapshot seen through df_table_provider.
 *
 * Units are the active files in path order.  Planning keeps a file unless
 * its partition values or its statistics prove that no row matches the
 * pushed predicates.  Opening a unit reads the Parquet footer only; the
 * stream then pulls batches lazily and turns each into a table batch:
 *
 *   - data columns are found in the file by physical name (column mapping)
 *     and conformed to the table type (renames, widening, casts);
 *   - partition columns are constant vectors built once per unit at batch
 *     size and sliced for shorter batches;
 *   - columns absent from an old file are all-null constants;
 *   - pushed predicates on data columns read with the table type go to the
 *     Parquet reader, which prunes row groups with them and evaluates them
 *     row by row before decoding the other columns (late materialisation:
 *     pages without a surviving row are not even decompressed);
 *   - the deletion vector, decoded once per unit as a sorted row list, is
 *     handed to the Parquet reader too, which drops those file rows.
 *
 * A projection without data columns (COUNT(*), partition columns only)
 * reads no column data at all: batches are synthesised from row-group row
 * counts (we choose the row groups ourselves, with the file's row-group
 * statistics, so every batch's first file row is known for the deletion
 * vector).
 */
#include "delta/delta_int.h"
#include "parquet/parquet.h"

typedef struct delta_provider {
    df_table_provider base;     /* vtable, refs, schema, kind */
    df_delta_snapshot *snap;    /* one reference */
} delta_provider;

typedef struct plan_state {
    int32_t nproj;              /* output columns */
    int32_t *proj;              /* provider column per output column (owned) */
    int32_t npreds;             /* pushed predicates */
    df_scan_predicate *preds;   /* deep copies (owned, values owned) */
    int64_t limit;              /* row hint, -1 = all */
    int32_t batch_size;         /* rows per batch */
} plan_state;

static void plan_state_free(plan_state *ps) {
    if (!ps) return;
    for (int32_t i = 0; i < ps->npreds; i++) {
        for (int32_t v = 0; v < ps->preds[i].nvalues; v++) df_scalar_clear(&ps->preds[i].values[v]);
        df_free(ps->preds[i].values);
    }
    df_free(ps->preds);
    df_free(ps->proj);
    df_free(ps);
}

static df_errkind copy_request(const df_schema *schema, const df_scan_request *req, plan_state **out, df_error *err) {
    plan_state *ps = df_calloc(1, sizeof *ps);
    if (!ps) return DF_OOM(err);
    *out = ps;
    ps->limit = req->limit;
    ps->batch_size = req->batch_size > 0 ? req->batch_size : 8192;
    ps->nproj = req->projection ? req->nprojection : schema->nfields;
    ps->proj = df_malloc((size_t)(ps->nproj ? ps->nproj : 1) * sizeof(int32_t));
    if (!ps->proj) return DF_OOM(err);
    for (int32_t i = 0; i < ps->nproj; i++) {
        ps->proj[i] = req->projection ? req->projection[i] : i;
        if (ps->proj[i] < 0 || ps->proj[i] >= schema->nfields)
            DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "projection column %d out of range", (int)ps->proj[i]);
    }
    if (req->npredicates > 0) {
        ps->preds = df_calloc((size_t)req->npredicates, sizeof *ps->preds);
        if (!ps->preds) return DF_OOM(err);
    }
    for (int32_t i = 0; i < req->npredicates; i++) {
        const df_scan_predicate *src = &req->predicates[i];
        if (src->column < 0 || src->column >= schema->nfields || src->nvalues < 0)
            DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "predicate column %d out of range", (int)src->column);
        df_scan_predicate *d = &ps->preds[ps->npreds++];
        *d = (df_scan_predicate){src->column, src->op, 0, NULL};
        if (src->nvalues > 0) {
            d->values = df_calloc((size_t)src->nvalues, sizeof *d->values);
            if (!d->values) return DF_OOM(err);
            for (int32_t v = 0; v < src->nvalues; v++, d->nvalues++)
                DF_TRY(df_scalar_copy(&d->values[v], &src->values[v], err));
        }
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */

/* Data-column predicates usable on statistics: (predicate index, column) pairs. */
typedef struct stats_preds {
    int32_t n;                  /* predicates on non-partition columns */
    int32_t *pred;              /* predicate index (owned) */
    int32_t *field;             /* its schema column (owned) */
    df_column_stats *stats;     /* scratch, one per entry (owned) */
} stats_preds;

static bool file_may_match(const df_delta_snapshot *s, int64_t i, const plan_state *ps, stats_preds *sp,
                           df_arena *scratch) {
    for (int32_t k = 0; k < ps->npreds; k++) {
        int32_t p = df__delta_partition_index(s, ps->preds[k].column);
        if (p >= 0 && !df_scan_predicate_matches_value(&ps->preds[k], df__delta_pvalue(s, i, p))) return false;
    }
    const df__delta_add *f = &s->files[i];
    if (sp->n == 0 || !f->stats) return true;
    df_arena_reset(scratch);
    int64_t nrec = -1;
    /* Statistics that do not parse only cost pruning, never correctness. */
    if (df__delta_stats_columns(s, f->stats, scratch, sp->field, sp->n, sp->stats, &nrec, NULL) != DF_OK) return true;
    bool keep = true;
    for (int32_t k = 0; k < sp->n && keep; k++)
        keep = df_scan_predicate_may_match(&ps->preds[sp->pred[k]], &sp->stats[k], nrec);
    for (int32_t k = 0; k < sp->n; k++) {
        df_scalar_clear(&sp->stats[k].min);
        df_scalar_clear(&sp->stats[k].max);
    }
    return keep;
}

static df_errkind select_units(df_delta_snapshot *s, const plan_state *ps, df_scan_plan *plan, df_error *err) {
    stats_preds sp = {0};
    sp.pred = df_malloc((size_t)(ps->npreds + 1) * sizeof(int32_t));
    sp.field = df_malloc((size_t)(ps->npreds + 1) * sizeof(int32_t));
    sp.stats = df_calloc((size_t)(ps->npreds + 1), sizeof(df_column_stats));
    plan->units = df_malloc((size_t)(s->nfiles ? s->nfiles : 1) * sizeof(int64_t));
    if (!sp.pred || !sp.field || !sp.stats || !plan->units) {
        df_free(sp.pred);
        df_free(sp.field);
        df_free(sp.stats);
        return DF_OOM(err);
    }
    for (int32_t k = 0; k < ps->npreds; k++) {
        if (df__delta_partition_index(s, ps->preds[k].column) >= 0) continue;
        sp.pred[sp.n] = k;
        sp.field[sp.n++] = ps->preds[k].column;
    }
    df_arena scratch;
    df_arena_init(&scratch, 16 * 1024, 0);
    int64_t rows = 0;
    bool rows_known = true;
    for (int64_t i = 0; i < s->nfiles; i++) {
        if (!file_may_match(s, i, ps, &sp, &scratch)) continue;
        plan->units[plan->nunits++] = i;
        const df__delta_add *f = &s->files[i];
        if (f->num_records < 0) rows_known = false;
        else rows += f->num_records - (f->dv.storage ? f->dv.cardinality : 0);
    }
    df_arena_destroy(&scratch);
    df_free(sp.pred);
    df_free(sp.field);
    df_free(sp.stats);
    plan->estimated_rows = rows_known ? rows : -1;
    return DF_OK;
}

static void free_plan(df_table_provider *p, df_scan_plan *plan) {
    (void)p;
    if (!plan) return;
    df_schema_release(plan->schema);
    df_free(plan->units);
    df_free(plan->metrics);
    plan_state_free(plan->provider_state);
    df_free(plan);
}

static df_errkind plan_scan(df_table_provider *p, const df_scan_request *req, df_scan_plan **out, df_error *err) {
    *out = NULL;
    delta_provider *dp = (delta_provider *)p;
    df_delta_snapshot *s = dp->snap;
    DF_TRY(df__delta_snapshot_prepare_partitions(s, err));
    DF_TRY(df__delta_snapshot_prepare_stats(s, err));
    df_scan_plan *plan = df_calloc(1, sizeof *plan);
    if (!plan) return DF_OOM(err);
    plan->provider = p;
    plan->metrics = df_calloc(1, sizeof *plan->metrics);
    plan_state *ps = NULL;
    df_errkind k = plan->metrics ? copy_request(p->schema, req, &ps, err) : DF_OOM(err);
    plan->provider_state = ps;
    if (k == DF_OK) k = df_schema_project(p->schema, ps->proj, ps->nproj, &plan->schema, err);
    if (k == DF_OK) k = select_units(s, ps, plan, err);
    if (k != DF_OK) {
        free_plan(p, plan);
        return k;
    }
    atomic_store_explicit(&plan->metrics->files_total, s->nfiles, memory_order_relaxed);
    atomic_store_explicit(&plan->metrics->files_pruned, s->nfiles - plan->nunits, memory_order_relaxed);
    atomic_store_explicit(&plan->metrics->files_planned, plan->nunits, memory_order_relaxed);
    *out = plan;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Unit streams                                                              */

typedef struct unit_stream {
    df_batch_stream base;       /* vtable + output schema (reference) */
    const df_delta_snapshot *snap;   /* borrowed (the provider outlives its plans) */
    const plan_state *ps;       /* borrowed from the plan */
    df_scan_metrics *m;         /* the plan's counters */
    const df__delta_add *file;  /* the unit's file */
    df_batch_stream *reader;    /* Parquet stream over the data columns; NULL when none are needed */
    int32_t *src;               /* per output column: reader column, or -1 for a constant */
    df_vec **consts;            /* per output column: constant vector of batch_size rows (or NULL) */
    int32_t nrgs;               /* row groups read, in file order */
    int64_t *rg_first;          /* first file row of each read row group */
    int64_t *rg_rows;           /* rows of each read row group */
    int32_t rg_pos;             /* current row group (index into the arrays above) */
    int64_t rg_done;            /* rows of the current row group already produced */
    uint64_t *deleted;          /* sorted deleted file rows (deletion vector), owned */
    int64_t ndeleted;           /* entries of deleted (the reader applies them when there is one) */
    uint8_t *sel;               /* selection bitmap scratch (batch_size bits), synthesised batches */
    int64_t produced;           /* rows returned so far */
    bool done;                  /* end reached (or failed) */
} unit_stream;

static void unit_close(df_batch_stream *bs) {
    unit_stream *u = (unit_stream *)bs;
    if (!u) return;
    df_batch_stream_close(u->reader);
    if (u->consts)
        for (int32_t j = 0; j < u->ps->nproj; j++) df_vec_release(u->consts[j]);
    df_free(u->consts);
    df_free(u->src);
    df_free(u->rg_first);
    df_free(u->rg_rows);
    df_free(u->deleted);
    df_free(u->sel);
    df_schema_release(u->base.schema);
    df_free(u);
}

/* Advances the row-group cursor by n rows; returns the file row of the first of them. */
static int64_t advance_rows(unit_stream *u, int64_t n) {
    while (u->rg_pos < u->nrgs && u->rg_done >= u->rg_rows[u->rg_pos]) {
        u->rg_pos++;
        u->rg_done = 0;
    }
    int64_t first = u->rg_pos < u->nrgs ? u->rg_first[u->rg_pos] + u->rg_done : -1;
    u->rg_done += n;
    return first;
}

/* Builds the selection mask for rows [first, first + n); returns the rows kept. */
static int64_t deletion_mask(unit_stream *u, int64_t first, int64_t n) {
    uint64_t lo = (uint64_t)first, hi = (uint64_t)(first + n);
    int64_t a = 0, b = u->ndeleted;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (u->deleted[mid] < lo) a = mid + 1;
        else b = mid;
    }
    if (a >= u->ndeleted || u->deleted[a] >= hi) return n;
    df_bitmap_fill(u->sel, 0, n, true);
    int64_t removed = 0;
    for (int64_t k = a; k < u->ndeleted && u->deleted[k] < hi; k++, removed++) df_bit_clear(u->sel, (int64_t)(u->deleted[k] - lo));
    return n - removed;
}

/* Output column j for a batch of n rows read as `b` (NULL when synthesised). */
static df_errkind output_column(unit_stream *u, int32_t j, df_batch *b, int64_t n, df_vec **out, df_error *err) {
    if (u->src[j] >= 0) {
        const df__delta_column *col = &u->snap->schema.columns[u->ps->proj[j]];
        return df__delta_conform(b->cols[u->src[j]], col, out, err);
    }
    df_vec *c = u->consts[j];
    if (n == c->length) {
        *out = df_vec_retain(c);
        return DF_OK;
    }
    if (n < c->length) return df_vec_slice(c, 0, n, out, err);
    return df_error_set(err, DF_ERR_INTERNAL, "batch of %lld rows exceeds the batch size", (long long)n);
}

/*
 * The next batch of the unit.  With a Parquet reader, its batches already
 * hold only the rows kept (predicates, deletion vector) and it keeps the
 * row and batch counters; synthesised batches (no data column) apply the
 * deletion vector here and count themselves.
 */
static df_errkind unit_next(df_batch_stream *bs, df_batch **out, df_error *err) {
    unit_stream *u = (unit_stream *)bs;
    *out = NULL;
    int32_t ncols = u->ps->nproj;
    while (!u->done) {
        if (u->ps->limit >= 0 && u->produced >= u->ps->limit) break;
        df_batch *b = NULL;
        int64_t n, keep;
        if (u->reader) {
            DF_TRY(df_batch_stream_next(u->reader, &b, err));
            if (!b) break;
            n = keep = b->nrows;
        } else {
            advance_rows(u, 0);
            if (u->rg_pos >= u->nrgs) break;
            n = DF_MIN((int64_t)u->ps->batch_size, u->rg_rows[u->rg_pos] - u->rg_done);
            int64_t first = advance_rows(u, n);
            keep = u->ndeleted ? deletion_mask(u, first, n) : n;
            if (keep < n)
                atomic_fetch_add_explicit(&u->m->deletion_vector_rows_deleted, n - keep, memory_order_relaxed);
        }
        if (keep == 0) {
            df_batch_release(b);
            continue;
        }
        df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof *cols);
        df_errkind k = cols ? DF_OK : DF_OOM(err);
        for (int32_t j = 0; j < ncols && k == DF_OK; j++) {
            df_vec *c = NULL;
            k = output_column(u, j, b, n, &c, err);
            if (k == DF_OK && keep < n) {
                k = df_vec_filter(c, u->sel, keep, &cols[j], err);
                df_vec_release(c);
            } else {
                cols[j] = c;
            }
        }
        df_batch_release(b);
        if (k != DF_OK) {
            for (int32_t j = 0; cols && j < ncols; j++) df_vec_release(cols[j]);
            df_free(cols);
            return k;
        }
        k = df_batch_new(u->base.schema, cols, keep, out, err);
        df_free(cols);
        if (k != DF_OK) return k;
        u->produced += keep;
        if (!u->reader) {
            atomic_fetch_add_explicit(&u->m->rows_produced, keep, memory_order_relaxed);
            atomic_fetch_add_explicit(&u->m->batches_produced, 1, memory_order_relaxed);
        }
        return DF_OK;
    }
    if (!u->done) atomic_fetch_add_explicit(&u->m->files_completed, 1, memory_order_relaxed);
    u->done = true;
    return DF_OK;
}

static const df_batch_stream_vt unit_vt = {unit_next, unit_close};

/* Index of the file's top-level field holding table column `col`, or -1. */
static int32_t file_field(const df_schema *fs, const df__delta_column *col) {
    int32_t f = df_schema_find(fs, col->physical);
    if (f < 0) f = df_schema_find(fs, col->name);
    if (f < 0) f = df_schema_find_ci(fs, col->physical);
    return f < 0 ? -1 : f;
}

/* Chooses the row groups (statistics pruning) and records their row spans. */
static df_errkind choose_row_groups(unit_stream *u, df_parquet_file *pf, const df_scan_predicate *fpreds, int32_t nfp,
                                    int32_t **rgs, df_error *err) {
    int32_t total = df_parquet_file_num_row_groups(pf);
    *rgs = df_malloc((size_t)(total ? total : 1) * sizeof(int32_t));
    u->rg_first = df_malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    u->rg_rows = df_malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    if (!*rgs || !u->rg_first || !u->rg_rows) return DF_OOM(err);
    int64_t row = 0;
    for (int32_t g = 0; g < total; g++) {
        int64_t rows = df_parquet_file_row_group_num_rows(pf, g);
        if (nfp == 0 || df_parquet_row_group_may_match(pf, g, fpreds, nfp)) {
            (*rgs)[u->nrgs] = g;
            u->rg_first[u->nrgs] = row;
            u->rg_rows[u->nrgs++] = rows;
        }
        row += rows;
    }
    atomic_fetch_add_explicit(&u->m->row_groups_total, total, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->m->row_groups_pruned, total - u->nrgs, memory_order_relaxed);
    return DF_OK;
}

/* Maps output columns to file fields or constants; fills the read list. */
static df_errkind map_columns(unit_stream *u, int64_t unit, const df_schema *fs, int32_t *read, int32_t *nread,
                              df_error *err) {
    const df_delta_snapshot *s = u->snap;
    int32_t bs = u->ps->batch_size;
    for (int32_t j = 0; j < u->ps->nproj; j++) {
        int32_t field = u->ps->proj[j];
        int32_t p = df__delta_partition_index(s, field);
        const df__delta_column *col = &s->schema.columns[field];
        int32_t ff = p >= 0 ? -1 : file_field(fs, col);
        u->src[j] = -1;
        if (ff >= 0) {
            if (!df__delta_conform_possible(fs->fields[ff].type, col)) {
                df_vec *probe = NULL;
                df_errkind k = df_vec_new_nulls(fs->fields[ff].type, 0, &probe, err);
                if (k == DF_OK) k = df__delta_conform(probe, col, &u->consts[j], err);
                df_vec_release(probe);
                df_vec_release(u->consts[j]);
                u->consts[j] = NULL;
                if (k != DF_OK) return k;
            }
            int32_t r = 0;
            while (r < *nread && read[r] != ff) r++;
            if (r == *nread) read[(*nread)++] = ff;
            u->src[j] = r;
        } else if (p >= 0) {
            DF_TRY(df_vec_from_scalar(df__delta_pvalue(s, unit, p), bs, &u->consts[j], err));
        } else {
            DF_TRY(df_vec_new_nulls(col->type, bs, &u->consts[j], err));
        }
    }
    return DF_OK;
}

/*
 * Predicates the file's row-group statistics can answer: data columns read
 * from the file with exactly the table type, renumbered to file fields.
 * Reader columns in `read` are in output order of the reader, so the
 * reader's output schema follows `read`; statistics are addressed by file
 * field index.
 */
static int32_t file_predicates(const unit_stream *u, const df_schema *fs, df_scan_predicate *out) {
    int32_t n = 0;
    for (int32_t k = 0; k < u->ps->npreds; k++) {
        const df_scan_predicate *p = &u->ps->preds[k];
        if (df__delta_partition_index(u->snap, p->column) >= 0) continue;
        const df__delta_column *col = &u->snap->schema.columns[p->column];
        int32_t ff = file_field(fs, col);
        if (ff < 0 || !df_type_equals(fs->fields[ff].type, col->type)) continue;
        out[n] = *p;
        out[n++].column = ff;
    }
    return n;
}

/*
 * Opens the unit's data: a Parquet stream over the data columns (pruning
 * row groups, filtering rows and dropping deleted rows itself), or, when no
 * data column is projected, the row-group spans batches are synthesised
 * from.  The deletion vector must be loaded before.
 */
static df_errkind open_data(unit_stream *u, df_parquet_file *pf, int64_t unit, df_error *err) {
    const df_schema *fs = df_parquet_file_schema(pf);
    int32_t nproj = u->ps->nproj;
    int32_t *read = df_malloc((size_t)(nproj ? nproj : 1) * sizeof(int32_t));
    df_scan_predicate *fpreds = df_malloc((size_t)(u->ps->npreds ? u->ps->npreds : 1) * sizeof *fpreds);
    int32_t *rgs = NULL, nread = 0;
    df_errkind k = read && fpreds ? map_columns(u, unit, fs, read, &nread, err) : DF_OOM(err);
    int32_t nfp = k == DF_OK ? file_predicates(u, fs, fpreds) : 0;
    if (k == DF_OK && nread == 0) k = choose_row_groups(u, pf, fpreds, nfp, &rgs, err);
    if (k == DF_OK && nread > 0) {
        df_parquet_read_options o = {
            .columns = read,
            .ncolumns = nread,
            .batch_size = u->ps->batch_size,
            .predicates = fpreds,
            .npredicates = nfp,
            .filter_rows = true,
            .deleted_rows = u->deleted,
            .ndeleted_rows = u->ndeleted,
            .limit = u->ps->limit < 0 ? 0 : u->ps->limit,
            .metrics = u->m,
        };
        k = df_parquet_reader_open(pf, &o, &u->reader, err);
    }
    df_free(read);
    df_free(fpreds);
    df_free(rgs);
    return k;
}

static df_errkind open_unit(df_table_provider *p, df_scan_plan *plan, int64_t i, df_batch_stream **out, df_error *err) {
    *out = NULL;
    delta_provider *dp = (delta_provider *)p;
    if (i < 0 || i >= plan->nunits) DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "unit %lld out of range", (long long)i);
    int64_t unit = plan->units[i];
    unit_stream *u = df_calloc(1, sizeof *u);
    if (!u) return DF_OOM(err);
    u->base.vt = &unit_vt;
    u->base.schema = df_schema_retain(plan->schema);
    u->snap = dp->snap;
    u->ps = plan->provider_state;
    u->m = plan->metrics;
    u->file = &dp->snap->files[unit];
    int32_t nproj = u->ps->nproj;
    u->src = df_malloc((size_t)(nproj ? nproj : 1) * sizeof(int32_t));
    u->consts = df_calloc((size_t)(nproj ? nproj : 1), sizeof(df_vec *));
    u->sel = df_malloc((size_t)df_bitmap_bytes(u->ps->batch_size) + 8);
    df_errkind k = u->src && u->consts && u->sel ? DF_OK : DF_OOM(err);
    atomic_fetch_add_explicit(&u->m->files_opened, 1, memory_order_relaxed);
    df_input *in = NULL;
    df_parquet_file *pf = NULL;
    if (k == DF_OK && u->file->dv.storage) {
        k = df__delta_dv_load(dp->snap->store, &u->file->dv, &u->deleted, &u->ndeleted, err);
        if (k == DF_OK) atomic_fetch_add_explicit(&u->m->deletion_vectors_applied, 1, memory_order_relaxed);
    }
    if (k == DF_OK) k = dp->snap->store->vt->open_input(dp->snap->store, u->file->location, &in, err);
    if (k == DF_OK) k = df_parquet_file_open(in, &pf, err);
    if (k == DF_OK) k = open_data(u, pf, unit, err);
    df_parquet_file_close(pf);
    if (k != DF_OK) {
        if (k != DF_ERR_OUT_OF_MEMORY) df_error_prefix(err, "%s", u->file->path);
        unit_close(&u->base);
        return k;
    }
    *out = &u->base;
    return DF_OK;
}

static void destroy(df_table_provider *p) {
    delta_provider *dp = (delta_provider *)p;
    df_schema_release(p->schema);
    df_delta_snapshot_close(dp->snap);
    df_free(dp);
}

static const df_table_provider_vt provider_vt = {plan_scan, open_unit, free_plan, destroy};

df_errkind df_delta_provider_new(df_delta_snapshot *s, df_table_provider **out, df_error *err) {
    *out = NULL;
    delta_provider *dp = df_calloc(1, sizeof *dp);
    if (!dp) return DF_OOM(err);
    dp->base.vt = &provider_vt;
    atomic_init(&dp->base.refs, 1);
    dp->base.schema = df_schema_retain(s->schema.schema);
    dp->base.kind = "delta";
    dp->base.version = df_delta_snapshot_version(s);
    dp->snap = df_delta_snapshot_retain(s);
    *out = &dp->base;
    return DF_OK;
}
