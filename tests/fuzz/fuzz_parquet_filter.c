/*
 * libFuzzer target for row filtering inside the Parquet reader: the input
 * is a whole file held in memory, read with predicates on its flat columns
 * (literals taken from the file's first rows) and a deletion list, so page
 * headers are parsed ahead to skip pages unread, values are skipped inside
 * pages for every encoding, and dictionary pages are loaded late.  Every
 * read must either succeed with valid Arrow vectors or fail with a clear
 * error: never crash, hang or leak.
 */
#include <stddef.h>
#include <stdint.h>

#include "parquet/parquet.h"
#include "parquet_drain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Literals: the first non-null value of each flat column among the first rows (cleared by the caller). */
static void first_values(df_parquet_file *f, df_scalar *vals, int32_t n) {
    df_parquet_read_options o = {0};
    o.batch_size = 64;
    o.limit = 64;
    df_batch_stream *s = NULL;
    if (df_parquet_reader_open(f, &o, &s, NULL) != DF_OK) return;
    df_batch *b = NULL;
    if (df_batch_stream_next(s, &b, NULL) == DF_OK && b) {
        for (int32_t c = 0; c < b->ncols && c < n; c++)
            for (int64_t i = 0; i < b->nrows; i++)
                if (!df_vec_is_null(b->cols[c], i) && !df_type_is_nested(b->cols[c]->type)) {
                    if (df_scalar_from_vec(&vals[c], b->cols[c], i, NULL) != DF_OK) memset(&vals[c], 0, sizeof vals[c]);
                    break;
                }
        df_batch_release(b);
    }
    df_batch_stream_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_input *in = NULL;
    if (df_input_open_memory(data, size, &in, NULL) != DF_OK) return 0;
    df_parquet_file *f = NULL;
    if (df_parquet_file_open(in, &f, NULL) != DF_OK) return 0;
    enum { MAXC = 16 };
    const df_schema *sc = df_parquet_file_schema(f);
    int32_t n = sc->nfields < MAXC ? sc->nfields : MAXC;
    df_scalar vals[MAXC];
    memset(vals, 0, sizeof vals);
    first_values(f, vals, n);
    df_scan_predicate preds[2 * MAXC];
    int32_t np = 0;
    for (int32_t c = 0; c < n; c++) {
        if (vals[c].type) preds[np++] = (df_scan_predicate){c, (df_pred_op)(c % 6), 1, &vals[c]};
        else preds[np++] = (df_scan_predicate){c, c % 2 ? DF_PRED_IS_NULL : DF_PRED_IS_NOT_NULL, 0, NULL};
    }
    uint64_t deleted[40];
    for (int i = 0; i < 40; i++) deleted[i] = (uint64_t)i * 3 + 1;
    /* One predicate at a time (selective and not), then all of them, with deletions. */
    for (int32_t p = 0; p < np && p < 6; p++) {
        df_parquet_read_options o = {0};
        o.batch_size = 7 + 100 * (p % 2);
        o.predicates = &preds[p];
        o.npredicates = 1;
        o.filter_rows = true;
        fuzz_parquet_drain(f, &o);
    }
    df_parquet_read_options o = {0};
    o.batch_size = 13;
    o.predicates = preds;
    o.npredicates = np;
    o.filter_rows = true;
    o.deleted_rows = deleted;
    o.ndeleted_rows = 40;
    o.limit = 100;
    fuzz_parquet_drain(f, &o);
    for (int32_t c = 0; c < n; c++) df_scalar_clear(&vals[c]);
    df_parquet_file_close(f);
    return 0;
}
