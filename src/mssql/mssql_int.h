/*
 * Private structures of the SQL Server client (src/mssql).
 */
#ifndef DF_MSSQL_MSSQL_INT_H
#define DF_MSSQL_MSSQL_INT_H

#include "mssql/mssql.h"
#include "mssql/tds.h"

struct df_mssql_conninfo {
    char *host;                 /* host name or address */
    char *instance;             /* named instance or NULL */
    uint16_t port;              /* TCP port */
    char *user;                 /* SQL login ("" = none) */
    char *password;             /* secret: wiped on free */
    char *database;             /* initial database ("" = server default) */
    char *app_name;             /* APP_NAME() or NULL */
    char *ca_file;              /* TrustServerCertificateCA or NULL */
    char *host_in_cert;         /* HostNameInCertificate or NULL */
    char *workstation;          /* Workstation ID (LOGIN7 host name) or NULL = this host's name */
    char ignored[256];          /* display names of accepted keys without effect, ", "-separated ("" = none) */
    df_mssql_encrypt encrypt;   /* TLS policy */
    bool trust_cert;            /* skip certificate validation */
    bool read_only;             /* ApplicationIntent=ReadOnly */
    uint32_t connect_timeout_ms;/* TCP connect + login */
    uint32_t command_timeout_ms;/* each statement's reads */
    uint32_t packet_size;       /* requested packet size */
};

/* What one response message said, filled by df__tds_parse_tokens. */
typedef struct df__tds_resp {
    /* errors */
    int32_t nerrors;            /* ERROR tokens seen */
    int32_t err_number;         /* first error */
    uint8_t err_state, err_class;
    int32_t err_line;
    char err_text[320];
    /* login */
    bool loginack;              /* LOGINACK seen */
    uint32_t tds_version;       /* from LOGINACK (big-endian read) */
    char server_version[32];    /* "major.minor.build" */
    /* environment changes (latest of each kind) */
    bool env_db;                /* new database name below */
    char database[129];
    uint32_t env_packet_size;   /* 0 = none */
    bool env_collation;
    uint8_t collation[5];
    int env_txn;                /* 0 none, 8 begin, 9 commit, 10 rollback, 17 ended */
    uint8_t txn[8];             /* descriptor from ENVCHANGE 8 */
    /* completion */
    bool done_final;            /* a DONE/DONEPROC without MORE arrived */
    bool attn_ack;              /* a DONE with ATTN arrived */
    int64_t rows_affected;      /* sum of DONE counts outside results; -1 none */
    int32_t return_status;
    /* results; NULL when the caller does not want rows */
    df_mssql_result *result;
    int32_t max_messages;       /* INFO tokens to keep */
} df__tds_resp;

/*
 * Walks a complete token stream.  Fails with DF_ERR_TDS_PROTOCOL on
 * malformed or unknown tokens (fail closed), DF_ERR_OUT_OF_MEMORY or
 * DF_ERR_VALUE_CONVERSION (a result value our column types cannot hold).
 * SQL errors are recorded in resp, not returned.
 */
df_errkind df__tds_parse_tokens(const uint8_t *p, size_t n, df__tds_resp *resp, df_error *err);
void df__tds_resp_init(df__tds_resp *resp, df_mssql_result *result);

struct df_mssql_conn {
    df__tds_io *io;             /* transport (owned) */
    df_mssql_conninfo *ci;      /* copy of the settings; password wiped after login */
    _Atomic int cancel;         /* set by df_mssql_cancel */
    uint32_t command_timeout_ms;/* read timeout for statements */
    bool dead;                  /* transport failed: every call fails */
    bool bulk_open;             /* a bulk load owns the connection */
    bool login_only;            /* TLS was dropped after LOGIN7 */
    bool in_txn;                /* inside BEGIN TRANSACTION */
    uint8_t txn[8];             /* transaction descriptor for ALL_HEADERS */
    uint8_t collation[5];       /* server default collation */
    uint32_t tds_version;       /* negotiated */
    char database[129];         /* current database */
    char server_version[32];    /* from LOGINACK */
    char encryption[16];        /* "TLSv1.2", "login-only", "none" */
    df_buf msg;                 /* response message buffer (reused) */
    df_buf req;                 /* request building buffer (reused) */
};

/* Sends a SQL batch and reads the whole response into resp (helpers of client.c). */
df_errkind df__mssql_run_batch(df_mssql_conn *c, const char *sql, df__tds_resp *resp, df_error *err);
/* Reads one response message and parses it, handling cancel/timeouts with ATTENTION. */
df_errkind df__mssql_read_response(df_mssql_conn *c, df__tds_resp *resp, df_error *err);
/* Turns a recorded SQL error into DF_ERR_MSSQL_SERVER_ERROR (or `kind`). */
df_errkind df__mssql_server_error(const df__tds_resp *resp, df_errkind kind, df_error *err);
/* Applies ENVCHANGE facts (database, transaction) to the connection. */
void df__mssql_apply_env(df_mssql_conn *c, const df__tds_resp *resp);
/* Marks the connection dead when `k` means the transport can no longer be trusted. */
df_errkind df__mssql_check_dead(df_mssql_conn *c, df_errkind k);
/* Wipes and frees a secret string (accepts NULL). */
void df__mssql_free_secret(char *s);

/* Bulk metadata: TYPE_INFO for a target column. */
df_errkind df__mssql_column_typeinfo(const df_mssql_column *col, df__tds_typeinfo *ti, df_error *err);

/* The default collation SQL_Latin1_General_CP1_CI_AS. */
extern const uint8_t df__mssql_default_collation[5];

#endif
