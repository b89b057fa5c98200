/*
 * Session options, name rules, escaping and location sanitizing: the
 * (kind, message) pairs the reference produces for the same inputs.
 */
#include "df_test.h"

#include "session/session_int.h"

static df_session_options *new_opts(void) {
    df_session_options *o;
    DF_ASSERT_OK(df_session_options_new(&o, NULL), (df_error *)NULL);
    return o;
}

#define ASSERT_SET_FAILS(o, name, value, kind, expect)                          \
    do {                                                                         \
        df_error e_;                                                             \
        memset(&e_, 0, sizeof e_);                                               \
        df_value v_ = (value);                                                   \
        DF_ASSERT_KIND(df_session_options_set((o), (name), &v_, &e_), (kind));   \
        DF_ASSERT_EQ_STR(e_.message, (expect));                                 \
        df_error_clear(&e_);                                                     \
    } while (0)

static df_value big_int(int64_t cls) {
    df_value v = df_value_none();
    v.kind = DF_VALUE_BIG_INT;
    v.i = cls;
    return v;
}

DF_TEST(query_options_reject_bools_negatives_and_non_integers) {
    df_session_options *o = new_opts();
    ASSERT_SET_FAILS(o, "target_partitions", df_value_bool(true), DF_ERR_INVALID_OPTION_VALUE,
                     "`target_partitions` must be a non-negative integer");
    ASSERT_SET_FAILS(o, "output_batch_size", df_value_int(-1), DF_ERR_INVALID_OPTION_VALUE,
                     "`output_batch_size` must be a non-negative integer");
    ASSERT_SET_FAILS(o, "target_partitions", df_value_str("3"), DF_ERR_INVALID_OPTION_VALUE,
                     "`target_partitions` must be a non-negative integer");
    ASSERT_SET_FAILS(o, "target_partitions", big_int(2), DF_ERR_INVALID_OPTION_VALUE,
                     "`target_partitions` must be a non-negative integer");
    df_value huge = big_int(1);
    DF_ASSERT_OK(df_session_options_set(o, "target_partitions", &huge, NULL), (df_error *)NULL);
    df_session_options_free(o);
}

DF_TEST(zero_query_options_fail_validation_with_batch_pipeline) {
    df_session_options *o = new_opts();
    df_value zero = df_value_int(0);
    DF_ASSERT_OK(df_session_options_set(o, "target_partitions", &zero, NULL), (df_error *)NULL);
    df_error e;
    memset(&e, 0, sizeof e);
    DF_ASSERT_KIND(df_session_options_validate(o, &e), DF_ERR_BATCH_PIPELINE);
    DF_ASSERT_EQ_STR(e.phase, "config");
    DF_ASSERT_EQ_STR(e.message,
                     "batch pipeline configuration error for option `target_partitions`: must be greater than zero");
    df_session *s = NULL;
    DF_ASSERT_KIND(df_session_options_validate(o, NULL), DF_ERR_BATCH_PIPELINE);
    DF_ASSERT(s == NULL);
    df_session_options_free(o);
}

DF_TEST(blank_connection_string_is_a_target_config_error) {
    df_session_options *o = new_opts();
    df_error e;
    memset(&e, 0, sizeof e);
    df_value v = df_value_str("  \t");
    DF_ASSERT_KIND(df_session_options_set(o, "default_mssql_connection_string", &v, &e), DF_ERR_MSSQL_TARGET_CONFIG);
    DF_ASSERT_EQ_STR(e.phase, "mssql_target_config");
    DF_ASSERT_EQ_STR(e.message, "MSSQL target configuration error for option `connection.connection_string`: "
                                "connection string must not be empty");
    v = df_value_str("server=tcp:h;password=secret-token");
    DF_ASSERT_OK(df_session_options_set(o, "default_mssql_connection_string", &v, NULL), (df_error *)NULL);
    char *json;
    DF_ASSERT_OK(df_session_options_get_json(o, "default_mssql_connection_string", &json, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(json, "\"<redacted>\"");
    df_free(json);
    df_session_options_free(o);
}

DF_TEST(validation_options_check_keys_before_values) {
    df_session_options *o = new_opts();
    df_value_entry e1[] = {{df_value_str("target_validation_mode"), df_value_int(5)},
                           {df_value_str("x"), df_value_int(1)}};
    ASSERT_SET_FAILS(o, "validation_options", df_value_map(e1, 2), DF_ERR_UNKNOWN_OPTION,
                     "unknown validation option `x`");
    df_value_entry e2[] = {{df_value_int(1), df_value_int(2)}};
    ASSERT_SET_FAILS(o, "validation_options", df_value_map(e2, 1), DF_ERR_INVALID_OPTION_NAME,
                     "option names must be strings");
    df_value_entry e3[] = {{df_value_str("target_validation_mode"), df_value_str("x")}};
    ASSERT_SET_FAILS(o, "validation_options", df_value_map(e3, 1), DF_ERR_INVALID_OPTION_VALUE,
                     "invalid `target_validation_mode` value `x`");
    df_value_entry e4[] = {{df_value_str("require_successful_planning"), df_value_int(1)}};
    ASSERT_SET_FAILS(o, "validation_options", df_value_map(e4, 1), DF_ERR_INVALID_OPTION_VALUE,
                     "`require_successful_planning` must be a bool");
    df_value_entry ok[] = {{df_value_str("target_validation_mode"), df_value_str("require")},
                           {df_value_str("require_successful_planning"), df_value_bool(false)}};
    df_value okv = df_value_map(ok, 2);
    DF_ASSERT_OK(df_session_options_set(o, "validation_options", &okv, NULL), (df_error *)NULL);
    char *json;
    DF_ASSERT_OK(df_session_options_get_json(o, "validation_options", &json, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(json, "{\"target_validation_mode\":\"require\",\"dry_run_scan_summary_mode\":\"metadata_only\","
                           "\"require_successful_planning\":false}");
    df_free(json);
    df_session_options_free(o);
}

DF_TEST(schema_policies_accept_strings_and_bounded_forms) {
    df_session_options *o = new_opts();
    df_value_entry n40[] = {{df_value_str("nvarchar"), df_value_int(40)}};
    df_value_entry p3[] = {{df_value_str("datetime2"), df_value_int(3)}};
    df_value_entry ok[] = {{df_value_str("string_policy"), df_value_map(n40, 1)},
                           {df_value_str("timestamp_policy"), df_value_map(p3, 1)},
                           {df_value_str("uint64_policy"), df_value_str("decimal20_0")}};
    df_value v = df_value_map(ok, 3);
    DF_ASSERT_OK(df_session_options_set(o, "schema_options", &v, NULL), (df_error *)NULL);
    char *json;
    DF_ASSERT_OK(df_session_options_get_json(o, "schema_options", &json, NULL), (df_error *)NULL);
    DF_ASSERT(strstr(json, "\"string_policy\":{\"nvarchar\":40}") != NULL);
    DF_ASSERT(strstr(json, "\"timestamp_policy\":{\"datetime2\":3}") != NULL);
    DF_ASSERT(strstr(json, "\"uint64_policy\":\"decimal20_0\"") != NULL);
    df_free(json);
    df_session_options_free(o);
}

DF_TEST(schema_policies_reject_bad_forms_with_reference_messages) {
    df_session_options *o = new_opts();
    df_value_entry zero[] = {{df_value_str("nvarchar"), df_value_int(0)}};
    df_value_entry flag[] = {{df_value_str("nvarchar"), df_value_bool(true)}};
    df_value_entry foo[] = {{df_value_str("foo"), df_value_int(3)}};
    df_value_entry two[] = {{df_value_str("nvarchar"), df_value_int(3)}, {df_value_str("x"), df_value_int(1)}};
    df_value_entry p8[] = {{df_value_str("datetime2"), df_value_int(8)}};
    df_value_entry intkey[] = {{df_value_int(1), df_value_int(5)}};
    static const struct {
        const char *key;
        int which;
        const char *msg;
    } cases[] = {
        {"string_policy", 0, "`string_policy` bounded length must be at least 1"},
        {"string_policy", 1, "`string_policy` must be a non-negative integer"},
        {"string_policy", 2, "invalid `string_policy` variant"},
        {"string_policy", 3, "`string_policy` must contain exactly one policy entry"},
        {"timestamp_policy", 4, "`timestamp_policy` datetime2 precision must be in 0..=7"},
        {"string_policy", 5, "invalid `string_policy` variant"},
        {"timezone_policy", 2, "`timezone_policy` must be a string"},
        {"binary_policy", 0, "invalid `binary_policy` variant"},
    };
    df_value forms[] = {df_value_map(zero, 1), df_value_map(flag, 1), df_value_map(foo, 1),
                        df_value_map(two, 2),  df_value_map(p8, 1),   df_value_map(intkey, 1)};
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        df_value_entry top[] = {{df_value_str(cases[i].key), forms[cases[i].which]}};
        ASSERT_SET_FAILS(o, "schema_options", df_value_map(top, 1), DF_ERR_INVALID_OPTION_VALUE, cases[i].msg);
    }
    df_value_entry bad[] = {{df_value_str("decimal_policy"), df_value_str("x")}};
    ASSERT_SET_FAILS(o, "schema_options", df_value_map(bad, 1), DF_ERR_INVALID_OPTION_VALUE,
                     "invalid `decimal_policy` value `x`");
    df_value_entry unknown[] = {{df_value_str("zzz"), df_value_int(5)}};
    ASSERT_SET_FAILS(o, "schema_options", df_value_map(unknown, 1), DF_ERR_UNKNOWN_OPTION,
                     "unknown schema option `zzz`");
    df_session_options_free(o);
}

DF_TEST(provider_scan_options_validate_bounds) {
    df_session_options *o = new_opts();
    ASSERT_SET_FAILS(o, "provider_scan_options.max_concurrent_file_reads_per_scan", df_value_bool(true),
                     DF_ERR_INVALID_OPTION_VALUE, "`max_concurrent_file_reads_per_scan` must be a non-negative integer");
    ASSERT_SET_FAILS(o, "provider_scan_options.use_view_types", df_value_int(1), DF_ERR_INVALID_OPTION_VALUE,
                     "`use_view_types` must be a bool");
    ASSERT_SET_FAILS(o, "provider_scan_options.intra_file_repartitioning", df_value_str("x"),
                     DF_ERR_INVALID_OPTION_VALUE, "`intra_file_repartitioning` must be a FileRepartitioning value");
    ASSERT_SET_FAILS(o, "provider_scan_options.max_concurrent_file_reads_per_partition", df_value_none(),
                     DF_ERR_INVALID_OPTION_VALUE,
                     "`max_concurrent_file_reads_per_partition` must be a non-negative integer");
    df_value zero = df_value_int(0);
    DF_ASSERT_OK(df_session_options_set(o, "provider_scan_options.native_async_prefetch_file_count_per_partition",
                                        &zero, NULL),
                 (df_error *)NULL);
    DF_ASSERT_OK(df_session_options_validate(o, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_session_options_set(o, "provider_scan_options.parquet_full_file_read_threshold", &zero, NULL),
                 (df_error *)NULL);
    DF_ASSERT_OK(df_session_options_set(o, "provider_scan_options.parquet_metadata_size_hint", &zero, NULL),
                 (df_error *)NULL);
    df_error e;
    memset(&e, 0, sizeof e);
    DF_ASSERT_KIND(df_session_options_validate(o, &e), DF_ERR_CONFIG);
    DF_ASSERT_EQ_STR(e.message, "configuration error: parquet_metadata_size_hint must be greater than zero");
    df_session_options_free(o);
}

DF_TEST(name_rules_match_reference_reasons) {
    static const struct {
        const char *name;
        const char *msg;
    } bad[] = {
        {"", "invalid Delta source name ``: source names must not be empty"},
        {"1abc", "invalid Delta source name `1abc`: source names must start with an ASCII letter or underscore"},
        {"a-b", "invalid Delta source name `a-b`: source names may contain only ASCII letters, digits, and underscores"},
        {"a\nb", "invalid Delta source name `a\\nb`: source names may contain only ASCII letters, digits, and underscores"},
        {"\xc3\xa9", "invalid Delta source name `\\u{e9}`: source names must start with an ASCII letter or underscore"},
        {"select", "invalid Delta source name `select`: source names must not be SQL keywords"},
        {"WiNdOw", "invalid Delta source name `WiNdOw`: source names must not be SQL keywords"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(bad); i++) {
        df_error e;
        memset(&e, 0, sizeof e);
        DF_ASSERT_KIND(df__session_check_name(bad[i].name, &e), DF_ERR_INVALID_SOURCE_NAME);
        DF_ASSERT_EQ_STR(e.phase, "source_config");
        DF_ASSERT_EQ_STR(e.message, bad[i].msg);
    }
    const char *good[] = {"orders", "_", "_1", "public", "datafusion", "information_schema", "table_1"};
    for (size_t i = 0; i < DF_ARRAY_LEN(good); i++) DF_ASSERT_OK(df__session_check_name(good[i], NULL), (df_error *)NULL);
}

static char *sanitized(const char *uri) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__session_sanitize_uri(&b, uri, NULL), (df_error *)NULL);
    return df_buf_take(&b);
}

DF_TEST(locations_are_shown_without_secrets) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"s3://user:pw@bucket/path?secret=1#frag", "s3://bucket/path"},
        {"https://user:pw@host/path?x=1", "https://host/path"},
        {"s3://bucket/p?X-Amz-Signature=abc", "s3://bucket/p"},
        {"s3://bu\ncket/p\xc3\xa9", "s3://bu\\ncket/p\\u{e9}"},
        {"/tmp/sess/t1", "/tmp/sess/t1"},
        {"file:/tmp/a@b/c", "file:/tmp/a@b/c"},
        {"s3://a@b@host/x@y", "s3://host/x@y"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        char *s = sanitized(cases[i].in);
        DF_ASSERT_EQ_STR(s, cases[i].out);
        df_free(s);
    }
}

DF_TEST(escaping_follows_rust_escape_default) {
    df_buf b;
    df_buf_init(&b, 0);
    const char in[] = "a\t\r\n'\"\\\x01\xe2\x82\xac\xff";
    DF_ASSERT_OK(df__session_escape_text(&b, in, sizeof in - 1, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "a\\t\\r\\n\\'\\\"\\\\\\u{1}\\u{20ac}\\u{fffd}");
    df_buf_free(&b);
}

/* A failed stage's cause: one line, escaped once; quotes, backslashes and letters stay as they are. */
DF_TEST(cause_escaping_touches_only_control_characters_once) {
    char out[64];
    df__session_escape_controls_into(out, sizeof out, "Login failed for user 'sa'.\n\t\x01\xe2\x82\xac\\\xff");
    DF_ASSERT_EQ_STR(out, "Login failed for user 'sa'.\\n\\t\\u{1}\xe2\x82\xac\\\\u{fffd}");
    char again[64];
    df__session_escape_controls_into(again, sizeof again, out);
    DF_ASSERT_EQ_STR(again, out);
    /* truncation never cuts an escape or a character in half */
    char small[6];
    df__session_escape_controls_into(small, sizeof small, "abcd\n");
    DF_ASSERT_EQ_STR(small, "abcd");
    df__session_escape_controls_into(small, sizeof small, "abc\xe2\x82\xac");
    DF_ASSERT_EQ_STR(small, "abc");
}

DF_TEST(logging_filters_follow_the_reference_syntax) {
    const char *good[] = {"delta_funnel=info,arrow_sql_server=info", "debug", "3", "delta_funnel",
                          "tiberius_raw_bulk::protocol=trace, object_store=DEBUG", "x[span{a=1}]=warn", ",,", ""};
    for (size_t i = 0; i < DF_ARRAY_LEN(good); i++) DF_ASSERT_OK(df_log_filter_validate(good[i], NULL), (df_error *)NULL);
    df_error e;
    memset(&e, 0, sizeof e);
    DF_ASSERT_KIND(df_log_filter_validate("delta_funnel=bogus", &e), DF_ERR_INVALID_LOGGING_FILTER);
    DF_ASSERT_EQ_STR(e.message, "invalid DeltaFunnel logging filter: error parsing level filter: expected one of "
                                "\"off\", \"error\", \"warn\", \"info\", \"debug\", \"trace\", or a number 0-5");
    DF_ASSERT_EQ_STR(e.phase, "config");
    DF_ASSERT_KIND(df_log_filter_validate("!!!", &e), DF_ERR_INVALID_LOGGING_FILTER);
    DF_ASSERT_EQ_STR(e.message, "invalid DeltaFunnel logging filter: invalid filter directive");
    DF_ASSERT_KIND(df_log_filter_validate("a=6", &e), DF_ERR_INVALID_LOGGING_FILTER);
    DF_ASSERT_KIND(df_log_filter_validate("a b=info", &e), DF_ERR_INVALID_LOGGING_FILTER);
    df_error_clear(&e);
}
