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

/*
 * Creates `path` (mode 0600, O_EXCL, no symlink following) and writes the
 * trace preamble (clock snapshot, process descriptor, sequence defaults and,
 * when sample_hz > 0, a trace config naming the sampling rate).
 * DF_ERR_OUTPUT_UNAVAILABLE if it exists or cannot be created;
 * DF_ERR_OUT_OF_MEMORY.  On failure nothing is left on disk.
 */
df_errkind df__diag_writer_open(const char *path, uint32_t sample_hz, df__diag_writer **out, df_error *err);
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
