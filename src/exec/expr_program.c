/*
 * Expression programs: bound expressions compiled into a flat list of
 * steps over registers (PostgreSQL's ExprState idea, vectorized).
 *
 * A step writes one register: a column of the batch, a constant, a kernel
 * call over earlier registers, a row selection, or a merge.  Steps run in
 * order over whole batches; there are no jumps.  Conditional evaluation
 * (CASE, COALESCE, AND/OR whose later operands could fail) is expressed
 * with selections instead: SEL_FILTER narrows the rows a later step
 * computes, SEL_SET makes a selection current, and a merge step assembles
 * the result from the branch registers and their selections.  So
 *   CASE WHEN x <> 0 THEN 10 / x ELSE 0 END
 * compiles to
 *   r0 = sel.save; r1 = col x; r2 = const 0; r3 = x <> 0;
 *   r4 = sel(r0, r3 is true); r5 = sel(r0, r3 is not true);
 *   sel.set r4; r6 = const 10; r7 = r6 / r1;      -- only rows with x <> 0
 *   sel.set r5; r8 = const 0; sel.set r0;
 *   r9 = case.merge(r4: r7, r5: r8)
 * and the division never sees a zero divisor.  AND/OR of operands that
 * cannot fail are computed densely and combined with bitmap operations.
 *
 * Each register is released right after its last use, so the working set
 * stays small.  Constant registers hold one element and kernels broadcast
 * them; a call whose arguments are all constant computes one row.
 */
#include "exec/exec_int.h"

#include <stdio.h>

typedef enum xop {
    XOP_COLUMN,         /* vec = batch column */
    XOP_CONST,          /* vec = constant (one element) */
    XOP_CALL,           /* vec = kernel(args) over the current selection */
    XOP_SEL_SAVE,       /* sel = current selection */
    XOP_SEL_FILTER,     /* sel = rows of sel(args[0]) where test(args[1]) */
    XOP_SEL_SET,        /* current selection = sel(args[0]) */
    XOP_CASE_MERGE,     /* vec from (sel, value) pairs in args */
    XOP_COALESCE_MERGE, /* vec = first valid of args[1..] by selection pairs, args[0] = all rows */
    XOP_AND_DENSE,      /* three-valued AND of boolean args, all rows */
    XOP_OR_DENSE,
    XOP_AND_LAZY,       /* AND with (sel, value) pairs: args[0] base sel, then value, sel, value, ... */
    XOP_OR_LAZY,
    XOP_NOT,            /* three-valued NOT */
} xop;

typedef enum xtest { XT_TRUE, XT_NOT_TRUE, XT_NOT_FALSE, XT_NULL } xtest;

typedef struct xstep {
    xop op;                 /* what to do */
    int32_t out;            /* destination register */
    int32_t nargs;          /* argument registers */
    int32_t *args;
    int32_t col;            /* XOP_COLUMN */
    df_vec *constv;         /* XOP_CONST (reference) */
    df_kernel k;            /* XOP_CALL */
    df_type *type;          /* result type (reference) */
    xtest test;             /* XOP_SEL_FILTER */
    int32_t nfree;          /* registers to release after this step */
    int32_t *frees;
} xstep;

struct df_xprog {
    int32_t nsteps, cap;    /* steps */
    xstep *steps;
    int32_t nregs;          /* registers */
    int32_t result;         /* result register */
    df_type *type;          /* result type (reference) */
    bool is_const;          /* no column reference anywhere */
};

struct df_xstate {
    int32_t nregs;          /* size of regs */
    df_xreg *regs;          /* per register */
    int32_t *cur_sel;       /* current selection (borrowed from a register) or NULL = all */
    int64_t cur_nsel;
    uint8_t *tv;            /* scratch truth values for lazy AND/OR (n bytes) */
    int8_t *which;          /* scratch source index per row for merges */
    int64_t scratch_cap;    /* rows the scratch arrays hold */
    df_exec_ctx *ctx;       /* the execution (df__xstate_set_ctx) or NULL */
};

/* ------------------------------------------------------------------------ */
/* Compilation                                                               */

typedef struct compiler {
    df_xprog *p;            /* program being built */
    df_error *err;          /* errors */
} compiler;

static int32_t new_reg(compiler *c) { return c->p->nregs++; }

static xstep *add_step(compiler *c, xop op, int32_t nargs) {
    df_xprog *p = c->p;
    if (p->nsteps >= 1 << 20) {
        df_error_set(c->err, DF_ERR_LIMIT_EXCEEDED, "expression too large");
        return NULL;
    }
    if (DF_ARRAY_RESERVE(p->steps, p->cap, p->nsteps + 1, 16, c->err)) return NULL;
    xstep *s = &p->steps[p->nsteps];
    memset(s, 0, sizeof *s);
    s->args = nargs ? df_calloc((size_t)nargs, sizeof(int32_t)) : NULL;
    if (nargs && !s->args) {
        DF_OOM(c->err);
        return NULL;
    }
    p->nsteps++;
    s->op = op;
    s->nargs = nargs;
    s->out = -1;
    return s;
}

static int32_t compile(compiler *c, const df_expr *e);

static int32_t emit_sel_save(compiler *c) {
    xstep *s = add_step(c, XOP_SEL_SAVE, 0);
    if (!s) return -1;
    s->out = new_reg(c);
    return s->out;
}

static int32_t emit_sel_filter(compiler *c, int32_t base, int32_t value, xtest t) {
    xstep *s = add_step(c, XOP_SEL_FILTER, 2);
    if (!s) return -1;
    s->args[0] = base;
    s->args[1] = value;
    s->test = t;
    s->out = new_reg(c);
    return s->out;
}

static bool emit_sel_set(compiler *c, int32_t sel) {
    xstep *s = add_step(c, XOP_SEL_SET, 1);
    if (!s) return false;
    s->args[0] = sel;
    return true;
}

/* A boolean step `op` over args[0..nargs): its output register, or -1. */
static int32_t emit_bool(compiler *c, xop op, const int32_t *args, int32_t nargs) {
    xstep *s = add_step(c, op, nargs);
    if (!s) return -1;
    df__memcpy(s->args, args, (size_t)nargs * sizeof(int32_t));
    s->type = df_type_bool();
    s->out = new_reg(c);
    return s->out;
}

static int32_t emit_call(compiler *c, const df_kernel *k, const int32_t *args, int32_t nargs, df_type *type) {
    xstep *s = add_step(c, XOP_CALL, nargs);
    if (!s) {
        if (k->aux_free) k->aux_free(k->aux);
        return -1;
    }
    df__memcpy(s->args, args, (size_t)nargs * sizeof(int32_t));
    s->k = *k;
    s->type = df_type_retain(type);
    s->out = new_reg(c);
    return s->out;
}

/* True when evaluating e might fail for some input (so lazy evaluation matters). */
static bool may_fail(const df_expr *e) {
    switch (e->kind) {
    case DF_EX_CAST:
        if (!e->flag && !(df_type_is_integer(e->type) && df_type_is_integer(e->args[0]->type) &&
                          df_type_width(e->type) > df_type_width(e->args[0]->type) &&
                          df_type_is_signed_integer(e->type) == df_type_is_signed_integer(e->args[0]->type)))
            return true;
        break;
    case DF_EX_FUNC:
        switch (e->fn) {
        case DF_FN_EQ: case DF_FN_NE: case DF_FN_LT: case DF_FN_LE: case DF_FN_GT: case DF_FN_GE:
        case DF_FN_IS_NULL: case DF_FN_IS_NOT_NULL: case DF_FN_IS_TRUE: case DF_FN_IS_NOT_TRUE:
        case DF_FN_IS_FALSE: case DF_FN_IS_NOT_FALSE: case DF_FN_IS_DISTINCT: case DF_FN_IS_NOT_DISTINCT:
        case DF_FN_LIKE: case DF_FN_ILIKE: case DF_FN_NOT_LIKE: case DF_FN_NOT_ILIKE:
        case DF_FN_LOWER: case DF_FN_UPPER: case DF_FN_CHAR_LENGTH: case DF_FN_OCTET_LENGTH:
        case DF_FN_STARTS_WITH: case DF_FN_ENDS_WITH: case DF_FN_CONTAINS: case DF_FN_CONCAT:
        case DF_FN_CONCAT_OP: case DF_FN_BTRIM: case DF_FN_LTRIM: case DF_FN_RTRIM:
            break;
        case DF_FN_ADD: case DF_FN_SUB: case DF_FN_MUL: case DF_FN_NEG:
            if (df_type_is_floating(e->type)) break;
            return true;
        default:
            return true;
        }
        break;
    default:
        break;
    }
    for (int32_t i = 0; i < e->nargs; i++)
        if (may_fail(e->args[i])) return true;
    return false;
}

static int32_t compile_case(compiler *c, const df_expr *e) {
    int32_t pairs = (e->nargs - (e->has_else ? 1 : 0)) / 2;
    int32_t nmerge = 2 * pairs + (e->has_else ? 2 : 0);
    int32_t *margs = df_calloc((size_t)(nmerge ? nmerge : 1), sizeof(int32_t));
    if (!margs) {
        DF_OOM(c->err);
        return -1;
    }
    int32_t r = -1;
    int32_t s0 = emit_sel_save(c), remaining = s0;
    if (s0 < 0) goto out;
    for (int32_t i = 0; i < pairs; i++) {
        if (!emit_sel_set(c, remaining)) goto out;
        int32_t w = compile(c, e->args[2 * i]);
        if (w < 0) goto out;
        int32_t taken = emit_sel_filter(c, remaining, w, XT_TRUE);
        int32_t rest = emit_sel_filter(c, remaining, w, XT_NOT_TRUE);
        if (taken < 0 || rest < 0 || !emit_sel_set(c, taken)) goto out;
        int32_t t = compile(c, e->args[2 * i + 1]);
        if (t < 0) goto out;
        margs[2 * i] = taken;
        margs[2 * i + 1] = t;
        remaining = rest;
    }
    if (e->has_else) {
        if (!emit_sel_set(c, remaining)) goto out;
        int32_t v = compile(c, e->args[e->nargs - 1]);
        if (v < 0) goto out;
        margs[2 * pairs] = remaining;
        margs[2 * pairs + 1] = v;
    }
    if (!emit_sel_set(c, s0)) goto out;
    xstep *s = add_step(c, XOP_CASE_MERGE, nmerge);
    if (!s) goto out;
    df__memcpy(s->args, margs, (size_t)nmerge * sizeof(int32_t));
    s->type = df_type_retain(e->type);
    s->out = new_reg(c);
    r = s->out;
out:
    df_free(margs);
    return r;
}

static int32_t compile_coalesce(compiler *c, const df_expr *e) {
    int32_t n = e->nargs;
    int32_t *margs = df_calloc((size_t)(2 * n), sizeof(int32_t));
    if (!margs) {
        DF_OOM(c->err);
        return -1;
    }
    int32_t r = -1;
    int32_t s0 = emit_sel_save(c), cur = s0;
    if (s0 < 0) goto out;
    for (int32_t i = 0; i < n; i++) {
        if (i > 0) {
            int32_t nulls = emit_sel_filter(c, cur, margs[2 * i - 1], XT_NULL);
            if (nulls < 0 || !emit_sel_set(c, nulls)) goto out;
            cur = nulls;
        }
        int32_t v = compile(c, e->args[i]);
        if (v < 0) goto out;
        margs[2 * i] = cur;
        margs[2 * i + 1] = v;
    }
    if (!emit_sel_set(c, s0)) goto out;
    xstep *s = add_step(c, XOP_COALESCE_MERGE, 2 * n);
    if (!s) goto out;
    df__memcpy(s->args, margs, (size_t)(2 * n) * sizeof(int32_t));
    s->type = df_type_retain(e->type);
    s->out = new_reg(c);
    r = s->out;
out:
    df_free(margs);
    return r;
}

static int32_t compile_logic(compiler *c, const df_expr *e) {
    bool is_and = e->kind == DF_EX_AND;
    int32_t n = e->nargs;
    bool lazy = false;
    for (int32_t i = 1; i < n; i++) lazy |= may_fail(e->args[i]);
    int32_t *margs = df_calloc((size_t)(2 * n + 1), sizeof(int32_t));
    if (!margs) {
        DF_OOM(c->err);
        return -1;
    }
    int32_t r = -1, nm = 0;
    if (!lazy) {
        for (int32_t i = 0; i < n; i++) {
            margs[i] = compile(c, e->args[i]);
            if (margs[i] < 0) goto out;
        }
        nm = n;
    } else {
        int32_t s0 = emit_sel_save(c), cur = s0;
        if (s0 < 0) goto out;
        margs[nm++] = s0;
        for (int32_t i = 0; i < n; i++) {
            if (i > 0) {
                int32_t next = emit_sel_filter(c, cur, margs[nm - 1], is_and ? XT_NOT_FALSE : XT_NOT_TRUE);
                if (next < 0 || !emit_sel_set(c, next)) goto out;
                cur = next;
                margs[nm++] = cur;
            }
            int32_t v = compile(c, e->args[i]);
            if (v < 0) goto out;
            margs[nm++] = v;
        }
        if (!emit_sel_set(c, s0)) goto out;
    }
    r = emit_bool(c, lazy ? (is_and ? XOP_AND_LAZY : XOP_OR_LAZY) : (is_and ? XOP_AND_DENSE : XOP_OR_DENSE), margs, nm);
out:
    df_free(margs);
    return r;
}

/* x IN (l1, ..., ln): a hashed kernel when the list is constant, else ORs of equalities. */
static int32_t compile_in_list(compiler *c, const df_expr *e) {
    bool all_lit = true;
    for (int32_t i = 1; i < e->nargs; i++) all_lit &= e->args[i]->kind == DF_EX_LITERAL;
    if (all_lit) {
        df_kernel k;
        if (df__kernel_in_list(e, &k, c->err)) return -1;
        int32_t a = compile(c, e->args[0]);
        if (a < 0) {
            if (k.aux_free) k.aux_free(k.aux);
            return -1;
        }
        return emit_call(c, &k, &a, 1, e->type);
    }
    /* Generic: OR of (x = li), then NOT for NOT IN. */
    int32_t n = e->nargs - 1;
    int32_t *eqs = df_calloc((size_t)n, sizeof(int32_t));
    if (!eqs) {
        DF_OOM(c->err);
        return -1;
    }
    int32_t r = -1;
    int32_t x = compile(c, e->args[0]);
    for (int32_t i = 0; x >= 0 && i < n; i++) {
        df_expr *args[2] = {e->args[0], e->args[i + 1]};
        df_expr eq = {.kind = DF_EX_FUNC, .fn = DF_FN_EQ, .type = df_type_bool(), .nargs = 2, .args = args};
        df_kernel k;
        if (df__kernel_for_fn(&eq, &k, c->err)) goto out;
        int32_t l = compile(c, e->args[i + 1]);
        if (l < 0) {
            if (k.aux_free) k.aux_free(k.aux);
            goto out;
        }
        int32_t ab[2] = {x, l};
        eqs[i] = emit_call(c, &k, ab, 2, df_type_bool());
        if (eqs[i] < 0) goto out;
    }
    if (x < 0) goto out;
    r = emit_bool(c, XOP_OR_DENSE, eqs, n);
    if (r >= 0 && e->flag) r = emit_bool(c, XOP_NOT, &r, 1);
out:
    df_free(eqs);
    return r;
}

static int32_t compile(compiler *c, const df_expr *e) {
    switch (e->kind) {
    case DF_EX_COLUMN: {
        xstep *s = add_step(c, XOP_COLUMN, 0);
        if (!s) return -1;
        s->col = e->column;
        s->type = df_type_retain(e->type);
        s->out = new_reg(c);
        c->p->is_const = false;
        return s->out;
    }
    case DF_EX_LITERAL: {
        xstep *s = add_step(c, XOP_CONST, 0);
        if (!s) return -1;
        if (df_vec_from_scalar(e->lit, 1, &s->constv, c->err)) return -1;
        s->type = df_type_retain(e->type);
        s->out = new_reg(c);
        return s->out;
    }
    case DF_EX_CAST: {
        df_kernel k;
        if (df__kernel_for_cast(e->args[0]->type, e->type, e->flag, &k, c->err)) return -1;
        int32_t a = compile(c, e->args[0]);
        if (a < 0) {
            if (k.aux_free) k.aux_free(k.aux);
            return -1;
        }
        return emit_call(c, &k, &a, 1, e->type);
    }
    case DF_EX_FUNC: {
        df_kernel k;
        if (df__kernel_for_fn(e, &k, c->err)) return -1;
        /* Variadic calls (concat of generated lists) take any number of arguments. */
        int32_t small[16];
        int32_t *args = e->nargs <= 16 ? small : df_malloc((size_t)e->nargs * sizeof(int32_t));
        if (!args) {
            if (k.aux_free) k.aux_free(k.aux);
            DF_OOM(c->err);
            return -1;
        }
        int32_t r = 0;
        for (int32_t i = 0; i < e->nargs && r >= 0; i++) r = args[i] = compile(c, e->args[i]);
        if (r < 0) {
            if (k.aux_free) k.aux_free(k.aux);
        } else {
            if (e->fn == DF_FN_RANDOM || e->fn == DF_FN_UUID) c->p->is_const = false;
            r = emit_call(c, &k, args, e->nargs, e->type);
        }
        if (args != small) df_free(args);
        return r;
    }
    case DF_EX_NOT: {
        int32_t a = compile(c, e->args[0]);
        return a < 0 ? -1 : emit_bool(c, XOP_NOT, &a, 1);
    }
    case DF_EX_AND:
    case DF_EX_OR: return compile_logic(c, e);
    case DF_EX_CASE: return compile_case(c, e);
    case DF_EX_COALESCE: return compile_coalesce(c, e);
    case DF_EX_IN_LIST: return compile_in_list(c, e);
    }
    df_error_set(c->err, DF_ERR_INTERNAL, "unknown expression kind %d", (int)e->kind);
    return -1;
}

/* Computes, for every register, the step after which it can be released. */
static df_errkind plan_frees(df_xprog *p, df_error *err) {
    int32_t *last = df_malloc((size_t)(p->nregs ? p->nregs : 1) * sizeof(int32_t));
    if (!last) return DF_OOM(err);
    for (int32_t r = 0; r < p->nregs; r++) last[r] = -1;
    for (int32_t i = 0; i < p->nsteps; i++) {
        xstep *s = &p->steps[i];
        for (int32_t a = 0; a < s->nargs; a++) last[s->args[a]] = i;
        if (s->out >= 0 && last[s->out] < i) last[s->out] = i;
    }
    /* SEL_SET makes the current selection point into its register's rows, which later steps
     * read until the next SEL_SET replaces it: the register lives that long, not only until
     * its last read as an argument. */
    for (int32_t i = p->nsteps - 1, next_set = p->nsteps - 1; i >= 0; i--) {
        const xstep *s = &p->steps[i];
        if (s->op != XOP_SEL_SET) continue;
        if (last[s->args[0]] < next_set) last[s->args[0]] = next_set;
        next_set = i;
    }
    last[p->result] = p->nsteps; /* the result outlives the program */
    /* Count the registers each step frees, then fill the lists in register order: linear in
     * steps + registers, which matters for the programs of OR chains with thousands of terms. */
    int32_t *count = df_calloc((size_t)(p->nsteps ? p->nsteps : 1), sizeof(int32_t));
    if (!count) {
        df_free(last);
        return DF_OOM(err);
    }
    for (int32_t r = 0; r < p->nregs; r++)
        if (last[r] >= 0 && last[r] < p->nsteps) count[last[r]]++;
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < p->nsteps && !k; i++) {
        if (!count[i]) continue;
        p->steps[i].frees = df_malloc((size_t)count[i] * sizeof(int32_t));
        if (!p->steps[i].frees) k = DF_OOM(err);
    }
    for (int32_t r = 0; r < p->nregs && !k; r++)
        if (last[r] >= 0 && last[r] < p->nsteps) {
            xstep *s = &p->steps[last[r]];
            s->frees[s->nfree++] = r;
        }
    df_free(count);
    df_free(last);
    return k;
}

df_errkind df__xprog_compile(const df_expr *e, df_xprog **out, df_error *err) {
    *out = NULL;
    df_xprog *p = df_calloc(1, sizeof *p);
    if (!p) return DF_OOM(err);
    p->is_const = true;
    compiler c = {.p = p, .err = err};
    p->result = compile(&c, e);
    df_errkind k = p->result < 0 ? (err && err->kind ? err->kind : DF_ERR_INTERNAL) : DF_OK;
    if (!k) k = plan_frees(p, err);
    if (k) {
        df__xprog_free(p);
        return k;
    }
    p->type = df_type_retain(e->type);
    *out = p;
    return DF_OK;
}

void df__xprog_free(df_xprog *p) {
    if (!p) return;
    for (int32_t i = 0; i < p->nsteps; i++) {
        xstep *s = &p->steps[i];
        df_free(s->args);
        df_free(s->frees);
        df_vec_release(s->constv);
        df_type_release(s->type);
        if (s->k.aux_free) s->k.aux_free(s->k.aux);
    }
    df_free(p->steps);
    df_type_release(p->type);
    df_free(p);
}

df_type *df__xprog_type(const df_xprog *p) { return p->type; }
bool df__xprog_is_const(const df_xprog *p) { return p->is_const; }

/* ------------------------------------------------------------------------ */
/* Evaluation                                                                */

df_errkind df__xstate_new(const df_xprog *p, df_xstate **out, df_error *err) {
    *out = NULL;
    df_xstate *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    s->nregs = p->nregs;
    s->regs = df_calloc((size_t)(p->nregs ? p->nregs : 1), sizeof(df_xreg));
    if (!s->regs) {
        df_free(s);
        return DF_OOM(err);
    }
    *out = s;
    return DF_OK;
}

void df__xstate_set_ctx(df_xstate *s, df_exec_ctx *ctx) { s->ctx = ctx; }

void df__xreg_clear(df_xreg *r) {
    df_vec_release(r->vec);
    df_free(r->sel);
    memset(r, 0, sizeof *r);
}

void df__xstate_free(df_xstate *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->nregs; i++) df__xreg_clear(&s->regs[i]);
    df_free(s->regs);
    df_free(s->tv);
    df_free(s->which);
    df_free(s);
}

static df_errkind ensure_scratch(df_xstate *s, int64_t n, df_error *err) {
    /* Allocated even for n == 0: callers memset and index these buffers. */
    if (s->tv && s->which && s->scratch_cap >= n) return DF_OK;
    uint8_t *tv = df_realloc(s->tv, (size_t)(n ? n : 1));
    if (!tv) return DF_OOM(err);
    s->tv = tv;
    int8_t *w = df_realloc(s->which, (size_t)(n ? n : 1));
    if (!w) return DF_OOM(err);
    s->which = w;
    s->scratch_cap = n;
    return DF_OK;
}

/* Truth value of boolean register r at row i: 0 false, 1 true, 2 null. */
static inline uint8_t truth(const df_xreg *r, int64_t i) {
    int64_t j = r->is_const ? 0 : i;
    if (r->vec->type->id != DF_TYPE_BOOL) return 2; /* Null-typed operands */
    if (!df_vec_is_valid(r->vec, j)) return 2;
    return df_vec_bool(r->vec, j) ? 1 : 0;
}

static df_errkind sel_filter(df_xstate *st, const xstep *s, int64_t n, df_error *err) {
    const df_xreg *base = &st->regs[s->args[0]];
    const df_xreg *v = &st->regs[s->args[1]];
    df_xreg *out = &st->regs[s->out];
    int64_t cnt = base->sel_all ? n : base->nsel;
    out->sel = df_malloc((size_t)(cnt ? cnt : 1) * sizeof(int32_t));
    if (!out->sel) return DF_OOM(err);
    int64_t m = 0;
    for (int64_t k = 0; k < cnt; k++) {
        int64_t i = base->sel_all ? k : base->sel[k];
        uint8_t t = truth(v, i);
        bool keep;
        switch (s->test) {
        case XT_TRUE: keep = t == 1; break;
        case XT_NOT_TRUE: keep = t != 1; break;
        case XT_NOT_FALSE: keep = t != 0; break;
        default: keep = !df_xreg_valid(v, i); break;
        }
        out->sel[m] = (int32_t)i;
        m += keep;
    }
    out->nsel = m;
    out->sel_all = false;
    return DF_OK;
}

static df_errkind case_merge(df_xstate *st, const xstep *s, int64_t n, df_error *err) {
    DF_TRY(ensure_scratch(st, n, err));
    int8_t *which = st->which;
    memset(which, -1, (size_t)n);
    const df_xreg *srcs[128];
    int32_t pairs = s->nargs / 2;
    if (pairs > 127) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "CASE has too many branches");
    for (int32_t p = 0; p < pairs; p++) {
        const df_xreg *sel = &st->regs[s->args[2 * p]];
        srcs[p] = &st->regs[s->args[2 * p + 1]];
        if (sel->sel_all) {
            memset(which, p, (size_t)n);
        } else {
            for (int64_t k = 0; k < sel->nsel; k++) which[sel->sel[k]] = (int8_t)p;
        }
    }
    return df__kernel_choose(s->type, n, srcs, which, &st->regs[s->out].vec, err);
}

static df_errkind coalesce_merge(df_xstate *st, const xstep *s, int64_t n, df_error *err) {
    DF_TRY(ensure_scratch(st, n, err));
    int8_t *which = st->which;
    memset(which, -1, (size_t)n);
    const df_xreg *srcs[128];
    int32_t pairs = s->nargs / 2;
    if (pairs > 127) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "coalesce has too many arguments");
    /* Later arguments were only computed for rows where earlier ones were NULL, so go backwards. */
    for (int32_t p = pairs - 1; p >= 0; p--) {
        const df_xreg *sel = &st->regs[s->args[2 * p]];
        const df_xreg *v = &st->regs[s->args[2 * p + 1]];
        srcs[p] = v;
        int64_t cnt = sel->sel_all ? n : sel->nsel;
        for (int64_t k = 0; k < cnt; k++) {
            int64_t i = sel->sel_all ? k : sel->sel[k];
            if (df_xreg_valid(v, i)) which[i] = (int8_t)p;
        }
    }
    return df__kernel_choose(s->type, n, srcs, which, &st->regs[s->out].vec, err);
}

/* Writes truth values tv[0..n) (0/1/2) as a boolean vector. */
static df_errkind tv_to_vec(const uint8_t *tv, int64_t n, df_vec **out, df_error *err) {
    df_vec *v;
    DF_TRY(df_vec_new(df_type_bool(), n, 0, &v, err));
    bool any_null = false;
    uint8_t *vals = v->values->data;
    memset(vals, 0, (size_t)df_bitmap_bytes(n));
    for (int64_t i = 0; i < n; i++) {
        if (tv[i] == 1) df_bit_set(vals, i);
        any_null |= tv[i] == 2;
    }
    if (any_null) {
        df_errkind k = df_vec_ensure_validity(v, n, err);
        if (k) {
            df_vec_release(v);
            return k;
        }
        for (int64_t i = 0; i < n; i++)
            if (tv[i] == 2) df_bit_clear(v->validity->data, i);
    }
    df_vec_set_length(v, n);
    *out = v;
    return DF_OK;
}

static inline uint8_t and3(uint8_t a, uint8_t b) { return (a == 0 || b == 0) ? 0 : (a == 2 || b == 2) ? 2 : 1; }
static inline uint8_t or3(uint8_t a, uint8_t b) { return (a == 1 || b == 1) ? 1 : (a == 2 || b == 2) ? 2 : 0; }

/* 64 bits of a bitmap starting at bit `off` (bits past the end read as whatever the padding holds). */
static inline uint64_t load_bits(const uint8_t *bits, int64_t off) {
    const uint8_t *p = bits + (off >> 3);
    unsigned sh = (unsigned)(off & 7);
    uint64_t lo;
    memcpy(&lo, p, 8);
    if (!sh) return lo;
    return (lo >> sh) | ((uint64_t)p[8] << (64 - sh));
}

/*
 * Dense three-valued AND/OR, 64 rows at a time:
 *   AND: false where any operand is a known false, true where all are
 *        known true, NULL otherwise;  OR symmetrically.
 */
static df_errkind logic_dense(df_xstate *st, const xstep *s, int64_t n, bool is_and, df_error *err) {
    df_vec *v;
    DF_TRY(df_vec_new(df_type_bool(), n, 0, &v, err));
    df_errkind k = df_vec_ensure_validity(v, n, err);
    if (k) {
        df_vec_release(v);
        return k;
    }
    uint64_t *vals = (uint64_t *)(void *)v->values->data, *valid = (uint64_t *)(void *)v->validity->data;
    int64_t nwords = (n + 63) / 64;
    bool any_null = false;
    for (int64_t w = 0; w < nwords; w++) {
        uint64_t decided = 0, all = ~0ULL; /* AND: known false / all true; OR: known true / all false */
        for (int32_t a = 0; a < s->nargs; a++) {
            const df_xreg *r = &st->regs[s->args[a]];
            const df_vec *x = r->vec;
            uint64_t bits, mask;
            if (x->type->id != DF_TYPE_BOOL) {
                bits = 0;
                mask = 0;
            } else if (r->is_const) {
                bool ok = df_vec_is_valid(x, 0);
                mask = ok ? ~0ULL : 0;
                bits = ok && df_vec_bool(x, 0) ? ~0ULL : 0;
            } else {
                bits = load_bits(x->values->data, x->offset + w * 64);
                mask = x->validity ? load_bits(x->validity->data, x->offset + w * 64) : ~0ULL;
            }
            if (is_and) {
                decided |= mask & ~bits;
                all &= mask & bits;
            } else {
                decided |= mask & bits;
                all &= mask & ~bits;
            }
        }
        uint64_t ok = decided | all;
        vals[w] = is_and ? all : decided;
        valid[w] = ok;
        uint64_t live = w == nwords - 1 && (n & 63) ? ((1ULL << (n & 63)) - 1) : ~0ULL;
        if ((ok & live) != live) any_null = true;
    }
    if (!any_null) {
        df_buffer_release(v->validity);
        v->validity = NULL;
    }
    df_vec_set_length(v, n);
    st->regs[s->out].vec = v;
    return DF_OK;
}

/* Lazy AND/OR: args = base sel, v1, sel2, v2, sel3, v3, ... */
static df_errkind logic_lazy(df_xstate *st, const xstep *s, int64_t n, bool is_and, df_error *err) {
    DF_TRY(ensure_scratch(st, n, err));
    uint8_t *tv = st->tv;
    memset(tv, 2, (size_t)n);
    const df_xreg *base = &st->regs[s->args[0]];
    const df_xreg *v1 = &st->regs[s->args[1]];
    int64_t cnt = base->sel_all ? n : base->nsel;
    for (int64_t k = 0; k < cnt; k++) {
        int64_t i = base->sel_all ? k : base->sel[k];
        tv[i] = truth(v1, i);
    }
    for (int32_t a = 2; a + 1 < s->nargs; a += 2) {
        const df_xreg *sel = &st->regs[s->args[a]];
        const df_xreg *v = &st->regs[s->args[a + 1]];
        for (int64_t k = 0; k < sel->nsel; k++) {
            int64_t i = sel->sel[k];
            tv[i] = is_and ? and3(tv[i], truth(v, i)) : or3(tv[i], truth(v, i));
        }
    }
    return tv_to_vec(tv, n, &st->regs[s->out].vec, err);
}

static df_errkind not_step(df_xstate *st, const xstep *s, int64_t n, df_error *err) {
    const df_xreg *a = &st->regs[s->args[0]];
    df_xreg *out = &st->regs[s->out];
    int64_t len = a->is_const ? 1 : n;
    df_vec *v;
    DF_TRY(df_vec_new(df_type_bool(), len, 0, &v, err));
    if (a->vec->type->id == DF_TYPE_NULL) {
        df_vec_release(v);
        DF_TRY(df_vec_new_nulls(df_type_bool(), len, &v, err));
    } else {
        const uint8_t *src = a->vec->values->data;
        uint8_t *dst = v->values->data;
        if (a->vec->offset % 8 == 0) {
            const uint8_t *sp = src + a->vec->offset / 8;
            for (int64_t b = 0; b < df_bitmap_bytes(len); b++) dst[b] = (uint8_t)~sp[b];
        } else {
            for (int64_t i = 0; i < len; i++) df_bit_put(dst, i, !df_bit_get(src, a->vec->offset + i));
        }
        if (a->vec->validity) {
            df_errkind k = df_vec_ensure_validity(v, len, err);
            if (k) {
                df_vec_release(v);
                return k;
            }
            df_bitmap_copy(v->validity->data, 0, a->vec->validity->data, a->vec->offset, len);
        }
        df_vec_set_length(v, len);
    }
    out->vec = v;
    out->is_const = a->is_const;
    return DF_OK;
}

static df_errkind call_step(df_xstate *st, const xstep *s, int64_t n, df_error *err) {
    df_xreg small[16];
    df_xreg *args = s->nargs <= 16 ? small : df_malloc((size_t)s->nargs * sizeof(df_xreg));
    if (!args) return DF_OOM(err);
    bool all_const = s->nargs > 0;
    for (int32_t a = 0; a < s->nargs; a++) {
        args[a] = st->regs[s->args[a]];
        all_const &= args[a].is_const;
    }
    df_kargs k = {.n = all_const ? 1 : n, .sel = all_const ? NULL : st->cur_sel,
                  .nsel = all_const ? 1 : st->cur_nsel, .type = s->type, .aux = s->k.aux, .err = err, .ctx = st->ctx};
    if (!all_const && !st->cur_sel) k.nsel = n;
    df_xreg *out = &st->regs[s->out];
    df_errkind e = s->k.fn(&k, args, s->nargs, out);
    if (args != small) df_free(args);
    if (e) return e;
    out->is_const = all_const;
    return DF_OK;
}

static df_errkind run_step(df_xstate *st, const xstep *s, const df_batch *batch, df_error *err) {
    int64_t n = batch->nrows;
    df_xreg *out = s->out >= 0 ? &st->regs[s->out] : NULL;
    switch (s->op) {
    case XOP_COLUMN:
        if (s->col < 0 || s->col >= batch->ncols)
            return df_error_set(err, DF_ERR_INTERNAL, "expression reads column %d of a %d-column batch", s->col,
                                batch->ncols);
        out->vec = df_vec_retain(batch->cols[s->col]);
        out->is_const = false;
        return DF_OK;
    case XOP_CONST:
        out->vec = df_vec_retain(s->constv);
        out->is_const = true;
        return DF_OK;
    case XOP_CALL: return call_step(st, s, n, err);
    case XOP_SEL_SAVE:
        if (!st->cur_sel) {
            out->sel_all = true;
            return DF_OK;
        }
        out->sel = df_malloc((size_t)(st->cur_nsel ? st->cur_nsel : 1) * sizeof(int32_t));
        if (!out->sel) return DF_OOM(err);
        df__memcpy(out->sel, st->cur_sel, (size_t)st->cur_nsel * sizeof(int32_t));
        out->nsel = st->cur_nsel;
        return DF_OK;
    case XOP_SEL_FILTER: return sel_filter(st, s, n, err);
    case XOP_SEL_SET: {
        const df_xreg *r = &st->regs[s->args[0]];
        st->cur_sel = r->sel_all ? NULL : r->sel;
        st->cur_nsel = r->sel_all ? n : r->nsel;
        return DF_OK;
    }
    case XOP_CASE_MERGE: return case_merge(st, s, n, err);
    case XOP_COALESCE_MERGE: return coalesce_merge(st, s, n, err);
    case XOP_AND_DENSE: return logic_dense(st, s, n, true, err);
    case XOP_OR_DENSE: return logic_dense(st, s, n, false, err);
    case XOP_AND_LAZY: return logic_lazy(st, s, n, true, err);
    case XOP_OR_LAZY: return logic_lazy(st, s, n, false, err);
    case XOP_NOT: return not_step(st, s, n, err);
    }
    return df_error_set(err, DF_ERR_INTERNAL, "unknown step");
}

df_errkind df__xprog_eval(const df_xprog *p, df_xstate *st, const df_batch *batch, df_xreg *out, df_error *err) {
    memset(out, 0, sizeof *out);
    st->cur_sel = NULL;
    st->cur_nsel = batch->nrows;
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < p->nsteps && !k; i++) {
        const xstep *s = &p->steps[i];
        k = run_step(st, s, batch, err);
        for (int32_t f = 0; f < s->nfree; f++) df__xreg_clear(&st->regs[s->frees[f]]);
    }
    if (k) {
        for (int32_t r = 0; r < st->nregs; r++) df__xreg_clear(&st->regs[r]);
        return k;
    }
    *out = st->regs[p->result];
    memset(&st->regs[p->result], 0, sizeof(df_xreg));
    return DF_OK;
}

df_errkind df__xprog_eval_vec(const df_xprog *p, df_xstate *st, const df_batch *batch, df_vec **out, df_error *err) {
    *out = NULL;
    df_xreg r;
    DF_TRY(df__xprog_eval(p, st, batch, &r, err));
    df_errkind k = df__kernel_materialize(&r, batch->nrows, out, err);
    df__xreg_clear(&r);
    return k;
}

/* Evaluates a constant expression over a one-row, zero-column batch. */
df_errkind df__exec_eval_const(const df_expr *e, df_scalar *out, df_error *err) {
    memset(out, 0, sizeof *out);
    df_xprog *p;
    DF_TRY(df__xprog_compile(e, &p, err));
    df_xstate *st = NULL;
    df_schema *schema = NULL;
    df_batch *batch = NULL;
    df_xreg r = {0};
    df_errkind k = df__xstate_new(p, &st, err);
    if (!k) k = df_schema_alloc(0, &schema, err);
    if (!k) k = df_batch_new(schema, NULL, 1, &batch, err);
    if (!k) k = df__xprog_eval(p, st, batch, &r, err);
    if (!k) k = df_scalar_from_vec(out, r.vec, 0, err);
    df__xreg_clear(&r);
    df_batch_release(batch);
    df_schema_release(schema);
    df__xstate_free(st);
    df__xprog_free(p);
    return k;
}
