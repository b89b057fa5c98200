/*
 * Perfetto trace decoder (see pftrace.h for what is read).
 *
 * Algorithm: one pass over the top-level `packet` fields.  For each packet
 * a first scan collects the envelope (sequence id, flags, clock, timestamp,
 * defaults, interned data) and remembers the payload field; interned data
 * is then applied to the sequence's current generation in dependency order
 * (strings, then mappings, then frames, then callstacks, so producers may
 * order the fields freely), and finally the payload is decoded.  Interned
 * values are resolved immediately into trace-global ids: frames are
 * deduplicated by (function, module, source) and callstacks by their frame
 * sequence, so samples carry one 32-bit stack id and no per-sample memory
 * beyond their fixed record.  Timestamps are converted to the primary
 * clock once every snapshot has been seen.
 *
 * Bounds: the trace, each packet (64 MiB), each callstack (16,384 frames),
 * the number of events, samples, snapshots and interned entries are capped;
 * every read is checked against the end of its enclosing message; nested
 * messages are only entered for known message types, so the depth is fixed
 * by this code, not by the input.
 */
#include "report/pftrace.h"

#include "report/utf8.h"

#define MAX_PACKET_BYTES (64u << 20)
#define MAX_EVENTS (8u * 1024u * 1024u)
#define MAX_SAMPLES (32u * 1024u * 1024u)
#define MAX_TRACKS (1u << 20)
#define MAX_STACK_FRAMES 16384u
#define MAX_SNAPSHOTS 4096u
#define MAX_INTERNED (32u * 1024u * 1024u)
#define INVALID_VALUE UINT32_MAX

/* TracePacket fields. */
enum {
    F_CLOCK_SNAPSHOT = 6, F_TIMESTAMP = 8, F_SEQ_ID = 10, F_TRACK_EVENT = 11, F_INTERNED = 12,
    F_SEQ_FLAGS = 13, F_TRACE_CONFIG = 33, F_TRACE_STATS = 35, F_INCREMENTAL_CLEARED = 41,
    F_COMPRESSED = 50, F_CLOCK_ID = 58, F_DEFAULTS = 59, F_TRACK_DESCRIPTOR = 60, F_PERF_SAMPLE = 66,
    F_SERVICE_EVENT = 69,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };

/* Interning tables (per sequence generation). */
enum {
    T_EVENT_NAME = 1, T_ANN_NAME, T_CATEGORY, T_FUNC_NAME, T_MAP_PATH, T_SRC_PATH, T_MAPPING, T_FRAME,
    T_CALLSTACK,
};

/* ------------------------------------------------------------------------ */
/* Protobuf wire reader.                                                     */

typedef struct pbr {
    const uint8_t *p;   /* next byte */
    const uint8_t *end; /* end of the enclosing message */
} pbr;

typedef struct pbf {
    uint32_t field;      /* field number */
    uint32_t wire;       /* wire type */
    uint64_t v;          /* varint / fixed value */
    const uint8_t *data; /* length-delimited payload */
    size_t len;          /* its length */
} pbf;

static bool rd_varint(pbr *r, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) return false;
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) return false; /* more than 64 bits */
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/*
 * True if [p, end) is the start of a packet field (Trace.packet, field 1,
 * length-delimited) cut short: its key is complete and either its length
 * varint runs to the end or the length exceeds the bytes left.
 */
static bool truncated_tail(const uint8_t *p, const uint8_t *end) {
    if (p >= end || *p != ((1u << 3) | 2u)) return false;
    pbr r = {p + 1, end};
    uint64_t n;
    const uint8_t *q = r.p;
    if (!rd_varint(&r, &n)) {
        /* The length itself is cut: only continuation bytes until the end. */
        for (; q < end; q++)
            if (!(*q & 0x80)) return false;
        return true;
    }
    return n > (uint64_t)(end - r.p);
}

/* Reads the next field: 1 = read, 0 = end of message, -1 = malformed. */
static int pb_next(pbr *r, pbf *f) {
    if (r->p >= r->end) return 0;
    uint64_t key;
    if (!rd_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF) return -1;
    f->field = (uint32_t)(key >> 3);
    f->wire = (uint32_t)(key & 7);
    f->data = NULL;
    f->len = 0;
    f->v = 0;
    switch (f->wire) {
    case 0:
        return rd_varint(r, &f->v) ? 1 : -1;
    case 1:
        if (r->end - r->p < 8) return -1;
        f->v = df_load_le64(r->p);
        r->p += 8;
        return 1;
    case 2: {
        uint64_t n;
        if (!rd_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return -1;
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        return 1;
    }
    case 5:
        if (r->end - r->p < 4) return -1;
        f->v = df_load_le32(r->p);
        r->p += 4;
        return 1;
    default:
        return -1; /* groups and reserved wire types */
    }
}

static pbr sub(const pbf *f) { return (pbr){f->data, f->data + f->len}; }

/* ------------------------------------------------------------------------ */
/* Decoder state.                                                            */

/* One interned value, keyed by (sequence, generation, table, iid). */
typedef struct ientry {
    uint64_t iid;    /* interning id (never 0 in a used slot) */
    uint32_t seq;    /* trusted_packet_sequence_id */
    uint32_t gen;    /* generation of that sequence */
    uint32_t table;  /* T_* */
    uint32_t value;  /* resolved value; INVALID_VALUE when it did not resolve */
} ientry;

/* Per-sequence incremental state. */
typedef struct seqstate {
    uint32_t seq;          /* sequence id (0 = empty slot) */
    uint32_t gen;          /* generation, bumped by each clear */
    bool cleared;          /* incremental state was cleared at least once */
    bool has_clock;        /* defaults set a timestamp clock */
    bool has_track;        /* defaults set a track uuid */
    uint8_t clock;         /* default timestamp clock */
    uint64_t track;        /* default track uuid */
} seqstate;

/* A clock snapshot: value of each builtin clock (0 = absent). */
typedef struct snapshot {
    uint64_t ts[64];       /* per clock id < 64 */
    uint64_t present;      /* bit c: ts[c] is set */
} snapshot;

/* (a, b, c) -> value map for frame deduplication. */
typedef struct fkey_entry {
    uint32_t name, module, source; /* key */
    uint32_t frame;                /* frame id + 1; 0 = empty */
} fkey_entry;

typedef struct work {
    const uint8_t *base;      /* start of the trace (error offsets) */
    ientry *ient;             /* intern map (open addressing) */
    size_t ient_cap, ient_n;  /* slots (power of two), used */
    seqstate *seqs;           /* sequence states (open addressing) */
    size_t seq_cap, seq_n;    /* slots, used */
    snapshot *snaps;          /* clock snapshots in file order */
    size_t nsnaps, cap_snaps; /* count, allocated */
    uint8_t primary_clock;    /* primary trace clock (BOOTTIME unless a snapshot says otherwise) */
    fkey_entry *fmap;         /* frame dedup map */
    size_t fmap_cap;          /* slots */
    uint32_t *smap;           /* stack dedup map: stack id + 1, 0 = empty */
    size_t smap_cap;          /* slots */
    df_u64map tmap;           /* track uuid -> track index + 1 */
    uint32_t *stack_tmp;      /* frame ids of the callstack being interned */
    uint32_t cat_profile, cat_context; /* string ids of the two category names (0 until seen) */
} work;

static df_errkind malformed(work *w, df_error *err, const uint8_t *at, const char *what) {
    df__report_fail(err, DF_ERR_MALFORMED_TRACE, "input", "malformed trace: %s", what);
    if (err && at) df_error_set_offset(err, (int64_t)(at - w->base));
    return DF_ERR_MALFORMED_TRACE;
}

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "input", "out of memory while decoding the trace");
}

static df_errkind too_many(df_error *err, const char *what) {
    return df__report_fail(err, DF_ERR_TRACE_TOO_LARGE, "input", "trace has too many %s", what);
}

/* ------------------------------------------------------------------------ */
/* Maps.                                                                     */

static uint64_t ikey_hash(uint32_t seq, uint32_t gen, uint32_t table, uint64_t iid) {
    return df_hash_combine(df_hash_combine(((uint64_t)seq << 32) | gen, table), iid);
}

static ientry *ient_slot(ientry *tab, size_t cap, uint32_t seq, uint32_t gen, uint32_t table, uint64_t iid) {
    size_t i = (size_t)ikey_hash(seq, gen, table, iid) & (cap - 1);
    for (;; i = (i + 1) & (cap - 1)) {
        ientry *e = &tab[i];
        if (e->iid == 0 || (e->iid == iid && e->seq == seq && e->gen == gen && e->table == table)) return e;
    }
}

static bool ient_put(work *w, uint32_t seq, uint32_t gen, uint32_t table, uint64_t iid, uint32_t value) {
    if ((w->ient_n + 1) * 2 > w->ient_cap) {
        if (w->ient_n >= MAX_INTERNED) return false;
        size_t cap = w->ient_cap ? w->ient_cap * 2 : 4096;
        ientry *tab = df_calloc(cap, sizeof *tab);
        if (!tab) return false;
        for (size_t i = 0; i < w->ient_cap; i++) {
            const ientry *e = &w->ient[i];
            if (e->iid) *ient_slot(tab, cap, e->seq, e->gen, e->table, e->iid) = *e;
        }
        df_free(w->ient);
        w->ient = tab;
        w->ient_cap = cap;
    }
    ientry *e = ient_slot(w->ient, w->ient_cap, seq, gen, table, iid);
    if (e->iid == 0) w->ient_n++;
    *e = (ientry){iid, seq, gen, table, value};
    return true;
}

/* The interned value, or INVALID_VALUE when unknown. */
static uint32_t ient_get(const work *w, const seqstate *s, uint32_t table, uint64_t iid) {
    if (!w->ient_cap || iid == 0 || !s) return INVALID_VALUE;
    const ientry *e = ient_slot(w->ient, w->ient_cap, s->seq, s->gen, table, iid);
    return e->iid ? e->value : INVALID_VALUE;
}

/* The state of sequence `seq` (created on first use), or NULL when out of memory. */
static seqstate *seq_get(work *w, uint32_t seq) {
    if ((w->seq_n + 1) * 2 > w->seq_cap) {
        size_t cap = w->seq_cap ? w->seq_cap * 2 : 64;
        seqstate *tab = df_calloc(cap, sizeof *tab);
        if (!tab) return NULL;
        for (size_t i = 0; i < w->seq_cap; i++) {
            if (!w->seqs[i].seq) continue;
            size_t j = (size_t)df_hash_u64(w->seqs[i].seq) & (cap - 1);
            while (tab[j].seq) j = (j + 1) & (cap - 1);
            tab[j] = w->seqs[i];
        }
        df_free(w->seqs);
        w->seqs = tab;
        w->seq_cap = cap;
    }
    size_t j = (size_t)df_hash_u64(seq) & (w->seq_cap - 1);
    while (w->seqs[j].seq && w->seqs[j].seq != seq) j = (j + 1) & (w->seq_cap - 1);
    if (!w->seqs[j].seq) {
        w->seqs[j] = (seqstate){.seq = seq};
        w->seq_n++;
    }
    return &w->seqs[j];
}

/* Rehashes an open-addressing uint32 map whose keys are derived by `key_of`. */
typedef uint64_t (*key_fn)(const df__pt_trace *t, uint32_t value);

static bool u32map_grow(const df__pt_trace *t, uint32_t **slots, size_t *cap, size_t used, key_fn key_of) {
    if ((used + 1) * 2 <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 1024;
    uint32_t *tab = df_calloc(nc, sizeof *tab);
    if (!tab) return false;
    for (size_t i = 0; i < *cap; i++) {
        uint32_t v = (*slots)[i];
        if (!v) continue;
        size_t j = (size_t)key_of(t, v) & (nc - 1);
        while (tab[j]) j = (j + 1) & (nc - 1);
        tab[j] = v;
    }
    df_free(*slots);
    *slots = tab;
    *cap = nc;
    return true;
}

static uint64_t stack_hash(const uint32_t *frames, size_t n) { return df_hash_bytes(frames, n * sizeof *frames, 7); }

static uint64_t stack_key(const df__pt_trace *t, uint32_t v) {
    size_t n;
    const uint32_t *f = df__pt_stack(t, v, &n);
    return stack_hash(f, n);
}

/* Index+1 of the track with `uuid`, or 0. */
static uint32_t track_find(const work *w, uint64_t uuid) {
    uint64_t v = 0;
    df_u64map_get(&w->tmap, uuid, &v);
    return (uint32_t)v;
}

/* ------------------------------------------------------------------------ */
/* Frames and stacks.                                                        */

static uint64_t fkey_hash(uint32_t a, uint32_t b, uint32_t c) {
    return df_hash_combine(df_hash_combine(a, b), c);
}

/* Global frame id + 1 of (name, module, source); merges the smallest line. 0 when out of memory. */
static uint32_t frame_global(df__pt_trace *t, work *w, uint32_t name, uint32_t module, uint32_t source,
                             int64_t line) {
    if ((t->nframes + 1) * 2 > w->fmap_cap) {
        size_t cap = w->fmap_cap ? w->fmap_cap * 2 : 1024;
        fkey_entry *tab = df_calloc(cap, sizeof *tab);
        if (!tab) return 0;
        for (size_t i = 0; i < w->fmap_cap; i++) {
            const fkey_entry *e = &w->fmap[i];
            if (!e->frame) continue;
            size_t j = (size_t)fkey_hash(e->name, e->module, e->source) & (cap - 1);
            while (tab[j].frame) j = (j + 1) & (cap - 1);
            tab[j] = *e;
        }
        df_free(w->fmap);
        w->fmap = tab;
        w->fmap_cap = cap;
    }
    size_t j = (size_t)fkey_hash(name, module, source) & (w->fmap_cap - 1);
    for (;; j = (j + 1) & (w->fmap_cap - 1)) {
        fkey_entry *e = &w->fmap[j];
        if (!e->frame) break;
        if (e->name == name && e->module == module && e->source == source) {
            df__pt_frame *f = &t->frames[e->frame - 1];
            if (line >= 0 && (f->line < 0 || line < f->line)) f->line = line;
            return e->frame;
        }
    }
    if (DF_ARRAY_RESERVE(t->frames, t->cap_frames, t->nframes + 1, 256, NULL)) return 0;
    t->frames[t->nframes] = (df__pt_frame){name, module, source, 0, line};
    uint32_t id = (uint32_t)++t->nframes;
    w->fmap[j] = (fkey_entry){name, module, source, id};
    return id;
}

/* Global stack id (1-based) of frames[0..n) (frame ids, root first).  0 when out of memory. */
static uint32_t stack_global(df__pt_trace *t, work *w, const uint32_t *frames, size_t n) {
    if (!u32map_grow(t, &w->smap, &w->smap_cap, t->nstacks, stack_key)) return 0;
    uint64_t h = stack_hash(frames, n);
    size_t j = (size_t)h & (w->smap_cap - 1);
    for (;; j = (j + 1) & (w->smap_cap - 1)) {
        uint32_t v = w->smap[j];
        if (!v) break;
        size_t m;
        const uint32_t *f = df__pt_stack(t, v, &m);
        if (m == n && memcmp(f, frames, n * sizeof *frames) == 0) return v;
    }
    if (t->nstacks + 1 >= UINT32_MAX - 1) return 0;
    /* stack_off holds nstacks + 1 offsets; keep room for one more. */
    if (DF_ARRAY_RESERVE(t->stack_off, t->cap_stacks, t->nstacks + 2, 256, NULL)) return 0;
    if (t->nstacks == 0) t->stack_off[0] = 0;
    if (DF_ARRAY_RESERVE(t->stack_frames, t->cap_stack_frames, t->nstack_frames + n, 256, NULL)) return 0;
    memcpy(t->stack_frames + t->nstack_frames, frames, n * sizeof *frames);
    t->nstack_frames += n;
    t->stack_off[++t->nstacks] = t->nstack_frames;
    w->smap[j] = (uint32_t)t->nstacks;
    return (uint32_t)t->nstacks;
}

/* ------------------------------------------------------------------------ */
/* Interned data.                                                            */

/* Debug annotation names the model reads: numeric first, then strings (pftrace.h order). */
static const char *const ARG_NAMES[DF__PT_N_COUNT + DF__PT_S_COUNT] = {
#define ARG_NAME_(id, name) name,
    DF_DIAG_NUM_ARGS(ARG_NAME_) DF_DIAG_STR_ARGS(ARG_NAME_)
#undef ARG_NAME_
};
#define ARG_NONE 0xFFu

static uint32_t arg_code(const uint8_t *s, size_t n) {
    for (uint32_t i = 0; i < DF_ARRAY_LEN(ARG_NAMES); i++)
        if (strlen(ARG_NAMES[i]) == n && memcmp(ARG_NAMES[i], s, n) == 0) return i;
    return ARG_NONE;
}

static bool bytes_are(const uint8_t *s, size_t n, const char *name) {
    return strlen(name) == n && memcmp(s, name, n) == 0;
}

static uint32_t category_code(const uint8_t *s, size_t n) {
    if (bytes_are(s, n, df_diag_category_name(DF_DIAG_CAT_PROFILE))) return DF__PT_CAT_PROFILE;
    if (bytes_are(s, n, df_diag_category_name(DF_DIAG_CAT_CONTEXT))) return DF__PT_CAT_CONTEXT;
    return DF__PT_CAT_OTHER;
}

/* Reads {iid=1, <string field>=2} of an interned string-like entry. */
static int read_iid_str(const pbf *f, uint64_t *iid, const uint8_t **s, size_t *n) {
    pbr r = sub(f);
    pbf g;
    int rc;
    *iid = 0, *s = (const uint8_t *)"", *n = 0;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 1 && g.wire == 0) *iid = g.v;
        else if (g.field == 2 && g.wire == 2) *s = g.data, *n = g.len;
    }
    return rc;
}

/* Interns one string-valued entry of table `table`. */
static df_errkind intern_string_entry(df__pt_trace *t, work *w, seqstate *s, const pbf *f, uint32_t table,
                                      df_error *err) {
    uint64_t iid;
    const uint8_t *str;
    size_t n;
    if (read_iid_str(f, &iid, &str, &n) < 0) return malformed(w, err, f->data, "interned string");
    if (iid == 0) return DF_OK;
    uint32_t value;
    if (table == T_ANN_NAME) {
        value = arg_code(str, n);
    } else if (table == T_CATEGORY) {
        value = category_code(str, n);
    } else if (table == T_SRC_PATH) {
        df_buf norm;
        df_buf_init(&norm, 0);
        bool keep = df__report_source_path((const char *)str, n, &norm);
        if (norm.data == NULL && keep) {
            df_buf_free(&norm);
            return oom(err);
        }
        value = keep ? df__report_intern(&t->strings, norm.data, norm.len) : 0;
        bool failed = keep && value == 0;
        df_buf_free(&norm);
        if (failed) return oom(err);
    } else {
        value = df__report_intern(&t->strings, (const char *)str, n);
        if (!value) return oom(err);
    }
    return ient_put(w, s->seq, s->gen, table, iid, value) ? DF_OK : oom(err);
}

/* Interns a Mapping: value = module basename string id (0 when it has no path). */
static df_errkind intern_mapping(df__pt_trace *t, work *w, seqstate *s, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    uint64_t iid = 0;
    df_buf path;
    df_buf_init(&path, 1u << 16);
    bool bad = false;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 1 && g.wire == 0) {
            iid = g.v;
        } else if (g.field == 7 && g.wire == 0) {
            uint32_t sid = ient_get(w, s, T_MAP_PATH, g.v);
            if (sid == INVALID_VALUE) {
                bad = true;
                continue;
            }
            const char *part = df__report_str(&t->strings, sid);
            if ((path.len && df_buf_append_char(&path, '/', NULL) != DF_OK) ||
                (part && df_buf_append_str(&path, part, NULL) != DF_OK))
                bad = true;
        }
    }
    if (rc < 0) {
        df_buf_free(&path);
        return malformed(w, err, f->data, "interned mapping");
    }
    uint32_t value = bad ? INVALID_VALUE : 0;
    if (!bad && path.len) {
        size_t off, n;
        df__report_module_name(path.data, path.len, &off, &n);
        if (n) {
            value = df__report_intern(&t->strings, path.data + off, n);
            if (!value) {
                df_buf_free(&path);
                return oom(err);
            }
        }
    }
    df_buf_free(&path);
    if (iid == 0) return DF_OK;
    return ient_put(w, s->seq, s->gen, T_MAPPING, iid, value) ? DF_OK : oom(err);
}

/* Interns a Frame: value = global frame id + 1, INVALID_VALUE when a reference does not resolve. */
static df_errkind intern_frame(df__pt_trace *t, work *w, seqstate *s, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    uint64_t iid = 0;
    uint32_t name = 0, module = 0, source = 0;
    int64_t line = -1;
    bool bad = false;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.wire != 0) continue;
        uint32_t v;
        switch (g.field) {
        case 1: iid = g.v; break;
        case 2:
            if (g.v == 0) break; /* 0 = no name */
            v = ient_get(w, s, T_FUNC_NAME, g.v);
            if (v == INVALID_VALUE) bad = true;
            else name = v;
            break;
        case 3:
            if (g.v == 0) break;
            v = ient_get(w, s, T_MAPPING, g.v);
            if (v == INVALID_VALUE) bad = true;
            else module = v;
            break;
        case 5:
            if (g.v == 0) break;
            v = ient_get(w, s, T_SRC_PATH, g.v);
            if (v == INVALID_VALUE) bad = true;
            else source = v;
            break;
        case 6: line = g.v <= (uint64_t)INT32_MAX ? (int64_t)g.v : -1; break;
        default: break;
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "interned frame");
    if (iid == 0) return DF_OK;
    if (!source) line = -1;
    uint32_t value = INVALID_VALUE;
    if (!bad) {
        value = frame_global(t, w, name, module, source, line);
        if (!value) return oom(err);
    }
    return ient_put(w, s->seq, s->gen, T_FRAME, iid, value) ? DF_OK : oom(err);
}

/* Appends one frame iid of a callstack; false marks the stack unusable. */
static bool stack_push(const work *w, const seqstate *s, uint64_t iid, size_t *n, bool *bad) {
    if (*n >= MAX_STACK_FRAMES) return false;
    uint32_t v = ient_get(w, s, T_FRAME, iid);
    if (v == INVALID_VALUE) *bad = true;
    else w->stack_tmp[(*n)++] = v;
    return true;
}

/* Interns a Callstack: value = global stack id (1-based), INVALID_VALUE when a frame does not resolve. */
static df_errkind intern_callstack(df__pt_trace *t, work *w, seqstate *s, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    uint64_t iid = 0;
    size_t n = 0;
    bool bad = false;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 1 && g.wire == 0) {
            iid = g.v;
        } else if (g.field == 2 && g.wire == 0) {
            if (!stack_push(w, s, g.v, &n, &bad)) return too_many(err, "frames in one callstack");
        } else if (g.field == 2 && g.wire == 2) { /* tolerate the packed form */
            pbr pr = sub(&g);
            while (pr.p < pr.end) {
                uint64_t v;
                if (!rd_varint(&pr, &v)) return malformed(w, err, pr.p, "packed frame ids");
                if (!stack_push(w, s, v, &n, &bad)) return too_many(err, "frames in one callstack");
            }
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "interned callstack");
    if (iid == 0) return DF_OK;
    uint32_t value = INVALID_VALUE;
    if (!bad && n > 0) {
        for (size_t i = 0; i < n; i++) w->stack_tmp[i]--; /* frame ids are stored 0-based in stacks */
        value = stack_global(t, w, w->stack_tmp, n);
        if (!value) return oom(err);
    }
    return ient_put(w, s->seq, s->gen, T_CALLSTACK, iid, value) ? DF_OK : oom(err);
}

/* Applies an InternedData message in dependency order (strings, mappings, frames, callstacks). */
static df_errkind apply_interned(df__pt_trace *t, work *w, seqstate *s, const pbf *idata, df_error *err) {
    for (int pass = 0; pass < 4; pass++) {
        pbr r = sub(idata);
        pbf f;
        int rc;
        while ((rc = pb_next(&r, &f)) > 0) {
            if (f.wire != 2) continue;
            df_errkind k = DF_OK;
            if (pass == 0) {
                uint32_t table = f.field == 1 ? T_CATEGORY : f.field == 2 ? T_EVENT_NAME : f.field == 3 ? T_ANN_NAME
                               : f.field == 5 ? T_FUNC_NAME : f.field == 17 ? T_MAP_PATH : f.field == 18 ? T_SRC_PATH : 0;
                if (table) k = intern_string_entry(t, w, s, &f, table, err);
            } else if (pass == 1 && f.field == 19) {
                k = intern_mapping(t, w, s, &f, err);
            } else if (pass == 2 && f.field == 6) {
                k = intern_frame(t, w, s, &f, err);
            } else if (pass == 3 && f.field == 7) {
                k = intern_callstack(t, w, s, &f, err);
            }
            if (k != DF_OK) return k;
        }
        if (rc < 0) return malformed(w, err, r.p, "interned data");
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Payloads.                                                                 */

/* Stores one debug annotation into args. */
static df_errkind read_annotation(df__pt_trace *t, work *w, const seqstate *s, const pbf *f, df__pt_args *a,
                                  df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    uint32_t code = ARG_NONE;
    int kind = 0; /* 1 int, 2 uint, 3 string, 4 other */
    uint64_t v = 0;
    const uint8_t *str = NULL;
    size_t n = 0;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 1 && g.wire == 0) {
            uint32_t c = ient_get(w, s, T_ANN_NAME, g.v);
            code = c == INVALID_VALUE ? ARG_NONE : c;
        } else if (g.field == 10 && g.wire == 2) {
            code = arg_code(g.data, g.len);
        } else if (g.field == 4 && g.wire == 0) {
            kind = 1, v = g.v;
        } else if (g.field == 3 && g.wire == 0) {
            kind = 2, v = g.v;
        } else if (g.field == 6 && g.wire == 2) {
            kind = 3, str = g.data, n = g.len;
        } else if (g.field == 2 || g.field == 5 || g.field == 7 || g.field == 8 || g.field == 9 || g.field == 11 ||
                   g.field == 12 || g.field == 14 || g.field == 17) {
            kind = 4;
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "debug annotation");
    if (code == ARG_NONE || kind == 0) return DF_OK;
    if (code < DF__PT_N_COUNT) {
        uint32_t bit = 1u << code;
        if (kind == 1 || (kind == 2 && v <= (uint64_t)INT64_MAX)) {
            a->num[code] = (int64_t)v;
            a->num_present |= bit;
            a->num_invalid &= ~bit;
        } else {
            a->num_invalid |= bit;
            a->num_present &= ~bit;
        }
        return DF_OK;
    }
    uint32_t si = code - DF__PT_N_COUNT, bit = 1u << si;
    if (kind != 3) {
        a->str_invalid |= bit;
        a->str_present &= ~bit;
        return DF_OK;
    }
    uint32_t id = n ? df__report_intern(&t->strings, (const char *)str, n) : 0;
    if (n && !id) return oom(err);
    a->str[si] = id;
    a->str_present |= bit;
    a->str_invalid &= ~bit;
    return DF_OK;
}

/* Packet envelope collected by the first scan. */
typedef struct envelope {
    uint32_t seq;           /* trusted_packet_sequence_id */
    uint32_t flags;         /* sequence_flags */
    bool cleared;           /* SEQ_INCREMENTAL_STATE_CLEARED or incremental_state_cleared */
    bool has_ts;            /* timestamp present */
    bool has_clock;         /* timestamp_clock_id present */
    uint8_t clock;          /* timestamp_clock_id */
    uint64_t ts;            /* timestamp */
    pbf defaults;           /* trace_packet_defaults (len 0 = none) */
    pbf interned;           /* interned_data (len 0 = none) */
    bool has_interned;      /* interned_data present */
    bool has_defaults;      /* trace_packet_defaults present */
} envelope;

/* The clock of a packet: its own, else the sequence default, else 0 (trace default). */
static uint8_t packet_clock(const envelope *e, const seqstate *s) {
    if (e->has_clock) return e->clock;
    if (s && s->has_clock) return s->clock;
    return 0;
}

static df_errkind read_track_event(df__pt_trace *t, work *w, const envelope *e, seqstate *s, const pbf *f,
                                   df_error *err) {
    if (!e->has_ts || !s) return DF_OK; /* Perfetto drops events without timestamp / sequence */
    if (t->nevents >= MAX_EVENTS) return too_many(err, "track events");
    if (DF_ARRAY_RESERVE(t->events, t->cap_events, t->nevents + 1, 256, NULL)) return oom(err);
    df__pt_event ev = {.ts = (int64_t)e->ts, .clock = packet_clock(e, s), .track = s->has_track ? s->track : 0};
    pbr r = sub(f);
    pbf g;
    int rc;
    bool has_type = false;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 9 && g.wire == 0) {
            has_type = true;
            ev.type = g.v <= 3 ? (uint8_t)g.v : 0;
        } else if (g.field == 11 && g.wire == 0) {
            ev.track = g.v;
        } else if (g.field == 10 && g.wire == 0) {
            uint32_t v = ient_get(w, s, T_EVENT_NAME, g.v);
            ev.name = v == INVALID_VALUE ? 0 : v;
        } else if (g.field == 23 && g.wire == 2) {
            ev.name = g.len ? df__report_intern(&t->strings, (const char *)g.data, g.len) : 0;
            if (g.len && !ev.name) return oom(err);
        } else if (g.field == 3 && g.wire == 0) {
            uint32_t c = ient_get(w, s, T_CATEGORY, g.v);
            if (c != INVALID_VALUE && c > ev.category) ev.category = (uint8_t)c;
        } else if (g.field == 22 && g.wire == 2) {
            uint32_t c = category_code(g.data, g.len);
            if (c > ev.category) ev.category = (uint8_t)c;
        } else if (g.field == 4 && g.wire == 2) {
            DF_TRY(read_annotation(t, w, s, &g, &ev.args, err));
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "track event");
    if (!has_type || ev.type == 0) return DF_OK; /* legacy or counter events: not slices */
    ev.order = (uint32_t)t->nevents;
    t->events[t->nevents++] = ev;
    return DF_OK;
}

static df_errkind read_perf_sample(df__pt_trace *t, work *w, const envelope *e, seqstate *s, const pbf *f,
                                   df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    df__pt_sample sm = {.ts = (int64_t)e->ts, .cpu = UINT32_MAX, .clock = packet_clock(e, s)};
    bool skipped = false, has_pid = false;
    uint64_t lost = 0, callstack = 0;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.wire != 0) continue;
        switch (g.field) {
        case 1: sm.cpu = g.v < UINT32_MAX ? (uint32_t)g.v : UINT32_MAX; break;
        case 2: sm.pid = (uint32_t)g.v, has_pid = true; break;
        case 3: sm.tid = (uint32_t)g.v; break;
        case 4: callstack = g.v; break;
        case 16: sm.unwind_error = g.v != 0; break;
        case 17: lost = g.v; break;
        case 18: skipped = g.v != 0; break;
        default: break;
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "perf sample");
    if (lost) {
        t->kernel_records_lost += lost > (uint64_t)INT32_MAX ? INT32_MAX : (int64_t)lost;
        return DF_OK;
    }
    if (skipped) {
        t->samples_skipped++;
        return DF_OK;
    }
    if (!e->has_ts || !has_pid) return DF_OK;
    if (callstack) {
        uint32_t v = s ? ient_get(w, s, T_CALLSTACK, callstack) : INVALID_VALUE;
        sm.stack = v == INVALID_VALUE ? 0 : v;
    }
    if (t->nsamples >= MAX_SAMPLES) return too_many(err, "perf samples");
    if (DF_ARRAY_RESERVE(t->samples, t->cap_samples, t->nsamples + 1, 256, NULL)) return oom(err);
    t->samples[t->nsamples++] = sm;
    return DF_OK;
}

static df_errkind read_track_descriptor(df__pt_trace *t, work *w, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    df__pt_track tr = {0};
    bool has_uuid = false;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 1 && g.wire == 0) {
            tr.uuid = g.v, has_uuid = true;
        } else if ((g.field == 2 || g.field == 10) && g.wire == 2 && g.len) {
            tr.name = df__report_intern(&t->strings, (const char *)g.data, g.len);
            if (!tr.name) return oom(err);
        } else if (g.field == 5 && g.wire == 0) {
            tr.parent = g.v;
        } else if ((g.field == 3 || g.field == 4) && g.wire == 2) {
            pbr pr = sub(&g);
            pbf h;
            int prc;
            tr.kind = g.field == 3 ? DF__PT_TRACK_PROCESS : DF__PT_TRACK_THREAD;
            while ((prc = pb_next(&pr, &h)) > 0) {
                if (h.field == 1 && h.wire == 0) tr.pid = (uint32_t)h.v;
                else if (h.field == 2 && h.wire == 0 && tr.kind == DF__PT_TRACK_THREAD) tr.tid = (uint32_t)h.v;
            }
            if (prc < 0) return malformed(w, err, g.data, "process or thread descriptor");
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "track descriptor");
    if (!has_uuid || tr.uuid == 0) return DF_OK;
    if (tr.kind != DF__PT_TRACK_CUSTOM) tr.parent = 0; /* Perfetto ignores parents of process/thread tracks */
    if (track_find(w, tr.uuid)) return DF_OK;       /* the first descriptor wins */
    if (t->ntracks >= MAX_TRACKS) return too_many(err, "tracks");
    if (DF_ARRAY_RESERVE(t->tracks, t->cap_tracks, t->ntracks + 1, 256, NULL) ||
        df_u64map_put(&w->tmap, tr.uuid, t->ntracks + 1, NULL))
        return oom(err);
    t->tracks[t->ntracks++] = tr;
    return DF_OK;
}

static df_errkind read_clock_snapshot(work *w, const pbf *f, df_error *err) {
    if (w->nsnaps >= MAX_SNAPSHOTS) return DF_OK;
    snapshot sn;
    memset(&sn, 0, sizeof sn);
    pbr r = sub(f);
    pbf g;
    int rc;
    bool has_primary = false;
    uint8_t primary = 6;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 2 && g.wire == 0) {
            has_primary = true;
            primary = g.v < 64 ? (uint8_t)g.v : 6;
        } else if (g.field == 1 && g.wire == 2) {
            pbr cr = sub(&g);
            pbf h;
            int crc;
            uint64_t id = 0, ts = 0;
            bool incremental = false, has_ts = false;
            while ((crc = pb_next(&cr, &h)) > 0) {
                if (h.wire != 0) continue;
                if (h.field == 1) id = h.v;
                else if (h.field == 2) ts = h.v, has_ts = true;
                else if (h.field == 3) incremental = h.v != 0;
            }
            if (crc < 0) return malformed(w, err, g.data, "clock");
            if (id > 0 && id < 64 && has_ts && !incremental) {
                sn.ts[id] = ts;
                sn.present |= 1ull << id;
            }
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "clock snapshot");
    if (w->nsnaps == 0) w->primary_clock = has_primary ? primary : 6;
    if (DF_ARRAY_RESERVE(w->snaps, w->cap_snaps, w->nsnaps + 1, 256, NULL)) return oom(err);
    w->snaps[w->nsnaps++] = sn;
    return DF_OK;
}

/* Finds linux.perf's timebase frequency in a TraceConfig. */
static df_errkind read_trace_config(df__pt_trace *t, work *w, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf ds;
    int rc;
    while ((rc = pb_next(&r, &ds)) > 0) {
        if (ds.field != 2 || ds.wire != 2) continue;
        pbr dr = sub(&ds);
        pbf cfg;
        int drc;
        while ((drc = pb_next(&dr, &cfg)) > 0) {
            if (cfg.field != 1 || cfg.wire != 2) continue;
            pbr cr = sub(&cfg);
            pbf h;
            int crc;
            bool perf = false;
            uint64_t freq = 0;
            while ((crc = pb_next(&cr, &h)) > 0) {
                if (h.field == 1 && h.wire == 2) perf = h.len == 10 && memcmp(h.data, "linux.perf", 10) == 0;
                if (h.field != 111 || h.wire != 2) continue;
                pbr pr = sub(&h);
                pbf p;
                int prc;
                while ((prc = pb_next(&pr, &p)) > 0) {
                    if (p.field == 2 && p.wire == 0 && !freq) freq = p.v; /* sampling_frequency (legacy) */
                    if (p.field != 15 || p.wire != 2) continue;
                    pbr tr = sub(&p);
                    pbf q;
                    int trc;
                    while ((trc = pb_next(&tr, &q)) > 0)
                        if (q.field == 2 && q.wire == 0) freq = q.v;
                    if (trc < 0) return malformed(w, err, p.data, "perf timebase");
                }
                if (prc < 0) return malformed(w, err, h.data, "perf event config");
            }
            if (crc < 0) return malformed(w, err, cfg.data, "data source config");
            if (perf && freq && !t->sample_frequency_hz) t->sample_frequency_hz = freq > 1000000 ? 1000000 : (uint32_t)freq;
        }
        if (drc < 0) return malformed(w, err, ds.data, "data source");
    }
    return rc < 0 ? malformed(w, err, f->data, "trace config") : DF_OK;
}

static int64_t sat_add(int64_t a, uint64_t b) {
    return b > (uint64_t)(INT64_MAX - a) ? INT64_MAX : a + (int64_t)b;
}

static df_errkind read_trace_stats(df__pt_trace *t, work *w, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    int64_t buffer_loss = 0, flushes_failed = 0;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 1 && g.wire == 2) {
            pbr br = sub(&g);
            pbf h;
            int brc;
            while ((brc = pb_next(&br, &h)) > 0)
                if (h.wire == 0 && (h.field == 6 || h.field == 9 || h.field == 18 || h.field == 19))
                    buffer_loss = sat_add(buffer_loss, h.v);
            if (brc < 0) return malformed(w, err, g.data, "buffer stats");
        } else if (g.field == 14 && g.wire == 0) {
            flushes_failed = sat_add(flushes_failed, g.v);
        } else if (g.field == 15 && g.wire == 0 && g.v == 2) {
            flushes_failed = DF_MAX(flushes_failed, 1);
        } else if (g.field == 10 && g.wire == 0) {
            t->data_source_loss = DF_MAX(t->data_source_loss, g.v > INT32_MAX ? INT32_MAX : (int64_t)g.v);
        }
    }
    if (rc < 0) return malformed(w, err, f->data, "trace stats");
    /* Stats packets are cumulative: keep the largest values seen. */
    t->buffer_loss = DF_MAX(t->buffer_loss, buffer_loss);
    t->flush_failures = DF_MAX(t->flush_failures, flushes_failed);
    return DF_OK;
}

static df_errkind read_service_event(df__pt_trace *t, work *w, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    while ((rc = pb_next(&r, &g)) > 0)
        if (g.field == 5 && g.wire == 0 && g.v) t->tracing_disabled = true;
    return rc < 0 ? malformed(w, err, f->data, "service event") : DF_OK;
}

/* Applies TracePacketDefaults to the sequence. */
static df_errkind apply_defaults(work *w, seqstate *s, const pbf *f, df_error *err) {
    pbr r = sub(f);
    pbf g;
    int rc;
    while ((rc = pb_next(&r, &g)) > 0) {
        if (g.field == 58 && g.wire == 0) {
            s->has_clock = true;
            s->clock = g.v < 128 ? (uint8_t)g.v : 127;
        } else if (g.field == 11 && g.wire == 2) {
            pbr tr = sub(&g);
            pbf h;
            int trc;
            while ((trc = pb_next(&tr, &h)) > 0)
                if (h.field == 11 && h.wire == 0) s->track = h.v, s->has_track = true;
            if (trc < 0) return malformed(w, err, g.data, "track event defaults");
        }
    }
    return rc < 0 ? malformed(w, err, f->data, "packet defaults") : DF_OK;
}

/* First scan of a packet: the envelope. */
static int scan_envelope(pbr r, envelope *e) {
    pbf f;
    int rc;
    memset(e, 0, sizeof *e);
    while ((rc = pb_next(&r, &f)) > 0) {
        if (f.wire == 0) {
            switch (f.field) {
            case F_TIMESTAMP: e->ts = f.v, e->has_ts = true; break;
            case F_SEQ_ID: e->seq = (uint32_t)f.v; break;
            case F_SEQ_FLAGS: e->flags = (uint32_t)f.v; break;
            case F_INCREMENTAL_CLEARED: e->cleared |= f.v != 0; break;
            case F_CLOCK_ID: e->has_clock = true, e->clock = f.v < 128 ? (uint8_t)f.v : 127; break;
            default: break;
            }
        } else if (f.wire == 2 && f.field == F_INTERNED) {
            e->interned = f, e->has_interned = true;
        } else if (f.wire == 2 && f.field == F_DEFAULTS) {
            e->defaults = f, e->has_defaults = true;
        }
    }
    if (e->flags & SEQ_CLEARED) e->cleared = true;
    return rc;
}

static df_errkind read_packet(df__pt_trace *t, work *w, const uint8_t *p, size_t n, df_error *err) {
    if (n > MAX_PACKET_BYTES) return malformed(w, err, p, "packet larger than 64 MiB");
    envelope e;
    pbr r = {p, p + n};
    if (scan_envelope(r, &e) < 0) return malformed(w, err, p, "packet");
    seqstate *s = NULL;
    bool interning = false;
    if (e.seq) {
        if (!(s = seq_get(w, e.seq))) return oom(err);
        if (e.cleared) {
            s->gen++;
            s->cleared = true;
            s->has_clock = s->has_track = false;
        }
        /*
         * Before its first clear a sequence has no valid incremental state.
         * Perfetto then skips packets that say they need it and drops
         * interned data, but reads every other packet: third-party writers
         * that never intern never clear either.  Such packets are read here
         * too, on generation 0 of the sequence, where no interned entry is
         * ever stored, so an iid they use resolves to nothing (unknown).
         */
        if (!s->cleared && (e.flags & SEQ_NEEDS_STATE)) return DF_OK;
        interning = s->cleared;
    }
    if (s && e.has_defaults) DF_TRY(apply_defaults(w, s, &e.defaults, err));
    if (interning && e.has_interned) DF_TRY(apply_interned(t, w, s, &e.interned, err));
    pbf f;
    int rc;
    while ((rc = pb_next(&r, &f)) > 0) {
        if (f.wire != 2) continue;
        df_errkind k = DF_OK;
        switch (f.field) {
        case F_TRACK_EVENT: k = read_track_event(t, w, &e, s, &f, err); break;
        case F_PERF_SAMPLE: k = read_perf_sample(t, w, &e, s, &f, err); break;
        case F_TRACK_DESCRIPTOR: k = read_track_descriptor(t, w, &f, err); break;
        case F_CLOCK_SNAPSHOT: k = read_clock_snapshot(w, &f, err); break;
        case F_TRACE_CONFIG: k = read_trace_config(t, w, &f, err); break;
        case F_TRACE_STATS: k = read_trace_stats(t, w, &f, err); break;
        case F_SERVICE_EVENT: k = read_service_event(t, w, &f, err); break;
        case F_COMPRESSED:
            k = df__report_fail(err, DF_ERR_MALFORMED_TRACE, "input",
                                "compressed trace packets are not supported; record the trace uncompressed");
            break;
        default: break;
        }
        if (k != DF_OK) return k;
    }
    return rc < 0 ? malformed(w, err, r.p, "packet field") : DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Clock conversion.                                                         */

/* Converts ts of `clock` to the primary clock.  False when no snapshot relates them. */
static bool convert_ts(const work *w, uint8_t clock, int64_t *ts) {
    if (clock == 0 || w->nsnaps == 0 || clock == w->primary_clock) return true;
    if (clock >= 64) return false;
    uint64_t need = (1ull << clock) | (1ull << w->primary_clock);
    const snapshot *best = NULL;
    for (size_t i = 0; i < w->nsnaps; i++) {
        const snapshot *sn = &w->snaps[i];
        if ((sn->present & need) != need) continue;
        if (!best || (sn->ts[clock] <= (uint64_t)*ts && sn->ts[clock] >= best->ts[clock])) best = sn;
    }
    if (!best) return false;
    /* Offsets between real clocks fit easily in int64; saturate on hostile values. */
    __int128 v = (__int128)*ts - (__int128)best->ts[clock] + (__int128)best->ts[w->primary_clock];
    if (v < 0 || v > INT64_MAX) return false;
    *ts = (int64_t)v;
    return true;
}

static void convert_all(df__pt_trace *t, const work *w) {
    size_t k = 0;
    t->min_ts = INT64_MAX, t->max_ts = INT64_MIN;
    for (size_t i = 0; i < t->nevents; i++) {
        df__pt_event ev = t->events[i];
        if (ev.ts < 0 || !convert_ts(w, ev.clock, &ev.ts)) {
            t->data_source_loss++;
            continue;
        }
        t->min_ts = DF_MIN(t->min_ts, ev.ts);
        t->max_ts = DF_MAX(t->max_ts, ev.ts);
        t->events[k++] = ev;
    }
    t->nevents = k;
    k = 0;
    for (size_t i = 0; i < t->nsamples; i++) {
        df__pt_sample sm = t->samples[i];
        if (sm.ts < 0 || !convert_ts(w, sm.clock, &sm.ts)) {
            t->data_source_loss++;
            continue;
        }
        t->min_ts = DF_MIN(t->min_ts, sm.ts);
        t->max_ts = DF_MAX(t->max_ts, sm.ts);
        t->samples[k++] = sm;
    }
    t->nsamples = k;
}

/* ------------------------------------------------------------------------ */
/* Entry points.                                                             */

static void work_free(work *w) {
    if (!w) return;
    df_free(w->ient);
    df_free(w->seqs);
    df_free(w->snaps);
    df_free(w->fmap);
    df_free(w->smap);
    df_u64map_free(&w->tmap);
    df_free(w->stack_tmp);
    df_free(w);
}

void df__pt_trace_free(df__pt_trace *t) {
    if (!t) return;
    df__report_strings_free(&t->strings);
    df_free(t->events);
    df_free(t->samples);
    df_free(t->tracks);
    df_free(t->frames);
    df_free(t->stack_frames);
    df_free(t->stack_off);
    work_free(t->work);
    memset(t, 0, sizeof *t);
}

df_errkind df__pt_decode(const uint8_t *bytes, size_t len, size_t max_bytes, df__pt_trace *t, df_error *err) {
    memset(t, 0, sizeof *t);
    if (!max_bytes) max_bytes = DF_REPORT_DEFAULT_MAX_TRACE_BYTES;
    if (len > max_bytes)
        return df__report_fail(err, DF_ERR_TRACE_TOO_LARGE, "input",
                               "trace of %zu bytes exceeds the %zu-byte limit", len, max_bytes);
    if (len > 0 && !bytes) return df__report_fail(err, DF_ERR_MALFORMED_TRACE, "input", "no trace bytes");
    work *w = df_calloc(1, sizeof *w);
    if (!w) return oom(err);
    t->work = w;
    w->base = bytes;
    w->primary_clock = 6;
    df__report_strings_init(&t->strings);
    w->stack_tmp = df_malloc(MAX_STACK_FRAMES * sizeof *w->stack_tmp);
    if (!w->stack_tmp) {
        df__pt_trace_free(t);
        return oom(err);
    }
    pbr r = {bytes, bytes + len};
    pbf f;
    int rc;
    df_errkind k = DF_OK;
    size_t packets = 0;
    const uint8_t *at = r.p;
    while (k == DF_OK && (rc = pb_next(&r, &f)) > 0) {
        if (f.field == 1 && f.wire == 2) k = read_packet(t, w, f.data, f.len, err), packets++;
        else if (f.field == 1) k = malformed(w, err, r.p, "packet is not length-delimited");
        at = r.p;
    }
    if (k == DF_OK && rc < 0 && packets > 0 && truncated_tail(at, bytes + len)) {
        /* A writer that died mid-packet: keep what is complete, count the cut packet as lost. */
        t->data_source_loss = t->data_source_loss < INT64_MAX ? t->data_source_loss + 1 : INT64_MAX;
        t->truncated_tail_bytes = (size_t)(bytes + len - at);
        rc = 0;
    }
    if (k == DF_OK && rc < 0) k = malformed(w, err, r.p, "truncated or corrupt packet framing");
    if (k != DF_OK) {
        df__pt_trace_free(t);
        return k;
    }
    convert_all(t, w);
    df__report_strings_seal(&t->strings);
    return DF_OK;
}
