/*
 * libFuzzer target for the server side of bulk loads (src/mssql/bulk_decode.c,
 * used by the loopback peer): a BULK_LOAD message of COLMETADATA, ROW tokens
 * and DONE is decoded value by value, including PLP chunk assembly; any
 * input must decode or fail cleanly.
 */
#include <stddef.h>
#include <stdint.h>

#include "mssql/tds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t rows = 0;
    df_error err = {0};
    if (df__tds_bulk_decode(data, size, -1, &rows, &err) != DF_OK && err.kind == DF_OK) __builtin_trap();
    if (rows < 0) __builtin_trap();
    df_error_clear(&err);
    return 0;
}
