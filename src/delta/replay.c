/*
 * Log replay over JSON actions, and the protocol gate.
 *
 * Files are applied newest first: the newest commit, then older commits,
 * then the checkpoint.  For every file action the key (canonical location +
 * deletion-vector id) is looked up in a hash set of decided keys: the first
 * (newest) action for a key decides it, so an add that was later removed, or
 * re-added with another deletion vector, is never kept twice.  Within one
 * commit the lines are walked backwards for the same reason.  The newest
 * protocol and metaData actions win.  Checkpoint adds are all live by
 * construction; checkpoint removes are tombstones and ignored.
 *
 * Every string we keep is copied into the snapshot's arena; each JSON line
 * is parsed into a scratch arena that is reset after the line.
 */
#include "delta/delta_int.h"

#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Hash set of keys                                                          */

struct df__delta_seen {
    df_strmap keys;         /* the values are unused */
};

static df__delta_seen *seen_new(void) {
    return df_calloc(1, sizeof(df__delta_seen));
}

static void seen_free(df__delta_seen *s) {
    if (!s) return;
    df_strmap_free(&s->keys);
    df_free(s);
}

/* Inserts a key; *inserted tells whether it was new. */
static df_errkind seen_insert(df__delta_seen *s, const char *key, size_t len, bool *inserted, df_error *err) {
    uint64_t *unused;
    return df_strmap_upsert(&s->keys, key, len, &unused, inserted, err);
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                     */

df_errkind df__delta_replay_init(df__delta_replay *r, df_arena *arena, const char *root, df_error *err) {
    memset(r, 0, sizeof *r);
    r->arena = arena;
    r->root = root;
    df_arena_init(&r->scratch, 64 * 1024, 0);
    r->seen = seen_new();
    r->txn_ids = seen_new();
    r->domain_ids = seen_new();
    if (!r->seen || !r->txn_ids || !r->domain_ids) {
        df__delta_replay_clear(r);
        return DF_OOM(err);
    }
    return DF_OK;
}

void df__delta_replay_clear(df__delta_replay *r) {
    seen_free(r->seen);
    seen_free(r->txn_ids);
    seen_free(r->domain_ids);
    df_arena_destroy(&r->scratch);
    df_free(r->adds);
    for (int32_t i = 0; i < r->nsidecars; i++) df_free(r->sidecars[i]);
    df_free(r->sidecars);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* Locations and keys                                                        */

/* Appends the percent-decoded form of s[0..n) to b. */
static df_errkind append_decoded(df_buf *b, const char *s, size_t n, df_error *err) {
    DF_TRY(df_buf_reserve(b, n, err));
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && df_hex_value(s[i + 1]) >= 0 && df_hex_value(s[i + 2]) >= 0) {
            char c = (char)(df_hex_value(s[i + 1]) * 16 + df_hex_value(s[i + 2]));
            if (c == '\0') DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "path contains an encoded NUL byte");
            b->data[b->len++] = c;
            i += 2;
        } else if (s[i] == '%') {
            DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "path has a malformed percent escape at offset %zu", i);
        } else {
            b->data[b->len++] = s[i];
        }
    }
    b->data[b->len] = '\0';
    return DF_OK;
}

static size_t scheme_len(const char *s) {
    size_t i = 0;
    if (!((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z')) return 0;
    while (s[i] && (((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '+' ||
                    s[i] == '-' || s[i] == '.'))
        i++;
    return s[i] == ':' && i >= 2 ? i : 0;
}

df_errkind df__delta_canonical_location(df_arena *arena, const char *root, const char *path, const char **out,
                                        df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = DF_OK;
    size_t sl = scheme_len(path);
    if (sl == 4 && df_ascii_ncasecmp(path, "file", 4) == 0) {
        /* file:/p, file:///p and file://localhost/p name the local path /p. */
        const char *p = path + 5;
        if (p[0] == '/' && p[1] == '/') {
            const char *slash = strchr(p + 2, '/');
            p = slash ? slash : p + strlen(p);
        }
        k = append_decoded(&b, p, strlen(p), err);
    } else if (sl > 0) {
        k = df_buf_append_str(&b, path, err); /* remote URI: kept as written */
    } else if (path[0] == '/') {
        k = append_decoded(&b, path, strlen(path), err);
    } else {
        k = df_buf_append_str(&b, root, err);
        if (k == DF_OK && !(root[0] == '/' && root[1] == '\0')) k = df_buf_append_char(&b, '/', err);
        if (k == DF_OK) k = append_decoded(&b, path, strlen(path), err);
    }
    if (k == DF_OK) {
        *out = df_arena_strndup(arena, b.data ? b.data : "", b.len);
        if (!*out) k = DF_OOM(err);
    }
    df_buf_free(&b);
    return k;
}

/* Builds "location\0dv-unique-id" in b. */
static df_errkind file_key(df_buf *b, const char *location, const df__delta_dv *dv, df_error *err) {
    df_buf_reset(b);
    DF_TRY(df_buf_append(b, location, strlen(location) + 1, err));
    if (dv && dv->storage) {
        DF_TRY(df_buf_append_char(b, dv->storage, err));
        DF_TRY(df_buf_append_str(b, dv->path_or_inline, err));
        if (dv->offset >= 0) DF_TRY(df_buf_printf(b, err, "@%d", dv->offset));
    }
    return DF_OK;
}

df_errkind df__delta_replay_file_action(df__delta_replay *r, bool is_add, bool is_checkpoint, const char *path,
                                        const df__delta_dv *dv, const char **location, bool *keep, df_error *err) {
    *keep = false;
    *location = NULL;
    if (is_checkpoint && !is_add) return DF_OK; /* tombstones do not affect the snapshot */
    DF_TRY(df__delta_canonical_location(is_add ? r->arena : &r->scratch, r->root, path, location, err));
    df_buf key;
    df_buf_init(&key, 0);
    bool inserted = false;
    df_errkind k = file_key(&key, *location, dv, err);
    if (k == DF_OK) k = seen_insert(r->seen, key.data, key.len, &inserted, err);
    df_buf_free(&key);
    *keep = k == DF_OK && is_add && inserted;
    return k;
}

df_errkind df__delta_replay_push_add(df__delta_replay *r, const df__delta_add *add, df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(r->adds, r->cap_adds, r->nadds + 1, 256, err));
    r->adds[r->nadds++] = *add;
    return DF_OK;
}

df_errkind df__delta_replay_add_sidecar(df__delta_replay *r, const char *path, df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(r->sidecars, r->cap_sidecars, r->nsidecars + 1, 8, err));
    char *copy = df_strdup(path);
    if (!copy) return DF_OOM(err);
    r->sidecars[r->nsidecars++] = copy;
    return DF_OK;
}

df_errkind df__delta_replay_txn(df__delta_replay *r, const char *app_id, df_error *err) {
    bool inserted;
    DF_TRY(seen_insert(r->txn_ids, app_id, strlen(app_id), &inserted, err));
    if (inserted) r->ntxns++;
    return DF_OK;
}

df_errkind df__delta_replay_domain(df__delta_replay *r, const char *domain, bool removed, df_error *err) {
    bool inserted;
    DF_TRY(seen_insert(r->domain_ids, domain, strlen(domain), &inserted, err));
    if (inserted && !removed) r->ndomains++;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* JSON actions                                                              */

static const char *keep_str(df__delta_replay *r, const char *s) {
    return s ? df_arena_strndup(r->arena, s, strlen(s)) : NULL;
}

static df_errkind bad_action(df_error *err, const char *what) {
    return df_error_set(err, DF_ERR_DELTA_LOG_FORMAT, "%s", what);
}

/* Reads a deletionVector object (NULL or JSON null: none). */
static df_errkind json_dv(const df_json_value *v, df__delta_dv *dv, df_error *err) {
    memset(dv, 0, sizeof *dv);
    dv->offset = -1;
    if (!v || df_json_is_null(v)) return DF_OK;
    if (!df_json_is_object(v)) return bad_action(err, "deletionVector is not an object");
    const char *st = df_json_get_string(v, "storageType");
    const char *p = df_json_get_string(v, "pathOrInlineDv");
    int64_t size = 0, card = 0, off = -1;
    if (!st || strlen(st) != 1 || !strchr("uip", st[0]) || !p || !df_json_get_i64(v, "sizeInBytes", &size) ||
        !df_json_get_i64(v, "cardinality", &card))
        return bad_action(err, "deletionVector lacks storageType, pathOrInlineDv, sizeInBytes or cardinality");
    const df_json_value *ov = df_json_get(v, "offset");
    if (ov && !df_json_is_null(ov) && !df_json_value_i64(ov, &off)) return bad_action(err, "deletionVector offset is not an integer");
    if (size < 0 || size > INT32_MAX || card < 0 || off < -1 || off > INT32_MAX)
        return bad_action(err, "deletionVector size, cardinality or offset out of range");
    dv->storage = st[0];
    dv->path_or_inline = p;
    dv->offset = (int32_t)off;
    dv->size_in_bytes = (int32_t)size;
    dv->cardinality = card;
    return DF_OK;
}

static df_errkind json_add(df__delta_replay *r, const df_json_value *a, bool is_add, bool is_checkpoint, df_error *err) {
    const char *path = df_json_get_string(a, "path");
    if (!path) return bad_action(err, is_add ? "add action without a path" : "remove action without a path");
    df__delta_dv dv;
    DF_TRY(json_dv(df_json_get(a, "deletionVector"), &dv, err));
    const char *location;
    bool keep;
    DF_TRY(df__delta_replay_file_action(r, is_add, is_checkpoint, path, &dv, &location, &keep, err));
    if (!keep) return DF_OK;
    df__delta_add add = {0};
    add.location = location;
    add.path = keep_str(r, path);
    add.num_records = -1;
    add.dv = dv;
    if (!df_json_get_i64(a, "size", &add.size)) add.size = -1;
    if (!df_json_get_i64(a, "modificationTime", &add.modification_time)) add.modification_time = -1;
    const char *stats = df_json_get_string(a, "stats");
    add.stats = keep_str(r, stats);
    if (dv.storage) add.dv.path_or_inline = keep_str(r, dv.path_or_inline);
    if (!add.path || (stats && !add.stats) || (dv.storage && !add.dv.path_or_inline)) return DF_OOM(err);
    const df_json_value *pv = df_json_get(a, "partitionValues");
    if (df_json_is_object(pv) && pv->u.obj.n) {
        if (pv->u.obj.n > 100000) return bad_action(err, "too many partition values");
        add.npv = (int32_t)pv->u.obj.n;
        add.pv_keys = df_arena_alloc(r->arena, pv->u.obj.n * sizeof(char *));
        add.pv_values = df_arena_alloc(r->arena, pv->u.obj.n * sizeof(char *));
        if (!add.pv_keys || !add.pv_values) return DF_OOM(err);
        for (size_t i = 0; i < pv->u.obj.n; i++) {
            const df_json_member *m = &pv->u.obj.members[i];
            if (!df_json_is_string(&m->value) && !df_json_is_null(&m->value))
                return bad_action(err, "partition value is neither a string nor null");
            add.pv_keys[i] = keep_str(r, m->key);
            add.pv_values[i] = df_json_is_string(&m->value) ? keep_str(r, m->value.u.str.ptr) : NULL;
            if (!add.pv_keys[i] || (df_json_is_string(&m->value) && !add.pv_values[i])) return DF_OOM(err);
        }
    } else if (pv && !df_json_is_object(pv) && !df_json_is_null(pv)) {
        return bad_action(err, "partitionValues is not an object");
    }
    return df__delta_replay_push_add(r, &add, err);
}

/* Copies a JSON array of strings into the arena. */
static df_errkind string_list(df__delta_replay *r, const df_json_value *v, int32_t *n, const char *const **out,
                              df_error *err) {
    *n = 0;
    *out = NULL;
    if (!v || df_json_is_null(v)) return DF_OK;
    if (!df_json_is_array(v) || v->u.arr.n > 100000) return bad_action(err, "expected an array of strings");
    const char **list = df_arena_alloc(r->arena, (v->u.arr.n ? v->u.arr.n : 1) * sizeof(char *));
    if (!list) return DF_OOM(err);
    for (size_t i = 0; i < v->u.arr.n; i++) {
        if (!df_json_is_string(&v->u.arr.items[i])) return bad_action(err, "expected an array of strings");
        list[i] = keep_str(r, v->u.arr.items[i].u.str.ptr);
        if (!list[i]) return DF_OOM(err);
    }
    *n = (int32_t)v->u.arr.n;
    *out = list;
    return DF_OK;
}

static df_errkind json_protocol(df__delta_replay *r, const df_json_value *p, df_error *err) {
    if (r->have_protocol) return DF_OK;
    int64_t rv, wv;
    if (!df_json_get_i64(p, "minReaderVersion", &rv) || !df_json_get_i64(p, "minWriterVersion", &wv))
        return bad_action(err, "protocol action without minReaderVersion or minWriterVersion");
    df_delta_protocol *out = &r->protocol;
    out->min_reader_version = (int32_t)DF_MAX(DF_MIN(rv, INT32_MAX), INT32_MIN);
    out->min_writer_version = (int32_t)DF_MAX(DF_MIN(wv, INT32_MAX), INT32_MIN);
    DF_TRY(string_list(r, df_json_get(p, "readerFeatures"), &out->nreader_features, &out->reader_features, err));
    DF_TRY(string_list(r, df_json_get(p, "writerFeatures"), &out->nwriter_features, &out->writer_features, err));
    r->have_protocol = true;
    return DF_OK;
}

static df_errkind json_configuration(df__delta_replay *r, const df_json_value *c, df_error *err) {
    df_delta_metadata *m = &r->metadata;
    if (!df_json_is_object(c) || c->u.obj.n == 0) return DF_OK;
    if (c->u.obj.n > 100000) return bad_action(err, "too many table properties");
    const char **keys = df_arena_alloc(r->arena, c->u.obj.n * sizeof(char *));
    const char **vals = df_arena_alloc(r->arena, c->u.obj.n * sizeof(char *));
    if (!keys || !vals) return DF_OOM(err);
    int32_t n = 0;
    for (size_t i = 0; i < c->u.obj.n; i++) {
        const df_json_member *mem = &c->u.obj.members[i];
        if (!df_json_is_string(&mem->value)) continue; /* only string properties are meaningful */
        keys[n] = keep_str(r, mem->key);
        vals[n] = keep_str(r, mem->value.u.str.ptr);
        if (!keys[n] || !vals[n]) return DF_OOM(err);
        n++;
    }
    m->nconfiguration = n;
    m->configuration_keys = keys;
    m->configuration_values = vals;
    return DF_OK;
}

static df_errkind json_metadata(df__delta_replay *r, const df_json_value *md, df_error *err) {
    if (r->have_metadata) return DF_OK;
    df_delta_metadata *m = &r->metadata;
    const char *schema = df_json_get_string(md, "schemaString");
    if (!schema) return bad_action(err, "metaData action without schemaString");
    m->schema_string = keep_str(r, schema);
    m->id = keep_str(r, df_json_get_string(md, "id"));
    m->name = keep_str(r, df_json_get_string(md, "name"));
    m->description = keep_str(r, df_json_get_string(md, "description"));
    m->format_provider = keep_str(r, df_json_get_string(df_json_get(md, "format"), "provider"));
    if (!m->schema_string) return DF_OOM(err);
    if (!df_json_get_i64(md, "createdTime", &m->created_time)) m->created_time = -1;
    DF_TRY(string_list(r, df_json_get(md, "partitionColumns"), &m->npartition_columns, &m->partition_columns, err));
    DF_TRY(json_configuration(r, df_json_get(md, "configuration"), err));
    r->have_metadata = true;
    return DF_OK;
}

/* Applies one parsed action line. */
static df_errkind json_action(df__delta_replay *r, const df_json_value *line, bool is_checkpoint, df_error *err) {
    if (!df_json_is_object(line)) return bad_action(err, "a log line is not a JSON object");
    for (size_t i = 0; i < line->u.obj.n; i++) {
        const df_json_member *m = &line->u.obj.members[i];
        const df_json_value *v = &m->value;
        if (df_json_is_null(v)) continue;
        const char *key = m->key;
        bool is_obj = df_json_is_object(v);
        if (strcmp(key, "add") == 0 || strcmp(key, "remove") == 0) {
            if (!is_obj) return bad_action(err, "file action is not an object");
            DF_TRY(json_add(r, v, key[0] == 'a', is_checkpoint, err));
        } else if (strcmp(key, "protocol") == 0) {
            if (!is_obj) return bad_action(err, "protocol action is not an object");
            DF_TRY(json_protocol(r, v, err));
        } else if (strcmp(key, "metaData") == 0) {
            if (!is_obj) return bad_action(err, "metaData action is not an object");
            DF_TRY(json_metadata(r, v, err));
        } else if (strcmp(key, "txn") == 0) {
            const char *app = df_json_get_string(v, "appId");
            if (app) DF_TRY(df__delta_replay_txn(r, app, err));
        } else if (strcmp(key, "domainMetadata") == 0) {
            const char *domain = df_json_get_string(v, "domain");
            bool removed = false;
            df_json_get_bool(v, "removed", &removed);
            if (domain) DF_TRY(df__delta_replay_domain(r, domain, removed, err));
        } else if (strcmp(key, "sidecar") == 0) {
            const char *path = df_json_get_string(v, "path");
            if (!is_checkpoint) return bad_action(err, "sidecar action outside a checkpoint");
            if (!path) return bad_action(err, "sidecar action without a path");
            DF_TRY(df__delta_replay_add_sidecar(r, path, err));
        }
        /* commitInfo, cdc, checkpointMetadata and unknown actions do not change the snapshot. */
    }
    return DF_OK;
}

df_errkind df__delta_replay_json(df__delta_replay *r, const char *data, size_t len, bool is_checkpoint,
                                 const char *name, df_error *err) {
    /* Collect line starts, then walk them backwards (newest action first). */
    size_t nlines = 0, cap = 0;
    size_t *starts = NULL;
    for (size_t pos = 0; pos < len;) {
        df_errkind grown = DF_ARRAY_RESERVE(starts, cap, nlines + 1, 64, err);
        if (grown) {
            df_free(starts);
            return grown;
        }
        starts[nlines++] = pos;
        const char *nl = memchr(data + pos, '\n', len - pos);
        pos = nl ? (size_t)(nl - data) + 1 : len;
    }
    df_json_options opts = {.max_bytes = DF_DELTA_MAX_LOG_FILE_BYTES, .max_depth = 64};
    df_errkind k = DF_OK;
    for (size_t i = nlines; i-- > 0 && k == DF_OK;) {
        size_t s = starts[i], e = i + 1 < nlines ? starts[i + 1] : len;
        while (e > s && (data[e - 1] == '\n' || data[e - 1] == '\r' || data[e - 1] == ' ' || data[e - 1] == '\t')) e--;
        if (e == s) continue;
        df_arena_reset(&r->scratch);
        df_json_value *line;
        k = df_json_parse(data + s, e - s, &r->scratch, &opts, &line, err);
        if (k == DF_ERR_JSON_FORMAT) {
            df_error_prefix(err, "%s line %zu", name, i + 1);
            k = df__delta_rekind(err, DF_ERR_DELTA_LOG_FORMAT);
        } else if (k == DF_OK) {
            k = json_action(r, line, is_checkpoint, err);
            if (k == DF_ERR_DELTA_LOG_FORMAT) df_error_prefix(err, "%s line %zu", name, i + 1);
        }
    }
    df_arena_reset(&r->scratch);
    df_free(starts);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Protocol gate                                                             */

static const char *const supported_reader_features[] = {
    "columnMapping", "deletionVectors", "timestampNtz", "typeWidening", "typeWidening-preview",
    "v2Checkpoint", "vacuumProtocolCheck",
};

df_errkind df__delta_protocol_check(const df_delta_protocol *p, df_error *err) {
    if (p->min_reader_version < 1 || p->min_reader_version > 3)
        DF_FAIL(err, DF_ERR_DELTA_PROTOCOL, "unsupported Delta minReaderVersion %d", (int)p->min_reader_version);
    if (p->min_reader_version < 3) return DF_OK;
    for (int32_t i = 0; i < p->nreader_features; i++) {
        bool ok = false;
        for (size_t j = 0; j < DF_ARRAY_LEN(supported_reader_features) && !ok; j++)
            ok = strcmp(p->reader_features[i], supported_reader_features[j]) == 0;
        if (!ok) DF_FAIL(err, DF_ERR_DELTA_PROTOCOL, "unsupported Delta reader feature `%s`", p->reader_features[i]);
    }
    return DF_OK;
}
