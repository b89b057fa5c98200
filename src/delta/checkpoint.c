/*
 * Parquet checkpoints (classic, multi-part, UUID-named v2) and sidecars.
 *
 * A checkpoint is a Parquet file with one nullable struct column per action
 * type; each row holds exactly one action.  We read only the leaves replay
 * needs (add without its typed statistics except numRecords, and the
 * protocol, metaData, txn, domainMetadata and sidecar columns; never remove,
 * which holds only tombstones) and walk the decoded Arrow vectors row by
 * row.  Struct fields are looked up by name, so column order and extra
 * fields written by newer writers do not matter.
 *
 * Index arithmetic follows Arrow: element i of a struct is element
 * (struct.offset + i) of each child; element i of a list or map spans
 * child elements offsets[i] .. offsets[i+1] (offsets already account for the
 * list's own offset).
 */
#include "delta/delta_int.h"
#include "parquet/parquet.h"

/* Top-level checkpoint columns we read. */
static const char *const wanted_columns[] = {"add", "protocol", "metaData", "txn", "domainMetadata", "sidecar"};

/* True when the Parquet leaf path is one replay needs. */
static bool wanted_leaf(const char *path) {
    const char *dot = strchr(path, '.');
    size_t top = dot ? (size_t)(dot - path) : strlen(path);
    bool ok = false;
    for (size_t i = 0; i < DF_ARRAY_LEN(wanted_columns) && !ok; i++)
        ok = strlen(wanted_columns[i]) == top && strncmp(path, wanted_columns[i], top) == 0;
    if (!ok) return false;
    if (strncmp(path, "add.stats_parsed.", 17) == 0) return strcmp(path, "add.stats_parsed.numRecords") == 0;
    if (strncmp(path, "add.partitionValues_parsed", 26) == 0) return false;
    if (strncmp(path, "add.tags.", 9) == 0) return false;
    if (strncmp(path, "metaData.format.options", 23) == 0) return false;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Vector access helpers                                                     */

/* Child of a struct vector by field name, or NULL. */
static const df_vec *child(const df_vec *v, const char *name) {
    if (!v || v->type->id != DF_TYPE_STRUCT) return NULL;
    for (int32_t i = 0; i < v->type->nchildren; i++)
        if (strcmp(v->type->children[i].name, name) == 0) return v->children[i];
    return NULL;
}

static bool valid(const df_vec *v, int64_t i) {
    return v && v->type->id != DF_TYPE_NULL && df_vec_is_valid(v, i);
}

/* Integer value at i of any integer vector; false when null or not an integer. */
static bool int_at(const df_vec *v, int64_t i, int64_t *out) {
    if (!valid(v, i)) return false;
    switch (v->type->id) {
    case DF_TYPE_INT8: *out = DF_VEC_VALUES(v, int8_t)[i]; return true;
    case DF_TYPE_INT16: *out = DF_VEC_VALUES(v, int16_t)[i]; return true;
    case DF_TYPE_INT32: *out = DF_VEC_VALUES(v, int32_t)[i]; return true;
    case DF_TYPE_INT64: *out = DF_VEC_VALUES(v, int64_t)[i]; return true;
    default: return false;
    }
}

static bool bool_at(const df_vec *v, int64_t i, bool *out) {
    if (!valid(v, i) || v->type->id != DF_TYPE_BOOL) return false;
    *out = df_vec_bool(v, i);
    return true;
}

/* NUL-terminated copy of string element i in `arena`; NULL when null (or *oom on failure). */
static const char *str_at(const df_vec *v, int64_t i, df_arena *arena, bool *oom) {
    if (!valid(v, i) || !df_type_is_varlen(v->type)) return NULL;
    int32_t len;
    const uint8_t *p = df_vec_bytes(v, i, &len);
    char *s = df_arena_strndup(arena, (const char *)p, (size_t)len);
    if (!s) *oom = true;
    return s;
}

/* Index of element i of struct `parent` in its children. */
static inline int64_t ci(const df_vec *parent, int64_t i) { return parent->offset + i; }

/* Copies list<string> element i into the arena. */
static df_errkind string_list(const df_vec *list, int64_t i, df_arena *arena, int32_t *n, const char *const **out,
                              df_error *err) {
    *n = 0;
    *out = NULL;
    if (!valid(list, i) || list->type->id != DF_TYPE_LIST) return DF_OK;
    const int32_t *o = df_vec_offsets(list);
    int64_t count = o[i + 1] - o[i];
    if (count <= 0) return DF_OK;
    const char **arr = df_arena_alloc(arena, (size_t)count * sizeof(char *));
    if (!arr) return DF_OOM(err);
    bool oom = false;
    int32_t k = 0;
    for (int64_t j = o[i]; j < o[i + 1]; j++) {
        const char *s = str_at(list->children[0], j, arena, &oom);
        if (s) arr[k++] = s;
    }
    if (oom) return DF_OOM(err);
    *n = k;
    *out = arr;
    return DF_OK;
}

/* Copies map<string,string> element i into parallel key/value arrays (values may be NULL). */
static df_errkind string_map(const df_vec *map, int64_t i, df_arena *arena, bool skip_null_values, int32_t *n,
                             const char ***keys, const char ***values, df_error *err) {
    *n = 0;
    *keys = *values = NULL;
    if (!valid(map, i) || map->type->id != DF_TYPE_MAP) return DF_OK;
    const int32_t *o = df_vec_offsets(map);
    int64_t count = o[i + 1] - o[i];
    if (count <= 0) return DF_OK;
    const df_vec *entries = map->children[0];
    const df_vec *kv = entries->nchildren > 0 ? entries->children[0] : NULL;
    const df_vec *vv = entries->nchildren > 1 ? entries->children[1] : NULL;
    const char **ks = df_arena_alloc(arena, (size_t)count * sizeof(char *));
    const char **vs = df_arena_alloc(arena, (size_t)count * sizeof(char *));
    if (!ks || !vs) return DF_OOM(err);
    bool oom = false;
    int32_t m = 0;
    for (int64_t j = o[i]; j < o[i + 1]; j++) {
        const char *key = str_at(kv, ci(entries, j), arena, &oom);
        const char *val = str_at(vv, ci(entries, j), arena, &oom);
        if (!key || (skip_null_values && !val)) continue;
        ks[m] = key;
        vs[m] = val;
        m++;
    }
    if (oom) return DF_OOM(err);
    *n = m;
    *keys = ks;
    *values = vs;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Actions                                                                   */

static df_errkind row_dv(const df_vec *dvv, int64_t i, df_arena *scratch, df__delta_dv *dv, df_error *err) {
    memset(dv, 0, sizeof *dv);
    dv->offset = -1;
    if (!valid(dvv, i)) return DF_OK;
    int64_t j = ci(dvv, i);
    bool oom = false;
    const char *st = str_at(child(dvv, "storageType"), j, scratch, &oom);
    const char *p = str_at(child(dvv, "pathOrInlineDv"), j, scratch, &oom);
    if (oom) return DF_OOM(err);
    int64_t size, card, off = -1;
    if (!st || strlen(st) != 1 || !strchr("uip", st[0]) || !p || !int_at(child(dvv, "sizeInBytes"), j, &size) ||
        !int_at(child(dvv, "cardinality"), j, &card))
        DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "checkpoint deletionVector lacks required fields");
    int_at(child(dvv, "offset"), j, &off);
    if (size < 0 || size > INT32_MAX || card < 0 || off < -1 || off > INT32_MAX)
        DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "checkpoint deletionVector fields out of range");
    *dv = (df__delta_dv){st[0], p, (int32_t)off, (int32_t)size, card};
    return DF_OK;
}

static df_errkind row_add(df__delta_replay *r, const df_vec *add, int64_t i, df_error *err) {
    if (!valid(add, i)) return DF_OK;
    int64_t j = ci(add, i);
    bool oom = false;
    df_arena_reset(&r->scratch);
    const char *path = str_at(child(add, "path"), j, &r->scratch, &oom);
    if (oom) return DF_OOM(err);
    if (!path) DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "checkpoint add action without a path");
    df__delta_dv dv;
    DF_TRY(row_dv(child(add, "deletionVector"), j, &r->scratch, &dv, err));
    const char *location;
    bool keep;
    DF_TRY(df__delta_replay_file_action(r, true, true, path, &dv, &location, &keep, err));
    if (!keep) return DF_OK;
    df__delta_add a = {0};
    a.location = location;
    a.path = df_arena_strndup(r->arena, path, strlen(path));
    a.dv = dv;
    if (dv.storage) a.dv.path_or_inline = df_arena_strndup(r->arena, dv.path_or_inline, strlen(dv.path_or_inline));
    if (!int_at(child(add, "size"), j, &a.size)) a.size = -1;
    if (!int_at(child(add, "modificationTime"), j, &a.modification_time)) a.modification_time = -1;
    a.stats = str_at(child(add, "stats"), j, r->arena, &oom);
    const df_vec *sp = child(add, "stats_parsed");
    if (!valid(sp, j) || !int_at(child(sp, "numRecords"), ci(sp, j), &a.num_records)) a.num_records = -1;
    DF_TRY(string_map(child(add, "partitionValues"), j, r->arena, false, &a.npv, &a.pv_keys, &a.pv_values, err));
    if (oom || !a.path || (dv.storage && !a.dv.path_or_inline)) return DF_OOM(err);
    return df__delta_replay_push_add(r, &a, err);
}

static df_errkind row_protocol(df__delta_replay *r, const df_vec *p, int64_t i, df_error *err) {
    if (r->have_protocol || !valid(p, i)) return DF_OK;
    int64_t j = ci(p, i), rv, wv;
    if (!int_at(child(p, "minReaderVersion"), j, &rv) || !int_at(child(p, "minWriterVersion"), j, &wv))
        DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "checkpoint protocol action without versions");
    df_delta_protocol *out = &r->protocol;
    out->min_reader_version = (int32_t)rv;
    out->min_writer_version = (int32_t)wv;
    DF_TRY(string_list(child(p, "readerFeatures"), j, r->arena, &out->nreader_features, &out->reader_features, err));
    DF_TRY(string_list(child(p, "writerFeatures"), j, r->arena, &out->nwriter_features, &out->writer_features, err));
    r->have_protocol = true;
    return DF_OK;
}

static df_errkind row_metadata(df__delta_replay *r, const df_vec *md, int64_t i, df_error *err) {
    if (r->have_metadata || !valid(md, i)) return DF_OK;
    int64_t j = ci(md, i);
    df_delta_metadata *m = &r->metadata;
    bool oom = false;
    m->schema_string = str_at(child(md, "schemaString"), j, r->arena, &oom);
    m->id = str_at(child(md, "id"), j, r->arena, &oom);
    m->name = str_at(child(md, "name"), j, r->arena, &oom);
    m->description = str_at(child(md, "description"), j, r->arena, &oom);
    const df_vec *fmt = child(md, "format");
    m->format_provider = valid(fmt, j) ? str_at(child(fmt, "provider"), ci(fmt, j), r->arena, &oom) : NULL;
    if (oom) return DF_OOM(err);
    if (!m->schema_string) DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "checkpoint metaData action without schemaString");
    if (!int_at(child(md, "createdTime"), j, &m->created_time)) m->created_time = -1;
    DF_TRY(string_list(child(md, "partitionColumns"), j, r->arena, &m->npartition_columns, &m->partition_columns, err));
    const char **keys, **values;
    DF_TRY(string_map(child(md, "configuration"), j, r->arena, true, &m->nconfiguration, &keys, &values, err));
    m->configuration_keys = keys;
    m->configuration_values = values;
    r->have_metadata = true;
    return DF_OK;
}

static df_errkind row_misc(df__delta_replay *r, const df_vec *txn, const df_vec *dom, const df_vec *side, int64_t i,
                           df_error *err) {
    bool oom = false;
    df_arena_reset(&r->scratch);
    if (valid(txn, i)) {
        const char *app = str_at(child(txn, "appId"), ci(txn, i), &r->scratch, &oom);
        if (app) DF_TRY(df__delta_replay_txn(r, app, err));
    }
    if (valid(dom, i)) {
        const char *d = str_at(child(dom, "domain"), ci(dom, i), &r->scratch, &oom);
        bool removed = false;
        bool_at(child(dom, "removed"), ci(dom, i), &removed);
        if (d) DF_TRY(df__delta_replay_domain(r, d, removed, err));
    }
    if (valid(side, i)) {
        const char *p = str_at(child(side, "path"), ci(side, i), &r->scratch, &oom);
        if (!p && !oom) DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "checkpoint sidecar action without a path");
        if (p) DF_TRY(df__delta_replay_add_sidecar(r, p, err));
    }
    return oom ? DF_OOM(err) : DF_OK;
}

/* Applies every row of one batch. */
static df_errkind apply_batch(df__delta_replay *r, const df_batch *b, df_error *err) {
    const df_vec *cols[DF_ARRAY_LEN(wanted_columns)] = {0};
    for (size_t c = 0; c < DF_ARRAY_LEN(wanted_columns); c++) {
        int32_t idx = df_schema_find(b->schema, wanted_columns[c]);
        cols[c] = idx >= 0 && b->cols[idx]->type->id == DF_TYPE_STRUCT ? b->cols[idx] : NULL;
    }
    for (int64_t i = 0; i < b->nrows; i++) {
        DF_TRY(row_protocol(r, cols[1], i, err));
        DF_TRY(row_metadata(r, cols[2], i, err));
        DF_TRY(row_add(r, cols[0], i, err));
        DF_TRY(row_misc(r, cols[3], cols[4], cols[5], i, err));
    }
    return DF_OK;
}

df_errkind df__delta_replay_parquet(df__delta_replay *r, df_store *store, const char *path, df_error *err) {
    df_input *in = NULL;
    DF_TRY(store->vt->open_input(store, path, &in, err));
    return df__delta_replay_parquet_input(r, in, path, err);
}

df_errkind df__delta_replay_parquet_input(df__delta_replay *r, df_input *in, const char *path, df_error *err) {
    df_parquet_file *f = NULL;
    df_errkind k = df_parquet_file_open(in, &f, err);
    if (k != DF_OK) {
        df_error_prefix(err, "checkpoint %s", path);
        return k;
    }
    int32_t nleaves = df_parquet_file_num_leaves(f), nsel = 0;
    int32_t *leaves = df_malloc((size_t)(nleaves ? nleaves : 1) * sizeof(int32_t));
    if (!leaves) {
        df_parquet_file_close(f);
        return DF_OOM(err);
    }
    for (int32_t l = 0; l < nleaves; l++) {
        df_parquet_leaf_info info;
        if (df_parquet_file_leaf(f, l, &info) && wanted_leaf(info.path)) leaves[nsel++] = l;
    }
    df_batch_stream *stream = NULL;
    if (nsel > 0) {
        df_parquet_read_options o = {.leaves = leaves, .nleaves = nsel, .batch_size = 4096};
        k = df_parquet_reader_open(f, &o, &stream, err);
    }
    df_free(leaves);
    df_parquet_file_close(f);
    while (k == DF_OK && stream) {
        df_batch *b = NULL;
        k = df_batch_stream_next(stream, &b, err);
        if (k != DF_OK || !b) break;
        k = apply_batch(r, b, err);
        df_batch_release(b);
    }
    df_batch_stream_close(stream);
    if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) df_error_prefix(err, "checkpoint %s", path);
    return k;
}
