/*
 * SQL Server write planning: Arrow output schema -> SQL Server columns and
 * DDL, with the session's schema_options policies.  No I/O.
 *
 * Every column is mapped independently; problems are collected as
 * diagnostics ({severity, code, message, field{index,name}}) and any error
 * diagnostic fails planning with mssql_schema_planning, "arrow-sql-server
 * returned N diagnostic(s)" as the reference words it, the diagnostics in
 * the error context.
 *
 * Where we differ from the reference (docs/writes.md):
 *   - observed_nvarchar / observed_varbinary plan the column as (max) for
 *     the staging table and record that its final length is the longest
 *     value seen while streaming (write.c narrows the column before the
 *     table becomes visible);
 *   - Date64 under reject_non_midnight maps to `date`, and the bulk writer
 *     rejects values with a time of day row by row (the reference can only
 *     fail planning).
 */
#include "load/write_int.h"

#include <stdio.h>

const char *df__write_mode_name(df_load_mode mode) {
    switch (mode) {
    case DF_LOAD_APPEND_EXISTING: return "append_existing";
    case DF_LOAD_CREATE_AND_LOAD: return "create_and_load";
    case DF_LOAD_REPLACE: return "replace";
    }
    return "";
}

/* ------------------------------------------------------------------------ */
/* Quoting                                                                   */

df_errkind df__write_quote(df_buf *out, const char *name, df_error *err) {
    DF_TRY(df_buf_append_char(out, '[', err));
    for (const char *p = name; *p; p++) {
        DF_TRY(df_buf_append_char(out, *p, err));
        if (*p == ']') DF_TRY(df_buf_append_char(out, ']', err));
    }
    return df_buf_append_char(out, ']', err);
}

df_errkind df__write_nliteral(df_buf *out, const char *text, df_error *err) {
    DF_TRY(df_buf_append(out, "N'", 2, err));
    for (const char *p = text; *p; p++) {
        DF_TRY(df_buf_append_char(out, *p, err));
        if (*p == '\'') DF_TRY(df_buf_append_char(out, '\'', err));
    }
    return df_buf_append_char(out, '\'', err);
}

/* Characters (code points) of a UTF-8 string. */
static size_t char_count(const char *s) { return df_utf8_count((const uint8_t *)s, strlen(s)); }

static bool has_control(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F) return true;
    return false;
}

df_errkind df__write_check_identifier(const char *what, const char *name, const char *output_name, df_error *err) {
    char out[200];
    df__session_escape_into(out, sizeof out, output_name);
    const char *why = NULL;
    char buf[96];
    size_t n = char_count(name);
    if (n == 0) {
        why = "identifier must not be empty";
    } else if (has_control(name)) {
        why = "identifier must not contain control characters";
    } else if (n > 128) {
        snprintf(buf, sizeof buf, "identifier is %zu characters; maximum is 128", n);
        why = buf;
    }
    if (!why) return DF_OK;
    df_error_set(err, DF_ERR_MSSQL_DDL_TARGET_IDENTIFIER, "MSSQL DDL planning error for output `%s`: invalid %s: %s",
                 out, what, why);
    df_error_set_phase(err, "mssql_ddl_planning");
    return DF_ERR_MSSQL_DDL_TARGET_IDENTIFIER;
}

/* ------------------------------------------------------------------------ */
/* Diagnostics                                                               */

typedef struct diags {
    df_buf json;                     /* the diagnostics array body (comma-joined objects) */
    int32_t errors;                  /* error diagnostics */
    int32_t warnings;                /* warning diagnostics */
} diags;

static void diag_add(diags *d, const char *severity, const char *code, const char *message, int32_t index,
                     const char *field) {
    df_json_writer w;
    df_buf one;
    df_buf_init(&one, 0);
    df_json_writer_init(&w, &one, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "code", code);
    df_json_key(&w, "field");
    if (field) {
        df_json_object_begin(&w);
        df_json_kv_int(&w, "index", index);
        df_json_kv_string(&w, "name", field);
        df_json_object_end(&w);
    } else {
        df_json_write_null(&w);
    }
    df_json_kv_string(&w, "message", message);
    df_json_kv_null(&w, "row");
    df_json_kv_string(&w, "severity", severity);
    df_json_object_end(&w);
    if (df_json_writer_finish(&w, NULL) == DF_OK && one.data) {
        if (d->json.len) df_buf_append_char(&d->json, ',', NULL);
        df_buf_append(&d->json, one.data, one.len, NULL);
    }
    df_buf_free(&one);
    if (!strcmp(severity, "error"))
        d->errors++;
    else
        d->warnings++;
}

/* ------------------------------------------------------------------------ */
/* Type mapping                                                              */

static bool policy_is(const df_policy *p, const char *name) { return !strcmp(p->name, name); }

static void set_type(df_mssql_column *c, df_mssql_sqltype t, int32_t len, int prec, int scale) {
    c->type = t;
    c->length = len;
    c->precision = (uint8_t)prec;
    c->scale = (uint8_t)scale;
}

/* Maps a timestamp column; returns false with a diagnostic on failure. */
static bool map_timestamp(const df_type *t, const df_schema_opts *so, df_mssql_column *c, diags *d, int32_t i,
                          const char *name) {
    bool zoned = t->timezone && t->timezone[0];
    if (zoned) {
        if (policy_is(&so->timezone_policy, "reject")) {
            diag_add(d, "error", "profile_dependent_conversion",
                     "time-zone-aware timestamps need timezone_policy `datetimeoffset` or `normalize_utc_datetime2`",
                     i, name);
            return false;
        }
        if (policy_is(&so->timezone_policy, "datetimeoffset")) {
            set_type(c, DF_MSSQL_DATETIMEOFFSET, 0, 0, 7);
            return true;
        }
        /* normalize_utc_datetime2: Arrow instants are UTC already; the timestamp policy decides. */
    }
    if (policy_is(&so->timestamp_policy, "datetime"))
        set_type(c, DF_MSSQL_DATETIME, 0, 0, 0);
    else
        set_type(c, DF_MSSQL_DATETIME2, 0, 0, so->timestamp_policy.bound >= 0 ? (int)so->timestamp_policy.bound : 7);
    return true;
}

static bool map_decimal(const df_type *t, const df_schema_opts *so, df_mssql_column *c, diags *d, int32_t i,
                        const char *name) {
    int p = t->precision, s = t->scale;
    if (t->id == DF_TYPE_DECIMAL256 && policy_is(&so->decimal256_policy, "reject")) {
        diag_add(d, "error", "profile_dependent_conversion", "Decimal256 columns are rejected by decimal256_policy",
                 i, name);
        return false;
    }
    if (s < 0) {
        if (policy_is(&so->decimal_policy, "reject_negative_scale")) {
            diag_add(d, "error", "profile_dependent_conversion",
                     "negative decimal scale needs decimal_policy `normalize_negative_scale`", i, name);
            return false;
        }
        p = p - s;
        s = 0;
    }
    if (p < 1 || p > 38 || s > p) {
        diag_add(d, "error", "decimal_out_of_range", "decimal precision must be in 1..=38 with 0 <= scale <= precision",
                 i, name);
        return false;
    }
    set_type(c, DF_MSSQL_DECIMAL, 0, p, s);
    return true;
}

static bool map_string(const df_schema_opts *so, df_mssql_column *c, df_observe *obs, diags *d, int32_t i,
                       const char *name) {
    const df_policy *p = &so->string_policy;
    if (policy_is(p, "observed_nvarchar")) {
        set_type(c, DF_MSSQL_NVARCHAR, -1, 0, 0);
        *obs = DF_OBSERVE_NVARCHAR;
    } else if (policy_is(p, "nvarchar")) {
        set_type(c, DF_MSSQL_NVARCHAR, (int32_t)p->bound, 0, 0);
    } else if (policy_is(p, "ascii_varchar")) {
        if (p->bound < 1 || p->bound > 8000) {
            diag_add(d, "error", "profile_dependent_conversion", "ascii_varchar length must be in 1..=8000", i, name);
            return false;
        }
        set_type(c, DF_MSSQL_VARCHAR, (int32_t)p->bound, 0, 0);
    } else {
        set_type(c, DF_MSSQL_NVARCHAR, -1, 0, 0);
    }
    return true;
}

static void map_binary(const df_schema_opts *so, df_mssql_column *c, df_observe *obs) {
    const df_policy *p = &so->binary_policy;
    if (policy_is(p, "observed_varbinary")) {
        set_type(c, DF_MSSQL_VARBINARY, -1, 0, 0);
        *obs = DF_OBSERVE_VARBINARY;
    } else if (policy_is(p, "varbinary")) {
        set_type(c, DF_MSSQL_VARBINARY, (int32_t)p->bound, 0, 0);
    } else {
        set_type(c, DF_MSSQL_VARBINARY, -1, 0, 0);
    }
}

/* Maps one field; false (with a diagnostic) when it cannot be mapped. */
static bool map_field(const df_field *f, const df_schema_opts *so, df_mssql_column *c, df_observe *obs, diags *d,
                      int32_t i) {
    const df_type *t = f->type;
    const char *name = f->name;
    *obs = DF_OBSERVE_NONE;
    switch (t->id) {
    case DF_TYPE_BOOL: set_type(c, DF_MSSQL_BIT, 0, 0, 0); return true;
    case DF_TYPE_INT8:
    case DF_TYPE_INT16: set_type(c, DF_MSSQL_SMALLINT, 0, 0, 0); return true;
    case DF_TYPE_INT32: set_type(c, DF_MSSQL_INT, 0, 0, 0); return true;
    case DF_TYPE_INT64: set_type(c, DF_MSSQL_BIGINT, 0, 0, 0); return true;
    case DF_TYPE_UINT8: set_type(c, DF_MSSQL_TINYINT, 0, 0, 0); return true;
    case DF_TYPE_UINT16: set_type(c, DF_MSSQL_INT, 0, 0, 0); return true;
    case DF_TYPE_UINT32: set_type(c, DF_MSSQL_BIGINT, 0, 0, 0); return true;
    case DF_TYPE_UINT64:
        if (policy_is(&so->uint64_policy, "decimal20_0")) {
            set_type(c, DF_MSSQL_DECIMAL, 0, 20, 0);
            return true;
        }
        if (policy_is(&so->uint64_policy, "checked_bigint")) {
            set_type(c, DF_MSSQL_BIGINT, 0, 0, 0);
            return true;
        }
        diag_add(d, "error", "profile_dependent_conversion",
                 "UInt64 columns need uint64_policy `decimal20_0` or `checked_bigint`", i, name);
        return false;
    case DF_TYPE_FLOAT16:
    case DF_TYPE_FLOAT32: set_type(c, DF_MSSQL_REAL, 0, 0, 0); return true;
    case DF_TYPE_FLOAT64: set_type(c, DF_MSSQL_FLOAT, 0, 53, 0); return true;
    case DF_TYPE_DECIMAL128:
    case DF_TYPE_DECIMAL256: return map_decimal(t, so, c, d, i, name);
    case DF_TYPE_DATE32: set_type(c, DF_MSSQL_DATE, 0, 0, 0); return true;
    case DF_TYPE_DATE64:
        if (policy_is(&so->date64_policy, "timestamp_datetime2"))
            set_type(c, DF_MSSQL_DATETIME2, 0, 0, 3);
        else
            set_type(c, DF_MSSQL_DATE, 0, 0, 0); /* values with a time of day fail row by row */
        return true;
    case DF_TYPE_TIME32:
    case DF_TYPE_TIME64: {
        static const int scales[] = {0, 3, 6, 7};
        set_type(c, DF_MSSQL_TIME, 0, 0, scales[t->unit]);
        return true;
    }
    case DF_TYPE_TIMESTAMP: return map_timestamp(t, so, c, d, i, name);
    case DF_TYPE_UTF8: return map_string(so, c, obs, d, i, name);
    case DF_TYPE_BINARY: map_binary(so, c, obs); return true;
    case DF_TYPE_FIXED_BINARY:
        if (t->byte_width < 1 || t->byte_width > 8000) {
            diag_add(d, "error", "unsupported_arrow_type", "FixedSizeBinary width must be in 1..=8000", i, name);
            return false;
        }
        set_type(c, DF_MSSQL_BINARY, t->byte_width, 0, 0);
        return true;
    default: {
        char msg[200];
        df_buf tb;
        df_buf_init(&tb, 64);
        df_type_display(t, &tb, NULL);
        snprintf(msg, sizeof msg, "Arrow type %s has no SQL Server mapping", tb.data ? tb.data : "?");
        df_buf_free(&tb);
        diag_add(d, "error", "unsupported_arrow_type", msg, i, name);
        return false;
    }
    }
}

/* ------------------------------------------------------------------------ */
/* DDL                                                                       */

df_errkind df__write_render_ddl(const df_write_plan *plan, const char *schema_name, const char *table,
                                const int64_t *lengths, df_buf *out, df_error *err) {
    DF_TRY(df_buf_append_str(out, "CREATE TABLE ", err));
    DF_TRY(df__write_quote(out, schema_name, err));
    DF_TRY(df_buf_append_char(out, '.', err));
    DF_TRY(df__write_quote(out, table, err));
    DF_TRY(df_buf_append_str(out, " (", err));
    for (int32_t i = 0; i < plan->ncols; i++) {
        df_mssql_column c = plan->cols[i];
        if (lengths && plan->observe[i] != DF_OBSERVE_NONE) {
            int64_t cap = plan->observe[i] == DF_OBSERVE_NVARCHAR ? 4000 : 8000;
            c.length = lengths[i] > cap ? -1 : (int32_t)DF_MAX(lengths[i], 1);
        }
        DF_TRY(df_buf_append_str(out, i ? ",\n    " : "\n    ", err));
        DF_TRY(df__write_quote(out, c.name, err));
        DF_TRY(df_buf_append_char(out, ' ', err));
        DF_TRY(df_mssql_type_render(&c, out, err));
        DF_TRY(df_buf_append_str(out, c.nullable ? " NULL" : " NOT NULL", err));
    }
    return df_buf_append_str(out, "\n);", err);
}

void df__write_plan_clear(df_write_plan *p) {
    if (p->names)
        for (int32_t i = 0; i < p->ncols; i++) df_free(p->names[i]);
    df_free(p->names);
    df_free(p->cols);
    df_free(p->observe);
    df_free(p->quoted_target);
    df_free(p->ddl);
    memset(p, 0, sizeof *p);
}

/* Duplicate names (exact, as the reference compares them). */
static df_errkind check_duplicates(const df_schema *schema, const char *out_name, df_error *err) {
    for (int32_t i = 0; i < schema->nfields; i++)
        for (int32_t j = 0; j < i; j++)
            if (!strcmp(schema->fields[i].name, schema->fields[j].name)) {
                char n[160], o[160];
                df__session_escape_into(n, sizeof n, schema->fields[i].name);
                df__session_escape_into(o, sizeof o, out_name);
                df_error_set(err, DF_ERR_DUPLICATE_MSSQL_OUTPUT_FIELD,
                             "MSSQL schema planning error for output `%s`: duplicate output field `%s` at index %d "
                             "(first at index %d)", o, n, i, j);
                df_error_set_phase(err, "mssql_schema_planning");
                return DF_ERR_DUPLICATE_MSSQL_OUTPUT_FIELD;
            }
    return DF_OK;
}

static df_errkind fail_diagnostics(diags *d, const char *out_name, df_error *err) {
    char o[160];
    df__session_escape_into(o, sizeof o, out_name);
    df_error_set(err, DF_ERR_MSSQL_SCHEMA_PLANNING,
                 "MSSQL schema planning error for output `%s`: arrow-sql-server returned %d diagnostic(s)", o,
                 d->errors + d->warnings);
    df_error_set_phase(err, "mssql_schema_planning");
    df_buf ctx;
    df_buf_init(&ctx, 0);
    if (df_buf_append_str(&ctx, "{\"diagnostics\":[", NULL) == DF_OK &&
        (!d->json.len || df_buf_append(&ctx, d->json.data, d->json.len, NULL) == DF_OK) &&
        df_buf_append_str(&ctx, "]}", NULL) == DF_OK)
        df_error_set_context(err, ctx.data);
    df_buf_free(&ctx);
    return DF_ERR_MSSQL_SCHEMA_PLANNING;
}

static df_errkind map_columns(const df_schema *schema, const df_schema_opts *so, const char *output_name,
                              df_write_plan *p, df_error *err) {
    diags d;
    memset(&d, 0, sizeof d);
    df_buf_init(&d.json, 0);
    for (int32_t i = 0; i < schema->nfields; i++) {
        const df_field *f = &schema->fields[i];
        p->names[i] = df_strdup(f->name);
        if (!p->names[i]) {
            df_buf_free(&d.json);
            return DF_OOM(err);
        }
        df_mssql_column *c = &p->cols[i];
        c->name = p->names[i];
        c->nullable = f->nullable;
        size_t n = char_count(f->name);
        if (n == 0 || has_control(f->name))
            diag_add(&d, "error", "identifier_invalid", "column names must be non-empty without control characters",
                     i, f->name);
        else if (n > 128)
            diag_add(&d, "error", "identifier_too_long", "column names must be at most 128 characters", i, f->name);
        if (map_field(f, so, c, &p->observe[i], &d, i) && p->observe[i] != DF_OBSERVE_NONE) p->any_observed = true;
    }
    df_errkind k = d.errors ? fail_diagnostics(&d, output_name, err) : DF_OK;
    p->diagnostic_count = d.warnings;
    df_buf_free(&d.json);
    return k;
}

df_errkind df__write_plan_build(const df_schema *schema, const df_schema_opts *so, const char *output_name,
                                const char *schema_name, const char *table, df_load_mode mode, df_write_plan *p,
                                df_error *err) {
    memset(p, 0, sizeof *p);
    DF_TRY(check_duplicates(schema, output_name, err));
    int32_t n = schema->nfields;
    p->ncols = n;
    p->cols = df_calloc((size_t)DF_MAX(n, 1), sizeof *p->cols);
    p->names = df_calloc((size_t)DF_MAX(n, 1), sizeof *p->names);
    p->observe = df_calloc((size_t)DF_MAX(n, 1), sizeof *p->observe);
    if (!p->cols || !p->names || !p->observe) {
        df__write_plan_clear(p);
        return DF_OOM(err);
    }
    p->nanos = policy_is(&so->nanosecond_policy, "round_to_100ns")      ? DF_MSSQL_NANOS_ROUND
               : policy_is(&so->nanosecond_policy, "truncate_to_100ns") ? DF_MSSQL_NANOS_TRUNCATE
                                                                        : DF_MSSQL_NANOS_REJECT;
    df_errkind k = map_columns(schema, so, output_name, p, err);
    if (k == DF_OK && mode != DF_LOAD_APPEND_EXISTING) {
        if (n == 0) {
            char o[160];
            df__session_escape_into(o, sizeof o, output_name);
            k = df_error_set(err, DF_ERR_MSSQL_DDL_PLANNING,
                             "MSSQL DDL planning error for output `%s`: a table needs at least one column", o);
            df_error_set_phase(err, "mssql_ddl_planning");
        }
        if (k == DF_OK) k = df__write_check_identifier("identifier", schema_name, output_name, err);
        if (k == DF_OK) k = df__write_check_identifier("identifier", table, output_name, err);
    }
    df_buf b;
    df_buf_init(&b, 0);
    if (k == DF_OK) k = df__write_quote(&b, schema_name, err);
    if (k == DF_OK) k = df_buf_append_char(&b, '.', err);
    if (k == DF_OK) k = df__write_quote(&b, table, err);
    if (k == DF_OK) k = df_buf_take_text(&b, &p->quoted_target, NULL, err);
    if (k == DF_OK && mode == DF_LOAD_CREATE_AND_LOAD) {
        k = df__write_render_ddl(p, schema_name, table, NULL, &b, err);
        if (k == DF_OK) k = df_buf_take_text(&b, &p->ddl, NULL, err);
    }
    df_buf_free(&b);
    if (k != DF_OK) df__write_plan_clear(p);
    return k;
}

/* ------------------------------------------------------------------------ */
/* One output spec's plan                                                    */

df_errkind df__write_plan_output(const df_output_spec *spec, const df_schema *schema, df_write_plan *plan,
                                 df_error *err) {
    df_session *s = spec->table->session;
    if (!spec->connection_string && !s->opts->default_connection_string) {
        char o[160];
        df__session_escape_into(o, sizeof o, spec->name);
        df_error_set(err, DF_ERR_MISSING_MSSQL_CONNECTION, "MSSQL target for output `%s` has no effective connection", o);
        df_error_set_phase(err, "mssql_target_config");
        return DF_ERR_MISSING_MSSQL_CONNECTION;
    }
    if (df__write_is_blank(spec->name) || !strcmp(spec->name, "<unnamed>")) {
        df_error_set(err, DF_ERR_INVALID_MSSQL_OUTPUT_IDENTITY,
                     "MSSQL schema planning error: output names must not be blank or `<unnamed>`");
        df_error_set_phase(err, "mssql_schema_planning");
        return DF_ERR_INVALID_MSSQL_OUTPUT_IDENTITY;
    }
    return df__write_plan_build(schema, &s->opts->schema, spec->name, spec->schema, spec->target, spec->mode, plan,
                                err);
}
