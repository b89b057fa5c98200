/*
 * libFuzzer target for deletion vectors: the input is decoded as a
 * serialised RoaringBitmapArray (magic + portable 64-bit bitmap), and also
 * read as Z85 text (an inline vector and a UUID path).  Decoded rows must
 * be strictly ascending.
 */
#include <stddef.h>
#include <stdint.h>

#include "delta/delta_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t *rows = NULL;
    int64_t n = 0;
    if (df__delta_dv_decode(data, size, 1 << 22, &rows, &n, NULL) == DF_OK) {
        for (int64_t i = 1; i < n; i++)
            if (rows[i] <= rows[i - 1]) __builtin_trap();
        df_free(rows);
    }
    /* The same bytes as Z85 text: an inline vector of every plausible size, and a 'u' path. */
    char *text = df_malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (strlen(text) == size) {
        size_t blen = size / 5 * 4;
        for (int32_t cut = 0; cut < 4 && (size_t)cut <= blen; cut++) {
            df__delta_dv dv = {'i', text, -1, (int32_t)(blen - (size_t)cut), -1};
            if (df__delta_dv_load(NULL, &dv, &rows, &n, NULL) == DF_OK) df_free(rows);
        }
        char *path = NULL;
        if (df__delta_dv_relative_path(text, &path, NULL) == DF_OK) df_free(path);
    }
    df_free(text);
    return 0;
}
