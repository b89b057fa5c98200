/* Unit tests for src/common: errors, arenas, buffers, UTF-8, thread pool. */
#include "df_test.h"
#include "df_scramble.h"

#include "common/common.h"
#include "common/thread_pool.h"

DF_TEST(error_set_uses_default_phase_and_kind_name) {
    df_error err = {0};
    df_error_clear(&err);
    DF_ASSERT_EQ_INT(df_error_set(&err, DF_ERR_SQL_TABLE, "SQL text must not be empty"), DF_ERR_SQL_TABLE);
    DF_ASSERT_EQ_STR(err.phase, "sql_table");
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "sql_table");
    DF_ASSERT_EQ_STR(err.message, "SQL text must not be empty");
    DF_ASSERT_EQ_INT(err.offset, -1);
    df_error_set_context(&err, "{\"cause\":\"x\"}");
    DF_ASSERT_EQ_STR(err.context, "{\"cause\":\"x\"}");
    df_error_clear(&err);
    DF_ASSERT(err.context == NULL);
    DF_ASSERT_EQ_INT(err.kind, DF_OK);
}

DF_TEST(error_kind_names_round_trip) {
    for (int k = 1; k < DF_ERRKIND_COUNT_; k++) {
        DF_ASSERT_EQ_INT(df_errkind_from_name(df_errkind_name((df_errkind)k)), k);
        DF_ASSERT(df_errkind_default_phase((df_errkind)k)[0] != '\0');
    }
    DF_ASSERT_EQ_STR(df_errkind_name(DF_ERR_DELTA_PROTOCOL), "delta_protocol_compatibility");
    DF_ASSERT_EQ_STR(df_errkind_default_phase(DF_ERR_DELTA_PROTOCOL), "delta_protocol");
}

DF_TEST(error_message_truncates_without_overflow) {
    df_error err = {0};
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    df_error_set(&err, DF_ERR_INTERNAL, "%s", big);
    DF_ASSERT_EQ_INT(strlen(err.message), DF_ERROR_MESSAGE_SIZE - 1);
    df_error_prefix(&err, "context %d", 7);
    DF_ASSERT(strncmp(err.message, "context 7: aaa", 14) == 0);
    df_error_clear(&err);
}

DF_TEST(error_subkind_is_set_explicitly_and_reset_by_each_error) {
    df_error err = {0};
    df_error_set(&err, DF_ERR_VALUE_CONVERSION, "column c row 0: value too long for the column");
    DF_ASSERT_EQ_INT(err.subkind, DF_OK);
    df_error_set_subkind(&err, DF_ERR_VALUE_TOO_LONG);
    df_error_set_code(&err, 8152);
    df_error_prefix(&err, "write_batch");
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_VALUE_TOO_LONG); /* a prefix keeps the classification */
    DF_ASSERT_EQ_INT(err.code, 8152);
    df_error moved = {0};
    df_error_move(&moved, &err);
    DF_ASSERT_EQ_INT(moved.subkind, DF_ERR_VALUE_TOO_LONG);
    DF_ASSERT_EQ_INT(err.subkind, DF_OK);
    df_error_set(&moved, DF_ERR_INTERNAL, "another failure");
    DF_ASSERT_EQ_INT(moved.subkind, DF_OK);
    DF_ASSERT_EQ_INT(moved.code, 0);
    df_error_clear(&moved);
    /* The finer kinds are kinds like the others: a name, a default phase. */
    DF_ASSERT_EQ_STR(df_errkind_name(DF_ERR_VALUE_TOO_LONG), "value_too_long");
    DF_ASSERT_EQ_STR(df_errkind_default_phase(DF_ERR_VALUE_TOO_LONG), "write_batch");
    DF_ASSERT_EQ_STR(df_errkind_name(DF_ERR_TDS_TRUNCATED), "tds_truncated");
}

DF_TEST(message_scrambler_rewrites_every_message_and_prefix) {
    df_error err = {0};
    df_test_scramble_messages(true);
    df_error_set(&err, DF_ERR_MSSQL_CONNECT, "TCP connection to SQL Server failed: %s", "Connection refused");
    DF_ASSERT_EQ_STR(err.message, "~GPC pbaarpgvba gb FDY Freire snvyrq: Pbaarpgvba ershfrq~");
    DF_ASSERT_EQ_INT(err.kind, DF_ERR_MSSQL_CONNECT);
    DF_ASSERT_EQ_STR(err.phase, "connect");
    df_error_prefix(&err, "output %d", 1);
    char plain[DF_ERROR_MESSAGE_SIZE];
    df_test_unscramble(err.message, plain, sizeof plain);
    DF_ASSERT_EQ_STR(plain, "output 1: TCP connection to SQL Server failed: Connection refused");
    /* A message quoted inside another one unscrambles layer by layer. */
    char inner[DF_ERROR_MESSAGE_SIZE];
    snprintf(inner, sizeof inner, "%s", err.message);
    df_error_set(&err, DF_ERR_MSSQL_WRITE_PHASE, "connect failed: %s (%s)", inner, "mssql_connect");
    df_test_unscramble(err.message, plain, sizeof plain);
    DF_ASSERT_EQ_STR(plain, "connect failed: output 1: TCP connection to SQL Server failed: Connection refused "
                            "(mssql_connect)");
    /* Long messages stay bounded and terminated. */
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    df_error_set(&err, DF_ERR_INTERNAL, "%s", big);
    DF_ASSERT_EQ_INT(strlen(err.message), DF_ERROR_MESSAGE_SIZE - 1);
    df_test_scramble_messages(false);
    df_error_set(&err, DF_ERR_INTERNAL, "plain again");
    DF_ASSERT_EQ_STR(err.message, "plain again");
    df_error_clear(&err);
}

DF_TEST(arena_allocations_are_aligned_and_reset) {
    df_arena a;
    df_arena_init(&a, 128, 0);
    for (int i = 1; i < 200; i++) {
        unsigned char *p = df_arena_alloc(&a, (size_t)i);
        DF_ASSERT(p != NULL);
        DF_ASSERT(((uintptr_t)p & 15) == 0);
        memset(p, 0xab, (size_t)i);
    }
    DF_ASSERT(a.total > 0);
    df_arena_reset(&a);
    DF_ASSERT(df_arena_alloc(&a, 10) != NULL);
    char *s = df_arena_strndup(&a, "hello world", 5);
    DF_ASSERT_EQ_STR(s, "hello");
    df_arena_destroy(&a);
}

DF_TEST(arena_limit_is_enforced) {
    df_arena a;
    df_arena_init(&a, 1024, 4096);
    int ok = 0;
    while (df_arena_alloc(&a, 1000)) ok++;
    DF_ASSERT(ok >= 2 && ok <= 4);
    df_arena_destroy(&a);
}

DF_TEST(buf_grows_and_respects_limit) {
    df_buf b;
    df_buf_init(&b, 16);
    df_error err = {0};
    DF_ASSERT_OK(df_buf_append_str(&b, "0123456789", &err), &err);
    DF_ASSERT_OK(df_buf_printf(&b, &err, "%d", 12345), &err);
    DF_ASSERT_EQ_STR(b.data, "012345678912345");
    DF_ASSERT_KIND(df_buf_append_str(&b, "xy", &err), DF_ERR_LIMIT_EXCEEDED);
    char *taken = df_buf_take(&b);
    DF_ASSERT_EQ_STR(taken, "012345678912345");
    df_free(taken);
    df_buf_free(&b);
}

DF_TEST(utf8_validation_rejects_bad_sequences) {
    DF_ASSERT(df_utf8_valid((const uint8_t *)"plain ascii text, long enough", 29));
    DF_ASSERT(df_utf8_valid((const uint8_t *)"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
    DF_ASSERT(!df_utf8_valid((const uint8_t *)"\xc0\xaf", 2));          /* overlong */
    DF_ASSERT(!df_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));      /* surrogate */
    DF_ASSERT(!df_utf8_valid((const uint8_t *)"\xe2\x82", 2));          /* truncated */
    DF_ASSERT(!df_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4));  /* > U+10FFFF */
}

DF_TEST(case_insensitive_compare) {
    DF_ASSERT_EQ_INT(df_ascii_casecmp("Orders", "oRDERS"), 0);
    DF_ASSERT(df_ascii_casecmp("a", "b") < 0);
    DF_ASSERT_EQ_INT(df_ascii_ncasecmp("SELECTx", "selecty", 6), 0);
}

DF_TEST(aligned_alloc_is_64_byte_aligned) {
    for (size_t n = 0; n < 300; n += 7) {
        void *p = df_aligned_alloc(n);
        DF_ASSERT(p != NULL);
        DF_ASSERT(((uintptr_t)p & 63) == 0);
        memset(p, 1, n);
        df_aligned_free(p);
    }
}

static void add_one(void *arg) {
    __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

DF_TEST(thread_pool_runs_every_task) {
    df_thread_pool *pool;
    df_error err = {0};
    DF_ASSERT_OK(df_thread_pool_create(3, "test", &pool, &err), &err);
    df_task_group g;
    df_task_group_init(&g);
    int counter = 0;
    for (int i = 0; i < 1000; i++) DF_ASSERT_OK(df_thread_pool_submit(pool, &g, add_one, &counter, &err), &err);
    df_task_group_wait(pool, &g);
    DF_ASSERT_EQ_INT(counter, 1000);
    df_task_group_destroy(&g);
    df_thread_pool_destroy(pool);
    DF_ASSERT(df_cpu_count() >= 1);
}

DF_TEST(hashes_are_stable) {
    DF_ASSERT_EQ_UINT(df_fnv1a64("", 0), 0xcbf29ce484222325ULL);
    DF_ASSERT_EQ_UINT(df_fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
    DF_ASSERT(df_hash_bytes("abc", 3, 0) != df_hash_bytes("abd", 3, 0));
}

/* ------------------------------------------------------------------------ */
/* Growable arrays.                                                          */

DF_TEST(array_reserve_doubles_from_first_and_keeps_elements) {
    int32_t *items = NULL;
    int32_t n = 0, cap = 0;
    df_error err = {0};
    for (int32_t i = 0; i < 1000; i++) {
        DF_ASSERT_OK(DF_ARRAY_RESERVE(items, cap, n + 1, 16, &err), &err);
        items[n++] = i * 3;
        DF_ASSERT(cap >= n);
        DF_ASSERT(cap == 16 || (cap & (cap - 1)) == 0);
    }
    DF_ASSERT_EQ_INT(cap, 1024);
    for (int32_t i = 0; i < n; i++) DF_ASSERT_EQ_INT(items[i], i * 3);
    df_free(items);
}

DF_TEST(array_reserve_jumps_to_need_and_never_shrinks) {
    uint8_t *bytes = NULL;
    size_t cap = 0;
    DF_ASSERT_OK(DF_ARRAY_RESERVE(bytes, cap, 10000, 4096, NULL), NULL);
    DF_ASSERT_EQ_UINT(cap, 16384);
    uint8_t *before = bytes;
    DF_ASSERT_OK(DF_ARRAY_RESERVE(bytes, cap, 5, 4096, NULL), NULL);
    DF_ASSERT(bytes == before);
    DF_ASSERT_EQ_UINT(cap, 16384);
    df_free(bytes);

    /* Every standard integer type can be the capacity. */
    uint64_t *u = NULL;
    uint32_t ucap = 0;
    int64_t *l = NULL;
    int64_t lcap = 0;
    DF_ASSERT_OK(DF_ARRAY_RESERVE(u, ucap, 3, 0, NULL), NULL);   /* first 0 behaves as 1 */
    DF_ASSERT_EQ_UINT(ucap, 4);
    DF_ASSERT_OK(DF_ARRAY_RESERVE(l, lcap, 1, 8, NULL), NULL);
    DF_ASSERT_EQ_INT(lcap, 8);
    df_free(u);
    df_free(l);
}

DF_TEST(array_reserve_zeroed_clears_the_new_tail) {
    uint32_t *m = NULL;
    size_t cap = 0;
    DF_ASSERT_OK(DF_ARRAY_RESERVE_ZEROED(m, cap, 3, 4, NULL), NULL);
    for (size_t i = 0; i < cap; i++) DF_ASSERT_EQ_UINT(m[i], 0);
    for (size_t i = 0; i < cap; i++) m[i] = 7;
    DF_ASSERT_OK(DF_ARRAY_RESERVE_ZEROED(m, cap, 5, 4, NULL), NULL);
    DF_ASSERT_EQ_UINT(cap, 8);
    for (size_t i = 0; i < 4; i++) DF_ASSERT_EQ_UINT(m[i], 7);
    for (size_t i = 4; i < 8; i++) DF_ASSERT_EQ_UINT(m[i], 0);
    df_free(m);
}

DF_TEST(array_reserve_refuses_counts_past_the_capacity_type) {
    int32_t *items = NULL;
    int32_t cap = 0;
    df_error err = {0};
    DF_ASSERT_KIND(DF_ARRAY_RESERVE(items, cap, (size_t)INT32_MAX + 1, 16, &err), DF_ERR_LIMIT_EXCEEDED);
    DF_ASSERT(items == NULL);
    DF_ASSERT_EQ_INT(cap, 0);
    /* A negative count (a caller's arithmetic gone wrong) is refused too. */
    int64_t bad = -1;
    DF_ASSERT_KIND(DF_ARRAY_RESERVE(items, cap, bad, 16, &err), DF_ERR_LIMIT_EXCEEDED);
    df_error_clear(&err);
}

typedef struct {
    uint8_t bytes[1 << 16];
} big_elem;

DF_TEST(array_reserve_reports_byte_size_overflow) {
    big_elem *items = NULL;
    size_t cap = 0;
    df_error err = {0};
    DF_ASSERT_KIND(DF_ARRAY_RESERVE(items, cap, SIZE_MAX / sizeof(big_elem) + 1, 1, &err), DF_ERR_OUT_OF_MEMORY);
    DF_ASSERT(items == NULL);
    DF_ASSERT_EQ_UINT(cap, 0);
    df_error_clear(&err);
}

/* An allocator whose realloc fails and remembers what it was asked for. */
static size_t refused_size;
static void *plain_malloc(size_t size, void *user) { (void)user; return malloc(size); }
static void *refusing_realloc(void *ptr, size_t size, void *user) {
    (void)ptr, (void)user;
    refused_size = size;
    return NULL;
}
static void plain_free(void *ptr, void *user) { (void)user; free(ptr); }

DF_TEST(array_reserve_keeps_the_array_when_allocation_fails) {
    uint16_t *items = df_malloc(4 * sizeof *items);
    DF_ASSERT(items != NULL);
    items[3] = 42;
    uint32_t cap = 4;
    df_set_allocator(&(df_allocator){plain_malloc, refusing_realloc, plain_free, NULL});
    df_error err = {0};
    DF_ASSERT_KIND(DF_ARRAY_RESERVE(items, cap, 5, 4, &err), DF_ERR_OUT_OF_MEMORY);
    DF_ASSERT_EQ_UINT(refused_size, 8 * sizeof *items);
    DF_ASSERT_EQ_UINT(cap, 4);
    DF_ASSERT_EQ_UINT(items[3], 42);
    /* Doubling stops at the capacity type's maximum rather than wrapping. */
    uint8_t *bytes = df_malloc(1);
    uint32_t bcap = UINT32_MAX / 2 + 2;
    DF_ASSERT_KIND(DF_ARRAY_RESERVE(bytes, bcap, (size_t)bcap + 1, 1, &err), DF_ERR_OUT_OF_MEMORY);
    DF_ASSERT_EQ_UINT(refused_size, UINT32_MAX);
    df_set_allocator(NULL);
    df_free(bytes);
    df_free(items);
    df_error_clear(&err);
}

/* ------------------------------------------------------------------------ */
/* Hex digits.                                                               */

DF_TEST(hex_value_accepts_both_cases_only) {
    DF_ASSERT_EQ_INT(df_hex_value('0'), 0);
    DF_ASSERT_EQ_INT(df_hex_value('9'), 9);
    DF_ASSERT_EQ_INT(df_hex_value('a'), 10);
    DF_ASSERT_EQ_INT(df_hex_value('F'), 15);
    const char *not_hex = "gG/:@`xX \x7f";
    for (const char *c = not_hex; *c; c++) DF_ASSERT_EQ_INT(df_hex_value(*c), -1);
    DF_ASSERT_EQ_INT(df_hex_value((char)0xE9), -1);   /* a negative char */
    DF_ASSERT_EQ_INT(df_hex_value(0xE9), -1);
    DF_ASSERT_EQ_INT(df_hex_value(0), -1);
}

DF_TEST(hex_encode_and_decode_round_trip) {
    const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char lower[13] = {0}, upper[13] = {0};
    df_hex_encode(bytes, sizeof bytes, lower, false);
    df_hex_encode(bytes, sizeof bytes, upper, true);
    DF_ASSERT_EQ_STR(lower, "00017f80abff");
    DF_ASSERT_EQ_STR(upper, "00017F80ABFF");
    uint8_t back[6];
    DF_ASSERT(df_hex_decode(upper, 12, back));
    DF_ASSERT(memcmp(back, bytes, sizeof bytes) == 0);
    DF_ASSERT(df_hex_decode("aB", 2, back) && back[0] == 0xab);
    DF_ASSERT(df_hex_decode("", 0, back));
    DF_ASSERT(!df_hex_decode("abc", 3, back));   /* odd length */
    DF_ASSERT(!df_hex_decode("0g", 2, back));
    DF_ASSERT(!df_hex_decode("g0", 2, back));
}

/* ------------------------------------------------------------------------ */
/* Calendar.                                                                 */

DF_TEST(civil_days_match_known_dates_and_round_trip) {
    DF_ASSERT_EQ_INT(df_days_from_civil(1970, 1, 1), 0);
    DF_ASSERT_EQ_INT(df_days_from_civil(1969, 12, 31), -1);
    DF_ASSERT_EQ_INT(df_days_from_civil(2000, 3, 1), 11017);
    DF_ASSERT_EQ_INT(df_days_from_civil(2021, 2, 28), 18686);
    DF_ASSERT_EQ_INT(df_days_from_civil(1, 1, 1), -719162);        /* the TDS epoch */
    DF_ASSERT_EQ_INT(df_days_from_civil(1900, 1, 1), -25567);
    DF_ASSERT_EQ_INT(df_days_from_civil(9999, 12, 31), 2932896);
    DF_ASSERT_EQ_INT(df_days_from_civil(0, 3, 1), -719468);         /* the algorithm's own epoch */
    int64_t y;
    int m, d;
    for (int64_t days = -800000; days <= 3000000; days += 997) {
        df_civil_from_days(days, &y, &m, &d);
        DF_ASSERT(m >= 1 && m <= 12 && d >= 1 && d <= 31);
        DF_ASSERT_EQ_INT(df_days_from_civil(y, m, d), days);
    }
    df_civil_from_days(df_days_from_civil(2024, 2, 29), &y, &m, &d);
    DF_ASSERT(y == 2024 && m == 2 && d == 29);
    df_civil_from_days(df_days_from_civil(-1, 12, 31), &y, &m, &d);   /* 2 BCE in proleptic years */
    DF_ASSERT(y == -1 && m == 12 && d == 31);
}

/* ------------------------------------------------------------------------ */
/* UTF-8.                                                                    */

#define U8(s) ((const uint8_t *)(s))

DF_TEST(utf8_next_is_strict_and_decode_always_advances) {
    uint32_t cp = 0;
    DF_ASSERT_EQ_UINT(df_utf8_next(U8("A"), 1, &cp), 1);
    DF_ASSERT_EQ_UINT(cp, 'A');
    DF_ASSERT_EQ_UINT(df_utf8_next(U8("\xc3\xa9"), 2, &cp), 2);
    DF_ASSERT_EQ_UINT(cp, 0xE9);
    DF_ASSERT_EQ_UINT(df_utf8_next(U8("\xe2\x82\xac"), 3, &cp), 3);
    DF_ASSERT_EQ_UINT(cp, 0x20AC);
    DF_ASSERT_EQ_UINT(df_utf8_next(U8("\xf4\x8f\xbf\xbf"), 4, &cp), 4);   /* U+10FFFF */
    DF_ASSERT_EQ_UINT(cp, 0x10FFFF);
    const char *bad[] = {"\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                         "\xf5\x80\x80\x80", "\xff", "\xc3", "\xe2\x82", "\xc3\x28"};
    for (size_t i = 0; i < DF_ARRAY_LEN(bad); i++) {
        size_t n = strlen(bad[i]);
        DF_ASSERT_EQ_UINT(df_utf8_next(U8(bad[i]), n, &cp), 0);
        DF_ASSERT_EQ_UINT(df_utf8_decode(U8(bad[i]), n, &cp), 1);
        DF_ASSERT_EQ_UINT(cp, 0xFFFD);
        DF_ASSERT(!df_utf8_valid(U8(bad[i]), n));
    }
    /* A complete sequence cut short by n is invalid even if the bytes follow. */
    DF_ASSERT_EQ_UINT(df_utf8_next(U8("\xe2\x82\xac"), 2, &cp), 0);
}

DF_TEST(utf8_valid_prefix_stops_at_the_first_bad_sequence) {
    DF_ASSERT_EQ_UINT(df_utf8_valid_prefix(U8("plain ascii, longer than a word"), 31), 31);
    DF_ASSERT_EQ_UINT(df_utf8_valid_prefix(U8("0123456789\xc3\xa9\xff"), 13), 12);
    DF_ASSERT_EQ_UINT(df_utf8_valid_prefix(U8("abcdefgh\xe2\x82"), 10), 8);   /* truncated after the fast path */
    DF_ASSERT_EQ_UINT(df_utf8_valid_prefix(U8(""), 0), 0);
    DF_ASSERT(df_utf8_valid(U8(""), 0));
}

DF_TEST(utf8_lead_length_and_continuation) {
    DF_ASSERT_EQ_UINT(df_utf8_lead_length('a'), 1);
    DF_ASSERT_EQ_UINT(df_utf8_lead_length(0xC3), 2);
    DF_ASSERT_EQ_UINT(df_utf8_lead_length(0xE2), 3);
    DF_ASSERT_EQ_UINT(df_utf8_lead_length(0xF0), 4);
    DF_ASSERT_EQ_UINT(df_utf8_lead_length(0x80), 1);   /* cannot start a sequence: still advances */
    DF_ASSERT_EQ_UINT(df_utf8_lead_length(0xFF), 1);
    DF_ASSERT(df_utf8_is_continuation(0x80) && df_utf8_is_continuation(0xBF));
    DF_ASSERT(!df_utf8_is_continuation(0x7F) && !df_utf8_is_continuation(0xC0));
}

DF_TEST(utf8_encode_round_trips_every_length) {
    const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF};
    const size_t lens[] = {1, 1, 2, 2, 3, 3, 3, 3, 3, 4, 4};
    for (size_t i = 0; i < DF_ARRAY_LEN(cps); i++) {
        uint8_t buf[4];
        DF_ASSERT(df_unicode_is_scalar(cps[i]));
        size_t n = df_utf8_encode(cps[i], buf);
        DF_ASSERT_EQ_UINT(n, lens[i]);
        uint32_t back;
        DF_ASSERT_EQ_UINT(df_utf8_next(buf, n, &back), n);
        DF_ASSERT_EQ_UINT(back, cps[i]);
    }
    DF_ASSERT(!df_unicode_is_scalar(0xD800));
    DF_ASSERT(!df_unicode_is_scalar(0xDFFF));
    DF_ASSERT(!df_unicode_is_scalar(0x110000));
}

DF_TEST(utf8_count_prefix_and_cut_respect_character_boundaries) {
    const uint8_t *s = U8("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z");   /* a é € 😀 z: 11 bytes */
    DF_ASSERT_EQ_UINT(df_utf8_count(s, 11), 5);
    DF_ASSERT_EQ_UINT(df_utf8_count(s, 0), 0);
    DF_ASSERT_EQ_UINT(df_utf8_prefix(s, 11, 0), 0);
    DF_ASSERT_EQ_UINT(df_utf8_prefix(s, 11, 1), 1);
    DF_ASSERT_EQ_UINT(df_utf8_prefix(s, 11, 2), 3);
    DF_ASSERT_EQ_UINT(df_utf8_prefix(s, 11, 4), 10);
    DF_ASSERT_EQ_UINT(df_utf8_prefix(s, 11, 99), 11);
    DF_ASSERT_EQ_UINT(df_utf8_cut(s, 11, 99), 11);
    DF_ASSERT_EQ_UINT(df_utf8_cut(s, 11, 11), 11);
    DF_ASSERT_EQ_UINT(df_utf8_cut(s, 11, 5), 3);    /* inside € */
    DF_ASSERT_EQ_UINT(df_utf8_cut(s, 11, 9), 6);    /* inside 😀 */
    DF_ASSERT_EQ_UINT(df_utf8_cut(s, 11, 6), 6);
    DF_ASSERT_EQ_UINT(df_utf8_cut(s, 11, 0), 0);
}

/* ------------------------------------------------------------------------ */
/* Hash maps.                                                                */

DF_TEST(u64map_grows_and_keeps_every_key) {
    df_u64map m = {0};
    df_error err = {0};
    DF_ASSERT(!df_u64map_get(&m, 1, NULL));   /* an untouched map answers without a table */
    for (uint64_t k = 0; k < 20000; k++) DF_ASSERT_OK(df_u64map_put(&m, k * 7919, k + 1, &err), &err);
    DF_ASSERT_EQ_UINT(m.n, 20000);
    DF_ASSERT(m.cap >= 2 * (m.n - 1) && (m.cap & (m.cap - 1)) == 0);
    for (uint64_t k = 0; k < 20000; k++) {
        uint64_t v = 0;
        DF_ASSERT(df_u64map_get(&m, k * 7919, &v));
        DF_ASSERT_EQ_UINT(v, k + 1);
    }
    DF_ASSERT(!df_u64map_get(&m, 7918, NULL));
    DF_ASSERT_OK(df_u64map_put(&m, 7919, 42, &err), &err);   /* replace, not add */
    DF_ASSERT_EQ_UINT(m.n, 20000);
    uint64_t v;
    DF_ASSERT(df_u64map_get(&m, 7919, &v) && v == 42);
    df_u64map_free(&m);
    DF_ASSERT(m.cap == 0 && m.n == 0 && !df_u64map_get(&m, 7919, NULL));
}

DF_TEST(u64map_probes_past_colliding_keys_and_stores_key_zero) {
    /* Keys whose hashes share the low bits land on the same first slot of a 16-slot table. */
    uint64_t same[6];
    size_t found = 0;
    for (uint64_t k = 1; found < DF_ARRAY_LEN(same); k++)
        if ((df_hash_u64(k) & 15) == 3) same[found++] = k;
    df_u64map m = {0};
    for (size_t i = 0; i < DF_ARRAY_LEN(same); i++) DF_ASSERT_OK(df_u64map_put(&m, same[i], i, NULL), NULL);
    DF_ASSERT_EQ_UINT(m.cap, 16);
    for (size_t i = 0; i < DF_ARRAY_LEN(same); i++) {
        uint64_t v;
        DF_ASSERT(df_u64map_get(&m, same[i], &v));
        DF_ASSERT_EQ_UINT(v, i);
    }
    DF_ASSERT(!df_u64map_get(&m, 0, NULL));
    uint64_t *slot;
    bool added;
    DF_ASSERT_OK(df_u64map_upsert(&m, 0, &slot, &added, NULL), NULL);
    DF_ASSERT(added && *slot == 0);
    *slot = 99;
    DF_ASSERT_OK(df_u64map_upsert(&m, 0, &slot, &added, NULL), NULL);
    DF_ASSERT(!added && *slot == 99);
    DF_ASSERT_OK(df_u64map_upsert(&m, same[2], &slot, &added, NULL), NULL);
    DF_ASSERT(!added && *slot == 2);
    DF_ASSERT_EQ_UINT(m.n, DF_ARRAY_LEN(same) + 1);
    df_u64map_free(&m);
}

static void *refusing_malloc(size_t size, void *user) {
    (void)size, (void)user;
    return NULL;
}

DF_TEST(maps_are_unchanged_when_growth_fails) {
    df_u64map m = {0};
    for (uint64_t k = 1; k <= 8; k++) DF_ASSERT_OK(df_u64map_put(&m, k, k, NULL), NULL);
    df_strmap s = {0};
    uint64_t *slot;
    bool added;
    DF_ASSERT_OK(df_strmap_upsert(&s, "kept", 4, &slot, &added, NULL), NULL);
    df_set_allocator(&(df_allocator){refusing_malloc, refusing_realloc, plain_free, NULL});
    df_error err = {0};
    DF_ASSERT_KIND(df_u64map_put(&m, 9, 9, &err), DF_ERR_OUT_OF_MEMORY);   /* the 9th key needs 32 slots */
    char longer[300];   /* more than the key buffer holds */
    memset(longer, 'x', sizeof longer);
    DF_ASSERT_KIND(df_strmap_upsert(&s, longer, sizeof longer, &slot, &added, &err), DF_ERR_OUT_OF_MEMORY);
    df_set_allocator(NULL);
    DF_ASSERT_EQ_UINT(m.n, 8);
    DF_ASSERT(!df_u64map_get(&m, 9, NULL));
    for (uint64_t k = 1; k <= 8; k++) DF_ASSERT(df_u64map_get(&m, k, NULL));
    DF_ASSERT_EQ_UINT(s.n, 1);
    DF_ASSERT(df_strmap_get(&s, "kept", 4, NULL));
    df_u64map_free(&m);
    df_strmap_free(&s);
    df_error_clear(&err);
}

DF_TEST(strmap_finds_the_empty_key_before_any_key_bytes_are_stored) {
    /* Found by fuzzing the Delta log: two txn actions with an empty appId. */
    df_strmap s = {0};
    uint64_t *slot;
    bool added;
    DF_ASSERT_OK(df_strmap_upsert(&s, "", 0, &slot, &added, NULL), NULL);
    DF_ASSERT(added);
    *slot = 7;
    DF_ASSERT_OK(df_strmap_upsert(&s, "", 0, &slot, &added, NULL), NULL);
    DF_ASSERT(!added);
    DF_ASSERT_EQ_UINT(*slot, 7);
    uint64_t v = 0;
    DF_ASSERT(df_strmap_get(&s, "", 0, &v));
    DF_ASSERT_EQ_UINT(v, 7);
    df_strmap_free(&s);
}

DF_TEST(strmap_interns_byte_strings_through_growth) {
    df_strmap m = {0};
    df_error err = {0};
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "file-%d.parquet", i);
        uint64_t *slot;
        bool added;
        DF_ASSERT_OK(df_strmap_upsert(&m, key, (size_t)n, &slot, &added, &err), &err);
        DF_ASSERT(added);
        *slot = (uint64_t)i;
    }
    DF_ASSERT_EQ_UINT(m.n, 5000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "file-%d.parquet", i);
        uint64_t v;
        DF_ASSERT(df_strmap_get(&m, key, (size_t)n, &v));
        DF_ASSERT_EQ_UINT(v, (uint64_t)i);
        uint64_t *slot;
        bool added;
        DF_ASSERT_OK(df_strmap_upsert(&m, key, (size_t)n, &slot, &added, &err), &err);
        DF_ASSERT(!added && *slot == (uint64_t)i);
    }
    DF_ASSERT(!df_strmap_get(&m, "file-5000.parquet", 17, NULL));
    DF_ASSERT(!df_strmap_get(&m, "file-1.parque", 13, NULL));   /* a prefix is another key */
    df_strmap_free(&m);
}

DF_TEST(strmap_tells_apart_empty_embedded_nul_and_prefix_keys) {
    df_strmap m = {0};
    const struct { const char *k; size_t n; } keys[] = {{"", 0}, {"a", 1}, {"a\0", 2}, {"a\0b", 3}, {"\0", 1}, {"ab", 2}};
    for (size_t i = 0; i < DF_ARRAY_LEN(keys); i++) {
        uint64_t *slot;
        bool added;
        DF_ASSERT_OK(df_strmap_upsert(&m, keys[i].k, keys[i].n, &slot, &added, NULL), NULL);
        DF_ASSERT(added);
        *slot = i + 100;
    }
    for (size_t i = 0; i < DF_ARRAY_LEN(keys); i++) {
        uint64_t v;
        DF_ASSERT(df_strmap_get(&m, keys[i].k, keys[i].n, &v));
        DF_ASSERT_EQ_UINT(v, i + 100);
    }
    DF_ASSERT_EQ_UINT(m.n, DF_ARRAY_LEN(keys));
    df_strmap_free(&m);
}
