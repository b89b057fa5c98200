/*
 * libFuzzer target for the TZif (time zone database) parser used to render
 * zoned timestamps: any input must either parse or fail cleanly, and a
 * parsed zone must answer offset queries across the whole time range
 * (including instants past the last transition, where the footer's POSIX
 * rule decides) without crashing.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/tzif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_tz *tz = NULL;
    if (df__tz_parse_tzif(data, size, &tz, NULL) != DF_OK) {
        if (tz) __builtin_trap();
        return 0;
    }
    static const int64_t probes[] = {INT64_MIN / 4, -2208988800LL, 0, 1704164645LL, 2147483647LL, 4118126400LL,
                                     253402300799LL, INT64_MAX / 4};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        int32_t off = df__tz_offset_at(tz, probes[i]);
        if (off < -26 * 3600 || off > 27 * 3600) __builtin_trap();
    }
    df__tz_free(tz);
    return 0;
}
