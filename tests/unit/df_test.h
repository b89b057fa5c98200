/*
 * A small unit-test harness.  Each DF_TEST registers itself; the runner
 * (df_test_main.c) runs every test in its own child process so a crash
 * fails one test, not the file, and prints a summary line that
 * scripts/test counts.
 *
 *   DF_TEST(parses_empty_list) {
 *       DF_ASSERT_EQ_INT(count, 0);
 *   }
 *
 * Assertions print both values and the location, then end the test.
 */
#ifndef DF_TEST_H
#define DF_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deltafunnel/df_error.h"

typedef void (*df_test_fn)(void);
void df_test_register(const char *name, df_test_fn fn);
void df_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));

#define DF_TEST(name)                                                           \
    static void df_test_##name(void);                                           \
    __attribute__((constructor)) static void df_test_register_##name(void) {    \
        df_test_register(#name, df_test_##name);                                \
    }                                                                           \
    static void df_test_##name(void)

#define DF_ASSERT(cond)                                                         \
    do {                                                                        \
        if (!(cond)) df_test_fail(__FILE__, __LINE__, "assertion failed: %s", #cond); \
    } while (0)

#define DF_ASSERT_EQ_INT(a, b)                                                  \
    do {                                                                        \
        long long df_a_ = (long long)(a), df_b_ = (long long)(b);               \
        if (df_a_ != df_b_)                                                     \
            df_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, df_a_, df_b_); \
    } while (0)

#define DF_ASSERT_EQ_UINT(a, b)                                                 \
    do {                                                                        \
        unsigned long long df_a_ = (unsigned long long)(a), df_b_ = (unsigned long long)(b); \
        if (df_a_ != df_b_)                                                     \
            df_test_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b, df_a_, df_b_); \
    } while (0)

#define DF_ASSERT_EQ_DBL(a, b)                                                  \
    do {                                                                        \
        double df_a_ = (double)(a), df_b_ = (double)(b);                        \
        if (!(df_a_ == df_b_))                                                  \
            df_test_fail(__FILE__, __LINE__, "%s == %s: %.17g != %.17g", #a, #b, df_a_, df_b_); \
    } while (0)

#define DF_ASSERT_EQ_STR(a, b)                                                  \
    do {                                                                        \
        const char *df_a_ = (a), *df_b_ = (b);                                  \
        if (!df_a_ || !df_b_ || strcmp(df_a_, df_b_) != 0)                      \
            df_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
                         df_a_ ? df_a_ : "(null)", df_b_ ? df_b_ : "(null)");   \
    } while (0)

/* Asserts a df_errkind-returning call succeeds; prints the df_error message otherwise. */
static inline const char *df_test_errmsg(const df_error *err) { return err ? err->message : ""; }
#define DF_ASSERT_OK(call, errp)                                                \
    do {                                                                        \
        int df_k_ = (int)(call);                                                \
        if (df_k_ != 0)                                                         \
            df_test_fail(__FILE__, __LINE__, "%s failed: kind %s: %s", #call,   \
                         df_errkind_name((df_errkind)df_k_), df_test_errmsg(errp)); \
    } while (0)

#define DF_ASSERT_KIND(call, kind)                                              \
    do {                                                                        \
        int df_k_ = (int)(call);                                                \
        if (df_k_ != (int)(kind))                                               \
            df_test_fail(__FILE__, __LINE__, "%s: kind %s, expected %s", #call, \
                         df_errkind_name((df_errkind)df_k_), df_errkind_name(kind)); \
    } while (0)

#endif
