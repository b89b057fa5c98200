/*
 * Regular expressions, compile side: the Rust `regex` crate syntax into a
 * tree, the tree into a Pike VM program (regex_int.h).
 *
 * The parser recurses once per group or bracketed class and refuses to go
 * deeper than DF__RX_NEST_LIMIT, and stacked repetitions (a{5}{5}) count
 * towards the same depth, so every later walk of the tree is bounded too.
 * The program's size is computed from the tree (saturating) and checked
 * against DF__RX_SIZE_LIMIT before the program is allocated, so counted
 * repetitions that expand to billions of instructions fail at once.
 */
#include "exec/regex_int.h"

#include <stdlib.h>
#include <string.h>

enum { N_EMPTY, N_LIT, N_CLASS, N_ANY, N_ANY_NL, N_ASSERT, N_GROUP, N_CAT, N_ALT, N_REP };

#define NO_NODE (-1)
#define INF UINT32_MAX
#define MAX_CP 0x10FFFFu

typedef struct node {
    uint8_t kind;               /* N_* */
    bool greedy;                /* N_REP: prefer more */
    uint16_t depth;             /* nesting of groups and repetitions in this subtree */
    uint32_t a;                 /* LIT code point, CLASS first range, ASSERT kind, GROUP number, REP min */
    uint32_t b;                 /* CLASS range count, REP max (INF unbounded) */
    int32_t child;              /* GROUP / REP operand, CAT / ALT first item */
    int32_t next;               /* next item of the enclosing CAT / ALT */
} node;

/* A growable set of code point ranges (normalized: sorted, disjoint, not adjacent). */
typedef struct rset {
    df__rx_range *r;            /* ranges */
    uint32_t n;                 /* used */
    uint32_t cap;               /* allocated */
} rset;

typedef struct parser {
    const uint8_t *s;           /* the pattern */
    size_t n;                   /* its bytes */
    size_t i;                   /* read position */
    node *nodes;                /* the tree */
    uint32_t nn, cn;            /* nodes used / allocated */
    rset rg;                    /* class ranges of every CLASS node, back to back */
    char *names;                /* group names, NUL-terminated, back to back */
    size_t nlen, ncap;          /* bytes used / allocated in names */
    uint32_t *noff;             /* per group: offset of its name */
    uint32_t ngroups, cgroups;  /* groups (with group 0) / allocated in noff */
    df_error *err;              /* where errors go */
} parser;

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

static df_errkind syntax(parser *p, size_t at, const char *what) {
    df_errkind k = df_error_set(p->err, DF_ERR_EXECUTION, "regex parse error at byte %zu: %s", at, what);
    df_error_set_subkind(p->err, DF_ERR_REGEX_SYNTAX);
    return k;
}

static df_errkind too_deep(parser *p, size_t at) {
    df_errkind k = df_error_set(p->err, DF_ERR_EXECUTION,
                                "regex parse error at byte %zu: nesting exceeds the limit of %d", at,
                                DF__RX_NEST_LIMIT);
    df_error_set_subkind(p->err, DF_ERR_REGEX_TOO_BIG);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Range sets                                                                */

static bool rs_push(rset *s, uint32_t lo, uint32_t hi) {
    if (s->n == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 16;
        if (nc > (1u << 26)) return false;
        df__rx_range *nr = df_realloc(s->r, (size_t)nc * sizeof *nr);
        if (!nr) return false;
        s->r = nr;
        s->cap = nc;
    }
    s->r[s->n].lo = lo;
    s->r[s->n].hi = hi;
    s->n++;
    return true;
}

static void rs_free(rset *s) {
    df_free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
}

static int range_cmp(const void *a, const void *b) {
    const df__rx_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

/* Sorts and merges overlapping or adjacent ranges. */
static void rs_normalize(rset *s) {
    if (s->n < 2) return;
    qsort(s->r, s->n, sizeof *s->r, range_cmp);
    uint32_t w = 0;
    for (uint32_t i = 1; i < s->n; i++) {
        if (s->r[i].lo <= s->r[w].hi + 1 || s->r[w].hi == MAX_CP) {
            if (s->r[i].hi > s->r[w].hi) s->r[w].hi = s->r[i].hi;
        } else {
            s->r[++w] = s->r[i];
        }
    }
    s->n = w + 1;
}

/* Replaces a normalized set by its complement over all code points. */
static bool rs_negate(rset *s) {
    rset o = {0};
    uint32_t lo = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->r[i].lo > lo && !rs_push(&o, lo, s->r[i].lo - 1)) goto oom;
        lo = s->r[i].hi + 1;
        if (s->r[i].hi == MAX_CP) lo = MAX_CP + 1;
    }
    if (lo <= MAX_CP && !rs_push(&o, lo, MAX_CP)) goto oom;
    rs_free(s);
    *s = o;
    return true;
oom:
    rs_free(&o);
    return false;
}

/* a ∩ b of two normalized sets into a. */
static bool rs_intersect(rset *a, const rset *b) {
    rset o = {0};
    uint32_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        uint32_t lo = a->r[i].lo > b->r[j].lo ? a->r[i].lo : b->r[j].lo;
        uint32_t hi = a->r[i].hi < b->r[j].hi ? a->r[i].hi : b->r[j].hi;
        if (lo <= hi && !rs_push(&o, lo, hi)) {
            rs_free(&o);
            return false;
        }
        if (a->r[i].hi < b->r[j].hi) i++;
        else j++;
    }
    rs_free(a);
    *a = o;
    return true;
}

static bool rs_union(rset *a, const rset *b) {
    for (uint32_t i = 0; i < b->n; i++)
        if (!rs_push(a, b->r[i].lo, b->r[i].hi)) return false;
    rs_normalize(a);
    return true;
}

/* a op b with op '&' (intersection), '-' (difference) or '~' (symmetric difference); a and b normalized. */
static bool rs_apply(rset *a, rset *b, char op) {
    if (op == '&') return rs_intersect(a, b);
    if (op == '-') {
        if (!rs_negate(b)) return false;
        return rs_intersect(a, b);
    }
    rset both = {0};
    if (!rs_union(&both, a) || !rs_intersect(&both, b) || !rs_union(a, b) || !rs_negate(&both) ||
        !rs_intersect(a, &both)) {
        rs_free(&both);
        return false;
    }
    rs_free(&both);
    return true;
}

/* ------------------------------------------------------------------------ */
/* Simple case folding                                                       */

/*
 * Code points whose simple fold orbit has a third member (or a member
 * outside the regular pair rules): each maps to its orbit's lowercase base.
 */
static const uint32_t fold_extra[][2] = {
    {0x212A, 'k'},   {0x017F, 's'},   {0x212B, 0xE5},  {0x00B5, 0x3BC}, {0x03C2, 0x3C3}, {0x2126, 0x3C9},
    {0x1E9E, 0xDF},  {0x0178, 0xFF},  {0x0345, 0x3B9}, {0x1FBE, 0x3B9}, {0x03D0, 0x3B2}, {0x03D1, 0x3B8},
    {0x03D5, 0x3C6}, {0x03D6, 0x3C0}, {0x03F0, 0x3BA}, {0x03F1, 0x3C1}, {0x03F5, 0x3B5},
};

/* Lowercase partner of cp under the regular pair rules (cp itself when none). */
static uint32_t lower_of(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_lower ? (cp & 1) == 1 : (cp & 1) == 0) return cp + 1;
        return cp;
    }
    if (cp == 0x386) return 0x3AC;
    if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
    if (cp == 0x38C) return 0x3CC;
    if (cp == 0x38E || cp == 0x38F) return cp + 63;
    if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 0x20;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
    if ((cp >= 0x460 && cp <= 0x481) || (cp >= 0x48A && cp <= 0x4BF) || (cp >= 0x4D0 && cp <= 0x52F))
        return (cp & 1) == 0 ? cp + 1 : cp;
    if (cp >= 0x4C1 && cp <= 0x4CE) return (cp & 1) == 1 ? cp + 1 : cp;
    if (cp == 0x4C0) return 0x4CF;
    return cp;
}

/* Uppercase partner of a lowercase cp under the regular pair rules (cp itself when none). */
static uint32_t upper_of(uint32_t cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 32;
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 0x20;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_lower ? (cp & 1) == 0 : (cp & 1) == 1) return cp - 1;
        return cp;
    }
    if (cp == 0x3AC) return 0x386;
    if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
    if (cp == 0x3CC) return 0x38C;
    if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
    if (cp >= 0x3B1 && cp <= 0x3CB && cp != 0x3C2) return cp - 0x20;
    if (cp >= 0x430 && cp <= 0x44F) return cp - 0x20;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 0x50;
    if ((cp >= 0x460 && cp <= 0x481) || (cp >= 0x48A && cp <= 0x4BF) || (cp >= 0x4D0 && cp <= 0x52F))
        return (cp & 1) == 1 ? cp - 1 : cp;
    if (cp >= 0x4C1 && cp <= 0x4CE) return (cp & 1) == 0 ? cp - 1 : cp;
    if (cp == 0x4CF) return 0x4C0;
    return cp;
}

/* The members of cp's simple fold orbit (cp included) into out[0..4); returns how many. */
static int fold_orbit(uint32_t cp, uint32_t out[4]) {
    uint32_t base = lower_of(cp);
    for (size_t k = 0; k < sizeof fold_extra / sizeof fold_extra[0]; k++)
        if (fold_extra[k][0] == cp) base = fold_extra[k][1];
    int n = 0;
    out[n++] = base;
    uint32_t up = upper_of(base);
    if (up != base) out[n++] = up;
    for (size_t k = 0; k < sizeof fold_extra / sizeof fold_extra[0] && n < 4; k++)
        if (fold_extra[k][1] == base) out[n++] = fold_extra[k][0];
    return n;
}

/* The code point windows fold_orbit can change anything in. */
static const df__rx_range fold_windows[] = {
    {'A', 'Z'}, {'a', 'z'}, {0xB5, 0xB5}, {0xC0, 0x17F}, {0x345, 0x345}, {0x386, 0x3F5},
    {0x400, 0x52F}, {0x1E9E, 0x1E9E}, {0x1FBE, 0x1FBE}, {0x2126, 0x212B},
};

/*
 * Adds the fold orbits of every member of a normalized set; normalizes
 * again.  Under -u (ascii) only ASCII letters fold, and only to ASCII, as
 * in Rust (so (?i-u)k does not match the Kelvin sign).
 */
static bool rs_fold(rset *s, bool ascii) {
    uint32_t n0 = s->n;
    for (uint32_t i = 0; i < n0 && ascii; i++) {
        for (uint32_t cp = s->r[i].lo; cp <= s->r[i].hi && cp < 0x80; cp++) {
            uint32_t o = cp >= 'a' && cp <= 'z' ? cp - 32 : cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
            if (o != cp && !rs_push(s, o, o)) return false;
        }
    }
    for (uint32_t i = 0; i < n0 && !ascii; i++) {
        for (size_t w = 0; w < sizeof fold_windows / sizeof fold_windows[0]; w++) {
            uint32_t lo = s->r[i].lo > fold_windows[w].lo ? s->r[i].lo : fold_windows[w].lo;
            uint32_t hi = s->r[i].hi < fold_windows[w].hi ? s->r[i].hi : fold_windows[w].hi;
            for (uint32_t cp = lo; cp <= hi && lo <= hi; cp++) {
                uint32_t o[4];
                int k = fold_orbit(cp, o);
                for (int j = 0; j < k; j++)
                    if (o[j] != cp && !rs_push(s, o[j], o[j])) return false;
            }
        }
    }
    rs_normalize(s);
    return true;
}

/* ------------------------------------------------------------------------ */
/* Perl and ASCII classes                                                    */

static const df__rx_range digit_uni[] = {
    {'0', '9'}, {0x660, 0x669}, {0x6F0, 0x6F9}, {0x966, 0x96F}, {0x9E6, 0x9EF}, {0xFF10, 0xFF19},
};
static const df__rx_range space_uni[] = {
    {9, 13}, {' ', ' '}, {0x85, 0x85}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
};
/* Letters, marks and digits of the scripts the engine knows (an approximation of Unicode \w). */
static const df__rx_range word_uni[] = {
    {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}, {0xAA, 0xAA}, {0xB5, 0xB5}, {0xBA, 0xBA},
    {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x2C1}, {0x2C6, 0x2D1}, {0x2E0, 0x2E4}, {0x300, 0x374},
    {0x376, 0x377}, {0x37A, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x3F5}, {0x3F7, 0x481},
    {0x483, 0x52F}, {0x531, 0x556}, {0x561, 0x587}, {0x591, 0x5BD}, {0x5D0, 0x5EA}, {0x610, 0x61A},
    {0x620, 0x669}, {0x66E, 0x6D3}, {0x6F0, 0x6FC}, {0x900, 0x963}, {0x966, 0x96F}, {0x9E6, 0x9EF},
    {0xE01, 0xE3A}, {0xE40, 0xE4E}, {0x10A0, 0x10FF}, {0x1E00, 0x1FFF}, {0x203F, 0x2040}, {0x2071, 0x2071}, {0x207F, 0x207F},
    {0x2090, 0x209C}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D},
    {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2139}, {0x213C, 0x213F},
    {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2160, 0x2188},
    {0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3},
    {0xFF10, 0xFF19}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A},
};
static const df__rx_range digit_ascii[] = {{'0', '9'}};
static const df__rx_range space_ascii[] = {{9, 13}, {' ', ' '}};
static const df__rx_range word_ascii[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};

bool df__rx_is_word(uint32_t cp, bool ascii) {
    if (cp < 0x80 || ascii)
        return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || cp == '_';
    size_t lo = 0, hi = sizeof word_uni / sizeof word_uni[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < word_uni[mid].lo) hi = mid;
        else if (cp > word_uni[mid].hi) lo = mid + 1;
        else return true;
    }
    return false;
}

static bool rs_add_table(rset *s, const df__rx_range *t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!rs_push(s, t[i].lo, t[i].hi)) return false;
    return true;
}

#define TABLE(t) (t), sizeof(t) / sizeof((t)[0])

/* \d \s \w (lowercase letter) or their negations (uppercase) into s; false on out of memory. */
static bool perl_class(rset *s, uint8_t c, bool ascii) {
    rset t = {0};
    bool ok;
    switch (c | 0x20) {
    case 'd': ok = ascii ? rs_add_table(&t, TABLE(digit_ascii)) : rs_add_table(&t, TABLE(digit_uni)); break;
    case 's': ok = ascii ? rs_add_table(&t, TABLE(space_ascii)) : rs_add_table(&t, TABLE(space_uni)); break;
    default: ok = ascii ? rs_add_table(&t, TABLE(word_ascii)) : rs_add_table(&t, TABLE(word_uni)); break;
    }
    if (ok) rs_normalize(&t);
    if (ok && c >= 'A' && c <= 'Z') ok = rs_negate(&t);
    if (ok) ok = rs_union(s, &t);
    rs_free(&t);
    return ok;
}

typedef struct ascii_class {
    const char *name;           /* [:name:] */
    const char *ranges;         /* pairs of bounds */
} ascii_class;

static const ascii_class ascii_classes[] = {
    {"alnum", "09AZaz"}, {"alpha", "AZaz"}, {"ascii", "\x01\x7f"}, {"blank", "\t\t  "},
    {"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"}, {"graph", "!~"}, {"lower", "az"},
    {"print", " ~"}, {"punct", "!/:@[`{~"}, {"space", "\t\r  "}, {"upper", "AZ"},
    {"word", "09AZ__az"}, {"xdigit", "09AFaf"},
};

/* ------------------------------------------------------------------------ */
/* The parser                                                                */

static int32_t new_node(parser *p, uint8_t kind) {
    if (p->nn == p->cn) {
        uint32_t nc = p->cn ? p->cn * 2 : 64;
        if (nc > (1u << 28)) {
            DF_OOM(p->err);
            return NO_NODE;
        }
        node *nn = df_realloc(p->nodes, (size_t)nc * sizeof *nn);
        if (!nn) {
            DF_OOM(p->err);
            return NO_NODE;
        }
        p->nodes = nn;
        p->cn = nc;
    }
    node *x = &p->nodes[p->nn];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->child = x->next = NO_NODE;
    return (int32_t)p->nn++;
}

static bool at_end(const parser *p) { return p->i >= p->n; }
static uint8_t peek(const parser *p) { return p->i < p->n ? p->s[p->i] : 0; }
static uint8_t peek_at(const parser *p, size_t k) { return p->i + k < p->n ? p->s[p->i + k] : 0; }

/* Skips whitespace and # comments (the x flag). */
static void skip_verbose(parser *p) {
    while (p->i < p->n) {
        uint8_t c = p->s[p->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            p->i++;
        } else if (c == '#') {
            while (p->i < p->n && p->s[p->i] != '\n') p->i++;
        } else {
            break;
        }
    }
}

/* Reads one code point of the pattern (invalid UTF-8 is an error). */
static df_errkind read_cp(parser *p, uint32_t *cp) {
    uint32_t c;
    size_t at = p->i;
    uint32_t len = df__rx_utf8_decode(p->s + p->i, p->n - p->i, &c);
    if (c == 0xFFFD && len == 1) return syntax(p, at, "invalid UTF-8 in the pattern");
    p->i += len;
    *cp = c;
    return DF_OK;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* \x.. \u.... \U........ or the braced forms, after the letter; at is the backslash. */
static df_errkind parse_hex(parser *p, size_t at, int digits, uint32_t *cp) {
    uint32_t v = 0;
    if (peek(p) == '{') {
        p->i++;
        int k = 0;
        while (!at_end(p) && peek(p) != '}') {
            int h = hexval(peek(p));
            if (h < 0) return syntax(p, p->i, "invalid hexadecimal digit");
            if (++k > 8) return syntax(p, at, "hexadecimal escape is too long");
            v = v * 16 + (uint32_t)h;
            p->i++;
        }
        if (at_end(p)) return syntax(p, at, "unclosed hexadecimal escape");
        if (k == 0) return syntax(p, at, "empty hexadecimal escape");
        p->i++;
    } else {
        for (int k = 0; k < digits; k++) {
            int h = hexval(peek(p));
            if (h < 0) return syntax(p, at_end(p) ? at : p->i, "invalid hexadecimal escape");
            v = v * 16 + (uint32_t)h;
            p->i++;
        }
    }
    if (v > MAX_CP || (v >= 0xD800 && v <= 0xDFFF)) return syntax(p, at, "escape is not a Unicode scalar value");
    *cp = v;
    return DF_OK;
}

/* What an escape denotes. */
typedef enum { ESC_CHAR, ESC_CLASS, ESC_ASSERT } esc_kind;

/*
 * Parses an escape after its backslash (p->i is past it; at is the
 * backslash): a character (*cp), a class (added to *cls) or an assertion
 * (*cp = DF__RX_AS_*).
 */
static df_errkind parse_escape(parser *p, size_t at, uint32_t flags, esc_kind *kind, uint32_t *cp, rset *cls) {
    if (at_end(p)) return syntax(p, at, "incomplete escape sequence");
    uint8_t c = p->s[p->i++];
    bool ascii = flags & DF__RX_ASCII;
    *kind = ESC_CHAR;
    switch (c) {
    case 'n': *cp = '\n'; return DF_OK;
    case 't': *cp = '\t'; return DF_OK;
    case 'r': *cp = '\r'; return DF_OK;
    case 'f': *cp = '\f'; return DF_OK;
    case 'v': *cp = '\v'; return DF_OK;
    case 'a': *cp = 7; return DF_OK;
    case 'x': return parse_hex(p, at, 2, cp);
    case 'u': return parse_hex(p, at, 4, cp);
    case 'U': return parse_hex(p, at, 8, cp);
    case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
        *kind = ESC_CLASS;
        return perl_class(cls, c, ascii) ? DF_OK : DF_OOM(p->err);
    case 'p': case 'P': return syntax(p, at, "Unicode property classes (\\p) are not supported");
    case 'A': *kind = ESC_ASSERT; *cp = DF__RX_AS_TEXT_START; return DF_OK;
    case 'z': *kind = ESC_ASSERT; *cp = DF__RX_AS_TEXT_END; return DF_OK;
    case 'B': *kind = ESC_ASSERT; *cp = DF__RX_AS_NOT_WORD + (ascii ? DF__RX_AS_ASCII : 0); return DF_OK;
    case '<': *kind = ESC_ASSERT; *cp = DF__RX_AS_WORD_START + (ascii ? DF__RX_AS_ASCII : 0); return DF_OK;
    case '>': *kind = ESC_ASSERT; *cp = DF__RX_AS_WORD_END + (ascii ? DF__RX_AS_ASCII : 0); return DF_OK;
    case 'b':
        *kind = ESC_ASSERT;
        *cp = DF__RX_AS_WORD;
        if (peek(p) == '{') {
            static const char *const names[] = {"start", "end"};
            for (int k = 0; k < 2; k++) {
                size_t l = strlen(names[k]);
                if (p->i + l + 2 <= p->n && memcmp(p->s + p->i + 1, names[k], l) == 0 && p->s[p->i + 1 + l] == '}') {
                    *cp = k == 0 ? DF__RX_AS_WORD_START : DF__RX_AS_WORD_END;
                    p->i += l + 2;
                    break;
                }
            }
            if (*cp == DF__RX_AS_WORD) return syntax(p, at, "unsupported word boundary assertion");
        }
        if (ascii) *cp += DF__RX_AS_ASCII;
        return DF_OK;
    default: break;
    }
    if (c >= '0' && c <= '9') return syntax(p, at, "backreferences are not supported");
    if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
        *cp = c;
        return DF_OK;
    }
    return syntax(p, at, "unrecognized escape sequence");
}

/* One class member for a range bound: a character, or a class (*is_set). */
static df_errkind class_atom(parser *p, uint32_t flags, uint32_t *cp, bool *is_set, rset *acc) {
    *is_set = false;
    if (peek(p) == '\\') {
        size_t at = p->i++;
        esc_kind k;
        DF_TRY(parse_escape(p, at, flags, &k, cp, acc));
        if (k == ESC_ASSERT) return syntax(p, at, "assertions are not allowed in a character class");
        *is_set = k == ESC_CLASS;
        return DF_OK;
    }
    return read_cp(p, cp);
}

/*
 * [:name:] or [:^name:] at p->i (which is '['); *matched false leaves p->i
 * alone.  Under i the class is folded before it is negated, as in Rust, so
 * (?i)[[:^alpha:]] does not match the Kelvin sign (a fold of k).
 */
static df_errkind posix_class(parser *p, uint32_t flags, rset *acc, bool *matched) {
    *matched = false;
    size_t j = p->i + 2;
    bool neg = j < p->n && p->s[j] == '^';
    if (neg) j++;
    size_t name = j;
    while (j < p->n && p->s[j] >= 'a' && p->s[j] <= 'z') j++;
    if (j + 1 >= p->n || p->s[j] != ':' || p->s[j + 1] != ']') return DF_OK;
    for (size_t k = 0; k < sizeof ascii_classes / sizeof ascii_classes[0]; k++) {
        const ascii_class *ac = &ascii_classes[k];
        if (strlen(ac->name) != j - name || memcmp(ac->name, p->s + name, j - name) != 0) continue;
        rset t = {0};
        bool ok = true;
        for (const char *r = ac->ranges; *r && ok; r += 2) ok = rs_push(&t, (uint8_t)r[0], (uint8_t)r[1]);
        if (ok && (strcmp(ac->name, "ascii") == 0 || strcmp(ac->name, "cntrl") == 0)) ok = rs_push(&t, 0, 0);
        if (ok) rs_normalize(&t);
        if (ok && (flags & DF__RX_ICASE)) ok = rs_fold(&t, flags & DF__RX_ASCII);
        if (ok && neg) ok = rs_negate(&t);
        if (ok) ok = rs_union(acc, &t);
        rs_free(&t);
        if (!ok) return DF_OOM(p->err);
        p->i = j + 2;
        *matched = true;
        return DF_OK;
    }
    return syntax(p, p->i, "unknown ASCII character class name");
}

/* A bracketed class, p->i just past its '['; the result (folded, negated as written) into *out. */
static df_errkind parse_class(parser *p, uint32_t flags, int depth, size_t open, rset *out) {
    rset acc = {0}, left = {0};
    char op = 0;
    df_errkind e = DF_OK;
    bool neg = peek(p) == '^';
    if (neg) p->i++;
    bool first = true;
    for (;;) {
        if (flags & DF__RX_VERBOSE) skip_verbose(p);
        if (at_end(p)) {
            e = syntax(p, open, "unclosed character class");
            goto fail;
        }
        uint8_t c = peek(p);
        if (c == ']' && !first) {
            p->i++;
            break;
        }
        first = false;
        uint8_t d = peek_at(p, 1);
        if ((c == '&' && d == '&') || (c == '-' && d == '-') || (c == '~' && d == '~')) {
            rs_normalize(&acc);
            if ((flags & DF__RX_ICASE) && !rs_fold(&acc, flags & DF__RX_ASCII)) goto oom;
            if (op) {
                if (!rs_apply(&left, &acc, op)) goto oom;
                rs_free(&acc);
            } else {
                rs_free(&left);
                left = acc;
                acc = (rset){0};
            }
            op = (char)c;
            p->i += 2;
            continue;
        }
        if (c == '[') {
            bool matched;
            if (d == ':') {
                e = posix_class(p, flags, &acc, &matched);
                if (e) goto fail;
                if (matched) continue;
            }
            if (depth + 1 > DF__RX_NEST_LIMIT) {
                e = too_deep(p, p->i);
                goto fail;
            }
            size_t sub_open = p->i++;
            rset sub = {0};
            e = parse_class(p, flags, depth + 1, sub_open, &sub);
            if (!e && !rs_union(&acc, &sub)) e = DF_OOM(p->err);
            rs_free(&sub);
            if (e) goto fail;
            continue;
        }
        size_t at = p->i;
        uint32_t lo;
        bool is_set;
        e = class_atom(p, flags, &lo, &is_set, &acc);
        if (e) goto fail;
        if (is_set) continue;
        uint32_t hi = lo;
        if (peek(p) == '-' && peek_at(p, 1) != ']' && peek_at(p, 1) != '-' && p->i + 1 < p->n) {
            p->i++;
            e = class_atom(p, flags, &hi, &is_set, &acc);
            if (e) goto fail;
            if (is_set) {
                e = syntax(p, at, "invalid range boundary in a character class");
                goto fail;
            }
            if (hi < lo) {
                e = syntax(p, at, "invalid character class range, the start must be <= the end");
                goto fail;
            }
        }
        if (!rs_push(&acc, lo, hi)) goto oom;
        if (acc.n > 4096) rs_normalize(&acc);
    }
    rs_normalize(&acc);
    if ((flags & DF__RX_ICASE) && !rs_fold(&acc, flags & DF__RX_ASCII)) goto oom;
    if (op) {
        if (!rs_apply(&left, &acc, op)) goto oom;
        rs_free(&acc);
        acc = left;
        left = (rset){0};
    }
    if (neg && !rs_negate(&acc)) goto oom;
    rs_free(&left);
    *out = acc;
    return DF_OK;
oom:
    e = DF_OOM(p->err);
fail:
    rs_free(&acc);
    rs_free(&left);
    return e;
}

/* A node for a normalized set: a literal when it is one code point. */
static df_errkind set_node(parser *p, const rset *s, int32_t *out) {
    if (s->n == 1 && s->r[0].lo == s->r[0].hi) {
        int32_t x = new_node(p, N_LIT);
        if (x == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
        p->nodes[x].a = s->r[0].lo;
        *out = x;
        return DF_OK;
    }
    int32_t x = new_node(p, N_CLASS);
    if (x == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
    p->nodes[x].a = p->rg.n;
    p->nodes[x].b = s->n;
    for (uint32_t i = 0; i < s->n; i++)
        if (!rs_push(&p->rg, s->r[i].lo, s->r[i].hi)) return DF_OOM(p->err);
    *out = x;
    return DF_OK;
}

/* A literal code point, case-folded under i. */
static df_errkind lit_node(parser *p, uint32_t cp, uint32_t flags, int32_t *out) {
    rset s = {0};
    if (!rs_push(&s, cp, cp) || ((flags & DF__RX_ICASE) && !rs_fold(&s, flags & DF__RX_ASCII))) {
        rs_free(&s);
        return DF_OOM(p->err);
    }
    df_errkind e = set_node(p, &s, out);
    rs_free(&s);
    return e;
}

/* Records a new capture group's name (empty when unnamed); *num its number. */
static df_errkind add_group(parser *p, const uint8_t *name, size_t len, size_t at, uint32_t *num) {
    if (len) {
        for (uint32_t g = 1; g < p->ngroups; g++) {
            const char *o = p->names + p->noff[g];
            if (strlen(o) == len && memcmp(o, name, len) == 0) return syntax(p, at, "duplicate capture group name");
        }
    }
    if (p->ngroups == p->cgroups) {
        uint32_t nc = p->cgroups ? p->cgroups * 2 : 8;
        uint32_t *no = df_realloc(p->noff, (size_t)nc * sizeof *no);
        if (!no) return DF_OOM(p->err);
        p->noff = no;
        p->cgroups = nc;
    }
    if (p->nlen + len + 1 > p->ncap) {
        size_t nc = (p->nlen + len + 1) * 2;
        char *nb = df_realloc(p->names, nc);
        if (!nb) return DF_OOM(p->err);
        p->names = nb;
        p->ncap = nc;
    }
    p->noff[p->ngroups] = (uint32_t)p->nlen;
    if (len) memcpy(p->names + p->nlen, name, len);
    p->names[p->nlen + len] = '\0';
    p->nlen += len + 1;
    *num = p->ngroups++;
    return DF_OK;
}

static bool name_char(uint8_t c, bool first) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
    return !first && ((c >= '0' && c <= '9') || c == '.' || c == '[' || c == ']');
}

/* A decimal repetition bound. */
static df_errkind parse_count(parser *p, size_t at, uint32_t *v) {
    if (!(peek(p) >= '0' && peek(p) <= '9')) return syntax(p, at, "invalid counted repetition");
    uint64_t x = 0;
    while (peek(p) >= '0' && peek(p) <= '9') {
        x = x * 10 + (uint64_t)(peek(p) - '0');
        if (x >= INF) return syntax(p, at, "repetition count is too large");
        p->i++;
    }
    *v = (uint32_t)x;
    return DF_OK;
}

typedef struct seq {
    int32_t first, last;        /* the linked items */
    uint32_t count;             /* items */
    uint16_t depth;             /* deepest item */
} seq;

static void seq_add(parser *p, seq *s, int32_t x) {
    if (s->last == NO_NODE) s->first = x;
    else p->nodes[s->last].next = x;
    s->last = x;
    s->count++;
    if (p->nodes[x].depth > s->depth) s->depth = p->nodes[x].depth;
}

/* A sequence closed into one node: EMPTY, its only item, or a CAT / ALT. */
static df_errkind seq_close(parser *p, seq *s, uint8_t kind, int32_t *out) {
    if (s->count == 1) {
        *out = s->first;
    } else {
        int32_t x = new_node(p, s->count == 0 ? N_EMPTY : kind);
        if (x == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
        p->nodes[x].child = s->first;
        p->nodes[x].depth = s->depth;
        *out = x;
    }
    *s = (seq){NO_NODE, NO_NODE, 0, 0};
    return DF_OK;
}

static df_errkind parse_expr(parser *p, uint32_t flags, int depth, int32_t *out);

/* After '(' at `open`: the group, or only new flags (*out NO_NODE, *flags updated). */
static df_errkind parse_group(parser *p, uint32_t *flags, int depth, size_t open, int32_t *out) {
    *out = NO_NODE;
    uint32_t num = UINT32_MAX;
    uint32_t gflags = *flags;
    if (peek(p) == '?') {
        p->i++;
        uint8_t c = peek(p);
        if (c == '=' || c == '!' || (c == '<' && (peek_at(p, 1) == '=' || peek_at(p, 1) == '!')))
            return syntax(p, open, "look-around, including look-ahead and look-behind, is not supported");
        if (c == 'P' && peek_at(p, 1) == '=') return syntax(p, open, "backreferences are not supported");
        if (c == '<' || (c == 'P' && peek_at(p, 1) == '<')) {
            p->i += c == 'P' ? 2 : 1;
            size_t name = p->i;
            while (!at_end(p) && name_char(peek(p), p->i == name)) p->i++;
            if (at_end(p)) return syntax(p, open, "unclosed capture group name");
            if (peek(p) != '>') return syntax(p, p->i, "invalid capture group name");
            if (p->i == name) return syntax(p, p->i, "empty capture group name");
            DF_TRY(add_group(p, p->s + name, p->i - name, name, &num));
            p->i++;
        } else {
            bool negate = false, any = false;
            for (;;) {
                if (at_end(p)) return syntax(p, open, "unclosed group");
                c = p->s[p->i];
                if (c == ')' || c == ':') break;
                uint32_t f = 0;
                switch (c) {
                case 'i': f = DF__RX_ICASE; break;
                case 'm': f = DF__RX_MULTILINE; break;
                case 's': f = DF__RX_DOTALL; break;
                case 'U': f = DF__RX_SWAP_GREED; break;
                case 'x': f = DF__RX_VERBOSE; break;
                case 'u': f = DF__RX_ASCII; break;
                case '-':
                    if (negate) return syntax(p, p->i, "repeated negation in flags");
                    negate = true;
                    any = false;
                    p->i++;
                    continue;
                default: return syntax(p, p->i, "unrecognized flag");
                }
                /* u is the one flag on by default: its bit records it off. */
                bool on = c == 'u' ? negate : !negate;
                gflags = on ? (gflags | f) : (gflags & ~f);
                any = true;
                p->i++;
            }
            if (negate && !any) return syntax(p, p->i, "expected a flag after the negation");
            if (p->s[p->i] == ')') {
                if (!any) return syntax(p, p->i, "expected a flag");
                p->i++;
                *flags = gflags;
                return DF_OK;
            }
            p->i++; /* ':' */
        }
    } else {
        DF_TRY(add_group(p, NULL, 0, open, &num));
    }
    if (depth + 1 > DF__RX_NEST_LIMIT) return too_deep(p, open);
    int32_t inner;
    DF_TRY(parse_expr(p, gflags, depth + 1, &inner));
    if (at_end(p) || peek(p) != ')') return syntax(p, open, "unclosed group");
    p->i++;
    if (num == UINT32_MAX) {
        *out = inner;
        return DF_OK;
    }
    int32_t g = new_node(p, N_GROUP);
    if (g == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
    p->nodes[g].a = num;
    p->nodes[g].child = inner;
    p->nodes[g].depth = (uint16_t)(p->nodes[inner].depth + 1);
    *out = g;
    return DF_OK;
}

/* Wraps the last item of `cat` into a repetition (it keeps its place in the list). */
static df_errkind repeat_last(parser *p, seq *cat, size_t at, uint32_t min, uint32_t max, bool greedy) {
    if (cat->last == NO_NODE) return syntax(p, at, "repetition operator missing expression");
    int32_t moved = new_node(p, N_EMPTY);
    if (moved == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
    node *last = &p->nodes[cat->last];
    uint16_t depth = (uint16_t)(last->depth + 1);
    if (depth > DF__RX_NEST_LIMIT) return too_deep(p, at);
    p->nodes[moved] = *last;
    p->nodes[moved].next = NO_NODE;
    *last = (node){.kind = N_REP, .greedy = greedy, .depth = depth, .a = min, .b = max, .child = moved,
                   .next = NO_NODE};
    if (depth > cat->depth) cat->depth = depth;
    return DF_OK;
}

/* An alternation up to ')' or the end (not consumed). */
static df_errkind parse_expr(parser *p, uint32_t flags, int depth, int32_t *out) {
    seq alts = {NO_NODE, NO_NODE, 0, 0}, cat = {NO_NODE, NO_NODE, 0, 0};
    bool after_flags = false; /* a (?flags) just ended: a repetition here has no operand */
    for (;;) {
        if (flags & DF__RX_VERBOSE) skip_verbose(p);
        if (at_end(p) || peek(p) == ')') break;
        size_t at = p->i;
        uint8_t c = peek(p);
        int32_t x = NO_NODE;
        switch (c) {
        case '|': {
            p->i++;
            after_flags = false;
            int32_t b;
            DF_TRY(seq_close(p, &cat, N_CAT, &b));
            seq_add(p, &alts, b);
            continue;
        }
        case '*': case '+': case '?': case '{': {
            p->i++;
            uint32_t min = c == '+' ? 1 : 0, max = c == '?' ? 1 : INF;
            if (c == '{') {
                if (flags & DF__RX_VERBOSE) skip_verbose(p);
                if (at_end(p)) return syntax(p, at, "unclosed counted repetition");
                DF_TRY(parse_count(p, at, &min));
                max = min;
                if (flags & DF__RX_VERBOSE) skip_verbose(p);
                if (peek(p) == ',') {
                    p->i++;
                    if (flags & DF__RX_VERBOSE) skip_verbose(p);
                    max = INF;
                    if (peek(p) != '}') DF_TRY(parse_count(p, at, &max));
                }
                if (flags & DF__RX_VERBOSE) skip_verbose(p);
                if (at_end(p)) return syntax(p, at, "unclosed counted repetition");
                if (peek(p) != '}') return syntax(p, p->i, "invalid counted repetition");
                p->i++;
                if (min > max) return syntax(p, at, "invalid repetition count range, the start must be <= the end");
            }
            if (after_flags) return syntax(p, at, "repetition operator missing expression");
            bool lazy = peek(p) == '?';
            if (lazy) p->i++;
            DF_TRY(repeat_last(p, &cat, at, min, max, lazy == !!(flags & DF__RX_SWAP_GREED)));
            continue;
        }
        case '(': {
            p->i++;
            DF_TRY(parse_group(p, &flags, depth, at, &x));
            after_flags = x == NO_NODE;
            if (after_flags) continue;
            break;
        }
        case '[': {
            p->i++;
            rset s = {0};
            DF_TRY(parse_class(p, flags, 1, at, &s));
            df_errkind e = set_node(p, &s, &x);
            rs_free(&s);
            DF_TRY(e);
            break;
        }
        case '.':
            p->i++;
            x = new_node(p, (flags & DF__RX_DOTALL) ? N_ANY : N_ANY_NL);
            if (x == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
            break;
        case '^': case '$':
            p->i++;
            x = new_node(p, N_ASSERT);
            if (x == NO_NODE) return DF_ERR_OUT_OF_MEMORY;
            p->nodes[x].a = (flags & DF__RX_MULTILINE) ? (c == '^' ? DF__RX_AS_LINE_START : DF__RX_AS_LINE_END)
                                                       : (c == '^' ? DF__RX_AS_TEXT_START : DF__RX_AS_TEXT_END);
            break;
        case '\\': {
            p->i++;
            esc_kind k;
            uint32_t cp = 0;
            rset s = {0};
            df_errkind e = parse_escape(p, at, flags, &k, &cp, &s);
            if (!e) {
                if (k == ESC_CLASS) {
                    /* Perl classes are not folded (Rust's are closed under folding already). */
                    e = set_node(p, &s, &x);
                } else if (k == ESC_CHAR) {
                    e = lit_node(p, cp, flags, &x);
                } else {
                    x = new_node(p, N_ASSERT);
                    if (x == NO_NODE) e = DF_ERR_OUT_OF_MEMORY;
                    else p->nodes[x].a = cp;
                }
            }
            rs_free(&s);
            DF_TRY(e);
            break;
        }
        default: {
            uint32_t cp = 0;
            DF_TRY(read_cp(p, &cp));
            DF_TRY(lit_node(p, cp, flags, &x));
            break;
        }
        }
        seq_add(p, &cat, x);
        after_flags = false;
    }
    if (!at_end(p) && depth == 0) return syntax(p, p->i, "unopened group");
    int32_t b;
    DF_TRY(seq_close(p, &cat, N_CAT, &b));
    if (alts.count == 0) {
        *out = b;
        return DF_OK;
    }
    seq_add(p, &alts, b);
    return seq_close(p, &alts, N_ALT, out);
}

/* ------------------------------------------------------------------------ */
/* Size and code generation                                                  */

/* Instructions the program may hold before the size limit is reached (+1: over it). */
#define MAX_INST ((uint64_t)(DF__RX_SIZE_LIMIT / sizeof(df__rx_inst)) + 1)

static uint64_t sat(uint64_t v) { return v > MAX_INST ? MAX_INST : v; }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return (a && b > MAX_INST / a) ? MAX_INST : sat(a * b); }

/* Instructions node x compiles to, saturating at MAX_INST (recursion bounded by the nesting limit). */
static uint64_t size_of(const parser *p, int32_t x) {
    const node *n = &p->nodes[x];
    switch (n->kind) {
    case N_EMPTY: return 0;
    case N_GROUP: return sat(size_of(p, n->child) + 2);
    case N_CAT: case N_ALT: {
        uint64_t s = 0;
        for (int32_t c = n->child; c != NO_NODE; c = p->nodes[c].next) {
            s = sat(s + size_of(p, c) + (n->kind == N_ALT ? 2 : 0));
            if (s >= MAX_INST) return MAX_INST;
        }
        return n->kind == N_ALT ? s - 2 : s;
    }
    case N_REP: {
        uint64_t e = size_of(p, n->child);
        if (n->b == INF) return n->a == 0 ? sat(e + 2) : sat(sat_mul(n->a, e) + 1);
        return sat(sat_mul(n->a, e) + sat_mul(n->b - n->a, e + 1));
    }
    default: return 1;
    }
}

/* True when node x can match the empty string. */
static bool matches_empty(const parser *p, int32_t x) {
    const node *n = &p->nodes[x];
    switch (n->kind) {
    case N_EMPTY: case N_ASSERT: return true;
    case N_GROUP: return matches_empty(p, n->child);
    case N_REP: return n->a == 0 || matches_empty(p, n->child);
    case N_CAT:
        for (int32_t c = n->child; c != NO_NODE; c = p->nodes[c].next)
            if (!matches_empty(p, c)) return false;
        return true;
    case N_ALT:
        for (int32_t c = n->child; c != NO_NODE; c = p->nodes[c].next)
            if (matches_empty(p, c)) return true;
        return false;
    default: return false;
    }
}

typedef struct emitter {
    df__rx_inst *prog;          /* sized by size_of */
    uint32_t n;                 /* emitted */
    const parser *p;            /* the tree */
} emitter;

static uint32_t emit_op(emitter *g, uint8_t op, uint32_t x, uint32_t y) {
    g->prog[g->n] = (df__rx_inst){op, x, y};
    return g->n++;
}

static void emit(emitter *g, int32_t xi) {
    const node *n = &g->p->nodes[xi];
    switch (n->kind) {
    case N_EMPTY: return;
    case N_LIT: emit_op(g, DF__RX_OP_CHAR, n->a, 0); return;
    case N_CLASS: emit_op(g, DF__RX_OP_CLASS, n->a, n->b); return;
    case N_ANY: emit_op(g, DF__RX_OP_ANY, 0, 0); return;
    case N_ANY_NL: emit_op(g, DF__RX_OP_ANY_NL, 0, 0); return;
    case N_ASSERT: emit_op(g, DF__RX_OP_ASSERT, n->a, 0); return;
    case N_GROUP:
        emit_op(g, DF__RX_OP_SAVE, 2 * n->a, 0);
        emit(g, n->child);
        emit_op(g, DF__RX_OP_SAVE, 2 * n->a + 1, 0);
        return;
    case N_CAT:
        for (int32_t c = n->child; c != NO_NODE; c = g->p->nodes[c].next) emit(g, c);
        return;
    case N_ALT: {
        /* The jumps to the end are chained through their x fields until the end is known. */
        uint32_t chain = UINT32_MAX;
        for (int32_t c = n->child; c != NO_NODE; c = g->p->nodes[c].next) {
            if (g->p->nodes[c].next == NO_NODE) {
                emit(g, c);
                break;
            }
            uint32_t split = emit_op(g, DF__RX_OP_SPLIT, 0, 0);
            g->prog[split].x = g->n;
            emit(g, c);
            chain = emit_op(g, DF__RX_OP_JMP, chain, 0);
            g->prog[split].y = g->n;
        }
        while (chain != UINT32_MAX) {
            uint32_t prev = g->prog[chain].x;
            g->prog[chain].x = g->n;
            chain = prev;
        }
        return;
    }
    case N_REP: {
        uint32_t min = n->a, max = n->b;
        bool greedy = n->greedy;
        if (max == INF) {
            if (min == 0 && !matches_empty(g->p, n->child)) {
                uint32_t split = emit_op(g, DF__RX_OP_SPLIT, 0, 0);
                emit(g, n->child);
                emit_op(g, DF__RX_OP_JMP, split, 0);
                g->prog[split].x = greedy ? split + 1 : g->n;
                g->prog[split].y = greedy ? g->n : split + 1;
                return;
            }
            if (min == 0) {
                /*
                 * e* where e can match the empty string is compiled as (e+)?, so that
                 * one pass through e records its groups before the loop back is cut
                 * (as Rust does: (a*)* on "b" gives group 1 the empty match at 0).
                 */
                uint32_t split = emit_op(g, DF__RX_OP_SPLIT, 0, 0);
                uint32_t top = g->n;
                emit(g, n->child);
                uint32_t back = emit_op(g, DF__RX_OP_SPLIT, 0, 0);
                g->prog[back].x = greedy ? top : back + 1;
                g->prog[back].y = greedy ? back + 1 : top;
                g->prog[split].x = greedy ? top : g->n;
                g->prog[split].y = greedy ? g->n : top;
                return;
            }
            for (uint32_t k = 0; k + 1 < min; k++) emit(g, n->child);
            uint32_t top = g->n;
            emit(g, n->child);
            uint32_t split = emit_op(g, DF__RX_OP_SPLIT, 0, 0);
            g->prog[split].x = greedy ? top : split + 1;
            g->prog[split].y = greedy ? split + 1 : top;
            return;
        }
        for (uint32_t k = 0; k < min; k++) emit(g, n->child);
        /* (e(e(e)?)?)?: every optional copy's split leaves for the common end, chained through y / x. */
        uint32_t chain = UINT32_MAX;
        for (uint32_t k = min; k < max; k++) {
            uint32_t split = emit_op(g, DF__RX_OP_SPLIT, 0, 0);
            if (greedy) {
                g->prog[split].x = split + 1;
                g->prog[split].y = chain;
            } else {
                g->prog[split].x = chain;
                g->prog[split].y = split + 1;
            }
            chain = split;
            emit(g, n->child);
        }
        while (chain != UINT32_MAX) {
            uint32_t *slot = greedy ? &g->prog[chain].y : &g->prog[chain].x;
            uint32_t prev = *slot;
            *slot = g->n;
            chain = prev;
        }
        return;
    }
    default: return;
    }
}

/* Literal bytes every match begins with (the leading code points of the top-level sequence). */
static void find_prefix(const parser *p, int32_t root, uint8_t *buf, uint32_t *len, bool *anchored) {
    *len = 0;
    *anchored = false;
    int32_t c = root;
    if (p->nodes[root].kind == N_CAT) c = p->nodes[root].child;
    else if (p->nodes[root].kind != N_LIT && p->nodes[root].kind != N_ASSERT) return;
    if (p->nodes[c].kind == N_ASSERT && p->nodes[c].a == DF__RX_AS_TEXT_START) *anchored = true;
    for (; c != NO_NODE && p->nodes[c].kind == N_LIT && *len + 4 <= 64; c = p->nodes[c].next) {
        uint32_t cp = p->nodes[c].a;
        if (cp < 0x80) {
            buf[(*len)++] = (uint8_t)cp;
        } else if (cp < 0x800) {
            buf[(*len)++] = (uint8_t)(0xC0 | (cp >> 6));
            buf[(*len)++] = (uint8_t)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            buf[(*len)++] = (uint8_t)(0xE0 | (cp >> 12));
            buf[(*len)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
            buf[(*len)++] = (uint8_t)(0x80 | (cp & 0x3F));
        } else {
            buf[(*len)++] = (uint8_t)(0xF0 | (cp >> 18));
            buf[(*len)++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
            buf[(*len)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
            buf[(*len)++] = (uint8_t)(0x80 | (cp & 0x3F));
        }
    }
}

void df__regex_free(df__regex *re) {
    if (!re) return;
    df_free(re->prog);
    df_free(re->ranges);
    df_free(re->names);
    df_free(re->name_off);
    df_free(re->prefix);
    df_free(re);
}

int32_t df__regex_group_named(const df__regex *re, const uint8_t *name, size_t n) {
    for (uint32_t g = 1; g < re->ngroups; g++) {
        const char *o = re->names + re->name_off[g];
        if (n && strlen(o) == n && memcmp(o, name, n) == 0) return (int32_t)g;
    }
    return -1;
}

df_errkind df__regex_new(const uint8_t *pat, size_t n, uint32_t flags, df__regex **out, df_error *err) {
    *out = NULL;
    parser p = {.s = pat, .n = n, .err = err};
    df__regex *re = NULL;
    df_errkind e = add_group(&p, NULL, 0, 0, &(uint32_t){0});
    int32_t root = NO_NODE;
    if (!e) e = parse_expr(&p, flags, 0, &root);
    if (e) goto done;
    uint64_t ninst = sat(size_of(&p, root) + 3);
    uint64_t bytes = ninst * sizeof(df__rx_inst) + (uint64_t)p.rg.n * sizeof(df__rx_range);
    if (ninst >= MAX_INST || bytes > DF__RX_SIZE_LIMIT) {
        e = df_error_set(err, DF_ERR_EXECUTION, "regex compiles to more than the size limit of %zu bytes",
                         DF__RX_SIZE_LIMIT);
        df_error_set_subkind(err, DF_ERR_REGEX_TOO_BIG);
        goto done;
    }
    re = df_calloc(1, sizeof *re);
    if (!re || !(re->prog = df_malloc((size_t)ninst * sizeof *re->prog))) {
        e = DF_OOM(err);
        goto done;
    }
    emitter g = {re->prog, 0, &p};
    emit_op(&g, DF__RX_OP_SAVE, 0, 0);
    emit(&g, root);
    emit_op(&g, DF__RX_OP_SAVE, 1, 0);
    emit_op(&g, DF__RX_OP_MATCH, 0, 0);
    if (g.n != ninst) {
        e = df_error_set(err, DF_ERR_INTERNAL, "regex program size %u differs from its estimate", g.n);
        goto done;
    }
    re->ninst = g.n;
    re->ranges = p.rg.r;
    re->nranges = p.rg.n;
    p.rg.r = NULL;
    re->ngroups = p.ngroups;
    re->names = p.names;
    re->name_off = p.noff;
    p.names = NULL;
    p.noff = NULL;
    uint8_t pre[64];
    find_prefix(&p, root, pre, &re->nprefix, &re->anchored);
    if (re->nprefix) {
        re->prefix = df_malloc(re->nprefix);
        if (!re->prefix) {
            e = DF_OOM(err);
            goto done;
        }
        memcpy(re->prefix, pre, re->nprefix);
    }
    *out = re;
    re = NULL;
done:
    df__regex_free(re);
    df_free(p.nodes);
    rs_free(&p.rg);
    df_free(p.names);
    df_free(p.noff);
    return e;
}
