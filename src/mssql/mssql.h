/*
 * SQL Server client: connection strings, connect/login over TDS 7.4 (plain,
 * login-only TLS, full TLS, TDS 8.0 strict), SQL batches with result sets,
 * transactions, cancellation, and bulk load encoded straight from column
 * vectors (INSERT BULK + BULK_LOAD rows).
 *
 * The API is blocking; one connection is used by one thread at a time,
 * except df_mssql_cancel which any thread may call.  Secrets (the password)
 * stay inside df_mssql_conninfo / df_mssql_conn: they are never formatted
 * into errors and are wiped when the objects are freed.
 *
 * Errors: DF_ERR_MSSQL_CONNECTION_STRING (parse; the text is never echoed),
 * DF_ERR_MSSQL_CONNECT (subkind DF_ERR_MSSQL_TCP_CONNECT: TCP;
 * DF_ERR_MSSQL_CLIENT_SETUP: the server dropped or stalled during setup;
 * none: the server does not host the instance), DF_ERR_MSSQL_TLS
 * (handshake, certificate), DF_ERR_MSSQL_LOGIN (SQL Server refused the
 * login; number in code), DF_ERR_MSSQL_CONNECTION_LOST,
 * DF_ERR_MSSQL_SERVER_ERROR (number in df_error.code, "state/class/line" in
 * the message), DF_ERR_TDS_PROTOCOL (subkind DF_ERR_TDS_TRUNCATED when the
 * data ended early), DF_ERR_TIMEOUT, DF_ERR_CANCELLED,
 * DF_ERR_VALUE_CONVERSION (a value that the target column cannot hold;
 * column and row in the message, never the value; a value conversion
 * subkind says which way).  After CONNECTION_LOST, TLS, PROTOCOL or TIMEOUT
 * errors the connection is dead: every later call fails with
 * CONNECTION_LOST.  Decide by kind and subkind, never by message text.
 */
#ifndef DF_MSSQL_MSSQL_H
#define DF_MSSQL_MSSQL_H

#include "columnar/columnar.h"

/* ------------------------------------------------------------------------ */
/* Connection strings                                                        */

typedef enum df_mssql_encrypt {
    DF_MSSQL_ENCRYPT_LOGIN_ONLY = 0,    /* false/no/optional: TLS for LOGIN7 when the server has TLS, else none */
    DF_MSSQL_ENCRYPT_ON,                /* absent/true/yes/mandatory: TLS for the whole session, certificate
                                           validated; a server without TLS is refused */
    DF_MSSQL_ENCRYPT_STRICT,            /* strict: TDS 8.0, TLS before any TDS byte */
    DF_MSSQL_ENCRYPT_PLAINTEXT,         /* DANGER_PLAINTEXT: never TLS */
} df_mssql_encrypt;

typedef struct df_mssql_conninfo df_mssql_conninfo;

/*
 * Parses an ADO.NET-style string: `key=value` pairs separated by `;`, keys
 * case-insensitive (spaces and underscores ignored), values trimmed,
 * `{...}` or quoted values may contain `;`.  Keys (synonyms): server (data
 * source, address, addr, network address); uid (user id, user, username);
 * password (pwd); database (initial catalog, databasename); encrypt
 * (default mandatory); TrustServerCertificate; TrustServerCertificateCA;
 * HostNameInCertificate; Connect Timeout (connection timeout, timeout);
 * Command Timeout; Packet Size; Application Name (app); Workstation ID
 * (wsid); ApplicationIntent; Authentication (only SqlPassword);
 * IntegratedSecurity (trusted_connection: only false is accepted, Windows
 * authentication is not built).  Keys Microsoft's drivers know that have
 * no effect here (Pooling, MultipleActiveResultSets, ...) are accepted and
 * listed by df_mssql_conninfo_ignored_keys; any other key is refused.
 * Server syntax: [tcp:]host[,port] or host\instance (port 1434 is not
 * resolved: an instance needs an explicit port).
 * Returns DF_ERR_MSSQL_CONNECTION_STRING with a message naming the key
 * (never a value); *out is NULL then.
 */
df_errkind df_mssql_conninfo_parse(const char *text, df_mssql_conninfo **out, df_error *err);
/* Frees and wipes the secrets.  Accepts NULL. */
void df_mssql_conninfo_free(df_mssql_conninfo *ci);
/* Non-secret fields (borrowed, valid while ci lives). */
const char *df_mssql_conninfo_host(const df_mssql_conninfo *ci);
uint16_t df_mssql_conninfo_port(const df_mssql_conninfo *ci);
const char *df_mssql_conninfo_user(const df_mssql_conninfo *ci);
const char *df_mssql_conninfo_database(const df_mssql_conninfo *ci);   /* "" = server default */
df_mssql_encrypt df_mssql_conninfo_encrypt(const df_mssql_conninfo *ci);
bool df_mssql_conninfo_trust_server_certificate(const df_mssql_conninfo *ci);
uint32_t df_mssql_conninfo_connect_timeout_ms(const df_mssql_conninfo *ci);
/*
 * The accepted keys that have no effect, by display name ("Pooling, Max
 * Pool Size"; "" when none), for the caller to warn about.  Borrowed.
 */
const char *df_mssql_conninfo_ignored_keys(const df_mssql_conninfo *ci);

/* ------------------------------------------------------------------------ */
/* Connections                                                               */

typedef struct df_mssql_conn df_mssql_conn;

/*
 * Connects and logs in (TCP_NODELAY, connect timeout, PRELOGIN, TLS per
 * ci's encrypt setting, LOGIN7 with SQL authentication, packet size
 * negotiation).  The caller owns *out.  On failure *out is NULL.
 */
df_errkind df_mssql_connect(const df_mssql_conninfo *ci, df_mssql_conn **out, df_error *err);
/* Parses `conn_str` and connects; the parsed secrets are wiped before returning. */
df_errkind df_mssql_connect_string(const char *conn_str, df_mssql_conn **out, df_error *err);
/* Closes the socket and wipes secrets.  Accepts NULL. */
void df_mssql_close(df_mssql_conn *c);
/*
 * Requests cancellation of the running call from any thread: the call sends
 * an ATTENTION, drains to the server's acknowledgement and fails with
 * DF_ERR_CANCELLED (the connection stays usable when the server answered).
 */
void df_mssql_cancel(df_mssql_conn *c);
/* Read timeout for statements in ms (0 = none); default from Command Timeout (30 s). */
void df_mssql_set_command_timeout(df_mssql_conn *c, uint32_t ms);

/* Session facts (borrowed strings valid until the next call on c). */
const char *df_mssql_current_database(const df_mssql_conn *c);
uint32_t df_mssql_packet_size(const df_mssql_conn *c);
bool df_mssql_in_transaction(const df_mssql_conn *c);
/* "TLSv1.2"/"TLSv1.3" while TLS carries the session, "login-only" or "none". */
const char *df_mssql_encryption(const df_mssql_conn *c);
/* Server product version from LOGINACK ("15.0.2000") and TDS version (0x74000004). */
const char *df_mssql_server_version(const df_mssql_conn *c);
uint32_t df_mssql_tds_version(const df_mssql_conn *c);

/* ------------------------------------------------------------------------ */
/* SQL batches                                                               */

/* An informational message (INFO token) the server sent. */
typedef struct df_mssql_message {
    int32_t number;         /* SQL Server message number */
    uint8_t state;          /* state */
    uint8_t severity;       /* class (<= 10 for INFO) */
    char text[256];         /* message text, truncated */
} df_mssql_message;

/* Everything a batch returned. */
typedef struct df_mssql_result {
    int32_t nsets;          /* result sets (COLMETADATA + rows) */
    df_batch **sets;        /* owned; one batch per result set (may have 0 rows) */
    int64_t rows_affected;  /* sum of DONE counts outside result sets; -1 when none had a count */
    int32_t nmessages;      /* INFO tokens kept (at most 32) */
    df_mssql_message *messages; /* owned */
    int32_t return_status;  /* last RETURNSTATUS, 0 if none */
} df_mssql_result;

/*
 * Runs a SQL batch and collects every result set as a df_batch.  Column
 * types: bit → bool; tinyint → uint8; smallint/int/bigint → int16/32/64;
 * real/float → float32/64; decimal/numeric(p,s) → decimal128(p,s);
 * money/smallmoney → decimal128(19,4)/(10,4); date → date32; time(n) →
 * time64(ns); datetime2(n)/datetime/smalldatetime → timestamp(µs) (the
 * 100 ns digit of scale 7 is dropped: the type must cover 0001..9999);
 * datetimeoffset(n) → timestamp(µs, "UTC");
 * uniqueidentifier → utf8 (upper-case text); char/varchar/text (code page
 * 1252 or UTF-8 collations) and nchar/nvarchar/ntext/xml/json → utf8;
 * binary/varbinary/image → binary.  Column names are the result's names
 * ("" for unnamed columns).  A server error fails the call with
 * DF_ERR_MSSQL_SERVER_ERROR (the first error's number) after the response
 * has been read completely, so the connection stays usable.
 */
df_errkind df_mssql_query(df_mssql_conn *c, const char *sql, df_mssql_result **out, df_error *err);
void df_mssql_result_free(df_mssql_result *r);
/* Runs a batch and discards result rows; *rows_affected as in df_mssql_result (may be NULL). */
df_errkind df_mssql_exec(df_mssql_conn *c, const char *sql, int64_t *rows_affected, df_error *err);

/* Transactions (BEGIN TRANSACTION / COMMIT / ROLLBACK; the descriptor from ENVCHANGE goes into later batches). */
df_errkind df_mssql_begin(df_mssql_conn *c, df_error *err);
df_errkind df_mssql_commit(df_mssql_conn *c, df_error *err);
df_errkind df_mssql_rollback(df_mssql_conn *c, df_error *err);

/* ------------------------------------------------------------------------ */
/* Target column types and bulk load                                         */

typedef enum df_mssql_sqltype {
    DF_MSSQL_BIT = 1,
    DF_MSSQL_TINYINT,
    DF_MSSQL_SMALLINT,
    DF_MSSQL_INT,
    DF_MSSQL_BIGINT,
    DF_MSSQL_REAL,
    DF_MSSQL_FLOAT,
    DF_MSSQL_DECIMAL,
    DF_MSSQL_NUMERIC,
    DF_MSSQL_MONEY,
    DF_MSSQL_SMALLMONEY,
    DF_MSSQL_DATE,
    DF_MSSQL_TIME,
    DF_MSSQL_DATETIME2,
    DF_MSSQL_DATETIMEOFFSET,
    DF_MSSQL_DATETIME,
    DF_MSSQL_SMALLDATETIME,
    DF_MSSQL_UNIQUEIDENTIFIER,
    DF_MSSQL_CHAR,
    DF_MSSQL_VARCHAR,
    DF_MSSQL_NCHAR,
    DF_MSSQL_NVARCHAR,
    DF_MSSQL_BINARY,
    DF_MSSQL_VARBINARY,
} df_mssql_sqltype;

/* One target column of a bulk load (or of a CREATE TABLE). */
typedef struct df_mssql_column {
    const char *name;           /* column name (borrowed) */
    df_mssql_sqltype type;
    int32_t length;             /* char/varchar/binary/varbinary: bytes; nchar/nvarchar: characters; -1 = max */
    uint8_t precision;          /* decimal/numeric 1..38 */
    uint8_t scale;              /* decimal/numeric 0..p; time/datetime2/datetimeoffset 0..7 */
    bool nullable;              /* NULL allowed */
    bool has_collation;         /* char types: collation below, else SQL_Latin1_General_CP1_CI_AS */
    uint8_t collation[5];       /* TDS collation bytes */
} df_mssql_column;

/*
 * Parses a SQL Server type text ("nvarchar(50)", "decimal(38, 4)",
 * "datetime2", "varbinary(max)", "float(24)") into col (name and
 * nullability untouched).  Defaults follow SQL Server: decimal → (18,0),
 * time-family scale 7, char/binary length 1, float → float(53).
 */
df_errkind df_mssql_type_parse(const char *text, df_mssql_column *col, df_error *err);
/* Renders "nvarchar(max)", "decimal(10,2)", "datetime2(7)" into out. */
df_errkind df_mssql_type_render(const df_mssql_column *col, df_buf *out, df_error *err);

/* How sub-100 ns parts of nanosecond sources are handled (datetime2, time and datetimeoffset keep 100 ns units). */
typedef enum df_mssql_nanos_policy {
    DF_MSSQL_NANOS_REJECT = 0,  /* remainder → DF_ERR_VALUE_CONVERSION */
    DF_MSSQL_NANOS_TRUNCATE,    /* floor to 100 ns */
    DF_MSSQL_NANOS_ROUND,       /* half up on the Euclidean remainder */
} df_mssql_nanos_policy;

typedef struct df_mssql_bulk_options {
    bool tablock;               /* WITH (TABLOCK) */
    bool check_constraints;     /* CHECK_CONSTRAINTS */
    bool fire_triggers;         /* FIRE_TRIGGERS */
    bool keep_nulls;            /* KEEP_NULLS */
    int64_t rows_per_batch;     /* ROWS_PER_BATCH hint, 0 = none */
    int64_t kilobytes_per_batch;/* KILOBYTES_PER_BATCH hint, 0 = none */
    const char *order;          /* ORDER (...) body, e.g. "[id] ASC", or NULL */
    df_mssql_nanos_policy nanos;/* nanosecond sources */
} df_mssql_bulk_options;

typedef struct df_mssql_bulk df_mssql_bulk;

/*
 * Starts a bulk load into `table` (already quoted, e.g. "[dbo].[t]"): sends
 * INSERT BULK with the column list and options, checks the server accepted
 * it, and opens the BULK_LOAD message with its COLMETADATA.  `cols` is
 * copied.  While the bulk is open the connection accepts no other call.
 */
df_errkind df_mssql_bulk_begin(df_mssql_conn *c, const char *table, const df_mssql_column *cols, int32_t ncols,
                               const df_mssql_bulk_options *opts, df_mssql_bulk **out, df_error *err);
/*
 * Encodes every row of `batch` (column i → target column i; ncols must
 * match) and queues the encoded rows for the bulk's sender thread, which
 * writes them while the caller prepares the next batch (at most two
 * encoded batches wait; the call blocks while both are pending).  The
 * batch is no longer needed when the call returns.  A send failure of an
 * earlier batch (CONNECTION_LOST, TIMEOUT, ... or the server's error when
 * it answered before closing) is returned by the next call or by
 * df_mssql_bulk_finish.  Source types are converted by these rules:
 * integers widen with range checks, decimals rescale exactly, timestamps
 * convert by unit and time zone, UTF-8 → UTF-16 for n-types, ASCII-only
 * for varchar without a UTF-8 collation.  A value
 * that does not fit fails with DF_ERR_VALUE_CONVERSION before any byte of
 * that batch is sent; the bulk stays open (abort it).
 */
df_errkind df_mssql_bulk_write(df_mssql_bulk *b, df_batch *batch, df_error *err);
/*
 * Ends the stream (DONE + EOM) and reads the server's answer: *rows = rows
 * the server reports inserted.  Always frees b.
 */
df_errkind df_mssql_bulk_finish(df_mssql_bulk *b, int64_t *rows, df_error *err);
/* Abandons the load (IGNORE packet; the server discards the rows) and frees b.  Accepts NULL. */
void df_mssql_bulk_abort(df_mssql_bulk *b);
/*
 * Abandons the load without telling the server and frees b: the connection
 * is shut down at once and is dead afterwards (the server discards the
 * partial load and rolls back the session's transaction when it sees the
 * connection go).  For cancels: ending the stream politely makes the
 * server read every row still buffered in the sockets first, which can take
 * seconds.  Accepts NULL.
 */
void df_mssql_bulk_discard(df_mssql_bulk *b);
/*
 * Shuts the connection's socket down, from any thread, without waiting:
 * calls blocked on it (a bulk load's sends) fail at once and the
 * connection is unusable afterwards; closing it then resets it instead of
 * sending what is still queued.  For cancels.  Accepts NULL.
 */
void df_mssql_shutdown(df_mssql_conn *c);
/* Rows and payload bytes encoded so far (COLMETADATA included; queued bytes count). */
int64_t df_mssql_bulk_rows(const df_mssql_bulk *b);
uint64_t df_mssql_bulk_bytes(const df_mssql_bulk *b);

/* ------------------------------------------------------------------------ */
/* Token stream (exposed for tests and the fuzz target)                      */

/*
 * Parses one complete server response message (a token stream) the way
 * df_mssql_query does, without a connection: builds result batches into
 * *out.  Server errors in the stream are reported as
 * DF_ERR_MSSQL_SERVER_ERROR after the whole stream parsed.
 */
df_errkind df_mssql_parse_response(const uint8_t *data, size_t len, df_mssql_result **out, df_error *err);

#endif
