/*
 * Bookkeeping hash maps (common.h): uint64 keys and byte-string keys, both
 * open addressing with linear probing.  Tables double when an insert would
 * pass half load, so probe runs stay short and an empty slot always exists
 * (every probe loop ends).  Growth allocates the new table before touching
 * the old one, so a failed insert leaves the map as it was.
 */
#include "common/common.h"

#define FIRST_CAP 16

/* The table size for one more key, or 0 when it cannot be counted. */
static size_t grown_cap(size_t cap, size_t n) {
    if (n > SIZE_MAX / 4) return 0;
    size_t c = cap ? cap : FIRST_CAP;
    while ((n + 1) * 2 > c) c *= 2;
    return c;
}

/* ------------------------------------------------------------------------ */
/* uint64 -> uint64                                                          */

static df_u64map_slot *u64_slot(df_u64map_slot *slots, size_t cap, uint64_t key) {
    size_t i = (size_t)df_hash_u64(key) & (cap - 1);
    while (slots[i].key && slots[i].key != key) i = (i + 1) & (cap - 1);
    return &slots[i];
}

static df_errkind u64_reserve(df_u64map *m, df_error *err) {
    size_t in_table = m->n - m->has_zero;
    if (m->cap && (in_table + 1) * 2 <= m->cap) return DF_OK;
    size_t cap = grown_cap(m->cap, in_table);
    df_u64map_slot *slots = cap ? df_calloc(cap, sizeof *slots) : NULL;
    if (!slots) return DF_OOM(err);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) *u64_slot(slots, cap, m->slots[i].key) = m->slots[i];
    df_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return DF_OK;
}

void df_u64map_free(df_u64map *m) {
    df_free(m->slots);
    memset(m, 0, sizeof *m);
}

bool df_u64map_get(const df_u64map *m, uint64_t key, uint64_t *value) {
    const uint64_t *found = NULL;
    if (key == 0) {
        if (m->has_zero) found = &m->zero_value;
    } else if (m->cap) {
        const df_u64map_slot *s = u64_slot(m->slots, m->cap, key);
        if (s->key) found = &s->value;
    }
    if (found && value) *value = *found;
    return found != NULL;
}

df_errkind df_u64map_upsert(df_u64map *m, uint64_t key, uint64_t **value, bool *added, df_error *err) {
    if (key == 0) {
        *added = !m->has_zero;
        if (*added) {
            m->has_zero = true;
            m->zero_value = 0;
            m->n++;
        }
        *value = &m->zero_value;
        return DF_OK;
    }
    if (m->cap) {
        df_u64map_slot *s = u64_slot(m->slots, m->cap, key);
        if (s->key) {
            *added = false;
            *value = &s->value;
            return DF_OK;
        }
    }
    DF_TRY(u64_reserve(m, err));
    df_u64map_slot *s = u64_slot(m->slots, m->cap, key);
    *s = (df_u64map_slot){key, 0};
    m->n++;
    *added = true;
    *value = &s->value;
    return DF_OK;
}

df_errkind df_u64map_put(df_u64map *m, uint64_t key, uint64_t value, df_error *err) {
    uint64_t *slot;
    bool added;
    DF_TRY(df_u64map_upsert(m, key, &slot, &added, err));
    *slot = value;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* byte string -> uint64                                                     */

static uint64_t str_hash(const void *key, size_t len) {
    return df_hash_bytes(key, len, 0x5eed) | 1;   /* never 0, which marks empty slots */
}

/* The slot holding the key, or the empty slot where it belongs. */
static df_strmap_slot *str_slot(const df_strmap *m, df_strmap_slot *slots, size_t cap, const void *key, size_t len,
                                uint64_t h) {
    size_t i = (size_t)h & (cap - 1);
    for (;; i = (i + 1) & (cap - 1)) {
        df_strmap_slot *s = &slots[i];
        /* len == 0: the key buffer may still be NULL (only empty keys so far). */
        if (!s->hash || (s->hash == h && s->len == len && (len == 0 || memcmp(m->keys + s->off, key, len) == 0)))
            return s;
    }
}

static df_errkind str_reserve(df_strmap *m, df_error *err) {
    if (m->cap && (m->n + 1) * 2 <= m->cap) return DF_OK;
    size_t cap = grown_cap(m->cap, m->n);
    df_strmap_slot *slots = cap ? df_calloc(cap, sizeof *slots) : NULL;
    if (!slots) return DF_OOM(err);
    /* Keys are distinct, so rehashing only needs the first empty slot. */
    for (size_t i = 0; i < m->cap; i++) {
        const df_strmap_slot *s = &m->slots[i];
        if (!s->hash) continue;
        size_t j = (size_t)s->hash & (cap - 1);
        while (slots[j].hash) j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    df_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return DF_OK;
}

void df_strmap_free(df_strmap *m) {
    df_free(m->slots);
    df_free(m->keys);
    memset(m, 0, sizeof *m);
}

bool df_strmap_get(const df_strmap *m, const void *key, size_t len, uint64_t *value) {
    if (!m->cap) return false;
    const df_strmap_slot *s = str_slot(m, m->slots, m->cap, key, len, str_hash(key, len));
    if (!s->hash) return false;
    if (value) *value = s->value;
    return true;
}

df_errkind df_strmap_upsert(df_strmap *m, const void *key, size_t len, uint64_t **value, bool *added, df_error *err) {
    uint64_t h = str_hash(key, len);
    if (m->cap) {
        df_strmap_slot *s = str_slot(m, m->slots, m->cap, key, len, h);
        if (s->hash) {
            *added = false;
            *value = &s->value;
            return DF_OK;
        }
    }
    size_t keys_need;
    if (df_add_overflow_size(m->keys_len, len, &keys_need)) return DF_OOM(err);
    DF_TRY(DF_ARRAY_RESERVE(m->keys, m->keys_cap, keys_need, 256, err));
    DF_TRY(str_reserve(m, err));
    if (len) memcpy(m->keys + m->keys_len, key, len);
    df_strmap_slot *s = str_slot(m, m->slots, m->cap, key, len, h);
    *s = (df_strmap_slot){h, m->keys_len, len, 0};
    m->keys_len += len;
    m->n++;
    *added = true;
    *value = &s->value;
    return DF_OK;
}
