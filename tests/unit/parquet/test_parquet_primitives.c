/*
 * Unit tests for the Parquet building blocks: the Thrift compact decoder and
 * encoder, bit unpacking, the RLE / bit-packed hybrid, DELTA_BINARY_PACKED
 * streams and the page codecs.
 */
#include "df_test.h"

#include <stdlib.h>

#include "parquet/codec.h"
#include "parquet/column_reader.h"
#include "parquet/metadata.h"
#include "parquet/rle.h"
#include "parquet/thrift.h"

#include "parquet_test_util.h"

/* ---- thrift ------------------------------------------------------------------------- */

DF_TEST(thrift_roundtrip_of_every_field_kind) {
    df_error e_ = {0}, *err = &e_;
    df_buf b;
    df_buf_init(&b, 0);
    pq_tenc e;
    df__parquet_tenc_init(&e, &b, err);
    df__parquet_tenc_struct_begin(&e);
    df__parquet_tenc_i32(&e, 1, -123456);
    df__parquet_tenc_i64(&e, 2, INT64_MIN);
    df__parquet_tenc_bool(&e, 3, true);
    df__parquet_tenc_string(&e, 4, "hello");
    df__parquet_tenc_list(&e, 40, TC_I32, 20);   /* long jump in id and a long list header */
    for (int i = 0; i < 20; i++) df__parquet_tenc_i32_elem(&e, i - 10);
    df__parquet_tenc_struct_field(&e, 41);
    df__parquet_tenc_i32(&e, 1, 7);
    df__parquet_tenc_struct_end(&e);
    df__parquet_tenc_i32(&e, 5, 99);   /* decreasing id: explicit id form */
    df__parquet_tenc_struct_end(&e);
    DF_ASSERT_EQ_INT(e.kind, DF_OK);

    pq_tdec d;
    df__parquet_tdec_init(&d, b.data, b.len, "test", err);
    DF_ASSERT(df__parquet_tdec_struct_begin(&d));
    int16_t last = 0;
    int t, id, seen = 0;
    while ((id = df__parquet_tdec_field(&d, &last, &t)) >= 0) {
        seen++;
        if (id == 1) {
            int32_t v;
            DF_ASSERT(df__parquet_tdec_i32(&d, t, &v));
            DF_ASSERT_EQ_INT(v, -123456);
        } else if (id == 2) {
            int64_t v;
            DF_ASSERT(df__parquet_tdec_int(&d, t, &v));
            DF_ASSERT(v == INT64_MIN);
        } else if (id == 3) {
            bool v;
            DF_ASSERT(df__parquet_tdec_bool(&d, t, &v));
            DF_ASSERT(v);
        } else if (id == 4) {
            pq_bytes s;
            DF_ASSERT(df__parquet_tdec_binary(&d, t, &s));
            DF_ASSERT_EQ_INT(s.len, 5);
            DF_ASSERT(memcmp(s.ptr, "hello", 5) == 0);
        } else if (id == 40) {
            int et;
            uint32_t n;
            DF_ASSERT(df__parquet_tdec_list(&d, t, &et, &n));
            DF_ASSERT_EQ_INT(n, 20);
            for (uint32_t i = 0; i < n; i++) {
                int32_t v;
                DF_ASSERT(df__parquet_tdec_i32(&d, et, &v));
                DF_ASSERT_EQ_INT(v, (int)i - 10);
            }
        } else if (id == 5) {
            int32_t v;
            DF_ASSERT(df__parquet_tdec_i32(&d, t, &v));
            DF_ASSERT_EQ_INT(v, 99);
        } else {
            DF_ASSERT_EQ_INT(id, 41);
            df__parquet_tdec_skip(&d, t);   /* unknown struct: skipped whole */
        }
    }
    df__parquet_tdec_struct_end(&d);
    DF_ASSERT_EQ_INT(d.kind, DF_OK);
    DF_ASSERT_EQ_INT(seen, 7);
    DF_ASSERT_EQ_UINT(df__parquet_tdec_pos(&d), b.len);
    df_buf_free(&b);
}

DF_TEST(thrift_skips_unknown_fields_of_every_type) {
    /* struct { 1: bool, 2: byte, 3: i16, 4: i32, 5: i64, 6: double, 7: binary, 8: list<i32>,
     *          9: set<binary>, 10: map<i32,binary>, 11: struct{1: list<bool>}, 12: empty map } */
    static const uint8_t msg[] = {
        0x11,                                     /* field 1 bool true */
        0x13, 0x7f,                               /* field 2 byte */
        0x14, 0x04,                               /* field 3 i16 = 2 */
        0x15, 0x81, 0x01,                         /* field 4 i32 */
        0x16, 0xff, 0xff, 0xff, 0xff, 0x0f,       /* field 5 i64 */
        0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,       /* field 6 double 1.0 */
        0x18, 0x03, 'a', 'b', 'c',                /* field 7 binary */
        0x19, 0x25, 0x02, 0x04,                   /* field 8 list<i32> of 2 */
        0x1a, 0x18, 0x01, 'x',                    /* field 9 set<binary> of 1 */
        0x1b, 0x02, 0x58, 0x02, 0x01, 'k', 0x04, 0x00, /* field 10 map<i32,binary> of 2 */
        0x1c, 0x19, 0x21, 0x01, 0x00, 0x00,       /* field 11 struct { list<bool> [true, false] } */
        0x1b, 0x00,                               /* field 12 empty map */
        0x00,
    };
    pq_tdec d;
    df__parquet_tdec_init(&d, msg, sizeof msg, "test", NULL);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_OK);
    DF_ASSERT_EQ_UINT(df__parquet_tdec_pos(&d), sizeof msg);
}

DF_TEST(thrift_rejects_hostile_input) {
    df_error e_ = {0}, *err = &e_;
    pq_tdec d;
    /* Nesting deeper than the limit: 40 nested structs. */
    uint8_t deep[100];
    for (int i = 0; i < 40; i++) deep[i] = 0x1c;
    memset(deep + 40, 0, 60);
    df__parquet_tdec_init(&d, deep, sizeof deep, "test", err);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    DF_ASSERT(strstr(err->message, "nesting") != NULL);
    /* Binary longer than the data. */
    static const uint8_t longbin[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0x07, 'a'};
    df__parquet_tdec_init(&d, longbin, sizeof longbin, "test", err);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    DF_ASSERT(d.truncated);
    /* A list claiming 2^32 elements. */
    static const uint8_t biglist[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
    df__parquet_tdec_init(&d, biglist, sizeof biglist, "test", err);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    /* A varint longer than 10 bytes. */
    static const uint8_t longvar[] = {0x15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    df__parquet_tdec_init(&d, longvar, sizeof longvar, "test", err);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    /* Unknown type nibble and i32 out of range. */
    static const uint8_t badtype[] = {0x1d, 0x00};
    df__parquet_tdec_init(&d, badtype, sizeof badtype, "test", err);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    static const uint8_t bigi32[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0x7f};
    df__parquet_tdec_init(&d, bigi32, sizeof bigi32, "test", err);
    DF_ASSERT(df__parquet_tdec_struct_begin(&d));
    int16_t last = 0;
    int t;
    DF_ASSERT_EQ_INT(df__parquet_tdec_field(&d, &last, &t), 1);
    int32_t v;
    DF_ASSERT(!df__parquet_tdec_i32(&d, t, &v));
    DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    /* Every prefix of a valid message fails cleanly. */
    static const uint8_t ok[] = {0x15, 0x04, 0x18, 0x02, 'h', 'i', 0x19, 0x35, 0x02, 0x04, 0x06, 0x00};
    for (size_t n = 0; n < sizeof ok; n++) {
        df__parquet_tdec_init(&d, ok, n, "test", err);
        df__parquet_tdec_skip(&d, TC_STRUCT);
        DF_ASSERT_EQ_INT(d.kind, DF_ERR_PARQUET_FORMAT);
    }
    df__parquet_tdec_init(&d, ok, sizeof ok, "test", err);
    df__parquet_tdec_skip(&d, TC_STRUCT);
    DF_ASSERT_EQ_INT(d.kind, DF_OK);
}

DF_TEST(page_header_roundtrip_and_truncation) {
    df_error e_ = {0}, *err = &e_;
    pq_page_header h;
    memset(&h, 0, sizeof h);
    h.type = PQ_PAGE_DATA;
    h.uncompressed_size = 1000;
    h.compressed_size = 600;
    h.has_crc = true;
    h.crc = 0xdeadbeef;
    h.has_data = true;
    h.data.num_values = 321;
    h.data.encoding = PQ_ENC_RLE_DICTIONARY;
    h.data.def_encoding = PQ_ENC_RLE;
    h.data.rep_encoding = PQ_ENC_BIT_PACKED;
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__parquet_write_page_header(&h, &b, err), err);
    pq_page_header r;
    size_t used;
    bool truncated;
    DF_ASSERT_OK(df__parquet_parse_page_header((const uint8_t *)b.data, b.len, &r, &used, &truncated, err), err);
    DF_ASSERT_EQ_UINT(used, b.len);
    DF_ASSERT_EQ_INT(r.type, PQ_PAGE_DATA);
    DF_ASSERT_EQ_INT(r.compressed_size, 600);
    DF_ASSERT(r.has_crc);
    DF_ASSERT_EQ_UINT(r.crc, 0xdeadbeefu);
    DF_ASSERT_EQ_INT(r.data.num_values, 321);
    DF_ASSERT_EQ_INT(r.data.rep_encoding, PQ_ENC_BIT_PACKED);
    for (size_t n = 0; n < b.len; n++) {
        DF_ASSERT_KIND(df__parquet_parse_page_header((const uint8_t *)b.data, n, &r, &used, &truncated, err),
                       DF_ERR_PARQUET_FORMAT);
        DF_ASSERT(truncated);
    }
    /* Negative sizes are refused. */
    h.compressed_size = -5;
    df_buf_reset(&b);
    DF_ASSERT_OK(df__parquet_write_page_header(&h, &b, err), err);
    DF_ASSERT_KIND(df__parquet_parse_page_header((const uint8_t *)b.data, b.len, &r, &used, &truncated, err),
                   DF_ERR_PARQUET_FORMAT);
    DF_ASSERT(!truncated);
    df_buf_free(&b);
}

/* ---- bit unpacking and the hybrid ---------------------------------------------------------- */

DF_TEST(unpack_every_width_matches_reference) {
    for (int w = 0; w <= 64; w++) {
        for (size_t n = 0; n < 70; n += (n < 20 ? 1 : 7)) {
            uint64_t v[80];
            uint64_t mask = w == 64 ? ~0ull : ((1ull << w) - 1);
            for (size_t i = 0; i < n; i++) v[i] = rnd() & mask;
            uint8_t packed[80 * 8 + 16] = {0};
            ref_pack(v, n, w, packed);
            size_t bytes = (n * (size_t)w + 7) / 8;
            uint64_t out64[80];
            df__parquet_unpack64(packed, bytes, w, out64, n);
            for (size_t i = 0; i < n; i++) DF_ASSERT_EQ_UINT(out64[i], v[i]);
            if (w <= 32) {
                uint32_t out32[80];
                df__parquet_unpack32(packed, bytes, w, out32, n);
                for (size_t i = 0; i < n; i++) DF_ASSERT_EQ_UINT(out32[i], v[i]);
            }
        }
    }
}

DF_TEST(rle_hybrid_roundtrip_all_widths) {
    df_error e_ = {0}, *err = &e_;
    for (int w = 0; w <= 32; w++) {
        uint32_t vals[3000];
        uint32_t mask = w == 32 ? 0xffffffffu : ((1u << w) - 1);
        size_t n = 0;
        /* Mixed runs: repeats, random stretches, short runs. */
        while (n < 2900) {
            size_t len = 1 + rnd() % 40;
            bool rep = rnd() % 2;
            uint32_t x = (uint32_t)rnd() & mask;
            for (size_t i = 0; i < len && n < 2900; i++) vals[n++] = rep ? x : (uint32_t)rnd() & mask;
        }
        df_buf b;
        df_buf_init(&b, 0);
        DF_ASSERT_OK(df__parquet_rle_encode(vals, n, w, &b, err), err);
        pq_rle r;
        df__parquet_rle_init(&r, (const uint8_t *)b.data, b.len, w);
        uint32_t out[3000];
        size_t got = 0;
        /* Odd chunk sizes exercise partial groups. */
        while (got < n) {
            size_t r37 = 1 + rnd() % 37;
            size_t want = DF_MIN(n - got, r37);
            size_t k = df__parquet_rle_get_u32(&r, out + got, want);
            DF_ASSERT_EQ_UINT(k, want);
            got += k;
        }
        for (size_t i = 0; i < n; i++) DF_ASSERT_EQ_UINT(out[i], vals[i]);
        /* i16 and skip paths. */
        if (w <= 15) {
            df__parquet_rle_init(&r, (const uint8_t *)b.data, b.len, w);
            DF_ASSERT_EQ_UINT(df__parquet_rle_skip(&r, 101), 101);
            int16_t o16[3000];
            DF_ASSERT_EQ_UINT(df__parquet_rle_get_i16(&r, o16, n - 101), n - 101);
            for (size_t i = 101; i < n; i++) DF_ASSERT_EQ_INT(o16[i - 101], vals[i]);
        }
        if (w == 1) {
            df__parquet_rle_init(&r, (const uint8_t *)b.data, b.len, 1);
            uint8_t bits[400] = {0};
            DF_ASSERT_EQ_UINT(df__parquet_rle_get_bits(&r, bits, 3, n), n);
            for (size_t i = 0; i < n; i++) DF_ASSERT_EQ_INT((bits[(i + 3) / 8] >> ((i + 3) % 8)) & 1, vals[i]);
        }
        df_buf_free(&b);
    }
}

DF_TEST(rle_truncated_and_malformed_runs) {
    pq_rle r;
    uint32_t out[64];
    /* A bit-packed run of 2 groups at width 3 (6 bytes) cut to 4 bytes: 10 complete values. */
    static const uint8_t cut[] = {0x05, 0xff, 0xff, 0xff, 0xff};
    df__parquet_rle_init(&r, cut, sizeof cut, 3);
    DF_ASSERT_EQ_UINT(df__parquet_rle_get_u32(&r, out, 16), 10);
    for (int i = 0; i < 10; i++) DF_ASSERT_EQ_UINT(out[i], 7);
    /* A repeated run whose value bytes are missing. */
    static const uint8_t novalue[] = {0x08};
    df__parquet_rle_init(&r, novalue, sizeof novalue, 9);
    DF_ASSERT_EQ_UINT(df__parquet_rle_get_u32(&r, out, 4), 0);
    DF_ASSERT(r.failed);
    /* A header varint that never ends. */
    static const uint8_t endless[] = {0x80, 0x80, 0x80};
    df__parquet_rle_init(&r, endless, sizeof endless, 1);
    DF_ASSERT_EQ_UINT(df__parquet_rle_get_u32(&r, out, 4), 0);
    DF_ASSERT(r.failed);
    /* Width 0: a bit-packed run yields zeros without reading data. */
    static const uint8_t zero[] = {0x03};
    df__parquet_rle_init(&r, zero, sizeof zero, 0);
    DF_ASSERT_EQ_UINT(df__parquet_rle_get_u32(&r, out, 8), 8);
    DF_ASSERT_EQ_UINT(out[7], 0);
}

DF_TEST(bitpacked_msb_levels) {
    /* Values 0..7 at width 3, MSB first: 000 001 010 011 100 101 110 111. */
    static const uint8_t data[] = {0x05, 0x39, 0x77};
    int16_t out[8];
    df__parquet_bitpacked_msb_levels(data, 3, 0, out, 8);
    for (int i = 0; i < 8; i++) DF_ASSERT_EQ_INT(out[i], i);
    df__parquet_bitpacked_msb_levels(data, 3, 5, out, 3);   /* from the middle */
    for (int i = 0; i < 3; i++) DF_ASSERT_EQ_INT(out[i], 5 + i);
}

DF_TEST(copy_bits_at_every_alignment) {
    uint8_t src[40], dst[40], ref[40];
    for (int i = 0; i < 40; i++) src[i] = (uint8_t)rnd();
    for (int soff = 0; soff < 16; soff++)
        for (int doff = 0; doff < 16; doff++)
            for (int n = 0; n < 200; n += 13) {
                for (int i = 0; i < 40; i++) dst[i] = ref[i] = (uint8_t)(i * 37);
                for (int i = 0; i < n; i++) {
                    int s = (src[(soff + i) / 8] >> ((soff + i) % 8)) & 1;
                    if (s) ref[(doff + i) / 8] |= (uint8_t)(1 << ((doff + i) % 8));
                    else ref[(doff + i) / 8] &= (uint8_t) ~(1 << ((doff + i) % 8));
                }
                df__parquet_copy_bits(dst, doff, src, soff, n);
                DF_ASSERT(memcmp(dst, ref, 40) == 0);
            }
}

/* ---- DELTA_BINARY_PACKED ------------------------------------------------------------------- */

DF_TEST(delta_binary_packed_roundtrip_and_end) {
    df_error e_ = {0}, *err = &e_;
    int64_t v[1000];
    /* Sorted, random, extremes (64-bit wide deltas) and constant stretches (zero widths). */
    for (int i = 0; i < 1000; i++) {
        if (i < 300) v[i] = i * 3;
        else if (i < 500) v[i] = (int64_t)rnd();
        else if (i < 520) v[i] = i % 2 ? INT64_MAX : INT64_MIN;
        else v[i] = 42;
    }
    for (size_t n = 0; n <= 1000; n += n < 10 ? 1 : 97) {
        df_buf b;
        df_buf_init(&b, 0);
        dbp_encode(v, n, &b);
        df_buf_append(&b, "TAIL", 4, NULL);
        pq_dbp d;
        memset(&d, 0, sizeof d);
        DF_ASSERT_OK(df__parquet_dbp_init(&d, (const uint8_t *)b.data, b.len, false, 1000, err), err);
        uint64_t out[1000];
        for (size_t got = 0; got < n;) {
            uint64_t r50 = 1 + rnd() % 50;
            uint64_t m = DF_MIN(n - got, r50);
            DF_ASSERT_OK(df__parquet_dbp_get(&d, out + got, m, err), err);
            got += m;
        }
        for (size_t i = 0; i < n; i++) DF_ASSERT_EQ_INT((int64_t)out[i], v[i]);
        DF_ASSERT(memcmp(d.p, "TAIL", 4) == 0);   /* the stream ends right after its last miniblock */
        DF_ASSERT_KIND(df__parquet_dbp_get(&d, out, 1, err), DF_ERR_PARQUET_FORMAT);
        df__parquet_dbp_clear(&d);
        df_buf_free(&b);
    }
}

DF_TEST(delta_binary_packed_rejects_bad_headers) {
    df_error e_ = {0}, *err = &e_;
    pq_dbp d;
    memset(&d, 0, sizeof d);
    static const uint8_t bad_block[] = {0x64, 0x04, 0x02, 0x00};      /* block 100: not a multiple of 128 */
    DF_ASSERT_KIND(df__parquet_dbp_init(&d, bad_block, sizeof bad_block, false, 10, err), DF_ERR_PARQUET_FORMAT);
    static const uint8_t zero_mini[] = {0x80, 0x01, 0x00, 0x02, 0x00};  /* 0 miniblocks */
    DF_ASSERT_KIND(df__parquet_dbp_init(&d, zero_mini, sizeof zero_mini, false, 10, err), DF_ERR_PARQUET_FORMAT);
    static const uint8_t too_many[] = {0x80, 0x01, 0x04, 0x64, 0x00};   /* 100 values in a 10-value page */
    DF_ASSERT_KIND(df__parquet_dbp_init(&d, too_many, sizeof too_many, false, 10, err), DF_ERR_PARQUET_FORMAT);
    static const uint8_t truncated[] = {0x80, 0x01};
    DF_ASSERT_KIND(df__parquet_dbp_init(&d, truncated, sizeof truncated, false, 10, err), DF_ERR_PARQUET_FORMAT);
    /* Width 65 in a miniblock. */
    static const uint8_t wide[] = {0x80, 0x01, 0x04, 0x03, 0x00, 0x00, 65, 0, 0, 0};
    DF_ASSERT_OK(df__parquet_dbp_init(&d, wide, sizeof wide, false, 10, err), err);
    uint64_t out[3];
    DF_ASSERT_KIND(df__parquet_dbp_get(&d, out, 3, err), DF_ERR_PARQUET_FORMAT);
    /* INT32 streams accept at most 32 bits. */
    static const uint8_t wide32[] = {0x80, 0x01, 0x04, 0x03, 0x00, 0x00, 33, 0, 0, 0};
    DF_ASSERT_OK(df__parquet_dbp_init(&d, wide32, sizeof wide32, true, 10, err), err);
    DF_ASSERT_KIND(df__parquet_dbp_get(&d, out, 3, err), DF_ERR_PARQUET_FORMAT);
    /* A miniblock whose data is missing. */
    static const uint8_t nodata[] = {0x80, 0x01, 0x04, 0x03, 0x00, 0x00, 8, 0, 0, 0, 0xff};
    DF_ASSERT_OK(df__parquet_dbp_init(&d, nodata, sizeof nodata, false, 10, err), err);
    DF_ASSERT_KIND(df__parquet_dbp_get(&d, out, 3, err), DF_ERR_PARQUET_FORMAT);
    df__parquet_dbp_clear(&d);
}

/* ---- codecs ---------------------------------------------------------------------------- */

DF_TEST(codecs_roundtrip_and_reject_garbage) {
    df_error e_ = {0}, *err = &e_;
    pq_codec_ctx ctx = {0};
    uint8_t src[5000];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i % 97 < 50 ? 'a' + i % 7 : rnd());
    const int32_t codecs[] = {DF_PARQUET_UNCOMPRESSED, DF_PARQUET_SNAPPY, DF_PARQUET_GZIP, DF_PARQUET_ZSTD,
                              DF_PARQUET_LZ4_RAW, DF_PARQUET_BROTLI};
    for (size_t c = 0; c < DF_ARRAY_LEN(codecs); c++) {
        df_buf b;
        df_buf_init(&b, 0);
        DF_ASSERT_OK(df__parquet_compress(&ctx, codecs[c], 0, src, sizeof src, &b, err), err);
        uint8_t out[5000];
        DF_ASSERT_OK(df__parquet_decompress(&ctx, codecs[c], (const uint8_t *)b.data, b.len, out, sizeof out, err), err);
        DF_ASSERT(memcmp(out, src, sizeof src) == 0);
        /* Wrong announced size. */
        DF_ASSERT_KIND(df__parquet_decompress(&ctx, codecs[c], (const uint8_t *)b.data, b.len, out, sizeof out - 1, err),
                       DF_ERR_CODEC);
        if (codecs[c] != DF_PARQUET_UNCOMPRESSED) {
            /* Corrupted or truncated input. */
            DF_ASSERT(df__parquet_decompress(&ctx, codecs[c], (const uint8_t *)b.data, b.len / 2, out, sizeof out,
                                             err) == DF_ERR_CODEC);
            uint8_t junk[64];
            for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rnd();
            DF_ASSERT_KIND(df__parquet_decompress(&ctx, codecs[c], junk, sizeof junk, out, sizeof out, err), DF_ERR_CODEC);
        }
        df_buf_free(&b);
    }
    uint8_t out[4];
    DF_ASSERT_KIND(df__parquet_decompress(&ctx, DF_PARQUET_LZO, src, 4, out, 4, err), DF_ERR_PARQUET_UNSUPPORTED);
    df__parquet_codec_clear(&ctx);
}

DF_TEST(lz4_legacy_codec_accepts_hadoop_framing_and_raw_blocks) {
    df_error e_ = {0}, *err = &e_;
    pq_codec_ctx ctx = {0};
    uint8_t src[3000];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)("parquet"[i % 7] + i / 500);
    df_buf raw;
    df_buf_init(&raw, 0);
    DF_ASSERT_OK(df__parquet_compress(&ctx, DF_PARQUET_LZ4_RAW, 0, src, sizeof src, &raw, err), err);
    uint8_t out[3000];
    /* A raw LZ4 block under the LZ4 codec (files that skip Hadoop's framing). */
    DF_ASSERT_OK(df__parquet_decompress(&ctx, DF_PARQUET_LZ4, (const uint8_t *)raw.data, raw.len, out, sizeof out, err), err);
    DF_ASSERT(memcmp(out, src, sizeof src) == 0);
    /* Hadoop framing: two frames of 1500 bytes each. */
    df_buf h;
    df_buf_init(&h, 0);
    for (int f = 0; f < 2; f++) {
        df_buf part;
        df_buf_init(&part, 0);
        DF_ASSERT_OK(df__parquet_compress(&ctx, DF_PARQUET_LZ4_RAW, 0, src + 1500 * f, 1500, &part, err), err);
        uint8_t hdr[8] = {0, 0, 1500 >> 8, 1500 & 0xff, 0, 0, (uint8_t)(part.len >> 8), (uint8_t)part.len};
        df_buf_append(&h, hdr, 8, NULL);
        df_buf_append(&h, part.data, part.len, NULL);
        df_buf_free(&part);
    }
    memset(out, 0, sizeof out);
    DF_ASSERT_OK(df__parquet_decompress(&ctx, DF_PARQUET_LZ4, (const uint8_t *)h.data, h.len, out, sizeof out, err), err);
    DF_ASSERT(memcmp(out, src, sizeof src) == 0);
    DF_ASSERT_KIND(df__parquet_decompress(&ctx, DF_PARQUET_LZ4, (const uint8_t *)h.data, h.len - 3, out, sizeof out, err),
                   DF_ERR_CODEC);
    df_buf_free(&h);
    df_buf_free(&raw);
    df__parquet_codec_clear(&ctx);
}

DF_TEST(crc32_matches_the_gzip_polynomial) {
    DF_ASSERT_EQ_UINT(df__parquet_crc32((const uint8_t *)"123456789", 9), 0xcbf43926u);
    DF_ASSERT_EQ_UINT(df__parquet_crc32((const uint8_t *)"", 0), 0u);
}

/* Bit-at-a-time CRC-32 (reflected 0xEDB88320), the slowest and plainest definition. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

DF_TEST(crc32_of_every_length_and_alignment) {
    enum { N = 70000 };
    uint8_t *buf = malloc(N + 64);
    for (size_t i = 0; i < N + 64; i++) buf[i] = (uint8_t)rnd();
    /* Every length around the 16- and 64-byte blocks of the folding path, at every alignment. */
    for (size_t len = 0; len < 600; len++)
        for (size_t off = 0; off < 16; off += (len < 200 ? 1 : 7))
            if (df__parquet_crc32(buf + off, len) != crc32_bitwise(buf + off, len))
                df_test_fail(__FILE__, __LINE__, "crc of %zu bytes at offset %zu differs", len, off);
    for (int k = 0; k < 40; k++) {
        size_t len = (size_t)(rnd() % N), off = (size_t)(rnd() % 64);
        DF_ASSERT_EQ_UINT(df__parquet_crc32(buf + off, len), crc32_bitwise(buf + off, len));
    }
    memset(buf, 0, N);   /* all zeros and all ones: the reductions' edge cases */
    DF_ASSERT_EQ_UINT(df__parquet_crc32(buf, N), crc32_bitwise(buf, N));
    memset(buf, 0xff, N);
    DF_ASSERT_EQ_UINT(df__parquet_crc32(buf, N), crc32_bitwise(buf, N));
    free(buf);
}
