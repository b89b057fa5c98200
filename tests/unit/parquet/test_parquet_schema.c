/*
 * Unit tests of the Parquet -> Arrow schema conversion (type mapping,
 * standard and legacy list/map layouts, levels) from schema elements built
 * by hand, and a replay of hostile variants of the shared conformance
 * corpus (run under ASan/UBSan in sanitizer builds).
 */
#include "df_test.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "parquet/parquet.h"
#include "parquet/schema_map.h"
#include "parquet_test_util.h"

/* A schema element; `children` >= 0 makes a group. */
static pq_schema_element el(const char *name, int type, int rep, int children) {
    pq_schema_element e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.type = type;
    e.repetition = rep;
    e.num_children = children;
    e.type_length = e.converted_type = e.scale = e.precision = e.field_id = -1;
    return e;
}

static pq_schema_element conv(pq_schema_element e, int ct) {
    e.converted_type = ct;
    return e;
}

static pq_schema_element logical(pq_schema_element e, int kind) {
    e.logical.kind = kind;
    return e;
}

enum { REQ = PQ_REQUIRED, OPT = PQ_OPTIONAL, REP = PQ_REPEATED, GRP = -1 };

static df_type *build_one(const pq_schema_element *e, uint32_t n, pq_schema *s) {
    df_error e_ = {0}, *err = &e_;
    DF_ASSERT_OK(df__parquet_schema_build(e, n, s, err), err);
    return s->arrow->fields[0].type;
}

/* A rendering of a type owned by this test (independent of the display format of columnar). */
static void type_str(const df_type *t, df_buf *b) {
    static const char *const names[DF_TYPE_ID_COUNT_] = {
        [DF_TYPE_NULL] = "null",       [DF_TYPE_BOOL] = "bool",          [DF_TYPE_INT8] = "int8",
        [DF_TYPE_INT16] = "int16",     [DF_TYPE_INT32] = "int32",        [DF_TYPE_INT64] = "int64",
        [DF_TYPE_UINT8] = "uint8",     [DF_TYPE_UINT16] = "uint16",      [DF_TYPE_UINT32] = "uint32",
        [DF_TYPE_UINT64] = "uint64",   [DF_TYPE_FLOAT16] = "float16",    [DF_TYPE_FLOAT32] = "float32",
        [DF_TYPE_FLOAT64] = "float64", [DF_TYPE_DECIMAL128] = "decimal128", [DF_TYPE_DECIMAL256] = "decimal256",
        [DF_TYPE_DATE32] = "date32",   [DF_TYPE_TIME32] = "time32",      [DF_TYPE_TIME64] = "time64",
        [DF_TYPE_TIMESTAMP] = "timestamp", [DF_TYPE_UTF8] = "utf8",      [DF_TYPE_BINARY] = "binary",
        [DF_TYPE_FIXED_BINARY] = "fixed", [DF_TYPE_LIST] = "list",       [DF_TYPE_STRUCT] = "struct",
        [DF_TYPE_MAP] = "map",
    };
    static const char *const units[] = {"s", "ms", "us", "ns"};
    df_buf_append_str(b, names[t->id] ? names[t->id] : "?", NULL);
    switch (t->id) {
    case DF_TYPE_DECIMAL128:
    case DF_TYPE_DECIMAL256: df_buf_printf(b, NULL, "(%d,%d)", t->precision, t->scale); break;
    case DF_TYPE_TIME32:
    case DF_TYPE_TIME64: df_buf_printf(b, NULL, "(%s)", units[t->unit]); break;
    case DF_TYPE_TIMESTAMP: df_buf_printf(b, NULL, "(%s,%s)", units[t->unit], t->timezone ? t->timezone : "-"); break;
    case DF_TYPE_FIXED_BINARY: df_buf_printf(b, NULL, "(%d)", t->byte_width); break;
    case DF_TYPE_LIST:
    case DF_TYPE_STRUCT:
        df_buf_append_char(b, '(', NULL);
        for (int32_t i = 0; i < t->nchildren; i++) {
            if (i) df_buf_append_char(b, ',', NULL);
            if (t->id == DF_TYPE_STRUCT) df_buf_printf(b, NULL, "%s:", t->children[i].name);
            type_str(t->children[i].type, b);
        }
        df_buf_append_char(b, ')', NULL);
        break;
    case DF_TYPE_MAP: {
        const df_type *e = t->children[0].type;
        df_buf_append_char(b, '(', NULL);
        type_str(e->children[0].type, b);
        df_buf_append_char(b, ',', NULL);
        type_str(e->children[1].type, b);
        df_buf_append_char(b, ')', NULL);
        break;
    }
    default: break;
    }
}

static void expect_display(const df_type *t, const char *want) {
    df_buf b;
    df_buf_init(&b, 0);
    type_str(t, &b);
    DF_ASSERT_EQ_STR(b.data, want);
    df_buf_free(&b);
}

DF_TEST(primitive_type_mapping) {
    struct {
        pq_schema_element e;
        const char *want;
    } cases[] = {
        {conv(el("a", DF_PARQUET_INT32, OPT, -1), PQ_CT_INT_8), "int8"},
        {conv(el("a", DF_PARQUET_INT32, OPT, -1), PQ_CT_UINT_16), "uint16"},
        {conv(el("a", DF_PARQUET_INT32, OPT, -1), PQ_CT_DATE), "date32"},
        {conv(el("a", DF_PARQUET_INT32, OPT, -1), PQ_CT_TIME_MILLIS), "time32(ms)"},
        {conv(el("a", DF_PARQUET_INT64, OPT, -1), PQ_CT_TIMESTAMP_MILLIS), "timestamp(ms,UTC)"},
        {conv(el("a", DF_PARQUET_INT64, OPT, -1), PQ_CT_UINT_64), "uint64"},
        {el("a", DF_PARQUET_INT96, OPT, -1), "timestamp(us,-)"},
        {conv(el("a", DF_PARQUET_BYTE_ARRAY, OPT, -1), PQ_CT_UTF8), "utf8"},
        {conv(el("a", DF_PARQUET_BYTE_ARRAY, OPT, -1), PQ_CT_JSON), "utf8"},
        {conv(el("a", DF_PARQUET_BYTE_ARRAY, OPT, -1), PQ_CT_BSON), "binary"},
        {el("a", DF_PARQUET_BYTE_ARRAY, OPT, -1), "binary"},
        {logical(el("a", DF_PARQUET_BYTE_ARRAY, OPT, -1), PQ_LT_UNKNOWN_ID), "binary"},
        {logical(el("a", DF_PARQUET_INT32, OPT, -1), PQ_LT_NULL), "null"},
        {el("a", DF_PARQUET_FLOAT, OPT, -1), "float32"},
        {el("a", DF_PARQUET_BOOLEAN, OPT, -1), "bool"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        pq_schema_element e[2] = {el("schema", GRP, -1, 1), cases[i].e};
        pq_schema s;
        expect_display(build_one(e, 2, &s), cases[i].want);
        DF_ASSERT_EQ_INT(s.leaves[0].max_def, 1);
        df__parquet_schema_free(&s);
    }
}

DF_TEST(logical_types_decimals_and_fixed_width) {
    pq_schema s;
    pq_schema_element ts = logical(el("t", DF_PARQUET_INT64, REQ, -1), PQ_LT_TIMESTAMP);
    ts.logical.unit = DF_UNIT_NANO;
    ts.logical.utc = false;
    pq_schema_element e1[2] = {el("schema", GRP, -1, 1), ts};
    expect_display(build_one(e1, 2, &s), "timestamp(ns,-)");
    DF_ASSERT_EQ_INT(s.leaves[0].max_def, 0);
    df__parquet_schema_free(&s);

    pq_schema_element d = logical(el("d", DF_PARQUET_FIXED_LEN_BYTE_ARRAY, OPT, -1), PQ_LT_DECIMAL);
    d.type_length = 16;
    d.logical.precision = 38;
    d.logical.scale = 10;
    pq_schema_element e2[2] = {el("schema", GRP, -1, 1), d};
    expect_display(build_one(e2, 2, &s), "decimal128(38,10)");
    DF_ASSERT_EQ_INT(s.leaves[0].conv, PQ_CONV_BE_TO_DEC);
    df__parquet_schema_free(&s);
    d.type_length = 17;
    d.logical.precision = 40;
    pq_schema_element e3[2] = {el("schema", GRP, -1, 1), d};
    expect_display(build_one(e3, 2, &s), "decimal256(40,10)");
    df__parquet_schema_free(&s);

    pq_schema_element u = logical(el("u", DF_PARQUET_FIXED_LEN_BYTE_ARRAY, OPT, -1), PQ_LT_UUID);
    u.type_length = 16;
    pq_schema_element e4[2] = {el("schema", GRP, -1, 1), u};
    expect_display(build_one(e4, 2, &s), "fixed(16)");
    df__parquet_schema_free(&s);

    pq_schema_element h = logical(el("h", DF_PARQUET_FIXED_LEN_BYTE_ARRAY, OPT, -1), PQ_LT_FLOAT16);
    h.type_length = 2;
    pq_schema_element e5[2] = {el("schema", GRP, -1, 1), h};
    expect_display(build_one(e5, 2, &s), "float16");
    df__parquet_schema_free(&s);

    /* Invalid combinations are format errors. */
    df_error e_ = {0}, *err = &e_;
    pq_schema_element bad = conv(el("b", DF_PARQUET_INT64, OPT, -1), PQ_CT_DECIMAL);
    bad.precision = 20;
    pq_schema_element e6[2] = {el("schema", GRP, -1, 1), bad};
    DF_ASSERT_KIND(df__parquet_schema_build(e6, 2, &s, err), DF_ERR_PARQUET_FORMAT);
    pq_schema_element e7[2] = {el("schema", GRP, -1, 1), conv(el("b", DF_PARQUET_INT64, OPT, -1), PQ_CT_INT_8)};
    DF_ASSERT_KIND(df__parquet_schema_build(e7, 2, &s, err), DF_ERR_PARQUET_FORMAT);
    pq_schema_element e8[2] = {el("schema", GRP, -1, 1), conv(el("b", DF_PARQUET_INT64, OPT, -1), PQ_CT_TIME_MILLIS)};
    DF_ASSERT_KIND(df__parquet_schema_build(e8, 2, &s, err), DF_ERR_PARQUET_FORMAT);
}

DF_TEST(standard_and_legacy_lists) {
    pq_schema s;
    /* optional group a (LIST) { repeated group list { optional int32 element; } } */
    pq_schema_element three[4] = {el("schema", GRP, -1, 1), conv(el("a", GRP, OPT, 1), PQ_CT_LIST),
                                  el("list", GRP, REP, 1), el("element", DF_PARQUET_INT32, OPT, -1)};
    expect_display(build_one(three, 4, &s), "list(int32)");
    DF_ASSERT_EQ_INT(s.leaves[0].max_def, 3);
    DF_ASSERT_EQ_INT(s.leaves[0].max_rep, 1);
    DF_ASSERT_EQ_STR(s.leaves[0].path, "a.list.element");
    DF_ASSERT_EQ_STR(s.arrow->fields[0].type->children[0].name, "element");
    DF_ASSERT(s.arrow->fields[0].nullable);
    df__parquet_schema_free(&s);
    /* required group a (LIST) { repeated int32 array; }: 2-level, elements required. */
    pq_schema_element two[3] = {el("schema", GRP, -1, 1), conv(el("a", GRP, REQ, 1), PQ_CT_LIST),
                                el("array", DF_PARQUET_INT32, REP, -1)};
    expect_display(build_one(two, 3, &s), "list(int32)");
    DF_ASSERT_EQ_INT(s.leaves[0].max_def, 1);
    DF_ASSERT(!s.arrow->fields[0].type->children[0].nullable);
    DF_ASSERT(!s.arrow->fields[0].nullable);
    df__parquet_schema_free(&s);
    /* A one-field group named "array" or "<list>_tuple" is itself the element (a struct). */
    const char *names[2] = {"array", "a_tuple"};
    for (int i = 0; i < 2; i++) {
        pq_schema_element arr[4] = {el("schema", GRP, -1, 1), conv(el("a", GRP, OPT, 1), PQ_CT_LIST),
                                    el(names[i], GRP, REP, 1), el("x", DF_PARQUET_INT64, OPT, -1)};
        expect_display(build_one(arr, 4, &s), "list(struct(x:int64))");
        DF_ASSERT_EQ_INT(s.leaves[0].max_def, 3);
        df__parquet_schema_free(&s);
    }
    /* A repeated field without annotation: a required list of required elements. */
    pq_schema_element bare[2] = {el("schema", GRP, -1, 1), el("r", DF_PARQUET_INT32, REP, -1)};
    expect_display(build_one(bare, 2, &s), "list(int32)");
    DF_ASSERT(!s.arrow->fields[0].nullable);
    DF_ASSERT_EQ_INT(s.leaves[0].max_def, 1);
    DF_ASSERT_EQ_INT(s.leaves[0].max_rep, 1);
    df__parquet_schema_free(&s);
    /* Malformed LIST groups. */
    df_error e_ = {0}, *err = &e_;
    pq_schema_element twokids[4] = {el("schema", GRP, -1, 1), conv(el("a", GRP, OPT, 2), PQ_CT_LIST),
                                    el("x", DF_PARQUET_INT32, REP, -1), el("y", DF_PARQUET_INT32, REP, -1)};
    DF_ASSERT_KIND(df__parquet_schema_build(twokids, 4, &s, err), DF_ERR_PARQUET_FORMAT);
    pq_schema_element notrep[3] = {el("schema", GRP, -1, 1), conv(el("a", GRP, OPT, 1), PQ_CT_LIST),
                                   el("x", DF_PARQUET_INT32, OPT, -1)};
    DF_ASSERT_KIND(df__parquet_schema_build(notrep, 3, &s, err), DF_ERR_PARQUET_FORMAT);
}

DF_TEST(maps_standard_legacy_and_optional_keys) {
    pq_schema s;
    for (int variant = 0; variant < 3; variant++) {
        pq_schema_element m[5] = {
            el("schema", GRP, -1, 1),
            conv(el("m", GRP, OPT, 1), variant == 1 ? PQ_CT_MAP_KEY_VALUE : PQ_CT_MAP),
            conv(el("key_value", GRP, REP, 2), variant == 1 ? PQ_CT_MAP_KEY_VALUE : -1),
            conv(el("key", DF_PARQUET_BYTE_ARRAY, variant == 2 ? OPT : REQ, -1), PQ_CT_UTF8),
            el("value", DF_PARQUET_INT64, OPT, -1),
        };
        expect_display(build_one(m, 5, &s), "map(utf8,int64)");
        DF_ASSERT_EQ_INT(s.nleaves, 2);
        DF_ASSERT_EQ_INT(s.leaves[1].max_def, variant == 2 ? 3 : 3);
        DF_ASSERT_EQ_INT(s.leaves[0].max_def, variant == 2 ? 3 : 2);
        DF_ASSERT_EQ_INT(s.leaves[1].max_rep, 1);
        DF_ASSERT_EQ_STR(s.leaves[1].path, "m.key_value.value");
        df__parquet_schema_free(&s);
    }
    /* A key-only map reads as a list of keys. */
    pq_schema_element keys[4] = {el("schema", GRP, -1, 1), conv(el("m", GRP, OPT, 1), PQ_CT_MAP),
                                 el("key_value", GRP, REP, 1), el("key", DF_PARQUET_INT32, REQ, -1)};
    expect_display(build_one(keys, 4, &s), "list(int32)");
    df__parquet_schema_free(&s);
}

DF_TEST(malformed_schema_trees) {
    df_error e_ = {0}, *err = &e_;
    pq_schema s;
    pq_schema_element short_[2] = {el("schema", GRP, -1, 3), el("a", DF_PARQUET_INT32, OPT, -1)};
    DF_ASSERT_KIND(df__parquet_schema_build(short_, 2, &s, err), DF_ERR_PARQUET_FORMAT);
    pq_schema_element extra[3] = {el("schema", GRP, -1, 1), el("a", DF_PARQUET_INT32, OPT, -1),
                                  el("b", DF_PARQUET_INT32, OPT, -1)};
    DF_ASSERT_KIND(df__parquet_schema_build(extra, 3, &s, err), DF_ERR_PARQUET_FORMAT);
    pq_schema_element empty_group[2] = {el("schema", GRP, -1, 1), el("g", GRP, OPT, 0)};
    DF_ASSERT_KIND(df__parquet_schema_build(empty_group, 2, &s, err), DF_ERR_PARQUET_FORMAT);
    pq_schema_element badtype[2] = {el("schema", GRP, -1, 1), el("a", 9, OPT, -1)};
    DF_ASSERT_KIND(df__parquet_schema_build(badtype, 2, &s, err), DF_ERR_PARQUET_FORMAT);
    /* 100 nested groups: deeper than the limit. */
    pq_schema_element deep[102];
    deep[0] = el("schema", GRP, -1, 1);
    for (int i = 1; i <= 100; i++) deep[i] = el("g", GRP, OPT, 1);
    deep[101] = el("x", DF_PARQUET_INT32, OPT, -1);
    DF_ASSERT_KIND(df__parquet_schema_build(deep, 102, &s, err), DF_ERR_PARQUET_FORMAT);
    /* Nested structs below the limit work and count levels. */
    deep[31] = el("x", DF_PARQUET_INT32, OPT, -1);
    DF_ASSERT_OK(df__parquet_schema_build(deep, 32, &s, err), err);
    DF_ASSERT_EQ_INT(s.leaves[0].max_def, 31);
    df__parquet_schema_free(&s);
}

/* ---- the shared corpus, hostile variants (ASan/UBSan builds catch memory errors) ------------- */

static df_errkind drain(const uint8_t *data, size_t n, int batch) {
    df_error e_ = {0}, *err = &e_;
    df_input *in;
    DF_ASSERT_OK(df_input_open_memory(data, n, &in, err), err);
    df_parquet_file *f;
    df_errkind k = df_parquet_file_open(in, &f, err);
    if (k != DF_OK) return k;
    df_batch_stream *s = NULL;
    df_parquet_read_options o = {0};
    o.batch_size = batch;
    k = df_parquet_reader_open(f, &o, &s, err);
    df_parquet_file_close(f);
    while (k == DF_OK) {
        df_batch *b;
        k = df_batch_stream_next(s, &b, err);
        if (k != DF_OK || !b) break;
        for (int32_t c = 0; c < b->ncols; c++) DF_ASSERT_OK(df_vec_validate(b->cols[c], false, err), err);
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    df_error_clear(err);
    return k;
}

static void replay_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    DF_ASSERT(fp != NULL);
    fseek(fp, 0, SEEK_END);
    size_t n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *d = malloc(n ? n : 1), *m = malloc(n ? n : 1);
    DF_ASSERT(fread(d, 1, n, fp) == n);
    fclose(fp);
    (void)drain(d, n, 1000);
    (void)drain(d, n, 3);
    size_t cuts[] = {0, 4, 8, 12, n / 3, n / 2, n - 9, n - 8, n - 5, n - 1};
    for (size_t i = 0; i < DF_ARRAY_LEN(cuts); i++)
        if (cuts[i] < n) DF_ASSERT(drain(d, cuts[i], 1000) != DF_OK);
    uint32_t flen = n >= 12 ? df_load_le32(d + n - 8) : 0;
    if (flen > 0 && flen <= n - 12) {
        memcpy(m, d, n);
        for (uint32_t j = 0; j < flen; j++) m[n - 8 - flen + j] = (uint8_t)rnd();
        DF_ASSERT(drain(m, n, 1000) != DF_OK);
    }
    for (int i = 0; i < 60 && n > 0; i++) {
        memcpy(m, d, n);
        for (int j = 0; j < 1 + i % 4; j++) m[rnd() % n] = (uint8_t)rnd();
        (void)drain(m, n, 1 + (int)(rnd() % 2000));
    }
    free(d);
    free(m);
}

static int replay_dir(const char *dir) {
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    int count = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            count += replay_dir(path);
        } else {
            size_t l = strlen(de->d_name);
            if ((l > 8 && strcmp(de->d_name + l - 8, ".parquet") == 0) ||
                (l > 18 && strcmp(de->d_name + l - 18, ".parquet.encrypted") == 0)) {
                replay_file(path);
                count++;
            }
        }
    }
    closedir(dp);
    return count;
}

DF_TEST(parquet_hostile_corpus) {
    char dir[1024];
    if (!shared_parquet_corpus(dir, sizeof dir)) return;
    DF_ASSERT(replay_dir(dir) > 50);
}
