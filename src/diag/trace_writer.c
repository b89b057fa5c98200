/*
 * The Perfetto trace writer (.pftrace = perfetto.protos.Trace, a sequence
 * of `packet` fields).  Message and field numbers are those of Perfetto's
 * published trace protos (protos/perfetto/trace/); the encoder is ours.
 *
 * Layout of a trace:
 *   - sequence 3 (service): ClockSnapshot (BOOTTIME primary, MONOTONIC,
 *     REALTIME), TracingServiceEvent tracing_started, the TraceConfig (so
 *     the sampling rate is in the trace metadata); at the end a second
 *     snapshot, TraceStats (records lost to the buffer cap as
 *     trace_writer_packet_loss) and tracing_disabled.
 *   - sequence 1 (spans): first packet clears incremental state, sets
 *     timestamp_clock_id MONOTONIC as default and interns the two
 *     categories; then TrackDescriptors (emitted once, parents first) and one
 *     TrackEvent per packet with interned names and debug annotations.
 *     Span begins/ends go to their semantic track (category
 *     delta_funnel.profile) and, for spans on a thread's stack, to that
 *     thread's track as a context slice (delta_funnel.profile.context).
 *   - sequence 2 (samples): first packet clears incremental state, sets
 *     MONOTONIC and the cpu-clock timebase; then PerfSample packets whose
 *     mappings, frames, function names, source paths and callstacks are
 *     interned on first use in the same packet.
 *
 * Semantic track UUIDs are the reference implementation's: parent_uuid XOR
 * fnv1a64(name) XOR id, names with 20-digit zero-padded tokens.
 */
#include "diag/trace_writer.h"

#include "diag/protobuf.h"
#include "diag/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_BYTES (1u << 20)
#define MAX_SAMPLE_REPEAT 1000u
#define SEQ_SPANS 1
#define SEQ_SAMPLES 2
#define SEQ_SERVICE 3
/* Category iids are the vocabulary's constants (1, 2, 3). */
#define CAT_PROFILE DF_DIAG_CAT_PROFILE
#define CAT_CONTEXT DF_DIAG_CAT_CONTEXT
#define CAT_SCHED DF_DIAG_CAT_SCHEDULER
/* Debug annotation names of the vocabulary. */
#define NARG(id) df_diag_num_arg_name(DF_DIAG_NARG_##id)
#define SARG(id) df_diag_str_arg_name(DF_DIAG_SARG_##id)
#define WARG(id) df_diag_writer_arg_name(DF_DIAG_WARG_##id)
/* Room kept below a bound for the closing packets (stats, clock snapshot, service events). */
#define CLOSING_HEADROOM 4096u

/* TracePacket fields. */
enum {
    TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12, TP_SEQ_FLAGS = 13,
    TP_CLOCK_SNAPSHOT = 6, TP_TRACE_CONFIG = 33, TP_TRACE_STATS = 35, TP_DEFAULTS = 59,
    TP_TRACK_DESCRIPTOR = 60, TP_PERF_SAMPLE = 66, TP_SERVICE_EVENT = 69,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { CLOCK_REALTIME_ID = 1, CLOCK_MONOTONIC_ID = 3, CLOCK_BOOTTIME_ID = 6 };
/* InternedData fields. */
enum {
    ID_CATEGORIES = 1, ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, ID_FUNCTION_NAMES = 5, ID_FRAMES = 6,
    ID_CALLSTACKS = 7, ID_BUILD_IDS = 16, ID_MAPPING_PATHS = 17, ID_SOURCE_PATHS = 18, ID_MAPPINGS = 19,
};

/* ------------------------------------------------------------------------ */
/* Interning: bytes -> iid.                                                  */

/*
 * The iid of `data` in `m`, handed out 1, 2, ... in first-seen order; sets
 * *fresh when it is new.  Returns 0 when out of memory.
 */
static uint64_t bytes_intern(df_strmap *m, const void *data, size_t len, bool *fresh) {
    uint64_t *iid;
    if (df_strmap_upsert(m, data, len, &iid, fresh, NULL) != DF_OK) {
        *fresh = false;
        return 0;
    }
    if (*fresh) *iid = m->n;
    return *iid;
}

/*
 * Track key -> UUID of tracks already described, so an event on a known
 * track costs one hash lookup instead of formatting and hashing the names
 * of the track and its ancestors.
 */
typedef struct track_memo {
    df_diag_track_key key; /* the key (kind 0 = empty slot; DIAGNOSTICS has kind 1) */
    uint64_t uuid;         /* its UUID */
} track_memo;

static uint64_t key_hash(const df_diag_track_key *k) {
    return df_hash_combine(df_hash_combine(k->kind, k->op_id), df_hash_combine(k->query_id, k->sub_id));
}

static bool key_equal(const df_diag_track_key *a, const df_diag_track_key *b) {
    return a->kind == b->kind && a->op_id == b->op_id && a->query_id == b->query_id && a->sub_id == b->sub_id;
}

/* The slot of `k` or the empty slot where it belongs (cap > 0, load < 1). */
static track_memo *memo_slot(track_memo *m, size_t cap, const df_diag_track_key *k) {
    for (size_t i = (size_t)key_hash(k) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (m[i].key.kind == 0 || key_equal(&m[i].key, k)) return &m[i];
}

/* ------------------------------------------------------------------------ */
/* Writer state.                                                             */

struct df__diag_writer {
    int fd;                  /* trace file, -1 once closed */
    char *path;              /* its path (owned), for abandon */
    uint32_t sample_hz;      /* configured sampling rate, 0 = none */
    uint64_t bytes;          /* bytes written to the file */
    pb_writer out;           /* bytes not yet written */
    pb_writer pkt;           /* packet being built */
    pb_writer interned;      /* InternedData body of the packet being built */
    df_error io_err;         /* first I/O error */
    df_errkind io_kind;      /* its kind, sticky */
    uint32_t pid;            /* this process */
    uint64_t process_uuid;   /* process track */
    df_u64map tracks;        /* uuids of emitted TrackDescriptors */
    struct track_memo *memo; /* semantic track key -> uuid of emitted tracks (open addressing) */
    size_t memo_cap, memo_n; /* slots (power of two), used */
    df_strmap event_names;   /* span names (sequence 1) */
    df_strmap ann_names;     /* debug annotation names (sequence 1) */
    bool samples_started;    /* sequence 2 has its first packet */
    df__diag_symbolizer *sym;/* symbolizer, created with the first sample */
    df_u64map frames;        /* lookup address -> frame iid (sequence 2) */
    uint64_t next_frame;     /* next frame iid */
    df_u64map mappings;      /* module index -> mapping iid */
    uint64_t next_mapping;   /* next mapping iid */
    df_strmap functions;     /* function names */
    df_strmap paths;         /* mapping paths */
    df_strmap sources;       /* source paths */
    df_strmap build_ids;     /* build ids */
    df_strmap callstacks;    /* frame iid sequences (root first) */
    uint64_t *stack_buf;     /* scratch frame iids of one sample */
    size_t hold_bytes;       /* > 0: hold packets in memory up to this many bytes */
    uint64_t max_file_bytes; /* > 0: file bound */
    bool discarding;         /* a bound was reached: every later packet is dropped */
    bool finishing;          /* the closing packets are being written (exempt from bounds) */
    uint64_t discarded;      /* packets dropped at a bound */
    uint64_t switches;       /* off-CPU intervals written */
};

static df_errkind io_fail(df__diag_writer *w, const char *what, int code) {
    if (w->io_kind == DF_OK) {
        w->io_kind = df_error_set(&w->io_err, DF_ERR_IO, "cannot write trace file: %s", what);
        df_error_set_code(&w->io_err, code);
    }
    return w->io_kind;
}

static df_errkind copy_err(df__diag_writer *w, df_error *err) {
    if (w->io_kind != DF_OK && err) {
        df_error_set(err, w->io_kind, "%s", w->io_err.message);
        df_error_set_code(err, w->io_err.code);
    }
    return w->io_kind;
}

static df_errkind flush_out(df__diag_writer *w) {
    if (w->io_kind != DF_OK) return w->io_kind;
    if (w->out.failed) return io_fail(w, "out of memory", ENOMEM);
    size_t done = 0;
    while (done < w->out.buf.len) {
        ssize_t n = write(w->fd, w->out.buf.data + done, w->out.buf.len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return io_fail(w, "write failed", n < 0 ? errno : EIO);
        done += (size_t)n;
    }
    w->bytes += done;
    pb_reset(&w->out);
    return DF_OK;
}

static void packet_begin(df__diag_writer *w) {
    pb_reset(&w->pkt);
    pb_reset(&w->interned);
}

/*
 * True when a packet of `size` bytes would pass a bound (keeping room for
 * the closing packets).  Once a bound is reached every later packet is
 * dropped, so no kept packet refers to interned data of a dropped one.
 */
static bool over_bound(df__diag_writer *w, size_t size) {
    if (w->finishing) return false;
    if (!w->discarding) {
        uint64_t pending = (uint64_t)w->out.buf.len + size + CLOSING_HEADROOM;
        if (w->hold_bytes && pending > w->hold_bytes) w->discarding = true;
        if (w->max_file_bytes && w->bytes + pending > w->max_file_bytes) w->discarding = true;
    }
    return w->discarding;
}

/* Finishes the current packet: attaches interned data, appends it to the output. */
static df_errkind packet_end(df__diag_writer *w) {
    if (w->interned.buf.len) pb_bytes(&w->pkt, TP_INTERNED, w->interned.buf.data, w->interned.buf.len);
    if (w->pkt.failed || w->interned.failed) return io_fail(w, "out of memory", ENOMEM);
    if (over_bound(w, w->pkt.buf.len + 16)) {
        w->discarded++;
        return w->io_kind;
    }
    pb_bytes(&w->out, 1, w->pkt.buf.data, w->pkt.buf.len);
    if (!w->hold_bytes && w->out.buf.len >= FLUSH_BYTES) return flush_out(w);
    return w->out.failed ? io_fail(w, "out of memory", ENOMEM) : w->io_kind;
}

/* An interned-string entry {iid=1, name/str=2} in the pending InternedData. */
static void intern_entry(df__diag_writer *w, uint32_t field, uint64_t iid, const void *s, size_t n) {
    size_t at = pb_open(&w->interned, field);
    pb_uint(&w->interned, 1, iid);
    pb_bytes(&w->interned, 2, s, n);
    pb_close(&w->interned, at);
}

/* iid of a name in `map` (field = InternedData field); interns it in this packet if new. */
static uint64_t intern_name(df__diag_writer *w, df_strmap *map, uint32_t field, const char *s) {
    bool fresh;
    size_t n = strlen(s);
    uint64_t iid = bytes_intern(map, s, n, &fresh);
    if (!iid) w->pkt.failed = true;
    else if (fresh) intern_entry(w, field, iid, s, n);
    return iid;
}

/* ------------------------------------------------------------------------ */
/* Clocks, service events and the preamble.                                  */

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void clock_entry(pb_writer *pb, uint32_t id, uint64_t ts) {
    size_t at = pb_open(pb, 1);
    pb_uint(pb, 1, id);
    pb_uint(pb, 2, ts);
    pb_close(pb, at);
}

static df_errkind write_clock_snapshot(df__diag_writer *w) {
    uint64_t boot = clock_ns(CLOCK_BOOTTIME), mono = clock_ns(CLOCK_MONOTONIC), real = clock_ns(CLOCK_REALTIME);
    packet_begin(w);
    pb_uint(&w->pkt, TP_TIMESTAMP, boot);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SERVICE);
    size_t at = pb_open(&w->pkt, TP_CLOCK_SNAPSHOT);
    clock_entry(&w->pkt, CLOCK_BOOTTIME_ID, boot);
    clock_entry(&w->pkt, CLOCK_MONOTONIC_ID, mono);
    clock_entry(&w->pkt, CLOCK_REALTIME_ID, real);
    pb_uint(&w->pkt, 2, CLOCK_BOOTTIME_ID);
    pb_close(&w->pkt, at);
    return packet_end(w);
}

/* TracingServiceEvent with one boolean field set. */
static df_errkind write_service_event(df__diag_writer *w, uint32_t field) {
    packet_begin(w);
    pb_uint(&w->pkt, TP_TIMESTAMP, clock_ns(CLOCK_BOOTTIME));
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SERVICE);
    size_t at = pb_open(&w->pkt, TP_SERVICE_EVENT);
    pb_uint(&w->pkt, field, 1);
    pb_close(&w->pkt, at);
    return packet_end(w);
}

/* TraceConfig: one track_event data source and, when sampling, linux.perf at the rate. */
static df_errkind write_trace_config(df__diag_writer *w) {
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SERVICE);
    size_t cfg = pb_open(&w->pkt, TP_TRACE_CONFIG);
    size_t ds = pb_open(&w->pkt, 2);
    size_t dsc = pb_open(&w->pkt, 1);
    pb_string(&w->pkt, 1, "track_event");
    pb_close(&w->pkt, dsc);
    pb_close(&w->pkt, ds);
    if (w->sample_hz) {
        ds = pb_open(&w->pkt, 2);
        dsc = pb_open(&w->pkt, 1);
        pb_string(&w->pkt, 1, "linux.perf");
        size_t pec = pb_open(&w->pkt, 111); /* perf_event_config */
        size_t tb = pb_open(&w->pkt, 15);   /* timebase */
        pb_uint(&w->pkt, 2, w->sample_hz);  /* frequency */
        pb_uint(&w->pkt, 4, 1);             /* counter SW_CPU_CLOCK */
        pb_close(&w->pkt, tb);
        pb_uint(&w->pkt, 4, w->pid); /* target_pid */
        pb_close(&w->pkt, pec);
        pb_close(&w->pkt, dsc);
        pb_close(&w->pkt, ds);
    }
    pb_close(&w->pkt, cfg);
    return packet_end(w);
}

/* First packet of the span sequence: cleared state, MONOTONIC default, categories. */
static df_errkind write_spans_start(df__diag_writer *w) {
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SPANS);
    pb_uint(&w->pkt, TP_SEQ_FLAGS, SEQ_CLEARED);
    size_t d = pb_open(&w->pkt, TP_DEFAULTS);
    pb_uint(&w->pkt, 58, CLOCK_MONOTONIC_ID);
    pb_close(&w->pkt, d);
    for (unsigned c = 1; c < DF_DIAG_CAT_COUNT_; c++) {
        const char *name = df_diag_category_name((df_diag_category)c);
        intern_entry(w, ID_CATEGORIES, c, name, strlen(name));
    }
    return packet_end(w);
}

/* Reads a short name from a /proc file (first line, at most 63 bytes). */
static void read_comm(const char *path, char *out, size_t cap) {
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0) return;
    out[n] = 0;
    char *nl = strchr(out, '\n');
    if (nl) *nl = 0;
}

static df_errkind write_process_track(df__diag_writer *w) {
    char name[64];
    read_comm("/proc/self/comm", name, sizeof name);
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SPANS);
    size_t td = pb_open(&w->pkt, TP_TRACK_DESCRIPTOR);
    pb_uint(&w->pkt, 1, w->process_uuid);
    size_t pd = pb_open(&w->pkt, 3);
    pb_int(&w->pkt, 1, w->pid);
    if (name[0]) pb_string(&w->pkt, 6, name);
    pb_close(&w->pkt, pd);
    pb_close(&w->pkt, td);
    return packet_end(w);
}

df_errkind df__diag_writer_open(const char *path, uint32_t sample_hz, const df__diag_writer_limits *lim,
                                df__diag_writer **out, df_error *err) {
    *out = NULL;
    df__diag_writer *w = df_calloc(1, sizeof *w);
    if (!w || !(w->path = df_strdup(path))) {
        df_free(w);
        return DF_OOM(err);
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (w->fd < 0) {
        int e = errno;
        df_free(w->path);
        df_free(w);
        df_errkind k = df_error_set(err, DF_ERR_OUTPUT_UNAVAILABLE, e == EEXIST ? "trace file already exists"
                                                                               : "cannot create trace file");
        df_error_set_code(err, e);
        return k;
    }
    (void)fchmod(w->fd, 0600); /* exact mode whatever the umask */
    w->sample_hz = sample_hz;
    if (lim) {
        w->hold_bytes = lim->hold_bytes;
        w->max_file_bytes = lim->max_file_bytes;
    }
    w->pid = (uint32_t)getpid();
    w->process_uuid = df_hash_combine(0x6466707266ULL, w->pid);
    pb_init(&w->out, 0);
    pb_init(&w->pkt, 0);
    pb_init(&w->interned, 0);
    df_errkind k = write_clock_snapshot(w);
    if (k == DF_OK) k = write_service_event(w, 2); /* tracing_started */
    if (k == DF_OK) k = write_trace_config(w);
    if (k == DF_OK) k = write_spans_start(w);
    if (k == DF_OK) k = write_process_track(w);
    if (k == DF_OK) k = flush_out(w);
    if (k != DF_OK) {
        copy_err(w, err);
        df__diag_writer_abandon(w);
        return k;
    }
    *out = w;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Tracks.                                                                   */

static uint64_t thread_uuid(const df__diag_writer *w, uint32_t tid) { return df_hash_combine(w->process_uuid, tid); }

static df_errkind ensure_thread_track(df__diag_writer *w, uint32_t tid) {
    uint64_t uuid = thread_uuid(w, tid);
    if (df_u64map_get(&w->tracks, uuid, NULL)) return DF_OK;
    if (df_u64map_put(&w->tracks, uuid, 1, NULL)) return io_fail(w, "out of memory", ENOMEM);
    char path[64], name[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    read_comm(path, name, sizeof name);
    if (!name[0]) snprintf(name, sizeof name, "thread %u", tid);
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SPANS);
    size_t td = pb_open(&w->pkt, TP_TRACK_DESCRIPTOR);
    pb_uint(&w->pkt, 1, uuid);
    size_t th = pb_open(&w->pkt, 4);
    pb_int(&w->pkt, 1, w->pid);
    pb_int(&w->pkt, 2, tid);
    pb_string(&w->pkt, 5, name);
    pb_close(&w->pkt, th);
    pb_close(&w->pkt, td);
    return packet_end(w);
}

/* The name parts of each kind of semantic track, outermost first. */
#define TP(part) DF_DIAG_TRACK_PART_##part
static const df_diag_track_part track_paths[][3] = {
    [DF_DIAG_TK_NONE] = {TP(DIAGNOSTICS)},
    [DF_DIAG_TK_DIAGNOSTICS] = {TP(DIAGNOSTICS)},
    [DF_DIAG_TK_OPERATION] = {TP(OPERATION)},
    [DF_DIAG_TK_PHASES] = {TP(OPERATION), TP(PHASES)},
    [DF_DIAG_TK_PLANNING] = {TP(OPERATION), TP(QUERY), TP(PLANNING)},
    [DF_DIAG_TK_QUERY] = {TP(OPERATION), TP(QUERY)},
    [DF_DIAG_TK_WORKER] = {TP(OPERATION), TP(QUERY), TP(WORKER)},
    [DF_DIAG_TK_STREAM] = {TP(OPERATION), TP(QUERY), TP(STREAM)},
    [DF_DIAG_TK_OWNER] = {TP(OPERATION), TP(OWNER)},
};
#undef TP

/* Writes the name of track `k` into buf: its parts joined, numbered parts with their zero-padded id. */
static void track_name(const df_diag_track_key *k, char *buf, size_t cap) {
    const df_diag_track_part *path = track_paths[k->kind < DF_ARRAY_LEN(track_paths) ? k->kind : 0];
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < 3 && path[i] && at < cap; i++) {
        const char *sep = i ? DF_DIAG_TRACK_SEPARATOR : "", *name = df_diag_track_part_name(path[i]);
        unsigned long long id = path[i] == DF_DIAG_TRACK_PART_OPERATION ? k->op_id
                                : path[i] == DF_DIAG_TRACK_PART_QUERY   ? k->query_id
                                                                        : k->sub_id;
        int n = df_diag_track_part_numbered(path[i])
                    ? snprintf(buf + at, cap - at, "%s%s%0*llu]", sep, name, DF_DIAG_TRACK_ID_DIGITS, id)
                    : snprintf(buf + at, cap - at, "%s%s", sep, name);
        if (n > 0) at += (size_t)n;
    }
}

/* Name, id and sibling rank of a semantic track; writes the name into buf. */
static void track_identity(const df_diag_track_key *k, char *buf, size_t cap, uint64_t *id, int64_t *rank) {
    track_name(k, buf, cap);
    uint64_t op = k->op_id, q = k->query_id, sub = k->sub_id;
    switch ((df_diag_track_kind)k->kind) {
    case DF_DIAG_TK_OPERATION: *id = op, *rank = (int64_t)op; break;
    case DF_DIAG_TK_PHASES: *id = 0, *rank = 10; break;
    case DF_DIAG_TK_PLANNING:
    case DF_DIAG_TK_QUERY: *id = q, *rank = 20 + (int64_t)q; break;
    case DF_DIAG_TK_WORKER: *id = sub, *rank = (int64_t)sub; break;
    case DF_DIAG_TK_STREAM: *id = sub, *rank = 1000000 + (int64_t)sub; break;
    case DF_DIAG_TK_OWNER: *id = sub, *rank = 30 + (int64_t)sub; break;
    default: *id = 0, *rank = 10; break;
    }
}

/* The key of a semantic track's parent (DIAGNOSTICS has the process track). */
static df_diag_track_key parent_key(const df_diag_track_key *k) {
    df_diag_track_key p = {.op_id = k->op_id};
    switch ((df_diag_track_kind)k->kind) {
    case DF_DIAG_TK_OPERATION: p = (df_diag_track_key){.kind = DF_DIAG_TK_DIAGNOSTICS}; break;
    case DF_DIAG_TK_PHASES:
    case DF_DIAG_TK_QUERY:
    case DF_DIAG_TK_OWNER: p.kind = DF_DIAG_TK_OPERATION; break;
    case DF_DIAG_TK_PLANNING: p.kind = DF_DIAG_TK_PHASES; break;
    case DF_DIAG_TK_WORKER:
    case DF_DIAG_TK_STREAM: p.kind = DF_DIAG_TK_QUERY, p.query_id = k->query_id; break;
    default: p.kind = DF_DIAG_TK_NONE; break;
    }
    return p;
}

/*
 * Returns the UUID of a semantic track, writing its descriptor (and its
 * ancestors') the first time.  0 on failure (the error is sticky in w).
 */
static uint64_t describe_track(df__diag_writer *w, const df_diag_track_key *k);

static uint64_t ensure_track(df__diag_writer *w, const df_diag_track_key *k) {
    if (w->memo_cap) {
        track_memo *hit = memo_slot(w->memo, w->memo_cap, k);
        if (hit->key.kind) return hit->uuid;
    }
    uint64_t uuid = describe_track(w, k);
    if (!uuid) return 0;
    if ((w->memo_n + 1) * 2 > w->memo_cap) { /* grow at 50% load (failure: just no memo) */
        size_t cap = w->memo_cap ? w->memo_cap * 2 : 64;
        track_memo *m = df_calloc(cap, sizeof *m);
        if (!m) return uuid;
        for (size_t i = 0; i < w->memo_cap; i++)
            if (w->memo[i].key.kind) *memo_slot(m, cap, &w->memo[i].key) = w->memo[i];
        df_free(w->memo);
        w->memo = m;
        w->memo_cap = cap;
    }
    track_memo *slot = memo_slot(w->memo, w->memo_cap, k);
    if (!slot->key.kind) {
        slot->key = *k;
        slot->uuid = uuid;
        w->memo_n++;
    }
    return uuid;
}

/* Computes a track's UUID, writing its descriptor (and its ancestors') the first time. */
static uint64_t describe_track(df__diag_writer *w, const df_diag_track_key *k) {
    uint64_t parent = w->process_uuid;
    if (k->kind != DF_DIAG_TK_DIAGNOSTICS) {
        df_diag_track_key pk = parent_key(k);
        if (pk.kind == DF_DIAG_TK_NONE || (parent = ensure_track(w, &pk)) == 0) return 0;
    }
    char name[256];
    uint64_t id = 0;
    int64_t rank = 0;
    track_identity(k, name, sizeof name, &id, &rank);
    uint64_t uuid = parent ^ df_fnv1a64(name, strlen(name)) ^ id;
    if (df_u64map_get(&w->tracks, uuid, NULL)) return uuid;
    if (df_u64map_put(&w->tracks, uuid, 1, NULL)) {
        io_fail(w, "out of memory", ENOMEM);
        return 0;
    }
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SPANS);
    size_t td = pb_open(&w->pkt, TP_TRACK_DESCRIPTOR);
    pb_uint(&w->pkt, 1, uuid);
    pb_string(&w->pkt, 2, name);
    pb_uint(&w->pkt, 5, parent);
    pb_uint(&w->pkt, 9, 1);  /* disallow_merging_with_system_tracks */
    pb_uint(&w->pkt, 11, 3); /* child_ordering EXPLICIT */
    pb_int(&w->pkt, 12, rank > INT32_MAX ? INT32_MAX : rank);
    pb_uint(&w->pkt, 15, 2); /* sibling_merge_behavior NONE */
    pb_close(&w->pkt, td);
    return packet_end(w) == DF_OK ? uuid : 0;
}

/* ------------------------------------------------------------------------ */
/* Track events.                                                             */

static void ann_begin(df__diag_writer *w, const char *name, size_t *at) {
    *at = pb_open(&w->pkt, 4);
    pb_uint(&w->pkt, 1, intern_name(w, &w->ann_names, ID_ANNOTATION_NAMES, name));
}

static void ann_uint(df__diag_writer *w, const char *name, uint64_t v) {
    size_t at;
    ann_begin(w, name, &at);
    pb_uint(&w->pkt, 3, v);
    pb_close(&w->pkt, at);
}

static void ann_int(df__diag_writer *w, const char *name, int64_t v) {
    size_t at;
    ann_begin(w, name, &at);
    pb_int(&w->pkt, 4, v);
    pb_close(&w->pkt, at);
}

static void ann_str(df__diag_writer *w, const char *name, const char *v) {
    size_t at;
    ann_begin(w, name, &at);
    pb_string(&w->pkt, 6, v);
    pb_close(&w->pkt, at);
}

/* The identity arguments present in `id`, as debug annotations of the vocabulary's names. */
static void write_ident_args(df__diag_writer *w, const df_diag_ident *id, uint8_t span_kind) {
    if (id->operation_id) ann_uint(w, NARG(OPERATION), id->operation_id);
    if (id->capture_scope_id) ann_uint(w, NARG(SCOPE), id->capture_scope_id);
    if (id->query_execution_id) ann_uint(w, NARG(QUERY), id->query_execution_id);
    if (id->query_scope) ann_str(w, SARG(QUERY_SCOPE), df_diag_query_scope_name((df_diag_query_scope)id->query_scope));
    if (id->query_owner_id) ann_str(w, SARG(QUERY_OWNER), df_diag_name_get(id->query_owner_id));
    if (id->worker_kind) {
        ann_uint(w, NARG(LANE), id->worker_lane_id);
        ann_str(w, SARG(WORKER_KIND), df_diag_worker_kind_name(id->worker_kind));
    }
    if (id->node_id >= 0) ann_int(w, NARG(NODE), id->node_id);
    if (id->parent_node_id >= 0) ann_int(w, NARG(PARENT_NODE), id->parent_node_id);
    if (id->operator_partition >= 0) ann_int(w, NARG(PARTITION), id->operator_partition);
    if (id->execution_stream_id) ann_uint(w, NARG(STREAM), id->execution_stream_id);
    if (id->activity) ann_str(w, SARG(ACTIVITY), df_diag_activity_value_name(id->activity));
    if (span_kind == DF_DIAG_SK_AWAIT) ann_str(w, SARG(EXEC_ACTIVITY), df_diag_title_name(DF_DIAG_TITLE_AWAIT_OUTPUT));
    if (id->op_kind) ann_str(w, SARG(OPERATION_KIND), df_diag_op_kind_name((df_diag_op_kind)id->op_kind));
    if (id->stage) {
        ann_str(w, SARG(STAGE_NAME), df_diag_stage_name((df_diag_stage)id->stage));
        ann_str(w, SARG(STAGE_CATEGORY), df_diag_stage_category((df_diag_stage)id->stage));
    }
    if (id->stage_owner_id) ann_uint(w, NARG(OWNER), id->stage_owner_id);
    if (id->profile_context_id) {
        ann_uint(w, NARG(CONTEXT), id->profile_context_id);
        ann_str(w, SARG(CONTEXT_NAME), df_diag_title_name(DF_DIAG_TITLE_TASK_CONTEXT));
    }
    if (id->time_semantics) ann_str(w, SARG(TIME_SEMANTICS), df_diag_time_semantics_name(id->time_semantics));
}

/* Opens a track-event packet; returns the offset of the TrackEvent body. */
static size_t event_begin(df__diag_writer *w, uint64_t ts, uint64_t track, uint32_t type, uint32_t cat,
                          const char *name) {
    packet_begin(w);
    pb_uint(&w->pkt, TP_TIMESTAMP, ts);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SPANS);
    pb_uint(&w->pkt, TP_SEQ_FLAGS, SEQ_NEEDS_STATE);
    size_t at = pb_open(&w->pkt, TP_TRACK_EVENT);
    pb_uint(&w->pkt, 9, type);
    pb_uint(&w->pkt, 11, track);
    pb_uint(&w->pkt, 3, cat);
    if (name) pb_uint(&w->pkt, 10, intern_name(w, &w->event_names, ID_EVENT_NAMES, name));
    return at;
}

static df_errkind event_end(df__diag_writer *w, size_t at) {
    pb_close(&w->pkt, at);
    return packet_end(w);
}

static df_errkind write_begin_record(df__diag_writer *w, const df_diag_ev_begin *e) {
    const char *name = df__diag_span_name(e->h.kind, e->name_id, &e->ident);
    if (e->track.kind != DF_DIAG_TK_NONE) {
        uint64_t track = ensure_track(w, &e->track);
        if (!track) return w->io_kind;
        size_t at = event_begin(w, e->ts, track, 1, CAT_PROFILE, name);
        write_ident_args(w, &e->ident, e->h.kind);
        DF_TRY(event_end(w, at));
    }
    if (e->flags & DF_DIAG_EVF_CONTEXT) {
        DF_TRY(ensure_thread_track(w, e->h.tid));
        size_t at = event_begin(w, e->ts, thread_uuid(w, e->h.tid), 1, CAT_CONTEXT, name);
        write_ident_args(w, &e->ident, e->h.kind);
        DF_TRY(event_end(w, at));
    }
    return DF_OK;
}

static void write_end_args(df__diag_writer *w, const df_diag_ev_end *e) {
    if (e->flags & DF_DIAG_EVF_OWNER) ann_str(w, SARG(QUERY_OWNER), df_diag_name_get(e->query_owner_id));
    if (e->flags & DF_DIAG_EVF_PARENT_NODE) ann_int(w, NARG(PARENT_NODE), e->parent_node_id);
    if (e->h.kind != DF_DIAG_SK_TASK && e->h.kind != DF_DIAG_SK_DETAIL)
        ann_str(w, SARG(RESULT), df_diag_result_name((df_diag_result)e->result));
}

static df_errkind write_end_record(df__diag_writer *w, const df_diag_ev_end *e) {
    if (e->track.kind != DF_DIAG_TK_NONE) {
        uint64_t track = ensure_track(w, &e->track);
        if (!track) return w->io_kind;
        size_t at = event_begin(w, e->ts, track, 2, CAT_PROFILE, NULL);
        write_end_args(w, e);
        DF_TRY(event_end(w, at));
    }
    if (e->flags & DF_DIAG_EVF_CONTEXT) {
        DF_TRY(ensure_thread_track(w, e->h.tid));
        size_t at = event_begin(w, e->ts, thread_uuid(w, e->h.tid), 2, CAT_CONTEXT, NULL);
        write_end_args(w, e);
        DF_TRY(event_end(w, at));
    }
    return DF_OK;
}

static df_errkind write_instant_record(df__diag_writer *w, const df_diag_ev_instant *e) {
    uint64_t track = ensure_track(w, &e->track);
    if (!track) return w->io_kind;
    size_t at = event_begin(w, e->ts, track, 3, CAT_PROFILE, df__diag_instant_name(e->h.kind));
    if (e->h.kind == DF_DIAG_IK_TRUNCATED) ann_uint(w, NARG(MAX_SPANS), e->maximum_spans);
    if (e->h.kind == DF_DIAG_IK_QUERY) write_ident_args(w, &e->ident, 0);
    return event_end(w, at);
}

df_errkind df__diag_writer_record(df__diag_writer *w, const df_diag_ev_head *rec, df_error *err) {
    df_errkind k = w->io_kind;
    if (k == DF_OK) {
        if (rec->type == DF_DIAG_EV_BEGIN && rec->size >= sizeof(df_diag_ev_begin))
            k = write_begin_record(w, (const df_diag_ev_begin *)rec);
        else if (rec->type == DF_DIAG_EV_END && rec->size >= sizeof(df_diag_ev_end))
            k = write_end_record(w, (const df_diag_ev_end *)rec);
        else if (rec->type == DF_DIAG_EV_INSTANT && rec->size >= sizeof(df_diag_ev_instant))
            k = write_instant_record(w, (const df_diag_ev_instant *)rec);
    }
    return k == DF_OK ? DF_OK : copy_err(w, err);
}

/* ------------------------------------------------------------------------ */
/* Samples.                                                                  */

static df_errkind write_samples_start(df__diag_writer *w) {
    df_error e = {0};
    if (df__diag_symbolizer_acquire(&w->sym, &e) != DF_OK) w->sym = NULL; /* samples stay unsymbolized */
    df_error_clear(&e);
    w->stack_buf = df_malloc(DF_DIAG_MAX_FRAMES * sizeof *w->stack_buf);
    if (!w->stack_buf) return io_fail(w, "out of memory", ENOMEM);
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SAMPLES);
    pb_uint(&w->pkt, TP_SEQ_FLAGS, SEQ_CLEARED);
    size_t d = pb_open(&w->pkt, TP_DEFAULTS);
    pb_uint(&w->pkt, 58, CLOCK_MONOTONIC_ID);
    size_t psd = pb_open(&w->pkt, 12); /* perf_sample_defaults */
    size_t tb = pb_open(&w->pkt, 1);   /* timebase */
    pb_uint(&w->pkt, 2, w->sample_hz ? w->sample_hz : 1);
    pb_uint(&w->pkt, 4, 1);            /* SW_CPU_CLOCK */
    pb_string(&w->pkt, 10, "cpu-clock");
    pb_close(&w->pkt, tb);
    pb_close(&w->pkt, psd);
    pb_close(&w->pkt, d);
    w->samples_started = true;
    return packet_end(w);
}

/* The iid of module m's Mapping, interning it (and its path, build id) if new. */
static uint64_t mapping_iid(df__diag_writer *w, const df__diag_module *m) {
    uint64_t iid;
    if (df_u64map_get(&w->mappings, m->index, &iid)) return iid;
    iid = ++w->next_mapping;
    if (df_u64map_put(&w->mappings, m->index, iid, NULL)) {
        w->pkt.failed = true;
        return 0;
    }
    uint64_t path = intern_name(w, &w->paths, ID_MAPPING_PATHS, m->path);
    uint64_t bid = 0;
    if (m->build_id_len) {
        bool fresh;
        bid = bytes_intern(&w->build_ids, m->build_id, m->build_id_len, &fresh);
        if (!bid) w->pkt.failed = true;
        else if (fresh) intern_entry(w, ID_BUILD_IDS, bid, m->build_id, m->build_id_len);
    }
    size_t at = pb_open(&w->interned, ID_MAPPINGS);
    pb_uint(&w->interned, 1, iid);
    if (bid) pb_uint(&w->interned, 2, bid);
    pb_uint(&w->interned, 3, m->offset);
    pb_uint(&w->interned, 4, m->start);
    pb_uint(&w->interned, 5, m->end);
    pb_uint(&w->interned, 7, path);
    pb_close(&w->interned, at);
    return iid;
}

/* The iid of the frame at lookup address `addr`, symbolizing and interning it if new. */
static uint64_t frame_iid(df__diag_writer *w, uint64_t addr) {
    uint64_t iid;
    if (df_u64map_get(&w->frames, addr, &iid)) return iid;
    df__diag_symbol sym = {0};
    df_error e = {0};
    if (w->sym && df__diag_symbolize(w->sym, addr, &sym, &e) != DF_OK) w->pkt.failed = true;
    df_error_clear(&e);
    iid = ++w->next_frame;
    if (df_u64map_put(&w->frames, addr, iid, NULL)) {
        w->pkt.failed = true;
        return 0;
    }
    uint64_t fn = sym.function ? intern_name(w, &w->functions, ID_FUNCTION_NAMES, sym.function) : 0;
    uint64_t map = sym.module ? mapping_iid(w, sym.module) : 0;
    uint64_t src = sym.source_file ? intern_name(w, &w->sources, ID_SOURCE_PATHS, sym.source_file) : 0;
    size_t at = pb_open(&w->interned, ID_FRAMES);
    pb_uint(&w->interned, 1, iid);
    if (fn) pb_uint(&w->interned, 2, fn);
    if (map) {
        pb_uint(&w->interned, 3, map);
        pb_uint(&w->interned, 4, addr - sym.module->start + sym.module->offset);
    }
    if (src) {
        pb_uint(&w->interned, 5, src);
        pb_uint(&w->interned, 6, sym.line);
    }
    pb_close(&w->interned, at);
    return iid;
}

/* The iid of the callstack of s (root first), interning frames and the stack if new. */
static uint64_t callstack_iid(df__diag_writer *w, const df__diag_sample *s) {
    uint32_t n = DF_MIN(s->nframes, (uint32_t)DF_DIAG_MAX_FRAMES);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t pc = s->pcs[i];
        uint64_t addr = i == 0 || pc == 0 ? pc : pc - 1; /* return addresses point after the call */
        w->stack_buf[n - 1 - i] = frame_iid(w, addr);
    }
    bool fresh;
    uint64_t iid = bytes_intern(&w->callstacks, w->stack_buf, n * sizeof *w->stack_buf, &fresh);
    if (!iid) {
        w->pkt.failed = true;
        return 0;
    }
    if (fresh) {
        size_t at = pb_open(&w->interned, ID_CALLSTACKS);
        pb_uint(&w->interned, 1, iid);
        for (uint32_t i = 0; i < n; i++) pb_uint(&w->interned, 2, w->stack_buf[i]); /* unpacked */
        pb_close(&w->interned, at);
    }
    return iid;
}

static void perf_sample_fields(df__diag_writer *w, const df__diag_sample *s, uint64_t stack) {
    size_t at = pb_open(&w->pkt, TP_PERF_SAMPLE);
    if (s->cpu != UINT32_MAX) pb_uint(&w->pkt, 1, s->cpu);
    pb_uint(&w->pkt, 2, w->pid);
    pb_uint(&w->pkt, 3, s->tid);
    if (stack) pb_uint(&w->pkt, 4, stack);
    pb_uint(&w->pkt, 5, 2); /* MODE_USER */
    if (s->unwind_error) pb_uint(&w->pkt, 16, 2); /* UNWIND_ERROR_MEMORY_INVALID */
    pb_close(&w->pkt, at);
}

df_errkind df__diag_writer_sample(df__diag_writer *w, const df__diag_sample *s, df_error *err) {
    if (w->io_kind == DF_OK && !w->samples_started) write_samples_start(w);
    if (w->io_kind == DF_OK) ensure_thread_track(w, s->tid);
    uint32_t repeat = DF_MIN(DF_MAX(s->weight, 1u), MAX_SAMPLE_REPEAT);
    for (uint32_t r = 0; r < repeat && w->io_kind == DF_OK; r++) {
        packet_begin(w);
        pb_uint(&w->pkt, TP_TIMESTAMP, s->ts);
        pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SAMPLES);
        pb_uint(&w->pkt, TP_SEQ_FLAGS, SEQ_NEEDS_STATE);
        uint64_t stack = s->nframes ? callstack_iid(w, s) : 0;
        perf_sample_fields(w, s, stack);
        packet_end(w);
    }
    return w->io_kind == DF_OK ? DF_OK : copy_err(w, err);
}

df_errkind df__diag_writer_samples_lost(df__diag_writer *w, uint64_t lost, df_error *err) {
    if (w->io_kind == DF_OK && !w->samples_started) write_samples_start(w);
    if (w->io_kind == DF_OK && lost) {
        packet_begin(w);
        pb_uint(&w->pkt, TP_TIMESTAMP, clock_ns(CLOCK_MONOTONIC));
        pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SAMPLES);
        pb_uint(&w->pkt, TP_SEQ_FLAGS, SEQ_NEEDS_STATE);
        size_t at = pb_open(&w->pkt, TP_PERF_SAMPLE);
        pb_uint(&w->pkt, 2, w->pid);
        pb_uint(&w->pkt, 17, lost); /* kernel_records_lost */
        pb_close(&w->pkt, at);
        packet_end(w);
    }
    return w->io_kind == DF_OK ? DF_OK : copy_err(w, err);
}

/* ------------------------------------------------------------------------ */
/* Finish.                                                                   */

static df_errkind write_trace_stats(df__diag_writer *w, const df_diag_capture_stats *st) {
    packet_begin(w);
    pb_uint(&w->pkt, TP_SEQ_ID, SEQ_SERVICE);
    size_t ts = pb_open(&w->pkt, TP_TRACE_STATS);
    size_t bs = pb_open(&w->pkt, 1);
    pb_uint(&w->pkt, 19, st->events_lost); /* trace_writer_packet_loss: records dropped at the cap */
    if (w->discarded) pb_uint(&w->pkt, 18, w->discarded); /* chunks_discarded: packets dropped at a bound */
    pb_close(&w->pkt, bs);
    pb_close(&w->pkt, ts);
    return packet_end(w);
}

df_errkind df__diag_writer_flush(df__diag_writer *w, df_error *err) {
    if (w->fd < 0 || w->hold_bytes) return copy_err(w, err);
    if (w->io_kind == DF_OK && w->out.buf.len) flush_out(w);
    return copy_err(w, err);
}

uint64_t df__diag_writer_discarded(const df__diag_writer *w) { return w ? w->discarded : 0; }
uint64_t df__diag_writer_switches(const df__diag_writer *w) { return w ? w->switches : 0; }

df_errkind df__diag_writer_offcpu(df__diag_writer *w, uint32_t tid, uint64_t out_ts, uint64_t in_ts,
                                  uint32_t out_cpu, uint32_t in_cpu, bool preempted, df_error *err) {
    if (w->io_kind == DF_OK) ensure_thread_track(w, tid);
    if (w->io_kind == DF_OK) {
        uint64_t track = thread_uuid(w, tid);
        df_diag_title name = preempted ? DF_DIAG_TITLE_OFF_CPU_PREEMPTED : DF_DIAG_TITLE_OFF_CPU_WAITING;
        size_t at = event_begin(w, out_ts, track, 1, CAT_SCHED, df_diag_title_name(name));
        if (out_cpu != UINT32_MAX) ann_uint(w, WARG(CPU_BEFORE), out_cpu);
        if (in_cpu != UINT32_MAX) ann_uint(w, WARG(CPU_AFTER), in_cpu);
        event_end(w, at);
        at = event_begin(w, in_ts, track, 2, CAT_SCHED, NULL);
        event_end(w, at);
        w->switches++;
    }
    return w->io_kind == DF_OK ? DF_OK : copy_err(w, err);
}

/*
 * The sampler in use, why, and what it recorded: an instant "Delta Funnel
 * sampler" on the diagnostics track whose arguments Perfetto UI shows
 * (backend, reason, requested and effective rate, samples, losses,
 * threads, DWARF-unwound samples, scheduler context).  No identity: it is
 * no semantic node.
 */
static void write_sampler_info(df__diag_writer *w, const df_diag_capture_stats *st) {
    df_diag_track_key diag = {.kind = DF_DIAG_TK_DIAGNOSTICS};
    uint64_t track = ensure_track(w, &diag);
    if (!track) return;
    size_t at =
        event_begin(w, clock_ns(CLOCK_MONOTONIC), track, 3, CAT_PROFILE, df_diag_title_name(DF_DIAG_TITLE_SAMPLER));
    ann_str(w, WARG(SAMPLER_BACKEND), st->requested_hz ? df_diag_backend_name(st->backend) : DF_DIAG_NO_BACKEND_NAME);
    ann_str(w, WARG(SAMPLER_REASON), st->backend_reason);
    ann_uint(w, WARG(REQUESTED_HZ), st->requested_hz);
    ann_uint(w, WARG(EFFECTIVE_MILLIHERTZ), (uint64_t)(st->effective_hz * 1000.0));
    ann_uint(w, WARG(SAMPLES), st->samples);
    ann_uint(w, WARG(SAMPLE_WEIGHT), st->sample_weight);
    ann_uint(w, WARG(SAMPLES_LOST), st->samples_lost);
    ann_uint(w, WARG(SAMPLES_DWARF_UNWOUND), st->samples_dwarf_unwound);
    ann_uint(w, WARG(THREADS_SAMPLED), st->threads_sampled);
    ann_uint(w, WARG(THREADS_NOT_SAMPLED), st->threads_not_sampled);
    if (st->scheduler_reason[0]) ann_str(w, WARG(SCHEDULER_CONTEXT), st->scheduler_reason);
    event_end(w, at);
}

df_errkind df__diag_writer_finish(df__diag_writer *w, const df_diag_capture_stats *st, df_error *err) {
    if (w->fd < 0) return copy_err(w, err);
    w->finishing = true;
    if (w->io_kind == DF_OK && w->sample_hz) write_sampler_info(w, st);
    if (w->io_kind == DF_OK) write_trace_stats(w, st);
    if (w->io_kind == DF_OK) write_clock_snapshot(w);
    if (w->io_kind == DF_OK) write_service_event(w, 3); /* all_data_sources_flushed */
    if (w->io_kind == DF_OK) write_service_event(w, 5); /* tracing_disabled */
    if (w->io_kind == DF_OK) flush_out(w);
    if (w->io_kind == DF_OK && fsync(w->fd) != 0 && errno != EINVAL) io_fail(w, "fsync failed", errno);
    if (close(w->fd) != 0 && w->io_kind == DF_OK) io_fail(w, "close failed", errno);
    w->fd = -1;
    return copy_err(w, err);
}

uint64_t df__diag_writer_bytes(const df__diag_writer *w) { return w ? w->bytes : 0; }

void df__diag_writer_abandon(df__diag_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    unlink(w->path);
    df__diag_writer_destroy(w);
}

void df__diag_writer_destroy(df__diag_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    df__diag_symbolizer_release(w->sym);
    df_buf_free(&w->out.buf);
    df_buf_free(&w->pkt.buf);
    df_buf_free(&w->interned.buf);
    df_error_clear(&w->io_err);
    df_u64map_free(&w->tracks);
    df_free(w->memo);
    df_u64map_free(&w->frames);
    df_u64map_free(&w->mappings);
    df_strmap_free(&w->event_names);
    df_strmap_free(&w->ann_names);
    df_strmap_free(&w->functions);
    df_strmap_free(&w->paths);
    df_strmap_free(&w->sources);
    df_strmap_free(&w->build_ids);
    df_strmap_free(&w->callstacks);
    df_free(w->stack_buf);
    df_free(w->path);
    df_free(w);
}
