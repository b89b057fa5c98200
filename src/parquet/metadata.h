/*
 * Parquet footer and page-header structures, decoded from the Thrift
 * compact protocol (field numbers from the format's parquet.thrift).
 *
 * Footer structures live in an arena owned by the file; binary fields
 * (statistics bounds) point into the footer bytes, which the file keeps.
 * Page headers are decoded without allocating (page statistics are
 * skipped), since they are read once per page in the hot path.
 *
 * Optional integer fields use -1 (or a has_ flag) for "absent".
 */
#ifndef DF_PARQUET_METADATA_H
#define DF_PARQUET_METADATA_H

#include "parquet/parquet.h"
#include "parquet/thrift.h"

/* Encodings (format enum values). */
enum {
    PQ_ENC_PLAIN = 0,
    PQ_ENC_PLAIN_DICTIONARY = 2,
    PQ_ENC_RLE = 3,
    PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5,
    PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
    PQ_ENC_BYTE_STREAM_SPLIT = 9,
};

/* Page types. */
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

/* Repetition. */
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

/* Converted types (legacy annotations). */
enum {
    PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2, PQ_CT_LIST = 3, PQ_CT_ENUM = 4, PQ_CT_DECIMAL = 5,
    PQ_CT_DATE = 6, PQ_CT_TIME_MILLIS = 7, PQ_CT_TIME_MICROS = 8, PQ_CT_TIMESTAMP_MILLIS = 9,
    PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11, PQ_CT_UINT_16 = 12, PQ_CT_UINT_32 = 13, PQ_CT_UINT_64 = 14,
    PQ_CT_INT_8 = 15, PQ_CT_INT_16 = 16, PQ_CT_INT_32 = 17, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19, PQ_CT_BSON = 20,
    PQ_CT_INTERVAL = 21,
};

/* LogicalType union members (field ids); PQ_LT_NONE = absent, PQ_LT_UNKNOWN_ID = an id we do not know. */
enum {
    PQ_LT_NONE = 0, PQ_LT_STRING = 1, PQ_LT_MAP = 2, PQ_LT_LIST = 3, PQ_LT_ENUM = 4, PQ_LT_DECIMAL = 5,
    PQ_LT_DATE = 6, PQ_LT_TIME = 7, PQ_LT_TIMESTAMP = 8, PQ_LT_INTEGER = 10, PQ_LT_NULL = 11, PQ_LT_JSON = 12,
    PQ_LT_BSON = 13, PQ_LT_UUID = 14, PQ_LT_FLOAT16 = 15, PQ_LT_VARIANT = 16, PQ_LT_GEOMETRY = 17,
    PQ_LT_GEOGRAPHY = 18, PQ_LT_VECTOR = 19, PQ_LT_UNKNOWN_ID = 1000,
};

typedef struct pq_logical_type {
    int kind;               /* PQ_LT_* */
    int32_t scale;          /* decimal */
    int32_t precision;      /* decimal */
    bool utc;               /* time/timestamp isAdjustedToUTC */
    df_time_unit unit;      /* time/timestamp: MILLI, MICRO or NANO */
    int8_t bit_width;       /* integer */
    bool is_signed;         /* integer */
} pq_logical_type;

typedef struct pq_schema_element {
    const char *name;       /* NUL-terminated copy (arena) */
    int32_t type;           /* physical type, -1 for groups */
    int32_t type_length;    /* FLBA width; -1 absent */
    int32_t repetition;     /* PQ_REQUIRED/OPTIONAL/REPEATED; -1 absent (root) */
    int32_t num_children;   /* -1 absent (a leaf) */
    int32_t converted_type; /* PQ_CT_*; -1 absent */
    int32_t scale;          /* -1 absent */
    int32_t precision;      /* -1 absent */
    int32_t field_id;       /* -1 absent */
    pq_logical_type logical;
} pq_schema_element;

typedef struct pq_statistics {
    bool present;           /* the Statistics struct was there */
    bool has_max, has_min;  /* legacy max/min (signed order) */
    bool has_max_value, has_min_value;
    bool has_null_count, has_distinct_count, has_nan_count;
    bool has_max_exact, has_min_exact;
    bool is_max_exact, is_min_exact;
    pq_bytes max, min;      /* legacy fields */
    pq_bytes max_value, min_value;
    int64_t null_count, distinct_count, nan_count;
} pq_statistics;

typedef struct pq_key_value {
    const char *key;        /* NUL-terminated (arena) */
    const char *value;      /* NUL-terminated (arena), NULL when absent */
} pq_key_value;

typedef struct pq_encoding_stats {
    int32_t page_type;
    int32_t encoding;
    int32_t count;
} pq_encoding_stats;

typedef struct pq_column_meta {
    int32_t type;                   /* physical type */
    int32_t *encodings;             /* arena array */
    uint32_t nencodings;
    const char **path;              /* path_in_schema (arena) */
    uint32_t npath;
    int32_t codec;
    int64_t num_values;
    int64_t total_uncompressed_size;
    int64_t total_compressed_size;
    pq_key_value *kv;               /* column key-value metadata */
    uint32_t nkv;
    int64_t data_page_offset;
    int64_t index_page_offset;      /* -1 absent */
    int64_t dictionary_page_offset; /* -1 absent */
    pq_statistics stats;
    pq_encoding_stats *encoding_stats;
    uint32_t nencoding_stats;
    int64_t bloom_filter_offset;    /* -1 absent */
    int32_t bloom_filter_length;    /* -1 absent */
} pq_column_meta;

typedef struct pq_column_chunk {
    const char *file_path;          /* NULL unless the data lives in another file (unsupported) */
    int64_t file_offset;
    bool has_meta;                  /* meta_data present */
    pq_column_meta meta;
    int64_t offset_index_offset;    /* page index (parsed, not used): -1 absent */
    int32_t offset_index_length;
    int64_t column_index_offset;
    int32_t column_index_length;
    bool encrypted;                 /* crypto_metadata or encrypted_column_metadata present */
} pq_column_chunk;

typedef struct pq_sorting_column {
    int32_t column_idx;
    bool descending;
    bool nulls_first;
} pq_sorting_column;

typedef struct pq_row_group {
    pq_column_chunk *columns;
    uint32_t ncolumns;
    int64_t total_byte_size;
    int64_t num_rows;
    pq_sorting_column *sorting;
    uint32_t nsorting;
    int64_t file_offset;            /* -1 absent */
    int64_t total_compressed_size;  /* -1 absent */
    int32_t ordinal;                /* -1 absent */
} pq_row_group;

/* ColumnOrder union member per leaf: 0 absent/unknown, 1 TYPE_ORDER, 2 IEEE754, 3 INT96 order. */
typedef struct pq_file_meta {
    int32_t version;
    pq_schema_element *schema;
    uint32_t nschema;
    int64_t num_rows;
    pq_row_group *row_groups;
    uint32_t nrow_groups;
    pq_key_value *kv;
    uint32_t nkv;
    const char *created_by;         /* NULL when absent */
    int8_t *column_orders;
    uint32_t ncolumn_orders;
    bool encrypted;                 /* encryption_algorithm present (plaintext-footer encryption) */
} pq_file_meta;

typedef struct pq_data_page_header {
    int32_t num_values;
    int32_t encoding;
    int32_t def_encoding;
    int32_t rep_encoding;
} pq_data_page_header;

typedef struct pq_dictionary_page_header {
    int32_t num_values;
    int32_t encoding;
    bool is_sorted;
} pq_dictionary_page_header;

typedef struct pq_data_page_header_v2 {
    int32_t num_values;
    int32_t num_nulls;
    int32_t num_rows;
    int32_t encoding;
    int32_t def_length;
    int32_t rep_length;
    bool is_compressed;
} pq_data_page_header_v2;

typedef struct pq_page_header {
    int32_t type;
    int32_t uncompressed_size;
    int32_t compressed_size;
    bool has_crc;
    uint32_t crc;
    bool has_data, has_dict, has_data_v2;
    pq_data_page_header data;
    pq_dictionary_page_header dict;
    pq_data_page_header_v2 data_v2;
} pq_page_header;

/*
 * Decodes FileMetaData from `len` footer bytes; allocations come from
 * `arena` (whose limit bounds them).  Binary fields point into `data`.
 */
df_errkind df__parquet_parse_file_meta(const uint8_t *data, size_t len, df_arena *arena, pq_file_meta *out,
                                       df_error *err);
/*
 * Decodes a PageHeader at the start of [data, data+len): on success
 * *consumed is the header's byte length.  A header cut short by `len`
 * returns DF_ERR_PARQUET_FORMAT with *truncated set, so callers that
 * fetched a window of the file can retry with more bytes.
 */
df_errkind df__parquet_parse_page_header(const uint8_t *data, size_t len, pq_page_header *out, size_t *consumed,
                                         bool *truncated, df_error *err);

/* Writer side: serialises the page header / file metadata. */
df_errkind df__parquet_write_page_header(const pq_page_header *h, df_buf *out, df_error *err);
df_errkind df__parquet_write_file_meta(const pq_file_meta *m, df_buf *out, df_error *err);

/* Printable names for messages. */
const char *df__parquet_encoding_name(int32_t encoding);
const char *df__parquet_codec_name(int32_t codec);
const char *df__parquet_physical_name(int32_t type);

#endif
