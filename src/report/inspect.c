/*
 * The terminal inspector: one-shot views and line commands.
 *
 * State: a context (operation roots, one semantic node or one function
 * node), sort, filter, limit, depth and the two view switches.  Rendering
 * lists the context's descendants depth-first with sorted siblings, down
 * to the depth bound; a filter keeps matching rows plus their ancestors
 * below the context.  A selected semantic node also lists its native
 * function roots, for which one row of the limit is reserved.  Every
 * quoted value is escaped (backslash, quote, control and bidi characters),
 * so a hostile symbol cannot move the cursor or reorder the line.
 *
 * Commands validate their arguments before changing anything; a failed
 * command returns DF_ERR_INTERACTIVE_COMMAND with the user-facing message and
 * leaves the view as it was.
 */
#include "report/report_int.h"

#include "report/utf8.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_LINE 1024u

enum { CTX_ROOTS = 0, CTX_SEMANTIC = 1, CTX_FUNCTION = 2 };

struct df_report_inspector {
    const df_report_profile *p; /* borrowed model */
    int ctx;                    /* CTX_* */
    int32_t sem;                /* selected semantic position (CTX_SEMANTIC) */
    int32_t fn;                 /* selected function position (CTX_FUNCTION) */
    df_report_sort sort;        /* explicit sort, or DEFAULT */
    bool has_filter;            /* a filter is set */
    char filter[4 * 128 + 1];   /* filter text (UTF-8) */
    uint32_t limit;             /* rows shown */
    int32_t depth;              /* explicit depth, -1 = default for the context */
    bool full;                  /* full symbols */
    bool all;                   /* all frames */
};

/* One listed row. */
typedef struct row {
    uint32_t pos;      /* semantic or function position */
    uint32_t depth;    /* view depth */
    int32_t up;        /* index of the parent row, -1 */
    bool keep;         /* survives the filter */
} row;

typedef struct rows {
    row *v;
    size_t n, cap;
} rows;

static df_errkind arg_fail(df_error *err, df_errkind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An argument-phase failure of `kind` (one of the inspect argument kinds of df_errkinds.def). */
static df_errkind arg_fail(df_error *err, df_errkind kind, const char *fmt, ...) {
    char msg[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df__report_fail(err, kind, "argument", "%s", msg);
}

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "output", "out of memory");
}

static bool rows_push(rows *r, row x) {
    if (DF_ARRAY_RESERVE(r->v, r->cap, r->n + 1, 256, NULL)) return false;
    r->v[r->n++] = x;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Sorting.                                                                  */

typedef struct sort_ctx {
    const df_report_profile *p;
    df_report_sort sort;     /* effective sort */
    bool full;               /* rendered symbols for name sorts */
} sort_ctx;

static int cmp_i64_desc(int64_t a, int64_t b) { return a > b ? -1 : a < b; }

static int cmp_sem(const void *pa, const void *pb, void *c) {
    const sort_ctx *sc = c;
    const df_report_profile *p = sc->p;
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    const df_report_semantic *a = &p->sems[ia], *b = &p->sems[ib];
    int r = 0;
    switch (sc->sort) {
    case DF_REPORT_SORT_INCLUSIVE: r = cmp_i64_desc(a->inclusive_samples, b->inclusive_samples); break;
    case DF_REPORT_SORT_SELF: r = cmp_i64_desc(a->direct_samples, b->direct_samples); break;
    case DF_REPORT_SORT_NAME: r = strcmp(df__report_sem_display(p, ia), df__report_sem_display(p, ib)); break;
    default: {
        bool ka = a->flags & DF_REPORT_SEM_COMPLETE, kb = b->flags & DF_REPORT_SEM_COMPLETE;
        if (ka != kb) r = ka ? -1 : 1; /* unknown durations after every known one */
        else if (ka) r = cmp_i64_desc(a->duration_ns, b->duration_ns);
        break;
    }
    }
    if (r) return r;
    return a->semantic_id < b->semantic_id ? -1 : a->semantic_id > b->semantic_id;
}

static int cmp_fn(const void *pa, const void *pb, void *c) {
    const sort_ctx *sc = c;
    const df_report_profile *p = sc->p;
    const df_report_function *a = &p->fns[*(const uint32_t *)pa], *b = &p->fns[*(const uint32_t *)pb];
    int r = 0;
    switch (sc->sort) {
    case DF_REPORT_SORT_SELF: r = cmp_i64_desc(a->self_samples, b->self_samples); break;
    case DF_REPORT_SORT_NAME: r = strcmp(df__report_fn_symbol(p, a, sc->full), df__report_fn_symbol(p, b, sc->full)); break;
    default: r = cmp_i64_desc(a->inclusive_samples, b->inclusive_samples); break;
    }
    if (r) return r;
    if (a->semantic_id != b->semantic_id) return a->semantic_id < b->semantic_id ? -1 : 1;
    return a->function_id < b->function_id ? -1 : a->function_id > b->function_id;
}

static const char *sort_name(df_report_sort s) {
    switch (s) {
    case DF_REPORT_SORT_INCLUSIVE: return "inclusive-cpu";
    case DF_REPORT_SORT_SELF: return "self-cpu";
    case DF_REPORT_SORT_NAME: return "name";
    default: return "duration";
    }
}

static bool parse_sort(const char *s, df_report_sort *out) {
    static const struct { const char *name; df_report_sort v; } names[] = {
        {"duration", DF_REPORT_SORT_DURATION}, {"inclusive-cpu", DF_REPORT_SORT_INCLUSIVE},
        {"self-cpu", DF_REPORT_SORT_SELF}, {"name", DF_REPORT_SORT_NAME}};
    for (size_t i = 0; i < DF_ARRAY_LEN(names); i++)
        if (strcmp(s, names[i].name) == 0) return *out = names[i].v, true;
    return false;
}

/* Effective sort of the current context (for function lists, duration means inclusive CPU samples). */
static df_report_sort effective_sort(const df_report_inspector *in, bool functions) {
    df_report_sort s = in->sort;
    if (s == DF_REPORT_SORT_DEFAULT) s = in->ctx == CTX_FUNCTION ? DF_REPORT_SORT_INCLUSIVE : DF_REPORT_SORT_DURATION;
    if (functions && s == DF_REPORT_SORT_DURATION) s = DF_REPORT_SORT_INCLUSIVE;
    return s;
}

static int32_t view_depth(const df_report_inspector *in) {
    return in->depth >= 0 ? in->depth : in->ctx == CTX_ROOTS ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* Filter.                                                                   */

static bool contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

/* Parses "semantic:ID" (*is_fn = false) or "function:S:F" (*is_fn = true). */
static bool parse_i64(const char *s, const char **end, int64_t *out) {
    const char *q = s;
    bool neg = *q == '-';
    if (neg) q++;
    if (*q < '0' || *q > '9') return false;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    while (*q >= '0' && *q <= '9') {
        unsigned d = (unsigned)(*q - '0');
        if (v > (lim - d) / 10) return false;
        v = v * 10 + d;
        q++;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    *end = q;
    return true;
}

static bool parse_semantic_identity(const char *s, int64_t *id) {
    const char *end;
    return strncmp(s, "semantic:", 9) == 0 && parse_i64(s + 9, &end, id) && *end == 0;
}

static bool parse_function_pair(const char *s, int64_t *sid, int64_t *fid) {
    const char *end;
    return parse_i64(s, &end, sid) && *end == ':' && parse_i64(end + 1, &end, fid) && *end == 0;
}

static bool parse_function_identity(const char *s, int64_t *sid, int64_t *fid) {
    return strncmp(s, "function:", 9) == 0 && parse_function_pair(s + 9, sid, fid);
}

static bool sem_matches(const df_report_inspector *in, uint32_t pos) {
    const df_report_profile *p = in->p;
    const df_report_semantic *s = &p->sems[pos];
    int64_t id;
    if (parse_semantic_identity(in->filter, &id)) return s->semantic_id == id;
    int64_t a, b;
    if (parse_function_identity(in->filter, &a, &b)) return false;
    return contains(df__report_sem_display(p, pos), in->filter) || contains(df__report_sem_str(p, s, DF_REPORT_S_NAME), in->filter) ||
           contains(df__report_sem_str(p, s, DF_REPORT_S_KIND), in->filter) ||
           contains(df__report_sem_str(p, s, DF_REPORT_S_RESULT), in->filter);
}

static bool fn_matches(const df_report_inspector *in, uint32_t pos) {
    const df_report_profile *p = in->p;
    const df_report_function *f = &p->fns[pos];
    int64_t a, b;
    if (parse_function_identity(in->filter, &a, &b)) return f->semantic_id == a && f->function_id == b;
    if (parse_semantic_identity(in->filter, &a)) return false;
    return contains(df__report_fn_compact(p, f), in->filter) || contains(df__report_str(&p->strings, f->name), in->filter) ||
           contains(df__report_str(&p->strings, f->module_name), in->filter) ||
           contains(df__report_str(&p->strings, f->source_file), in->filter);
}

/* Keeps matching rows and their ancestors (rows are in preorder, so parents precede children). */
static void apply_filter(const df_report_inspector *in, rows *r, bool functions) {
    for (size_t i = 0; i < r->n; i++) r->v[i].keep = !in->has_filter;
    if (!in->has_filter) return;
    for (size_t i = r->n; i-- > 0;) {
        bool m = functions ? fn_matches(in, r->v[i].pos) : sem_matches(in, r->v[i].pos);
        if (m || r->v[i].keep) {
            r->v[i].keep = true;
            if (r->v[i].up >= 0) r->v[r->v[i].up].keep = true;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Row collection.                                                           */

/* Children of a tree node as a sorted array (caller frees); *n set.  NULL on OOM (n = 0 -> non-NULL). */
static uint32_t *sorted_children(const df_report_inspector *in, bool functions, int32_t node, size_t *n) {
    const df_report_profile *p = in->p;
    const df_report_index *ix = &p->ix;
    const uint32_t *list;
    if (functions) {
        const uint32_t *start = in->all ? ix->fchild_start : ix->cchild_start;
        list = (in->all ? ix->fchild_list : ix->cchild_list) + start[node];
        *n = start[node + 1] - start[node];
    } else if (node < 0) {
        list = ix->roots;
        *n = ix->nroots;
    } else {
        list = ix->child_list + ix->child_start[node];
        *n = ix->child_start[node + 1] - ix->child_start[node];
    }
    uint32_t *out = df_malloc((*n ? *n : 1) * sizeof *out);
    if (!out) return NULL;
    memcpy(out, list, *n * sizeof *out);
    sort_ctx sc = {p, effective_sort(in, functions), in->full};
    qsort_r(out, *n, sizeof *out, functions ? cmp_fn : cmp_sem, &sc);
    return out;
}

/* Depth-first preorder of the descendants of `node` (-1 = roots) down to max_depth. */
static df_errkind collect(const df_report_inspector *in, bool functions, int32_t node, uint32_t first_depth,
                          uint32_t max_depth, rows *r, df_error *err) {
    typedef struct frame { uint32_t *kids; size_t n, i; uint32_t depth; int32_t up; } frame;
    frame stack[34];
    size_t sp = 0;
    if (first_depth > max_depth) return DF_OK;
    size_t n;
    uint32_t *kids = sorted_children(in, functions, node, &n);
    if (!kids) return oom(err);
    stack[sp++] = (frame){kids, n, 0, first_depth, -1};
    df_errkind k = DF_OK;
    while (sp && k == DF_OK) {
        frame *f = &stack[sp - 1];
        if (f->i == f->n) {
            df_free(f->kids);
            sp--;
            continue;
        }
        uint32_t pos = f->kids[f->i++];
        if (!rows_push(r, (row){pos, f->depth, f->up, false})) {
            k = oom(err);
            break;
        }
        if (f->depth < max_depth && sp < DF_ARRAY_LEN(stack)) {
            uint32_t *ck = sorted_children(in, functions, (int32_t)pos, &n);
            if (!ck) {
                k = oom(err);
                break;
            }
            stack[sp] = (frame){ck, n, 0, f->depth + 1, (int32_t)(r->n - 1)};
            sp++;
        }
    }
    while (sp) df_free(stack[--sp].kids);
    return k;
}

/* Function roots of semantic position s (compact or full), filtered directly, sorted. */
static df_errkind function_roots(const df_report_inspector *in, uint32_t s, rows *r, df_error *err) {
    const df_report_profile *p = in->p;
    const df_report_index *ix = &p->ix;
    size_t n = 0;
    uint32_t *v = df_malloc((ix->fn_end[s] - ix->fn_begin[s] + 1) * sizeof *v);
    if (!v) return oom(err);
    for (uint32_t i = ix->fn_begin[s]; i < ix->fn_end[s]; i++) {
        bool root = in->all ? ix->fn_parent[i] < 0 : (!ix->fn_hidden[i] && ix->fn_compact_parent[i] < 0);
        if (root && (!in->has_filter || fn_matches(in, i))) v[n++] = i;
    }
    sort_ctx sc = {p, effective_sort(in, true), in->full};
    qsort_r(v, n, sizeof *v, cmp_fn, &sc);
    for (size_t i = 0; i < n; i++)
        if (!rows_push(r, (row){v[i], 1, -1, true})) {
            df_free(v);
            return oom(err);
        }
    df_free(v);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Printing.                                                                 */

static df_errkind quoted(df_buf *out, const char *s) {
    DF_TRY(df_buf_append_char(out, '"', NULL));
    DF_TRY(df__report_term_escape(out, s, strlen(s)));
    return df_buf_append_char(out, '"', NULL);
}

static df_errkind quoted_or_null(df_buf *out, const char *s) {
    return s ? quoted(out, s) : df_buf_append_str(out, "null", NULL);
}

static df_errkind percent(df_buf *out, int64_t num, int64_t den) {
    if (den <= 0) return df_buf_append_str(out, "n/a", NULL);
    return df_buf_printf(out, NULL, "%.2f%%", 100.0 * (double)num / (double)den);
}

static bool healthy(const df_report_metadata *m) {
    return m->capture_complete && m->semantic_complete && m->finalization_observed &&
           !m->incomplete_operation_root_count && !m->truncation_marker_count && !m->missing_identity_field_count &&
           !m->missing_terminal_result_count && !m->crossing_worker_slice_count &&
           !m->crossing_planning_activity_slice_count && !m->crossing_execution_activity_slice_count &&
           !m->invalid_planning_activity_hierarchy_count && !m->invalid_execution_activity_hierarchy_count &&
           !m->buffer_loss_count && !m->data_source_loss_count && !m->flush_failure_count;
}

static df_errkind health_block(df_buf *out, const df_report_metadata *m) {
    if (healthy(m)) return DF_OK;
    DF_TRY(df_buf_printf(out, NULL, "capture_complete: %s\nsemantic_complete: %s\nfinalization_observed: %s\n",
                         m->capture_complete ? "true" : "false", m->semantic_complete ? "true" : "false",
                         m->finalization_observed ? "true" : "false"));
    df_report_counter f[DF_REPORT_HEALTH_COUNTERS];
    df__report_health_counters(m, f);
    for (size_t i = 0; i < DF_ARRAY_LEN(f); i++)
        DF_TRY(df_buf_printf(out, NULL, "%s: %lld\n", f[i].name, (long long)f[i].value));
    return DF_OK;
}

static df_errkind header(const df_report_inspector *in, df_buf *out, size_t shown, size_t total) {
    const df_report_profile *p = in->p;
    const df_report_metadata *m = &p->meta;
    DF_TRY(df_buf_append_str(out, "view: ranked-profile\ncontext: ", NULL));
    if (in->ctx == CTX_ROOTS) DF_TRY(df_buf_append_str(out, "operation-roots", NULL));
    else if (in->ctx == CTX_SEMANTIC) DF_TRY(df_buf_printf(out, NULL, "semantic:%lld", (long long)p->sems[in->sem].semantic_id));
    else DF_TRY(df_buf_printf(out, NULL, "function:%lld:%lld", (long long)p->fns[in->fn].semantic_id, (long long)p->fns[in->fn].function_id));
    DF_TRY(df_buf_append_char(out, '\n', NULL));
    DF_TRY(health_block(out, m));
    DF_TRY(df_buf_printf(out, NULL, "sort: %s\nfilter: ", sort_name(effective_sort(in, in->ctx == CTX_FUNCTION))));
    if (in->has_filter) DF_TRY(quoted(out, in->filter));
    else DF_TRY(df_buf_append_str(out, "none", NULL));
    DF_TRY(df_buf_printf(out, NULL, "\ndepth: %d\nshowing: %zu of %zu; truncated: %s\n", view_depth(in), shown, total,
                         shown < total ? "true" : "false"));
    if (in->ctx != CTX_FUNCTION) DF_TRY(df_buf_append_str(out, "time_unit: nanoseconds\n", NULL));
    DF_TRY(df_buf_printf(out, NULL,
                         "sample_unit: samples\nsymbol_format: %s\nframe_view: %s\nsampled_cpu_count: %u\n"
                         "native_stack_samples_captured: %lld\nnative_leaf_symbols_resolved: %lld\n"
                         "native_leaf_symbols_unresolved: %lld\nnative_unwind_failures: %lld\n"
                         "native_callstacks_missing: %lld\ntrace_profiler_samples_dropped: %lld\n",
                         in->full ? "full" : "compact", in->all ? "all" : "compact", m->sampled_cpu_count,
                         (long long)(m->resolved_function_sample_count + m->unresolved_function_sample_count),
                         (long long)m->resolved_function_sample_count, (long long)m->unresolved_function_sample_count,
                         (long long)m->unwind_error_sample_count, (long long)m->missing_callstack_sample_count,
                         (long long)m->trace_profiler_dropped_sample_count));
    if (in->ctx == CTX_FUNCTION)
        DF_TRY(df_buf_append_str(out, "metric_basis: sampled-cpu; exact_wall_time: not-applicable\n", NULL));
    return DF_OK;
}

static df_errkind semantic_row(const df_report_inspector *in, df_buf *out, uint32_t pos, uint32_t depth) {
    const df_report_profile *p = in->p;
    const df_report_semantic *s = &p->sems[pos];
    const df_report_semantic *root = &p->sems[p->ix.sem_root[pos]];
    bool complete = s->flags & DF_REPORT_SEM_COMPLETE;
    DF_TRY(df_buf_printf(out, NULL, "semantic depth=%u id=semantic:%lld name=", depth, (long long)s->semantic_id));
    DF_TRY(quoted(out, df__report_sem_display(p, pos)));
    DF_TRY(df_buf_append_str(out, " kind=", NULL));
    DF_TRY(quoted(out, df__report_sem_str(p, s, DF_REPORT_S_KIND)));
    if (complete) DF_TRY(df_buf_printf(out, NULL, " duration_ns=%lld", (long long)s->duration_ns));
    else DF_TRY(df_buf_append_str(out, " duration_ns=n/a", NULL));
    DF_TRY(df_buf_append_str(out, " time_basis=exact:", NULL));
    DF_TRY(df__report_term_escape(out, df__report_sem_str(p, s, DF_REPORT_S_TIME_SEMANTICS),
                                  df__report_strlen(&p->strings, s->str[DF_REPORT_S_TIME_SEMANTICS])));
    DF_TRY(df_buf_append_str(out, " operation_wall_percent=", NULL));
    bool rc = root->flags & DF_REPORT_SEM_COMPLETE;
    DF_TRY(complete && rc ? percent(out, s->duration_ns, root->duration_ns) : df_buf_append_str(out, "n/a", NULL));
    DF_TRY(df_buf_printf(out, NULL, " complete=%s result=", complete ? "true" : "false"));
    DF_TRY(quoted_or_null(out, df__report_sem_str(p, s, DF_REPORT_S_RESULT)));
    return df_buf_printf(out, NULL,
                         " direct_cpu_samples=%lld inclusive_cpu_samples=%lld native_stack_samples_captured=%lld "
                         "native_leaf_symbols_resolved=%lld native_leaf_symbols_unresolved=%lld "
                         "native_unwind_failures=%lld native_callstacks_missing=%lld\n",
                         (long long)s->direct_samples, (long long)s->inclusive_samples,
                         (long long)(s->stack[DF_REPORT_STACK_RESOLVED] + s->stack[DF_REPORT_STACK_UNRESOLVED]),
                         (long long)s->stack[DF_REPORT_STACK_RESOLVED], (long long)s->stack[DF_REPORT_STACK_UNRESOLVED],
                         (long long)s->stack[DF_REPORT_STACK_UNWIND_ERROR], (long long)s->stack[DF_REPORT_STACK_MISSING]);
}

static df_errkind function_row(const df_report_inspector *in, df_buf *out, uint32_t pos, uint32_t depth, int64_t base) {
    const df_report_profile *p = in->p;
    const df_report_function *f = &p->fns[pos];
    DF_TRY(df_buf_printf(out, NULL, "function depth=%u id=function:%lld:%lld symbol=", depth, (long long)f->semantic_id,
                         (long long)f->function_id));
    DF_TRY(quoted(out, df__report_fn_symbol(p, f, in->full)));
    DF_TRY(df_buf_append_str(out, " module=", NULL));
    DF_TRY(quoted_or_null(out, df__report_str(&p->strings, f->module_name)));
    DF_TRY(df_buf_append_str(out, " source=", NULL));
    DF_TRY(quoted_or_null(out, df__report_str(&p->strings, f->source_file)));
    if (f->flags & DF_REPORT_FN_HAS_LINE) DF_TRY(df_buf_printf(out, NULL, " line=%lld", (long long)f->line_number));
    else DF_TRY(df_buf_append_str(out, " line=null", NULL));
    DF_TRY(df_buf_printf(out, NULL, " inclusive_cpu_samples=%lld inclusive_context_percent=", (long long)f->inclusive_samples));
    DF_TRY(percent(out, f->inclusive_samples, base));
    DF_TRY(df_buf_printf(out, NULL, " self_cpu_samples=%lld self_context_percent=", (long long)f->self_samples));
    DF_TRY(percent(out, f->self_samples, base));
    return df_buf_append_char(out, '\n', NULL);
}

/* Moves kept rows to the front (order preserved); returns their count. */
static size_t compact_rows(rows *r) {
    size_t m = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].keep) r->v[m++] = r->v[i];
    return m;
}

static df_errkind render_semantic_view(df_report_inspector *in, df_buf *out, df_error *err) {
    const df_report_profile *p = in->p;
    rows sem = {0}, fns = {0};
    int32_t d = view_depth(in);
    int32_t node = in->ctx == CTX_ROOTS ? -1 : in->sem;
    df_errkind k = collect(in, false, node, in->ctx == CTX_ROOTS ? 0 : 1, (uint32_t)d, &sem, err);
    if (k == DF_OK) {
        apply_filter(in, &sem, false);
        sem.n = compact_rows(&sem);
    }
    if (k == DF_OK && in->ctx == CTX_SEMANTIC && d > 0) k = function_roots(in, (uint32_t)in->sem, &fns, err);
    if (k == DF_OK) {
        size_t reserve = fns.n > 0 ? 1 : 0;
        size_t shown_sem = DF_MIN(sem.n, in->limit - reserve);
        size_t shown_fn = DF_MIN(fns.n, in->limit - shown_sem);
        k = header(in, out, shown_sem + shown_fn, sem.n + fns.n) == DF_OK ? DF_OK : oom(err);
        for (size_t i = 0; k == DF_OK && i < shown_sem; i++)
            if (semantic_row(in, out, sem.v[i].pos, sem.v[i].depth) != DF_OK) k = oom(err);
        if (k == DF_OK && in->ctx == CTX_SEMANTIC && d > 0) {
            const df_report_semantic *s = &p->sems[in->sem];
            if (df_buf_printf(out, NULL,
                              "transition: semantic:%lld -> function-roots; sort: %s; showing: %zu of %zu; "
                              "truncated: %s; sample_basis: sampled-cpu\n",
                              (long long)s->semantic_id, sort_name(effective_sort(in, true)), shown_fn, fns.n,
                              shown_fn < fns.n ? "true" : "false") != DF_OK)
                k = oom(err);
            for (size_t i = 0; k == DF_OK && i < shown_fn; i++)
                if (function_row(in, out, fns.v[i].pos, 1, s->direct_samples) != DF_OK) k = oom(err);
        }
    }
    df_free(sem.v);
    df_free(fns.v);
    return k;
}

static df_errkind render_function_view(df_report_inspector *in, df_buf *out, df_error *err) {
    rows r = {0};
    int32_t d = view_depth(in);
    df_errkind k = collect(in, true, in->fn, 1, (uint32_t)d, &r, err);
    if (k == DF_OK) {
        apply_filter(in, &r, true);
        r.n = compact_rows(&r);
        size_t shown = DF_MIN(r.n, in->limit);
        k = header(in, out, shown, r.n) == DF_OK ? DF_OK : oom(err);
        int64_t base = in->p->fns[in->fn].inclusive_samples;
        for (size_t i = 0; k == DF_OK && i < shown; i++)
            if (function_row(in, out, r.v[i].pos, r.v[i].depth, base) != DF_OK) k = oom(err);
    }
    df_free(r.v);
    return k;
}

df_errkind df_report_inspector_render(df_report_inspector *in, df_buf *out, df_error *err) {
    return in->ctx == CTX_FUNCTION ? render_function_view(in, out, err) : render_semantic_view(in, out, err);
}

/* ------------------------------------------------------------------------ */
/* Creation and commands.                                                    */

/* Stores a validated filter (at most 128 characters, so at most 512 bytes). */
static void set_filter(df_report_inspector *in, const char *s) {
    size_t n = strlen(s);
    if (n >= sizeof in->filter) n = sizeof in->filter - 1;
    memcpy(in->filter, s, n);
    in->filter[n] = 0;
    in->has_filter = true;
}

static bool filter_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || !df__report_utf8_clean((const uint8_t *)s, n)) return false;
    size_t chars = df_utf8_count((const uint8_t *)s, n);
    return chars >= 1 && chars <= 128;
}

df_errkind df_report_inspector_create(const df_report_profile *p, const df_report_inspect_options *o,
                                      df_report_inspector **out, df_error *err) {
    *out = NULL;
    df_report_inspect_options none = {0};
    if (!o) o = &none;
    if (!p || !p->ix.built) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "profile is not indexed");
    if (o->limit > 200) return arg_fail(err, DF_ERR_INVALID_LIMIT, "limit must be between 1 and 200");
    if (o->depth < -1 || o->depth > 32) return arg_fail(err, DF_ERR_INVALID_DEPTH, "depth must be between 0 and 32");
    if (o->filter && !filter_ok(o->filter))
        return arg_fail(err, DF_ERR_INVALID_FILTER, "filter must contain between 1 and 128 characters");
    if (o->has_semantic && o->has_function)
        return arg_fail(err, DF_ERR_INCOMPATIBLE_SELECTORS, "--semantic and --function cannot be used together");
    if (o->has_function && o->sort == DF_REPORT_SORT_DURATION)
        return arg_fail(err, DF_ERR_INCOMPATIBLE_SORT, "function callsites cannot be sorted by exact duration");
    df_report_inspector *in = df_calloc(1, sizeof *in);
    if (!in) return oom(err);
    *in = (df_report_inspector){.p = p, .ctx = CTX_ROOTS, .sem = -1, .fn = -1, .sort = o->sort,
                                .limit = o->limit ? o->limit : 20, .depth = o->depth, .full = o->full_symbols,
                                .all = o->all_frames};
    if (o->filter) set_filter(in, o->filter);
    if (o->has_semantic) {
        in->sem = df__report_find_semantic(p, o->semantic_id);
        if (in->sem < 0) {
            df_free(in);
            return arg_fail(err, DF_ERR_SEMANTIC_NOT_FOUND, "semantic:%lld does not exist", (long long)o->semantic_id);
        }
        in->ctx = CTX_SEMANTIC;
    } else if (o->has_function) {
        in->fn = df__report_find_function(p, o->function_semantic_id, o->function_id);
        if (in->fn < 0) {
            df_free(in);
            return arg_fail(err, DF_ERR_FUNCTION_NOT_FOUND, "function:%lld:%lld does not exist",
                            (long long)o->function_semantic_id, (long long)o->function_id);
        }
        in->ctx = CTX_FUNCTION;
    }
    *out = in;
    return DF_OK;
}

void df_report_inspector_destroy(df_report_inspector *in) { df_free(in); }

static df_errkind user_error(df_error *err, const char *msg) {
    return df__report_fail(err, DF_ERR_INTERACTIVE_COMMAND, "argument", "%s", msg);
}

/* Opens semantic:ID when it is an immediate child of the current context. */
static df_errkind open_semantic(df_report_inspector *in, int64_t id, df_error *err) {
    const df_report_profile *p = in->p;
    int32_t s = df__report_find_semantic(p, id);
    bool child = s >= 0 && ((in->ctx == CTX_ROOTS && p->ix.sem_parent[s] < 0) ||
                            (in->ctx == CTX_SEMANTIC && p->ix.sem_parent[s] == in->sem));
    if (!child) return user_error(err, "semantic target is not an immediate child");
    in->ctx = CTX_SEMANTIC;
    in->sem = s;
    in->fn = -1;
    return DF_OK;
}

/* Opens function:S:F when it is a root of the current semantic or a child of the current function. */
static df_errkind open_function(df_report_inspector *in, int64_t sid, int64_t fid, df_error *err) {
    const df_report_profile *p = in->p;
    const df_report_index *ix = &p->ix;
    int32_t f = df__report_find_function(p, sid, fid);
    bool child = false;
    if (f >= 0 && in->ctx == CTX_SEMANTIC && ix->fn_owner[f] == (uint32_t)in->sem)
        child = ix->fn_parent[f] < 0 || (!ix->fn_hidden[f] && ix->fn_compact_parent[f] < 0);
    else if (f >= 0 && in->ctx == CTX_FUNCTION)
        child = ix->fn_parent[f] == in->fn || (!ix->fn_hidden[f] && ix->fn_compact_parent[f] == in->fn);
    if (!child) return user_error(err, "function target is not an immediate child");
    if (in->sort == DF_REPORT_SORT_DURATION) in->sort = DF_REPORT_SORT_INCLUSIVE;
    in->ctx = CTX_FUNCTION;
    in->fn = f;
    return DF_OK;
}

static df_errkind cmd_open(df_report_inspector *in, const char *arg, df_error *err) {
    int64_t a, b;
    if (strncmp(arg, "semantic:", 9) == 0) {
        if (!parse_semantic_identity(arg, &a)) return user_error(err, "invalid semantic identity; expected semantic:ID");
        return open_semantic(in, a, err);
    }
    if (strncmp(arg, "function:", 9) == 0) {
        if (!parse_function_identity(arg, &a, &b))
            return user_error(err, "invalid function identity; expected function:SEMANTIC_ID:FUNCTION_ID");
        return open_function(in, a, b, err);
    }
    return user_error(err, "invalid open target; expected semantic:ID or function:SEMANTIC_ID:FUNCTION_ID");
}

static df_errkind cmd_up(df_report_inspector *in, df_error *err) {
    const df_report_index *ix = &in->p->ix;
    if (in->ctx == CTX_ROOTS) return user_error(err, "already at operation roots");
    if (in->ctx == CTX_FUNCTION) {
        int32_t par = in->all ? ix->fn_parent[in->fn] : ix->fn_compact_parent[in->fn];
        if (par >= 0) {
            in->fn = par;
        } else {
            in->ctx = CTX_SEMANTIC;
            in->sem = (int32_t)ix->fn_owner[in->fn];
            in->fn = -1;
        }
        return DF_OK;
    }
    int32_t par = ix->sem_parent[in->sem];
    if (par >= 0) in->sem = par;
    else in->ctx = CTX_ROOTS, in->sem = -1;
    return DF_OK;
}

static df_errkind cmd_sort(df_report_inspector *in, const char *arg, df_error *err) {
    df_report_sort s;
    if (!*arg || strchr(arg, ' ')) return user_error(err, "invalid sort; expected sort METRIC");
    if (!parse_sort(arg, &s)) return user_error(err, "invalid sort; expected duration, inclusive-cpu, self-cpu, or name");
    if (s == DF_REPORT_SORT_DURATION && in->ctx == CTX_FUNCTION)
        return user_error(err, "function callsites cannot be sorted by exact duration");
    in->sort = s;
    return DF_OK;
}

static df_errkind cmd_limit(df_report_inspector *in, const char *arg, df_error *err) {
    int64_t v;
    const char *end;
    if (!*arg || !parse_i64(arg, &end, &v) || *end) return user_error(err, "invalid limit; expected limit N");
    if (v < 1 || v > 200) return user_error(err, "limit must be between 1 and 200");
    in->limit = (uint32_t)v;
    return DF_OK;
}

static df_errkind cmd_filter(df_report_inspector *in, const char *arg, df_error *err) {
    if (!filter_ok(arg)) return user_error(err, "filter must contain between 1 and 128 characters");
    set_filter(in, arg);
    return DF_OK;
}

static bool is_ws(char c) { return c == ' ' || c == '\t'; }

df_errkind df_report_inspector_command(df_report_inspector *in, const char *line, size_t len, df_buf *out,
                                       bool *quit, df_error *err) {
    *quit = false;
    if (len > MAX_LINE) return user_error(err, "interactive command exceeds the 1024-byte limit");
    if (len && line[len - 1] == '\r') len--;
    if (!df__report_utf8_clean((const uint8_t *)line, len)) return user_error(err, "interactive command must be valid UTF-8");
    while (len && is_ws(*line)) line++, len--;
    while (len && is_ws(line[len - 1])) len--;
    char buf[MAX_LINE + 1];
    memcpy(buf, line, len);
    buf[len] = 0;
    if (len == 0) return DF_OK;
    char *arg = buf;
    while (*arg && !is_ws(*arg)) arg++;
    if (*arg) {
        *arg++ = 0;
        while (is_ws(*arg)) arg++;
    }
    const char *cmd = buf;
    df_errkind k;
    if (!strcmp(cmd, "help")) {
        if (*arg) return user_error(err, "unknown interactive command");
        return df_buf_append_str(out,
                                 "commands: show, open semantic:ID, open function:SEMANTIC_ID:FUNCTION_ID, up, root, "
                                 "sort METRIC, filter TEXT, clear, limit N, help, quit\n",
                                 NULL) == DF_OK ? DF_OK : oom(err);
    }
    if (!strcmp(cmd, "quit") && !*arg) {
        *quit = true;
        return DF_OK;
    }
    if (!strcmp(cmd, "show") && !*arg) k = DF_OK;
    else if (!strcmp(cmd, "open")) k = cmd_open(in, arg, err);
    else if (!strcmp(cmd, "up") && !*arg) k = cmd_up(in, err);
    else if (!strcmp(cmd, "root") && !*arg) k = (in->ctx = CTX_ROOTS, in->sem = in->fn = -1, DF_OK);
    else if (!strcmp(cmd, "sort")) k = cmd_sort(in, arg, err);
    else if (!strcmp(cmd, "filter")) k = cmd_filter(in, arg, err);
    else if (!strcmp(cmd, "clear") && !*arg) k = (in->has_filter = false, in->filter[0] = 0, DF_OK);
    else if (!strcmp(cmd, "limit")) k = cmd_limit(in, arg, err);
    else return user_error(err, "unknown interactive command");
    if (k != DF_OK) return k;
    if ((in->ctx == CTX_SEMANTIC && in->sem < 0) || (in->ctx == CTX_FUNCTION && in->fn < 0))
        return user_error(err, "current profile selection does not exist");
    return df_report_inspector_render(in, out, err);
}
