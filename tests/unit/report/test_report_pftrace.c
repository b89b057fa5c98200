/*
 * The Perfetto trace decoder on hand-made and hostile bytes: framing
 * errors with offsets, unsupported compressed packets, interning per
 * sequence generation, clock conversion through snapshots, callstack
 * bounds, the packed frame-id form, and the input size cap.  Plus one
 * trace written by the diag capture itself.
 */
#include "report_test_util.h"

#include "report/pftrace.h"

/* A tiny protobuf writer for hand-made packets. */
typedef struct pb {
    uint8_t b[1 << 16];
    size_t n;
} pb;

static void v(pb *p, uint64_t x) {
    while (x >= 0x80) p->b[p->n++] = (uint8_t)(x | 0x80), x >>= 7;
    p->b[p->n++] = (uint8_t)x;
}
static void fu(pb *p, uint32_t f, uint64_t x) { v(p, (uint64_t)f << 3), v(p, x); }
static void fb(pb *p, uint32_t f, const void *d, size_t n) {
    v(p, ((uint64_t)f << 3) | 2), v(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void fs(pb *p, uint32_t f, const char *s) { fb(p, f, s, strlen(s)); }
static void fm(pb *p, uint32_t f, const pb *m) { fb(p, f, m->b, m->n); }

static df_errkind decode(const pb *t, df__pt_trace *out, df_error *err) {
    return df__pt_decode(t->b, t->n, 0, out, err);
}

static void expect_malformed(const uint8_t *bytes, size_t n, int64_t offset) {
    df__pt_trace t;
    df_error err = {0};
    DF_ASSERT_KIND(df__pt_decode(bytes, n, 0, &t, &err), DF_ERR_MALFORMED_TRACE);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "malformed_trace");
    DF_ASSERT_EQ_STR(err.phase, "input");
    if (offset >= 0) DF_ASSERT_EQ_INT(err.offset, offset);
    DF_ASSERT(t.events == NULL && t.samples == NULL);
    df_error_clear(&err);
}

DF_TEST(framing_errors) {
    const uint8_t truncated_varint[] = {0x0A, 0x80};
    expect_malformed(truncated_varint, sizeof truncated_varint, -1);
    const uint8_t overlong[] = {0x0A, 0x05, 0x01};
    expect_malformed(overlong, sizeof overlong, -1);
    const uint8_t group[] = {0x0B};
    expect_malformed(group, sizeof group, -1);
    const uint8_t field0[] = {0x02, 0x00};
    expect_malformed(field0, sizeof field0, -1);
    const uint8_t not_len[] = {0x08, 0x01};
    expect_malformed(not_len, sizeof not_len, 2);
    const uint8_t huge[] = {0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
    expect_malformed(huge, sizeof huge, -1);
    /* A bad nested message inside an otherwise well-framed packet. */
    pb pkt = {.n = 0}, t = {.n = 0};
    const uint8_t bad_event[] = {0x48}; /* TrackEvent field 9 varint without a value */
    fb(&pkt, 11, bad_event, sizeof bad_event);
    fu(&pkt, 8, 5);
    fu(&pkt, 10, 1);
    fm(&t, 1, &pkt);
    df__pt_trace tr;
    df_error err = {0};
    /* A sequence that never cleared its incremental state is still read (as Perfetto does): the event is malformed. */
    DF_ASSERT_KIND(decode(&t, &tr, &err), DF_ERR_MALFORMED_TRACE);
    DF_ASSERT(tr.events == NULL && tr.samples == NULL);
    df_error_clear(&err);
}

DF_TEST(unknown_fields_and_empty_input) {
    df__pt_trace t;
    DF_ASSERT_OK(df__pt_decode((const uint8_t *)"", 0, 0, &t, NULL), NULL);
    DF_ASSERT_EQ_UINT(t.nevents, 0);
    df__pt_trace_free(&t);
    const uint8_t unknown[] = {0x10, 0x01, 0x1A, 0x02, 'h', 'i', 0x21, 1, 2, 3, 4, 5, 6, 7, 8, 0x2D, 1, 2, 3, 4};
    DF_ASSERT_OK(df__pt_decode(unknown, sizeof unknown, 0, &t, NULL), NULL);
    df__pt_trace_free(&t);
}

DF_TEST(compressed_packets_are_unsupported) {
    pb pkt = {.n = 0}, t = {.n = 0};
    fs(&pkt, 50, "zlib bytes");
    fm(&t, 1, &pkt);
    df__pt_trace tr;
    df_error err = {0};
    DF_ASSERT_KIND(decode(&t, &tr, &err), DF_ERR_MALFORMED_TRACE);
    DF_ASSERT(strstr(err.message, "compressed") != NULL);
    df_error_clear(&err);
}

DF_TEST(size_cap) {
    pb t = {.n = 0};
    fs(&t, 2, "0123456789");
    df__pt_trace tr;
    df_error err = {0};
    DF_ASSERT_KIND(df__pt_decode(t.b, t.n, 5, &tr, &err), DF_ERR_TRACE_TOO_LARGE);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "trace_too_large");
    df_error_clear(&err);
}

/* A packet on `seq` with flags, interning event name iid 1 = name, and a begin event at ts. */
static void named_event(pb *t, uint32_t seq, uint32_t flags, bool intern, const char *name, uint64_t ts) {
    pb pkt = {.n = 0}, id = {.n = 0}, ev = {.n = 0}, en = {.n = 0};
    fu(&pkt, 8, ts);
    fu(&pkt, 10, seq);
    fu(&pkt, 13, flags);
    if (intern) {
        fu(&en, 1, 1);
        fs(&en, 2, name);
        fm(&id, 2, &en);
        fm(&pkt, 12, &id);
    }
    fu(&ev, 9, 3);
    fu(&ev, 11, 42);
    fu(&ev, 10, 1);
    fm(&pkt, 11, &ev);
    fm(t, 1, &pkt);
}

DF_TEST(interning_follows_sequence_generations) {
    pb t = {.n = 0};
    named_event(&t, 1, 2, false, NULL, 10);    /* before the first clear: skipped */
    named_event(&t, 1, 1, true, "first", 20);  /* clear + intern */
    named_event(&t, 1, 2, false, NULL, 30);    /* uses "first" */
    named_event(&t, 2, 2, false, NULL, 40);    /* another sequence never cleared: skipped */
    named_event(&t, 1, 1, false, NULL, 50);    /* re-clear without interning: unnamed */
    df__pt_trace tr;
    df_error err = {0};
    DF_ASSERT_OK(decode(&t, &tr, &err), &err);
    DF_ASSERT_EQ_UINT(tr.nevents, 3);
    DF_ASSERT_EQ_STR(df__report_str(&tr.strings, tr.events[0].name), "first");
    DF_ASSERT_EQ_STR(df__report_str(&tr.strings, tr.events[1].name), "first");
    DF_ASSERT_EQ_UINT(tr.events[2].name, 0);
    DF_ASSERT_EQ_INT(tr.events[1].ts, 30);
    df__pt_trace_free(&tr);
}

DF_TEST(clock_conversion) {
    pb t = {.n = 0}, pkt = {.n = 0}, snap = {.n = 0}, c = {.n = 0};
    fu(&c, 1, 6), fu(&c, 2, 1000);
    fm(&snap, 1, &c);
    c.n = 0;
    fu(&c, 1, 3), fu(&c, 2, 400);
    fm(&snap, 1, &c);
    fu(&snap, 2, 6);
    fm(&pkt, 6, &snap);
    named_event(&t, 1, 1, true, "x", 5);          /* clock 0 = trace default: unchanged */
    /* A MONOTONIC event (clock 3) and one on a clock no snapshot knows (5). */
    for (int clock = 3; clock <= 5; clock += 2) {
        pb e = {.n = 0}, ev = {.n = 0};
        fu(&e, 8, 500);
        fu(&e, 58, (uint64_t)clock);
        fu(&e, 10, 1);
        fu(&e, 13, 2);
        fu(&ev, 9, 3), fu(&ev, 11, 42), fu(&ev, 10, 1);
        fm(&e, 11, &ev);
        fm(&t, 1, &e);
    }
    fm(&t, 1, &pkt); /* the snapshot comes last: conversion waits for it */
    df__pt_trace tr;
    DF_ASSERT_OK(decode(&t, &tr, NULL), NULL);
    DF_ASSERT_EQ_UINT(tr.nevents, 2);
    DF_ASSERT_EQ_INT(tr.events[0].ts, 5);
    DF_ASSERT_EQ_INT(tr.events[1].ts, 1100);
    DF_ASSERT_EQ_INT(tr.data_source_loss, 1);
    DF_ASSERT_EQ_INT(tr.min_ts, 5);
    DF_ASSERT_EQ_INT(tr.max_ts, 1100);
    df__pt_trace_free(&tr);
}

/* Sample-sequence packet interning frames 1..nframes (function "f") and one callstack. */
static void stack_packet(pb *t, size_t nframes, bool packed) {
    static pb pkt, id, m;
    pkt.n = id.n = 0;
    fu(&pkt, 10, 2);
    fu(&pkt, 13, 1);
    m.n = 0;
    fu(&m, 1, 1), fs(&m, 2, "f");
    fm(&id, 5, &m);
    for (size_t i = 1; i <= nframes && i < 3; i++) {
        m.n = 0;
        fu(&m, 1, i), fu(&m, 2, 1);
        fm(&id, 6, &m);
    }
    m.n = 0;
    fu(&m, 1, 9);
    if (packed) {
        pb ids = {.n = 0};
        for (size_t i = 0; i < nframes; i++) v(&ids, 1 + (i & 1));
        fm(&m, 2, &ids);
    } else {
        for (size_t i = 0; i < nframes; i++) fu(&m, 2, 1 + (i & 1));
    }
    fm(&id, 7, &m);
    fm(&pkt, 12, &id);
    pb ps = {.n = 0};
    fu(&ps, 2, 1), fu(&ps, 3, 1), fu(&ps, 4, 9);
    fm(&pkt, 66, &ps);
    fu(&pkt, 8, 100);
    fm(t, 1, &pkt);
}

DF_TEST(callstacks_packed_and_bounded) {
    pb t = {.n = 0};
    stack_packet(&t, 3, true);
    df__pt_trace tr;
    DF_ASSERT_OK(decode(&t, &tr, NULL), NULL);
    DF_ASSERT_EQ_UINT(tr.nsamples, 1);
    size_t n;
    df__pt_stack(&tr, tr.samples[0].stack, &n);
    DF_ASSERT_EQ_UINT(n, 3);
    DF_ASSERT_EQ_UINT(tr.nframes, 1); /* both interned frames are the same function */
    df__pt_trace_free(&tr);
    t.n = 0;
    stack_packet(&t, 16385, false);
    df_error err = {0};
    DF_ASSERT_KIND(decode(&t, &tr, &err), DF_ERR_TRACE_TOO_LARGE);
    df_error_clear(&err);
}

DF_TEST(unresolved_interned_references_drop_the_callstack) {
    pb t = {.n = 0}, pkt = {.n = 0}, id = {.n = 0}, m = {.n = 0}, ps = {.n = 0};
    fu(&pkt, 10, 2), fu(&pkt, 13, 1), fu(&pkt, 8, 7);
    fu(&m, 1, 1), fu(&m, 2, 77); /* frame 1 names function 77, never interned */
    fm(&id, 6, &m);
    m.n = 0;
    fu(&m, 1, 5), fu(&m, 2, 1);
    fm(&id, 7, &m);
    fm(&pkt, 12, &id);
    fu(&ps, 2, 1), fu(&ps, 3, 1), fu(&ps, 4, 5);
    fm(&pkt, 66, &ps);
    fm(&t, 1, &pkt);
    df__pt_trace tr;
    DF_ASSERT_OK(decode(&t, &tr, NULL), NULL);
    DF_ASSERT_EQ_UINT(tr.nsamples, 1);
    DF_ASSERT_EQ_UINT(tr.samples[0].stack, 0);
    df__pt_trace_free(&tr);
}

DF_TEST(scenario_trace_decodes_every_part) {
    synth *s = scenario_preview();
    size_t len;
    const uint8_t *b = synth_bytes(s, &len);
    df__pt_trace tr;
    DF_ASSERT_OK(df__pt_decode(b, len, 0, &tr, NULL), NULL);
    DF_ASSERT_EQ_UINT(tr.sample_frequency_hz, 1000);
    DF_ASSERT(tr.tracing_disabled);
    DF_ASSERT_EQ_UINT(tr.nsamples, 9);
    DF_ASSERT(tr.ntracks >= 10);
    df__pt_trace_free(&tr);
    /* Every prefix either decodes or fails cleanly. */
    for (size_t cut = 0; cut < len; cut += 7) {
        df_report_profile *p = NULL;
        if (df_report_build_from_trace(b, cut, NULL, &p, NULL) == DF_OK) {
            DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
            df_report_profile_destroy(p);
        }
    }
    synth_free(s);
}
