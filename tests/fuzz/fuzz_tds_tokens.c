/*
 * libFuzzer target for the client's token-stream parser (src/mssql/tokens.c):
 * any server response must parse into result batches or fail with a clear
 * error, never crash, over-read or leak.  Parsed batches are walked so their
 * buffers are touched.
 */
#include <stddef.h>
#include <stdint.h>

#include "mssql/mssql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_mssql_result *res = NULL;
    df_error err = {0};
    if (df_mssql_parse_response(data, size, &res, &err) == DF_OK) {
        for (int32_t s = 0; s < res->nsets; s++) {
            df_batch *b = res->sets[s];
            for (int32_t c = 0; c < b->ncols; c++)
                if (df_vec_validate(b->cols[c], true, NULL) != DF_OK) __builtin_trap();
        }
        df_mssql_result_free(res);
    } else if (res != NULL || err.kind == DF_OK) {
        __builtin_trap();
    }
    df_error_clear(&err);
    return 0;
}
