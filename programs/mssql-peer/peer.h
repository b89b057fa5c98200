/*
 * mssql-peer: a loopback SQL Server stand-in that speaks real TDS 7.4 (and
 * TDS 8.0 strict) and stores tables in SQLite.  Test-only; see
 * docs/mssql-peer.md.
 *
 * Layers: transport (src/mssql/tds_io.c, server role) → connection state
 * machine (peer_conn.c: PRELOGIN, TLS, LOGIN7, dispatch, attention) → SQL
 * mini-interpreter (peer_sql.c) and bulk decoder (peer_bulk.c) → SQLite
 * store and catalog (peer_store.c).  Replies are token streams built by
 * peer_reply.c.
 */
#ifndef DF_PEER_H
#define DF_PEER_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdatomic.h>

#include "mssql/mssql.h"
#include "mssql/tds.h"

/* TLS policy of the peer (what PRELOGIN ENCRYPTION answers). */
typedef enum peer_tls_mode {
    PEER_TLS_OPTIONAL = 0,  /* certificate, not forced: login-only possible (SQL Server's default) */
    PEER_TLS_OFF,           /* no TLS at all: ENCRYPT_NOT_SUP */
    PEER_TLS_REQUIRED,      /* forced encryption */
    PEER_TLS_STRICT,        /* TDS 8.0 only; 7.x PRELOGIN is refused */
} peer_tls_mode;

/* A statement-failure rule: the next statement containing `pattern` fails with `number`. */
typedef struct peer_fail_rule {
    char *pattern;          /* case-insensitive substring (owned) */
    int32_t number;         /* SQL Server error number to send */
    _Atomic int remaining;  /* times left to fire (-1 = always) */
} peer_fail_rule;

/* Process-wide configuration; read-only after startup except the atomics. */
typedef struct peer_config {
    char host[64];              /* listen address */
    int port;                   /* 0 = pick a free port */
    int nlogins;                /* accepted logins */
    char **users, **passwords;  /* owned arrays */
    int ndatabases;             /* database names accepted at login (besides master/tempdb) */
    char **databases;           /* owned */
    char *db_path;              /* SQLite file (created/removed by us when temp) */
    bool db_temp;               /* remove db_path at exit */
    peer_tls_mode tls;          /* encryption policy */
    char *cert_file, *key_file; /* PEM paths for TLS */
    bool cert_temp;             /* generated at startup: remove at exit */
    bool tls13_in_7x;           /* fault: allow TLS 1.3 in the wrapped handshake */
    bool discard;               /* bulk rows are decoded and counted, not stored */
    uint32_t force_packet_size; /* answer this packet size (0 = echo the client's) */
    bool nbcrow;                /* encode result rows with NULLs as NBCROW */
    uint32_t reply_packet_size; /* split replies into packets of this size (0 = negotiated) */
    FILE *trace;                /* statement and packet trace, or NULL */
    pthread_mutex_t trace_lock; /* serialises trace lines */
    /* fault injection */
    int64_t drop_after_rows;    /* close the socket after this many bulk rows (-1 off) */
    int64_t drop_after_bytes;   /* close after this many bulk payload bytes (-1 off) */
    int64_t error_after_rows;   /* send an error after this many bulk rows (-1 off) */
    int32_t error_number;       /* error number for error_after_rows (4815) */
    bool error_close;           /* reply to a failed bulk load at once and close, without draining it */
    int nfail_rules;            /* statement failure rules */
    peer_fail_rule *fail_rules; /* owned */
    uint32_t delay_ms;          /* delay before every reply */
    uint32_t login_delay_ms;    /* delay before the login reply */
    bool refuse_logins;         /* every login fails with 18456 */
    bool drop_after_login7;     /* close right after reading LOGIN7 */
    bool faults_once;           /* bulk faults fire once per process (default) */
    _Atomic int bulk_fault_used;/* a once-only bulk fault already fired */
    _Atomic int next_spid;      /* session ids */
    pthread_mutex_t applock_mu; /* guards the application locks below */
    int napplocks;              /* held application locks */
    struct peer_applock {
        char resource[256];     /* sp_getapplock @Resource */
        int spid;               /* holder */
        bool txn_owner;         /* released at the end of the holder's transaction */
    } applocks[64];
    _Atomic int64_t bulk_rows_total; /* rows decoded by all bulk loads (discard mode statistics) */
} peer_config;

/* Per-table facts the bulk decoder and result encoder need. */
typedef struct peer_column {
    char name[129];             /* column name */
    df_mssql_column type;       /* parsed declared type (name field unused) */
    bool nullable;              /* NULL allowed */
    bool identity;              /* IDENTITY column */
    bool has_default;           /* DEFAULT present */
} peer_column;

/* One TDS session. */
typedef struct peer_conn {
    peer_config *cfg;           /* shared configuration */
    df__tds_io *io;             /* transport */
    sqlite3 *db;                /* this session's SQLite handle */
    int spid;                   /* session id */
    char user[129];             /* login name */
    char database[129];         /* current database name */
    uint32_t packet_size;       /* negotiated */
    int trancount;              /* @@TRANCOUNT */
    bool sqlite_txn;            /* a SQLite write transaction backs the open TDS transaction */
    uint8_t txn[8];             /* current transaction descriptor */
    uint64_t txn_seq;           /* descriptor generator */
    bool fmtonly;               /* SET FMTONLY ON */
    bool xact_abort;            /* SET XACT_ABORT ON */
    bool nocount;               /* SET NOCOUNT ON */
    int64_t last_rowcount;      /* @@ROWCOUNT */
    /* pending INSERT BULK */
    bool bulk_pending;          /* the next message must be BULK_LOAD */
    char bulk_table[300];       /* SQLite table name "schema.table" */
    char bulk_display[400];     /* name for messages "db.schema.table" */
    int bulk_ncols;             /* columns listed by INSERT BULK */
    peer_column *bulk_cols;     /* table facts for them (owned) */
    bool bulk_keep_nulls;       /* KEEP_NULLS option */
    df_buf reply;               /* reply token stream being built */
    df_buf msg;                 /* request message */
    bool closing;               /* close after the reply */
    int64_t tls_requests;       /* requests after the login that arrived through TLS ... */
    int64_t plain_requests;     /* ... and in plaintext (traced at the end: tests check what was encrypted) */
    bool in_rpc;                /* statement DONEs become DONEINPROC (inside an RPC) */
    int nparams;                /* sp_executesql parameters bound for the running batch */
    char **param_names;         /* "@P1" ... (owned while the RPC runs) */
    char **param_sql;           /* their values as SQLite literals */
} peer_conn;

/* ---- peer_cert.c: writes a fresh self-signed certificate and key as PEM files ---- */
df_errkind peer_cert_generate(const char *cert_path, const char *key_path, df_error *err);

/* ---- peer_reply.c: token writers (all append to c->reply) ---- */
void peer_reply_reset(peer_conn *c);
df_errkind peer_done(peer_conn *c, uint8_t token, uint16_t status, uint16_t curcmd, uint64_t rows);
df_errkind peer_error(peer_conn *c, uint8_t token, int32_t number, uint8_t state, uint8_t cls, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
df_errkind peer_envchange_str(peer_conn *c, uint8_t type, const char *newv, const char *oldv);
df_errkind peer_envchange_bytes(peer_conn *c, uint8_t type, const uint8_t *newv, uint8_t nlen, const uint8_t *oldv, uint8_t olen);
df_errkind peer_loginack(peer_conn *c, uint32_t tds_version);
df_errkind peer_returnstatus(peer_conn *c, int32_t status);
/* Sends the reply (honouring the reply packet size and delay faults); resets it. */
df_errkind peer_flush(peer_conn *c, df_error *err);

/* ---- peer_store.c: SQLite catalog ---- */
/* Opens a handle on the store; `create` builds the catalog (main thread, before sessions). */
df_errkind peer_store_open(peer_config *cfg, bool create, sqlite3 **out, df_error *err);
/* Registers SQL functions (OBJECT_ID, DB_NAME, ...) on a handle. */
void peer_store_functions(sqlite3 *db, peer_conn *c);
/* Splits "a.b.c" style names; resolves a T-SQL table name into the SQLite name "schema.table". */
bool peer_store_table_exists(sqlite3 *db, const char *sqlite_name);
/* Loads the columns of a table (SQLite name); *out owned by the caller. */
df_errkind peer_store_columns(sqlite3 *db, const char *sqlite_name, peer_column **out, int *n, df_error *err);
/* Creates a table and its catalog rows. */
df_errkind peer_store_create_table(sqlite3 *db, const char *schema, const char *table, const peer_column *cols, int n,
                                   df_error *err);
df_errkind peer_store_drop_table(sqlite3 *db, const char *sqlite_name, df_error *err);
df_errkind peer_store_rename_table(sqlite3 *db, const char *sqlite_name, const char *new_table, df_error *err);
df_errkind peer_store_create_schema(sqlite3 *db, const char *schema, df_error *err);
bool peer_store_schema_exists(sqlite3 *db, const char *schema);
df_errkind peer_store_set_table_lock(sqlite3 *db, const char *sqlite_name, bool on, df_error *err);
/* Runs a plain SQLite statement; errors become DF_ERR_EXECUTION. */
df_errkind peer_store_exec(sqlite3 *db, const char *sql, df_error *err);

/* ---- value text forms stored in SQLite ---- */
/* Formats a decoded value for storage into `out` per declared target type; *is_blob etc. */
df_errkind peer_value_to_sqlite(sqlite3_stmt *st, int idx, const df__tds_typeinfo *ti, const df__tds_value *v,
                                const peer_column *target, df_buf *tmp, const char **why);
/* Encodes one SQLite result value for a declared column type into the reply. */
df_errkind peer_encode_value(df_buf *out, const df__tds_typeinfo *ti, sqlite3_stmt *st, int idx, df_error *err);
/* TYPE_INFO used for a declared type in results. */
void peer_result_typeinfo(const df_mssql_column *col, bool nullable, df__tds_typeinfo *ti);

/* ---- peer_sql.c ---- */
/*
 * Starts the SQLite write transaction of an open TDS transaction before its
 * first write (reads inside a TDS transaction stay autocommit, so a session
 * that keeps a transaction open, as ODBC does, never blocks other writers).
 */
df_errkind peer_txn_before_write(peer_conn *c, df_error *err);
/* Executes a SQL batch (UTF-8 text); replies are appended to c->reply. */
df_errkind peer_sql_batch(peer_conn *c, const char *sql, df_error *err);

/* ---- peer_bulk.c ---- */
/*
 * Decodes a BULK_LOAD message read packet by packet from the connection
 * (the first packet's payload is in `first`), inserting rows into the
 * pending table (or counting them in discard mode), and replies.
 */
df_errkind peer_bulk_load(peer_conn *c, uint8_t first_status, df_error *err);

/* ---- peer_conn.c ---- */
void *peer_conn_thread(void *arg);   /* arg: heap peer_accept (see peer_main.c) */
/* Releases the application locks of a session (all, or only transaction-owned ones). */
void peer_applocks_release(peer_config *cfg, int spid, bool txn_only);

typedef struct peer_accept {
    peer_config *cfg;           /* shared configuration */
    int fd;                     /* accepted socket */
} peer_accept;

/* Trace helper (no-op without --trace). */
void peer_trace(peer_config *cfg, int spid, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
