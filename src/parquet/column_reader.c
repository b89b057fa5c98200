/*
 * Column chunk reading (see column_reader.h): page headers, CRCs,
 * decompression, levels, and record-aligned reading.
 *
 * Pages are loaded one at a time when the previous one is used up.  A data
 * page's levels are decoded entirely when the page is loaded (they are
 * needed to know how many values and records it holds); its values are
 * decoded on demand, batch by batch, straight into the caller's buffers.
 * Uncompressed pages of memory-mapped files are decoded in place.
 *
 * Records: with repetition levels, a record starts at each entry whose
 * repetition level is 0.  Reading N records stops before the (N+1)-th
 * start, looking into the next page when a record may continue there.
 */
#include "parquet/column_reader.h"

#include <stdarg.h>
#include <stdio.h>

#include "parquet/reader_int.h"

static df_errkind chunk_error(pq_column_reader *cr, df_error *err, df_errkind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static df_errkind chunk_error(pq_column_reader *cr, df_error *err, df_errkind kind, const char *fmt, ...) {
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df_error_set(err, kind, "%s in column '%s' (row group %d, page %lld)", msg, cr->leaf->path, cr->rg,
                        (long long)cr->pages);
}

void df__parquet_leaf_out_clear(pq_leaf_out *o) {
    /* Everything goes, hints included (memset below). */
    df_free(o->def);
    df_buffer_release(o->defbits);
    df_free(o->rep);
    df_buffer_release(o->values);
    df_buffer_release(o->data);
    memset(o, 0, sizeof *o);
}

static int physical_width(const pq_leaf *leaf) {
    switch (leaf->physical) {
    case DF_PARQUET_BOOLEAN: return 1;
    case DF_PARQUET_INT32:
    case DF_PARQUET_FLOAT: return 4;
    case DF_PARQUET_INT64:
    case DF_PARQUET_DOUBLE:
    case DF_PARQUET_INT96: return 8;
    case DF_PARQUET_FIXED_LEN_BYTE_ARRAY: return leaf->type_length;
    default: return 0;
    }
}

/*
 * Zeroes the reader but keeps its scratch allocations (level windows,
 * decompression and read buffers, index scratch, decoder buffers), so the
 * next row group reuses them instead of faulting in fresh memory.
 */
static void reset_keep_scratch(pq_column_reader *cr) {
    pq_column_reader keep = *cr;
    df__parquet_dict_reset(&keep.dict);
    memset(cr, 0, sizeof *cr);
    cr->dict = keep.dict;
    cr->dict_buf = keep.dict_buf;
    cr->dict_buf_cap = keep.dict_buf_cap;
    cr->dict_read = keep.dict_read;
    cr->dict_read_cap = keep.dict_read_cap;
    cr->page_def = keep.page_def;
    cr->page_rep = keep.page_rep;
    cr->page_bits = keep.page_bits;
    cr->page_buf = keep.page_buf;
    cr->page_cap = keep.page_cap;
    cr->read_buf = keep.read_buf;
    cr->read_cap = keep.read_cap;
    cr->hdr_buf = keep.hdr_buf;
    cr->hdr_cap = keep.hdr_cap;
    cr->idx = keep.idx;
    cr->idx_cap = keep.idx_cap;
    cr->tmp = keep.tmp;
    cr->tmp_cap = keep.tmp_cap;
    cr->dec = keep.dec;   /* every data page restarts the decoder; only its buffers carry over */
}

df_errkind df__parquet_column_reader_init(pq_column_reader *cr, struct df_parquet_file *file, int32_t rg,
                                          int32_t leaf, pq_codec_ctx *codec, bool verify_crc, df_error *err) {
    reset_keep_scratch(cr);
    cr->file = file;
    cr->rg = rg;
    cr->leaf_index = leaf;
    cr->leaf = &file->schema.leaves[leaf];
    cr->codec = codec;
    cr->verify_crc = verify_crc;
    cr->width = physical_width(cr->leaf);
    cr->bit_levels = cr->leaf->max_def == 1 && cr->leaf->max_rep == 0;
    const pq_row_group *g = &file->meta.row_groups[rg];
    const pq_column_chunk *cc = &g->columns[leaf];
    if (cc->encrypted) return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "Parquet modular encryption is not supported");
    if (cc->file_path)
        return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "column '%s' keeps its data in another file (%s)",
                            cr->leaf->path, cc->file_path);
    if (!cc->has_meta)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "column '%s' of row group %d has no metadata", cr->leaf->path,
                            rg);
    const pq_column_meta *m = &cc->meta;
    cr->meta = m;
    if (m->type != cr->leaf->physical)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "column '%s' is %s in row group %d but %s in the schema",
                            cr->leaf->path, df__parquet_physical_name(m->type), rg,
                            df__parquet_physical_name(cr->leaf->physical));
    if (!df__parquet_codec_supported(m->codec))
        return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "column '%s' uses unsupported compression %s",
                            cr->leaf->path, df__parquet_codec_name(m->codec));
    cr->values_left = m->num_values;
    if (m->num_values == 0) return DF_OK;   /* an empty chunk: no page is ever read */
    int64_t start = m->data_page_offset;
    if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < start) start = m->dictionary_page_offset;
    if (start < 4 || (uint64_t)start >= file->data_end || m->total_compressed_size < 0 || m->num_values < 0)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                            "column '%s' of row group %d has invalid offsets or sizes (start %lld, size %lld)",
                            cr->leaf->path, rg, (long long)start, (long long)m->total_compressed_size);
    cr->pos = (uint64_t)start;
    cr->end = file->data_end;
    cr->chunk_end = (uint64_t)start + (uint64_t)m->total_compressed_size;
    return DF_OK;
}

void df__parquet_column_reader_clear(pq_column_reader *cr) {
    df__parquet_dict_clear(&cr->dict);
    df__parquet_decoder_clear(&cr->dec);
    df_free(cr->page_def);
    df_free(cr->page_rep);
    df_free(cr->page_bits);
    df_free(cr->page_buf);
    df_free(cr->read_buf);
    df_free(cr->hdr_buf);
    df_free(cr->idx);
    df_free(cr->tmp);
    df_free(cr->dict_buf);
    df_free(cr->dict_read);
    memset(cr, 0, sizeof *cr);
}

/* ---- fetching bytes ----------------------------------------------------------- */

static df_errkind grow(uint8_t **buf, size_t *cap, size_t need, df_error *err) {
    if (*cap >= need && *buf) return DF_OK;   /* never NULL, even for empty pages */
    size_t ncap = DF_MAX(need, *cap * 2);
    uint8_t *p = df_realloc(*buf, ncap + 16);   /* slack for word-wise readers */
    if (!p) return DF_OOM(err);
    *buf = p;
    *cap = ncap;
    return DF_OK;
}

/* Points *out at [off, off+len) of the file: a view when possible, else a copy in *scratch. */
static df_errkind fetch(pq_column_reader *cr, uint64_t off, size_t len, const uint8_t **out, uint8_t **scratch,
                        size_t *cap, df_error *err) {
    df_input *in = cr->file->in;
    const uint8_t *v = NULL;
    DF_TRY(in->vt->view_at(in, off, len, &v, err));
    cr->bytes_read += (int64_t)len;
    if (v) {
        *out = v;
        return DF_OK;
    }
    DF_TRY(grow(scratch, cap, len, err));
    DF_TRY(df_input_read_at(in, off, *scratch, len, err));
    *out = *scratch;
    return DF_OK;
}

/* Reads and decodes the page header at cr->pos, growing the window while it is cut short. */
static df_errkind read_header(pq_column_reader *cr, pq_page_header *h, size_t *hlen, df_error *err) {
    uint64_t avail = cr->end - cr->pos;
    size_t window = (size_t)DF_MIN(avail, (uint64_t)1024);
    for (;;) {
        const uint8_t *p;
        DF_TRY(fetch(cr, cr->pos, window, &p, &cr->hdr_buf, &cr->hdr_cap, err));
        cr->bytes_read -= (int64_t)window;   /* counted once below */
        bool truncated;
        df_errkind k = df__parquet_parse_page_header(p, window, h, hlen, &truncated, err);
        if (k == DF_OK) {
            cr->bytes_read += (int64_t)*hlen;
            return DF_OK;
        }
        if (!truncated || window == avail || window >= PQ_MAX_PAGE_BYTES) {
            df_error_prefix(err, "column '%s' (row group %d, page %lld)", cr->leaf->path, cr->rg, (long long)cr->pages);
            return k;
        }
        window = (size_t)DF_MIN(avail, (uint64_t)window * 8);
    }
}

/* Decompresses a page body into *buf (grown as needed), or points at it when the chunk is not compressed. */
static df_errkind decompress_into(pq_column_reader *cr, const uint8_t *src, size_t srclen, size_t dstlen,
                                  uint8_t **buf, size_t *cap, const uint8_t **out, df_error *err) {
    if (cr->meta->codec == DF_PARQUET_UNCOMPRESSED) {
        if (srclen != dstlen)
            return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "uncompressed page of %zu bytes claims %zu bytes",
                               srclen, dstlen);
        *out = src;
        return DF_OK;
    }
    if (dstlen > PQ_MAX_PAGE_BYTES)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "page claims %zu uncompressed bytes", dstlen);
    DF_TRY(grow(buf, cap, dstlen, err));
    df_errkind k = df__parquet_decompress(cr->codec, cr->meta->codec, src, srclen, *buf, dstlen, err);
    if (k != DF_OK) {
        df_error_prefix(err, "column '%s' (row group %d, page %lld)", cr->leaf->path, cr->rg, (long long)cr->pages);
        return k;
    }
    *out = *buf;
    return DF_OK;
}

static df_errkind decompress(pq_column_reader *cr, const uint8_t *src, size_t srclen, size_t dstlen,
                             const uint8_t **out, df_error *err) {
    return decompress_into(cr, src, srclen, dstlen, &cr->page_buf, &cr->page_cap, out, err);
}

/* ---- levels ---------------------------------------------------------------------- */

/*
 * Levels are decoded a window of LEVEL_WINDOW entries at a time, so memory
 * does not depend on how many values a page claims (an RLE run can claim
 * billions in a few bytes).
 */
#define LEVEL_WINDOW 8192

static df_errkind ensure_window(pq_column_reader *cr, df_error *err) {
    if (cr->page_def) return DF_OK;
    cr->page_def = df_malloc(LEVEL_WINDOW * sizeof *cr->page_def);
    cr->page_rep = df_malloc(LEVEL_WINDOW * sizeof *cr->page_rep);
    cr->page_bits = df_malloc(LEVEL_WINDOW / 8 + 8);
    if (!cr->page_def || !cr->page_rep || !cr->page_bits) return DF_OOM(err);
    return DF_OK;
}

/*
 * Sets up one level stream of a page.  v1 RLE levels carry a 4-byte length
 * (len_prefix); v2 levels are the given bytes; BIT_PACKED levels take
 * ceil(n * width / 8) bytes.  Advances *p past the stream.
 */
static df_errkind level_source(pq_column_reader *cr, pq_level_src *src, const uint8_t **p, const uint8_t *end,
                               int encoding, bool len_prefix, size_t len, int max, int64_t n, const char *what,
                               df_error *err) {
    memset(src, 0, sizeof *src);
    src->max = max;
    int w = df__parquet_bit_width((uint64_t)max);
    size_t avail = (size_t)(end - *p);
    if (encoding == PQ_ENC_BIT_PACKED && len_prefix) {
        uint64_t bytes = ((uint64_t)n * (uint64_t)w + 7) / 8;
        if (bytes > avail) return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "%s levels cut short", what);
        src->packed = *p;
        src->width = w;
        *p += bytes;
        return DF_OK;
    }
    if (encoding != PQ_ENC_RLE)
        return chunk_error(cr, err, DF_ERR_PARQUET_UNSUPPORTED, "%s levels use encoding %s", what,
                           df__parquet_encoding_name(encoding));
    if (len_prefix) {
        if (avail < 4) return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "%s levels cut short", what);
        len = df_load_le32(*p);
        *p += 4;
        avail -= 4;
    }
    if (len > avail)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "%s levels of %zu bytes exceed the page", what, len);
    df__parquet_rle_init(&src->rle, *p, len, w);
    *p += len;
    return DF_OK;
}

/* Decodes the next n levels of a stream into out (int16) and checks them against the maximum. */
static df_errkind level_take(pq_column_reader *cr, pq_level_src *src, int16_t *out, int64_t n, const char *what,
                             df_error *err) {
    if (src->packed) {
        df__parquet_bitpacked_msb_levels(src->packed, src->width, (size_t)src->pos, out, (size_t)n);
    } else {
        size_t got = df__parquet_rle_get_i16(&src->rle, out, (size_t)n);
        if ((int64_t)got != n)
            return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "%s levels end after %lld of %d values", what,
                               (long long)(src->pos + (int64_t)got), cr->page_values);
    }
    src->pos += n;
    int16_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad |= (int16_t)(out[i] > src->max);
    if (bad) return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "%s level above the maximum %d", what, src->max);
    return DF_OK;
}

/* Decodes the next window of the page's levels. */
static df_errkind decode_window(pq_column_reader *cr, df_error *err) {
    const pq_leaf *leaf = cr->leaf;
    int64_t n = DF_MIN((int64_t)LEVEL_WINDOW, (int64_t)cr->page_values - cr->win_end);
    if (leaf->max_rep > 0) {
        DF_TRY(level_take(cr, &cr->rep_src, cr->page_rep, n, "repetition", err));
        if (!cr->rep_checked && n > 0 && cr->page_rep[0] != 0)
            return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "the first repetition level is %d, not 0",
                               cr->page_rep[0]);
        cr->rep_checked = true;
    }
    if (cr->bit_levels && !cr->def_src.packed) {
        size_t got = df__parquet_rle_get_bits(&cr->def_src.rle, cr->page_bits, 0, (size_t)n);
        if ((int64_t)got != n)
            return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "definition levels end after %lld of %d values",
                               (long long)(cr->def_src.pos + (int64_t)got), cr->page_values);
        cr->def_src.pos += n;
    } else if (leaf->max_def > 0) {
        DF_TRY(level_take(cr, &cr->def_src, cr->page_def, n, "definition", err));
        if (cr->bit_levels) {
            /* Deprecated BIT_PACKED levels of a flat optional column: convert to bits. */
            memset(cr->page_bits, 0, (size_t)df_bitmap_bytes(n));
            for (int64_t i = 0; i < n; i++)
                if (cr->page_def[i]) cr->page_bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
    }
    cr->win_start = cr->win_end;
    cr->win_end += (int32_t)n;
    return DF_OK;
}

/* Counts the entries whose definition level is the maximum (the dense values). */
static int64_t count_nonnull(const int16_t *def, int64_t n, int16_t max) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += def[i] == max;
    return c;
}

/* ---- pages ----------------------------------------------------------------------------- */

static df_errkind load_pending_dict(pq_column_reader *cr, df_error *err);

static df_errkind start_data_page(pq_column_reader *cr, int64_t nvalues, const uint8_t *values, size_t vlen,
                                  int encoding, df_error *err) {
    /* The dictionary is decoded only when a page needs it (skipped chunks and PLAIN fallbacks never do). */
    if (cr->dict_pending && (encoding == PQ_ENC_PLAIN_DICTIONARY || encoding == PQ_ENC_RLE_DICTIONARY))
        DF_TRY(load_pending_dict(cr, err));
    if (nvalues > INT32_MAX) return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "page of %lld values", (long long)nvalues);
    cr->page_values = (int32_t)nvalues;
    cr->page_pos = cr->win_start = cr->win_end = 0;
    cr->page_loaded = true;
    cr->started = true;
    cr->pages++;
    cr->data_pages++;
    if (nvalues > cr->values_left)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "pages hold more values than the chunk's %lld",
                           (long long)cr->meta->num_values);
    cr->values_left -= nvalues;
    /* Nulls take no value bytes: the level count bounds the values the page may decode. */
    return df__parquet_decoder_start(cr, encoding, values, vlen, nvalues, err);
}

static df_errkind load_v1(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, df_error *err) {
    if (!h->has_data || h->data.num_values < 0)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "data page without a valid data page header");
    int64_t n = h->data.num_values;
    const uint8_t *page;
    DF_TRY(decompress(cr, body, (size_t)h->compressed_size, (size_t)h->uncompressed_size, &page, err));
    const uint8_t *p = page, *end = page + h->uncompressed_size;
    DF_TRY(ensure_window(cr, err));
    const pq_leaf *leaf = cr->leaf;
    memset(&cr->rep_src, 0, sizeof cr->rep_src);
    memset(&cr->def_src, 0, sizeof cr->def_src);
    if (leaf->max_rep > 0)
        DF_TRY(level_source(cr, &cr->rep_src, &p, end, h->data.rep_encoding, true, 0, leaf->max_rep, n, "repetition",
                            err));
    if (leaf->max_def > 0)
        DF_TRY(level_source(cr, &cr->def_src, &p, end, h->data.def_encoding, true, 0, leaf->max_def, n, "definition",
                            err));
    return start_data_page(cr, n, p, (size_t)(end - p), h->data.encoding, err);
}

static df_errkind load_v2(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, df_error *err) {
    const pq_data_page_header_v2 *v = &h->data_v2;
    if (!h->has_data_v2 || v->num_values < 0 || v->def_length < 0 || v->rep_length < 0)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "data page without a valid v2 header");
    int64_t levels = (int64_t)v->def_length + v->rep_length;
    if (levels > h->compressed_size || levels > h->uncompressed_size)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "v2 page levels exceed the page");
    int64_t n = v->num_values;
    const pq_leaf *leaf = cr->leaf;
    DF_TRY(ensure_window(cr, err));
    memset(&cr->rep_src, 0, sizeof cr->rep_src);
    memset(&cr->def_src, 0, sizeof cr->def_src);
    const uint8_t *p = body, *lend = body + levels;
    if (leaf->max_rep > 0)
        DF_TRY(level_source(cr, &cr->rep_src, &p, lend, PQ_ENC_RLE, false, (size_t)v->rep_length, leaf->max_rep, n,
                            "repetition", err));
    p = body + v->rep_length;
    if (leaf->max_def > 0)
        DF_TRY(level_source(cr, &cr->def_src, &p, lend, PQ_ENC_RLE, false, (size_t)v->def_length, leaf->max_def, n,
                            "definition", err));
    const uint8_t *src = body + levels;
    size_t srclen = (size_t)(h->compressed_size - levels), dstlen = (size_t)(h->uncompressed_size - levels);
    const uint8_t *values = src;
    if (v->is_compressed && cr->meta->codec != DF_PARQUET_UNCOMPRESSED && srclen > 0) {
        DF_TRY(decompress(cr, src, srclen, dstlen, &values, err));
    } else {
        /* Not compressed (or empty: zero bytes are never handed to a codec). */
        if (srclen != dstlen && !(srclen == 0 && v->is_compressed))
            return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "uncompressed v2 values of %zu bytes claim %zu",
                               srclen, dstlen);
        dstlen = srclen;
    }
    return start_data_page(cr, n, values, dstlen, v->encoding, err);
}

/*
 * Decompresses and decodes a dictionary page body (order checks are the
 * caller's), using buffers of its own: a data page may be current.
 */
static df_errkind dictionary_body(pq_column_reader *cr, const pq_page_header *h, const uint8_t *body, df_error *err) {
    if (!h->has_dict) return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "dictionary page without its header");
    if (h->dict.encoding != PQ_ENC_PLAIN && h->dict.encoding != PQ_ENC_PLAIN_DICTIONARY)
        return chunk_error(cr, err, DF_ERR_PARQUET_UNSUPPORTED, "dictionary page encoded with %s",
                           df__parquet_encoding_name(h->dict.encoding));
    const uint8_t *page;
    DF_TRY(decompress_into(cr, body, (size_t)h->compressed_size, (size_t)h->uncompressed_size, &cr->dict_buf,
                           &cr->dict_buf_cap, &page, err));
    return df__parquet_dict_load(cr, page, (size_t)h->uncompressed_size, h->dict.num_values, err);
}

/* A dictionary page must come before every data page and only once. */
static df_errkind check_dictionary_order(pq_column_reader *cr, df_error *err) {
    if (cr->started) return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "dictionary page after data pages");
    if (cr->dict.present || cr->dict_pending)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "a second dictionary page");
    return DF_OK;
}

/*
 * Reads the header of the page at cr->pos (or takes the one read ahead by
 * skip_pages) and checks its sizes against the column data.
 */
static df_errkind next_header(pq_column_reader *cr, pq_page_header *h, size_t *hlen, df_error *err) {
    if (cr->hdr_ready) {
        cr->hdr_ready = false;
        *h = cr->hdr;
        *hlen = cr->hdr_len;
        return DF_OK;
    }
    if (cr->pos >= cr->end)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "column chunk ends with %lld values unread",
                           (long long)cr->values_left);
    DF_TRY(read_header(cr, h, hlen, err));
    uint64_t body_off = cr->pos + *hlen;
    if ((uint64_t)h->compressed_size > cr->end - body_off)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "page of %d bytes runs past the column data",
                           h->compressed_size);
    if ((size_t)h->compressed_size > PQ_MAX_PAGE_BYTES || (size_t)h->uncompressed_size > PQ_MAX_PAGE_BYTES)
        return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "page claims more than %zu bytes", PQ_MAX_PAGE_BYTES);
    return DF_OK;
}

/* Fetches a page body (into *scratch when the input cannot be viewed) and verifies its CRC when it has one. */
static df_errkind page_body(pq_column_reader *cr, const pq_page_header *h, uint64_t off, const uint8_t **body,
                            uint8_t **scratch, size_t *cap, df_error *err) {
    DF_TRY(fetch(cr, off, (size_t)h->compressed_size, body, scratch, cap, err));
    if (h->has_crc && cr->verify_crc && df__parquet_crc32(*body, (size_t)h->compressed_size) != h->crc)
        return chunk_error(cr, err, DF_ERR_CHECKSUM, "page CRC mismatch");
    return DF_OK;
}

/*
 * Loads the chunk's dictionary page, met earlier and left unread, for the
 * data page being started (whose bytes stay untouched: the dictionary has
 * buffers of its own).
 */
static df_errkind load_pending_dict(pq_column_reader *cr, df_error *err) {
    cr->dict_pending = false;
    uint64_t resume = cr->pos;
    cr->pos = cr->dict_pos;
    pq_page_header h;
    size_t hlen;
    const uint8_t *body = NULL;
    df_errkind k = read_header(cr, &h, &hlen, err);
    if (k == DF_OK) k = page_body(cr, &h, cr->dict_pos + hlen, &body, &cr->dict_read, &cr->dict_read_cap, err);
    if (k == DF_OK) k = dictionary_body(cr, &h, body, err);
    cr->pos = resume;
    return k;
}

/* Loads pages until a data page with values is current; false in *loaded at the end of the chunk. */
static df_errkind load_page(pq_column_reader *cr, bool *loaded, df_error *err) {
    *loaded = false;
    cr->page_loaded = false;
    while (cr->values_left > 0) {
        pq_page_header h;
        size_t hlen;
        DF_TRY(next_header(cr, &h, &hlen, err));
        uint64_t body_off = cr->pos + hlen;
        if (h.type == PQ_PAGE_DICTIONARY) {
            /* Remembered, decoded when a dictionary-encoded page needs it. */
            DF_TRY(check_dictionary_order(cr, err));
            cr->dict_pending = true;
            cr->dict_pos = cr->pos;
            cr->pos = body_off + (uint64_t)h.compressed_size;
            continue;
        }
        const uint8_t *body;
        DF_TRY(page_body(cr, &h, body_off, &body, &cr->read_buf, &cr->read_cap, err));
        cr->pos = body_off + (uint64_t)h.compressed_size;
        switch (h.type) {
        case PQ_PAGE_DATA: DF_TRY(load_v1(cr, &h, body, err)); break;
        case PQ_PAGE_DATA_V2: DF_TRY(load_v2(cr, &h, body, err)); break;
        default: cr->pages++; break;   /* index pages and unknown page types are skipped */
        }
        if (cr->page_loaded && cr->page_values > 0) {
            *loaded = true;
            return DF_OK;
        }
    }
    return DF_OK;
}

/*
 * Passes over whole pages of a column without repetition (one record per
 * level entry) while they hold no more than `n` records: a data page's
 * level count is in its header, so its body is neither fetched nor
 * decompressed.  Stops at the first page that must be read, leaving its
 * parsed header for load_page.
 */
static df_errkind skip_pages(pq_column_reader *cr, int64_t n, int64_t *skipped, df_error *err) {
    *skipped = 0;
    while (cr->values_left > 0 && *skipped < n) {
        pq_page_header h;
        size_t hlen;
        DF_TRY(next_header(cr, &h, &hlen, err));
        int64_t rows = -1;
        if (h.type == PQ_PAGE_DATA && h.has_data) rows = h.data.num_values;
        else if (h.type == PQ_PAGE_DATA_V2 && h.has_data_v2) rows = h.data_v2.num_values;
        bool data = h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2;
        if (h.type == PQ_PAGE_DICTIONARY) {
            DF_TRY(check_dictionary_order(cr, err));
            cr->dict_pending = true;
            cr->dict_pos = cr->pos;
        } else if (data && (rows < 0 || rows > n - *skipped)) {
            /* Read it (load_page reports malformed headers). */
            cr->hdr = h;
            cr->hdr_len = hlen;
            cr->hdr_ready = true;
            return DF_OK;
        } else if (data) {
            if (rows > cr->values_left)
                return chunk_error(cr, err, DF_ERR_PARQUET_FORMAT, "pages hold more values than the chunk's %lld",
                                   (long long)cr->meta->num_values);
            cr->values_left -= rows;
            cr->started = true;
            cr->pages_skipped++;
            *skipped += rows;
        }
        cr->pages++;
        cr->pos += hlen + (uint64_t)h.compressed_size;
    }
    return DF_OK;
}

/* ---- record reading ------------------------------------------------------------------- */

static df_errkind ensure_out_levels(pq_leaf_out *o, int64_t n, bool def, bool rep, df_error *err) {
    if (o->level_cap >= n) return DF_OK;
    int64_t cap = DF_MAX(n, o->level_cap * 2);
    if (def) {
        int16_t *d = df_realloc(o->def, (size_t)cap * sizeof *d);
        if (!d) return DF_OOM(err);
        o->def = d;
    }
    if (rep) {
        int16_t *r = df_realloc(o->rep, (size_t)cap * sizeof *r);
        if (!r) return DF_OOM(err);
        o->rep = r;
    }
    o->level_cap = cap;
    return DF_OK;
}

/* Appends n definition bits of the page (from page_pos) to out->defbits; returns the set ones. */
static df_errkind take_bits(pq_column_reader *cr, int64_t n, pq_leaf_out *out, int64_t *ones, df_error *err) {
    int64_t need = df_bitmap_bytes(out->nlevels + n);
    if (!out->defbits) {
        out->defbits = df_buffer_new(DF_MAX(need, 64));
        if (!out->defbits) return DF_OOM(err);
    } else if (out->defbits->capacity < need) {
        out->defbits->size = df_bitmap_bytes(out->nlevels);
        DF_TRY(df_buffer_reserve(out->defbits, DF_MAX(need, out->defbits->capacity * 2), err));
    }
    int64_t a = cr->page_pos - cr->win_start;
    df__parquet_copy_bits(out->defbits->data, out->nlevels, cr->page_bits, a, n);
    *ones = df_bitmap_count(cr->page_bits, a, n);
    out->def_ones += *ones;
    return DF_OK;
}

/* Moves page entries [page_pos, page_pos + n) into out: levels, then their dense values. */
static df_errkind take_entries(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    const pq_leaf *leaf = cr->leaf;
    int64_t a = cr->page_pos - cr->win_start;   /* window-relative */
    int64_t nonnull = n;
    if (cr->bit_levels) {
        DF_TRY(take_bits(cr, n, out, &nonnull, err));
    } else if (leaf->max_def > 0 || leaf->max_rep > 0) {
        DF_TRY(ensure_out_levels(out, out->nlevels + n, leaf->max_def > 0, leaf->max_rep > 0, err));
        if (leaf->max_def > 0) {
            memcpy(out->def + out->nlevels, cr->page_def + a, (size_t)n * sizeof *out->def);
            nonnull = count_nonnull(cr->page_def + a, n, leaf->max_def);
        }
        if (leaf->max_rep > 0) memcpy(out->rep + out->nlevels, cr->page_rep + a, (size_t)n * sizeof *out->rep);
    }
    out->nlevels += n;
    cr->page_pos += (int32_t)n;
    return df__parquet_decode_values(cr, nonnull, out, err);
}

/*
 * Scans repetition levels rep[0..avail) for record starts (level 0): counts
 * them into *started until it reaches `records`, and returns how many entries
 * belong to the records counted; *full is set when the scan stopped at the
 * start of a record beyond `records` (the caller has all it asked for).
 */
static int64_t record_entries(const int16_t *rep, int64_t avail, int64_t records, int64_t *started, bool *full) {
    *full = false;
    for (int64_t i = 0; i < avail; i++) {
        if (rep[i] != 0) continue;
        if (*started == records) {
            *full = true;
            return i;
        }
        (*started)++;
    }
    return avail;
}

df_errkind df__parquet_column_read(pq_column_reader *cr, int64_t records, pq_leaf_out *out, df_error *err) {
    const pq_leaf *leaf = cr->leaf;
    int64_t started = 0;
    for (;;) {
        if (leaf->max_rep == 0 && started == records) break;
        if (!cr->page_loaded || cr->page_pos >= cr->page_values) {
            bool loaded;
            DF_TRY(load_page(cr, &loaded, err));
            if (!loaded) break;
        }
        if (cr->page_pos >= cr->win_end) DF_TRY(decode_window(cr, err));
        int64_t a = cr->page_pos - cr->win_start, avail = cr->win_end - cr->page_pos;
        if (leaf->max_rep == 0) {
            int64_t take = DF_MIN(records - started, avail);
            DF_TRY(take_entries(cr, take, out, err));
            started += take;
            continue;
        }
        bool full;
        int64_t i = record_entries(cr->page_rep + a, avail, records, &started, &full);
        DF_TRY(take_entries(cr, i, out, err));
        if (full) break;
    }
    out->records += started;
    return DF_OK;
}

/* Passes over page entries [page_pos, page_pos + n): counts their values and skips them in the decoder. */
static df_errkind skip_entries(pq_column_reader *cr, int64_t n, df_error *err) {
    const pq_leaf *leaf = cr->leaf;
    int64_t a = cr->page_pos - cr->win_start;
    int64_t nonnull = n;
    if (cr->bit_levels) nonnull = df_bitmap_count(cr->page_bits, a, n);
    else if (leaf->max_def > 0) nonnull = count_nonnull(cr->page_def + a, n, leaf->max_def);
    cr->page_pos += (int32_t)n;
    return df__parquet_skip_values(cr, nonnull, err);
}

df_errkind df__parquet_column_skip(pq_column_reader *cr, int64_t records, int64_t *skipped, df_error *err) {
    const pq_leaf *leaf = cr->leaf;
    int64_t started = 0;
    *skipped = 0;
    for (;;) {
        if (leaf->max_rep == 0 && started == records) break;
        if (!cr->page_loaded || cr->page_pos >= cr->page_values) {
            if (leaf->max_rep == 0) {
                int64_t whole;
                DF_TRY(skip_pages(cr, records - started, &whole, err));
                started += whole;
                if (started == records) break;
            }
            bool loaded;
            DF_TRY(load_page(cr, &loaded, err));
            if (!loaded) break;
        }
        if (cr->page_pos >= cr->win_end) DF_TRY(decode_window(cr, err));
        int64_t a = cr->page_pos - cr->win_start, avail = cr->win_end - cr->page_pos;
        if (leaf->max_rep == 0) {
            int64_t take = DF_MIN(records - started, avail);
            DF_TRY(skip_entries(cr, take, err));
            started += take;
            continue;
        }
        bool full;
        int64_t i = record_entries(cr->page_rep + a, avail, records, &started, &full);
        DF_TRY(skip_entries(cr, i, err));
        if (full) break;
    }
    *skipped = started;
    return DF_OK;
}
