/*
 * The growth step behind DF_ARRAY_RESERVE (common.h): the room check is
 * inline at every call site, this is reached only when the array must grow.
 */
#include "common/common.h"

df_errkind df__array_grow(void *items_addr, size_t *cap, size_t need, size_t elem, size_t first, size_t max,
                          bool zero, df_error *err) {
    if (need > max)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "an array of %zu elements exceeds its limit of %zu", need,
                            max);
    size_t old = *cap;
    size_t c = old ? old : DF_MAX(first, (size_t)1);
    while (c < need) c = c > max / 2 ? max : c * 2;
    if (c > max) c = max;
    size_t bytes;
    if (df_mul_overflow_size(c, elem, &bytes)) {
        /* Doubling went past what memory can address: ask for exactly what is needed. */
        c = need;
        if (df_mul_overflow_size(c, elem, &bytes))
            return df_error_set(err, DF_ERR_OUT_OF_MEMORY, "an array of %zu elements of %zu bytes does not fit in memory",
                                need, elem);
    }
    void *items;
    memcpy(&items, items_addr, sizeof items);
    void *grown = df_realloc(items, bytes);
    if (!grown) return DF_OOM(err);
    if (zero) memset((unsigned char *)grown + old * elem, 0, bytes - old * elem);
    memcpy(items_addr, &grown, sizeof grown);
    *cap = c;
    return DF_OK;
}
