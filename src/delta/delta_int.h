/*
 * Internals of the Delta reader shared by its files:
 *
 *   dv.c          Z85, RoaringBitmapArray decoding, deletion-vector loading
 *   schema.c      Delta schema JSON -> Arrow schema + column tree (column mapping)
 *   values.c      typed values from their text forms (partition values, statistics)
 *   log.c         listing `_delta_log/` and choosing checkpoint + commits
 *   replay.c      JSON actions, log replay, protocol gate
 *   checkpoint.c  Parquet checkpoints and sidecars
 *   snapshot.c    df_delta_snapshot: open, accessors, lazy caches, facts
 *   stats.c       per-file statistics -> df_column_stats
 *   conform.c     file vectors -> table types (column mapping, type widening)
 *   provider.c    df_table_provider over a snapshot, file streams
 */
#ifndef DF_DELTA_DELTA_INT_H
#define DF_DELTA_DELTA_INT_H

#include <pthread.h>

#include "common/json.h"
#include "delta/delta.h"
#include "storage/storage.h"

/* Changes the kind (and default phase) of a recorded error, keeping its message; returns the kind. */
static inline df_errkind df__delta_rekind(df_error *err, df_errkind kind) {
    if (err) {
        err->kind = kind;
        df_error_set_phase(err, df_errkind_default_phase(kind));
    }
    return kind;
}

/* Bounds on what a log may make us allocate. */
#define DF_DELTA_MAX_LOG_FILE_BYTES ((size_t)1 << 30)      /* one commit / JSON checkpoint */
#define DF_DELTA_MAX_SMALL_FILE_BYTES ((size_t)1 << 20)    /* _last_checkpoint */
#define DF_DELTA_MAX_DV_BYTES ((int64_t)1 << 30)           /* one serialised deletion vector */
#define DF_DELTA_MAX_DV_ROWS ((int64_t)1 << 31)            /* deleted rows of one file */

/* ------------------------------------------------------------------------ */
/* Deletion vectors (dv.c)                                                   */

typedef struct df__delta_dv {
    char storage;                 /* 'u' (relative, z85 UUID), 'i' (inline), 'p' (absolute path); 0 = none */
    const char *path_or_inline;   /* as in the log (arena) */
    int32_t offset;               /* byte offset of the DV in its file; -1 when absent */
    int32_t size_in_bytes;        /* size of the serialised bitmap */
    int64_t cardinality;          /* number of deleted rows */
} df__delta_dv;

/*
 * Decodes Z85 text (len a multiple of 5) into out[len / 5 * 4].  Returns
 * DF_ERR_DELTA_LOG_FORMAT for a bad length or character.
 */
df_errkind df__delta_z85_decode(const char *text, size_t len, uint8_t *out, df_error *err);
/*
 * The table-relative path of a 'u' deletion vector: "<prefix>/deletion_vector_<uuid>.bin"
 * (no prefix directory when the prefix is empty).  New string (df_free) in *out.
 */
df_errkind df__delta_dv_relative_path(const char *path_or_inline, char **out, df_error *err);
/*
 * Decodes a serialised deletion vector (magic number + portable 64-bit
 * RoaringBitmap) into a new sorted, duplicate-free array of row indexes
 * (df_free).  At most `max_rows` values are accepted.
 */
df_errkind df__delta_dv_decode(const uint8_t *data, size_t len, int64_t max_rows, uint64_t **rows, int64_t *nrows,
                               df_error *err);
/*
 * Loads the rows deleted by `dv`: inline data is decoded from the log text;
 * file-based vectors are read from `store` (relative to the table root or an
 * absolute location), their size and CRC-32 checked.  The result must have
 * exactly dv->cardinality rows.
 */
df_errkind df__delta_dv_load(df_store *store, const df__delta_dv *dv, uint64_t **rows, int64_t *nrows, df_error *err);

/* ------------------------------------------------------------------------ */
/* Schema (schema.c)                                                         */

typedef struct df__delta_column df__delta_column;
struct df__delta_column {
    char *name;                   /* logical name (owned) */
    char *physical;               /* physical name (owned): delta.columnMapping.physicalName or the name */
    int64_t field_id;             /* delta.columnMapping.id, -1 when absent */
    df_type *type;                /* logical Arrow type (one reference) */
    bool nullable;                /* field nullability */
    int32_t nchildren;            /* struct: fields; list: 1 (element); map: 2 (key, value) */
    df__delta_column *children;   /* owned array */
};

typedef struct df__delta_schema {
    df_schema *schema;            /* logical Arrow schema (one reference) */
    int32_t ncolumns;             /* top-level columns, same order as schema */
    df__delta_column *columns;    /* owned array */
    bool has_timestamp_ntz;       /* some column (maybe nested) is timestamp_ntz */
} df__delta_schema;

/*
 * Converts a Delta schema JSON text (a "struct" type) to an Arrow schema and
 * column tree.  Unknown types -> DF_ERR_DELTA_SOURCE_SCHEMA; a `variant`
 * column -> DF_ERR_DELTA_PROTOCOL (unsupported reader feature).  On failure
 * *out is zeroed.
 */
df_errkind df__delta_schema_parse(const char *text, size_t len, df__delta_schema *out, df_error *err);
void df__delta_schema_clear(df__delta_schema *s);

/* ------------------------------------------------------------------------ */
/* Values from text (values.c)                                               */

/*
 * Parses the text form of a value of `type` into *out (a new scalar the
 * caller clears): integers, floats ("NaN", "Infinity" accepted), decimals
 * (exact, rescaled to the type's scale), booleans, dates "yyyy-MM-dd",
 * timestamps "yyyy-MM-dd[ HH:mm:ss[.ffffff]]" or ISO 8601 with 'T' and an
 * optional "Z"/offset (converted to UTC), strings and binaries (bytes as
 * given).  Returns DF_ERR_CAST when the text does not fit the type.
 */
df_errkind df__delta_value_parse(const char *text, size_t len, df_type *type, df_scalar *out, df_error *err);
/* Partition semantics: NULL or "" give a typed NULL scalar; otherwise df__delta_value_parse. */
df_errkind df__delta_partition_value(const char *text, df_type *type, df_scalar *out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Log listing (log.c)                                                       */

typedef struct df__delta_segment {
    int64_t version;              /* the snapshot version */
    int64_t latest_version;       /* newest version found in the log */
    int64_t checkpoint_version;   /* -1 when replay starts at commit 0 */
    int32_t ncheckpoint_files;    /* files of the chosen checkpoint (parts in order) */
    char **checkpoint_files;      /* names relative to the table root (owned) */
    bool checkpoint_is_json;      /* a UUID-named JSON (v2) checkpoint */
    int64_t ncommits;             /* commits after the checkpoint, oldest first */
    char **commit_files;          /* names relative to the table root (owned) */
} df__delta_segment;

/*
 * Lists `_delta_log/` and picks the files that rebuild `version` (< 0 =
 * latest), starting from the newest complete checkpoint below `below`
 * (< 0: any).  Errors: no log -> DF_ERR_DELTA_SNAPSHOT_LOAD "no Delta log
 * found at ..."; gaps or versions out of range -> DF_ERR_DELTA_SNAPSHOT_LOAD.
 */
df_errkind df__delta_segment_build(df_store *store, int64_t version, int64_t below, df__delta_segment *out,
                                   df_error *err);
void df__delta_segment_clear(df__delta_segment *seg);
/* Parses a `_delta_log/` file name; see log.c for the kinds. */
typedef enum df__delta_log_kind {
    DF_DELTA_LOG_OTHER = 0,
    DF_DELTA_LOG_COMMIT,          /* NNNNNNNNNNNNNNNNNNNN.json */
    DF_DELTA_LOG_CHECKPOINT,      /* NNNNNNNNNNNNNNNNNNNN.checkpoint.parquet */
    DF_DELTA_LOG_MULTIPART,       /* NNNNNNNNNNNNNNNNNNNN.checkpoint.PPPPPPPPPP.TTTTTTTTTT.parquet */
    DF_DELTA_LOG_UUID_CHECKPOINT, /* NNNNNNNNNNNNNNNNNNNN.checkpoint.<uuid>.(json|parquet) */
} df__delta_log_kind;
df__delta_log_kind df__delta_log_classify(const char *name, int64_t *version, int32_t *part, int32_t *nparts,
                                          bool *is_json);

/* ------------------------------------------------------------------------ */
/* Replay state (replay.c, checkpoint.c)                                     */

typedef struct df__delta_add {
    const char *path;             /* as written in the log (arena) */
    const char *location;         /* canonical decoded absolute location (arena) */
    int64_t size;                 /* bytes */
    int64_t modification_time;    /* ms since epoch */
    int32_t npv;                  /* raw partitionValues entries */
    const char **pv_keys;         /* keys (physical names) (arena) */
    const char **pv_values;       /* values, NULL for JSON null (arena) */
    const char *stats;            /* raw statistics JSON or NULL (arena) */
    int64_t num_records;          /* from stats / stats_parsed; -1 unknown (set lazily for JSON stats) */
    df__delta_dv dv;              /* deletion vector (storage 0 when none) */
} df__delta_add;

typedef struct df__delta_seen df__delta_seen;   /* hash set of file keys */

typedef struct df__delta_replay {
    df_arena *arena;              /* destination of kept strings (the snapshot's) */
    df_arena scratch;             /* per-line JSON DOM, reset after each action line */
    const char *root;             /* table root for canonical locations */
    df__delta_seen *seen;         /* keys (location + DV id) already decided */
    df__delta_add *adds;          /* active files found so far */
    int64_t nadds, cap_adds;      /* used / allocated */
    bool have_protocol, have_metadata;
    df_delta_protocol protocol;   /* newest protocol (arena strings) */
    df_delta_metadata metadata;   /* newest metadata (arena strings) */
    int64_t ntxns;                /* distinct app ids with a txn action */
    int64_t ndomains;             /* distinct metadata domains (not removed) */
    char **sidecars;              /* sidecar paths found in the checkpoint (owned) */
    int32_t nsidecars, cap_sidecars;
    df__delta_seen *txn_ids;      /* app ids seen */
    df__delta_seen *domain_ids;   /* domains seen */
} df__delta_replay;

df_errkind df__delta_replay_init(df__delta_replay *r, df_arena *arena, const char *root, df_error *err);
void df__delta_replay_clear(df__delta_replay *r);
/*
 * Applies one newline-delimited JSON file (a commit when is_checkpoint is
 * false, else a JSON checkpoint): actions are applied newest first, so its
 * lines are processed in reverse order.  `name` is used in messages.
 */
df_errkind df__delta_replay_json(df__delta_replay *r, const char *data, size_t len, bool is_checkpoint,
                                 const char *name, df_error *err);
/*
 * Records one file action in checkpoint or commit mode.  Returns DF_OK and
 * sets *keep when an add is new (its strings are then copied into the
 * snapshot arena by the caller through df__delta_replay_keep_add).
 */
df_errkind df__delta_replay_file_action(df__delta_replay *r, bool is_add, bool is_checkpoint, const char *path,
                                        const df__delta_dv *dv, const char **location, bool *keep, df_error *err);
/* Appends an add (strings must already live in r->arena). */
df_errkind df__delta_replay_push_add(df__delta_replay *r, const df__delta_add *add, df_error *err);
/* Canonical decoded absolute location of a log path, in r->arena. */
df_errkind df__delta_canonical_location(df_arena *arena, const char *root, const char *path, const char **out,
                                        df_error *err);
/* Records a sidecar path from a checkpoint. */
df_errkind df__delta_replay_add_sidecar(df__delta_replay *r, const char *path, df_error *err);
/* Records txn / domainMetadata actions (newest wins). */
df_errkind df__delta_replay_txn(df__delta_replay *r, const char *app_id, df_error *err);
df_errkind df__delta_replay_domain(df__delta_replay *r, const char *domain, bool removed, df_error *err);

/*
 * The protocol gate: DF_OK when every reader requirement is supported, else
 * DF_ERR_DELTA_PROTOCOL naming the first unsupported feature or version.
 */
df_errkind df__delta_protocol_check(const df_delta_protocol *p, df_error *err);

/* Parquet checkpoints (checkpoint.c): applies a checkpoint part or sidecar file. */
df_errkind df__delta_replay_parquet(df__delta_replay *r, df_store *store, const char *path, df_error *err);
/* Same over an open input, which it takes over (closed in every case); `path` names it in messages. */
df_errkind df__delta_replay_parquet_input(df__delta_replay *r, df_input *in, const char *path, df_error *err);

/* ------------------------------------------------------------------------ */
/* Snapshot (snapshot.c)                                                     */

struct df_delta_snapshot {
    _Atomic int32_t refs;         /* owners */
    df_store *store;              /* the table's object store (owned) */
    const char *root;             /* store->root */
    int64_t version;              /* snapshot version */
    int64_t checkpoint_version;   /* -1 when replay started at 0 */
    df_arena arena;               /* strings of actions and arrays below */
    df_delta_protocol protocol;   /* newest protocol */
    df_delta_metadata metadata;   /* newest metadata */
    int32_t cm_mode;              /* column mapping: 0 none, 1 name, 2 id */
    df__delta_schema schema;      /* logical schema + column tree */
    int32_t *partition_fields;    /* schema field index of each partition column (arena) */
    int64_t nfiles;               /* active files */
    df__delta_add *files;         /* sorted by location then DV id (owned) */
    int64_t ntxns, ndomains;      /* facts from replay */
    pthread_mutex_t lock;         /* guards the lazy caches below */
    bool stats_ready;             /* num_records filled for every file */
    df_scalar *pvalues;           /* nfiles * npartition_columns typed values, NULL until built */
};

/* Builds the typed partition values once (thread-safe). */
df_errkind df__delta_snapshot_prepare_partitions(df_delta_snapshot *s, df_error *err);
/* Fills num_records from the statistics of every file once (thread-safe). */
df_errkind df__delta_snapshot_prepare_stats(df_delta_snapshot *s, df_error *err);
/* The scalar of file i, partition column p (after prepare_partitions). */
static inline const df_scalar *df__delta_pvalue(const df_delta_snapshot *s, int64_t i, int32_t p) {
    return &s->pvalues[i * s->metadata.npartition_columns + p];
}
/* Index of a top-level schema field in metadata.partition_columns, or -1. */
int32_t df__delta_partition_index(const df_delta_snapshot *s, int32_t field);

/* ------------------------------------------------------------------------ */
/* Statistics (stats.c)                                                      */

/*
 * Reads numRecords from a statistics JSON text: *out = -1 when absent.
 * Malformed JSON gives DF_ERR_DELTA_LOG_FORMAT.
 */
df_errkind df__delta_stats_num_records(const char *stats, df_arena *scratch, int64_t *out, df_error *err);
/*
 * Fills stats[k] for each column in `fields` (top-level schema indices)
 * from the statistics JSON of a file; unknown parts stay unset.  The caller
 * clears the scalars (df_scalar_clear on min/max).  *num_records gets
 * numRecords or -1.
 */
df_errkind df__delta_stats_columns(const df_delta_snapshot *s, const char *stats, df_arena *scratch,
                                   const int32_t *fields, int32_t nfields, df_column_stats *out,
                                   int64_t *num_records, df_error *err);

/* ------------------------------------------------------------------------ */
/* Conforming file data to the table schema (conform.c)                      */

/*
 * Converts a vector read from a data file to the table column `col`:
 * struct fields are matched by physical name (column mapping) and missing
 * ones become nulls; integer, float, decimal and date->timestamp_ntz
 * widening, timestamp unit changes and binary->string relabelling are
 * applied.  *out is a new reference (possibly `v` itself retained).
 * Incompatible types give DF_ERR_DELTA_SOURCE_SCHEMA.
 */
df_errkind df__delta_conform(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err);
/* True when a file column of type `file` can be conformed to `col`. */
bool df__delta_conform_possible(const df_type *file, const df__delta_column *col);

#endif
