/*
 * Decoding (and, for the writer, encoding) of the Parquet footer and page
 * headers.  One function per Thrift struct; field numbers follow the
 * format's parquet.thrift.  Unknown fields are skipped, fields of an
 * unexpected wire type are skipped as if absent, required fields are
 * checked after each struct.
 */
#include "parquet/metadata.h"

#include <stdarg.h>
#include <stdio.h>

/* Decoder plus the arena that receives footer structures. */
typedef struct meta_ctx {
    pq_tdec d;              /* latched decoder */
    df_arena *arena;        /* destination of arrays and strings; its limit caps the footer's expansion */
} meta_ctx;

#define FIELDS_BEGIN(c)                                          \
    int16_t last_ = 0;                                           \
    int type_;                                                   \
    if (!df__parquet_tdec_struct_begin(&(c)->d)) return;         \
    for (int id_; (id_ = df__parquet_tdec_field(&(c)->d, &last_, &type_)) >= 0;) { \
        switch (id_) {
#define FIELDS_END(c)                                            \
        default: df__parquet_tdec_skip(&(c)->d, type_); break;   \
        }                                                        \
    }                                                            \
    df__parquet_tdec_struct_end(&(c)->d);

/* Latches an allocation failure (the arena limit doubles as the footer's expansion cap). */
static void *ctx_alloc(meta_ctx *c, size_t count, size_t size) {
    if (c->d.kind != DF_OK) return NULL;
    size_t bytes;
    if (df_mul_overflow_size(count, size ? size : 1, &bytes)) bytes = SIZE_MAX;
    void *p = bytes <= SIZE_MAX / 2 ? df_arena_calloc(c->arena, count ? count : 1, size ? size : 1) : NULL;
    if (!p) {
        c->d.kind = DF_ERR_PARQUET_FORMAT;
        df_error_set(c->d.err, DF_ERR_PARQUET_FORMAT,
                     "invalid %s: decoding needs more memory than the footer size allows (%zu elements)", c->d.what,
                     count);
        c->d.p = c->d.end;
    }
    return p;
}

static const char *ctx_string(meta_ctx *c, int type) {
    pq_bytes b;
    if (!df__parquet_tdec_binary(&c->d, type, &b)) return NULL;
    char *s = ctx_alloc(c, (size_t)b.len + 1, 1);
    if (s && b.len) memcpy(s, b.ptr, b.len);
    return s;
}

/* Reads list<i32>. */
static int32_t *ctx_i32_list(meta_ctx *c, int type, uint32_t *n) {
    int et;
    *n = 0;
    if (!df__parquet_tdec_list(&c->d, type, &et, n)) return NULL;
    int32_t *a = ctx_alloc(c, *n, sizeof *a);
    for (uint32_t i = 0; a && i < *n && c->d.kind == DF_OK; i++) (void)df__parquet_tdec_i32(&c->d, et, &a[i]);
    if (!a) *n = 0;
    return a;
}

static const char **ctx_string_list(meta_ctx *c, int type, uint32_t *n) {
    int et;
    *n = 0;
    if (!df__parquet_tdec_list(&c->d, type, &et, n)) return NULL;
    const char **a = ctx_alloc(c, *n, sizeof *a);
    for (uint32_t i = 0; a && i < *n && c->d.kind == DF_OK; i++) {
        a[i] = ctx_string(c, et);
        if (!a[i] && c->d.kind == DF_OK) df__parquet_tdec_fail(&c->d, "path element is not a string");
    }
    if (!a) *n = 0;
    return a;
}

/* ---- small structs -------------------------------------------------------- */

/* TimeUnit union: MILLIS=1, MICROS=2, NANOS=3 (each an empty struct). */
static void parse_time_unit(meta_ctx *c, df_time_unit *unit, bool *known) {
    *known = false;
    FIELDS_BEGIN(c)
    case 1: case 2: case 3:
        *unit = id_ == 1 ? DF_UNIT_MILLI : id_ == 2 ? DF_UNIT_MICRO : DF_UNIT_NANO;
        *known = type_ == TC_STRUCT;
        df__parquet_tdec_skip(&c->d, type_);
        break;
    FIELDS_END(c)
}

/* TimeType / TimestampType: 1 isAdjustedToUTC, 2 unit. */
static void parse_time_like(meta_ctx *c, pq_logical_type *lt) {
    bool known = false;
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_bool(&c->d, type_, &lt->utc); break;
    case 2:
        if (type_ == TC_STRUCT) parse_time_unit(c, &lt->unit, &known);
        else df__parquet_tdec_skip(&c->d, type_);
        break;
    FIELDS_END(c)
    if (!known) lt->kind = PQ_LT_UNKNOWN_ID;   /* an unknown unit: treat the annotation as unknown */
}

static void parse_decimal_type(meta_ctx *c, pq_logical_type *lt) {
    lt->scale = lt->precision = -1;
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_i32(&c->d, type_, &lt->scale); break;
    case 2: (void)df__parquet_tdec_i32(&c->d, type_, &lt->precision); break;
    FIELDS_END(c)
}

static void parse_int_type(meta_ctx *c, pq_logical_type *lt) {
    int64_t w = 0;
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_int(&c->d, type_, &w); break;
    case 2: (void)df__parquet_tdec_bool(&c->d, type_, &lt->is_signed); break;
    FIELDS_END(c)
    lt->bit_width = (int8_t)(w >= 0 && w <= 64 ? w : 0);
}

/* LogicalType union: exactly one member is expected; unknown members give PQ_LT_UNKNOWN_ID. */
static void parse_logical_type(meta_ctx *c, pq_logical_type *lt) {
    memset(lt, 0, sizeof *lt);
    FIELDS_BEGIN(c)
    case PQ_LT_TIME:
    case PQ_LT_TIMESTAMP:
        if (type_ != TC_STRUCT) { df__parquet_tdec_skip(&c->d, type_); break; }
        lt->kind = id_;
        parse_time_like(c, lt);
        break;
    case PQ_LT_DECIMAL:
        if (type_ != TC_STRUCT) { df__parquet_tdec_skip(&c->d, type_); break; }
        lt->kind = id_;
        parse_decimal_type(c, lt);
        break;
    case PQ_LT_INTEGER:
        if (type_ != TC_STRUCT) { df__parquet_tdec_skip(&c->d, type_); break; }
        lt->kind = id_;
        parse_int_type(c, lt);
        break;
    case PQ_LT_STRING: case PQ_LT_MAP: case PQ_LT_LIST: case PQ_LT_ENUM: case PQ_LT_DATE: case PQ_LT_NULL:
    case PQ_LT_JSON: case PQ_LT_BSON: case PQ_LT_UUID: case PQ_LT_FLOAT16: case PQ_LT_VARIANT:
    case PQ_LT_GEOMETRY: case PQ_LT_GEOGRAPHY: case PQ_LT_VECTOR:
        lt->kind = type_ == TC_STRUCT ? id_ : lt->kind;
        df__parquet_tdec_skip(&c->d, type_);
        break;
    default:
        lt->kind = PQ_LT_UNKNOWN_ID;
        df__parquet_tdec_skip(&c->d, type_);
        break;
    }
    }
    df__parquet_tdec_struct_end(&c->d);
}

static void parse_schema_element(meta_ctx *c, pq_schema_element *e) {
    e->type = e->type_length = e->repetition = e->num_children = e->converted_type = -1;
    e->scale = e->precision = e->field_id = -1;
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_i32(&c->d, type_, &e->type); break;
    case 2: (void)df__parquet_tdec_i32(&c->d, type_, &e->type_length); break;
    case 3: (void)df__parquet_tdec_i32(&c->d, type_, &e->repetition); break;
    case 4: e->name = ctx_string(c, type_); break;
    case 5: (void)df__parquet_tdec_i32(&c->d, type_, &e->num_children); break;
    case 6: (void)df__parquet_tdec_i32(&c->d, type_, &e->converted_type); break;
    case 7: (void)df__parquet_tdec_i32(&c->d, type_, &e->scale); break;
    case 8: (void)df__parquet_tdec_i32(&c->d, type_, &e->precision); break;
    case 9: (void)df__parquet_tdec_i32(&c->d, type_, &e->field_id); break;
    case 10:
        if (type_ == TC_STRUCT) parse_logical_type(c, &e->logical);
        else df__parquet_tdec_skip(&c->d, type_);
        break;
    FIELDS_END(c)
    if (!e->name && c->d.kind == DF_OK) df__parquet_tdec_fail(&c->d, "schema element without a name");
}

static void parse_statistics(meta_ctx *c, pq_statistics *s) {
    memset(s, 0, sizeof *s);
    s->present = true;
    FIELDS_BEGIN(c)
    case 1: s->has_max = df__parquet_tdec_binary(&c->d, type_, &s->max); break;
    case 2: s->has_min = df__parquet_tdec_binary(&c->d, type_, &s->min); break;
    case 3: s->has_null_count = df__parquet_tdec_int(&c->d, type_, &s->null_count); break;
    case 4: s->has_distinct_count = df__parquet_tdec_int(&c->d, type_, &s->distinct_count); break;
    case 5: s->has_max_value = df__parquet_tdec_binary(&c->d, type_, &s->max_value); break;
    case 6: s->has_min_value = df__parquet_tdec_binary(&c->d, type_, &s->min_value); break;
    case 7: s->has_max_exact = df__parquet_tdec_bool(&c->d, type_, &s->is_max_exact); break;
    case 8: s->has_min_exact = df__parquet_tdec_bool(&c->d, type_, &s->is_min_exact); break;
    case 9: s->has_nan_count = df__parquet_tdec_int(&c->d, type_, &s->nan_count); break;
    FIELDS_END(c)
}

static void parse_key_value(meta_ctx *c, pq_key_value *kv) {
    FIELDS_BEGIN(c)
    case 1: kv->key = ctx_string(c, type_); break;
    case 2: kv->value = ctx_string(c, type_); break;
    FIELDS_END(c)
    if (!kv->key && c->d.kind == DF_OK) df__parquet_tdec_fail(&c->d, "key-value entry without a key");
}

static pq_key_value *parse_key_values(meta_ctx *c, int type, uint32_t *n) {
    int et;
    *n = 0;
    if (!df__parquet_tdec_list(&c->d, type, &et, n)) return NULL;
    if (et != TC_STRUCT && *n) {
        df__parquet_tdec_fail(&c->d, "key-value metadata is not a list of structs");
        return NULL;
    }
    pq_key_value *a = ctx_alloc(c, *n, sizeof *a);
    for (uint32_t i = 0; a && i < *n && c->d.kind == DF_OK; i++) parse_key_value(c, &a[i]);
    if (!a) *n = 0;
    return a;
}

static void parse_encoding_stats(meta_ctx *c, pq_encoding_stats *s) {
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_i32(&c->d, type_, &s->page_type); break;
    case 2: (void)df__parquet_tdec_i32(&c->d, type_, &s->encoding); break;
    case 3: (void)df__parquet_tdec_i32(&c->d, type_, &s->count); break;
    FIELDS_END(c)
}

/* ---- column chunks and row groups ---------------------------------------- */

/* Required-field bits of ColumnMetaData. */
enum { CM_TYPE = 1, CM_PATH = 2, CM_CODEC = 4, CM_NUM_VALUES = 8, CM_SIZE = 16, CM_DATA_OFFSET = 32 };

static void parse_column_meta(meta_ctx *c, pq_column_meta *m) {
    m->index_page_offset = m->dictionary_page_offset = m->bloom_filter_offset = -1;
    m->bloom_filter_length = -1;
    m->type = m->codec = -1;
    unsigned seen = 0;
    FIELDS_BEGIN(c)
    case 1: if (df__parquet_tdec_i32(&c->d, type_, &m->type)) seen |= CM_TYPE; break;
    case 2: m->encodings = ctx_i32_list(c, type_, &m->nencodings); break;
    case 3: m->path = ctx_string_list(c, type_, &m->npath); seen |= CM_PATH; break;
    case 4: if (df__parquet_tdec_i32(&c->d, type_, &m->codec)) seen |= CM_CODEC; break;
    case 5: if (df__parquet_tdec_int(&c->d, type_, &m->num_values)) seen |= CM_NUM_VALUES; break;
    case 6: (void)df__parquet_tdec_int(&c->d, type_, &m->total_uncompressed_size); break;
    case 7: if (df__parquet_tdec_int(&c->d, type_, &m->total_compressed_size)) seen |= CM_SIZE; break;
    case 8: m->kv = parse_key_values(c, type_, &m->nkv); break;
    case 9: if (df__parquet_tdec_int(&c->d, type_, &m->data_page_offset)) seen |= CM_DATA_OFFSET; break;
    case 10: (void)df__parquet_tdec_int(&c->d, type_, &m->index_page_offset); break;
    case 11: (void)df__parquet_tdec_int(&c->d, type_, &m->dictionary_page_offset); break;
    case 12:
        if (type_ == TC_STRUCT) parse_statistics(c, &m->stats);
        else df__parquet_tdec_skip(&c->d, type_);
        break;
    case 13: {
        int et;
        if (!df__parquet_tdec_list(&c->d, type_, &et, &m->nencoding_stats)) break;
        if (et != TC_STRUCT && m->nencoding_stats) {
            df__parquet_tdec_fail(&c->d, "encoding_stats is not a list of structs");
            break;
        }
        m->encoding_stats = ctx_alloc(c, m->nencoding_stats, sizeof *m->encoding_stats);
        for (uint32_t i = 0; m->encoding_stats && i < m->nencoding_stats && c->d.kind == DF_OK; i++)
            parse_encoding_stats(c, &m->encoding_stats[i]);
        break;
    }
    case 14: (void)df__parquet_tdec_int(&c->d, type_, &m->bloom_filter_offset); break;
    case 15: (void)df__parquet_tdec_i32(&c->d, type_, &m->bloom_filter_length); break;
    FIELDS_END(c)
    unsigned need = CM_TYPE | CM_PATH | CM_CODEC | CM_NUM_VALUES | CM_SIZE | CM_DATA_OFFSET;
    if (c->d.kind == DF_OK && (seen & need) != need)
        df__parquet_tdec_fail(&c->d, "column metadata misses required fields (mask %#x)", need & ~seen);
}

static void parse_column_chunk(meta_ctx *c, pq_column_chunk *cc) {
    cc->offset_index_offset = cc->column_index_offset = -1;
    cc->offset_index_length = cc->column_index_length = -1;
    FIELDS_BEGIN(c)
    case 1: cc->file_path = ctx_string(c, type_); break;
    case 2: (void)df__parquet_tdec_int(&c->d, type_, &cc->file_offset); break;
    case 3:
        if (type_ == TC_STRUCT) {
            parse_column_meta(c, &cc->meta);
            cc->has_meta = true;
        } else {
            df__parquet_tdec_skip(&c->d, type_);
        }
        break;
    case 4: (void)df__parquet_tdec_int(&c->d, type_, &cc->offset_index_offset); break;
    case 5: (void)df__parquet_tdec_i32(&c->d, type_, &cc->offset_index_length); break;
    case 6: (void)df__parquet_tdec_int(&c->d, type_, &cc->column_index_offset); break;
    case 7: (void)df__parquet_tdec_i32(&c->d, type_, &cc->column_index_length); break;
    case 8:
    case 9:
        cc->encrypted = true;
        df__parquet_tdec_skip(&c->d, type_);
        break;
    FIELDS_END(c)
}

static void parse_sorting_column(meta_ctx *c, pq_sorting_column *s) {
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_i32(&c->d, type_, &s->column_idx); break;
    case 2: (void)df__parquet_tdec_bool(&c->d, type_, &s->descending); break;
    case 3: (void)df__parquet_tdec_bool(&c->d, type_, &s->nulls_first); break;
    FIELDS_END(c)
}

static void parse_row_group(meta_ctx *c, pq_row_group *rg) {
    rg->file_offset = rg->total_compressed_size = -1;
    rg->ordinal = -1;
    rg->num_rows = -1;
    bool has_columns = false;
    FIELDS_BEGIN(c)
    case 1: {
        int et;
        if (!df__parquet_tdec_list(&c->d, type_, &et, &rg->ncolumns)) break;
        if (et != TC_STRUCT && rg->ncolumns) {
            df__parquet_tdec_fail(&c->d, "row group columns are not structs");
            break;
        }
        rg->columns = ctx_alloc(c, rg->ncolumns, sizeof *rg->columns);
        for (uint32_t i = 0; rg->columns && i < rg->ncolumns && c->d.kind == DF_OK; i++)
            parse_column_chunk(c, &rg->columns[i]);
        has_columns = true;
        break;
    }
    case 2: (void)df__parquet_tdec_int(&c->d, type_, &rg->total_byte_size); break;
    case 3: (void)df__parquet_tdec_int(&c->d, type_, &rg->num_rows); break;
    case 4: {
        int et;
        if (!df__parquet_tdec_list(&c->d, type_, &et, &rg->nsorting)) break;
        if (et != TC_STRUCT && rg->nsorting) {
            df__parquet_tdec_fail(&c->d, "sorting columns are not structs");
            break;
        }
        rg->sorting = ctx_alloc(c, rg->nsorting, sizeof *rg->sorting);
        for (uint32_t i = 0; rg->sorting && i < rg->nsorting && c->d.kind == DF_OK; i++)
            parse_sorting_column(c, &rg->sorting[i]);
        break;
    }
    case 5: (void)df__parquet_tdec_int(&c->d, type_, &rg->file_offset); break;
    case 6: (void)df__parquet_tdec_int(&c->d, type_, &rg->total_compressed_size); break;
    case 7: (void)df__parquet_tdec_i32(&c->d, type_, &rg->ordinal); break;
    FIELDS_END(c)
    if (c->d.kind == DF_OK && (!has_columns || rg->num_rows < 0))
        df__parquet_tdec_fail(&c->d, "row group misses its columns or a valid row count");
}

/* ColumnOrder union: the member id, or 0 when unknown. */
static void parse_column_order(meta_ctx *c, int8_t *order) {
    *order = 0;
    FIELDS_BEGIN(c)
    case 1: case 2: case 3:
        *order = (int8_t)id_;
        df__parquet_tdec_skip(&c->d, type_);
        break;
    FIELDS_END(c)
}

static void parse_file_meta(meta_ctx *c, pq_file_meta *m) {
    bool has_schema = false, has_rows = false, has_groups = false;
    FIELDS_BEGIN(c)
    case 1: (void)df__parquet_tdec_i32(&c->d, type_, &m->version); break;
    case 2: {
        int et;
        if (!df__parquet_tdec_list(&c->d, type_, &et, &m->nschema)) break;
        if (et != TC_STRUCT && m->nschema) {
            df__parquet_tdec_fail(&c->d, "schema is not a list of structs");
            break;
        }
        m->schema = ctx_alloc(c, m->nschema, sizeof *m->schema);
        for (uint32_t i = 0; m->schema && i < m->nschema && c->d.kind == DF_OK; i++)
            parse_schema_element(c, &m->schema[i]);
        has_schema = true;
        break;
    }
    case 3: has_rows = df__parquet_tdec_int(&c->d, type_, &m->num_rows); break;
    case 4: {
        int et;
        if (!df__parquet_tdec_list(&c->d, type_, &et, &m->nrow_groups)) break;
        if (et != TC_STRUCT && m->nrow_groups) {
            df__parquet_tdec_fail(&c->d, "row groups are not a list of structs");
            break;
        }
        m->row_groups = ctx_alloc(c, m->nrow_groups, sizeof *m->row_groups);
        for (uint32_t i = 0; m->row_groups && i < m->nrow_groups && c->d.kind == DF_OK; i++)
            parse_row_group(c, &m->row_groups[i]);
        has_groups = true;
        break;
    }
    case 5: m->kv = parse_key_values(c, type_, &m->nkv); break;
    case 6: m->created_by = ctx_string(c, type_); break;
    case 7: {
        int et;
        if (!df__parquet_tdec_list(&c->d, type_, &et, &m->ncolumn_orders)) break;
        m->column_orders = ctx_alloc(c, m->ncolumn_orders, 1);
        for (uint32_t i = 0; m->column_orders && i < m->ncolumn_orders && c->d.kind == DF_OK; i++) {
            if (et == TC_STRUCT) parse_column_order(c, &m->column_orders[i]);
            else df__parquet_tdec_skip(&c->d, et);
        }
        break;
    }
    case 8:
        m->encrypted = true;
        df__parquet_tdec_skip(&c->d, type_);
        break;
    FIELDS_END(c)
    if (c->d.kind == DF_OK && (!has_schema || !has_rows || !has_groups))
        df__parquet_tdec_fail(&c->d, "file metadata misses its schema, row count or row groups");
}

df_errkind df__parquet_parse_file_meta(const uint8_t *data, size_t len, df_arena *arena, pq_file_meta *out,
                                       df_error *err) {
    memset(out, 0, sizeof *out);
    meta_ctx c;
    df__parquet_tdec_init(&c.d, data, len, "Parquet file metadata", err);
    c.arena = arena;
    parse_file_meta(&c, out);
    return c.d.kind;
}

/* ---- page headers --------------------------------------------------------- */

static void parse_data_page_header(pq_tdec *d, pq_data_page_header *h) {
    h->num_values = -1;
    h->encoding = h->def_encoding = h->rep_encoding = -1;
    if (!df__parquet_tdec_struct_begin(d)) return;
    int16_t last = 0;
    int t;
    for (int id; (id = df__parquet_tdec_field(d, &last, &t)) >= 0;) {
        switch (id) {
        case 1: (void)df__parquet_tdec_i32(d, t, &h->num_values); break;
        case 2: (void)df__parquet_tdec_i32(d, t, &h->encoding); break;
        case 3: (void)df__parquet_tdec_i32(d, t, &h->def_encoding); break;
        case 4: (void)df__parquet_tdec_i32(d, t, &h->rep_encoding); break;
        default: df__parquet_tdec_skip(d, t); break;   /* 5: statistics, not needed to decode */
        }
    }
    df__parquet_tdec_struct_end(d);
}

static void parse_dict_page_header(pq_tdec *d, pq_dictionary_page_header *h) {
    h->num_values = -1;
    h->encoding = -1;
    if (!df__parquet_tdec_struct_begin(d)) return;
    int16_t last = 0;
    int t;
    for (int id; (id = df__parquet_tdec_field(d, &last, &t)) >= 0;) {
        switch (id) {
        case 1: (void)df__parquet_tdec_i32(d, t, &h->num_values); break;
        case 2: (void)df__parquet_tdec_i32(d, t, &h->encoding); break;
        case 3: (void)df__parquet_tdec_bool(d, t, &h->is_sorted); break;
        default: df__parquet_tdec_skip(d, t); break;
        }
    }
    df__parquet_tdec_struct_end(d);
}

static void parse_data_page_header_v2(pq_tdec *d, pq_data_page_header_v2 *h) {
    h->num_values = h->num_nulls = h->num_rows = -1;
    h->encoding = -1;
    h->def_length = h->rep_length = -1;
    h->is_compressed = true;
    if (!df__parquet_tdec_struct_begin(d)) return;
    int16_t last = 0;
    int t;
    for (int id; (id = df__parquet_tdec_field(d, &last, &t)) >= 0;) {
        switch (id) {
        case 1: (void)df__parquet_tdec_i32(d, t, &h->num_values); break;
        case 2: (void)df__parquet_tdec_i32(d, t, &h->num_nulls); break;
        case 3: (void)df__parquet_tdec_i32(d, t, &h->num_rows); break;
        case 4: (void)df__parquet_tdec_i32(d, t, &h->encoding); break;
        case 5: (void)df__parquet_tdec_i32(d, t, &h->def_length); break;
        case 6: (void)df__parquet_tdec_i32(d, t, &h->rep_length); break;
        case 7: (void)df__parquet_tdec_bool(d, t, &h->is_compressed); break;
        default: df__parquet_tdec_skip(d, t); break;
        }
    }
    df__parquet_tdec_struct_end(d);
}

df_errkind df__parquet_parse_page_header(const uint8_t *data, size_t len, pq_page_header *out, size_t *consumed,
                                         bool *truncated, df_error *err) {
    memset(out, 0, sizeof *out);
    out->type = out->uncompressed_size = out->compressed_size = -1;
    *consumed = 0;
    *truncated = false;
    pq_tdec d;
    df__parquet_tdec_init(&d, data, len, "page header", err);
    if (!df__parquet_tdec_struct_begin(&d)) return d.kind;
    int16_t last = 0;
    int t;
    for (int id; (id = df__parquet_tdec_field(&d, &last, &t)) >= 0;) {
        switch (id) {
        case 1: (void)df__parquet_tdec_i32(&d, t, &out->type); break;
        case 2: (void)df__parquet_tdec_i32(&d, t, &out->uncompressed_size); break;
        case 3: (void)df__parquet_tdec_i32(&d, t, &out->compressed_size); break;
        case 4: {
            int32_t crc;
            out->has_crc = df__parquet_tdec_i32(&d, t, &crc);
            out->crc = (uint32_t)crc;
            break;
        }
        case 5:
            if (t == TC_STRUCT) {
                parse_data_page_header(&d, &out->data);
                out->has_data = true;
            } else {
                df__parquet_tdec_skip(&d, t);
            }
            break;
        case 7:
            if (t == TC_STRUCT) {
                parse_dict_page_header(&d, &out->dict);
                out->has_dict = true;
            } else {
                df__parquet_tdec_skip(&d, t);
            }
            break;
        case 8:
            if (t == TC_STRUCT) {
                parse_data_page_header_v2(&d, &out->data_v2);
                out->has_data_v2 = true;
            } else {
                df__parquet_tdec_skip(&d, t);
            }
            break;
        default: df__parquet_tdec_skip(&d, t); break;   /* 6: index page header */
        }
    }
    df__parquet_tdec_struct_end(&d);
    if (d.kind != DF_OK) {
        /* The decoder stopped at the end of the window: say so, so callers may fetch more. */
        *truncated = d.truncated;
        return d.kind;
    }
    if (out->type < 0 || out->uncompressed_size < 0 || out->compressed_size < 0) {
        df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid page header: missing or negative type or sizes");
        return DF_ERR_PARQUET_FORMAT;
    }
    *consumed = df__parquet_tdec_pos(&d);
    return DF_OK;
}

/* ---- names ---------------------------------------------------------------- */

const char *df__parquet_encoding_name(int32_t e) {
    static const char *const names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
                                        "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return e >= 0 && e < (int32_t)DF_ARRAY_LEN(names) ? names[e] : "unknown encoding";
}

const char *df__parquet_codec_name(int32_t codec) {
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
    return codec >= 0 && codec < (int32_t)DF_ARRAY_LEN(names) ? names[codec] : "unknown codec";
}

const char *df__parquet_physical_name(int32_t type) {
    static const char *const names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                                        "FIXED_LEN_BYTE_ARRAY"};
    return type >= 0 && type < (int32_t)DF_ARRAY_LEN(names) ? names[type] : "unknown type";
}

/* ---- encoding (writer) ------------------------------------------------------------ */

static void put_statistics(pq_tenc *e, int16_t id, const pq_statistics *s) {
    df__parquet_tenc_struct_field(e, id);
    if (s->has_max) df__parquet_tenc_binary(e, 1, s->max.ptr, s->max.len);
    if (s->has_min) df__parquet_tenc_binary(e, 2, s->min.ptr, s->min.len);
    if (s->has_null_count) df__parquet_tenc_i64(e, 3, s->null_count);
    if (s->has_max_value) df__parquet_tenc_binary(e, 5, s->max_value.ptr, s->max_value.len);
    if (s->has_min_value) df__parquet_tenc_binary(e, 6, s->min_value.ptr, s->min_value.len);
    if (s->has_max_exact) df__parquet_tenc_bool(e, 7, s->is_max_exact);
    if (s->has_min_exact) df__parquet_tenc_bool(e, 8, s->is_min_exact);
    df__parquet_tenc_struct_end(e);
}

df_errkind df__parquet_write_page_header(const pq_page_header *h, df_buf *out, df_error *err) {
    pq_tenc e;
    df__parquet_tenc_init(&e, out, err);
    df__parquet_tenc_struct_begin(&e);
    df__parquet_tenc_i32(&e, 1, h->type);
    df__parquet_tenc_i32(&e, 2, h->uncompressed_size);
    df__parquet_tenc_i32(&e, 3, h->compressed_size);
    if (h->has_crc) df__parquet_tenc_i32(&e, 4, (int32_t)h->crc);
    if (h->has_data) {
        df__parquet_tenc_struct_field(&e, 5);
        df__parquet_tenc_i32(&e, 1, h->data.num_values);
        df__parquet_tenc_i32(&e, 2, h->data.encoding);
        df__parquet_tenc_i32(&e, 3, h->data.def_encoding);
        df__parquet_tenc_i32(&e, 4, h->data.rep_encoding);
        df__parquet_tenc_struct_end(&e);
    }
    if (h->has_dict) {
        df__parquet_tenc_struct_field(&e, 7);
        df__parquet_tenc_i32(&e, 1, h->dict.num_values);
        df__parquet_tenc_i32(&e, 2, h->dict.encoding);
        df__parquet_tenc_struct_end(&e);
    }
    df__parquet_tenc_struct_end(&e);
    return e.kind;
}

static void put_logical(pq_tenc *e, const pq_logical_type *lt) {
    if (lt->kind == PQ_LT_NONE) return;
    df__parquet_tenc_struct_field(e, 10);
    df__parquet_tenc_struct_field(e, (int16_t)lt->kind);
    switch (lt->kind) {
    case PQ_LT_DECIMAL:
        df__parquet_tenc_i32(e, 1, lt->scale);
        df__parquet_tenc_i32(e, 2, lt->precision);
        break;
    case PQ_LT_TIME:
    case PQ_LT_TIMESTAMP:
        df__parquet_tenc_bool(e, 1, lt->utc);
        df__parquet_tenc_struct_field(e, 2);   /* TimeUnit union */
        df__parquet_tenc_struct_field(e, lt->unit == DF_UNIT_MILLI ? 1 : lt->unit == DF_UNIT_MICRO ? 2 : 3);
        df__parquet_tenc_struct_end(e);
        df__parquet_tenc_struct_end(e);
        break;
    case PQ_LT_INTEGER:
        df__parquet_tenc_field(e, 1, TC_BYTE);
        {
            uint8_t w = (uint8_t)lt->bit_width;
            df_buf_append(e->out, &w, 1, e->err);
        }
        df__parquet_tenc_bool(e, 2, lt->is_signed);
        break;
    default: break;
    }
    df__parquet_tenc_struct_end(e);
    df__parquet_tenc_struct_end(e);
}

static void put_schema_element(pq_tenc *e, const pq_schema_element *s) {
    df__parquet_tenc_struct_elem(e);
    if (s->type >= 0) df__parquet_tenc_i32(e, 1, s->type);
    if (s->type_length >= 0) df__parquet_tenc_i32(e, 2, s->type_length);
    if (s->repetition >= 0) df__parquet_tenc_i32(e, 3, s->repetition);
    df__parquet_tenc_string(e, 4, s->name);
    if (s->num_children >= 0) df__parquet_tenc_i32(e, 5, s->num_children);
    if (s->converted_type >= 0) df__parquet_tenc_i32(e, 6, s->converted_type);
    if (s->scale >= 0) df__parquet_tenc_i32(e, 7, s->scale);
    if (s->precision >= 0) df__parquet_tenc_i32(e, 8, s->precision);
    put_logical(e, &s->logical);
    df__parquet_tenc_struct_end(e);
}

static void put_column_chunk(pq_tenc *e, const pq_column_chunk *cc) {
    const pq_column_meta *m = &cc->meta;
    df__parquet_tenc_struct_elem(e);
    df__parquet_tenc_i64(e, 2, cc->file_offset);
    df__parquet_tenc_struct_field(e, 3);
    df__parquet_tenc_i32(e, 1, m->type);
    df__parquet_tenc_list(e, 2, TC_I32, m->nencodings);
    for (uint32_t i = 0; i < m->nencodings; i++) df__parquet_tenc_i32_elem(e, m->encodings[i]);
    df__parquet_tenc_list(e, 3, TC_BINARY, m->npath);
    for (uint32_t i = 0; i < m->npath; i++) df__parquet_tenc_string_elem(e, m->path[i]);
    df__parquet_tenc_i32(e, 4, m->codec);
    df__parquet_tenc_i64(e, 5, m->num_values);
    df__parquet_tenc_i64(e, 6, m->total_uncompressed_size);
    df__parquet_tenc_i64(e, 7, m->total_compressed_size);
    df__parquet_tenc_i64(e, 9, m->data_page_offset);
    if (m->dictionary_page_offset >= 0) df__parquet_tenc_i64(e, 11, m->dictionary_page_offset);
    if (m->stats.present) put_statistics(e, 12, &m->stats);
    df__parquet_tenc_struct_end(e);
    df__parquet_tenc_struct_end(e);
}

df_errkind df__parquet_write_file_meta(const pq_file_meta *m, df_buf *out, df_error *err) {
    pq_tenc e;
    df__parquet_tenc_init(&e, out, err);
    df__parquet_tenc_struct_begin(&e);
    df__parquet_tenc_i32(&e, 1, m->version);
    df__parquet_tenc_list(&e, 2, TC_STRUCT, m->nschema);
    for (uint32_t i = 0; i < m->nschema; i++) put_schema_element(&e, &m->schema[i]);
    df__parquet_tenc_i64(&e, 3, m->num_rows);
    df__parquet_tenc_list(&e, 4, TC_STRUCT, m->nrow_groups);
    for (uint32_t i = 0; i < m->nrow_groups; i++) {
        const pq_row_group *g = &m->row_groups[i];
        df__parquet_tenc_struct_elem(&e);
        df__parquet_tenc_list(&e, 1, TC_STRUCT, g->ncolumns);
        for (uint32_t c = 0; c < g->ncolumns; c++) put_column_chunk(&e, &g->columns[c]);
        df__parquet_tenc_i64(&e, 2, g->total_byte_size);
        df__parquet_tenc_i64(&e, 3, g->num_rows);
        if (g->file_offset >= 0) df__parquet_tenc_i64(&e, 5, g->file_offset);
        if (g->total_compressed_size >= 0) df__parquet_tenc_i64(&e, 6, g->total_compressed_size);
        if (g->ordinal >= 0) {
            df__parquet_tenc_field(&e, 7, TC_I16);
            uint8_t tmp[3];
            int n = 0;
            uint32_t z = ((uint32_t)g->ordinal << 1) ^ (uint32_t)(g->ordinal >> 31);
            while (z >= 0x80) {
                tmp[n++] = (uint8_t)(z | 0x80);
                z >>= 7;
            }
            tmp[n++] = (uint8_t)z;
            if (e.kind == DF_OK) e.kind = df_buf_append(out, tmp, (size_t)n, err);
        }
        df__parquet_tenc_struct_end(&e);
    }
    if (m->nkv) {
        df__parquet_tenc_list(&e, 5, TC_STRUCT, m->nkv);
        for (uint32_t i = 0; i < m->nkv; i++) {
            df__parquet_tenc_struct_elem(&e);
            df__parquet_tenc_string(&e, 1, m->kv[i].key);
            if (m->kv[i].value) df__parquet_tenc_string(&e, 2, m->kv[i].value);
            df__parquet_tenc_struct_end(&e);
        }
    }
    if (m->created_by) df__parquet_tenc_string(&e, 6, m->created_by);
    if (m->ncolumn_orders) {
        df__parquet_tenc_list(&e, 7, TC_STRUCT, m->ncolumn_orders);
        for (uint32_t i = 0; i < m->ncolumn_orders; i++) {
            df__parquet_tenc_struct_elem(&e);
            df__parquet_tenc_struct_field(&e, m->column_orders[i]);
            df__parquet_tenc_struct_end(&e);
            df__parquet_tenc_struct_end(&e);
        }
    }
    df__parquet_tenc_struct_end(&e);
    return e.kind;
}
