/*
 * The last lifecycle steps of one output: finalize the bulk load, validate
 * the written rows, publish them (COMMIT, or swap staging in under an
 * application lock) and clean up whatever the run left behind — on a new
 * connection when the load's own died.
 */
#include "load/write_run_int.h"

#include <stdio.h>

#define APPLOCK_TIMEOUT_MS 60000

/* ------------------------------------------------------------------------ */
/* Finalize, validate, swap                                                  */

/* Narrows observed columns of the staging table to the longest value seen. */
static df_errkind narrow_observed(df_wrun *r, df_error *err) {
    if (!r->plan.any_observed || !r->staging_created) return DF_OK;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = DF_OK;
    for (int32_t i = 0; k == DF_OK && i < r->plan.ncols; i++) {
        if (r->plan.observe[i] == DF_OBSERVE_NONE) continue;
        df_mssql_column c = r->plan.cols[i];
        int64_t cap = r->plan.observe[i] == DF_OBSERVE_NVARCHAR ? 4000 : 8000;
        if (r->observed[i] > cap) continue; /* stays (max) */
        c.length = (int32_t)DF_MAX(r->observed[i], 1);
        df_buf_reset(&b);
        k = df_buf_printf(&b, err, "ALTER TABLE %s ALTER COLUMN ", r->q_staging);
        if (k == DF_OK) k = df__write_quote(&b, c.name, err);
        if (k == DF_OK) k = df_buf_append_char(&b, ' ', err);
        if (k == DF_OK) k = df_mssql_type_render(&c, &b, err);
        if (k == DF_OK) k = df_buf_append_str(&b, c.nullable ? " NULL" : " NOT NULL", err);
        if (k == DF_OK) k = df__wrun_run_sql(r, b.data, NULL, err);
    }
    df_buf_free(&b);
    return k;
}

df_errkind df__wrun_finalize_step(df_wrun *r, df_error *err) {
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_FINALIZE);
    int64_t server_rows = 0;
    df_errkind k;
    if (r->pool) {
        df_wpool *p = r->pool;
        r->pool = NULL;
        df__wpool_enter(p); /* ... and for the finalization while they finish their loads */
        k = df__wpool_finish(p, r->opts->cancel, &server_rows, err);
        if (k == DF_ERR_VALUE_CONVERSION) {
            /* A worker rejected a value: report it as the batch write it was. */
            const char *code = df__wrun_conversion_code(err);
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err ? err->message : "");
            snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "%s", code);
            df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "arrow-sql-server write_batch failed: %s (%s)", msg, code);
            df__stage_end(sp, k);
            return df__stage_run_fail(&r->stages, WSTEP_WRITE, k, err);
        }
    } else {
        df_mssql_bulk *b = r->bulk;
        r->bulk = NULL;
        k = df_mssql_bulk_finish(b, &server_rows, err);
    }
    if (k == DF_OK) r->inserted = server_rows;
    if (k == DF_OK && server_rows != r->rows)
        k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "SQL Server reported %lld rows for a load of %lld rows",
                         (long long)server_rows, (long long)r->rows);
    if (k == DF_OK) k = narrow_observed(r, err);
    df__stage_end(sp, k);
    return k == DF_OK ? DF_OK : df__stage_run_fail(&r->stages, WSTEP_FINALIZE, k, err);
}

/*
 * Target validation (row counts per the validation mode: disabled,
 * validate_if_possible, require); the counts run inside the load's
 * isolation (staging or transaction).  An append compares the rows its
 * bulk loads inserted (as the server reported them) with the exact output
 * rows; create and replace compare the staging or new table's count.
 */
df_errkind df__wrun_validation_step(df_wrun *r, df_error *err) {
    bool replace = r->spec->mode == DF_LOAD_REPLACE;
    if (!strcmp(r->vmode, "disabled")) {
        r->val_kind = "disabled";
        r->val_reason = "validation_disabled";
        if (!replace) return DF_OK;
        df_diag_span sp = df__wrun_step_begin(r, WSTEP_VALIDATION);
        df__stage_end(sp, DF_ERR_MSSQL_WRITE_PHASE);
        return df__wrun_fail_msg(r, WSTEP_VALIDATION, err, "replace target swap requires target validation");
    }
    df__stage_run_label(&r->stages, "Validating write");
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_VALIDATION);
    bool append = r->spec->mode == DF_LOAD_APPEND_EXISTING;
    df_error tmp;
    memset(&tmp, 0, sizeof tmp);
    df_errkind k = DF_OK;
    if (append && r->before < 0) {
        k = DF_ERR_MSSQL_WRITE_PHASE; /* the pre-count was unavailable */
        df_error_set(&tmp, k, "the pre-write row count is unavailable");
    } else {
        k = df__wrun_count_rows(r, append ? r->plan.quoted_target : r->q_staging, &r->after, &tmp);
    }
    if (k != DF_OK) {
        r->after = -1;
        bool must = replace || !strcmp(r->vmode, "require");
        bool server = k == DF_ERR_MSSQL_SERVER_ERROR || (append && r->before < 0);
        if (!must && server) {
            r->val_kind = "unavailable";
            r->val_reason = "permission_unavailable";
            df_error_clear(&tmp);
            df__stage_end(sp, DF_OK);
            return DF_OK;
        }
        r->val_kind = must ? "required_but_failed" : "unavailable";
        r->val_reason = "permission_unavailable";
        df_error_move(err, &tmp);
        df__stage_end(sp, k);
        return df__stage_run_fail(&r->stages, WSTEP_VALIDATION, k, err);
    }
    /*
     * An append validates the rows this load inserted: the server's DONE
     * counts of its bulk loads, summed over batches and connections.  The
     * difference of COUNT(*) before and after also counts what concurrent
     * writers inserted or deleted meanwhile, so two concurrent appends into
     * one table would always fail; the counts stay in the report.
     */
    int64_t delta = append ? r->inserted : r->after;
    if (delta != r->rows) {
        r->val_kind = "failed";
        r->val_reason = NULL;
        df__stage_end(sp, DF_ERR_MSSQL_WRITE_PHASE);
        return df__wrun_fail_msg(r, WSTEP_VALIDATION, err, append ? "target row-count delta did not match exact output rows"
                                                     : "target row count did not match exact output rows");
    }
    r->val_kind = "passed";
    r->val_reason = NULL;
    df__stage_end(sp, DF_OK);
    return DF_OK;
}

/*
 * The application lock resource of the target: "delta-funnel:replace:" and
 * the quoted target, cut with a hash suffix to sp_getapplock's 255 characters.
 */
static df_errkind lock_sql(df_wrun *r, df_buf *out, df_error *err) {
    char res[300];
    int n = snprintf(res, sizeof res, "delta-funnel:replace:%s", r->plan.quoted_target);
    if (n < 0 || (size_t)n >= sizeof res || strlen(res) > 255) {
        char hash[17];
        char full[1200];
        snprintf(full, sizeof full, "delta-funnel:replace:%s", r->plan.quoted_target);
        df__write_sql_hash(full, hash);
        snprintf(res, sizeof res, "%.238s:%s", full, hash);
    }
    DF_TRY(df_buf_append_str(out, "EXEC sys.sp_getapplock @Resource = ", err));
    DF_TRY(df__write_nliteral(out, res, err));
    return df_buf_printf(out, err, ", @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = %d;",
                         APPLOCK_TIMEOUT_MS);
}

static df_errkind take_lock(df_wrun *r, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_mssql_result *res = NULL;
    df_errkind k = lock_sql(r, &b, err);
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, &res, err);
    df_buf_free(&b);
    if (k == DF_OK && res->return_status < 0)
        k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "replace lock was not acquired within %d s (status %d)",
                         APPLOCK_TIMEOUT_MS / 1000, res->return_status);
    df_mssql_result_free(res);
    return k;
}

static df_errkind rename_table(df_wrun *r, const char *quoted_from, const char *new_name, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_append_str(&b, "EXEC sys.sp_rename ", err);
    if (k == DF_OK) k = df__write_nliteral(&b, quoted_from, err);
    if (k == DF_OK) k = df_buf_append_str(&b, ", ", err);
    if (k == DF_OK) k = df__write_nliteral(&b, new_name, err);
    if (k == DF_OK) k = df_buf_append_char(&b, ';', err);
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, NULL, err);
    df_buf_free(&b);
    return k;
}

/* replace into an existing table with the same columns: its indexes, constraints and grants stay. */
static df_errkind swap_in_place(df_wrun *r, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_printf(&b, err, "TRUNCATE TABLE %s;", r->plan.quoted_target);
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, NULL, err);
    df_buf_reset(&b);
    if (k == DF_OK) k = df_buf_printf(&b, err, "INSERT INTO %s WITH (TABLOCK) (", r->plan.quoted_target);
    for (int pass = 0; pass < 2 && k == DF_OK; pass++) {
        for (int32_t i = 0; k == DF_OK && i < r->plan.ncols; i++) {
            if (i) k = df_buf_append_str(&b, ", ", err);
            if (k == DF_OK) k = df__write_quote(&b, r->plan.cols[i].name, err);
        }
        if (k == DF_OK) k = pass == 0 ? df_buf_append_str(&b, ") SELECT ", err) : df_buf_printf(&b, err, " FROM %s;", r->q_staging);
    }
    int64_t n = -1;
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, NULL, err);
    df_buf_free(&b);
    if (k == DF_OK) k = df__wrun_count_rows(r, r->plan.quoted_target, &n, err);
    if (k == DF_OK && n != r->rows)
        k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "target row count did not match exact output rows");
    return k;
}

/* Whether the existing target keeps its identity: same updatable columns (names, order, type families). */
static df_errkind target_compatible(df_wrun *r, bool *same, df_error *err) {
    df_mssql_column *cols = NULL;
    char **names = NULL;
    int32_t n = 0;
    DF_TRY(df__wrun_target_columns(r, &cols, &names, &n, err));
    char why[300];
    *same = df__wrun_compare_columns(&r->plan, cols, n, why, sizeof why) < 0;
    for (int32_t i = 0; i < n; i++) df_free(names[i]);
    df_free(names);
    df_free(cols);
    return DF_OK;
}

static df_errkind swap_body(df_wrun *r, df_error *err) {
    DF_TRY(take_lock(r, err));
    bool exists;
    DF_TRY(df__wrun_table_exists(r, r->spec->target, &exists, err));
    if (r->spec->mode == DF_LOAD_CREATE_AND_LOAD) {
        if (exists)
            return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "create-and-load target table %s already exists",
                                r->plan.quoted_target);
        r->strategy = "create";
        return rename_table(r, r->q_staging, r->spec->target, err);
    }
    if (!exists) {
        r->strategy = "create";
        return rename_table(r, r->q_staging, r->spec->target, err);
    }
    bool same = false;
    DF_TRY(target_compatible(r, &same, err));
    if (same) {
        r->strategy = "in_place";
        return swap_in_place(r, err);
    }
    r->strategy = "rename";
    char backup[400];
    DF_TRY(df__wrun_free_name(r, "__df_backup_", backup, sizeof backup, err));
    char *q_backup = NULL;
    DF_TRY(df__wrun_quote2(r->spec->schema, backup, &q_backup, err));
    df_errkind k = rename_table(r, r->plan.quoted_target, backup, err);
    if (k == DF_OK) k = rename_table(r, r->q_staging, r->spec->target, err);
    df_buf b;
    df_buf_init(&b, 0);
    if (k == DF_OK) k = df_buf_printf(&b, err, "DROP TABLE %s;", q_backup);
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, NULL, err);
    df_buf_free(&b);
    df_free(q_backup);
    return k;
}

static df_errkind commit(df_wrun *r, df_error *err) {
    df_errkind k = df_mssql_commit(r->conn, err);
    if (k == DF_OK) {
        r->txn_open = false;
        r->swapped = true;
        return DF_OK;
    }
    /* Without an answer we cannot know whether SQL Server committed. */
    if (k == DF_ERR_MSSQL_CONNECTION_LOST || k == DF_ERR_TIMEOUT || k == DF_ERR_TDS_PROTOCOL) r->commit_unknown = true;
    return k;
}

df_errkind df__wrun_swap_step(df_wrun *r, df_error *err) {
    if (r->spec->mode == DF_LOAD_REPLACE) df__stage_run_label(&r->stages, "Swapping target table");
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_SWAP);
    df_errkind k = DF_OK;
    if (r->spec->mode != DF_LOAD_APPEND_EXISTING) {
        k = df_mssql_begin(r->conn, err);
        if (k == DF_OK) r->txn_open = true;
        if (k == DF_OK) k = swap_body(r, err);
    }
    if (k == DF_OK) k = commit(r, err);
    df__stage_end(sp, k);
    if (k != DF_OK) return df__stage_run_fail(&r->stages, WSTEP_SWAP, k, err);
    if (r->staging_created && r->strategy && !strcmp(r->strategy, "in_place")) {
        /* The rows were copied into the target; the staging table goes.  A failure here leaves only it. */
        df_buf b;
        df_buf_init(&b, 0);
        df_error tmp;
        memset(&tmp, 0, sizeof tmp);
        if (df_buf_printf(&b, NULL, "DROP TABLE %s;", r->q_staging) == DF_OK && df__wrun_run_sql(r, b.data, NULL, &tmp) == DF_OK)
            r->staging_created = false;
        df_buf_free(&b);
    } else {
        r->staging_created = false; /* renamed into place */
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Cleanup                                                                   */

/* A usable connection for cleanup: the load's own, or a new one when it died. */
static df_errkind cleanup_conn(df_wrun *r, df_error *err) {
    df__wpool_stop(r->pool, r->cancelled);
    r->pool = NULL;
    if (r->bulk) {
        /* A cancelled load leaves at once: ending it politely makes the server read every row in flight first. */
        if (r->cancelled) df_mssql_bulk_discard(r->bulk);
        else df_mssql_bulk_abort(r->bulk);
        r->bulk = NULL;
    }
    if (r->conn) {
        /* A cheap probe tells whether the connection still answers. */
        if (df_mssql_exec(r->conn, "SELECT 1", NULL, NULL) == DF_OK) return DF_OK;
        df_mssql_close(r->conn);
        r->conn = NULL;
        r->txn_open = false; /* SQL Server rolls back a session's open transaction when it ends */
    }
    return df_mssql_connect_string(r->conn_str, &r->conn, err);
}

void df__wrun_cleanup_step(df_wrun *r) {
    bool append = r->spec->mode == DF_LOAD_APPEND_EXISTING;
    bool need = r->txn_open || r->staging_created || r->bulk != NULL;
    if (append && !r->txn_open && !r->commit_unknown && r->stages.failed <= WSTEP_PREPARE) {
        r->cleanup = "not_applicable";
        if (r->stages.failed == WSTEP_PREPARE && r->conn && df_mssql_in_transaction(r->conn)) need = true;
        else return;
    }
    if (r->commit_unknown) {
        r->cleanup = "failed";
        r->partial = true;
        snprintf(r->cleanup_error, sizeof r->cleanup_error,
                 "the connection was lost while committing: SQL Server may or may not have committed the load");
        return;
    }
    if (!need) {
        r->cleanup = append ? "not_applicable" : "not_attempted";
        if (append && r->stages.failed > WSTEP_PREPARE) r->cleanup = "succeeded"; /* the server rolled it back */
        return;
    }
    df__stage_run_label(&r->stages, "Cleaning up");
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_CLEANUP);
    df_error e2;
    memset(&e2, 0, sizeof e2);
    df_errkind k = cleanup_conn(r, &e2);
    if (k == DF_OK && r->txn_open && r->conn && df_mssql_in_transaction(r->conn)) {
        k = df_mssql_rollback(r->conn, &e2);
        if (k == DF_OK) r->txn_open = false;
    }
    r->txn_open = false;
    if (k == DF_OK && r->staging_created) {
        df_buf b;
        df_buf_init(&b, 0);
        k = df_buf_printf(&b, &e2, "DROP TABLE %s;", r->q_staging);
        if (k == DF_OK) k = df__wrun_run_sql(r, b.data, NULL, &e2);
        df_buf_free(&b);
        if (k == DF_OK) r->staging_created = false;
    }
    df__stage_end(sp, k);
    if (k == DF_OK) {
        r->cleanup = "succeeded";
    } else {
        r->cleanup = "failed";
        char msg[160];
        df__session_escape_into(msg, sizeof msg, e2.message);
        char left[140];
        df__session_escape_into(left, sizeof left, r->staging_created ? r->staging : "");
        snprintf(r->cleanup_error, sizeof r->cleanup_error, "%.150s%s%.120s", msg,
                 r->staging_created ? "; left staging table " : "", left);
    }
    df_error_clear(&e2);
}
