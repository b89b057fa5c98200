/*
 * Parquet read benchmark: reads a file to the end with our reader, several
 * times, and prints the best wall time.  With THREADS > 1 the row groups
 * are dealt round-robin to that many threads, each with its own stream on
 * the shared file (as the executor's scan partitions read); a file with
 * fewer row groups than threads has its columns dealt instead (pyarrow's
 * threaded read decodes column chunks in parallel too).  Compare with
 * pyarrow through bench/parquet/compare.py.
 *
 *   parquet_read_bench FILE [REPEAT] [BATCH] [COLUMNS|-] [THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "parquet/parquet.h"

typedef struct job {
    df_parquet_file *file;      /* shared */
    const int32_t *cols;        /* projection or NULL */
    int32_t ncols;
    int batch;
    int thread, nthreads;       /* this thread reads row groups (or columns) thread, thread + nthreads, ... */
    int by_columns;             /* deal columns instead of row groups */
    int64_t rows;               /* out */
    df_error err;               /* out */
    int failed;                 /* out */
} job;

static void *read_part(void *arg) {
    job *j = arg;
    int32_t nrg = df_parquet_file_num_row_groups(j->file);
    int32_t *rgs = malloc(sizeof(int32_t) * (size_t)(nrg + 1));
    int32_t n = 0, nfields = df_parquet_file_schema(j->file)->nfields;
    int32_t *mine = malloc(sizeof(int32_t) * (size_t)(nfields + 1)), nmine = 0;
    for (int32_t g = 0; g < nrg; g++)
        if (j->by_columns || g % j->nthreads == j->thread) rgs[n++] = g;
    df_parquet_read_options o = {0};
    o.batch_size = j->batch;
    o.columns = j->cols;
    o.ncolumns = j->ncols;
    if (j->by_columns) {
        int32_t total = j->cols ? j->ncols : nfields;
        for (int32_t c = j->thread; c < total; c += j->nthreads) mine[nmine++] = j->cols ? j->cols[c] : c;
        o.columns = mine;
        o.ncolumns = nmine;
    }
    o.row_groups = rgs;
    o.nrow_groups = n;
    df_batch_stream *s;
    j->rows = 0;
    if (df_parquet_reader_open(j->file, &o, &s, &j->err) != DF_OK) {
        j->failed = 1;
        free(rgs);
        free(mine);
        return NULL;
    }
    for (;;) {
        df_batch *b;
        if (df_batch_stream_next(s, &b, &j->err) != DF_OK) {
            j->failed = 1;
            break;
        }
        if (!b) break;
        j->rows += b->nrows;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    free(rgs);
    free(mine);
    if (j->by_columns && j->thread > 0) j->rows = 0;   /* rows are counted once */
    return NULL;
}

static int run(const char *path, int batch, const char *columns, int nthreads, int64_t *rows, df_error *err) {
    df_parquet_file *f;
    if (df_parquet_file_open_path(path, &f, err)) return 1;
    int32_t cols[256], ncols = 0;
    if (columns) {
        char *copy = strdup(columns), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t && ncols < 256; t = strtok_r(NULL, ",", &save))
            cols[ncols++] = df_schema_find(df_parquet_file_schema(f), t);
        free(copy);
    }
    job jobs[64];
    pthread_t tids[64];
    int rc = 0;
    *rows = 0;
    int by_columns = nthreads > 1 && df_parquet_file_num_row_groups(f) < nthreads;
    for (int t = 0; t < nthreads; t++) {
        jobs[t] = (job){f, columns ? cols : NULL, ncols, batch, t, nthreads, by_columns, 0, {0}, 0};
        if (nthreads == 1) read_part(&jobs[t]);
        else pthread_create(&tids[t], NULL, read_part, &jobs[t]);
    }
    for (int t = 0; t < nthreads; t++) {
        if (nthreads > 1) pthread_join(tids[t], NULL);
        if (jobs[t].failed && !rc) {
            *err = jobs[t].err;
            rc = 1;
        }
        *rows += jobs[t].rows;
    }
    df_parquet_file_close(f);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [REPEAT] [BATCH] [COLUMNS|-] [THREADS]\n", argv[0]);
        return 2;
    }
    int repeat = argc > 2 ? atoi(argv[2]) : 5;
    int batch = argc > 3 ? atoi(argv[3]) : 8192;
    const char *columns = argc > 4 && strcmp(argv[4], "-") != 0 ? argv[4] : NULL;
    int threads = argc > 5 ? atoi(argv[5]) : 1;
    if (threads < 1 || threads > 64) threads = 1;
    double best = 1e30;
    int64_t rows = 0;
    for (int i = 0; i < repeat; i++) {
        df_error err = {0};
        uint64_t t0 = df_now_ns();
        if (run(argv[1], batch, columns, threads, &rows, &err)) {
            fprintf(stderr, "error: %s: %s\n", df_errkind_name(err.kind), err.message);
            return 1;
        }
        double s = (double)(df_now_ns() - t0) / 1e9;
        if (s < best) best = s;
    }
    printf("%s rows=%lld best=%.4f s\n", argv[1], (long long)rows, best);
    return 0;
}
