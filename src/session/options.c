/*
 * Session options: typed checks of host values with the reference's exact
 * messages, and the deferred "must be greater than zero" validation.
 *
 * Checks happen in two steps, as in the reference: df_session_options_set
 * parses one value (type, sign, known names; mapping options check every
 * key before any value), and df_session_options_validate rejects zero
 * counts afterwards.  Policies of schema_options are stored for the SQL
 * Server output issue; nothing reads them yet.
 */
#include "session/session_int.h"

#include <stdio.h>

#define DEFAULT_BATCH_SIZE 8192

static void set_policy(df_policy *p, const char *name, int64_t bound) {
    snprintf(p->name, sizeof p->name, "%s", name);
    p->bound = bound;
}

void df__session_options_defaults(struct df_session_options *o) {
    memset(o, 0, sizeof *o);
    o->target_partitions = -1;
    o->output_batch_size = -1;
    o->scan.max_concurrent_file_reads_per_scan = -1;
    o->scan.max_concurrent_file_reads_per_partition = 3;
    o->scan.output_buffer_capacity_per_partition = 1;
    o->scan.prefetch_file_count_per_partition = 2;
    o->scan.parquet_metadata_size_hint = 65536;
    o->scan.parquet_full_file_read_threshold = -1;
    snprintf(o->validation.target_validation_mode, sizeof o->validation.target_validation_mode, "%s",
             "validate_if_possible");
    snprintf(o->validation.dry_run_scan_summary_mode, sizeof o->validation.dry_run_scan_summary_mode, "%s",
             "metadata_only");
    o->validation.require_successful_planning = true;
    set_policy(&o->schema.string_policy, "nvarchar_max", -1);
    set_policy(&o->schema.binary_policy, "varbinary_max", -1);
    set_policy(&o->schema.timezone_policy, "reject", -1);
    set_policy(&o->schema.timestamp_policy, "datetime2", 7);
    set_policy(&o->schema.nanosecond_policy, "reject_non_100ns", -1);
    set_policy(&o->schema.uint64_policy, "reject", -1);
    set_policy(&o->schema.decimal_policy, "reject_negative_scale", -1);
    set_policy(&o->schema.decimal256_policy, "checked_downcast", -1);
    set_policy(&o->schema.float_policy, "reject_non_finite", -1);
    set_policy(&o->schema.date64_policy, "reject_non_midnight", -1);
}

df_errkind df_session_options_new(df_session_options **out, df_error *err) {
    *out = NULL;
    df_session_options *o = df_malloc(sizeof *o);
    if (!o) return DF_OOM(err);
    df__session_options_defaults(o);
    *out = o;
    return DF_OK;
}

void df_session_options_free(df_session_options *opts) {
    if (!opts) return;
    if (opts->default_connection_string) {
        /* Scrub the secret before the memory goes back to the allocator. */
        volatile char *p = opts->default_connection_string;
        while (*p) *p++ = '\0';
        df_free(opts->default_connection_string);
    }
    df_free(opts);
}

df_errkind df_session_options_copy(const df_session_options *opts, df_session_options **out, df_error *err) {
    *out = NULL;
    df_session_options *o = df_malloc(sizeof *o);
    if (!o) return DF_OOM(err);
    *o = *opts;
    o->default_connection_string = NULL;
    if (opts->default_connection_string) {
        o->default_connection_string = df_strdup(opts->default_connection_string);
        if (!o->default_connection_string) {
            df_free(o);
            return DF_OOM(err);
        }
    }
    *out = o;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Value checks                                                              */

static df_errkind option_error(df_error *err, df_errkind kind, const char *fmt, const char *name) {
    df_error_set(err, kind, fmt, name);
    df_error_set_phase(err, "config");
    df_error_set_origin(err, "session");
    return kind;
}

static df_errkind not_count(df_error *err, const char *name) {
    return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` must be a non-negative integer", name);
}

static df_errkind not_string(df_error *err, const char *name) {
    return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` must be a string", name);
}

static df_errkind not_bool(df_error *err, const char *name) {
    return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` must be a bool", name);
}

/* A non-negative integer (bools rejected); values beyond int64 but inside uint64 clamp. */
static df_errkind read_count(const df_value *v, const char *name, int64_t *out, df_error *err) {
    if (v->kind == DF_VALUE_INT && v->i >= 0) {
        *out = v->i;
        return DF_OK;
    }
    if (v->kind == DF_VALUE_BIG_INT && v->i == 1) {
        *out = INT64_MAX;
        return DF_OK;
    }
    return not_count(err, name);
}

/* A count or NONE (-1). */
static df_errkind read_optional_count(const df_value *v, const char *name, int64_t *out, df_error *err) {
    if (v->kind == DF_VALUE_NONE) {
        *out = -1;
        return DF_OK;
    }
    return read_count(v, name, out, err);
}

static df_errkind invalid_value(df_error *err, const char *name, const char *value) {
    char shown[200];
    df__session_escape_into(shown, sizeof shown, value);
    df_error_set(err, DF_ERR_INVALID_OPTION_VALUE, "invalid `%s` value `%s`", name, shown);
    df_error_set_phase(err, "config");
    df_error_set_origin(err, "session");
    return DF_ERR_INVALID_OPTION_VALUE;
}

/* Copies `value` into `dst` if it is one of `allowed` (NULL-terminated). */
static df_errkind read_enum(const df_value *v, const char *name, const char *const *allowed, char *dst, size_t size,
                            df_error *err) {
    if (v->kind != DF_VALUE_STRING) return not_string(err, name);
    for (const char *const *a = allowed; *a; a++) {
        if (strcmp(*a, v->s) == 0) {
            snprintf(dst, size, "%s", *a);
            return DF_OK;
        }
    }
    return invalid_value(err, name, v->s);
}

/* ------------------------------------------------------------------------ */
/* validation_options                                                        */

static const char *const validation_modes[] = {"disabled", "validate_if_possible", "require", NULL};
static const char *const scan_summary_modes[] = {"metadata_only", "exhaust_scan_metadata", NULL};
static const char *const validation_keys[] = {"target_validation_mode", "dry_run_scan_summary_mode",
                                              "require_successful_planning", NULL};

static bool name_in(const char *name, const char *const *list) {
    for (const char *const *a = list; *a; a++)
        if (strcmp(*a, name) == 0) return true;
    return false;
}

/* First pass over a mapping option: every key a string, every key known. */
static df_errkind check_keys(const df_value *map, const char *group, const char *const *known, df_error *err) {
    for (size_t i = 0; i < map->nentries; i++) {
        const df_value *k = &map->entries[i].key;
        if (k->kind != DF_VALUE_STRING)
            return option_error(err, DF_ERR_INVALID_OPTION_NAME, "option names must be strings%s", "");
        if (!name_in(k->s, known)) {
            char shown[200];
            df__session_escape_into(shown, sizeof shown, k->s);
            df_error_set(err, DF_ERR_UNKNOWN_OPTION, "unknown %s option `%s`", group, shown);
            df_error_set_phase(err, "config");
            df_error_set_origin(err, "session");
            return DF_ERR_UNKNOWN_OPTION;
        }
    }
    return DF_OK;
}

static df_errkind set_validation(df_validation_opts *out, const df_value *map, df_error *err) {
    DF_TRY(check_keys(map, "validation", validation_keys, err));
    df_validation_opts v = *out;
    for (size_t i = 0; i < map->nentries; i++) {
        const char *key = map->entries[i].key.s;
        const df_value *val = &map->entries[i].value;
        if (strcmp(key, "target_validation_mode") == 0) {
            DF_TRY(read_enum(val, key, validation_modes, v.target_validation_mode, sizeof v.target_validation_mode,
                             err));
        } else if (strcmp(key, "dry_run_scan_summary_mode") == 0) {
            DF_TRY(read_enum(val, key, scan_summary_modes, v.dry_run_scan_summary_mode,
                             sizeof v.dry_run_scan_summary_mode, err));
        } else {
            if (val->kind != DF_VALUE_BOOL) return not_bool(err, key);
            v.require_successful_planning = val->b;
        }
    }
    *out = v;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* schema_options                                                            */

/* One schema policy: its accepted strings and, if any, its bounded dict form. */
typedef struct policy_spec {
    const char *key;                  /* option key */
    size_t offset;                    /* of the df_policy in df_schema_opts */
    const char *names[5];             /* accepted strings (NULL-terminated) */
    const char *variants[3];          /* dict-form keys; the first is checked specially, see read_policy */
    int64_t max_bound;                /* inclusive upper bound of N (-1 = none) */
    int64_t min_bound;                /* inclusive lower bound of N */
} policy_spec;

static const policy_spec policies[] = {
    {"string_policy", offsetof(df_schema_opts, string_policy), {"nvarchar_max", "observed_nvarchar", NULL},
     {"nvarchar", "ascii_varchar", NULL}, -1, 1},
    {"binary_policy", offsetof(df_schema_opts, binary_policy), {"varbinary_max", "observed_varbinary", NULL},
     {"varbinary", NULL}, -1, 1},
    {"timezone_policy", offsetof(df_schema_opts, timezone_policy),
     {"reject", "datetimeoffset", "normalize_utc_datetime2", NULL}, {NULL}, -1, 0},
    {"timestamp_policy", offsetof(df_schema_opts, timestamp_policy), {"datetime", "datetime2", NULL},
     {"datetime2", NULL}, 7, 0},
    {"nanosecond_policy", offsetof(df_schema_opts, nanosecond_policy),
     {"reject_non_100ns", "round_to_100ns", "truncate_to_100ns", NULL}, {NULL}, -1, 0},
    {"uint64_policy", offsetof(df_schema_opts, uint64_policy), {"reject", "decimal20_0", "checked_bigint", NULL},
     {NULL}, -1, 0},
    {"decimal_policy", offsetof(df_schema_opts, decimal_policy),
     {"reject_negative_scale", "normalize_negative_scale", NULL}, {NULL}, -1, 0},
    {"decimal256_policy", offsetof(df_schema_opts, decimal256_policy), {"checked_downcast", "reject", NULL}, {NULL},
     -1, 0},
    {"float_policy", offsetof(df_schema_opts, float_policy), {"reject_non_finite", NULL}, {NULL}, -1, 0},
    {"date64_policy", offsetof(df_schema_opts, date64_policy), {"reject_non_midnight", "timestamp_datetime2", NULL},
     {NULL}, -1, 0},
};

static const policy_spec *find_policy(const char *key) {
    for (size_t i = 0; i < DF_ARRAY_LEN(policies); i++)
        if (strcmp(policies[i].key, key) == 0) return &policies[i];
    return NULL;
}

/* The dict form {"variant": N}: exactly one entry, a known variant, a bounded N. */
static df_errkind read_policy_dict(const policy_spec *ps, const df_value *v, df_policy *out, df_error *err) {
    if (v->nentries != 1)
        return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` must contain exactly one policy entry", ps->key);
    const df_value *k = &v->entries[0].key;
    const df_value *n = &v->entries[0].value;
    const char *variant = NULL;
    if (k->kind == DF_VALUE_STRING)
        for (size_t i = 0; ps->variants[i]; i++)
            if (strcmp(k->s, ps->variants[i]) == 0) variant = ps->variants[i];
    if (!variant) return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "invalid `%s` variant", ps->key);
    int64_t bound;
    DF_TRY(read_count(n, ps->key, &bound, err));
    if (bound < ps->min_bound)
        return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` bounded length must be at least 1", ps->key);
    if (ps->max_bound >= 0 && bound > ps->max_bound)
        return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` datetime2 precision must be in 0..=7", ps->key);
    set_policy(out, variant, bound);
    return DF_OK;
}

static df_errkind read_policy(const policy_spec *ps, const df_value *v, df_policy *out, df_error *err) {
    if (v->kind == DF_VALUE_MAP && ps->variants[0]) return read_policy_dict(ps, v, out, err);
    char name[32];
    DF_TRY(read_enum(v, ps->key, ps->names, name, sizeof name, err));
    /* "datetime2" alone means precision 7. */
    set_policy(out, name, strcmp(name, "datetime2") == 0 ? 7 : -1);
    return DF_OK;
}

static df_errkind set_schema(df_schema_opts *out, const df_value *map, df_error *err) {
    const char *known[DF_ARRAY_LEN(policies) + 1];
    for (size_t i = 0; i < DF_ARRAY_LEN(policies); i++) known[i] = policies[i].key;
    known[DF_ARRAY_LEN(policies)] = NULL;
    DF_TRY(check_keys(map, "schema", known, err));
    df_schema_opts s = *out;
    for (size_t i = 0; i < map->nentries; i++) {
        const policy_spec *ps = find_policy(map->entries[i].key.s);
        DF_TRY(read_policy(ps, &map->entries[i].value, (df_policy *)(void *)((char *)&s + ps->offset), err));
    }
    *out = s;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Provider scan options                                                     */

static df_errkind set_scan(df_scan_opts *s, const char *field, const df_value *v, df_error *err) {
    if (strcmp(field, "max_concurrent_file_reads_per_scan") == 0)
        return read_optional_count(v, field, &s->max_concurrent_file_reads_per_scan, err);
    if (strcmp(field, "max_concurrent_file_reads_per_partition") == 0)
        return read_count(v, field, &s->max_concurrent_file_reads_per_partition, err);
    if (strcmp(field, "output_buffer_capacity_per_partition") == 0)
        return read_count(v, field, &s->output_buffer_capacity_per_partition, err);
    if (strcmp(field, "native_async_prefetch_file_count_per_partition") == 0)
        return read_count(v, field, &s->prefetch_file_count_per_partition, err);
    if (strcmp(field, "parquet_metadata_size_hint") == 0)
        return read_optional_count(v, field, &s->parquet_metadata_size_hint, err);
    if (strcmp(field, "parquet_full_file_read_threshold") == 0)
        return read_optional_count(v, field, &s->parquet_full_file_read_threshold, err);
    if (strcmp(field, "intra_file_repartitioning") == 0) {
        if (v->kind == DF_VALUE_NONE) {
            s->rebalance = false;
            return DF_OK;
        }
        if (v->kind == DF_VALUE_STRING && strcmp(v->s, "fill_missing_parallelism") == 0) {
            s->rebalance = false;
            return DF_OK;
        }
        if (v->kind == DF_VALUE_STRING && strcmp(v->s, "rebalance") == 0) {
            s->rebalance = true;
            return DF_OK;
        }
        return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` must be a FileRepartitioning value", field);
    }
    if (strcmp(field, "use_view_types") == 0) {
        if (v->kind != DF_VALUE_BOOL) return not_bool(err, field);
        s->use_view_types = v->b;
        return DF_OK;
    }
    char shown[160];
    df__session_escape_into(shown, sizeof shown, field);
    df_error_set(err, DF_ERR_UNKNOWN_OPTION, "unknown provider scan option `%s`", shown);
    df_error_set_origin(err, "session");
    return DF_ERR_UNKNOWN_OPTION;
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */

static df_errkind set_connection_string(df_session_options *o, const df_value *v, df_error *err) {
    if (v->kind == DF_VALUE_NONE) {
        df_free(o->default_connection_string);
        o->default_connection_string = NULL;
        return DF_OK;
    }
    if (v->kind != DF_VALUE_STRING) return not_string(err, "default_mssql_connection_string");
    const char *p = v->s;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r')) p++;
    if (!*p) {
        df_error_set(err, DF_ERR_MSSQL_TARGET_CONFIG,
                     "MSSQL target configuration error for option `connection.connection_string`: "
                     "connection string must not be empty");
        df_error_set_origin(err, "session");
        return DF_ERR_MSSQL_TARGET_CONFIG;
    }
    char *copy = df_strdup(v->s);
    if (!copy) return DF_OOM(err);
    df_free(o->default_connection_string);
    o->default_connection_string = copy;
    return DF_OK;
}

df_errkind df_session_options_set(df_session_options *o, const char *name, const df_value *value, df_error *err) {
    df_value none = df_value_none();
    if (!value) value = &none;
    if (!o || !name) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "options and name are required");
    if (strcmp(name, "default_mssql_connection_string") == 0) return set_connection_string(o, value, err);
    if (strcmp(name, "target_partitions") == 0) return read_optional_count(value, name, &o->target_partitions, err);
    if (strcmp(name, "output_batch_size") == 0) return read_optional_count(value, name, &o->output_batch_size, err);
    if (strcmp(name, "validation_options") == 0 || strcmp(name, "schema_options") == 0) {
        bool validation = name[0] == 'v';
        if (value->kind == DF_VALUE_NONE) return DF_OK;
        if (value->kind != DF_VALUE_MAP)
            return option_error(err, DF_ERR_INVALID_OPTION_VALUE, "`%s` must be a mapping", name);
        return validation ? set_validation(&o->validation, value, err) : set_schema(&o->schema, value, err);
    }
    static const char prefix[] = "provider_scan_options.";
    if (strncmp(name, prefix, sizeof prefix - 1) == 0) return set_scan(&o->scan, name + sizeof prefix - 1, value, err);
    char shown[160];
    df__session_escape_into(shown, sizeof shown, name);
    df_error_set(err, DF_ERR_UNKNOWN_OPTION, "unknown session option `%s`", shown);
    df_error_set_origin(err, "session");
    return DF_ERR_UNKNOWN_OPTION;
}

static df_errkind not_positive(df_error *err, const char *name) {
    df_error_set(err, DF_ERR_CONFIG, "configuration error: %s must be greater than zero", name);
    df_error_set_origin(err, "session");
    return DF_ERR_CONFIG;
}

static df_errkind not_positive_pipeline(df_error *err, const char *name) {
    df_error_set(err, DF_ERR_BATCH_PIPELINE,
                 "batch pipeline configuration error for option `%s`: must be greater than zero", name);
    df_error_set_phase(err, "config");
    df_error_set_origin(err, "session");
    return DF_ERR_BATCH_PIPELINE;
}

df_errkind df_session_options_validate(const df_session_options *o, df_error *err) {
    const df_scan_opts *s = &o->scan;
    if (s->max_concurrent_file_reads_per_scan == 0) return not_positive(err, "max_concurrent_file_reads_per_scan");
    if (s->max_concurrent_file_reads_per_partition == 0)
        return not_positive(err, "max_concurrent_file_reads_per_partition");
    if (s->output_buffer_capacity_per_partition == 0) return not_positive(err, "output_buffer_capacity_per_partition");
    if (s->parquet_metadata_size_hint == 0) return not_positive(err, "parquet_metadata_size_hint");
    if (s->parquet_full_file_read_threshold == 0) return not_positive(err, "parquet_full_file_read_threshold");
    if (o->target_partitions == 0) return not_positive_pipeline(err, "target_partitions");
    if (o->output_batch_size == 0) return not_positive_pipeline(err, "output_batch_size");
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading back                                                              */

static df_errkind json_count(df_buf *b, int64_t v, df_error *err) {
    return v < 0 ? df_buf_append_str(b, "null", err) : df_buf_printf(b, err, "%lld", (long long)v);
}

static df_errkind json_policy(df_buf *b, const df_policy *p, df_error *err) {
    if (p->bound < 0 || (strcmp(p->name, "datetime2") == 0 && p->bound == 7))
        return df_buf_printf(b, err, "\"%s\"", p->name);
    return df_buf_printf(b, err, "{\"%s\":%lld}", p->name, (long long)p->bound);
}

static df_errkind schema_json(df_buf *b, const df_schema_opts *s, df_error *err) {
    DF_TRY(df_buf_append_char(b, '{', err));
    for (size_t i = 0; i < DF_ARRAY_LEN(policies); i++) {
        const df_policy *p = (const df_policy *)(const void *)((const char *)s + policies[i].offset);
        DF_TRY(df_buf_printf(b, err, "%s\"%s\":", i ? "," : "", policies[i].key));
        DF_TRY(json_policy(b, p, err));
    }
    return df_buf_append_char(b, '}', err);
}

static df_errkind scan_json(df_buf *b, const df_scan_opts *s, df_error *err) {
    DF_TRY(df_buf_append_str(b, "{\"max_concurrent_file_reads_per_scan\":", err));
    DF_TRY(json_count(b, s->max_concurrent_file_reads_per_scan, err));
    DF_TRY(df_buf_printf(b, err,
                         ",\"max_concurrent_file_reads_per_partition\":%lld,"
                         "\"output_buffer_capacity_per_partition\":%lld,"
                         "\"native_async_prefetch_file_count_per_partition\":%lld,"
                         "\"parquet_metadata_size_hint\":",
                         (long long)s->max_concurrent_file_reads_per_partition,
                         (long long)s->output_buffer_capacity_per_partition,
                         (long long)s->prefetch_file_count_per_partition));
    DF_TRY(json_count(b, s->parquet_metadata_size_hint, err));
    DF_TRY(df_buf_append_str(b, ",\"parquet_full_file_read_threshold\":", err));
    DF_TRY(json_count(b, s->parquet_full_file_read_threshold, err));
    return df_buf_printf(b, err, ",\"intra_file_repartitioning\":\"%s\",\"use_view_types\":%s}",
                         s->rebalance ? "rebalance" : "fill_missing_parallelism",
                         s->use_view_types ? "true" : "false");
}

df_errkind df_session_options_get_json(const df_session_options *o, const char *name, char **out, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k;
    if (strcmp(name, "default_mssql_connection_string") == 0)
        k = df_buf_append_str(&b, o->default_connection_string ? "\"<redacted>\"" : "null", err);
    else if (strcmp(name, "target_partitions") == 0)
        k = json_count(&b, o->target_partitions, err);
    else if (strcmp(name, "output_batch_size") == 0)
        k = json_count(&b, o->output_batch_size < 0 ? DEFAULT_BATCH_SIZE : o->output_batch_size, err);
    else if (strcmp(name, "validation_options") == 0)
        k = df_buf_printf(&b, err,
                          "{\"target_validation_mode\":\"%s\",\"dry_run_scan_summary_mode\":\"%s\","
                          "\"require_successful_planning\":%s}",
                          o->validation.target_validation_mode, o->validation.dry_run_scan_summary_mode,
                          o->validation.require_successful_planning ? "true" : "false");
    else if (strcmp(name, "schema_options") == 0)
        k = schema_json(&b, &o->schema, err);
    else if (strcmp(name, "provider_scan_options") == 0)
        k = scan_json(&b, &o->scan, err);
    else
        k = df_error_set(err, DF_ERR_UNKNOWN_OPTION, "unknown session option");
    if (k != DF_OK) {
        df_buf_free(&b);
        return k;
    }
    return df_buf_take_text(&b, out, NULL, err);
}
