/*
 * libFuzzer target for the job-file TOML reader (src/load/job_toml.c):
 * any bytes must either convert to JSON that our JSON parser accepts, or
 * fail with DF_ERR_CONFIG / DF_ERR_OUT_OF_MEMORY — never crash, hang or
 * leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "load/job_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *json = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df__job_toml_to_json((const char *)data, size, &json, &err);
    if (k == DF_OK) {
        /* What we emit must be valid JSON. */
        df_arena arena;
        df_arena_init(&arena, 4096, 0);
        df_json_value *v = NULL;
        if (df_json_parse(json, strlen(json), &arena, NULL, &v, NULL) != DF_OK) __builtin_trap();
        df_arena_destroy(&arena);
        df_free(json);
    } else if (k != DF_ERR_CONFIG && k != DF_ERR_OUT_OF_MEMORY) {
        __builtin_trap();
    }
    df_error_clear(&err);
    return 0;
}
