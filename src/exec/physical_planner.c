/*
 * Physical planning: optimized logical plan -> tree of df_pnode, deciding
 * partitioning and where exchanges go.
 *
 *   scan        min(units, target_partitions) partitions
 *   filter, projection      keep their input's partitioning
 *   limit       per-partition local limits -> coalesce -> global limit
 *   sort        per-partition sorts (with the top-k fetch) -> k-way
 *               sort-preserving merge
 *   aggregate   partial aggregates per partition -> coalesce -> final
 *               aggregate; a single aggregate when the input has one
 *               partition or an aggregate needs all rows (DISTINCT)
 *   join        build side coalesced and hashed once, probe side keeps
 *               its partitions (probe side = the preserved side of outer
 *               joins; FULL joins probe on one partition)
 *   union all   concatenation of its inputs' partitions
 *   window      input planned with one partition (scan order kept), then
 *               WindowAggExec
 * The root is coalesced to one partition for the consumer.
 */
#include "exec/exec_int.h"

bool df__is_exchange(const df_pnode *n);
bool df__is_merge(const df_pnode *n);

static df_errkind plan_node(const df_lnode *n, df_exec_ctx *ctx, df_pnode **out, df_error *err);

static df_errkind schema_of(const df_lnode *n, df_schema **out, df_error *err) {
    return df__exec_schema_from_cols(n->cols, n->ncols, out, err);
}

/* Coalesces `in` to one partition (consumes in). */
static df_errkind single(df_pnode *in, df_pnode **out, df_error *err) {
    if (in->partitions <= 1) {
        *out = in;
        return DF_OK;
    }
    return df__op_coalesce_new(in, out, err);
}

static df_errkind plan_limit(const df_lnode *n, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    df_pnode *in;
    DF_TRY(plan_node(n->inputs[0], ctx, &in, err));
    if (in->partitions > 1) {
        DF_TRY(df__op_limit_new(in, n->u.limit.skip, n->u.limit.fetch, false, &in, err));
        DF_TRY(df__op_coalesce_new(in, &in, err));
    }
    return df__op_limit_new(in, n->u.limit.skip, n->u.limit.fetch, true, out, err);
}

static df_errkind plan_sort(const df_lnode *n, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    df_pnode *in;
    DF_TRY(plan_node(n->inputs[0], ctx, &in, err));
    if (in->partitions <= 1) return df__op_sort_new(in, n->u.sort.keys, n->u.sort.nkeys, n->u.sort.fetch, out, err);
    DF_TRY(df__op_sort_new(in, n->u.sort.keys, n->u.sort.nkeys, n->u.sort.fetch, &in, err));
    return df__op_merge_new(in, n->u.sort.keys, n->u.sort.nkeys, n->u.sort.fetch, out, err);
}

static df_errkind plan_aggregate(const df_lnode *n, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    df_pnode *in;
    DF_TRY(plan_node(n->inputs[0], ctx, &in, err));
    df_schema *schema;
    df_errkind k = schema_of(n, &schema, err);
    if (k) {
        df__pnode_free(in);
        return k;
    }
    bool distinct = false;
    for (int32_t a = 0; a < n->u.agg.naggs; a++)
        distinct |= df_agg_single_step(&n->u.agg.aggs[a]);
    if (in->partitions > 1 && !distinct) {
        k = df__op_aggregate_new(in, n, DF_AGG_MODE_PARTIAL, NULL, &in, err);
        if (!k) k = df__op_coalesce_new(in, &in, err);
        if (!k) k = df__op_aggregate_new(in, n, DF_AGG_MODE_FINAL, schema, out, err);
    } else {
        k = single(in, &in, err);
        if (!k) k = df__op_aggregate_new(in, n, DF_AGG_MODE_SINGLE, schema, out, err);
    }
    df_schema_release(schema);
    return k;
}

static df_errkind plan_join(const df_lnode *n, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    df_pnode *l, *r;
    DF_TRY(plan_node(n->inputs[0], ctx, &l, err));
    df_errkind k = plan_node(n->inputs[1], ctx, &r, err);
    if (k) {
        df__pnode_free(l);
        return k;
    }
    df_join_type t = n->u.join.type;
    /* The probe side is the one whose unmatched rows may be emitted. */
    bool build_left = t == DF_JOIN_RIGHT || t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI;
    df_pnode *build = build_left ? l : r, *probe = build_left ? r : l;
    df_schema *schema = NULL;
    k = schema_of(n, &schema, err);
    if (k) {
        df__pnode_free(build);
        df__pnode_free(probe);
        return k;
    }
    k = single(build, &build, err); /* consumes build on failure */
    if (k) {
        df__pnode_free(probe);
        df_schema_release(schema);
        return k;
    }
    if (t == DF_JOIN_FULL && (k = single(probe, &probe, err))) {
        df__pnode_free(build);
        df_schema_release(schema);
        return k;
    }
    k = df__op_hash_join_new(build, probe, n, schema, out, err);
    df_schema_release(schema);
    return k;
}

static df_errkind plan_node(const df_lnode *n, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    *out = NULL;
    df_schema *schema = NULL;
    df_pnode *in = NULL;
    df_errkind k = DF_OK;
    switch (n->kind) {
    case DF_LN_SCAN: return df__op_scan_new(n, ctx, out, err);
    case DF_LN_VALUES:
        DF_TRY(schema_of(n, &schema, err));
        k = df__op_values_new(n, schema, out, err);
        df_schema_release(schema);
        return k;
    case DF_LN_EMPTY:
        DF_TRY(schema_of(n, &schema, err));
        k = df__op_empty_new(schema, n->u.empty.one_row, out, err);
        df_schema_release(schema);
        return k;
    case DF_LN_FILTER:
        DF_TRY(plan_node(n->inputs[0], ctx, &in, err));
        return df__op_filter_new(in, n->u.filter.pred, out, err);
    case DF_LN_PROJECT:
        DF_TRY(plan_node(n->inputs[0], ctx, &in, err));
        k = schema_of(n, &schema, err);
        if (k) {
            df__pnode_free(in);
            return k;
        }
        k = df__op_project_new(in, n->u.project.exprs, schema, out, err);
        df_schema_release(schema);
        return k;
    case DF_LN_LIMIT: return plan_limit(n, ctx, out, err);
    case DF_LN_SORT: return plan_sort(n, ctx, out, err);
    case DF_LN_AGGREGATE: return plan_aggregate(n, ctx, out, err);
    case DF_LN_JOIN: return plan_join(n, ctx, out, err);
    case DF_LN_WINDOW: {
        /* One partition sees all rows (no hash repartitioning by PARTITION BY keys yet), and its input is
         * planned with one partition so rows keep their scan order: functions without ORDER BY, and ties,
         * see rows as stored, as DataFusion's single-file scans do. */
        int32_t saved = ctx->target_partitions;
        ctx->target_partitions = 1;
        k = plan_node(n->inputs[0], ctx, &in, err);
        ctx->target_partitions = saved;
        if (k) return k;
        DF_TRY(single(in, &in, err)); /* consumes in on failure */
        k = schema_of(n, &schema, err);
        if (k) {
            df__pnode_free(in);
            return k;
        }
        k = df__op_window_new(in, n, schema, out, err);
        df_schema_release(schema);
        return k;
    }
    case DF_LN_RECURSIVE: {
        /* Both terms on one partition: the work table is read by one WorkTableExec state at a time. */
        df__worktable *wt = NULL;
        DF_TRY(df__worktable_new(n->u.recursive.id, n->u.recursive.distinct, &wt, err));
        df_pnode *st = NULL, *rt = NULL;
        int32_t saved = ctx->target_partitions;
        ctx->target_partitions = 1;
        k = plan_node(n->inputs[0], ctx, &st, err);
        if (!k && (k = single(st, &st, err))) st = NULL; /* consumed */
        if (!k) {
            df__worktable_set_outer(wt, ctx->worktables);
            ctx->worktables = wt;
            k = plan_node(n->inputs[1], ctx, &rt, err);
            ctx->worktables = df__worktable_outer(wt);
            if (!k && (k = single(rt, &rt, err))) rt = NULL;
            if (k) {
                df__pnode_free(st);
                st = NULL;
            }
        }
        ctx->target_partitions = saved;
        if (!k) k = schema_of(n, &schema, err);
        if (k) {
            df__pnode_free(st);
            df__pnode_free(rt);
            df__worktable_free(wt);
            return k;
        }
        k = df__op_recursive_new(wt, st, rt, schema, out, err);
        df_schema_release(schema);
        return k;
    }
    case DF_LN_WORKTABLE: {
        df__worktable *wt = ctx->worktables;
        while (wt && df__worktable_id(wt) != n->u.recursive.id) wt = df__worktable_outer(wt);
        if (!wt) return df_error_set(err, DF_ERR_INTERNAL, "work table outside its recursive query");
        DF_TRY(schema_of(n, &schema, err));
        k = df__op_worktable_new(wt, schema, out, err);
        df_schema_release(schema);
        return k;
    }
    case DF_LN_UNION: {
        df_pnode **ins = df_calloc((size_t)n->ninputs, sizeof *ins);
        if (!ins) return DF_OOM(err);
        for (int32_t i = 0; i < n->ninputs && !k; i++) k = plan_node(n->inputs[i], ctx, &ins[i], err);
        if (!k) k = schema_of(n, &schema, err);
        if (k) {
            for (int32_t i = 0; i < n->ninputs; i++) df__pnode_free(ins[i]);
            df_free(ins);
            return k;
        }
        k = df__op_union_new(ins, n->ninputs, schema, out, err);
        df_free(ins);
        df_schema_release(schema);
        return k;
    }
    }
    return df_error_set(err, DF_ERR_INTERNAL, "unknown logical node");
}

static int32_t assign_ids(df_pnode *n, int32_t next) {
    n->id = next++;
    for (int32_t i = 0; i < n->ninputs; i++) next = assign_ids(n->inputs[i], next);
    return next;
}

/* Diagnostics identity of every node: pre-order id, parent id (-1 at the root), interned operator name. */
static void name_nodes(df_pnode *n, int64_t parent) {
    n->dnode = (df_diag_node){n->id, parent, df_diag_name_intern(df_pnode_name(n))};
    for (int32_t i = 0; i < n->ninputs; i++) name_nodes(n->inputs[i], n->id);
}

static df_errkind alloc_metrics(df_pnode *n, df_error *err) {
    n->metrics = df_calloc((size_t)n->partitions, sizeof(df_op_metrics));
    if (!n->metrics) return DF_OOM(err);
    for (int32_t i = 0; i < n->ninputs; i++) DF_TRY(alloc_metrics(n->inputs[i], err));
    return DF_OK;
}

df_errkind df__exec_plan(const df_lnode *root, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    *out = NULL;
    df_pnode *p;
    DF_TRY(plan_node(root, ctx, &p, err));
    df_errkind k = single(p, &p, err);
    if (k) return k;
    assign_ids(p, 0);
    if (ctx->dq) name_nodes(p, -1);
    if (ctx->profile && (k = alloc_metrics(p, err))) {
        df__pnode_free(p);
        return k;
    }
    *out = p;
    return DF_OK;
}

int32_t df__exec_plan_threads(const df_pnode *n) {
    int32_t t = 0;
    if (df__is_exchange(n) || df__is_merge(n)) t += n->inputs[0]->partitions;
    for (int32_t i = 0; i < n->ninputs; i++) t += df__exec_plan_threads(n->inputs[i]);
    return t;
}
