/*
 * The self-contained HTML report.
 *
 * The page is static HTML (title, introduction, summary cards, controls,
 * the help block) plus two inline scripts: the profile data as JSON
 * (<script id="profile-data" type="application/json">) and the viewer
 * (src/report/viewer.js, with viewer.css, embedded at build time), which
 * renders the ranked tree, the flame graph and the timeline from the data
 * with DOM calls only.  No network access, no external asset, no raw trace
 * bytes and no trace path end up in the page; every string is escaped for
 * its context (HTML text, or JSON with <, >, &, U+2028 and U+2029 escaped so
 * nothing can close the script element).
 *
 * The data is a string table plus one array per record (field positions
 * are listed in docs/profile-report.md), which keeps a 100,000-node profile
 * a few megabytes.  Larger models are bounded: semantic nodes are taken
 * longest first, function nodes hottest first, each only when its parent is
 * in, until DF_REPORT_HTML_BUDGET bytes; the page states what was left out
 * and that the artifact holds everything.
 */
#include "report/report_int.h"

#include "report/report_assets.h"

#include <stdio.h>
#include <stdlib.h>

#define SEM_CAP 150000u
#define FN_CAP 200000u
#define LANE_BUDGET ((size_t)2 << 20)
#define SEM_ROW_COST 160u
#define FN_ROW_COST 90u

/* Output state: the page, the data rows and the string table. */
typedef struct hctx {
    const df_report_profile *p;
    df_buf *out;          /* the page */
    df_buf rows;          /* JSON rows written before the string table */
    uint32_t *sid;        /* model string id -> JSON string index + 1 */
    uint32_t *did;        /* derived (compact) string id -> JSON string index + 1 */
    uint32_t *order;      /* JSON string index -> (id << 1 | derived) */
    uint32_t nstr;        /* strings in the JSON table */
    uint8_t *sem_in;      /* semantic positions included */
    uint8_t *fn_in;       /* function positions included */
    uint8_t *fn_hide;     /* compact_hidden within the included subset */
    int32_t *fn_cpar;     /* compact parent within the included subset */
    size_t nsem_in, nfn_in, nlane_in;
    int64_t origin;       /* time origin of relative timestamps */
} hctx;

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "output", "out of memory rendering the report");
}

/* ------------------------------------------------------------------------ */
/* Selection under the byte budget.                                          */

typedef struct sel_ctx {
    const df_report_profile *p;
} sel_ctx;

static int cmp_sem_priority(const void *pa, const void *pb, void *c) {
    const df_report_profile *p = ((const sel_ctx *)c)->p;
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    const df_report_semantic *a = &p->sems[ia], *b = &p->sems[ib];
    bool ca = a->flags & DF_REPORT_SEM_COMPLETE, cb = b->flags & DF_REPORT_SEM_COMPLETE;
    if (ca != cb) return ca ? 1 : -1; /* incomplete nodes extend to the end: first */
    if (ca && a->duration_ns != b->duration_ns) return a->duration_ns > b->duration_ns ? -1 : 1;
    if (p->ix.sem_depth[ia] != p->ix.sem_depth[ib]) return p->ix.sem_depth[ia] < p->ix.sem_depth[ib] ? -1 : 1;
    return ia < ib ? -1 : 1;
}

static int cmp_fn_priority(const void *pa, const void *pb, void *c) {
    const df_report_profile *p = ((const sel_ctx *)c)->p;
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    const df_report_function *a = &p->fns[ia], *b = &p->fns[ib];
    if (a->inclusive_samples != b->inclusive_samples) return a->inclusive_samples > b->inclusive_samples ? -1 : 1;
    if (p->ix.fn_depth[ia] != p->ix.fn_depth[ib]) return p->ix.fn_depth[ia] < p->ix.fn_depth[ib] ? -1 : 1;
    return ia < ib ? -1 : 1;
}

/* Bytes a string adds to the table when first used (escaping can grow it sixfold). */
static size_t str_cost(const df_report_strings *s, uint32_t id, uint8_t *seen) {
    if (!id || seen[id]) return 0;
    seen[id] = 1;
    return (size_t)df__report_strlen(s, id) * 6 / 5 + 4;
}

static df_errkind select_rows(hctx *h, df_error *err) {
    const df_report_profile *p = h->p;
    size_t n = DF_MAX(p->nsems, p->nfns);
    uint32_t *order = df_malloc((n ? n : 1) * sizeof *order);
    uint8_t *seen = df_calloc(p->strings.n + 1, 1), *dseen = df_calloc(p->ix.derived.n + 1, 1);
    if (!order || !seen || !dseen) {
        df_free(order);
        df_free(seen);
        df_free(dseen);
        return oom(err);
    }
    sel_ctx sc = {p};
    size_t used = 0, budget = DF_REPORT_HTML_BUDGET - LANE_BUDGET;
    for (size_t i = 0; i < p->nsems; i++) order[i] = (uint32_t)i;
    qsort_r(order, p->nsems, sizeof *order, cmp_sem_priority, &sc);
    for (size_t k = 0; k < p->nsems && h->nsem_in < SEM_CAP; k++) {
        uint32_t i = order[k];
        int32_t par = p->ix.sem_parent[i];
        if (par >= 0 && !h->sem_in[par]) continue;
        size_t cost = SEM_ROW_COST;
        for (int f = 0; f < DF_REPORT_S_COUNT; f++) cost += str_cost(&p->strings, p->sems[i].str[f], seen);
        cost += strlen(p->ix.sem_display[i]) * 6 / 5 + 4;
        if (used + cost > budget / 2 && par >= 0) continue;
        used += cost;
        h->sem_in[i] = 1;
        h->nsem_in++;
    }
    for (size_t i = 0; i < p->nfns; i++) order[i] = (uint32_t)i;
    qsort_r(order, p->nfns, sizeof *order, cmp_fn_priority, &sc);
    for (size_t k = 0; k < p->nfns && h->nfn_in < FN_CAP; k++) {
        uint32_t i = order[k];
        const df_report_function *f = &p->fns[i];
        int32_t par = p->ix.fn_parent[i];
        if (!h->sem_in[p->ix.fn_owner[i]] || (par >= 0 && !h->fn_in[par])) continue;
        size_t cost = FN_ROW_COST + str_cost(&p->strings, f->name, seen) + str_cost(&p->strings, f->module_name, seen) +
                      str_cost(&p->strings, f->source_file, seen) +
                      str_cost(&p->ix.derived, p->ix.compact_name[f->name], dseen);
        if (used + cost > budget) continue;
        used += cost;
        h->fn_in[i] = 1;
        h->nfn_in++;
    }
    /* Worker lanes in order while their intervals fit the lane budget. */
    size_t lane_bytes = 0;
    while (h->nlane_in < p->nlanes) {
        size_t cost = 96 + (size_t)p->lanes[h->nlane_in].interval_count * 24;
        if (lane_bytes + cost > LANE_BUDGET) break;
        lane_bytes += cost;
        h->nlane_in++;
    }
    df_free(order);
    df_free(seen);
    df_free(dseen);
    return DF_OK;
}

/* Compaction recomputed on the included subset (a node whose only child was left out is not hidden). */
static void subset_compaction(hctx *h) {
    const df_report_profile *p = h->p;
    const df_report_index *ix = &p->ix;
    /* Functions of one semantic node are in function_id order and ids are assigned
       parents-first by the builder, but artifacts need not be: walk by depth instead. */
    uint32_t maxd = 0;
    for (size_t i = 0; i < p->nfns; i++) maxd = DF_MAX(maxd, ix->fn_depth[i]);
    for (uint32_t d = 0; d <= maxd; d++)
        for (size_t i = 0; i < p->nfns; i++) {
            if (!h->fn_in[i] || ix->fn_depth[i] != d) continue;
            bool hide = ix->fn_hidden[i];
            if (hide) {
                uint32_t c = ix->fchild_list[ix->fchild_start[i]];
                hide = h->fn_in[c];
            }
            h->fn_hide[i] = hide;
            int32_t par = ix->fn_parent[i];
            h->fn_cpar[i] = par < 0 ? -1 : h->fn_hide[par] ? h->fn_cpar[par] : par;
        }
}

/* ------------------------------------------------------------------------ */
/* JSON rows.                                                                */

/* Appends the decimal form of v (the row writers' hot path: no printf). */
static df_errkind put_int(df_buf *b, int64_t v) {
    char tmp[24], *e = tmp + sizeof tmp, *p = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    return df_buf_append(b, p, (size_t)(e - p), NULL);
}

static df_errkind put_ch(df_buf *b, char c) { return df_buf_append_char(b, c, NULL); }

/* Appends ",v" for each value. */
static df_errkind put_ints(df_buf *b, const int64_t *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        DF_TRY(put_ch(b, ','));
        DF_TRY(put_int(b, v[i]));
    }
    return DF_OK;
}

/* Appends the JSON index of model string id (or null). */
static df_errkind put_str(hctx *h, df_buf *b, uint32_t id, bool derived) {
    if (!id) return df_buf_append(b, "null", 4, NULL);
    uint32_t *map = derived ? h->did : h->sid;
    if (!map[id]) {
        h->order[h->nstr] = (id << 1) | (derived ? 1u : 0u);
        map[id] = ++h->nstr;
    }
    return put_int(b, (int64_t)map[id] - 1);
}

static df_errkind put_opt(df_buf *b, bool present, int64_t v) {
    return present ? put_int(b, v) : df_buf_append(b, "null", 4, NULL);
}

static df_errkind semantic_row(hctx *h, df_buf *b, uint32_t i) {
    const df_report_profile *p = h->p;
    const df_report_semantic *s = &p->sems[i];
    bool complete = s->flags & DF_REPORT_SEM_COMPLETE;
    DF_TRY(put_ch(b, '['));
    DF_TRY(put_int(b, s->semantic_id));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_opt(b, s->flags & DF_REPORT_SEM_HAS_PARENT, s->parent_semantic_id));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_int(b, s->operation_id));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_str(h, b, s->str[DF_REPORT_S_NAME], false));
    DF_TRY(put_ch(b, ','));
    DF_TRY(df__report_json_string(b, p->ix.sem_display[i], strlen(p->ix.sem_display[i])));
    static const int fields[] = {DF_REPORT_S_KIND, DF_REPORT_S_OPERATION_KIND, DF_REPORT_S_STAGE_NAME,
                                 DF_REPORT_S_STAGE_CATEGORY, DF_REPORT_S_ACTIVITY, DF_REPORT_S_TIME_SEMANTICS,
                                 DF_REPORT_S_RESULT, DF_REPORT_S_QUERY_SCOPE, DF_REPORT_S_QUERY_OWNER,
                                 DF_REPORT_S_WORKER_KIND};
    for (size_t k = 0; k < DF_ARRAY_LEN(fields); k++) {
        DF_TRY(put_ch(b, ','));
        DF_TRY(put_str(h, b, s->str[fields[k]], false));
    }
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_int(b, s->start_ns - h->origin));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_opt(b, complete, s->duration_ns));
    const int64_t counts[] = {s->direct_samples, s->inclusive_samples, s->stack[DF_REPORT_STACK_RESOLVED],
                              s->stack[DF_REPORT_STACK_UNRESOLVED], s->stack[DF_REPORT_STACK_UNWIND_ERROR],
                              s->stack[DF_REPORT_STACK_MISSING]};
    DF_TRY(put_ints(b, counts, DF_ARRAY_LEN(counts)));
    static const int ids[] = {DF_REPORT_ID_QUERY, DF_REPORT_ID_LANE, DF_REPORT_ID_OWNER, DF_REPORT_ID_NODE,
                              DF_REPORT_ID_PARTITION, DF_REPORT_ID_STREAM, DF_REPORT_ID_PARENT_NODE};
    for (size_t k = 0; k < DF_ARRAY_LEN(ids); k++) {
        DF_TRY(put_ch(b, ','));
        DF_TRY(put_opt(b, s->flags & DF_REPORT_SEM_HAS_ID(ids[k]), s->ident[ids[k]]));
    }
    return put_ch(b, ']');
}

static df_errkind function_row(hctx *h, df_buf *b, uint32_t i) {
    const df_report_profile *p = h->p;
    const df_report_function *f = &p->fns[i];
    DF_TRY(put_ch(b, '['));
    DF_TRY(put_int(b, f->semantic_id));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_int(b, f->function_id));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_opt(b, f->flags & DF_REPORT_FN_HAS_PARENT, f->parent_function_id));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_str(h, b, f->name, false));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_str(h, b, p->ix.compact_name[f->name], true));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_str(h, b, f->module_name, false));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_str(h, b, f->source_file, false));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_opt(b, f->flags & DF_REPORT_FN_HAS_LINE, f->line_number));
    const int64_t counts[] = {f->self_samples, f->inclusive_samples};
    DF_TRY(put_ints(b, counts, 2));
    DF_TRY(put_ch(b, ','));
    int32_t cp = h->fn_cpar[i];
    DF_TRY(put_opt(b, cp >= 0, cp >= 0 ? p->fns[cp].function_id : 0));
    DF_TRY(put_ch(b, ','));
    DF_TRY(put_ch(b, h->fn_hide[i] ? '1' : '0'));
    return put_ch(b, ']');
}

static df_errkind lane_rows(hctx *h, df_buf *b) {
    const df_report_profile *p = h->p;
    for (size_t i = 0; i < h->nlane_in; i++) {
        const df_report_lane *l = &p->lanes[i];
        if (i) DF_TRY(df_buf_append(b, ",\n", 2, NULL));
        DF_TRY(put_ch(b, '['));
        DF_TRY(put_int(b, l->operation_id));
        const int64_t ids[] = {l->query_execution_id, l->worker_lane_id};
        DF_TRY(put_ints(b, ids, 2));
        DF_TRY(put_ch(b, ','));
        DF_TRY(put_str(h, b, l->worker_kind, false));
        const int64_t counts[] = {l->busy_ns, l->activity_count};
        DF_TRY(put_ints(b, counts, 2));
        DF_TRY(df_buf_append(b, ",[", 2, NULL));
        for (uint32_t k = 0; k < l->interval_count; k++) {
            const df_report_interval *v = &p->intervals[l->first_interval + k];
            if (k) DF_TRY(put_ch(b, ','));
            DF_TRY(put_int(b, v->start_ns - h->origin));
            DF_TRY(put_ch(b, ','));
            DF_TRY(put_int(b, v->end_ns - h->origin));
        }
        DF_TRY(df_buf_append(b, "]]", 2, NULL));
    }
    return DF_OK;
}

/* Appends ,"name":value for each counter. */
static df_errkind counters_json(df_buf *b, const df_report_counter *c, size_t n) {
    for (size_t i = 0; i < n; i++) DF_TRY(df_buf_printf(b, NULL, ",\"%s\":%lld", c[i].name, (long long)c[i].value));
    return DF_OK;
}

static df_errkind metadata_json(hctx *h, df_buf *b) {
    const df_report_metadata *m = &h->p->meta;
    DF_TRY(df_buf_printf(b, NULL, "{\"capture_complete\":%s,\"semantic_complete\":%s,\"finalization_observed\":%s",
                         m->capture_complete ? "true" : "false", m->semantic_complete ? "true" : "false",
                         m->finalization_observed ? "true" : "false"));
    df_report_counter health[DF_REPORT_HEALTH_COUNTERS];
    df__report_health_counters(m, health);
    DF_TRY(counters_json(b, health, DF_ARRAY_LEN(health)));
    const df_report_counter f[] = {
        {"schema_version", m->schema_version},
        {"sample_frequency_hz", m->sample_frequency_hz},
        {"sampled_cpu_count", m->sampled_cpu_count},
        {"eligible_sample_count", m->eligible_sample_count},
        {"direct_sample_count", m->direct_sample_count},
        {"ambiguous_sample_count", m->ambiguous_sample_count},
        {"unattributed_sample_count", m->unattributed_sample_count},
        {"resolved_function_sample_count", m->resolved_function_sample_count},
        {"unresolved_function_sample_count", m->unresolved_function_sample_count},
        {"unwind_error_sample_count", m->unwind_error_sample_count},
        {"missing_callstack_sample_count", m->missing_callstack_sample_count},
        {"trace_profiler_dropped_sample_count", m->trace_profiler_dropped_sample_count},
        {"exact_context_sample_count", m->exact_context_sample_count},
        {"ambiguous_parent_count", m->ambiguous_parent_count}};
    DF_TRY(counters_json(b, f, DF_ARRAY_LEN(f)));
    return df_buf_append_str(
        b, ",\"exact_time_unit\":\"" DF_REPORT_TIME_UNIT "\",\"sample_unit\":\"" DF_REPORT_SAMPLE_UNIT "\"}", NULL);
}

/* Writes the whole <script id="profile-data"> JSON text to h->out. */
static df_errkind profile_json(hctx *h) {
    const df_report_profile *p = h->p;
    df_buf *b = &h->rows;
    bool first = true;
    DF_TRY(df_buf_append_str(b, ",\n\"semantics\":[", NULL));
    for (size_t i = 0; i < p->nsems; i++) {
        if (!h->sem_in[i]) continue;
        DF_TRY(df_buf_append_str(b, first ? "\n" : ",\n", NULL));
        first = false;
        DF_TRY(semantic_row(h, b, (uint32_t)i));
    }
    DF_TRY(df_buf_append_str(b, "],\n\"functions\":[", NULL));
    first = true;
    for (size_t i = 0; i < p->nfns; i++) {
        if (!h->fn_in[i]) continue;
        DF_TRY(df_buf_append_str(b, first ? "\n" : ",\n", NULL));
        first = false;
        DF_TRY(function_row(h, b, (uint32_t)i));
    }
    DF_TRY(df_buf_append_str(b, "],\n\"lanes\":[", NULL));
    DF_TRY(lane_rows(h, b));
    DF_TRY(df_buf_printf(b, NULL,
                         "],\n\"bounds\":{\"semantics_total\":%zu,\"semantics_shown\":%zu,\"functions_total\":%zu,"
                         "\"functions_shown\":%zu,\"lanes_total\":%zu,\"lanes_shown\":%zu,\"budget_bytes\":%zu}}",
                         p->nsems, h->nsem_in, p->nfns, h->nfn_in, p->nlanes, h->nlane_in,
                         (size_t)DF_REPORT_HTML_BUDGET));
    /* Header: metadata, time origin, then the string table, then the rows. */
    DF_TRY(df_buf_append_str(h->out, "{\"format\":1,\"metadata\":", NULL));
    DF_TRY(metadata_json(h, h->out));
    DF_TRY(df_buf_printf(h->out, NULL, ",\n\"time_origin_ns\":%lld,\n\"strings\":[", (long long)h->origin));
    for (uint32_t i = 0; i < h->nstr; i++) {
        uint32_t v = h->order[i], id = v >> 1;
        const df_report_strings *t = (v & 1) ? &p->ix.derived : &p->strings;
        if (i) DF_TRY(df_buf_append_str(h->out, i % 8 ? "," : ",\n", NULL));
        DF_TRY(df__report_json_string(h->out, df__report_str(t, id), df__report_strlen(t, id)));
    }
    DF_TRY(df_buf_append_char(h->out, ']', NULL));
    return df_buf_append(h->out, b->data, b->len, NULL);
}

/* ------------------------------------------------------------------------ */
/* Static page.                                                              */

static df_errkind text(df_buf *b, const char *s) { return df__report_html_escape(b, s, strlen(s)); }

static df_errkind pct_of(df_buf *b, int64_t n, int64_t den, const char *what) {
    if (den <= 0) return df_buf_printf(b, NULL, "%lld (N/A of %s)", (long long)n, what);
    return df_buf_printf(b, NULL, "%lld (%.1f%% of %s)", (long long)n, 100.0 * (double)n / (double)den, what);
}

static df_errkind card_begin(df_buf *b, const char *label) {
    DF_TRY(df_buf_append_str(b, "<div class=\"card\"><div class=\"card-label\">", NULL));
    DF_TRY(text(b, label));
    return df_buf_append_str(b, "</div><div class=\"card-value\">", NULL);
}

static df_errkind card_end(df_buf *b) { return df_buf_append_str(b, "</div></div>\n", NULL); }

/* "N thing" / "N things" joined with commas. */
static df_errkind finding(df_buf *b, bool *any, int64_t n, const char *one, const char *many) {
    if (n <= 0) return DF_OK;
    DF_TRY(df_buf_printf(b, NULL, "%s%lld %s", *any ? ", " : "", (long long)n, n == 1 ? one : many));
    *any = true;
    return DF_OK;
}

static df_errkind health_cards(df_buf *b, const df_report_metadata *m) {
    bool findings = m->incomplete_operation_root_count || m->truncation_marker_count || m->missing_identity_field_count ||
                    m->missing_terminal_result_count || m->crossing_worker_slice_count ||
                    m->crossing_planning_activity_slice_count || m->crossing_execution_activity_slice_count ||
                    m->invalid_planning_activity_hierarchy_count || m->invalid_execution_activity_hierarchy_count ||
                    m->buffer_loss_count || m->data_source_loss_count || m->flush_failure_count ||
                    m->trace_profiler_dropped_sample_count || !m->finalization_observed || m->ambiguous_parent_count;
    bool incomplete = !m->capture_complete || !m->semantic_complete;
    if (incomplete || findings) {
        DF_TRY(card_begin(b, "Capture"));
        DF_TRY(text(b, m->capture_complete ? "Complete" : "Incomplete"));
        DF_TRY(card_end(b));
        DF_TRY(card_begin(b, "Semantic data"));
        DF_TRY(text(b, m->semantic_complete ? "Complete" : "Incomplete"));
        DF_TRY(card_end(b));
        DF_TRY(card_begin(b, "Capture health"));
        bool any = false;
        DF_TRY(finding(b, &any, m->incomplete_operation_root_count, "incomplete operation root", "incomplete operation roots"));
        DF_TRY(finding(b, &any, m->truncation_marker_count, "truncation marker", "truncation markers"));
        DF_TRY(finding(b, &any, m->missing_identity_field_count, "missing identity field", "missing identity fields"));
        DF_TRY(finding(b, &any, m->missing_terminal_result_count, "missing terminal result", "missing terminal results"));
        DF_TRY(finding(b, &any, m->crossing_worker_slice_count, "crossing worker slice", "crossing worker slices"));
        DF_TRY(finding(b, &any, m->crossing_planning_activity_slice_count, "crossing planning activity",
                       "crossing planning activities"));
        DF_TRY(finding(b, &any, m->crossing_execution_activity_slice_count, "crossing execution activity",
                       "crossing execution activities"));
        DF_TRY(finding(b, &any, m->invalid_planning_activity_hierarchy_count, "invalid planning hierarchy",
                       "invalid planning hierarchies"));
        DF_TRY(finding(b, &any, m->invalid_execution_activity_hierarchy_count, "invalid execution hierarchy",
                       "invalid execution hierarchies"));
        DF_TRY(finding(b, &any, m->buffer_loss_count, "buffer loss", "buffer losses"));
        DF_TRY(finding(b, &any, m->data_source_loss_count, "data-source loss", "data-source losses"));
        DF_TRY(finding(b, &any, m->flush_failure_count, "flush failure", "flush failures"));
        DF_TRY(finding(b, &any, m->trace_profiler_dropped_sample_count, "profiler sample dropped", "profiler samples dropped"));
        DF_TRY(finding(b, &any, m->ambiguous_parent_count, "tied parent choice", "tied parent choices"));
        if (!m->finalization_observed) {
            DF_TRY(df_buf_printf(b, NULL, "%sfinalization not observed", any ? ", " : ""));
            any = true;
        }
        if (!any) DF_TRY(text(b, "No loss counters reported"));
        DF_TRY(card_end(b));
    }
    if (incomplete && (m->perf_sample_without_callsite_count || m->perf_samples_skipped)) {
        DF_TRY(card_begin(b, "Sampling health"));
        bool any = false;
        DF_TRY(finding(b, &any, m->perf_sample_without_callsite_count, "perf sample without a callsite",
                       "perf samples without callsites"));
        DF_TRY(finding(b, &any, m->perf_samples_skipped, "perf sample skipped", "perf samples skipped"));
        DF_TRY(card_end(b));
    }
    return DF_OK;
}

static df_errkind summary_cards(df_buf *b, const df_report_metadata *m) {
    DF_TRY(df_buf_append_str(b, "<div id=\"summary\" role=\"status\" class=\"cards\">\n", NULL));
    DF_TRY(health_cards(b, m));
    DF_TRY(card_begin(b, "Sample frequency"));
    if (m->sample_frequency_hz) DF_TRY(df_buf_printf(b, NULL, "%u Hz", m->sample_frequency_hz));
    else DF_TRY(text(b, "Sampling off"));
    DF_TRY(card_end(b));
    DF_TRY(card_begin(b, "Sampled CPUs"));
    DF_TRY(df_buf_printf(b, NULL, "%u", m->sampled_cpu_count));
    DF_TRY(card_end(b));
    DF_TRY(card_begin(b, "Eligible CPU samples"));
    DF_TRY(df_buf_printf(b, NULL, "%lld", (long long)m->eligible_sample_count));
    DF_TRY(card_end(b));
    const struct { const char *label; int64_t v; } by_eligible[] = {
        {"Directly attributed", m->direct_sample_count}, {"Ambiguous", m->ambiguous_sample_count},
        {"Unattributed", m->unattributed_sample_count}};
    for (size_t i = 0; i < DF_ARRAY_LEN(by_eligible); i++) {
        DF_TRY(card_begin(b, by_eligible[i].label));
        DF_TRY(pct_of(b, by_eligible[i].v, m->eligible_sample_count, "eligible"));
        DF_TRY(card_end(b));
    }
    const struct { const char *label; int64_t v; } by_direct[] = {
        {"Native stacks captured", m->resolved_function_sample_count + m->unresolved_function_sample_count},
        {"Leaf symbols resolved", m->resolved_function_sample_count},
        {"Leaf symbols unresolved", m->unresolved_function_sample_count},
        {"Unwind failures", m->unwind_error_sample_count},
        {"Native stacks missing", m->missing_callstack_sample_count}};
    for (size_t i = 0; i < DF_ARRAY_LEN(by_direct); i++) {
        DF_TRY(card_begin(b, by_direct[i].label));
        DF_TRY(pct_of(b, by_direct[i].v, m->direct_sample_count, "direct"));
        DF_TRY(card_end(b));
    }
    DF_TRY(card_begin(b, "Profiler samples dropped"));
    DF_TRY(df_buf_printf(b, NULL, "%lld", (long long)m->trace_profiler_dropped_sample_count));
    DF_TRY(card_end(b));
    return df_buf_append_str(b, "</div>\n", NULL);
}

static df_errkind bounds_note(df_buf *b, const hctx *h) {
    const df_report_profile *p = h->p;
    if (h->nsem_in == p->nsems && h->nfn_in == p->nfns && h->nlane_in == p->nlanes) return DF_OK;
    return df_buf_printf(b, NULL,
                         "<p id=\"bounds-note\" class=\"note\">This report embeds %zu of %zu semantic nodes (longest "
                         "first), %zu of %zu native frames (hottest first) and %zu of %zu worker lanes, to keep the "
                         "page under 20 MB. Omitted rows are never needed to read the rows shown: every row comes with "
                         "its ancestors. The .dfprofile artifact and <code>delta-funnel-perfetto inspect</code> hold "
                         "the complete profile.</p>\n",
                         h->nsem_in, p->nsems, h->nfn_in, p->nfns, h->nlane_in, p->nlanes);
}

static df_errkind page(hctx *h) {
    df_buf *b = h->out;
    DF_TRY(df_buf_append_str(b, df__report_asset_page_head, NULL));
    DF_TRY(df_buf_append_str(b, df__report_asset_viewer_css, NULL));
    DF_TRY(df_buf_append_str(b, df__report_asset_page_intro, NULL));
    DF_TRY(summary_cards(b, &h->p->meta));
    DF_TRY(bounds_note(b, h));
    DF_TRY(df_buf_append_str(b, df__report_asset_page_body, NULL));
    DF_TRY(df_buf_append_str(b, "<script id=\"profile-data\" type=\"application/json\">", NULL));
    DF_TRY(profile_json(h));
    DF_TRY(df_buf_append_str(b, "</script>\n<script>\n", NULL));
    DF_TRY(df_buf_append_str(b, df__report_asset_viewer_js, NULL));
    return df_buf_append_str(b, "</script>\n</body>\n</html>\n", NULL);
}

df_errkind df_report_render_html(const df_report_profile *p, df_buf *out, df_error *err) {
    if (!p || !p->ix.built) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "profile is not indexed");
    hctx h = {.p = p, .out = out};
    df_buf_init(&h.rows, 0);
    size_t ns = p->nsems ? p->nsems : 1, nf = p->nfns ? p->nfns : 1;
    h.sid = df_calloc(p->strings.n + 1, sizeof *h.sid);
    h.did = df_calloc(p->ix.derived.n + 1, sizeof *h.did);
    h.order = df_malloc(((size_t)p->strings.n + p->ix.derived.n + 2) * sizeof *h.order);
    h.sem_in = df_calloc(ns, 1);
    h.fn_in = df_calloc(nf, 1);
    h.fn_hide = df_calloc(nf, 1);
    h.fn_cpar = df_malloc(nf * sizeof *h.fn_cpar);
    df_errkind k = h.sid && h.did && h.order && h.sem_in && h.fn_in && h.fn_hide && h.fn_cpar ? DF_OK : oom(err);
    if (k == DF_OK) {
        h.origin = p->sems[p->ix.roots[0]].start_ns;
        for (uint32_t r = 0; r < p->ix.nroots; r++) h.origin = DF_MIN(h.origin, p->sems[p->ix.roots[r]].start_ns);
        k = select_rows(&h, err);
    }
    if (k == DF_OK) {
        subset_compaction(&h);
        if (page(&h) != DF_OK) k = oom(err);
    }
    df_buf_free(&h.rows);
    df_free(h.sid);
    df_free(h.did);
    df_free(h.order);
    df_free(h.sem_in);
    df_free(h.fn_in);
    df_free(h.fn_hide);
    df_free(h.fn_cpar);
    return k;
}
