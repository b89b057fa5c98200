/*
 * libFuzzer target for the Parquet checkpoint decoder: the input is a
 * checkpoint (or sidecar) file held in memory; the Parquet reader decodes
 * it and the checkpoint walker turns its rows into actions.
 */
#include <stddef.h>
#include <stdint.h>

#include "delta/delta_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_arena arena;
    df_arena_init(&arena, 16 * 1024, 256u << 20);
    df__delta_replay r;
    if (df__delta_replay_init(&r, &arena, "/table", NULL) == DF_OK) {
        df_input *in = NULL;
        if (df_input_open_memory(data, size, &in, NULL) == DF_OK)
            df__delta_replay_parquet_input(&r, in, "fuzz.checkpoint.parquet", NULL);
        df__delta_replay_clear(&r);
    }
    df_arena_destroy(&arena);
    return 0;
}
