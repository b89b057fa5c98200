/*
 * The ranked model: lifetime, validation and the derived index.
 *
 * Validation and indexing are one pass because most invariants are about
 * relations that the index resolves anyway (a parent that must exist, an
 * operation with exactly one root, a fold that must match).  The checks
 * run in a fixed order and report the first failure with a stable message;
 * they never trust a count or id from the records before checking it, so a
 * hostile artifact fails here instead of misbehaving in a renderer.
 *
 * Trees are walked iteratively everywhere (depth-sorted passes, explicit
 * stacks): native call chains of 20,000 frames are legal.
 */
#include "report/report_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static df_errkind invalid(df_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static df_errkind invalid(df_error *err, const char *fmt, ...) {
    char msg[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df__report_fail(err, DF_ERR_INVALID_RANKED_PROFILE, "aggregate_validation", "%s", msg);
}

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "aggregate_validation", "out of memory");
}

df_report_profile *df__report_profile_new(void) {
    df_report_profile *p = df_calloc(1, sizeof *p);
    if (p) df__report_strings_init(&p->strings);
    return p;
}

void df__report_index_free(df_report_index *ix) {
    df_free(ix->sem_by_id);
    df_free(ix->sem_parent);
    df_free(ix->sem_root);
    df_free(ix->sem_depth);
    df_free(ix->child_start);
    df_free(ix->child_list);
    df_free(ix->roots);
    df_free(ix->fn_begin);
    df_free(ix->fn_end);
    df_free(ix->fn_parent);
    df_free(ix->fn_compact_parent);
    df_free(ix->fn_hidden);
    df_free(ix->fn_depth);
    df_free(ix->fchild_start);
    df_free(ix->fchild_list);
    df_free(ix->cchild_start);
    df_free(ix->cchild_list);
    df_free(ix->fn_owner);
    df_free(ix->sem_display);
    df_free(ix->compact_name);
    df_arena_destroy(&ix->arena);
    df__report_strings_free(&ix->derived);
    memset(ix, 0, sizeof *ix);
}

void df_report_profile_destroy(df_report_profile *p) {
    if (!p) return;
    df__report_index_free(&p->ix);
    df_free(p->sems);
    df_free(p->fns);
    df_free(p->lanes);
    df_free(p->intervals);
    df__report_strings_free(&p->strings);
    df_free(p);
}

size_t df_report_semantic_count(const df_report_profile *p) { return p ? p->nsems : 0; }
size_t df_report_function_count(const df_report_profile *p) { return p ? p->nfns : 0; }

/* ------------------------------------------------------------------------ */
/* Lookups.                                                                  */

static int32_t find_sem(const df_report_profile *p, const df_report_index *ix, int64_t id) {
    size_t lo = 0, hi = p->nsems;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->sems[ix->sem_by_id[mid]].semantic_id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->nsems && p->sems[ix->sem_by_id[lo]].semantic_id == id ? (int32_t)ix->sem_by_id[lo] : -1;
}

int32_t df__report_find_semantic(const df_report_profile *p, int64_t semantic_id) {
    return p->ix.built ? find_sem(p, &p->ix, semantic_id) : -1;
}

/* Position of function_id within fns[begin, end) (sorted by function_id), or -1. */
static int32_t find_fn_in(const df_report_profile *p, uint32_t begin, uint32_t end, int64_t fid) {
    size_t lo = begin, hi = end;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->fns[mid].function_id < fid) lo = mid + 1;
        else hi = mid;
    }
    return lo < end && p->fns[lo].function_id == fid ? (int32_t)lo : -1;
}

int32_t df__report_find_function(const df_report_profile *p, int64_t semantic_id, int64_t function_id) {
    int32_t s = df__report_find_semantic(p, semantic_id);
    return s < 0 ? -1 : find_fn_in(p, p->ix.fn_begin[s], p->ix.fn_end[s], function_id);
}

void df__report_health_counters(const df_report_metadata *m, df_report_counter out[DF_REPORT_HEALTH_COUNTERS]) {
    const df_report_counter c[DF_REPORT_HEALTH_COUNTERS] = {
        {"incomplete_operation_root_count", m->incomplete_operation_root_count},
        {"truncation_marker_count", m->truncation_marker_count},
        {"missing_identity_field_count", m->missing_identity_field_count},
        {"missing_terminal_result_count", m->missing_terminal_result_count},
        {"crossing_worker_slice_count", m->crossing_worker_slice_count},
        {"crossing_planning_activity_slice_count", m->crossing_planning_activity_slice_count},
        {"crossing_execution_activity_slice_count", m->crossing_execution_activity_slice_count},
        {"invalid_planning_activity_hierarchy_count", m->invalid_planning_activity_hierarchy_count},
        {"invalid_execution_activity_hierarchy_count", m->invalid_execution_activity_hierarchy_count},
        {"perf_sample_without_callsite_count", m->perf_sample_without_callsite_count},
        {"perf_samples_skipped", m->perf_samples_skipped},
        {"buffer_loss_count", m->buffer_loss_count},
        {"data_source_loss_count", m->data_source_loss_count},
        {"flush_failure_count", m->flush_failure_count}};
    memcpy(out, c, sizeof c);
}

const char *df__report_fn_compact(const df_report_profile *p, const df_report_function *f) {
    const char *full = df__report_str(&p->strings, f->name);
    if (!p->ix.compact_name || f->name >= p->strings.n) return full ? full : "";
    const char *c = df__report_str(&p->ix.derived, p->ix.compact_name[f->name]);
    return c ? c : (full ? full : "");
}

const char *df__report_fn_symbol(const df_report_profile *p, const df_report_function *f, bool full) {
    if (full) {
        const char *s = df__report_str(&p->strings, f->name);
        return s ? s : "";
    }
    return df__report_fn_compact(p, f);
}

/* ------------------------------------------------------------------------ */
/* Metadata and record checks.                                               */

static bool str_is(const df_report_profile *p, uint32_t id, const char *s) {
    const char *v = df__report_str(&p->strings, id);
    return v && strcmp(v, s) == 0;
}

/* Characters (code points) of a valid UTF-8 string. */
static size_t utf8_chars(const char *s, size_t n) { return df_utf8_count((const uint8_t *)s, n); }

static df_errkind check_metadata(const df_report_profile *p, df_error *err) {
    const df_report_metadata *m = &p->meta;
    if (m->schema_version != DF_REPORT_SCHEMA_VERSION)
        return invalid(err, "unsupported ranked schema version %u", m->schema_version);
    if (m->sample_frequency_hz == 0 && m->eligible_sample_count > 0)
        return invalid(err, "profile sample frequency must be greater than zero");
    if (!str_is(p, m->exact_time_unit, DF_REPORT_TIME_UNIT)) return invalid(err, "profile exact time unit must be nanoseconds");
    if (!str_is(p, m->sample_unit, DF_REPORT_SAMPLE_UNIT)) return invalid(err, "profile sample unit must be samples");
    const int64_t counts[] = {
        m->incomplete_operation_root_count, m->truncation_marker_count, m->missing_identity_field_count,
        m->missing_terminal_result_count, m->crossing_worker_slice_count, m->crossing_planning_activity_slice_count,
        m->crossing_execution_activity_slice_count, m->invalid_planning_activity_hierarchy_count,
        m->invalid_execution_activity_hierarchy_count, m->perf_sample_without_callsite_count, m->perf_samples_skipped,
        m->buffer_loss_count, m->data_source_loss_count, m->flush_failure_count, m->eligible_sample_count,
        m->direct_sample_count, m->ambiguous_sample_count, m->unattributed_sample_count,
        m->resolved_function_sample_count, m->unresolved_function_sample_count, m->unwind_error_sample_count,
        m->missing_callstack_sample_count, m->trace_profiler_dropped_sample_count, m->exact_context_sample_count,
        m->ambiguous_parent_count};
    for (size_t i = 0; i < DF_ARRAY_LEN(counts); i++)
        if (counts[i] < 0) return invalid(err, "profile metadata count %zu is negative", i);
    if (m->missing_identity_field_count != 0)
        return invalid(err, "profile has %lld missing identity fields", (long long)m->missing_identity_field_count);
    if (m->crossing_worker_slice_count || m->crossing_planning_activity_slice_count ||
        m->crossing_execution_activity_slice_count || m->invalid_planning_activity_hierarchy_count ||
        m->invalid_execution_activity_hierarchy_count)
        return invalid(err, "profile has crossing or invalid hierarchy slices");
    if (m->semantic_complete && (m->incomplete_operation_root_count || m->truncation_marker_count ||
                                 m->missing_terminal_result_count))
        return invalid(err, "profile cannot be semantically complete with incomplete roots, truncation markers or "
                            "missing results");
    if (m->capture_complete && (!m->semantic_complete || !m->finalization_observed || m->buffer_loss_count ||
                                m->data_source_loss_count || m->flush_failure_count ||
                                m->trace_profiler_dropped_sample_count))
        return invalid(err, "profile cannot be capture-complete with incomplete semantics, missing finalization or "
                            "data loss");
    __int128 sum = (__int128)m->direct_sample_count + m->ambiguous_sample_count + m->unattributed_sample_count;
    if (sum != m->eligible_sample_count)
        return invalid(err, "profile eligible sample count %lld does not equal direct %lld + ambiguous %lld + "
                            "unattributed %lld",
                       (long long)m->eligible_sample_count, (long long)m->direct_sample_count,
                       (long long)m->ambiguous_sample_count, (long long)m->unattributed_sample_count);
    sum = (__int128)m->resolved_function_sample_count + m->unresolved_function_sample_count +
          m->unwind_error_sample_count + m->missing_callstack_sample_count;
    if (sum != m->direct_sample_count)
        return invalid(err, "profile direct sample count %lld does not equal classified native stack count %lld",
                       (long long)m->direct_sample_count, (long long)sum);
    if (m->exact_context_sample_count > m->direct_sample_count)
        return invalid(err, "profile exact-context sample count exceeds its direct sample count");
    return DF_OK;
}

/* Field names of semantic records; the identity fields are named after their debug annotations. */
static const char *sem_field_name(int f) {
    switch (f) {
    case DF_REPORT_S_NAME: return "name";
    case DF_REPORT_S_KIND: return "semantic_kind";
    case DF_REPORT_S_OPERATION_KIND: return df_diag_str_arg_name(DF_DIAG_SARG_OPERATION_KIND);
    case DF_REPORT_S_STAGE_CATEGORY: return df_diag_str_arg_name(DF_DIAG_SARG_STAGE_CATEGORY);
    case DF_REPORT_S_STAGE_NAME: return df_diag_str_arg_name(DF_DIAG_SARG_STAGE_NAME);
    case DF_REPORT_S_ACTIVITY: return df_diag_str_arg_name(DF_DIAG_SARG_ACTIVITY);
    case DF_REPORT_S_TIME_SEMANTICS: return df_diag_str_arg_name(DF_DIAG_SARG_TIME_SEMANTICS);
    case DF_REPORT_S_RESULT: return df_diag_str_arg_name(DF_DIAG_SARG_RESULT);
    case DF_REPORT_S_QUERY_SCOPE: return df_diag_str_arg_name(DF_DIAG_SARG_QUERY_SCOPE);
    case DF_REPORT_S_QUERY_OWNER: return df_diag_str_arg_name(DF_DIAG_SARG_QUERY_OWNER);
    case DF_REPORT_S_WORKER_KIND: return df_diag_str_arg_name(DF_DIAG_SARG_WORKER_KIND);
    }
    return "";
}

/* True if a semantic node of kind `kind` must carry a result once complete. */
static bool result_bearing(const char *kind) {
    return df_diag_semantic_kind_result_bearing(df_diag_semantic_kind_from_name(kind));
}

static df_errkind check_semantic_record(const df_report_profile *p, const df_report_semantic *s, df_error *err) {
    long long id = (long long)s->semantic_id;
    if (s->flags & ~DF_REPORT_SEM_FLAGS_KNOWN) return invalid(err, "semantic ID %lld has unknown flags", id);
    for (int f = 0; f < DF_REPORT_S_COUNT; f++) {
        if (s->str[f] >= p->strings.n) return invalid(err, "semantic ID %lld %s is not a valid string", id, sem_field_name(f));
        if (s->str[f] && utf8_chars(df__report_str(&p->strings, s->str[f]), df__report_strlen(&p->strings, s->str[f])) >
                             DF_REPORT_MAX_FIELD_CHARS)
            return invalid(err, "semantic ID %lld %s exceeds %u characters", id, sem_field_name(f), DF_REPORT_MAX_FIELD_CHARS);
    }
    if (!s->str[DF_REPORT_S_NAME] || !s->str[DF_REPORT_S_KIND] || !s->str[DF_REPORT_S_TIME_SEMANTICS])
        return invalid(err, "semantic ID %lld lacks a name, kind or time semantics", id);
    if (!df__report_semantic_time(df__report_str(&p->strings, s->str[DF_REPORT_S_TIME_SEMANTICS])))
        return invalid(err, "semantic ID %lld time semantics must be wall_clock or lifecycle", id);
    for (int i = 0; i < DF_REPORT_ID_COUNT; i++)
        if (!(s->flags & DF_REPORT_SEM_HAS_ID(i)) && s->ident[i]) return invalid(err, "semantic ID %lld has a value for an absent field", id);
    if (!(s->flags & DF_REPORT_SEM_HAS_PARENT) && s->parent_semantic_id)
        return invalid(err, "semantic ID %lld has a value for an absent parent", id);
    const char *kind = df__report_str(&p->strings, s->str[DF_REPORT_S_KIND]);
    bool bearing = result_bearing(kind);
    if (!(s->flags & DF_REPORT_SEM_COMPLETE)) {
        if (s->end_ns || s->duration_ns || s->str[DF_REPORT_S_RESULT])
            return invalid(err, "semantic ID %lld is incomplete but has an end, duration or result", id);
    } else {
        int64_t d;
        if (s->duration_ns < 0 || __builtin_sub_overflow(s->end_ns, s->start_ns, &d) || d != s->duration_ns)
            return invalid(err, "semantic ID %lld interval is invalid", id);
        if (bearing && !s->str[DF_REPORT_S_RESULT]) return invalid(err, "semantic ID %lld is complete but has no result", id);
    }
    if (s->direct_samples < 0 || s->inclusive_samples < 0) return invalid(err, "semantic ID %lld has a negative count", id);
    __int128 cls = 0;
    for (int c = 0; c < DF_REPORT_STACK_CLASSES; c++) {
        if (s->stack[c] < 0) return invalid(err, "semantic ID %lld has a negative count", id);
        cls += s->stack[c];
    }
    if (cls != s->direct_samples)
        return invalid(err, "semantic ID %lld direct sample count %lld does not equal classified native stack count %lld",
                       id, (long long)s->direct_samples, (long long)cls);
    return DF_OK;
}

/* Module/source strings must already be normalised. */
static df_errkind check_paths(const df_report_profile *p, const df_report_function *f, df_buf *tmp, df_error *err) {
    long long sid = (long long)f->semantic_id, fid = (long long)f->function_id;
    if (f->module_name) {
        const char *m = df__report_str(&p->strings, f->module_name);
        size_t len = df__report_strlen(&p->strings, f->module_name), off, n;
        df__report_module_name(m, len, &off, &n);
        if (off != 0 || n != len) return invalid(err, "function %lld:%lld module name is not normalised", sid, fid);
    }
    if (f->source_file) {
        const char *s = df__report_str(&p->strings, f->source_file);
        size_t len = df__report_strlen(&p->strings, f->source_file);
        if (!df__report_source_path(s, len, tmp) || tmp->len != len || memcmp(tmp->data, s, len) != 0)
            return invalid(err, "function %lld:%lld source path is not normalised", sid, fid);
    }
    return DF_OK;
}

static df_errkind check_function_record(const df_report_profile *p, const df_report_function *f, df_buf *tmp,
                                        df_error *err) {
    long long sid = (long long)f->semantic_id, fid = (long long)f->function_id;
    if (f->flags & ~DF_REPORT_FN_FLAGS_KNOWN) return invalid(err, "function %lld:%lld has unknown flags", sid, fid);
    if (!f->name || f->name >= p->strings.n || f->module_name >= p->strings.n || f->source_file >= p->strings.n)
        return invalid(err, "function %lld:%lld has an invalid string", sid, fid);
    if ((!(f->flags & DF_REPORT_FN_HAS_PARENT) && f->parent_function_id) ||
        (!(f->flags & DF_REPORT_FN_HAS_LINE) && f->line_number))
        return invalid(err, "function %lld:%lld has a value for an absent field", sid, fid);
    if (f->self_samples < 0 || f->inclusive_samples < 0) return invalid(err, "function %lld:%lld has a negative count", sid, fid);
    const uint32_t paths[2] = {f->module_name, f->source_file};
    for (int i = 0; i < 2; i++)
        if (paths[i] && utf8_chars(df__report_str(&p->strings, paths[i]), df__report_strlen(&p->strings, paths[i])) >
                            DF_REPORT_MAX_FIELD_CHARS)
            return invalid(err, "function %lld:%lld path exceeds %u characters", sid, fid, DF_REPORT_MAX_FIELD_CHARS);
    return check_paths(p, f, tmp, err);
}

/* ------------------------------------------------------------------------ */
/* Semantic structure.                                                       */

static int cmp_by_id(const void *pa, const void *pb, void *ctx) {
    const df_report_semantic *s = ctx;
    int64_t a = s[*(const uint32_t *)pa].semantic_id, b = s[*(const uint32_t *)pb].semantic_id;
    return a < b ? -1 : a > b;
}

/* Depth of every node of a forest given by parent[], iteratively; false on a cycle. */
static bool forest_depths(const int32_t *parent, size_t n, uint32_t *depth, uint32_t *path) {
    const uint32_t UNKNOWN = UINT32_MAX, VISITING = UINT32_MAX - 1;
    for (size_t i = 0; i < n; i++) depth[i] = UNKNOWN;
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        int32_t c = (int32_t)i;
        while (c >= 0 && depth[c] == UNKNOWN) {
            depth[c] = VISITING;
            path[len++] = (uint32_t)c;
            c = parent[c];
        }
        if (c >= 0 && depth[c] == VISITING) return false;
        uint32_t d = c >= 0 ? depth[c] + 1 : 0;
        while (len--) depth[path[len]] = d++;
    }
    return true;
}

static df_errkind semantic_structure(const df_report_profile *p, df_report_index *ix, df_error *err) {
    size_t n = p->nsems;
    for (size_t i = 0; i < n; i++) ix->sem_by_id[i] = (uint32_t)i;
    qsort_r(ix->sem_by_id, n, sizeof *ix->sem_by_id, cmp_by_id, p->sems);
    for (size_t i = 1; i < n; i++)
        if (p->sems[ix->sem_by_id[i]].semantic_id == p->sems[ix->sem_by_id[i - 1]].semantic_id)
            return invalid(err, "duplicate semantic ID %lld", (long long)p->sems[ix->sem_by_id[i]].semantic_id);
    for (size_t i = 1; i < n; i++) {
        const df_report_semantic *a = &p->sems[i - 1], *b = &p->sems[i];
        if (a->operation_id > b->operation_id || (a->operation_id == b->operation_id && a->semantic_id > b->semantic_id))
            return invalid(err, "semantic records are not ordered by operation and semantic ID");
    }
    for (size_t i = 0; i < n; i++) {
        const df_report_semantic *s = &p->sems[i];
        ix->sem_parent[i] = -1;
        if (!(s->flags & DF_REPORT_SEM_HAS_PARENT)) continue;
        int32_t par = find_sem(p, ix, s->parent_semantic_id);
        if (par < 0)
            return invalid(err, "semantic ID %lld parent %lld does not exist", (long long)s->semantic_id,
                           (long long)s->parent_semantic_id);
        if (p->sems[par].operation_id != s->operation_id)
            return invalid(err, "semantic ID %lld parent %lld belongs to another operation", (long long)s->semantic_id,
                           (long long)s->parent_semantic_id);
        ix->sem_parent[i] = par;
    }
    uint32_t *path = df_malloc((n ? n : 1) * sizeof *path);
    if (!path) return oom(err);
    bool ok = forest_depths(ix->sem_parent, n, ix->sem_depth, path);
    df_free(path);
    if (!ok) return invalid(err, "semantic hierarchy contains a cycle");
    return DF_OK;
}

/* One root per operation, the only node of kind operation; children lists. */
static df_errkind semantic_roots(const df_report_profile *p, df_report_index *ix, df_error *err) {
    size_t n = p->nsems;
    for (size_t i = 0; i < n; i++) {
        const df_report_semantic *s = &p->sems[i];
        bool is_root = ix->sem_parent[i] < 0, op_kind = str_is(p, s->str[DF_REPORT_S_KIND], df_diag_semantic_kind_name(DF_DIAG_SEM_OPERATION));
        if (is_root != op_kind)
            return invalid(err, "semantic ID %lld %s", (long long)s->semantic_id,
                           is_root ? "is a root but not of kind operation" : "is of kind operation but not a root");
        if (is_root) {
            if (ix->nroots && p->sems[ix->roots[ix->nroots - 1]].operation_id == s->operation_id)
                return invalid(err, "operation %lld has more than one root", (long long)s->operation_id);
            ix->roots[ix->nroots++] = (uint32_t)i;
        }
    }
    /* Operations are contiguous (records sorted by operation): each must start with... its root somewhere. */
    size_t r = 0;
    for (size_t i = 0; i < n; i++) {
        while (r < ix->nroots && p->sems[ix->roots[r]].operation_id < p->sems[i].operation_id) r++;
        if (r == ix->nroots || p->sems[ix->roots[r]].operation_id != p->sems[i].operation_id)
            return invalid(err, "operation %lld has no root", (long long)p->sems[i].operation_id);
        ix->sem_root[i] = (int32_t)ix->roots[r];
    }
    for (size_t i = 0; i < n; i++)
        if (ix->sem_parent[i] >= 0) ix->child_start[ix->sem_parent[i] + 1]++;
    for (size_t i = 0; i < n; i++) ix->child_start[i + 1] += ix->child_start[i];
    uint32_t *fill = df_malloc((n ? n : 1) * sizeof *fill);
    if (!fill) return oom(err);
    memcpy(fill, ix->child_start, n * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        if (ix->sem_parent[i] >= 0) ix->child_list[fill[ix->sem_parent[i]]++] = (uint32_t)i;
    df_free(fill);
    return DF_OK;
}

/* Sample conservation and the inclusive fold over the semantic tree. */
static df_errkind semantic_counts(const df_report_profile *p, df_report_index *ix, df_error *err) {
    size_t n = p->nsems;
    const df_report_metadata *m = &p->meta;
    __int128 direct = 0, cls[DF_REPORT_STACK_CLASSES] = {0};
    for (size_t i = 0; i < n; i++) {
        direct += p->sems[i].direct_samples;
        for (int c = 0; c < DF_REPORT_STACK_CLASSES; c++) cls[c] += p->sems[i].stack[c];
    }
    if (direct != m->direct_sample_count)
        return invalid(err, "semantic direct samples %lld do not equal the profile direct sample count %lld",
                       (long long)direct, (long long)m->direct_sample_count);
    const int64_t want[DF_REPORT_STACK_CLASSES] = {m->resolved_function_sample_count, m->unresolved_function_sample_count,
                                                   m->unwind_error_sample_count, m->missing_callstack_sample_count};
    for (int c = 0; c < DF_REPORT_STACK_CLASSES; c++)
        if (cls[c] != want[c]) return invalid(err, "semantic native stack counts do not equal the profile counts");
    /* Fold: children before parents, by depth descending (iterative). */
    __int128 *inc = df_malloc((n ? n : 1) * sizeof *inc);
    uint32_t *order = df_malloc((n ? n : 1) * sizeof *order), maxd = 0;
    if (!inc || !order) {
        df_free(inc);
        df_free(order);
        return oom(err);
    }
    for (size_t i = 0; i < n; i++) maxd = DF_MAX(maxd, ix->sem_depth[i]);
    uint32_t *cnt = df_calloc((size_t)maxd + 2, sizeof *cnt);
    if (!cnt) {
        df_free(inc);
        df_free(order);
        return oom(err);
    }
    for (size_t i = 0; i < n; i++) cnt[ix->sem_depth[i] + 1]++, inc[i] = p->sems[i].direct_samples;
    for (uint32_t d = 1; d <= maxd + 1; d++) cnt[d] += cnt[d - 1];
    for (size_t i = 0; i < n; i++) order[cnt[ix->sem_depth[i]]++] = (uint32_t)i;
    df_errkind k = DF_OK;
    for (size_t j = n; j-- > 0;) {
        uint32_t i = order[j];
        if (inc[i] != p->sems[i].inclusive_samples) {
            k = invalid(err, "semantic ID %lld inclusive sample count %lld does not equal the fold %lld",
                        (long long)p->sems[i].semantic_id, (long long)p->sems[i].inclusive_samples, (long long)inc[i]);
            break;
        }
        if (ix->sem_parent[i] >= 0) inc[ix->sem_parent[i]] += inc[i];
    }
    df_free(inc);
    df_free(order);
    df_free(cnt);
    return k;
}

/* incomplete_operation_root_count and missing_terminal_result_count must match the records. */
static df_errkind recomputed_counts(const df_report_profile *p, const df_report_index *ix, df_error *err) {
    int64_t incomplete = 0, missing = 0;
    for (uint32_t r = 0; r < ix->nroots; r++)
        if (!(p->sems[ix->roots[r]].flags & DF_REPORT_SEM_COMPLETE)) incomplete++;
    for (size_t i = 0; i < p->nsems; i++) {
        const df_report_semantic *s = &p->sems[i];
        const char *kind = df__report_str(&p->strings, s->str[DF_REPORT_S_KIND]);
        bool bearing = result_bearing(kind);
        if (bearing && !s->str[DF_REPORT_S_RESULT]) missing++;
    }
    if (incomplete != p->meta.incomplete_operation_root_count)
        return invalid(err, "profile incomplete operation root count %lld does not equal the recomputed %lld",
                       (long long)p->meta.incomplete_operation_root_count, (long long)incomplete);
    if (missing != p->meta.missing_terminal_result_count)
        return invalid(err, "profile missing terminal result count %lld does not equal the recomputed %lld",
                       (long long)p->meta.missing_terminal_result_count, (long long)missing);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Functions.                                                                */

static df_errkind function_ranges(const df_report_profile *p, df_report_index *ix, df_error *err) {
    df_buf tmp;
    df_buf_init(&tmp, 0);
    for (size_t i = 0; i < p->nfns; i++) {
        const df_report_function *f = &p->fns[i];
        df_errkind k = check_function_record(p, f, &tmp, err);
        if (k == DF_OK && i > 0) {
            const df_report_function *g = &p->fns[i - 1];
            if (g->semantic_id > f->semantic_id || (g->semantic_id == f->semantic_id && g->function_id >= f->function_id))
                k = g->semantic_id == f->semantic_id && g->function_id == f->function_id
                        ? invalid(err, "duplicate function %lld:%lld", (long long)f->semantic_id, (long long)f->function_id)
                        : invalid(err, "function records are not ordered by semantic and function ID");
        }
        if (k != DF_OK) {
            df_buf_free(&tmp);
            return k;
        }
    }
    df_buf_free(&tmp);
    for (size_t s = 0; s < p->nsems; s++) ix->fn_begin[s] = ix->fn_end[s] = 0;
    for (size_t i = 0; i < p->nfns;) {
        int64_t sid = p->fns[i].semantic_id;
        int32_t s = find_sem(p, ix, sid);
        if (s < 0) return invalid(err, "function %lld:%lld owner semantic %lld does not exist", (long long)sid,
                                  (long long)p->fns[i].function_id, (long long)sid);
        size_t j = i;
        while (j < p->nfns && p->fns[j].semantic_id == sid) ix->fn_owner[j++] = (uint32_t)s;
        ix->fn_begin[s] = (uint32_t)i;
        ix->fn_end[s] = (uint32_t)j;
        i = j;
    }
    return DF_OK;
}

static df_errkind function_parents(const df_report_profile *p, df_report_index *ix, df_error *err) {
    for (size_t i = 0; i < p->nfns; i++) {
        const df_report_function *f = &p->fns[i];
        ix->fn_parent[i] = -1;
        if (!(f->flags & DF_REPORT_FN_HAS_PARENT)) continue;
        uint32_t s = ix->fn_owner[i];
        int32_t par = find_fn_in(p, ix->fn_begin[s], ix->fn_end[s], f->parent_function_id);
        if (par < 0) {
            bool elsewhere = false;
            for (size_t j = 0; j < p->nfns && !elsewhere; j++) elsewhere = p->fns[j].function_id == f->parent_function_id;
            return invalid(err, "function %lld:%lld parent %lld %s", (long long)f->semantic_id,
                           (long long)f->function_id, (long long)f->parent_function_id,
                           elsewhere ? "exists only under another semantic node" : "does not exist");
        }
        ix->fn_parent[i] = par;
    }
    uint32_t *path = df_malloc((p->nfns ? p->nfns : 1) * sizeof *path);
    if (!path) return oom(err);
    bool ok = forest_depths(ix->fn_parent, p->nfns, ix->fn_depth, path);
    df_free(path);
    return ok ? DF_OK : invalid(err, "function call tree contains a cycle");
}

/* Builds a CSR of children from a parent array (entries with parent -1 or hidden are skipped). */
static bool children_csr(const int32_t *parent, const uint8_t *hidden, size_t n, uint32_t **start, uint32_t **list) {
    *start = df_calloc(n + 1, sizeof **start);
    *list = df_malloc((n ? n : 1) * sizeof **list);
    uint32_t *fill = df_malloc((n ? n : 1) * sizeof *fill);
    if (!*start || !*list || !fill) {
        df_free(fill);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (parent[i] >= 0 && !(hidden && hidden[i])) (*start)[parent[i] + 1]++;
    for (size_t i = 0; i < n; i++) (*start)[i + 1] += (*start)[i];
    memcpy(fill, *start, n * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        if (parent[i] >= 0 && !(hidden && hidden[i])) (*list)[fill[parent[i]]++] = (uint32_t)i;
    df_free(fill);
    return true;
}

/* Self-sum, inclusive fold and compaction, children before parents. */
static df_errkind function_counts(const df_report_profile *p, df_report_index *ix, df_error *err) {
    size_t n = p->nfns;
    if (!children_csr(ix->fn_parent, NULL, n, &ix->fchild_start, &ix->fchild_list)) return oom(err);
    uint32_t maxd = 0;
    for (size_t i = 0; i < n; i++) maxd = DF_MAX(maxd, ix->fn_depth[i]);
    uint32_t *cnt = df_calloc((size_t)maxd + 2, sizeof *cnt), *order = df_malloc((n ? n : 1) * sizeof *order);
    __int128 *inc = df_malloc((n ? n : 1) * sizeof *inc);
    df_errkind k = cnt && order && inc ? DF_OK : oom(err);
    for (size_t i = 0; k == DF_OK && i < n; i++) cnt[ix->fn_depth[i] + 1]++, inc[i] = p->fns[i].self_samples;
    for (uint32_t d = 1; k == DF_OK && d <= maxd + 1; d++) cnt[d] += cnt[d - 1];
    for (size_t i = 0; k == DF_OK && i < n; i++) order[cnt[ix->fn_depth[i]]++] = (uint32_t)i;
    for (size_t j = n; k == DF_OK && j-- > 0;) {
        uint32_t i = order[j];
        const df_report_function *f = &p->fns[i];
        if (inc[i] != f->inclusive_samples)
            k = invalid(err, "function %lld:%lld inclusive sample count %lld does not equal the fold %lld",
                        (long long)f->semantic_id, (long long)f->function_id, (long long)f->inclusive_samples,
                        (long long)inc[i]);
        else if (ix->fn_parent[i] >= 0)
            inc[ix->fn_parent[i]] += inc[i];
    }
    /* Compaction top-down (parents first): collapsed = zero self, one child with equal inclusive. */
    for (size_t j = 0; k == DF_OK && j < n; j++) {
        uint32_t i = order[j];
        const df_report_function *f = &p->fns[i];
        uint32_t nc = ix->fchild_start[i + 1] - ix->fchild_start[i];
        ix->fn_hidden[i] = f->self_samples == 0 && nc == 1 &&
                           p->fns[ix->fchild_list[ix->fchild_start[i]]].inclusive_samples == f->inclusive_samples;
        int32_t par = ix->fn_parent[i];
        ix->fn_compact_parent[i] = par < 0 ? -1 : ix->fn_hidden[par] ? ix->fn_compact_parent[par] : par;
    }
    df_free(cnt);
    df_free(order);
    df_free(inc);
    if (k != DF_OK) return k;
    if (!children_csr(ix->fn_compact_parent, ix->fn_hidden, n, &ix->cchild_start, &ix->cchild_list)) return oom(err);
    /* Σ self per node = its captured native stacks. */
    for (size_t s = 0; s < p->nsems; s++) {
        __int128 self = 0;
        for (uint32_t i = ix->fn_begin[s]; i < ix->fn_end[s]; i++) self += p->fns[i].self_samples;
        const df_report_semantic *sem = &p->sems[s];
        __int128 captured = (__int128)sem->stack[DF_REPORT_STACK_RESOLVED] + sem->stack[DF_REPORT_STACK_UNRESOLVED];
        if (self != captured)
            return invalid(err, "semantic ID %lld function self samples %lld do not equal its captured native stacks %lld",
                           (long long)sem->semantic_id, (long long)self, (long long)captured);
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Lanes.                                                                    */

static df_errkind check_lanes(const df_report_profile *p, df_error *err) {
    if (p->nlanes > DF_REPORT_MAX_LANES || p->nintervals > DF_REPORT_MAX_INTERVALS)
        return invalid(err, "profile has too many worker lanes or intervals");
    for (size_t i = 0; i < p->nlanes; i++) {
        const df_report_lane *l = &p->lanes[i];
        if (i > 0) {
            const df_report_lane *m = &p->lanes[i - 1];
            if (m->operation_id > l->operation_id ||
                (m->operation_id == l->operation_id && (m->query_execution_id > l->query_execution_id ||
                                                        (m->query_execution_id == l->query_execution_id &&
                                                         m->worker_lane_id >= l->worker_lane_id))))
                return invalid(err, "worker lanes are not ordered or not unique");
        }
        if (l->worker_kind >= p->strings.n || l->busy_ns < 0 || l->activity_count < 0 ||
            l->interval_count > DF_REPORT_LANE_INTERVALS || l->first_interval > p->nintervals ||
            l->interval_count > p->nintervals - l->first_interval)
            return invalid(err, "worker lane %lld is invalid", (long long)l->worker_lane_id);
        int64_t prev = INT64_MIN;
        for (uint32_t k = 0; k < l->interval_count; k++) {
            const df_report_interval *v = &p->intervals[l->first_interval + k];
            if (v->start_ns > v->end_ns || v->start_ns < prev) return invalid(err, "worker lane intervals are invalid");
            prev = v->end_ns;
        }
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Display names and compact symbols.                                        */

df_errkind df__report_display_name(const df_report_profile *p, const df_report_semantic *s, df_buf *out) {
    df_buf_reset(out);
    const char *name = df__report_sem_str(p, s, DF_REPORT_S_NAME);
    const char *kind = df__report_sem_str(p, s, DF_REPORT_S_KIND);
    const char *stage = df__report_sem_str(p, s, DF_REPORT_S_STAGE_NAME);
    const char *owner = df__report_sem_str(p, s, DF_REPORT_S_QUERY_OWNER);
    char num[48];
    const char *qual = NULL;
    df_diag_semantic_kind k = df_diag_semantic_kind_from_name(kind);
    if (k == DF_DIAG_SEM_OPERATION) {
        snprintf(num, sizeof num, "operation %lld", (long long)s->operation_id);
        qual = num;
    } else if (df_diag_stage_from_name(stage) == DF_DIAG_STAGE_EXECUTE_OUTPUT &&
               (s->flags & DF_REPORT_SEM_HAS_ID(DF_REPORT_ID_OWNER))) {
        snprintf(num, sizeof num, "output %lld", (long long)s->ident[DF_REPORT_ID_OWNER]);
        qual = num;
    } else if ((k == DF_DIAG_SEM_QUERY || k == DF_DIAG_SEM_QUERY_PLANNING) && owner && *owner) {
        qual = owner;
    }
    if (!name) name = "";
    if (!qual) return df_buf_append_str(out, name, NULL);
    size_t qlen = strlen(qual), qchars = utf8_chars(qual, qlen), max = DF_REPORT_MAX_FIELD_CHARS;
    /* Bounded to 512 characters: the qualifier wins when it alone is too long. */
    if (qchars > max - 3) return df_buf_append(out, qual, df_utf8_prefix((const uint8_t *)qual, qlen, max), NULL);
    size_t keep = max - qchars - 3;
    DF_TRY(df_buf_append(out, name, df_utf8_prefix((const uint8_t *)name, strlen(name), keep), NULL));
    DF_TRY(df_buf_printf(out, NULL, " (%s)", qual));
    return DF_OK;
}

static df_errkind derived_names(const df_report_profile *p, df_report_index *ix, df_error *err) {
    df_buf tmp;
    df_buf_init(&tmp, 0);
    df_arena_init(&ix->arena, 64 * 1024, 0);
    for (size_t i = 0; i < p->nsems; i++) {
        if (df__report_display_name(p, &p->sems[i], &tmp) != DF_OK ||
            !(ix->sem_display[i] = df_arena_strndup(&ix->arena, tmp.data ? tmp.data : "", tmp.len))) {
            df_buf_free(&tmp);
            return oom(err);
        }
    }
    df__report_strings_init(&ix->derived);
    for (size_t i = 0; i < p->nfns; i++) {
        uint32_t id = p->fns[i].name;
        if (ix->compact_name[id]) continue;
        if (df__report_compact_symbol(df__report_str(&p->strings, id), df__report_strlen(&p->strings, id), &tmp) != DF_OK ||
            !(ix->compact_name[id] = df__report_intern(&ix->derived, tmp.data ? tmp.data : "", tmp.len))) {
            df_buf_free(&tmp);
            return oom(err);
        }
    }
    df__report_strings_seal(&ix->derived);
    df_buf_free(&tmp);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Entry points.                                                             */

static bool alloc_index(const df_report_profile *p, df_report_index *ix) {
    size_t n = p->nsems ? p->nsems : 1, m = p->nfns ? p->nfns : 1;
    ix->sem_by_id = df_malloc(n * sizeof *ix->sem_by_id);
    ix->sem_parent = df_malloc(n * sizeof *ix->sem_parent);
    ix->sem_root = df_malloc(n * sizeof *ix->sem_root);
    ix->sem_depth = df_malloc(n * sizeof *ix->sem_depth);
    ix->child_start = df_calloc(n + 1, sizeof *ix->child_start);
    ix->child_list = df_malloc(n * sizeof *ix->child_list);
    ix->roots = df_malloc(n * sizeof *ix->roots);
    ix->fn_begin = df_calloc(n, sizeof *ix->fn_begin);
    ix->fn_end = df_calloc(n, sizeof *ix->fn_end);
    ix->fn_parent = df_malloc(m * sizeof *ix->fn_parent);
    ix->fn_compact_parent = df_malloc(m * sizeof *ix->fn_compact_parent);
    ix->fn_hidden = df_calloc(m, sizeof *ix->fn_hidden);
    ix->fn_depth = df_malloc(m * sizeof *ix->fn_depth);
    ix->fn_owner = df_malloc(m * sizeof *ix->fn_owner);
    ix->sem_display = df_calloc(n, sizeof *ix->sem_display);
    ix->compact_name = df_calloc(p->strings.n ? p->strings.n : 1, sizeof *ix->compact_name);
    return ix->sem_by_id && ix->sem_parent && ix->sem_root && ix->sem_depth && ix->child_start && ix->child_list &&
           ix->roots && ix->fn_begin && ix->fn_end && ix->fn_parent && ix->fn_compact_parent && ix->fn_hidden &&
           ix->fn_depth && ix->fn_owner && ix->sem_display && ix->compact_name;
}

df_errkind df__report_index_compute(const df_report_profile *p, df_report_index *ix, df_error *err) {
    memset(ix, 0, sizeof *ix);
    if (p->nsems == 0) return invalid(err, "profile has no semantic records");
    if (p->nsems > DF_REPORT_MAX_SEMANTICS)
        return invalid(err, "profile has %zu semantic records, exceeding the %u record limit", p->nsems, DF_REPORT_MAX_SEMANTICS);
    if (p->nfns > DF_REPORT_MAX_FUNCTIONS)
        return invalid(err, "profile has %zu function records, exceeding the %u record limit", p->nfns, DF_REPORT_MAX_FUNCTIONS);
    df_errkind k = check_metadata(p, err);
    for (size_t i = 0; k == DF_OK && i < p->nsems; i++) k = check_semantic_record(p, &p->sems[i], err);
    if (k == DF_OK && !alloc_index(p, ix)) k = oom(err);
    if (k == DF_OK) k = semantic_structure(p, ix, err);
    if (k == DF_OK) k = semantic_roots(p, ix, err);
    if (k == DF_OK) k = recomputed_counts(p, ix, err);
    if (k == DF_OK) k = semantic_counts(p, ix, err);
    if (k == DF_OK) k = function_ranges(p, ix, err);
    if (k == DF_OK) k = function_parents(p, ix, err);
    if (k == DF_OK) k = function_counts(p, ix, err);
    if (k == DF_OK) k = check_lanes(p, err);
    if (k == DF_OK) k = derived_names(p, ix, err);
    if (k != DF_OK) {
        df__report_index_free(ix);
        return k;
    }
    ix->built = true;
    return DF_OK;
}

df_errkind df__report_index_build(df_report_profile *p, df_error *err) {
    df__report_index_free(&p->ix);
    return df__report_index_compute(p, &p->ix, err);
}

df_errkind df_report_validate(const df_report_profile *p, df_error *err) {
    if (!p) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no profile");
    df_report_index ix;
    df_errkind k = df__report_index_compute(p, &ix, err);
    if (k == DF_OK) df__report_index_free(&ix);
    return k;
}
