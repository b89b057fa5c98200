/*
 * report: ranked profile reports built from diagnostics traces.
 *
 * A Perfetto trace written by src/diag (spans + native CPU samples) is
 * decoded and folded into a *ranked model*: exact semantic nodes
 * (operations, phases, stages, query planning, scan-output waits, details)
 * with wall-clock durations, the classification of every eligible CPU
 * sample (direct / ambiguous / unattributed), per-node native function
 * trees with self and inclusive sample counts, capture-health metadata,
 * and per-worker-lane busy intervals for the timeline.  The model holds aggregated nodes, never raw
 * samples, so a million samples fold into a few thousand records.
 *
 * The model is data; everything else only reads it:
 *   - .dfprofile: our versioned binary artifact (docs/dfprofile-format.md),
 *   - the self-contained HTML report (docs/profile-report.md),
 *   - the terminal inspector (one-shot views and line commands),
 *   - the side-by-side diff of two profiles.
 * Validation invariants (bounds, consistency, sample conservation) are
 * checked when a model is built, before it is written and after it is read.
 *
 * Nothing here prints, exits or aborts.  Failures return a df_errkind and
 * fill `err` with a phase ("input", "health", "aggregate_validation",
 * "serialization", "output": the CLI maps each to its exit code) and a
 * specific kind of df_errkinds.def (df_errkind_name:
 * "invalid_artifact_magic").
 */
#ifndef DF_REPORT_REPORT_H
#define DF_REPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* A ranked model (immutable once built or read). */
typedef struct df_report_profile df_report_profile;

/* Bounds of the model, checked by validation. */
#define DF_REPORT_MAX_SEMANTICS 500000u
#define DF_REPORT_MAX_FUNCTIONS 500000u
/* Longest semantic string field and module/source path, in characters. */
#define DF_REPORT_MAX_FIELD_CHARS 512u
/* Largest .dfprofile accepted or written. */
#define DF_REPORT_MAX_ARTIFACT_BYTES (512u * 1024u * 1024u)
/* Largest trace decoded by default. */
#define DF_REPORT_DEFAULT_MAX_TRACE_BYTES ((size_t)2 << 30)

typedef struct df_report_build_options {
    /*
     * Operation-scoped analysis: only operations whose root carries this
     * capture_scope_id are selected.  0 selects every operation in the
     * trace (whole-process capture).
     */
    uint64_t capture_scope_id;
    /* Largest trace accepted, in bytes; 0 = DF_REPORT_DEFAULT_MAX_TRACE_BYTES. */
    size_t max_trace_bytes;
} df_report_build_options;

/*
 * Builds the ranked model from the bytes of a Perfetto trace (the content
 * of a .pftrace file, or the same bytes held in memory).  `opts` may be
 * NULL.  The bytes are only read during the call.
 *
 * On success *out owns the model (free with df_report_profile_destroy).
 * Failures (with *out = NULL):
 *   DF_ERR_MALFORMED_TRACE     phase "input": the bytes are not a well-formed
 *                              trace (err->offset = byte offset), or use a
 *                              feature we do not read (compressed packets);
 *   DF_ERR_TRACE_TOO_LARGE     phase "input";
 *   DF_ERR_RECORD_LIMIT        phase "aggregate_validation";
 *   DF_ERR_INCOMPLETE_CAPTURE  phase "health": no retained Delta Funnel operation;
 *   DF_ERR_UNSAFE_IDENTITY, DF_ERR_AUDIT_FAILED, DF_ERR_INVALID_HIERARCHY,
 *   DF_ERR_INVALID_AGGREGATE   phase "aggregate_validation";
 *   DF_ERR_MALFORMED_RESULT    phase "query";
 *   DF_ERR_OUT_OF_MEMORY.
 */
df_errkind df_report_build_from_trace(const void *bytes, size_t len, const df_report_build_options *opts,
                                      df_report_profile **out, df_error *err);

/*
 * Same from a trace file (regular file only; read once, never modified).
 * Adds DF_ERR_NOT_FILE / DF_ERR_UNREADABLE (phase "input", errno in
 * err->code) for files that cannot be read.
 */
df_errkind df_report_build_from_trace_file(const char *path, const df_report_build_options *opts,
                                           df_report_profile **out, df_error *err);

/* Frees a model.  Accepts NULL. */
void df_report_profile_destroy(df_report_profile *p);

/* ------------------------------------------------------------------------ */
/* Capture health: the reference implementation's one-row health summary.   */

/* One health row; columns in the reference's order (df_report_health_csv). */
typedef struct df_report_health {
    bool capture_complete;                 /* semantic_complete, finalization seen, no flush/buffer/source loss */
    bool semantic_complete;                /* >= 1 root, no incomplete roots, markers, identity/result/nesting faults */
    int64_t operation_root_count;          /* selected operation roots */
    int64_t incomplete_operation_root_count; /* roots without an end */
    int64_t operator_slice_count;          /* operator activities */
    int64_t planning_activity_slice_count; /* planning activities */
    int64_t execution_activity_slice_count; /* Await Delta scan output spans */
    int64_t truncation_marker_count;       /* activity budget reached (not loss) */
    int64_t missing_identity_field_count;  /* identity fields a slice of its kind must carry but lacks */
    int64_t missing_terminal_result_count; /* result-bearing slices without a result */
    int64_t crossing_worker_slice_count;
    int64_t crossing_planning_activity_slice_count;
    int64_t crossing_execution_activity_slice_count;
    int64_t invalid_planning_activity_hierarchy_count;
    int64_t invalid_execution_activity_hierarchy_count;
    int64_t perf_sample_count;             /* samples of the profiled processes */
    int64_t perf_sample_without_callsite_count; /* of those, without a usable call stack */
    int64_t perf_samples_skipped;          /* samples the producer skipped */
    int64_t buffer_loss_count;             /* packets lost to buffer bounds */
    int64_t data_source_loss_count;        /* other data loss (invalid packets, clocks, truncated tail) */
    int64_t flush_failure_count;           /* failed flushes */
    bool finalization_observed;            /* the trace saw tracing stop */
    int64_t trace_duration_ns;             /* last minus first timestamp */
    int64_t configured_file_cap_bytes;     /* echoed input, -1 = none */
    int64_t saved_file_bytes;              /* echoed input: the file's size */
} df_report_health;

/*
 * Computes the health row of a trace (only operations of
 * opts->capture_scope_id when set).  Unlike a build, a trace without any
 * operation, with missing identity fields, or cut short after a complete
 * packet is not an error: the row says what is missing.  Fails only on
 * bytes that are not a trace (phase "input", DF_ERR_MALFORMED_TRACE),
 * size limits and DF_ERR_OUT_OF_MEMORY.  `out` is filled on success;
 * configured_file_cap_bytes is -1 and saved_file_bytes is `len`.
 */
df_errkind df_report_capture_health(const void *bytes, size_t len, const df_report_build_options *opts,
                                    df_report_health *out, df_error *err);
/* Same from a trace file (regular file; unreadable: phase "input", DF_ERR_NOT_FILE / DF_ERR_UNREADABLE). */
df_errkind df_report_capture_health_file(const char *path, const df_report_build_options *opts,
                                         df_report_health *out, df_error *err);
/*
 * Appends the CSV header line and the row (reference column names; booleans
 * as 0/1, trace_duration_seconds with 6 decimals, an absent cap empty).
 */
df_errkind df_report_health_csv(const df_report_health *h, df_buf *out, df_error *err);

/*
 * Checks the validation invariants of the model (bounds, metadata
 * consistency, intervals, structure, sample conservation and folds).
 * DF_OK, or DF_ERR_INVALID_RANKED_PROFILE with a stable message such as
 * "semantic ID 3 direct sample count 7 does not equal classified native
 * stack count 5" (phase "aggregate_validation").
 */
df_errkind df_report_validate(const df_report_profile *p, df_error *err);

/* ------------------------------------------------------------------------ */
/* Outputs.                                                                  */

/* What to do when an output file already exists. */
typedef enum df_report_write_policy {
    DF_REPORT_REPLACE = 0,    /* atomically replace it (a symlink is replaced, not followed) */
    DF_REPORT_NO_CLOBBER = 1, /* keep it and fail with DF_ERR_PERSIST_FAILED */
} df_report_write_policy;

/*
 * Writes `len` bytes to `path` atomically: missing parent directories are
 * created, the bytes go to a temporary file in the destination directory,
 * which is then renamed over the destination (REPLACE) or hard-linked to it
 * without clobbering (NO_CLOBBER).  Readers never see a torn file; on any
 * failure the destination is left as it was.  Failures (phase "output",
 * errno in err->code): DF_ERR_CREATE_PARENT_FAILED,
 * DF_ERR_CREATE_TEMPORARY_FAILED, DF_ERR_WRITE_FAILED, DF_ERR_PERSIST_FAILED
 * (also when the destination exists under NO_CLOBBER: code EEXIST).
 */
df_errkind df_report_write_file(const char *path, const void *bytes, size_t len, df_report_write_policy policy,
                                df_error *err);

/*
 * Renders the self-contained HTML report (inline CSS and JS, no network
 * access, data embedded as JSON) and appends it to `out`.  The same model
 * always renders to the same bytes.  Large models are bounded (see
 * docs/profile-report.md: at most DF_REPORT_HTML_BUDGET bytes of data, the
 * longest semantic nodes and hottest frames first; the page says what was
 * left out).  DF_ERR_OUT_OF_MEMORY / DF_ERR_LIMIT_EXCEEDED on failure (the
 * buffer may then hold a partial page).
 */
df_errkind df_report_render_html(const df_report_profile *p, df_buf *out, df_error *err);
/* Bytes of embedded profile data an HTML report carries at most. */
#define DF_REPORT_HTML_BUDGET ((size_t)18 << 20)

/* Renders and writes the HTML report with df_report_write_file semantics. */
df_errkind df_report_write_html(const df_report_profile *p, const char *path, df_report_write_policy policy,
                                df_error *err);

/*
 * Serialises the model as a .dfprofile artifact (appended to `out`).
 * Validates first: DF_ERR_INVALID_RANKED_PROFILE (phase
 * "aggregate_validation"); then DF_ERR_ARTIFACT_TOO_LARGE /
 * DF_ERR_ARTIFACT_SERIALIZE_FAILED (phase "serialization"); DF_ERR_OUT_OF_MEMORY.
 */
df_errkind df_report_encode_dfprofile(const df_report_profile *p, df_buf *out, df_error *err);

/* Encodes and writes the artifact with df_report_write_file semantics. */
df_errkind df_report_write_dfprofile(const df_report_profile *p, const char *path, df_report_write_policy policy,
                                     df_error *err);

/*
 * Decodes an artifact held in memory.  Every length, offset, count and
 * string is checked before use; the checksum covers the whole file; the
 * decoded model is validated.  Failures (phase "input", *out = NULL):
 * DF_ERR_TRUNCATED_ARTIFACT, DF_ERR_INVALID_ARTIFACT_MAGIC,
 * DF_ERR_UNSUPPORTED_ARTIFACT_VERSION, DF_ERR_INVALID_ARTIFACT_HEADER,
 * DF_ERR_UNSUPPORTED_RANKED_SCHEMA, DF_ERR_TRAILING_ARTIFACT_BYTES,
 * DF_ERR_ARTIFACT_CHECKSUM_MISMATCH, DF_ERR_INVALID_ARTIFACT_SECTION,
 * DF_ERR_INVALID_RANKED_PROFILE, DF_ERR_ARTIFACT_TOO_LARGE;
 * DF_ERR_OUT_OF_MEMORY.
 */
df_errkind df_report_decode_dfprofile(const void *bytes, size_t len, df_report_profile **out, df_error *err);

/*
 * Reads an artifact file (regular file, at most DF_REPORT_MAX_ARTIFACT_BYTES,
 * size checked before reading, growth while reading detected:
 * DF_ERR_ARTIFACT_CHANGED_WHILE_READING), then decodes it as above.  I/O
 * failures: DF_ERR_NOT_FILE, DF_ERR_ARTIFACT_UNREADABLE (errno in err->code).
 */
df_errkind df_report_read_dfprofile(const char *path, df_report_profile **out, df_error *err);

/* True if `bytes` start with the .dfprofile magic. */
bool df_report_is_dfprofile(const void *bytes, size_t len);
/* Length of the .dfprofile magic (bytes to read to call df_report_is_dfprofile). */
#define DF_REPORT_MAGIC_LEN 8u

/*
 * Renders the side-by-side comparison of two profiles (semantic nodes
 * matched by their path of names from the operation root, native frames by
 * their call path of symbols) as one self-contained HTML page.  Labels name
 * the two inputs (e.g. their file names; NULL = "A"/"B").
 */
df_errkind df_report_render_diff_html(const df_report_profile *a, const df_report_profile *b, const char *label_a,
                                      const char *label_b, df_buf *out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Terminal inspector: one-shot views and line-oriented commands.           */

typedef enum df_report_sort {
    DF_REPORT_SORT_DEFAULT = 0,   /* duration for semantic contexts, inclusive-cpu for functions */
    DF_REPORT_SORT_DURATION = 1,  /* exact duration desc, unknown last */
    DF_REPORT_SORT_INCLUSIVE = 2, /* inclusive samples desc */
    DF_REPORT_SORT_SELF = 3,      /* direct (semantic) / self (function) samples desc */
    DF_REPORT_SORT_NAME = 4,      /* display name / rendered symbol ascending */
} df_report_sort;

typedef struct df_report_inspect_options {
    uint32_t limit;          /* rows shown, 1..200; 0 = 20 */
    int32_t depth;           /* 0..32; -1 = default (0 at roots, 1 for a selection) */
    df_report_sort sort;     /* DEFAULT picks per context */
    const char *filter;      /* NULL or 1..128 characters */
    bool has_semantic;       /* select semantic:semantic_id */
    int64_t semantic_id;     /* with has_semantic */
    bool has_function;       /* select function:function_semantic_id:function_id */
    int64_t function_semantic_id; /* with has_function */
    int64_t function_id;     /* with has_function */
    bool full_symbols;       /* print full native symbols instead of compact names */
    bool all_frames;         /* show every native frame (no compaction) */
} df_report_inspect_options;

typedef struct df_report_inspector df_report_inspector;

/*
 * Creates an inspector over `p` (borrowed: p must outlive it).  Validates
 * the options first (phase "argument"): DF_ERR_INVALID_LIMIT,
 * DF_ERR_INVALID_DEPTH, DF_ERR_INVALID_FILTER, DF_ERR_INCOMPATIBLE_SELECTORS,
 * DF_ERR_INCOMPATIBLE_SORT, DF_ERR_SEMANTIC_NOT_FOUND,
 * DF_ERR_FUNCTION_NOT_FOUND, with the messages the CLI prints.  *out = NULL
 * on failure.
 */
df_errkind df_report_inspector_create(const df_report_profile *p, const df_report_inspect_options *opts,
                                      df_report_inspector **out, df_error *err);

/* Appends the current view (the one-shot layout of `inspect`) to `out`. */
df_errkind df_report_inspector_render(df_report_inspector *in, df_buf *out, df_error *err);

/*
 * Runs one interactive command line (already stripped of its newline; at
 * most 1024 bytes, checked by the caller or here) and appends its response
 * (without the end marker) to `out`.  *quit is set by `quit`.  A command the
 * user got wrong returns DF_ERR_INTERACTIVE_COMMAND with the message shown
 * to the user and leaves the state unchanged.
 */
df_errkind df_report_inspector_command(df_report_inspector *in, const char *line, size_t len, df_buf *out,
                                       bool *quit, df_error *err);

/* Frees an inspector.  Accepts NULL. */
void df_report_inspector_destroy(df_report_inspector *in);

/* ------------------------------------------------------------------------ */
/* Helpers shared with the programs.                                         */

/*
 * Compact symbol name: `<tokio::...::BlockingTask<F> as
 * core::future::Future>::poll` -> `BlockingTask::poll`.  Appends to `out`.
 */
df_errkind df_report_compact_symbol(const char *symbol, size_t len, df_buf *out, df_error *err);

/* Numbers of records in a model (for tests and tools). */
size_t df_report_semantic_count(const df_report_profile *p);
size_t df_report_function_count(const df_report_profile *p);

#endif
