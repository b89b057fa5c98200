/*
 * Sessions: the catalog of registered Delta sources and derived SQL tables.
 *
 * A session owns a query catalog (sql/catalog.h) and a list of entries, one
 * per source or derived table, in creation order; ids come from one counter
 * starting at 0 and are spent only by successful creations.  df_table
 * handles point at entries; several handles may share one (a derived table
 * and its alias have the same id).
 *
 * Concurrency follows the reference: catalog mutations (registering a
 * source, planning SQL, aliasing) need the session to themselves and fail
 * at once with concurrent_session_mutation when another thread is mutating
 * or running an operation; read operations (previews, Arrow streams) only
 * count themselves in so that mutations see them, and never wait: the
 * entries they use are immutable once created.
 *
 * Lifetime: the caller's session reference and every table handle hold the
 * session; entries hold their snapshot and planned query, and planned
 * queries hold their table providers, so streams outlive everything else.
 */
#include "session/session_int.h"

#include <stdio.h>

#ifndef DF_VERSION_STRING
#define DF_VERSION_STRING "0.0.0"
#endif

const char *df_version(void) { return DF_VERSION_STRING; }

/* ------------------------------------------------------------------------ */
/* Entries                                                                   */

static void entry_release(df_entry *e) {
    if (!e || atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    df_query_free(e->query);
    df_delta_snapshot_close(e->snapshot);
    for (int32_t i = 0; i < e->ndeps; i++) df_free(e->deps[i]);
    df_free(e->deps);
    df_free(e->name);
    df_free(e->alias);
    df_free(e->display_uri);
    df_free(e->sql);
    df_free(e);
}

static df_entry *entry_new(df_table_kind kind) {
    df_entry *e = df_calloc(1, sizeof *e);
    if (!e) return NULL;
    atomic_init(&e->refs, 1);
    e->kind = kind;
    e->snapshot_version = -1;
    return e;
}

/*
 * Appends an entry (taking its reference).  The caller holds the mutation
 * borrow; the list changes under the mutex because reprs read it from
 * other threads.
 */
static df_errkind session_add_entry(df_session *s, df_entry *e, df_error *err) {
    pthread_mutex_lock(&s->mu);
    df_errkind k = DF_ARRAY_RESERVE(s->entries, s->cap_entries, s->nentries + 1, 8, err);
    if (k == DF_OK) s->entries[s->nentries++] = e;
    pthread_mutex_unlock(&s->mu);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Sessions                                                                  */

df_errkind df_session_new(const df_session_options *opts, df_session **out, df_error *err) {
    *out = NULL;
    df_session_options *copy = NULL;
    if (opts) {
        DF_TRY(df_session_options_validate(opts, err));
        DF_TRY(df_session_options_copy(opts, &copy, err));
    } else {
        DF_TRY(df_session_options_new(&copy, err));
    }
    df_session *s = df_calloc(1, sizeof *s);
    if (!s) {
        df_session_options_free(copy);
        return DF_OOM(err);
    }
    s->opts = copy;
    atomic_init(&s->refs, 1);
    df_errkind k = df_catalog_new(&s->catalog, err);
    if (k != DF_OK) {
        df_session_options_free(copy);
        df_free(s);
        return k;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return DF_OK;
}

static df_session *session_retain(df_session *s) {
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

static void session_release(df_session *s) {
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    for (int64_t i = 0; i < s->nentries; i++) entry_release(s->entries[i]);
    df_free(s->entries);
    df_catalog_free(s->catalog);
    df_session_options_free(s->opts);
    pthread_mutex_destroy(&s->mu);
    df_free(s);
}

void df_session_free(df_session *session) { session_release(session); }

void df__session_read_begin(df_session *s) {
    pthread_mutex_lock(&s->mu);
    s->readers++;
    pthread_mutex_unlock(&s->mu);
}

void df__session_read_end(df_session *s) {
    pthread_mutex_lock(&s->mu);
    s->readers--;
    pthread_mutex_unlock(&s->mu);
}

static df_errkind mutation_begin(df_session *s, df_error *err) {
    pthread_mutex_lock(&s->mu);
    bool busy = s->mutating || s->readers > 0;
    if (!busy) s->mutating = true;
    pthread_mutex_unlock(&s->mu);
    if (!busy) return DF_OK;
    df_error_set(err, DF_ERR_CONCURRENT_SESSION_MUTATION,
                 "session catalog mutation error: the session is already in use by another operation");
    df_error_set_origin(err, "session");
    return DF_ERR_CONCURRENT_SESSION_MUTATION;
}

static void mutation_end(df_session *s) {
    pthread_mutex_lock(&s->mu);
    s->mutating = false;
    pthread_mutex_unlock(&s->mu);
}

void df__session_exec_options(const df_session *s, df_exec_options *o) {
    df_exec_options_init(o);
    if (s->opts->target_partitions > 0)
        o->target_partitions = (int32_t)DF_MIN(s->opts->target_partitions, (int64_t)4096);
    if (s->opts->output_batch_size > 0)
        o->batch_size = (int32_t)DF_MIN(s->opts->output_batch_size, (int64_t)INT32_MAX / 2);
}

/* Appends ["a", "b"] of the names `pick` selects, escaped. */
static df_errkind repr_names(df_buf *b, df_session *s, bool sources, df_error *err) {
    DF_TRY(df_buf_append_char(b, '[', err));
    bool first = true;
    for (int64_t i = 0; i < s->nentries; i++) {
        const df_entry *e = s->entries[i];
        const char *name = sources ? (e->kind == DF_TABLE_DELTA_SOURCE ? e->name : NULL)
                                   : (e->kind == DF_TABLE_DERIVED_SQL ? e->alias : NULL);
        if (!name) continue;
        DF_TRY(df_buf_append_str(b, first ? "\"" : ", \"", err));
        DF_TRY(df__session_escape_text(b, name, strlen(name), err));
        DF_TRY(df_buf_append_char(b, '"', err));
        first = false;
    }
    return df_buf_append_char(b, ']', err);
}

df_errkind df_session_repr(df_session *s, char **out, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    pthread_mutex_lock(&s->mu);
    df_errkind k = df_buf_append_str(&b, "deltafunnel.Session(sources=", err);
    if (k == DF_OK) k = repr_names(&b, s, true, err);
    if (k == DF_OK) k = df_buf_append_str(&b, ", derived_tables=", err);
    if (k == DF_OK) k = repr_names(&b, s, false, err);
    if (k == DF_OK) k = df_buf_append_char(&b, ')', err);
    pthread_mutex_unlock(&s->mu);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

/* DF_ERR_DUPLICATE_SOURCE_NAME when `name` clashes (ignoring case) with a source or an alias. */
static df_errkind check_unique(df_session *s, const char *name, df_error *err) {
    for (int64_t i = 0; i < s->nentries; i++) {
        const df_entry *e = s->entries[i];
        const char *taken = e->kind == DF_TABLE_DELTA_SOURCE ? e->name : e->alias;
        if (taken && df_ascii_casecmp(taken, name) == 0) {
            char shown[160];
            df__session_escape_into(shown, sizeof shown, name);
            df_error_set(err, DF_ERR_DUPLICATE_SOURCE_NAME, "duplicate Delta source name `%s`", shown);
            df_error_set_origin(err, "session");
            return DF_ERR_DUPLICATE_SOURCE_NAME;
        }
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Table handles                                                             */

static df_errkind table_new(df_session *s, df_entry *e, const char *name, df_table **out, df_error *err) {
    *out = NULL;
    df_table *t = df_calloc(1, sizeof *t);
    if (!t) return DF_OOM(err);
    t->name = df_strdup(name);
    if (!t->name) {
        df_free(t);
        return DF_OOM(err);
    }
    atomic_init(&t->refs, 1);
    t->session = session_retain(s);
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    t->entry = e;
    *out = t;
    return DF_OK;
}

df_table *df_table_retain(df_table *t) {
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void df_table_release(df_table *t) {
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    entry_release(t->entry);
    session_release(t->session);
    df_free(t->name);
    df_free(t);
}

int64_t df_table_id(const df_table *t) { return t->entry->id; }
const char *df_table_name(const df_table *t) { return t->name; }
df_table_kind df_table_get_kind(const df_table *t) { return t->entry->kind; }

const char *df_table_kind_name(df_table_kind kind) {
    return kind == DF_TABLE_DELTA_SOURCE ? "delta_source" : kind == DF_TABLE_DERIVED_SQL ? "derived_sql" : "unknown";
}

const char *df_table_source_uri(const df_table *t) { return t->entry->display_uri; }
int64_t df_table_snapshot_version(const df_table *t) { return t->entry->snapshot_version; }
bool df_table_in_session(const df_table *t, const df_session *s) { return t->session == s; }

df_errkind df_table_repr(const df_table *t, char **out, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    const df_entry *e = t->entry;
    df_errkind k = df_buf_printf(&b, err, "deltafunnel.Table(id=%lld, kind=\"%s\", name=\"", (long long)e->id,
                                 df_table_kind_name(e->kind));
    if (k == DF_OK) k = df__session_escape_text(&b, t->name, strlen(t->name), err);
    if (k == DF_OK && e->kind == DF_TABLE_DELTA_SOURCE)
        k = df_buf_printf(&b, err, "\", source_uri=\"%s\", snapshot_version=%lld)", e->display_uri,
                          (long long)e->snapshot_version);
    else if (k == DF_OK)
        k = df_buf_append_str(&b, "\")", err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Delta sources                                                             */

static void progress_emit(const df_progress *p, df_progress_kind kind, const char *label) {
    if (!p || !p->fn) return;
    df_progress_event ev = {kind, label, 0, 0, 0, 0};
    p->fn(p->user, &ev);
}

/* Splits a cause into tokens and sanitizes those holding "://"; escapes the rest. */
static df_errkind sanitize_cause(df_buf *out, const char *cause, df_error *err) {
    const char *p = cause;
    while (*p) {
        size_t ws = strspn(p, " ");
        DF_TRY(df_buf_append(out, p, ws, err));
        p += ws;
        size_t n = strcspn(p, " ");
        if (n == 0) break;
        char *tok = df_strndup(p, n);
        if (!tok) return DF_OOM(err);
        df_errkind k = strstr(tok, "://") ? df__session_sanitize_uri(out, tok, err)
                                          : df__session_escape_text(out, tok, n, err);
        df_free(tok);
        DF_TRY(k);
        p += n;
    }
    return DF_OK;
}

/* Rewrites a snapshot-load failure as the reference's delta_snapshot_load error with a cause. */
static df_errkind snapshot_load_error(const df_delta_source *src, df_error *err) {
    if (!err) return DF_ERR_DELTA_SNAPSHOT_LOAD;
    df_buf cause;
    df_buf_init(&cause, 4096);
    df_errkind k = df_buf_append_str(&cause, "snapshot could not be loaded: ", NULL);
    if (k == DF_OK) k = sanitize_cause(&cause, err->message, NULL);
    size_t nopts;
    const char *const *keys, *const *values;
    df__session_source_options(src, &keys, &values, &nopts);
    bool has_credentials = false;
    for (size_t i = 0; i < nopts; i++)
        if (df_ascii_casecmp(keys[i], "aws_access_key_id") == 0 || df_ascii_casecmp(keys[i], "aws_secret_access_key") == 0)
            has_credentials = true;
    if (k == DF_OK && df__session_is_s3_uri(df__session_source_uri(src)) && !has_credentials)
        k = df_buf_append_str(&cause,
                              " S3 credential hint: no explicit S3 credentials were supplied through storage_options; "
                              "local shells may need explicit AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional "
                              "AWS_SESSION_TOKEN, and AWS_REGION.",
                              NULL);
    const char *text = cause.data ? cause.data : "snapshot could not be loaded";
    df_buf ctx;
    df_buf_init(&ctx, 0);
    df_json_writer w;
    df_json_writer_init(&w, &ctx, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "cause", text);
    df_json_object_end(&w);
    bool ctx_ok = df_json_writer_finish(&w, NULL) == DF_OK;
    df_error_set(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "Delta snapshot load error: %s", text);
    df_error_set_origin(err, "session");
    if (ctx_ok) df_error_set_context(err, ctx.data);
    df_buf_free(&ctx);
    df_buf_free(&cause);
    return DF_ERR_DELTA_SNAPSHOT_LOAD;
}

/* Maps an error of df_delta_snapshot_open to the reference (phase, kind). */
static df_errkind map_load_error(df_errkind k, const df_delta_source *src, const char *name, const char *display,
                                 df_error *err) {
    char msg[DF_ERROR_MESSAGE_SIZE];
    char shown_name[160];
    df__session_escape_into(shown_name, sizeof shown_name, name);
    switch (k) {
    case DF_ERR_OUT_OF_MEMORY:
    case DF_ERR_INVALID_SOURCE_URI:
        return k;
    case DF_ERR_DELTA_SOURCE_ENGINE:
        df_error_set(err, k, "Delta source engine error: object store engine could not be constructed");
        return k;
    case DF_ERR_DELTA_PROTOCOL:
        df__session_escape_into(msg, sizeof msg, err ? err->message : "");
        df_error_set(err, k, "Delta protocol compatibility error for source `%s` (%s): %s", shown_name, display, msg);
        return k;
    case DF_ERR_DELTA_SOURCE_SCHEMA:
        df__session_escape_into(msg, sizeof msg, err ? err->message : "");
        df_error_set(err, k, "Delta source schema error for source `%s`: %s", shown_name, msg);
        return k;
    default:
        return snapshot_load_error(src, err);
    }
}

/* protocol_preflight: the snapshot's reader version must be one we read. */
static df_errkind protocol_preflight(df_delta_snapshot *snap, const char *name, const char *display, df_error *err) {
    const df_delta_protocol *p = df_delta_snapshot_protocol(snap);
    if (p && p->min_reader_version >= 1 && p->min_reader_version <= 3) return DF_OK;
    char shown[160];
    df__session_escape_into(shown, sizeof shown, name);
    df_error_set(err, DF_ERR_DELTA_PROTOCOL,
                 "Delta protocol compatibility error for source `%s` at snapshot version %lld (%s): "
                 "unsupported Delta minReaderVersion %d",
                 shown, (long long)df_delta_snapshot_version(snap), display, p ? p->min_reader_version : 0);
    return DF_ERR_DELTA_PROTOCOL;
}

/* datafusion_registration: provider + catalog entry + the table's SELECT * query. */
static df_errkind register_provider(df_session *s, df_entry *e, df_error *err) {
    df_table_provider *provider = NULL;
    df_errkind k = df_delta_provider_new(e->snapshot, &provider, err);
    if (k == DF_OK) k = df_catalog_register_table(s->catalog, e->name, provider, err);
    df_table_provider_release(provider);
    if (k != DF_OK) {
        if (k != DF_ERR_OUT_OF_MEMORY) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err ? err->message : "");
            df_error_set(err, DF_ERR_REGISTRATION, "DataFusion registration error: %s", msg);
        }
        return k == DF_ERR_OUT_OF_MEMORY ? k : DF_ERR_REGISTRATION;
    }
    /* Quoted: a valid source name may still be a word the SQL grammar reserves (e.g. `year`). */
    df_buf sql;
    df_buf_init(&sql, 0);
    k = df_buf_printf(&sql, err, "SELECT * FROM \"%s\"", e->name);
    if (k == DF_OK) k = df_query_plan(s->catalog, sql.data, &e->query, err);
    df_buf_free(&sql);
    if (k != DF_OK) {
        df_catalog_unregister(s->catalog, e->name, NULL);
        if (k != DF_ERR_OUT_OF_MEMORY) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err ? err->message : "");
            df_error_set(err, DF_ERR_REGISTRATION, "DataFusion registration error: %s", msg);
            k = DF_ERR_REGISTRATION;
        }
    }
    return k;
}

/* The three timed registration steps; on success the entry holds snapshot and query. */
static df_errkind load_source(df_session *s, const df_delta_source *src, df_entry *e, const df_progress *progress,
                              df_error *err) {
    char *location = NULL;
    progress_emit(progress, DF_PROGRESS_PHASE, "Loading Delta metadata");
    uint64_t t0 = df_now_ns();
    df_errkind k = df__session_resolve_location(df__session_source_uri(src), &location, &e->display_uri, err);
    if (k == DF_OK) {
        size_t nopts;
        const char *const *keys, *const *values;
        df__session_source_options(src, &keys, &values, &nopts);
        k = df_delta_snapshot_open(location, df_delta_source_version(src), keys, values, nopts, &e->snapshot, err);
        if (k != DF_OK) k = map_load_error(k, src, e->name, e->display_uri, err);
    }
    df_free(location);
    uint64_t t1 = df_now_ns();
    e->step_ns[0] = t1 - t0;
    if (k != DF_OK) return k;
    e->snapshot_version = df_delta_snapshot_version(e->snapshot);
    progress_emit(progress, DF_PROGRESS_PHASE, "Validating Delta protocol");
    k = protocol_preflight(e->snapshot, e->name, e->display_uri, err);
    uint64_t t2 = df_now_ns();
    e->step_ns[1] = t2 - t1;
    if (k != DF_OK) return k;
    progress_emit(progress, DF_PROGRESS_PHASE, "Preparing Delta provider");
    progress_emit(progress, DF_PROGRESS_PHASE, "Registering Delta source");
    k = register_provider(s, e, err);
    e->step_ns[2] = df_now_ns() - t2;
    return k;
}

df_errkind df_session_register_delta(df_session *s, const df_delta_source *src, const char *name,
                                     const df_progress *progress, df_table **out, df_error *err) {
    *out = NULL;
    DF_TRY(df__session_check_name(name, err));
    DF_TRY(mutation_begin(s, err));
    df_errkind k = check_unique(s, name, err);
    df_entry *e = NULL;
    if (k == DF_OK) {
        e = entry_new(DF_TABLE_DELTA_SOURCE);
        if (!e || !(e->name = df_strdup(name))) k = DF_OOM(err);
    }
    if (k != DF_OK) {
        entry_release(e);
        mutation_end(s);
        return k;
    }
    progress_emit(progress, DF_PROGRESS_STARTED, "Loading Delta source");
    k = load_source(s, src, e, progress, err);
    if (k == DF_OK) {
        e->id = s->next_id;
        k = session_add_entry(s, e, err);
        if (k == DF_OK) {
            s->next_id++;
            k = table_new(s, e, name, out, err);
            e = NULL;   /* the session's list owns it now */
        } else if (e->query) {
            df_catalog_unregister(s->catalog, name, NULL);
        }
    }
    if (k != DF_OK && err) df_error_set_origin(err, "session");
    progress_emit(progress, DF_PROGRESS_FINISHED, k == DF_OK ? "Completed" : "Failed");
    entry_release(e);
    mutation_end(s);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Derived SQL tables                                                        */

static df_errkind sql_table_error(df_error *err, const char *during, const char *msg) {
    df_error_set(err, DF_ERR_SQL_TABLE, "SQL table error during %s: %s", during, msg);
    df_error_set_origin(err, "session");
    return DF_ERR_SQL_TABLE;
}

/*
 * Rewrites a planning error as DF_ERR_SQL_TABLE: the specific kind and the
 * offset go to the context, the message is escaped, and a message that
 * quotes the whole statement is cut so SQL text is never echoed.
 */
static df_errkind map_sql_error(df_errkind k, const char *sql, size_t sql_len, df_error *err) {
    if (k == DF_ERR_OUT_OF_MEMORY || !err) return k;
    char msg[DF_ERROR_MESSAGE_SIZE];
    int64_t offset = err->offset;
    if (sql_len >= 12) {
        char *hit = strstr(err->message, sql);
        if (hit) *hit = '\0';
    }
    df__session_escape_into(msg, sizeof msg, err->message);
    const char *during = k == DF_ERR_SQL_NOT_READ_ONLY ? "SQL validation" : "SQL planning";
    char ctx[160];
    if (offset >= 0)
        snprintf(ctx, sizeof ctx, "{\"cause_kind\":\"%s\",\"offset\":%lld}", df_errkind_name(k), (long long)offset);
    else
        snprintf(ctx, sizeof ctx, "{\"cause_kind\":\"%s\",\"offset\":null}", df_errkind_name(k));
    sql_table_error(err, during, msg);
    df_error_set_offset(err, offset);
    df_error_set_context(err, ctx);
    return DF_ERR_SQL_TABLE;
}

/* Copies the plan's direct dependencies into the entry and decides whether lineage is complete. */
static df_errkind record_lineage(df_session *s, df_entry *e, df_error *err) {
    int32_t n = 0;
    const char *const *deps = df_query_direct_dependencies(e->query, &n);
    e->deps = df_calloc(n > 0 ? (size_t)n : 1, sizeof(char *));
    if (!e->deps) return DF_OOM(err);
    e->lineage_complete = true;
    for (int32_t i = 0; i < n; i++) {
        e->deps[i] = df_strdup(deps[i]);
        if (!e->deps[i]) return DF_OOM(err);
        e->ndeps = i + 1;
        bool known = false;
        for (int64_t j = 0; j < s->nentries && !known; j++) {
            const df_entry *d = s->entries[j];
            const char *dn = d->kind == DF_TABLE_DELTA_SOURCE ? d->name : d->alias;
            known = dn && df_ascii_casecmp(dn, deps[i]) == 0;
        }
        if (!known) e->lineage_complete = false;
    }
    return DF_OK;
}

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

df_errkind df_session_table_from_sql(df_session *s, const char *sql, df_table **out, df_error *err) {
    *out = NULL;
    if (!sql) sql = "";
    while (is_space(*sql)) sql++;
    size_t len = strlen(sql);
    while (len > 0 && is_space(sql[len - 1])) len--;
    if (len == 0) return sql_table_error(err, "SQL validation", "SQL text must not be empty");
    char *text = df_strndup(sql, len);
    if (!text) return DF_OOM(err);
    df_errkind k = mutation_begin(s, err);
    if (k != DF_OK) {
        df_free(text);
        return k;
    }
    df_entry *e = entry_new(DF_TABLE_DERIVED_SQL);
    if (!e) k = DF_OOM(err);
    if (k == DF_OK) {
        e->sql = text;
        text = NULL;
        uint64_t t0 = df_now_ns();
        k = df_query_plan(s->catalog, e->sql, &e->query, err);
        e->planning_ns = df_now_ns() - t0;
        if (k != DF_OK) k = map_sql_error(k, e->sql, len, err);
    }
    if (k == DF_OK) k = record_lineage(s, e, err);
    if (k == DF_OK) {
        e->id = s->next_id;
        k = session_add_entry(s, e, err);
        if (k == DF_OK) {
            s->next_id++;
            char name[40];
            snprintf(name, sizeof name, "table_%lld", (long long)e->id);
            k = table_new(s, e, name, out, err);
            e = NULL;
        }
    }
    entry_release(e);
    df_free(text);
    mutation_end(s);
    return k;
}

df_errkind df_table_alias(df_table *t, const char *name, df_table **out, df_error *err) {
    *out = NULL;
    DF_TRY(df__session_check_name(name, err));
    df_session *s = t->session;
    DF_TRY(mutation_begin(s, err));
    df_errkind k = check_unique(s, name, err);
    df_entry *e = t->entry;
    if (k == DF_OK && (e->kind != DF_TABLE_DERIVED_SQL || e->alias != NULL))
        k = sql_table_error(err, "derived alias registration",
                            "lazy table is not a pending SQL-derived table owned by this session");
    char *alias = NULL;
    if (k == DF_OK && !(alias = df_strdup(name))) k = DF_OOM(err);
    if (k == DF_OK) {
        k = df_query_register_as_view(s->catalog, name, e->query, err);
        if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err ? err->message : "");
            k = sql_table_error(err, "derived alias registration", msg);
        }
    }
    if (k == DF_OK) {
        k = table_new(s, e, name, out, err);
        if (k == DF_OK) {
            pthread_mutex_lock(&s->mu);   /* reprs read aliases from other threads */
            e->alias = alias;
            pthread_mutex_unlock(&s->mu);
            alias = NULL;
        } else {
            df_catalog_unregister(s->catalog, name, NULL);
        }
    }
    df_free(alias);
    mutation_end(s);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Schemas and Arrow streams                                                 */

df_errkind df_table_schema_json(df_table *t, char **out, df_error *err) {
    *out = NULL;
    const df_schema *schema = df_query_schema(t->entry->query);
    df_buf b, type;
    df_buf_init(&b, 0);
    df_buf_init(&type, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_array_begin(&w);
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < schema->nfields && k == DF_OK; i++) {
        const df_field *f = &schema->fields[i];
        df_buf_reset(&type);
        k = df_type_display(f->type, &type, err);
        if (k != DF_OK) break;
        df_json_object_begin(&w);
        df_json_kv_int(&w, "index", i);
        df_json_kv_string(&w, "name", f->name);
        df_json_kv_string(&w, "arrow_type", type.data ? type.data : "");
        df_json_kv_bool(&w, "nullable", f->nullable);
        df_json_object_end(&w);
    }
    df_json_array_end(&w);
    if (k == DF_OK) k = df_json_writer_finish(&w, err);
    df_buf_free(&type);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

df_errkind df_table_arrow_schema(df_table *t, struct ArrowSchema *out, df_error *err) {
    return df_arrow_export_schema(df_query_schema(t->entry->query), out, err);
}

df_errkind df_table_execute_arrow(df_table *t, int64_t limit, struct ArrowArrayStream *out, df_error *err) {
    return df_table_execute_arrow_cancellable(t, limit, NULL, out, err);
}

df_errkind df_table_execute_arrow_cancellable(df_table *t, int64_t limit, const _Atomic bool *cancel,
                                              struct ArrowArrayStream *out, df_error *err) {
    df_session *s = t->session;
    df__session_read_begin(s);
    df_query *limited = NULL;
    const df_query *q = t->entry->query;
    df_errkind k = DF_OK;
    if (limit >= 0) {
        k = df_query_limit(q, limit, &limited, err);
        q = limited;
    }
    df_batch_stream *stream = NULL;
    if (k == DF_OK) {
        df_exec_options eo;
        df__session_exec_options(s, &eo);
        eo.cancel = cancel;
        k = df_query_execute(q, &eo, &stream, err);
    }
    /* The stream holds what it reads; the limited query may go now. */
    df_query_free(limited);
    if (k == DF_OK) k = df_arrow_export_stream(stream, out, err);
    df__session_read_end(s);
    return k;
}
