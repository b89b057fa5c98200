/*
 * A synthetic Perfetto trace writer for the report tests and benchmark:
 * builds exactly the packets the diag writer produces (track descriptors,
 * interned track events with debug annotations on sequence 1, interned
 * perf samples on sequence 2, the linux.perf trace config, service events,
 * trace stats) with timestamps and identities chosen by the test, so the
 * ranked model built from it can be checked value by value.
 *
 * Test-only code: allocation failures abort the process.
 */
#ifndef DF_SYNTH_TRACE_H
#define DF_SYNTH_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct synth synth;

/* One debug annotation: integer (kind 'i') or string (kind 's'). */
typedef struct synth_arg {
    const char *name;   /* annotation name */
    char kind;          /* 'i' or 's' */
    int64_t i;          /* integer value */
    const char *s;      /* string value */
} synth_arg;

#define SI(n, v) ((synth_arg){(n), 'i', (int64_t)(v), NULL})
#define SS(n, v) ((synth_arg){(n), 's', 0, (v)})

enum { SYNTH_PROFILE = 1, SYNTH_CONTEXT = 2 };

synth *synth_new(void);
void synth_free(synth *s);
/* The encoded trace so far (borrowed). */
const uint8_t *synth_bytes(synth *s, size_t *len);
/* Writes the trace to a new file; returns 0 or -1. */
int synth_save(synth *s, const char *path);

/* A TraceConfig naming linux.perf at `hz` (0: track_event only). */
void synth_config(synth *s, uint32_t hz);
/* TracingServiceEvent tracing_disabled (finalization observed). */
void synth_tracing_disabled(synth *s);
/* TraceStats with `lost` trace_writer_packet_loss in buffer 0. */
void synth_stats(synth *s, uint64_t lost);

/* Track descriptors; each returns the track uuid. */
uint64_t synth_process(synth *s, uint32_t pid);
uint64_t synth_thread(synth *s, uint32_t pid, uint32_t tid);
uint64_t synth_track(synth *s, uint64_t parent, const char *name);
/* The standard semantic tracks: "Delta Funnel diagnostics", "Operation [op-N]", ... */
uint64_t synth_diag_track(synth *s, uint64_t process);
uint64_t synth_op_track(synth *s, uint64_t diag, uint64_t op);
uint64_t synth_phases_track(synth *s, uint64_t optrack, uint64_t op);
uint64_t synth_query_track(synth *s, uint64_t optrack, uint64_t op, uint64_t q);
uint64_t synth_planning_track(synth *s, uint64_t phases, uint64_t op, uint64_t q);
uint64_t synth_worker_track(synth *s, uint64_t query, uint64_t op, uint64_t q, uint64_t w);
uint64_t synth_stream_track(synth *s, uint64_t query, uint64_t op, uint64_t q, uint64_t stream);
uint64_t synth_owner_track(synth *s, uint64_t optrack, uint64_t op, uint64_t owner);

/* Track events (category SYNTH_PROFILE or SYNTH_CONTEXT). */
void synth_begin(synth *s, uint64_t track, uint64_t ts, int cat, const char *name, const synth_arg *args, size_t nargs);
void synth_end(synth *s, uint64_t track, uint64_t ts, int cat, const synth_arg *args, size_t nargs);
void synth_instant(synth *s, uint64_t track, uint64_t ts, int cat, const char *name, const synth_arg *args,
                   size_t nargs);

/* Interns a native frame on the sample sequence; returns its frame iid. */
uint64_t synth_frame(synth *s, const char *function, const char *mapping_path, const char *source, int line);
/* A perf sample with frames (root first; n may be 0); cpu UINT32_MAX = none. */
void synth_sample(synth *s, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t cpu, const uint64_t *frames, size_t n,
                  bool unwind_error);
/* A perf sample packet reporting `lost` kernel records. */
void synth_samples_lost(synth *s, uint32_t pid, uint64_t lost);

#endif
