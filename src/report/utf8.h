/*
 * The report module's UTF-8 policy on top of the common decoder: names
 * from untrusted traces must be valid and free of NUL bytes, and interning
 * repairs those that are not.
 */
#ifndef DF_REPORT_UTF8_H
#define DF_REPORT_UTF8_H

#include "common/common.h"

/* True if s[0..n) is valid UTF-8 without NUL bytes. */
static inline bool df__report_utf8_clean(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] >= 0x01 && s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = s[i] ? df_utf8_next(s + i, n - i, &cp) : 0;
        if (!k) return false;
        i += k;
    }
    return true;
}

/*
 * Copies s[0..n) to out (room for 3n bytes) replacing every byte that does
 * not start a valid sequence, and every NUL, by U+FFFD.  Returns the length.
 */
static inline size_t df__report_utf8_repair(const uint8_t *s, size_t n, uint8_t *out) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = s[i] ? df_utf8_next(s + i, n - i, &cp) : 0;
        if (k) {
            for (size_t j = 0; j < k; j++) out[o++] = s[i + j];
            i += k;
        } else {
            out[o++] = 0xEF, out[o++] = 0xBF, out[o++] = 0xBD;
            i++;
        }
    }
    return o;
}

#endif
