/*
 * Shared by the Parquet fuzz targets: reads a file to the end with the given
 * options and traps on any batch whose vectors break the Arrow layout rules,
 * so a malformed result is a crash the fuzzer reports, not a silent pass.
 * Failures to open or read are expected on hostile input and end the drain.
 */
#ifndef DF_FUZZ_PARQUET_DRAIN_H
#define DF_FUZZ_PARQUET_DRAIN_H

#include "parquet/parquet.h"

static inline void fuzz_parquet_drain(df_parquet_file *f, const df_parquet_read_options *o) {
    df_batch_stream *s = NULL;
    if (df_parquet_reader_open(f, o, &s, NULL) != DF_OK) return;
    for (;;) {
        df_batch *b = NULL;
        if (df_batch_stream_next(s, &b, NULL) != DF_OK || !b) break;
        for (int32_t c = 0; c < b->ncols; c++)
            if (df_vec_validate(b->cols[c], false, NULL) != DF_OK) __builtin_trap();   /* malformed output */
        df_batch_release(b);
    }
    df_batch_stream_close(s);
}

#endif
