/*
 * Strict UTF-8 decoding for the report module (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), plus the repair used when
 * interning untrusted names.
 */
#ifndef DF_REPORT_UTF8_H
#define DF_REPORT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the code point at s[0..n) (n >= 1).  Returns its byte length and
 * sets *cp, or returns 0 when the bytes are not a valid sequence.
 */
static inline size_t df__report_utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* True if s[0..n) is valid UTF-8 without NUL bytes. */
static inline bool df__report_utf8_clean(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] >= 0x01 && s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = s[i] ? df__report_utf8_next(s + i, n - i, &cp) : 0;
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
        size_t k = s[i] ? df__report_utf8_next(s + i, n - i, &cp) : 0;
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
