/* The regular expression engine (regex_int.h): syntax, captures, leftmost-first semantics, limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/regex_int.h"
#include "exec_test_util.h"

/*
 * The match of pat in subject as text: "start-end" per group joined by
 * spaces ("-" for a group that did not take part), "none" without a
 * match, or "ERROR <subkind>" when the pattern does not compile.
 */
static const char *rx(const char *pat, uint32_t flags, const char *subject) {
    static char out[512];
    df_error err = {0};
    df__regex *re = NULL;
    if (df__regex_new((const uint8_t *)pat, strlen(pat), flags, &re, &err) != DF_OK) {
        snprintf(out, sizeof out, "ERROR %s", df_errkind_name(err.subkind ? err.subkind : err.kind));
        df_error_clear(&err);
        return out;
    }
    df__rx_scratch sc = {0};
    int64_t slots[40];
    uint32_t ns = 2 * re->ngroups < 40 ? 2 * re->ngroups : 40;
    bool found = false;
    DF_ASSERT_OK(df__regex_find(re, &sc, (const uint8_t *)subject, strlen(subject), 0, slots, ns, NULL, &found, &err),
                 &err);
    /* Match-only search must agree with the capturing one. */
    bool found2 = false;
    DF_ASSERT_OK(df__regex_find(re, &sc, (const uint8_t *)subject, strlen(subject), 0, NULL, 0, NULL, &found2, &err),
                 &err);
    DF_ASSERT(found == found2);
    size_t k = 0;
    out[0] = '\0';
    if (!found) snprintf(out, sizeof out, "none");
    for (uint32_t g = 0; found && g < ns / 2; g++) {
        if (slots[2 * g] < 0) k += (size_t)snprintf(out + k, sizeof out - k, "%s-", g ? " " : "");
        else
            k += (size_t)snprintf(out + k, sizeof out - k, "%s%lld-%lld", g ? " " : "", (long long)slots[2 * g],
                                  (long long)slots[2 * g + 1]);
    }
    df__rx_scratch_free(&sc);
    df__regex_free(re);
    return out;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

DF_TEST(regex_literals_classes_and_escapes) {
    DF_ASSERT_EQ_STR(rx("abc", 0, "xxabcx"), "2-5");
    DF_ASSERT_EQ_STR(rx("a.c", 0, "a\nc abc"), "4-7");
    DF_ASSERT_EQ_STR(rx("(?s)a.c", 0, "a\nc"), "0-3");
    DF_ASSERT_EQ_STR(rx("\\d+", 0, "ab 123 4"), "3-6");
    DF_ASSERT_EQ_STR(rx("\\w+", 0, "  foo_1 "), "2-7");
    DF_ASSERT_EQ_STR(rx("\\s\\S", 0, "ab c"), "2-4");
    DF_ASSERT_EQ_STR(rx("\\D\\W", 0, "1a!"), "1-3");
    DF_ASSERT_EQ_STR(rx("[a-c]+", 0, "xxbcaz"), "2-5");
    DF_ASSERT_EQ_STR(rx("[^a-c]+", 0, "abxyc"), "2-4");
    DF_ASSERT_EQ_STR(rx("[]a]+", 0, "x]a]"), "1-4");
    DF_ASSERT_EQ_STR(rx("[a-]+", 0, "x-a-"), "1-4");
    DF_ASSERT_EQ_STR(rx("[[:alpha:]]+", 0, "12ab3"), "2-4");
    DF_ASSERT_EQ_STR(rx("[[:^digit:]]+", 0, "12ab3"), "2-4");
    DF_ASSERT_EQ_STR(rx("[a-z&&[^aeiou]]+", 0, "aebcdo"), "2-5");
    DF_ASSERT_EQ_STR(rx("[a-z--b]+", 0, "bacb"), "1-3");
    /* A set operation can leave a class empty: it matches nothing, and has no ranges to search. */
    DF_ASSERT_EQ_STR(rx("x[a--a]|y", 0, "xay"), "2-3");
    DF_ASSERT_EQ_STR(rx("[\\d\\s]+", 0, "x1 2y"), "1-4");
    DF_ASSERT_EQ_STR(rx("\\x41\\x{42}\\u0043\\n\\t", 0, "ABC\n\t"), "0-5");
    DF_ASSERT_EQ_STR(rx("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\^\\$\\|\\\\", 0, ".*+?()[]{}^$|\\"), "0-14");
    DF_ASSERT_EQ_STR(rx("\\-\\#\\&\\~", 0, "-#&~"), "0-4");
    DF_ASSERT_EQ_STR(rx("a|b|", 0, "c"), "0-0");
    DF_ASSERT_EQ_STR(rx("", 0, "abc"), "0-0");
    DF_ASSERT_EQ_STR(rx("(?x) a b # comment\n c", 0, "abc"), "0-3");
    DF_ASSERT_EQ_STR(rx("(?x)a\\ b", 0, "a b"), "0-3");
}

DF_TEST(regex_repetitions_greedy_lazy_leftmost_first) {
    DF_ASSERT_EQ_STR(rx("a{2}", 0, "aaaa"), "0-2");
    DF_ASSERT_EQ_STR(rx("a{2,}", 0, "aaaa"), "0-4");
    DF_ASSERT_EQ_STR(rx("a{1,3}", 0, "aaaa"), "0-3");
    DF_ASSERT_EQ_STR(rx("a{1,3}?", 0, "aaaa"), "0-1");
    DF_ASSERT_EQ_STR(rx("a{0}b", 0, "ab"), "1-2");
    DF_ASSERT_EQ_STR(rx("<.+>", 0, "<a><b>"), "0-6");
    DF_ASSERT_EQ_STR(rx("<.+?>", 0, "<a><b>"), "0-3");
    DF_ASSERT_EQ_STR(rx("a*?", 0, "aaa"), "0-0");
    DF_ASSERT_EQ_STR(rx("a??b", 0, "ab"), "0-2");
    DF_ASSERT_EQ_STR(rx("(?U)a+", 0, "aaa"), "0-1");
    DF_ASSERT_EQ_STR(rx("(?U)a+?", 0, "aaa"), "0-3");
    /* Leftmost-first: the first alternative that matches wins, not the longest (POSIX would give 0-6). */
    DF_ASSERT_EQ_STR(rx("Sam|Samwise", 0, "Samwise"), "0-3");
    DF_ASSERT_EQ_STR(rx("(a|ab)(c|bcd)", 0, "abcd"), "0-4 0-1 1-4");
    DF_ASSERT_EQ_STR(rx("(a*)*", 0, "b"), "0-0 0-0");
    DF_ASSERT_EQ_STR(rx("(a*)+", 0, "b"), "0-0 0-0");
    DF_ASSERT_EQ_STR(rx("(a|b)*c", 0, "abac"), "0-4 2-3");
    DF_ASSERT_EQ_STR(rx("x*", 0, "aaa"), "0-0");
}

DF_TEST(regex_captures_and_names) {
    DF_ASSERT_EQ_STR(rx("(\\d+)-(\\d+)", 0, "tel 12-345"), "4-10 4-6 7-10");
    DF_ASSERT_EQ_STR(rx("(a)|(b)", 0, "b"), "0-1 - 0-1");
    DF_ASSERT_EQ_STR(rx("(?:ab)+(c)?", 0, "ababx"), "0-4 -");
    DF_ASSERT_EQ_STR(rx("(?P<year>\\d{4})-(?<month>\\d{2})", 0, "on 2024-05"), "3-10 3-7 8-10");
    df__regex *re = NULL;
    df_error err = {0};
    const char *p = "(?P<year>\\d{4})-(?<month>\\d{2})";
    DF_ASSERT_OK(df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err), &err);
    DF_ASSERT_EQ_INT(re->ngroups, 3);
    DF_ASSERT_EQ_INT(df__regex_group_named(re, (const uint8_t *)"month", 5), 2);
    DF_ASSERT_EQ_INT(df__regex_group_named(re, (const uint8_t *)"day", 3), -1);
    df__regex_free(re);
    DF_ASSERT_EQ_STR(rx("(?P<a>x)(?P<a>y)", 0, "xy"), "ERROR regex_syntax");
}

DF_TEST(regex_anchors_and_multiline) {
    DF_ASSERT_EQ_STR(rx("^b", 0, "a\nb"), "none");
    DF_ASSERT_EQ_STR(rx("(?m)^b", 0, "a\nb"), "2-3");
    DF_ASSERT_EQ_STR(rx("a$", 0, "a\nb"), "none");
    DF_ASSERT_EQ_STR(rx("(?m)a$", 0, "a\nb"), "0-1");
    DF_ASSERT_EQ_STR(rx("^b", DF__RX_MULTILINE, "a\nb"), "2-3");
    DF_ASSERT_EQ_STR(rx("\\Aa", 0, "ba"), "none");
    DF_ASSERT_EQ_STR(rx("a\\z", 0, "ba"), "1-2");
    DF_ASSERT_EQ_STR(rx("(?m)\\Ab", 0, "a\nb"), "none");
    DF_ASSERT_EQ_STR(rx("\\bfoo\\b", 0, "afoo foo"), "5-8");
    DF_ASSERT_EQ_STR(rx("\\Boo", 0, "oo foo"), "4-6");
    DF_ASSERT_EQ_STR(rx("\\<b", 0, "ab b"), "3-4");
    DF_ASSERT_EQ_STR(rx("a\\>", 0, "ab a"), "3-4");
    DF_ASSERT_EQ_STR(rx("\\b{start}b", 0, "ab b"), "3-4");
    DF_ASSERT_EQ_STR(rx("^$", 0, ""), "0-0");
    DF_ASSERT_EQ_STR(rx("(?m)^$", 0, "a\n\nb"), "2-2");
}

DF_TEST(regex_utf8_code_points) {
    DF_ASSERT_EQ_STR(rx("^.$", 0, "\xC3\xA9"), "0-2");
    DF_ASSERT_EQ_STR(rx("^...$", 0, "a\xE2\x82\xAC\xF0\x9F\x98\x80"), "0-8");
    DF_ASSERT_EQ_STR(rx("^....$", 0, "a\xE2\x82\xAC\xF0\x9F\x98\x80"), "none");
    DF_ASSERT_EQ_STR(rx("^..$", 0, "\xE2\x82\xAC\xF0\x9F\x98\x80"), "0-7");
    DF_ASSERT_EQ_STR(rx("[\xC3\xA0-\xC3\xBF]+", 0, "x\xC3\xA9\xC3\xA8y"), "1-5");
    DF_ASSERT_EQ_STR(rx("[^a]", 0, "a\xF0\x9F\x98\x80"), "1-5");
    DF_ASSERT_EQ_STR(rx("\\x{1F600}", 0, "a\xF0\x9F\x98\x80"), "1-5");
    DF_ASSERT_EQ_STR(rx("\\w+", 0, "  \xC3\xA9t\xC3\xA9 "), "2-7");
    DF_ASSERT_EQ_STR(rx("(?-u)\\w+", 0, "  \xC3\xA9t\xC3\xA9 "), "4-5");
    DF_ASSERT_EQ_STR(rx("\\b\xD0\xB4\xD0\xB0\\b", 0, "\xD0\xB4\xD0\xB0 "), "0-4");
    DF_ASSERT_EQ_STR(rx("\\x{D800}", 0, "a"), "ERROR regex_syntax");
    DF_ASSERT_EQ_STR(rx("\xFF", 0, "a"), "ERROR regex_syntax");
}

DF_TEST(regex_case_insensitive_folds) {
    DF_ASSERT_EQ_STR(rx("(?i)abc", 0, "xABC"), "1-4");
    DF_ASSERT_EQ_STR(rx("abc", DF__RX_ICASE, "xAbC"), "1-4");
    DF_ASSERT_EQ_STR(rx("(?i)[a-c]+", 0, "xAbC"), "1-4");
    DF_ASSERT_EQ_STR(rx("(?i)[^a]", 0, "Ab"), "1-2");
    DF_ASSERT_EQ_STR(rx("a(?i)b", 0, "AB aB"), "3-5");
    DF_ASSERT_EQ_STR(rx("(?i:a)b", 0, "AB Ab"), "3-5");
    DF_ASSERT_EQ_STR(rx("(?i)a(?-i)b", 0, "AB Ab"), "3-5");
    /* Latin-1, Greek (with final sigma), Cyrillic, and the Kelvin sign folding to k. */
    DF_ASSERT_EQ_STR(rx("(?i)\xC3\xA9", 0, "\xC3\x89"), "0-2");
    DF_ASSERT_EQ_STR(rx("(?i)\xCF\x83", 0, "\xCE\xA3\xCF\x82"), "0-2");
    DF_ASSERT_EQ_STR(rx("(?i)\xCF\x82", 0, "\xCE\xA3"), "0-2");
    DF_ASSERT_EQ_STR(rx("(?i)\xD0\xB4\xD0\xB0", 0, "\xD0\x94\xD0\x90"), "0-4");
    DF_ASSERT_EQ_STR(rx("(?i)k", 0, "\xE2\x84\xAA"), "0-3");
    DF_ASSERT_EQ_STR(rx("(?i)\xC5\x82", 0, "\xC5\x81"), "0-2");
    /* Folding happens before negation, and -u folds ASCII only (as Rust). */
    DF_ASSERT_EQ_STR(rx("(?i)[[:^alpha:]]", 0, "\xE2\x84\xAA"), "none");
    DF_ASSERT_EQ_STR(rx("(?i-u)k", 0, "\xE2\x84\xAA"), "none");
    DF_ASSERT_EQ_STR(rx("(?i-u)k", 0, "K"), "0-1");
    DF_ASSERT_EQ_STR(rx("(?i)\\W", 0, "\xE2\x84\xAAk"), "none");
}

DF_TEST(regex_syntax_errors_name_the_problem) {
    const char *bad[] = {"(", ")", "a)", "[a", "a{2", "a{3,2}", "*a", "a**?{", "\\", "\\1", "(?=a)", "(?!a)",
                         "(?<=a)", "(?<!a)", "(?P=n)", "(?z)", "(?)", "(?P<>a)", "(?P<n", "\\q", "[z-a]", "\\p{L}",
                         "\\x{110000}", "\\xZZ", "[[:bogus:]]", "a{99999999999}", "\\b{middle}", "a(?i)*",
                         "a{,3}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        df_error err = {0};
        df__regex *re = NULL;
        df_errkind k = df__regex_new((const uint8_t *)bad[i], strlen(bad[i]), 0, &re, &err);
        if (k != DF_ERR_EXECUTION || err.subkind != DF_ERR_REGEX_SYNTAX || re)
            df_test_fail(__FILE__, __LINE__, "pattern %s: kind %s subkind %s", bad[i], df_errkind_name(k),
                         df_errkind_name(err.subkind));
        DF_ASSERT(strstr(err.message, "regex parse error at byte") != NULL);
        df_error_clear(&err);
    }
    df_error err = {0};
    df__regex *re = NULL;
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)"ab(c", 4, 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT(strstr(err.message, "byte 2: unclosed group") != NULL);
    df_error_clear(&err);
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)"a(?=b)", 6, 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT(strstr(err.message, "look-around") != NULL);
    df_error_clear(&err);
    /* Stacked repetitions are allowed, as in Rust. */
    DF_ASSERT_EQ_STR(rx("a**", 0, "aa"), "0-2");
}

/* The adversarial patterns: each fails (or compiles) at once, with bounded memory. */
DF_TEST(regex_size_limit_is_checked_before_allocating) {
    const char *p = "((a{1000}){1000}){1000}";
    double t0 = now_s();
    df_error err = {0};
    df__regex *re = NULL;
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    DF_ASSERT(strstr(err.message, "size limit") != NULL);
    df_error_clear(&err);
    p = "(((a{100}){100}){100}){100}{100}{100}{100}{100}";
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    df_error_clear(&err);
    p = "[a-z]{4294967294}";
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err), DF_ERR_EXECUTION);
    df_error_clear(&err);
    DF_ASSERT(now_s() - t0 < 1.0);

    /* 5^8 copies fit the limit: they compile (quickly) and match. */
    p = "a{5}{5}{5}{5}{5}{5}{5}{5}";
    t0 = now_s();
    df_errkind k = df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err);
    DF_ASSERT(now_s() - t0 < 2.0);
    if (k == DF_OK) {
        DF_ASSERT((size_t)re->ninst * sizeof(df__rx_inst) <= DF__RX_SIZE_LIMIT);
        df__regex_free(re);
    } else {
        DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
        df_error_clear(&err);
    }
    p = "a{5}{5}{5}{5}{5}{5}{5}{5}{5}{5}";
    t0 = now_s();
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    DF_ASSERT(now_s() - t0 < 1.0);
    df_error_clear(&err);
}

static size_t largest_request;
static void *big_malloc(size_t n, void *u) {
    (void)u;
    if (n > largest_request) largest_request = n;
    return malloc(n);
}
static void *big_realloc(void *p, size_t n, void *u) {
    (void)u;
    if (n > largest_request) largest_request = n;
    return realloc(p, n);
}
static void big_free(void *p, void *u) {
    (void)u;
    free(p);
}

/* The size is refused from the tree: no allocation grows towards the expanded program. */
DF_TEST(regex_size_limit_allocates_only_for_the_pattern) {
    df_set_allocator(&(df_allocator){big_malloc, big_realloc, big_free, NULL});
    const char *p = "((a{1000}){1000}){1000}";
    df_error err = {0};
    df__regex *re = NULL;
    largest_request = 0;
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, strlen(p), 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    DF_ASSERT(largest_request < 64 * 1024);
    df_error_clear(&err);
}

DF_TEST(regex_nesting_limit_without_stack_overflow) {
    size_t depth = 20000;
    char *p = df_malloc(depth * 2 + 2);
    DF_ASSERT(p);
    memset(p, '(', depth);
    p[depth] = 'a';
    memset(p + depth + 1, ')', depth);
    df_error err = {0};
    df__regex *re = NULL;
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, depth * 2 + 1, 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    DF_ASSERT(strstr(err.message, "nesting") != NULL);
    df_error_clear(&err);
    /* Non-capturing groups and bracketed classes nest under the same limit. */
    for (size_t i = 0; i + 3 <= depth; i += 3) memcpy(p + i, "(?:", 3);
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, depth / 3 * 3, 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    df_error_clear(&err);
    memset(p, '[', depth);
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, depth, 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    df_error_clear(&err);
    /* Stacked repetitions too: a** ... 20,000 times. */
    p[0] = 'a';
    memset(p + 1, '*', depth - 1);
    DF_ASSERT_KIND(df__regex_new((const uint8_t *)p, depth, 0, &re, &err), DF_ERR_EXECUTION);
    DF_ASSERT_EQ_INT(err.subkind, DF_ERR_REGEX_TOO_BIG);
    df_error_clear(&err);
    /* 250 levels are fine. */
    memset(p, '(', 250);
    p[250] = 'a';
    memset(p + 251, ')', 250);
    DF_ASSERT_OK(df__regex_new((const uint8_t *)p, 501, 0, &re, &err), &err);
    df__regex_free(re);
    df_free(p);
}

/* A pathological pattern for backtracking engines runs in linear time here. */
DF_TEST(regex_matching_is_linear) {
    size_t n = 20000;
    char *s = df_malloc(n + 1);
    DF_ASSERT(s);
    memset(s, 'a', n);
    s[n] = '\0';
    double t0 = now_s();
    DF_ASSERT_EQ_STR(rx("(a*)*b", 0, s), "none");
    DF_ASSERT_EQ_STR(rx("(a|aa)+$", 0, s), "0-20000 19999-20000");
    DF_ASSERT(now_s() - t0 < 5.0);
    df_free(s);
}

DF_TEST(regex_search_from_offset_sees_context_and_cancels) {
    df_error err = {0};
    df__regex *re = NULL;
    DF_ASSERT_OK(df__regex_new((const uint8_t *)"^a|\\bb", 6, 0, &re, &err), &err);
    df__rx_scratch sc = {0};
    int64_t slots[2];
    bool found;
    DF_ASSERT_OK(df__regex_find(re, &sc, (const uint8_t *)"aab", 3, 1, slots, 2, NULL, &found, &err), &err);
    DF_ASSERT(!found); /* ^ does not hold at 1, and b at 2 follows a word character */
    DF_ASSERT_OK(df__regex_find(re, &sc, (const uint8_t *)"a b", 3, 1, slots, 2, NULL, &found, &err), &err);
    DF_ASSERT(found);
    DF_ASSERT_EQ_INT(slots[0], 2);
    df__regex_free(re);
    DF_ASSERT_OK(df__regex_new((const uint8_t *)"[xz]", 4, 0, &re, &err), &err);
    size_t n = 3 * DF__RX_CANCEL_EVERY;
    char *s = df_calloc(1, n);
    memset(s, 'y', n);
    _Atomic bool off = false, on = true;
    df__rx_cancel cancel = {{&off, NULL}};
    DF_ASSERT_OK(df__regex_find(re, &sc, (const uint8_t *)s, n, 0, NULL, 0, &cancel, &found, &err), &err);
    DF_ASSERT(!found);
    cancel.flag[1] = &on;
    DF_ASSERT_KIND(df__regex_find(re, &sc, (const uint8_t *)s, n, 0, NULL, 0, &cancel, &found, &err),
                   DF_ERR_CANCELLED);
    df_error_clear(&err);
    df_free(s);
    df__rx_scratch_free(&sc);
    df__regex_free(re);
}

/* The SQL functions on the new engine. */
DF_TEST(regex_sql_functions) {
    df_catalog *cat = tu_catalog();
    TU_EXPECT(cat,
              "SELECT regexp_like('Samwise', '^Sam(wise)?$'), regexp_like('a\nb', '^b'), regexp_like('a\nb', '^b', 'm'), "
              "regexp_like('A', 'a', 'i'), 'foo' ~ 'o+', 'FOO' ~* 'o+', 'foo' !~ 'x', 'FOO' !~* 'o'",
              "true|false|true|true|true|true|true|false");
    TU_EXPECT(cat,
              "SELECT regexp_replace('2024-05-06', '(?P<y>\\d+)-(\\d+)-(\\d+)', '$3/${2}/${y}'), "
              "regexp_replace('abc', 'b', '$$'), regexp_replace('aaa', 'a', 'b', 'g'), "
              "regexp_replace('baaa', 'a*', '-', 'g'), regexp_replace('abc', '(b)', '[\\1\\\\]')",
              "06/05/2024|a$c|bbb|-b-|a[b\\\\]c");
    TU_EXPECT(cat,
              "SELECT regexp_replace('<a><b>', '<.+?>', 'X'), regexp_replace('<a><b>', '<.+>', 'X'), "
              "regexp_count('baaa', 'a*'), regexp_count('abcabc', '[a-c]', 2), regexp_count('éaé', 'é')",
              "X<b>|X|2|5|2");
    TU_EXPECT(cat, "SELECT regexp_replace('Ünïcödé', '[^\\w]', '_', 'g'), regexp_replace('ΣΑΣ', 'σ', 'x', 'gi')",
              "Ünïcödé|xΑx");
    TU_EXPECT(cat,
              "SELECT regexp_like(s, p) FROM (VALUES ('abc', 'b'), ('abc', '^b'), ('abc', 'b'), (NULL, 'a'), "
              "('x', NULL)) AS t(s, p)",
              "true\nfalse\ntrue\nNULL\nNULL");
    TU_EXPECT_ERROR(cat, "SELECT regexp_like('a', '(?=a)')", DF_ERR_EXECUTION);
    TU_EXPECT_ERROR(cat, "SELECT regexp_like('a', '((a{1000}){1000}){1000}')", DF_ERR_EXECUTION);
    TU_EXPECT_ERROR(cat, "SELECT 'a' ~ '(a'", DF_ERR_EXECUTION);
    TU_EXPECT_ERROR(cat, "SELECT regexp_like(s, p) FROM (VALUES ('a', 'a'), ('a', '[')) AS t(s, p)",
                    DF_ERR_EXECUTION);
    TU_EXPECT_ERROR(cat, "SELECT regexp_like('a', 'a', 'q')", DF_ERR_EXECUTION);
    df_catalog_free(cat);
}

/* Per-row patterns over a partitioned table (each partition brings its own matching scratch). */
DF_TEST(regex_sql_over_partitions) {
    df_catalog *cat = tu_catalog();
    tu_table_from_sql(cat, "t",
                      "SELECT * FROM (VALUES (1, 'apple', '^a'), (2, 'banana', 'an+'), (3, 'cherry', 'r{2}'), "
                      "(4, 'date', 'x|y'), (5, 'elder', '(?i)E')) AS t(id, s, p)",
                      3);
    TU_EXPECT_SORTED(cat, "SELECT id, regexp_like(s, p), regexp_replace(s, p, '<$0>') FROM t", 3,
                     "1|true|<a>pple\n2|true|b<an>ana\n3|true|che<rr>y\n4|false|date\n5|true|<e>lder");
    df_catalog_free(cat);
}
