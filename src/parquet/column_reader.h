/*
 * Column chunk reading: pages -> levels and dense values.
 *
 * A column reader walks the pages of one column chunk lazily.  For each
 * batch the caller asks for a number of records; the reader appends, to a
 * pq_leaf_out, the definition and repetition levels of those records and
 * their non-null values in the *physical* representation ("dense": one
 * value per level entry whose definition level is the maximum).  The
 * assembler (assemble.c) turns that into Arrow vectors.
 *
 * Physical representations in pq_leaf_out.values: BOOLEAN one byte (0/1)
 * per value; INT32/FLOAT 4 bytes; INT64/DOUBLE 8 bytes; INT96 8 bytes
 * (already converted to microseconds since the epoch); FIXED_LEN_BYTE_ARRAY
 * `type_length` bytes; BYTE_ARRAY int32 offsets (values) plus bytes (data).
 * BOOLEAN values are a dense bitmap (nvalues bits).
 *
 * Leaves without repetition whose maximum definition level is 1 (flat
 * optional columns, the common case) keep their definition levels as a
 * bitmap (`defbits`), which is exactly the Arrow validity of the column.
 */
#ifndef DF_PARQUET_COLUMN_READER_H
#define DF_PARQUET_COLUMN_READER_H

#include "parquet/codec.h"
#include "parquet/rle.h"
#include "parquet/schema_map.h"

/* Largest page (compressed or not) we accept; bigger claims are format errors. */
#define PQ_MAX_PAGE_BYTES ((size_t)1 << 30)

/* What one batch of one leaf produced. */
typedef struct pq_leaf_out {
    int16_t *def;           /* definition levels (max_def > 1 or max_rep > 0), `nlevels` of them */
    df_buffer *defbits;     /* definition levels as bits (max_def == 1, max_rep == 0) */
    int64_t def_ones;       /* set bits in defbits */
    int16_t *rep;           /* repetition levels (max_rep > 0) */
    int64_t nlevels;        /* level entries */
    int64_t level_cap;      /* capacity of def/rep */
    df_buffer *values;      /* fixed width: dense values; BYTE_ARRAY: int32 offsets[nvalues + 1] */
    df_buffer *data;        /* BYTE_ARRAY bytes */
    int64_t nvalues;        /* dense values */
    int64_t records;        /* records (rows) completed */
    int64_t hint_values;    /* dense values of the previous batch (sizes the next one) */
    int64_t hint_data;      /* BYTE_ARRAY bytes of the previous batch */
} pq_leaf_out;

void df__parquet_leaf_out_clear(pq_leaf_out *o);   /* frees levels and releases buffers */

/* Delta-binary-packed decoder state. */
typedef struct pq_dbp {
    const uint8_t *p;       /* next unread byte */
    const uint8_t *end;
    uint64_t block_size;    /* values per block */
    uint64_t nmini;         /* miniblocks per block */
    uint64_t per_mini;      /* values per miniblock */
    uint64_t total;         /* values in the stream */
    uint64_t emitted;       /* values handed out */
    uint64_t last;          /* previous value (wrapping arithmetic) */
    uint64_t min_delta;     /* current block's minimum delta */
    const uint8_t *widths;  /* current block's miniblock bit widths */
    uint64_t mini;          /* current miniblock index in the block */
    uint64_t mini_left;     /* values of the current miniblock not yet handed out */
    uint64_t *buf;          /* unpacked deltas of the current miniblock (owned) */
    uint64_t buf_cap;       /* capacity of buf in values */
    uint64_t buf_pos;       /* next delta in buf */
    bool is32;              /* INT32 stream: arithmetic wraps at 32 bits */
} pq_dbp;

/* Value decoder of the current data page. */
typedef struct pq_decoder {
    int encoding;           /* PQ_ENC_* of the page */
    const uint8_t *p;       /* PLAIN / BSS: next byte; dictionary: after the width byte */
    const uint8_t *end;     /* end of the page's value section */
    int64_t left;           /* dense values left in the page */
    int bit;                /* PLAIN BOOLEAN: bit offset into *p */
    pq_rle rle;             /* dictionary indices or RLE booleans */
    pq_dbp dbp;             /* DELTA_BINARY_PACKED values, or lengths/prefixes */
    int32_t *lengths;       /* DELTA_LENGTH / DELTA_BYTE_ARRAY: value (suffix) lengths (owned, page-sized) */
    int32_t *prefixes;      /* DELTA_BYTE_ARRAY prefix lengths (owned) */
    int64_t nlengths;       /* entries in lengths/prefixes */
    int64_t lcap;           /* capacity of lengths/prefixes */
    int64_t lpos;           /* next entry */
    df_buf prev;            /* DELTA_BYTE_ARRAY: previous value */
    int64_t bss_count;      /* BYTE_STREAM_SPLIT: values in the page */
    int64_t bss_pos;        /* next value */
} pq_decoder;

/* Decoded dictionary of a column chunk. */
typedef struct pq_dict {
    bool present;
    int64_t count;          /* entries */
    uint8_t *values;        /* fixed width: count * width bytes; BYTE_ARRAY: int32 offsets[count + 1] */
    uint8_t *data;          /* BYTE_ARRAY bytes */
    int64_t data_len;
    size_t values_cap;      /* allocated bytes of values (kept from chunk to chunk) */
    size_t data_cap;        /* allocated bytes of data */
} pq_dict;

/* One level stream of the current page. */
typedef struct pq_level_src {
    pq_rle rle;             /* RLE / bit-packed hybrid levels */
    const uint8_t *packed;  /* deprecated BIT_PACKED levels (MSB first), or NULL */
    int width;              /* BIT_PACKED bit width */
    int max;                /* maximum level (values above it are errors) */
    int64_t pos;            /* levels consumed */
} pq_level_src;

struct df_parquet_file;

typedef struct pq_column_reader {
    struct df_parquet_file *file;   /* borrowed (the stream holds a reference) */
    const pq_leaf *leaf;
    int32_t leaf_index;
    int32_t rg;
    const pq_column_meta *meta;
    pq_codec_ctx *codec;            /* shared by the stream's readers */
    bool verify_crc;
    int width;                      /* physical value width in pq_leaf_out (0 for BYTE_ARRAY) */
    uint64_t pos;                   /* file offset of the next page header */
    uint64_t end;                   /* end of the readable region (footer start) */
    uint64_t chunk_end;             /* nominal end of the chunk */
    int64_t values_left;            /* level entries of the chunk not yet loaded */
    int64_t pages;                  /* data pages loaded */
    bool started;                   /* a data page was seen (a dictionary must come first) */
    bool rep_checked;               /* the chunk's first repetition level was checked to be 0 */
    pq_dict dict;
    /* Current data page. */
    bool page_loaded;
    int32_t page_values;            /* level entries in the page */
    int32_t page_pos;               /* next level entry (page-relative) */
    bool bit_levels;                /* definition levels kept as bits (see pq_leaf_out) */
    pq_level_src rep_src, def_src;  /* the page's level streams */
    int32_t win_start, win_end;     /* entries [win_start, win_end) of the page are decoded below */
    int16_t *page_def;              /* decoded definition levels of the window (owned) */
    int16_t *page_rep;              /* decoded repetition levels of the window (owned) */
    uint8_t *page_bits;             /* definition bits of the window when bit_levels (owned) */
    uint8_t *page_buf;              /* decompression buffer (owned) */
    size_t page_cap;
    uint8_t *read_buf;              /* compressed bytes when the input cannot be viewed (owned) */
    size_t read_cap;
    uint8_t *hdr_buf;               /* page header window when the input cannot be viewed (owned) */
    size_t hdr_cap;
    pq_decoder dec;
    uint32_t *idx;                  /* dictionary index scratch (owned) */
    size_t idx_cap;
    uint8_t *tmp;                   /* byte scratch (owned) */
    size_t tmp_cap;
    uint8_t *dict_buf;              /* dictionary page decompression (owned; loaded while a data page is current) */
    size_t dict_buf_cap;
    uint8_t *dict_read;             /* dictionary page bytes when the input cannot be viewed (owned) */
    size_t dict_read_cap;
    /* Skipping (df__parquet_column_skip). */
    bool hdr_ready;                 /* `hdr` is the parsed header of the page at `pos` (read ahead) */
    pq_page_header hdr;             /* that header */
    size_t hdr_len;                 /* its encoded length */
    bool dict_pending;              /* a dictionary page was met but not loaded yet (loaded by the first
                                       dictionary-encoded data page that is decoded) */
    uint64_t dict_pos;              /* file offset of that dictionary page's header */
    /* Counters for metrics. */
    int64_t bytes_read;
    int64_t data_pages;
    int64_t pages_skipped;          /* data pages passed over without fetching their bodies */
} pq_column_reader;

/*
 * Prepares `cr` (zeroed, cleared, or used for another chunk: its scratch
 * buffers are reused) to read leaf `leaf` of row group `rg`.
 */
df_errkind df__parquet_column_reader_init(pq_column_reader *cr, struct df_parquet_file *file, int32_t rg,
                                          int32_t leaf, pq_codec_ctx *codec, bool verify_crc, df_error *err);
/* Frees everything the reader holds and zeroes it. */
void df__parquet_column_reader_clear(pq_column_reader *cr);

/*
 * Appends up to `records` records to `out` (levels and dense values).
 * Returns DF_OK with out->records < records only at the end of the chunk.
 * `expect_values` sizes the value buffers (flat columns: exactly records).
 */
df_errkind df__parquet_column_read(pq_column_reader *cr, int64_t records, pq_leaf_out *out, df_error *err);

/*
 * Passes over up to `records` records without producing them; *skipped
 * says how many (fewer only at the end of the chunk).  For columns without
 * repetition, whole data pages that hold no more than the records still to
 * skip are passed over by their headers alone: no body is fetched, checked
 * or decompressed, and a dictionary page met on the way is only loaded when
 * a later data page is read.  Elsewhere levels are decoded (to find record
 * boundaries and count values) and the value decoder skips values without
 * materialising them.
 */
df_errkind df__parquet_column_skip(pq_column_reader *cr, int64_t records, int64_t *skipped, df_error *err);

/* ---- value decoding (decode.c) ------------------------------------------- */

/*
 * Prepares cr->dec for a data page's value section; `max_values` bounds the
 * values the page may yield (its level count: nulls take no value bytes).
 */
df_errkind df__parquet_decoder_start(pq_column_reader *cr, int encoding, const uint8_t *data, size_t len,
                                     int64_t max_values, df_error *err);
/* Appends n dense values to out (reserving space as needed). */
df_errkind df__parquet_decode_values(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err);
/*
 * Passes over the next n dense values of the page without producing them
 * (positions advance exactly as decoding would; lengths are still checked).
 */
df_errkind df__parquet_skip_values(pq_column_reader *cr, int64_t n, df_error *err);
/* Decodes a dictionary page (PLAIN values) into cr->dict. */
df_errkind df__parquet_dict_load(pq_column_reader *cr, const uint8_t *data, size_t len, int64_t count,
                                 df_error *err);
void df__parquet_decoder_clear(pq_decoder *d);
void df__parquet_dict_clear(pq_dict *d);
/* Forgets the entries but keeps the allocations for the next chunk's dictionary. */
void df__parquet_dict_reset(pq_dict *d);

/* Delta-binary-packed streams (also used for lengths). */
df_errkind df__parquet_dbp_init(pq_dbp *d, const uint8_t *data, size_t len, bool is32, uint64_t max_values,
                                df_error *err);
/*
 * Decodes n values (as uint64, wrapping; callers truncate for INT32).
 * Once every value is out, d->p is the end of the stream.
 */
df_errkind df__parquet_dbp_get(pq_dbp *d, uint64_t *out, uint64_t n, df_error *err);
void df__parquet_dbp_clear(pq_dbp *d);

#endif
