/*
 * The unit-test runner: runs each registered test in a forked child
 * (DF_TEST_NOFORK=1 runs them in-process, for debuggers), optionally only
 * those whose name contains argv[1], and prints
 *   "unit-tests: <file> passed=N failed=M"
 * as its last line.
 */
#include "df_test.h"

#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deltafunnel/df_error.h"

typedef struct {
    const char *name;
    df_test_fn fn;
} entry;

static entry tests[1024];
static int ntests;

void df_test_register(const char *name, df_test_fn fn) {
    if (ntests < (int)(sizeof tests / sizeof tests[0])) tests[ntests++] = (entry){name, fn};
}

void df_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    int nofork = getenv("DF_TEST_NOFORK") != NULL;
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        int ok;
        if (nofork) {
            tests[i].fn();
            ok = 1;
        } else {
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                tests[i].fn();
                fflush(stdout);
                exit(0); /* exit, not _exit: LeakSanitizer checks at exit */
            }
            int status = 0;
            waitpid(pid, &status, 0);
            ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (WIFSIGNALED(status)) fprintf(stderr, "  killed by signal %d\n", WTERMSIG(status));
        }
        printf("%s %s\n", ok ? "ok  " : "FAIL", tests[i].name);
        if (ok) passed++; else failed++;
    }
    printf("unit-tests: %s passed=%d failed=%d\n", argv[0], passed, failed);
    return failed ? 1 : 0;
}
