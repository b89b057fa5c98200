/*
 * BULK_LOAD (packet type 0x07) decoding.
 *
 * The message is parsed while it streams in: packet payloads are appended
 * to a buffer and complete rows are decoded from its front.  A row cut by a
 * packet boundary fails with a "truncated" error; the decoder then waits
 * until the pending bytes have doubled (or the message ended) before trying
 * that row again, so re-parsing stays linear even for megabyte PLP values.
 * COLMETADATA must describe exactly the INSERT BULK columns; every value is
 * decoded fully (also in discard mode) and, when storing, converted to the
 * target column's stored form and inserted inside one SAVEPOINT: any error
 * rolls the whole message back, the rest of the message is drained, and
 * the reply is ERROR + DONE(ERROR) as SQL Server sends it.
 *
 * Discard mode checks runs of rows in place with a row plan compiled from
 * the metadata (df__tds_bulk_rows_skim: per-column steps, no values built,
 * fixed-width columns merged into one bounds check) and hands only what the
 * plan stops at (another token, a value it rejects, a NULL in a NOT NULL
 * column) to the general decoder, so every value is still validated and
 * errors are exactly those of row-by-row decoding.  Row-count faults keep
 * the row-by-row path, which checks them after every row.
 */
#include "peer.h"

#include <stdarg.h>
#include <stdio.h>

#include "mssql/mssql_int.h"

/* ------------------------------------------------------------------------ */
/* Streaming load                                                            */

typedef struct bulk_state {
    peer_conn *c;
    df_buf buf;             /* unparsed bytes are buf[pos, len) */
    size_t pos;
    bool eom;               /* the last packet of the message arrived */
    bool ignored;           /* the client set IGNORE */
    bool attention;         /* an ATTENTION arrived instead of data */
    uint64_t bytes;         /* payload bytes received */
    df__tds_bulk_meta meta;         /* column descriptions (after COLMETADATA) */
    bool have_meta;
    df__tds_bulk_plan plan;         /* row plan of the metadata (discard mode) */
    bool planned;                   /* rows are checked with `plan` first */
    bool done_token;        /* DONE seen */
    int64_t rows;           /* rows decoded */
    sqlite3_stmt *ins;      /* INSERT statement (store mode) */
    bool spool;             /* rows go to a temporary table first (another session holds the write lock) */
    /* first SQL error, replied after draining */
    int32_t err_number;
    char err_text[400];
} bulk_state;

static void set_sql_error(bulk_state *b, int32_t number, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_sql_error(bulk_state *b, int32_t number, const char *fmt, ...) {
    if (b->err_number) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err_text, sizeof b->err_text, fmt, ap);
    va_end(ap);
    b->err_number = number;
}

/* Reads the next packet of the message into the buffer. */
static df_errkind next_packet(bulk_state *b, df_error *err) {
    if (b->pos > 0 && b->pos >= b->buf.len / 2) {
        memmove(b->buf.data, b->buf.data + b->pos, b->buf.len - b->pos);
        b->buf.len -= b->pos;
        b->pos = 0;
    }
    uint8_t type, status;
    size_t before = b->buf.len;
    DF_TRY(df__tds_io_read_packet(b->c->io, &type, &status, &b->buf, TDS_MAX_PACKET, err));
    if (type == TDS_PKT_ATTENTION) {
        b->buf.len = before;
        b->attention = true;
        b->eom = true;
        return DF_OK;
    }
    if (type != TDS_PKT_BULK) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "packet type 0x%02X inside a bulk message", type);
    b->bytes += b->buf.len - before;
    if (status & TDS_ST_EOM) b->eom = true;
    if (status & TDS_ST_IGNORE) b->ignored = true;
    return DF_OK;
}

static df_errkind prepare_insert(bulk_state *b, df_error *err) {
    peer_conn *c = b->c;
    df_buf q;
    df_buf_init(&q, 0);
    if (b->spool) {
        /* Same columns, no constraints, in SQLite's per-connection temp database: no main-database lock. */
        df_buf_printf(&q, NULL, "DROP TABLE IF EXISTS temp.\"__bulk_spool\"; CREATE TEMP TABLE \"__bulk_spool\" AS SELECT ");
        for (int i = 0; i < c->bulk_ncols; i++) df_buf_printf(&q, NULL, "%s\"%s\"", i ? ", " : "", c->bulk_cols[i].name);
        df_buf_printf(&q, NULL, " FROM \"%s\" WHERE 0", c->bulk_table);
        df_errkind k = peer_store_exec(c->db, q.data, err);
        df_buf_reset(&q);
        if (k != DF_OK) {
            df_buf_free(&q);
            return k;
        }
    }
    df_buf_printf(&q, NULL, b->spool ? "INSERT INTO temp.\"__bulk_spool\" (" : "INSERT INTO \"%s\" (", c->bulk_table);
    for (int i = 0; i < c->bulk_ncols; i++) df_buf_printf(&q, NULL, "%s\"%s\"", i ? ", " : "", c->bulk_cols[i].name);
    df_buf_append_str(&q, ") VALUES (", NULL);
    for (int i = 0; i < c->bulk_ncols; i++) df_buf_printf(&q, NULL, "%s?", i ? ", " : "");
    df_errkind k = df_buf_append_str(&q, ")", err);
    if (k == DF_OK && sqlite3_prepare_v2(c->db, q.data, -1, &b->ins, NULL) != SQLITE_OK)
        k = df_error_set(err, DF_ERR_EXECUTION, "%s", sqlite3_errmsg(c->db));
    df_buf_free(&q);
    return k;
}

/* Converts and inserts one decoded row; SQL errors are recorded in b. */
static void store_row(bulk_state *b, const df__tds_value *vals, df_buf *tmp) {
    peer_conn *c = b->c;
    if (b->err_number) return;
    for (int i = 0; i < c->bulk_ncols; i++) {
        const peer_column *col = &c->bulk_cols[i];
        if (vals[i].kind == TDS_V_NULL && !col->nullable && !(col->has_default && !c->bulk_keep_nulls)) {
            set_sql_error(b, 515, "Cannot insert the value NULL into column '%s', table '%s'; column does not allow nulls. INSERT fails.",
                          col->name, c->bulk_display);
            return;
        }
        if (c->cfg->discard) continue;
        const char *why = "type";
        if (peer_value_to_sqlite(b->ins, i + 1, &b->meta.ti[i], &vals[i], col, tmp, &why) != DF_OK) {
            if (!strcmp(why, "length"))
                set_sql_error(b, 4815, "Received an invalid column length from the bcp client for colid %d.", i + 1);
            else if (!strcmp(why, "overflow"))
                set_sql_error(b, 8115, "Arithmetic overflow error converting a value for column '%s'.", col->name);
            else
                set_sql_error(b, 4816, "Invalid column type from bcp client for colid %d.", i + 1);
            return;
        }
    }
    if (c->cfg->discard) return;
    int rc = sqlite3_step(b->ins);
    sqlite3_reset(b->ins);
    if (rc != SQLITE_DONE) set_sql_error(b, 50000, "%s", sqlite3_errmsg(c->db));
}

/* Whether a once-only bulk fault may fire now. */
static bool take_fault(peer_config *cfg) {
    if (!cfg->faults_once) return true;
    int expected = 0;
    return atomic_compare_exchange_strong(&cfg->bulk_fault_used, &expected, 1);
}

/*
 * Compiles the row plan after the metadata when rows need no values: discard
 * mode, matching column count, no row-count faults.  Without a plan (types
 * it does not cover, out of memory) every row takes the general decoder.
 */
static void plan_rows(bulk_state *b) {
    peer_conn *c = b->c;
    peer_config *cfg = c->cfg;
    if (!cfg->discard || b->meta.ncols != c->bulk_ncols || cfg->drop_after_rows >= 0 || cfg->error_after_rows >= 0) return;
    bool *nonull = df_calloc((size_t)c->bulk_ncols, sizeof *nonull);
    if (!nonull) return;
    /* The NULL rule of store_row: those NULLs must reach it. */
    for (int i = 0; i < c->bulk_ncols; i++) {
        const peer_column *col = &c->bulk_cols[i];
        nonull[i] = !col->nullable && !(col->has_default && !c->bulk_keep_nulls);
    }
    b->planned = df__tds_bulk_plan_init(&b->plan, &b->meta, nonull, NULL) == DF_OK;
    df_free(nonull);
}

/* Decodes as many complete items as the buffer holds. Returns DF_OK or a protocol/IO error. */
static df_errkind parse_available(bulk_state *b, df__tds_value *vals, size_t *vals_cap, df_buf *scratch, df_buf *tmp,
                                  bool *need_more, df_error *err) {
    peer_config *cfg = b->c->cfg;
    *need_more = false;
    /* One error record for the whole loop: zeroing its 600 bytes per row would cost more than decoding the row. */
    df_error e;
    e.kind = DF_OK;
    e.context = NULL;
    e.message[0] = '\0';
    for (;;) {
        df__tds_rd r;
        df__tds_rd_init(&r, b->buf.data + b->pos, b->buf.len - b->pos);
        if (df__tds_rd_left(&r) == 0) { *need_more = !b->eom; return DF_OK; }
        df_errkind k;
        if (!b->have_meta) {
            k = df__tds_bulk_meta_read(&r, &b->meta, &e);
            if (k == DF_OK) {
                b->have_meta = true;
                if (b->meta.ncols != b->c->bulk_ncols)
                    set_sql_error(b, 4816, "Invalid column type from bcp client for colid %d.", DF_MIN(b->meta.ncols, b->c->bulk_ncols) + 1);
                if ((size_t)b->meta.ncols > *vals_cap) k = df_error_set(&e, DF_ERR_LIMIT_EXCEEDED, "too many columns");
                if (k == DF_OK) plan_rows(b);
            }
        } else {
            if (b->planned && !b->done_token) {
                size_t used;
                df__tds_skim_stop why;
                b->rows += (int64_t)df__tds_bulk_rows_skim(&b->plan, r.p, df__tds_rd_left(&r), SIZE_MAX, &used, &why);
                b->pos += used;
                r.p += used;
                /* An incomplete last row waits for the next packet; at the end of the message the decoder reports it. */
                if (why == TDS_SKIM_END || (why == TDS_SKIM_SHORT && !b->eom)) {
                    *need_more = !b->eom;
                    return DF_OK;
                }
            }
            uint8_t tok = *r.p++;
            if (b->done_token) k = df_error_set(&e, DF_ERR_TDS_PROTOCOL, "data after the bulk DONE token");
            else if (tok == TDS_TOK_DONE) {
                /* 12 bytes in TDS 7.2+; some bulk clients send the 8-byte form: accept it at the end of the message. */
                size_t left = df__tds_rd_left(&r);
                k = df__tds_rd_skip(&r, left == 8 && b->eom ? 8 : 12, &e);
                if (k == DF_OK) b->done_token = true;
            } else if (tok == TDS_TOK_ROW) {
                k = df__tds_bulk_row_read(&r, &b->meta, scratch, vals, &e);
                if (k == DF_OK) {
                    if (b->meta.ncols == b->c->bulk_ncols) store_row(b, vals, tmp);
                    b->rows++;
                }
            } else {
                k = df_error_set(&e, DF_ERR_TDS_PROTOCOL, "token 0x%02X in a bulk stream (NBCROW and others are not allowed)", tok);
            }
        }
        if (k != DF_OK) {
            if (df__tds_truncated(&e) && !b->eom) {
                df_error_clear(&e);
                *need_more = true;
                return DF_OK;
            }
            df_error_move(err, &e);
            return k;
        }
        b->pos = (size_t)(r.p - (const uint8_t *)b->buf.data);
        if (cfg->drop_after_rows >= 0 && b->rows >= cfg->drop_after_rows && take_fault(cfg))
            return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "fault: dropping the connection after %lld bulk rows", (long long)b->rows);
        if (cfg->error_after_rows >= 0 && b->rows >= cfg->error_after_rows && !b->err_number && take_fault(cfg)) {
            if (cfg->error_number == 515)
                set_sql_error(b, 515, "Cannot insert the value NULL into column '%s', table '%s'; column does not allow nulls. INSERT fails.",
                              b->c->bulk_ncols ? b->c->bulk_cols[0].name : "?", b->c->bulk_display);
            else
                set_sql_error(b, cfg->error_number, "Received an invalid column length from the bcp client for colid 1.");
        }
    }
}

static df_errkind run_load(bulk_state *b, df_error *err) {
    peer_config *cfg = b->c->cfg;
    df__tds_value vals[4096];
    size_t vals_cap = DF_ARRAY_LEN(vals);
    df_buf scratch, tmp;
    df_buf_init(&scratch, TDS_MAX_VALUE);
    df_buf_init(&tmp, 0);
    df_errkind k = DF_OK;
    size_t wait_until = 0;
    while (k == DF_OK) {
        if (b->ignored || b->attention) break;
        if (b->err_number && cfg->error_close) break;
        bool need_more = false;
        if (b->buf.len >= wait_until || b->eom) k = parse_available(b, vals, &vals_cap, &scratch, &tmp, &need_more, err);
        else need_more = true;
        if (k != DF_OK) break;
        if (!need_more) {
            if (b->eom) break;
            continue;
        }
        size_t pending = b->buf.len - b->pos;
        if (wait_until <= b->buf.len) wait_until = b->buf.len + DF_MAX(pending, (size_t)1);
        size_t pos_before = b->pos;
        k = next_packet(b, err);
        if (b->pos < pos_before) wait_until -= pos_before - b->pos; /* the buffer was compacted */
        if (k == DF_OK && cfg->drop_after_bytes >= 0 && b->bytes >= (uint64_t)cfg->drop_after_bytes && take_fault(cfg))
            k = df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "fault: dropping the connection after %llu bulk bytes",
                             (unsigned long long)b->bytes);
    }
    df_buf_free(&scratch);
    df_buf_free(&tmp);
    df__tds_bulk_plan_free(&b->plan);
    b->planned = false;
    atomic_fetch_add(&cfg->bulk_rows_total, b->rows);
    return k;
}

/*
 * Takes SQLite's write lock for a bulk load outside a TDS transaction.
 * SQL Server lets several sessions bulk-load one heap at once (bulk-update
 * locks); SQLite has one writer, so concurrent loads wait here for each
 * other (up to 10 minutes) instead of failing with "database is locked".
 */
static df_errkind begin_bulk_txn(peer_conn *c, df_error *err) {
    uint64_t deadline = df_now_ns() + 600ull * 1000000000ull;
    for (;;) {
        int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK) return DF_OK;
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || df_now_ns() > deadline)
            return df_error_set(err, DF_ERR_EXECUTION, "%s", sqlite3_errmsg(c->db));
    }
}

/* True when the write lock is free right now (then it is taken: BEGIN IMMEDIATE succeeded). */
static bool try_begin(peer_conn *c) {
    sqlite3_busy_timeout(c->db, 0);
    int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    sqlite3_busy_timeout(c->db, 10000);
    return rc == SQLITE_OK;
}

/*
 * Spooled load: one more client is loading the same database (parallel
 * bulk loads into one heap, which SQL Server runs concurrently), so the
 * rows were decoded into a temporary table without holding the lock; they
 * move into the target in one transaction at the end of the message.
 */
static df_errkind merge_spool(bulk_state *b, bool ok, df_error *err) {
    peer_conn *c = b->c;
    df_errkind k = DF_OK;
    if (ok) {
        df_buf q;
        df_buf_init(&q, 0);
        df_buf_printf(&q, NULL, "INSERT INTO \"%s\" (", c->bulk_table);
        for (int i = 0; i < c->bulk_ncols; i++) df_buf_printf(&q, NULL, "%s\"%s\"", i ? ", " : "", c->bulk_cols[i].name);
        df_buf_append_str(&q, ") SELECT * FROM temp.\"__bulk_spool\"", NULL);
        k = begin_bulk_txn(c, err);
        if (k == DF_OK) {
            if (sqlite3_exec(c->db, q.data, NULL, NULL, NULL) != SQLITE_OK) {
                set_sql_error(b, 2627, "%s", sqlite3_errmsg(c->db));
                peer_store_exec(c->db, "ROLLBACK", NULL);
            } else {
                k = peer_store_exec(c->db, "COMMIT", err);
            }
        }
        df_buf_free(&q);
    }
    peer_store_exec(c->db, "DROP TABLE IF EXISTS temp.\"__bulk_spool\"", NULL);
    return k;
}

df_errkind peer_bulk_load(peer_conn *c, uint8_t first_status, df_error *err) {
    bulk_state b = {.c = c};
    df_buf_init(&b.buf, (size_t)1 << 31);
    df_buf_append(&b.buf, c->msg.data ? c->msg.data : "", c->msg.len, NULL);
    b.bytes = c->msg.len;
    b.eom = first_status & TDS_ST_EOM;
    b.ignored = first_status & TDS_ST_IGNORE;
    c->bulk_pending = false;
    uint64_t t0 = df_now_ns();
    df_errkind k = DF_OK;
    bool stored = !c->cfg->discard;
    bool own_txn = false;              /* a SQLite transaction of this load alone (autocommit session) */
    if (stored) {
        k = peer_txn_before_write(c, err);
        if (k == DF_OK && !c->sqlite_txn) {
            own_txn = try_begin(c);
            b.spool = !own_txn;
        }
        if (k == DF_OK) k = prepare_insert(&b, err);
        if (k == DF_OK && !b.spool) k = peer_store_exec(c->db, "SAVEPOINT df_bulk", err);
    }
    if (k == DF_OK) k = run_load(&b, err);
    if (k == DF_OK && !b.eom && b.err_number && c->cfg->error_close) {
        /* like a server that rejects a stream at once: error reply, then close without reading the rest */
        if (stored) {
            if (b.ins) sqlite3_finalize(b.ins);
            if (b.spool) {
                merge_spool(&b, false, NULL);
            } else {
                peer_store_exec(c->db, "ROLLBACK TO df_bulk", NULL);
                peer_store_exec(c->db, "RELEASE df_bulk", NULL);
            }
            if (own_txn) peer_store_exec(c->db, "COMMIT", NULL);
        }
        df_free(b.meta.ti);
        df_buf_free(&b.buf);
        peer_trace(c->cfg, c->spid, "bulk %s: error %d after %lld rows, closing", c->bulk_table, b.err_number, (long long)b.rows);
        peer_error(c, TDS_TOK_ERROR, b.err_number, 1, 16, "%s", b.err_text);
        peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0xF0, 0);
        peer_flush(c, NULL);
        return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "closing after a rejected bulk stream");
    }
    if (k == DF_OK && !b.eom) {
        /* an error stopped decoding: drain the rest of the message */
        while (k == DF_OK && !b.eom) {
            b.pos = b.buf.len;
            k = next_packet(&b, err);
        }
    }
    bool ok = k == DF_OK && !b.ignored && !b.attention && !b.err_number;
    if (stored && b.spool) {
        if (b.ins) sqlite3_finalize(b.ins);
        b.ins = NULL;
        df_errkind mk = merge_spool(&b, ok, err);
        if (k == DF_OK) k = mk;
        ok = k == DF_OK && !b.ignored && !b.attention && !b.err_number;
    } else if (stored) {
        if (b.ins) sqlite3_finalize(b.ins);
        if (k == DF_OK || k == DF_ERR_MSSQL_CONNECTION_LOST || k == DF_ERR_TDS_PROTOCOL) {
            if (!ok) peer_store_exec(c->db, "ROLLBACK TO df_bulk", NULL);
            peer_store_exec(c->db, "RELEASE df_bulk", NULL);
        }
        if (own_txn) peer_store_exec(c->db, ok ? "COMMIT" : "ROLLBACK", NULL);
    }
    df_free(b.meta.ti);
    peer_trace(c->cfg, c->spid, "bulk %s: %lld rows, %llu bytes, %.3f s, %s", c->bulk_table, (long long)b.rows,
               (unsigned long long)b.bytes, (double)(df_now_ns() - t0) / 1e9,
               ok ? "ok" : b.attention ? "attention" : b.ignored ? "ignored" : b.err_number ? b.err_text : err ? err->message : "error");
    if (k == DF_ERR_TDS_PROTOCOL && c->cfg->trace) {
        /* the first bytes of the message help diagnose a client's encoding */
        char hex[3 * 96 + 1] = "";
        for (size_t i = 0; i < b.buf.len && i < 96; i++) snprintf(hex + 3 * i, 4, "%02X ", (uint8_t)b.buf.data[i]);
        peer_trace(c->cfg, c->spid, "bulk bytes: %s", hex);
    }
    if (k == DF_ERR_MSSQL_CONNECTION_LOST) return k; /* fault or client gone: close without a reply */
    if (k == DF_ERR_TDS_PROTOCOL) {
        peer_error(c, TDS_TOK_ERROR, 4804, 1, 21, "While reading current row from host, a premature end-of-message was encountered--an incoming data stream was interrupted when the server expected to see more data.");
        peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
        c->closing = true;
        df_buf_free(&b.buf);
        return peer_flush(c, err);
    }
    df_buf_free(&b.buf);
    DF_TRY(k);
    if (b.attention) peer_done(c, TDS_TOK_DONE, TDS_DONE_ATTN, 0, 0);
    else if (b.ignored) peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
    else if (b.err_number) {
        peer_error(c, TDS_TOK_ERROR, b.err_number, 1, 16, "%s", b.err_text);
        peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0xF0, 0);
        if (c->xact_abort && c->trancount > 0) {
            if (c->sqlite_txn) peer_store_exec(c->db, "ROLLBACK", NULL);
            c->sqlite_txn = false;
            c->trancount = 0;
            peer_envchange_bytes(c, 10, NULL, 0, c->txn, 8);
        }
    } else {
        c->last_rowcount = b.rows;
        peer_done(c, TDS_TOK_DONE, TDS_DONE_COUNT, 0xF0, (uint64_t)b.rows);
    }
    return peer_flush(c, err);
}
