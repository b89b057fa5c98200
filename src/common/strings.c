/*
 * ASCII case folding, hex digits and UTF-8 validation and decoding (the
 * per-character UTF-8 primitives are inline in common.h).
 */
#include "common/common.h"

static inline int fold(int c) {
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

int df_ascii_casecmp(const char *a, const char *b) {
    for (;; a++, b++) {
        int ca = fold((unsigned char)*a), cb = fold((unsigned char)*b);
        if (ca != cb || !ca) return ca - cb;
    }
}

int df_ascii_ncasecmp(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int ca = fold((unsigned char)a[i]), cb = fold((unsigned char)b[i]);
        if (ca != cb || !ca) return ca - cb;
    }
    return 0;
}

void df_hex_encode(const void *data, size_t n, char *out, bool upper) {
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
}

bool df_hex_decode(const char *hex, size_t n, uint8_t *out) {
    if (n % 2) return false;
    for (size_t i = 0; i < n; i += 2) {
        int hi = df_hex_value(hex[i]), lo = df_hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

size_t df_utf8_valid_prefix(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* Fast path: eight ASCII bytes at a time. */
        if (i + 8 <= n) {
            uint64_t w = df_load_le64(s + i);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = df_utf8_next(s + i, n - i, &cp);
        if (!len) return i;
        i += len;
    }
    return n;
}

bool df_utf8_valid(const uint8_t *s, size_t n) {
    return df_utf8_valid_prefix(s, n) == n;
}

size_t df_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    size_t len = df_utf8_next(s, n, cp);
    if (len) return len;
    *cp = 0xFFFD;
    return 1;
}
