/*
 * The diagnostics vocabulary as C: enums and exact-name lookups generated
 * from the lists of diag/diag_names.def.
 *
 * Header-only (static inline, no state, only the C library): src/diag
 * uses it to write traces, src/report to recognise what it reads back,
 * without linking each other.  Every lookup returns a static string; an
 * out-of-range value gives "" (or NULL where noted).  The *_from_name
 * recognisers return the constant of an exact name, 0 when it is none.
 */
#ifndef DF_DIAG_NAMES_H
#define DF_DIAG_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "diag/diag_names.def"

/* Enum constants of a list: NONE_ = 0, the entries from 1, COUNT_ after them. */
#define DF_DIAG_OP_ENUM_(id, kind, title) DF_DIAG_OP_##id,
#define DF_DIAG_PHASE_ENUM_(id, name) DF_DIAG_PHASE_##id,
#define DF_DIAG_RESULT_ENUM_(id, name) DF_DIAG_RESULT_##id,
#define DF_DIAG_QUERY_ENUM_(id, name) DF_DIAG_QUERY_##id,
#define DF_DIAG_ACTIVITY_ENUM_(id, name) DF_DIAG_ACTIVITY_##id,
#define DF_DIAG_WK_ENUM_(id, name) DF_DIAG_WK_##id,
#define DF_DIAG_TS_ENUM_(id, name) DF_DIAG_TS_##id,
#define DF_DIAG_TN_ENUM_(id, name) DF_DIAG_TN_##id,
#define DF_DIAG_SC_ENUM_(id, name) DF_DIAG_SC_##id,
#define DF_DIAG_STAGE_ENUM_(id, name, category, kinds, timing) DF_DIAG_STAGE_##id,
#define DF_DIAG_DETAIL_ENUM_(id, name) DF_DIAG_DETAIL_##id,
#define DF_DIAG_TITLE_ENUM_(id, name) DF_DIAG_TITLE_##id,
#define DF_DIAG_TRACK_PART_ENUM_(id, name, numbered) DF_DIAG_TRACK_PART_##id,
#define DF_DIAG_CAT_ENUM_(id, name) DF_DIAG_CAT_##id,
#define DF_DIAG_NARG_ENUM_(id, name) DF_DIAG_NARG_##id,
#define DF_DIAG_SARG_ENUM_(id, name) DF_DIAG_SARG_##id,
#define DF_DIAG_WARG_ENUM_(id, name) DF_DIAG_WARG_##id,
#define DF_DIAG_SEM_ENUM_(id, name, bearing) DF_DIAG_SEM_##id,
#define DF_DIAG_MODE_ENUM_(id, name) DF_DIAG_MODE_##id,

/* The name column of two-column lists, as an array initialiser. */
#define DF_DIAG_NAME_2_(id, name) name,

/* The three operation kinds (operation_kind and root span name). */
typedef enum df_diag_op_kind {
    DF_DIAG_OP_NONE_ = 0,
    DF_DIAG_OPERATIONS(DF_DIAG_OP_ENUM_)
    DF_DIAG_OP_COUNT_
} df_diag_op_kind;

/* Operation phases, on the "Operation [op-...] / phases" track. */
typedef enum df_diag_phase {
    DF_DIAG_PHASE_NONE_ = 0,
    DF_DIAG_PHASES(DF_DIAG_PHASE_ENUM_)
    DF_DIAG_PHASE_COUNT_
} df_diag_phase;

/* Terminal results.  UNSET means "ended without a result", recorded as `cancelled`. */
typedef enum df_diag_result {
    DF_DIAG_RESULT_UNSET = 0,
    DF_DIAG_RESULTS(DF_DIAG_RESULT_ENUM_)
    DF_DIAG_RESULT_COUNT_
} df_diag_result;

/* Query scopes (debug arg query_scope). */
typedef enum df_diag_query_scope {
    DF_DIAG_QUERY_NONE_ = 0,
    DF_DIAG_QUERY_SCOPES(DF_DIAG_QUERY_ENUM_)
    DF_DIAG_QUERY_COUNT_
} df_diag_query_scope;

/* Operator activities the executor records (debug arg activity). */
typedef enum df_diag_activity {
    DF_DIAG_ACTIVITY_NONE_ = 0,
    DF_DIAG_ACTIVITIES(DF_DIAG_ACTIVITY_ENUM_)
    DF_DIAG_ACTIVITY_PUBLIC_COUNT_
} df_diag_activity;
/* Activities diag records itself, numbered after the executor's. */
enum {
    DF_DIAG_ACTIVITY_INTERNAL_BASE_ = DF_DIAG_ACTIVITY_PUBLIC_COUNT_ - 1,
    DF_DIAG_INTERNAL_ACTIVITIES(DF_DIAG_ACTIVITY_ENUM_)
    DF_DIAG_ACTIVITY_COUNT_
};

/* Worker lane kinds (debug arg worker_kind). */
typedef enum df_diag_worker_kind {
    DF_DIAG_WK_NONE = 0,
    DF_DIAG_WORKER_KINDS(DF_DIAG_WK_ENUM_)
    DF_DIAG_WK_COUNT_
} df_diag_worker_kind;

/* time_semantics values. */
typedef enum df_diag_time_semantics {
    DF_DIAG_TS_NONE = 0,
    DF_DIAG_TIME_SEMANTICS(DF_DIAG_TS_ENUM_)
    DF_DIAG_TS_COUNT_
} df_diag_time_semantics;

/* phase_timings names. */
typedef enum df_diag_timing_name {
    DF_DIAG_TN_NONE = 0,
    DF_DIAG_TIMINGS(DF_DIAG_TN_ENUM_)
    DF_DIAG_TN_COUNT_
} df_diag_timing_name;

/* Stage categories. */
typedef enum df_diag_stage_category_id {
    DF_DIAG_SC_NONE_ = 0,
    DF_DIAG_STAGE_CATEGORIES(DF_DIAG_SC_ENUM_)
    DF_DIAG_SC_COUNT_
} df_diag_stage_category_id;

/* Stages (exact stage names, categories, operation kinds, timings). */
typedef enum df_diag_stage {
    DF_DIAG_STAGE_NONE_ = 0,
    DF_DIAG_STAGES(DF_DIAG_STAGE_ENUM_)
    DF_DIAG_STAGE_COUNT_
} df_diag_stage;

/*
 * Dependency spans ("details"): they carry no identity of their own, they
 * inherit the identity and track of the span current on the calling thread.
 */
typedef enum df_diag_detail {
    DF_DIAG_DETAIL_NONE_ = 0,
    DF_DIAG_DETAILS(DF_DIAG_DETAIL_ENUM_)
    DF_DIAG_DETAIL_COUNT_
} df_diag_detail;

/* Other fixed event names. */
typedef enum df_diag_title {
    DF_DIAG_TITLE_NONE_ = 0,
    DF_DIAG_TITLES(DF_DIAG_TITLE_ENUM_)
    DF_DIAG_TITLE_COUNT_
} df_diag_title;

/* Components of track names. */
typedef enum df_diag_track_part {
    DF_DIAG_TRACK_PART_NONE_ = 0,
    DF_DIAG_TRACK_PARTS(DF_DIAG_TRACK_PART_ENUM_)
    DF_DIAG_TRACK_PART_COUNT_
} df_diag_track_part;

/* Track event categories. */
typedef enum df_diag_category {
    DF_DIAG_CAT_NONE_ = 0,
    DF_DIAG_CATEGORIES(DF_DIAG_CAT_ENUM_)
    DF_DIAG_CAT_COUNT_
} df_diag_category;

/* Debug annotation names, one enum per list (numeric, string, writer statistics). */
typedef enum df_diag_num_arg {
    DF_DIAG_NARG_NONE_ = 0,
    DF_DIAG_NUM_ARGS(DF_DIAG_NARG_ENUM_)
    DF_DIAG_NARG_COUNT_
} df_diag_num_arg;
typedef enum df_diag_str_arg {
    DF_DIAG_SARG_NONE_ = 0,
    DF_DIAG_STR_ARGS(DF_DIAG_SARG_ENUM_)
    DF_DIAG_SARG_COUNT_
} df_diag_str_arg;
typedef enum df_diag_writer_arg {
    DF_DIAG_WARG_NONE_ = 0,
    DF_DIAG_WRITER_ARGS(DF_DIAG_WARG_ENUM_)
    DF_DIAG_WARG_COUNT_
} df_diag_writer_arg;

/* semantic_kind values of the ranked model. */
typedef enum df_diag_semantic_kind {
    DF_DIAG_SEM_NONE_ = 0,
    DF_DIAG_SEMANTIC_KINDS(DF_DIAG_SEM_ENUM_)
    DF_DIAG_SEM_COUNT_
} df_diag_semantic_kind;

/* Capture modes. */
typedef enum df_diag_capture_mode {
    DF_DIAG_MODE_NONE_ = 0,
    DF_DIAG_CAPTURE_MODES(DF_DIAG_MODE_ENUM_)
    DF_DIAG_MODE_COUNT_
} df_diag_capture_mode;

/* Sampler backends (from 0: AUTO is the default). */
typedef enum df_diag_backend {
#define DF_DIAG_BACKEND_ENUM_(id, name, what) DF_DIAG_BACKEND_##id,
    DF_DIAG_BACKENDS(DF_DIAG_BACKEND_ENUM_)
#undef DF_DIAG_BACKEND_ENUM_
    DF_DIAG_BACKEND_COUNT_
} df_diag_backend;

/* ------------------------------------------------------------------------ */
/* Lookups.                                                                  */

/*
 * Defines `static inline const char *fn(type v)`: entry v of the name
 * column of `list`, or `fallback` out of range.
 */
#define DF_DIAG_NAME_LOOKUP_(fn, type, list, column, count, fallback)            \
    static inline const char *fn(type v) {                                      \
        static const char *const names[] = {"", list(column)};                  \
        return (unsigned)v > 0 && (unsigned)v < (unsigned)(count) ? names[v] : (fallback); \
    }

#define DF_DIAG_OP_KIND_COLUMN_(id, kind, title) kind,
#define DF_DIAG_OP_TITLE_COLUMN_(id, kind, title) title,
#define DF_DIAG_SEM_NAME_COLUMN_(id, name, bearing) name,
#define DF_DIAG_ALL_ACTIVITIES_(X) DF_DIAG_ACTIVITIES(X) DF_DIAG_INTERNAL_ACTIVITIES(X)

/* operation_kind: "preview", "mssql_write", "write_all". */
DF_DIAG_NAME_LOOKUP_(df_diag_op_kind_name, df_diag_op_kind, DF_DIAG_OPERATIONS, DF_DIAG_OP_KIND_COLUMN_,
                     DF_DIAG_OP_COUNT_, "")
/* Root span name: "Delta Funnel preview", ... */
DF_DIAG_NAME_LOOKUP_(df_diag_op_span_name, df_diag_op_kind, DF_DIAG_OPERATIONS, DF_DIAG_OP_TITLE_COLUMN_,
                     DF_DIAG_OP_COUNT_, "")
/* Phase slice name: "Planning", ... */
DF_DIAG_NAME_LOOKUP_(df_diag_phase_name, df_diag_phase, DF_DIAG_PHASES, DF_DIAG_NAME_2_, DF_DIAG_PHASE_COUNT_, "")
/* Result value; UNSET and out-of-range values are "cancelled". */
DF_DIAG_NAME_LOOKUP_(df_diag_result_name, df_diag_result, DF_DIAG_RESULTS, DF_DIAG_NAME_2_, DF_DIAG_RESULT_COUNT_,
                     names[DF_DIAG_RESULT_CANCELLED])
DF_DIAG_NAME_LOOKUP_(df_diag_query_scope_name, df_diag_query_scope, DF_DIAG_QUERY_SCOPES, DF_DIAG_NAME_2_,
                     DF_DIAG_QUERY_COUNT_, "")
/* Activity value, of the executor's activities and diag's own (a uint8_t in span records). */
DF_DIAG_NAME_LOOKUP_(df_diag_activity_value_name, unsigned, DF_DIAG_ALL_ACTIVITIES_, DF_DIAG_NAME_2_,
                     DF_DIAG_ACTIVITY_COUNT_, "")
static inline const char *df_diag_activity_name(df_diag_activity activity) {
    return df_diag_activity_value_name((unsigned)activity);
}
DF_DIAG_NAME_LOOKUP_(df_diag_worker_kind_name, unsigned, DF_DIAG_WORKER_KINDS, DF_DIAG_NAME_2_, DF_DIAG_WK_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_time_semantics_name, unsigned, DF_DIAG_TIME_SEMANTICS, DF_DIAG_NAME_2_,
                     DF_DIAG_TS_COUNT_, "")
/* phase_timings name; NULL for DF_DIAG_TN_NONE and out-of-range values. */
DF_DIAG_NAME_LOOKUP_(df_diag_timing_name_of, df_diag_timing_name, DF_DIAG_TIMINGS, DF_DIAG_NAME_2_,
                     DF_DIAG_TN_COUNT_, NULL)
DF_DIAG_NAME_LOOKUP_(df_diag_stage_category_name, df_diag_stage_category_id, DF_DIAG_STAGE_CATEGORIES,
                     DF_DIAG_NAME_2_, DF_DIAG_SC_COUNT_, "")
/* Detail span name: "Delta scan planning", ... */
DF_DIAG_NAME_LOOKUP_(df_diag_detail_name, df_diag_detail, DF_DIAG_DETAILS, DF_DIAG_NAME_2_, DF_DIAG_DETAIL_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_title_name, df_diag_title, DF_DIAG_TITLES, DF_DIAG_NAME_2_, DF_DIAG_TITLE_COUNT_, "")
#define DF_DIAG_TRACK_PART_NAME_COLUMN_(id, name, numbered) name,
DF_DIAG_NAME_LOOKUP_(df_diag_track_part_name, df_diag_track_part, DF_DIAG_TRACK_PARTS, DF_DIAG_TRACK_PART_NAME_COLUMN_,
                     DF_DIAG_TRACK_PART_COUNT_, "")
/* True if the track-name part is followed by an id and "]" ("Operation [op-" + 20 digits + "]"). */
static inline bool df_diag_track_part_numbered(df_diag_track_part part) {
#define DF_DIAG_TRACK_PART_NUMBERED_COLUMN_(id, name, numbered) numbered,
    static const bool numbered[] = {false, DF_DIAG_TRACK_PARTS(DF_DIAG_TRACK_PART_NUMBERED_COLUMN_)};
#undef DF_DIAG_TRACK_PART_NUMBERED_COLUMN_
    return (unsigned)part < DF_DIAG_TRACK_PART_COUNT_ && numbered[part];
}
DF_DIAG_NAME_LOOKUP_(df_diag_category_name, df_diag_category, DF_DIAG_CATEGORIES, DF_DIAG_NAME_2_,
                     DF_DIAG_CAT_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_num_arg_name, df_diag_num_arg, DF_DIAG_NUM_ARGS, DF_DIAG_NAME_2_, DF_DIAG_NARG_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_str_arg_name, df_diag_str_arg, DF_DIAG_STR_ARGS, DF_DIAG_NAME_2_, DF_DIAG_SARG_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_writer_arg_name, df_diag_writer_arg, DF_DIAG_WRITER_ARGS, DF_DIAG_NAME_2_,
                     DF_DIAG_WARG_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_semantic_kind_name, df_diag_semantic_kind, DF_DIAG_SEMANTIC_KINDS,
                     DF_DIAG_SEM_NAME_COLUMN_, DF_DIAG_SEM_COUNT_, "")
DF_DIAG_NAME_LOOKUP_(df_diag_capture_mode_name, df_diag_capture_mode, DF_DIAG_CAPTURE_MODES, DF_DIAG_NAME_2_,
                     DF_DIAG_MODE_COUNT_, "")

/* Backend name: "auto", "perf_event", "thread_cpu_timer"; "" out of range. */
static inline const char *df_diag_backend_name(df_diag_backend backend) {
#define DF_DIAG_BACKEND_NAME_COLUMN_(id, name, what) name,
    static const char *const names[] = {DF_DIAG_BACKENDS(DF_DIAG_BACKEND_NAME_COLUMN_)};
#undef DF_DIAG_BACKEND_NAME_COLUMN_
    return (unsigned)backend < DF_DIAG_BACKEND_COUNT_ ? names[backend] : "";
}
/* The backend named exactly `s` into *out; false if none is. */
static inline bool df_diag_backend_from_name(const char *s, df_diag_backend *out) {
    for (unsigned i = 0; s && i < DF_DIAG_BACKEND_COUNT_; i++)
        if (strcmp(df_diag_backend_name((df_diag_backend)i), s) == 0) return *out = (df_diag_backend)i, true;
    return false;
}

/* One stage's row of DF_DIAG_STAGES. */
typedef struct df_diag_stage_info {
    const char *name;                   /* exact stage_name */
    df_diag_stage_category_id category; /* stage_category */
    unsigned kinds;                     /* operation kinds allowed (DF_DIAG_K_*) */
    df_diag_timing_name timing;         /* phase_timings entry fed, or DF_DIAG_TN_NONE */
} df_diag_stage_info;

#define DF_DIAG_STAGE_ROW_(id, name, category, kinds, timing) \
    [DF_DIAG_STAGE_##id] = {name, DF_DIAG_SC_##category, kinds, DF_DIAG_TN_##timing},

/* The row of `stage`; the empty row (name "", no kinds) out of range. */
static inline const df_diag_stage_info *df_diag_stage_row(df_diag_stage stage) {
    static const df_diag_stage_info rows[DF_DIAG_STAGE_COUNT_] = {
        [DF_DIAG_STAGE_NONE_] = {"", DF_DIAG_SC_NONE_, 0, DF_DIAG_TN_NONE},
        DF_DIAG_STAGES(DF_DIAG_STAGE_ROW_)
    };
    return rows + ((unsigned)stage < DF_DIAG_STAGE_COUNT_ ? (unsigned)stage : 0u);
}

/* Exact stage name: "DataFrame planning"; "" out of range. */
static inline const char *df_diag_stage_name(df_diag_stage stage) { return df_diag_stage_row(stage)->name; }
/* Exact stage category: "delta_funnel.preview.phase"; "" out of range. */
static inline const char *df_diag_stage_category(df_diag_stage stage) {
    return df_diag_stage_category_name(df_diag_stage_row(stage)->category);
}
/* The phase_timings name fed by a stage, or NULL when the stage feeds none or several. */
static inline const char *df_diag_stage_timing_name(df_diag_stage stage) {
    return df_diag_timing_name_of(df_diag_stage_row(stage)->timing);
}
/* True if `stage` may be used by operations of `kind` (spec 1.4 lists). */
static inline bool df_diag_stage_allowed(df_diag_stage stage, df_diag_op_kind kind) {
    return (unsigned)kind < 32u && (df_diag_stage_row(stage)->kinds & (1u << kind)) != 0;
}

/* True if a semantic node of `kind` must carry a result once complete (spec 2.9). */
static inline bool df_diag_semantic_kind_result_bearing(df_diag_semantic_kind kind) {
#define DF_DIAG_SEM_BEARING_COLUMN_(id, name, bearing) bearing,
    static const bool bearing[] = {false, DF_DIAG_SEMANTIC_KINDS(DF_DIAG_SEM_BEARING_COLUMN_)};
#undef DF_DIAG_SEM_BEARING_COLUMN_
    return (unsigned)kind < DF_DIAG_SEM_COUNT_ && bearing[kind];
}

/* ------------------------------------------------------------------------ */
/* Recognisers: the constant whose name is exactly `s` (NULL allowed), 0 if none. */

#define DF_DIAG_RECOGNISER_(fn, type, lookup, count)                                   \
    static inline type fn(const char *s) {                                             \
        if (s)                                                                          \
            for (unsigned i = 1; i < (unsigned)(count); i++)                            \
                if (strcmp(lookup((type)i), s) == 0) return (type)i;                    \
        return (type)0;                                                                 \
    }

/* The operation kind whose root span is named `s`. */
DF_DIAG_RECOGNISER_(df_diag_op_kind_from_span_name, df_diag_op_kind, df_diag_op_span_name, DF_DIAG_OP_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_phase_from_name, df_diag_phase, df_diag_phase_name, DF_DIAG_PHASE_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_result_from_name, df_diag_result, df_diag_result_name, DF_DIAG_RESULT_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_time_semantics_from_name, df_diag_time_semantics, df_diag_time_semantics_name,
                    DF_DIAG_TS_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_stage_from_name, df_diag_stage, df_diag_stage_name, DF_DIAG_STAGE_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_detail_from_name, df_diag_detail, df_diag_detail_name, DF_DIAG_DETAIL_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_title_from_name, df_diag_title, df_diag_title_name, DF_DIAG_TITLE_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_semantic_kind_from_name, df_diag_semantic_kind, df_diag_semantic_kind_name,
                    DF_DIAG_SEM_COUNT_)
DF_DIAG_RECOGNISER_(df_diag_capture_mode_from_name, df_diag_capture_mode, df_diag_capture_mode_name,
                    DF_DIAG_MODE_COUNT_)

/* True if `s` is exactly the name `name` (for one-name checks; NULL never matches). */
static inline bool df_diag_name_is(const char *s, const char *name) { return s && strcmp(s, name) == 0; }

#endif
