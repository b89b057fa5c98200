/*
 * libFuzzer target: the /proc/self/maps parser of the symbolizer
 * (src/diag/proc_maps.c) over arbitrary bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "diag/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df__diag_map *maps = NULL;
    size_t n = 0;
    df_error err = {0};
    if (df__diag_maps_parse((const char *)data, size, &maps, &n, &err) != DF_OK) {
        if (maps != NULL || n != 0 || err.message[0] == '\0') __builtin_trap();
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (maps[i].end < maps[i].start || strlen(maps[i].path) > DF_DIAG_MAPS_MAX_PATH) __builtin_trap();
    }
    df__diag_maps_free(maps, n);
    return 0;
}
