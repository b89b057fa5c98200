/*
 * Unit tests for src/delta: Z85, deletion-vector bitmaps, typed values,
 * log-file naming, schema conversion, conforming vectors, statistics and
 * log replay over small tables written into temporary directories.
 */
#include "df_test.h"

#include <ftw.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delta/delta_int.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Creates a fresh temporary table directory with an empty _delta_log/. */
static char *make_table(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/df_delta_test_XXXXXX");
    if (!mkdtemp(dir)) df_test_fail(__FILE__, __LINE__, "mkdtemp failed");
    char log[128];
    snprintf(log, sizeof log, "%s/_delta_log", dir);
    mkdir(log, 0755);
    return dir;
}

/* Writes `text` to <dir>/<name>. */
static void write_file(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) df_test_fail(__FILE__, __LINE__, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Writes commit `version` from lines joined with newlines. */
static void commit(const char *dir, int version, const char *lines) {
    char name[64];
    snprintf(name, sizeof name, "_delta_log/%020d.json", version);
    write_file(dir, name, lines);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_table(const char *dir) {
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#define PROTOCOL_1 "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
#define SCHEMA_ID_NAME                                                                              \
    "{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"id\\\",\\\"type\\\":\\\"long\\\"," \
    "\\\"nullable\\\":true,\\\"metadata\\\":{}},{\\\"name\\\":\\\"p\\\",\\\"type\\\":\\\"string\\\","  \
    "\\\"nullable\\\":true,\\\"metadata\\\":{}}]}"
#define METADATA_P "{\"metaData\":{\"id\":\"t1\",\"format\":{\"provider\":\"parquet\",\"options\":{}},\"schemaString\":\"" \
    SCHEMA_ID_NAME "\",\"partitionColumns\":[\"p\"],\"configuration\":{\"k\":\"v\"},\"createdTime\":5}}\n"
#define ADD(path, p, n) \
    "{\"add\":{\"path\":\"" path "\",\"partitionValues\":{\"p\":" p "},\"size\":10,\"modificationTime\":1,"  \
    "\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":" #n "}\"}}\n"
#define REMOVE(path) "{\"remove\":{\"path\":\"" path "\",\"deletionTimestamp\":2,\"dataChange\":true}}\n"

static df_delta_snapshot *open_ok(const char *dir, int64_t version) {
    df_delta_snapshot *s = NULL;
    df_error err = {0};
    df_errkind k = df_delta_snapshot_open(dir, version, NULL, NULL, 0, &s, &err);
    if (k != DF_OK) df_test_fail(__FILE__, __LINE__, "open %s failed: %s: %s", dir, df_errkind_name(k), err.message);
    return s;
}

static df_errkind open_fail(const char *dir, int64_t version, char *msg, size_t msglen) {
    df_delta_snapshot *s = (df_delta_snapshot *)1;
    df_error err = {0};
    df_error_clear(&err);
    df_errkind k = df_delta_snapshot_open(dir, version, NULL, NULL, 0, &s, &err);
    if (k == DF_OK) df_test_fail(__FILE__, __LINE__, "open %s unexpectedly succeeded", dir);
    if (s != NULL) df_test_fail(__FILE__, __LINE__, "snapshot not NULL on failure");
    if (msg) snprintf(msg, msglen, "%s", err.message);
    df_error_clear(&err);
    return k;
}

static const char *file_path(df_delta_snapshot *s, int64_t i) {
    df_delta_file_info info;
    df_error err = {0};
    DF_ASSERT_OK(df_delta_snapshot_file(s, i, &info, &err), &err);
    return info.path;
}

/* ------------------------------------------------------------------------ */
/* Z85 and deletion vectors                                                  */

DF_TEST(z85_decodes_spec_example_and_rejects_garbage) {
    uint8_t out[8];
    DF_ASSERT_OK(df__delta_z85_decode("HelloWorld", 10, out, NULL), (df_error *)NULL);
    const uint8_t expect[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
    DF_ASSERT(memcmp(out, expect, 8) == 0);
    DF_ASSERT_KIND(df__delta_z85_decode("Hello", 4, out, NULL), DF_ERR_DELTA_LOG_FORMAT);
    DF_ASSERT_KIND(df__delta_z85_decode("Hel~o", 5, out, NULL), DF_ERR_DELTA_LOG_FORMAT);
    /* Blocks beyond 2^32 - 1 wrap like the reference codec: 85^5 - 1 = 4437053124 -> 142085828. */
    DF_ASSERT_OK(df__delta_z85_decode("#####", 5, out, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_UINT(((uint32_t)out[0] << 24) | ((uint32_t)out[1] << 16) | ((uint32_t)out[2] << 8) | out[3], 142085828u);
}

DF_TEST(dv_relative_path_from_uuid_and_prefix) {
    char *p = NULL;
    DF_ASSERT_OK(df__delta_dv_relative_path("vBn[lx{q8@P<9BNH/isA", &p, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(p, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin");
    df_free(p);
    DF_ASSERT_OK(df__delta_dv_relative_path("abvBn[lx{q8@P<9BNH/isA", &p, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(p, "ab/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin");
    df_free(p);
    DF_ASSERT_KIND(df__delta_dv_relative_path("short", &p, NULL), DF_ERR_DELTA_LOG_FORMAT);
    DF_ASSERT(p == NULL);
}

/* Appends little-endian integers to a byte builder. */
typedef struct bytes {
    uint8_t d[20000];
    size_t n;
} bytes;
static void put16(bytes *b, uint16_t v) { df_store_le16(b->d + b->n, v); b->n += 2; }
static void put32(bytes *b, uint32_t v) { df_store_le32(b->d + b->n, v); b->n += 4; }
static void put64(bytes *b, uint64_t v) { df_store_le64(b->d + b->n, v); b->n += 8; }

DF_TEST(dv_decodes_array_run_and_bitset_containers) {
    static bytes b;
    b.n = 0;
    put32(&b, 1681511377u);
    put64(&b, 2);                 /* two buckets */
    /* bucket 0: run cookie with 2 containers: key 0 run [5..7], key 1 array {3} */
    put32(&b, 0);
    put32(&b, 12347u | (1u << 16));
    b.d[b.n++] = 0x01;            /* container 0 is a run container */
    put16(&b, 0); put16(&b, 2);   /* key 0, cardinality 3 */
    put16(&b, 1); put16(&b, 0);   /* key 1, cardinality 1 */
    put16(&b, 1); put16(&b, 5); put16(&b, 2);  /* one run: start 5, length 3 */
    put16(&b, 3);
    /* bucket 1: no-run cookie, one bitset container with 4097 values (0..4096) */
    put32(&b, 1);
    put32(&b, 12346u);
    put32(&b, 1);
    put16(&b, 2); put16(&b, 4096);
    put32(&b, 0);                 /* offset header */
    for (int w = 0; w < 1024; w++) put64(&b, w < 64 ? UINT64_MAX : (w == 64 ? 1 : 0));
    uint64_t *rows = NULL;
    int64_t n = 0;
    df_error err = {0};
    DF_ASSERT_OK(df__delta_dv_decode(b.d, b.n, 1 << 20, &rows, &n, &err), &err);
    DF_ASSERT_EQ_INT(n, 3 + 1 + 4097);
    DF_ASSERT_EQ_UINT(rows[0], 5);
    DF_ASSERT_EQ_UINT(rows[2], 7);
    DF_ASSERT_EQ_UINT(rows[3], 65536 + 3);
    DF_ASSERT_EQ_UINT(rows[4], (1ULL << 32) + (2u << 16));
    DF_ASSERT_EQ_UINT(rows[n - 1], (1ULL << 32) + (2u << 16) + 4096);
    for (int64_t i = 1; i < n; i++) DF_ASSERT(rows[i] > rows[i - 1]);
    df_free(rows);
    /* The row bound is enforced. */
    DF_ASSERT_KIND(df__delta_dv_decode(b.d, b.n, 100, &rows, &n, NULL), DF_ERR_LIMIT_EXCEEDED);
    DF_ASSERT(rows == NULL);
}

DF_TEST(dv_rejects_malformed_bitmaps) {
    /* The upstream example: magic, 1 bucket, key 0, no-run cookie, 1 container {0, 9}. */
    const uint8_t good[] = {0xd1, 0xd3, 0x39, 0x64, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0,
                            1, 0, 0, 0, 0, 0, 1, 0, 0x10, 0, 0, 0, 0, 0, 9, 0};
    uint64_t *rows;
    int64_t n;
    DF_ASSERT_OK(df__delta_dv_decode(good, sizeof good, 100, &rows, &n, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_INT(n, 2);
    DF_ASSERT_EQ_UINT(rows[1], 9);
    df_free(rows);
    uint8_t bad[sizeof good];
    /* Every truncation fails cleanly. */
    for (size_t cut = 0; cut < sizeof good; cut++)
        DF_ASSERT_KIND(df__delta_dv_decode(good, cut, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    memcpy(bad, good, sizeof good);
    bad[0] ^= 1;                           /* magic */
    DF_ASSERT_KIND(df__delta_dv_decode(bad, sizeof bad, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    memcpy(bad, good, sizeof good);
    bad[34] = 0;                           /* values not ascending: {0, 0} */
    DF_ASSERT_KIND(df__delta_dv_decode(bad, sizeof bad, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    memcpy(bad, good, sizeof good);
    bad[16] = 0x39;                        /* unknown cookie */
    DF_ASSERT_KIND(df__delta_dv_decode(bad, sizeof bad, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    memcpy(bad, good, sizeof good);
    bad[4] = 0xff;                         /* absurd bucket count */
    DF_ASSERT_KIND(df__delta_dv_decode(bad, sizeof bad, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    memcpy(bad, good, sizeof good);
    bad[15] = 0x80;                        /* bucket key with the high bit set */
    DF_ASSERT_KIND(df__delta_dv_decode(bad, sizeof bad, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    uint8_t longer[sizeof good + 1];
    memcpy(longer, good, sizeof good);
    longer[sizeof good] = 0;
    DF_ASSERT_KIND(df__delta_dv_decode(longer, sizeof longer, 100, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
}

DF_TEST(dv_inline_vector_loads_and_checks_cardinality) {
    df__delta_dv dv = {'i', "^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", -1, 34, 1};
    uint64_t *rows = NULL;
    int64_t n = 0;
    df_error err = {0};
    DF_ASSERT_OK(df__delta_dv_load(NULL, &dv, &rows, &n, &err), &err);
    DF_ASSERT_EQ_INT(n, 1);
    df_free(rows);
    dv.cardinality = 2;
    DF_ASSERT_KIND(df__delta_dv_load(NULL, &dv, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
    dv.cardinality = 1;
    dv.size_in_bytes = 20; /* inconsistent with the text length */
    DF_ASSERT_KIND(df__delta_dv_load(NULL, &dv, &rows, &n, NULL), DF_ERR_DELTA_LOG_FORMAT);
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */

static df_scalar parse_ok(const char *text, df_type *t) {
    df_scalar s;
    df_error err = {0};
    df_errkind k = df__delta_partition_value(text, t, &s, &err);
    if (k != DF_OK) df_test_fail(__FILE__, __LINE__, "parse of `%s` failed: %s", text, err.message);
    return s;
}

static void parse_bad(const char *text, df_type *t) {
    df_scalar s;
    if (df__delta_partition_value(text, t, &s, NULL) != DF_ERR_CAST)
        df_test_fail(__FILE__, __LINE__, "`%s` was accepted", text);
}

DF_TEST(values_parse_integers_floats_booleans_and_nulls) {
    df_scalar s = parse_ok("-128", df_type_int8());
    DF_ASSERT_EQ_INT(s.v.i64, -128);
    parse_bad("128", df_type_int8());
    parse_bad("12a", df_type_int32());
    parse_bad(" 1", df_type_int32());
    s = parse_ok("9223372036854775807", df_type_int64());
    DF_ASSERT_EQ_INT(s.v.i64, INT64_MAX);
    parse_bad("9223372036854775808", df_type_int64());
    s = parse_ok("-2.5e3", df_type_float64());
    DF_ASSERT_EQ_DBL(s.v.f64, -2500.0);
    s = parse_ok("NaN", df_type_float64());
    DF_ASSERT(s.v.f64 != s.v.f64);
    s = parse_ok("-Infinity", df_type_float32());
    DF_ASSERT(s.v.f64 < -1e308);
    parse_bad("1.5x", df_type_float64());
    s = parse_ok("TRUE", df_type_bool());
    DF_ASSERT(s.v.b);
    parse_bad("yes", df_type_bool());
    s = parse_ok(NULL, df_type_int32());
    DF_ASSERT(s.is_null);
    s = parse_ok("", df_type_utf8());
    DF_ASSERT(s.is_null);
    s = parse_ok("a b=c/%", df_type_utf8());
    DF_ASSERT_EQ_INT(s.v.bytes.len, 7);
    DF_ASSERT(memcmp(s.v.bytes.ptr, "a b=c/%", 7) == 0);
    df_scalar_clear(&s);
    s = parse_ok("\x01\x02", df_type_binary());
    DF_ASSERT_EQ_INT(s.v.bytes.len, 2);
    df_scalar_clear(&s);
}

DF_TEST(values_parse_exact_decimals) {
    df_type *t = df_type_decimal(10, 2);
    df_scalar s = parse_ok("123.4", t);
    DF_ASSERT(s.v.i128 == 12340);
    df_scalar_clear(&s);
    s = parse_ok("-0.01", t);
    DF_ASSERT(s.v.i128 == -1);
    df_scalar_clear(&s);
    s = parse_ok("1.50E+2", t);
    DF_ASSERT(s.v.i128 == 15000);
    df_scalar_clear(&s);
    s = parse_ok("7.000", t);
    DF_ASSERT(s.v.i128 == 700);
    df_scalar_clear(&s);
    parse_bad("1.234", t);           /* would lose a digit */
    parse_bad("123456789.0", t);     /* exceeds precision 10 */
    parse_bad("1..2", t);
    df_type_release(t);
    t = df_type_decimal(38, 0);
    s = parse_ok("99999999999999999999999999999999999999", t);
    DF_ASSERT(s.v.i128 > 0);
    df_scalar_clear(&s);
    parse_bad("100000000000000000000000000000000000000", t);
    df_type_release(t);
}

DF_TEST(values_parse_dates_and_timestamps) {
    df_scalar s = parse_ok("2021-02-28", df_type_date32());
    DF_ASSERT_EQ_INT(s.v.i64, 18686);
    parse_bad("2021-02-29", df_type_date32());
    parse_bad("2021-13-01", df_type_date32());
    s = parse_ok("2020-02-29", df_type_date32());
    DF_ASSERT_EQ_INT(s.v.i64, 18321);
    df_type *tz = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    df_type *ntz = df_type_timestamp(DF_UNIT_MICRO, NULL);
    s = parse_ok("1970-01-01 00:00:01.5", tz);
    DF_ASSERT_EQ_INT(s.v.i64, 1500000);
    df_scalar_clear(&s);
    s = parse_ok("1970-01-01T00:00:00.123456Z", tz);
    DF_ASSERT_EQ_INT(s.v.i64, 123456);
    df_scalar_clear(&s);
    s = parse_ok("1970-01-01T01:00:00+01:00", tz);
    DF_ASSERT_EQ_INT(s.v.i64, 0);
    df_scalar_clear(&s);
    s = parse_ok("1969-12-31 23:59:59.999999", ntz);
    DF_ASSERT_EQ_INT(s.v.i64, -1);
    df_scalar_clear(&s);
    s = parse_ok("2021-01-01", ntz);
    DF_ASSERT_EQ_INT(s.v.i64, 18628LL * 86400 * 1000000);
    df_scalar_clear(&s);
    parse_bad("2021-01-01 25:00:00", ntz);
    parse_bad("2021-01-01 10:00:00 junk", ntz);
    df_type_release(tz);
    df_type_release(ntz);
}

/* ------------------------------------------------------------------------ */
/* Log names                                                                 */

DF_TEST(log_names_are_classified) {
    int64_t v;
    int32_t part, nparts;
    bool json;
    DF_ASSERT_EQ_INT(df__delta_log_classify("00000000000000000012.json", &v, &part, &nparts, &json), DF_DELTA_LOG_COMMIT);
    DF_ASSERT_EQ_INT(v, 12);
    DF_ASSERT_EQ_INT(df__delta_log_classify("00000000000000000010.checkpoint.parquet", &v, &part, &nparts, &json),
                     DF_DELTA_LOG_CHECKPOINT);
    DF_ASSERT_EQ_INT(df__delta_log_classify("00000000000000000010.checkpoint.0000000002.0000000003.parquet", &v, &part,
                                            &nparts, &json),
                     DF_DELTA_LOG_MULTIPART);
    DF_ASSERT_EQ_INT(part, 2);
    DF_ASSERT_EQ_INT(nparts, 3);
    DF_ASSERT_EQ_INT(df__delta_log_classify("00000000000000000010.checkpoint.0000000004.0000000003.parquet", &v, &part,
                                            &nparts, &json),
                     DF_DELTA_LOG_OTHER);
    DF_ASSERT_EQ_INT(df__delta_log_classify("00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
                                            &v, &part, &nparts, &json),
                     DF_DELTA_LOG_UUID_CHECKPOINT);
    DF_ASSERT(json);
    const char *other[] = {"00000000000000000000.00000000000000000005.compacted.json", "00000000000000000001.crc",
                           "_last_checkpoint", "0000000000000000001.json", "00000000000000000001.json.tmp",
                           ".00000000000000000001.json.crc", "99999999999999999999.json"};
    for (size_t i = 0; i < DF_ARRAY_LEN(other); i++)
        DF_ASSERT_EQ_INT(df__delta_log_classify(other[i], &v, &part, &nparts, &json), DF_DELTA_LOG_OTHER);
}

/* ------------------------------------------------------------------------ */
/* Schema                                                                    */

DF_TEST(schema_converts_types_and_column_mapping) {
    const char *text =
        "{\"type\":\"struct\",\"fields\":["
        "{\"name\":\"a\",\"type\":\"byte\",\"nullable\":false,\"metadata\":{\"delta.columnMapping.id\":1,"
        "\"delta.columnMapping.physicalName\":\"col-a\"}},"
        "{\"name\":\"d\",\"type\":\"decimal(12, 3)\",\"nullable\":true,\"metadata\":{}},"
        "{\"name\":\"ts\",\"type\":\"timestamp\",\"nullable\":true,\"metadata\":{}},"
        "{\"name\":\"tn\",\"type\":\"timestamp_ntz\",\"nullable\":true,\"metadata\":{}},"
        "{\"name\":\"s\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"date\",\"nullable\":true,"
        "\"metadata\":{\"delta.columnMapping.physicalName\":\"col-x\"}}]},\"nullable\":true,\"metadata\":{}},"
        "{\"name\":\"l\",\"type\":{\"type\":\"array\",\"elementType\":\"string\",\"containsNull\":false},"
        "\"nullable\":true,\"metadata\":{}},"
        "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"keyType\":\"integer\",\"valueType\":\"binary\","
        "\"valueContainsNull\":true},\"nullable\":true,\"metadata\":{}}]}";
    df__delta_schema s;
    df_error err = {0};
    DF_ASSERT_OK(df__delta_schema_parse(text, strlen(text), &s, &err), &err);
    DF_ASSERT_EQ_INT(s.ncolumns, 7);
    DF_ASSERT_EQ_INT(s.schema->nfields, 7);
    DF_ASSERT_EQ_INT(s.schema->fields[0].type->id, DF_TYPE_INT8);
    DF_ASSERT(!s.schema->fields[0].nullable);
    DF_ASSERT_EQ_STR(s.columns[0].physical, "col-a");
    DF_ASSERT_EQ_INT(s.columns[0].field_id, 1);
    DF_ASSERT_EQ_INT(s.schema->fields[1].type->precision, 12);
    DF_ASSERT_EQ_INT(s.schema->fields[1].type->scale, 3);
    DF_ASSERT_EQ_STR(s.schema->fields[2].type->timezone, "UTC");
    DF_ASSERT(s.schema->fields[3].type->timezone == NULL);
    DF_ASSERT(s.has_timestamp_ntz);
    DF_ASSERT_EQ_STR(s.columns[4].children[0].physical, "col-x");
    DF_ASSERT_EQ_INT(s.schema->fields[4].type->children[0].type->id, DF_TYPE_DATE32);
    DF_ASSERT_EQ_INT(s.schema->fields[5].type->id, DF_TYPE_LIST);
    DF_ASSERT(!s.schema->fields[5].type->children[0].nullable);
    DF_ASSERT_EQ_INT(s.schema->fields[6].type->id, DF_TYPE_MAP);
    df__delta_schema_clear(&s);
}

DF_TEST(schema_rejects_bad_and_variant_types) {
    df__delta_schema s;
    const char *bad[] = {
        "{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"uuid\",\"nullable\":true}]}",
        "{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"decimal(40,2)\",\"nullable\":true}]}",
        "{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\"},{\"name\":\"A\",\"type\":\"long\"}]}",
        "{\"type\":\"array\",\"elementType\":\"long\"}",
        "{\"type\":\"struct\",\"fields\":[{\"type\":\"long\"}]}",
        "not json",
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(bad); i++) {
        if (df__delta_schema_parse(bad[i], strlen(bad[i]), &s, NULL) != DF_ERR_DELTA_SOURCE_SCHEMA)
            df_test_fail(__FILE__, __LINE__, "accepted schema %s", bad[i]);
        DF_ASSERT(s.schema == NULL);
    }
    const char *variant = "{\"type\":\"struct\",\"fields\":[{\"name\":\"v\",\"type\":\"variant\",\"nullable\":true}]}";
    df_error err = {0};
    DF_ASSERT_KIND(df__delta_schema_parse(variant, strlen(variant), &s, &err), DF_ERR_DELTA_PROTOCOL);
    DF_ASSERT_EQ_STR(err.message, "unsupported Delta reader feature `variantType`");
}

/* ------------------------------------------------------------------------ */
/* Conforming vectors                                                        */

DF_TEST(conform_widens_integers_decimals_and_dates) {
    df_vec *v;
    DF_ASSERT_OK(df_vec_new(df_type_int16(), 3, 0, &v, NULL), (df_error *)NULL);
    int16_t *x = DF_VEC_VALUES(v, int16_t);
    x[0] = -5;
    x[1] = 300;
    x[2] = 7;
    df_vec_set_length(v, 3);
    DF_ASSERT_OK(df_vec_set_null(v, 2, NULL), (df_error *)NULL);
    df__delta_column col = {"c", "c", -1, df_type_int64(), true, 0, NULL};
    df_vec *o;
    DF_ASSERT_OK(df__delta_conform(v, &col, &o, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_INT(o->type->id, DF_TYPE_INT64);
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(o, int64_t)[1], 300);
    DF_ASSERT(df_vec_is_null(o, 2));
    df_vec_release(o);
    col.type = df_type_decimal(6, 2);
    DF_ASSERT_OK(df__delta_conform(v, &col, &o, NULL), (df_error *)NULL);
    DF_ASSERT(DF_VEC_VALUES(o, df_i128)[0] == -500);
    DF_ASSERT(DF_VEC_VALUES(o, df_i128)[1] == 30000);
    df_vec_release(o);
    df_type_release(col.type);
    col.type = df_type_decimal(4, 2); /* 300 -> 300.00 needs 5 digits */
    DF_ASSERT_KIND(df__delta_conform(v, &col, &o, NULL), DF_ERR_CAST);
    df_type_release(col.type);
    col.type = df_type_int8(); /* narrowing with a value out of range */
    DF_ASSERT_KIND(df__delta_conform(v, &col, &o, NULL), DF_ERR_CAST);
    col.type = df_type_utf8();
    DF_ASSERT_KIND(df__delta_conform(v, &col, &o, NULL), DF_ERR_DELTA_SOURCE_SCHEMA);
    df_vec_release(v);

    DF_ASSERT_OK(df_vec_new(df_type_date32(), 2, 0, &v, NULL), (df_error *)NULL);
    DF_VEC_VALUES(v, int32_t)[0] = 1;
    DF_VEC_VALUES(v, int32_t)[1] = -1;
    df_vec_set_length(v, 2);
    col.type = df_type_timestamp(DF_UNIT_MICRO, NULL);
    DF_ASSERT_OK(df__delta_conform(v, &col, &o, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(o, int64_t)[0], 86400000000LL);
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(o, int64_t)[1], -86400000000LL);
    df_vec_release(o);
    df_type_release(col.type);
    df_vec_release(v);
}

DF_TEST(conform_renames_struct_fields_and_fills_missing) {
    /* File struct {col-x: int32} -> table struct {x: int64 (physical col-x), y: utf8 (absent)}. */
    df_field ff = {"col-x", df_type_int32(), true};
    df_type *ft = df_type_struct(&ff, 1);
    df_vec *v;
    DF_ASSERT_OK(df_vec_new(ft, 2, 0, &v, NULL), (df_error *)NULL);
    DF_VEC_VALUES(v->children[0], int32_t)[0] = 4;
    DF_VEC_VALUES(v->children[0], int32_t)[1] = 5;
    df_vec_set_length(v->children[0], 2);
    df_vec_set_length(v, 2);
    df__delta_column kids[2] = {{"x", "col-x", 1, df_type_int64(), true, 0, NULL},
                                {"y", "col-y", 2, df_type_utf8(), true, 0, NULL}};
    df_field tf[2] = {{"x", df_type_int64(), true}, {"y", df_type_utf8(), true}};
    df__delta_column col = {"s", "col-s", 0, df_type_struct(tf, 2), true, 2, kids};
    df_vec *o;
    df_error err = {0};
    DF_ASSERT_OK(df__delta_conform(v, &col, &o, &err), &err);
    DF_ASSERT(df_type_equals(o->type, col.type));
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(o->children[0], int64_t)[1], 5);
    DF_ASSERT(df_vec_is_null(o->children[1], 0));
    DF_ASSERT_OK(df_vec_validate(o, true, &err), &err);
    df_vec_release(o);
    df_vec_release(v);
    df_type_release(col.type);
    df_type_release(ft);
}

/* ------------------------------------------------------------------------ */
/* Snapshots over JSON commits                                               */

DF_TEST(snapshot_replays_adds_and_removes_newest_first) {
    char *dir = make_table();
    commit(dir, 0, PROTOCOL_1 METADATA_P ADD("p=a/f1.parquet", "\"a\"", 3) ADD("p=b/f2.parquet", "\"b\"", 4));
    commit(dir, 1, REMOVE("p=a/f1.parquet") ADD("p=c/f3.parquet", "null", 5));
    commit(dir, 2, ADD("p=a/f1.parquet", "\"a\"", 3) REMOVE("p=b/f2.parquet"));
    write_file(dir, "_delta_log/00000000000000000002.crc", "{}");
    write_file(dir, "_delta_log/00000000000000000000.00000000000000000001.compacted.json", "garbage");
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_version(s), 2);
    DF_ASSERT_EQ_INT(df_delta_snapshot_checkpoint_version(s), -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 2);
    DF_ASSERT_EQ_STR(file_path(s, 0), "p=a/f1.parquet");
    DF_ASSERT_EQ_STR(file_path(s, 1), "p=c/f3.parquet");
    df_scalar pv;
    DF_ASSERT_OK(df_delta_snapshot_partition_value(s, 1, 0, &pv, NULL), (df_error *)NULL);
    DF_ASSERT(pv.is_null);
    df_scalar_clear(&pv);
    DF_ASSERT_OK(df_delta_snapshot_partition_value(s, 0, 0, &pv, NULL), (df_error *)NULL);
    DF_ASSERT(!pv.is_null && pv.v.bytes.len == 1 && pv.v.bytes.ptr[0] == 'a');
    df_scalar_clear(&pv);
    DF_ASSERT_EQ_STR(df_delta_snapshot_property(s, "k"), "v");
    DF_ASSERT_EQ_STR(df_delta_snapshot_metadata(s)->partition_columns[0], "p");
    df_buf facts;
    df_buf_init(&facts, 0);
    DF_ASSERT_OK(df_delta_snapshot_facts_json(s, true, &facts, NULL), (df_error *)NULL);
    DF_ASSERT(strstr(facts.data, "\"num_files\":2") != NULL);
    DF_ASSERT(strstr(facts.data, "\"num_records\":8") != NULL);
    df_buf_free(&facts);
    df_delta_snapshot_close(s);
    /* Time travel. */
    s = open_ok(dir, 0);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 2);
    DF_ASSERT_EQ_STR(file_path(s, 1), "p=b/f2.parquet");
    df_delta_snapshot_close(s);
    s = open_ok(dir, 1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 2);
    DF_ASSERT_EQ_STR(file_path(s, 0), "p=b/f2.parquet");
    df_delta_snapshot_close(s);
    char msg[512];
    DF_ASSERT_KIND(open_fail(dir, 3, msg, sizeof msg), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT(strstr(msg, "latest version is 2") != NULL);
    remove_table(dir);
}

DF_TEST(snapshot_reconciles_deletion_vector_updates) {
    char *dir = make_table();
    const char *dv1 = "\"deletionVector\":{\"storageType\":\"u\",\"pathOrInlineDv\":\"vBn[lx{q8@P<9BNH/isA\","
                      "\"offset\":1,\"sizeInBytes\":36,\"cardinality\":2}";
    char c0[2048], c1[2048];
    snprintf(c0, sizeof c0, PROTOCOL_1 METADATA_P ADD("f.parquet", "\"a\"", 10));
    snprintf(c1, sizeof c1,
             "{\"remove\":{\"path\":\"f.parquet\",\"dataChange\":true}}\n"
             "{\"add\":{\"path\":\"f.parquet\",\"partitionValues\":{\"p\":\"a\"},\"size\":1,\"modificationTime\":1,"
             "\"dataChange\":true,%s}}\n",
             dv1);
    commit(dir, 0, c0);
    commit(dir, 1, c1);
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 1);
    df_delta_file_info info;
    DF_ASSERT_OK(df_delta_snapshot_file(s, 0, &info, NULL), (df_error *)NULL);
    DF_ASSERT(info.has_deletion_vector);
    DF_ASSERT_EQ_INT(info.deleted_rows, 2);
    df_delta_snapshot_close(s);
    remove_table(dir);
}

DF_TEST(snapshot_canonicalizes_paths_for_reconciliation) {
    char *dir = make_table();
    commit(dir, 0, PROTOCOL_1 METADATA_P ADD("/some/abs/with%20space/p@%23h", "\"a\"", 1) ADD("rel%3Dx.parquet", "\"a\"", 1));
    char c1[1024];
    snprintf(c1, sizeof c1, REMOVE("file:///some/abs/with%%20space/p@%%23h") REMOVE("file://%s/rel=x.parquet"), dir);
    commit(dir, 1, c1);
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 0);
    df_delta_snapshot_close(s);
    s = open_ok(dir, 0);
    df_delta_file_info info;
    DF_ASSERT_OK(df_delta_snapshot_file(s, 0, &info, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(info.location, "/some/abs/with space/p@#h");
    df_delta_snapshot_close(s);
    remove_table(dir);
}

DF_TEST(snapshot_errors_for_gaps_missing_logs_and_early_versions) {
    char msg[512];
    char *dir = make_table();
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT(strstr(msg, "no Delta log found at") != NULL);
    commit(dir, 0, PROTOCOL_1 METADATA_P);
    commit(dir, 2, ADD("x.parquet", "\"a\"", 1));
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT(strstr(msg, "not contiguous") != NULL);
    df_delta_snapshot *s = open_ok(dir, 0); /* version 0 alone is fine */
    df_delta_snapshot_close(s);
    remove_table(dir);

    dir = make_table();
    commit(dir, 3, PROTOCOL_1 METADATA_P);
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT(strstr(msg, "starts at version 3") != NULL);
    remove_table(dir);

    DF_ASSERT_KIND(open_fail("/nonexistent/table/dir", -1, msg, sizeof msg), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT(strstr(msg, "no Delta log found at /nonexistent/table/dir") != NULL);
    DF_ASSERT_KIND(open_fail("", -1, NULL, 0), DF_ERR_INVALID_SOURCE_URI);

    dir = make_table();
    commit(dir, 0, ADD("x.parquet", "\"a\"", 1));
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT(strstr(msg, "no protocol action") != NULL);
    remove_table(dir);
}

DF_TEST(snapshot_protocol_gate) {
    char msg[512];
    char *dir = make_table();
    commit(dir, 0, "{\"protocol\":{\"minReaderVersion\":4,\"minWriterVersion\":7}}\n" METADATA_P);
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_PROTOCOL);
    DF_ASSERT_EQ_STR(msg, "unsupported Delta minReaderVersion 4");
    commit(dir, 0,
           "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"deletionVectors\","
           "\"catalogManaged\",\"variantType\"],\"writerFeatures\":[]}}\n" METADATA_P);
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_PROTOCOL);
    DF_ASSERT_EQ_STR(msg, "unsupported Delta reader feature `catalogManaged`");
    commit(dir, 0,
           "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"deletionVectors\","
           "\"columnMapping\",\"timestampNtz\",\"typeWidening\",\"typeWidening-preview\",\"v2Checkpoint\","
           "\"vacuumProtocolCheck\"],\"writerFeatures\":[\"appendOnly\",\"domainMetadata\"]}}\n" METADATA_P);
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_protocol(s)->nreader_features, 7);
    DF_ASSERT_EQ_INT(df_delta_snapshot_protocol(s)->nwriter_features, 2);
    df_delta_snapshot_close(s);
    /* A newer protocol wins over the one in commit 0. */
    commit(dir, 1, "{\"protocol\":{\"minReaderVersion\":99,\"minWriterVersion\":7}}\n");
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_PROTOCOL);
    DF_ASSERT_EQ_STR(msg, "unsupported Delta minReaderVersion 99");
    s = open_ok(dir, 0);
    df_delta_snapshot_close(s);
    remove_table(dir);
}

DF_TEST(snapshot_column_mapping_partition_values_by_physical_name) {
    char *dir = make_table();
    commit(dir, 0,
           "{\"protocol\":{\"minReaderVersion\":2,\"minWriterVersion\":5}}\n"
           "{\"metaData\":{\"id\":\"t\",\"format\":{\"provider\":\"parquet\"},\"schemaString\":\"{\\\"type\\\":"
           "\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"d\\\",\\\"type\\\":\\\"date\\\",\\\"nullable\\\":true,"
           "\\\"metadata\\\":{\\\"delta.columnMapping.id\\\":1,\\\"delta.columnMapping.physicalName\\\":\\\"col-1\\\"}}"
           "]}\",\"partitionColumns\":[\"d\"],\"configuration\":{\"delta.columnMapping.mode\":\"name\"}}}\n"
           "{\"add\":{\"path\":\"a.parquet\",\"partitionValues\":{\"col-1\":\"2021-01-02\"},\"size\":1,"
           "\"modificationTime\":1,\"dataChange\":true}}\n");
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_STR(df_delta_snapshot_column_mapping_mode(s), "name");
    df_scalar pv;
    DF_ASSERT_OK(df_delta_snapshot_partition_value(s, 0, 0, &pv, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_INT(pv.v.i64, 18629);
    df_scalar_clear(&pv);
    df_delta_snapshot_close(s);
    remove_table(dir);
}

DF_TEST(snapshot_newest_metadata_wins_and_bad_lines_fail) {
    char *dir = make_table();
    commit(dir, 0, PROTOCOL_1 METADATA_P);
    commit(dir, 1,
           "{\"metaData\":{\"id\":\"t2\",\"format\":{\"provider\":\"parquet\"},\"schemaString\":\"{\\\"type\\\":"
           "\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"z\\\",\\\"type\\\":\\\"double\\\",\\\"nullable\\\":true,"
           "\\\"metadata\\\":{}}]}\",\"partitionColumns\":[]}}\n"
           "{\"commitInfo\":{\"operation\":\"WRITE\"}}\n{\"futureAction\":{\"x\":1}}\n");
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_STR(df_delta_snapshot_metadata(s)->id, "t2");
    DF_ASSERT_EQ_INT(df_delta_snapshot_schema(s)->nfields, 1);
    DF_ASSERT_EQ_STR(df_delta_snapshot_schema(s)->fields[0].name, "z");
    df_delta_snapshot_close(s);
    commit(dir, 2, ADD("x.parquet", "\"a\"", 1) "{\"add\":{\"path\":\n");
    char msg[512];
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_LOG_FORMAT);
    DF_ASSERT(strstr(msg, "00000000000000000002.json line 2") != NULL);
    commit(dir, 2, "{\"add\":{\"partitionValues\":{}}}\n");
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_LOG_FORMAT);
    DF_ASSERT(strstr(msg, "without a path") != NULL);
    remove_table(dir);
}

DF_TEST(snapshot_json_v2_checkpoint_with_json_sidecar_path) {
    /* A UUID-named JSON checkpoint at version 1 replaces commits 0 and 1 (which are corrupt here). */
    char *dir = make_table();
    commit(dir, 0, "garbage\n");
    commit(dir, 1, "garbage\n");
    write_file(dir, "_delta_log/00000000000000000001.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
               "{\"checkpointMetadata\":{\"version\":1}}\n" PROTOCOL_1 METADATA_P ADD("c.parquet", "\"z\"", 7)
               "{\"remove\":{\"path\":\"old.parquet\",\"dataChange\":false}}\n");
    commit(dir, 2, ADD("d.parquet", "\"z\"", 1));
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_checkpoint_version(s), 1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 2);
    df_delta_snapshot_close(s);
    /* Before the checkpoint, the corrupt commits are needed and fail. */
    DF_ASSERT_KIND(open_fail(dir, 0, NULL, 0), DF_ERR_DELTA_LOG_FORMAT);
    remove_table(dir);
}

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */

DF_TEST(stats_bounds_follow_truncation_rules) {
    char *dir = make_table();
    commit(dir, 0,
           "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
           "{\"metaData\":{\"id\":\"t\",\"format\":{\"provider\":\"parquet\"},\"schemaString\":\"{\\\"type\\\":"
           "\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"ts\\\",\\\"type\\\":\\\"timestamp\\\",\\\"nullable\\\":true,"
           "\\\"metadata\\\":{}},{\\\"name\\\":\\\"s\\\",\\\"type\\\":\\\"string\\\",\\\"nullable\\\":true,"
           "\\\"metadata\\\":{}},{\\\"name\\\":\\\"d\\\",\\\"type\\\":\\\"decimal(20,2)\\\",\\\"nullable\\\":true,"
           "\\\"metadata\\\":{}}]}\",\"partitionColumns\":[]}}\n");
    df_delta_snapshot *s = open_ok(dir, -1);
    const char *stats = "{\"numRecords\":10,\"tightBounds\":false,\"minValues\":{\"ts\":\"2021-01-01T00:00:00.001Z\","
                        "\"s\":\"abcdefghijklmnopqrstuvwxyz0123456789\",\"d\":123456789012345678.91},"
                        "\"maxValues\":{\"ts\":\"2021-01-01T00:00:00.002Z\",\"s\":\"short\",\"d\":1e2},"
                        "\"nullCount\":{\"ts\":3,\"s\":0,\"d\":10}}";
    df_arena a;
    df_arena_init(&a, 0, 0);
    int32_t fields[3] = {0, 1, 2};
    df_column_stats st[3];
    int64_t nrec;
    df_error err = {0};
    DF_ASSERT_OK(df__delta_stats_columns(s, stats, &a, fields, 3, st, &nrec, &err), &err);
    DF_ASSERT_EQ_INT(nrec, 10);
    DF_ASSERT(st[0].has_min && st[0].has_max && !st[0].max_exact);
    DF_ASSERT_EQ_INT(st[0].max.v.i64 - st[0].min.v.i64, 1999);
    DF_ASSERT(!st[0].has_null_count); /* 3 of 10 under wide bounds carries no information */
    DF_ASSERT(st[1].has_min && !st[1].min_exact);
    DF_ASSERT(st[1].has_max);
    DF_ASSERT(st[1].has_null_count && st[1].null_count == 0);
    DF_ASSERT(st[2].has_min && st[2].min.v.i128 == (df_i128)12345678901234567891ULL);
    DF_ASSERT(st[2].max.v.i128 == 10000);
    DF_ASSERT(st[2].has_null_count && st[2].null_count == 10);
    for (int i = 0; i < 3; i++) {
        df_scalar_clear(&st[i].min);
        df_scalar_clear(&st[i].max);
    }
    DF_ASSERT_KIND(df__delta_stats_columns(s, "{\"numRecords\":", &a, fields, 3, st, &nrec, NULL),
                   DF_ERR_DELTA_LOG_FORMAT);
    df_arena_destroy(&a);
    df_delta_snapshot_close(s);
    remove_table(dir);
}

DF_TEST(snapshot_falls_back_to_an_older_checkpoint_when_one_is_damaged) {
    char *dir = make_table();
    commit(dir, 0, PROTOCOL_1 METADATA_P ADD("a.parquet", "\"x\"", 1));
    commit(dir, 1, ADD("b.parquet", "\"x\"", 1));
    commit(dir, 2, ADD("c.parquet", "\"x\"", 1));
    write_file(dir, "_delta_log/00000000000000000001.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", "{broken\n");
    df_delta_snapshot *s = open_ok(dir, -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_checkpoint_version(s), -1);
    DF_ASSERT_EQ_INT(df_delta_snapshot_num_files(s), 3);
    df_delta_snapshot_close(s);
    /* Without commit 0 nothing older can be used: the checkpoint's error is reported. */
    char path[512];
    snprintf(path, sizeof path, "%s/_delta_log/00000000000000000000.json", dir);
    remove(path);
    char msg[512];
    DF_ASSERT_KIND(open_fail(dir, -1, msg, sizeof msg), DF_ERR_DELTA_LOG_FORMAT);
    DF_ASSERT(strstr(msg, "checkpoint") != NULL);
    remove_table(dir);
}

static long alloc_count, alloc_fail_at;
static void *failing_malloc(size_t n, void *u) {
    (void)u;
    return alloc_count++ == alloc_fail_at ? NULL : malloc(n);
}
static void *failing_realloc(void *p, size_t n, void *u) {
    (void)u;
    return alloc_count++ == alloc_fail_at ? NULL : realloc(p, n);
}
static void plain_free(void *p, void *u) {
    (void)u;
    free(p);
}

DF_TEST(snapshot_open_survives_every_allocation_failure) {
    char *dir = make_table();
    commit(dir, 0, PROTOCOL_1 METADATA_P ADD("p=a/f1.parquet", "\"a\"", 3) ADD("p=b/f2.parquet", "null", 4));
    commit(dir, 1, REMOVE("p=a/f1.parquet") ADD("p=c/f%203.parquet", "\"c\"", 5));
    df_allocator fa = {failing_malloc, failing_realloc, plain_free, NULL};
    for (alloc_fail_at = 0;; alloc_fail_at++) {
        alloc_count = 0;
        df_set_allocator(&fa);
        df_delta_snapshot *s = NULL;
        df_error err = {0};
        df_errkind k = df_delta_snapshot_open(dir, -1, NULL, NULL, 0, &s, &err);
        df_buf facts;
        df_buf_init(&facts, 0);
        if (k == DF_OK) k = df_delta_snapshot_facts_json(s, true, &facts, &err);
        df_scalar pv = {0};
        if (k == DF_OK) k = df_delta_snapshot_partition_value(s, 0, 0, &pv, &err);
        df_scalar_clear(&pv);
        df_buf_free(&facts);
        df_delta_snapshot_close(s);
        df_error_clear(&err);
        df_set_allocator(NULL);
        if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY && k != DF_ERR_IO)
            df_test_fail(__FILE__, __LINE__, "kind %s at allocation %ld", df_errkind_name(k), alloc_fail_at);
        if (alloc_count <= alloc_fail_at) break;
    }
    DF_ASSERT(alloc_fail_at > 20);
    remove_table(dir);
}
