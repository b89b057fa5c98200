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
