/*
 * libFuzzer target for logging-filter validation (text from users and the
 * DELTAFUNNEL_LOG environment variable): any text must be accepted or
 * rejected with DF_ERR_INVALID_LOGGING_FILTER, never crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deltafunnel/deltafunnel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df_log_filter_validate(text, &err);
    if (k != DF_OK && k != DF_ERR_INVALID_LOGGING_FILTER) __builtin_trap();
    df_error_clear(&err);
    free(text);
    return 0;
}
