/*
 * libFuzzer target for the Parquet reader: the input is a whole file held in
 * memory.  Opening it (footer, Thrift metadata, schema conversion) and
 * reading it completely (page headers, CRCs, codecs, levels, every
 * encoding, record assembly) must either succeed with valid Arrow vectors
 * or fail with a clear error: never crash, hang or leak.  Row-group
 * statistics and a leaf projection are exercised too.
 */
#include <stddef.h>
#include <stdint.h>

#include "parquet/parquet.h"
#include "parquet_drain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_input *in = NULL;
    if (df_input_open_memory(data, size, &in, NULL) != DF_OK) return 0;
    df_parquet_file *f = NULL;
    if (df_parquet_file_open(in, &f, NULL) != DF_OK) return 0;
    df_parquet_read_options o = {0};
    o.batch_size = 777;
    fuzz_parquet_drain(f, &o);
    if (df_parquet_file_num_leaves(f) > 0) {
        int32_t leaf = df_parquet_file_num_leaves(f) - 1;
        df_parquet_read_options lo = {0};
        lo.leaves = &leaf;
        lo.nleaves = 1;
        lo.batch_size = 5;
        lo.limit = 50;
        fuzz_parquet_drain(f, &lo);
    }
    const df_schema *sc = df_parquet_file_schema(f);
    for (int32_t rg = 0; rg < df_parquet_file_num_row_groups(f) && rg < 8; rg++)
        for (int32_t c = 0; c < sc->nfields && c < 16; c++) {
            df_column_stats st;
            if (df_parquet_file_column_stats(f, rg, c, &st, NULL) == DF_OK) df_parquet_column_stats_clear(&st);
        }
    df_parquet_file_close(f);
    return 0;
}
