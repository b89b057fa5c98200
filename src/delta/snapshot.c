/*
 * Snapshots: loading (segment -> replay -> gate -> schema), accessors, the
 * lazy caches (typed partition values, row counts) and the facts report.
 *
 * Load order: commits newest first, then the checkpoint (a JSON or Parquet
 * file, or the parts of a multi-part checkpoint), then the sidecars the
 * checkpoint names.  When the commits already carry the protocol, the gate
 * runs before the checkpoint is read, so an unsupported table never has its
 * checkpoint interpreted; it runs again once replay is complete.
 */
#include "delta/delta_int.h"

#include <stdlib.h>
#include <unistd.h>

static df_errkind read_log_file(df_store *store, const char *path, uint8_t **data, size_t *len, df_error *err) {
    df_errkind k = store->vt->read_all(store, path, DF_DELTA_MAX_LOG_FILE_BYTES, data, len, err);
    if (k == DF_ERR_NOT_FOUND)
        return df_error_set(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "Delta log file %s disappeared while loading", path);
    return k;
}

static df_errkind replay_json_file(df__delta_replay *r, df_store *store, const char *path, bool is_checkpoint,
                                   df_error *err) {
    uint8_t *data;
    size_t len;
    DF_TRY(read_log_file(store, path, &data, &len, err));
    df_errkind k = df__delta_replay_json(r, (const char *)data, len, is_checkpoint, path, err);
    df_free(data);
    return k;
}

/* Sidecar paths are relative to _delta_log/_sidecars/ unless absolute. */
static df_errkind replay_sidecars(df__delta_replay *r, df_store *store, df_error *err) {
    for (int32_t i = 0; i < r->nsidecars; i++) {
        const char *p = r->sidecars[i];
        df_buf path;
        df_buf_init(&path, 0);
        df_errkind k;
        char *decoded = NULL;
        if (p[0] == '/' || strstr(p, "://") || strncmp(p, "file:", 5) == 0) {
            k = df_buf_append_str(&path, p, err); /* absolute: the store decodes URIs itself */
            if (k == DF_OK && !(decoded = df_strdup(p))) k = DF_OOM(err);
        } else {
            k = df_buf_printf(&path, err, "_delta_log/_sidecars/%s", p);
            if (k == DF_OK) k = df_uri_decode_path(path.data, &decoded, err);
            if (k == DF_ERR_INVALID_ARGUMENT) k = df__delta_rekind(err, DF_ERR_DELTA_LOG_FORMAT);
        }
        if (k == DF_OK) {
            size_t dl = strlen(decoded);
            if (dl >= 5 && strcmp(decoded + dl - 5, ".json") == 0)
                k = replay_json_file(r, store, decoded, true, err);
            else
                k = df__delta_replay_parquet(r, store, decoded, err);
        }
        df_free(decoded);
        df_buf_free(&path);
        if (k != DF_OK) return k;
    }
    return DF_OK;
}

static df_errkind replay_segment(df__delta_replay *r, df_store *store, const df__delta_segment *seg, df_error *err) {
    for (int64_t i = seg->ncommits; i-- > 0;) DF_TRY(replay_json_file(r, store, seg->commit_files[i], false, err));
    if (r->have_protocol) DF_TRY(df__delta_protocol_check(&r->protocol, err));
    for (int32_t i = 0; i < seg->ncheckpoint_files; i++) {
        if (seg->checkpoint_is_json) DF_TRY(replay_json_file(r, store, seg->checkpoint_files[i], true, err));
        else DF_TRY(df__delta_replay_parquet(r, store, seg->checkpoint_files[i], err));
    }
    DF_TRY(replay_sidecars(r, store, err));
    if (!r->have_protocol)
        DF_FAIL(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "Delta log of %s at version %lld has no protocol action", store->root,
                (long long)seg->version);
    if (!r->have_metadata)
        DF_FAIL(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "Delta log of %s at version %lld has no metaData action", store->root,
                (long long)seg->version);
    return df__delta_protocol_check(&r->protocol, err);
}

static int cmp_add(const void *a, const void *b) {
    const df__delta_add *x = a, *y = b;
    int c = strcmp(x->location, y->location);
    if (c) return c;
    const char *px = x->dv.storage ? x->dv.path_or_inline : "", *py = y->dv.storage ? y->dv.path_or_inline : "";
    return strcmp(px, py);
}

/* Column mapping mode, partition column indices and the schema. */
static df_errkind interpret_metadata(df_delta_snapshot *s, df_error *err) {
    const char *mode = df_delta_snapshot_property(s, "delta.columnMapping.mode");
    if (!mode || strcmp(mode, "none") == 0) s->cm_mode = 0;
    else if (strcmp(mode, "name") == 0) s->cm_mode = 1;
    else if (strcmp(mode, "id") == 0) s->cm_mode = 2;
    else DF_FAIL(err, DF_ERR_DELTA_PROTOCOL, "unsupported Delta column mapping mode `%s`", mode);
    DF_TRY(df__delta_schema_parse(s->metadata.schema_string, strlen(s->metadata.schema_string), &s->schema, err));
    int32_t np = s->metadata.npartition_columns;
    s->partition_fields = df_arena_alloc(&s->arena, (size_t)(np ? np : 1) * sizeof(int32_t));
    if (!s->partition_fields) return DF_OOM(err);
    for (int32_t p = 0; p < np; p++) {
        int32_t f = df_schema_find(s->schema.schema, s->metadata.partition_columns[p]);
        if (f < 0) f = df_schema_find_ci(s->schema.schema, s->metadata.partition_columns[p]);
        if (f < 0)
            DF_FAIL(err, DF_ERR_DELTA_SOURCE_SCHEMA, "partition column `%s` is not in the table schema",
                    s->metadata.partition_columns[p]);
        if (df_type_is_nested(s->schema.schema->fields[f].type))
            DF_FAIL(err, DF_ERR_DELTA_SOURCE_SCHEMA, "partition column `%s` has a nested type",
                    s->metadata.partition_columns[p]);
        s->partition_fields[p] = f;
    }
    return DF_OK;
}

/* Replays one segment into the snapshot (protocol, metadata, files). */
static df_errkind load_segment(df_delta_snapshot *s, const df__delta_segment *seg, df_error *err) {
    df__delta_replay r;
    DF_TRY(df__delta_replay_init(&r, &s->arena, s->root, err));
    df_errkind k = replay_segment(&r, s->store, seg, err);
    if (k == DF_OK) {
        s->version = seg->version;
        s->checkpoint_version = seg->checkpoint_version;
        s->protocol = r.protocol;
        s->metadata = r.metadata;
        s->ntxns = r.ntxns;
        s->ndomains = r.ndomains;
        s->nfiles = r.nadds;
        s->files = r.adds;
        r.adds = NULL;
        if (s->nfiles > 1) qsort(s->files, (size_t)s->nfiles, sizeof *s->files, cmp_add);
    }
    df__delta_replay_clear(&r);
    return k;
}

/* Errors that a damaged checkpoint file produces (an older checkpoint may still work). */
static bool checkpoint_damage(df_errkind k) {
    return k == DF_ERR_PARQUET_FORMAT || k == DF_ERR_PARQUET_UNSUPPORTED || k == DF_ERR_CODEC ||
           k == DF_ERR_CHECKSUM || k == DF_ERR_DELTA_LOG_FORMAT || k == DF_ERR_NOT_FOUND || k == DF_ERR_IO;
}

/*
 * Loads the newest usable segment: when a checkpoint cannot be read, the
 * next older complete checkpoint (or the commits from version 0) is tried,
 * as long as the log still holds every commit that needs.  The first error
 * is reported when no fallback works.
 */
static df_errkind load(df_delta_snapshot *s, int64_t version, df_error *err) {
    df__delta_segment seg;
    DF_TRY(df__delta_segment_build(s->store, version, -1, &seg, err));
    df_errkind k = load_segment(s, &seg, err);
    while (k != DF_OK && checkpoint_damage(k) && seg.checkpoint_version >= 0) {
        df__delta_segment older;
        if (df__delta_segment_build(s->store, version, seg.checkpoint_version, &older, NULL) != DF_OK) break;
        df__delta_segment_clear(&seg);
        seg = older;
        df_error retry_err = {0};
        if (load_segment(s, &seg, &retry_err) == DF_OK) {
            df_error_clear(err);
            k = DF_OK;
        }
        df_error_clear(&retry_err);
    }
    df__delta_segment_clear(&seg);
    if (k == DF_OK) k = interpret_metadata(s, err);
    return k;
}

/*
 * File locations are made absolute, because the store resolves only paths
 * without a leading '/' against its root: a relative root is joined to the
 * working directory once, here.
 */
static df_errkind absolute_root(df_delta_snapshot *s, df_error *err) {
    const char *root = s->store->root;
    if (root[0] == '/' || strstr(root, "://")) {
        s->root = root;
        return DF_OK;
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) DF_FAIL(err, DF_ERR_IO, "cannot resolve the relative table location %s", root);
    while (root[0] == '.' && root[1] == '/') root += 2;
    size_t a = strlen(cwd), b = strlen(root);
    char *abs = df_arena_alloc(&s->arena, a + b + 2);
    if (!abs) return DF_OOM(err);
    memcpy(abs, cwd, a);
    abs[a] = '/';
    memcpy(abs + a + 1, root, b + 1);
    if (strcmp(root, ".") == 0) abs[a] = '\0';
    s->root = abs;
    return DF_OK;
}

df_errkind df_delta_snapshot_open(const char *location, int64_t version, const char *const *option_keys,
                                  const char *const *option_values, size_t noptions, df_delta_snapshot **out,
                                  df_error *err) {
    *out = NULL;
    if (!location || !location[0]) DF_FAIL(err, DF_ERR_INVALID_SOURCE_URI, "the Delta table location is empty");
    df_delta_snapshot *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    atomic_init(&s->refs, 1);
    df_arena_init(&s->arena, 256 * 1024, 0);
    pthread_mutex_init(&s->lock, NULL);
    df_errkind k = df_store_open(location, option_keys, option_values, noptions, &s->store, err);
    if (k == DF_OK) k = absolute_root(s, err);
    if (k == DF_OK) k = load(s, version, err);
    if (k != DF_OK) {
        df_delta_snapshot_close(s);
        return k;
    }
    *out = s;
    return DF_OK;
}

df_delta_snapshot *df_delta_snapshot_retain(df_delta_snapshot *s) {
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void df_delta_snapshot_close(df_delta_snapshot *s) {
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    if (s->pvalues) {
        int64_t n = s->nfiles * s->metadata.npartition_columns;
        for (int64_t i = 0; i < n; i++) df_scalar_clear(&s->pvalues[i]);
        df_free(s->pvalues);
    }
    df_free(s->files);
    df__delta_schema_clear(&s->schema);
    df_store_close(s->store);
    pthread_mutex_destroy(&s->lock);
    df_arena_destroy(&s->arena);
    df_free(s);
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */

int64_t df_delta_snapshot_version(const df_delta_snapshot *s) { return s->version; }
const char *df_delta_snapshot_location(const df_delta_snapshot *s) { return s->root; }
int64_t df_delta_snapshot_checkpoint_version(const df_delta_snapshot *s) { return s->checkpoint_version; }
const df_delta_protocol *df_delta_snapshot_protocol(const df_delta_snapshot *s) { return &s->protocol; }
const df_delta_metadata *df_delta_snapshot_metadata(const df_delta_snapshot *s) { return &s->metadata; }
df_schema *df_delta_snapshot_schema(const df_delta_snapshot *s) { return s->schema.schema; }
int64_t df_delta_snapshot_num_files(const df_delta_snapshot *s) { return s->nfiles; }

const char *df_delta_snapshot_column_mapping_mode(const df_delta_snapshot *s) {
    return s->cm_mode == 1 ? "name" : s->cm_mode == 2 ? "id" : "none";
}

const char *df_delta_snapshot_property(const df_delta_snapshot *s, const char *key) {
    const char *found = NULL;
    for (int32_t i = 0; i < s->metadata.nconfiguration; i++)
        if (strcmp(s->metadata.configuration_keys[i], key) == 0) found = s->metadata.configuration_values[i];
    return found;
}

int32_t df__delta_partition_index(const df_delta_snapshot *s, int32_t field) {
    for (int32_t p = 0; p < s->metadata.npartition_columns; p++)
        if (s->partition_fields[p] == field) return p;
    return -1;
}

/*
 * The raw partition value of file f for partition column p: keyed by the
 * physical name, else the logical name, else either ignoring ASCII case
 * (Spark resolves names case-insensitively).
 */
static const char *raw_partition_value(const df_delta_snapshot *s, const df__delta_add *f, int32_t p, bool *present) {
    const df__delta_column *col = &s->schema.columns[s->partition_fields[p]];
    *present = false;
    for (int pass = 0; pass < 4; pass++) {
        const char *want = pass % 2 == 0 ? col->physical : col->name;
        for (int32_t i = 0; i < f->npv; i++)
            if (pass < 2 ? strcmp(f->pv_keys[i], want) == 0 : df_ascii_casecmp(f->pv_keys[i], want) == 0) {
                *present = true;
                return f->pv_values[i];
            }
    }
    return NULL;
}

df_errkind df__delta_snapshot_prepare_partitions(df_delta_snapshot *s, df_error *err) {
    int32_t np = s->metadata.npartition_columns;
    pthread_mutex_lock(&s->lock);
    df_errkind k = DF_OK;
    if (!s->pvalues && np > 0 && s->nfiles > 0) {
        df_scalar *vals = df_calloc((size_t)(s->nfiles * np), sizeof *vals);
        if (!vals) k = DF_OOM(err);
        for (int64_t i = 0; k == DF_OK && i < s->nfiles; i++) {
            for (int32_t p = 0; k == DF_OK && p < np; p++) {
                bool present;
                const char *text = raw_partition_value(s, &s->files[i], p, &present);
                df_type *t = s->schema.schema->fields[s->partition_fields[p]].type;
                k = df__delta_partition_value(text, t, &vals[i * np + p], err);
                if (k == DF_ERR_CAST) {
                    df_error_prefix(err, "partition column `%s` of %s", s->metadata.partition_columns[p],
                                    s->files[i].path);
                    k = df__delta_rekind(err, DF_ERR_DELTA_LOG_FORMAT);
                }
            }
        }
        if (k == DF_OK) {
            s->pvalues = vals;
        } else if (vals) {
            for (int64_t i = 0; i < s->nfiles * np; i++) df_scalar_clear(&vals[i]);
            df_free(vals);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return k;
}

df_errkind df__delta_snapshot_prepare_stats(df_delta_snapshot *s, df_error *err) {
    pthread_mutex_lock(&s->lock);
    df_errkind k = DF_OK;
    if (!s->stats_ready) {
        df_arena scratch;
        df_arena_init(&scratch, 64 * 1024, 0);
        for (int64_t i = 0; k == DF_OK && i < s->nfiles; i++) {
            df__delta_add *f = &s->files[i];
            if (f->num_records >= 0 || !f->stats) continue;
            df_arena_reset(&scratch);
            int64_t n = -1;
            k = df__delta_stats_num_records(f->stats, &scratch, &n, err);
            f->num_records = n;
        }
        df_arena_destroy(&scratch);
        if (k == DF_OK) s->stats_ready = true;
    }
    pthread_mutex_unlock(&s->lock);
    return k;
}

df_errkind df_delta_snapshot_file(df_delta_snapshot *s, int64_t i, df_delta_file_info *out, df_error *err) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= s->nfiles) DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "file index %lld out of range", (long long)i);
    DF_TRY(df__delta_snapshot_prepare_stats(s, err));
    const df__delta_add *f = &s->files[i];
    out->path = f->path;
    out->location = f->location;
    out->size = f->size;
    out->modification_time = f->modification_time;
    out->num_records = f->num_records;
    out->has_deletion_vector = f->dv.storage != 0;
    out->deleted_rows = f->dv.storage ? f->dv.cardinality : 0;
    return DF_OK;
}

df_errkind df_delta_snapshot_partition_value(df_delta_snapshot *s, int64_t i, int32_t pcol, df_scalar *out,
                                             df_error *err) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= s->nfiles || pcol < 0 || pcol >= s->metadata.npartition_columns)
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "partition value index out of range");
    DF_TRY(df__delta_snapshot_prepare_partitions(s, err));
    return df_scalar_copy(out, df__delta_pvalue(s, i, pcol), err);
}

/* ------------------------------------------------------------------------ */
/* Facts                                                                     */

static void write_string_list(df_json_writer *w, const char *key, int32_t n, const char *const *list) {
    df_json_key(w, key);
    df_json_array_begin(w);
    for (int32_t i = 0; i < n; i++) df_json_write_string(w, list[i]);
    df_json_array_end(w);
}

static void write_schema(df_json_writer *w, const df_schema *schema) {
    df_buf t;
    df_buf_init(&t, 0);
    df_json_key(w, "schema");
    df_json_array_begin(w);
    for (int32_t i = 0; i < schema->nfields; i++) {
        df_buf_reset(&t);
        df_type_display(schema->fields[i].type, &t, NULL);
        df_json_object_begin(w);
        df_json_kv_string(w, "name", schema->fields[i].name);
        df_json_kv_string(w, "type", t.data ? t.data : "");
        df_json_kv_bool(w, "nullable", schema->fields[i].nullable);
        df_json_object_end(w);
    }
    df_json_array_end(w);
    df_buf_free(&t);
}

static void write_files(df_json_writer *w, const df_delta_snapshot *s) {
    df_json_key(w, "files");
    df_json_array_begin(w);
    for (int64_t i = 0; i < s->nfiles; i++) {
        const df__delta_add *f = &s->files[i];
        df_json_object_begin(w);
        df_json_kv_string(w, "path", f->path);
        df_json_kv_int(w, "size", f->size);
        if (f->num_records >= 0) df_json_kv_int(w, "num_records", f->num_records);
        else df_json_kv_null(w, "num_records");
        df_json_key(w, "partition_values");
        df_json_object_begin(w);
        for (int32_t p = 0; p < s->metadata.npartition_columns; p++) {
            bool present;
            df_json_kv_string(w, s->metadata.partition_columns[p], raw_partition_value(s, f, p, &present));
        }
        df_json_object_end(w);
        if (f->dv.storage) {
            df_json_key(w, "deletion_vector");
            df_json_object_begin(w);
            char st[2] = {f->dv.storage, 0};
            df_json_kv_string(w, "storage_type", st);
            df_json_kv_int(w, "cardinality", f->dv.cardinality);
            df_json_object_end(w);
        }
        df_json_object_end(w);
    }
    df_json_array_end(w);
}

df_errkind df_delta_snapshot_facts_json(df_delta_snapshot *s, bool include_files, df_buf *out, df_error *err) {
    DF_TRY(df__delta_snapshot_prepare_stats(s, err));
    int64_t rows = 0, dv_files = 0, deleted = 0;
    bool rows_known = true;
    for (int64_t i = 0; i < s->nfiles; i++) {
        if (s->files[i].num_records < 0) rows_known = false;
        else rows += s->files[i].num_records;
        if (s->files[i].dv.storage) {
            dv_files++;
            deleted += s->files[i].dv.cardinality;
        }
    }
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "location", s->root);
    df_json_kv_int(&w, "version", s->version);
    if (s->checkpoint_version >= 0) df_json_kv_int(&w, "checkpoint_version", s->checkpoint_version);
    else df_json_kv_null(&w, "checkpoint_version");
    df_json_key(&w, "protocol");
    df_json_object_begin(&w);
    df_json_kv_int(&w, "min_reader_version", s->protocol.min_reader_version);
    df_json_kv_int(&w, "min_writer_version", s->protocol.min_writer_version);
    write_string_list(&w, "reader_features", s->protocol.nreader_features, s->protocol.reader_features);
    write_string_list(&w, "writer_features", s->protocol.nwriter_features, s->protocol.writer_features);
    df_json_object_end(&w);
    df_json_key(&w, "metadata");
    df_json_object_begin(&w);
    df_json_kv_string(&w, "id", s->metadata.id);
    df_json_kv_string(&w, "name", s->metadata.name);
    df_json_kv_string(&w, "description", s->metadata.description);
    if (s->metadata.created_time >= 0) df_json_kv_int(&w, "created_time", s->metadata.created_time);
    else df_json_kv_null(&w, "created_time");
    write_string_list(&w, "partition_columns", s->metadata.npartition_columns, s->metadata.partition_columns);
    df_json_key(&w, "configuration");
    df_json_object_begin(&w);
    for (int32_t i = 0; i < s->metadata.nconfiguration; i++)
        df_json_kv_string(&w, s->metadata.configuration_keys[i], s->metadata.configuration_values[i]);
    df_json_object_end(&w);
    df_json_object_end(&w);
    df_json_kv_string(&w, "column_mapping", df_delta_snapshot_column_mapping_mode(s));
    write_schema(&w, s->schema.schema);
    df_json_kv_int(&w, "num_files", s->nfiles);
    if (rows_known) df_json_kv_int(&w, "num_records", rows);
    else df_json_kv_null(&w, "num_records");
    df_json_kv_int(&w, "files_with_deletion_vectors", dv_files);
    df_json_kv_int(&w, "deleted_rows", deleted);
    df_json_kv_int(&w, "num_app_transactions", s->ntxns);
    df_json_kv_int(&w, "num_domains", s->ndomains);
    if (include_files) write_files(&w, s);
    df_json_object_end(&w);
    return df_json_writer_finish(&w, err);
}
