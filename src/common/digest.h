/*
 * Cryptographic digests behind md5(), sha224() ... sha512() and digest():
 * MD5 (RFC 1321), SHA-224/256/384/512 (FIPS 180-4), BLAKE2s-256 and
 * BLAKE2b-512 (RFC 7693, unkeyed) and BLAKE3 (256-bit hash mode).
 */
#ifndef DF_COMMON_DIGEST_H
#define DF_COMMON_DIGEST_H

#include <stddef.h>
#include <stdint.h>

typedef enum df_digest_algo {
    DF_DIGEST_MD5,
    DF_DIGEST_SHA224,
    DF_DIGEST_SHA256,
    DF_DIGEST_SHA384,
    DF_DIGEST_SHA512,
    DF_DIGEST_BLAKE2S,
    DF_DIGEST_BLAKE2B,
    DF_DIGEST_BLAKE3,
} df_digest_algo;

#define DF_DIGEST_MAX_LEN 64

/* The algorithm named name[0..n) (ASCII case-insensitive), or -1. */
int df_digest_from_name(const char *name, size_t n);
/* The digest's length in bytes. */
size_t df_digest_len(df_digest_algo algo);
/* The digest of p[0..n) into out[df_digest_len(algo)]. */
void df_digest(df_digest_algo algo, const void *p, size_t n, uint8_t *out);

#endif
