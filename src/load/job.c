/*
 * Job files: one TOML or JSON document describing a session (options,
 * Delta sources, SQL tables and aliases) and its SQL Server outputs, run
 * with write_all semantics (docs/jobs.md).  `deltafunnel load` is a thin
 * shell around df_job_run.
 *
 *   [session]                  Session options (same names and checks as Python)
 *   [[sources]]  name, uri, version, storage_options
 *   [[tables]]   sql, alias (registered) or name (job-local)
 *   [[outputs]]  from (a source, alias or table name) or sql; schema, table,
 *                load_mode, name, connection_string
 *   [options]    write_all options
 *
 * Strings "env:NAME" in connection-string and storage-option values are
 * read from the environment, so job files need not hold secrets.  Relative
 * source paths resolve against the job file's directory.  Every key is
 * checked: unknown keys are errors naming the key and its section.
 */
#include "load/job_int.h"
#include "load/write_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_JOB_BYTES ((size_t)16 << 20)
#define MAX_ITEMS 1024

typedef struct job {
    df_arena arena;                  /* JSON nodes and df_value entries */
    char dir[4096];                  /* the job file's directory */
    df_session *session;             /* owned */
    df_table **tables;               /* every table handle made (owned references) */
    const char **table_names;        /* their job-visible names (borrowed from the JSON) */
    int32_t ntables;                 /* handles used */
    df_output_spec **specs;          /* outputs (owned) */
    int32_t nspecs;                  /* outputs used */
} job;

static df_errkind job_error(df_error *err, const char *fmt, const char *a, const char *b) {
    char x[160], y[160];
    df__session_escape_into(x, sizeof x, a ? a : "");
    df__session_escape_into(y, sizeof y, b ? b : "");
    df_error_set(err, DF_ERR_CONFIG, fmt, x, y);
    df_error_set_phase(err, "config");
    return DF_ERR_CONFIG;
}

/* Checks that `obj` holds only keys from `allowed` (NULL-terminated). */
static df_errkind check_keys(const df_json_value *obj, const char *const *allowed, const char *section, df_error *err) {
    if (!df_json_is_object(obj)) return job_error(err, "job file: `%s` must be a table%s", section, "");
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const char *key = obj->u.obj.members[i].key;
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(key, *a);
        if (!ok) return job_error(err, "job file: unknown key `%s` in `%s`", key, section);
    }
    return DF_OK;
}

/* "env:NAME" -> $NAME (must be set); other strings unchanged. */
static df_errkind resolve_secret(const char *value, const char **out, df_error *err) {
    *out = value;
    if (strncmp(value, "env:", 4) != 0) return DF_OK;
    const char *v = getenv(value + 4);
    if (!v || !*v) return job_error(err, "job file: environment variable `%s` is not set%s", value + 4, "");
    *out = v;
    return DF_OK;
}

/* JSON -> df_value (maps, lists, scalars); entries live in the job arena. */
static df_errkind to_value(job *j, const df_json_value *v, df_value *out, int depth, df_error *err) {
    *out = df_value_none();
    if (depth > 8) return job_error(err, "job file: values nested too deeply%s%s", "", "");
    switch (v->type) {
    case DF_JSON_NULL: return DF_OK;
    case DF_JSON_BOOL: *out = df_value_bool(v->u.b); return DF_OK;
    case DF_JSON_STRING: *out = df_value_str(v->u.str.ptr); return DF_OK;
    case DF_JSON_NUMBER: {
        int64_t i;
        if (df_json_value_i64(v, &i)) {
            *out = df_value_int(i);
        } else {
            out->kind = DF_VALUE_FLOAT;
            out->f = v->u.num.f64;
        }
        return DF_OK;
    }
    case DF_JSON_ARRAY:
    case DF_JSON_OBJECT: {
        bool obj = v->type == DF_JSON_OBJECT;
        size_t n = obj ? v->u.obj.n : v->u.arr.n;
        df_value_entry *e = df_arena_calloc(&j->arena, n ? n : 1, sizeof *e);
        if (!e) return DF_OOM(err);
        for (size_t i = 0; i < n; i++) {
            if (obj) e[i].key = df_value_str(v->u.obj.members[i].key);
            DF_TRY(to_value(j, obj ? &v->u.obj.members[i].value : &v->u.arr.items[i], &e[i].value, depth + 1, err));
        }
        *out = obj ? df_value_map(e, n) : df_value_list(e, n);
        return DF_OK;
    }
    }
    return DF_OK;
}

static const char *get_str(const df_json_value *obj, const char *key) { return df_json_get_string(obj, key); }

/* ------------------------------------------------------------------------ */
/* Session                                                                   */

static df_errkind build_session(job *j, const df_json_value *cfg, df_error *err) {
    static const char *const keys[] = {"default_mssql_connection_string", "target_partitions", "output_batch_size",
                                       "validation_options", "schema_options", "provider_scan_options", NULL};
    df_session_options *opts = NULL;
    DF_TRY(df_session_options_new(&opts, err));
    df_errkind k = DF_OK;
    if (cfg) k = check_keys(cfg, keys, "session", err);
    for (size_t i = 0; k == DF_OK && cfg && i < cfg->u.obj.n; i++) {
        const char *key = cfg->u.obj.members[i].key;
        const df_json_value *v = &cfg->u.obj.members[i].value;
        if (!strcmp(key, "provider_scan_options")) {
            if (!df_json_is_object(v)) {
                k = job_error(err, "job file: `session.provider_scan_options` must be a table%s%s", "", "");
                break;
            }
            for (size_t f = 0; k == DF_OK && f < v->u.obj.n; f++) {
                char name[128];
                snprintf(name, sizeof name, "provider_scan_options.%s", v->u.obj.members[f].key);
                df_value val;
                k = to_value(j, &v->u.obj.members[f].value, &val, 0, err);
                if (k == DF_OK) k = df_session_options_set(opts, name, &val, err);
            }
            continue;
        }
        df_value val;
        k = to_value(j, v, &val, 0, err);
        if (k == DF_OK && !strcmp(key, "default_mssql_connection_string") && val.kind == DF_VALUE_STRING)
            k = resolve_secret(val.s, &val.s, err);
        if (k == DF_OK) k = df_session_options_set(opts, key, &val, err);
    }
    if (k == DF_OK) k = df_session_new(opts, &j->session, err);
    df_session_options_free(opts);
    return k;
}

static df_errkind remember(job *j, df_table *t, const char *name, df_error *err) {
    if (j->ntables >= MAX_ITEMS * 3) {
        df_table_release(t);
        return job_error(err, "job file: too many tables%s%s", "", "");
    }
    j->tables[j->ntables] = t;
    j->table_names[j->ntables++] = name;
    return DF_OK;
}

static df_table *lookup(job *j, const char *name) {
    for (int32_t i = j->ntables - 1; i >= 0; i--)
        if (j->table_names[i] && !df_ascii_casecmp(j->table_names[i], name)) return j->tables[i];
    return NULL;
}

static df_errkind add_source(job *j, const df_json_value *src, df_error *err) {
    static const char *const keys[] = {"name", "uri", "version", "storage_options", NULL};
    DF_TRY(check_keys(src, keys, "sources", err));
    const char *name = get_str(src, "name"), *uri = get_str(src, "uri");
    if (!name || !uri) return job_error(err, "job file: every source needs `name` and `uri`%s%s", "", "");
    char path[8192];
    if (!strstr(uri, "://") && uri[0] != '/') {
        snprintf(path, sizeof path, "%s/%s", j->dir, uri);
        uri = path;
    }
    df_value version = df_value_none(), storage = df_value_none();
    const df_json_value *v = df_json_get(src, "version");
    if (v) DF_TRY(to_value(j, v, &version, 0, err));
    v = df_json_get(src, "storage_options");
    if (v) {
        DF_TRY(to_value(j, v, &storage, 0, err));
        for (size_t i = 0; storage.kind == DF_VALUE_MAP && i < storage.nentries; i++) {
            df_value *sv = (df_value *)&storage.entries[i].value;
            if (sv->kind == DF_VALUE_STRING) DF_TRY(resolve_secret(sv->s, &sv->s, err));
        }
    }
    df_delta_source *ds = NULL;
    DF_TRY(df_delta_source_new(uri, &version, &storage, &ds, err));
    df_table *t = NULL;
    df_errkind k = df_session_register_delta(j->session, ds, name, NULL, &t, err);
    df_delta_source_free(ds);
    return k == DF_OK ? remember(j, t, name, err) : k;
}

static df_errkind add_table(job *j, const df_json_value *spec, df_error *err) {
    static const char *const keys[] = {"sql", "alias", "name", NULL};
    DF_TRY(check_keys(spec, keys, "tables", err));
    const char *sql = get_str(spec, "sql"), *alias = get_str(spec, "alias"), *name = get_str(spec, "name");
    if (!sql) return job_error(err, "job file: every table needs `sql`%s%s", "", "");
    df_table *t = NULL;
    DF_TRY(df_session_table_from_sql(j->session, sql, &t, err));
    if (alias) {
        df_table *a = NULL;
        df_errkind k = df_table_alias(t, alias, &a, err);
        df_table_release(t);
        if (k != DF_OK) return k;
        t = a;
        name = alias;
    }
    return remember(j, t, name, err);
}

static df_errkind add_output(job *j, const df_json_value *o, df_error *err) {
    static const char *const keys[] = {"from", "sql", "schema", "table", "load_mode", "name", "connection_string", NULL};
    DF_TRY(check_keys(o, keys, "outputs", err));
    const char *from = get_str(o, "from"), *sql = get_str(o, "sql");
    const char *schema = get_str(o, "schema"), *table = get_str(o, "table"), *mode = get_str(o, "load_mode");
    const char *name = get_str(o, "name"), *conn = get_str(o, "connection_string");
    if (!!from == !!sql) return job_error(err, "job file: every output needs exactly one of `from` and `sql`%s%s", "", "");
    if (!schema || !table || !mode)
        return job_error(err, "job file: every output needs `schema`, `table` and `load_mode`%s%s", "", "");
    if (conn) DF_TRY(resolve_secret(conn, &conn, err));
    df_table *t = NULL;
    if (sql) {
        DF_TRY(df_session_table_from_sql(j->session, sql, &t, err));
        DF_TRY(remember(j, t, NULL, err));
    } else {
        t = lookup(j, from);
        if (!t) return job_error(err, "job file: output source `%s` is not a source, alias or table of the job%s", from, "");
    }
    if (j->nspecs >= MAX_ITEMS) return job_error(err, "job file: too many outputs%s%s", "", "");
    return df_table_to_mssql(t, schema, table, mode, name, conn, &j->specs[j->nspecs++], err);
}

static df_errkind each(job *j, const df_json_value *doc, const char *key, df_errkind (*fn)(job *, const df_json_value *, df_error *),
                       df_error *err) {
    const df_json_value *arr = df_json_get(doc, key);
    if (!arr) return DF_OK;
    if (!df_json_is_array(arr) || df_json_array_len(arr) > MAX_ITEMS)
        return job_error(err, "job file: `%s` must be an array of tables (at most 1024)%s", key, "");
    for (size_t i = 0; i < df_json_array_len(arr); i++) DF_TRY(fn(j, df_json_array_at(arr, i), err));
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Running                                                                   */

static df_errkind read_file(const char *path, char **out, size_t *len, df_error *err) {
    *out = NULL;
    /* Regular files only: a FIFO named as the job file would block the run before it starts. */
    int fd;
    struct stat st;
    int e = df_file_open_regular(path, 0, &fd, &st);
    if (e < 0)
        return df_error_set(err, DF_ERR_NOT_FILE, "cannot open the job file: it is %s, not a regular file",
                            df_file_kind_name((unsigned)st.st_mode));
    if (e > 0) {
        df_error_set(err, e == ENOENT ? DF_ERR_NOT_FOUND : DF_ERR_IO, "cannot open the job file: %s", strerror(e));
        df_error_set_code(err, e);
        return e == ENOENT ? DF_ERR_NOT_FOUND : DF_ERR_IO;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        e = errno;
        close(fd);
        return df_error_set(err, DF_ERR_IO, "cannot open the job file: %s", strerror(e));
    }
    df_buf b;
    df_buf_init(&b, 0);
    char chunk[65536];
    size_t n;
    df_errkind k = DF_OK;
    while (k == DF_OK && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        k = df_buf_append(&b, chunk, n, err);
        if (b.len > MAX_JOB_BYTES) k = df_error_set(err, DF_ERR_CONFIG, "job file larger than 16 MiB");
    }
    if (k == DF_OK && ferror(f)) k = df_error_set(err, DF_ERR_IO, "cannot read the job file");
    fclose(f);
    if (k == DF_OK) {
        *len = b.len;
        k = df_buf_take_text(&b, out, NULL, err);
    }
    df_buf_free(&b);
    return k;
}

static bool looks_json(const char *path, const char *text) {
    size_t n = strlen(path);
    if (n >= 5 && !strcmp(path + n - 5, ".json")) return true;
    if (n >= 5 && !strcmp(path + n - 5, ".toml")) return false;
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n') text++;
    return *text == '{';
}

/*
 * True when a string or key anywhere in the document holds a NUL (a \u0000
 * escape): every value is used as a NUL-terminated string (SQL text, names,
 * modes), so it would be cut short silently.  Depth is bounded by the parse.
 */
static bool json_has_nul(const df_json_value *v) {
    switch (v->type) {
    case DF_JSON_STRING: return strlen(v->u.str.ptr) != v->u.str.len;
    case DF_JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (json_has_nul(&v->u.arr.items[i])) return true;
        return false;
    case DF_JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const df_json_member *m = &v->u.obj.members[i];
            if (strlen(m->key) != m->key_len || json_has_nul(&m->value)) return true;
        }
        return false;
    default: return false;
    }
}

static df_errkind parse_job(job *j, const char *path, const df_json_value **doc, df_error *err) {
    char *text = NULL, *json = NULL;
    size_t len = 0, json_len = 0;
    DF_TRY(read_file(path, &text, &len, err));
    df_errkind k = DF_OK;
    if (!looks_json(path, text)) {
        k = df__job_toml_to_json(text, len, &json, err);
        if (k == DF_OK) json_len = strlen(json);
    } else {
        json = text;
        json_len = len; /* the file's length: a NUL byte in it is a parse error, not the end */
        text = NULL;
    }
    df_json_value *v = NULL;
    if (k == DF_OK) {
        df_json_options jo = {MAX_JOB_BYTES, 64};
        k = df_json_parse(json, json_len, &j->arena, &jo, &v, err);
        if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err ? err->message : "");
            df_error_set(err, DF_ERR_CONFIG, "job file is not valid JSON: %s", msg);
            df_error_set_phase(err, "config");
            k = DF_ERR_CONFIG;
        }
    }
    if (k == DF_OK && json_has_nul(v)) k = job_error(err, "job file: a string holds a NUL character%s%s", "", "");
    df_free(text);
    df_free(json);
    *doc = k == DF_OK ? v : NULL;
    return k;
}

static void job_free(job *j) {
    for (int32_t i = 0; i < j->nspecs; i++) df_output_spec_free(j->specs[i]);
    for (int32_t i = 0; i < j->ntables; i++) df_table_release(j->tables[i]);
    df_free(j->specs);
    df_free(j->tables);
    df_free(j->table_names);
    df_session_free(j->session);
    df_arena_destroy(&j->arena);
}

df_errkind df_job_run(const char *path, bool dry_run, const df_progress *progress, const df_log_sink *log,
                      char **report_json, df_error *err) {
    return df_job_run_cancellable(path, dry_run, progress, log, NULL, report_json, err);
}

df_errkind df_job_run_cancellable(const char *path, bool dry_run, const df_progress *progress, const df_log_sink *log,
                                  const _Atomic bool *cancel, char **report_json, df_error *err) {
    *report_json = NULL;
    job j;
    memset(&j, 0, sizeof j);
    df_arena_init(&j.arena, 64 << 10, MAX_JOB_BYTES * 8);
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(j.dir, sizeof j.dir, "%.*s", (int)(slash - path), path);
    else
        snprintf(j.dir, sizeof j.dir, ".");
    j.tables = df_calloc(MAX_ITEMS * 3, sizeof *j.tables);
    j.table_names = df_calloc(MAX_ITEMS * 3, sizeof *j.table_names);
    j.specs = df_calloc(MAX_ITEMS, sizeof *j.specs);
    df_errkind k = j.tables && j.table_names && j.specs ? DF_OK : DF_OOM(err);
    const df_json_value *doc = NULL;
    if (k == DF_OK) k = parse_job(&j, path, &doc, err);
    static const char *const top[] = {"session", "sources", "tables", "outputs", "options", NULL};
    if (k == DF_OK) k = check_keys(doc, top, "job", err);
    if (k == DF_OK) k = build_session(&j, df_json_get(doc, "session"), err);
    if (k == DF_OK) k = each(&j, doc, "sources", add_source, err);
    if (k == DF_OK) k = each(&j, doc, "tables", add_table, err);
    if (k == DF_OK) k = each(&j, doc, "outputs", add_output, err);
    df_value options = df_value_none();
    const df_json_value *ov = doc ? df_json_get(doc, "options") : NULL;
    if (k == DF_OK && ov) k = to_value(&j, ov, &options, 0, err);
    if (k == DF_OK) {
        df_write_all_options wo;
        df_write_all_options_init(&wo);
        wo.write.dry_run = dry_run;
        wo.write.cancel = cancel;
        if (progress) wo.write.progress = *progress;
        if (log) wo.write.log = *log;
        wo.options = ov && !dry_run ? &options : NULL;
        k = df_session_write_all(j.session, j.specs, j.nspecs, &wo, report_json, err);
    }
    job_free(&j);
    return k;
}
