/*
 * Private structures of the report module: the ranked model records, the
 * string table they point into, the derived index every renderer uses, and
 * the internal entry points of the module's files.
 *
 * Records refer to strings by id (0 = null) so that a symbol shared by a
 * thousand function nodes is stored once, in memory and in the artifact.
 */
#ifndef DF_REPORT_REPORT_INT_H
#define DF_REPORT_REPORT_INT_H

#include "diag/names.h" /* the diagnostics vocabulary (header-only) */
#include "report/report.h"

/* The ranked schema version the model follows (spec 2, "schema version 3"). */
#define DF_REPORT_SCHEMA_VERSION 3u
/* Most strings a model may hold (ids are uint32). */
#define DF_REPORT_MAX_STRINGS (4u * 1024u * 1024u)
/* Largest string blob (all strings) in bytes. */
#define DF_REPORT_MAX_STRING_BYTES (1u << 30)
/* Most worker lanes and lane intervals kept for the timeline. */
#define DF_REPORT_MAX_LANES 65536u
#define DF_REPORT_MAX_INTERVALS 2000000u
/* Intervals kept per lane (closest gaps are merged beyond it). */
#define DF_REPORT_LANE_INTERVALS 1024u
/* The model's units (spec 2.9: exact) and the name of a frame without a symbol (spec 2.5). */
#define DF_REPORT_TIME_UNIT "nanoseconds"
#define DF_REPORT_SAMPLE_UNIT "samples"
#define DF_REPORT_UNRESOLVED_FRAME "[unresolved]"

/* True if time_semantics `ts` (may be NULL) makes a slice a semantic node: wall_clock or lifecycle (spec 2.2). */
static inline bool df__report_semantic_time(const char *ts) {
    df_diag_time_semantics t = df_diag_time_semantics_from_name(ts);
    return t == DF_DIAG_TS_WALL_CLOCK || t == DF_DIAG_TS_LIFECYCLE;
}

/* ------------------------------------------------------------------------ */
/* Strings.                                                                  */

/*
 * An append-only table of NUL-terminated UTF-8 strings without embedded
 * NULs.  Id 0 is "no string" (null); ids 1..n-1 are strings.  Interning
 * uses an open-addressing index that exists only while it is needed.
 */
typedef struct df_report_strings {
    char *blob;          /* strings back to back, each NUL-terminated */
    size_t blob_len;     /* bytes used */
    size_t blob_cap;     /* bytes allocated */
    uint32_t *off;       /* off[id] = offset of string id in blob (off[0] unused) */
    uint32_t *len;       /* len[id] = bytes of string id (without the NUL) */
    uint32_t n;          /* ids in use, including 0 */
    uint32_t cap;        /* entries allocated in off/len */
    uint32_t *slots;     /* intern index: string ids, 0 = empty (NULL when not interning) */
    uint32_t nslots;     /* slots (power of two) */
} df_report_strings;

void df__report_strings_init(df_report_strings *s);
void df__report_strings_free(df_report_strings *s);
/*
 * Returns the id of [str, str+n), adding it if absent.  Invalid UTF-8 is
 * replaced by U+FFFD and NUL bytes by U+FFFD too (names come from untrusted
 * traces).  Returns 0 when out of memory or over the table's limits.
 */
uint32_t df__report_intern(df_report_strings *s, const char *str, size_t n);
/* Appends without interning (decoder: strings are already unique). 0 on failure. */
uint32_t df__report_strings_add(df_report_strings *s, const char *str, size_t n);
/* Drops the intern index (kept strings stay valid). */
void df__report_strings_seal(df_report_strings *s);

static inline const char *df__report_str(const df_report_strings *s, uint32_t id) {
    return id && id < s->n ? s->blob + s->off[id] : NULL;
}
static inline uint32_t df__report_strlen(const df_report_strings *s, uint32_t id) {
    return id && id < s->n ? s->len[id] : 0;
}

/* ------------------------------------------------------------------------ */
/* Records.                                                                  */

/* Optional identity fields of semantic nodes and samples (spec 2.2). */
enum {
    DF_REPORT_ID_QUERY = 0,     /* query_execution_id */
    DF_REPORT_ID_LANE = 1,      /* worker_lane_id */
    DF_REPORT_ID_NODE = 2,      /* node_id */
    DF_REPORT_ID_PARENT_NODE = 3, /* parent_node_id */
    DF_REPORT_ID_PARTITION = 4, /* operator_partition */
    DF_REPORT_ID_STREAM = 5,    /* execution_stream_id */
    DF_REPORT_ID_OWNER = 6,     /* stage_owner_id */
    DF_REPORT_ID_COUNT = 7
};

/* String fields of semantic nodes, in spec 2.2 order. */
enum {
    DF_REPORT_S_NAME = 0,
    DF_REPORT_S_KIND = 1,            /* semantic_kind */
    DF_REPORT_S_OPERATION_KIND = 2,
    DF_REPORT_S_STAGE_CATEGORY = 3,
    DF_REPORT_S_STAGE_NAME = 4,
    DF_REPORT_S_ACTIVITY = 5,
    DF_REPORT_S_TIME_SEMANTICS = 6,
    DF_REPORT_S_RESULT = 7,
    DF_REPORT_S_QUERY_SCOPE = 8,
    DF_REPORT_S_QUERY_OWNER = 9,
    DF_REPORT_S_WORKER_KIND = 10,
    DF_REPORT_S_COUNT = 11
};

/* Presence flags of a semantic node. */
enum {
    DF_REPORT_SEM_HAS_PARENT = 1u << 0,  /* parent_semantic_id is set */
    DF_REPORT_SEM_COMPLETE = 1u << 1,    /* end_ns and duration_ns are set (is_complete) */
    DF_REPORT_SEM_ID_SHIFT = 8,          /* bit 8 + DF_REPORT_ID_x: ident[x] is set */
};
#define DF_REPORT_SEM_HAS_ID(i) (1u << (DF_REPORT_SEM_ID_SHIFT + (i)))
#define DF_REPORT_SEM_FLAGS_KNOWN (DF_REPORT_SEM_HAS_PARENT | DF_REPORT_SEM_COMPLETE | (0x7Fu << DF_REPORT_SEM_ID_SHIFT))

/* Per-node native stack classes (spec 2.5). */
enum {
    DF_REPORT_STACK_RESOLVED = 0,
    DF_REPORT_STACK_UNRESOLVED = 1,
    DF_REPORT_STACK_UNWIND_ERROR = 2,
    DF_REPORT_STACK_MISSING = 3,
    DF_REPORT_STACK_CLASSES = 4
};

/* One semantic node (spec 2.2).  Absent values are stored as 0. */
typedef struct df_report_semantic {
    int64_t semantic_id;         /* identity, unique in the model */
    int64_t parent_semantic_id;  /* with DF_REPORT_SEM_HAS_PARENT */
    int64_t operation_id;        /* owning operation */
    int64_t start_ns;            /* begin (trace clock) */
    int64_t end_ns;              /* with DF_REPORT_SEM_COMPLETE */
    int64_t duration_ns;         /* exact wall-clock duration, with DF_REPORT_SEM_COMPLETE */
    int64_t ident[DF_REPORT_ID_COUNT];   /* optional identity fields (see flags) */
    int64_t direct_samples;      /* samples owned directly */
    int64_t inclusive_samples;   /* direct samples of the subtree */
    int64_t stack[DF_REPORT_STACK_CLASSES]; /* direct samples by native stack class */
    uint32_t str[DF_REPORT_S_COUNT]; /* string ids (0 = null) */
    uint32_t flags;              /* DF_REPORT_SEM_* */
} df_report_semantic;

/* Presence flags of a function node. */
enum {
    DF_REPORT_FN_HAS_PARENT = 1u << 0, /* parent_function_id is set */
    DF_REPORT_FN_HAS_LINE = 1u << 1,   /* line_number is set */
};
#define DF_REPORT_FN_FLAGS_KNOWN (DF_REPORT_FN_HAS_PARENT | DF_REPORT_FN_HAS_LINE)

/* One native call-tree node owned by a semantic node (spec 2.5). */
typedef struct df_report_function {
    int64_t semantic_id;         /* owning semantic node */
    int64_t function_id;         /* call-path node id (shared across semantic nodes) */
    int64_t parent_function_id;  /* caller node, with DF_REPORT_FN_HAS_PARENT */
    int64_t line_number;         /* with DF_REPORT_FN_HAS_LINE */
    int64_t self_samples;        /* samples whose deepest frame is this node */
    int64_t inclusive_samples;   /* samples whose stack contains this node */
    uint32_t name;               /* full symbol ("[unresolved]" when unknown); never 0 */
    uint32_t module_name;        /* mapping basename or 0 */
    uint32_t source_file;        /* normalised source path or 0 */
    uint32_t flags;              /* DF_REPORT_FN_* */
} df_report_function;

/*
 * One worker lane of a query (the timeline's worker rows): the lane's
 * outermost operator activities merged into at most
 * DF_REPORT_LANE_INTERVALS busy intervals, plus the exact busy time.
 */
typedef struct df_report_lane {
    int64_t operation_id;        /* owning operation */
    int64_t query_execution_id;  /* query */
    int64_t worker_lane_id;      /* lane id (0 = coordinator) */
    int64_t busy_ns;             /* exact sum of the lane's outermost activity durations */
    int64_t activity_count;      /* outermost activities folded in */
    uint32_t worker_kind;        /* "coordinator" / "runtime" / "external" (string id) */
    uint32_t interval_count;     /* intervals of this lane */
    uint64_t first_interval;     /* index of its first interval in df_report_profile.intervals */
} df_report_lane;

/* A closed busy interval [start_ns, end_ns). */
typedef struct df_report_interval {
    int64_t start_ns; /* begin */
    int64_t end_ns;   /* end (>= begin) */
} df_report_interval;

/* Health and coverage metadata (spec 2.1), plus our attribution counters. */
typedef struct df_report_metadata {
    bool capture_complete;        /* semantic data complete, finalization seen, no loss */
    bool semantic_complete;       /* roots, identities, nesting and buffers intact */
    bool finalization_observed;   /* the trace saw tracing stop */
    int64_t incomplete_operation_root_count;
    int64_t truncation_marker_count;
    int64_t missing_identity_field_count;
    int64_t missing_terminal_result_count;
    int64_t crossing_worker_slice_count;
    int64_t crossing_planning_activity_slice_count;
    int64_t crossing_execution_activity_slice_count;
    int64_t invalid_planning_activity_hierarchy_count;
    int64_t invalid_execution_activity_hierarchy_count;
    int64_t perf_sample_without_callsite_count;
    int64_t perf_samples_skipped;
    int64_t buffer_loss_count;
    int64_t data_source_loss_count;
    int64_t flush_failure_count;
    uint32_t schema_version;      /* DF_REPORT_SCHEMA_VERSION */
    uint32_t sample_frequency_hz; /* configured sampling rate (0 = sampling was off) */
    uint32_t sampled_cpu_count;   /* distinct CPUs that contributed samples */
    uint32_t exact_time_unit;     /* string id of "nanoseconds" */
    uint32_t sample_unit;         /* string id of "samples" */
    int64_t eligible_sample_count;
    int64_t direct_sample_count;
    int64_t ambiguous_sample_count;
    int64_t unattributed_sample_count;
    int64_t resolved_function_sample_count;
    int64_t unresolved_function_sample_count;
    int64_t unwind_error_sample_count;
    int64_t missing_callstack_sample_count;
    int64_t trace_profiler_dropped_sample_count;
    /* Ours: */
    int64_t exact_context_sample_count;   /* direct samples owned by the exact span of their thread */
    int64_t ambiguous_parent_count;       /* semantic nodes whose parent choice was a tie (broken by id) */
    int64_t trace_start_ns;               /* first timestamp in the trace */
    int64_t trace_end_ns;                 /* last timestamp in the trace */
} df_report_metadata;

/* One named counter of the capture's health (a metadata field and its name). */
typedef struct df_report_counter {
    const char *name;   /* the reference's metadata field name */
    int64_t value;      /* its value */
} df_report_counter;

enum { DF_REPORT_HEALTH_COUNTERS = 14 };

/* Fills out[] with the health counters of m, in the reference's order (the
 * list both the HTML metadata and the inspector's health block print). */
void df__report_health_counters(const df_report_metadata *m, df_report_counter out[DF_REPORT_HEALTH_COUNTERS]);

/* ------------------------------------------------------------------------ */
/* The model and its index.                                                  */

/*
 * Derived lookups, rebuilt by df__report_index_build() after a build or a
 * read.  Indices are positions in the record arrays; -1 / UINT32_MAX = none.
 */
typedef struct df_report_index {
    uint32_t *sem_by_id;       /* semantic positions sorted by semantic_id */
    int32_t *sem_parent;       /* position of the parent, -1 for roots */
    int32_t *sem_root;         /* position of the operation root */
    uint32_t *sem_depth;       /* ancestors in the semantic tree */
    uint32_t *child_start;     /* CSR: children of s are child_list[child_start[s] .. child_start[s+1]) */
    uint32_t *child_list;      /* semantic positions in document order */
    uint32_t *roots;           /* operation roots in document order */
    uint32_t nroots;           /* their count */
    uint32_t *fn_begin;        /* functions of semantic position s: [fn_begin[s], fn_end[s]) */
    uint32_t *fn_end;
    int32_t *fn_parent;        /* full-tree parent position, -1 for roots */
    int32_t *fn_compact_parent;/* nearest non-collapsed ancestor, -1 for compact roots */
    uint8_t *fn_hidden;        /* 1 if collapsed in the compact view (spec 2.6) */
    uint32_t *fn_depth;        /* depth in the full tree (roots 0) */
    uint32_t *fchild_start;    /* CSR of full-tree children (function positions) */
    uint32_t *fchild_list;
    uint32_t *cchild_start;    /* CSR of compact-tree children */
    uint32_t *cchild_list;
    uint32_t *fn_owner;        /* semantic position owning each function */
    char **sem_display;        /* display names (spec 2.2), in `arena` */
    uint32_t *compact_name;    /* per model string id used as a function name: id in `derived` of its compact symbol */
    df_arena arena;            /* display names */
    df_report_strings derived; /* compact symbols (ids local to this table) */
    bool built;                /* the index is complete */
} df_report_index;

struct df_report_profile {
    df_report_metadata meta;         /* health and coverage */
    df_report_semantic *sems;        /* semantics sorted by (operation_id, semantic_id) */
    size_t nsems;                    /* count */
    df_report_function *fns;         /* functions sorted by (semantic_id, function_id) */
    size_t nfns;                     /* count */
    df_report_lane *lanes;           /* lanes sorted by (operation, query, lane) */
    size_t nlanes;                   /* count */
    df_report_interval *intervals;   /* lane intervals */
    size_t nintervals;               /* count */
    df_report_strings strings;       /* every string of the records */
    df_report_index ix;              /* derived lookups */
};

/* An empty model (all zero) ready to be filled; NULL when out of memory. */
df_report_profile *df__report_profile_new(void);

/*
 * Validates the records (spec 2.9) and builds the index.  Used after build
 * and after decode; df_report_validate() runs the same checks on a copy of
 * the index.  DF_ERR_INVALID_RANKED_PROFILE with the stable validation message.
 */
df_errkind df__report_index_build(df_report_profile *p, df_error *err);
/* Validates p and builds an index into *ix (freed with df__report_index_free) without touching p. */
df_errkind df__report_index_compute(const df_report_profile *p, df_report_index *ix, df_error *err);
void df__report_index_free(df_report_index *ix);

/* Position of semantic_id, or -1. */
int32_t df__report_find_semantic(const df_report_profile *p, int64_t semantic_id);
/* Position of function (semantic_id, function_id), or -1. */
int32_t df__report_find_function(const df_report_profile *p, int64_t semantic_id, int64_t function_id);
/* String of a semantic node field. */
static inline const char *df__report_sem_str(const df_report_profile *p, const df_report_semantic *s, int f) {
    return df__report_str(&p->strings, s->str[f]);
}
/* Compact symbol of a function node's name (never NULL). */
const char *df__report_fn_compact(const df_report_profile *p, const df_report_function *f);
/* The display name of a semantic node (never NULL). */
static inline const char *df__report_sem_display(const df_report_profile *p, size_t pos) {
    return p->ix.sem_display[pos];
}
/* Rendered symbol of a function (compact or full). */
const char *df__report_fn_symbol(const df_report_profile *p, const df_report_function *f, bool full);

/*
 * Records a report failure: `kind` (a specific kind of df_errkinds.def such
 * as DF_ERR_INVALID_ARTIFACT_MAGIC), `phase` ("input", "output", ...), the
 * formatted message and origin "report"; no context.  Accepts err == NULL.
 * Returns `kind`.
 */
df_errkind df__report_fail(df_error *err, df_errkind kind, const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------------ */
/* Symbols and paths (symbols.c).                                            */

/* Compact symbol into out (cleared first). */
df_errkind df__report_compact_symbol(const char *sym, size_t len, df_buf *out);
/* Last path segment of a mapping path (<= 255 bytes, drive forms dropped); [*off, *off+*n) of path, n 0 = none. */
void df__report_module_name(const char *path, size_t len, size_t *off, size_t *n);
/*
 * Normalised source path (spec 2.5 host normaliser) into out; returns
 * false when the path must be dropped (unsafe).
 */
bool df__report_source_path(const char *path, size_t len, df_buf *out);
/*
 * Appends `s` escaped for the terminal (spec 4.3): \ and " escaped, control
 * and bidi/zero-width characters as \u{HEX}.
 */
df_errkind df__report_term_escape(df_buf *out, const char *s, size_t len);
/* Appends `s` as a JSON string literal safe inside <script> (< > & U+2028 U+2029 escaped). */
df_errkind df__report_json_string(df_buf *out, const char *s, size_t len);
/* Appends `s` escaped as HTML text / attribute value. */
df_errkind df__report_html_escape(df_buf *out, const char *s, size_t len);

/* ------------------------------------------------------------------------ */
/* Model builder internals shared with tests.                                */

/* Display name of a semantic node into out (spec 2.2 bounding). */
df_errkind df__report_display_name(const df_report_profile *p, const df_report_semantic *s, df_buf *out);

#endif
