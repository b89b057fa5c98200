/*
 * Group table: maps multi-column keys to dense group ids, the core of hash
 * aggregation and hash joins.
 *
 * Keys live column-wise by group id (fixed-width values, or offsets + bytes
 * for strings) so that output key columns come straight out of it.  The
 * index is open addressing with linear probing over 64-bit slots holding
 * the upper hash bits and the group id, so most probes that miss never
 * touch key memory; the table doubles at half load.  Hashes are computed a
 * batch at a time, column by column, with loops specialised by width.
 *
 * Dense keys: a single integer key whose values span a small range (ids,
 * codes, dates) also gets a direct map from value - min to group id, so
 * lookups skip hashing collisions and key compares entirely.  The map is
 * kept in step with the index while every key seen fits the range bound
 * (see dense_fit); the first batch that does not fit drops it for good.
 *
 * NULLs: a NULL key value hashes to a constant and equals another NULL
 * (GROUP BY semantics); joins drop rows with NULL keys themselves unless
 * the key is NULL-safe (IS NOT DISTINCT FROM).
 */
#ifndef DF_EXEC_HASH_TABLE_H
#define DF_EXEC_HASH_TABLE_H

#include "exec/exec_int.h"

typedef struct df_keycol {
    df_type *type;          /* key type (reference) */
    int32_t width;          /* bytes per value (fixed-width types), 0 for strings/bool */
    bool varlen;            /* utf8/binary */
    bool is_bool;           /* stored one byte per value */
    uint8_t *vals;          /* fixed-width values or bool bytes [cap * width] */
    uint8_t *valid;         /* one byte per group: 1 valid, 0 NULL */
    int64_t *offs;          /* varlen: offsets [cap + 1] */
    uint8_t *data;          /* varlen: bytes */
    int64_t dlen, dcap;     /* varlen: bytes used / allocated */
} df_keycol;

typedef struct df_group_table {
    int32_t nkeys;          /* key columns */
    df_keycol *cols;        /* per key column */
    uint64_t *hashes;       /* per group: its hash */
    int64_t ngroups;        /* groups so far */
    int64_t cap;            /* groups the key storage holds */
    uint64_t *slots;        /* index: 0 = empty, else (hash >> 32) << 32 | (gid + 1) */
    uint64_t mask;          /* slots - 1 */
    df_exec_ctx *ctx;       /* memory accounting (may be NULL) */
    int64_t reserved;       /* bytes accounted */
    int8_t dense_state;     /* dense map: 0 not yet decided, 1 active, -1 not used */
    int32_t *dense;         /* dense map: group of key dense_min + i, -1 none */
    int64_t dense_min;      /* dense map: smallest key covered */
    int64_t dense_span;     /* dense map: keys covered */
    int64_t dense_bytes;    /* dense map: bytes accounted for it */
} df_group_table;

/* Prepares an empty table for keys of these types. */
df_errkind df__gt_init(df_group_table *gt, int32_t nkeys, df_type *const *types, df_exec_ctx *ctx, df_error *err);
void df__gt_free(df_group_table *gt);

/*
 * Float keys group and join as SQL compares them: -0.0 is the same key as
 * +0.0.  Replaces each key vector (an owned reference) of a float type
 * that holds a negative zero by a copy where it is +0.0; NaNs stay as they
 * are (one group per bit pattern, as DataFusion).
 */
df_errkind df__gt_canon_keys(df_vec **keys, int32_t nkeys, df_error *err);

/* Hashes rows 0..n-1 of the key vectors into hashes[]. */
void df__gt_hash(const df_group_table *gt, df_vec *const *keys, int64_t n, uint64_t *hashes);

/*
 * For each row i with (skip == NULL || !skip[i]) sets gids[i] to the row's
 * group, creating groups for new keys; skipped rows get -1.
 */
df_errkind df__gt_find_or_insert(df_group_table *gt, df_vec *const *keys, const uint64_t *hashes, int64_t n,
                                const uint8_t *skip, int32_t *gids, df_error *err);

/* False when df__gt_find ignores `hashes` (dense map): callers may skip df__gt_hash and pass NULL. */
bool df__gt_find_needs_hashes(const df_group_table *gt);

/* Lookup only: gids[i] = group or -1 (also -1 for skipped rows). */
void df__gt_find(const df_group_table *gt, df_vec *const *keys, const uint64_t *hashes, int64_t n,
                const uint8_t *skip, int32_t *gids);

/* Key column `col` of groups [from, to) as a vector of its type. */
df_errkind df__gt_key_vec(const df_group_table *gt, int32_t col, int64_t from, int64_t to, df_vec **out,
                         df_error *err);

#endif
