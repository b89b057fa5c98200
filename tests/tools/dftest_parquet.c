/*
 * Test-only entry points into the Parquet reader and writer for pytest
 * (loaded with ctypes).  Results leave as Arrow C streams; errors are
 * returned as the df_errkind value with "kind: message" in errbuf.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "columnar/columnar.h"
#include "parquet/parquet.h"

#define EXPORT __attribute__((visibility("default")))

static int fail(df_error *e, char *errbuf, size_t errlen) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "%s: %s", df_errkind_name(e->kind), e->message);
    int k = (int)e->kind;
    df_error_clear(e);
    return k ? k : (int)DF_ERR_INTERNAL;
}

/* Parses "a,b,c" into a new int array (names resolved by `resolve`, or integers). */
static df_errkind parse_list(const char *csv, const df_parquet_file *f, bool names, int32_t **out, int32_t *n,
                             df_error *err) {
    *out = NULL;
    *n = 0;
    if (!csv) return DF_OK;
    size_t len = strlen(csv);
    int32_t *arr = df_calloc(len + 1, sizeof *arr);
    if (!arr) return DF_OOM(err);
    char *copy = df_strdup(csv);
    if (!copy) {
        df_free(arr);
        return DF_OOM(err);
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int32_t v;
        if (names) {
            v = df_schema_find(df_parquet_file_schema(f), tok);
            if (v < 0) {
                df_free(copy);
                df_free(arr);
                return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no column named %s", tok);
            }
        } else {
            v = (int32_t)strtol(tok, NULL, 10);
        }
        arr[(*n)++] = v;
    }
    df_free(copy);
    *out = arr;
    return DF_OK;
}

/*
 * Reads a Parquet file as an Arrow stream.  columns: comma-separated
 * top-level names or NULL (all); leaves: comma-separated leaf indices or
 * NULL; row_groups: comma-separated indices or NULL; limit <= 0 = all.
 */
EXPORT int dftest_parquet_read_ex(const char *path, const char *columns, const char *leaves, const char *row_groups,
                                  int batch_size, int64_t limit, int skip_crc, struct ArrowArrayStream *out,
                                  char *errbuf, size_t errlen) {
    df_error err = {0};
    df_parquet_file *f = NULL;
    df_batch_stream *s = NULL;
    int32_t *cols = NULL, *lvs = NULL, *rgs = NULL;
    int32_t ncols = 0, nlvs = 0, nrgs = 0;
    df_errkind k = df_parquet_file_open_path(path, &f, &err);
    if (k == DF_OK) k = parse_list(columns, f, true, &cols, &ncols, &err);
    if (k == DF_OK) k = parse_list(leaves, f, false, &lvs, &nlvs, &err);
    if (k == DF_OK) k = parse_list(row_groups, f, false, &rgs, &nrgs, &err);
    if (k == DF_OK) {
        df_parquet_read_options o = {0};
        o.columns = columns ? cols : NULL;
        o.ncolumns = ncols;
        o.leaves = leaves ? lvs : NULL;
        o.nleaves = nlvs;
        o.row_groups = row_groups ? rgs : NULL;
        o.nrow_groups = nrgs;
        o.batch_size = batch_size;
        o.limit = limit;
        o.skip_crc = skip_crc != 0;
        k = df_parquet_reader_open(f, &o, &s, &err);
    }
    df_free(cols);
    df_free(lvs);
    df_free(rgs);
    df_parquet_file_close(f);
    if (k == DF_OK) k = df_arrow_export_stream(s, out, &err);
    if (k != DF_OK) return fail(&err, errbuf, errlen);
    return 0;
}

EXPORT int dftest_parquet_read(const char *path, const char *columns, int batch_size, struct ArrowArrayStream *out,
                               char *errbuf, size_t errlen) {
    return dftest_parquet_read_ex(path, columns, NULL, NULL, batch_size, 0, 0, out, errbuf, errlen);
}

/*
 * Reads a file to the end without exporting, and reports scan metrics:
 * out[0..5] = row_groups_total, row_groups_pruned, row_groups_read,
 * pages_read, bytes_read, rows_produced.  Stops after `limit` rows (> 0).
 */
EXPORT int dftest_parquet_scan_metrics(const char *path, int batch_size, int64_t limit, int64_t *out, char *errbuf,
                                       size_t errlen) {
    df_error err = {0};
    df_parquet_file *f = NULL;
    df_batch_stream *s = NULL;
    df_scan_metrics m;
    memset(&m, 0, sizeof m);
    df_errkind k = df_parquet_file_open_path(path, &f, &err);
    if (k == DF_OK) {
        df_parquet_read_options o = {0};
        o.batch_size = batch_size;
        o.limit = limit;
        o.metrics = &m;
        k = df_parquet_reader_open(f, &o, &s, &err);
    }
    df_parquet_file_close(f);
    for (df_batch *b = NULL; k == DF_OK;) {
        k = df_batch_stream_next(s, &b, &err);
        if (k != DF_OK || !b) break;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    if (k != DF_OK) return fail(&err, errbuf, errlen);
    out[0] = m.row_groups_total;
    out[1] = m.row_groups_pruned;
    out[2] = m.row_groups_read;
    out[3] = m.pages_read;
    out[4] = m.bytes_read;
    out[5] = m.rows_produced;
    return 0;
}

/* Writes a scalar as JSON text ("null" when absent). */
static void scalar_json(const df_scalar *s, bool has, df_buf *b) {
    if (!has) {
        df_buf_append_str(b, "null", NULL);
        return;
    }
    switch (s->type->id) {
    case DF_TYPE_BOOL: df_buf_append_str(b, s->v.b ? "true" : "false", NULL); break;
    case DF_TYPE_FLOAT32:
    case DF_TYPE_FLOAT64: df_buf_printf(b, NULL, "%.17g", s->v.f64); break;
    case DF_TYPE_UINT8:
    case DF_TYPE_UINT16:
    case DF_TYPE_UINT32:
    case DF_TYPE_UINT64:
    case DF_TYPE_FLOAT16: df_buf_printf(b, NULL, "%" PRIu64, s->v.u64); break;
    case DF_TYPE_DECIMAL128: {
        char tmp[64];
        int n = 0;
        df_i128 v = s->v.i128;
        bool neg = v < 0;
        df_u128 u = neg ? (df_u128)(-(v + 1)) + 1 : (df_u128)v;
        do {
            tmp[n++] = (char)('0' + (int)(u % 10));
            u /= 10;
        } while (u);
        if (neg) df_buf_append_char(b, '-', NULL);
        while (n) df_buf_append_char(b, tmp[--n], NULL);
        break;
    }
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY:
    case DF_TYPE_FIXED_BINARY:
        df_buf_append_char(b, '"', NULL);
        for (int64_t i = 0; i < s->v.bytes.len; i++) df_buf_printf(b, NULL, "%02x", s->v.bytes.ptr[i]);
        df_buf_append_char(b, '"', NULL);
        break;
    default: df_buf_printf(b, NULL, "%" PRId64, s->v.i64); break;
    }
}

/*
 * Row-group statistics of top-level field `field` as JSON:
 * {"min":..,"max":..,"min_exact":b,"max_exact":b,"null_count":n|null}
 * (byte strings as hex).
 */
EXPORT int dftest_parquet_column_stats(const char *path, int rg, int field, char *json, size_t jsonlen, char *errbuf,
                                       size_t errlen) {
    df_error err = {0};
    df_parquet_file *f = NULL;
    df_column_stats st;
    memset(&st, 0, sizeof st);
    df_errkind k = df_parquet_file_open_path(path, &f, &err);
    if (k == DF_OK) k = df_parquet_file_column_stats(f, rg, field, &st, &err);
    df_parquet_file_close(f);
    if (k != DF_OK) return fail(&err, errbuf, errlen);
    df_buf b;
    df_buf_init(&b, 0);
    df_buf_append_str(&b, "{\"min\":", NULL);
    scalar_json(&st.min, st.has_min, &b);
    df_buf_append_str(&b, ",\"max\":", NULL);
    scalar_json(&st.max, st.has_max, &b);
    df_buf_printf(&b, NULL, ",\"min_exact\":%s,\"max_exact\":%s,\"null_count\":", st.min_exact ? "true" : "false",
                  st.max_exact ? "true" : "false");
    if (st.has_null_count) df_buf_printf(&b, NULL, "%" PRId64 "}", st.null_count);
    else df_buf_append_str(&b, "null}", NULL);
    snprintf(json, jsonlen, "%s", b.data ? b.data : "");
    df_buf_free(&b);
    df_parquet_column_stats_clear(&st);
    return 0;
}

/* Number of row groups a predicate `field op int64-literal` keeps (op: 0 =, 2 <, 4 >). */
EXPORT int dftest_parquet_prune_count(const char *path, int field, int op, int64_t literal, int *kept, char *errbuf,
                                      size_t errlen) {
    df_error err = {0};
    df_parquet_file *f = NULL;
    df_errkind k = df_parquet_file_open_path(path, &f, &err);
    if (k != DF_OK) return fail(&err, errbuf, errlen);
    const df_schema *sc = df_parquet_file_schema(f);
    if (field < 0 || field >= sc->nfields) {
        df_parquet_file_close(f);
        df_error_set(&err, DF_ERR_INVALID_ARGUMENT, "field out of range");
        return fail(&err, errbuf, errlen);
    }
    df_scalar v;
    memset(&v, 0, sizeof v);
    v.type = df_type_retain(sc->fields[field].type);
    v.v.i64 = literal;
    df_scan_predicate p = {.column = field, .op = (df_pred_op)op, .nvalues = 1, .values = &v};
    *kept = 0;
    for (int32_t rg = 0; rg < df_parquet_file_num_row_groups(f); rg++)
        *kept += df_parquet_row_group_may_match(f, rg, &p, 1);
    df_scalar_clear(&v);
    df_parquet_file_close(f);
    return 0;
}

static int32_t codec_from_name(const char *name) {
    static const char *const names[] = {"none", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd", "lz4_raw"};
    for (int32_t i = 0; name && i < (int32_t)(sizeof names / sizeof names[0]); i++)
        if (strcmp(names[i], name) == 0) return i;
    return 0;
}

/*
 * Writes an Arrow stream (consumed and released) to a Parquet file with our
 * writer; summary_json receives the Delta statistics JSON of the file.
 */
EXPORT int dftest_parquet_write(struct ArrowArrayStream *in, const char *path, const char *codec,
                                int64_t row_group_rows, int64_t page_bytes, int dictionary, char *summary_json,
                                size_t summary_len, char *errbuf, size_t errlen) {
    df_error err = {0};
    struct ArrowSchema as;
    memset(&as, 0, sizeof as);
    df_schema *schema = NULL;
    df_parquet_writer *w = NULL;
    df_errkind k = DF_OK;
    if (in->get_schema(in, &as) != 0) k = df_error_set(&err, DF_ERR_INVALID_ARGUMENT, "cannot get the stream schema");
    if (k == DF_OK) k = df_arrow_import_schema(&as, &schema, &err);
    if (as.release) as.release(&as);
    df_parquet_write_options o = {0};
    o.codec = (df_parquet_codec)codec_from_name(codec);
    o.row_group_rows = row_group_rows;
    o.page_bytes = page_bytes;
    o.disable_dictionary = !dictionary;
    if (k == DF_OK) k = df_parquet_writer_open(path, schema, &o, &w, &err);
    while (k == DF_OK) {
        struct ArrowArray arr;
        memset(&arr, 0, sizeof arr);
        if (in->get_next(in, &arr) != 0) {
            k = df_error_set(&err, DF_ERR_INVALID_ARGUMENT, "stream error");
            break;
        }
        if (!arr.release) break;
        df_batch *b = NULL;
        k = df_arrow_import_batch(&arr, schema, &b, &err);
        if (k == DF_OK) k = df_parquet_writer_write(w, b, &err);
        df_batch_release(b);
    }
    df_parquet_file_summary sum;
    memset(&sum, 0, sizeof sum);
    if (k == DF_OK) {
        k = df_parquet_writer_close(w, &sum, &err);
        w = NULL;
    }
    df_parquet_writer_abort(w);
    if (k == DF_OK && summary_json) {
        df_buf b;
        df_buf_init(&b, 0);
        k = df_parquet_file_summary_json(&sum, &b, &err);
        if (k == DF_OK) snprintf(summary_json, summary_len, "%s", b.data);
        df_buf_free(&b);
    }
    df_parquet_file_summary_clear(&sum);
    df_schema_release(schema);
    if (in->release) in->release(in);
    if (k != DF_OK) return fail(&err, errbuf, errlen);
    return 0;
}
