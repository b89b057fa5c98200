/*
 * The message scrambler of the "errors by kind, not by message text" tests.
 *
 * With it on (df_test_scramble_messages(true)), every message text df_error
 * records reads differently: ROT13 between two '~' marks, so a prefix, a
 * keyword or a whole sentence that some caller still matched would no longer
 * match, and a kind, phase or diagnostics code that depended on wording
 * would change.  df_test_unscramble undoes it, nested layers included (a
 * message quoted inside another one: each '~' toggles ROT13), so a test can
 * also check that a message built from several layers has the same shape as
 * in the unscrambled run (every step named once, nothing rewritten twice).
 * '~' survives the message escaping of the session layer.
 */
#ifndef DF_SCRAMBLE_H
#define DF_SCRAMBLE_H

#include <stdbool.h>
#include <string.h>

#include "common/common.h"

static inline char df_test_rot13(char c) {
    if (c >= 'a' && c <= 'z') return (char)('a' + (c - 'a' + 13) % 26);
    if (c >= 'A' && c <= 'Z') return (char)('A' + (c - 'A' + 13) % 26);
    return c;
}

/* The df__error_message_scrambler: "text" becomes "~grkg~" (cut to fit `size`). */
static inline void df_test_scramble(char *text, size_t size) {
    if (size < 3) return;
    size_t n = strlen(text);
    if (n > size - 3) n = size - 3;
    memmove(text + 1, text, n);
    text[0] = '~';
    for (size_t i = 1; i <= n; i++) text[i] = df_test_rot13(text[i]);
    text[n + 1] = '~';
    text[n + 2] = '\0';
}

/* Undoes df_test_scramble, every layer: the marks go, text between an odd number of them is rotated back. */
static inline void df_test_unscramble(const char *in, char *out, size_t size) {
    bool rotated = false;
    size_t o = 0;
    for (; *in && o + 1 < size; in++) {
        if (*in == '~') {
            rotated = !rotated;
            continue;
        }
        out[o++] = rotated ? df_test_rot13(*in) : *in;
    }
    if (size) out[o] = '\0';
}

static inline void df_test_scramble_messages(bool on) { df__error_set_message_scrambler(on ? df_test_scramble : NULL); }

#endif
