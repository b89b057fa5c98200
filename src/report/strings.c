/*
 * The model's string table: append-only, NUL-terminated UTF-8 strings
 * addressed by 32-bit ids, with an optional open-addressing intern index.
 *
 * Strings come from untrusted traces (symbol names, annotation values), so
 * interning repairs them instead of failing: an invalid UTF-8 sequence or a
 * NUL byte becomes U+FFFD.  Everything the renderers print is therefore
 * valid UTF-8 without NULs, which the artifact reader also enforces.
 */
#include "report/report_int.h"

#include "report/utf8.h"

void df__report_strings_init(df_report_strings *s) { memset(s, 0, sizeof *s); }

void df__report_strings_free(df_report_strings *s) {
    df_free(s->blob);
    df_free(s->off);
    df_free(s->len);
    df_free(s->slots);
    memset(s, 0, sizeof *s);
}

void df__report_strings_seal(df_report_strings *s) {
    df_free(s->slots);
    s->slots = NULL;
    s->nslots = 0;
}

/* Makes room for one more id and `n` + 1 blob bytes.  False when out of memory or over the limits. */
static bool strings_reserve(df_report_strings *s, size_t n) {
    if (s->n == 0) {
        s->cap = 64;
        s->off = df_calloc(s->cap, sizeof *s->off);
        s->len = df_calloc(s->cap, sizeof *s->len);
        if (!s->off || !s->len) return false;
        s->n = 1;
    }
    if (s->n >= DF_REPORT_MAX_STRINGS || n >= DF_REPORT_MAX_STRING_BYTES ||
        s->blob_len + n + 1 > DF_REPORT_MAX_STRING_BYTES)
        return false;
    if (s->n == s->cap) {
        uint32_t cap = s->cap * 2;
        uint32_t *off = df_realloc(s->off, cap * sizeof *off);
        if (!off) return false;
        s->off = off;
        uint32_t *len = df_realloc(s->len, cap * sizeof *len);
        if (!len) return false;
        s->len = len;
        s->cap = cap;
    }
    return DF_ARRAY_RESERVE(s->blob, s->blob_cap, s->blob_len + n + 1, 4096, NULL) == DF_OK;
}

uint32_t df__report_strings_add(df_report_strings *s, const char *str, size_t n) {
    if (!strings_reserve(s, n)) return 0;
    uint32_t id = s->n++;
    s->off[id] = (uint32_t)s->blob_len;
    s->len[id] = (uint32_t)n;
    if (n) memcpy(s->blob + s->blob_len, str, n);
    s->blob[s->blob_len + n] = 0;
    s->blob_len += n + 1;
    return id;
}

static uint64_t str_hash(const char *str, size_t n) { return df_hash_bytes(str, n, 0x5eed5eedULL); }

/* Rebuilds the intern index with room for twice the strings.  False when out of memory. */
static bool index_grow(df_report_strings *s) {
    uint32_t nslots = s->nslots ? s->nslots * 2 : 1024;
    uint32_t *slots = df_calloc(nslots, sizeof *slots);
    if (!slots) return false;
    for (uint32_t id = 1; id < s->n; id++) {
        uint32_t i = (uint32_t)str_hash(s->blob + s->off[id], s->len[id]) & (nslots - 1);
        while (slots[i]) i = (i + 1) & (nslots - 1);
        slots[i] = id;
    }
    df_free(s->slots);
    s->slots = slots;
    s->nslots = nslots;
    return true;
}

/* Interns bytes already known to be valid UTF-8 without NULs. */
static uint32_t intern_clean(df_report_strings *s, const char *str, size_t n) {
    if ((s->n + 1) * 2 > s->nslots && !index_grow(s)) return 0;
    uint32_t i = (uint32_t)str_hash(str, n) & (s->nslots - 1);
    for (;; i = (i + 1) & (s->nslots - 1)) {
        uint32_t id = s->slots[i];
        if (!id) break;
        if (s->len[id] == n && memcmp(s->blob + s->off[id], str, n) == 0) return id;
    }
    uint32_t id = df__report_strings_add(s, str, n);
    if (id) s->slots[i] = id;
    return id;
}

uint32_t df__report_intern(df_report_strings *s, const char *str, size_t n) {
    if (n >= DF_REPORT_MAX_STRING_BYTES) return 0;
    if (df__report_utf8_clean((const uint8_t *)str, n)) return intern_clean(s, str, n);
    /* Repair: each invalid byte or NUL becomes U+FFFD (3 bytes). */
    size_t cap;
    if (df_mul_overflow_size(n, 3, &cap)) return 0;
    char *fixed = df_malloc(cap + 1);
    if (!fixed) return 0;
    size_t m = df__report_utf8_repair((const uint8_t *)str, n, (uint8_t *)fixed);
    uint32_t id = intern_clean(s, fixed, m);
    df_free(fixed);
    return id;
}
