/*
 * A minimal protobuf wire-format encoder for the Perfetto trace writer.
 *
 * Messages are written straight into a growable byte buffer.  A nested
 * message is opened with pb_open() (writes its tag, remembers where its
 * body starts) and closed with pb_close(), which inserts the minimal varint
 * length in front of the body (one memmove of the body; bodies are small).
 * Repeated scalar fields are written unpacked, one tag per element, as
 * Perfetto's decoder requires.  Any allocation failure makes the writer
 * sticky-failed: later calls do nothing and pb->failed stays true.
 */
#ifndef DF_DIAG_PROTOBUF_H
#define DF_DIAG_PROTOBUF_H

#include "common/common.h"

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2 };

typedef struct pb_writer {
    df_buf buf;  /* encoded bytes */
    bool failed; /* an append failed (out of memory / over the limit) */
} pb_writer;

static inline void pb_init(pb_writer *pb, size_t limit) {
    df_buf_init(&pb->buf, limit);
    pb->failed = false;
}

static inline void pb_reset(pb_writer *pb) { pb->buf.len = 0; }

static inline size_t pb_varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline void pb_raw_varint(pb_writer *pb, uint64_t v) {
    if (pb->failed || df_buf_reserve(&pb->buf, 10, NULL) != DF_OK) {
        pb->failed = true;
        return;
    }
    unsigned char *p = (unsigned char *)pb->buf.data + pb->buf.len;
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    pb->buf.len += n;
}

static inline void pb_tag(pb_writer *pb, uint32_t field, uint32_t wire) {
    pb_raw_varint(pb, ((uint64_t)field << 3) | wire);
}

/* uint32/uint64/enum/bool fields. */
static inline void pb_uint(pb_writer *pb, uint32_t field, uint64_t v) {
    pb_tag(pb, field, PB_VARINT);
    pb_raw_varint(pb, v);
}

/* int32/int64 fields (negative values take ten bytes, as protobuf specifies). */
static inline void pb_int(pb_writer *pb, uint32_t field, int64_t v) { pb_uint(pb, field, (uint64_t)v); }

static inline void pb_fixed64(pb_writer *pb, uint32_t field, uint64_t v) {
    pb_tag(pb, field, PB_FIXED64);
    if (pb->failed || df_buf_reserve(&pb->buf, 8, NULL) != DF_OK) {
        pb->failed = true;
        return;
    }
    df_store_le64(pb->buf.data + pb->buf.len, v);
    pb->buf.len += 8;
}

static inline void pb_bytes(pb_writer *pb, uint32_t field, const void *data, size_t n) {
    pb_tag(pb, field, PB_LEN);
    pb_raw_varint(pb, n);
    if (pb->failed || df_buf_append(&pb->buf, data, n, NULL) != DF_OK) pb->failed = true;
}

static inline void pb_string(pb_writer *pb, uint32_t field, const char *s) {
    pb_bytes(pb, field, s, strlen(s));
}

/* Opens a nested message; returns the offset its body starts at. */
static inline size_t pb_open(pb_writer *pb, uint32_t field) {
    pb_tag(pb, field, PB_LEN);
    return pb->buf.len;
}

/* Closes the nested message opened at `start`: inserts its length. */
static inline void pb_close(pb_writer *pb, size_t start) {
    if (pb->failed) return;
    size_t body = pb->buf.len - start;
    size_t n = pb_varint_len(body);
    if (df_buf_reserve(&pb->buf, n, NULL) != DF_OK) {
        pb->failed = true;
        return;
    }
    unsigned char *p = (unsigned char *)pb->buf.data + start;
    memmove(p + n, p, body);
    uint64_t v = body;
    for (size_t i = 0; i < n; i++, v >>= 7) p[i] = (unsigned char)((v & 0x7f) | (i + 1 < n ? 0x80 : 0));
    pb->buf.len += n;
}

#endif
