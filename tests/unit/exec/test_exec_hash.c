/*
 * Group table tests: group ids must form a bijection with the distinct keys
 * (NULL being one key), lookups must agree with inserts and miss unknown
 * keys, across the generic, single fixed-width and dense-map paths and
 * across batches that widen or break the dense range.
 */
#include "df_test.h"

#include "exec/hash_table.h"

#define NROWS 3000

/* An int vector of type t (width 1..8) from values; NULL where nulls[i]. */
static df_vec *int_vec(df_type *t, const int64_t *vals, const bool *nulls, int64_t n) {
    df_error err = {0};
    df_vec *v = NULL;
    DF_ASSERT_OK(df_vec_new(t, n, 0, &v, &err), &err);
    int32_t w = df_type_width(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = (uint64_t)vals[i];
        memcpy(v->values->data + i * w, &x, (size_t)w); /* little-endian truncation */
    }
    if (nulls) {
        DF_ASSERT_OK(df_vec_ensure_validity(v, n, &err), &err);
        for (int64_t i = 0; i < n; i++)
            if (nulls[i]) df_bit_clear(v->validity->data, i);
    }
    df_vec_set_length(v, n);
    return v;
}

/* The key a row stands for: the value truncated/sign-extended to the type, or a NULL marker. */
static int64_t norm(df_type *t, int64_t x, bool null) {
    if (null) return INT64_MIN; /* tests never use INT64_MIN as a value together with NULLs */
    switch (t->id) {
    case DF_TYPE_INT8: return (int8_t)x;
    case DF_TYPE_INT32: return (int32_t)x;
    case DF_TYPE_UINT16: return (uint16_t)x;
    default: return x;
    }
}

/*
 * Inserts batches of keys and checks: equal keys share a group, different
 * keys differ, group count = distinct keys; then looks up every key and a
 * few absent ones.
 */
static void check_int_keys(df_type *t, int64_t nb, const int64_t *const *vals, const bool *const *nulls,
                           const int64_t *absent, int64_t nabsent) {
    df_error err = {0};
    df_group_table gt;
    DF_ASSERT_OK(df__gt_init(&gt, 1, &t, NULL, &err), &err);
    static int64_t seen_key[NROWS * 4];
    static int32_t seen_gid[NROWS * 4];
    int64_t nseen = 0;
    uint64_t h[NROWS];
    int32_t gids[NROWS];
    for (int64_t b = 0; b < nb; b++) {
        df_vec *v = int_vec(t, vals[b], nulls[b], NROWS);
        df__gt_hash(&gt, &v, NROWS, h);
        DF_ASSERT_OK(df__gt_find_or_insert(&gt, &v, h, NROWS, NULL, gids, &err), &err);
        for (int64_t i = 0; i < NROWS; i++) {
            int64_t key = norm(t, vals[b][i], nulls[b] && nulls[b][i]);
            int64_t j = 0;
            while (j < nseen && seen_key[j] != key) j++;
            if (j == nseen) {
                for (int64_t q = 0; q < nseen; q++) DF_ASSERT(seen_gid[q] != gids[i]);
                seen_key[nseen] = key;
                seen_gid[nseen++] = gids[i];
            } else {
                DF_ASSERT_EQ_INT(seen_gid[j], gids[i]);
            }
        }
        DF_ASSERT_EQ_INT(gt.ngroups, nseen);
        /* Lookups agree with the inserts. */
        int32_t found[NROWS];
        df__gt_find(&gt, &v, h, NROWS, NULL, found);
        for (int64_t i = 0; i < NROWS; i++) DF_ASSERT_EQ_INT(found[i], gids[i]);
        df_vec_release(v);
    }
    if (nabsent) {
        df_vec *v = int_vec(t, absent, NULL, nabsent);
        uint8_t skip[8] = {0};
        df__gt_hash(&gt, &v, nabsent, h);
        df__gt_find(&gt, &v, h, nabsent, skip, gids);
        for (int64_t i = 0; i < nabsent; i++) DF_ASSERT_EQ_INT(gids[i], -1);
        df_vec_release(v);
    }
    df__gt_free(&gt);
}

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

DF_TEST(group_ids_small_range_int_keys) {
    /* Dense path: keys in [-500, 500) with NULLs, then a batch that widens the range a little. */
    static int64_t a[NROWS], b[NROWS];
    static bool na[NROWS], nb_[NROWS];
    for (int i = 0; i < NROWS; i++) {
        a[i] = (int64_t)(rnd() % 1000) - 500;
        na[i] = rnd() % 13 == 0;
        b[i] = (int64_t)(rnd() % 3000) - 1500;
        nb_[i] = false;
    }
    const int64_t *vals[] = {a, b};
    const bool *nulls[] = {na, nb_};
    int64_t absent[] = {-100000, 100000, 1500, -1501, INT64_MAX, INT64_MIN + 1};
    check_int_keys(df_type_int64(), 2, vals, nulls, absent, 6);
    check_int_keys(df_type_int32(), 2, vals, nulls, absent, 4);
}

DF_TEST(group_ids_wide_range_int_keys) {
    /* First batch dense, second spans the whole int64 range (drops the dense map), third dense again. */
    static int64_t a[NROWS], b[NROWS], c[NROWS];
    static bool none[NROWS];
    for (int i = 0; i < NROWS; i++) {
        a[i] = (int64_t)(rnd() % 200);
        b[i] = (int64_t)rnd();
        c[i] = (int64_t)(rnd() % 300);
    }
    b[0] = INT64_MAX;
    b[1] = INT64_MIN + 1;
    const int64_t *vals[] = {a, b, c};
    const bool *nulls[] = {none, none, none};
    int64_t absent[] = {-1, 100000, 12345678901LL};
    check_int_keys(df_type_int64(), 3, vals, nulls, absent, 3);
}

DF_TEST(group_ids_narrow_and_unsigned_keys) {
    static int64_t a[NROWS];
    static bool na[NROWS];
    for (int i = 0; i < NROWS; i++) {
        a[i] = (int64_t)(rnd() % 256) - 128;
        na[i] = i % 7 == 0;
    }
    const int64_t *vals[] = {a};
    const bool *nulls[] = {na};
    check_int_keys(df_type_int8(), 1, vals, nulls, NULL, 0);
    for (int i = 0; i < NROWS; i++) a[i] = (int64_t)(rnd() % 65536);
    int64_t absent[] = {65535 + 1}; /* truncates to 0 in a uint16 vector: present or not, just must not crash */
    (void)absent;
    check_int_keys(df_type_uint16(), 1, vals, nulls, NULL, 0);
}

/* Keys (s) or (s, k): string keys alone take the single-string path, with an int the generic one. */
static void check_string_keys(int32_t nkeys) {
    df_error err = {0};
    df_type *types[2] = {df_type_utf8(), df_type_int32()};
    df_group_table gt;
    DF_ASSERT_OK(df__gt_init(&gt, nkeys, types, NULL, &err), &err);
    /* Keys (s, k) with s in 20 strings (some NULL) and k in 0..4: at most 21 * 5 groups. */
    df_vec *s = NULL, *k = NULL;
    DF_ASSERT_OK(df_vec_new(df_type_utf8(), NROWS, NROWS * 16, &s, &err), &err);
    DF_ASSERT_OK(df_vec_new(df_type_int32(), NROWS, 0, &k, &err), &err);
    DF_ASSERT_OK(df_vec_ensure_validity(s, NROWS, &err), &err);
    int32_t *off = (int32_t *)(void *)s->values->data;
    int32_t pos = 0;
    static int sid[NROWS], kv[NROWS];
    off[0] = 0;
    for (int i = 0; i < NROWS; i++) {
        sid[i] = (int)(rnd() % 21);
        kv[i] = nkeys == 2 ? (int)(rnd() % 5) : 0;
        if (sid[i] == 20) {
            df_bit_clear(s->validity->data, i);
        } else {
            /* Lengths 2..11 so both the one-word and two-word hash paths run. */
            pos += snprintf((char *)s->data->data + pos, 16, "w%.*d", sid[i] % 10 + 1, sid[i]);
        }
        off[i + 1] = pos;
        ((int32_t *)(void *)k->values->data)[i] = kv[i];
    }
    df_vec_set_length(s, NROWS);
    df_vec_set_length(k, NROWS);
    df_vec *keys[2] = {s, k};
    uint64_t h[NROWS];
    int32_t gids[NROWS], found[NROWS];
    df__gt_hash(&gt, keys, NROWS, h);
    DF_ASSERT_OK(df__gt_find_or_insert(&gt, keys, h, NROWS, NULL, gids, &err), &err);
    int32_t byk[21][5];
    memset(byk, 0xFF, sizeof byk);
    int64_t distinct = 0;
    for (int i = 0; i < NROWS; i++) {
        int32_t *slot = &byk[sid[i]][kv[i]];
        if (*slot < 0) {
            *slot = gids[i];
            distinct++;
        }
        DF_ASSERT_EQ_INT(*slot, gids[i]);
    }
    DF_ASSERT_EQ_INT(gt.ngroups, distinct);
    df__gt_find(&gt, keys, h, NROWS, NULL, found);
    for (int i = 0; i < NROWS; i++) DF_ASSERT_EQ_INT(found[i], gids[i]);
    /* Stored keys come back as vectors in group order. */
    df_vec *kvec = NULL;
    DF_ASSERT_OK(df__gt_key_vec(&gt, 0, 0, gt.ngroups, &kvec, &err), &err);
    for (int i = 0; i < NROWS; i++) {
        DF_ASSERT(df_vec_is_valid(kvec, gids[i]) == (sid[i] != 20));
        if (sid[i] == 20) continue;
        int32_t len;
        const uint8_t *p = df_vec_bytes(kvec, gids[i], &len);
        char want[16];
        snprintf(want, sizeof want, "w%.*d", sid[i] % 10 + 1, sid[i]);
        DF_ASSERT(len == (int32_t)strlen(want) && memcmp(p, want, (size_t)len) == 0);
    }
    df_vec_release(kvec);
    df_vec_release(s);
    df_vec_release(k);
    df__gt_free(&gt);
}

DF_TEST(group_ids_string_keys) { check_string_keys(1); }
DF_TEST(group_ids_multi_column_string_keys) { check_string_keys(2); }
