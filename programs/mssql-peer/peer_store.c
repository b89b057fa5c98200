/*
 * SQLite storage of the peer: the catalog (sys.schemas, sys.tables,
 * sys.columns, sys.types, INFORMATION_SCHEMA.COLUMNS/TABLES kept as real
 * tables named "schema.name"), user tables named "schema.table", SQL
 * functions the mini-interpreter needs, and the conversions between TDS
 * values and the stored forms.
 *
 * Stored forms: integers and bit as INTEGER; real/float as REAL;
 * decimal/numeric/money as canonical text with exactly `scale` digits;
 * date/time types as ISO text ("2024-02-29 12:34:56.7890000", offsets as
 * " +05:30", datetime with milliseconds like SQL Server displays them);
 * uniqueidentifier as upper-case text; character types as UTF-8 text;
 * binary types as BLOB.  Every SQLite column is declared as "<affinity>
 * <SQL Server type>" (e.g. "TEXT decimal(10,2)", "TEXT nvarchar(-1)" for
 * max) so sqlite3_column_decltype tells the result encoder the declared
 * SQL Server type while the affinity keeps the stored form unchanged.
 */
#include "peer.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mssql/mssql_int.h"

static const char *catalog_sql =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE IF NOT EXISTS \"__peer_meta\"(key TEXT PRIMARY KEY, value INTEGER);"
    "INSERT OR IGNORE INTO \"__peer_meta\" VALUES ('next_object_id', 1000000);"
    "CREATE TABLE IF NOT EXISTS \"sys.schemas\"(schema_id INT int PRIMARY KEY, name TEXT sysname, principal_id INT int);"
    "INSERT OR IGNORE INTO \"sys.schemas\" VALUES (1,'dbo',1),(2,'guest',2),(3,'INFORMATION_SCHEMA',3),(4,'sys',4);"
    "CREATE TABLE IF NOT EXISTS \"sys.tables\"(object_id INT int PRIMARY KEY, name TEXT sysname, schema_id INT int,"
    " principal_id INT int, type TEXT char(2), type_desc TEXT nvarchar(60), lock_on_bulk_load INT bit,"
    " is_ms_shipped INT bit, create_date TEXT datetime, modify_date TEXT datetime);"
    "CREATE VIEW IF NOT EXISTS \"sys.objects\" AS SELECT object_id, name, schema_id, principal_id, type, type_desc,"
    " is_ms_shipped, create_date, modify_date FROM \"sys.tables\";"
    "CREATE TABLE IF NOT EXISTS \"sys.columns\"(object_id INT int, name TEXT sysname, column_id INT int,"
    " system_type_id INT tinyint, user_type_id INT int, max_length INT smallint, precision INT tinyint,"
    " scale INT tinyint, collation_name TEXT sysname, is_nullable INT bit, is_identity INT bit,"
    " is_computed INT bit, default_object_id INT int);"
    "CREATE TABLE IF NOT EXISTS \"sys.types\"(name TEXT sysname, system_type_id INT tinyint, user_type_id INT int,"
    " schema_id INT int, max_length INT smallint, precision INT tinyint, scale INT tinyint,"
    " collation_name TEXT sysname, is_nullable INT bit, is_user_defined INT bit);"
    "CREATE TABLE IF NOT EXISTS \"INFORMATION_SCHEMA.TABLES\"(TABLE_CATALOG TEXT nvarchar(128),"
    " TABLE_SCHEMA TEXT nvarchar(128), TABLE_NAME TEXT sysname, TABLE_TYPE TEXT varchar(10));"
    "CREATE TABLE IF NOT EXISTS \"INFORMATION_SCHEMA.COLUMNS\"(TABLE_CATALOG TEXT nvarchar(128),"
    " TABLE_SCHEMA TEXT nvarchar(128), TABLE_NAME TEXT sysname, COLUMN_NAME TEXT sysname,"
    " ORDINAL_POSITION INT int, COLUMN_DEFAULT TEXT nvarchar(4000), IS_NULLABLE TEXT varchar(3),"
    " DATA_TYPE TEXT nvarchar(128), CHARACTER_MAXIMUM_LENGTH INT int, CHARACTER_OCTET_LENGTH INT int,"
    " NUMERIC_PRECISION INT tinyint, NUMERIC_PRECISION_RADIX INT smallint, NUMERIC_SCALE INT int,"
    " DATETIME_PRECISION INT smallint, CHARACTER_SET_NAME TEXT nvarchar(128), COLLATION_NAME TEXT nvarchar(128));";

/* System type ids, max_length, precision, scale as sys.types reports them. */
static const struct {
    const char *name;
    int id, max_length, precision, scale;
    bool collation;
} systypes[] = {
    {"bit", 104, 1, 1, 0, false}, {"tinyint", 48, 1, 3, 0, false}, {"smallint", 52, 2, 5, 0, false},
    {"int", 56, 4, 10, 0, false}, {"bigint", 127, 8, 19, 0, false}, {"real", 59, 4, 24, 0, false},
    {"float", 62, 8, 53, 0, false}, {"decimal", 106, 17, 38, 38, false}, {"numeric", 108, 17, 38, 38, false},
    {"money", 60, 8, 19, 4, false}, {"smallmoney", 122, 4, 10, 4, false}, {"date", 40, 3, 10, 0, false},
    {"time", 41, 5, 16, 7, false}, {"datetime2", 42, 8, 27, 7, false}, {"datetimeoffset", 43, 10, 34, 7, false},
    {"datetime", 61, 8, 23, 3, false}, {"smalldatetime", 58, 4, 16, 0, false},
    {"uniqueidentifier", 36, 16, 0, 0, false}, {"char", 175, 8000, 0, 0, true}, {"varchar", 167, 8000, 0, 0, true},
    {"nchar", 239, 8000, 0, 0, true}, {"nvarchar", 231, 8000, 0, 0, true}, {"binary", 173, 8000, 0, 0, false},
    {"varbinary", 165, 8000, 0, 0, false}, {"sysname", 231, 256, 0, 0, true},
};

static int systype_index(const char *name) {
    for (size_t i = 0; i < DF_ARRAY_LEN(systypes); i++)
        if (!df_ascii_casecmp(systypes[i].name, name)) return (int)i;
    return -1;
}

static df_errkind sqlite_fail(sqlite3 *db, df_error *err) {
    return df_error_set(err, DF_ERR_EXECUTION, "%s", sqlite3_errmsg(db));
}

df_errkind peer_store_exec(sqlite3 *db, const char *sql, df_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        df_error_set(err, DF_ERR_EXECUTION, "%s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return DF_ERR_EXECUTION;
    }
    return DF_OK;
}

/* Creates the catalog (once, from the main thread before any session starts). */
static df_errkind create_catalog(sqlite3 *db, df_error *err) {
    DF_TRY(peer_store_exec(db, catalog_sql, err));
    sqlite3_stmt *st = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM \"sys.types\"", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (n > 0) return DF_OK;
    DF_TRY(peer_store_exec(db, "BEGIN", err));
    for (size_t i = 0; i < DF_ARRAY_LEN(systypes); i++) {
        char q[512];
        snprintf(q, sizeof q, "INSERT INTO \"sys.types\" VALUES ('%s', %d, %d, 4, %d, %d, %d, %s, 1, 0)",
                 systypes[i].name, systypes[i].id, !strcmp(systypes[i].name, "sysname") ? 256 : systypes[i].id,
                 systypes[i].max_length, systypes[i].precision, systypes[i].scale,
                 systypes[i].collation ? "'SQL_Latin1_General_CP1_CI_AS'" : "NULL");
        DF_TRY(peer_store_exec(db, q, err));
    }
    return peer_store_exec(db, "COMMIT", err);
}

df_errkind peer_store_open(peer_config *cfg, bool create, sqlite3 **out, df_error *err) {
    *out = NULL;
    sqlite3 *db;
    if (sqlite3_open_v2(cfg->db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        df_error_set(err, DF_ERR_IO, "cannot open the SQLite store: %s", db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return DF_ERR_IO;
    }
    sqlite3_busy_timeout(db, 10000);
    /* WAL: a session holding a read transaction open (ODBC autocommit off) does not block writers. */
    df_errkind k = peer_store_exec(db, "PRAGMA synchronous=OFF;", err);
    if (k == DF_OK && create) k = create_catalog(db, err);
    if (k != DF_OK) {
        sqlite3_close(db);
        return k;
    }
    *out = db;
    return DF_OK;
}

bool peer_store_table_exists(sqlite3 *db, const char *sqlite_name) {
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?1 COLLATE NOCASE", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sqlite_name, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

bool peer_store_schema_exists(sqlite3 *db, const char *schema) {
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM \"sys.schemas\" WHERE name = ?1 COLLATE NOCASE", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, schema, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* Parses a declared SQLite type "AFF sqltype(-1)" back into a column type. */
static bool parse_decltype(const char *decl, df_mssql_column *col) {
    if (!decl) return false;
    const char *sp = strchr(decl, ' ');
    if (!sp) return false;
    char t[128];
    size_t o = 0;
    for (const char *p = sp + 1; *p && o + 5 < sizeof t; p++) {
        if (p[0] == '-' && p[1] == '1') {
            memcpy(t + o, "max", 3);
            o += 3;
            p++;
            continue;
        }
        t[o++] = *p;
    }
    t[o] = '\0';
    memset(col, 0, sizeof *col);
    return df_mssql_type_parse(t, col, NULL) == DF_OK;
}

df_errkind peer_store_columns(sqlite3 *db, const char *sqlite_name, peer_column **out, int *n, df_error *err) {
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    const char *q =
        "SELECT c.name, c.is_nullable, c.is_identity, c.default_object_id, t.object_id FROM \"sys.columns\" c"
        " JOIN \"sys.tables\" t ON t.object_id = c.object_id JOIN \"sys.schemas\" s ON s.schema_id = t.schema_id"
        " WHERE (s.name || '.' || t.name) = ?1 COLLATE NOCASE ORDER BY c.column_id";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return sqlite_fail(db, err);
    sqlite3_bind_text(st, 1, sqlite_name, -1, SQLITE_TRANSIENT);
    peer_column *cols = NULL;
    int cnt = 0;
    df_errkind k = DF_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        peer_column *nc = df_realloc(cols, sizeof *cols * (size_t)(cnt + 1));
        if (!nc) { k = DF_OOM(err); break; }
        cols = nc;
        peer_column *c = &cols[cnt++];
        memset(c, 0, sizeof *c);
        df__tds_strlcpy(c->name, sizeof c->name, (const char *)sqlite3_column_text(st, 0));
        c->nullable = sqlite3_column_int(st, 1) != 0;
        c->identity = sqlite3_column_int(st, 2) != 0;
        c->has_default = sqlite3_column_int(st, 3) != 0;
    }
    sqlite3_finalize(st);
    /* Declared types come from the SQLite table definition. */
    for (int i = 0; k == DF_OK && i < cnt; i++) {
        const char *decl = NULL;
        if (sqlite3_table_column_metadata(db, NULL, sqlite_name, cols[i].name, &decl, NULL, NULL, NULL, NULL) != SQLITE_OK ||
            !parse_decltype(decl, &cols[i].type))
            k = df_error_set(err, DF_ERR_INTERNAL, "catalog and table disagree for column %s", cols[i].name);
        cols[i].type.nullable = cols[i].nullable;
    }
    if (k != DF_OK) {
        df_free(cols);
        return k;
    }
    *out = cols;
    *n = cnt;
    return DF_OK;
}

/* Quotes an identifier for SQLite. */
static df_errkind sq(df_buf *b, const char *s, df_error *err) {
    DF_TRY(df_buf_append_char(b, '"', err));
    for (; *s; s++) {
        DF_TRY(df_buf_append_char(b, *s, err));
        if (*s == '"') DF_TRY(df_buf_append_char(b, '"', err));
    }
    return df_buf_append_char(b, '"', err);
}

static const char *affinity(df_mssql_sqltype t) {
    switch (t) {
    case DF_MSSQL_BIT: case DF_MSSQL_TINYINT: case DF_MSSQL_SMALLINT: case DF_MSSQL_INT: case DF_MSSQL_BIGINT: return "INT";
    case DF_MSSQL_REAL: case DF_MSSQL_FLOAT: return "REAL";
    case DF_MSSQL_BINARY: case DF_MSSQL_VARBINARY: return "BLOB";
    default: return "TEXT";
    }
}

static int64_t next_object_id(sqlite3 *db) {
    peer_store_exec(db, "UPDATE \"__peer_meta\" SET value = value + 1 WHERE key = 'next_object_id'", NULL);
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM \"__peer_meta\" WHERE key = 'next_object_id'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

static int schema_id_of(sqlite3 *db, const char *schema) {
    sqlite3_stmt *st = NULL;
    int id = -1;
    if (sqlite3_prepare_v2(db, "SELECT schema_id FROM \"sys.schemas\" WHERE name = ?1 COLLATE NOCASE", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, schema, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) id = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return id;
}

/* Inserts the catalog rows of one column. */
static df_errkind catalog_column(sqlite3 *db, int64_t object_id, const char *schema, const char *table,
                                 const peer_column *c, int ordinal, df_error *err) {
    const df_mssql_column *t = &c->type;
    df_buf tn;
    df_buf_init(&tn, 0);
    df_mssql_type_render(t, &tn, NULL);
    char base[32];
    size_t bl = strcspn(tn.data, "(");
    if (bl >= sizeof base) bl = sizeof base - 1;
    memcpy(base, tn.data, bl);
    base[bl] = '\0';
    df_buf_free(&tn);
    int ti = systype_index(base);
    bool national = t->type == DF_MSSQL_NCHAR || t->type == DF_MSSQL_NVARCHAR;
    bool chars = national || t->type == DF_MSSQL_CHAR || t->type == DF_MSSQL_VARCHAR;
    bool varlen = chars || t->type == DF_MSSQL_BINARY || t->type == DF_MSSQL_VARBINARY;
    int max_length = varlen ? (t->length < 0 ? -1 : t->length * (national ? 2 : 1)) : (ti >= 0 ? systypes[ti].max_length : 0);
    int precision = 0, scale = 0;
    if (t->type == DF_MSSQL_DECIMAL || t->type == DF_MSSQL_NUMERIC) {
        precision = t->precision;
        scale = t->scale;
        max_length = 1 + (int)df__tds_dec_len(t->precision);
    } else if (t->type == DF_MSSQL_TIME || t->type == DF_MSSQL_DATETIME2 || t->type == DF_MSSQL_DATETIMEOFFSET) {
        scale = t->scale;
        precision = (t->type == DF_MSSQL_TIME ? 8 : t->type == DF_MSSQL_DATETIME2 ? 19 : 26) + (scale ? scale + 1 : 0);
        max_length = (int)df__tds_time_len(scale) + (t->type == DF_MSSQL_TIME ? 0 : 3) + (t->type == DF_MSSQL_DATETIMEOFFSET ? 2 : 0);
    } else if (ti >= 0) {
        precision = systypes[ti].precision;
        scale = systypes[ti].scale;
    }
    sqlite3_stmt *st = NULL;
    const char *q = "INSERT INTO \"sys.columns\" VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11)";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return sqlite_fail(db, err);
    sqlite3_bind_int64(st, 1, object_id);
    sqlite3_bind_text(st, 2, c->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, ordinal);
    sqlite3_bind_int(st, 4, ti >= 0 ? systypes[ti].id : 0);
    sqlite3_bind_int(st, 5, max_length);
    sqlite3_bind_int(st, 6, precision);
    sqlite3_bind_int(st, 7, scale);
    if (chars) sqlite3_bind_text(st, 8, "SQL_Latin1_General_CP1_CI_AS", -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, 8);
    sqlite3_bind_int(st, 9, c->nullable);
    sqlite3_bind_int(st, 10, c->identity);
    sqlite3_bind_int(st, 11, c->has_default ? 1 : 0);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sqlite_fail(db, err);
    q = "INSERT INTO \"INFORMATION_SCHEMA.COLUMNS\" VALUES ('master', ?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return sqlite_fail(db, err);
    sqlite3_bind_text(st, 1, schema, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, table, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, c->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, ordinal);
    sqlite3_bind_text(st, 5, c->nullable ? "YES" : "NO", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, ti >= 0 ? (strcmp(base, "sysname") ? systypes[ti].name : "nvarchar") : base, -1, SQLITE_TRANSIENT);
    bool numeric = !varlen && t->type != DF_MSSQL_UNIQUEIDENTIFIER && t->type < DF_MSSQL_DATE;
    bool temporal = t->type >= DF_MSSQL_DATE && t->type <= DF_MSSQL_SMALLDATETIME;
    if (varlen) {
        sqlite3_bind_int(st, 7, t->length < 0 ? -1 : t->length);
        sqlite3_bind_int(st, 8, t->length < 0 ? -1 : t->length * (national ? 2 : 1));
    } else {
        sqlite3_bind_null(st, 7);
        sqlite3_bind_null(st, 8);
    }
    if (numeric) {
        sqlite3_bind_int(st, 9, precision);
        sqlite3_bind_int(st, 10, (t->type == DF_MSSQL_REAL || t->type == DF_MSSQL_FLOAT) ? 2 : 10);
        sqlite3_bind_int(st, 11, scale);
    } else {
        sqlite3_bind_null(st, 9);
        sqlite3_bind_null(st, 10);
        sqlite3_bind_null(st, 11);
    }
    if (temporal) sqlite3_bind_int(st, 12, t->type == DF_MSSQL_DATE ? 0 : t->type == DF_MSSQL_DATETIME ? 3 : t->type == DF_MSSQL_SMALLDATETIME ? 0 : scale);
    else sqlite3_bind_null(st, 12);
    if (chars) {
        sqlite3_bind_text(st, 13, national ? "UNICODE" : "iso_1", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 14, "SQL_Latin1_General_CP1_CI_AS", -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(st, 13);
        sqlite3_bind_null(st, 14);
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? DF_OK : sqlite_fail(db, err);
}

df_errkind peer_store_create_table(sqlite3 *db, const char *schema, const char *table, const peer_column *cols, int n,
                                   df_error *err) {
    int sid = schema_id_of(db, schema);
    if (sid < 0) return df_error_set(err, DF_ERR_NOT_FOUND, "schema %s does not exist", schema);
    df_buf q;
    df_buf_init(&q, 0);
    char full[300];
    snprintf(full, sizeof full, "%s.%s", schema, table);
    df_errkind k = df_buf_append_str(&q, "CREATE TABLE ", err);
    if (k == DF_OK) k = sq(&q, full, err);
    if (k == DF_OK) k = df_buf_append_str(&q, " (", err);
    for (int i = 0; k == DF_OK && i < n; i++) {
        if (i) k = df_buf_append_str(&q, ", ", err);
        if (k == DF_OK) k = sq(&q, cols[i].name, err);
        if (k == DF_OK) k = df_buf_printf(&q, err, " %s ", affinity(cols[i].type.type));
        if (k == DF_OK) {
            size_t at = q.len;
            k = df_mssql_type_render(&cols[i].type, &q, err);
            /* SQLite type arguments must be numbers: (max) is stored as (-1). */
            char *m = strstr(q.data + at, "(max)");
            if (k == DF_OK && m) {
                memcpy(m, "(-1)", 4);
                memmove(m + 4, m + 5, strlen(m + 5) + 1);
                q.len--;
            }
        }
        if (k == DF_OK && !cols[i].nullable) k = df_buf_append_str(&q, " NOT NULL", err);
    }
    if (k == DF_OK) k = df_buf_append_str(&q, ")", err);
    if (k == DF_OK) k = peer_store_exec(db, q.data, err);
    df_buf_free(&q);
    if (k != DF_OK) return k;
    int64_t oid = next_object_id(db);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO \"sys.tables\" VALUES (?1, ?2, ?3, NULL, 'U ', 'USER_TABLE', 0, 0,"
                               " strftime('%Y-%m-%d %H:%M:%f','now'), strftime('%Y-%m-%d %H:%M:%f','now'))",
                           -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(db, err);
    sqlite3_bind_int64(st, 1, oid);
    sqlite3_bind_text(st, 2, table, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, sid);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sqlite_fail(db, err);
    if (sqlite3_prepare_v2(db, "INSERT INTO \"INFORMATION_SCHEMA.TABLES\" VALUES ('master', ?1, ?2, 'BASE TABLE')", -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(db, err);
    sqlite3_bind_text(st, 1, schema, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, table, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sqlite_fail(db, err);
    for (int i = 0; i < n; i++) DF_TRY(catalog_column(db, oid, schema, table, &cols[i], i + 1, err));
    return DF_OK;
}

/* Runs a catalog statement with ?1 = "schema.table" SQLite name. */
static df_errkind catalog_by_name(sqlite3 *db, const char *q, const char *sqlite_name, const char *arg2, df_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return sqlite_fail(db, err);
    sqlite3_bind_text(st, 1, sqlite_name, -1, SQLITE_TRANSIENT);
    if (arg2) sqlite3_bind_text(st, 2, arg2, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? DF_OK : sqlite_fail(db, err);
}

#define OBJ_OF_NAME \
    "(SELECT t.object_id FROM \"sys.tables\" t JOIN \"sys.schemas\" s ON s.schema_id = t.schema_id" \
    " WHERE (s.name || '.' || t.name) = ?1 COLLATE NOCASE)"

df_errkind peer_store_drop_table(sqlite3 *db, const char *sqlite_name, df_error *err) {
    df_buf q;
    df_buf_init(&q, 0);
    df_errkind k = df_buf_append_str(&q, "DROP TABLE ", err);
    if (k == DF_OK) k = sq(&q, sqlite_name, err);
    if (k == DF_OK) k = peer_store_exec(db, q.data, err);
    df_buf_free(&q);
    DF_TRY(k);
    DF_TRY(catalog_by_name(db, "DELETE FROM \"sys.columns\" WHERE object_id = " OBJ_OF_NAME, sqlite_name, NULL, err));
    DF_TRY(catalog_by_name(db, "DELETE FROM \"INFORMATION_SCHEMA.COLUMNS\" WHERE (TABLE_SCHEMA || '.' || TABLE_NAME) = ?1 COLLATE NOCASE", sqlite_name, NULL, err));
    DF_TRY(catalog_by_name(db, "DELETE FROM \"INFORMATION_SCHEMA.TABLES\" WHERE (TABLE_SCHEMA || '.' || TABLE_NAME) = ?1 COLLATE NOCASE", sqlite_name, NULL, err));
    return catalog_by_name(db, "DELETE FROM \"sys.tables\" WHERE object_id = " OBJ_OF_NAME, sqlite_name, NULL, err);
}

df_errkind peer_store_rename_table(sqlite3 *db, const char *sqlite_name, const char *new_table, df_error *err) {
    const char *dot = strchr(sqlite_name, '.');
    if (!dot) return df_error_set(err, DF_ERR_INTERNAL, "unqualified table name");
    char full[300];
    snprintf(full, sizeof full, "%.*s.%s", (int)(dot - sqlite_name), sqlite_name, new_table);
    df_buf q;
    df_buf_init(&q, 0);
    df_errkind k = df_buf_append_str(&q, "ALTER TABLE ", err);
    if (k == DF_OK) k = sq(&q, sqlite_name, err);
    if (k == DF_OK) k = df_buf_append_str(&q, " RENAME TO ", err);
    if (k == DF_OK) k = sq(&q, full, err);
    if (k == DF_OK) k = peer_store_exec(db, q.data, err);
    df_buf_free(&q);
    DF_TRY(k);
    DF_TRY(catalog_by_name(db, "UPDATE \"INFORMATION_SCHEMA.COLUMNS\" SET TABLE_NAME = ?2 WHERE (TABLE_SCHEMA || '.' || TABLE_NAME) = ?1 COLLATE NOCASE", sqlite_name, new_table, err));
    DF_TRY(catalog_by_name(db, "UPDATE \"INFORMATION_SCHEMA.TABLES\" SET TABLE_NAME = ?2 WHERE (TABLE_SCHEMA || '.' || TABLE_NAME) = ?1 COLLATE NOCASE", sqlite_name, new_table, err));
    return catalog_by_name(db, "UPDATE \"sys.tables\" SET name = ?2 WHERE object_id = " OBJ_OF_NAME, sqlite_name, new_table, err);
}

df_errkind peer_store_create_schema(sqlite3 *db, const char *schema, df_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO \"sys.schemas\" VALUES ((SELECT MAX(schema_id) + 1 FROM \"sys.schemas\"), ?1, 1)", -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(db, err);
    sqlite3_bind_text(st, 1, schema, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? DF_OK : sqlite_fail(db, err);
}

df_errkind peer_store_set_table_lock(sqlite3 *db, const char *sqlite_name, bool on, df_error *err) {
    return catalog_by_name(db, on ? "UPDATE \"sys.tables\" SET lock_on_bulk_load = 1 WHERE object_id = " OBJ_OF_NAME
                                  : "UPDATE \"sys.tables\" SET lock_on_bulk_load = 0 WHERE object_id = " OBJ_OF_NAME,
                           sqlite_name, NULL, err);
}

/* ------------------------------------------------------------------------ */
/* SQL functions                                                             */

/* Splits a T-SQL multi-part name ("[db].[s].[t]", "s.t", "t") into schema and table. */
static bool split_name(const char *s, char *schema, size_t scap, char *table, size_t tcap) {
    char parts[3][130];
    int np = 0;
    const char *p = s;
    while (*p && np < 3) {
        size_t o = 0;
        while (*p == ' ') p++;
        if (*p == '[') {
            p++;
            while (*p && !(*p == ']' && p[1] != ']')) {
                if (*p == ']') p++;
                if (o + 1 < sizeof parts[0]) parts[np][o++] = *p;
                p++;
            }
            if (*p == ']') p++;
        } else if (*p == '"') {
            p++;
            while (*p && *p != '"') { if (o + 1 < sizeof parts[0]) parts[np][o++] = *p; p++; }
            if (*p == '"') p++;
        } else {
            while (*p && *p != '.') { if (o + 1 < sizeof parts[0]) parts[np][o++] = *p; p++; }
            while (o && parts[np][o - 1] == ' ') o--;
        }
        parts[np++][o] = '\0';
        while (*p == ' ') p++;
        if (*p == '.') p++;
        else break;
    }
    if (np == 0 || *p) return false;
    snprintf(schema, scap, "%s", np >= 2 ? parts[np - 2] : "dbo");
    if (!schema[0]) snprintf(schema, scap, "dbo");
    snprintf(table, tcap, "%s", parts[np - 1]);
    return table[0] != '\0';
}

static void fn_object_id(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    char schema[130], table[130];
    if (!name || name[0] == '#' || !split_name(name, schema, sizeof schema, table, sizeof table)) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3 *db = sqlite3_context_db_handle(ctx);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT t.object_id FROM \"sys.tables\" t JOIN \"sys.schemas\" s ON s.schema_id = t.schema_id"
                               " WHERE s.name = ?1 COLLATE NOCASE AND t.name = ?2 COLLATE NOCASE", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, schema, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, table, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) sqlite3_result_int64(ctx, sqlite3_column_int64(st, 0));
        else sqlite3_result_null(ctx);
    } else {
        sqlite3_result_null(ctx);
    }
    sqlite3_finalize(st);
    (void)argc;
}

static void fn_db_name(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    peer_conn *c = sqlite3_user_data(ctx);
    (void)argc; (void)argv;
    sqlite3_result_text(ctx, c->database, -1, SQLITE_TRANSIENT);
}

static void fn_schema_name(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    int id = argc ? sqlite3_value_int(argv[0]) : 1;
    sqlite3 *db = sqlite3_context_db_handle(ctx);
    sqlite3_stmt *st = NULL;
    sqlite3_result_null(ctx);
    if (sqlite3_prepare_v2(db, "SELECT name FROM \"sys.schemas\" WHERE schema_id = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW) sqlite3_result_text(ctx, (const char *)sqlite3_column_text(st, 0), -1, SQLITE_TRANSIENT);
    }
    sqlite3_finalize(st);
}

static void fn_schema_id(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *name = argc ? (const char *)sqlite3_value_text(argv[0]) : "dbo";
    int id = name ? schema_id_of(sqlite3_context_db_handle(ctx), name) : -1;
    if (id < 0) sqlite3_result_null(ctx);
    else sqlite3_result_int(ctx, id);
}

static void fn_serverproperty(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *p = (const char *)sqlite3_value_text(argv[0]);
    (void)argc;
    if (!p) { sqlite3_result_null(ctx); return; }
    if (!df_ascii_casecmp(p, "ProductVersion")) sqlite3_result_text(ctx, "15.0.2000.5", -1, SQLITE_STATIC);
    else if (!df_ascii_casecmp(p, "Edition")) sqlite3_result_text(ctx, "Developer Edition (64-bit)", -1, SQLITE_STATIC);
    else if (!df_ascii_casecmp(p, "EngineEdition")) sqlite3_result_int(ctx, 3);
    else if (!df_ascii_casecmp(p, "ProductMajorVersion")) sqlite3_result_text(ctx, "15", -1, SQLITE_STATIC);
    else if (!df_ascii_casecmp(p, "ServerName") || !df_ascii_casecmp(p, "MachineName")) sqlite3_result_text(ctx, "DFPEER", -1, SQLITE_STATIC);
    else if (!df_ascii_casecmp(p, "Collation")) sqlite3_result_text(ctx, "SQL_Latin1_General_CP1_CI_AS", -1, SQLITE_STATIC);
    else sqlite3_result_null(ctx);
}

static void fn_user_name(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    peer_conn *c = sqlite3_user_data(ctx);
    (void)argc; (void)argv;
    sqlite3_result_text(ctx, c->user, -1, SQLITE_TRANSIENT);
}

static void fn_isnull(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    sqlite3_result_value(ctx, sqlite3_value_type(argv[0]) == SQLITE_NULL ? argv[1] : argv[0]);
}

static void fn_len(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) { sqlite3_result_null(ctx); return; }
    const unsigned char *s = sqlite3_value_text(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);
    while (n > 0 && s[n - 1] == ' ') n--;  /* LEN ignores trailing spaces */
    int chars = 0;
    for (int i = 0; i < n; i++) chars += (s[i] & 0xC0) != 0x80;
    sqlite3_result_int(ctx, chars);
}

static void fn_datalength(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) sqlite3_result_null(ctx);
    else sqlite3_result_int(ctx, sqlite3_value_bytes(argv[0]));
}

static void fn_getdate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc; (void)argv;
    char t[40];
    int64_t ns = df_wall_ns();
    int64_t days = ns / 86400000000000LL + TDS_DAYS_0001_TO_1970;
    uint64_t tod = (uint64_t)(ns % 86400000000000LL) / 100;
    df__tds_format_date(days, t, sizeof t);
    size_t l = strlen(t);
    t[l] = ' ';
    df__tds_format_time(tod, 7, t + l + 1, sizeof t - l - 1);
    sqlite3_result_text(ctx, t, -1, SQLITE_TRANSIENT);
}

void peer_store_functions(sqlite3 *db, peer_conn *c) {
    int fl = SQLITE_UTF8;
    sqlite3_create_function(db, "OBJECT_ID", 1, fl, c, fn_object_id, NULL, NULL);
    sqlite3_create_function(db, "OBJECT_ID", 2, fl, c, fn_object_id, NULL, NULL);
    sqlite3_create_function(db, "DB_NAME", 0, fl, c, fn_db_name, NULL, NULL);
    sqlite3_create_function(db, "SCHEMA_NAME", 0, fl, c, fn_schema_name, NULL, NULL);
    sqlite3_create_function(db, "SCHEMA_NAME", 1, fl, c, fn_schema_name, NULL, NULL);
    sqlite3_create_function(db, "SCHEMA_ID", 0, fl, c, fn_schema_id, NULL, NULL);
    sqlite3_create_function(db, "SCHEMA_ID", 1, fl, c, fn_schema_id, NULL, NULL);
    sqlite3_create_function(db, "SERVERPROPERTY", 1, fl, c, fn_serverproperty, NULL, NULL);
    sqlite3_create_function(db, "USER_NAME", 0, fl, c, fn_user_name, NULL, NULL);
    sqlite3_create_function(db, "SUSER_SNAME", 0, fl, c, fn_user_name, NULL, NULL);
    sqlite3_create_function(db, "ISNULL", 2, fl, c, fn_isnull, NULL, NULL);
    sqlite3_create_function(db, "LEN", 1, fl, c, fn_len, NULL, NULL);
    sqlite3_create_function(db, "DATALENGTH", 1, fl, c, fn_datalength, NULL, NULL);
    sqlite3_create_function(db, "GETDATE", 0, fl, c, fn_getdate, NULL, NULL);
    sqlite3_create_function(db, "SYSDATETIME", 0, fl, c, fn_getdate, NULL, NULL);
    sqlite3_create_function(db, "GETUTCDATE", 0, fl, c, fn_getdate, NULL, NULL);
}
