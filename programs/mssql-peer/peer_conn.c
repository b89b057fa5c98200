/*
 * One TDS session of the peer, as a state machine run by its own thread:
 *
 *   INITIAL   peek the first byte: 0x16 → TDS 8.0 (TLS first, then
 *             PRELOGIN inside), 0x12 → TDS 7.x PRELOGIN, else close.
 *   PRELOGIN  answer ENCRYPTION per the configured mode (MS-TDS 2.2.6.5
 *             table), MARS always present; start TLS wrapped in PRELOGIN
 *             packets when the answer calls for it.
 *   LOGIN7    validate every offset, de-obfuscate the password, check the
 *             login; login-only encryption drops TLS after this message.
 *   READY     SQL_BATCH, RPC (parameterless sp_executesql), transaction
 *             manager requests, ATTENTION, and BULK_LOAD after INSERT BULK.
 * Every reply is one message; protocol violations close the socket.
 */
#include "peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "mssql/mssql_int.h"

static const uint32_t TDS74 = 0x74000004u;

/* ------------------------------------------------------------------------ */
/* PRELOGIN                                                                  */

static df_errkind send_prelogin_reply(peer_conn *c, uint8_t enc, df_error *err) {
    uint8_t m[] = {0x00, 0x00, 0x1A, 0x00, 0x06,  0x01, 0x00, 0x20, 0x00, 0x01,  0x02, 0x00, 0x21, 0x00, 0x01,
                   0x03, 0x00, 0x22, 0x00, 0x00,  0x04, 0x00, 0x22, 0x00, 0x01,  0xFF,
                   0x0F, 0x00, 0x07, 0xD0, 0x00, 0x00,  enc,  0x00,  0x00};
    return df__tds_io_send_message(c->io, TDS_PKT_REPLY, m, sizeof m, err);
}

static df_errkind tls_accept(peer_conn *c, df__tds_tls_wrap wrap, bool strict, df_error *err) {
    peer_config *cfg = c->cfg;
    df__tds_tls_cfg t = {
        .server = true,
        .strict = strict,
        .cert_file = cfg->cert_file,
        .key_file = cfg->key_file,
        .max_version_7x = cfg->tls13_in_7x ? TLS1_3_VERSION : TLS1_2_VERSION,
    };
    df_errkind k = df__tds_io_tls_start(c->io, &t, wrap, err);
    peer_trace(cfg, c->spid, "tls %s: %s %s", strict ? "strict" : "wrapped", k == DF_OK ? df__tds_io_tls_version(c->io) : "failed",
               k == DF_OK ? df__tds_io_tls_alpn(c->io) : (err ? err->message : ""));
    return k;
}

/*
 * Runs PRELOGIN (and TLS); *login_only tells the caller to drop TLS after
 * LOGIN7.  Returns DF_ERR_MSSQL_CONNECTION_LOST when the session must end.
 */
static df_errkind prelogin(peer_conn *c, bool *login_only, df_error *err) {
    peer_config *cfg = c->cfg;
    uint8_t first, type, status;
    *login_only = false;
    DF_TRY(df__tds_io_peek_byte(c->io, &first, err));
    bool strict = first == 0x16;
    if (strict) {
        if (!cfg->cert_file) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "TLS-first connection but no certificate");
        DF_TRY(tls_accept(c, TDS_TLS_RAW, true, err));
    } else if (first != TDS_PKT_PRELOGIN || cfg->tls == PEER_TLS_STRICT) {
        return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "first byte 0x%02X refused", first);
    }
    DF_TRY(df__tds_io_read_message(c->io, &type, &status, &c->msg, 65536, err));
    if (type != TDS_PKT_PRELOGIN) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "expected PRELOGIN, got 0x%02X", type);
    uint8_t enc;
    DF_TRY(df__tds_prelogin_client_parse((const uint8_t *)c->msg.data, c->msg.len, &enc, err));
    enc &= 0x0F;
    if (strict) return send_prelogin_reply(c, 0x00, err);
    uint8_t reply;
    bool close_after = false, tls = false;
    switch (cfg->tls) {
    case PEER_TLS_OFF:
        reply = 0x02;
        close_after = enc == 0x01 || enc == 0x03;
        break;
    case PEER_TLS_OPTIONAL:
        reply = enc == 0x00 ? 0x00 : enc == 0x02 ? 0x02 : 0x01;
        tls = enc != 0x02;
        *login_only = enc == 0x00;
        break;
    default: /* required */
        reply = enc == 0x00 || enc == 0x02 ? 0x03 : 0x01;
        close_after = enc == 0x02;
        tls = !close_after;
        break;
    }
    peer_trace(cfg, c->spid, "prelogin: client encryption %u, answer %u", enc, reply);
    DF_TRY(send_prelogin_reply(c, reply, err));
    if (close_after) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "encryption mismatch");
    if (tls) DF_TRY(tls_accept(c, TDS_TLS_WRAPPED, false, err));
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* LOGIN7                                                                    */

static bool login_ok(peer_config *cfg, const char *user, const char *password) {
    for (int i = 0; i < cfg->nlogins; i++)
        if (!df_ascii_casecmp(cfg->users[i], user) && !strcmp(cfg->passwords[i], password)) return true;
    return false;
}

static bool database_known(peer_config *cfg, const char *name) {
    if (!name[0] || !df_ascii_casecmp(name, "master") || !df_ascii_casecmp(name, "tempdb")) return true;
    for (int i = 0; i < cfg->ndatabases; i++)
        if (!df_ascii_casecmp(cfg->databases[i], name)) return true;
    return false;
}

static void sleep_ms(uint32_t ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static df_errkind login(peer_conn *c, bool login_only, df_error *err) {
    peer_config *cfg = c->cfg;
    uint8_t type, status;
    DF_TRY(df__tds_io_read_message(c->io, &type, &status, &c->msg, 131071, err));
    if (login_only) df__tds_io_tls_drop(c->io);
    if (cfg->drop_after_login7) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "fault: drop after LOGIN7");
    if (type != TDS_PKT_LOGIN7) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "expected LOGIN7, got 0x%02X", type);
    df__tds_login7 l;
    df_errkind pk = df__tds_login7_parse((const uint8_t *)c->msg.data, c->msg.len, &l, err);
    if (pk != DF_OK) {
        df__tds_login7_clear(&l);
        return pk;
    }
    uint32_t version = l.tds_version, psize = l.packet_size;
    bool integrated = l.integrated;
    char *user = l.user, *password = l.password, *database = l.database;
    peer_trace(cfg, c->spid, "login: user '%s' database '%s' tds 0x%08X packet %u", user, database, version, psize);
    if (cfg->login_delay_ms) sleep_ms(cfg->login_delay_ms);
    peer_reply_reset(c);
    bool ok = !integrated && !cfg->refuse_logins && login_ok(cfg, user, password);
    df__tds_login7_clear(&l);
    (void)password;
    if (ok && version < 0x72000000u) {
        peer_error(c, TDS_TOK_ERROR, 18456, 1, 14, "Login failed for user '%s'. The TDS version is not supported by this server.", user);
        ok = false;
    } else if (!ok) {
        peer_error(c, TDS_TOK_ERROR, 18456, 1, 14, "Login failed for user '%s'.", user);
    } else if (!database_known(cfg, database)) {
        peer_error(c, TDS_TOK_ERROR, 4060, 1, 11, "Cannot open database \"%s\" requested by the login. The login failed.", database);
        peer_error(c, TDS_TOK_ERROR, 18456, 1, 14, "Login failed for user '%s'.", user);
        ok = false;
    }
    if (!ok) {
        peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
        peer_flush(c, NULL);
        return df_error_set(err, DF_ERR_MSSQL_LOGIN, "login refused");
    }
    df__tds_strlcpy(c->user, sizeof c->user, user);
    df__tds_strlcpy(c->database, sizeof c->database, database[0] ? database : "master");
    uint32_t size = cfg->force_packet_size ? cfg->force_packet_size : psize ? psize : TDS_DEFAULT_PACKET;
    if (size < TDS_MIN_PACKET) size = TDS_MIN_PACKET;
    if (size > TDS_MAX_PACKET) size = TDS_MAX_PACKET;
    char sz[16];
    snprintf(sz, sizeof sz, "%u", size);
    peer_envchange_str(c, 1, c->database, "master");
    peer_error(c, TDS_TOK_INFO, 5701, 2, 0, "Changed database context to '%s'.", c->database);
    peer_envchange_bytes(c, 7, df__mssql_default_collation, 5, NULL, 0);
    peer_envchange_str(c, 2, "us_english", "");
    peer_error(c, TDS_TOK_INFO, 5703, 1, 0, "Changed language setting to us_english.");
    peer_loginack(c, version < TDS74 ? version : TDS74);
    peer_envchange_str(c, 4, sz, "4096");
    peer_done(c, TDS_TOK_DONE, 0, 0, 0);
    DF_TRY(peer_flush(c, err));
    c->packet_size = size;
    df__tds_io_set_packet_size(c->io, size);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */

/* Reads the remaining packets of a message whose first packet is in c->msg. */
static df_errkind read_rest(peer_conn *c, uint8_t status, df_error *err) {
    while (!(status & TDS_ST_EOM)) {
        uint8_t type;
        DF_TRY(df__tds_io_read_packet(c->io, &type, &status, &c->msg, TDS_MAX_PACKET, err));
        if (c->msg.len > ((size_t)256 << 20)) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "request larger than 256 MiB");
    }
    return DF_OK;
}

/* Skips ALL_HEADERS (validated) and returns the offset of the data after it. */
static df_errkind skip_all_headers(const uint8_t *m, size_t n, size_t *off, df_error *err) {
    if (n < 4) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "request too short for ALL_HEADERS");
    uint32_t total = df_load_le32(m);
    if (total < 4 || total > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "ALL_HEADERS length %u is invalid", total);
    for (size_t p = 4; p < total;) {
        if (p + 6 > total) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "ALL_HEADERS entry truncated");
        uint32_t hl = df_load_le32(m + p);
        if (hl < 6 || p + hl > total) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "ALL_HEADERS entry length %u is invalid", hl);
        p += hl;
    }
    *off = total;
    return DF_OK;
}

static df_errkind sql_batch(peer_conn *c, df_error *err) {
    size_t off;
    DF_TRY(skip_all_headers((const uint8_t *)c->msg.data, c->msg.len, &off, err));
    df_buf text;
    df_buf_init(&text, 0);
    df_errkind k = df__tds_utf16le_to_utf8((const uint8_t *)c->msg.data + off, (c->msg.len - off) & ~(size_t)1, &text, err);
    peer_reply_reset(c);
    if (k == DF_OK) k = peer_sql_batch(c, text.data ? text.data : "", err);
    df_buf_free(&text);
    DF_TRY(k);
    return peer_flush(c, err);
}

/* Renders a decoded RPC parameter as a SQLite literal. */
static df_errkind param_literal(const df__tds_typeinfo *ti, const df__tds_value *v, df_buf *out, df_error *err) {
    char t[96];
    switch (v->kind) {
    case TDS_V_NULL: return df_buf_append_str(out, "NULL", err);
    case TDS_V_INT: return df_buf_printf(out, err, "%lld", (long long)v->i);
    case TDS_V_FLOAT: return df_buf_printf(out, err, "%.17g", v->f);
    case TDS_V_DECIMAL:
        df__tds_format_decimal(v->dec, ti->type == TDS_T_DECIMALN || ti->type == TDS_T_NUMERICN ? ti->scale : 4, t, sizeof t);
        return df_buf_printf(out, err, "'%s'", t);
    case TDS_V_GUID: df__tds_format_guid(v->bytes, t); return df_buf_printf(out, err, "'%s'", t);
    case TDS_V_DATE: df__tds_format_date(v->i, t, sizeof t); return df_buf_printf(out, err, "'%s'", t);
    case TDS_V_TIME: df__tds_format_time(v->ticks, ti->scale, t, sizeof t); return df_buf_printf(out, err, "'%s'", t);
    case TDS_V_DATETIME2: {
        char d[16];
        df__tds_format_date(v->i, d, sizeof d);
        df__tds_format_time(v->ticks, ti->scale, t, sizeof t);
        return df_buf_printf(out, err, "'%s %s'", d, t);
    }
    case TDS_V_BYTES: {
        bool binary = ti->type == TDS_T_BIGVARBIN || ti->type == TDS_T_BIGBINARY || ti->type == TDS_T_IMAGE;
        if (binary) {
            DF_TRY(df_buf_append_str(out, "X'", err));
            for (size_t i = 0; i < v->len; i++) DF_TRY(df_buf_printf(out, err, "%02X", v->bytes[i]));
            return df_buf_append_char(out, '\'', err);
        }
        df_buf text;
        df_buf_init(&text, 0);
        df_errkind k = (ti->type == TDS_T_NVARCHAR || ti->type == TDS_T_NCHAR || ti->type == TDS_T_NTEXT)
                           ? df__tds_utf16le_to_utf8(v->bytes, v->len & ~(size_t)1, &text, err)
                           : df_buf_append(&text, v->bytes, v->len, err);
        if (k == DF_OK) k = df_buf_append_char(out, '\'', err);
        for (size_t i = 0; k == DF_OK && i < text.len; i++) {
            if (text.data[i] == '\'') k = df_buf_append_char(out, '\'', err);
            if (k == DF_OK) k = df_buf_append_char(out, text.data[i], err);
        }
        if (k == DF_OK) k = df_buf_append_char(out, '\'', err);
        df_buf_free(&text);
        return k;
    }
    default:
        return df_error_set(err, DF_ERR_UNSUPPORTED, "parameter type not supported by the peer");
    }
}

/* The name of the n-th (0-based) parameter declared in "@a int, @b nvarchar(10)", or NULL. */
static bool declared_name(const char *decl, int n, char *out, size_t cap) {
    int depth = 0, item = 0;
    for (const char *p = decl; p && *p; p++) {
        if (*p == '(') depth++;
        else if (*p == ')') depth--;
        else if (*p == ',' && depth == 0) item++;
        else if (*p == '@' && depth == 0 && item == n) {
            size_t o = 0;
            while ((p[o] == '@' || p[o] == '_' || (p[o] >= '0' && p[o] <= '9') || (p[o] >= 'a' && p[o] <= 'z') ||
                    (p[o] >= 'A' && p[o] <= 'Z')) && o + 1 < cap) {
                out[o] = p[o];
                o++;
            }
            out[o] = '\0';
            return o > 1;
        }
    }
    return false;
}

static void free_params(peer_conn *c) {
    for (int i = 0; i < c->nparams; i++) {
        df_free(c->param_names[i]);
        df_free(c->param_sql[i]);
    }
    df_free(c->param_names);
    df_free(c->param_sql);
    c->param_names = c->param_sql = NULL;
    c->nparams = 0;
}

/*
 * RPC: sp_executesql (ProcID 10 or by name).  The first parameter is the
 * statement, the second (optional) the parameter declarations, the rest
 * values; values are bound by substituting SQLite literals for @names.
 */
static df_errkind rpc(peer_conn *c, df_error *err) {
    const uint8_t *m = (const uint8_t *)c->msg.data;
    size_t off;
    DF_TRY(skip_all_headers(m, c->msg.len, &off, err));
    df__tds_rd r;
    df__tds_rd_init(&r, m + off, c->msg.len - off);
    uint16_t namelen, procid = 0, flags;
    char name[130] = "";
    DF_TRY(df__tds_rd_u16(&r, &namelen, err));
    if (namelen == 0xFFFF) {
        DF_TRY(df__tds_rd_u16(&r, &procid, err));
    } else {
        r.p -= 2; /* re-read the length as part of the US_VARCHAR */
        DF_TRY(df__tds_rd_usvarchar(&r, name, sizeof name, err));
    }
    DF_TRY(df__tds_rd_u16(&r, &flags, err));
    peer_reply_reset(c);
    bool executesql = procid == 10 || !df_ascii_casecmp(name, "sp_executesql") || !df_ascii_casecmp(name, "sys.sp_executesql");
    df_buf sql, scratch, lit, decl;
    df_buf_init(&sql, 0);
    df_buf_init(&decl, 0);
    df_buf_init(&scratch, TDS_MAX_VALUE);
    df_buf_init(&lit, 0);
    df_errkind k = DF_OK;
    int index = 0;
    while (k == DF_OK && df__tds_rd_left(&r) > 0) {
        char pname[130];
        uint8_t pstatus;
        df__tds_typeinfo ti;
        df__tds_value v;
        df_buf_reset(&scratch);
        k = df__tds_rd_bvarchar(&r, pname, sizeof pname, err);
        if (k == DF_OK) k = df__tds_rd_u8(&r, &pstatus, err);
        if (k == DF_OK) k = df__tds_typeinfo_read(&r, &ti, false, err);
        if (k == DF_OK) k = df__tds_value_read(&r, &ti, &scratch, &v, err);
        if (k != DF_OK) break;
        if (index <= 1 && v.kind == TDS_V_BYTES) {
            df_buf *dst = index == 0 ? &sql : &decl;
            k = (ti.type == TDS_T_NVARCHAR || ti.type == TDS_T_NTEXT) ? df__tds_utf16le_to_utf8(v.bytes, v.len & ~(size_t)1, dst, err)
                                                                       : df_buf_append(dst, v.bytes, v.len, err);
        } else if (index >= 2) {
            df_buf_reset(&lit);
            k = param_literal(&ti, &v, &lit, err);
            char **nn = df_realloc(c->param_names, sizeof *nn * (size_t)(c->nparams + 1));
            if (nn) c->param_names = nn;
            char **ns = df_realloc(c->param_sql, sizeof *ns * (size_t)(c->nparams + 1));
            if (ns) c->param_sql = ns;
            if (k == DF_OK && (!nn || !ns)) k = DF_OOM(err);
            if (k == DF_OK) {
                char auto_name[130];
                if (!declared_name(decl.data, index - 2, auto_name, sizeof auto_name))
                    snprintf(auto_name, sizeof auto_name, "@P%d", index - 1);
                c->param_names[c->nparams] = df_strdup(pname[0] ? pname : auto_name);
                c->param_sql[c->nparams] = df_strdup(lit.data ? lit.data : "NULL");
                c->nparams++;
            }
        }
        index++;
    }
    df_buf_free(&scratch);
    df_buf_free(&lit);
    if (k == DF_OK) {
        peer_trace(c->cfg, c->spid, "rpc %s (%d parameters)", name[0] ? name : procid == 10 ? "sp_executesql" : "?", c->nparams);
        c->in_rpc = true;
        if (!executesql || !sql.data) {
            peer_error(c, TDS_TOK_ERROR, 2812, 62, 16, "Could not find stored procedure '%s'.", name[0] ? name : "?");
            peer_done(c, TDS_TOK_DONEINPROC, TDS_DONE_ERROR | TDS_DONE_MORE, 0, 0);
        } else {
            k = peer_sql_batch(c, sql.data, err);
        }
        c->in_rpc = false;
        if (k == DF_OK) {
            peer_returnstatus(c, 0);
            peer_done(c, TDS_TOK_DONEPROC, 0, 0xE0, 0);
        }
    }
    free_params(c);
    df_buf_free(&sql);
    df_buf_free(&decl);
    DF_TRY(k);
    return peer_flush(c, err);
}

/* Transaction manager request (ODBC drivers use it for autocommit off). */
static df_errkind tm_request(peer_conn *c, df_error *err) {
    const uint8_t *m = (const uint8_t *)c->msg.data;
    size_t off;
    DF_TRY(skip_all_headers(m, c->msg.len, &off, err));
    if (off + 2 > c->msg.len) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "TM request truncated");
    uint16_t req = df_load_le16(m + off);
    peer_reply_reset(c);
    const char *sql = NULL;
    switch (req) {
    case 5: sql = "BEGIN TRANSACTION"; break;
    case 7: sql = "COMMIT TRANSACTION"; break;
    case 8: sql = "ROLLBACK TRANSACTION"; break;
    default:
        peer_error(c, TDS_TOK_ERROR, 8525, 1, 16, "Distributed transactions are not supported by the peer.");
        peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
        return peer_flush(c, err);
    }
    /* Commit/rollback with fBeginXact (bit 0 of the flags after the name) start a new transaction. */
    bool begin_again = false;
    if (req != 5 && off + 3 <= c->msg.len) {
        size_t nl = m[off + 2];
        if (off + 3 + 2 * nl < c->msg.len) begin_again = m[off + 3 + 2 * nl] & 1;
    }
    if (req == 8 && c->trancount == 0) {
        peer_done(c, TDS_TOK_DONE, 0, 0, 0);
        return peer_flush(c, err);
    }
    DF_TRY(peer_sql_batch(c, begin_again ? (req == 7 ? "COMMIT TRANSACTION; BEGIN TRANSACTION" : "ROLLBACK TRANSACTION; BEGIN TRANSACTION") : sql, err));
    return peer_flush(c, err);
}

static df_errkind serve(peer_conn *c, df_error *err) {
    for (;;) {
        uint8_t type, status;
        df_buf_reset(&c->msg);
        df_errkind k = df__tds_io_read_packet(c->io, &type, &status, &c->msg, TDS_MAX_PACKET, err);
        if (k != DF_OK) return k;
        /* A message never switches transport midway, so its first packet says how all of it (and its reply) went. */
        if (df__tds_io_tls_active(c->io)) c->tls_requests++;
        else c->plain_requests++;
        if (type == TDS_PKT_ATTENTION) {
            peer_reply_reset(c);
            peer_done(c, TDS_TOK_DONE, TDS_DONE_ATTN, 0, 0);
            DF_TRY(peer_flush(c, err));
            continue;
        }
        if (type == TDS_PKT_BULK) {
            if (!c->bulk_pending) {
                DF_TRY(read_rest(c, status, err));
                peer_reply_reset(c);
                peer_error(c, TDS_TOK_ERROR, 4804, 1, 16, "Bulk load data was sent without a preceding INSERT BULK statement.");
                peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
                DF_TRY(peer_flush(c, err));
                continue;
            }
            peer_reply_reset(c);
            DF_TRY(peer_bulk_load(c, status, err));
            if (c->closing) return DF_OK;
            continue;
        }
        c->bulk_pending = false;
        DF_TRY(read_rest(c, status, err));
        if (status & TDS_ST_IGNORE) {
            peer_reply_reset(c);
            peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
            DF_TRY(peer_flush(c, err));
            continue;
        }
        switch (type) {
        case TDS_PKT_SQL_BATCH: k = sql_batch(c, err); break;
        case TDS_PKT_RPC: k = rpc(c, err); break;
        case 0x0E: k = tm_request(c, err); break;
        default: return df_error_set(err, DF_ERR_TDS_PROTOCOL, "unexpected packet type 0x%02X", type);
        }
        DF_TRY(k);
        if (c->closing) return DF_OK;
    }
}

void *peer_conn_thread(void *arg) {
    peer_accept *a = arg;
    peer_config *cfg = a->cfg;
    int fd = a->fd;
    df_free(a);
    peer_conn *c = df_calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->cfg = cfg;
    c->spid = atomic_fetch_add(&cfg->next_spid, 1);
    df_buf_init(&c->reply, 0);
    df_buf_init(&c->msg, (size_t)300 << 20);
    df_error err = {0};
    bool logged_in = false;
    df_errkind k = df__tds_io_new(fd, 600000, &c->io, &err);
    if (k == DF_OK) {
        df__tds_io_set_spid(c->io, (uint16_t)c->spid);
        k = peer_store_open(cfg, false, &c->db, &err);
    }
    if (k == DF_OK) {
        peer_store_functions(c->db, c);
        bool login_only;
        k = prelogin(c, &login_only, &err);
        if (k == DF_OK) k = login(c, login_only, &err);
        if (k == DF_OK) {
            logged_in = true;
            k = serve(c, &err);
        }
    }
    if (logged_in)
        peer_trace(cfg, c->spid, "requests after login: %lld over TLS, %lld in plaintext", (long long)c->tls_requests,
                   (long long)c->plain_requests);
    peer_trace(cfg, c->spid, "session ends: %s", k == DF_OK ? "closed" : err.message);
    if (c->db) {
        if (c->sqlite_txn) peer_store_exec(c->db, "ROLLBACK", NULL);
        sqlite3_close(c->db);
    }
    peer_applocks_release(cfg, c->spid, false);
    df__tds_io_free(c->io);
    df_free(c->bulk_cols);
    df_buf_free(&c->reply);
    df_buf_free(&c->msg);
    df_error_clear(&err);
    df_free(c);
    return NULL;
}
