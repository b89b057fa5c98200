/*
 * Opening Parquet files and streaming their row groups as batches.
 *
 * Open: the last 8 bytes hold the footer length and the "PAR1" magic
 * ("PARE" marks an encrypted footer, which we refuse); the footer is read
 * into memory, decoded (metadata.c) into an arena whose limit scales with
 * the footer size, and converted to an Arrow schema (schema_map.c).
 *
 * Streams: a stream owns one column reader per projected leaf for the
 * current row group.  Each next() asks every reader for the same number of
 * records (rows), then assembles each output field from its leaves.  Row
 * groups are opened only when reached, and pages only when needed, so a
 * consumer that stops early reads little.
 */
#include "parquet/assemble.h"
#include "parquet/reader_int.h"

#include <stdatomic.h>

#define DEFAULT_BATCH 8192

/* ---- files ------------------------------------------------------------------ */

static void file_free(df_parquet_file *f) {
    df__parquet_schema_free(&f->schema);
    df_arena_destroy(&f->arena);
    df_free(f->footer);
    df_input_close(f->in);
    df_free(f);
}

static df_errkind read_footer(df_parquet_file *f, df_error *err) {
    df_input *in = f->in;
    if (in->size < 12)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "not a Parquet file: %llu bytes is too small",
                            (unsigned long long)in->size);
    uint8_t tail[8], head[4];
    DF_TRY(df_input_read_at(in, in->size - 8, tail, 8, err));
    DF_TRY(df_input_read_at(in, 0, head, 4, err));
    if (memcmp(tail + 4, "PARE", 4) == 0)
        return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "Parquet modular encryption is not supported");
    if (memcmp(tail + 4, "PAR1", 4) != 0)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "not a Parquet file: no PAR1 magic at the end");
    if (memcmp(head, "PAR1", 4) != 0 && memcmp(head, "PARE", 4) != 0)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "not a Parquet file: no PAR1 magic at the start");
    uint32_t len = df_load_le32(tail);
    if ((uint64_t)len > in->size - 12)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "Parquet footer of %u bytes does not fit a %llu-byte file",
                            len, (unsigned long long)in->size);
    f->data_end = in->size - 8 - len;
    f->footer = df_malloc(len ? len : 1);
    if (!f->footer) return DF_OOM(err);
    DF_TRY(df_input_read_at(in, f->data_end, f->footer, len, err));
    /* Decoded structures may take a few times the footer's bytes; more means a hostile footer. */
    df_arena_init(&f->arena, 64 * 1024, (size_t)len * 64 + (1u << 20));
    return df__parquet_parse_file_meta(f->footer, len, &f->arena, &f->meta, err);
}

static df_errkind check_row_groups(df_parquet_file *f, df_error *err) {
    int64_t rows = 0;
    for (uint32_t i = 0; i < f->meta.nrow_groups; i++) {
        const pq_row_group *g = &f->meta.row_groups[i];
        if ((int64_t)g->ncolumns != f->schema.nleaves)
            return df_error_set(err, DF_ERR_PARQUET_FORMAT, "row group %u has %u columns, the schema %d", i,
                                g->ncolumns, f->schema.nleaves);
        if (__builtin_add_overflow(rows, g->num_rows, &rows))
            return df_error_set(err, DF_ERR_PARQUET_FORMAT, "row counts overflow");
    }
    f->num_rows = rows;
    return DF_OK;
}

df_errkind df_parquet_file_open(df_input *in, df_parquet_file **out, df_error *err) {
    *out = NULL;
    if (!in) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no input");
    df_parquet_file *f = df_calloc(1, sizeof *f);
    if (!f) {
        df_input_close(in);
        return DF_OOM(err);
    }
    atomic_init(&f->refs, 1);
    f->in = in;
    f->size = in->size;
    df_errkind k = read_footer(f, err);
    if (k == DF_OK && f->meta.encrypted)
        k = df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "Parquet modular encryption is not supported");
    if (k == DF_OK) k = df__parquet_schema_build(f->meta.schema, f->meta.nschema, &f->schema, err);
    if (k == DF_OK) k = check_row_groups(f, err);
    if (k != DF_OK) {
        file_free(f);
        return k;
    }
    *out = f;
    return DF_OK;
}

df_errkind df_parquet_file_open_path(const char *path, df_parquet_file **out, df_error *err) {
    *out = NULL;
    df_input *in;
    DF_TRY(df_input_open_file(path, &in, err));
    return df_parquet_file_open(in, out, err);
}

df_parquet_file *df_parquet_file_retain(df_parquet_file *f) {
    if (f) atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    return f;
}

void df_parquet_file_close(df_parquet_file *f) {
    if (f && atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1) file_free(f);
}

const df_schema *df_parquet_file_schema(const df_parquet_file *f) { return f->schema.arrow; }
int64_t df_parquet_file_num_rows(const df_parquet_file *f) { return f->num_rows; }
int32_t df_parquet_file_num_row_groups(const df_parquet_file *f) { return (int32_t)f->meta.nrow_groups; }
int32_t df_parquet_file_num_leaves(const df_parquet_file *f) { return f->schema.nleaves; }
uint64_t df_parquet_file_size(const df_parquet_file *f) { return f->size; }
const char *df_parquet_file_created_by(const df_parquet_file *f) { return f->meta.created_by; }

int64_t df_parquet_file_row_group_num_rows(const df_parquet_file *f, int32_t rg) {
    if (rg < 0 || (uint32_t)rg >= f->meta.nrow_groups) return -1;
    return f->meta.row_groups[rg].num_rows;
}

bool df_parquet_file_leaf(const df_parquet_file *f, int32_t leaf, df_parquet_leaf_info *out) {
    if (leaf < 0 || leaf >= f->schema.nleaves) return false;
    const pq_leaf *l = &f->schema.leaves[leaf];
    out->path = l->path;
    out->field = l->field;
    out->physical = (df_parquet_physical)l->physical;
    out->type_length = l->type_length;
    out->max_def = l->max_def;
    out->max_rep = l->max_rep;
    return true;
}

int32_t df_parquet_file_find_leaf(const df_parquet_file *f, const char *path) {
    for (int32_t i = 0; path && i < f->schema.nleaves; i++)
        if (strcmp(f->schema.leaves[i].path, path) == 0) return i;
    return -1;
}

const char *df_parquet_file_metadata(const df_parquet_file *f, const char *key) {
    for (uint32_t i = 0; key && i < f->meta.nkv; i++)
        if (strcmp(f->meta.kv[i].key, key) == 0) return f->meta.kv[i].value;
    return NULL;
}

/* ---- streams ------------------------------------------------------------------- */

typedef struct pq_stream {
    df_batch_stream base;           /* vtable and output schema */
    df_parquet_file *file;          /* one reference */
    int32_t nfields;                /* output fields */
    const pq_node **fields;         /* their nodes (original or pruned copies) */
    pq_node *pruned;                /* owned pruned copies (leaf projection), or NULL */
    int32_t *leaves;                /* leaf indices read, ascending */
    int32_t nleaves;
    int32_t *rgs;                   /* row groups to read, in order */
    int32_t nrgs;
    int32_t rg_pos;                 /* next entry of rgs to open */
    int32_t cur_rg;                 /* row group being read, -1 before the first */
    int64_t rg_rows_left;           /* rows of the current row group not yet produced */
    int64_t rg_row;                 /* file row number of the current row group's next row */
    int32_t batch_size;
    int64_t limit_left;             /* rows still wanted (INT64_MAX = all) */
    pq_column_reader *readers;      /* one per entry of `leaves` */
    bool readers_live;              /* readers hold a row group's state */
    pq_leaf_out *outs;              /* indexed by leaf index (file-wide) */
    pq_codec_ctx codec;
    bool verify_crc;
    bool done;
    df_scan_metrics *metrics;       /* may be NULL */
    /* Row filtering (read_filtered); unused when `filtering` is false. */
    bool filtering;                 /* predicates or deleted rows select rows */
    df_scan_predicate *preds;       /* row-evaluable predicates (values owned) */
    int32_t npreds;
    int32_t *pred_filter;           /* per predicate: the filter field it reads */
    int32_t nfilter;                /* filter fields: flat top-level fields some predicate reads */
    const pq_node **filter_nodes;   /* their nodes */
    bool *leaf_filter;              /* per entry of `leaves`: the leaf belongs to a filter field */
    int32_t *out_filter;            /* per output field: its filter field, or -1 */
    int64_t *skip_pending;          /* per entry of `leaves`: rows to pass over before its next read */
    const uint64_t *deleted;        /* deleted file rows, ascending (borrowed) */
    int64_t ndeleted;
    int64_t *rg_first_row;          /* per file row group: file row number of its first row */
    uint8_t *sel;                   /* selection of the current window (batch_size bits) */
    df_vec **fvecs;                 /* filter field vectors of the current window */
    df_vec **ovecs;                 /* other output vectors of the current window (scratch) */
} pq_stream;

/* Adds the readers' counters of the row group they hold to the metrics (once). */
static void count_readers(pq_stream *s) {
    if (!s->readers_live) return;
    for (int32_t i = 0; s->metrics && i < s->nleaves; i++) {
        pq_column_reader *cr = &s->readers[i];
        atomic_fetch_add_explicit(&s->metrics->pages_read, cr->data_pages, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->metrics->pages_skipped, cr->pages_skipped, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->metrics->bytes_read, cr->bytes_read, memory_order_relaxed);
    }
    s->readers_live = false;
}

/* Counts and frees the readers (end of stream: their memory goes at once). */
static void clear_readers(pq_stream *s) {
    count_readers(s);
    for (int32_t i = 0; s->readers && i < s->nleaves; i++) df__parquet_column_reader_clear(&s->readers[i]);
}

static void release_vecs(df_vec **v, int32_t n) {
    for (int32_t i = 0; v && i < n; i++) {
        df_vec_release(v[i]);
        v[i] = NULL;
    }
}

static void stream_close(df_batch_stream *base) {
    pq_stream *s = (pq_stream *)base;
    clear_readers(s);
    if (s->outs)
        for (int32_t i = 0; i < s->file->schema.nleaves; i++) df__parquet_leaf_out_clear(&s->outs[i]);
    df_free(s->outs);
    df_free(s->readers);
    if (s->pruned)
        for (int32_t i = 0; i < s->nfields; i++) df__parquet_node_clear(&s->pruned[i]);
    df_free(s->pruned);
    df_free(s->fields);
    df_free(s->leaves);
    df_free(s->rgs);
    for (int32_t i = 0; s->preds && i < s->npreds; i++) {
        for (int32_t v = 0; v < s->preds[i].nvalues; v++) df_scalar_clear(&s->preds[i].values[v]);
        df_free(s->preds[i].values);
    }
    df_free(s->preds);
    df_free(s->pred_filter);
    df_free(s->filter_nodes);
    df_free(s->leaf_filter);
    df_free(s->out_filter);
    df_free(s->skip_pending);
    df_free(s->rg_first_row);
    df_free(s->sel);
    release_vecs(s->fvecs, s->nfilter);
    df_free(s->fvecs);
    release_vecs(s->ovecs, s->nfields);
    df_free(s->ovecs);
    df__parquet_codec_clear(&s->codec);
    df_schema_release(s->base.schema);
    df_parquet_file_close(s->file);
    df_free(s);
}

static df_errkind open_row_group(pq_stream *s, df_error *err) {
    count_readers(s);   /* init below keeps each reader's scratch buffers for the new chunk */
    int32_t rg = s->rgs[s->rg_pos++];
    s->cur_rg = rg;
    s->rg_rows_left = s->file->meta.row_groups[rg].num_rows;
    s->rg_row = s->rg_first_row ? s->rg_first_row[rg] : 0;
    s->readers_live = true;
    for (int32_t i = 0; i < s->nleaves; i++) {
        if (s->skip_pending) s->skip_pending[i] = 0;
        df_errkind k = df__parquet_column_reader_init(&s->readers[i], s->file, rg, s->leaves[i], &s->codec,
                                                      s->verify_crc, err);
        if (k != DF_OK) return k;
    }
    if (s->metrics) atomic_fetch_add_explicit(&s->metrics->row_groups_read, 1, memory_order_relaxed);
    return DF_OK;
}

/* Which readers a step works on: all of them, the filter fields' leaves, or the others. */
typedef enum leaf_set { LEAVES_ALL, LEAVES_FILTER, LEAVES_OTHER } leaf_set;

static bool in_set(const pq_stream *s, int32_t i, leaf_set which) {
    if (which == LEAVES_ALL) return true;
    return s->leaf_filter[i] == (which == LEAVES_FILTER);
}

/*
 * Pre-sizes the outputs so decoding and spreading rarely grow a buffer:
 * flat leaves know their size (one value per row); nested leaves and
 * string bytes use what the previous batch of the leaf needed.
 */
static df_errkind presize_leaf(pq_stream *s, int32_t i, int64_t rows, df_error *err) {
    const pq_column_reader *cr = &s->readers[i];
    pq_leaf_out *o = &s->outs[s->leaves[i]];
    int64_t n = cr->leaf->max_rep > 0 ? o->hint_values + o->hint_values / 8 : rows;
    int64_t bytes = cr->leaf->physical == DF_PARQUET_BYTE_ARRAY ? (n + 1) * 4
                    : cr->leaf->physical == DF_PARQUET_BOOLEAN  ? df_bitmap_bytes(n) + 8
                                                                 : n * DF_MAX(cr->width, 1);
    if (!o->values) {
        o->values = df_buffer_new(DF_MAX(bytes, 64));
        if (!o->values) return DF_OOM(err);
    }
    if (cr->leaf->physical == DF_PARQUET_BYTE_ARRAY && !o->data && o->hint_data > 0) {
        o->data = df_buffer_new(o->hint_data + o->hint_data / 8);
        if (!o->data) return DF_OOM(err);
    }
    if (cr->bit_levels && !o->defbits) {
        o->defbits = df_buffer_new(DF_MAX(df_bitmap_bytes(rows), 64));
        if (!o->defbits) return DF_OOM(err);
    }
    return DF_OK;
}

static df_errkind short_chunk(pq_stream *s, int32_t i, int64_t got, df_error *err) {
    const pq_row_group *g = &s->file->meta.row_groups[s->cur_rg];
    return df_error_set(err, DF_ERR_PARQUET_FORMAT, "column '%s' of row group %d ends after %lld of its %lld rows",
                        s->file->schema.leaves[s->leaves[i]].path, s->cur_rg,
                        (long long)(g->num_rows - s->rg_rows_left + got), (long long)g->num_rows);
}

/* Passes over the rows reader i still has to skip (before reading; see read_filtered). */
static df_errkind flush_skip(pq_stream *s, int32_t i, df_error *err) {
    int64_t n = s->skip_pending ? s->skip_pending[i] : 0;
    if (n == 0) return DF_OK;
    s->skip_pending[i] = 0;
    int64_t got;
    DF_TRY(df__parquet_column_skip(&s->readers[i], n, &got, err));
    return got == n ? DF_OK : short_chunk(s, i, got, err);
}

/* Starts a fresh batch in the outputs of the readers of a set. */
static df_errkind begin_leaves(pq_stream *s, leaf_set which, int64_t rows, df_error *err) {
    for (int32_t i = 0; i < s->nleaves; i++) {
        if (!in_set(s, i, which)) continue;
        DF_TRY(presize_leaf(s, i, rows, err));
        pq_leaf_out *o = &s->outs[s->leaves[i]];
        o->nlevels = o->nvalues = o->records = o->def_ones = 0;
    }
    return DF_OK;
}

/* Appends the next `rows` rows of reader i to its output. */
static df_errkind read_leaf(pq_stream *s, int32_t i, int64_t rows, df_error *err) {
    pq_leaf_out *o = &s->outs[s->leaves[i]];
    int64_t before = o->records;
    DF_TRY(flush_skip(s, i, err));
    DF_TRY(df__parquet_column_read(&s->readers[i], rows, o, err));
    return o->records - before == rows ? DF_OK : short_chunk(s, i, o->records - before, err);
}

/* Records what a batch of each leaf of a set needed (to size the next one). */
static void end_leaves(pq_stream *s, leaf_set which) {
    for (int32_t i = 0; i < s->nleaves; i++) {
        if (!in_set(s, i, which)) continue;
        pq_leaf_out *o = &s->outs[s->leaves[i]];
        o->hint_values = o->nvalues;
        o->hint_data = 0;
        if (s->readers[i].leaf->physical == DF_PARQUET_BYTE_ARRAY && o->values && o->nvalues)
            o->hint_data = ((const int32_t *)(const void *)o->values->data)[o->nvalues];
    }
}

/* Definition bits may now be shared as validity: the leaves of a set start fresh ones next batch. */
static void drop_defbits(pq_stream *s, leaf_set which) {
    for (int32_t i = 0; i < s->nleaves; i++) {
        if (!in_set(s, i, which)) continue;
        df_buffer_release(s->outs[s->leaves[i]].defbits);
        s->outs[s->leaves[i]].defbits = NULL;
    }
}

/* Reads `rows` rows of every leaf of a set. */
static df_errkind read_leaves(pq_stream *s, leaf_set which, int64_t rows, df_error *err) {
    DF_TRY(begin_leaves(s, which, rows, err));
    for (int32_t i = 0; i < s->nleaves; i++)
        if (in_set(s, i, which)) DF_TRY(read_leaf(s, i, rows, err));
    end_leaves(s, which);
    return DF_OK;
}

static df_errkind read_batch(pq_stream *s, int64_t rows, df_batch **out, df_error *err) {
    DF_TRY(read_leaves(s, LEAVES_ALL, rows, err));
    df_vec **cols = df_calloc((size_t)(s->nfields ? s->nfields : 1), sizeof *cols);
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < s->nfields && k == DF_OK; i++)
        k = df__parquet_assemble(s->fields[i], s->outs, s->file->schema.leaves, rows, &cols[i], err);
    if (k != DF_OK) {
        release_vecs(cols, s->nfields);
        df_free(cols);
        return k;
    }
    drop_defbits(s, LEAVES_ALL);
    k = df_batch_new(s->base.schema, cols, rows, out, err);
    df_free(cols);
    return k;
}

/* ---- row filtering ---------------------------------------------------------------- */

/* Index of the first set (want = true) or clear bit of sel in [from, n), or n. */
static int64_t next_bit(const uint8_t *sel, int64_t from, int64_t n, bool want) {
    int64_t i = from;
    while (i < n) {
        if ((i & 63) == 0 && i + 64 <= n) {
            uint64_t w = df_load_le64(sel + (i >> 3));
            if (!want) w = ~w;
            if (w == 0) {
                i += 64;
                continue;
            }
            return i + __builtin_ctzll(w);
        }
        if (df_bit_get(sel, i) == want) return i;
        i++;
    }
    return n;
}

/* Runs of selected rows in the first n bits of sel. */
static int64_t count_runs(const uint8_t *sel, int64_t n) {
    int64_t runs = 0;
    for (int64_t a = next_bit(sel, 0, n, true); a < n; a = next_bit(sel, next_bit(sel, a, n, false), n, true)) runs++;
    return runs;
}

/*
 * Clears the rows of the window [first, first + n) that the deletion list
 * holds (binary search for the window's first entry); returns how many.
 */
static int64_t apply_deletions(pq_stream *s, int64_t first, int64_t n) {
    if (!s->ndeleted) return 0;
    uint64_t lo = (uint64_t)first, hi = (uint64_t)(first + n);
    int64_t a = 0, b = s->ndeleted;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (s->deleted[mid] < lo) a = mid + 1;
        else b = mid;
    }
    int64_t removed = 0;
    for (int64_t k = a; k < s->ndeleted && s->deleted[k] < hi; k++, removed++) df_bit_clear(s->sel, (int64_t)(s->deleted[k] - lo));
    return removed;
}

/*
 * Reads the selected rows of the other (non-filter) leaves as runs: the
 * rows between runs are added to the readers' pending skips, which are
 * passed over just before the next read, so a long gap spanning whole
 * pages skips them unread.
 */
static df_errkind read_runs(pq_stream *s, int64_t n, int64_t count, df_error *err) {
    DF_TRY(begin_leaves(s, LEAVES_OTHER, count, err));
    for (int32_t i = 0; i < s->nleaves; i++) {
        if (s->leaf_filter[i]) continue;
        int64_t pos = 0;
        for (int64_t a = next_bit(s->sel, 0, n, true); a < n;) {
            int64_t b = next_bit(s->sel, a, n, false);
            s->skip_pending[i] += a - pos;
            DF_TRY(read_leaf(s, i, b - a, err));
            pos = b;
            a = next_bit(s->sel, b, n, true);
        }
        s->skip_pending[i] += n - pos;
    }
    end_leaves(s, LEAVES_OTHER);
    return DF_OK;
}

/* Decodes the filter fields of the next n rows and evaluates the selection; returns the rows kept. */
static df_errkind select_rows(pq_stream *s, int64_t n, int64_t *kept, df_error *err) {
    DF_TRY(read_leaves(s, LEAVES_FILTER, n, err));
    for (int32_t f = 0; f < s->nfilter; f++)
        DF_TRY(df__parquet_assemble(s->filter_nodes[f], s->outs, s->file->schema.leaves, n, &s->fvecs[f], err));
    drop_defbits(s, LEAVES_FILTER);
    df_bitmap_fill(s->sel, 0, n, true);
    for (int32_t p = 0; p < s->npreds; p++) df_scan_predicate_eval(&s->preds[p], s->fvecs[s->pred_filter[p]], s->sel);
    int64_t passed = s->npreds ? df_bitmap_count(s->sel, 0, n) : n;
    int64_t deleted = apply_deletions(s, s->rg_row, n);
    *kept = deleted ? df_bitmap_count(s->sel, 0, n) : passed;
    if (s->metrics) {
        atomic_fetch_add_explicit(&s->metrics->rows_filtered, n - passed, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->metrics->deletion_vector_rows_deleted, deleted, memory_order_relaxed);
    }
    return DF_OK;
}

/* Output column i of a filtered window of n rows keeping `kept` (the vectors are all n rows long). */
static df_errkind filtered_column(pq_stream *s, int32_t i, int64_t n, int64_t kept, df_vec **out, df_error *err) {
    df_vec *v = s->out_filter[i] >= 0 ? s->fvecs[s->out_filter[i]] : s->ovecs[i];
    if (kept == n || v->length == kept) {
        *out = df_vec_retain(v);
        return DF_OK;
    }
    return df_vec_filter(v, s->sel, kept, out, err);
}

/*
 * One window of n rows of the current row group through the filter:
 *   1. the filter fields are decoded and every predicate and the deletion
 *      list clear rows from the selection;
 *   2. no row left: the other leaves only add n to their pending skips;
 *   3. few runs of selected rows: the other leaves read just those runs
 *      (row-level skipping, read_runs);
 *   4. otherwise the other leaves read the whole window and every column
 *      is filtered.
 * *out is NULL when no row of the window is kept.
 */
static df_errkind read_filtered(pq_stream *s, int64_t n, df_batch **out, df_error *err) {
    *out = NULL;
    int64_t kept;
    DF_TRY(select_rows(s, n, &kept, err));
    bool sparse = kept < n && count_runs(s->sel, n) * 16 <= n;
    df_errkind k = DF_OK;
    if (kept == 0) {
        for (int32_t i = 0; i < s->nleaves; i++)
            if (!s->leaf_filter[i]) s->skip_pending[i] += n;
    } else if (sparse) {
        k = read_runs(s, n, kept, err);
    } else {
        k = read_leaves(s, LEAVES_OTHER, n, err);
    }
    int64_t rows = sparse ? kept : n;
    for (int32_t i = 0; k == DF_OK && kept > 0 && i < s->nfields; i++)
        if (s->out_filter[i] < 0)
            k = df__parquet_assemble(s->fields[i], s->outs, s->file->schema.leaves, rows, &s->ovecs[i], err);
    if (k == DF_OK && kept > 0) drop_defbits(s, LEAVES_OTHER);
    df_vec **cols = NULL;
    if (k == DF_OK && kept > 0) {
        cols = df_calloc((size_t)(s->nfields ? s->nfields : 1), sizeof *cols);
        if (!cols) k = DF_OOM(err);
        for (int32_t i = 0; k == DF_OK && i < s->nfields; i++) k = filtered_column(s, i, n, kept, &cols[i], err);
        if (k == DF_OK) k = df_batch_new(s->base.schema, cols, kept, out, err);
        else release_vecs(cols, s->nfields);
        df_free(cols);
    }
    release_vecs(s->fvecs, s->nfilter);
    release_vecs(s->ovecs, s->nfields);
    return k;
}

/* ---- the stream ------------------------------------------------------------------ */

/* Produces the next batch, or NULL at the end of the rows wanted. */
static df_errkind produce(pq_stream *s, df_batch **out, df_error *err) {
    for (;;) {
        if (s->limit_left == 0) return DF_OK;
        while (s->rg_rows_left == 0) {
            if (s->rg_pos >= s->nrgs) return DF_OK;
            DF_TRY(open_row_group(s, err));
        }
        int64_t rows = DF_MIN((int64_t)s->batch_size, s->rg_rows_left);
        if (!s->filtering) rows = DF_MIN(rows, s->limit_left);
        DF_TRY(s->filtering ? read_filtered(s, rows, out, err) : read_batch(s, rows, out, err));
        s->rg_rows_left -= rows;
        s->rg_row += rows;
        if (!*out) continue;
        if ((*out)->nrows > s->limit_left) {
            df_batch *b = NULL;
            df_errkind k = df_batch_slice(*out, 0, s->limit_left, &b, err);
            df_batch_release(*out);
            *out = b;
            DF_TRY(k);
        }
        s->limit_left -= (*out)->nrows;
        return DF_OK;
    }
}

static df_errkind stream_next(df_batch_stream *base, df_batch **out, df_error *err) {
    pq_stream *s = (pq_stream *)base;
    *out = NULL;
    if (s->done) return DF_OK;
    df_errkind k = produce(s, out, err);
    if (k != DF_OK || !*out) {
        s->done = true;
        clear_readers(s);
        return k;
    }
    if (s->metrics) {
        atomic_fetch_add_explicit(&s->metrics->rows_produced, (*out)->nrows, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->metrics->batches_produced, 1, memory_order_relaxed);
    }
    if (s->limit_left == 0) clear_readers(s);
    return DF_OK;
}

static const df_batch_stream_vt stream_vt = {stream_next, stream_close};

/* Output fields from top-level field indices. */
static df_errkind select_fields(pq_stream *s, const int32_t *cols, int32_t n, bool *used, df_error *err) {
    const pq_schema *sc = &s->file->schema;
    s->nfields = n;
    s->fields = df_calloc((size_t)(n ? n : 1), sizeof *s->fields);
    if (!s->fields) return DF_OOM(err);
    for (int32_t i = 0; i < n; i++) {
        int32_t c = cols ? cols[i] : i;
        if (c < 0 || c >= sc->root.nchildren)
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "column index %d out of range (%d columns)", c,
                                sc->root.nchildren);
        const pq_node *node = &sc->root.children[c];
        for (int32_t l = node->first_leaf; l < node->first_leaf + node->nleaves; l++) {
            if (used[l]) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "column %d is selected twice", c);
            used[l] = true;
        }
        s->fields[i] = node;
    }
    return DF_OK;
}

/* Marks the leaves under a node (the schema's depth is bounded when it is built). */
static void mark_leaves(const pq_node *n, bool *used) {
    if (n->kind == PQ_NODE_LEAF) used[n->leaf] = true;
    for (int32_t c = 0; c < n->nchildren; c++) mark_leaves(&n->children[c], used);
}

/* Output fields from leaf indices: each top-level field with a selected leaf, pruned. */
static df_errkind select_leaves(pq_stream *s, const int32_t *leaves, int32_t n, bool *used, df_error *err) {
    const pq_schema *sc = &s->file->schema;
    bool *keep = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *keep);
    if (!keep) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < n && k == DF_OK; i++) {
        if (leaves[i] < 0 || leaves[i] >= sc->nleaves)
            k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "leaf index %d out of range (%d leaves)", leaves[i],
                             sc->nleaves);
        else keep[leaves[i]] = true;
    }
    if (k == DF_OK) {
        s->fields = df_calloc((size_t)(sc->root.nchildren ? sc->root.nchildren : 1), sizeof *s->fields);
        s->pruned = df_calloc((size_t)(sc->root.nchildren ? sc->root.nchildren : 1), sizeof *s->pruned);
        if (!s->fields || !s->pruned) k = DF_OOM(err);
    }
    for (int32_t f = 0; k == DF_OK && f < sc->root.nchildren; f++) {
        bool kept;
        k = df__parquet_node_prune(&sc->root.children[f], keep, &s->pruned[s->nfields], &kept, err);
        if (k == DF_OK && kept) {
            s->fields[s->nfields] = &s->pruned[s->nfields];
            s->nfields++;
        }
    }
    /* Maps keep whole key/value subtrees: mark the leaves actually present. */
    for (int32_t f = 0; k == DF_OK && f < s->nfields; f++) mark_leaves(s->fields[f], used);
    df_free(keep);
    return k;
}

static df_errkind select_row_groups(pq_stream *s, const df_parquet_read_options *o, df_error *err) {
    int32_t total = (int32_t)s->file->meta.nrow_groups;
    int32_t n = o && o->row_groups ? o->nrow_groups : total;
    s->rgs = df_calloc((size_t)(n ? n : 1), sizeof *s->rgs);
    if (!s->rgs) return DF_OOM(err);
    for (int32_t i = 0; i < n; i++) {
        int32_t rg = o && o->row_groups ? o->row_groups[i] : i;
        if (rg < 0 || rg >= total)
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "row group %d out of range (%d row groups)", rg, total);
        if (o && o->npredicates > 0 && !df_parquet_row_group_may_match(s->file, rg, o->predicates, o->npredicates)) {
            if (s->metrics) atomic_fetch_add_explicit(&s->metrics->row_groups_pruned, 1, memory_order_relaxed);
            continue;
        }
        s->rgs[s->nrgs++] = rg;
    }
    if (s->metrics) atomic_fetch_add_explicit(&s->metrics->row_groups_total, n, memory_order_relaxed);
    return DF_OK;
}

/*
 * The top-level field a predicate can be evaluated on row by row: a flat
 * primitive field (no repetition) whose Arrow type the literals match.
 * Returns -1 otherwise (the predicate then only prunes row groups).
 */
static int32_t filter_field_of(const pq_stream *s, const df_scan_predicate *p) {
    const pq_schema *sc = &s->file->schema;
    if (p->column < 0 || p->column >= sc->root.nchildren) return -1;
    const pq_node *node = &sc->root.children[p->column];
    if (node->kind != PQ_NODE_LEAF || sc->leaves[node->leaf].max_rep > 0) return -1;
    if (sc->leaves[node->leaf].conv == PQ_CONV_TO_NULL) return -1;
    return df_scan_predicate_evaluable(p, node->field.type) ? p->column : -1;
}

/* Copies the row-evaluable predicates and lists the fields they read (as filter fields). */
static df_errkind setup_predicates(pq_stream *s, const df_parquet_read_options *o, int32_t *filter_cols,
                                   df_error *err) {
    int32_t n = o->npredicates;
    s->preds = df_calloc((size_t)(n ? n : 1), sizeof *s->preds);
    s->pred_filter = df_calloc((size_t)(n ? n : 1), sizeof *s->pred_filter);
    if (!s->preds || !s->pred_filter) return DF_OOM(err);
    for (int32_t i = 0; i < n; i++) {
        const df_scan_predicate *p = &o->predicates[i];
        int32_t col = filter_field_of(s, p);
        if (col < 0) continue;
        int32_t f = 0;
        while (f < s->nfilter && filter_cols[f] != col) f++;
        if (f == s->nfilter) filter_cols[s->nfilter++] = col;
        df_scan_predicate *d = &s->preds[s->npreds++];
        *d = (df_scan_predicate){p->column, p->op, 0, NULL};
        s->pred_filter[s->npreds - 1] = f;
        if (p->nvalues > 0) {
            d->values = df_calloc((size_t)p->nvalues, sizeof *d->values);
            if (!d->values) return DF_OOM(err);
            for (int32_t v = 0; v < p->nvalues; v++, d->nvalues++) DF_TRY(df_scalar_copy(&d->values[v], &p->values[v], err));
        }
    }
    return DF_OK;
}

/*
 * Prepares row filtering: predicates (when filter_rows), deleted rows, the
 * filter fields (read first; a filter field that is not an output column is
 * read for filtering only) and the scratch of one window.
 */
static df_errkind setup_filtering(pq_stream *s, const df_parquet_read_options *o, bool *used, df_error *err) {
    const pq_schema *sc = &s->file->schema;
    int32_t *filter_cols = df_calloc((size_t)(o->npredicates ? o->npredicates : 1), sizeof *filter_cols);
    if (!filter_cols) return DF_OOM(err);
    df_errkind k = o->filter_rows && o->predicates ? setup_predicates(s, o, filter_cols, err) : DF_OK;
    s->deleted = o->deleted_rows;
    s->ndeleted = o->deleted_rows ? o->ndeleted_rows : 0;
    s->filtering = k == DF_OK && (s->npreds > 0 || s->ndeleted > 0);
    if (k == DF_OK && s->filtering) {
        s->filter_nodes = df_calloc((size_t)(s->nfilter ? s->nfilter : 1), sizeof *s->filter_nodes);
        s->fvecs = df_calloc((size_t)(s->nfilter ? s->nfilter : 1), sizeof *s->fvecs);
        s->out_filter = df_malloc((size_t)(s->nfields ? s->nfields : 1) * sizeof *s->out_filter);
        s->ovecs = df_calloc((size_t)(s->nfields ? s->nfields : 1), sizeof *s->ovecs);
        s->sel = df_calloc((size_t)df_bitmap_bytes(s->batch_size) + 8, 1);
        if (!s->filter_nodes || !s->fvecs || !s->out_filter || !s->ovecs || !s->sel) k = DF_OOM(err);
    }
    for (int32_t f = 0; k == DF_OK && s->filtering && f < s->nfilter; f++) {
        const pq_node *node = &sc->root.children[filter_cols[f]];
        s->filter_nodes[f] = node;
        used[node->leaf] = true;
    }
    for (int32_t i = 0; k == DF_OK && s->filtering && i < s->nfields; i++) {
        s->out_filter[i] = -1;
        for (int32_t f = 0; f < s->nfilter; f++)
            if (s->fields[i] == s->filter_nodes[f] ||
                (s->fields[i]->kind == PQ_NODE_LEAF && s->fields[i]->leaf == s->filter_nodes[f]->leaf))
                s->out_filter[i] = f;
    }
    df_free(filter_cols);
    return k;
}

/* Per-leaf filtering state and the file row number of each row group's first row. */
static df_errkind setup_leaf_filtering(pq_stream *s, df_error *err) {
    int32_t nrg = (int32_t)s->file->meta.nrow_groups;
    s->leaf_filter = df_calloc((size_t)(s->nleaves ? s->nleaves : 1), sizeof *s->leaf_filter);
    s->skip_pending = df_calloc((size_t)(s->nleaves ? s->nleaves : 1), sizeof *s->skip_pending);
    s->rg_first_row = df_malloc((size_t)(nrg ? nrg : 1) * sizeof *s->rg_first_row);
    if (!s->leaf_filter || !s->skip_pending || !s->rg_first_row) return DF_OOM(err);
    for (int32_t i = 0; i < s->nleaves; i++)
        for (int32_t f = 0; f < s->nfilter; f++)
            if (s->filter_nodes[f]->leaf == s->leaves[i]) s->leaf_filter[i] = true;
    int64_t row = 0;
    for (int32_t g = 0; g < nrg; g++) {
        s->rg_first_row[g] = row;
        row += s->file->meta.row_groups[g].num_rows;
    }
    return DF_OK;
}

static df_errkind stream_setup(pq_stream *s, const df_parquet_read_options *o, df_error *err) {
    const pq_schema *sc = &s->file->schema;
    bool *used = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *used);
    if (!used) return DF_OOM(err);
    df_errkind k;
    if (o && o->leaves) k = select_leaves(s, o->leaves, o->nleaves, used, err);
    else k = select_fields(s, o ? o->columns : NULL, o && o->columns ? o->ncolumns : sc->root.nchildren, used, err);
    if (k == DF_OK && o) k = setup_filtering(s, o, used, err);
    if (k == DF_OK) {
        s->leaves = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *s->leaves);
        s->readers = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *s->readers);
        s->outs = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *s->outs);
        if (!s->leaves || !s->readers || !s->outs) k = DF_OOM(err);
        for (int32_t l = 0; k == DF_OK && l < sc->nleaves; l++)
            if (used[l]) s->leaves[s->nleaves++] = l;
    }
    df_free(used);
    if (k == DF_OK && s->filtering) k = setup_leaf_filtering(s, err);
    if (k == DF_OK) {
        df_field *fields = df_calloc((size_t)(s->nfields ? s->nfields : 1), sizeof *fields);
        if (!fields) return DF_OOM(err);
        for (int32_t i = 0; i < s->nfields; i++) fields[i] = s->fields[i]->field;
        k = df_schema_new(fields, s->nfields, &s->base.schema, err);
        df_free(fields);
    }
    if (k == DF_OK) k = select_row_groups(s, o, err);
    return k;
}

df_errkind df_parquet_reader_open(df_parquet_file *f, const df_parquet_read_options *opts, df_batch_stream **out,
                                  df_error *err) {
    *out = NULL;
    if (!f) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no Parquet file");
    if (opts && opts->batch_size < 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "negative batch size");
    if (opts && (opts->npredicates < 0 || opts->ndeleted_rows < 0 || (opts->npredicates > 0 && !opts->predicates)))
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "invalid predicates or deleted rows");
    pq_stream *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    s->base.vt = &stream_vt;
    s->file = df_parquet_file_retain(f);
    s->cur_rg = -1;
    s->batch_size = opts && opts->batch_size > 0 ? opts->batch_size : DEFAULT_BATCH;
    s->limit_left = opts && opts->limit > 0 ? opts->limit : INT64_MAX;
    s->verify_crc = !(opts && opts->skip_crc);
    s->metrics = opts ? opts->metrics : NULL;
    df_errkind k = stream_setup(s, opts, err);
    if (k != DF_OK) {
        stream_close(&s->base);
        return k;
    }
    *out = &s->base;
    return DF_OK;
}
