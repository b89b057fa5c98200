/*
 * Side-by-side comparison of two ranked profiles, for regression hunting.
 *
 * Semantic nodes are matched by their path of names from the operation
 * root.  A path component is the node's name plus what makes it distinct:
 * the operation kind and ordinal for roots ("preview #1"), the output owner
 * for owner stages, the query owner for query nodes.  Siblings with the
 * same component (per-batch stages, one await per batch) fold into one row
 * with a count, a total exact duration and summed samples, so runs with
 * different batch counts still line up.  Native functions are matched by
 * full symbol within a matched semantic path: self samples sum over every
 * call path, inclusive samples count each sample once per symbol (the
 * outermost occurrence on a path), so recursion does not double count.
 *
 * The page reuses the report stylesheet and carries its data as JSON for
 * src/report/diff.js (sortable, filterable, expandable treegrid).
 */
#include "report/report_int.h"

#include "report/report_assets.h"

#include <stdio.h>
#include <stdlib.h>

#define DIFF_MAX_ROWS 300000u

/* One aggregated row (a semantic path or a function within one). */
typedef struct drow {
    uint32_t key;          /* path string id in the diff's table */
    int32_t parent;        /* parent row, -1 */
    uint32_t label;        /* component / symbol string id */
    uint8_t is_fn;         /* function row */
    uint8_t pad[3];
    int64_t count[2];      /* nodes folded in (semantic rows) */
    int64_t dur[2];        /* total exact duration of complete nodes */
    int64_t incomplete[2]; /* incomplete nodes folded in */
    int64_t direct[2];     /* direct samples (semantic) / self samples (function) */
    int64_t inclusive[2];  /* inclusive samples */
} drow;

typedef struct dctx {
    df_report_strings keys;   /* path keys and labels */
    drow *rows;
    size_t nrows, cap;
    uint32_t *by_key;         /* key string id -> row + 1 */
    size_t by_key_cap;
} dctx;

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "output", "out of memory rendering the diff");
}

/* The row of `key` (created with `parent`/`label` if new); -1 on OOM or over the row cap. */
static int32_t row_for(dctx *d, const char *key, size_t klen, int32_t parent, const char *label, bool is_fn) {
    uint32_t kid = df__report_intern(&d->keys, key, klen);
    if (!kid) return -1;
    if (DF_ARRAY_RESERVE_ZEROED(d->by_key, d->by_key_cap, (size_t)kid + 1, 1024, NULL)) return -1;
    if (d->by_key[kid]) return (int32_t)d->by_key[kid] - 1;
    if (d->nrows >= DIFF_MAX_ROWS) return -1;
    if (DF_ARRAY_RESERVE(d->rows, d->cap, d->nrows + 1, 1024, NULL)) return -1;
    uint32_t lid = df__report_intern(&d->keys, label, strlen(label));
    if (!lid) return -1;
    d->rows[d->nrows] = (drow){.key = kid, .parent = parent, .label = lid, .is_fn = is_fn};
    d->by_key[kid] = (uint32_t)++d->nrows;
    return (int32_t)d->nrows - 1;
}

/* Path component of a semantic node (roots get their kind and ordinal). */
static df_errkind component(const df_report_profile *p, size_t pos, uint32_t ordinal, df_buf *out) {
    const df_report_semantic *s = &p->sems[pos];
    df_buf_reset(out);
    const char *name = df__report_sem_str(p, s, DF_REPORT_S_NAME);
    DF_TRY(df_buf_append_str(out, name ? name : "", NULL));
    if (p->ix.sem_parent[pos] < 0) return df_buf_printf(out, NULL, " #%u", ordinal);
    if (s->flags & DF_REPORT_SEM_HAS_ID(DF_REPORT_ID_OWNER))
        DF_TRY(df_buf_printf(out, NULL, " [output %lld]", (long long)s->ident[DF_REPORT_ID_OWNER]));
    const char *owner = df__report_sem_str(p, s, DF_REPORT_S_QUERY_OWNER);
    if (owner && *owner) DF_TRY(df_buf_printf(out, NULL, " (%s)", owner));
    return DF_OK;
}

/* Folds the functions of semantic position s of profile `side` under row `parent`. */
static df_errkind fold_functions(dctx *d, const df_report_profile *p, int side, size_t s, int32_t parent,
                                 const char *pkey, df_buf *key, df_error *err) {
    const df_report_index *ix = &p->ix;
    uint32_t b = ix->fn_begin[s], e = ix->fn_end[s];
    if (b == e) return DF_OK;
    /* Count of each name on the current call path: an iterative DFS over this node's call tree. */
    uint32_t *onpath = df_calloc(p->strings.n + 1, sizeof *onpath), *stack = df_malloc((e - b) * 2 * sizeof *stack);
    if (!onpath || !stack) {
        df_free(onpath);
        df_free(stack);
        return oom(err);
    }
    size_t sp = 0;
    for (uint32_t i = b; i < e; i++)
        if (ix->fn_parent[i] < 0) stack[sp++] = i << 1;
    df_errkind k = DF_OK;
    while (sp && k == DF_OK) {
        uint32_t v = stack[--sp], i = v >> 1;
        const df_report_function *f = &p->fns[i];
        if (v & 1) { /* leaving */
            onpath[f->name]--;
            continue;
        }
        const char *sym = df__report_str(&p->strings, f->name);
        df_buf_reset(key);
        if (df_buf_printf(key, NULL, "%s\x1f" "f:%s", pkey, sym) != DF_OK) {
            k = oom(err);
            break;
        }
        int32_t r = row_for(d, key->data, key->len, parent, sym, true);
        if (r == -1 && d->nrows < DIFF_MAX_ROWS) {
            k = oom(err);
            break;
        }
        if (r >= 0) {
            d->rows[r].direct[side] += f->self_samples;
            if (onpath[f->name] == 0) d->rows[r].inclusive[side] += f->inclusive_samples;
        }
        onpath[f->name]++;
        stack[sp++] = v | 1;
        for (uint32_t c = ix->fchild_start[i]; c < ix->fchild_start[i + 1]; c++) stack[sp++] = ix->fchild_list[c] << 1;
    }
    df_free(onpath);
    df_free(stack);
    return k;
}

/* Folds every semantic node of one profile into the rows (parents before children: depth order). */
static df_errkind fold_profile(dctx *d, const df_report_profile *p, int side, df_error *err) {
    const df_report_index *ix = &p->ix;
    size_t n = p->nsems;
    int32_t *row_of = df_malloc((n ? n : 1) * sizeof *row_of);
    char **key_of = df_calloc(n ? n : 1, sizeof *key_of);
    uint32_t *order = df_malloc((n ? n : 1) * sizeof *order);
    df_buf comp, key;
    df_buf_init(&comp, 0);
    df_buf_init(&key, 0);
    df_errkind k = row_of && key_of && order ? DF_OK : oom(err);
    /* Breadth-first from the roots gives parents before children. */
    size_t head = 0, tail = 0;
    for (uint32_t r = 0; k == DF_OK && r < ix->nroots; r++) order[tail++] = ix->roots[r];
    while (k == DF_OK && head < tail) {
        uint32_t s = order[head++];
        for (uint32_t c = ix->child_start[s]; c < ix->child_start[s + 1]; c++) order[tail++] = ix->child_list[c];
    }
    /* Root ordinals per root name, in document (operation) order. */
    for (size_t i = 0; k == DF_OK && i < tail; i++) {
        uint32_t s = order[i], ordinal = 1;
        if (ix->sem_parent[s] < 0)
            for (uint32_t r = 0; r < ix->nroots && ix->roots[r] != s; r++)
                ordinal += p->sems[ix->roots[r]].str[DF_REPORT_S_NAME] == p->sems[s].str[DF_REPORT_S_NAME];
        int32_t par = ix->sem_parent[s];
        const char *pkey = par >= 0 ? key_of[par] : "";
        df_buf_reset(&key);
        if (component(p, s, ordinal, &comp) != DF_OK ||
            df_buf_printf(&key, NULL, "%s\x1e%s", pkey, comp.data ? comp.data : "") != DF_OK) {
            k = oom(err);
            break;
        }
        int32_t r = row_for(d, key.data, key.len, par >= 0 ? row_of[par] : -1, comp.data ? comp.data : "", false);
        key_of[s] = df_buf_take(&key);
        row_of[s] = r;
        if (!key_of[s] || (r == -1 && d->nrows < DIFF_MAX_ROWS)) {
            k = oom(err);
            break;
        }
        if (r < 0) continue;
        const df_report_semantic *sem = &p->sems[s];
        drow *dr = &d->rows[r];
        dr->count[side]++;
        if (sem->flags & DF_REPORT_SEM_COMPLETE) dr->dur[side] += sem->duration_ns;
        else dr->incomplete[side]++;
        dr->direct[side] += sem->direct_samples;
        dr->inclusive[side] += sem->inclusive_samples;
        k = fold_functions(d, p, side, s, r, key_of[s], &key, err);
    }
    for (size_t i = 0; key_of && i < n; i++) df_free(key_of[i]);
    df_free(key_of);
    df_free(row_of);
    df_free(order);
    df_buf_free(&comp);
    df_buf_free(&key);
    return k;
}

static df_errkind side_summary(df_buf *b, const df_report_profile *p, const char *label) {
    int64_t total = 0;
    for (uint32_t r = 0; r < p->ix.nroots; r++) total += p->sems[p->ix.roots[r]].duration_ns;
    DF_TRY(df_buf_append_str(b, "{\"label\":", NULL));
    DF_TRY(df__report_json_string(b, label, strlen(label)));
    return df_buf_printf(b, NULL,
                         ",\"operations\":%u,\"root_duration_ns\":%lld,\"sample_frequency_hz\":%u,"
                         "\"eligible_sample_count\":%lld,\"direct_sample_count\":%lld,\"capture_complete\":%s}",
                         p->ix.nroots, (long long)total, p->meta.sample_frequency_hz,
                         (long long)p->meta.eligible_sample_count, (long long)p->meta.direct_sample_count,
                         p->meta.capture_complete ? "true" : "false");
}

static df_errkind diff_json(df_buf *b, const dctx *d, const df_report_profile *pa, const df_report_profile *pb,
                            const char *la, const char *lb) {
    DF_TRY(df_buf_append_str(b, "{\"format\":1,\"sides\":[", NULL));
    DF_TRY(side_summary(b, pa, la));
    DF_TRY(df_buf_append_char(b, ',', NULL));
    DF_TRY(side_summary(b, pb, lb));
    DF_TRY(df_buf_append_str(b, "],\n\"rows\":[", NULL));
    for (size_t i = 0; i < d->nrows; i++) {
        const drow *r = &d->rows[i];
        DF_TRY(df_buf_append_str(b, i ? ",\n[" : "\n[", NULL));
        const char *label = df__report_str(&d->keys, r->label);
        DF_TRY(df__report_json_string(b, label, strlen(label)));
        DF_TRY(df_buf_printf(b, NULL, ",%d,%d", r->parent, r->is_fn ? 1 : 0));
        for (int s = 0; s < 2; s++)
            DF_TRY(df_buf_printf(b, NULL, ",%lld,%lld,%lld,%lld,%lld", (long long)r->count[s], (long long)r->dur[s],
                                 (long long)r->incomplete[s], (long long)r->direct[s], (long long)r->inclusive[s]));
        DF_TRY(df_buf_append_char(b, ']', NULL));
    }
    return df_buf_printf(b, NULL, "],\n\"truncated\":%s}", d->nrows >= DIFF_MAX_ROWS ? "true" : "false");
}

static const char DIFF_BODY[] =
    "<header class=\"page-header\">\n<h1>Delta Funnel profile comparison</h1>\n"
    "<p class=\"intro\">Two ranked profiles side by side. Semantic rows are matched by their path of names from the "
    "operation root; repeated siblings (per-batch stages, scan-output waits) are folded into one row with a count "
    "and a total exact duration. Function rows compare sampled on-CPU samples of the same native symbol under the "
    "same semantic path. Sample counts depend on run length and sample frequency: compare the shares of direct "
    "samples when the runs differ.</p>\n</header>\n<main>\n"
    "<div id=\"summary\" role=\"status\" class=\"cards\"></div>\n"
    "<section aria-labelledby=\"diff-heading\">\n<h2 id=\"diff-heading\">Operations</h2>\n"
    "<div class=\"controls\" role=\"search\">\n<label for=\"diff-filter\">Filter rows</label>\n"
    "<input id=\"diff-filter\" type=\"search\" maxlength=\"200\" placeholder=\"Name or symbol\" autocomplete=\"off\" "
    "spellcheck=\"false\">\n<label class=\"check\"><input id=\"changed-only\" type=\"checkbox\"> Only rows present in one "
    "profile or changed by at least 10%</label>\n<output id=\"diff-status\" aria-live=\"polite\"></output>\n</div>\n"
    "<table id=\"diff-tree\" role=\"treegrid\" aria-label=\"Profile comparison\">\n<thead><tr>\n"
    "<th scope=\"col\" data-sort=\"name\"><button type=\"button\" class=\"sort\">Name</button></th>\n"
    "<th scope=\"col\" data-sort=\"durA\"><button type=\"button\" class=\"sort\">Duration A</button></th>\n"
    "<th scope=\"col\" data-sort=\"durB\"><button type=\"button\" class=\"sort\">Duration B</button></th>\n"
    "<th scope=\"col\" data-sort=\"durDelta\"><button type=\"button\" class=\"sort\">Duration change</button></th>\n"
    "<th scope=\"col\" data-sort=\"smpA\"><button type=\"button\" class=\"sort\">Samples A</button></th>\n"
    "<th scope=\"col\" data-sort=\"smpB\"><button type=\"button\" class=\"sort\">Samples B</button></th>\n"
    "<th scope=\"col\" data-sort=\"smpDelta\"><button type=\"button\" class=\"sort\">Share change</button></th>\n"
    "</tr></thead>\n<tbody id=\"diff-rows\"></tbody>\n</table>\n"
    "<p id=\"diff-limit\" class=\"note\" hidden></p>\n</section>\n</main>\n";

df_errkind df_report_render_diff_html(const df_report_profile *a, const df_report_profile *b, const char *label_a,
                                      const char *label_b, df_buf *out, df_error *err) {
    if (!a || !b || !a->ix.built || !b->ix.built) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "profiles are not indexed");
    dctx d;
    memset(&d, 0, sizeof d);
    df__report_strings_init(&d.keys);
    df_errkind k = fold_profile(&d, a, 0, err);
    if (k == DF_OK) k = fold_profile(&d, b, 1, err);
    if (k == DF_OK) {
        df_buf *o = out;
        size_t start = o->len;
        bool ok = df_buf_append_str(o, df__report_asset_page_head, NULL) == DF_OK;
        if (ok) { /* the comparison page has its own title */
            char *t = strstr(o->data + start, "<title>Delta Funnel profile report</title>");
            if (t) memcpy(t + 7, "Delta Funnel profile diff  ", 27);
        }
        ok = ok && df_buf_append_str(o, df__report_asset_viewer_css, NULL) == DF_OK &&
                  df_buf_append_str(o, "</style>\n</head>\n<body>\n", NULL) == DF_OK &&
                  df_buf_append_str(o, DIFF_BODY, NULL) == DF_OK &&
                  df_buf_append_str(o, "<script id=\"diff-data\" type=\"application/json\">", NULL) == DF_OK &&
                  diff_json(o, &d, a, b, label_a ? label_a : "A", label_b ? label_b : "B") == DF_OK &&
                  df_buf_append_str(o, "</script>\n<script>\n", NULL) == DF_OK &&
                  df_buf_append_str(o, df__report_asset_diff_js, NULL) == DF_OK &&
                  df_buf_append_str(o, "</script>\n</body>\n</html>\n", NULL) == DF_OK;
        if (!ok) k = oom(err);
    }
    df__report_strings_free(&d.keys);
    df_free(d.rows);
    df_free(d.by_key);
    return k;
}
