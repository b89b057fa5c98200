/* Unit tests for src/common/json.c: the parser's strictness, numbers, strings, limits and the writer. */
#include "df_test.h"

#include <math.h>

#include "common/json.h"

/* Parses `text` into `arena`; asserts success. */
static df_json_value *parse_ok(df_arena *arena, const char *text) {
    df_error err = {0};
    df_json_value *v = NULL;
    df_errkind k = df_json_parse(text, strlen(text), arena, NULL, &v, &err);
    if (k != DF_OK) df_test_fail(__FILE__, __LINE__, "parse of %s failed: %s", text, err.message);
    DF_ASSERT(v != NULL);
    return v;
}

/* Parses `text` and returns the error kind; the offset goes to *offset. */
static df_errkind parse_fail(const char *text, size_t len, int64_t *offset) {
    df_arena arena;
    df_arena_init(&arena, 0, 0);
    df_error err = {0};
    df_error_clear(&err);
    df_json_value *v = (df_json_value *)1;
    df_errkind k = df_json_parse(text, len, &arena, NULL, &v, &err);
    if (k != DF_OK && v != NULL) df_test_fail(__FILE__, __LINE__, "out not NULL on failure");
    if (offset) *offset = err.offset;
    df_error_clear(&err);
    df_arena_destroy(&arena);
    return k;
}

DF_TEST(json_parses_nested_document_in_order) {
    df_arena a;
    df_arena_init(&a, 0, 0);
    df_json_value *v = parse_ok(&a, " {\"b\": [1, true, null, \"x\"], \"a\": {\"c\": false}, \"e\": []} ");
    DF_ASSERT_EQ_INT(v->type, DF_JSON_OBJECT);
    DF_ASSERT_EQ_INT(v->u.obj.n, 3);
    DF_ASSERT_EQ_STR(v->u.obj.members[0].key, "b");
    DF_ASSERT_EQ_STR(v->u.obj.members[1].key, "a");
    const df_json_value *b = df_json_get(v, "b");
    DF_ASSERT_EQ_INT(df_json_array_len(b), 4);
    int64_t i = 0;
    DF_ASSERT(df_json_value_i64(df_json_array_at(b, 0), &i));
    DF_ASSERT_EQ_INT(i, 1);
    DF_ASSERT(df_json_is_bool(df_json_array_at(b, 1)) && df_json_array_at(b, 1)->u.b);
    DF_ASSERT(df_json_is_null(df_json_array_at(b, 2)));
    DF_ASSERT_EQ_STR(df_json_array_at(b, 3)->u.str.ptr, "x");
    DF_ASSERT(df_json_array_at(b, 4) == NULL);
    bool c = true;
    DF_ASSERT(df_json_get_bool(df_json_get(v, "a"), "c", &c));
    DF_ASSERT(!c);
    DF_ASSERT_EQ_INT(df_json_array_len(df_json_get(v, "e")), 0);
    DF_ASSERT(df_json_get(v, "zz") == NULL);
    DF_ASSERT(df_json_get(b, "x") == NULL);
    df_arena_destroy(&a);
}

DF_TEST(json_duplicate_keys_last_wins) {
    df_arena a;
    df_arena_init(&a, 0, 0);
    df_json_value *v = parse_ok(&a, "{\"k\":1,\"j\":0,\"k\":2}");
    int64_t k = 0;
    DF_ASSERT(df_json_get_i64(v, "k", &k));
    DF_ASSERT_EQ_INT(k, 2);
    DF_ASSERT_EQ_INT(v->u.obj.n, 3);
    df_arena_destroy(&a);
}

DF_TEST(json_strings_decode_escapes_and_surrogates) {
    df_arena a;
    df_arena_init(&a, 0, 0);
    df_json_value *v = parse_ok(&a, "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\\u0000z\"");
    DF_ASSERT_EQ_INT(v->type, DF_JSON_STRING);
    const char expect[] = "a\"b\\c/d\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\0z";
    DF_ASSERT_EQ_INT(v->u.str.len, sizeof expect - 1);
    DF_ASSERT(memcmp(v->u.str.ptr, expect, sizeof expect) == 0);
    df_json_value *u = parse_ok(&a, "\"caf\xC3\xA9 \xF0\x9F\x98\x80 long enough to use the word loop\"");
    DF_ASSERT_EQ_STR(u->u.str.ptr, "caf\xC3\xA9 \xF0\x9F\x98\x80 long enough to use the word loop");
    df_arena_destroy(&a);
}

DF_TEST(json_rejects_bad_strings) {
    int64_t off = 0;
    DF_ASSERT_KIND(parse_fail("\"abc", 4, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_EQ_INT(off, 0);
    DF_ASSERT_KIND(parse_fail("\"a\tb\"", 5, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_EQ_INT(off, 2);
    DF_ASSERT_KIND(parse_fail("\"\\x\"", 4, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("\"\\u12\"", 6, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("\"\\ud800\"", 8, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("\"\\ud800\\u0041\"", 14, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("\"\\udc00\"", 8, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("\"\xC3\"", 3, NULL), DF_ERR_JSON_FORMAT);          /* truncated sequence */
    DF_ASSERT_KIND(parse_fail("\"\xC0\xAF\"", 4, NULL), DF_ERR_JSON_FORMAT);      /* overlong */
    DF_ASSERT_KIND(parse_fail("\"\xED\xA0\x80\"", 5, NULL), DF_ERR_JSON_FORMAT);  /* encoded surrogate */
    DF_ASSERT_KIND(parse_fail("\"\\", 2, NULL), DF_ERR_JSON_FORMAT);
}

DF_TEST(json_rejects_bad_syntax_with_offsets) {
    int64_t off = 0;
    DF_ASSERT_KIND(parse_fail("", 0, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("[1,]", 4, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_EQ_INT(off, 3);
    DF_ASSERT_KIND(parse_fail("{\"a\" 1}", 7, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_EQ_INT(off, 5);
    DF_ASSERT_KIND(parse_fail("{a:1}", 5, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_EQ_INT(off, 1);
    DF_ASSERT_KIND(parse_fail("[1] x", 5, &off), DF_ERR_JSON_FORMAT);
    DF_ASSERT_EQ_INT(off, 4);
    DF_ASSERT_KIND(parse_fail("tru", 3, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("nul", 3, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("[1 2]", 5, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("{\"a\":1,}", 8, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("{\"a\":1", 6, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("[", 1, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("'a'", 3, NULL), DF_ERR_JSON_FORMAT);
    DF_ASSERT_KIND(parse_fail("[1]\0", 4, NULL), DF_ERR_JSON_FORMAT);
}

DF_TEST(json_rejects_bad_numbers) {
    const char *bad[] = {"01", "-", "1.", ".5", "1e", "1e+", "+1", "-01", "0x10", "1.e5", "NaN", "Infinity", "--1"};
    for (size_t i = 0; i < DF_ARRAY_LEN(bad); i++) {
        if (parse_fail(bad[i], strlen(bad[i]), NULL) != DF_ERR_JSON_FORMAT)
            df_test_fail(__FILE__, __LINE__, "accepted bad number %s", bad[i]);
    }
}

DF_TEST(json_numbers_keep_text_and_exact_integers) {
    df_arena a;
    df_arena_init(&a, 0, 0);
    df_json_value *v = parse_ok(&a, "[0, -0, 42, -9223372036854775808, 9223372036854775807, 18446744073709551615,"
                                    " 18446744073709551616, 1e2, 1.50e1, 2.5, 123456789012345678901234567890.5,"
                                    " 1.0000000000000000000000000, -12.340]");
    const df_json_value *n = v->u.arr.items;
    DF_ASSERT((n[0].flags & (DF_JSON_NUM_INTEGER | DF_JSON_NUM_I64 | DF_JSON_NUM_U64 | DF_JSON_NUM_F64_EXACT)) ==
              (DF_JSON_NUM_INTEGER | DF_JSON_NUM_I64 | DF_JSON_NUM_U64 | DF_JSON_NUM_F64_EXACT));
    DF_ASSERT(signbit(n[1].u.num.f64));
    DF_ASSERT_EQ_INT(n[1].u.num.i64, 0);
    DF_ASSERT_EQ_INT(n[2].u.num.i64, 42);
    DF_ASSERT(n[3].flags & DF_JSON_NUM_I64);
    DF_ASSERT_EQ_INT(n[3].u.num.i64, INT64_MIN);
    DF_ASSERT(!(n[3].flags & DF_JSON_NUM_U64));
    DF_ASSERT_EQ_INT(n[4].u.num.i64, INT64_MAX);
    DF_ASSERT(!(n[4].flags & DF_JSON_NUM_F64_EXACT));
    DF_ASSERT(!(n[5].flags & DF_JSON_NUM_I64));
    DF_ASSERT(n[5].flags & DF_JSON_NUM_U64);
    DF_ASSERT_EQ_UINT(n[5].u.num.u64, UINT64_MAX);
    DF_ASSERT(!(n[6].flags & (DF_JSON_NUM_I64 | DF_JSON_NUM_U64)));
    DF_ASSERT_EQ_DBL(n[6].u.num.f64, 18446744073709551616.0);
    DF_ASSERT_EQ_STR(n[6].u.num.text, "18446744073709551616");
    DF_ASSERT(!(n[7].flags & DF_JSON_NUM_INTEGER));
    DF_ASSERT(n[7].flags & DF_JSON_NUM_I64);
    DF_ASSERT_EQ_INT(n[7].u.num.i64, 100);
    DF_ASSERT_EQ_INT(n[8].u.num.i64, 15);
    DF_ASSERT(!(n[9].flags & DF_JSON_NUM_I64));
    DF_ASSERT(n[9].flags & DF_JSON_NUM_F64_EXACT);
    DF_ASSERT_EQ_DBL(n[9].u.num.f64, 2.5);
    DF_ASSERT(!(n[10].flags & DF_JSON_NUM_I64));
    DF_ASSERT_EQ_DBL(n[10].u.num.f64, 123456789012345678901234567890.5);
    DF_ASSERT_EQ_STR(n[10].u.num.text, "123456789012345678901234567890.5");
    DF_ASSERT(n[11].flags & DF_JSON_NUM_I64);
    DF_ASSERT_EQ_INT(n[11].u.num.i64, 1);
    DF_ASSERT_EQ_DBL(n[12].u.num.f64, -12.34);
    DF_ASSERT(!(n[12].flags & DF_JSON_NUM_F64_EXACT));
    DF_ASSERT_EQ_STR(n[12].u.num.text, "-12.340");
    df_arena_destroy(&a);
}

DF_TEST(json_doubles_are_correctly_rounded) {
    const char *texts[] = {"0.1", "3.141592653589793", "1e308", "2.2250738585072014e-308", "4.9e-324",
                           "1.7976931348623157e308", "9007199254740993", "0.30000000000000004",
                           "123.456e-5", "1e-400", "1e400", "-2.5e-3"};
    df_arena a;
    df_arena_init(&a, 0, 0);
    for (size_t i = 0; i < DF_ARRAY_LEN(texts); i++) {
        df_json_value *v = parse_ok(&a, texts[i]);
        DF_ASSERT_EQ_DBL(v->u.num.f64, strtod(texts[i], NULL));
    }
    df_arena_destroy(&a);
}

DF_TEST(json_depth_and_size_limits) {
    char deep[600];
    memset(deep, '[', 300);
    memset(deep + 300, ']', 300);
    DF_ASSERT_KIND(parse_fail(deep, 600, NULL), DF_ERR_LIMIT_EXCEEDED);
    df_arena a;
    df_arena_init(&a, 0, 0);
    df_json_value *v = NULL;
    df_json_options o = {.max_depth = 400};
    DF_ASSERT_OK(df_json_parse(deep, 600, &a, &o, &v, NULL), (df_error *)NULL);
    o = (df_json_options){.max_bytes = 10};
    DF_ASSERT_KIND(df_json_parse("[1,2,3,4,5,6]", 13, &a, &o, &v, NULL), DF_ERR_LIMIT_EXCEEDED);
    DF_ASSERT(v == NULL);
    df_arena_destroy(&a);
}

DF_TEST(json_parse_reports_out_of_memory_from_arena_limit) {
    df_arena a;
    df_arena_init(&a, 256, 512);
    df_json_value *v = NULL;
    char text[4000];
    size_t n = 0;
    text[n++] = '[';
    for (int i = 0; i < 500; i++) n += (size_t)snprintf(text + n, sizeof text - n, "%s\"s%d\"", i ? "," : "", i);
    text[n++] = ']';
    DF_ASSERT_KIND(df_json_parse(text, n, &a, NULL, &v, NULL), DF_ERR_OUT_OF_MEMORY);
    df_arena_destroy(&a);
}

static const char *write_doc(df_buf *b, int indent) {
    df_json_writer w;
    df_json_writer_init(&w, b, indent);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "name", "a\"b\n\x01\xFF\xC3\xA9");
    df_json_kv_int(&w, "n", -5);
    df_json_kv_uint(&w, "u", UINT64_MAX);
    df_json_kv_double(&w, "pi", 0.1);
    df_json_kv_double(&w, "one", 1.0);
    df_json_kv_double(&w, "inf", INFINITY);
    df_json_kv_bool(&w, "t", true);
    df_json_kv_null(&w, "z");
    df_json_key(&w, "list");
    df_json_array_begin(&w);
    df_json_write_int(&w, 1);
    df_json_array_begin(&w);
    df_json_array_end(&w);
    df_json_write_raw(&w, "{\"r\":1}");
    df_json_array_end(&w);
    df_json_key(&w, "empty");
    df_json_object_begin(&w);
    df_json_object_end(&w);
    df_json_object_end(&w);
    df_error err = {0};
    DF_ASSERT_OK(df_json_writer_finish(&w, &err), &err);
    return b->data;
}

DF_TEST(json_writer_compact_and_indented) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_EQ_STR(write_doc(&b, 0),
                     "{\"name\":\"a\\\"b\\n\\u0001\xEF\xBF\xBD\xC3\xA9\",\"n\":-5,\"u\":18446744073709551615,"
                     "\"pi\":0.1,\"one\":1.0,\"inf\":null,\"t\":true,\"z\":null,\"list\":[1,[],{\"r\":1}],\"empty\":{}}");
    df_buf_reset(&b);
    DF_ASSERT_EQ_STR(write_doc(&b, 2),
                     "{\n  \"name\": \"a\\\"b\\n\\u0001\xEF\xBF\xBD\xC3\xA9\",\n  \"n\": -5,\n"
                     "  \"u\": 18446744073709551615,\n  \"pi\": 0.1,\n  \"one\": 1.0,\n  \"inf\": null,\n"
                     "  \"t\": true,\n  \"z\": null,\n  \"list\": [\n    1,\n    [],\n    {\"r\":1}\n  ],\n"
                     "  \"empty\": {}\n}");
    /* The compact output parses back. */
    df_buf_reset(&b);
    write_doc(&b, 0);
    df_arena a;
    df_arena_init(&a, 0, 0);
    df_json_value *v = parse_ok(&a, b.data);
    DF_ASSERT_EQ_INT(v->u.obj.n, 10);
    df_arena_destroy(&a);
    df_buf_free(&b);
}

DF_TEST(json_writer_errors_are_sticky) {
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_object_begin(&w);
    DF_ASSERT_KIND(df_json_write_int(&w, 1), DF_ERR_INTERNAL); /* value without key */
    DF_ASSERT_KIND(df_json_object_end(&w), DF_ERR_INTERNAL);
    df_error err = {0};
    DF_ASSERT_KIND(df_json_writer_finish(&w, &err), DF_ERR_INTERNAL);
    DF_ASSERT(strstr(err.message, "without a key") != NULL);
    df_buf_free(&b);

    df_buf_init(&b, 8);
    df_json_writer_init(&w, &b, 0);
    df_json_write_string(&w, "this does not fit in eight bytes");
    DF_ASSERT_KIND(df_json_writer_finish(&w, NULL), DF_ERR_LIMIT_EXCEEDED);
    df_buf_free(&b);

    df_buf_init(&b, 0);
    df_json_writer_init(&w, &b, 0);
    df_json_array_begin(&w);
    DF_ASSERT_KIND(df_json_writer_finish(&w, NULL), DF_ERR_INTERNAL);
    df_buf_free(&b);
}

DF_TEST(json_format_double_is_shortest_round_trip) {
    const double vals[] = {0.1, 1.0 / 3.0, 1e21, 5e-324, 1.7976931348623157e308, -0.0, 123456.789, 2.0, 1e-7};
    const char *expect[] = {"0.1", "0.3333333333333333", "1e+21", "5e-324",
                            "1.7976931348623157e+308", "-0.0", "123456.789", "2.0", "1e-07"};
    for (size_t i = 0; i < DF_ARRAY_LEN(vals); i++) {
        char buf[32];
        df_json_format_double(vals[i], buf);
        DF_ASSERT_EQ_STR(buf, expect[i]);
        DF_ASSERT_EQ_DBL(strtod(buf, NULL), vals[i]);
    }
}

DF_TEST(json_write_value_round_trips_dom) {
    df_arena a;
    df_arena_init(&a, 0, 0);
    const char *text = "{\"a\":[1,2.50,-3e5,\"\\u00e9\\n\"],\"b\":{\"c\":null,\"d\":false},\"e\":18446744073709551616}";
    df_json_value *v = parse_ok(&a, text);
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_write_value(&w, v);
    DF_ASSERT_OK(df_json_writer_finish(&w, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "{\"a\":[1,2.50,-3e5,\"\xC3\xA9\\n\"],\"b\":{\"c\":null,\"d\":false},\"e\":18446744073709551616}");
    df_buf_free(&b);
    df_arena_destroy(&a);
}

/* An allocator that fails the Nth allocation (and later ones when sticky). */
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

DF_TEST(json_parse_and_write_survive_every_allocation_failure) {
    const char *text = "{\"a\":[1,2,{\"b\":\"\\u00e9x\"}],\"c\":\"long enough string value\",\"d\":[[],{}],\"e\":1.5e3}";
    df_allocator fa = {failing_malloc, failing_realloc, plain_free, NULL};
    for (alloc_fail_at = 0;; alloc_fail_at++) {
        alloc_count = 0;
        df_set_allocator(&fa);
        df_arena a;
        df_arena_init(&a, 64, 0);
        df_json_value *v = NULL;
        df_errkind k = df_json_parse(text, strlen(text), &a, NULL, &v, NULL);
        df_buf b;
        df_buf_init(&b, 0);
        if (k == DF_OK) {
            df_json_writer w;
            df_json_writer_init(&w, &b, 2);
            df_json_write_value(&w, v);
            k = df_json_writer_finish(&w, NULL);
        }
        df_buf_free(&b);
        df_arena_destroy(&a);
        df_set_allocator(NULL);
        if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) df_test_fail(__FILE__, __LINE__, "kind %d at %ld", k, alloc_fail_at);
        if (alloc_count <= alloc_fail_at) break; /* every allocation was exercised */
    }
    DF_ASSERT(alloc_fail_at > 3);
}
