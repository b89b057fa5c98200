/*
 * write_all: several outputs in one call.
 *
 *   1. options and requests are checked (no I/O);
 *   2. every output is planned (output_planning) before anything runs;
 *   3. caches are chosen (cache_planning): in `auto` mode the registered
 *      derived aliases used by two or more outputs, keeping the deepest
 *      ones; `explicit` takes the caller's list after checking it;
 *   4. execution: each cached alias is computed once into a df_wcache
 *      (memory up to the budget, then a spill file) and installed in a
 *      private catalog of this run (sources and every other alias are
 *      registered there too, aliases as SQL so they read the caches); the
 *      outputs then run in order, those that read a cached alias replanned
 *      against the private catalog; after the first failed output the rest
 *      are `skipped` without reading anything;
 *   5. "restore" drops the private catalog: the session's own catalog is
 *      never modified, so a restore cannot fail and concurrent readers of
 *      the session never see a cache;
 *   6. source reports and the workflow report.
 */
#include "load/write_cache_int.h"
#include "load/write_int.h"

#include <stdio.h>

#define DEFAULT_CACHE_BUDGET ((int64_t)256 << 20)
#define NCACHE_TIMINGS 8

typedef enum cache_mode { CACHE_AUTO = 0, CACHE_EXPLICIT, CACHE_DISABLED } cache_mode;

/* Parsed write_all options. */
typedef struct wa_opts {
    cache_mode mode;                 /* cache_mode */
    bool mode_given;                 /* cache_mode was in the mapping */
    const char **aliases;            /* cache_aliases (borrowed strings), owned array */
    int32_t naliases;                /* entries of aliases */
    bool aliases_given;              /* cache_aliases was in the mapping */
    int64_t budget;                  /* cache_memory_budget_bytes */
    const char *spill_dir;           /* cache_spill_directory (borrowed) */
    int32_t parallel;                /* parallel_connections, 0 = not given */
} wa_opts;

/* One candidate alias of the cache plan. */
typedef struct wa_alias {
    df_entry *entry;                 /* the alias entry (borrowed) */
    int32_t *outputs;                /* output indexes using it, owned */
    int32_t noutputs;                /* entries of outputs */
    bool selected;                   /* cached in this run */
    const char *skip_kind;           /* reason kind when not selected, or NULL */
    int64_t covered_by;              /* covered_by_deeper_shared_alias: the selected table id */
    /* materialization */
    const char *status;              /* "selected", "materialized_and_restored", "failed" */
    int failed_stage;                /* index into cache stages, -1 none */
    char *profile;                   /* execution profile JSON or NULL, owned */
    df_table_provider *provider;     /* the installed cache, owned reference */
    uint64_t owner;                  /* diag owner id of its stages */
    int64_t rows;                    /* rows cached */
    int64_t spilled_bytes;           /* bytes spilled */
} wa_alias;

typedef struct wa_run {
    df_session *s;                   /* borrowed */
    df_output_spec *const *specs;    /* borrowed */
    int32_t n;                       /* outputs */
    const df_write_all_options *o;   /* borrowed */
    wa_opts opts;                    /* parsed options */
    df_diag_operation *op;           /* timings */
    wa_alias *cands;                 /* candidates in registration order, owned */
    int32_t ncands;                  /* entries of cands */
    const char *cache_kind;          /* "disabled" / "no_cache" / "cache_aliases" */
    const char *cache_reason;        /* reason or NULL */
    df_catalog *cat;                 /* private catalog or NULL */
    df_write_result *results;        /* per output, owned */
    int32_t failed_index;            /* first failed output, -1 none */
    uint64_t workflow_ns;            /* workflow_execution */
    uint64_t planning_ns, cache_planning_ns, sources_ns; /* top-level timings */
} wa_run;

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

static df_errkind cfg_error(df_error *err, df_errkind kind, const char *msg) {
    df_error_set(err, kind, "%s", msg);
    df_error_set_phase(err, "config");
    return kind;
}

static df_errkind parse_aliases(const df_value *v, wa_opts *o, df_error *err) {
    const char *msg = "`cache_aliases` must be a non-empty sequence of non-empty strings";
    if (v->kind != DF_VALUE_LIST || v->nentries == 0) return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, msg);
    o->aliases = df_calloc(v->nentries, sizeof *o->aliases);
    if (!o->aliases) return DF_OOM(err);
    for (size_t i = 0; i < v->nentries; i++) {
        const df_value *a = &v->entries[i].value;
        if (a->kind != DF_VALUE_STRING || !a->s) return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, msg);
        bool blank = true;
        for (const char *p = a->s; *p; p++)
            if (*p != ' ' && !(*p >= '\t' && *p <= '\r')) blank = false;
        if (blank) return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, msg);
        o->aliases[o->naliases++] = a->s;
    }
    o->aliases_given = true;
    return DF_OK;
}

static df_errkind parse_options(const df_value *v, wa_opts *o, df_error *err) {
    memset(o, 0, sizeof *o);
    o->budget = DEFAULT_CACHE_BUDGET;
    if (!v || v->kind == DF_VALUE_NONE) return DF_OK;
    if (v->kind != DF_VALUE_MAP) return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "`options` must be a mapping");
    for (size_t i = 0; i < v->nentries; i++) {
        const df_value *key = &v->entries[i].key, *val = &v->entries[i].value;
        if (key->kind != DF_VALUE_STRING) return cfg_error(err, DF_ERR_INVALID_OPTION_NAME, "option names must be strings");
        if (!strcmp(key->s, "cache_mode")) {
            if (val->kind != DF_VALUE_STRING) return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "`cache_mode` must be a string");
            if (!strcmp(val->s, "auto")) o->mode = CACHE_AUTO;
            else if (!strcmp(val->s, "explicit")) o->mode = CACHE_EXPLICIT;
            else if (!strcmp(val->s, "disabled")) o->mode = CACHE_DISABLED;
            else return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "invalid `cache_mode` value");
            o->mode_given = true;
        } else if (!strcmp(key->s, "cache_aliases")) {
            DF_TRY(parse_aliases(val, o, err));
        } else if (!strcmp(key->s, "cache_memory_budget_bytes")) {
            if (val->kind != DF_VALUE_INT || val->i < 0)
                return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "`cache_memory_budget_bytes` must be a non-negative integer");
            o->budget = val->i;
        } else if (!strcmp(key->s, "parallel_connections")) {
            if (val->kind != DF_VALUE_INT || val->i < 1 || val->i > DF_MAX_PARALLEL_CONNECTIONS) {
                char msg[80];
                snprintf(msg, sizeof msg, "`parallel_connections` must be an integer in 1..=%d",
                         DF_MAX_PARALLEL_CONNECTIONS);
                return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, msg);
            }
            o->parallel = (int32_t)val->i;
        } else if (!strcmp(key->s, "cache_spill_directory")) {
            if (val->kind != DF_VALUE_STRING || !val->s[0])
                return cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "`cache_spill_directory` must be a non-empty string");
            o->spill_dir = val->s;
        } else {
            char shown[120];
            df__session_escape_into(shown, sizeof shown, key->s);
            df_error_set(err, DF_ERR_UNKNOWN_OPTION, "unknown write_all option `%s`", shown);
            df_error_set_phase(err, "config");
            return DF_ERR_UNKNOWN_OPTION;
        }
    }
    bool explicit_mode = o->mode_given && o->mode == CACHE_EXPLICIT;
    if (explicit_mode != o->aliases_given)
        return cfg_error(err, DF_ERR_INVALID_OPTION_COMBINATION,
                         "`cache_mode=explicit` and `cache_aliases` must be supplied together");
    return DF_OK;
}

static df_errkind workflow_error(df_error *err, const char *fmt, const char *name) {
    char shown[160];
    df__session_escape_into(shown, sizeof shown, name ? name : "");
    char msg[300];
    snprintf(msg, sizeof msg, fmt, shown);
    df_error_set(err, DF_ERR_MSSQL_WORKFLOW_PLANNING, "MSSQL workflow planning error: %s", msg);
    df_error_set_phase(err, "mssql_workflow_planning");
    return DF_ERR_MSSQL_WORKFLOW_PLANNING;
}

/* ------------------------------------------------------------------------ */
/* Cache planning                                                            */

static df_entry *entry_named(df_session *s, const char *name) {
    for (int64_t j = 0; j < s->nentries; j++) {
        df_entry *d = s->entries[j];
        const char *dn = d->kind == DF_TABLE_DELTA_SOURCE ? d->name : d->alias;
        if (dn && !df_ascii_casecmp(dn, name)) return d;
    }
    return NULL;
}

/* True when `from` reads `target` directly or through aliases (depth-bounded by the entry count). */
static bool depends_on(df_session *s, const df_entry *from, const df_entry *target, int depth) {
    if (from == target) return true;
    if (depth > s->nentries || from->kind != DF_TABLE_DERIVED_SQL) return false;
    for (int32_t i = 0; i < from->ndeps; i++) {
        df_entry *d = entry_named(s, from->deps[i]);
        if (d && depends_on(s, d, target, depth + 1)) return true;
    }
    return false;
}

static df_errkind collect_candidates(wa_run *r, df_error *err) {
    df_session *s = r->s;
    r->cands = df_calloc((size_t)DF_MAX(s->nentries, 1), sizeof *r->cands);
    if (!r->cands) return DF_OOM(err);
    for (int64_t j = 0; j < s->nentries; j++) {
        df_entry *e = s->entries[j];
        if (e->kind != DF_TABLE_DERIVED_SQL || !e->alias) continue;
        wa_alias *a = &r->cands[r->ncands++];
        a->entry = e;
        a->failed_stage = -1;
        a->outputs = df_calloc((size_t)DF_MAX(r->n, 1), sizeof *a->outputs);
        if (!a->outputs) return DF_OOM(err);
        for (int32_t i = 0; i < r->n; i++)
            if (depends_on(s, r->specs[i]->table->entry, e, 0)) a->outputs[a->noutputs++] = i;
        bool blank_sql = !e->sql || !e->sql[0];
        a->skip_kind = blank_sql ? "missing_sql_text" : !e->lineage_complete ? "incomplete_lineage"
                                                      : a->noutputs < 2 ? "not_shared" : NULL;
    }
    return DF_OK;
}

/* auto: every eligible alias that no other eligible alias depends on. */
static void plan_auto(wa_run *r) {
    int32_t eligible = 0;
    for (int32_t i = 0; i < r->ncands; i++)
        if (!r->cands[i].skip_kind) eligible++;
    if (r->n < 2) {
        r->cache_kind = "no_cache";
        r->cache_reason = "fewer_than_two_outputs";
        return;
    }
    if (!eligible) {
        r->cache_kind = "no_cache";
        r->cache_reason = "no_shared_registered_derived_alias";
        return;
    }
    for (int32_t i = 0; i < r->ncands; i++) {
        wa_alias *a = &r->cands[i];
        if (a->skip_kind) continue;
        a->selected = true;
        for (int32_t j = 0; j < r->ncands; j++) {
            wa_alias *b = &r->cands[j];
            if (j == i || b->skip_kind || !depends_on(r->s, b->entry, a->entry, 0)) continue;
            a->selected = false;
            a->skip_kind = "covered_by_deeper_shared_alias";
            a->covered_by = b->entry->id;
            break;
        }
    }
    r->cache_kind = "cache_aliases";
}

static df_errkind plan_explicit(wa_run *r, df_error *err) {
    for (int32_t i = 0; i < r->opts.naliases; i++) {
        const char *name = r->opts.aliases[i];
        for (int32_t j = 0; j < i; j++)
            if (!df_ascii_casecmp(r->opts.aliases[j], name))
                return workflow_error(err, "write_all cache_aliases contains duplicate alias `%s`", name);
        wa_alias *a = NULL;
        for (int32_t j = 0; j < r->ncands; j++)
            if (!df_ascii_casecmp(r->cands[j].entry->alias, name)) a = &r->cands[j];
        if (!a) return workflow_error(err, "write_all cache_aliases contains unknown registered alias `%s`", name);
        if (a->skip_kind)
            return workflow_error(err, "write_all cache_aliases alias `%s` is not eligible for the selected outputs", name);
        a->selected = true;
    }
    for (int32_t j = 0; j < r->ncands; j++)
        if (!r->cands[j].selected && !r->cands[j].skip_kind) r->cands[j].skip_kind = "not_explicitly_selected";
    r->cache_kind = "cache_aliases";
    return DF_OK;
}

static df_errkind plan_cache(wa_run *r, df_error *err) {
    if (r->opts.mode == CACHE_DISABLED) {
        r->cache_kind = "disabled";
        return DF_OK;
    }
    DF_TRY(collect_candidates(r, err));
    if (r->opts.mode == CACHE_EXPLICIT) return plan_explicit(r, err);
    plan_auto(r);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Cache materialization                                                     */

/* The cache phase timings in report order: the stages feeding them, and the materialization total (NONE_). */
static const struct {
    df_diag_stage stage;
} cache_stages[NCACHE_TIMINGS] = {
    {DF_DIAG_STAGE_RESOLVE_CACHE_DATAFRAME}, {DF_DIAG_STAGE_BUILD_CACHE_PHYSICAL_PLAN},
    {DF_DIAG_STAGE_SET_UP_CACHE_STREAMS},    {DF_DIAG_STAGE_EXECUTE_AND_COLLECT_CACHE},
    {DF_DIAG_STAGE_BUILD_CACHE_MEMTABLE},    {DF_DIAG_STAGE_NONE_},
    {DF_DIAG_STAGE_INSTALL_CACHE_ALIAS},     {DF_DIAG_STAGE_RESTORE_CACHE_ALIAS},
};

/* The phase timing of cache_stages[s]. */
static df_diag_timing_name cache_timing(int s) {
    df_diag_stage stage = cache_stages[s].stage;
    return stage ? df_diag_stage_row(stage)->timing : DF_DIAG_TN_CACHE_ALIAS_MATERIALIZATION_TOTAL;
}

/* The private catalog: sources as providers, aliases as SQL views (so they read caches). */
static df_errkind build_catalog(wa_run *r, df_error *err) {
    DF_TRY(df_catalog_new(&r->cat, err));
    for (int64_t j = 0; j < r->s->nentries; j++) {
        df_entry *e = r->s->entries[j];
        const char *name = e->kind == DF_TABLE_DELTA_SOURCE ? e->name : e->alias;
        if (!name) continue;
        df_errkind k;
        if (e->kind == DF_TABLE_DELTA_SOURCE) {
            df_catalog_ref ref;
            k = df_catalog_lookup(r->s->catalog, name, &ref, err);
            if (k == DF_OK && ref.kind == DF_CATALOG_TABLE) k = df_catalog_register_table(r->cat, name, ref.provider, err);
            df_catalog_ref_clear(&ref);
        } else {
            k = df_catalog_register_view(r->cat, name, NULL, e->sql, err);
        }
        if (k != DF_OK) return k;
    }
    return DF_OK;
}

static df_errkind plan_select_all(df_catalog *cat, const char *name, df_query **out, df_error *err) {
    df_buf sql;
    df_buf_init(&sql, 0);
    df_errkind k = df_buf_append_str(&sql, "SELECT * FROM \"", err);
    for (const char *p = name; k == DF_OK && *p; p++) {
        k = df_buf_append_char(&sql, *p, err);
        if (k == DF_OK && *p == '"') k = df_buf_append_char(&sql, '"', err);
    }
    if (k == DF_OK) k = df_buf_append_char(&sql, '"', err);
    if (k == DF_OK) k = df_query_plan(cat, sql.data, out, err);
    df_buf_free(&sql);
    return k;
}

/* One alias's materialization: what its stages share. */
typedef struct cache_build {
    wa_run *r;
    wa_alias *a;
    const df_write_options *wo;
    df_query *q;                     /* SELECT * FROM alias in the private catalog, owned */
    df_batch_stream *stream;         /* owned until drained */
    df_wcache *cache;                /* owned until it becomes the provider */
    df_exec_profile *profile;        /* owned reference or NULL */
} cache_build;

static df_errkind cache_resolve(void *ctx, df_error *err) {
    cache_build *m = ctx;
    return plan_select_all(m->r->cat, m->a->entry->alias, &m->q, err);
}

static df_errkind cache_physical_plan(void *ctx, df_error *err) {
    cache_build *m = ctx;
    df_exec_options eo;
    df__session_exec_options(m->r->s, &eo);
    eo.execution_profile = m->wo->execution_profile;
    eo.cancel = m->wo->cancel;
    /* Traced: the cache alias's query (owner = alias name) and its planning span. */
    df_diag_query *dq = NULL;
    df_errkind k = df_diag_query_begin(m->r->op, DF_DIAG_QUERY_WRITE_ALL_CACHE_ALIAS, m->a->entry->alias, &dq, err);
    eo.diag_query = dq;
    df_diag_span planning = df_diag_query_planning_begin(dq);
    if (k == DF_OK) k = df_query_execute(m->q, &eo, &m->stream, err);
    df_diag_span_end(planning, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    return k;
}

static df_errkind cache_stream_setup(void *ctx, df_error *err) {
    cache_build *m = ctx;
    if (m->wo->execution_profile) m->profile = df_exec_stream_profile(m->stream);
    return df__wcache_new(m->stream->schema, m->r->opts.budget, m->r->opts.spill_dir, &m->cache, err);
}

static df_errkind cache_collect(void *ctx, df_error *err) {
    cache_build *m = ctx;
    df_errkind k;
    for (;;) {
        df_batch *b = NULL;
        k = df_batch_stream_next(m->stream, &b, err);
        if (k != DF_OK || !b) break;
        k = df__wcache_add(m->cache, b, err);
        df_batch_release(b);
        if (k != DF_OK) break;
    }
    df_batch_stream_close(m->stream);
    m->stream = NULL;
    return k;
}

static df_errkind cache_memtable(void *ctx, df_error *err) {
    cache_build *m = ctx;
    wa_alias *a = m->a;
    a->rows = df__wcache_rows(m->cache);
    a->spilled_bytes = df__wcache_spilled_bytes(m->cache);
    char fields[256];
    snprintf(fields, sizeof fields,
             "{\"memory_bytes\":%lld,\"rows\":%lld,\"spilled_bytes\":%lld,\"table_id\":%lld}",
             (long long)df__wcache_memory_bytes(m->cache), (long long)a->rows, (long long)a->spilled_bytes,
             (long long)a->entry->id);
    df__write_log(m->wo, DF_LOG_INFO, "cache_alias.materialized", fields);
    df_errkind k = df__wcache_provider(m->cache, &a->provider, err);
    m->cache = NULL;
    return k;
}

static df_errkind cache_install(void *ctx, df_error *err) {
    cache_build *m = ctx;
    df_errkind k = df_catalog_unregister(m->r->cat, m->a->entry->alias, err);
    if (k == DF_OK) k = df_catalog_register_table(m->r->cat, m->a->entry->alias, m->a->provider, err);
    return k;
}

/* Stage ids index cache_stages (5 is the materialization total, not a stage of its own). */
static const df_stage_def cache_stage_defs[] = {
    {0, DF_DIAG_STAGE_RESOLVE_CACHE_DATAFRAME, 0, NULL, cache_resolve},
    {1, DF_DIAG_STAGE_BUILD_CACHE_PHYSICAL_PLAN, 0, NULL, cache_physical_plan},
    {2, DF_DIAG_STAGE_SET_UP_CACHE_STREAMS, 0, NULL, cache_stream_setup},
    {3, DF_DIAG_STAGE_EXECUTE_AND_COLLECT_CACHE, 0, NULL, cache_collect},
    {4, DF_DIAG_STAGE_BUILD_CACHE_MEMTABLE, 0, NULL, cache_memtable},
    {6, DF_DIAG_STAGE_INSTALL_CACHE_ALIAS, 0, NULL, cache_install},
};

static df_errkind materialize(wa_run *r, wa_alias *a, const df_write_options *wo, df_error *err) {
    cache_build m = {r, a, wo, NULL, NULL, NULL, NULL};
    df_stage_run sr;
    df__stage_run_init(&sr, r->op, a->owner, false); /* inside write_all's Execution phase */
    df_errkind k = df__stage_run_all(&sr, cache_stage_defs, (int)DF_ARRAY_LEN(cache_stage_defs), &m, err);
    df_batch_stream_close(m.stream);
    df__wcache_free(m.cache);
    if (m.profile) {
        df_buf b;
        df_buf_init(&b, 0);
        df_profile_meta meta = {df_diag_query_scope_name(DF_DIAG_QUERY_WRITE_ALL_CACHE_ALIAS), -1};
        if (df_query_profile_json(m.profile, &meta, &b, NULL) == DF_OK) df_buf_take_text(&b, &a->profile, NULL, NULL);
        df_buf_free(&b);
        df_exec_profile_release(m.profile);
    }
    df_query_free(m.q);
    if (k != DF_OK) {
        a->failed_stage = sr.failed;
        a->status = "failed";
    }
    return k;
}

/* ------------------------------------------------------------------------ */
/* Output queries                                                            */

/* The query an output runs: the table's own, or replanned to read the caches. */
static df_errkind output_query(wa_run *r, int32_t i, df_query **owned, df_error *err) {
    *owned = NULL;
    if (!r->cat) return DF_OK;
    df_entry *e = r->specs[i]->table->entry;
    bool reads_cache = false;
    for (int32_t c = 0; c < r->ncands; c++)
        if (r->cands[c].provider && depends_on(r->s, e, r->cands[c].entry, 0)) reads_cache = true;
    if (!reads_cache) return DF_OK;
    df_query *q = NULL;
    df_errkind k = e->alias ? plan_select_all(r->cat, e->alias, &q, err) : df_query_plan(r->cat, e->sql, &q, err);
    if (k != DF_OK) return k;
    /* A replanned schema that differs would break the SQL Server plan: read uncached instead. */
    if (!df_schema_equals(df_query_schema(q), df_query_schema(e->query))) {
        df_query_free(q);
        return DF_OK;
    }
    *owned = q;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reports                                                                   */

/* The aliases[] array of the cache report: selected aliases with their timings. */
static void aliases_json(wa_run *r, df_json_writer *w) {
    df_json_array_begin(w);
    for (int32_t c = 0; c < r->ncands; c++) {
        wa_alias *a = &r->cands[c];
        if (!a->selected) continue;
        df_json_object_begin(w);
        df_json_kv_string(w, "alias", a->entry->alias);
        if (a->profile)
            df_json_kv_raw(w, "execution_profile", a->profile);
        else
            df_json_kv_null(w, "execution_profile");
        if (a->failed_stage >= 0)
            df_json_kv_string(w, "failed_phase", df_diag_timing_name_of(cache_timing(a->failed_stage)));
        else
            df_json_kv_null(w, "failed_phase");
        df_json_key(w, "output_indexes");
        df_json_array_begin(w);
        for (int32_t i = 0; i < a->noutputs; i++) df_json_write_int(w, a->outputs[i]);
        df_json_array_end(w);
        if (a->owner) {
            df_wtimings ts;
            ts.n = 0;
            uint64_t total = 0;
            for (int s = 0; s < NCACHE_TIMINGS; s++) {
                if (s == 5) {
                    bool failed = a->failed_stage >= 0 && a->failed_stage <= 4;
                    df__wtimings_add(&ts, cache_timing(s), failed ? "failed" : "completed", NULL,
                                     (int64_t)(total / 1000));
                    continue;
                }
                df_diag_timing t = df_diag_operation_stage_timing(r->op, cache_stages[s].stage, a->owner);
                if (s < 5) total += t.elapsed_ns;
                df__wtimings_add_stage(&ts, r->op, cache_stages[s].stage, a->owner, "prior_failure");
            }
            df_json_key(w, "phase_timings");
            df__json_timings(w, &ts);
        }
        df_json_kv_string(w, "status", a->status ? a->status : "selected");
        df_json_kv_int(w, "table_id", a->entry->id);
        df_json_object_end(w);
    }
    df_json_array_end(w);
}

static void cache_report(wa_run *r, df_json_writer *w) {
    df_json_object_begin(w);
    df_json_key(w, "aliases");
    aliases_json(r, w);
    df_json_kv_string(w, "kind", r->cache_kind);
    if (r->cache_reason)
        df_json_kv_string(w, "reason", r->cache_reason);
    else
        df_json_kv_null(w, "reason");
    df_json_key(w, "skipped_candidates");
    df_json_array_begin(w);
    for (int32_t c = 0; c < r->ncands && r->cache_kind && !strcmp(r->cache_kind, "cache_aliases"); c++) {
        wa_alias *a = &r->cands[c];
        if (a->selected || !a->skip_kind) continue;
        df_json_object_begin(w);
        df_json_kv_string(w, "alias", a->entry->alias);
        df_json_key(w, "reason");
        df_json_object_begin(w);
        df_json_kv_string(w, "kind", a->skip_kind);
        if (!strcmp(a->skip_kind, "not_shared")) df_json_kv_int(w, "output_count", a->noutputs);
        if (!strcmp(a->skip_kind, "covered_by_deeper_shared_alias")) df_json_kv_int(w, "selected_table_id", a->covered_by);
        df_json_object_end(w);
        df_json_kv_int(w, "table_id", a->entry->id);
        df_json_object_end(w);
    }
    df_json_array_end(w);
    df_json_object_end(w);
}

static void common_output_keys(df_json_writer *w, const df_output_spec *spec) {
    df_json_kv_string(w, "connection_source", spec->connection_string ? "target_override" : "context_default");
    df_json_kv_string(w, "load_mode", df__write_mode_name(spec->mode));
    df_json_kv_string(w, "output_name", spec->name);
}

static void target_table(df_json_writer *w, const df_output_spec *spec) {
    df_json_key(w, "target_table");
    df_json_object_begin(w);
    df_json_kv_string(w, "schema", spec->schema);
    df_json_kv_string(w, "table", spec->target);
    df_json_object_end(w);
}

static void row_counts(df_json_writer *w, const df_write_result *res) {
    df_json_key(w, "output_row_count");
    df__json_count(w, res->output_rows_exact ? "exact" : "partial", res->output_rows, true, NULL, false);
    df_json_key(w, "target_row_count");
    if (res->target_rows >= 0)
        df__json_count(w, "exact", res->target_rows, true, NULL, false);
    else
        df__json_count(w, "unavailable", 0, false, NULL, false);
}

/* Planned timings of an output that was skipped. */
static void skipped_timings(const df_output_spec *spec, df_wtimings *ts) {
    ts->n = 0;
    const df_entry *e = spec->table->entry;
    if (e->kind == DF_TABLE_DERIVED_SQL)
        df__wtimings_add(ts, DF_DIAG_TN_LAZY_SQL_PLANNING, "completed", NULL, (int64_t)(e->planning_ns / 1000));
    df__wtimings_add(ts, DF_DIAG_TN_OUTPUT_SCHEMA_PLANNING, "completed", NULL, 0);
    df__wtimings_add(ts, DF_DIAG_TN_SQL_TARGET_PLANNING, "completed", NULL, 0);
    df__wtimings_add(ts, DF_DIAG_TN_OUTPUT_STREAM_SETUP, "skipped", "prior_failure", -1);
    df__wtimings_add(ts, DF_DIAG_TN_SQL_WRITE, "skipped", "prior_failure", -1);
    df__wtimings_add(ts, DF_DIAG_TN_VALIDATION, "skipped", "prior_failure", -1);
}

static void output_entry(wa_run *r, int32_t i, df_json_writer *w) {
    const df_output_spec *spec = r->specs[i];
    df_write_result *res = &r->results[i];
    bool skipped = r->failed_index >= 0 && i > r->failed_index;
    df_json_object_begin(w);
    if (skipped) {
        df_wtimings ts;
        skipped_timings(spec, &ts);
        df_json_key(w, "batch_shaping");
        df_json_object_begin(w);
        df_json_kv_int(w, "input_batches", 0);
        df_json_kv_int(w, "input_rows", 0);
        df_json_kv_int(w, "output_batches", 0);
        df_json_kv_int(w, "output_rows", 0);
        df_json_key(w, "status");
        df__json_status(w, "skipped", "prior_failure");
        df_json_object_end(w);
        common_output_keys(w, spec);
        df_json_kv_string(w, "kind", "skipped");
        df_json_key(w, "output_row_count");
        df__json_count(w, "unavailable", 0, false, NULL, false);
        df_json_key(w, "phase_timings");
        df__json_timings(w, &ts);
        df_json_key(w, "skipped");
        df_json_object_begin(w);
        df_json_kv_null(w, "execution_profile");
        df_json_key(w, "reason");
        df_json_object_begin(w);
        df_json_kv_string(w, "failed_output_name", r->specs[r->failed_index]->name);
        df_json_kv_string(w, "kind", "previous_output_failed");
        df_json_object_end(w);
        df_json_object_end(w);
        df_json_key(w, "target_row_count");
        df__json_count(w, "unavailable", 0, false, NULL, false);
        target_table(w, spec);
        df_json_key(w, "validation_status");
        df__json_status(w, "skipped", "prior_failure");
        df_json_object_end(w);
        return;
    }
    df_json_kv_raw(w, "batch_shaping", res->batch_shaping ? res->batch_shaping : "null");
    common_output_keys(w, spec);
    if (!res->ok) {
        df_json_key(w, "failure");
        df_json_object_begin(w);
        df_json_kv_raw(w, "batch_shaping", res->batch_shaping ? res->batch_shaping : "null");
        common_output_keys(w, spec);
        df_json_kv_raw(w, "context", res->context ? res->context : "null");
        df_json_kv_string(w, "error", res->summary ? res->summary : "");
        row_counts(w, res);
        df_json_key(w, "phase_timings");
        df__json_timings(w, &res->timings);
        target_table(w, spec);
        df_json_key(w, "validation_status");
        df__json_status(w, res->validation_kind, res->validation_reason);
        df_json_object_end(w);
    }
    df_json_kv_string(w, "kind", res->ok ? "succeeded" : "failed");
    row_counts(w, res);
    df_json_key(w, "phase_timings");
    df__json_timings(w, &res->timings);
    if (res->ok) df_json_kv_raw(w, "report", res->report ? res->report : "null");
    target_table(w, spec);
    df_json_key(w, "validation_status");
    df__json_status(w, res->validation_kind, res->validation_reason);
    df_json_object_end(w);
}

static void counts(wa_run *r, int32_t *ok, int32_t *failed, int32_t *skipped) {
    *ok = *failed = *skipped = 0;
    for (int32_t i = 0; i < r->n; i++) {
        if (r->failed_index >= 0 && i > r->failed_index)
            (*skipped)++;
        else if (r->results[i].ok)
            (*ok)++;
        else
            (*failed)++;
    }
}

static df_errkind execute_report(wa_run *r, df_buf *out, df_error *err) {
    int32_t ok, failed, skipped;
    counts(r, &ok, &failed, &skipped);
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_kv_bool(&w, "all_succeeded", failed == 0 && skipped == 0);
    df_json_key(&w, "cache");
    cache_report(r, &w);
    df_json_kv_int(&w, "failed_count", failed);
    df_json_kv_int(&w, "output_count", r->n);
    df_wtimings ts;
    ts.n = 0;
    df__wtimings_add(&ts, DF_DIAG_TN_OUTPUT_PLANNING, "completed", NULL, (int64_t)(r->planning_ns / 1000));
    if (r->opts.mode == CACHE_DISABLED)
        df__wtimings_add(&ts, DF_DIAG_TN_CACHE_PLANNING, "skipped", "not_executed", -1);
    else
        df__wtimings_add(&ts, DF_DIAG_TN_CACHE_PLANNING, "completed", NULL, (int64_t)(r->cache_planning_ns / 1000));
    df__wtimings_add(&ts, DF_DIAG_TN_WORKFLOW_EXECUTION, "completed", NULL, (int64_t)(r->workflow_ns / 1000));
    df__wtimings_add(&ts, DF_DIAG_TN_SOURCE_REPORTING, "completed", NULL, (int64_t)(r->sources_ns / 1000));
    df_json_key(&w, "phase_timings");
    df__json_timings(&w, &ts);
    df_json_kv_int(&w, "skipped_count", skipped);
    df_json_key(&w, "sources");
    uint64_t t0 = df_now_ns();
    df_errkind k = df__write_sources_json(r->s, &w, (const df_output_spec *const *)r->specs, r->n,
                                          r->n > 0 ? (r->o->stream_benchmark ? 2 : 1) : 0, err);
    r->sources_ns = df_now_ns() - t0;
    df_json_kv_int(&w, "succeeded_count", ok);
    df_json_key(&w, "workflow");
    df_json_object_begin(&w);
    df_json_kv_bool(&w, "all_succeeded", failed == 0 && skipped == 0);
    df_json_kv_int(&w, "failed_count", failed);
    df_json_kv_int(&w, "output_count", r->n);
    df_json_key(&w, "outputs");
    df_json_array_begin(&w);
    for (int32_t i = 0; i < r->n; i++) output_entry(r, i, &w);
    df_json_array_end(&w);
    df_json_kv_int(&w, "skipped_count", skipped);
    df_json_kv_int(&w, "succeeded_count", ok);
    df_json_object_end(&w);
    df_json_object_end(&w);
    df_errkind k2 = df_json_writer_finish(&w, err);
    return k != DF_OK ? k : k2;
}

static df_errkind dry_run_report(wa_run *r, df_buf *out, df_error *err) {
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_key(&w, "dry_run");
    df_json_object_begin(&w);
    df_json_kv_bool(&w, "bulk_writer_started", false);
    df_json_kv_bool(&w, "row_production_started", false);
    df_json_kv_bool(&w, "sql_server_contacted", false);
    df_json_kv_bool(&w, "table_lifecycle_started", false);
    df_json_object_end(&w);
    df_json_kv_int(&w, "output_count", r->n);
    df_json_key(&w, "outputs");
    df_json_array_begin(&w);
    uint64_t t0 = df_now_ns();
    df_errkind k = DF_OK;
    for (int32_t i = 0; k == DF_OK && i < r->n; i++) k = df__write_dry_run_report(r->specs[i], &w, err);
    r->planning_ns = df_now_ns() - t0;
    df_json_array_end(&w);
    df_wtimings ts;
    ts.n = 0;
    df__wtimings_add(&ts, DF_DIAG_TN_OUTPUT_PLANNING, "completed", NULL, (int64_t)(r->planning_ns / 1000));
    t0 = df_now_ns();
    df_buf src;
    df_buf_init(&src, 0);
    df_json_writer sw;
    df_json_writer_init(&sw, &src, 0);
    if (k == DF_OK) k = df__write_sources_json(r->s, &sw, (const df_output_spec *const *)r->specs, r->n, 0, err);
    if (k == DF_OK) k = df_json_writer_finish(&sw, err);
    df__wtimings_add(&ts, DF_DIAG_TN_SOURCE_REPORTING, "completed", NULL, (int64_t)((df_now_ns() - t0) / 1000));
    df_json_key(&w, "phase_timings");
    df__json_timings(&w, &ts);
    df_json_kv_bool(&w, "query_used_source_scan_metadata_exhausted", false);
    df_json_kv_string(&w, "run_mode", "dry_run");
    df_json_kv_raw(&w, "sources", k == DF_OK && src.data ? src.data : "[]");
    df_json_key(&w, "status");
    if (r->n)
        df__json_status(&w, "success", NULL);
    else
        df__json_status(&w, "no_op", "not_executed");
    df_json_object_end(&w);
    df_buf_free(&src);
    df_errkind k2 = df_json_writer_finish(&w, k == DF_OK ? err : NULL);
    return k != DF_OK ? k : k2;
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */

static df_errkind check_requests(wa_run *r, df_error *err) {
    for (int32_t i = 0; i < r->n; i++)
        if (!df_output_spec_in_session(r->specs[i], r->s))
            return cfg_error(err, DF_ERR_OUTPUT_SESSION_MISMATCH, "all output specs must belong to this Session");
    for (int32_t i = 0; i < r->n; i++)
        for (int32_t j = 0; j < i; j++)
            if (!strcmp(r->specs[i]->name, r->specs[j]->name))
                return workflow_error(err, "write_all output names must be unique; duplicate output name `%s`",
                                      r->specs[i]->name);
    return DF_OK;
}

static df_errkind plan_outputs(wa_run *r, df_error *err) {
    uint64_t t0 = df_now_ns();
    df_diag_span sp = df_diag_stage_begin(r->op, DF_DIAG_STAGE_PLAN_OUTPUTS, 0);
    df_errkind k = DF_OK;
    for (int32_t i = 0; k == DF_OK && i < r->n; i++) {
        df_write_plan plan;
        k = df__write_plan_output(r->specs[i], df_query_schema(r->specs[i]->table->entry->query), &plan, err);
        if (k == DF_OK) df__write_plan_clear(&plan);
    }
    df_diag_span_end(sp, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    r->planning_ns = df_now_ns() - t0;
    return k;
}

/* Raises write_all_cache_failed with the attempted aliases in the context. */
static df_errkind cache_failure(wa_run *r, wa_alias *a, df_error *err) {
    char cause[DF_ERROR_MESSAGE_SIZE];
    df__session_escape_into(cause, sizeof cause, err ? err->message : "");
    df_buf ctx;
    df_buf_init(&ctx, 0);
    df_json_writer w;
    df_json_writer_init(&w, &ctx, 0);
    df_json_object_begin(&w);
    df_json_key(&w, "aliases");
    aliases_json(r, &w);
    df_json_kv_int(&w, "primary_failed_alias_table_id", a->entry->id);
    df_json_kv_null(&w, "workflow");
    df_json_object_end(&w);
    bool ok = df_json_writer_finish(&w, NULL) == DF_OK;
    char al[160];
    df__session_escape_into(al, sizeof al, a->entry->alias);
    df_error_set(err, DF_ERR_WRITE_ALL_CACHE_FAILED, "write_all cache failed for alias `%s` during %s: %s", al,
                 df_diag_timing_name_of(cache_timing(a->failed_stage)), cause);
    df_error_set_phase(err, "write_all_cache");
    if (ok) df_error_set_context(err, ctx.data);
    df_buf_free(&ctx);
    return DF_ERR_WRITE_ALL_CACHE_FAILED;
}

static df_errkind execute(wa_run *r, df_error *err) {
    const df_write_options *wo = &r->o->write;
    df_diag_span wf = df_diag_stage_begin(r->op, DF_DIAG_STAGE_EXECUTE_OUTPUT_WORKFLOW, 0);
    uint64_t t0 = df_now_ns();
    df_errkind k = DF_OK;
    bool any = false;
    for (int32_t c = 0; c < r->ncands; c++) any = any || r->cands[c].selected;
    if (any) {
        df__write_progress(wo, DF_PROGRESS_PHASE, "Caching shared data", NULL, NULL, 0, 0, 0);
        k = build_catalog(r, err);
        for (int32_t c = 0; k == DF_OK && c < r->ncands; c++) {
            wa_alias *a = &r->cands[c];
            if (!a->selected) continue;
            a->owner = (uint64_t)r->n + 1 + (uint64_t)c;
            k = materialize(r, a, wo, err);
            if (k != DF_OK) {
                df_diag_span_end(wf, DF_DIAG_RESULT_ERROR);
                return k == DF_ERR_OUT_OF_MEMORY ? k : cache_failure(r, a, err);
            }
        }
    }
    for (int32_t i = 0; k == DF_OK && i < r->n; i++) {
        if (r->failed_index >= 0) {
            df__write_log(wo, DF_LOG_INFO, "output.skipped", "{\"skipped_reason\":\"prior_failure\"}");
            continue;
        }
        df_query *q = NULL;
        df_write_ctx ctx;
        memset(&ctx, 0, sizeof ctx);
        ctx.op = r->op;
        ctx.owner = (uint64_t)i + 1;
        ctx.output_index = i + 1;
        ctx.output_count = r->n;
        ctx.stream_benchmark = r->o->stream_benchmark;
        ctx.in_write_all = true;
        df_diag_span os = df_diag_stage_begin(r->op, DF_DIAG_STAGE_EXECUTE_OUTPUT, ctx.owner);
        df_error oerr;
        memset(&oerr, 0, sizeof oerr);
        k = output_query(r, i, &q, err);
        ctx.query = q;
        if (k == DF_OK) k = df__write_run(r->specs[i], wo, &ctx, &r->results[i], &oerr);
        df_diag_span_end(os, k == DF_OK && r->results[i].ok ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
        df_error_clear(&oerr);
        df_query_free(q);
        if (k == DF_OK && !r->results[i].ok) r->failed_index = i;
    }
    /* Restore: the private catalog (and with it every cache and spill file) goes. */
    for (int32_t c = 0; c < r->ncands; c++) {
        wa_alias *a = &r->cands[c];
        if (!a->provider) continue;
        df_diag_span sp = df_diag_stage_begin(r->op, DF_DIAG_STAGE_RESTORE_CACHE_ALIAS, a->owner);
        df_table_provider_release(a->provider);
        a->provider = NULL;
        a->status = "materialized_and_restored";
        df_diag_span_end(sp, DF_DIAG_RESULT_OK);
    }
    df_catalog_free(r->cat);
    r->cat = NULL;
    r->workflow_ns = df_now_ns() - t0;
    df_diag_span_end(wf, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    return k;
}

void df_write_all_options_init(df_write_all_options *o) {
    memset(o, 0, sizeof *o);
    df_write_options_init(&o->write);
}

static void run_free(wa_run *r) {
    for (int32_t c = 0; c < r->ncands; c++) {
        df_free(r->cands[c].outputs);
        df_free(r->cands[c].profile);
        if (r->cands[c].provider) df_table_provider_release(r->cands[c].provider);
    }
    df_free(r->cands);
    if (r->results)
        for (int32_t i = 0; i < r->n; i++) df__write_result_clear(&r->results[i]);
    df_free(r->results);
    df_catalog_free(r->cat);
    df_free(r->opts.aliases);
    df_diag_operation_destroy(r->op);
}

static df_errkind run_write_all(wa_run *r, df_buf *out, df_error *err) {
    const df_write_options *wo = &r->o->write;
    bool dry = wo->dry_run;
    df__write_progress(wo, DF_PROGRESS_STARTED, dry ? "Planning SQL Server outputs" : "Writing outputs to SQL Server",
                       NULL, NULL, 0, 0, 0);
    df__write_progress(wo, DF_PROGRESS_PHASE, "Planning output", NULL, NULL, 0, 0, 0);
    if (dry) return dry_run_report(r, out, err);
    DF_TRY(df_diag_operation_begin(DF_DIAG_OP_WRITE_ALL, NULL, &r->op, err));
    df__write_log(wo, DF_LOG_INFO, "workflow.started", NULL);
    df_diag_span ph = df_diag_phase_begin(r->op, DF_DIAG_PHASE_PLANNING);
    df_errkind k = plan_outputs(r, err);
    uint64_t t0 = df_now_ns();
    if (k == DF_OK) {
        df_diag_span sp = df_diag_stage_begin(r->op, DF_DIAG_STAGE_PLAN_CACHES, 0);
        k = plan_cache(r, err);
        df_diag_span_end(sp, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    }
    r->cache_planning_ns = df_now_ns() - t0;
    df_diag_span_end(ph, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    r->results = k == DF_OK ? df_calloc((size_t)DF_MAX(r->n, 1), sizeof *r->results) : NULL;
    if (k == DF_OK && !r->results) k = DF_OOM(err);
    if (k == DF_OK) {
        ph = df_diag_phase_begin(r->op, DF_DIAG_PHASE_EXECUTION);
        k = execute(r, err);
        df_diag_span_end(ph, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    }
    if (k == DF_OK) {
        ph = df_diag_phase_begin(r->op, DF_DIAG_PHASE_FINALIZATION);
        df__write_progress(wo, DF_PROGRESS_PHASE, "Preparing source reports", NULL, NULL, 0, 0, 0);
        df_diag_span sp = df_diag_stage_begin(r->op, DF_DIAG_STAGE_REPORT_SOURCES, 0);
        k = execute_report(r, out, err);
        df_diag_span_end(sp, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
        df_diag_span_end(ph, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    }
    df_diag_operation_end(r->op, k == DF_OK && r->failed_index < 0 ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    df__write_log(wo, k == DF_OK && r->failed_index < 0 ? DF_LOG_INFO : DF_LOG_ERROR,
                  k == DF_OK ? "workflow.completed" : "workflow.failed", NULL);
    return k;
}

df_errkind df_session_write_all(df_session *s, df_output_spec *const *specs, int32_t n,
                                const df_write_all_options *opts_in, char **report_json, df_error *err) {
    *report_json = NULL;
    df_write_all_options opts;
    if (opts_in)
        opts = *opts_in;
    else
        df_write_all_options_init(&opts);
    wa_run r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.specs = specs;
    r.n = n < 0 ? 0 : n;
    r.o = &opts;
    r.failed_index = -1;
    df_errkind k = DF_OK;
    if (opts.write.dry_run && opts.options && opts.options->kind != DF_VALUE_NONE)
        k = cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "`options` is only supported for execute `write_all` calls");
    if (k == DF_OK && opts.write.dry_run && opts.write.execution_profile)
        k = cfg_error(err, DF_ERR_INVALID_OPTION_VALUE, "profiling is only supported for execute `write_all` calls");
    if (k == DF_OK) k = parse_options(opts.options, &r.opts, err);
    if (k == DF_OK && r.opts.parallel > 0) opts.write.parallel_connections = r.opts.parallel;
    if (k == DF_OK) k = check_requests(&r, err);
    if (k != DF_OK) {
        run_free(&r);
        return k;
    }
    df__session_read_begin(s);
    df_buf out;
    df_buf_init(&out, 0);
    if (r.n == 0) {
        /* No outputs: an empty report and no progress display. */
        if (opts.write.dry_run) {
            k = dry_run_report(&r, &out, err);
        } else {
            r.cache_kind = "no_cache";
            r.cache_reason = "fewer_than_two_outputs";
            k = execute_report(&r, &out, err);
        }
    } else {
        k = run_write_all(&r, &out, err);
        bool ok = k == DF_OK && r.failed_index < 0;
        df__write_progress(&opts.write, DF_PROGRESS_FINISHED,
                           k != DF_OK ? "Failed" : ok ? "Completed" : "Completed with failures", NULL, NULL, 0, 0, 0);
    }
    df__session_read_end(s);
    if (k == DF_OK) k = df_buf_take_text(&out, report_json, NULL, err);
    df_buf_free(&out);
    run_free(&r);
    return k;
}
