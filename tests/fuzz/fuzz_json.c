/*
 * libFuzzer target for the JSON parser: any input must either parse or fail
 * with a clear error, never crash or leak.  Parsed documents are written
 * back with the writer and parsed again, which must succeed and give the
 * same text (the writer's output is canonical for a given DOM).
 */
#include <stddef.h>
#include <stdint.h>

#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_arena arena;
    df_arena_init(&arena, 4096, 64u << 20);
    df_json_value *v = NULL;
    df_json_options opts = {.max_bytes = 1u << 20, .max_depth = 48};
    if (df_json_parse((const char *)data, size, &arena, &opts, &v, NULL) == DF_OK) {
        df_buf first, second;
        df_buf_init(&first, 0);
        df_buf_init(&second, 0);
        df_json_writer w;
        df_json_writer_init(&w, &first, 0);
        df_json_write_value(&w, v);
        if (df_json_writer_finish(&w, NULL) == DF_OK) {
            df_json_value *again = NULL;
            if (df_json_parse(first.data, first.len, &arena, &opts, &again, NULL) != DF_OK) __builtin_trap();
            df_json_writer_init(&w, &second, 0);
            df_json_write_value(&w, again);
            if (df_json_writer_finish(&w, NULL) != DF_OK || second.len != first.len ||
                memcmp(first.data, second.data, first.len) != 0)
                __builtin_trap();
        }
        df_buf_free(&first);
        df_buf_free(&second);
    }
    df_arena_destroy(&arena);
    return 0;
}
