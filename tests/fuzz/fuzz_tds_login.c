/*
 * libFuzzer target for what a TDS server parses before authentication
 * (src/mssql/server_parse.c, used by the loopback peer): the first byte
 * selects PRELOGIN option tables or LOGIN7 (fixed part, every offset and
 * length, password de-obfuscation, FeatureExt chain); the rest is the
 * message.  Must parse or fail cleanly; the password is always wiped.
 */
#include <stddef.h>
#include <stdint.h>

#include "mssql/tds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    df_error err = {0};
    if (data[0] & 1) {
        uint8_t enc;
        if (df__tds_prelogin_client_parse(data + 1, size - 1, &enc, &err) != DF_OK && err.kind == DF_OK) __builtin_trap();
    } else {
        df__tds_login7 l;
        if (df__tds_login7_parse(data + 1, size - 1, &l, &err) == DF_OK) {
            if (strlen(l.user) >= sizeof l.user || strlen(l.password) >= sizeof l.password) __builtin_trap();
        } else if (err.kind == DF_OK) {
            __builtin_trap();
        }
        df__tds_login7_clear(&l);
    }
    df_error_clear(&err);
    return 0;
}
