/*
 * Parquet files: reading into Arrow-layout batches, and writing batches.
 *
 * Reading is two steps.  df_parquet_file_open reads and validates the footer
 * (Thrift compact FileMetaData), converts the Parquet schema to an Arrow
 * schema exactly as pyarrow does by default (logical and converted types,
 * legacy list and map layouts) and keeps the row-group metadata.  Then
 * df_parquet_reader_open returns a lazy batch stream over chosen columns and
 * row groups: pages are fetched, checked (CRC), decompressed and decoded
 * only when a batch needs them, straight into the Arrow buffers of the
 * batch's vectors.  Reading the first rows of a large file therefore touches
 * only the first pages of the first row group.
 *
 * A file object is immutable after open and reference counted; several
 * streams (on several threads) may read one file at the same time.
 *
 * Errors: a malformed or truncated file gives DF_ERR_PARQUET_FORMAT with a
 * message naming the part (and the column and page) at fault; a valid file
 * using something we do not read gives DF_ERR_PARQUET_UNSUPPORTED;
 * decompression failures give DF_ERR_CODEC; a page whose CRC does not match
 * gives DF_ERR_CHECKSUM.  Every length read from the file is checked and
 * every allocation derived from it is capped.
 */
#ifndef DF_PARQUET_PARQUET_H
#define DF_PARQUET_PARQUET_H

#include "columnar/columnar.h"
#include "columnar/table_provider.h"
#include "storage/storage.h"

/* ------------------------------------------------------------------------ */
/* Files                                                                     */

typedef struct df_parquet_file df_parquet_file;

/* Parquet physical types (the values of the format's `Type` enum). */
typedef enum df_parquet_physical {
    DF_PARQUET_BOOLEAN = 0,
    DF_PARQUET_INT32 = 1,
    DF_PARQUET_INT64 = 2,
    DF_PARQUET_INT96 = 3,
    DF_PARQUET_FLOAT = 4,
    DF_PARQUET_DOUBLE = 5,
    DF_PARQUET_BYTE_ARRAY = 6,
    DF_PARQUET_FIXED_LEN_BYTE_ARRAY = 7,
} df_parquet_physical;

/* Compression codecs (the values of the format's `CompressionCodec` enum). */
typedef enum df_parquet_codec {
    DF_PARQUET_UNCOMPRESSED = 0,
    DF_PARQUET_SNAPPY = 1,
    DF_PARQUET_GZIP = 2,
    DF_PARQUET_LZO = 3,
    DF_PARQUET_BROTLI = 4,
    DF_PARQUET_LZ4 = 5,
    DF_PARQUET_ZSTD = 6,
    DF_PARQUET_LZ4_RAW = 7,
} df_parquet_codec;

/* Description of one leaf column (a primitive node of the Parquet schema). */
typedef struct df_parquet_leaf_info {
    const char *path;               /* dotted path of Parquet names ("a.list.element"); borrowed */
    int32_t field;                  /* index of the top-level Arrow field that contains it */
    df_parquet_physical physical;
    int32_t type_length;            /* FIXED_LEN_BYTE_ARRAY width, else 0 */
    int16_t max_def;                /* maximum definition level */
    int16_t max_rep;                /* maximum repetition level */
} df_parquet_leaf_info;

/*
 * Opens a Parquet file over `in`: reads the footer, checks magic bytes and
 * lengths, decodes the metadata and builds the Arrow schema.  The file takes
 * ownership of `in` in every case: it is closed when the file is (or at once
 * on failure).  On success *out holds one reference.
 */
df_errkind df_parquet_file_open(df_input *in, df_parquet_file **out, df_error *err);
/* Convenience: opens a local path with df_input_open_file, then as above. */
df_errkind df_parquet_file_open_path(const char *path, df_parquet_file **out, df_error *err);
/* Adds a reference (streams hold one while open). */
df_parquet_file *df_parquet_file_retain(df_parquet_file *f);
/* Drops a reference; the last one frees the file and closes its input.  Accepts NULL. */
void df_parquet_file_close(df_parquet_file *f);

/* The Arrow schema of the whole file (borrowed; valid while the file lives). */
const df_schema *df_parquet_file_schema(const df_parquet_file *f);
/* Total rows (sum over row groups) and row groups. */
int64_t df_parquet_file_num_rows(const df_parquet_file *f);
int32_t df_parquet_file_num_row_groups(const df_parquet_file *f);
/* Rows in row group `rg` (0 <= rg < num_row_groups), or -1 when out of range. */
int64_t df_parquet_file_row_group_num_rows(const df_parquet_file *f, int32_t rg);
/* Leaf columns, in file order. */
int32_t df_parquet_file_num_leaves(const df_parquet_file *f);
/* Fills *out for leaf `leaf`; returns false when out of range. */
bool df_parquet_file_leaf(const df_parquet_file *f, int32_t leaf, df_parquet_leaf_info *out);
/* Index of the leaf with this dotted path, or -1. */
int32_t df_parquet_file_find_leaf(const df_parquet_file *f, const char *path);
/* The file's `created_by` string, or NULL (borrowed). */
const char *df_parquet_file_created_by(const df_parquet_file *f);
/* Value of a footer key-value metadata entry, or NULL when absent or valueless (borrowed). */
const char *df_parquet_file_metadata(const df_parquet_file *f, const char *key);
/* Size of the file in bytes. */
uint64_t df_parquet_file_size(const df_parquet_file *f);

/*
 * Row-group statistics of the top-level field `field`, typed as that field's
 * Arrow type.  Only primitive (non-nested) fields have statistics; others,
 * and fields whose statistics are absent or unusable (legacy min/max under
 * an unsigned or byte-wise order, NaN bounds, undefined column order), get
 * has_min = has_max = false.  Truncated string bounds are returned with
 * min_exact/max_exact false.  On success the caller owns `*out` and clears
 * its scalars with df_scalar_clear; on failure *out is zeroed.
 */
df_errkind df_parquet_file_column_stats(const df_parquet_file *f, int32_t rg, int32_t field, df_column_stats *out,
                                        df_error *err);
/* Releases the scalars of statistics obtained above (the struct itself is the caller's). */
void df_parquet_column_stats_clear(df_column_stats *s);

/*
 * Decides whether row group `rg` may hold rows satisfying every predicate (a
 * conjunction); predicate columns index the file schema's top-level fields.
 * Unknown statistics, nested columns and type mismatches keep the row group.
 */
bool df_parquet_row_group_may_match(const df_parquet_file *f, int32_t rg, const df_scan_predicate *preds,
                                    int32_t npreds);

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

typedef struct df_parquet_read_options {
    /*
     * Top-level fields to read, in output order (NULL = all fields).  The
     * output schema holds these fields with their full types.
     */
    const int32_t *columns;
    int32_t ncolumns;
    /*
     * Alternatively, leaf columns to read (NULL = use `columns`).  The
     * output holds, in file order, each top-level field that contains a
     * selected leaf, with nested types pruned to the selected leaves (a map
     * keeps its key when its value is selected).
     */
    const int32_t *leaves;
    int32_t nleaves;
    /* Row groups to read, in this order (NULL = all). */
    const int32_t *row_groups;
    int32_t nrow_groups;
    /* Rows per batch; 0 = 8192. */
    int32_t batch_size;
    /* Row-group skipping: a conjunction over file top-level fields (may be NULL). */
    const df_scan_predicate *predicates;
    int32_t npredicates;
    /*
     * Row filtering: also drop every row where a predicate is false or NULL
     * (df_scan_predicate_eval).  Predicates on flat primitive fields whose
     * literals have the field's Arrow type are evaluated row by row; others
     * only prune row groups.  Their fields are decoded first, a batch at a
     * time; the other columns are decoded only for the rows kept: pages
     * without kept rows are passed over unread (flat columns) and values
     * between kept rows are skipped without being materialised.  Predicate
     * fields need not be output columns.  Batches then hold the kept rows
     * of up to batch_size file rows (never empty; possibly short).
     */
    bool filter_rows;
    /*
     * Rows to drop whatever the predicates say, as file row numbers (0 = the
     * file's first row) in ascending order: a Delta deletion vector.
     * Borrowed: must stay valid until the stream is closed.  May be NULL.
     */
    const uint64_t *deleted_rows;
    int64_t ndeleted_rows;
    /* Rows wanted at most, -1 or 0 = all: the stream ends after them (counted after filtering). */
    int64_t limit;
    /* Skip CRC verification of pages that carry one (default false: verify). */
    bool skip_crc;
    /* Counters to add to (row groups, pages, bytes, rows, batches); may be NULL. */
    df_scan_metrics *metrics;
} df_parquet_read_options;

/*
 * Opens a lazy stream of batches over `f` (options may be NULL = all columns,
 * all row groups, 8192 rows).  The stream holds its own reference to the
 * file, so the caller may close the file at once (predicates are copied;
 * deleted_rows is borrowed).  Invalid column, leaf or row-group indices give
 * DF_ERR_INVALID_ARGUMENT.  Batches never span row groups; without row
 * filtering a batch holds batch_size rows except at the end of a row group.
 */
df_errkind df_parquet_reader_open(df_parquet_file *f, const df_parquet_read_options *opts, df_batch_stream **out,
                                  df_error *err);

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

typedef struct df_parquet_writer df_parquet_writer;

typedef struct df_parquet_write_options {
    df_parquet_codec codec;         /* UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW or BROTLI (others: DF_ERR_UNSUPPORTED) */
    int32_t compression_level;      /* codec level (zstd, gzip, brotli); 0 = the codec's default */
    int64_t row_group_rows;         /* rows per row group; 0 = 1,048,576 */
    int64_t page_bytes;             /* target uncompressed data page size; 0 = 1 MiB */
    int64_t page_rows;              /* rows per data page at most; 0 = 20,000 */
    bool disable_dictionary;        /* never dictionary-encode */
    int64_t dictionary_page_bytes;  /* dictionary size limit before falling back to PLAIN; 0 = 1 MiB */
    const char *created_by;         /* NULL = "deltafunnel version <v>" */
    int32_t stats_truncate;         /* bytes kept of string min/max in the summary; 0 = 32 */
} df_parquet_write_options;

/* Statistics of one written column, for a Delta `add` action. */
typedef struct df_parquet_written_column {
    char *name;                     /* top-level field name, owned */
    df_column_stats stats;          /* min/max (strings truncated, flagged inexact) and null count */
} df_parquet_written_column;

/* What a finished file holds. */
typedef struct df_parquet_file_summary {
    uint64_t size;                  /* file bytes */
    int64_t num_rows;
    int32_t num_row_groups;
    int32_t ncolumns;
    df_parquet_written_column *columns;   /* owned, one per top-level field */
} df_parquet_file_summary;

/*
 * Creates `path` (truncating it) and prepares to write batches of `schema`.
 * Supported field types: bool, int8..int64, uint8..uint64, float16/32/64,
 * decimal128, date32, timestamp (any unit; UTC-adjusted when it has a time
 * zone; seconds are stored as milliseconds), time32/64, utf8, binary,
 * fixed_binary; other types (nested ones included) give DF_ERR_UNSUPPORTED.
 * opts may be NULL.
 */
df_errkind df_parquet_writer_open(const char *path, const df_schema *schema, const df_parquet_write_options *opts,
                                  df_parquet_writer **out, df_error *err);
/*
 * Appends the rows of `batch` (its schema must equal the writer's; nulls in
 * a non-nullable field are DF_ERR_INVALID_ARGUMENT).  Full row groups are
 * written out as they fill.  After a failure, only df_parquet_writer_abort
 * may be called.
 */
df_errkind df_parquet_writer_write(df_parquet_writer *w, const df_batch *batch, df_error *err);
/*
 * Flushes the last row group, writes the footer and closes the file, then
 * frees the writer (also on failure).  When `summary` is not NULL it is
 * filled on success (free with df_parquet_file_summary_clear).  On failure
 * the partly written file is removed.
 */
df_errkind df_parquet_writer_close(df_parquet_writer *w, df_parquet_file_summary *summary, df_error *err);
/* Abandons a writer: frees it and removes the partial file.  Accepts NULL. */
void df_parquet_writer_abort(df_parquet_writer *w);
void df_parquet_file_summary_clear(df_parquet_file_summary *s);
/*
 * Appends the Delta statistics JSON of a summary:
 * {"numRecords":N,"minValues":{...},"maxValues":{...},"nullCount":{...}}
 * (dates as "YYYY-MM-DD", timestamps as ISO-8601 with milliseconds and "Z"
 * when UTC-adjusted, decimals as numbers, binary columns without min/max).
 */
df_errkind df_parquet_file_summary_json(const df_parquet_file_summary *s, df_buf *out, df_error *err);

#endif
