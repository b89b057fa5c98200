/*
 * Unit tests for src/mssql: connection strings, type texts, UTF-16,
 * token-stream parsing against hand-built server responses, and the bulk
 * encoder checked byte-for-byte against protocol vectors through a small
 * in-process TDS server on a loopback socket.
 */
#include "df_test.h"
#include "df_scramble.h"
#include "tds_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mssql/mssql_int.h"

/* ------------------------------------------------------------------------ */
/* Connection strings                                                        */

DF_TEST(conninfo_defaults_and_synonyms) {
    df_error err = {0};
    df_mssql_conninfo *ci;
    DF_ASSERT_OK(df_mssql_conninfo_parse("Server=tcp:db.example,14330;User ID=sa;Password=p;Initial Catalog=sales", &ci, &err), &err);
    DF_ASSERT_EQ_STR(df_mssql_conninfo_host(ci), "db.example");
    DF_ASSERT_EQ_INT(df_mssql_conninfo_port(ci), 14330);
    DF_ASSERT_EQ_STR(df_mssql_conninfo_user(ci), "sa");
    DF_ASSERT_EQ_STR(df_mssql_conninfo_database(ci), "sales");
    /* the whole session is encrypted unless the string opts out */
    DF_ASSERT_EQ_INT(df_mssql_conninfo_encrypt(ci), DF_MSSQL_ENCRYPT_ON);
    DF_ASSERT(!df_mssql_conninfo_trust_server_certificate(ci));
    df_mssql_conninfo_free(ci);
    DF_ASSERT_OK(df_mssql_conninfo_parse("uid=u; pwd = {a;b}} c} ;database=d;server=h;encrypt=strict;TrustServerCertificate=YES", &ci, &err), &err);
    DF_ASSERT_EQ_STR(df_mssql_conninfo_host(ci), "h");
    DF_ASSERT_EQ_INT(df_mssql_conninfo_port(ci), 1433);
    DF_ASSERT_EQ_STR(ci->password, "a;b} c");
    DF_ASSERT_EQ_INT(df_mssql_conninfo_encrypt(ci), DF_MSSQL_ENCRYPT_STRICT);
    DF_ASSERT(df_mssql_conninfo_trust_server_certificate(ci));
    df_mssql_conninfo_free(ci);
    DF_ASSERT_OK(df_mssql_conninfo_parse("", &ci, &err), &err);
    DF_ASSERT_EQ_STR(df_mssql_conninfo_host(ci), "localhost");
    DF_ASSERT_EQ_INT(df_mssql_conninfo_connect_timeout_ms(ci), 15000);
    df_mssql_conninfo_free(ci);
    DF_ASSERT_OK(df_mssql_conninfo_parse("encrypt=yes;Connect Timeout=3;Packet Size=8192;username=x", &ci, &err), &err);
    DF_ASSERT_EQ_INT(df_mssql_conninfo_encrypt(ci), DF_MSSQL_ENCRYPT_ON);
    DF_ASSERT_EQ_INT(df_mssql_conninfo_connect_timeout_ms(ci), 3000);
    DF_ASSERT_EQ_INT(ci->packet_size, 8192);
    DF_ASSERT_EQ_STR(df_mssql_conninfo_user(ci), "x");
    df_mssql_conninfo_free(ci);
}

DF_TEST(conninfo_errors_never_echo_secrets) {
    df_error err = {0};
    df_mssql_conninfo *ci = (df_mssql_conninfo *)1;
    DF_ASSERT_KIND(df_mssql_conninfo_parse("password=hunter2;TrustServerCertificate=maybe", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
    DF_ASSERT(ci == NULL);
    DF_ASSERT(strstr(err.message, "hunter2") == NULL);
    DF_ASSERT(strstr(err.message, "maybe") == NULL);
    DF_ASSERT(strstr(err.message, "TrustServerCertificate") != NULL);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("server=h,99999;pwd=hunter2", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
    DF_ASSERT(strstr(err.message, "hunter2") == NULL);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("pwd={hunter2", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
    DF_ASSERT(strstr(err.message, "hunter2") == NULL);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("hunter2", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
    DF_ASSERT(strstr(err.message, "hunter2") == NULL);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("encrypt=sometimes", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("TrustServerCertificate=true;TrustServerCertificateCA=/x.pem", &ci, &err),
                   DF_ERR_MSSQL_CONNECTION_STRING);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("Integrated Security=SSPI", &ci, &err), DF_ERR_UNSUPPORTED);
    df_error_clear(&err);
}

/* Unknown keys are refused by name (SqlClient does so too), so a misspelt key never silently keeps a default. */
DF_TEST(conninfo_refuses_unknown_keys_by_name) {
    for (int scrambled = 0; scrambled < 2; scrambled++) {
        df_test_scramble_messages(scrambled);
        df_error err = {0};
        df_mssql_conninfo *ci = (df_mssql_conninfo *)1;
        DF_ASSERT_KIND(df_mssql_conninfo_parse("Password=hunter2;Server=h;Encrpyt=no", &ci, &err),
                       DF_ERR_MSSQL_CONNECTION_STRING);
        DF_ASSERT(ci == NULL);
        if (!scrambled) {
            DF_ASSERT(strstr(err.message, "'Encrpyt'") != NULL);
            DF_ASSERT(strstr(err.message, "hunter2") == NULL);
            DF_ASSERT(strstr(err.message, "Server=") == NULL);
        }
        /* a password with an unquoted ';' splits there: what follows is part of the secret, never shown */
        DF_ASSERT_KIND(df_mssql_conninfo_parse("uid=sa;pwd=abc;hunter2=x", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
        DF_ASSERT(strstr(err.message, "hunter2") == NULL);
        DF_ASSERT_KIND(df_mssql_conninfo_parse("pwd=abc;secret-tail", &ci, &err), DF_ERR_MSSQL_CONNECTION_STRING);
        DF_ASSERT(strstr(err.message, "secret") == NULL);
        df_error_clear(&err);
    }
    df_test_scramble_messages(false);
}

/* SqlClient's synonyms, any case, spaces and underscores; keys without effect here are accepted and listed. */
DF_TEST(conninfo_synonyms_and_keys_without_effect) {
    df_error err = {0};
    df_mssql_conninfo *ci;
    const char *strings[] = {
        "Data Source=a,1;UID=u1;PWD=p1;Initial Catalog=d1",
        "ADDRESS=a,1;User=u1;password=p1;DATABASE=d1",
        "addr=a,1;User ID=u1;Pwd=p1;database_name=d1",
        "Network Address=a,1;user_id=u1;PASSWORD=p1;initialcatalog=d1",
    };
    for (int i = 0; i < 4; i++) {
        DF_ASSERT_OK(df_mssql_conninfo_parse(strings[i], &ci, &err), &err);
        DF_ASSERT_EQ_STR(df_mssql_conninfo_host(ci), "a");
        DF_ASSERT_EQ_INT(df_mssql_conninfo_port(ci), 1);
        DF_ASSERT_EQ_STR(df_mssql_conninfo_user(ci), "u1");
        DF_ASSERT_EQ_STR(ci->password, "p1");
        DF_ASSERT_EQ_STR(df_mssql_conninfo_database(ci), "d1");
        DF_ASSERT_EQ_STR(df_mssql_conninfo_ignored_keys(ci), "");
        df_mssql_conninfo_free(ci);
    }
    DF_ASSERT_OK(df_mssql_conninfo_parse("server=h;Pooling=false;Max Pool Size=10;MultipleActiveResultSets=True;"
                                         "Connect Retry Count=3;persist security info=False;pooling=true;"
                                         "Workstation ID=ws1;Application Intent=ReadOnly;Authentication=SqlPassword",
                                         &ci, &err), &err);
    DF_ASSERT_EQ_STR(df_mssql_conninfo_ignored_keys(ci),
                     "Pooling, Max Pool Size, MultipleActiveResultSets, Connect Retry Count, Persist Security Info");
    DF_ASSERT_EQ_STR(ci->workstation, "ws1");
    DF_ASSERT(ci->read_only);
    df_mssql_conninfo_free(ci);
    DF_ASSERT_KIND(df_mssql_conninfo_parse("Authentication=ActiveDirectoryPassword", &ci, &err), DF_ERR_UNSUPPORTED);
    df_error_clear(&err);
}

/* ------------------------------------------------------------------------ */
/* Types and UTF-16                                                          */

DF_TEST(type_texts_parse_and_render) {
    struct { const char *in, *out; } cases[] = {
        {"int", "int"}, {"NVARCHAR(50)", "nvarchar(50)"}, {"nvarchar(max)", "nvarchar(max)"},
        {"decimal", "decimal(18,0)"}, {"decimal( 38 , 4 )", "decimal(38,4)"}, {"numeric(5)", "numeric(5,0)"},
        {"datetime2", "datetime2(7)"}, {"time(0)", "time(0)"}, {"datetimeoffset(3)", "datetimeoffset(3)"},
        {"float(24)", "real"}, {"float", "float(53)"}, {"varbinary(max)", "varbinary(max)"}, {"char", "char(1)"},
        {"sysname", "nvarchar(128)"}, {"uniqueidentifier", "uniqueidentifier"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        df_mssql_column c = {0};
        df_error err = {0};
        DF_ASSERT_OK(df_mssql_type_parse(cases[i].in, &c, &err), &err);
        df_buf b;
        df_buf_init(&b, 0);
        DF_ASSERT_OK(df_mssql_type_render(&c, &b, &err), &err);
        DF_ASSERT_EQ_STR(b.data, cases[i].out);
        df_buf_free(&b);
    }
    const char *bad[] = {"decimal(39,2)", "decimal(5,6)", "nvarchar(4001)", "char(max)", "time(8)", "blob", "int(3)", "varchar(0)"};
    for (size_t i = 0; i < DF_ARRAY_LEN(bad); i++) {
        df_mssql_column c = {0};
        DF_ASSERT_KIND(df_mssql_type_parse(bad[i], &c, NULL), DF_ERR_INVALID_ARGUMENT);
    }
}

DF_TEST(utf16_conversion_handles_ascii_bmp_and_surrogates) {
    const char *s = "plain ascii text, long enough for the 8-byte path: h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80!";
    size_t n = strlen(s);
    size_t units = df__tds_utf16_len((const uint8_t *)s, n);
    DF_ASSERT_EQ_UINT(units, n - 1 - 2 - 2);  /* é: 2 bytes→1, €: 3→1, 😀: 4→2 */
    uint8_t buf[256];
    size_t w = df__tds_utf8_to_utf16le((const uint8_t *)s, n, buf);
    DF_ASSERT_EQ_UINT(w, 2 * units);
    DF_ASSERT_EQ_UINT(df_load_le16(buf + 2 * (units - 3)), 0xD83D);
    DF_ASSERT_EQ_UINT(df_load_le16(buf + 2 * (units - 2)), 0xDE00);
    df_buf back;
    df_buf_init(&back, 0);
    DF_ASSERT_OK(df__tds_utf16le_to_utf8(buf, w, &back, NULL), NULL);
    DF_ASSERT_EQ_STR(back.data, s);
    df_buf_free(&back);
    const char *invalid[] = {"\xC3", "\xE2\x82", "\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80", "abcdefgh\xFF"};
    for (size_t i = 0; i < DF_ARRAY_LEN(invalid); i++)
        DF_ASSERT_EQ_UINT(df__tds_utf16_len((const uint8_t *)invalid[i], strlen(invalid[i])), SIZE_MAX);
}

DF_TEST(guid_text_round_trip_uses_mixed_endian_wire_order) {
    uint8_t w[16];
    DF_ASSERT(df__tds_parse_guid("6F9619FF-8B86-D011-B42D-00C04FC964FF", 36, w));
    static const uint8_t want[16] = {0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF};
    DF_ASSERT(memcmp(w, want, 16) == 0);
    char t[37];
    df__tds_format_guid(w, t);
    DF_ASSERT_EQ_STR(t, "6F9619FF-8B86-D011-B42D-00C04FC964FF");
    DF_ASSERT(!df__tds_parse_guid("6F9619FF-8B86-D011-B42D-00C04FC964F", 35, w));
    DF_ASSERT(!df__tds_parse_guid("6F9619FF+8B86-D011-B42D-00C04FC964FF", 36, w));
}

DF_TEST(calendar_round_trips_edges) {
    int64_t y;
    unsigned m, d;
    DF_ASSERT_EQ_INT(df__tds_days_from_civil(1, 1, 1), 0);
    DF_ASSERT_EQ_INT(df__tds_days_from_civil(1970, 1, 1), TDS_DAYS_0001_TO_1970);
    DF_ASSERT_EQ_INT(df__tds_days_from_civil(1900, 1, 1), TDS_DAYS_0001_TO_1900);
    DF_ASSERT_EQ_INT(df__tds_days_from_civil(9999, 12, 31), 3652058);
    df__tds_civil_from_days(3652058, &y, &m, &d);
    DF_ASSERT(y == 9999 && m == 12 && d == 31);
    df__tds_civil_from_days(df__tds_days_from_civil(2024, 2, 29), &y, &m, &d);
    DF_ASSERT(y == 2024 && m == 2 && d == 29);
    char t[48];
    df__tds_format_decimal(-1, 2, t, sizeof t);
    DF_ASSERT_EQ_STR(t, "-0.01");
    df__tds_format_time(863999999999ULL, 7, t, sizeof t);
    DF_ASSERT_EQ_STR(t, "23:59:59.9999999");
}

/* ------------------------------------------------------------------------ */
/* Token streams                                                             */

/* Helpers building server token streams. */
static void put_done(df_buf *b, uint8_t tok, uint16_t status, uint64_t rows) {
    df__tds_put_u8(b, tok, NULL);
    df__tds_put_u16(b, status, NULL);
    df__tds_put_u16(b, 0xC1, NULL);
    df__tds_put_u64(b, rows, NULL);
}

static void put_col(df_buf *b, const uint8_t *typeinfo, size_t n, const char *name) {
    df__tds_put_u32(b, 0, NULL);
    df__tds_put_u16(b, 1, NULL);
    df_buf_append(b, typeinfo, n, NULL);
    df__tds_put_bvarchar(b, name, NULL);
}

DF_TEST(tokens_build_result_sets_with_row_and_nbcrow) {
    df_buf b;
    df_buf_init(&b, 0);
    df__tds_put_u8(&b, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(&b, 4, NULL);
    static const uint8_t t_int[] = {TDS_T_INTN, 4}, t_dec[] = {TDS_T_DECIMALN, 5, 9, 2},
                         t_nvc[] = {TDS_T_NVARCHAR, 20, 0, 0x09, 0x04, 0xD0, 0x00, 0x34}, t_dt2[] = {TDS_T_DATETIME2N, 3};
    put_col(&b, t_int, sizeof t_int, "id");
    put_col(&b, t_dec, sizeof t_dec, "amount");
    put_col(&b, t_nvc, sizeof t_nvc, "name");
    put_col(&b, t_dt2, sizeof t_dt2, "ts");
    /* ROW: 7, -0.01, "hé", 2024-02-29 12:34:56.789 */
    static const uint8_t row[] = {TDS_TOK_ROW, 4, 7, 0, 0, 0, 5, 0, 1, 0, 0, 0, 4, 0, 'h', 0, 0xE9, 0,
                                  7, 0x95, 0x2C, 0xB3, 0x02, 0x80, 0x46, 0x0B};
    df_buf_append(&b, row, sizeof row, NULL);
    /* NBCROW: columns 1 and 3 NULL */
    static const uint8_t nbc[] = {TDS_TOK_NBCROW, 0x0A, 4, 9, 0, 0, 0, 0, 0};
    df_buf_append(&b, nbc, sizeof nbc, NULL);
    put_done(&b, TDS_TOK_DONE, TDS_DONE_COUNT, 2);
    df_mssql_result *res;
    df_error err = {0};
    DF_ASSERT_OK(df_mssql_parse_response((const uint8_t *)b.data, b.len, &res, &err), &err);
    DF_ASSERT_EQ_INT(res->nsets, 1);
    df_batch *r = res->sets[0];
    DF_ASSERT_EQ_INT(r->nrows, 2);
    DF_ASSERT_EQ_STR(r->schema->fields[1].name, "amount");
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(r->cols[0], int32_t)[0], 7);
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(r->cols[0], int32_t)[1], 9);
    DF_ASSERT((int64_t)DF_VEC_VALUES(r->cols[1], df_i128)[0] == -1);
    DF_ASSERT(df_vec_is_null(r->cols[1], 1));
    int32_t len;
    const uint8_t *s = df_vec_bytes(r->cols[2], 0, &len);
    DF_ASSERT(len == 3 && memcmp(s, "h\xC3\xA9", 3) == 0);
    DF_ASSERT(df_vec_is_null(r->cols[3], 1));
    /* 2024-02-29 12:34:56.789 UTC in microseconds */
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(r->cols[3], int64_t)[0], 1709210096789000LL);
    DF_ASSERT_EQ_INT(res->rows_affected, -1);
    df_mssql_result_free(res);
    df_buf_free(&b);
}

DF_TEST(tokens_report_server_errors_with_number_state_and_line) {
    df_buf b;
    df_buf_init(&b, 0);
    df_buf body;
    df_buf_init(&body, 0);
    df__tds_put_u32(&body, 208, NULL);
    df__tds_put_u8(&body, 1, NULL);
    df__tds_put_u8(&body, 16, NULL);
    df__tds_put_usvarchar(&body, "Invalid object name 't'.", NULL);
    df__tds_put_bvarchar(&body, "srv", NULL);
    df__tds_put_bvarchar(&body, "", NULL);
    df__tds_put_u32(&body, 3, NULL);
    df__tds_put_u8(&b, TDS_TOK_ERROR, NULL);
    df__tds_put_u16(&b, (uint16_t)body.len, NULL);
    df_buf_append(&b, body.data, body.len, NULL);
    put_done(&b, TDS_TOK_DONE, TDS_DONE_ERROR, 0);
    df_mssql_result *res = (df_mssql_result *)1;
    df_error err = {0};
    DF_ASSERT_KIND(df_mssql_parse_response((const uint8_t *)b.data, b.len, &res, &err), DF_ERR_MSSQL_SERVER_ERROR);
    DF_ASSERT(res == NULL);
    DF_ASSERT_EQ_INT(err.code, 208);
    DF_ASSERT(strstr(err.message, "state 1, class 16, line 3") != NULL);
    DF_ASSERT(strstr(err.message, "Invalid object name 't'.") != NULL);
    df_error_clear(&err);
    df_buf_free(&body);
    df_buf_free(&b);
}

DF_TEST(tokens_fail_closed_on_unknown_or_truncated_input) {
    static const uint8_t unknown[] = {0x42, 0, 0};
    static const uint8_t truncated_done[] = {TDS_TOK_DONE, 0, 0, 0xC1};
    static const uint8_t row_without_meta[] = {TDS_TOK_ROW, 1};
    static const uint8_t bad_intn[] = {TDS_TOK_COLMETADATA, 1, 0, 0, 0, 0, 0, 1, 0, TDS_T_INTN, 3, 0};
    static const uint8_t feature_ack[] = {TDS_TOK_FEATUREEXTACK, 0x0A, 1, 0, 0, 0, 1, 0xFF};
    const struct { const uint8_t *p; size_t n; } cases[] = {
        {unknown, sizeof unknown}, {truncated_done, sizeof truncated_done}, {row_without_meta, sizeof row_without_meta},
        {bad_intn, sizeof bad_intn}, {feature_ack, sizeof feature_ack},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        df_mssql_result *res;
        df_error err = {0};
        DF_ASSERT_KIND(df_mssql_parse_response(cases[i].p, cases[i].n, &res, &err), DF_ERR_TDS_PROTOCOL);
        df_error_clear(&err);
    }
}

DF_TEST(tokens_track_environment_changes) {
    df_buf b;
    df_buf_init(&b, 0);
    static const uint8_t begin_tran[] = {TDS_TOK_ENVCHANGE, 0x0B, 0, 8, 8, 1, 0, 0, 0, 0x5A, 0, 0, 0, 0};
    df_buf_append(&b, begin_tran, sizeof begin_tran, NULL);
    static const uint8_t packet[] = {TDS_TOK_ENVCHANGE, 0x13, 0, 4, 4, '8', 0, '1', 0, '9', 0, '2', 0, 4, '4', 0, '0', 0, '9', 0, '6', 0};
    df_buf_append(&b, packet, sizeof packet, NULL);
    put_done(&b, TDS_TOK_DONE, 0, 0);
    df__tds_resp resp;
    df__tds_resp_init(&resp, NULL);
    df_error err = {0};
    DF_ASSERT_OK(df__tds_parse_tokens((const uint8_t *)b.data, b.len, &resp, &err), &err);
    DF_ASSERT_EQ_INT(resp.env_txn, 8);
    DF_ASSERT_EQ_UINT(df_load_le64(resp.txn), 0x5A00000001ULL);
    DF_ASSERT_EQ_INT(resp.env_packet_size, 8192);
    DF_ASSERT(resp.done_final);
    df_buf_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Bulk encoding against a minimal in-process server                        */

typedef struct fake_server {
    int listen_fd;          /* listening socket */
    int port;               /* its port */
    df_buf bulk;            /* the last BULK_LOAD message received */
    char insert_bulk[1024]; /* the last SQL batch text (ASCII part) */
    int64_t rows;           /* rows decoded from the bulk message */
    bool login7;            /* a LOGIN7 message arrived */
} fake_server;

static void send_reply(df__tds_io *io, const df_buf *tokens) {
    df__tds_io_send_message(io, TDS_PKT_REPLY, tokens->data ? tokens->data : "", tokens->len, NULL);
}

static void *fake_server_run(void *arg) {
    fake_server *fs = arg;
    int fd = accept(fs->listen_fd, NULL, NULL);
    df__tds_io *io;
    if (fd < 0 || df__tds_io_new(fd, 10000, &io, NULL) != DF_OK) return NULL;
    df_buf msg, reply;
    df_buf_init(&msg, 0);
    df_buf_init(&reply, 0);
    uint8_t type, status;
    /* PRELOGIN → answer ENCRYPT_NOT_SUP */
    df__tds_io_read_message(io, &type, &status, &msg, 65536, NULL);
    static const uint8_t pre[] = {0, 0, 11, 0, 6, 1, 0, 17, 0, 1, 0xFF, 15, 0, 7, 0xD0, 0, 0, 2};
    df__tds_io_send_message(io, TDS_PKT_REPLY, pre, sizeof pre, NULL);
    /* LOGIN7 → LOGINACK + DONE */
    fs->login7 = df__tds_io_read_message(io, &type, &status, &msg, 65536, NULL) == DF_OK && type == TDS_PKT_LOGIN7;
    static const uint8_t ack[] = {TDS_TOK_LOGINACK, 10, 0, 1, 0x74, 0, 0, 4, 0, 15, 0, 7, 0xD0};
    df_buf_append(&reply, ack, sizeof ack, NULL);
    put_done(&reply, TDS_TOK_DONE, 0, 0);
    send_reply(io, &reply);
    for (;;) {
        if (df__tds_io_read_message(io, &type, &status, &msg, 1u << 28, NULL) != DF_OK) break;
        df_buf_reset(&reply);
        if (type == TDS_PKT_ATTENTION) {
            put_done(&reply, TDS_TOK_DONE, TDS_DONE_ATTN, 0);
        } else if (type == TDS_PKT_SQL_BATCH) {
            size_t o = 0;
            for (size_t i = 22; i + 1 < msg.len && o + 1 < sizeof fs->insert_bulk; i += 2) fs->insert_bulk[o++] = msg.data[i];
            fs->insert_bulk[o] = '\0';
            if (strstr(fs->insert_bulk, "WAITFOR")) continue; /* never answer: the client must cancel */
            put_done(&reply, TDS_TOK_DONE, 0, 0);
        } else if (type == TDS_PKT_BULK) {
            df_buf_reset(&fs->bulk);
            df_buf_append(&fs->bulk, msg.data, msg.len, NULL);
            df__tds_bulk_decode((const uint8_t *)msg.data, msg.len, -1, &fs->rows, NULL);
            put_done(&reply, TDS_TOK_DONE, TDS_DONE_COUNT, (uint64_t)fs->rows);
        }
        send_reply(io, &reply);
    }
    df_buf_free(&msg);
    df_buf_free(&reply);
    df__tds_io_free(io);
    return NULL;
}

static void fake_server_start(fake_server *fs, pthread_t *th) {
    memset(fs, 0, sizeof *fs);
    df_buf_init(&fs->bulk, 0);
    fs->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    DF_ASSERT(bind(fs->listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    DF_ASSERT(listen(fs->listen_fd, 1) == 0);
    socklen_t l = sizeof a;
    getsockname(fs->listen_fd, (struct sockaddr *)&a, &l);
    fs->port = ntohs(a.sin_port);
    pthread_create(th, NULL, fake_server_run, fs);
}

/* Builds a one-row batch of a single column. */
static df_batch *one_column(df_type *t, const void *value, size_t width, bool null) {
    df_vec *v;
    df_vec_new(t, 2, 64, &v, NULL);
    if (t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_BINARY) {
        df_vec_append_bytes(v, null ? NULL : value, (int32_t)width, NULL);
    } else {
        memcpy(v->values->data, value, width);
        df_vec_set_length(v, 1);
        if (null) df_vec_set_null(v, 0, NULL);
    }
    df_field f;
    df_field_init(&f, "c", t, true, NULL);
    df_schema *s;
    df_schema_new(&f, 1, &s, NULL);
    df_field_clear(&f);
    df_batch *b;
    df_batch_new(s, &v, 1, &b, NULL);
    df_schema_release(s);
    return b;
}

/*
 * Loads one value through the client into a column of `type_text` (NULL
 * allowed or not) and returns the encoded ROW value bytes (after the 0xD1
 * token); *meta_type is the TDS type the COLMETADATA announced.  When the
 * write fails, *kind and (if given) *subkind say how.
 */
static size_t encode_one_as(const char *type_text, bool nullable, df_type *src, const void *value, size_t width,
                            bool null, uint8_t *out, size_t cap, df_errkind *kind, df_errkind *subkind,
                            uint8_t *meta_type) {
    fake_server fs;
    pthread_t th;
    fake_server_start(&fs, &th);
    char cs[128];
    snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=p;encrypt=DANGER_PLAINTEXT", fs.port);
    df_mssql_conn *c;
    df_error err = {0};
    DF_ASSERT_OK(df_mssql_connect_string(cs, &c, &err), &err);
    df_mssql_column col = {.name = "c", .nullable = nullable};
    DF_ASSERT_OK(df_mssql_type_parse(type_text, &col, &err), &err);
    df_mssql_bulk *b;
    DF_ASSERT_OK(df_mssql_bulk_begin(c, "[dbo].[t]", &col, 1, NULL, &b, &err), &err);
    df_batch *batch = one_column(src, value, width, null);
    *kind = df_mssql_bulk_write(b, batch, &err);
    if (subkind) *subkind = err.subkind;
    df_batch_release(batch);
    size_t n = 0;
    if (*kind == DF_OK) {
        int64_t rows;
        DF_ASSERT_OK(df_mssql_bulk_finish(b, &rows, &err), &err);
        DF_ASSERT_EQ_INT(rows, 1);
        /* skip COLMETADATA: locate the ROW token before the trailing DONE (13 bytes) */
        const uint8_t *m = (const uint8_t *)fs.bulk.data;
        df__tds_rd r;
        df__tds_rd_init(&r, m, fs.bulk.len);
        df__tds_bulk_meta meta;
        DF_ASSERT_OK(df__tds_bulk_meta_read(&r, &meta, &err), &err);
        *meta_type = meta.ti[0].type;
        df_free(meta.ti);
        DF_ASSERT_EQ_INT(*r.p, TDS_TOK_ROW);
        n = (size_t)(fs.bulk.len - 13 - (size_t)(r.p + 1 - m));
        DF_ASSERT(n <= cap);
        memcpy(out, r.p + 1, n);
        DF_ASSERT(strstr(fs.insert_bulk, "INSERT BULK [dbo].[t] ([c] ") != NULL);
    } else {
        df_mssql_bulk_abort(b);
    }
    df_mssql_close(c);
    pthread_join(th, NULL);
    close(fs.listen_fd);
    df_buf_free(&fs.bulk);
    df_error_clear(&err);
    return n;
}

static size_t encode_one(const char *type_text, df_type *src, const void *value, size_t width, bool null,
                         uint8_t *out, size_t cap, df_errkind *kind) {
    uint8_t t;
    return encode_one_as(type_text, true, src, value, width, null, out, cap, kind, NULL, &t);
}

/* A NOT NULL column: the announced type must be `want_type` (the fixed form) and the value bytes `want`. */
static void expect_fixed(const char *type_text, df_type *src, const void *value, size_t width, uint8_t want_type,
                         const uint8_t *want, size_t want_len) {
    uint8_t got[64], t = 0;
    df_errkind k;
    size_t n = encode_one_as(type_text, false, src, value, width, false, got, sizeof got, &k, NULL, &t);
    DF_ASSERT_OK(k, NULL);
    DF_ASSERT_EQ_INT(t, want_type);
    DF_ASSERT_EQ_INT(n, want_len);
    DF_ASSERT(memcmp(got, want, n) == 0);
}

static void expect_bytes(const char *type_text, df_type *src, const void *value, size_t width, bool null,
                         const uint8_t *want, size_t want_len) {
    uint8_t got[64];
    df_errkind k;
    size_t n = encode_one(type_text, src, value, width, null, got, sizeof got, &k);
    DF_ASSERT_OK(k, NULL);
    if (n != want_len || memcmp(got, want, n) != 0) {
        char hex[200] = "";
        for (size_t i = 0; i < n && i < 60; i++) snprintf(hex + strlen(hex), sizeof hex - strlen(hex), "%02X ", got[i]);
        df_test_fail(__FILE__, __LINE__, "%s: encoded %s", type_text, hex);
    }
}

#define BYTES(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

DF_TEST(bulk_encodes_protocol_vectors) {
    df_i128 d1 = 1234567891, d2 = -1;
    df_type *dec = df_type_decimal(10, 2);
    expect_bytes("decimal(10,2)", dec, &d1, 16, false, BYTES(0x09, 0x01, 0xD3, 0x02, 0x96, 0x49, 0, 0, 0, 0));
    expect_bytes("decimal(10,2)", dec, &d2, 16, false, BYTES(0x09, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0));
    expect_bytes("decimal(10,2)", dec, &d2, 16, true, BYTES(0x00));
    /* 12- and 4-byte magnitudes (precision 20..28 and 1..9). */
    expect_bytes("decimal(25,2)", dec, &d1, 16, false, BYTES(0x0D, 0x01, 0xD3, 0x02, 0x96, 0x49, 0, 0, 0, 0, 0, 0, 0, 0));
    df_i128 d3 = 12345;
    expect_bytes("decimal(9,2)", dec, &d3, 16, false, BYTES(0x05, 0x01, 0x39, 0x30, 0, 0));
    df_type_release(dec);
    df_i128 d4 = -(((df_i128)1 << 64) + 5);
    df_type *dec25 = df_type_decimal(25, 0);
    expect_bytes("decimal(25,0)", dec25, &d4, 16, false, BYTES(0x0D, 0x00, 0x05, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0));
    df_type_release(dec25);
    int64_t t_ns = 86399999999900LL;
    df_type *t64 = df_type_time(DF_UNIT_NANO);
    expect_bytes("time(7)", t64, &t_ns, 8, false, BYTES(0x05, 0xFF, 0xBF, 0x69, 0x2A, 0xC9));
    df_type_release(t64);
    int64_t ts_us = 1709210096789000LL; /* 2024-02-29 12:34:56.789 */
    df_type *tsu = df_type_timestamp(DF_UNIT_MICRO, NULL);
    expect_bytes("datetime2(3)", tsu, &ts_us, 8, false, BYTES(0x07, 0x95, 0x2C, 0xB3, 0x02, 0x80, 0x46, 0x0B));
    int64_t dt_us = 1709210096787000LL;
    expect_bytes("datetime", tsu, &dt_us, 8, false, BYTES(0x08, 0x25, 0xB1, 0x00, 0x00, 0x2C, 0x5A, 0xCF, 0x00));
    int64_t sdt_us = 1709210100000000LL; /* 12:35:00 */
    expect_bytes("smalldatetime", tsu, &sdt_us, 8, false, BYTES(0x04, 0x25, 0xB1, 0xF3, 0x02));
    df_type_release(tsu);
    int64_t dto_ns = 1709190296123000000LL; /* 2024-02-29T07:04:56.123Z */
    df_type *tsz = df_type_timestamp(DF_UNIT_NANO, "UTC");
    expect_bytes("datetimeoffset(7)", tsz, &dto_ns, 8, false, BYTES(0x0A, 0xB0, 0xA0, 0xDF, 0x5C, 0x3B, 0x80, 0x46, 0x0B, 0x00, 0x00));
    df_type_release(tsz);
    int32_t day = 19782; /* 2024-02-29 */
    expect_bytes("date", df_type_date32(), &day, 4, false, BYTES(0x03, 0x80, 0x46, 0x0B));
    static const uint8_t rfc[16] = {0x6F, 0x96, 0x19, 0xFF, 0x8B, 0x86, 0xD0, 0x11, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF};
    df_type *fb = df_type_fixed_binary(16);
    expect_bytes("uniqueidentifier", fb, rfc, 16, false,
                 BYTES(0x10, 0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF));
    df_type_release(fb);
    expect_bytes("nvarchar(max)", df_type_utf8(), "max text", 8, false,
                 BYTES(0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x10, 0, 0, 0, 'm', 0, 'a', 0, 'x', 0, ' ', 0, 't', 0,
                       'e', 0, 'x', 0, 't', 0, 0, 0, 0, 0));
    expect_bytes("nvarchar(max)", df_type_utf8(), "", 0, false, BYTES(0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0));
    expect_bytes("nvarchar(max)", df_type_utf8(), NULL, 0, true, BYTES(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF));
    expect_bytes("varchar(20)", df_type_utf8(), "hello", 5, false, BYTES(0x05, 0x00, 'h', 'e', 'l', 'l', 'o'));
    expect_bytes("nvarchar(5)", df_type_utf8(), NULL, 0, true, BYTES(0xFF, 0xFF));
    int64_t big = INT64_MIN;
    expect_bytes("bigint", df_type_int64(), &big, 8, false, BYTES(0x08, 0, 0, 0, 0, 0, 0, 0, 0x80));
    uint8_t u8 = 255;
    expect_bytes("tinyint", df_type_uint8(), &u8, 1, false, BYTES(0x01, 0xFF));
    double f = 1.5;
    expect_bytes("float", df_type_float64(), &f, 8, false, BYTES(0x08, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F));
}

DF_TEST(bulk_uses_fixed_types_for_not_null_columns) {
    int64_t big = -2;
    expect_fixed("bigint", df_type_int64(), &big, 8, TDS_T_INT8, BYTES(0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF));
    int16_t small = 300;
    expect_fixed("int", df_type_int16(), &small, 2, TDS_T_INT4, BYTES(0x2C, 0x01, 0, 0));
    expect_fixed("smallint", df_type_int16(), &small, 2, TDS_T_INT2, BYTES(0x2C, 0x01));
    uint8_t u8 = 200;
    expect_fixed("tinyint", df_type_uint8(), &u8, 1, TDS_T_INT1, BYTES(0xC8));
    uint8_t one = 1; /* bool bitmap with bit 0 set */
    expect_fixed("bit", df_type_bool(), &one, 1, TDS_T_BIT, BYTES(0x01));
    double f = 1.5;
    expect_fixed("float", df_type_float64(), &f, 8, TDS_T_FLT8, BYTES(0, 0, 0, 0, 0, 0, 0xF8, 0x3F));
    expect_fixed("real", df_type_float64(), &f, 8, TDS_T_FLT4, BYTES(0, 0, 0xC0, 0x3F));
    df_i128 cents = 12345; /* 123.45 */
    df_type *dec = df_type_decimal(10, 2);
    expect_fixed("money", dec, &cents, 16, TDS_T_MONEY, BYTES(0, 0, 0, 0, 0x44, 0xD6, 0x12, 0));
    expect_fixed("smallmoney", dec, &cents, 16, TDS_T_MONEY4, BYTES(0x44, 0xD6, 0x12, 0));
    df_type_release(dec);
    int64_t dt_us = 1709210096787000LL;
    df_type *tsu = df_type_timestamp(DF_UNIT_MICRO, NULL);
    expect_fixed("datetime", tsu, &dt_us, 8, TDS_T_DATETIME, BYTES(0x25, 0xB1, 0x00, 0x00, 0x2C, 0x5A, 0xCF, 0x00));
    int64_t sdt_us = 1709210100000000LL;
    expect_fixed("smalldatetime", tsu, &sdt_us, 8, TDS_T_DATETIM4, BYTES(0x25, 0xB1, 0xF3, 0x02));
    df_type_release(tsu);
    /* Types without a fixed form keep their length-prefixed encoding. */
    int32_t day = 19782;
    expect_fixed("date", df_type_date32(), &day, 4, TDS_T_DATEN, BYTES(0x03, 0x80, 0x46, 0x0B));
}

DF_TEST(bulk_rejects_values_that_do_not_fit) {
    uint8_t got[64];
    df_errkind k;
    int32_t big = 70000;
    encode_one("smallint", df_type_int32(), &big, 4, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    encode_one("nvarchar(3)", df_type_utf8(), "abcd", 4, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    encode_one("varchar(10)", df_type_utf8(), "h\xC3\xA9", 3, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    df_i128 d = 12345; /* 123.45 at scale 2 into decimal(3,2) */
    df_type *dec = df_type_decimal(10, 2);
    encode_one("decimal(3,2)", dec, &d, 16, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    encode_one("decimal(10,1)", dec, &d, 16, false, got, sizeof got, &k); /* would lose a digit */
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    df_type_release(dec);
    double nan = __builtin_nan("");
    encode_one("float", df_type_float64(), &nan, 8, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    int64_t ns = 1; /* 1 ns cannot be represented in 100 ns units under the default reject policy */
    df_type *tsn = df_type_timestamp(DF_UNIT_NANO, NULL);
    encode_one("datetime2(7)", tsn, &ns, 8, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    df_type_release(tsn);
    int64_t early = -6847804800000000LL; /* 1753-01-01 is the datetime minimum; a day before fails */
    df_type *tsu = df_type_timestamp(DF_UNIT_MICRO, NULL);
    encode_one("datetime", tsu, &early, 8, false, got, sizeof got, &k);
    DF_ASSERT_OK(k, NULL);
    early -= 86400000000LL;
    encode_one("datetime", tsu, &early, 8, false, got, sizeof got, &k);
    DF_ASSERT_KIND(k, DF_ERR_VALUE_CONVERSION);
    df_type_release(tsu);
}

/*
 * Every way a value can fail carries its value conversion subkind (what the
 * writer turns into a diagnostics code), whatever the message says: the
 * same subkinds with every message scrambled.
 */
DF_TEST(bulk_conversion_failures_carry_their_subkind_not_their_wording) {
    df_type *dec = df_type_decimal(10, 2), *tsn = df_type_timestamp(DF_UNIT_NANO, NULL);
    df_type *tsu = df_type_timestamp(DF_UNIT_MICRO, NULL), *t64 = df_type_time(DF_UNIT_NANO);
    int32_t big = 70000, before_0001 = -719163; /* 0000-12-31 */
    int64_t one_ns = 1, noon_us = 43200000000LL, early_us = -6847804800000000LL - 86400000000LL;
    int64_t year_0_us = -62135596800000000LL - 86400000000LL, day_and_a_bit_ns = 86400000000000LL + 1000;
    int64_t ticks_overflow_us = INT64_MAX / 5;
    df_i128 d = 12345; /* 123.45 */
    double nan = __builtin_nan(""), huge = 1e300;
    struct {
        const char *type_text;
        bool nullable;
        df_type *src;
        const void *value;
        size_t width;
        bool null;
        df_errkind want;
    } cases[] = {
        {"smallint", true, df_type_int32(), &big, 4, false, DF_ERR_INTEGER_OUT_OF_RANGE},
        {"int", false, df_type_int32(), &big, 4, true, DF_ERR_NULL_IN_NON_NULLABLE_COLUMN},
        {"nvarchar(10)", false, df_type_utf8(), NULL, 0, true, DF_ERR_NULL_IN_NON_NULLABLE_COLUMN},
        {"nvarchar(3)", true, df_type_utf8(), "abcd", 4, false, DF_ERR_VALUE_TOO_LONG},
        {"varchar(10)", true, df_type_utf8(), "h\xC3\xA9", 3, false, DF_ERR_VALUE_TOO_LONG},
        {"nvarchar(10)", true, df_type_utf8(), "\xFF", 1, false, DF_ERR_VALUE_CONVERSION_UNSUPPORTED},
        {"nvarchar(10)", true, df_type_int32(), &big, 4, false, DF_ERR_VALUE_CONVERSION_UNSUPPORTED},
        {"decimal(3,2)", true, dec, &d, 16, false, DF_ERR_DECIMAL_OUT_OF_RANGE},
        {"decimal(10,1)", true, dec, &d, 16, false, DF_ERR_DECIMAL_OUT_OF_RANGE},
        {"float", true, df_type_float64(), &nan, 8, false, DF_ERR_NON_FINITE_FLOAT},
        {"real", true, df_type_float64(), &huge, 8, false, DF_ERR_INTEGER_OUT_OF_RANGE},
        {"datetime2(7)", true, tsn, &one_ns, 8, false, DF_ERR_LOSSY_CONVERSION},
        {"datetime2(7)", true, tsu, &ticks_overflow_us, 8, false, DF_ERR_INTEGER_OUT_OF_RANGE},
        {"datetime2(7)", true, tsu, &year_0_us, 8, false, DF_ERR_TIMESTAMP_OUT_OF_RANGE},
        {"date", true, tsu, &noon_us, 8, false, DF_ERR_LOSSY_CONVERSION},
        {"date", true, df_type_date32(), &before_0001, 4, false, DF_ERR_TIMESTAMP_OUT_OF_RANGE},
        {"time(7)", true, t64, &day_and_a_bit_ns, 8, false, DF_ERR_INTEGER_OUT_OF_RANGE},
        {"datetime", true, tsu, &early_us, 8, false, DF_ERR_VALUE_CONVERSION_UNSUPPORTED},
        {"uniqueidentifier", true, df_type_utf8(), "not-a-guid", 10, false, DF_ERR_VALUE_CONVERSION_UNSUPPORTED},
    };
    for (int scrambled = 0; scrambled < 2; scrambled++) {
        df_test_scramble_messages(scrambled);
        for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
            uint8_t got[64], t;
            df_errkind k = DF_OK, sub = DF_OK;
            encode_one_as(cases[i].type_text, cases[i].nullable, cases[i].src, cases[i].value, cases[i].width,
                          cases[i].null, got, sizeof got, &k, &sub, &t);
            if (k != DF_ERR_VALUE_CONVERSION || sub != cases[i].want)
                df_test_fail(__FILE__, __LINE__, "case %zu (%s, scrambled %d): %s/%s, expected value_conversion/%s", i,
                             cases[i].type_text, scrambled, df_errkind_name(k), df_errkind_name(sub),
                             df_errkind_name(cases[i].want));
        }
    }
    df_test_scramble_messages(false);
    df_type_release(dec);
    df_type_release(tsn);
    df_type_release(tsu);
    df_type_release(t64);
}

/* ------------------------------------------------------------------------ */
/* Multi-batch loads: fixed-width fast paths, pipelined sends, many packets  */

#define MB_ROWS 3000
#define MB_COLS 6

/* The third batch of the clean load (rows [5889, 8667)) has no NULLs: its rows all have one size. */
#define MB_CLEAN_FIRST 5889
#define MB_CLEAN_END 8667

/* Whether row r (global index) of column j is NULL: columns a, d and f have some, outside the clean batch. */
static bool mb_null(int j, int64_t r) {
    if (r >= MB_CLEAN_FIRST && r < MB_CLEAN_END) return false;
    return (j == 0 && r % 7 == 3) || (j == 3 && r % 5 == 1) || (j == 5 && r % 11 == 0);
}
static int64_t mb_int(int j, int64_t r) {
    return j == 0 ? r * 1000003 - 5000000000LL : j == 1 ? (int16_t)(r * 37 - 20000) : j == 2 ? (r % 60000) - 30000 : (r & 1);
}

/* A batch of rows [first, first + n): bigint←int64, int←int16, smallint←int64, float←double, real←float, bit←bool. */
static df_batch *mb_batch(int64_t first, int64_t n, int64_t poison_row) {
    static const char *names[MB_COLS] = {"a", "b", "c", "d", "e", "f"};
    df_type *types[MB_COLS] = {df_type_int64(), df_type_int16(), df_type_int64(), df_type_float64(), df_type_float32(), df_type_bool()};
    df_field f[MB_COLS];
    df_vec *v[MB_COLS];
    for (int j = 0; j < MB_COLS; j++) {
        df_field_init(&f[j], names[j], types[j], true, NULL);
        DF_ASSERT_OK(df_vec_new(types[j], n, 0, &v[j], NULL), NULL);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = first + i, x = mb_int(j, r);
            if (j == 2 && r == poison_row) x = 40000; /* does not fit smallint */
            switch (j) {
            case 0: case 2: DF_VEC_VALUES(v[j], int64_t)[i] = x; break;
            case 1: DF_VEC_VALUES(v[j], int16_t)[i] = (int16_t)x; break;
            case 3: DF_VEC_VALUES(v[j], double)[i] = (double)r / 8.0; break;
            case 4: DF_VEC_VALUES(v[j], float)[i] = (float)r * 0.5f; break;
            default: df_bit_put(v[j]->values->data, i, x != 0); break;
            }
        }
        df_vec_set_length(v[j], n);
        /* Column a always carries a validity bitmap, all set in the clean batch (which still has no NULLs). */
        if (j == 0) DF_ASSERT_OK(df_vec_ensure_validity(v[j], n, NULL), NULL);
        for (int64_t i = 0; i < n; i++)
            if (mb_null(j, first + i)) DF_ASSERT_OK(df_vec_set_null(v[j], i, NULL), NULL);
    }
    df_schema *sc;
    DF_ASSERT_OK(df_schema_new(f, MB_COLS, &sc, NULL), NULL);
    for (int j = 0; j < MB_COLS; j++) df_field_clear(&f[j]);
    df_batch *b;
    DF_ASSERT_OK(df_batch_new(sc, v, n, &b, NULL), NULL);
    df_schema_release(sc);
    return b;
}

/* Decodes the server's copy of the stream and checks every value of every row. */
static void mb_check(const df_buf *msg, int64_t nrows) {
    df__tds_rd r;
    df__tds_rd_init(&r, msg->data, msg->len);
    df__tds_bulk_meta meta;
    df_error err = {0};
    DF_ASSERT_OK(df__tds_bulk_meta_read(&r, &meta, &err), &err);
    DF_ASSERT_EQ_INT(meta.ncols, MB_COLS);
    DF_ASSERT_EQ_INT(meta.ti[0].type, TDS_T_INTN);
    DF_ASSERT_EQ_INT(meta.ti[1].type, TDS_T_INT4);
    DF_ASSERT_EQ_INT(meta.ti[4].type, TDS_T_FLT4);
    df__tds_value vals[MB_COLS];
    df_buf scratch;
    df_buf_init(&scratch, 0);
    for (int64_t row = 0; row < nrows; row++) {
        uint8_t tok;
        DF_ASSERT_OK(df__tds_rd_u8(&r, &tok, &err), &err);
        DF_ASSERT_EQ_INT(tok, TDS_TOK_ROW);
        DF_ASSERT_OK(df__tds_bulk_row_read(&r, &meta, &scratch, vals, &err), &err);
        for (int j = 0; j < MB_COLS; j++) {
            if (mb_null(j, row)) {
                DF_ASSERT_EQ_INT(vals[j].kind, TDS_V_NULL);
            } else if (j == 3) {
                DF_ASSERT_EQ_DBL(vals[j].f, (double)row / 8.0);
            } else if (j == 4) {
                DF_ASSERT_EQ_DBL(vals[j].f, (double)((float)row * 0.5f));
            } else {
                DF_ASSERT_EQ_INT(vals[j].kind, TDS_V_INT);
                DF_ASSERT_EQ_INT(vals[j].i, mb_int(j, row));
            }
        }
    }
    uint8_t tok;
    DF_ASSERT_OK(df__tds_rd_u8(&r, &tok, &err), &err);
    DF_ASSERT_EQ_INT(tok, TDS_TOK_DONE);
    df_free(meta.ti);
    df_buf_free(&scratch);
}

/*
 * Starts the fake server, connects to it and types the MB_COLS bulk columns
 * (a..f: bigint, int, smallint, float, real, bit); with `fixed_b_e`, b and e
 * are NOT NULL so they are sent with SQL Server's fixed types.
 */
static df_mssql_conn *mb_connect(fake_server *fs, pthread_t *th, df_mssql_column *cols, bool fixed_b_e) {
    fake_server_start(fs, th);
    char cs[128];
    snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=p;encrypt=DANGER_PLAINTEXT", fs->port);
    df_mssql_conn *c;
    df_error err = {0};
    DF_ASSERT_OK(df_mssql_connect_string(cs, &c, &err), &err);
    static const char *types[MB_COLS] = {"bigint", "int", "smallint", "float", "real", "bit"};
    static const char *names[MB_COLS] = {"a", "b", "c", "d", "e", "f"};
    for (int j = 0; j < MB_COLS; j++) {
        cols[j] = (df_mssql_column){.name = names[j], .nullable = !fixed_b_e || (j != 1 && j != 4)};
        DF_ASSERT_OK(df_mssql_type_parse(types[j], &cols[j], &err), &err);
    }
    return c;
}

DF_TEST(bulk_streams_many_batches_across_small_packets) {
    fake_server fs;
    pthread_t th;
    df_mssql_column cols[MB_COLS];
    /* Batches of ~100 KB span dozens of 4096-byte packets (the vectored path) and end mid-packet. */
    df_mssql_conn *c = mb_connect(&fs, &th, cols, true);
    df_error err = {0};
    /* A value that does not fit fails its batch before any byte of it is sent; the load can be abandoned. */
    df_mssql_bulk *b;
    DF_ASSERT_OK(df_mssql_bulk_begin(c, "[dbo].[t]", cols, MB_COLS, NULL, &b, &err), &err);
    df_batch *ok = mb_batch(0, MB_ROWS, -1), *bad = mb_batch(MB_ROWS, MB_ROWS, MB_ROWS + 17);
    DF_ASSERT_OK(df_mssql_bulk_write(b, ok, &err), &err);
    DF_ASSERT_KIND(df_mssql_bulk_write(b, bad, &err), DF_ERR_VALUE_CONVERSION);
    DF_ASSERT_EQ_INT(err.offset, MB_ROWS + 17);
    df_batch_release(ok);
    df_batch_release(bad);
    df_mssql_bulk_abort(b);
    DF_ASSERT_OK(df_mssql_exec(c, "SELECT 1", NULL, &err), &err);
    /* Then a load of five batches (sizes differ so batches end at different packet offsets). */
    DF_ASSERT_OK(df_mssql_bulk_begin(c, "[dbo].[t]", cols, MB_COLS, NULL, &b, &err), &err);
    int64_t first = 0;
    for (int k = 0; k < 5; k++) {
        int64_t n = MB_ROWS - 111 * k;
        df_batch *batch = mb_batch(first, n, -1);
        if (k == 2) DF_ASSERT(first == MB_CLEAN_FIRST && first + n == MB_CLEAN_END);
        DF_ASSERT_OK(df_mssql_bulk_write(b, batch, &err), &err);
        df_batch_release(batch);
        first += n;
    }
    DF_ASSERT_EQ_INT(df_mssql_bulk_rows(b), first);
    int64_t rows;
    DF_ASSERT_OK(df_mssql_bulk_finish(b, &rows, &err), &err);
    DF_ASSERT_EQ_INT(rows, first);
    mb_check(&fs.bulk, first);
    df_mssql_close(c);
    pthread_join(th, NULL);
    close(fs.listen_fd);
    df_buf_free(&fs.bulk);
    df_error_clear(&err);
}

/* ------------------------------------------------------------------------ */
/* Cancellation and timeouts                                                 */

typedef struct canceller {
    df_mssql_conn *c;       /* connection to cancel */
    int delay_ms;           /* wait before cancelling */
} canceller;

static void *cancel_later(void *arg) {
    canceller *k = arg;
    struct timespec ts = {0, (long)k->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    df_mssql_cancel(k->c);
    return NULL;
}

DF_TEST(cancel_and_timeout_send_attention_and_keep_the_connection) {
    fake_server fs;
    pthread_t th, ct;
    fake_server_start(&fs, &th);
    char cs[128];
    snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=p;encrypt=DANGER_PLAINTEXT", fs.port);
    df_mssql_conn *c;
    df_error err = {0};
    DF_ASSERT_OK(df_mssql_connect_string(cs, &c, &err), &err);
    canceller k = {.c = c, .delay_ms = 200};
    pthread_create(&ct, NULL, cancel_later, &k);
    uint64_t t0 = df_now_ns();
    DF_ASSERT_KIND(df_mssql_exec(c, "WAITFOR DELAY '01:00:00'", NULL, &err), DF_ERR_CANCELLED);
    pthread_join(ct, NULL);
    DF_ASSERT(df_now_ns() - t0 < 3000000000ULL);
    DF_ASSERT_OK(df_mssql_exec(c, "SELECT 1", NULL, &err), &err);
    df_mssql_set_command_timeout(c, 150);
    DF_ASSERT_KIND(df_mssql_exec(c, "WAITFOR DELAY '01:00:00'", NULL, &err), DF_ERR_TIMEOUT);
    DF_ASSERT_OK(df_mssql_exec(c, "SELECT 1", NULL, &err), &err);
    df_mssql_close(c);
    pthread_join(th, NULL);
    close(fs.listen_fd);
    df_buf_free(&fs.bulk);
    df_error_clear(&err);
}

/* ------------------------------------------------------------------------ */
/* Classification by kind and subkind, never by message text                 */

/* Reads a bulk stream with the general reader (as the peer does); returns the first failure. */
static df_errkind read_bulk_stream(const uint8_t *p, size_t n, df_error *err) {
    df__tds_rd r;
    df__tds_rd_init(&r, p, n);
    df__tds_bulk_meta meta;
    DF_TRY(df__tds_bulk_meta_read(&r, &meta, err));
    df__tds_value vals[MB_COLS];
    df_buf scratch;
    df_buf_init(&scratch, 0);
    df_errkind k = DF_OK;
    for (;;) {
        uint8_t tok;
        k = df__tds_rd_u8(&r, &tok, err);
        if (k != DF_OK) break;
        if (tok == TDS_TOK_DONE) {
            k = df__tds_rd_skip(&r, 12, err);
            break;
        }
        if (tok != TDS_TOK_ROW) {
            k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "token 0x%02X in a bulk stream", tok);
            break;
        }
        k = df__tds_bulk_row_read(&r, &meta, &scratch, vals, err);
        if (k != DF_OK) break;
    }
    df_free(meta.ti);
    df_buf_free(&scratch);
    return k;
}

/*
 * The peer's streaming bulk reader waits for more bytes when the data ended
 * early: df__tds_truncated must say so by subkind, whatever the message
 * says, and must not say so for a stream that is wrong rather than short.
 */
DF_TEST(truncated_tds_data_is_told_by_subkind) {
    fake_server fs;
    pthread_t th;
    df_mssql_column cols[MB_COLS];
    df_mssql_conn *c = mb_connect(&fs, &th, cols, false);
    df_error err = {0};
    df_mssql_bulk *b;
    DF_ASSERT_OK(df_mssql_bulk_begin(c, "[dbo].[t]", cols, MB_COLS, NULL, &b, &err), &err);
    df_batch *batch = mb_batch(0, 12, -1);
    DF_ASSERT_OK(df_mssql_bulk_write(b, batch, &err), &err);
    df_batch_release(batch);
    int64_t rows;
    DF_ASSERT_OK(df_mssql_bulk_finish(b, &rows, &err), &err);
    df_mssql_close(c);
    pthread_join(th, NULL);
    close(fs.listen_fd);
    const uint8_t *stream = (const uint8_t *)fs.bulk.data;
    size_t len = fs.bulk.len;
    DF_ASSERT_OK(read_bulk_stream(stream, len, &err), &err);
    uint8_t *bad = df_malloc(len);
    DF_ASSERT(bad != NULL);
    for (int scrambled = 0; scrambled < 2; scrambled++) {
        df_test_scramble_messages(scrambled);
        for (size_t n = 0; n < len; n++) {
            DF_ASSERT_KIND(read_bulk_stream(stream, n, &err), DF_ERR_TDS_PROTOCOL);
            if (!df__tds_truncated(&err))
                df_test_fail(__FILE__, __LINE__, "a %zu-byte prefix is not truncated (scrambled %d): %s", n,
                             scrambled, err.message);
        }
        /* The first ROW token (right after COLMETADATA) replaced by an unknown one: malformed, not short. */
        df__tds_rd r;
        df__tds_rd_init(&r, stream, len);
        df__tds_bulk_meta meta;
        DF_ASSERT_OK(df__tds_bulk_meta_read(&r, &meta, &err), &err);
        df_free(meta.ti);
        size_t row = (size_t)(r.p - stream);
        DF_ASSERT_EQ_INT(stream[row], TDS_TOK_ROW);
        memcpy(bad, stream, len);
        bad[row] = 0x42;
        DF_ASSERT_KIND(read_bulk_stream(bad, len, &err), DF_ERR_TDS_PROTOCOL);
        DF_ASSERT(!df__tds_truncated(&err));
        /* A plain short read through the fixed-size readers. */
        df__tds_rd_init(&r, stream, 2);
        uint32_t u;
        DF_ASSERT_KIND(df__tds_rd_u32(&r, &u, &err), DF_ERR_TDS_PROTOCOL);
        DF_ASSERT(df__tds_truncated(&err));
        DF_ASSERT_EQ_INT(err.subkind, DF_ERR_TDS_TRUNCATED);
    }
    df_test_scramble_messages(false);
    df_free(bad);
    df_buf_free(&fs.bulk);
    df_error_clear(&err);
}

typedef enum setup_fault {
    SETUP_CLOSE_AT_ONCE,        /* accept, then close: the client's PRELOGIN goes unanswered */
    SETUP_NOT_THIS_INSTANCE,    /* answer PRELOGIN with INSTOPT = 1 (the instance is not hosted here) */
} setup_fault;

typedef struct setup_server {
    int listen_fd;
    int port;
    setup_fault fault;
} setup_server;

static void *setup_server_run(void *arg) {
    setup_server *ss = arg;
    int fd = accept(ss->listen_fd, NULL, NULL);
    if (fd < 0) return NULL;
    if (ss->fault == SETUP_CLOSE_AT_ONCE) {
        close(fd);
        return NULL;
    }
    df__tds_io *io;
    if (df__tds_io_new(fd, 10000, &io, NULL) != DF_OK) return NULL;
    df_test_tds_refuse_instance(io);
    return NULL;
}

/* Connects to a server that fails setup with `fault`; returns the kind, *subkind the subkind. */
static df_errkind connect_with_fault(setup_fault fault, df_errkind *subkind) {
    setup_server ss = {.fault = fault};
    ss.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    DF_ASSERT(bind(ss.listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    DF_ASSERT(listen(ss.listen_fd, 1) == 0);
    socklen_t l = sizeof a;
    getsockname(ss.listen_fd, (struct sockaddr *)&a, &l);
    ss.port = ntohs(a.sin_port);
    pthread_t th;
    pthread_create(&th, NULL, setup_server_run, &ss);
    char cs[128];
    snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=p;encrypt=DANGER_PLAINTEXT", ss.port);
    df_mssql_conn *c = NULL;
    df_error err = {0};
    df_errkind k = df_mssql_connect_string(cs, &c, &err);
    *subkind = err.subkind;
    df_mssql_close(c);
    pthread_join(th, NULL);
    close(ss.listen_fd);
    df_error_clear(&err);
    return k;
}

/* A port nobody listens on: bound, then closed. */
static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    DF_ASSERT(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

/*
 * Encryption is mandatory by default: a server answering ENCRYPT_NOT_SUP
 * (as anyone in the path could) is refused before the login, so the
 * password never leaves in clear text; Encrypt=optional opts out.
 */
DF_TEST(default_encryption_refuses_a_server_without_tls_before_the_login) {
    for (int scrambled = 0; scrambled < 2; scrambled++) {
        df_test_scramble_messages(scrambled);
        fake_server fs;
        pthread_t th;
        fake_server_start(&fs, &th);
        char cs[128];
        snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=hunter2", fs.port);
        df_mssql_conn *c = NULL;
        df_error err = {0};
        DF_ASSERT_KIND(df_mssql_connect_string(cs, &c, &err), DF_ERR_MSSQL_TLS);
        DF_ASSERT(c == NULL);
        DF_ASSERT_EQ_INT(err.subkind, DF_ERR_MSSQL_ENCRYPTION_NOT_SUPPORTED);
        DF_ASSERT_EQ_STR(err.phase, "connect");
        if (!scrambled) {
            DF_ASSERT(strstr(err.message, "Encrypt=optional") != NULL);
            DF_ASSERT(strstr(err.message, "hunter2") == NULL);
        }
        pthread_join(th, NULL);
        DF_ASSERT(!fs.login7);
        close(fs.listen_fd);
        df_buf_free(&fs.bulk);
        df_error_clear(&err);
        /* Encrypt=optional (and its synonyms no/false) keeps login-only behaviour: plaintext here */
        const char *optout[] = {"optional", "no", "False"};
        for (int i = 0; i < 3; i++) {
            fake_server_start(&fs, &th);
            snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=p;Encrypt=%s", fs.port, optout[i]);
            DF_ASSERT_OK(df_mssql_connect_string(cs, &c, &err), &err);
            DF_ASSERT_EQ_STR(df_mssql_encryption(c), "none");
            df_mssql_close(c);
            pthread_join(th, NULL);
            DF_ASSERT(fs.login7);
            close(fs.listen_fd);
            df_buf_free(&fs.bulk);
        }
    }
    df_test_scramble_messages(false);
}

/* Which connect step failed is a subkind of DF_ERR_MSSQL_CONNECT (the writer names the step from it). */
DF_TEST(connect_failures_say_which_step_failed_by_subkind) {
    for (int scrambled = 0; scrambled < 2; scrambled++) {
        df_test_scramble_messages(scrambled);
        char cs[128];
        snprintf(cs, sizeof cs, "server=127.0.0.1,%d;uid=u;pwd=p;encrypt=DANGER_PLAINTEXT", closed_port());
        df_mssql_conn *c = NULL;
        df_error err = {0};
        DF_ASSERT_KIND(df_mssql_connect_string(cs, &c, &err), DF_ERR_MSSQL_CONNECT);
        DF_ASSERT_EQ_INT(err.subkind, DF_ERR_MSSQL_TCP_CONNECT);
        DF_ASSERT_EQ_STR(err.phase, "connect");
        DF_ASSERT_EQ_INT(err.code, 0);
        df_error_clear(&err);
        df_errkind sub;
        DF_ASSERT_KIND(connect_with_fault(SETUP_CLOSE_AT_ONCE, &sub), DF_ERR_MSSQL_CONNECT);
        DF_ASSERT_EQ_INT(sub, DF_ERR_MSSQL_CLIENT_SETUP);
        DF_ASSERT_KIND(connect_with_fault(SETUP_NOT_THIS_INSTANCE, &sub), DF_ERR_MSSQL_CONNECT);
        DF_ASSERT_EQ_INT(sub, DF_OK);
    }
    df_test_scramble_messages(false);
}
