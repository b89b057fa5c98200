/*
 * Cryptographic digests, written from their specifications: MD5 (RFC 1321),
 * SHA-2 (FIPS 180-4), BLAKE2 (RFC 7693) and BLAKE3 (the BLAKE3 paper's
 * hash mode).  One-shot functions over a whole buffer: the callers hash
 * one value at a time.
 *
 * The SHA-2 constants are the fractional parts of the square roots (IVs)
 * and cube roots (round constants) of the first primes, as FIPS 180-4
 * defines them; BLAKE2 and BLAKE3 reuse the SHA-2 IVs.
 */
#include <string.h>

#include "common/digest.h"

static const uint64_t K512[80] = {
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
    0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
    0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
    0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
    0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
    0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
    0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
    0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
    0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
    0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
    0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
    0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
    0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
    0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
    0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
    0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
    0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
    0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
    0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
    0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL,
};

static const uint64_t H64[16] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
    0xcbbb9d5dc1059ed8ULL, 0x629a292a367cd507ULL, 0x9159015a3070dd17ULL, 0x152fecd8f70e5939ULL,
    0x67332667ffc00b31ULL, 0x8eb44a8768581511ULL, 0xdb0c2e0d64f98fa7ULL, 0x47b5481dbefa4fa4ULL,
};

static inline uint32_t rotr32(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }
static inline uint64_t rotr64(uint64_t x, int r) { return (x >> r) | (x << (64 - r)); }
static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t load_be64(const uint8_t *p) { return (uint64_t)load_be32(p) << 32 | load_be32(p + 4); }
static inline uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t load_le64(const uint8_t *p) { return (uint64_t)load_le32(p) | (uint64_t)load_le32(p + 4) << 32; }
static void store_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * The Merkle-Damgard padding shared by MD5 and SHA-2: the message, 0x80,
 * zeros, then the bit length (len_bytes wide, big or little endian) so the
 * total is a multiple of the block size.  Calls block() per padded block.
 */
typedef void (*block_fn)(void *state, const uint8_t *blk);

static void md_pad(const uint8_t *p, size_t n, size_t bs, size_t len_bytes, int big, block_fn block, void *state) {
    size_t full = n / bs * bs;
    for (size_t off = 0; off < full; off += bs) block(state, p + off);
    uint8_t tail[256];
    size_t rest = n - full;
    memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    size_t total = rest + 1 + len_bytes <= bs ? bs : 2 * bs;
    memset(tail + rest + 1, 0, total - rest - 1);
    uint64_t bits = (uint64_t)n * 8; /* the high bits (n >= 2^61) are zero here */
    for (size_t j = 0; j < 8; j++) {
        uint8_t byte = (uint8_t)(bits >> (8 * j));
        if (big) tail[total - 1 - j] = byte;
        else tail[total - len_bytes + j] = byte;
    }
    for (size_t off = 0; off < total; off += bs) block(state, tail + off);
}

/* ------------------------------------------------------------------------ */
/* MD5                                                                       */

/* K[i] = floor(2^32 * |sin(i + 1)|) (RFC 1321 3.4), tabulated. */
static const uint32_t MD5_K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static void md5_block(void *state, const uint8_t *blk) {
    static const int S[16] = {7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21};
    uint32_t *h = state, w[16];
    for (int j = 0; j < 16; j++) w[j] = load_le32(blk + 4 * j);
    uint32_t A = h[0], B = h[1], C = h[2], D = h[3];
    for (int i = 0; i < 64; i++) {
        uint32_t F;
        int g;
        if (i < 16) F = (B & C) | (~B & D), g = i;
        else if (i < 32) F = (D & B) | (~D & C), g = (5 * i + 1) % 16;
        else if (i < 48) F = B ^ C ^ D, g = (3 * i + 5) % 16;
        else F = C ^ (B | ~D), g = (7 * i) % 16;
        uint32_t x = A + F + MD5_K[i] + w[g];
        A = D;
        D = C;
        C = B;
        B = B + rotl32(x, S[(i / 16) * 4 + i % 4]);
    }
    h[0] += A, h[1] += B, h[2] += C, h[3] += D;
}

static void md5(const uint8_t *p, size_t n, uint8_t *out) {
    uint32_t h[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    md_pad(p, n, 64, 8, 0, md5_block, h);
    for (int j = 0; j < 4; j++) store_le32(out + 4 * j, h[j]);
}

/* ------------------------------------------------------------------------ */
/* SHA-224 / SHA-256                                                         */

static void sha256_block(void *state, const uint8_t *blk) {
    uint32_t *h = state, w[64];
    for (int t = 0; t < 16; t++) w[t] = load_be32(blk + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + (uint32_t)(K512[t] >> 32) + w[t];
        uint32_t S0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha256(const uint8_t *p, size_t n, uint8_t *out, int is224) {
    uint32_t h[8];
    /* SHA-256: the high words of the first eight square roots; SHA-224: the low words of the next eight. */
    for (int i = 0; i < 8; i++) h[i] = is224 ? (uint32_t)H64[8 + i] : (uint32_t)(H64[i] >> 32);
    md_pad(p, n, 64, 8, 1, sha256_block, h);
    for (int i = 0; i < (is224 ? 7 : 8); i++)
        for (int b = 0; b < 4; b++) out[4 * i + b] = (uint8_t)(h[i] >> (24 - 8 * b));
}

/* ------------------------------------------------------------------------ */
/* SHA-384 / SHA-512                                                         */

static void sha512_block(void *state, const uint8_t *blk) {
    uint64_t *h = state, w[80];
    for (int t = 0; t < 16; t++) w[t] = load_be64(blk + 8 * t);
    for (int t = 16; t < 80; t++) {
        uint64_t s0 = rotr64(w[t - 15], 1) ^ rotr64(w[t - 15], 8) ^ (w[t - 15] >> 7);
        uint64_t s1 = rotr64(w[t - 2], 19) ^ rotr64(w[t - 2], 61) ^ (w[t - 2] >> 6);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint64_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 80; t++) {
        uint64_t S1 = rotr64(e, 14) ^ rotr64(e, 18) ^ rotr64(e, 41);
        uint64_t ch = (e & f) ^ (~e & g);
        uint64_t t1 = hh + S1 + ch + K512[t] + w[t];
        uint64_t S0 = rotr64(a, 28) ^ rotr64(a, 34) ^ rotr64(a, 39);
        uint64_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint64_t t2 = S0 + maj;
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha512(const uint8_t *p, size_t n, uint8_t *out, int is384) {
    uint64_t h[8];
    for (int i = 0; i < 8; i++) h[i] = H64[(is384 ? 8 : 0) + i];
    md_pad(p, n, 128, 16, 1, sha512_block, h);
    for (int i = 0; i < (is384 ? 6 : 8); i++)
        for (int b = 0; b < 8; b++) out[8 * i + b] = (uint8_t)(h[i] >> (56 - 8 * b));
}

/* ------------------------------------------------------------------------ */
/* BLAKE2s / BLAKE2b                                                         */

static const uint8_t SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

/* The G mixing function on words a, b, c, d of v with message words x, y (rotations r1..r4). */
#define G32(v, a, b, c, d, x, y, r1, r2, r3, r4) \
    do { \
        v[a] = v[a] + v[b] + (x); v[d] = rotr32(v[d] ^ v[a], r1); \
        v[c] = v[c] + v[d];       v[b] = rotr32(v[b] ^ v[c], r2); \
        v[a] = v[a] + v[b] + (y); v[d] = rotr32(v[d] ^ v[a], r3); \
        v[c] = v[c] + v[d];       v[b] = rotr32(v[b] ^ v[c], r4); \
    } while (0)
#define G64(v, a, b, c, d, x, y) \
    do { \
        v[a] = v[a] + v[b] + (x); v[d] = rotr64(v[d] ^ v[a], 32); \
        v[c] = v[c] + v[d];       v[b] = rotr64(v[b] ^ v[c], 24); \
        v[a] = v[a] + v[b] + (y); v[d] = rotr64(v[d] ^ v[a], 16); \
        v[c] = v[c] + v[d];       v[b] = rotr64(v[b] ^ v[c], 63); \
    } while (0)

static void blake2s_compress(uint32_t h[8], const uint8_t blk[64], uint64_t t, int last) {
    uint32_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load_le32(blk + 4 * i);
    for (int i = 0; i < 8; i++) v[i] = h[i], v[i + 8] = (uint32_t)(H64[i] >> 32);
    v[12] ^= (uint32_t)t;
    v[13] ^= (uint32_t)(t >> 32);
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 10; r++) {
        const uint8_t *s = SIGMA[r];
        G32(v, 0, 4, 8, 12, m[s[0]], m[s[1]], 16, 12, 8, 7);
        G32(v, 1, 5, 9, 13, m[s[2]], m[s[3]], 16, 12, 8, 7);
        G32(v, 2, 6, 10, 14, m[s[4]], m[s[5]], 16, 12, 8, 7);
        G32(v, 3, 7, 11, 15, m[s[6]], m[s[7]], 16, 12, 8, 7);
        G32(v, 0, 5, 10, 15, m[s[8]], m[s[9]], 16, 12, 8, 7);
        G32(v, 1, 6, 11, 12, m[s[10]], m[s[11]], 16, 12, 8, 7);
        G32(v, 2, 7, 8, 13, m[s[12]], m[s[13]], 16, 12, 8, 7);
        G32(v, 3, 4, 9, 14, m[s[14]], m[s[15]], 16, 12, 8, 7);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

static void blake2b_compress(uint64_t h[8], const uint8_t blk[128], uint64_t t, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load_le64(blk + 8 * i);
    for (int i = 0; i < 8; i++) v[i] = h[i], v[i + 8] = H64[i];
    v[12] ^= t; /* the counter's high word stays zero below 2^64 bytes */
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = SIGMA[r % 10];
        G64(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
        G64(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
        G64(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
        G64(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
        G64(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
        G64(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
        G64(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
        G64(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* Unkeyed BLAKE2s-256 (wide = 0) or BLAKE2b-512 (wide = 1). */
static void blake2(const uint8_t *p, size_t n, uint8_t *out, int wide) {
    size_t bs = wide ? 128 : 64, outlen = wide ? 64 : 32;
    uint32_t hs[8];
    uint64_t hb[8];
    for (int i = 0; i < 8; i++) hs[i] = (uint32_t)(H64[i] >> 32), hb[i] = H64[i];
    /* Parameter block: digest length, key length 0, fanout 1, depth 1. */
    hs[0] ^= 0x01010000u ^ (uint32_t)outlen;
    hb[0] ^= 0x01010000u ^ (uint64_t)outlen;
    size_t off = 0;
    while (n - off > bs) { /* every block but the last (which may be full) */
        if (wide) blake2b_compress(hb, p + off, (uint64_t)(off + bs), 0);
        else blake2s_compress(hs, p + off, (uint64_t)(off + bs), 0);
        off += bs;
    }
    uint8_t last[128] = {0};
    memcpy(last, p + off, n - off);
    if (wide) blake2b_compress(hb, last, (uint64_t)n, 1);
    else blake2s_compress(hs, last, (uint64_t)n, 1);
    for (size_t i = 0; i < outlen; i++)
        out[i] = wide ? (uint8_t)(hb[i / 8] >> (8 * (i % 8))) : (uint8_t)(hs[i / 4] >> (8 * (i % 4)));
}

/* ------------------------------------------------------------------------ */
/* BLAKE3                                                                    */

enum { B3_CHUNK_START = 1, B3_CHUNK_END = 2, B3_PARENT = 4, B3_ROOT = 8, B3_CHUNK = 1024 };

/* The compression function's first eight output words into cv. */
static void b3_compress(const uint32_t in_cv[8], const uint8_t blk[64], uint64_t counter, uint32_t blen,
                        uint32_t flags, uint32_t cv[8]) {
    static const uint8_t PERM[16] = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};
    uint32_t m[16], v[16], t[16];
    for (int i = 0; i < 16; i++) m[i] = load_le32(blk + 4 * i);
    for (int i = 0; i < 8; i++) v[i] = in_cv[i];
    for (int i = 0; i < 4; i++) v[8 + i] = (uint32_t)(H64[i] >> 32);
    v[12] = (uint32_t)counter;
    v[13] = (uint32_t)(counter >> 32);
    v[14] = blen;
    v[15] = flags;
    for (int r = 0; r < 7; r++) {
        G32(v, 0, 4, 8, 12, m[0], m[1], 16, 12, 8, 7);
        G32(v, 1, 5, 9, 13, m[2], m[3], 16, 12, 8, 7);
        G32(v, 2, 6, 10, 14, m[4], m[5], 16, 12, 8, 7);
        G32(v, 3, 7, 11, 15, m[6], m[7], 16, 12, 8, 7);
        G32(v, 0, 5, 10, 15, m[8], m[9], 16, 12, 8, 7);
        G32(v, 1, 6, 11, 12, m[10], m[11], 16, 12, 8, 7);
        G32(v, 2, 7, 8, 13, m[12], m[13], 16, 12, 8, 7);
        G32(v, 3, 4, 9, 14, m[14], m[15], 16, 12, 8, 7);
        for (int i = 0; i < 16; i++) t[i] = m[PERM[i]];
        memcpy(m, t, sizeof m);
    }
    for (int i = 0; i < 8; i++) cv[i] = v[i] ^ v[i + 8];
}

/* The chaining value of one chunk (at most 1024 bytes, chunk number idx); root adds ROOT to its last block. */
static void b3_chunk(const uint8_t *p, size_t n, uint64_t idx, int root, uint32_t cv[8]) {
    for (int i = 0; i < 8; i++) cv[i] = (uint32_t)(H64[i] >> 32);
    size_t off = 0;
    do {
        size_t len = n - off > 64 ? 64 : n - off;
        uint8_t blk[64] = {0};
        memcpy(blk, p + off, len);
        uint32_t flags = (off == 0 ? B3_CHUNK_START : 0) | (off + len == n ? B3_CHUNK_END : 0);
        if (root && off + len == n) flags |= B3_ROOT;
        b3_compress(cv, blk, idx, (uint32_t)len, flags, cv);
        off += len;
    } while (off < n);
}

/*
 * The chaining value of the subtree over p[0..n) whose first chunk is
 * number idx: the left subtree takes the largest power-of-two number of
 * whole chunks that leaves the right one non-empty.  Depth is log2 of the
 * chunk count (below 64).
 */
static void b3_tree(const uint8_t *p, size_t n, uint64_t idx, int root, uint32_t cv[8]) {
    if (n <= B3_CHUNK) {
        b3_chunk(p, n, idx, root, cv);
        return;
    }
    size_t left = B3_CHUNK;
    while (left * 2 < n) left *= 2;
    uint32_t l[8], r[8];
    b3_tree(p, left, idx, 0, l);
    b3_tree(p + left, n - left, idx + left / B3_CHUNK, 0, r);
    uint8_t blk[64];
    for (int i = 0; i < 8; i++) store_le32(blk + 4 * i, l[i]), store_le32(blk + 32 + 4 * i, r[i]);
    uint32_t key[8];
    for (int i = 0; i < 8; i++) key[i] = (uint32_t)(H64[i] >> 32);
    b3_compress(key, blk, 0, 64, B3_PARENT | (root ? B3_ROOT : 0), cv);
}

static void blake3(const uint8_t *p, size_t n, uint8_t *out) {
    uint32_t cv[8];
    b3_tree(p, n, 0, 1, cv);
    for (int i = 0; i < 8; i++) store_le32(out + 4 * i, cv[i]);
}

/* ------------------------------------------------------------------------ */

int df_digest_from_name(const char *name, size_t n) {
    static const char *const names[] = {"md5", "sha224", "sha256", "sha384", "sha512", "blake2s", "blake2b", "blake3"};
    for (size_t a = 0; a < sizeof names / sizeof names[0]; a++) {
        if (strlen(names[a]) != n) continue;
        size_t i = 0;
        while (i < n && (name[i] | 0x20) == names[a][i]) i++;
        if (i == n) return (int)a;
    }
    return -1;
}

size_t df_digest_len(df_digest_algo algo) {
    static const size_t len[] = {16, 28, 32, 48, 64, 32, 64, 32};
    return len[algo];
}

void df_digest(df_digest_algo algo, const void *data, size_t n, uint8_t *out) {
    const uint8_t *p = n ? data : (const uint8_t *)"";
    switch (algo) {
    case DF_DIGEST_MD5: md5(p, n, out); break;
    case DF_DIGEST_SHA224: sha256(p, n, out, 1); break;
    case DF_DIGEST_SHA256: sha256(p, n, out, 0); break;
    case DF_DIGEST_SHA384: sha512(p, n, out, 1); break;
    case DF_DIGEST_SHA512: sha512(p, n, out, 0); break;
    case DF_DIGEST_BLAKE2S: blake2(p, n, out, 0); break;
    case DF_DIGEST_BLAKE2B: blake2(p, n, out, 1); break;
    case DF_DIGEST_BLAKE3: blake3(p, n, out); break;
    }
}
