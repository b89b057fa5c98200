/*
 * The .dfprofile artifact: our versioned binary encoding of the ranked
 * model (docs/dfprofile-format.md is the normative description).
 *
 *   header (64 bytes) | section directory (5 x 24 bytes) | sections
 *
 * The header carries a magic, the format and schema versions, the exact
 * file length and an FNV-1a 64 checksum of every byte but its own field.
 * Sections (strings, metadata, semantics, functions, lanes) are 8-aligned,
 * contiguous, in fixed order, and their lengths must equal what their
 * counts imply, so the reader computes every size from checked integers
 * before allocating.  Records are fixed-size little-endian; absent optional
 * values are zero with a presence flag, padding is zero, strings are
 * renumbered in first-use order: one model has exactly one encoding, and
 * decoding then re-encoding reproduces the bytes.  The decoded model is
 * validated before it is returned.
 */
#include "report/report_int.h"

#include "report/utf8.h"

#include <stdarg.h>
#include <stdio.h>

static const uint8_t MAGIC[8] = {0x89, 'D', 'F', 'P', 'R', 'O', 'F', '\n'};
#define FORMAT_VERSION 1u
#define HEADER_LEN 64u
#define SECTION_COUNT 5u
#define DIR_ENTRY 24u
#define SEM_RECORD 200u
#define FN_RECORD 64u
#define LANE_RECORD 48u
#define INTERVAL_RECORD 16u
#define META_FIELDS 35u
enum { SEC_STRINGS = 1, SEC_METADATA = 2, SEC_SEMANTICS = 3, SEC_FUNCTIONS = 4, SEC_LANES = 5 };

static uint64_t fnv_update(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Checksum of a whole file: bytes [0, 56) and [64, len). */
static uint64_t file_checksum(const uint8_t *p, size_t len) {
    uint64_t h = fnv_update(0xcbf29ce484222325ULL, p, 56);
    return fnv_update(h, p + HEADER_LEN, len - HEADER_LEN);
}

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

bool df_report_is_dfprofile(const void *bytes, size_t len) {
    return bytes && len >= sizeof MAGIC && memcmp(bytes, MAGIC, sizeof MAGIC) == 0;
}

/* ------------------------------------------------------------------------ */
/* Encoding.                                                                 */

typedef struct enc {
    const df_report_profile *p;
    uint32_t *remap;    /* model string id -> file string id (0 = unused) */
    uint32_t *order;    /* file string id - 1 -> model string id */
    uint32_t n;         /* strings in the file */
    df_buf *out;        /* destination */
} enc;

static uint32_t use_str(enc *e, uint32_t id) {
    if (!id) return 0;
    if (!e->remap[id]) {
        e->order[e->n] = id;
        e->remap[id] = ++e->n;
    }
    return e->remap[id];
}

static df_errkind put64(df_buf *b, uint64_t v) {
    uint8_t x[8];
    df_store_le64(x, v);
    return df_buf_append(b, x, 8, NULL);
}

static df_errkind put32(df_buf *b, uint32_t v) {
    uint8_t x[4];
    df_store_le32(x, v);
    return df_buf_append(b, x, 4, NULL);
}

static df_errkind pad8(df_buf *b, size_t base) {
    static const uint8_t zeros[8] = {0};
    size_t n = align8(b->len - base) - (b->len - base);
    return df_buf_append(b, zeros, n, NULL);
}

/* Assigns file string ids in first-use order: metadata, semantics, functions, lanes. */
static void collect_strings(enc *e) {
    const df_report_profile *p = e->p;
    use_str(e, p->meta.exact_time_unit);
    use_str(e, p->meta.sample_unit);
    for (size_t i = 0; i < p->nsems; i++)
        for (int f = 0; f < DF_REPORT_S_COUNT; f++) use_str(e, p->sems[i].str[f]);
    for (size_t i = 0; i < p->nfns; i++) {
        use_str(e, p->fns[i].name);
        use_str(e, p->fns[i].module_name);
        use_str(e, p->fns[i].source_file);
    }
    for (size_t i = 0; i < p->nlanes; i++) use_str(e, p->lanes[i].worker_kind);
}

static df_errkind write_strings(enc *e) {
    df_buf *b = e->out;
    size_t base = b->len;
    DF_TRY(put32(b, e->n));
    DF_TRY(put32(b, 0));
    for (uint32_t i = 0; i < e->n; i++) DF_TRY(put32(b, df__report_strlen(&e->p->strings, e->order[i])));
    DF_TRY(pad8(b, base));
    for (uint32_t i = 0; i < e->n; i++)
        DF_TRY(df_buf_append(b, df__report_str(&e->p->strings, e->order[i]), df__report_strlen(&e->p->strings, e->order[i]), NULL));
    return pad8(b, base);
}

static df_errkind write_metadata(enc *e) {
    const df_report_metadata *m = &e->p->meta;
    const uint64_t v[META_FIELDS] = {
        m->capture_complete, m->semantic_complete, m->finalization_observed,
        (uint64_t)m->incomplete_operation_root_count, (uint64_t)m->truncation_marker_count,
        (uint64_t)m->missing_identity_field_count, (uint64_t)m->missing_terminal_result_count,
        (uint64_t)m->crossing_worker_slice_count, (uint64_t)m->crossing_planning_activity_slice_count,
        (uint64_t)m->crossing_execution_activity_slice_count, (uint64_t)m->invalid_planning_activity_hierarchy_count,
        (uint64_t)m->invalid_execution_activity_hierarchy_count, (uint64_t)m->perf_sample_without_callsite_count,
        (uint64_t)m->perf_samples_skipped, (uint64_t)m->buffer_loss_count, (uint64_t)m->data_source_loss_count,
        (uint64_t)m->flush_failure_count, m->schema_version, m->sample_frequency_hz, m->sampled_cpu_count,
        use_str(e, m->exact_time_unit), use_str(e, m->sample_unit), (uint64_t)m->eligible_sample_count,
        (uint64_t)m->direct_sample_count, (uint64_t)m->ambiguous_sample_count, (uint64_t)m->unattributed_sample_count,
        (uint64_t)m->resolved_function_sample_count, (uint64_t)m->unresolved_function_sample_count,
        (uint64_t)m->unwind_error_sample_count, (uint64_t)m->missing_callstack_sample_count,
        (uint64_t)m->trace_profiler_dropped_sample_count, (uint64_t)m->exact_context_sample_count,
        (uint64_t)m->ambiguous_parent_count, (uint64_t)m->trace_start_ns, (uint64_t)m->trace_end_ns};
    for (size_t i = 0; i < META_FIELDS; i++) DF_TRY(put64(e->out, v[i]));
    return DF_OK;
}

static df_errkind write_semantics(enc *e) {
    df_buf *b = e->out;
    DF_TRY(put64(b, e->p->nsems));
    for (size_t i = 0; i < e->p->nsems; i++) {
        const df_report_semantic *s = &e->p->sems[i];
        const int64_t v[] = {s->semantic_id, s->parent_semantic_id, s->operation_id, s->start_ns, s->end_ns,
                             s->duration_ns};
        for (size_t k = 0; k < DF_ARRAY_LEN(v); k++) DF_TRY(put64(b, (uint64_t)v[k]));
        for (int k = 0; k < DF_REPORT_ID_COUNT; k++) DF_TRY(put64(b, (uint64_t)s->ident[k]));
        DF_TRY(put64(b, (uint64_t)s->direct_samples));
        DF_TRY(put64(b, (uint64_t)s->inclusive_samples));
        for (int k = 0; k < DF_REPORT_STACK_CLASSES; k++) DF_TRY(put64(b, (uint64_t)s->stack[k]));
        for (int k = 0; k < DF_REPORT_S_COUNT; k++) DF_TRY(put32(b, use_str(e, s->str[k])));
        DF_TRY(put32(b, s->flags));
    }
    return DF_OK;
}

static df_errkind write_functions(enc *e) {
    df_buf *b = e->out;
    DF_TRY(put64(b, e->p->nfns));
    for (size_t i = 0; i < e->p->nfns; i++) {
        const df_report_function *f = &e->p->fns[i];
        const int64_t v[] = {f->semantic_id, f->function_id, f->parent_function_id, f->line_number,
                             f->self_samples, f->inclusive_samples};
        for (size_t k = 0; k < DF_ARRAY_LEN(v); k++) DF_TRY(put64(b, (uint64_t)v[k]));
        DF_TRY(put32(b, use_str(e, f->name)));
        DF_TRY(put32(b, use_str(e, f->module_name)));
        DF_TRY(put32(b, use_str(e, f->source_file)));
        DF_TRY(put32(b, f->flags));
    }
    return DF_OK;
}

static df_errkind write_lanes(enc *e) {
    df_buf *b = e->out;
    const df_report_profile *p = e->p;
    uint64_t total = 0;
    for (size_t i = 0; i < p->nlanes; i++) total += p->lanes[i].interval_count;
    DF_TRY(put64(b, p->nlanes));
    DF_TRY(put64(b, total));
    for (size_t i = 0; i < p->nlanes; i++) {
        const df_report_lane *l = &p->lanes[i];
        const int64_t v[] = {l->operation_id, l->query_execution_id, l->worker_lane_id, l->busy_ns, l->activity_count};
        for (size_t k = 0; k < DF_ARRAY_LEN(v); k++) DF_TRY(put64(b, (uint64_t)v[k]));
        DF_TRY(put32(b, use_str(e, l->worker_kind)));
        DF_TRY(put32(b, l->interval_count));
    }
    for (size_t i = 0; i < p->nlanes; i++)
        for (uint32_t k = 0; k < p->lanes[i].interval_count; k++) {
            const df_report_interval *v = &p->intervals[p->lanes[i].first_interval + k];
            DF_TRY(put64(b, (uint64_t)v->start_ns));
            DF_TRY(put64(b, (uint64_t)v->end_ns));
        }
    return DF_OK;
}

static df_errkind encode_body(enc *e, size_t start) {
    df_buf *b = e->out;
    static const uint8_t zeros[HEADER_LEN + SECTION_COUNT * DIR_ENTRY] = {0};
    DF_TRY(df_buf_append(b, zeros, sizeof zeros, NULL));
    size_t offs[SECTION_COUNT + 1];
    df_errkind (*writers[SECTION_COUNT])(enc *) = {write_strings, write_metadata, write_semantics, write_functions,
                                                  write_lanes};
    for (unsigned s = 0; s < SECTION_COUNT; s++) {
        offs[s] = b->len - start;
        DF_TRY(writers[s](e));
        DF_TRY(pad8(b, start));
    }
    offs[SECTION_COUNT] = b->len - start;
    if (offs[SECTION_COUNT] > DF_REPORT_MAX_ARTIFACT_BYTES) return DF_ERR_LIMIT_EXCEEDED;
    uint8_t *h = (uint8_t *)b->data + start;
    memcpy(h, MAGIC, sizeof MAGIC);
    df_store_le16(h + 8, FORMAT_VERSION);
    df_store_le16(h + 10, HEADER_LEN);
    df_store_le32(h + 12, DF_REPORT_SCHEMA_VERSION);
    df_store_le32(h + 16, SECTION_COUNT);
    df_store_le64(h + 24, offs[SECTION_COUNT]);
    df_store_le64(h + 32, HEADER_LEN);
    for (unsigned s = 0; s < SECTION_COUNT; s++) {
        uint8_t *d = h + HEADER_LEN + s * DIR_ENTRY;
        df_store_le32(d, s + 1);
        df_store_le64(d + 8, offs[s]);
        df_store_le64(d + 16, offs[s + 1] - offs[s]);
    }
    df_store_le64(h + 56, file_checksum(h, offs[SECTION_COUNT]));
    return DF_OK;
}

df_errkind df_report_encode_dfprofile(const df_report_profile *p, df_buf *out, df_error *err) {
    df_errkind k = df_report_validate(p, err);
    if (k != DF_OK) {
        if (k != DF_ERR_OUT_OF_MEMORY) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            k = df__report_fail(err, DF_ERR_INVALID_RANKED_PROFILE, "aggregate_validation", "%s", msg);
        }
        return k;
    }
    enc e = {p, df_calloc(p->strings.n + 1, sizeof(uint32_t)), df_malloc((p->strings.n + 1) * sizeof(uint32_t)), 0, out};
    if (!e.remap || !e.order) {
        df_free(e.remap);
        df_free(e.order);
        return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "serialization", "out of memory");
    }
    collect_strings(&e);
    size_t start = out->len;
    k = encode_body(&e, start);
    df_free(e.remap);
    df_free(e.order);
    if (k != DF_OK) {
        out->len = start;
        if (k == DF_ERR_LIMIT_EXCEEDED)
            return df__report_fail(err, DF_ERR_ARTIFACT_TOO_LARGE, "serialization",
                                   "the artifact would exceed %u bytes", DF_REPORT_MAX_ARTIFACT_BYTES);
        if (k == DF_ERR_OUT_OF_MEMORY) return df__report_fail(err, k, "serialization", "out of memory");
        return df__report_fail(err, DF_ERR_ARTIFACT_SERIALIZE_FAILED, "serialization", "cannot serialise the artifact");
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Decoding.                                                                 */

static df_errkind bad(df_error *err, df_errkind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* An input-phase artifact rejection of `kind` (one of the artifact kinds of df_errkinds.def). */
static df_errkind bad(df_error *err, df_errkind kind, const char *fmt, ...) {
    char msg[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df__report_fail(err, kind, "input", "%s", msg);
}

static df_errkind dec_oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "input", "out of memory reading the artifact");
}

typedef struct span {
    const uint8_t *p; /* section bytes */
    size_t len;       /* section length */
} span;

static df_errkind check_header(const uint8_t *h, size_t len, span sec[SECTION_COUNT], df_error *err) {
    if (len > DF_REPORT_MAX_ARTIFACT_BYTES)
        return df__report_fail(err, DF_ERR_ARTIFACT_TOO_LARGE, "input", "artifact exceeds %u bytes",
                                DF_REPORT_MAX_ARTIFACT_BYTES);
    if (len < HEADER_LEN) return bad(err, DF_ERR_TRUNCATED_ARTIFACT, "artifact is shorter than its 64-byte header");
    if (memcmp(h, MAGIC, sizeof MAGIC) != 0) return bad(err, DF_ERR_INVALID_ARTIFACT_MAGIC, "file is not a .dfprofile artifact");
    if (df_load_le16(h + 8) != FORMAT_VERSION)
        return bad(err, DF_ERR_UNSUPPORTED_ARTIFACT_VERSION, "unsupported artifact version %u", df_load_le16(h + 8));
    if (df_load_le16(h + 10) != HEADER_LEN) return bad(err, DF_ERR_INVALID_ARTIFACT_HEADER, "invalid artifact header length");
    if (df_load_le32(h + 12) != DF_REPORT_SCHEMA_VERSION)
        return bad(err, DF_ERR_UNSUPPORTED_RANKED_SCHEMA, "unsupported ranked schema version %u", df_load_le32(h + 12));
    for (size_t i = 40; i < 56; i++)
        if (h[i]) return bad(err, DF_ERR_INVALID_ARTIFACT_HEADER, "reserved artifact header bytes are not zero");
    if (df_load_le32(h + 16) != SECTION_COUNT || df_load_le32(h + 20) != 0 || df_load_le64(h + 32) != HEADER_LEN)
        return bad(err, DF_ERR_INVALID_ARTIFACT_HEADER, "invalid artifact section directory");
    uint64_t declared = df_load_le64(h + 24);
    if (declared > DF_REPORT_MAX_ARTIFACT_BYTES)
        return df__report_fail(err, DF_ERR_ARTIFACT_TOO_LARGE, "input", "artifact declares more than %u bytes",
                                DF_REPORT_MAX_ARTIFACT_BYTES);
    if (declared > len) return bad(err, DF_ERR_TRUNCATED_ARTIFACT, "artifact is truncated");
    if (declared < len) return bad(err, DF_ERR_TRAILING_ARTIFACT_BYTES, "artifact has trailing bytes");
    if (len < HEADER_LEN + SECTION_COUNT * DIR_ENTRY) return bad(err, DF_ERR_TRUNCATED_ARTIFACT, "artifact is truncated");
    if (file_checksum(h, len) != df_load_le64(h + 56))
        return bad(err, DF_ERR_ARTIFACT_CHECKSUM_MISMATCH, "artifact checksum does not match its contents");
    uint64_t expect = HEADER_LEN + SECTION_COUNT * DIR_ENTRY;
    for (unsigned s = 0; s < SECTION_COUNT; s++) {
        const uint8_t *d = h + HEADER_LEN + s * DIR_ENTRY;
        uint64_t off = df_load_le64(d + 8), n = df_load_le64(d + 16);
        if (df_load_le32(d) != s + 1 || df_load_le32(d + 4) != 0 || off != expect || n % 8 != 0 || n > len - off)
            return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "artifact section %u is out of place", s + 1);
        sec[s] = (span){h + off, (size_t)n};
        expect = off + n;
    }
    if (expect != len) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "artifact sections do not cover the file");
    return DF_OK;
}

static bool all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

static df_errkind read_strings(span sec, df_report_profile *p, df_error *err) {
    if (sec.len < 8) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "string section is truncated");
    uint32_t n = df_load_le32(sec.p);
    if (df_load_le32(sec.p + 4) != 0 || n >= DF_REPORT_MAX_STRINGS || (uint64_t)n * 4 > sec.len - 8)
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "string section header is invalid");
    size_t lens_end = align8(8 + (size_t)n * 4), total = 0;
    if (lens_end > sec.len || !all_zero(sec.p + 8 + (size_t)n * 4, lens_end - 8 - (size_t)n * 4))
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "string section is invalid");
    for (uint32_t i = 0; i < n; i++) {
        total += df_load_le32(sec.p + 8 + (size_t)i * 4);
        if (total > sec.len) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "string lengths exceed the section");
    }
    if (align8(lens_end + total) != sec.len || !all_zero(sec.p + lens_end + total, sec.len - lens_end - total))
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "string section length does not match its strings");
    const uint8_t *at = sec.p + lens_end;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = df_load_le32(sec.p + 8 + (size_t)i * 4);
        if (!df__report_utf8_clean(at, len))
            return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "string %u is not valid UTF-8", i + 1);
        if (df__report_strings_add(&p->strings, (const char *)at, len) != i + 1) return dec_oom(err);
        at += len;
    }
    if (n == 0 && !df__report_strings_add(&p->strings, "", 0)) return dec_oom(err); /* allocate id 0 */
    if (n == 0) p->strings.n = 1;
    return DF_OK;
}

static df_errkind u32_field(uint64_t v, uint32_t *out, df_error *err) {
    if (v > UINT32_MAX) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "metadata value out of range");
    *out = (uint32_t)v;
    return DF_OK;
}

static df_errkind read_metadata(span sec, df_report_profile *p, df_error *err) {
    if (sec.len != META_FIELDS * 8) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "metadata section has the wrong length");
    uint64_t v[META_FIELDS];
    for (size_t i = 0; i < META_FIELDS; i++) v[i] = df_load_le64(sec.p + i * 8);
    if (v[0] > 1 || v[1] > 1 || v[2] > 1) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "metadata flag is not 0 or 1");
    df_report_metadata *m = &p->meta;
    m->capture_complete = v[0], m->semantic_complete = v[1], m->finalization_observed = v[2];
    int64_t *health[] = {&m->incomplete_operation_root_count, &m->truncation_marker_count,
                         &m->missing_identity_field_count, &m->missing_terminal_result_count,
                         &m->crossing_worker_slice_count, &m->crossing_planning_activity_slice_count,
                         &m->crossing_execution_activity_slice_count, &m->invalid_planning_activity_hierarchy_count,
                         &m->invalid_execution_activity_hierarchy_count, &m->perf_sample_without_callsite_count,
                         &m->perf_samples_skipped, &m->buffer_loss_count, &m->data_source_loss_count,
                         &m->flush_failure_count};
    for (size_t i = 0; i < DF_ARRAY_LEN(health); i++) *health[i] = (int64_t)v[3 + i];
    DF_TRY(u32_field(v[17], &m->schema_version, err));
    DF_TRY(u32_field(v[18], &m->sample_frequency_hz, err));
    DF_TRY(u32_field(v[19], &m->sampled_cpu_count, err));
    DF_TRY(u32_field(v[20], &m->exact_time_unit, err));
    DF_TRY(u32_field(v[21], &m->sample_unit, err));
    if (m->exact_time_unit >= p->strings.n || m->sample_unit >= p->strings.n)
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "metadata string id out of range");
    int64_t *cov[] = {&m->eligible_sample_count, &m->direct_sample_count, &m->ambiguous_sample_count,
                      &m->unattributed_sample_count, &m->resolved_function_sample_count,
                      &m->unresolved_function_sample_count, &m->unwind_error_sample_count,
                      &m->missing_callstack_sample_count, &m->trace_profiler_dropped_sample_count,
                      &m->exact_context_sample_count, &m->ambiguous_parent_count, &m->trace_start_ns, &m->trace_end_ns};
    for (size_t i = 0; i < DF_ARRAY_LEN(cov); i++) *cov[i] = (int64_t)v[22 + i];
    return DF_OK;
}

/* Checks `count` records of `size` bytes after an 8-byte count fill sec exactly. */
static df_errkind record_count(span sec, size_t head, size_t size, uint64_t max, uint64_t *count, df_error *err,
                               const char *what) {
    if (sec.len < head) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "%s section is truncated", what);
    *count = df_load_le64(sec.p);
    if (*count > max) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "%s section has too many records", what);
    if ((sec.len - head) / size < *count || sec.len - head != *count * size)
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "%s section length does not match its count", what);
    return DF_OK;
}

static df_errkind read_semantics(span sec, df_report_profile *p, df_error *err) {
    uint64_t n = 0;
    DF_TRY(record_count(sec, 8, SEM_RECORD, DF_REPORT_MAX_SEMANTICS, &n, err, "semantic"));
    p->sems = df_calloc(n ? n : 1, sizeof *p->sems);
    if (!p->sems) return dec_oom(err);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *r = sec.p + 8 + i * SEM_RECORD;
        df_report_semantic *s = &p->sems[i];
        int64_t *v[] = {&s->semantic_id, &s->parent_semantic_id, &s->operation_id, &s->start_ns, &s->end_ns, &s->duration_ns};
        for (size_t k = 0; k < DF_ARRAY_LEN(v); k++) *v[k] = (int64_t)df_load_le64(r + k * 8);
        for (int k = 0; k < DF_REPORT_ID_COUNT; k++) s->ident[k] = (int64_t)df_load_le64(r + 48 + k * 8);
        s->direct_samples = (int64_t)df_load_le64(r + 104);
        s->inclusive_samples = (int64_t)df_load_le64(r + 112);
        for (int k = 0; k < DF_REPORT_STACK_CLASSES; k++) s->stack[k] = (int64_t)df_load_le64(r + 120 + k * 8);
        for (int k = 0; k < DF_REPORT_S_COUNT; k++) {
            s->str[k] = df_load_le32(r + 152 + k * 4);
            if (s->str[k] >= p->strings.n) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "semantic string id out of range");
        }
        s->flags = df_load_le32(r + 196);
    }
    p->nsems = (size_t)n;
    return DF_OK;
}

static df_errkind read_functions(span sec, df_report_profile *p, df_error *err) {
    uint64_t n = 0;
    DF_TRY(record_count(sec, 8, FN_RECORD, DF_REPORT_MAX_FUNCTIONS, &n, err, "function"));
    p->fns = df_calloc(n ? n : 1, sizeof *p->fns);
    if (!p->fns) return dec_oom(err);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *r = sec.p + 8 + i * FN_RECORD;
        df_report_function *f = &p->fns[i];
        int64_t *v[] = {&f->semantic_id, &f->function_id, &f->parent_function_id, &f->line_number,
                        &f->self_samples, &f->inclusive_samples};
        for (size_t k = 0; k < DF_ARRAY_LEN(v); k++) *v[k] = (int64_t)df_load_le64(r + k * 8);
        f->name = df_load_le32(r + 48);
        f->module_name = df_load_le32(r + 52);
        f->source_file = df_load_le32(r + 56);
        f->flags = df_load_le32(r + 60);
        if (f->name >= p->strings.n || f->module_name >= p->strings.n || f->source_file >= p->strings.n)
            return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "function string id out of range");
    }
    p->nfns = (size_t)n;
    return DF_OK;
}

static df_errkind read_lanes(span sec, df_report_profile *p, df_error *err) {
    if (sec.len < 16) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "lane section is truncated");
    uint64_t nl = df_load_le64(sec.p), ni = df_load_le64(sec.p + 8);
    if (nl > DF_REPORT_MAX_LANES || ni > DF_REPORT_MAX_INTERVALS ||
        sec.len != 16 + nl * LANE_RECORD + ni * INTERVAL_RECORD)
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "lane section length does not match its counts");
    p->lanes = df_calloc(nl ? nl : 1, sizeof *p->lanes);
    p->intervals = df_calloc(ni ? ni : 1, sizeof *p->intervals);
    if (!p->lanes || !p->intervals) return dec_oom(err);
    uint64_t next = 0;
    for (uint64_t i = 0; i < nl; i++) {
        const uint8_t *r = sec.p + 16 + i * LANE_RECORD;
        df_report_lane *l = &p->lanes[i];
        l->operation_id = (int64_t)df_load_le64(r);
        l->query_execution_id = (int64_t)df_load_le64(r + 8);
        l->worker_lane_id = (int64_t)df_load_le64(r + 16);
        l->busy_ns = (int64_t)df_load_le64(r + 24);
        l->activity_count = (int64_t)df_load_le64(r + 32);
        l->worker_kind = df_load_le32(r + 40);
        l->interval_count = df_load_le32(r + 44);
        if (l->worker_kind >= p->strings.n || l->interval_count > ni - next)
            return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "worker lane is invalid");
        l->first_interval = next;
        next += l->interval_count;
    }
    if (next != ni) return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "lane intervals do not match their lanes");
    const uint8_t *iv = sec.p + 16 + nl * LANE_RECORD;
    for (uint64_t i = 0; i < ni; i++) {
        p->intervals[i].start_ns = (int64_t)df_load_le64(iv + i * INTERVAL_RECORD);
        p->intervals[i].end_ns = (int64_t)df_load_le64(iv + i * INTERVAL_RECORD + 8);
    }
    p->nlanes = (size_t)nl;
    p->nintervals = (size_t)ni;
    return DF_OK;
}

/*
 * Canonical string numbering: the strings must be exactly those the records
 * use, numbered in the order the encoder first uses them (metadata,
 * semantics, functions, lanes), so a file has one possible encoding.
 */
static bool next_use(uint32_t id, uint32_t *next) {
    if (id == 0 || id < *next) return true;
    if (id != *next) return false;
    (*next)++;
    return true;
}

static df_errkind check_string_order(const df_report_profile *p, df_error *err) {
    uint32_t next = 1;
    bool ok = next_use(p->meta.exact_time_unit, &next) && next_use(p->meta.sample_unit, &next);
    for (size_t i = 0; ok && i < p->nsems; i++)
        for (int f = 0; ok && f < DF_REPORT_S_COUNT; f++) ok = next_use(p->sems[i].str[f], &next);
    for (size_t i = 0; ok && i < p->nfns; i++)
        ok = next_use(p->fns[i].name, &next) && next_use(p->fns[i].module_name, &next) &&
             next_use(p->fns[i].source_file, &next);
    for (size_t i = 0; ok && i < p->nlanes; i++) ok = next_use(p->lanes[i].worker_kind, &next);
    if (!ok || next != p->strings.n)
        return bad(err, DF_ERR_INVALID_ARTIFACT_SECTION, "artifact strings are not in canonical order");
    return DF_OK;
}

df_errkind df_report_decode_dfprofile(const void *bytes, size_t len, df_report_profile **out, df_error *err) {
    *out = NULL;
    span sec[SECTION_COUNT];
    DF_TRY(check_header(bytes, len, sec, err));
    df_report_profile *p = df__report_profile_new();
    if (!p) return dec_oom(err);
    df_errkind k = read_strings(sec[0], p, err);
    if (k == DF_OK) k = read_metadata(sec[1], p, err);
    if (k == DF_OK) k = read_semantics(sec[2], p, err);
    if (k == DF_OK) k = read_functions(sec[3], p, err);
    if (k == DF_OK) k = read_lanes(sec[4], p, err);
    if (k == DF_OK) k = check_string_order(p, err);
    if (k == DF_OK) {
        k = df__report_index_build(p, err);
        if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            k = df__report_fail(err, DF_ERR_INVALID_RANKED_PROFILE, "input", "%s", msg);
        }
    }
    if (k != DF_OK) {
        df_report_profile_destroy(p);
        return k;
    }
    *out = p;
    return DF_OK;
}
