/*
 * CRC-32 of page bytes (the gzip polynomial, as Parquet page headers carry
 * it), fast enough to verify every page a scan reads.
 *
 * On x86-64 with carry-less multiplication, the bytes are folded 64 at a
 * time: four 128-bit lanes are each multiplied (over GF(2)) by x^(512+-32)
 * mod P and XORed with the next 64 bytes, so the loop runs at memory speed;
 * the lanes are then folded into one, reduced to 64 and 32 bits and
 * finished with a Barrett reduction (the method of Intel's white paper
 * "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 * Instruction", for the bit-reflected polynomial 0x1DB710641).  The
 * constants are x^k mod P for the fold distances used.  Short inputs,
 * the last 0..15 bytes and other CPUs go through zlib's crc32.
 */
#include "parquet/codec.h"

#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CLMUL_PATH 1

/* One fold: the 128 bits of x advance by the distance the constant pair encodes. */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/*
 * Running (not inverted) CRC of len bytes, len >= 64 and a multiple of 16.
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_clmul(uint32_t crc, const uint8_t *p, size_t len) {
    const __m128i k512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);   /* fold by 4 lanes: x^(4*128+-32) */
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);   /* fold by 1 lane:  x^(128+-32)   */
    const __m128i k64 = _mm_set_epi64x(0, 0x163cd6124LL);                /* 64 -> 32 bits */
    const __m128i barrett = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL); /* mu (high), P' (low) */
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
    p += 64;
    len -= 64;
    for (; len >= 64; p += 64, len -= 64) {
        x0 = _mm_xor_si128(fold(x0, k512), _mm_loadu_si128((const __m128i *)(const void *)p));
        x1 = _mm_xor_si128(fold(x1, k512), _mm_loadu_si128((const __m128i *)(const void *)(p + 16)));
        x2 = _mm_xor_si128(fold(x2, k512), _mm_loadu_si128((const __m128i *)(const void *)(p + 32)));
        x3 = _mm_xor_si128(fold(x3, k512), _mm_loadu_si128((const __m128i *)(const void *)(p + 48)));
    }
    __m128i x = _mm_xor_si128(fold(x0, k128), x1);
    x = _mm_xor_si128(fold(x, k128), x2);
    x = _mm_xor_si128(fold(x, k128), x3);
    for (; len >= 16; p += 16, len -= 16)
        x = _mm_xor_si128(fold(x, k128), _mm_loadu_si128((const __m128i *)(const void *)p));
    /* 128 -> 64 bits. */
    x = _mm_xor_si128(_mm_clmulepi64_si128(x, k128, 0x10), _mm_srli_si128(x, 8));
    /* 64 -> 32 bits. */
    __m128i t = _mm_srli_si128(x, 4);
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), k64, 0x00), t);
    /* Barrett reduction: x mod P via the quotient estimate floor(x * mu). */
    t = x;
    x = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), barrett, 0x10);
    x = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), barrett, 0x00);
    x = _mm_xor_si128(x, t);
    return (uint32_t)_mm_extract_epi32(x, 1);
}
#endif

static uint32_t crc32_zlib(uint32_t crc, const uint8_t *data, size_t len) {
    uLong c = crc;
    while (len > 0) {
        uInt n = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
        c = crc32(c, data, n);
        data += n;
        len -= n;
    }
    return (uint32_t)c;
}

uint32_t df__parquet_crc32(const uint8_t *data, size_t len) {
#ifdef HAVE_CLMUL_PATH
    if (len >= 64 && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        size_t n = len & ~(size_t)15;
        uint32_t c = ~crc32_clmul(0xffffffffu, data, n);
        return crc32_zlib(c, data + n, len - n);
    }
#endif
    return crc32_zlib(0, data, len);
}
