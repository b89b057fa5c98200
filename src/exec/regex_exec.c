/*
 * Regular expressions, match side: a Pike VM over the program of
 * regex_compile.c.
 *
 * Threads live in two lists (the current and the next subject position),
 * each a sparse set over program counters kept in priority order, so a pc
 * is followed at most once per position: time is O(subject * program)
 * and memory O(program * capture slots), whatever the pattern.  A thread
 * reaching MATCH drops every thread of lower priority (leftmost-first:
 * the first alternative and the greedy or lazy choice win, as in Perl and
 * Rust, not the longest match).  The epsilon closure is followed with an
 * explicit stack, never recursion, so huge programs cannot overflow the
 * C stack.
 */
#include "exec/regex_int.h"

#include <string.h>

uint32_t df__rx_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    uint32_t len, v, min;
    if ((c & 0xE0) == 0xC0) len = 2, v = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, v = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, v = c & 0x07, min = 0x10000;
    else goto bad;
    if (n < len) goto bad;
    for (uint32_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) goto bad;
        v = (v << 6) | (s[k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
    *cp = v;
    return len;
bad:
    *cp = 0xFFFD;
    return 1;
}

void df__rx_scratch_free(df__rx_scratch *sc) {
    if (!sc) return;
    for (int k = 0; k < 2; k++) {
        df_free(sc->sparse[k]);
        df_free(sc->dense[k]);
        df_free(sc->slots[k]);
    }
    df_free(sc->stack);
    df_free(sc->stack_val);
    df_free(sc->tmp);
    memset(sc, 0, sizeof *sc);
}

/* Sizes the scratch for a program of ninst instructions and ns slots per thread. */
static df_errkind scratch_fit(df__rx_scratch *sc, uint32_t ninst, uint32_t ns, df_error *err) {
    if (sc->cap_inst >= ninst && sc->cap_slots >= ns && sc->stack) return DF_OK;
    uint32_t ci = sc->cap_inst > ninst ? sc->cap_inst : ninst;
    uint32_t cs = sc->cap_slots > ns ? sc->cap_slots : ns;
    df__rx_scratch_free(sc);
    size_t nstack = (size_t)ci * 3 + 4;
    for (int k = 0; k < 2; k++) {
        sc->sparse[k] = df_calloc(ci, sizeof(uint32_t));
        sc->dense[k] = df_malloc((size_t)ci * sizeof(uint32_t));
        sc->slots[k] = cs ? df_malloc((size_t)ci * cs * sizeof(int64_t)) : NULL;
        if (!sc->sparse[k] || !sc->dense[k] || (cs && !sc->slots[k])) goto oom;
    }
    sc->stack = df_malloc(nstack * sizeof(uint32_t));
    sc->stack_val = df_malloc(nstack * sizeof(int64_t));
    sc->tmp = df_malloc(((size_t)cs + 1) * sizeof(int64_t));
    if (!sc->stack || !sc->stack_val || !sc->tmp) goto oom;
    sc->cap_inst = ci;
    sc->cap_slots = cs;
    sc->cap_stack = (uint32_t)nstack;
    return DF_OK;
oom:
    df__rx_scratch_free(sc);
    return DF_OOM(err);
}

/* What the assertions need to know about a position. */
typedef struct pos_ctx {
    bool known;                 /* computed for this position */
    bool at_start, at_end;      /* text boundaries */
    bool nl_before, nl_after;   /* a \n just before / at the position */
    bool w_before, w_after;     /* word characters around (Unicode) */
    bool aw_before, aw_after;   /* word characters around (ASCII) */
} pos_ctx;

static void ctx_at(pos_ctx *c, const uint8_t *s, size_t n, size_t pos) {
    c->known = true;
    c->at_start = pos == 0;
    c->at_end = pos >= n;
    c->nl_before = pos > 0 && s[pos - 1] == '\n';
    c->nl_after = pos < n && s[pos] == '\n';
    uint32_t before = UINT32_MAX, after = UINT32_MAX;
    if (pos > 0) {
        size_t b = pos - 1;
        while (b > 0 && pos - b < 4 && (s[b] & 0xC0) == 0x80) b--;
        uint32_t cp;
        if (b + df__rx_utf8_decode(s + b, n - b, &cp) == pos) before = cp;
        else before = s[pos - 1];
    }
    if (pos < n) df__rx_utf8_decode(s + pos, n - pos, &after);
    c->w_before = before != UINT32_MAX && df__rx_is_word(before, false);
    c->w_after = after != UINT32_MAX && df__rx_is_word(after, false);
    c->aw_before = before != UINT32_MAX && before < 0x80 && df__rx_is_word(before, true);
    c->aw_after = after != UINT32_MAX && after < 0x80 && df__rx_is_word(after, true);
}

static bool assert_holds(uint32_t kind, const pos_ctx *c) {
    bool ascii = kind >= DF__RX_AS_ASCII;
    bool wb = ascii ? c->aw_before : c->w_before, wa = ascii ? c->aw_after : c->w_after;
    switch (kind & (DF__RX_AS_ASCII - 1)) {
    case DF__RX_AS_TEXT_START: return c->at_start;
    case DF__RX_AS_TEXT_END: return c->at_end;
    case DF__RX_AS_LINE_START: return c->at_start || c->nl_before;
    case DF__RX_AS_LINE_END: return c->at_end || c->nl_after;
    case DF__RX_AS_WORD: return wb != wa;
    case DF__RX_AS_NOT_WORD: return wb == wa;
    case DF__RX_AS_WORD_START: return !wb && wa;
    case DF__RX_AS_WORD_END: return wb && !wa;
    default: return false;
    }
}

typedef struct vm {
    const df__regex *re;        /* the program */
    df__rx_scratch *sc;         /* lists and stack */
    const uint8_t *s;           /* the subject */
    size_t n;                   /* its bytes */
    uint32_t ns;                /* slots per thread */
} vm;

static bool in_list(const df__rx_scratch *sc, int l, uint32_t pc) {
    uint32_t d = sc->sparse[l][pc];
    return d < sc->n[l] && sc->dense[l][d] == pc;
}

/*
 * Adds the threads reachable from pc at position pos to list l, in
 * priority order, with sc->tmp as the slots on the way in (restored on
 * the way out).
 */
static void add_thread(vm *m, int l, uint32_t pc0, size_t pos) {
    df__rx_scratch *sc = m->sc;
    const df__rx_inst *prog = m->re->prog;
    pos_ctx c = {0};
    /* Stack entries: a pc, or (slot | RESTORE) with the saved value beside it. */
    const uint32_t RESTORE = 0x80000000u;
    uint32_t top = 0;
    sc->stack[top++] = pc0;
    while (top) {
        uint32_t e = sc->stack[--top];
        if (e & RESTORE) {
            sc->tmp[e & ~RESTORE] = sc->stack_val[top];
            continue;
        }
        uint32_t pc = e;
        if (in_list(sc, l, pc)) continue;
        uint32_t d = sc->n[l]++;
        sc->sparse[l][pc] = d;
        sc->dense[l][d] = pc;
        const df__rx_inst *in = &prog[pc];
        switch (in->op) {
        case DF__RX_OP_JMP: sc->stack[top++] = in->x; break;
        case DF__RX_OP_SPLIT:
            sc->stack[top++] = in->y;
            sc->stack[top++] = in->x;
            break;
        case DF__RX_OP_SAVE:
            if (in->x < m->ns) {
                sc->stack_val[top] = sc->tmp[in->x];
                sc->stack[top++] = in->x | RESTORE;
                sc->tmp[in->x] = (int64_t)pos;
            }
            sc->stack[top++] = pc + 1;
            break;
        case DF__RX_OP_ASSERT:
            if (!c.known) ctx_at(&c, m->s, m->n, pos);
            if (assert_holds(in->x, &c)) sc->stack[top++] = pc + 1;
            break;
        default:
            /* A thread that consumes (or matches) waits here with its slots. */
            if (m->ns) memcpy(sc->slots[l] + (size_t)d * m->ns, sc->tmp, m->ns * sizeof(int64_t));
            break;
        }
    }
}

static bool class_has(const df__regex *re, const df__rx_inst *in, uint32_t cp) {
    /* An empty class (a set operation can empty one) may own no ranges at all. */
    if (in->y == 0) return false;
    const df__rx_range *r = re->ranges + in->x;
    uint32_t lo = 0, hi = in->y;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return true;
    }
    return false;
}

df_errkind df__regex_find(const df__regex *re, df__rx_scratch *sc, const uint8_t *s, size_t n, size_t from,
                          int64_t *slots, uint32_t nslots, const df__rx_cancel *cancel, bool *found, df_error *err) {
    *found = false;
    if (from > n) return DF_OK;
    uint32_t ns = slots ? nslots : 0;
    if (ns > 2 * re->ngroups) ns = 2 * re->ngroups;
    for (uint32_t k = 0; slots && k < nslots; k++) slots[k] = -1;
    DF_TRY(scratch_fit(sc, re->ninst, ns, err));
    vm m = {re, sc, s, n, ns};
    int cl = 0, nl = 1;
    sc->n[0] = sc->n[1] = 0;
    size_t pos = from;
    uint32_t steps = 0;
    bool matched = false;
    for (;;) {
        if (cancel && ++steps >= DF__RX_CANCEL_EVERY) {
            steps = 0;
            for (int f = 0; f < 2; f++)
                if (cancel->flag[f] && atomic_load_explicit(cancel->flag[f], memory_order_relaxed))
                    return df_error_set(err, DF_ERR_CANCELLED, "regular expression matching was cancelled");
        }
        if (!matched && (!re->anchored || pos == 0)) {
            if (sc->n[cl] == 0 && re->nprefix) {
                /* Nothing is running: the next match can only start where the literal prefix occurs. */
                const uint8_t *hit = n - pos >= re->nprefix ? memmem(s + pos, n - pos, re->prefix, re->nprefix) : NULL;
                if (!hit) break;
                pos = (size_t)(hit - s);
            }
            for (uint32_t k = 0; k < ns; k++) sc->tmp[k] = -1;
            add_thread(&m, cl, 0, pos);
        }
        if (sc->n[cl] == 0) break;
        uint32_t cp = 0, len = 0;
        if (pos < n) len = df__rx_utf8_decode(s + pos, n - pos, &cp);
        sc->n[nl] = 0;
        for (uint32_t i = 0; i < sc->n[cl]; i++) {
            uint32_t pc = sc->dense[cl][i];
            const df__rx_inst *in = &re->prog[pc];
            bool step;
            switch (in->op) {
            case DF__RX_OP_CHAR: step = len && cp == in->x; break;
            case DF__RX_OP_CLASS: step = len && class_has(re, in, cp); break;
            case DF__RX_OP_ANY: step = len != 0; break;
            case DF__RX_OP_ANY_NL: step = len && cp != '\n'; break;
            case DF__RX_OP_MATCH:
                matched = true;
                if (!ns) {
                    *found = true;
                    return DF_OK;
                }
                memcpy(slots, sc->slots[cl] + (size_t)i * ns, ns * sizeof(int64_t));
                /* Lower-priority threads cannot win any more. */
                i = sc->n[cl];
                continue;
            default: continue;
            }
            if (!step) continue;
            if (ns) memcpy(sc->tmp, sc->slots[cl] + (size_t)i * ns, ns * sizeof(int64_t));
            add_thread(&m, nl, pc + 1, pos + len);
        }
        if (pos >= n) break;
        pos += len;
        int t = cl;
        cl = nl;
        nl = t;
    }
    *found = matched;
    return DF_OK;
}
