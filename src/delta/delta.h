/*
 * Delta Lake tables: snapshots and scans.
 *
 * df_delta_snapshot_open lists the table's `_delta_log/`, picks the newest
 * complete checkpoint at or below the wanted version, replays the commits
 * after it (newest first) and keeps the table state at that version:
 * protocol, metadata, schema and the active data files.  The protocol gate
 * runs before anything else is interpreted, so a table that needs a reader
 * feature we lack fails with DF_ERR_DELTA_PROTOCOL instead of being read
 * wrongly.
 *
 * A snapshot is immutable after open (lazy caches are guarded internally),
 * reference counted and safe to share between threads.
 * df_delta_provider_new wraps it as a df_table_provider whose units are the
 * active files in path order.
 *
 * Error kinds: DF_ERR_DELTA_SNAPSHOT_LOAD (no log, version gaps, time
 * travel out of range, missing protocol/metadata), DF_ERR_DELTA_PROTOCOL
 * (unsupported reader version or feature), DF_ERR_DELTA_SOURCE_SCHEMA (a
 * schema we cannot convert), DF_ERR_DELTA_LOG_FORMAT (malformed commit,
 * checkpoint, action, partition value or deletion vector), plus the
 * storage and Parquet kinds of the layers below.
 */
#ifndef DF_DELTA_DELTA_H
#define DF_DELTA_DELTA_H

#include "columnar/columnar.h"
#include "columnar/table_provider.h"

typedef struct df_delta_snapshot df_delta_snapshot;

/* The table's protocol action (borrowed from the snapshot). */
typedef struct df_delta_protocol {
    int32_t min_reader_version;      /* 1..3 for tables we read */
    int32_t min_writer_version;
    int32_t nreader_features;        /* entries of reader_features (0 unless reader version 3) */
    const char *const *reader_features;
    int32_t nwriter_features;        /* entries of writer_features (0 unless writer version 7) */
    const char *const *writer_features;
} df_delta_protocol;

/* The table's metaData action (borrowed from the snapshot). */
typedef struct df_delta_metadata {
    const char *id;                  /* table id (UUID text) */
    const char *name;                /* user-visible name or NULL */
    const char *description;         /* or NULL */
    const char *format_provider;     /* "parquet" */
    const char *schema_string;       /* the Delta schema JSON text */
    int64_t created_time;            /* milliseconds since epoch, -1 when absent */
    int32_t npartition_columns;      /* logical partition column names, in table order */
    const char *const *partition_columns;
    int32_t nconfiguration;          /* table properties, in log order */
    const char *const *configuration_keys;
    const char *const *configuration_values;
} df_delta_metadata;

/* One active data file (borrowed strings). */
typedef struct df_delta_file_info {
    const char *path;                /* the path as written in the log (URI-encoded, maybe absolute) */
    const char *location;            /* decoded absolute location used to read it */
    int64_t size;                    /* bytes, from the log */
    int64_t modification_time;       /* milliseconds since epoch */
    int64_t num_records;             /* physical rows from the statistics, -1 when unknown */
    bool has_deletion_vector;
    int64_t deleted_rows;            /* cardinality of the deletion vector (0 without one) */
} df_delta_file_info;

/*
 * Loads the snapshot of the table at `location` ("file:///...", a local
 * path) at `version`, or the latest version when version < 0.  The option
 * arrays are storage options passed to the object store (may be NULL when
 * noptions is 0).  On success *out holds one reference.
 */
df_errkind df_delta_snapshot_open(const char *location, int64_t version, const char *const *option_keys,
                                  const char *const *option_values, size_t noptions, df_delta_snapshot **out,
                                  df_error *err);
df_delta_snapshot *df_delta_snapshot_retain(df_delta_snapshot *s);
/* Drops a reference; the last one frees the snapshot.  Accepts NULL. */
void df_delta_snapshot_close(df_delta_snapshot *s);

/* Accessors (borrowed results, valid while the snapshot lives). */
int64_t df_delta_snapshot_version(const df_delta_snapshot *s);
/* The normalised table root (a local path for local tables). */
const char *df_delta_snapshot_location(const df_delta_snapshot *s);
/* Version of the checkpoint the replay started from, or -1 when it started at commit 0. */
int64_t df_delta_snapshot_checkpoint_version(const df_delta_snapshot *s);
const df_delta_protocol *df_delta_snapshot_protocol(const df_delta_snapshot *s);
const df_delta_metadata *df_delta_snapshot_metadata(const df_delta_snapshot *s);
/* Value of a table property, or NULL. */
const char *df_delta_snapshot_property(const df_delta_snapshot *s, const char *key);
/* "none", "name" or "id". */
const char *df_delta_snapshot_column_mapping_mode(const df_delta_snapshot *s);
/* The logical Arrow schema (partition columns included as plain typed columns). */
df_schema *df_delta_snapshot_schema(const df_delta_snapshot *s);
/* Active files, in path order. */
int64_t df_delta_snapshot_num_files(const df_delta_snapshot *s);
/* Fills *out for file i (0 <= i < num_files); statistics are parsed on first use. */
df_errkind df_delta_snapshot_file(df_delta_snapshot *s, int64_t i, df_delta_file_info *out, df_error *err);
/*
 * Typed partition value of file i for partition column `pcol` (index into
 * metadata.partition_columns), copied into *out (the caller clears it).
 */
df_errkind df_delta_snapshot_partition_value(df_delta_snapshot *s, int64_t i, int32_t pcol, df_scalar *out,
                                             df_error *err);
/*
 * Appends a JSON object describing the snapshot (version, checkpoint,
 * protocol, metadata, schema, file count, rows, deletion vectors, and the
 * files when include_files) for reports and tests.
 */
df_errkind df_delta_snapshot_facts_json(df_delta_snapshot *s, bool include_files, df_buf *out, df_error *err);

/* A table provider over the snapshot (retains it).  See table_provider.h. */
df_errkind df_delta_provider_new(df_delta_snapshot *s, df_table_provider **out, df_error *err);

#endif
