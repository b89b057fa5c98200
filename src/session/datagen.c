/*
 * Synthetic Delta tables for tests and benchmarks.
 *
 * Every value is a pure function of (seed, column, row): a splitmix64 hash
 * of the three picks nulls and values, so a table is the same byte for
 * byte whatever the batch or file boundaries, and generation runs a batch
 * at a time in tight per-column loops.  Rows are split evenly over
 * max(partitions, 1) * files data files, in id order, so each file (and
 * each row group) covers a contiguous id range with tight statistics.
 *
 * Memory is bounded by one batch plus the Parquet writer's row group,
 * whatever the row count.  The table appears atomically: data files are
 * written first, then the single commit (version 0) is written to a
 * temporary name and renamed into _delta_log/.
 *
 * Shapes:
 *   mixed   id, customer_id, quantity, amount decimal(12,2), price, order_date,
 *           updated_at timestamp (UTC), status, comment, is_active
 *           [+ partition column region: string]
 *   narrow  id, value, flag                               [+ region]
 *   wide    id + 50 groups of (int64, double, string, date): 201 columns
 *           [+ region]
 *   events  event_id, event_time, user_id, event_type, payload, duration_ms,
 *           success                                        [+ event_date: date]
 */
#include "format/format.h"
#include "session/session_int.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parquet/parquet.h"

#define BATCH_ROWS 65536
#define DAY_2020 18262          /* 2020-01-01 in days since the epoch */
#define DAY_2024 19723          /* 2024-01-01 */
#define COMMIT_MILLIS 1704067200000LL   /* fixed commit time: same seed, same bytes */

typedef enum gen_kind {
    GEN_ID,          /* int64 = row number, never null */
    GEN_INT64,       /* int64 in [a, b] */
    GEN_INT32,       /* int32 in [a, b] */
    GEN_INT16,       /* int16 in [a, b] */
    GEN_DECIMAL,     /* decimal(12, 2) in [a, b] cents */
    GEN_DOUBLE,      /* double: hash / 2^53 scaled to [a, b) */
    GEN_DATE,        /* date32 in [a, a + b) */
    GEN_TIMESTAMP,   /* timestamp(us, UTC): 2020-01-01 + up to b seconds, microsecond fraction */
    GEN_WORD,        /* one of a fixed word list (a = list index) */
    GEN_TEXT,        /* 1..b words of free text */
    GEN_BOOL,        /* true/false */
} gen_kind;

typedef struct col_spec {
    const char *name;    /* column name */
    gen_kind kind;       /* generator */
    int null_permille;   /* share of nulls, per thousand */
    int64_t a, b;        /* generator parameters (see gen_kind) */
} col_spec;

static const char *const statuses[] = {"pending", "shipped", "delivered", "cancelled", "returned"};
static const char *const event_types[] = {"view", "click", "add_to_cart", "purchase", "search", "logout"};
static const char *const words[] = {"alpha",  "bravo",   "charlie", "delta",  "echo",   "foxtrot", "golf",  "hotel",
                                    "india",  "juliett", "kilo",    "lima",   "mike",   "november", "oscar", "papa",
                                    "quebec", "romeo",   "sierra",  "tango",  "uniform", "victor", "whiskey", "xray"};

static const col_spec mixed_cols[] = {
    {"id", GEN_ID, 0, 0, 0},
    {"customer_id", GEN_INT32, 0, 1, 250000},
    {"quantity", GEN_INT16, 20, 1, 100},
    {"amount", GEN_DECIMAL, 50, -50000, 2000000},
    {"price", GEN_DOUBLE, 30, 0, 1000},
    {"order_date", GEN_DATE, 10, DAY_2020, 1461},
    {"updated_at", GEN_TIMESTAMP, 40, 0, 126230400},
    {"status", GEN_WORD, 0, 0, 0},
    {"comment", GEN_TEXT, 300, 0, 6},
    {"is_active", GEN_BOOL, 60, 0, 0},
};
static const col_spec narrow_cols[] = {
    {"id", GEN_ID, 0, 0, 0},
    {"value", GEN_INT64, 10, -1000000000, 1000000000},
    {"flag", GEN_BOOL, 10, 0, 0},
};
static const col_spec events_cols[] = {
    {"event_id", GEN_ID, 0, 0, 0},
    {"event_time", GEN_TIMESTAMP, 0, 0, 126230400},
    {"user_id", GEN_INT64, 0, 1, 5000000},
    {"event_type", GEN_WORD, 0, 1, 0},
    {"payload", GEN_TEXT, 200, 0, 8},
    {"duration_ms", GEN_INT32, 100, 0, 600000},
    {"success", GEN_BOOL, 20, 0, 0},
};

#define WIDE_GROUPS 50
#define MAX_COLS (1 + 4 * WIDE_GROUPS)

/* The resolved layout of one table. */
typedef struct gen_table {
    col_spec cols[MAX_COLS];     /* data columns */
    char names[MAX_COLS][24];    /* storage for generated names (wide) */
    int ncols;                   /* data columns in use */
    const char *part_name;       /* partition column or NULL */
    bool part_is_date;           /* events: a date partition */
    df_schema *file_schema;      /* data columns (files) */
    uint64_t seed;
} gen_table;

/* ------------------------------------------------------------------------ */
/* Hashing                                                                   */

static inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t cell_hash(uint64_t seed, int col, int64_t row) {
    return mix64(seed ^ mix64(((uint64_t)col << 48) ^ (uint64_t)row));
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */

static df_type *col_type(const col_spec *c, df_type **owned) {
    *owned = NULL;
    switch (c->kind) {
    case GEN_ID:
    case GEN_INT64: return df_type_int64();
    case GEN_INT32: return df_type_int32();
    case GEN_INT16: return df_type_int16();
    case GEN_DECIMAL: return *owned = df_type_decimal(12, 2);
    case GEN_DOUBLE: return df_type_float64();
    case GEN_DATE: return df_type_date32();
    case GEN_TIMESTAMP: return *owned = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    case GEN_WORD:
    case GEN_TEXT: return df_type_utf8();
    case GEN_BOOL: return df_type_bool();
    }
    return NULL;
}

static const char *delta_type(const col_spec *c) {
    switch (c->kind) {
    case GEN_ID:
    case GEN_INT64: return "long";
    case GEN_INT32: return "integer";
    case GEN_INT16: return "short";
    case GEN_DECIMAL: return "decimal(12,2)";
    case GEN_DOUBLE: return "double";
    case GEN_DATE: return "date";
    case GEN_TIMESTAMP: return "timestamp";
    case GEN_WORD:
    case GEN_TEXT: return "string";
    case GEN_BOOL: return "boolean";
    }
    return "string";
}

static df_errkind build_layout(const df_datagen_options *o, gen_table *t, df_error *err) {
    memset(t, 0, sizeof *t);
    t->seed = o->seed;
    const col_spec *src = mixed_cols;
    int n = (int)DF_ARRAY_LEN(mixed_cols);
    const char *shape = o->shape ? o->shape : "mixed";
    if (strcmp(shape, "narrow") == 0) {
        src = narrow_cols;
        n = (int)DF_ARRAY_LEN(narrow_cols);
    } else if (strcmp(shape, "events") == 0) {
        src = events_cols;
        n = (int)DF_ARRAY_LEN(events_cols);
    } else if (strcmp(shape, "wide") == 0) {
        n = 0;
        t->cols[n++] = (col_spec){"id", GEN_ID, 0, 0, 0};
        static const col_spec group[4] = {{NULL, GEN_INT64, 20, 0, 1000000000},
                                          {NULL, GEN_DOUBLE, 20, -1000, 1000},
                                          {NULL, GEN_TEXT, 100, 0, 3},
                                          {NULL, GEN_DATE, 20, DAY_2020, 1461}};
        static const char *const prefix[4] = {"int", "dbl", "str", "day"};
        for (int g = 0; g < WIDE_GROUPS; g++)
            for (int k = 0; k < 4; k++) {
                snprintf(t->names[n], sizeof t->names[n], "%s_%02d", prefix[k], g);
                t->cols[n] = group[k];
                t->cols[n].name = t->names[n];
                n++;
            }
        src = NULL;
    } else if (strcmp(shape, "mixed") != 0) {
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "unknown datagen shape `%s`", shape);
    }
    if (src) {
        for (int i = 0; i < n; i++) t->cols[i] = src[i];
    }
    t->ncols = n;
    if (o->partitions > 0) {
        t->part_is_date = strcmp(shape, "events") == 0;
        t->part_name = t->part_is_date ? "event_date" : "region";
    }
    df_field fields[MAX_COLS];
    int built = 0;
    df_errkind k = DF_OK;
    for (int i = 0; i < n && k == DF_OK; i++) {
        df_type *owned;
        df_type *type = col_type(&t->cols[i], &owned);
        if (!type) {
            k = DF_OOM(err);
            break;
        }
        k = df_field_init(&fields[i], t->cols[i].name, type, t->cols[i].kind != GEN_ID, err);
        df_type_release(owned);
        if (k == DF_OK) built++;
    }
    if (k == DF_OK) k = df_schema_new(fields, n, &t->file_schema, err);
    for (int i = 0; i < built; i++) df_field_clear(&fields[i]);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

/* Marks nulls of column c for rows [row0, row0 + n) and returns the count. */
static df_errkind fill_nulls(df_vec *v, const gen_table *t, int c, int64_t row0, int64_t n, df_error *err) {
    int per = t->cols[c].null_permille;
    if (per <= 0) return DF_OK;
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = cell_hash(t->seed ^ 0x5bd1e995u, c, row0 + i);
        if ((int)(h % 1000) < per) DF_TRY(df_vec_set_null(v, i, err));
    }
    return DF_OK;
}

static df_errkind fill_text(df_vec *v, const col_spec *cs, uint64_t seed, int c, int64_t row0, int64_t n,
                            df_error *err) {
    char buf[256];
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = cell_hash(seed, c, row0 + i);
        size_t len = 0;
        if (cs->kind == GEN_WORD) {
            const char *w = cs->a == 1 ? event_types[h % DF_ARRAY_LEN(event_types)] : statuses[h % DF_ARRAY_LEN(statuses)];
            len = strlen(w);
            memcpy(buf, w, len);
        } else {
            int nwords = 1 + (int)(h % (uint64_t)cs->b);
            for (int w = 0; w < nwords; w++) {
                const char *word = words[(h >> (5 * w + 8)) % DF_ARRAY_LEN(words)];
                size_t wl = strlen(word);
                if (w) buf[len++] = ' ';
                memcpy(buf + len, word, wl);
                len += wl;
            }
        }
        DF_TRY(df_vec_append_bytes(v, buf, (int32_t)len, err));
    }
    return DF_OK;
}

/* Fills column c of rows [row0, row0 + n) into a new vector. */
static df_errkind gen_column(const gen_table *t, int c, int64_t row0, int64_t n, df_vec **out, df_error *err) {
    const col_spec *cs = &t->cols[c];
    df_type *type = t->file_schema->fields[c].type;
    DF_TRY(df_vec_new(type, n, cs->kind == GEN_TEXT ? n * 24 : n * 10, out, err));
    df_vec *v = *out;
    uint64_t seed = t->seed;
    uint64_t span = (uint64_t)(cs->b - cs->a + 1);
    switch (cs->kind) {
    case GEN_ID: {
        int64_t *x = DF_VEC_VALUES(v, int64_t);
        for (int64_t i = 0; i < n; i++) x[i] = row0 + i;
        break;
    }
    case GEN_INT64: {
        int64_t *x = DF_VEC_VALUES(v, int64_t);
        for (int64_t i = 0; i < n; i++) x[i] = cs->a + (int64_t)(cell_hash(seed, c, row0 + i) % span);
        break;
    }
    case GEN_INT32: {
        int32_t *x = DF_VEC_VALUES(v, int32_t);
        for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(cs->a + (int64_t)(cell_hash(seed, c, row0 + i) % span));
        break;
    }
    case GEN_INT16: {
        int16_t *x = DF_VEC_VALUES(v, int16_t);
        for (int64_t i = 0; i < n; i++) x[i] = (int16_t)(cs->a + (int64_t)(cell_hash(seed, c, row0 + i) % span));
        break;
    }
    case GEN_DECIMAL: {
        df_i128 *x = DF_VEC_VALUES(v, df_i128);
        for (int64_t i = 0; i < n; i++) x[i] = (df_i128)(cs->a + (int64_t)(cell_hash(seed, c, row0 + i) % span));
        break;
    }
    case GEN_DOUBLE: {
        double *x = DF_VEC_VALUES(v, double);
        double width = (double)(cs->b - cs->a);
        for (int64_t i = 0; i < n; i++) {
            /* Two decimals, like prices: hash -> [a, b) in steps of 0.01. */
            uint64_t cents = cell_hash(seed, c, row0 + i) % (uint64_t)(width * 100.0);
            x[i] = (double)cs->a + (double)cents / 100.0;
        }
        break;
    }
    case GEN_DATE: {
        int32_t *x = DF_VEC_VALUES(v, int32_t);
        for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(cs->a + (int64_t)(cell_hash(seed, c, row0 + i) % (uint64_t)cs->b));
        break;
    }
    case GEN_TIMESTAMP: {
        int64_t *x = DF_VEC_VALUES(v, int64_t);
        int64_t base = (int64_t)DAY_2020 * 86400 * 1000000;
        for (int64_t i = 0; i < n; i++) {
            uint64_t h = cell_hash(seed, c, row0 + i);
            x[i] = base + (int64_t)(h % (uint64_t)cs->b) * 1000000 + (int64_t)((h >> 40) % 1000000);
        }
        break;
    }
    case GEN_BOOL: {
        uint8_t *bits = v->values->data;
        memset(bits, 0, (size_t)df_bitmap_bytes(n));
        for (int64_t i = 0; i < n; i++)
            if (cell_hash(seed, c, row0 + i) & 1) df_bit_set(bits, i);
        break;
    }
    case GEN_WORD:
    case GEN_TEXT:
        DF_TRY(fill_text(v, cs, seed, c, row0, n, err));
        break;
    }
    if (cs->kind != GEN_WORD && cs->kind != GEN_TEXT) df_vec_set_length(v, n);
    /* Nulls come last: appending strings above wrote every value as valid. */
    return fill_nulls(v, t, c, row0, n, err);
}

static df_errkind gen_batch(const gen_table *t, int64_t row0, int64_t n, df_batch **out, df_error *err) {
    *out = NULL;
    df_vec **cols = df_calloc((size_t)t->ncols, sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int c = 0; c < t->ncols && k == DF_OK; c++) k = gen_column(t, c, row0, n, &cols[c], err);
    if (k != DF_OK) {
        for (int c = 0; c < t->ncols; c++) df_vec_release(cols[c]);
        df_free(cols);
        return k;
    }
    k = df_batch_new(t->file_schema, cols, n, out, err);   /* takes the column references */
    df_free(cols);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Files and the commit                                                      */

/* "region_03" or "2024-01-04" for partition p. */
static void partition_value(const gen_table *t, int p, char *buf, size_t size) {
    if (t->part_is_date) {
        int64_t y;
        int m, d;
        df_civil_from_days(DAY_2024 + p, &y, &m, &d);
        snprintf(buf, size, "%04lld-%02d-%02d", (long long)y, m, d);
    } else {
        snprintf(buf, size, "region_%02d", p);
    }
}

/* One written data file, for its add action. */
typedef struct written_file {
    char path[160];          /* relative to the table root */
    char part_value[32];     /* partition value or "" */
    uint64_t size;           /* bytes */
    char *stats;             /* Delta stats JSON, owned */
} written_file;

static df_errkind write_file(const df_datagen_options *o, const gen_table *t, const char *root, int file_index,
                             int part, int64_t row0, int64_t row1, written_file *wf, df_error *err) {
    const char *codec = o->codec ? o->codec : "snappy";
    df_parquet_write_options wo;
    memset(&wo, 0, sizeof wo);
    const char *suffix = "snappy.parquet";
    if (strcmp(codec, "none") == 0) {
        wo.codec = DF_PARQUET_UNCOMPRESSED;
        suffix = "parquet";
    } else if (strcmp(codec, "zstd") == 0) {
        wo.codec = DF_PARQUET_ZSTD;
        suffix = "zstd.parquet";
    } else if (strcmp(codec, "snappy") == 0) {
        wo.codec = DF_PARQUET_SNAPPY;
    } else {
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "unknown datagen codec `%s`", codec);
    }
    wo.row_group_rows = o->row_group_rows > 0 ? o->row_group_rows : 131072;
    char dir[64] = "";
    if (t->part_name) {
        partition_value(t, part, wf->part_value, sizeof wf->part_value);
        snprintf(dir, sizeof dir, "%s=%s/", t->part_name, wf->part_value);
    }
    snprintf(wf->path, sizeof wf->path, "%spart-%05d-%016llx.%s", dir, file_index,
             (unsigned long long)mix64(t->seed + (uint64_t)file_index), suffix);
    char full[4096];
    if (t->part_name) {
        snprintf(full, sizeof full, "%s/%s=%s", root, t->part_name, wf->part_value);
        if (mkdir(full, 0777) != 0 && errno != EEXIST)
            return df_error_set(err, DF_ERR_IO, "cannot create directory %s: %s", full, strerror(errno));
    }
    snprintf(full, sizeof full, "%s/%s", root, wf->path);
    df_parquet_writer *w;
    DF_TRY(df_parquet_writer_open(full, t->file_schema, &wo, &w, err));
    df_errkind k = DF_OK;
    /* Batches of about BATCH_ROWS * 10 cells: wide tables use shorter batches, not more memory. */
    int64_t batch_rows = DF_MAX((int64_t)1024, (int64_t)BATCH_ROWS * 10 / DF_MAX(t->ncols, 10));
    for (int64_t r = row0; r < row1 && k == DF_OK; r += batch_rows) {
        df_batch *b;
        k = gen_batch(t, r, DF_MIN(batch_rows, row1 - r), &b, err);
        if (k == DF_OK) {
            k = df_parquet_writer_write(w, b, err);
            df_batch_release(b);
        }
    }
    if (k != DF_OK) {
        df_parquet_writer_abort(w);
        return k;
    }
    df_parquet_file_summary sum;
    DF_TRY(df_parquet_writer_close(w, &sum, err));
    wf->size = sum.size;
    df_buf stats;
    df_buf_init(&stats, 0);
    k = df_parquet_file_summary_json(&sum, &stats, err);
    df_parquet_file_summary_clear(&sum);
    if (k == DF_OK) k = df_buf_take_text(&stats, &wf->stats, NULL, err);
    df_buf_free(&stats);
    return k;
}

static df_errkind schema_string(const gen_table *t, char **out, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "type", "struct");
    df_json_key(&w, "fields");
    df_json_array_begin(&w);
    for (int i = 0; i <= t->ncols; i++) {
        if (i == t->ncols && !t->part_name) break;
        df_json_object_begin(&w);
        if (i < t->ncols) {
            df_json_kv_string(&w, "name", t->cols[i].name);
            df_json_kv_string(&w, "type", delta_type(&t->cols[i]));
            df_json_kv_bool(&w, "nullable", t->cols[i].kind != GEN_ID);
        } else {
            df_json_kv_string(&w, "name", t->part_name);
            df_json_kv_string(&w, "type", t->part_is_date ? "date" : "string");
            df_json_kv_bool(&w, "nullable", true);
        }
        df_json_key(&w, "metadata");
        df_json_object_begin(&w);
        df_json_object_end(&w);
        df_json_object_end(&w);
    }
    df_json_array_end(&w);
    df_json_object_end(&w);
    df_errkind k = df_json_writer_finish(&w, err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

static void table_uuid(uint64_t seed, char out[37]) {
    uint64_t a = mix64(seed ^ 0xdeadbeefULL), b = mix64(a);
    /* Version 4 / variant 1 bits, so it reads as a UUID. */
    snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xFFFF,
             (unsigned)a & 0xFFF, (unsigned)((b >> 48) & 0x3FFF) | 0x8000,
             (unsigned long long)(b & 0xFFFFFFFFFFFFULL));
}

/* {"commitInfo": ...} of the single commit (fixed time: same seed, same bytes). */
static void write_commit_info(df_json_writer *w, int nfiles, int64_t rows) {
    df_json_object_begin(w);
    df_json_key(w, "commitInfo");
    df_json_object_begin(w);
    df_json_kv_int(w, "timestamp", COMMIT_MILLIS);
    df_json_kv_string(w, "operation", "WRITE");
    df_json_key(w, "operationParameters");
    df_json_object_begin(w);
    df_json_kv_string(w, "mode", "ErrorIfExists");
    df_json_object_end(w);
    df_json_kv_string(w, "engineInfo", "deltafunnel-datagen");
    df_json_key(w, "operationMetrics");
    df_json_object_begin(w);
    df_json_kv_int(w, "num_added_files", nfiles);
    df_json_kv_int(w, "num_added_rows", rows);
    df_json_object_end(w);
    df_json_object_end(w);
    df_json_object_end(w);
}

static void write_metadata(df_json_writer *w, const gen_table *t, const char *schema) {
    char uuid[37];
    table_uuid(t->seed, uuid);
    df_json_object_begin(w);
    df_json_key(w, "metaData");
    df_json_object_begin(w);
    df_json_kv_string(w, "id", uuid);
    df_json_key(w, "format");
    df_json_object_begin(w);
    df_json_kv_string(w, "provider", "parquet");
    df_json_key(w, "options");
    df_json_object_begin(w);
    df_json_object_end(w);
    df_json_object_end(w);
    df_json_kv_string(w, "schemaString", schema);
    df_json_key(w, "partitionColumns");
    df_json_array_begin(w);
    if (t->part_name) df_json_write_string(w, t->part_name);
    df_json_array_end(w);
    df_json_key(w, "configuration");
    df_json_object_begin(w);
    df_json_object_end(w);
    df_json_kv_int(w, "createdTime", COMMIT_MILLIS);
    df_json_object_end(w);
    df_json_object_end(w);
}

static void write_add(df_json_writer *w, const gen_table *t, const written_file *f) {
    df_json_object_begin(w);
    df_json_key(w, "add");
    df_json_object_begin(w);
    df_json_kv_string(w, "path", f->path);
    df_json_key(w, "partitionValues");
    df_json_object_begin(w);
    if (t->part_name) df_json_kv_string(w, t->part_name, f->part_value);
    df_json_object_end(w);
    df_json_kv_uint(w, "size", f->size);
    df_json_kv_int(w, "modificationTime", COMMIT_MILLIS);
    df_json_kv_bool(w, "dataChange", true);
    df_json_kv_string(w, "stats", f->stats);
    df_json_object_end(w);
    df_json_object_end(w);
}

/* Writes the commit text beside the log, then renames it: readers never see a partial commit. */
static df_errkind publish_commit(const char *root, const df_buf *text, df_error *err) {
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/_delta_log/.00000000000000000000.json.tmp", root);
    snprintf(final, sizeof final, "%s/_delta_log/00000000000000000000.json", root);
    FILE *f = fopen(tmp, "wb");
    if (!f) return df_error_set(err, DF_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    size_t wrote = fwrite(text->data, 1, text->len, f);
    int closed = fclose(f);
    df_errkind k = DF_OK;
    if (wrote != text->len || closed != 0)
        k = df_error_set(err, DF_ERR_IO, "cannot write %s", tmp);
    else if (rename(tmp, final) != 0)
        k = df_error_set(err, DF_ERR_IO, "cannot rename %s: %s", tmp, strerror(errno));
    if (k != DF_OK) unlink(tmp);
    return k;
}

/* One JSON action per line: commitInfo, protocol, metaData, then the adds. */
static df_errkind write_commit(const gen_table *t, const char *root, const written_file *files, int nfiles,
                               int64_t rows, df_error *err) {
    char *schema = NULL;
    DF_TRY(schema_string(t, &schema, err));
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    write_commit_info(&w, nfiles, rows);
    df_errkind k = df_json_writer_finish(&w, err);
    if (k == DF_OK)
        k = df_buf_append_str(&b, "\n{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n", err);
    if (k == DF_OK) {
        df_json_writer_init(&w, &b, 0);
        write_metadata(&w, t, schema);
        k = df_json_writer_finish(&w, err);
    }
    for (int i = 0; i < nfiles && k == DF_OK; i++) {
        k = df_buf_append_char(&b, '\n', err);
        if (k != DF_OK) break;
        df_json_writer_init(&w, &b, 0);
        write_add(&w, t, &files[i]);
        k = df_json_writer_finish(&w, err);
    }
    if (k == DF_OK) k = df_buf_append_char(&b, '\n', err);
    df_free(schema);
    if (k == DF_OK) k = publish_commit(root, &b, err);
    df_buf_free(&b);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Entry point                                                               */

void df_datagen_options_init(df_datagen_options *o) {
    memset(o, 0, sizeof *o);
    o->files = 1;
    o->seed = 42;
    o->codec = "snappy";
    o->shape = "mixed";
}

static df_errkind prepare_root(const char *root, df_error *err) {
    if (mkdir(root, 0777) != 0 && errno != EEXIST)
        return df_error_set(err, DF_ERR_IO, "cannot create %s: %s", root, strerror(errno));
    char log[4096];
    snprintf(log, sizeof log, "%s/_delta_log", root);
    struct stat st;
    char commit[4200];
    snprintf(commit, sizeof commit, "%s/00000000000000000000.json", log);
    if (stat(commit, &st) == 0)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "%s already holds a Delta table", root);
    if (mkdir(log, 0777) != 0 && errno != EEXIST)
        return df_error_set(err, DF_ERR_IO, "cannot create %s: %s", log, strerror(errno));
    return DF_OK;
}

df_errkind df_datagen_run(const df_datagen_options *o, df_datagen_result *result, df_error *err) {
    if (result) memset(result, 0, sizeof *result);
    if (!o || !o->output || !*o->output) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "datagen needs an output directory");
    if (o->rows < 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "datagen rows must not be negative");
    if (o->files < 1 || o->files > 100000) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "datagen files must be in 1..100000");
    if (o->partitions < 0 || o->partitions > 10000)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "datagen partitions must be in 0..10000");
    if (strlen(o->output) > 3000) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "datagen output path is too long");
    int64_t nfiles = (int64_t)DF_MAX(o->partitions, 1) * o->files;
    if (nfiles > 100000) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "datagen would write more than 100000 files");
    gen_table t;
    DF_TRY(build_layout(o, &t, err));
    written_file *files = df_calloc((size_t)nfiles, sizeof *files);
    df_errkind k = files ? prepare_root(o->output, err) : DF_OOM(err);
    int done = 0;
    for (int64_t f = 0; f < nfiles && k == DF_OK; f++) {
        int64_t row0 = (int64_t)((df_i128)f * o->rows / nfiles);
        int64_t row1 = (int64_t)((df_i128)(f + 1) * o->rows / nfiles);
        k = write_file(o, &t, o->output, (int)f, (int)(f / o->files), row0, row1, &files[f], err);
        if (k == DF_OK) done++;
    }
    if (k == DF_OK) k = write_commit(&t, o->output, files, (int)nfiles, o->rows, err);
    if (k == DF_OK && result) {
        result->rows = o->rows;
        result->files = nfiles;
        for (int i = 0; i < done; i++) result->bytes += (int64_t)files[i].size;
    }
    if (k != DF_OK && files) {
        /* No commit was written: remove the data files so the directory holds no stray output. */
        for (int i = 0; i < done; i++) {
            char full[4096];
            snprintf(full, sizeof full, "%s/%s", o->output, files[i].path);
            unlink(full);
        }
    }
    for (int i = 0; files && i < nfiles; i++) df_free(files[i].stats);
    df_free(files);
    df_schema_release(t.file_schema);
    return k;
}
