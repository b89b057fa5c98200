/*
 * Snappy block decompression (the raw format Parquet pages use).
 *
 * Why our own: profiles of full scans showed half of the CPU time in the
 * system libsnappy, most of it in out-of-line memcpy calls it makes for
 * every short literal and match.  Data pages of numbers (small integers,
 * prices, timestamps) compress into a stream of tags of a few bytes each,
 * so the per-call cost dominated.  This decoder copies fixed 16-byte
 * blocks the compiler keeps inline whenever both buffers have room for
 * them, and falls back to exact, bounds-checked copies near the ends.
 *
 * Format: a varint with the uncompressed length, then tags.  The low two
 * bits of a tag byte select:
 *   00 literal: length - 1 in the upper six bits, or (60..63) in the 1..4
 *      little-endian bytes that follow; then the literal bytes;
 *   01 copy: length 4..11 in bits 2..4, offset bits 8..10 in bits 5..7
 *      and the low offset byte after the tag;
 *   10 copy: length 1..64 in the upper six bits, 16-bit offset after;
 *   11 copy: length 1..64 in the upper six bits, 32-bit offset after.
 * A copy repeats `length` bytes starting `offset` bytes back in the output
 * (overlapping when offset < length, which repeats a pattern).
 *
 * Hostile input: every length is checked against the bytes left on both
 * sides, offsets against the bytes produced so far, and the stream must
 * produce exactly the expected size.  Nothing is read or written outside
 * [src, src + srclen) and [dst, dst + dstlen).
 */
#include "parquet/codec.h"

/* Input and output room (bytes) below which the fast loop hands over to the careful one. */
#define FAST_IN 21
#define FAST_OUT 80

/* Copies 16 bytes; callers guarantee both ranges are in bounds. */
static inline void copy16(uint8_t *d, const uint8_t *s) {
    uint8_t t[16];
    memcpy(t, s, 16);
    memcpy(d, t, 16);
}

/* Copies 8 bytes; callers guarantee both ranges are in bounds. */
static inline void copy8(uint8_t *d, const uint8_t *s) {
    uint64_t t;
    memcpy(&t, s, 8);
    memcpy(d, &t, 8);
}

/* Reads the preamble varint (at most 32 bits); false when it is malformed. */
static bool read_length(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (*p >= end) return false;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (v > UINT32_MAX) return false;
            *out = v;
            return true;
        }
    }
    return false;
}

bool df__parquet_snappy_length(const uint8_t *src, size_t srclen, uint64_t *out) {
    const uint8_t *p = src;
    return read_length(&p, src + srclen, out);
}

/*
 * Repeats `len` bytes from `offset` back (offset >= 1, already checked
 * against the output produced).  `room` says whether 64 + 16 bytes past op
 * are inside the output, so whole blocks may be written past the copy's
 * end (they are overwritten by what follows).
 */
static inline void copy_match(uint8_t *op, size_t offset, size_t len, bool room) {
    const uint8_t *from = op - offset;
    if (room && offset >= 16) {
        /* Each 16-byte block reads bytes written before it: no overlap inside a block. */
        for (size_t i = 0; i < len; i += 16) copy16(op + i, from + i);
        return;
    }
    if (room && offset >= 8) {
        for (size_t i = 0; i < len; i += 8) copy8(op + i, from + i);
        return;
    }
    /* Short offsets repeat a pattern: byte by byte (lengths are at most 64). */
    for (size_t i = 0; i < len; i++) op[i] = from[i];
}

/*
 * Decodes one tag with every length checked against both ends; false on
 * malformed input.  Used near the ends of the buffers and for long literals.
 */
static bool careful_tag(const uint8_t **ipp, const uint8_t *iend, uint8_t **opp, uint8_t *dst, uint8_t *oend) {
    const uint8_t *ip = *ipp;
    uint8_t *op = *opp;
    uint8_t tag = *ip++;
    size_t len, offset;
    /* Room for fixed-size blocks (up to 64 bytes past op, rounded up to 16). */
    bool oroom = (size_t)(oend - op) >= FAST_OUT;
    switch (tag & 3) {
    case 0:
        len = (size_t)(tag >> 2) + 1;
        if (len > 60) {
            size_t nb = len - 60;   /* 1..4 length bytes */
            if ((size_t)(iend - ip) < nb) return false;
            uint64_t l = 0;
            for (size_t i = 0; i < nb; i++) l |= (uint64_t)ip[i] << (8 * i);
            ip += nb;
            len = (size_t)l + 1;
        }
        if (len > (size_t)(iend - ip) || len > (size_t)(oend - op)) return false;
        if (len <= 64 && oroom && (size_t)(iend - ip) >= 64) {
            for (size_t i = 0; i < len; i += 16) copy16(op + i, ip + i);
        } else {
            memcpy(op, ip, len);
        }
        *ipp = ip + len;
        *opp = op + len;
        return true;
    case 1:
        if (ip >= iend) return false;
        len = 4 + ((tag >> 2) & 7);
        offset = ((size_t)(tag >> 5) << 8) | *ip++;
        break;
    case 2:
        if ((size_t)(iend - ip) < 2) return false;
        len = (size_t)(tag >> 2) + 1;
        offset = (size_t)ip[0] | (size_t)ip[1] << 8;
        ip += 2;
        break;
    default:
        if ((size_t)(iend - ip) < 4) return false;
        len = (size_t)(tag >> 2) + 1;
        offset = (size_t)df_load_le32(ip);
        ip += 4;
        break;
    }
    if (offset == 0 || offset > (size_t)(op - dst) || len > (size_t)(oend - op)) return false;
    copy_match(op, offset, len, oroom);
    *ipp = ip;
    *opp = op + len;
    return true;
}

bool df__parquet_snappy_decompress(const uint8_t *src, size_t srclen, uint8_t *dst, size_t dstlen) {
    const uint8_t *ip = src, *iend = src + srclen;
    uint64_t expect;
    if (!read_length(&ip, iend, &expect) || expect != dstlen) return false;
    uint8_t *op = dst, *oend = dst + dstlen;
    while (ip < iend) {
        /*
         * Fast path, while at least FAST_IN input and FAST_OUT output bytes
         * are left: a tag's operands (at most 4 bytes), a short literal's
         * 16-byte block and a match's blocks (at most 64 bytes, rounded up
         * to 16) then fit without further checks, so a tag costs one test of
         * its offset.  Long literals and the ends take careful_tag.
         */
        uint8_t tag = *ip;
        bool long_literal = (tag & 3) == 0 && tag >= (16 << 2);   /* more than 16 bytes */
        if ((size_t)(iend - ip) < FAST_IN || (size_t)(oend - op) < FAST_OUT || long_literal) {
            if (!careful_tag(&ip, iend, &op, dst, oend)) return false;
            continue;
        }
        ip++;
        size_t len, offset;
        switch (tag & 3) {
        case 0:
            len = (size_t)(tag >> 2) + 1;
            copy16(op, ip);
            ip += len;
            op += len;
            continue;
        case 1:
            len = 4 + ((tag >> 2) & 7);
            offset = ((size_t)(tag >> 5) << 8) | *ip++;
            break;
        case 2:
            len = (size_t)(tag >> 2) + 1;
            offset = (size_t)ip[0] | (size_t)ip[1] << 8;
            ip += 2;
            break;
        default:
            len = (size_t)(tag >> 2) + 1;
            offset = (size_t)df_load_le32(ip);
            ip += 4;
            break;
        }
        if (offset - 1 >= (size_t)(op - dst)) return false;   /* offset 0 wraps around */
        copy_match(op, offset, len, true);
        op += len;
    }
    return op == oend;
}
