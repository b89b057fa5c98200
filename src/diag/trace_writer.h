/*
 * The Perfetto trace writer: turns span records and native samples into
 * TracePacket messages of a .pftrace file (perfetto.protos.Trace), with a
 * hand-written protobuf encoder.  Used by the capture collector only (one
 * thread at a time).
 */
#ifndef DF_DIAG_TRACE_WRITER_H
#define DF_DIAG_TRACE_WRITER_H

#include "diag/diag_int.h"
#include "diag/sampler.h"

typedef struct df__diag_writer df__diag_writer;

/* Bounds of a trace (see df_diag_capture_options). */
typedef struct df__diag_writer_limits {
    size_t hold_bytes;       /* > 0: keep packets in memory (at most this many bytes) until finish */
    uint64_t max_file_bytes; /* > 0: largest file */
} df__diag_writer_limits;

/*
 * Creates `path` (mode 0600, O_EXCL, no symlink following) and writes the
 * trace preamble (clock snapshot, process descriptor, sequence defaults and,
 * when sample_hz > 0, a trace config naming the sampling rate).  `lim` may
 * be NULL.  Past a bound later packets are discarded (counted, and reported
 * as discarded chunks in the final TraceStats, which always fits).
 * DF_ERR_OUTPUT_UNAVAILABLE if it exists or cannot be created;
 * DF_ERR_OUT_OF_MEMORY.  On failure nothing is left on disk.
 */
df_errkind df__diag_writer_open(const char *path, uint32_t sample_hz, const df__diag_writer_limits *lim,
                                df__diag_writer **out, df_error *err);
/* Writes the packets built so far to the file (nothing in hold mode). */
df_errkind df__diag_writer_flush(df__diag_writer *w, df_error *err);
/* Packets discarded at a bound so far. */
uint64_t df__diag_writer_discarded(const df__diag_writer *w);
/*
 * Appends an off-CPU interval of thread `tid` (scheduler context, from
 * context-switch records): a slice "Off CPU (preempted)" / "Off CPU
 * (waiting)" on the thread's track in category delta_funnel.scheduler.
 */
df_errkind df__diag_writer_offcpu(df__diag_writer *w, uint32_t tid, uint64_t out_ts, uint64_t in_ts,
                                  uint32_t out_cpu, uint32_t in_cpu, bool preempted, df_error *err);
/* Off-CPU intervals written so far. */
uint64_t df__diag_writer_switches(const df__diag_writer *w);
/* Appends the packets of one span/instant record.  I/O errors: DF_ERR_IO. */
df_errkind df__diag_writer_record(df__diag_writer *w, const df_diag_ev_head *rec, df_error *err);
/* Appends one native sample (symbolizing new frames); weight > 1 repeats it. */
df_errkind df__diag_writer_sample(df__diag_writer *w, const df__diag_sample *s, df_error *err);
/* Records `lost` samples dropped by the sampler (a data-loss marker Perfetto counts). */
df_errkind df__diag_writer_samples_lost(df__diag_writer *w, uint64_t lost, df_error *err);
/* Writes the closing packets (stats) and closes the file. */
df_errkind df__diag_writer_finish(df__diag_writer *w, const df_diag_capture_stats *st, df_error *err);
/* Bytes written so far. */
uint64_t df__diag_writer_bytes(const df__diag_writer *w);
/* Closes and removes the file (start failed after the writer was opened).  Frees w. */
void df__diag_writer_abandon(df__diag_writer *w);
/* Frees the writer (closing the file if still open).  Accepts NULL. */
void df__diag_writer_destroy(df__diag_writer *w);

#endif
