/*
 * Report pieces shared by single writes, write_all and dry runs: phase
 * timings, status and count shapes, output schemas, lineage (which sources
 * an output reads) and source reports.  Keys are
 * written in sorted order, as the reference's reports are.
 */
#include "load/write_run_int.h"

#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Shapes                                                                    */

void df__wtimings_add(df_wtimings *ts, df_diag_timing_name name, const char *status, const char *reason,
                      int64_t micros) {
    if (ts->n >= DF_WRITE_MAX_TIMINGS) return;
    df_wtiming *t = &ts->t[ts->n++];
    t->name = df_diag_timing_name_of(name);
    t->status = status;
    t->reason = reason;
    t->micros = micros;
}

void df__wtimings_add_stage(df_wtimings *ts, const df_diag_operation *op, df_diag_stage stage,
                            uint64_t owner, const char *not_started_reason) {
    df_diag_timing t = df_diag_operation_stage_timing(op, stage, owner);
    df_diag_timing_name name = df_diag_stage_row(stage)->timing;
    switch (t.state) {
    case DF_DIAG_TIMING_COMPLETED:
        df__wtimings_add(ts, name, "completed", NULL, (int64_t)(t.elapsed_ns / 1000));
        break;
    case DF_DIAG_TIMING_FAILED:
    case DF_DIAG_TIMING_CANCELLED:
        df__wtimings_add(ts, name, "failed", NULL, (int64_t)(t.elapsed_ns / 1000));
        break;
    default:
        df__wtimings_add(ts, name, "not_started", not_started_reason, -1);
        break;
    }
}

void df__json_status(df_json_writer *w, const char *kind, const char *reason) {
    df_json_object_begin(w);
    df_json_kv_string(w, "kind", kind);
    if (reason && *reason)
        df_json_kv_string(w, "reason", reason);
    else
        df_json_kv_null(w, "reason");
    df_json_object_end(w);
}

void df__json_count(df_json_writer *w, const char *kind, int64_t value, bool has_value, const char *reason,
                    bool with_reason) {
    df_json_object_begin(w);
    df_json_kv_string(w, "kind", kind);
    if (with_reason) {
        if (reason)
            df_json_kv_string(w, "reason", reason);
        else
            df_json_kv_null(w, "reason");
    }
    if (has_value)
        df_json_kv_int(w, "value", value);
    else
        df_json_kv_null(w, "value");
    df_json_object_end(w);
}

void df__json_timings(df_json_writer *w, const df_wtimings *ts) {
    df_json_array_begin(w);
    for (int32_t i = 0; i < ts->n; i++) {
        const df_wtiming *t = &ts->t[i];
        df_json_object_begin(w);
        if (t->micros >= 0)
            df_json_kv_int(w, "elapsed_micros", t->micros);
        else
            df_json_kv_null(w, "elapsed_micros");
        df_json_kv_string(w, "phase_name", t->name);
        df_json_key(w, "status");
        df__json_status(w, t->status, t->reason);
        df_json_object_end(w);
    }
    df_json_array_end(w);
}

df_errkind df__json_output_schema(df_json_writer *w, const df_schema *schema, df_error *err) {
    df_buf tb;
    df_buf_init(&tb, 64);
    df_json_array_begin(w);
    for (int32_t i = 0; i < schema->nfields; i++) {
        df_buf_reset(&tb);
        df_errkind k = df_type_display(schema->fields[i].type, &tb, err);
        if (k != DF_OK) {
            df_buf_free(&tb);
            return k;
        }
        df_json_object_begin(w);
        df_json_kv_string(w, "arrow_type", tb.data ? tb.data : "");
        df_json_kv_int(w, "index", i);
        df_json_kv_string(w, "name", schema->fields[i].name);
        df_json_kv_bool(w, "nullable", schema->fields[i].nullable);
        df_json_object_end(w);
    }
    df_json_array_end(w);
    df_buf_free(&tb);
    return DF_OK;
}

void df__write_sql_hash(const char *sql, char out[17]) {
    const char *b = sql, *e = sql + strlen(sql);
    while (b < e && (*b == ' ' || (*b >= '\t' && *b <= '\r'))) b++;
    while (e > b && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r'))) e--;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)b; p < (const unsigned char *)e; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ------------------------------------------------------------------------ */
/* Lineage                                                                   */

/* The registered entry named `name` (a source or an alias), or NULL. */
static df_entry *find_entry(df_session *s, const char *name) {
    for (int64_t j = 0; j < s->nentries; j++) {
        df_entry *d = s->entries[j];
        const char *dn = d->kind == DF_TABLE_DELTA_SOURCE ? d->name : d->alias;
        if (dn && !df_ascii_casecmp(dn, name)) return d;
    }
    return NULL;
}

static df_errkind add_unique(df_entry ***out, int32_t *n, int32_t *cap, df_entry *e, df_error *err) {
    for (int32_t i = 0; i < *n; i++)
        if ((*out)[i] == e) return DF_OK;
    DF_TRY(DF_ARRAY_RESERVE(*out, *cap, *n + 1, 8, err));
    (*out)[(*n)++] = e;
    return DF_OK;
}

df_errkind df__write_used_sources(df_session *s, const df_entry *e, df_entry ***out, int32_t *n, bool *complete,
                                  df_error *err) {
    *out = NULL;
    *n = 0;
    *complete = true;
    int32_t cap = 0, nvisit = 0, cap_visit = 0;
    df_entry **visit = NULL;
    df_errkind k = add_unique(&visit, &nvisit, &cap_visit, (df_entry *)e, err);
    /* Breadth-first over dependencies; a bounded list since entries are finite and deduplicated. */
    for (int32_t i = 0; k == DF_OK && i < nvisit; i++) {
        df_entry *v = visit[i];
        if (v->kind == DF_TABLE_DELTA_SOURCE) {
            k = add_unique(out, n, &cap, v, err);
            continue;
        }
        if (!v->lineage_complete) *complete = false;
        for (int32_t j = 0; k == DF_OK && j < v->ndeps; j++) {
            df_entry *d = find_entry(s, v->deps[j]);
            if (d) k = add_unique(&visit, &nvisit, &cap_visit, d, err);
            else *complete = false;
        }
    }
    df_free(visit);
    if (k != DF_OK) {
        df_free(*out);
        *out = NULL;
        *n = 0;
    }
    return k;
}

/* ------------------------------------------------------------------------ */
/* Source reports                                                            */

static void json_string_array(df_json_writer *w, const char *const *items, int32_t n) {
    df_json_array_begin(w);
    for (int32_t i = 0; i < n; i++) df_json_write_string(w, items[i]);
    df_json_array_end(w);
}

static void source_protocol(df_json_writer *w, const df_entry *e) {
    const df_delta_protocol *p = df_delta_snapshot_protocol(e->snapshot);
    df_json_object_begin(w);
    df_json_kv_int(w, "min_reader_version", p ? p->min_reader_version : 0);
    df_json_kv_int(w, "min_writer_version", p ? p->min_writer_version : 0);
    df_json_key(w, "reader_features");
    json_string_array(w, p ? p->reader_features : NULL, p ? p->nreader_features : 0);
    df_json_kv_int(w, "snapshot_version", e->snapshot_version);
    df_json_kv_string(w, "source_name", e->name);
    df_json_kv_string(w, "table_uri", e->display_uri);
    df_json_key(w, "writer_features");
    json_string_array(w, p ? p->writer_features : NULL, p ? p->nwriter_features : 0);
    df_json_object_end(w);
}

static void kv_opt_int(df_json_writer *w, const char *key, int64_t v) {
    if (v >= 0)
        df_json_kv_int(w, key, v);
    else
        df_json_kv_null(w, key);
}

static void source_scheduling(df_json_writer *w, const df_session *s) {
    const df_scan_opts *o = &s->opts->scan;
    df_json_object_begin(w);
    df_json_kv_int(w, "max_concurrent_file_reads_per_partition", o->max_concurrent_file_reads_per_partition);
    kv_opt_int(w, "max_concurrent_file_reads_per_scan", o->max_concurrent_file_reads_per_scan);
    df_json_kv_int(w, "native_async_prefetch_file_count_per_partition", o->prefetch_file_count_per_partition);
    df_json_kv_int(w, "output_buffer_capacity_per_partition", o->output_buffer_capacity_per_partition);
    kv_opt_int(w, "parquet_full_file_read_threshold", o->parquet_full_file_read_threshold);
    kv_opt_int(w, "parquet_metadata_size_hint", o->parquet_metadata_size_hint);
    kv_opt_int(w, "query_target_partitions", s->opts->target_partitions);
    df_json_kv_string(w, "reader_backend", "native_async");
    df_json_object_end(w);
}

static void source_timings(df_json_writer *w, const df_entry *e) {
    static const df_diag_timing_name names[3] = {DF_DIAG_TN_SOURCE_LOADING, DF_DIAG_TN_PROTOCOL_PREFLIGHT,
                                                 DF_DIAG_TN_DATAFUSION_REGISTRATION};
    df_wtimings ts;
    ts.n = 0;
    for (int i = 0; i < 3; i++) df__wtimings_add(&ts, names[i], "completed", NULL, (int64_t)(e->step_ns[i] / 1000));
    df__json_timings(w, &ts);
}

/* One source report; `users` are the output names reading it. */
static void source_report(df_json_writer *w, df_session *s, const df_entry *e, const char *const *users,
                          int32_t nusers, bool unknown, int executed) {
    df_json_object_begin(w);
    df_json_key(w, "file_count");
    if (executed == 1)
        df__json_count(w, "exact", df_delta_snapshot_num_files(e->snapshot), true, NULL, true);
    else
        df__json_count(w, "unavailable", 0, false, "cost_avoidance", true);
    df_json_key(w, "phase_timings");
    source_timings(w, e);
    df_json_key(w, "protocol");
    source_protocol(w, e);
    df_json_kv_null(w, "provider_read_stats");
    df_json_kv_bool(w, "provider_read_stats_available", false);
    df_json_kv_string(w, "provider_stats_reason", executed ? "capability_unavailable" : "not_executed");
    df_json_kv_bool(w, "scan_metadata_exhausted", executed == 1);
    df_json_key(w, "scheduling");
    source_scheduling(w, s);
    df_json_kv_int(w, "snapshot_version", e->snapshot_version);
    df_json_kv_string(w, "source_name", e->name);
    df_json_kv_string(w, "source_uri", e->display_uri);
    df_json_kv_string(w, "usage_status", nusers ? "used" : unknown ? "unknown" : "not_used");
    df_json_key(w, "used_by_output_names");
    json_string_array(w, users, nusers);
    df_json_object_end(w);
}

df_errkind df__write_sources_json(df_session *s, df_json_writer *w, const df_output_spec *const *specs, int32_t n,
                                  int executed, df_error *err) {
    /* Per output: which sources it reads. */
    df_entry ***used = df_calloc((size_t)DF_MAX(n, 1), sizeof *used);
    int32_t *nused = df_calloc((size_t)DF_MAX(n, 1), sizeof *nused);
    const char **users = df_calloc((size_t)DF_MAX(n, 1), sizeof *users);
    df_errkind k = used && nused && users ? DF_OK : DF_OOM(err);
    bool any_incomplete = false;
    for (int32_t i = 0; k == DF_OK && i < n; i++) {
        bool complete;
        k = df__write_used_sources(s, specs[i]->table->entry, &used[i], &nused[i], &complete, err);
        if (!complete) any_incomplete = true;
    }
    if (k == DF_OK) {
        pthread_mutex_lock(&s->mu);
        df_json_array_begin(w);
        for (int64_t j = 0; j < s->nentries; j++) {
            const df_entry *e = s->entries[j];
            if (e->kind != DF_TABLE_DELTA_SOURCE) continue;
            int32_t nu = 0;
            for (int32_t i = 0; i < n; i++)
                for (int32_t q = 0; q < nused[i]; q++)
                    if (used[i][q] == e) {
                        users[nu++] = specs[i]->name;
                        break;
                    }
            source_report(w, s, e, users, nu, any_incomplete, executed);
        }
        df_json_array_end(w);
        pthread_mutex_unlock(&s->mu);
    }
    if (used)
        for (int32_t i = 0; i < n; i++) df_free(used[i]);
    df_free(used);
    df_free(nused);
    df_free(users);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Dry runs                                                                  */

static void dry_flags(df_json_writer *w) {
    df_json_object_begin(w);
    df_json_kv_bool(w, "bulk_writer_started", false);
    df_json_kv_bool(w, "row_production_started", false);
    df_json_kv_bool(w, "sql_server_contacted", false);
    df_json_kv_bool(w, "table_lifecycle_started", false);
    df_json_object_end(w);
}

df_errkind df__write_dry_run_report(const df_output_spec *spec, df_json_writer *w, df_error *err) {
    const df_entry *e = spec->table->entry;
    df_session *s = spec->table->session;
    const df_schema *schema = df_query_schema(e->query);
    df_wtimings ts;
    ts.n = 0;
    if (e->kind == DF_TABLE_DERIVED_SQL)
        df__wtimings_add(&ts, DF_DIAG_TN_LAZY_SQL_PLANNING, "completed", NULL, (int64_t)(e->planning_ns / 1000));
    uint64_t t0 = df_now_ns();
    df__wtimings_add(&ts, DF_DIAG_TN_OUTPUT_SCHEMA_PLANNING, "completed", NULL, (int64_t)((df_now_ns() - t0) / 1000));
    t0 = df_now_ns();
    df_write_plan plan;
    DF_TRY(df__write_plan_output(spec, schema, &plan, err));
    df__wtimings_add(&ts, DF_DIAG_TN_SQL_TARGET_PLANNING, "completed", NULL, (int64_t)((df_now_ns() - t0) / 1000));
    static const df_diag_timing_name skipped[] = {DF_DIAG_TN_QUERY_EXECUTION, DF_DIAG_TN_BATCH_SHAPING,
                                                  DF_DIAG_TN_SQL_WRITE, DF_DIAG_TN_FINALIZE, DF_DIAG_TN_VALIDATION};
    for (size_t i = 0; i < DF_ARRAY_LEN(skipped); i++) df__wtimings_add(&ts, skipped[i], "skipped", "dry_run", -1);
    df_entry **used = NULL;
    int32_t nused = 0;
    bool complete = true;
    df_errkind k = df__write_used_sources(s, e, &used, &nused, &complete, err);
    if (k != DF_OK) {
        df__write_plan_clear(&plan);
        return k;
    }
    df_json_object_begin(w);
    df_json_key(w, "dry_run");
    dry_flags(w);
    df_json_kv_string(w, "load_mode", df__write_mode_name(spec->mode));
    df_json_kv_string(w, "output_name", spec->name);
    df_json_key(w, "output_row_count");
    df__json_count(w, "unavailable", 0, false, "not_executed", true);
    df_json_key(w, "output_schema");
    k = df__json_output_schema(w, schema, err);
    df_json_key(w, "phase_timings");
    df__json_timings(w, &ts);
    df_json_kv_string(w, "run_mode", "dry_run");
    df_json_kv_string(w, "source_usage_status", nused ? "used" : complete ? "not_used" : "unknown");
    df_json_key(w, "sql_identity");
    df_json_object_begin(w);
    if (e->kind == DF_TABLE_DERIVED_SQL && e->sql) {
        char hash[17];
        df__write_sql_hash(e->sql, hash);
        df_json_kv_string(w, "hash", hash);
        df_json_kv_null(w, "reason");
        df_json_kv_string(w, "state", "present");
    } else {
        df_json_kv_null(w, "hash");
        df_json_kv_null(w, "reason");
        df_json_kv_string(w, "state", "absent");
    }
    df_json_object_end(w);
    df_json_key(w, "status");
    df_json_object_begin(w);
    df_json_kv_string(w, "kind", "dry_run_planned");
    df_json_kv_null(w, "reason");
    df_json_kv_null(w, "validation");
    df_json_object_end(w);
    df_json_key(w, "table");
    df_json_object_begin(w);
    df_json_kv_int(w, "id", e->id);
    df_json_kv_string(w, "kind", df_table_kind_name(e->kind));
    df_json_kv_string(w, "name", spec->table->name);
    df_json_object_end(w);
    df_json_key(w, "target_ddl_plan");
    df_json_object_begin(w);
    df_json_kv_bool(w, "create_table_sql_present", spec->mode != DF_LOAD_APPEND_EXISTING);
    df_json_object_end(w);
    df_json_key(w, "target_lifecycle_plan");
    df_json_object_begin(w);
    df_json_kv_bool(w, "create_table_sql_present", spec->mode != DF_LOAD_APPEND_EXISTING);
    df_json_kv_bool(w, "create_table_sql_required", spec->mode != DF_LOAD_APPEND_EXISTING);
    df_json_kv_bool(w, "executable_in_mvp", true);
    df_json_object_end(w);
    df_json_key(w, "target_schema_plan");
    df_json_object_begin(w);
    df_json_kv_int(w, "diagnostic_count", plan.diagnostic_count);
    df_json_kv_int(w, "output_field_count", plan.ncols);
    df_json_object_end(w);
    df_json_key(w, "target_table");
    df_json_object_begin(w);
    df_json_kv_string(w, "schema", spec->schema);
    df_json_kv_string(w, "table", spec->target);
    df_json_object_end(w);
    df_json_key(w, "used_source_names");
    df_json_array_begin(w);
    /* Registration order: walk the session's entries. */
    for (int64_t j = 0; j < s->nentries; j++)
        for (int32_t q = 0; q < nused; q++)
            if (used[q] == s->entries[j]) df_json_write_string(w, s->entries[j]->name);
    df_json_array_end(w);
    df_json_key(w, "validation_status");
    df__json_status(w, "skipped", "dry_run");
    df_json_object_end(w);
    df_free(used);
    df__write_plan_clear(&plan);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Reports                                                                   */

/*
 * The phase timings of the report, in the reference's order.  Failed runs
 * list only the phases that started; `writer_only` (the failure context
 * inside write_all) starts at the connection, as the reference does.
 */
void df__wrun_collect_timings(const df_wrun *r, df_wtimings *ts, bool failed, bool writer_only) {
    ts->n = 0;
    const df_diag_operation *op = r->ctx->op;
    uint64_t owner = r->ctx->owner;
    bool bench = r->ctx->stream_benchmark;
    if (!writer_only) {
        if (r->e->kind == DF_TABLE_DERIVED_SQL)
            df__wtimings_add(ts, DF_DIAG_TN_LAZY_SQL_PLANNING, "completed", NULL, (int64_t)(r->e->planning_ns / 1000));
        for (int s = WSTEP_SCHEMA; s <= WSTEP_STREAM; s++)
            if (!failed || df__wrun_step_active(r, s))
                df__wtimings_add_stage(ts, op, df__wrun_steps[s].stage, owner, "not_executed");
        if (r->ctx->in_write_all) {
            int64_t setup = 0;
            for (int s = WSTEP_DATAFRAME; s <= WSTEP_STREAM; s++)
                setup += (int64_t)df_diag_operation_stage_timing(op, df__wrun_steps[s].stage, owner).elapsed_ns;
            bool setup_failed = r->stages.failed >= WSTEP_DATAFRAME && r->stages.failed <= WSTEP_STREAM;
            df__wtimings_add(ts, DF_DIAG_TN_OUTPUT_STREAM_SETUP, setup_failed ? "failed" : "completed", NULL,
                             setup / 1000);
            if (bench)
                df__wtimings_add(ts, DF_DIAG_TN_SQL_WRITE, "not_started", "not_executed", -1);
            else if (!setup_failed)
                df__wtimings_add(ts, DF_DIAG_TN_SQL_WRITE, r->stages.failed >= WSTEP_CONNECT ? "failed" : "completed",
                                 NULL, (int64_t)(r->write_ns / 1000));
            if (failed && !bench)
                df__wtimings_add(ts, DF_DIAG_TN_VALIDATION, "not_started", "failure_before_validation", -1);
        }
    }
    if (bench) {
        for (int s = WSTEP_POLL; s <= WSTEP_VALIDATE_BATCH; s++)
            df__wtimings_add_stage(ts, op, df__wrun_steps[s].stage, owner, "not_executed");
        df__wtimings_add(ts, DF_DIAG_TN_WRITE_BATCH, "not_started", "not_executed", -1);
        df__wtimings_add(ts, DF_DIAG_TN_FINALIZE, "not_started", "not_executed", -1);
        df__wtimings_add(ts, DF_DIAG_TN_VALIDATION, "not_started", "not_executed", -1);
        return;
    }
    for (int s = WSTEP_CONNECT; s <= WSTEP_SWAP; s++) {
        if (s == WSTEP_VALIDATION && !df__wrun_step_active(r, s) && !failed) {
            df__wtimings_add(ts, DF_DIAG_TN_VALIDATION, "skipped", r->val_reason ? r->val_reason : "validation_disabled",
                             -1);
            continue;
        }
        if (!failed || df__wrun_step_active(r, s))
            df__wtimings_add_stage(ts, op, df__wrun_steps[s].stage, owner, "not_executed");
    }
    if (failed && df__wrun_step_active(r, WSTEP_CLEANUP))
        df__wtimings_add_stage(ts, op, df__wrun_steps[WSTEP_CLEANUP].stage, owner, "not_executed");
}

static void count_obj(df_json_writer *w, int64_t v) {
    if (v >= 0)
        df__json_count(w, "exact", v, true, NULL, false);
    else
        df__json_count(w, "unavailable", 0, false, NULL, false);
}

void df__wrun_batch_shaping(df_json_writer *w, const df_wrun *r, bool failed) {
    df_json_object_begin(w);
    df_json_kv_int(w, "input_batches", r->batches);
    df_json_kv_int(w, "input_rows", r->rows);
    df_json_kv_int(w, "output_batches", r->batches);
    df_json_kv_int(w, "output_rows", r->rows);
    df_json_key(w, "status");
    /* A load stopped by the caller's cancel flag says so: it did not fail by itself. */
    df__json_status(w, failed ? (r->cancelled ? "cancelled" : "failed") : "completed", NULL);
    df_json_object_end(w);
}

static df_errkind profile_json(df_wrun *r, char **out, df_error *err) {
    *out = NULL;
    if (!r->profile) return DF_OK;
    df_buf b;
    df_buf_init(&b, 0);
    df_profile_meta meta = {df_diag_query_scope_name(DF_DIAG_QUERY_MSSQL_OUTPUT), -1};
    df_errkind k = df_query_profile_json(r->profile, &meta, &b, err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

/*
 * The keys both the report and the failure context end with: target row
 * counts (`target` is the reported final count, -1 = unavailable), the
 * target, validation status and write stats (`batches`, `rows` written).
 */
static void target_and_write_stats(df_json_writer *w, const df_wrun *r, int64_t target, int64_t batches,
                                   int64_t rows) {
    df_json_key(w, "target_row_count");
    count_obj(w, target);
    df_json_key(w, "target_row_count_after_write");
    count_obj(w, r->after);
    df_json_key(w, "target_row_count_before_write");
    count_obj(w, r->spec->mode == DF_LOAD_APPEND_EXISTING ? r->before : -1);
    df_json_key(w, "target_table");
    df_json_object_begin(w);
    df_json_kv_string(w, "schema", r->spec->schema);
    df_json_kv_string(w, "table", r->spec->target);
    df_json_object_end(w);
    df_json_key(w, "validation_status");
    df__json_status(w, r->val_kind, r->val_reason);
    df_json_key(w, "write_stats");
    df_json_object_begin(w);
    df_json_kv_int(w, "batches_written", batches);
    df_json_kv_int(w, "elapsed_ms", (int64_t)(r->write_ns / 1000000));
    df_json_kv_string(w, "output_name", r->spec->name);
    df_json_kv_int(w, "rows_written", rows);
    df_json_object_end(w);
}

/* The execute report of the run so far. */
df_errkind df__wrun_build_report(df_wrun *r, bool failed, const df_wtimings *ts, df_buf *out, df_error *err) {
    char *profile = NULL;
    DF_TRY(profile_json(r, &profile, err));
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_key(&w, "batch_shaping");
    df__wrun_batch_shaping(&w, r, failed);
    df_json_kv_string(&w, "cleanup", r->cleanup);
    df_json_key(&w, "connection");
    df_json_object_begin(&w);
    df_json_kv_null(&w, "display_label");
    df_json_object_end(&w);
    df_json_kv_string(&w, "connection_source", r->conn_source);
    if (profile)
        df_json_kv_raw(&w, "execution_profile", profile);
    else
        df_json_kv_null(&w, "execution_profile");
    df_json_kv_string(&w, "load_mode", df__write_mode_name(r->spec->mode));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_key(&w, "output_row_count");
    df__json_count(&w, failed ? "partial" : "exact", r->rows, true, NULL, false);
    df_json_key(&w, "output_schema");
    df_errkind k = df__json_output_schema(&w, r->schema, err);
    df_json_kv_bool(&w, "partial_write_possible", r->partial);
    df_json_key(&w, "phase_timings");
    df__json_timings(&w, ts);
    df_json_kv_string(&w, "run_mode", "execute");
    int64_t target = r->swapped || (!failed && r->after >= 0) ? r->after : -1;
    bool bench = r->ctx->stream_benchmark;
    target_and_write_stats(&w, r, target, bench ? 0 : r->batches, bench ? 0 : r->rows);
    df_json_object_end(&w);
    df_free(profile);
    df_errkind k2 = df_json_writer_finish(&w, err);
    return k != DF_OK ? k : k2;
}

/* The failure context embedding the report. */
df_errkind df__wrun_build_context(df_wrun *r, const df_wtimings *report_ts, const char *report, df_buf *out,
                                df_error *err) {
    df_wtimings writer_ts;
    const df_wtimings *ts = report_ts;
    if (r->ctx->in_write_all) {
        df__wrun_collect_timings(r, &writer_ts, true, true);
        ts = &writer_ts;
    }
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_key(&w, "batch_shaping");
    df__wrun_batch_shaping(&w, r, true);
    df_json_kv_string(&w, "cleanup", r->cleanup);
    if (r->cleanup_error[0])
        df_json_kv_string(&w, "cleanup_error", r->cleanup_error);
    else
        df_json_kv_null(&w, "cleanup_error");
    df_json_key(&w, "connection");
    df_json_object_begin(&w);
    df_json_kv_null(&w, "display_label");
    df_json_object_end(&w);
    df_json_kv_string(&w, "connection_source", r->conn_source);
    df_json_key(&w, "diagnostics");
    df_json_array_begin(&w);
    if (r->diagnostics_code[0]) {
        df_json_object_begin(&w);
        df_json_kv_string(&w, "code", r->diagnostics_code);
        df_json_kv_null(&w, "field");
        df_json_kv_string(&w, "message", r->stages.cause);
        df_json_kv_null(&w, "row");
        df_json_kv_string(&w, "severity", "error");
        df_json_object_end(&w);
    }
    df_json_array_end(&w);
    df_json_kv_string(&w, "load_mode", df__write_mode_name(r->spec->mode));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_key(&w, "output_row_count");
    df__json_count(&w, "partial", r->rows, true, NULL, false);
    df_json_kv_bool(&w, "partial_write_possible", r->partial);
    df_json_kv_string(&w, "phase", df__wrun_steps[r->stages.failed].phase);
    df_json_key(&w, "phase_timings");
    df__json_timings(&w, ts);
    df_json_kv_raw(&w, "report", report);
    target_and_write_stats(&w, r, -1, r->batches, r->rows);
    df_json_object_end(&w);
    return df_json_writer_finish(&w, err);
}
