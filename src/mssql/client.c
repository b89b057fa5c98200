/*
 * Client connection: TCP connect, PRELOGIN with encryption negotiation,
 * TLS (wrapped, raw or strict), LOGIN7, SQL batches, attention and
 * transactions.
 *
 * Connection state machine (df_mssql_connect):
 *   TCP_CONNECT → [strict: TLS_RAW] → PRELOGIN → [7.x: TLS_WRAPPED when the
 *   negotiated mode needs it] → LOGIN7 → [login-only: drop TLS] →
 *   LOGIN_RESPONSE → READY.  Any failure closes the socket.
 * A request is one message out and one response message in; while waiting
 * for the response a timeout or a cancel request sends ATTENTION and waits
 * (bounded) for the server's DONE(ATTN) so the connection stays usable.
 */
#include "mssql/mssql_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

const uint8_t df__mssql_default_collation[5] = {0x09, 0x04, 0xD0, 0x00, 0x34};

#define CANCEL_WAIT_MS 5000u
#define CLIENT_VERSION 0x00010000u

/* ------------------------------------------------------------------------ */
/* TCP                                                                       */

/* A failure to open the TCP connection: the message names the step, subkind DF_ERR_MSSQL_TCP_CONNECT says so. */
static df_errkind tcp_failed(df_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static df_errkind tcp_failed(df_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    df_error_setv(err, DF_ERR_MSSQL_CONNECT, fmt, ap);
    va_end(ap);
    df_error_set_subkind(err, DF_ERR_MSSQL_TCP_CONNECT);
    return DF_ERR_MSSQL_CONNECT;
}

static df_errkind tcp_connect(const char *host, uint16_t port, uint32_t timeout_ms, int *out, df_error *err) {
    *out = -1;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) return tcp_failed(err, "TCP connection to SQL Server failed: cannot resolve host (%s)", gai_strerror(gai));
    int last = ECONNREFUSED;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) { last = errno; continue; }
        int r = connect(fd, a->ai_addr, a->ai_addrlen);
        if (r != 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int pr = poll(&p, 1, timeout_ms ? (int)timeout_ms : -1);
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (pr == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) r = 0;
            else last = pr == 0 ? ETIMEDOUT : soerr ? soerr : errno;
        } else if (r != 0) {
            last = errno;
        }
        if (r == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            freeaddrinfo(res);
            *out = fd;
            return DF_OK;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return tcp_failed(err, "TCP connection to SQL Server failed: %s", strerror(last));
}

/* ------------------------------------------------------------------------ */
/* PRELOGIN                                                                  */

/* Builds the PRELOGIN payload: VERSION, ENCRYPTION, INSTOPT, THREADID, MARS. */
static df_errkind build_prelogin(df_buf *b, uint8_t enc, const char *instance, df_error *err) {
    const char *inst = instance ? instance : "";
    size_t inst_len = strlen(inst) + 1;
    if (inst_len > 255) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_STRING, "SQL Server connection string is invalid: instance name is too long");
    struct { uint8_t tok; uint16_t len; } opts[5] = {{0, 6}, {1, 1}, {2, (uint16_t)inst_len}, {3, 4}, {4, 1}};
    uint16_t off = 5 * 5 + 1;
    df_buf_reset(b);
    for (int i = 0; i < 5; i++) {
        uint8_t e[5] = {opts[i].tok, (uint8_t)(off >> 8), (uint8_t)off, (uint8_t)(opts[i].len >> 8), (uint8_t)opts[i].len};
        DF_TRY(df_buf_append(b, e, 5, err));
        off = (uint16_t)(off + opts[i].len);
    }
    DF_TRY(df__tds_put_u8(b, 0xFF, err));
    uint8_t ver[6] = {0, 1, 0, 0, 0, 0};
    DF_TRY(df_buf_append(b, ver, 6, err));
    DF_TRY(df__tds_put_u8(b, enc, err));
    DF_TRY(df_buf_append(b, inst, inst_len, err));
    DF_TRY(df__tds_put_u32(b, (uint32_t)getpid(), err));
    return df__tds_put_u8(b, 0, err);
}

/* Walks a PRELOGIN reply; returns the server's ENCRYPTION byte. */
static df_errkind parse_prelogin(const uint8_t *p, size_t n, uint8_t *enc, df_error *err) {
    bool have_enc = false, first = true;
    for (size_t i = 0;; i += 5) {
        if (i >= n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN reply has no terminator");
        if (p[i] == 0xFF) break;
        if (i + 5 > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN reply option table is truncated");
        uint8_t tok = p[i];
        size_t off = (size_t)p[i + 1] << 8 | p[i + 2], len = (size_t)p[i + 3] << 8 | p[i + 4];
        if (off + len > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN option %u points outside the reply", tok);
        if (first && tok != 0) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN reply does not start with VERSION");
        first = false;
        if (tok == 1) {
            if (len < 1) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN ENCRYPTION option is empty");
            *enc = p[off];
            have_enc = true;
        } else if (tok == 2 && len >= 1 && p[off] == 1) {
            return df_error_set(err, DF_ERR_MSSQL_CONNECT, "the server does not host the requested instance");
        }
    }
    if (!have_enc) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN reply has no ENCRYPTION option");
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* LOGIN7                                                                    */

static df_errkind put_field(df_buf *var, uint8_t *fixed, int slot, const char *s, bool password, df_error *err) {
    size_t start = var->len, units = 0;
    DF_TRY(df__tds_put_utf16(var, s ? s : "", &units, err));
    if (units > 128 && !password) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "a login field is longer than 128 characters");
    if (password) {
        if (units > 128) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_STRING, "SQL Server connection string is invalid: password is longer than 128 characters");
        for (size_t i = start; i < var->len; i++) {
            uint8_t b = (uint8_t)var->data[i];
            var->data[i] = (char)(((b << 4) | (b >> 4)) ^ 0xA5);
        }
    }
    df_store_le16(fixed + 36 + slot * 4, (uint16_t)(94 + start));
    df_store_le16(fixed + 38 + slot * 4, (uint16_t)units);
    return DF_OK;
}

/* Builds LOGIN7 into c->req.  The caller wipes c->req after sending (password inside). */
static df_errkind build_login7(df_mssql_conn *c, df_error *err) {
    const df_mssql_conninfo *ci = c->ci;
    uint8_t fixed[94] = {0};
    df_buf var;
    df_buf_init(&var, 65535);
    char host[256] = "";
    if (ci->workstation) df__tds_strlcpy(host, sizeof host, ci->workstation);
    else gethostname(host, sizeof host - 1);
    df_store_le32(fixed + 4, 0x74000004u);
    df_store_le32(fixed + 8, ci->packet_size);
    df_store_le32(fixed + 12, CLIENT_VERSION);
    df_store_le32(fixed + 16, (uint32_t)getpid());
    fixed[24] = 0xE0;   /* fUseDB, fDatabase (initial database failure is fatal), fSetLang */
    fixed[25] = 0x03;   /* fLanguage fatal, ODBC defaults */
    fixed[26] = ci->read_only ? 0x20 : 0x00;
    df_store_le32(fixed + 32, 0x0409);
    df_errkind k = DF_OK;
    const char *fields[9] = {host, ci->user, ci->password, ci->app_name ? ci->app_name : "deltafunnel",
                             ci->host, "", "deltafunnel-tds", "", ci->database};
    for (int i = 0; i < 9 && k == DF_OK; i++) {
        if (i == 5) { /* Extension: unused (no FeatureExt) */
            df_store_le16(fixed + 36 + 20, (uint16_t)(94 + var.len));
            continue;
        }
        k = put_field(&var, fixed, i, fields[i], i == 2, err);
    }
    df_store_le16(fixed + 78, (uint16_t)(94 + var.len));   /* SSPI */
    df_store_le16(fixed + 82, (uint16_t)(94 + var.len));   /* AtchDBFile */
    df_store_le16(fixed + 86, (uint16_t)(94 + var.len));   /* ChangePassword */
    df_store_le32(fixed, (uint32_t)(94 + var.len));
    df_buf_reset(&c->req);
    if (k == DF_OK) k = df_buf_append(&c->req, fixed, sizeof fixed, err);
    if (k == DF_OK) k = df_buf_append(&c->req, var.data ? var.data : "", var.len, err);
    if (var.data) OPENSSL_cleanse(var.data, var.cap);
    df_buf_free(&var);
    return k;
}

static void wipe_req(df_mssql_conn *c) {
    if (c->req.data) OPENSSL_cleanse(c->req.data, c->req.cap);
    df_buf_reset(&c->req);
}

/* ------------------------------------------------------------------------ */
/* Responses                                                                 */

df_errkind df__mssql_check_dead(df_mssql_conn *c, df_errkind k) {
    if (k == DF_ERR_MSSQL_CONNECTION_LOST || k == DF_ERR_TDS_PROTOCOL || k == DF_ERR_MSSQL_TLS ||
        k == DF_ERR_TIMEOUT || k == DF_ERR_LIMIT_EXCEEDED || k == DF_ERR_OUT_OF_MEMORY)
        c->dead = true;
    return k;
}

void df__mssql_apply_env(df_mssql_conn *c, const df__tds_resp *resp) {
    if (resp->env_db) df__tds_strlcpy(c->database, sizeof c->database, resp->database);
    if (resp->env_collation) memcpy(c->collation, resp->collation, 5);
    if (resp->env_txn == 8) {
        c->in_txn = true;
        memcpy(c->txn, resp->txn, 8);
    } else if (resp->env_txn) {
        c->in_txn = false;
        memset(c->txn, 0, 8);
    }
}

/*
 * After a timeout or cancel: sends ATTENTION and reads messages until one
 * ends with DONE(ATTN), for at most CANCEL_WAIT_MS.  Returns DF_OK when
 * the server acknowledged (the connection is usable again).
 */
static df_errkind send_attention(df_mssql_conn *c, df_error *err) {
    atomic_store(&c->cancel, 0);
    df__tds_io_set_cancel(c->io, NULL);
    df__tds_io_set_timeout(c->io, CANCEL_WAIT_MS);
    df_errkind k = df__tds_io_send_message(c->io, TDS_PKT_ATTENTION, NULL, 0, err);
    uint64_t deadline = df_now_ns() + (uint64_t)CANCEL_WAIT_MS * 1000000u;
    while (k == DF_OK && df_now_ns() < deadline) {
        uint8_t type, status;
        k = df__tds_io_read_message(c->io, &type, &status, &c->msg, TDS_MAX_MESSAGE, err);
        if (k != DF_OK) break;
        const uint8_t *m = (const uint8_t *)c->msg.data;
        size_t n = c->msg.len;
        if (n >= 13 && m[n - 13] == TDS_TOK_DONE && (df_load_le16(m + n - 12) & TDS_DONE_ATTN)) {
            df__tds_io_set_timeout(c->io, c->command_timeout_ms);
            df__tds_io_set_cancel(c->io, &c->cancel);
            return DF_OK;
        }
    }
    c->dead = true;
    return k != DF_OK ? k : df_error_set(err, DF_ERR_TIMEOUT, "SQL Server did not acknowledge the cancel request");
}

df_errkind df__mssql_read_response(df_mssql_conn *c, df__tds_resp *resp, df_error *err) {
    uint8_t type, status;
    df_errkind k = df__tds_io_read_message(c->io, &type, &status, &c->msg, TDS_MAX_MESSAGE, err);
    if (k == DF_ERR_TIMEOUT || k == DF_ERR_CANCELLED) {
        df_error saved = {0};
        df_error_move(&saved, err);
        df_errkind ak = send_attention(c, NULL);
        if (err) df_error_move(err, &saved);
        df_error_clear(&saved);
        if (ak != DF_OK) c->dead = true;
        return k;
    }
    if (k != DF_OK) return df__mssql_check_dead(c, k);
    if (type != TDS_PKT_REPLY) {
        c->dead = true;
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "server sent packet type 0x%02X instead of a reply", type);
    }
    k = df__tds_parse_tokens((const uint8_t *)c->msg.data, c->msg.len, resp, err);
    if (k == DF_OK) df__mssql_apply_env(c, resp);
    if (k != DF_OK && k != DF_ERR_VALUE_CONVERSION) c->dead = true;
    return k;
}

static df_errkind usable(df_mssql_conn *c, df_error *err) {
    if (c->dead) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "the SQL Server connection is no longer usable");
    if (c->bulk_open) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "a bulk load is in progress on this connection");
    return DF_OK;
}

df_errkind df__mssql_run_batch(df_mssql_conn *c, const char *sql, df__tds_resp *resp, df_error *err) {
    DF_TRY(usable(c, err));
    atomic_store(&c->cancel, 0);
    df__tds_io_set_timeout(c->io, c->command_timeout_ms);
    df_buf_reset(&c->req);
    /* ALL_HEADERS with the transaction descriptor header (MS-TDS 2.2.5.3). */
    uint8_t hdr[22] = {22, 0, 0, 0, 18, 0, 0, 0, 2, 0};
    memcpy(hdr + 10, c->txn, 8);
    df_store_le32(hdr + 18, 1);
    DF_TRY(df_buf_append(&c->req, hdr, sizeof hdr, err));
    df_errkind k = df__tds_put_utf16(&c->req, sql, NULL, err);
    if (k == DF_ERR_INVALID_ARGUMENT) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "SQL text is not valid UTF-8");
    DF_TRY(k);
    k = df__tds_io_send_message(c->io, TDS_PKT_SQL_BATCH, c->req.data, c->req.len, err);
    if (k != DF_OK) return df__mssql_check_dead(c, k);
    return df__mssql_read_response(c, resp, err);
}

/* ------------------------------------------------------------------------ */
/* Connect and login                                                         */

static df_errkind copy_conninfo(const df_mssql_conninfo *src, df_mssql_conninfo **out, df_error *err) {
    df_mssql_conninfo *ci = df_calloc(1, sizeof *ci);
    if (!ci) return DF_OOM(err);
    *ci = *src;
    ci->host = df_strdup(src->host);
    ci->instance = src->instance ? df_strdup(src->instance) : NULL;
    ci->user = df_strdup(src->user);
    ci->password = df_strdup(src->password);
    ci->database = df_strdup(src->database);
    ci->app_name = src->app_name ? df_strdup(src->app_name) : NULL;
    ci->ca_file = src->ca_file ? df_strdup(src->ca_file) : NULL;
    ci->host_in_cert = src->host_in_cert ? df_strdup(src->host_in_cert) : NULL;
    ci->workstation = src->workstation ? df_strdup(src->workstation) : NULL;
    if (!ci->host || !ci->user || !ci->password || !ci->database || (src->instance && !ci->instance) ||
        (src->app_name && !ci->app_name) || (src->ca_file && !ci->ca_file) ||
        (src->host_in_cert && !ci->host_in_cert) || (src->workstation && !ci->workstation)) {
        df_mssql_conninfo_free(ci);
        return DF_OOM(err);
    }
    *out = ci;
    return DF_OK;
}

static df_errkind start_tls(df_mssql_conn *c, df__tds_tls_wrap wrap, bool strict, df_error *err) {
    const df_mssql_conninfo *ci = c->ci;
    df__tds_tls_cfg cfg = {
        .strict = strict,
        .verify = strict || !ci->trust_cert,
        .ca_file = ci->ca_file,
        .host = ci->host_in_cert ? ci->host_in_cert : ci->host,
    };
    df_errkind k = df__tds_io_tls_start(c->io, &cfg, wrap, err);
    if (k == DF_ERR_MSSQL_TLS && err && err->subkind == DF_ERR_MSSQL_TLS_CERTIFICATE) {
        /*
         * Encryption is on by default, so a certificate failure is often a
         * test or internal server with a self-signed certificate: name the
         * options that relax the check (strict mode always validates, so
         * only the CA file helps there).
         */
        char why[DF_ERROR_MESSAGE_SIZE];
        df__tds_strlcpy(why, sizeof why, err->message);
        if (strict)
            df_error_set(err, DF_ERR_MSSQL_TLS, "%s; trust the server's CA with TrustServerCertificateCA=<PEM file>",
                         why);
        else
            df_error_set(err, DF_ERR_MSSQL_TLS,
                         "%s; trust the server's CA with TrustServerCertificateCA=<PEM file>, or skip validation with "
                         "TrustServerCertificate=yes", why);
        df_error_set_subkind(err, DF_ERR_MSSQL_TLS_CERTIFICATE);
    }
    return k;
}

/* PRELOGIN exchange and the TLS decision; sets *login_only. */
static df_errkind prelogin(df_mssql_conn *c, df_error *err) {
    const df_mssql_conninfo *ci = c->ci;
    bool strict = ci->encrypt == DF_MSSQL_ENCRYPT_STRICT;
    uint8_t want = ci->encrypt == DF_MSSQL_ENCRYPT_ON ? 0x01 : ci->encrypt == DF_MSSQL_ENCRYPT_LOGIN_ONLY ? 0x00 : 0x02;
    DF_TRY(build_prelogin(&c->req, want, ci->instance, err));
    DF_TRY(df__tds_io_send_message(c->io, TDS_PKT_PRELOGIN, c->req.data, c->req.len, err));
    uint8_t type, status, enc = 0;
    DF_TRY(df__tds_io_read_message(c->io, &type, &status, &c->msg, 65536, err));
    if (type != TDS_PKT_REPLY && type != TDS_PKT_PRELOGIN)
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "unexpected packet type 0x%02X in reply to PRELOGIN", type);
    DF_TRY(parse_prelogin((const uint8_t *)c->msg.data, c->msg.len, &enc, err));
    if (strict) return DF_OK; /* already inside TLS; the option is ignored */
    enc &= 0x0F;
    if (enc > 3) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "server sent encryption value %u", enc);
    if (want == 0x01) {
        if (enc == 0x02) {
            /*
             * Nothing secret has been sent yet: the login (password
             * included) would travel in clear text, so a server (or
             * anyone in the path) answering "not supported" is refused
             * unless the user opted out of encryption.
             */
            df_error_set(err, DF_ERR_MSSQL_TLS,
                         "the server does not support encryption (PRELOGIN ENCRYPT_NOT_SUP) and Encrypt=mandatory (the "
                         "default) requires it; Encrypt=optional allows such a server, sending the login unencrypted");
            df_error_set_subkind(err, DF_ERR_MSSQL_ENCRYPTION_NOT_SUPPORTED);
            return DF_ERR_MSSQL_TLS;
        }
        if (enc == 0x00) return df_error_set(err, DF_ERR_MSSQL_TLS, "encryption was required but the server answered with encryption off");
        return start_tls(c, TDS_TLS_WRAPPED, false, err);
    }
    if (want == 0x02) {
        if (enc == 0x03 || enc == 0x01)
            return df_error_set(err, DF_ERR_MSSQL_TLS, "the server requires encryption but the connection string disables TLS");
        return DF_OK;
    }
    /* Client offered login-only. */
    if (enc == 0x02) return DF_OK;
    DF_TRY(start_tls(c, TDS_TLS_WRAPPED, false, err));
    c->login_only = enc == 0x00;
    return DF_OK;
}

static df_errkind login(df_mssql_conn *c, df_error *err) {
    df_errkind k = build_login7(c, err);
    if (k == DF_OK) k = df__tds_io_send_message(c->io, TDS_PKT_LOGIN7, c->req.data, c->req.len, err);
    wipe_req(c);
    df__mssql_free_secret(c->ci->password);
    c->ci->password = NULL;
    DF_TRY(k);
    if (c->login_only) df__tds_io_tls_drop(c->io);
    df__tds_resp resp;
    df__tds_resp_init(&resp, NULL);
    uint8_t type, status;
    DF_TRY(df__tds_io_read_message(c->io, &type, &status, &c->msg, TDS_MAX_MESSAGE, err));
    if (type != TDS_PKT_REPLY) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "unexpected packet type 0x%02X in reply to LOGIN7", type);
    DF_TRY(df__tds_parse_tokens((const uint8_t *)c->msg.data, c->msg.len, &resp, err));
    if (resp.nerrors) return df__mssql_server_error(&resp, DF_ERR_MSSQL_LOGIN, err);
    if (!resp.loginack) return df_error_set(err, DF_ERR_MSSQL_LOGIN, "SQL Server ended the login without accepting it");
    if (resp.tds_version < 0x72000000u)
        return df_error_set(err, DF_ERR_UNSUPPORTED, "SQL Server speaks TDS 0x%08X; 7.2 or later is required", resp.tds_version);
    df__mssql_apply_env(c, &resp);
    c->tds_version = resp.tds_version;
    df__tds_strlcpy(c->server_version, sizeof c->server_version, resp.server_version);
    if (resp.env_packet_size) df__tds_io_set_packet_size(c->io, resp.env_packet_size);
    return DF_OK;
}

static df_errkind connect_steps(df_mssql_conn *c, df_error *err) {
    const df_mssql_conninfo *ci = c->ci;
    int fd;
    DF_TRY(tcp_connect(ci->host, ci->port, ci->connect_timeout_ms, &fd, err));
    DF_TRY(df__tds_io_new(fd, ci->connect_timeout_ms, &c->io, err));
    if (ci->encrypt == DF_MSSQL_ENCRYPT_STRICT) DF_TRY(start_tls(c, TDS_TLS_RAW, true, err));
    DF_TRY(prelogin(c, err));
    DF_TRY(login(c, err));
    const char *v = df__tds_io_tls_version(c->io);
    snprintf(c->encryption, sizeof c->encryption, "%s",
             df__tds_io_tls_active(c->io) ? v : c->login_only ? "login-only" : "none");
    df__tds_io_set_timeout(c->io, c->command_timeout_ms);
    df__tds_io_set_cancel(c->io, &c->cancel);
    return DF_OK;
}

df_errkind df_mssql_connect(const df_mssql_conninfo *ci, df_mssql_conn **out, df_error *err) {
    *out = NULL;
    df_mssql_conn *c = df_calloc(1, sizeof *c);
    if (!c) return DF_OOM(err);
    df_buf_init(&c->msg, TDS_MAX_MESSAGE + TDS_MAX_PACKET);
    df_buf_init(&c->req, 0);
    memcpy(c->collation, df__mssql_default_collation, 5);
    df_errkind k = copy_conninfo(ci, &c->ci, err);
    if (k == DF_OK) {
        c->command_timeout_ms = ci->command_timeout_ms;
        k = connect_steps(c, err);
    }
    if (k == DF_ERR_MSSQL_CONNECTION_LOST || k == DF_ERR_TIMEOUT) {
        /* A dropped or silent server during setup is a connect failure (the message names the step). */
        char msg[DF_ERROR_MESSAGE_SIZE];
        df__tds_strlcpy(msg, sizeof msg, err ? err->message : "");
        df_error_set(err, DF_ERR_MSSQL_CONNECT, "SQL Server client setup failed: %s", msg);
        df_error_set_subkind(err, DF_ERR_MSSQL_CLIENT_SETUP);
        k = DF_ERR_MSSQL_CONNECT;
    }
    if (k != DF_OK) {
        df_error_set_phase(err, "connect");
        df_mssql_close(c);
        return k;
    }
    *out = c;
    return DF_OK;
}

df_errkind df_mssql_connect_string(const char *conn_str, df_mssql_conn **out, df_error *err) {
    *out = NULL;
    df_mssql_conninfo *ci;
    DF_TRY(df_mssql_conninfo_parse(conn_str, &ci, err));
    df_errkind k = df_mssql_connect(ci, out, err);
    df_mssql_conninfo_free(ci);
    return k;
}

void df_mssql_close(df_mssql_conn *c) {
    if (!c) return;
    df__tds_io_free(c->io);
    df_mssql_conninfo_free(c->ci);
    wipe_req(c);
    df_buf_free(&c->req);
    df_buf_free(&c->msg);
    df_free(c);
}

void df_mssql_cancel(df_mssql_conn *c) {
    if (c) atomic_store(&c->cancel, 1);
}

void df_mssql_set_command_timeout(df_mssql_conn *c, uint32_t ms) { c->command_timeout_ms = ms; }
const char *df_mssql_current_database(const df_mssql_conn *c) { return c->database; }
uint32_t df_mssql_packet_size(const df_mssql_conn *c) { return df__tds_io_packet_size(c->io); }
bool df_mssql_in_transaction(const df_mssql_conn *c) { return c->in_txn; }
const char *df_mssql_encryption(const df_mssql_conn *c) { return c->encryption; }
const char *df_mssql_server_version(const df_mssql_conn *c) { return c->server_version; }
uint32_t df_mssql_tds_version(const df_mssql_conn *c) { return c->tds_version; }

/* ------------------------------------------------------------------------ */
/* Batches and transactions                                                  */

df_errkind df_mssql_query(df_mssql_conn *c, const char *sql, df_mssql_result **out, df_error *err) {
    *out = NULL;
    df_mssql_result *res = df_calloc(1, sizeof *res);
    if (!res) return DF_OOM(err);
    df__tds_resp resp;
    df__tds_resp_init(&resp, res);
    df_errkind k = df__mssql_run_batch(c, sql, &resp, err);
    res->rows_affected = resp.rows_affected;
    if (k == DF_OK && resp.nerrors) k = df__mssql_server_error(&resp, DF_ERR_MSSQL_SERVER_ERROR, err);
    if (k != DF_OK) {
        df_mssql_result_free(res);
        return k;
    }
    *out = res;
    return DF_OK;
}

df_errkind df_mssql_exec(df_mssql_conn *c, const char *sql, int64_t *rows_affected, df_error *err) {
    if (rows_affected) *rows_affected = -1;
    df__tds_resp resp;
    df__tds_resp_init(&resp, NULL);
    DF_TRY(df__mssql_run_batch(c, sql, &resp, err));
    if (resp.nerrors) return df__mssql_server_error(&resp, DF_ERR_MSSQL_SERVER_ERROR, err);
    if (rows_affected) *rows_affected = resp.rows_affected;
    return DF_OK;
}

df_errkind df_mssql_begin(df_mssql_conn *c, df_error *err) {
    DF_TRY(df_mssql_exec(c, "BEGIN TRANSACTION", NULL, err));
    if (!c->in_txn) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "the server did not report the new transaction");
    return DF_OK;
}

df_errkind df_mssql_commit(df_mssql_conn *c, df_error *err) {
    return df_mssql_exec(c, "COMMIT TRANSACTION", NULL, err);
}

df_errkind df_mssql_rollback(df_mssql_conn *c, df_error *err) {
    return df_mssql_exec(c, "ROLLBACK TRANSACTION", NULL, err);
}
