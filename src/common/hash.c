/*
 * Non-cryptographic hashes: a fast 64-bit mixer over 8-byte words for hash
 * tables, and FNV-1a for stable identifiers (Perfetto track ids).
 */
#include "common/common.h"

uint64_t df_hash_bytes(const void *data, size_t n, uint64_t seed) {
    const uint8_t *p = data;
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
    while (n >= 8) {
        h = df_hash_combine(h, df_load_le64(p));
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t tail = 0;
        memcpy(&tail, p, n);
        h = df_hash_combine(h, tail ^ ((uint64_t)n << 56));
    }
    return df_hash_u64(h);
}

uint64_t df_fnv1a64(const void *data, size_t n) {
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
