/*
 * Synthetic Perfetto traces for the report tests (see synth_trace.h).
 * A minimal protobuf encoder: varints, length-delimited fields written by
 * reserving a 5-byte length prefix (a redundant but valid varint), so no
 * body is ever moved.
 */
#include "synth_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bytes {
    uint8_t *p;    /* data */
    size_t n, cap; /* used, allocated */
} bytes;

/* An interned string table: names -> iids (open addressing on an FNV hash). */
typedef struct itab {
    char **names;     /* interned strings, iid = index + 1 */
    size_t n, cap;    /* count, allocated */
    uint32_t *slots;  /* index + 1, 0 = empty */
    size_t nslots;    /* power of two */
} itab;

struct synth {
    bytes out;             /* the trace */
    bytes pkt;             /* packet being built */
    bytes interned;        /* InternedData of the packet */
    bool spans_started;    /* sequence 1 cleared */
    bool samples_started;  /* sequence 2 cleared */
    uint64_t next_uuid;    /* next track uuid */
    itab names, anns;      /* event names, annotation names (sequence 1) */
    itab funcs, paths, sources, maps, stacks; /* sequence 2 tables; stacks keyed by a text form */
    uint64_t next_frame;   /* frame iids */
};

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

static void put(bytes *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void varint(bytes *b, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) t[n++] = (uint8_t)(v | 0x80), v >>= 7;
    t[n++] = (uint8_t)v;
    put(b, t, n);
}

static void f_uint(bytes *b, uint32_t f, uint64_t v) {
    varint(b, (uint64_t)f << 3);
    varint(b, v);
}

static void f_bytes(bytes *b, uint32_t f, const void *d, size_t n) {
    varint(b, ((uint64_t)f << 3) | 2);
    varint(b, n);
    put(b, d, n);
}

static void f_str(bytes *b, uint32_t f, const char *s) { f_bytes(b, f, s, strlen(s)); }

/* Opens a nested message: tag + a 5-byte length placeholder; returns the body offset. */
static size_t open_msg(bytes *b, uint32_t f) {
    varint(b, ((uint64_t)f << 3) | 2);
    uint8_t z[5] = {0x80, 0x80, 0x80, 0x80, 0x00};
    put(b, z, 5);
    return b->n;
}

static void close_msg(bytes *b, size_t at) {
    uint64_t len = b->n - at;
    for (int i = 0; i < 5; i++) {
        b->p[at - 5 + i] = (uint8_t)((len & 0x7F) | (i < 4 ? 0x80 : 0));
        len >>= 7;
    }
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

static uint64_t itab_find(itab *t, const char *s, bool *fresh) {
    if ((t->n + 1) * 2 > t->nslots) {
        size_t ns = t->nslots ? t->nslots * 2 : 64;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl) abort();
        for (size_t i = 0; i < t->n; i++) {
            size_t j = hash_str(t->names[i]) & (ns - 1);
            while (sl[j]) j = (j + 1) & (ns - 1);
            sl[j] = (uint32_t)i + 1;
        }
        free(t->slots);
        t->slots = sl;
        t->nslots = ns;
    }
    size_t j = hash_str(s) & (t->nslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->nslots - 1))
        if (!strcmp(t->names[t->slots[j] - 1], s)) {
            *fresh = false;
            return t->slots[j];
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->names = xrealloc(t->names, t->cap * sizeof *t->names);
    }
    t->names[t->n] = strdup(s);
    if (!t->names[t->n]) abort();
    t->slots[j] = (uint32_t)++t->n;
    *fresh = true;
    return t->n;
}

static void itab_free(itab *t) {
    for (size_t i = 0; i < t->n; i++) free(t->names[i]);
    free(t->names);
    free(t->slots);
}

synth *synth_new(void) {
    synth *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->next_uuid = 1000;
    return s;
}

void synth_free(synth *s) {
    if (!s) return;
    free(s->out.p);
    free(s->pkt.p);
    free(s->interned.p);
    itab_free(&s->names);
    itab_free(&s->anns);
    itab_free(&s->funcs);
    itab_free(&s->paths);
    itab_free(&s->sources);
    itab_free(&s->maps);
    itab_free(&s->stacks);
    free(s);
}

const uint8_t *synth_bytes(synth *s, size_t *len) {
    *len = s->out.n;
    return s->out.p;
}

int synth_save(synth *s, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t ok = fwrite(s->out.p, 1, s->out.n, f);
    return fclose(f) == 0 && ok == s->out.n ? 0 : -1;
}

static void pkt_begin(synth *s) { s->pkt.n = s->interned.n = 0; }

static void pkt_end(synth *s) {
    if (s->interned.n) f_bytes(&s->pkt, 12, s->interned.p, s->interned.n);
    f_bytes(&s->out, 1, s->pkt.p, s->pkt.n);
}

void synth_config(synth *s, uint32_t hz) {
    pkt_begin(s);
    f_uint(&s->pkt, 10, 3);
    size_t cfg = open_msg(&s->pkt, 33);
    size_t ds = open_msg(&s->pkt, 2), dc = open_msg(&s->pkt, 1);
    f_str(&s->pkt, 1, "track_event");
    close_msg(&s->pkt, dc);
    close_msg(&s->pkt, ds);
    if (hz) {
        ds = open_msg(&s->pkt, 2);
        dc = open_msg(&s->pkt, 1);
        f_str(&s->pkt, 1, "linux.perf");
        size_t pe = open_msg(&s->pkt, 111), tb = open_msg(&s->pkt, 15);
        f_uint(&s->pkt, 2, hz);
        f_uint(&s->pkt, 4, 1);
        close_msg(&s->pkt, tb);
        close_msg(&s->pkt, pe);
        close_msg(&s->pkt, dc);
        close_msg(&s->pkt, ds);
    }
    close_msg(&s->pkt, cfg);
    pkt_end(s);
}

void synth_tracing_disabled(synth *s) {
    pkt_begin(s);
    f_uint(&s->pkt, 10, 3);
    size_t ev = open_msg(&s->pkt, 69);
    f_uint(&s->pkt, 5, 1);
    close_msg(&s->pkt, ev);
    pkt_end(s);
}

void synth_stats(synth *s, uint64_t lost) {
    pkt_begin(s);
    f_uint(&s->pkt, 10, 3);
    size_t ts = open_msg(&s->pkt, 35), bs = open_msg(&s->pkt, 1);
    f_uint(&s->pkt, 19, lost);
    close_msg(&s->pkt, bs);
    close_msg(&s->pkt, ts);
    pkt_end(s);
}

static void spans_start(synth *s) {
    if (s->spans_started) return;
    s->spans_started = true;
    pkt_begin(s);
    f_uint(&s->pkt, 10, 1);
    f_uint(&s->pkt, 13, 1);
    size_t e = open_msg(&s->interned, 1);
    f_uint(&s->interned, 1, SYNTH_PROFILE);
    f_str(&s->interned, 2, "delta_funnel.profile");
    close_msg(&s->interned, e);
    e = open_msg(&s->interned, 1);
    f_uint(&s->interned, 1, SYNTH_CONTEXT);
    f_str(&s->interned, 2, "delta_funnel.profile.context");
    close_msg(&s->interned, e);
    pkt_end(s);
}

static uint64_t descriptor(synth *s, uint64_t parent, const char *name, int kind, uint32_t pid, uint32_t tid) {
    spans_start(s);
    uint64_t uuid = s->next_uuid++;
    pkt_begin(s);
    f_uint(&s->pkt, 10, 1);
    size_t td = open_msg(&s->pkt, 60);
    f_uint(&s->pkt, 1, uuid);
    if (name) f_str(&s->pkt, 2, name);
    if (parent) f_uint(&s->pkt, 5, parent);
    if (kind) {
        size_t d = open_msg(&s->pkt, kind == 1 ? 3 : 4);
        f_uint(&s->pkt, 1, pid);
        if (kind == 2) f_uint(&s->pkt, 2, tid);
        close_msg(&s->pkt, d);
    }
    close_msg(&s->pkt, td);
    pkt_end(s);
    return uuid;
}

uint64_t synth_process(synth *s, uint32_t pid) { return descriptor(s, 0, NULL, 1, pid, 0); }
uint64_t synth_thread(synth *s, uint32_t pid, uint32_t tid) { return descriptor(s, 0, NULL, 2, pid, tid); }
uint64_t synth_track(synth *s, uint64_t parent, const char *name) { return descriptor(s, parent, name, 0, 0, 0); }
uint64_t synth_diag_track(synth *s, uint64_t process) { return synth_track(s, process, "Delta Funnel diagnostics"); }

static uint64_t named(synth *s, uint64_t parent, const char *fmt, unsigned long long a, unsigned long long b,
                      unsigned long long c) {
    char name[256];
    snprintf(name, sizeof name, fmt, a, b, c);
    return synth_track(s, parent, name);
}

uint64_t synth_op_track(synth *s, uint64_t diag, uint64_t op) {
    return named(s, diag, "Operation [op-%020llu]", op, 0, 0);
}
uint64_t synth_phases_track(synth *s, uint64_t optrack, uint64_t op) {
    return named(s, optrack, "Operation [op-%020llu] / phases", op, 0, 0);
}
uint64_t synth_query_track(synth *s, uint64_t optrack, uint64_t op, uint64_t q) {
    return named(s, optrack, "Operation [op-%020llu] / query [q-%020llu]", op, q, 0);
}
uint64_t synth_planning_track(synth *s, uint64_t phases, uint64_t op, uint64_t q) {
    return named(s, phases, "Operation [op-%020llu] / query [q-%020llu] / planning", op, q, 0);
}
uint64_t synth_worker_track(synth *s, uint64_t query, uint64_t op, uint64_t q, uint64_t w) {
    return named(s, query, "Operation [op-%020llu] / query [q-%020llu] / worker [w-%020llu]", op, q, w);
}
uint64_t synth_stream_track(synth *s, uint64_t query, uint64_t op, uint64_t q, uint64_t stream) {
    return named(s, query, "Operation [op-%020llu] / query [q-%020llu] / Delta scan output [s-%020llu]", op, q, stream);
}
uint64_t synth_owner_track(synth *s, uint64_t optrack, uint64_t op, uint64_t owner) {
    return named(s, optrack, "Operation [op-%020llu] / owner [o-%020llu]", op, owner, 0);
}

static uint64_t intern_seq1(synth *s, itab *t, uint32_t field, const char *name) {
    bool fresh;
    uint64_t iid = itab_find(t, name, &fresh);
    if (fresh) {
        size_t e = open_msg(&s->interned, field);
        f_uint(&s->interned, 1, iid);
        f_str(&s->interned, 2, name);
        close_msg(&s->interned, e);
    }
    return iid;
}

static void event(synth *s, uint64_t track, uint64_t ts, int cat, int type, const char *name, const synth_arg *args,
                  size_t nargs) {
    spans_start(s);
    pkt_begin(s);
    f_uint(&s->pkt, 8, ts);
    f_uint(&s->pkt, 10, 1);
    f_uint(&s->pkt, 13, 2);
    size_t te = open_msg(&s->pkt, 11);
    f_uint(&s->pkt, 9, (uint64_t)type);
    f_uint(&s->pkt, 11, track);
    f_uint(&s->pkt, 3, (uint64_t)cat);
    if (name) f_uint(&s->pkt, 10, intern_seq1(s, &s->names, 2, name));
    for (size_t i = 0; i < nargs; i++) {
        size_t a = open_msg(&s->pkt, 4);
        f_uint(&s->pkt, 1, intern_seq1(s, &s->anns, 3, args[i].name));
        if (args[i].kind == 'i') {
            if (args[i].i >= 0) f_uint(&s->pkt, 3, (uint64_t)args[i].i);
            else f_uint(&s->pkt, 4, (uint64_t)args[i].i);
        } else {
            f_str(&s->pkt, 6, args[i].s);
        }
        close_msg(&s->pkt, a);
    }
    close_msg(&s->pkt, te);
    pkt_end(s);
}

void synth_begin(synth *s, uint64_t track, uint64_t ts, int cat, const char *name, const synth_arg *args, size_t nargs) {
    event(s, track, ts, cat, 1, name, args, nargs);
}
void synth_end(synth *s, uint64_t track, uint64_t ts, int cat, const synth_arg *args, size_t nargs) {
    event(s, track, ts, cat, 2, NULL, args, nargs);
}
void synth_instant(synth *s, uint64_t track, uint64_t ts, int cat, const char *name, const synth_arg *args,
                   size_t nargs) {
    event(s, track, ts, cat, 3, name, args, nargs);
}

static void samples_start(synth *s) {
    if (s->samples_started) return;
    s->samples_started = true;
    pkt_begin(s);
    f_uint(&s->pkt, 10, 2);
    f_uint(&s->pkt, 13, 1);
    pkt_end(s);
}

static uint64_t intern_seq2(synth *s, itab *t, uint32_t field, const char *str) {
    bool fresh;
    uint64_t iid = itab_find(t, str, &fresh);
    if (fresh) {
        size_t e = open_msg(&s->interned, field);
        f_uint(&s->interned, 1, iid);
        f_str(&s->interned, 2, str);
        close_msg(&s->interned, e);
    }
    return iid;
}

uint64_t synth_frame(synth *s, const char *function, const char *mapping_path, const char *source, int line) {
    samples_start(s);
    pkt_begin(s);
    f_uint(&s->pkt, 10, 2);
    f_uint(&s->pkt, 13, 2);
    uint64_t fn = function ? intern_seq2(s, &s->funcs, 5, function) : 0;
    uint64_t map = 0;
    if (mapping_path) {
        bool fresh;
        uint64_t path = intern_seq2(s, &s->paths, 17, mapping_path);
        map = itab_find(&s->maps, mapping_path, &fresh);
        if (fresh) {
            size_t m = open_msg(&s->interned, 19);
            f_uint(&s->interned, 1, map);
            f_uint(&s->interned, 4, 0x1000);
            f_uint(&s->interned, 5, 0x2000);
            f_uint(&s->interned, 7, path);
            close_msg(&s->interned, m);
        }
    }
    uint64_t src = source ? intern_seq2(s, &s->sources, 18, source) : 0;
    uint64_t iid = ++s->next_frame;
    size_t fr = open_msg(&s->interned, 6);
    f_uint(&s->interned, 1, iid);
    if (fn) f_uint(&s->interned, 2, fn);
    if (map) {
        f_uint(&s->interned, 3, map);
        f_uint(&s->interned, 4, iid * 16);
    }
    if (src) {
        f_uint(&s->interned, 5, src);
        f_uint(&s->interned, 6, (uint64_t)line);
    }
    close_msg(&s->interned, fr);
    pkt_end(s);
    return iid;
}

void synth_sample(synth *s, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t cpu, const uint64_t *frames, size_t n,
                  bool unwind_error) {
    samples_start(s);
    pkt_begin(s);
    f_uint(&s->pkt, 8, ts);
    f_uint(&s->pkt, 10, 2);
    f_uint(&s->pkt, 13, 2);
    uint64_t stack = 0;
    if (n) {
        char key[4096];
        size_t k = 0;
        key[0] = 0;
        for (size_t i = 0; i < n && k + 24 < sizeof key; i++) k += (size_t)snprintf(key + k, sizeof key - k, "%llu,", (unsigned long long)frames[i]);
        bool fresh;
        stack = itab_find(&s->stacks, key, &fresh);
        if (fresh) {
            size_t c = open_msg(&s->interned, 7);
            f_uint(&s->interned, 1, stack);
            for (size_t i = 0; i < n; i++) f_uint(&s->interned, 2, frames[i]);
            close_msg(&s->interned, c);
        }
    }
    size_t ps = open_msg(&s->pkt, 66);
    if (cpu != UINT32_MAX) f_uint(&s->pkt, 1, cpu);
    f_uint(&s->pkt, 2, pid);
    f_uint(&s->pkt, 3, tid);
    if (stack) f_uint(&s->pkt, 4, stack);
    f_uint(&s->pkt, 5, 2);
    if (unwind_error) f_uint(&s->pkt, 16, 2);
    close_msg(&s->pkt, ps);
    pkt_end(s);
}

void synth_samples_lost(synth *s, uint32_t pid, uint64_t lost) {
    samples_start(s);
    pkt_begin(s);
    f_uint(&s->pkt, 8, 1);
    f_uint(&s->pkt, 10, 2);
    size_t ps = open_msg(&s->pkt, 66);
    f_uint(&s->pkt, 2, pid);
    f_uint(&s->pkt, 17, lost);
    close_msg(&s->pkt, ps);
    pkt_end(s);
}
