/*
 * Row filtering inside the Parquet reader (filter_rows, deleted_rows):
 * every filtered read is compared with an unfiltered read of the same file
 * filtered here, row by row, by an independent evaluator (scalars, total
 * order for floats).  Files come from our writer (many small pages, every
 * codec, dictionary on and off, nulls, NaN and signed zeros) and from the
 * shared parquet-testing corpus (v2 pages, DELTA encodings, byte stream
 * split, nested columns), with random predicate conjunctions, output
 * subsets with and without the predicate columns, batch sizes, deleted
 * rows and limits.  Also checked: pages are skipped unread, dictionary
 * pages of skipped chunks are never loaded, and the counters add up.
 */
#include "df_test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parquet/parquet.h"
#include "parquet_test_util.h"

#define NCOLS 11

static const char *tmp_file(void) {
    return tmp_file_named("/tmp/dfpqfXXXXXX");
}

/* ---- test data ------------------------------------------------------------------ */

static df_schema *make_schema(void) {
    df_error e_ = {0}, *err = &e_;
    df_type *types[NCOLS] = {df_type_int32(), df_type_int64(), df_type_utf8(), df_type_bool(), df_type_float64(),
                             df_type_decimal(20, 4), df_type_timestamp(DF_UNIT_MICRO, "UTC"), df_type_date32(),
                             df_type_fixed_binary(3), df_type_uint8(), df_type_int16()};
    const char *names[NCOLS] = {"i32", "i64", "s", "b", "d", "dec", "ts", "date", "fx", "u8", "i16"};
    df_field f[NCOLS];
    memset(f, 0, sizeof f);
    for (int i = 0; i < NCOLS; i++) DF_ASSERT_OK(df_field_init(&f[i], names[i], types[i], i != 1, err), err);
    df_schema *s;
    DF_ASSERT_OK(df_schema_new(f, NCOLS, &s, err), err);
    for (int i = 0; i < NCOLS; i++) {
        df_field_clear(&f[i]);
        df_type_release(types[i]);
    }
    return s;
}

/* Pseudo-random but reproducible cell hash. */
static uint64_t cell(int col, int64_t r) {
    uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(col + 1) * 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 29);
}

static bool null_at(int col, int64_t r) {
    if (col == 1) return false;
    if (col == 5 && r >= 3000 && r < 6000) return true;   /* whole null row groups */
    return cell(col, r) % 9 == 0;
}

static df_batch *make_batch(df_schema *schema, int64_t start, int64_t n) {
    df_error e_ = {0}, *err = &e_;
    df_vec *cols[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        df_type *t = schema->fields[c].type;
        DF_ASSERT_OK(df_vec_new(t, n, n * 12, &cols[c], err), err);
        df_vec *v = cols[c];
        for (int64_t i = 0; i < n; i++) {
            int64_t r = start + i;
            uint64_t h = cell(c, r);
            if (c == 2) {
                char tmp[32];
                /* Few distinct values (dictionary pages), empty strings, and runs. */
                int len = (h % 5 == 0) ? 0 : snprintf(tmp, sizeof tmp, "w%llu", (unsigned long long)(h % 40));
                DF_ASSERT_OK(df_vec_append_bytes(v, null_at(c, r) ? NULL : tmp, len, err), err);
                continue;
            }
            switch (c) {
            case 0: DF_VEC_VALUES(v, int32_t)[i] = (int32_t)(h % 2000) - 1000; break;
            case 1: DF_VEC_VALUES(v, int64_t)[i] = r / 3; break;   /* sorted: row groups prune */
            case 3: df_bit_put(v->values->data, i, h % 3 == 0); break;
            case 4: {
                static const double special[] = {NAN, -0.0, 0.0, INFINITY, -INFINITY, -NAN};
                DF_VEC_VALUES(v, double)[i] = h % 17 < 6 ? special[h % 17] : (double)(int64_t)(h % 100) / 4 - 12;
                break;
            }
            case 5: DF_VEC_VALUES(v, df_i128)[i] = ((df_i128)(h % 1000) - 500) * (df_i128)1000000000000LL; break;
            case 6: DF_VEC_VALUES(v, int64_t)[i] = 1600000000000000LL + (int64_t)(h % 5000) * 1000; break;
            case 7: DF_VEC_VALUES(v, int32_t)[i] = 18000 + (int32_t)(h % 30); break;
            case 8: memcpy(DF_VEC_VALUES(v, uint8_t) + i * 3, (const uint8_t[]){(uint8_t)(h % 4), 0xff, (uint8_t)(h >> 8)}, 3); break;
            case 9: DF_VEC_VALUES(v, uint8_t)[i] = (uint8_t)(h % 250); break;
            case 10: DF_VEC_VALUES(v, int16_t)[i] = (int16_t)((int64_t)(h % 60000) - 30000); break;
            }
        }
        if (c != 2) {
            df_vec_set_length(v, n);
            for (int64_t i = 0; i < n; i++)
                if (null_at(c, start + i)) DF_ASSERT_OK(df_vec_set_null(v, i, err), err);
        }
    }
    df_batch *b;
    DF_ASSERT_OK(df_batch_new(schema, cols, n, &b, err), err);
    return b;
}

static void write_file(const char *path, df_parquet_codec codec, bool dictionary, int64_t rows, int64_t rg_rows,
                       int64_t page_bytes) {
    df_error e_ = {0}, *err = &e_;
    df_schema *schema = make_schema();
    df_parquet_write_options o = {0};
    o.codec = codec;
    o.row_group_rows = rg_rows;
    o.page_bytes = page_bytes;
    o.disable_dictionary = !dictionary;
    df_parquet_writer *w;
    DF_ASSERT_OK(df_parquet_writer_open(path, schema, &o, &w, err), err);
    for (int64_t start = 0; start < rows; start += 1000) {
        df_batch *b = make_batch(schema, start, DF_MIN(1000, rows - start));
        DF_ASSERT_OK(df_parquet_writer_write(w, b, err), err);
        df_batch_release(b);
    }
    DF_ASSERT_OK(df_parquet_writer_close(w, NULL, err), err);
    df_schema_release(schema);
}

/* ---- the independent evaluator ------------------------------------------------------ */

static int64_t total_key(double d) {
    int64_t b;
    memcpy(&b, &d, 8);
    return b ^ (int64_t)((uint64_t)(b >> 63) >> 1);
}

/* Element i of v satisfies p (NULL compared with anything is not true). */
static bool ref_holds(const df_scan_predicate *p, const df_vec *v, int64_t i) {
    df_error e_ = {0}, *err = &e_;
    bool is_null = df_vec_is_null(v, i);
    if (p->op == DF_PRED_IS_NULL) return is_null;
    if (p->op == DF_PRED_IS_NOT_NULL) return !is_null;
    if (is_null) return false;
    df_scalar x;
    DF_ASSERT_OK(df_scalar_from_vec(&x, v, i, err), err);
    bool any = false;
    for (int32_t k = 0; k < p->nvalues && !any; k++) {
        const df_scalar *c = &p->values[k];
        if (c->is_null) continue;
        int cmp;
        if (df_type_is_floating(x.type)) {
            int64_t a = total_key(x.v.f64), b = total_key(c->v.f64);
            cmp = a < b ? -1 : a > b;
        } else {
            bool comparable;
            cmp = df_scalar_compare(&x, c, &comparable);
            DF_ASSERT(comparable);
        }
        switch (p->op) {
        case DF_PRED_EQ:
        case DF_PRED_IN: any = cmp == 0; break;
        case DF_PRED_NE: any = cmp != 0; break;
        case DF_PRED_LT: any = cmp < 0; break;
        case DF_PRED_LE: any = cmp <= 0; break;
        case DF_PRED_GT: any = cmp > 0; break;
        default: any = cmp >= 0; break;
        }
    }
    df_scalar_clear(&x);
    return any;
}

/* Deep equality of element i of a and element j of b (same type), nested types included. */
static bool elem_equal(const df_vec *a, int64_t i, const df_vec *b, int64_t j) {
    if (df_vec_is_null(a, i) || df_vec_is_null(b, j)) return df_vec_is_null(a, i) == df_vec_is_null(b, j);
    switch (a->type->id) {
    case DF_TYPE_NULL: return true;
    case DF_TYPE_BOOL: return df_vec_bool(a, i) == df_vec_bool(b, j);
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        int32_t la, lb;
        const uint8_t *pa = df_vec_bytes(a, i, &la), *pb = df_vec_bytes(b, j, &lb);
        return la == lb && (la == 0 || memcmp(pa, pb, (size_t)la) == 0);
    }
    case DF_TYPE_STRUCT:
        for (int32_t c = 0; c < a->nchildren; c++)
            if (!elem_equal(a->children[c], a->offset + i, b->children[c], b->offset + j)) return false;
        return true;
    case DF_TYPE_LIST:
    case DF_TYPE_MAP: {
        const int32_t *oa = df_vec_offsets(a), *ob = df_vec_offsets(b);
        if (oa[i + 1] - oa[i] != ob[j + 1] - ob[j]) return false;
        for (int32_t k = 0; k < oa[i + 1] - oa[i]; k++)
            if (!elem_equal(a->children[0], oa[i] + k, b->children[0], ob[j] + k)) return false;
        return true;
    }
    default: {
        int32_t w = df_type_width(a->type);
        return memcmp(a->values->data + (a->offset + i) * w, b->values->data + (b->offset + j) * w, (size_t)w) == 0;
    }
    }
}

/* ---- reading ----------------------------------------------------------------------------- */

/* All rows of a file, unfiltered: one batch per row group's batches, concatenated per column. */
typedef struct table {
    df_batch **batches;
    int64_t nbatches;
    int64_t *first;       /* file row of each batch's first row */
    int64_t rows;
} table;

static bool read_all(const char *path, table *t) {
    df_error e_ = {0}, *err = &e_;
    memset(t, 0, sizeof *t);
    df_parquet_file *f;
    if (df_parquet_file_open_path(path, &f, err)) return false;
    df_batch_stream *s;
    df_errkind k = df_parquet_reader_open(f, NULL, &s, err);
    df_parquet_file_close(f);
    if (k) return false;
    for (;;) {
        df_batch *b;
        if (df_batch_stream_next(s, &b, err)) {
            df_batch_stream_close(s);
            for (int64_t i = 0; i < t->nbatches; i++) df_batch_release(t->batches[i]);
            df_free(t->batches);
            df_free(t->first);
            return false;
        }
        if (!b) break;
        t->batches = df_realloc(t->batches, (size_t)(t->nbatches + 1) * sizeof *t->batches);
        t->first = df_realloc(t->first, (size_t)(t->nbatches + 1) * sizeof *t->first);
        t->batches[t->nbatches] = b;
        t->first[t->nbatches++] = t->rows;
        t->rows += b->nrows;
    }
    df_batch_stream_close(s);
    return true;
}

static void table_free(table *t) {
    for (int64_t i = 0; i < t->nbatches; i++) df_batch_release(t->batches[i]);
    df_free(t->batches);
    df_free(t->first);
}

static bool is_deleted(const uint64_t *del, int64_t ndel, int64_t row) {
    int64_t a = 0, b = ndel;
    while (a < b) {
        int64_t m = (a + b) / 2;
        if (del[m] < (uint64_t)row) a = m + 1;
        else b = m;
    }
    return a < ndel && del[a] == (uint64_t)row;
}

typedef struct filter_case {
    const df_scan_predicate *preds;
    int32_t npreds;
    const int32_t *cols;        /* output fields (NULL = all) */
    int32_t ncols;
    int32_t batch;
    const uint64_t *deleted;
    int64_t ndeleted;
    int64_t limit;
} filter_case;

/*
 * Reads `path` with the case's options and checks the rows against the
 * expected ones: every row of `t` where all predicates hold and that is not
 * deleted, in file order (a prefix of them with a limit).  Returns the rows
 * read; *metrics receives the stream's counters.
 */
static char case_desc[512];

static void describe_case(const df_scan_predicate *preds, int32_t npreds, int32_t ncols, int32_t batch,
                          int64_t ndeleted, int64_t limit) {
    int n = snprintf(case_desc, sizeof case_desc, "batch %d, %d output columns, %lld deleted, limit %lld:", batch,
                     ncols, (long long)ndeleted, (long long)limit);
    for (int32_t p = 0; p < npreds && n < (int)sizeof case_desc - 64; p++) {
        df_buf b;
        df_buf_init(&b, 0);
        if (preds[p].nvalues > 0 && !preds[p].values[0].is_null) {
            const df_scalar *v = &preds[p].values[0];
            if (df_type_is_floating(v->type)) df_buf_printf(&b, NULL, "%g", v->v.f64);
            else df_buf_printf(&b, NULL, "%lld", (long long)v->v.i64);
        }
        n += snprintf(case_desc + n, sizeof case_desc - (size_t)n, " [col %d op %d n %d v0 %s]", preds[p].column,
                      (int)preds[p].op, preds[p].nvalues, b.data ? b.data : "-");
        df_buf_free(&b);
    }
}

static bool row_kept(const table *t, const filter_case *fc, const bool *applies, int64_t bi, int64_t ri) {
    bool keep = !is_deleted(fc->deleted, fc->ndeleted, t->first[bi] + ri);
    for (int32_t p = 0; keep && p < fc->npreds; p++)
        if (applies[p]) keep = ref_holds(&fc->preds[p], t->batches[bi]->cols[fc->preds[p].column], ri);
    return keep;
}

static int64_t check_case(const char *path, const table *t, const filter_case *fc, df_scan_metrics *metrics) {
    df_error e_ = {0}, *err = &e_;
    /* Predicates the reader cannot evaluate row by row only prune: the reference ignores them too. */
    bool applies[8] = {false};
    DF_ASSERT(fc->npreds <= 8);
    for (int32_t p = 0; p < fc->npreds; p++)
        applies[p] = df_scan_predicate_evaluable(&fc->preds[p], t->batches[0]->cols[fc->preds[p].column]->type);
    describe_case(fc->preds, fc->npreds, fc->cols ? fc->ncols : -1, fc->batch, fc->ndeleted, fc->limit);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_parquet_read_options o = {0};
    o.columns = fc->cols;
    o.ncolumns = fc->ncols;
    o.batch_size = fc->batch;
    o.predicates = fc->preds;
    o.npredicates = fc->npreds;
    o.filter_rows = true;
    o.deleted_rows = fc->deleted;
    o.ndeleted_rows = fc->ndeleted;
    o.limit = fc->limit;
    o.metrics = metrics;
    df_batch_stream *s;
    DF_ASSERT_OK(df_parquet_reader_open(f, &o, &s, err), err);
    df_parquet_file_close(f);
    int64_t bi = 0, ri = 0, got = 0;   /* cursor over the expected rows */
    for (;;) {
        df_batch *b;
        DF_ASSERT_OK(df_batch_stream_next(s, &b, err), err);
        if (!b) break;
        DF_ASSERT(b->nrows > 0);
        DF_ASSERT(b->nrows <= (fc->batch ? fc->batch : 8192));
        for (int32_t c = 0; c < b->ncols; c++) DF_ASSERT_OK(df_vec_validate(b->cols[c], true, err), err);
        for (int64_t i = 0; i < b->nrows; i++, got++) {
            /* Advance to the next expected row. */
            for (;;) {
                DF_ASSERT(bi < t->nbatches);
                const df_batch *tb = t->batches[bi];
                if (ri >= tb->nrows) {
                    bi++;
                    ri = 0;
                    continue;
                }
                if (row_kept(t, fc, applies, bi, ri)) break;
                ri++;
            }
            for (int32_t c = 0; c < b->ncols; c++) {
                int32_t col = fc->cols ? fc->cols[c] : c;
                if (!elem_equal(b->cols[c], i, t->batches[bi]->cols[col], ri))
                    df_test_fail(__FILE__, __LINE__, "%s: column %d differs at file row %lld (%s)", path, col,
                                 (long long)(t->first[bi] + ri), case_desc);
            }
            ri++;
        }
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    if (fc->limit <= 0 || got < fc->limit) {
        /* Nothing expected may be left over. */
        for (; bi < t->nbatches; bi++, ri = 0)
            for (; ri < t->batches[bi]->nrows; ri++) {
                if (row_kept(t, fc, applies, bi, ri))
                    df_test_fail(__FILE__, __LINE__, "%s: file row %lld is missing (%s)", path,
                                 (long long)(t->first[bi] + ri), case_desc);
            }
    }
    return got;
}

/* A predicate on column `col` comparing with the value at file row `row` of t. */
static void make_pred(df_scan_predicate *p, const table *t, int32_t col, df_pred_op op, int64_t row, int nvalues) {
    df_error e_ = {0}, *err = &e_;
    memset(p, 0, sizeof *p);
    p->column = col;
    p->op = op;
    if (op == DF_PRED_IS_NULL || op == DF_PRED_IS_NOT_NULL) return;
    p->nvalues = nvalues;
    p->values = df_calloc((size_t)nvalues, sizeof *p->values);
    for (int v = 0; v < nvalues; v++) {
        int64_t r = (row + (int64_t)v * 7919) % t->rows, bi = 0;
        while (bi + 1 < t->nbatches && t->first[bi + 1] <= r) bi++;
        const df_vec *vec = t->batches[bi]->cols[col];
        int64_t i = r - t->first[bi];
        /* A null cell: look for a non-null one nearby. */
        while (df_vec_is_null(vec, i) && i + 1 < vec->length) i++;
        DF_ASSERT_OK(df_scalar_from_vec(&p->values[v], vec, i, err), err);
        if (p->values[v].is_null) {
            df_scalar_clear(&p->values[v]);
            DF_ASSERT_OK(df_scalar_from_vec(&p->values[v], vec, 0, err), err);
            if (p->values[v].is_null) {
                /* An all-null batch: a null literal (never true). */
            }
        }
    }
}

static void free_preds(df_scan_predicate *p, int n) {
    for (int i = 0; i < n; i++) {
        for (int v = 0; v < p[i].nvalues; v++) df_scalar_clear(&p[i].values[v]);
        df_free(p[i].values);
    }
}

/* Random sorted, distinct deleted rows: sparse singles plus a few ranges. */
static int64_t make_deleted(uint64_t *out, int64_t cap, int64_t rows) {
    int64_t n = 0;
    bool *del = calloc((size_t)rows, 1);
    for (int k = 0; k < 40; k++) del[rnd() % (uint64_t)rows] = true;
    for (int k = 0; k < 3; k++) {
        int64_t a = (int64_t)(rnd() % (uint64_t)rows), len = (int64_t)(rnd() % 3000);
        for (int64_t r = a; r < DF_MIN(rows, a + len); r++) del[r] = true;
    }
    for (int64_t r = 0; r < rows && n < cap; r++)
        if (del[r]) out[n++] = (uint64_t)r;
    free(del);
    return n;
}

static const df_pred_op all_ops[] = {DF_PRED_EQ, DF_PRED_NE, DF_PRED_LT, DF_PRED_LE, DF_PRED_GT,
                                     DF_PRED_GE, DF_PRED_IS_NULL, DF_PRED_IS_NOT_NULL, DF_PRED_IN};

/* Random cases over a file whose flat columns are `flat` (top-level field indices). */
static void random_cases(const char *path, const table *t, const int32_t *flat, int nflat, int ncases) {
    int32_t nfields = t->batches[0]->ncols;
    uint64_t *deleted = malloc(sizeof(uint64_t) * 20000);
    for (int c = 0; c < ncases; c++) {
        df_scan_predicate preds[3];
        int npreds = 1 + (int)(rnd() % 3);
        /*
         * Only predicates the reader evaluates row by row: the others still
         * prune row groups, so which of their rows come back is not defined.
         */
        for (int p = 0; p < npreds; p++) {
            for (int tries = 0;; tries++) {
                df_pred_op op = all_ops[rnd() % DF_ARRAY_LEN(all_ops)];
                int32_t col = flat[rnd() % (uint64_t)nflat];
                make_pred(&preds[p], t, col, op, (int64_t)(rnd() % (uint64_t)t->rows), op == DF_PRED_IN ? 3 : 1);
                if (df_scan_predicate_evaluable(&preds[p], t->batches[0]->cols[col]->type)) break;
                free_preds(&preds[p], 1);
                if (tries == 20) {
                    make_pred(&preds[p], t, col, DF_PRED_IS_NOT_NULL, 0, 0);
                    break;
                }
            }
        }
        int32_t cols[64];
        int32_t ncols = 0;
        bool subset = rnd() % 2;
        for (int32_t f = 0; f < nfields && f < 64; f++)
            if (!subset || rnd() % 2) cols[ncols++] = f;
        static const int32_t batches[] = {0, 1, 7, 100, 1000, 4096};
        filter_case fc = {preds, npreds, subset ? cols : NULL, ncols, batches[rnd() % 6], NULL, 0, 0};
        if (rnd() % 3 == 0) {
            fc.ndeleted = make_deleted(deleted, 20000, t->rows);
            fc.deleted = deleted;
        }
        if (rnd() % 4 == 0) fc.limit = 1 + (int64_t)(rnd() % 50);
        df_scan_metrics m;
        memset(&m, 0, sizeof m);
        int64_t got = check_case(path, t, &fc, &m);
        DF_ASSERT_EQ_INT(m.rows_produced, got);
        free_preds(preds, npreds);
    }
    free(deleted);
}

/* ---- tests ----------------------------------------------------------------------------------- */

DF_TEST(filtered_reads_match_row_by_row_filtering) {
    static const struct {
        df_parquet_codec codec;
        bool dictionary;
        int64_t page_bytes;
    } files[] = {{DF_PARQUET_UNCOMPRESSED, true, 1024}, {DF_PARQUET_SNAPPY, false, 4096}, {DF_PARQUET_ZSTD, true, 65536}};
    int32_t flat[NCOLS];
    for (int i = 0; i < NCOLS; i++) flat[i] = i;
    for (size_t fi = 0; fi < DF_ARRAY_LEN(files); fi++) {
        const char *path = tmp_file();
        write_file(path, files[fi].codec, files[fi].dictionary, 20000, 3000, files[fi].page_bytes);
        table t;
        DF_ASSERT(read_all(path, &t));
        DF_ASSERT_EQ_INT(t.rows, 20000);
        random_cases(path, &t, flat, NCOLS, 120);
        table_free(&t);
        unlink(path);
    }
}

DF_TEST(every_operator_on_every_type) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 7000, 2500, 2048);
    table t;
    DF_ASSERT(read_all(path, &t));
    for (int32_t col = 0; col < NCOLS; col++)
        for (size_t o = 0; o < DF_ARRAY_LEN(all_ops); o++)
            for (int64_t row = 11; row < 7000; row += 2333) {
                df_scan_predicate p;
                make_pred(&p, &t, col, all_ops[o], row, all_ops[o] == DF_PRED_IN ? 4 : 1);
                filter_case fc = {&p, 1, NULL, 0, 1000, NULL, 0, 0};
                check_case(path, &t, &fc, NULL);
                free_preds(&p, 1);
            }
    table_free(&t);
    unlink(path);
}

/*
 * One selected row among 60000: the other columns' pages around it are
 * passed over unread, whole row groups without a selected row touch no
 * page of the other columns at all (their dictionaries are never loaded).
 */
DF_TEST(selective_filters_skip_pages_unread) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 60000, 20000, 1024);
    table t;
    DF_ASSERT(read_all(path, &t));
    df_scan_metrics all;
    memset(&all, 0, sizeof all);
    filter_case none = {NULL, 0, NULL, 0, 1000, NULL, 0, 0};
    DF_ASSERT_EQ_INT(check_case(path, &t, &none, &all), 60000);
    /* i64 = row / 3: the value 10000 is at rows 30000..30002 (row group 1). */
    df_scan_predicate p;
    memset(&p, 0, sizeof p);
    p.column = 1;
    p.op = DF_PRED_EQ;
    p.nvalues = 1;
    p.values = df_calloc(1, sizeof *p.values);
    p.values[0].type = df_type_int64();
    p.values[0].v.i64 = 10000;
    /* Without statistics pruning: ask for filtering on a different column with a NE always true. */
    df_scan_predicate q[2];
    make_pred(&q[0], &t, 0, DF_PRED_IS_NOT_NULL, 0, 0);
    q[1] = p;
    df_scan_metrics m;
    memset(&m, 0, sizeof m);
    filter_case fc = {q, 2, NULL, 0, 1000, NULL, 0, 0};
    int64_t got = check_case(path, &t, &fc, &m);
    DF_ASSERT(got >= 1 && got <= 3);
    DF_ASSERT_EQ_INT(m.row_groups_pruned, 2);   /* min/max of the sorted column */
    DF_ASSERT(m.pages_skipped > 0);
    DF_ASSERT(m.pages_read * 4 < all.pages_read);
    DF_ASSERT_EQ_INT(m.rows_filtered, 20000 - got);
    /* The predicate alone on a column statistics cannot prune: i32 = -1000..999 everywhere. */
    df_scan_predicate r;
    make_pred(&r, &t, 0, DF_PRED_EQ, 12345, 1);
    memset(&m, 0, sizeof m);
    filter_case fr = {&r, 1, NULL, 0, 8192, NULL, 0, 0};
    got = check_case(path, &t, &fr, &m);
    DF_ASSERT(got > 0 && got < 200);
    DF_ASSERT_EQ_INT(m.row_groups_pruned, 0);
    DF_ASSERT(m.pages_skipped > 0);
    DF_ASSERT(m.pages_read < all.pages_read);
    DF_ASSERT_EQ_INT(m.rows_filtered + got, 60000);
    free_preds(&r, 1);
    free_preds(q, 2);
    table_free(&t);
    unlink(path);
}

DF_TEST(deleted_rows_alone_and_with_predicates) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_ZSTD, false, 12000, 5000, 8192);
    table t;
    DF_ASSERT(read_all(path, &t));
    uint64_t *del = malloc(sizeof(uint64_t) * 12000);
    int64_t n = 0;
    for (int64_t r = 0; r < 12000; r++)
        if (r % 5 == 0 || (r >= 5000 && r < 10000)) del[n++] = (uint64_t)r;   /* the middle row group entirely */
    df_scan_metrics m;
    memset(&m, 0, sizeof m);
    filter_case fc = {NULL, 0, NULL, 0, 777, del, n, 0};
    DF_ASSERT_EQ_INT(check_case(path, &t, &fc, &m), 12000 - n);
    DF_ASSERT_EQ_INT(m.deletion_vector_rows_deleted, n);
    df_scan_metrics all;
    memset(&all, 0, sizeof all);
    filter_case none = {NULL, 0, NULL, 0, 777, NULL, 0, 0};
    check_case(path, &t, &none, &all);
    DF_ASSERT(m.pages_read < all.pages_read);   /* the deleted row group's pages are never read */
    int32_t cols[] = {4, 2};
    df_scan_predicate p;
    make_pred(&p, &t, 3, DF_PRED_EQ, 4, 1);
    filter_case fp = {&p, 1, cols, 2, 0, del, n, 0};   /* the predicate column is not an output column */
    check_case(path, &t, &fp, NULL);
    fp.limit = 10;
    DF_ASSERT_EQ_INT(check_case(path, &t, &fp, NULL), 10);
    free_preds(&p, 1);
    free(del);
    table_free(&t);
    unlink(path);
}

DF_TEST(predicates_that_cannot_be_evaluated_only_prune) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 3000, 1000, 4096);
    table t;
    DF_ASSERT(read_all(path, &t));
    /* A literal of another type than the column: kept for pruning, not applied to rows. */
    df_scan_predicate p;
    memset(&p, 0, sizeof p);
    p.column = 0;
    p.op = DF_PRED_EQ;
    p.nvalues = 1;
    p.values = df_calloc(1, sizeof *p.values);
    p.values[0].type = df_type_int64();
    p.values[0].v.i64 = 5;
    DF_ASSERT(!df_scan_predicate_evaluable(&p, df_type_int32()));
    df_scan_metrics m;
    memset(&m, 0, sizeof m);
    filter_case fc = {NULL, 0, NULL, 0, 0, NULL, 0, 0};
    df_parquet_file *f;
    df_error e_ = {0}, *err = &e_;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_parquet_read_options o = {0};
    o.predicates = &p;
    o.npredicates = 1;
    o.filter_rows = true;
    o.metrics = &m;
    df_batch_stream *s;
    DF_ASSERT_OK(df_parquet_reader_open(f, &o, &s, err), err);
    df_parquet_file_close(f);
    int64_t rows = 0;
    for (df_batch *b; df_batch_stream_next(s, &b, err) == DF_OK && b;) {
        rows += b->nrows;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    DF_ASSERT_EQ_INT(rows, 3000);
    DF_ASSERT_EQ_INT(m.rows_filtered, 0);
    (void)fc;
    free_preds(&p, 1);
    table_free(&t);
    unlink(path);
}

DF_TEST(invalid_filter_options) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_UNCOMPRESSED, false, 10, 10, 1024);
    df_error e_ = {0}, *err = &e_;
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_parquet_read_options o = {0};
    o.npredicates = 2;   /* but no array */
    df_batch_stream *s = (df_batch_stream *)1;
    DF_ASSERT_KIND(df_parquet_reader_open(f, &o, &s, err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(s == NULL);
    o.npredicates = 0;
    o.ndeleted_rows = -1;
    DF_ASSERT_KIND(df_parquet_reader_open(f, &o, &s, err), DF_ERR_INVALID_ARGUMENT);
    df_error_clear(err);
    df_parquet_file_close(f);
    unlink(path);
}

/* ---- the shared corpus -------------------------------------------------------------------------- */

/* Flat primitive top-level fields of a file (candidates for predicates). */
static int flat_fields(const char *path, int32_t *out, int cap) {
    df_error e_ = {0}, *err = &e_;
    df_parquet_file *f;
    if (df_parquet_file_open_path(path, &f, err)) return 0;
    int n = 0;
    for (int32_t l = 0; l < df_parquet_file_num_leaves(f) && n < cap; l++) {
        df_parquet_leaf_info li;
        df_parquet_file_leaf(f, l, &li);
        const df_field *fld = &df_parquet_file_schema(f)->fields[li.field];
        if (li.max_rep == 0 && !df_type_is_nested(fld->type) && fld->type->id != DF_TYPE_NULL) out[n++] = li.field;
    }
    df_parquet_file_close(f);
    return n;
}

static int corpus_dir(const char *dir) {
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    int files = 0;
    struct dirent *de;
    while ((de = readdir(dp))) {
        size_t l = strlen(de->d_name);
        if (l < 9 || strcmp(de->d_name + l - 8, ".parquet") != 0) continue;
        char path[4096];
        int pl = snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (pl < 0 || (size_t)pl >= sizeof path) continue;
        table t;
        if (!read_all(path, &t)) continue;   /* unsupported or malformed: covered elsewhere */
        int32_t flat[256];
        int nflat = flat_fields(path, flat, 256);
        if (t.rows > 0 && nflat > 0) {
            random_cases(path, &t, flat, nflat, 25);
            files++;
        }
        table_free(&t);
    }
    closedir(dp);
    return files;
}

DF_TEST(filtered_reads_of_the_shared_corpus) {
    char dir[1024];
    if (!shared_parquet_corpus(dir, sizeof dir)) return;
    int files = corpus_dir(dir);
    printf("filtered %d corpus files\n", files);
    DF_ASSERT(files >= 30);
}
