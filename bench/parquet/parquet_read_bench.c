/*
 * Parquet read benchmark: reads a file to the end with our reader, several
 * times, and prints the best wall time.  Compare with pyarrow through
 * bench/parquet/compare.py (single-threaded pq.read_table).
 *
 *   parquet_read_bench FILE [REPEAT] [BATCH] [COLUMNS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "parquet/parquet.h"

static int run(const char *path, int batch, const char *columns, int64_t *rows, df_error *err) {
    df_parquet_file *f;
    if (df_parquet_file_open_path(path, &f, err)) return 1;
    int32_t cols[256], ncols = 0;
    if (columns) {
        char *copy = strdup(columns), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t && ncols < 256; t = strtok_r(NULL, ",", &save))
            cols[ncols++] = df_schema_find(df_parquet_file_schema(f), t);
        free(copy);
    }
    df_parquet_read_options o = {0};
    o.batch_size = batch;
    if (columns) {
        o.columns = cols;
        o.ncolumns = ncols;
    }
    df_batch_stream *s;
    int rc = df_parquet_reader_open(f, &o, &s, err) != DF_OK;
    df_parquet_file_close(f);
    if (rc) return 1;
    *rows = 0;
    for (;;) {
        df_batch *b;
        if (df_batch_stream_next(s, &b, err) != DF_OK) {
            rc = 1;
            break;
        }
        if (!b) break;
        *rows += b->nrows;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [REPEAT] [BATCH] [COLUMNS]\n", argv[0]);
        return 2;
    }
    int repeat = argc > 2 ? atoi(argv[2]) : 5;
    int batch = argc > 3 ? atoi(argv[3]) : 8192;
    const char *columns = argc > 4 ? argv[4] : NULL;
    double best = 1e30;
    int64_t rows = 0;
    for (int i = 0; i < repeat; i++) {
        df_error err = {0};
        uint64_t t0 = df_now_ns();
        if (run(argv[1], batch, columns, &rows, &err)) {
            fprintf(stderr, "error: %s: %s\n", df_errkind_name(err.kind), err.message);
            return 1;
        }
        double s = (double)(df_now_ns() - t0) / 1e9;
        if (s < best) best = s;
    }
    printf("%s rows=%lld best=%.4f s\n", argv[1], (long long)rows, best);
    return 0;
}
