/*
 * A bounded decoder of Perfetto traces (perfetto.protos.Trace), reading
 * only what the ranked model needs: track descriptors, track events with
 * their interned names and debug annotations, perf samples with interned
 * callstacks / frames / function names / mappings / source paths, the
 * sampling frequency from the trace config, clock snapshots, trace stats
 * and service events.  Everything else is skipped field by field.
 *
 * The input is untrusted: every varint, length and nested message is
 * bounds-checked, no recursion depends on the input, tables are capped,
 * and malformed bytes fail with DF_ERR_MALFORMED_TRACE and the byte offset.
 * Interning follows Perfetto's rules: per trusted_packet_sequence_id, reset
 * by SEQ_INCREMENTAL_STATE_CLEARED, iid 0 never valid; a sequence that has
 * not cleared yet is read without interned data (its iids are unknown) and
 * only its packets flagged SEQ_NEEDS_INCREMENTAL_STATE are skipped.  Timestamps are
 * converted to the trace's primary clock through clock snapshots.
 */
#ifndef DF_REPORT_PFTRACE_H
#define DF_REPORT_PFTRACE_H

#include "report/report_int.h"

/*
 * Debug annotations the model reads: the numeric and the string lists of
 * diag/diag_names.def, in their order (DF__PT_N_OPERATION = operation_id,
 * DF__PT_S_STAGE_NAME = stage_name, ...); indexes into df__pt_args.
 */
enum {
#define DF__PT_N_ENUM_(id, name) DF__PT_N_##id,
    DF_DIAG_NUM_ARGS(DF__PT_N_ENUM_)
#undef DF__PT_N_ENUM_
    DF__PT_N_COUNT
};
enum {
#define DF__PT_S_ENUM_(id, name) DF__PT_S_##id,
    DF_DIAG_STR_ARGS(DF__PT_S_ENUM_)
#undef DF__PT_S_ENUM_
    DF__PT_S_COUNT
};

/* The debug annotations of one event. */
typedef struct df__pt_args {
    uint32_t num_present;          /* bit i: num[i] is set */
    uint32_t num_invalid;          /* bit i: the annotation had a wrong type or out-of-range value */
    uint32_t str_present;          /* bit i: str[i] is set (may be the empty string) */
    uint32_t str_invalid;          /* bit i: the annotation was not a string */
    int64_t num[DF__PT_N_COUNT];   /* numeric values */
    uint32_t str[DF__PT_S_COUNT];  /* string ids in the trace's table */
} df__pt_args;

/* Event categories that matter (any other is DF__PT_CAT_OTHER). */
enum { DF__PT_CAT_OTHER = 0, DF__PT_CAT_PROFILE = DF_DIAG_CAT_PROFILE, DF__PT_CAT_CONTEXT = DF_DIAG_CAT_CONTEXT };
/* TrackEvent types. */
enum { DF__PT_BEGIN = 1, DF__PT_END = 2, DF__PT_INSTANT = 3 };

/* One track event (slice begin / end / instant). */
typedef struct df__pt_event {
    int64_t ts;             /* primary-clock nanoseconds */
    uint64_t track;         /* track uuid */
    uint32_t order;         /* position in the file (stable tie-break) */
    uint32_t name;          /* string id (0 = none) */
    uint8_t type;           /* DF__PT_BEGIN / END / INSTANT */
    uint8_t category;       /* DF__PT_CAT_* */
    uint8_t clock;          /* source clock id before conversion (internal) */
    uint8_t pad;            /* zero */
    df__pt_args args;       /* debug annotations */
} df__pt_event;

/* One perf sample. */
typedef struct df__pt_sample {
    int64_t ts;             /* primary-clock nanoseconds */
    uint32_t pid;           /* process */
    uint32_t tid;           /* thread */
    uint32_t cpu;           /* CPU, UINT32_MAX when unknown */
    uint32_t stack;         /* global stack id + 1; 0 = no usable callstack */
    uint8_t unwind_error;   /* the producer reported an unwind error */
    uint8_t clock;          /* source clock id before conversion (internal) */
    uint8_t pad[6];         /* zero */
} df__pt_sample;

/* One distinct native frame (deduplicated by function, module and source). */
typedef struct df__pt_frame {
    uint32_t name;          /* function name string id; 0 = unresolved */
    uint32_t module;        /* module basename string id, 0 = none */
    uint32_t source;        /* normalised source path string id, 0 = none */
    uint32_t pad;           /* zero */
    int64_t line;           /* smallest line seen for this frame, -1 = none */
} df__pt_frame;

/* A track descriptor. */
typedef struct df__pt_track {
    uint64_t uuid;          /* identity */
    uint64_t parent;        /* parent uuid, 0 = none */
    uint32_t name;          /* string id, 0 = none */
    uint32_t pid;           /* process (process and thread tracks) */
    uint32_t tid;           /* thread (thread tracks) */
    uint8_t kind;           /* DF__PT_TRACK_* */
    uint8_t pad[3];         /* zero */
} df__pt_track;

enum { DF__PT_TRACK_CUSTOM = 0, DF__PT_TRACK_PROCESS = 1, DF__PT_TRACK_THREAD = 2 };

/* A decoded trace. */
typedef struct df__pt_trace {
    df_report_strings strings;   /* every string (interned) */
    df__pt_event *events;        /* track events in file order */
    size_t nevents, cap_events;
    df__pt_sample *samples;      /* perf samples in file order */
    size_t nsamples, cap_samples;
    df__pt_track *tracks;        /* first descriptor of each uuid */
    size_t ntracks, cap_tracks;
    df__pt_frame *frames;        /* distinct frames */
    size_t nframes, cap_frames;
    uint32_t *stack_frames;      /* frame ids of all stacks, root first, back to back */
    size_t nstack_frames, cap_stack_frames;
    uint64_t *stack_off;         /* stack s (0-based) = stack_frames[stack_off[s] .. stack_off[s+1]) */
    size_t nstacks, cap_stacks;  /* stacks (stack_off has nstacks + 1 entries) */
    uint32_t sample_frequency_hz;   /* linux.perf timebase frequency (0 = none) */
    bool tracing_disabled;          /* TracingServiceEvent.tracing_disabled seen */
    int64_t buffer_loss;            /* Σ discarded chunks, ABI violations, failed patches, writer packet loss */
    int64_t flush_failures;         /* max(flushes_failed, final flush failed) */
    int64_t data_source_loss;       /* invalid packets, events with an unknown clock */
    int64_t samples_skipped;        /* perf samples with sample_skipped_reason */
    int64_t kernel_records_lost;    /* Σ kernel_records_lost (profiler-dropped samples) */
    int64_t min_ts, max_ts;         /* trace bounds over converted timestamps (INT64_MAX/MIN if none) */
    size_t truncated_tail_bytes;    /* bytes of a last packet cut short (a writer that died), ignored */
    void *work;                     /* decoder state (freed by df__pt_trace_free) */
} df__pt_trace;

/* Decodes `len` bytes.  On failure the trace is freed and zeroed. */
df_errkind df__pt_decode(const uint8_t *bytes, size_t len, size_t max_bytes, df__pt_trace *out, df_error *err);
/* Frees everything the trace holds.  Accepts a zeroed trace. */
void df__pt_trace_free(df__pt_trace *t);

/* Frames of stack id `s` (1-based as stored in samples). */
static inline const uint32_t *df__pt_stack(const df__pt_trace *t, uint32_t s, size_t *n) {
    *n = (size_t)(t->stack_off[s] - t->stack_off[s - 1]);
    return t->stack_frames + t->stack_off[s - 1];
}

#endif
