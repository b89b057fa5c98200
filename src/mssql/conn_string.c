/*
 * ADO.NET-style connection strings (`Server=host,port;User ID=...;...`).
 *
 * The text is split into `key=value` pairs at `;` outside braces and quotes;
 * keys are matched case-insensitively with spaces and underscores ignored
 * against a table of synonyms; unknown keys are refused.  Errors name the
 * key, never a value, because the values include the password.
 */
#include "mssql/mssql_int.h"

#include <stdio.h>
#include <stdlib.h>

/* Wipes and frees a secret string. */
void df__mssql_free_secret(char *s) {
    if (!s) return;
    volatile char *p = s;
    while (*p) *p++ = 0;
    df_free(s);
}

void df_mssql_conninfo_free(df_mssql_conninfo *ci) {
    if (!ci) return;
    df_free(ci->host);
    df_free(ci->instance);
    df_free(ci->user);
    df__mssql_free_secret(ci->password);
    df_free(ci->database);
    df_free(ci->app_name);
    df_free(ci->ca_file);
    df_free(ci->host_in_cert);
    df_free(ci->workstation);
    df_free(ci);
}

const char *df_mssql_conninfo_host(const df_mssql_conninfo *ci) { return ci->host; }
uint16_t df_mssql_conninfo_port(const df_mssql_conninfo *ci) { return ci->port; }
const char *df_mssql_conninfo_user(const df_mssql_conninfo *ci) { return ci->user; }
const char *df_mssql_conninfo_database(const df_mssql_conninfo *ci) { return ci->database; }
df_mssql_encrypt df_mssql_conninfo_encrypt(const df_mssql_conninfo *ci) { return ci->encrypt; }
bool df_mssql_conninfo_trust_server_certificate(const df_mssql_conninfo *ci) { return ci->trust_cert; }
uint32_t df_mssql_conninfo_connect_timeout_ms(const df_mssql_conninfo *ci) { return ci->connect_timeout_ms; }
const char *df_mssql_conninfo_ignored_keys(const df_mssql_conninfo *ci) { return ci->ignored; }

static df_errkind bad(df_error *err, const char *key, const char *why) {
    return df_error_set(err, DF_ERR_MSSQL_CONNECTION_STRING, "SQL Server connection string is invalid: %s %s", key, why);
}

/* Copies [s, s+n) trimmed of ASCII spaces. */
static char *dup_trim(const char *s, size_t n) {
    while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    return df_strndup(s, n);
}

/* Lower-cases and removes spaces/underscores so "User ID" == "userid". */
static void norm_key(const char *k, char *out, size_t cap) {
    size_t o = 0;
    for (; *k && o + 1 < cap; k++) {
        char c = *k;
        if (c == ' ' || c == '\t' || c == '_') continue;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        out[o++] = c;
    }
    out[o] = '\0';
}

static int parse_bool(const char *v) {
    if (!df_ascii_casecmp(v, "true") || !df_ascii_casecmp(v, "yes")) return 1;
    if (!df_ascii_casecmp(v, "false") || !df_ascii_casecmp(v, "no")) return 0;
    return -1;
}

static bool parse_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out) {
    if (!*v) return false;
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (*end || x < lo || x > hi) return false;
    *out = (uint32_t)x;
    return true;
}

/* server = [tcp:]host[,port] | host\instance[,port] */
static df_errkind parse_server(df_mssql_conninfo *ci, const char *v, df_error *err) {
    if (!df_ascii_ncasecmp(v, "tcp:", 4)) v += 4;
    const char *comma = strchr(v, ',');
    size_t hlen = comma ? (size_t)(comma - v) : strlen(v);
    const char *bs = memchr(v, '\\', hlen);
    size_t host_len = bs ? (size_t)(bs - v) : hlen;
    df_free(ci->host);
    df_free(ci->instance);
    ci->instance = NULL;
    ci->host = dup_trim(v, host_len);
    if (!ci->host) return DF_OOM(err);
    if (bs) {
        ci->instance = dup_trim(bs + 1, hlen - host_len - 1);
        if (!ci->instance) return DF_OOM(err);
    }
    if (ci->host[0] == '\0' || !strcmp(ci->host, ".") || !df_ascii_casecmp(ci->host, "(local)")) {
        df_free(ci->host);
        ci->host = df_strdup("localhost");
        if (!ci->host) return DF_OOM(err);
    }
    if (comma) {
        char *p = dup_trim(comma + 1, strlen(comma + 1));
        if (!p) return DF_OOM(err);
        uint32_t port;
        bool ok = parse_u32(p, 1, 65535, &port);
        df_free(p);
        if (!ok) return bad(err, "server", "has an invalid port");
        ci->port = (uint16_t)port;
    } else {
        ci->port = ci->instance ? 1434 : 1433;
    }
    return DF_OK;
}

static df_errkind set_str(char **slot, const char *v, df_error *err) {
    df_free(*slot);
    *slot = df_strdup(v);
    return *slot ? DF_OK : DF_OOM(err);
}

/* What a key sets; K_IGNORED keys are known to Microsoft's drivers but have no effect here. */
typedef enum key_id {
    K_SERVER, K_USER, K_PASSWORD, K_DATABASE, K_APP, K_WORKSTATION, K_TRUST, K_CA, K_HOST_IN_CERT, K_ENCRYPT,
    K_INTEGRATED, K_AUTHENTICATION, K_CONNECT_TIMEOUT, K_COMMAND_TIMEOUT, K_PACKET_SIZE, K_INTENT, K_IGNORED,
} key_id;

/*
 * Every accepted key, normalized (lower case, no spaces or underscores, so
 * "User ID", "userid" and "USER_ID" are one key), with the name messages
 * and warnings use.  The synonyms are SqlClient's plus those of ODBC
 * Driver 18 and tiberius (databasename, TrustServerCertificateCA).  Keys a
 * Microsoft driver knows that change nothing for a bulk loader (pooling,
 * MARS, failover, retries, ...) are accepted and reported through
 * df_mssql_conninfo_ignored_keys, so a string written for another driver
 * still works; anything else is refused, so a misspelt key such as
 * "Encrpyt" cannot silently leave a default in place.
 */
static const struct conn_key {
    const char *norm;   /* normalized spelling */
    key_id id;          /* what it sets */
    const char *name;   /* display name */
} conn_keys[] = {
    {"server", K_SERVER, "Server"}, {"datasource", K_SERVER, "Server"}, {"address", K_SERVER, "Server"},
    {"addr", K_SERVER, "Server"}, {"networkaddress", K_SERVER, "Server"},
    {"uid", K_USER, "User ID"}, {"userid", K_USER, "User ID"}, {"user", K_USER, "User ID"},
    {"username", K_USER, "User ID"},
    {"password", K_PASSWORD, "Password"}, {"pwd", K_PASSWORD, "Password"},
    {"database", K_DATABASE, "Database"}, {"initialcatalog", K_DATABASE, "Database"},
    {"databasename", K_DATABASE, "Database"},
    {"applicationname", K_APP, "Application Name"}, {"app", K_APP, "Application Name"},
    {"workstationid", K_WORKSTATION, "Workstation ID"}, {"wsid", K_WORKSTATION, "Workstation ID"},
    {"trustservercertificate", K_TRUST, "TrustServerCertificate"},
    {"trustservercertificateca", K_CA, "TrustServerCertificateCA"},
    {"hostnameincertificate", K_HOST_IN_CERT, "HostNameInCertificate"},
    {"encrypt", K_ENCRYPT, "Encrypt"},
    {"integratedsecurity", K_INTEGRATED, "Integrated Security"},
    {"trustedconnection", K_INTEGRATED, "Integrated Security"},
    {"authentication", K_AUTHENTICATION, "Authentication"},
    {"connecttimeout", K_CONNECT_TIMEOUT, "Connect Timeout"},
    {"connectiontimeout", K_CONNECT_TIMEOUT, "Connect Timeout"},
    {"timeout", K_CONNECT_TIMEOUT, "Connect Timeout"},
    {"commandtimeout", K_COMMAND_TIMEOUT, "Command Timeout"},
    {"packetsize", K_PACKET_SIZE, "Packet Size"},
    {"applicationintent", K_INTENT, "Application Intent"},
    /* known to Microsoft's drivers, no effect here */
    {"pooling", K_IGNORED, "Pooling"}, {"maxpoolsize", K_IGNORED, "Max Pool Size"},
    {"minpoolsize", K_IGNORED, "Min Pool Size"}, {"poolblockingperiod", K_IGNORED, "Pool Blocking Period"},
    {"connectionlifetime", K_IGNORED, "Load Balance Timeout"},
    {"loadbalancetimeout", K_IGNORED, "Load Balance Timeout"},
    {"connectretrycount", K_IGNORED, "Connect Retry Count"},
    {"connectretryinterval", K_IGNORED, "Connect Retry Interval"},
    {"multipleactiveresultsets", K_IGNORED, "MultipleActiveResultSets"},
    {"marsconnection", K_IGNORED, "MultipleActiveResultSets"},
    {"multisubnetfailover", K_IGNORED, "MultiSubnetFailover"}, {"failoverpartner", K_IGNORED, "Failover Partner"},
    {"failoverpartnerspn", K_IGNORED, "Failover Partner SPN"}, {"serverspn", K_IGNORED, "Server SPN"},
    {"ipaddresspreference", K_IGNORED, "IP Address Preference"},
    {"persistsecurityinfo", K_IGNORED, "Persist Security Info"}, {"enlist", K_IGNORED, "Enlist"},
    {"transactionbinding", K_IGNORED, "Transaction Binding"}, {"typesystemversion", K_IGNORED, "Type System Version"},
    {"replication", K_IGNORED, "Replication"}, {"userinstance", K_IGNORED, "User Instance"},
    {"contextconnection", K_IGNORED, "Context Connection"},
    {"asynchronousprocessing", K_IGNORED, "Asynchronous Processing"},
    {"async", K_IGNORED, "Asynchronous Processing"}, {"currentlanguage", K_IGNORED, "Current Language"},
    {"language", K_IGNORED, "Current Language"}, {"columnencryptionsetting", K_IGNORED, "Column Encryption Setting"},
    {"servercertificate", K_IGNORED, "Server Certificate"}, {"attachdbfilename", K_IGNORED, "AttachDBFilename"},
    {"initialfilename", K_IGNORED, "AttachDBFilename"}, {"extendedproperties", K_IGNORED, "AttachDBFilename"},
    {"networklibrary", K_IGNORED, "Network Library"}, {"network", K_IGNORED, "Network Library"},
    {"net", K_IGNORED, "Network Library"}, {"driver", K_IGNORED, "Driver"},
};

static const struct conn_key *find_key(const char *norm) {
    for (size_t i = 0; i < sizeof conn_keys / sizeof conn_keys[0]; i++)
        if (!strcmp(conn_keys[i].norm, norm)) return &conn_keys[i];
    return NULL;
}

/* Adds a display name to the list of ignored keys once ("Pooling, Max Pool Size"); a full list stays as it is. */
static void note_ignored(df_mssql_conninfo *ci, const char *name) {
    size_t used = strlen(ci->ignored), n = strlen(name);
    for (const char *p = ci->ignored; (p = strstr(p, name)) != NULL; p += n)
        if ((p == ci->ignored || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return;
    if (used + n + 3 > sizeof ci->ignored) return;
    snprintf(ci->ignored + used, sizeof ci->ignored - used, "%s%s", used ? ", " : "", name);
}

/*
 * An unknown key, named as written (printable ASCII, at most 60
 * characters) as SqlClient does.  Right after the password it is not
 * shown: a password with an unquoted ';' splits there, and what follows
 * is part of the secret.
 */
static df_errkind unknown_key(const char *rawkey, bool after_password, df_error *err) {
    if (after_password)
        return df_error_set(err, DF_ERR_MSSQL_CONNECTION_STRING,
                            "SQL Server connection string is invalid: an unknown key follows Password "
                            "(quote a password that contains ';' as {...})");
    char shown[64];
    size_t o = 0;
    for (const char *p = rawkey; *p && o + 1 < sizeof shown; p++)
        shown[o++] = (*p >= 0x20 && *p <= 0x7E && *p != '\'' && *p != '\\') ? *p : '?';
    shown[o] = '\0';
    return df_error_set(err, DF_ERR_MSSQL_CONNECTION_STRING,
                        "SQL Server connection string is invalid: unknown key '%s'%s", shown, rawkey[o] ? "..." : "");
}

static df_errkind parse_seconds(const char *v, const char *name, uint32_t *ms, df_error *err) {
    uint32_t s;
    if (!parse_u32(v, 0, 2147483, &s)) return bad(err, name, "must be a number of seconds");
    *ms = s * 1000u;
    return DF_OK;
}

/* Applies one key/value; *is_password tells the caller the key was the password. */
static df_errkind apply(df_mssql_conninfo *ci, const char *rawkey, const char *v, bool after_password,
                        bool *is_password, df_error *err) {
    char k[64];
    norm_key(rawkey, k, sizeof k);
    const struct conn_key *key = find_key(k);
    *is_password = key && key->id == K_PASSWORD;
    if (!key) return unknown_key(rawkey, after_password, err);
    switch (key->id) {
    case K_SERVER: return parse_server(ci, v, err);
    case K_USER: return set_str(&ci->user, v, err);
    case K_PASSWORD:
        df__mssql_free_secret(ci->password);
        ci->password = df_strdup(v);
        return ci->password ? DF_OK : DF_OOM(err);
    case K_DATABASE: return set_str(&ci->database, v, err);
    case K_APP: return set_str(&ci->app_name, v, err);
    case K_WORKSTATION: return set_str(&ci->workstation, v, err);
    case K_TRUST: {
        int b = parse_bool(v);
        if (b < 0) return bad(err, "TrustServerCertificate", "must be true, false, yes or no");
        ci->trust_cert = b == 1;
        return DF_OK;
    }
    case K_CA: return set_str(&ci->ca_file, v, err);
    case K_HOST_IN_CERT: return set_str(&ci->host_in_cert, v, err);
    case K_ENCRYPT:
        if (!df_ascii_casecmp(v, "true") || !df_ascii_casecmp(v, "yes") || !df_ascii_casecmp(v, "mandatory"))
            ci->encrypt = DF_MSSQL_ENCRYPT_ON;
        else if (!df_ascii_casecmp(v, "false") || !df_ascii_casecmp(v, "no") || !df_ascii_casecmp(v, "optional"))
            ci->encrypt = DF_MSSQL_ENCRYPT_LOGIN_ONLY;
        else if (!df_ascii_casecmp(v, "strict"))
            ci->encrypt = DF_MSSQL_ENCRYPT_STRICT;
        else if (!strcmp(v, "DANGER_PLAINTEXT"))
            ci->encrypt = DF_MSSQL_ENCRYPT_PLAINTEXT;
        else
            return bad(err, "Encrypt", "must be mandatory, optional, strict, yes, no, true, false or DANGER_PLAINTEXT");
        return DF_OK;
    case K_INTEGRATED: {
        int b = parse_bool(v);
        if (b == 0) return DF_OK;
        if (b == 1 || !df_ascii_casecmp(v, "sspi"))
            return df_error_set(err, DF_ERR_UNSUPPORTED, "integrated (Windows) authentication is not supported by this build");
        return bad(err, "Integrated Security", "must be true, false, yes, no or sspi");
    }
    case K_AUTHENTICATION:
        /* SQL authentication is what LOGIN7 does; every other method needs a token or Kerberos. */
        if (!df_ascii_casecmp(v, "sqlpassword") || !df_ascii_casecmp(v, "sql password")) return DF_OK;
        return df_error_set(err, DF_ERR_UNSUPPORTED,
                            "connection string key Authentication: only SqlPassword is supported by this build");
    case K_CONNECT_TIMEOUT: return parse_seconds(v, "Connect Timeout", &ci->connect_timeout_ms, err);
    case K_COMMAND_TIMEOUT: return parse_seconds(v, "Command Timeout", &ci->command_timeout_ms, err);
    case K_PACKET_SIZE: {
        uint32_t s;
        if (!parse_u32(v, TDS_MIN_PACKET, TDS_MAX_PACKET, &s)) return bad(err, "Packet Size", "must be 512..32767");
        ci->packet_size = s;
        return DF_OK;
    }
    case K_INTENT:
        if (!df_ascii_casecmp(v, "readonly")) ci->read_only = true;
        else if (!df_ascii_casecmp(v, "readwrite")) ci->read_only = false;
        else return bad(err, "Application Intent", "must be ReadOnly or ReadWrite");
        return DF_OK;
    case K_IGNORED: note_ignored(ci, key->name); return DF_OK;
    }
    return DF_OK;
}

/*
 * Reads one value starting at *pp: `{...}` (with `}}` as a literal brace),
 * '...'/"..." (doubled quote as literal), or plain up to `;`.
 */
static df_errkind read_value(const char **pp, df_buf *val, df_error *err) {
    const char *p = *pp;
    while (*p == ' ' || *p == '\t') p++;
    char close = *p == '{' ? '}' : (*p == '\'' || *p == '"') ? *p : 0;
    if (close) {
        p++;
        for (;;) {
            if (!*p) return bad(err, "a quoted value", "is not terminated");
            if (*p == close) {
                if (p[1] == close) { DF_TRY(df_buf_append_char(val, close, err)); p += 2; continue; }
                p++;
                break;
            }
            DF_TRY(df_buf_append_char(val, *p++, err));
        }
        while (*p == ' ' || *p == '\t') p++;
        if (*p && *p != ';') return bad(err, "a quoted value", "is followed by text");
    } else {
        const char *s = p;
        while (*p && *p != ';') p++;
        char *t = dup_trim(s, (size_t)(p - s));
        if (!t) return DF_OOM(err);
        df_errkind k = df_buf_append_str(val, t, err);
        df__mssql_free_secret(t);
        DF_TRY(k);
    }
    if (*p == ';') p++;
    *pp = p;
    return DF_OK;
}

static df_errkind parse_into(df_mssql_conninfo *ci, const char *text, df_buf *key, df_buf *val, df_error *err) {
    const char *p = text;
    bool after_password = false; /* the previous key was the password */
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ';') p++;
        if (!*p) break;
        const char *eq = strchr(p, '=');
        const char *semi = strchr(p, ';');
        if (!eq || (semi && semi < eq)) return bad(err, "a part", "has no '='");
        df_buf_reset(key);
        df_buf_reset(val);
        char *k = dup_trim(p, (size_t)(eq - p));
        if (!k) return DF_OOM(err);
        df_errkind kk = df_buf_append_str(key, k, err);
        df_free(k);
        DF_TRY(kk);
        if (key->len == 0) return bad(err, "a key", "is empty");
        p = eq + 1;
        DF_TRY(read_value(&p, val, err));
        DF_TRY(apply(ci, key->data, val->data ? val->data : "", after_password, &after_password, err));
    }
    return DF_OK;
}

df_errkind df_mssql_conninfo_parse(const char *text, df_mssql_conninfo **out, df_error *err) {
    *out = NULL;
    if (!text) return bad(err, "the text", "is missing");
    df_mssql_conninfo *ci = df_calloc(1, sizeof *ci);
    if (!ci) return DF_OOM(err);
    ci->port = 1433;
    ci->connect_timeout_ms = 15000;
    ci->command_timeout_ms = 30000;
    ci->packet_size = TDS_DEFAULT_PACKET;
    /* The whole session is encrypted unless the string opts out, as Microsoft's current drivers do. */
    ci->encrypt = DF_MSSQL_ENCRYPT_ON;
    ci->host = df_strdup("localhost");
    ci->user = df_strdup("");
    ci->password = df_strdup("");
    ci->database = df_strdup("");
    if (!ci->host || !ci->user || !ci->password || !ci->database) {
        df_mssql_conninfo_free(ci);
        return DF_OOM(err);
    }
    df_buf key, val;
    df_buf_init(&key, 4096);
    df_buf_init(&val, 1u << 16);
    df_errkind k = parse_into(ci, text, &key, &val, err);
    if (val.data) memset(val.data, 0, val.cap);
    df_buf_free(&key);
    df_buf_free(&val);
    if (k != DF_OK) {
        if (k == DF_ERR_LIMIT_EXCEEDED) bad(err, "a value", "is too long");
        df_mssql_conninfo_free(ci);
        return k == DF_ERR_LIMIT_EXCEEDED ? DF_ERR_MSSQL_CONNECTION_STRING : k;
    }
    if (ci->ca_file && ci->trust_cert)
        k = bad(err, "TrustServerCertificateCA", "cannot be combined with TrustServerCertificate=true");
    else if (ci->instance && ci->port == 1434)
        k = df_error_set(err, DF_ERR_UNSUPPORTED, "named instances need an explicit port (SQL Browser lookup is not supported)");
    if (k != DF_OK) {
        df_mssql_conninfo_free(ci);
        return k;
    }
    *out = ci;
    return DF_OK;
}
