/*
 * Unit tests for value decoding of data and dictionary pages, one encoding
 * at a time, through a column reader set up by hand (no file needed).
 */
#include "df_test.h"

#include "parquet/column_reader.h"
#include "parquet_test_util.h"

typedef struct fake {
    pq_column_reader cr;
    pq_leaf leaf;
    pq_leaf_out out;
} fake;

static void fake_init(fake *f, int physical, int type_length) {
    memset(f, 0, sizeof *f);
    f->leaf.physical = physical;
    f->leaf.type_length = type_length;
    f->leaf.path = "col";
    f->cr.leaf = &f->leaf;
    f->cr.width = physical == DF_PARQUET_INT32 || physical == DF_PARQUET_FLOAT ? 4
                  : physical == DF_PARQUET_INT64 || physical == DF_PARQUET_DOUBLE || physical == DF_PARQUET_INT96 ? 8
                  : physical == DF_PARQUET_FIXED_LEN_BYTE_ARRAY ? type_length
                  : physical == DF_PARQUET_BOOLEAN ? 1 : 0;
    f->cr.page_values = 1 << 20;
}

static void fake_clear(fake *f) {
    df__parquet_leaf_out_clear(&f->out);
    df__parquet_column_reader_clear(&f->cr);
}

/* Starts a page and decodes n values in chunks of `chunk`. */
static df_errkind decode(fake *f, int enc, const void *data, size_t len, int64_t n, int64_t chunk, df_error *err) {
    DF_TRY(df__parquet_decoder_start(&f->cr, enc, data, len, n, err));
    for (int64_t done = 0; done < n;) {
        int64_t m = DF_MIN(chunk, n - done);
        DF_TRY(df__parquet_decode_values(&f->cr, m, &f->out, err));
        done += m;
    }
    return DF_OK;
}

static const int32_t *out_i32(fake *f) { return (const int32_t *)(const void *)f->out.values->data; }
static const int64_t *out_i64(fake *f) { return (const int64_t *)(const void *)f->out.values->data; }

static void out_bytes(fake *f, int64_t i, const uint8_t **p, int32_t *len) {
    const int32_t *off = out_i32(f);
    *p = f->out.data->data + off[i];
    *len = off[i + 1] - off[i];
}

DF_TEST(plain_fixed_width_values) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    int32_t v32[100];
    for (int i = 0; i < 100; i++) v32[i] = i * i - 500;
    fake_init(&f, DF_PARQUET_INT32, 0);
    DF_ASSERT_OK(decode(&f, PQ_ENC_PLAIN, v32, sizeof v32, 100, 7, err), err);
    DF_ASSERT_EQ_INT(f.out.nvalues, 100);
    for (int i = 0; i < 100; i++) DF_ASSERT_EQ_INT(out_i32(&f)[i], v32[i]);
    fake_clear(&f);
    /* The page announces more values than its bytes hold. */
    fake_init(&f, DF_PARQUET_DOUBLE, 0);
    DF_ASSERT_KIND(decode(&f, PQ_ENC_PLAIN, v32, 79, 10, 10, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
}

DF_TEST(plain_int96_becomes_microseconds) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    fake_init(&f, DF_PARQUET_INT96, 0);
    uint8_t raw[60];
    /* 1970-01-02 00:00:00.000001999 (floored to 1 us) and 1969-12-31 00:00:00. */
    df_store_le64(raw, 1999);
    df_store_le32(raw + 8, 2440589);
    df_store_le64(raw + 12, 0);
    df_store_le32(raw + 20, 2440587);
    /* 0001-01-01 (Julian day 1721426) and 9999-12-31 23:59:59.999999999, outside the nanosecond range. */
    df_store_le64(raw + 24, 0);
    df_store_le32(raw + 32, 1721426);
    df_store_le64(raw + 36, 86399999999999ULL);
    df_store_le32(raw + 44, 5373484);
    /* Negative nanoseconds of day floor toward negative infinity: -1 ns before 1970-01-01 is -1 us. */
    df_store_le64(raw + 48, (uint64_t)-1);
    df_store_le32(raw + 56, 2440588);
    DF_ASSERT_OK(decode(&f, PQ_ENC_PLAIN, raw, sizeof raw, 5, 5, err), err);
    DF_ASSERT_EQ_INT(out_i64(&f)[0], 86400000000LL + 1);
    DF_ASSERT_EQ_INT(out_i64(&f)[1], -86400000000LL);
    DF_ASSERT_EQ_INT(out_i64(&f)[2], -62135596800000000LL);
    DF_ASSERT_EQ_INT(out_i64(&f)[3], 253402300799999999LL);
    DF_ASSERT_EQ_INT(out_i64(&f)[4], -1);
    fake_clear(&f);
    /* The largest Julian day is about 11.7 million years away: beyond int64 microseconds, an error, not a wrap. */
    fake_init(&f, DF_PARQUET_INT96, 0);
    df_store_le64(raw, 0);
    df_store_le32(raw + 8, UINT32_MAX);
    DF_ASSERT_KIND(decode(&f, PQ_ENC_PLAIN, raw, 12, 1, 1, err), DF_ERR_PARQUET_UNSUPPORTED);
    fake_clear(&f);
}

DF_TEST(plain_byte_arrays_and_overruns) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    static const uint8_t page[] = {3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0, 2, 0, 0, 0, 'x', 'y'};
    DF_ASSERT_OK(decode(&f, PQ_ENC_PLAIN, page, sizeof page, 3, 2, err), err);
    const uint8_t *p;
    int32_t len;
    out_bytes(&f, 0, &p, &len);
    DF_ASSERT(len == 3 && memcmp(p, "abc", 3) == 0);
    out_bytes(&f, 1, &p, &len);
    DF_ASSERT_EQ_INT(len, 0);
    out_bytes(&f, 2, &p, &len);
    DF_ASSERT(len == 2 && memcmp(p, "xy", 2) == 0);
    fake_clear(&f);
    /* A length that runs past the page, and a length prefix cut in half. */
    static const uint8_t bad[] = {9, 0, 0, 0, 'a'};
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_KIND(decode(&f, PQ_ENC_PLAIN, bad, sizeof bad, 1, 1, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
    static const uint8_t half[] = {1, 0};
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_KIND(decode(&f, PQ_ENC_PLAIN, half, sizeof half, 1, 1, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
}

DF_TEST(plain_and_rle_booleans_are_bitmaps) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    fake_init(&f, DF_PARQUET_BOOLEAN, 0);
    static const uint8_t bits[] = {0xa5, 0x0f, 0x01};   /* 10100101 00001111 1 */
    DF_ASSERT_OK(decode(&f, PQ_ENC_PLAIN, bits, sizeof bits, 17, 3, err), err);
    for (int i = 0; i < 17; i++) DF_ASSERT_EQ_INT(df_bit_get(f.out.values->data, i), (bits[i / 8] >> (i % 8)) & 1);
    DF_ASSERT_KIND(df__parquet_decode_values(&f.cr, 1, &f.out, err), DF_ERR_PARQUET_FORMAT);   /* beyond the page */
    fake_clear(&f);
    /* RLE: 4-byte length, then 6 x true, then a bit-packed group 0b01010101. */
    static const uint8_t rle[] = {4, 0, 0, 0, 0x0c, 0x01, 0x03, 0x55};
    fake_init(&f, DF_PARQUET_BOOLEAN, 0);
    DF_ASSERT_OK(decode(&f, PQ_ENC_RLE, rle, sizeof rle, 14, 5, err), err);
    for (int i = 0; i < 6; i++) DF_ASSERT(df_bit_get(f.out.values->data, i));
    for (int i = 0; i < 8; i++) DF_ASSERT_EQ_INT(df_bit_get(f.out.values->data, 6 + i), (0x55 >> i) & 1);
    fake_clear(&f);
    static const uint8_t shortlen[] = {40, 0, 0, 0, 0x0c};
    fake_init(&f, DF_PARQUET_BOOLEAN, 0);
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_RLE, shortlen, sizeof shortlen, 3, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
}

DF_TEST(dictionary_indices_fixed_and_bytes) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    fake_init(&f, DF_PARQUET_INT64, 0);
    int64_t dict[4] = {10, -20, 30, INT64_MAX};
    DF_ASSERT_OK(df__parquet_dict_load(&f.cr, (const uint8_t *)dict, sizeof dict, 4, err), err);
    /* width 2; bit-packed group of indices 3,2,1,0,0,1,2,3; then a run of 5 x index 1. */
    uint64_t idx[8] = {3, 2, 1, 0, 0, 1, 2, 3};
    uint8_t page[16] = {2, 0x03};
    ref_pack(idx, 8, 2, page + 2);
    page[4] = 0x0a;
    page[5] = 0x01;
    DF_ASSERT_OK(decode(&f, PQ_ENC_RLE_DICTIONARY, page, 6, 13, 4, err), err);
    for (int i = 0; i < 8; i++) DF_ASSERT_EQ_INT(out_i64(&f)[i], dict[idx[i]]);
    for (int i = 8; i < 13; i++) DF_ASSERT_EQ_INT(out_i64(&f)[i], -20);
    /* Index beyond the dictionary. */
    uint8_t oob[] = {3, 0x02, 0x04};   /* run of 1 x index 4 at width 3 */
    DF_ASSERT_KIND(decode(&f, PQ_ENC_RLE_DICTIONARY, oob, sizeof oob, 1, 1, err), DF_ERR_PARQUET_FORMAT);
    DF_ASSERT(strstr(err->message, "out of range") != NULL);
    /* Bit width above 32; indices that end early. */
    uint8_t wide[] = {33, 0x02, 0x00};
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_RLE_DICTIONARY, wide, sizeof wide, 1, err),
                   DF_ERR_PARQUET_FORMAT);
    uint8_t few[] = {2, 0x04, 0x01};   /* 2 indices only */
    DF_ASSERT_KIND(decode(&f, PQ_ENC_PLAIN_DICTIONARY, few, sizeof few, 3, 3, err), DF_ERR_PARQUET_FORMAT);
    /* A second dictionary page. */
    DF_ASSERT_KIND(df__parquet_dict_load(&f.cr, (const uint8_t *)dict, sizeof dict, 4, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);

    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    static const uint8_t sdict[] = {2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 5, 0, 0, 0, 'w', 'o', 'r', 'l', 'd'};
    DF_ASSERT_OK(df__parquet_dict_load(&f.cr, sdict, sizeof sdict, 3, err), err);
    uint8_t spage[] = {2, 0x03, 0x00, 0x00};
    uint64_t sidx[8] = {2, 0, 1, 2, 2, 0, 1, 0};
    ref_pack(sidx, 8, 2, spage + 2);
    DF_ASSERT_OK(decode(&f, PQ_ENC_RLE_DICTIONARY, spage, sizeof spage, 8, 3, err), err);
    static const char *want[3] = {"hi", "", "world"};
    for (int i = 0; i < 8; i++) {
        const uint8_t *p;
        int32_t len;
        out_bytes(&f, i, &p, &len);
        DF_ASSERT_EQ_INT(len, (int)strlen(want[sidx[i]]));
        DF_ASSERT(memcmp(p, want[sidx[i]], (size_t)len) == 0);
    }
    fake_clear(&f);
}

DF_TEST(dictionary_pages_reject_bad_shapes) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    fake_init(&f, DF_PARQUET_INT32, 0);
    int32_t dict[2] = {1, 2};
    DF_ASSERT_KIND(df__parquet_dict_load(&f.cr, (const uint8_t *)dict, sizeof dict, -1, err), DF_ERR_PARQUET_FORMAT);
    DF_ASSERT_KIND(df__parquet_dict_load(&f.cr, (const uint8_t *)dict, sizeof dict, 3, err), DF_ERR_PARQUET_FORMAT);
    uint8_t page[] = {1, 0x02, 0x00};
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_RLE_DICTIONARY, page, sizeof page, 1, err),
                   DF_ERR_PARQUET_FORMAT);   /* no dictionary page */
    fake_clear(&f);
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    static const uint8_t sdict[] = {200, 0, 0, 0, 'h', 'i'};
    DF_ASSERT_KIND(df__parquet_dict_load(&f.cr, sdict, sizeof sdict, 1, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
    fake_init(&f, DF_PARQUET_BOOLEAN, 0);
    DF_ASSERT_KIND(df__parquet_dict_load(&f.cr, sdict, 1, 1, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
}

DF_TEST(delta_binary_packed_int32_pages) {
    df_error e_ = {0}, *err = &e_;
    int64_t v[300];
    for (int i = 0; i < 300; i++) v[i] = (int32_t)(i % 3 == 0 ? INT32_MIN + i : INT32_MAX - i * 7);
    df_buf b;
    df_buf_init(&b, 0);
    dbp_encode32(v, 300, &b);
    fake f;
    fake_init(&f, DF_PARQUET_INT32, 0);
    DF_ASSERT_OK(decode(&f, PQ_ENC_DELTA_BINARY_PACKED, b.data, b.len, 300, 33, err), err);
    for (int i = 0; i < 300; i++) DF_ASSERT_EQ_INT(out_i32(&f)[i], v[i]);
    fake_clear(&f);
    df_buf_free(&b);
}

/* DELTA_LENGTH_BYTE_ARRAY page of the given strings. */
static void dlba_page(const char *const *s, size_t n, df_buf *b) {
    int64_t lens[64];
    for (size_t i = 0; i < n; i++) lens[i] = (int64_t)strlen(s[i]);
    dbp_encode32(lens, n, b);
    for (size_t i = 0; i < n; i++) df_buf_append_str(b, s[i], NULL);
}

DF_TEST(delta_length_and_delta_byte_arrays) {
    df_error e_ = {0}, *err = &e_;
    static const char *const words[] = {"apple", "applesauce", "apply", "", "banana", "band", "bandana"};
    size_t n = DF_ARRAY_LEN(words);
    df_buf b;
    df_buf_init(&b, 0);
    dlba_page(words, n, &b);
    fake f;
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_OK(decode(&f, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, b.data, b.len, (int64_t)n, 3, err), err);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p;
        int32_t len;
        out_bytes(&f, (int64_t)i, &p, &len);
        DF_ASSERT_EQ_INT(len, (int)strlen(words[i]));
        DF_ASSERT(memcmp(p, words[i], (size_t)len) == 0);
    }
    fake_clear(&f);
    /* Lengths that claim more bytes than the page holds. */
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, (const uint8_t *)b.data, b.len - 3, (int64_t)n, err),
                   DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
    df_buf_reset(&b);

    /* DELTA_BYTE_ARRAY: prefix lengths, then the suffixes as DELTA_LENGTH_BYTE_ARRAY. */
    int64_t prefix[7];
    const char *suffix[7];
    for (size_t i = 0; i < n; i++) {
        size_t p = 0;
        if (i > 0)
            while (words[i][p] && words[i - 1][p] && words[i][p] == words[i - 1][p]) p++;
        prefix[i] = (int64_t)p;
        suffix[i] = words[i] + p;
    }
    dbp_encode32(prefix, n, &b);
    dlba_page(suffix, n, &b);
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_OK(decode(&f, PQ_ENC_DELTA_BYTE_ARRAY, b.data, b.len, (int64_t)n, 2, err), err);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p;
        int32_t len;
        out_bytes(&f, (int64_t)i, &p, &len);
        DF_ASSERT_EQ_INT(len, (int)strlen(words[i]));
        DF_ASSERT(memcmp(p, words[i], (size_t)len) == 0);
    }
    fake_clear(&f);
    /* A prefix longer than the previous value. */
    df_buf_reset(&b);
    int64_t badprefix[2] = {0, 9};
    static const char *const two[] = {"ab", "c"};
    dbp_encode32(badprefix, 2, &b);
    dlba_page(two, 2, &b);
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_KIND(decode(&f, PQ_ENC_DELTA_BYTE_ARRAY, b.data, b.len, 2, 2, err), DF_ERR_PARQUET_FORMAT);
    fake_clear(&f);
    df_buf_free(&b);
}

DF_TEST(byte_stream_split_all_widths) {
    df_error e_ = {0}, *err = &e_;
    const int widths[] = {4, 8, 3};
    for (size_t w = 0; w < DF_ARRAY_LEN(widths); w++) {
        int k = widths[w];
        uint8_t vals[20 * 8], page[20 * 8];
        for (int i = 0; i < 20 * k; i++) vals[i] = (uint8_t)rnd();
        for (int i = 0; i < 20; i++)
            for (int b = 0; b < k; b++) page[b * 20 + i] = vals[i * k + b];
        fake f;
        fake_init(&f, k == 4 ? DF_PARQUET_FLOAT : k == 8 ? DF_PARQUET_DOUBLE : DF_PARQUET_FIXED_LEN_BYTE_ARRAY, k);
        DF_ASSERT_OK(decode(&f, PQ_ENC_BYTE_STREAM_SPLIT, page, (size_t)(20 * k), 20, 6, err), err);
        DF_ASSERT(memcmp(f.out.values->data, vals, (size_t)(20 * k)) == 0);
        fake_clear(&f);
        fake_init(&f, k == 4 ? DF_PARQUET_INT32 : k == 8 ? DF_PARQUET_INT64 : DF_PARQUET_FIXED_LEN_BYTE_ARRAY, k);
        DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_BYTE_STREAM_SPLIT, page, (size_t)(20 * k) - 1, 19, err),
                       DF_ERR_PARQUET_FORMAT);
        fake_clear(&f);
    }
}

DF_TEST(encodings_that_do_not_fit_the_type) {
    df_error e_ = {0}, *err = &e_;
    fake f;
    uint8_t page[16] = {0};
    fake_init(&f, DF_PARQUET_BYTE_ARRAY, 0);
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_DELTA_BINARY_PACKED, page, sizeof page, 1, err),
                   DF_ERR_PARQUET_FORMAT);
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_BYTE_STREAM_SPLIT, page, sizeof page, 1, err),
                   DF_ERR_PARQUET_FORMAT);
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, 42, page, sizeof page, 1, err), DF_ERR_PARQUET_UNSUPPORTED);
    fake_clear(&f);
    fake_init(&f, DF_PARQUET_INT32, 0);
    DF_ASSERT_KIND(df__parquet_decoder_start(&f.cr, PQ_ENC_RLE, page, sizeof page, 1, err), DF_ERR_PARQUET_FORMAT);
    /* Empty pages need no bytes at all. */
    DF_ASSERT_OK(df__parquet_decoder_start(&f.cr, PQ_ENC_PLAIN, NULL, 0, 0, err), err);
    fake_clear(&f);
}
