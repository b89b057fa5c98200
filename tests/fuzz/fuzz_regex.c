/*
 * libFuzzer target for the regular expression engine (src/exec/regex_*.c).
 * Input: one flags byte (DF__RX_* bits), the pattern up to the first NUL,
 * the subject after it.  Every pattern must compile or fail with a regex
 * error and nothing allocated; a compiled one must match without crashing,
 * the match-only and capturing searches must agree, and every capture
 * must lie inside the subject with group 0 spanning the others.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "exec/regex_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint32_t flags = data[0] & 0x3F;
    const uint8_t *pat = data + 1;
    size_t rest = size - 1;
    const uint8_t *nul = memchr(pat, 0, rest);
    size_t pn = nul ? (size_t)(nul - pat) : rest;
    const uint8_t *subj = nul ? nul + 1 : pat + pn;
    size_t sn = nul ? rest - pn - 1 : 0;
    if (pn > 4096 || sn > 4096) return 0;
    df_error err = {0};
    df__regex *re = NULL;
    df_errkind k = df__regex_new(pat, pn, flags, &re, &err);
    if (k != DF_OK) {
        if (re) __builtin_trap();
        if (k != DF_ERR_OUT_OF_MEMORY &&
            (k != DF_ERR_EXECUTION || (err.subkind != DF_ERR_REGEX_SYNTAX && err.subkind != DF_ERR_REGEX_TOO_BIG)))
            __builtin_trap();
        df_error_clear(&err);
        return 0;
    }
    /* Huge programs are correct but slow to run: the size limit, not matching, is what they test. */
    if (re->ninst <= 20000) {
        df__rx_scratch sc = {0};
        int64_t slots[64];
        uint32_t ns = 2 * re->ngroups < 64 ? 2 * re->ngroups : 64;
        size_t froms[2] = {0, sn / 2};
        for (int f = 0; f < 2; f++) {
            bool a = false, b = false;
            if (df__regex_find(re, &sc, subj, sn, froms[f], slots, ns, NULL, &a, &err) != DF_OK ||
                df__regex_find(re, &sc, subj, sn, froms[f], NULL, 0, NULL, &b, &err) != DF_OK) {
                df_error_clear(&err);
                break;
            }
            if (a != b) __builtin_trap();
            if (!a) continue;
            if (slots[0] < (int64_t)froms[f] || slots[1] < slots[0] || slots[1] > (int64_t)sn) __builtin_trap();
            for (uint32_t g = 1; g < ns / 2; g++) {
                if (slots[2 * g] < 0) continue;
                if (slots[2 * g] < slots[0] || slots[2 * g + 1] > slots[1] || slots[2 * g + 1] < slots[2 * g])
                    __builtin_trap();
            }
        }
        df__rx_scratch_free(&sc);
    }
    df__regex_free(re);
    return 0;
}
