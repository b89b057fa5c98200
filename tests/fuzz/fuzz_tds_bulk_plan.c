/*
 * libFuzzer target for the row plans of the bulk decoder (the loopback
 * peer's discard mode, src/mssql/bulk_decode.c): a BULK_LOAD message is
 * decoded row by row and through the plan; both must give the same rows
 * and the same error kind and text for any input.
 */
#include <stddef.h>
#include <stdint.h>

#include "mssql/tds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t r1 = 0, r2 = 0;
    df_error e1 = {0}, e2 = {0};
    df_errkind k1 = df__tds_bulk_decode(data, size, -1, &r1, &e1);
    df_errkind k2 = df__tds_bulk_decode_planned(data, size, -1, &r2, &e2);
    if (k1 != k2 || strcmp(e1.message, e2.message) != 0) __builtin_trap();
    if (k1 == DF_OK && r1 != r2) __builtin_trap();
    df_error_clear(&e1);
    df_error_clear(&e2);
    return 0;
}
