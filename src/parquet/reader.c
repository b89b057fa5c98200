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
    int32_t batch_size;
    int64_t limit_left;             /* rows still wanted (INT64_MAX = all) */
    pq_column_reader *readers;      /* one per entry of `leaves` */
    bool readers_live;              /* readers hold a row group's state */
    pq_leaf_out *outs;              /* indexed by leaf index (file-wide) */
    pq_codec_ctx codec;
    bool verify_crc;
    bool done;
    df_scan_metrics *metrics;       /* may be NULL */
} pq_stream;

static void clear_readers(pq_stream *s) {
    if (!s->readers_live) return;
    for (int32_t i = 0; i < s->nleaves; i++) {
        pq_column_reader *cr = &s->readers[i];
        if (s->metrics) {
            atomic_fetch_add_explicit(&s->metrics->pages_read, cr->data_pages, memory_order_relaxed);
            atomic_fetch_add_explicit(&s->metrics->bytes_read, cr->bytes_read, memory_order_relaxed);
        }
        df__parquet_column_reader_clear(cr);
    }
    s->readers_live = false;
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
    df__parquet_codec_clear(&s->codec);
    df_schema_release(s->base.schema);
    df_parquet_file_close(s->file);
    df_free(s);
}

static df_errkind open_row_group(pq_stream *s, df_error *err) {
    clear_readers(s);
    int32_t rg = s->rgs[s->rg_pos++];
    s->cur_rg = rg;
    s->rg_rows_left = s->file->meta.row_groups[rg].num_rows;
    s->readers_live = true;
    for (int32_t i = 0; i < s->nleaves; i++) {
        df_errkind k = df__parquet_column_reader_init(&s->readers[i], s->file, rg, s->leaves[i], &s->codec,
                                                      s->verify_crc, err);
        if (k != DF_OK) {
            for (int32_t j = i + 1; j < s->nleaves; j++) memset(&s->readers[j], 0, sizeof s->readers[j]);
            return k;
        }
    }
    if (s->metrics) atomic_fetch_add_explicit(&s->metrics->row_groups_read, 1, memory_order_relaxed);
    return DF_OK;
}

/*
 * Pre-sizes the outputs so decoding and spreading rarely grow a buffer:
 * flat leaves know their size (one value per row); nested leaves and
 * string bytes use what the previous batch of the leaf needed.
 */
static df_errkind presize(pq_stream *s, int64_t rows, df_error *err) {
    for (int32_t i = 0; i < s->nleaves; i++) {
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
    }
    return DF_OK;
}

static df_errkind read_batch(pq_stream *s, int64_t rows, df_batch **out, df_error *err) {
    DF_TRY(presize(s, rows, err));
    for (int32_t i = 0; i < s->nleaves; i++) {
        pq_leaf_out *o = &s->outs[s->leaves[i]];
        o->nlevels = o->nvalues = o->records = o->def_ones = 0;
        DF_TRY(df__parquet_column_read(&s->readers[i], rows, o, err));
        o->hint_values = o->nvalues;
        o->hint_data = o->data && o->nvalues ? ((const int32_t *)(const void *)o->values->data)[o->nvalues] : 0;
        if (s->readers[i].leaf->physical != DF_PARQUET_BYTE_ARRAY) o->hint_data = 0;
        if (o->records != rows)
            return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                                "column '%s' of row group %d ends after %lld of its %lld rows",
                                s->file->schema.leaves[s->leaves[i]].path, s->cur_rg,
                                (long long)(s->file->meta.row_groups[s->cur_rg].num_rows - s->rg_rows_left + o->records),
                                (long long)s->file->meta.row_groups[s->cur_rg].num_rows);
    }
    df_vec **cols = df_calloc((size_t)(s->nfields ? s->nfields : 1), sizeof *cols);
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < s->nfields && k == DF_OK; i++)
        k = df__parquet_assemble(s->fields[i], s->outs, s->file->schema.leaves, rows, &cols[i], err);
    if (k != DF_OK) {
        for (int32_t i = 0; i < s->nfields; i++) df_vec_release(cols[i]);
        df_free(cols);
        return k;
    }
    /* Definition bits may now be shared as validity: start fresh ones next batch. */
    for (int32_t i = 0; i < s->nleaves; i++) {
        df_buffer_release(s->outs[s->leaves[i]].defbits);
        s->outs[s->leaves[i]].defbits = NULL;
    }
    k = df_batch_new(s->base.schema, cols, rows, out, err);
    df_free(cols);
    return k;
}

static df_errkind stream_next(df_batch_stream *base, df_batch **out, df_error *err) {
    pq_stream *s = (pq_stream *)base;
    *out = NULL;
    if (s->done || s->limit_left == 0) {
        s->done = true;
        clear_readers(s);
        return DF_OK;
    }
    while (s->rg_rows_left == 0) {
        if (s->rg_pos >= s->nrgs || s->limit_left == 0) {
            s->done = true;
            clear_readers(s);
            return DF_OK;
        }
        df_errkind k = open_row_group(s, err);
        if (k != DF_OK) {
            s->done = true;
            return k;
        }
    }
    int64_t rows = DF_MIN((int64_t)s->batch_size, DF_MIN(s->rg_rows_left, s->limit_left));
    df_errkind k = read_batch(s, rows, out, err);
    if (k != DF_OK) {
        s->done = true;
        return k;
    }
    s->rg_rows_left -= rows;
    s->limit_left -= rows;
    if (s->metrics) {
        atomic_fetch_add_explicit(&s->metrics->rows_produced, rows, memory_order_relaxed);
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

static df_errkind stream_setup(pq_stream *s, const df_parquet_read_options *o, df_error *err) {
    const pq_schema *sc = &s->file->schema;
    bool *used = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *used);
    if (!used) return DF_OOM(err);
    df_errkind k;
    if (o && o->leaves) k = select_leaves(s, o->leaves, o->nleaves, used, err);
    else k = select_fields(s, o ? o->columns : NULL, o && o->columns ? o->ncolumns : sc->root.nchildren, used, err);
    if (k == DF_OK) {
        s->leaves = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *s->leaves);
        s->readers = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *s->readers);
        s->outs = df_calloc((size_t)(sc->nleaves ? sc->nleaves : 1), sizeof *s->outs);
        if (!s->leaves || !s->readers || !s->outs) k = DF_OOM(err);
        for (int32_t l = 0; k == DF_OK && l < sc->nleaves; l++)
            if (used[l]) s->leaves[s->nleaves++] = l;
    }
    df_free(used);
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
