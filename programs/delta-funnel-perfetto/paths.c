/*
 * Input and output preflight for delta-funnel-perfetto.  Nothing
 * here creates or modifies a file: outputs are only checked, and written
 * later through df_report_write_file().
 *
 * Aliasing: an output aliases the input when its canonical path equals the
 * input's or when it is an existing hard link to it.  Canonical output
 * paths resolve every existing parent (following symlinked directories and
 * "..") and append the missing components lexically; the final component
 * is not followed, because an existing destination symlink is replaced,
 * never written through.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static bool problem(cli_problem *pr, const char *phase, df_errkind kind, const char *fmt, const char *arg) {
    pr->phase = phase;
    pr->kind = kind;
    snprintf(pr->message, sizeof pr->message, fmt, arg ? arg : "");
    return false;
}

bool cli_check_input(const char *path, char **canon, unsigned char *magic, size_t *magic_len, cli_problem *pr) {
    *canon = NULL;
    *magic_len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return problem(pr, "input", DF_ERR_UNREADABLE, "cannot open the input: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return problem(pr, "input", DF_ERR_NOT_FILE, "input must be a regular file%s", NULL);
    }
    ssize_t n;
    do n = read(fd, magic, DF_REPORT_MAGIC_LEN);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0) return problem(pr, "input", DF_ERR_UNREADABLE, "cannot read the input: %s", strerror(errno));
    *magic_len = (size_t)n;
    *canon = realpath(path, NULL);
    if (!*canon) return problem(pr, "input", DF_ERR_UNREADABLE, "cannot resolve the input path: %s", strerror(errno));
    return true;
}

/* Absolute form of path (cwd prepended when relative); malloc'd or NULL. */
static char *absolute_of(const char *path) {
    if (path[0] == '/') return strdup(path);
    char *cwd = getcwd(NULL, 0);
    if (!cwd) return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s/%s", cwd, path);
    free(cwd);
    return out;
}

/* Appends "/comp" to a malloc'd path. */
static char *join(char *base, const char *comp, size_t n) {
    size_t b = strlen(base);
    bool root = b == 1 && base[0] == '/';
    char *out = realloc(base, b + n + 2);
    if (!out) {
        free(base);
        return NULL;
    }
    if (!root) out[b++] = '/';
    memcpy(out + b, comp, n);
    out[b + n] = 0;
    return out;
}

/* Drops the last component of a canonical path (lexically). */
static void pop(char *p) {
    char *s = strrchr(p, '/');
    if (s == p) p[1] = 0;
    else if (s) *s = 0;
}

/*
 * Canonical form of the directory `dir` (absolute): existing prefixes are
 * resolved with realpath, missing components appended lexically.  Returns
 * NULL with *not_dir set when an existing component is not a directory.
 */
static char *canonical_dir(const char *dir, bool *not_dir) {
    *not_dir = false;
    char *res = strdup("/");
    bool missing = false;
    const char *p = dir;
    while (res && *p) {
        while (*p == '/') p++;
        const char *q = p;
        while (*q && *q != '/') q++;
        size_t n = (size_t)(q - p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            p = q;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            pop(res);
            p = q;
            continue;
        }
        res = join(res, p, n);
        if (res && !missing) {
            struct stat st;
            if (stat(res, &st) == 0) {
                if (!S_ISDIR(st.st_mode)) {
                    *not_dir = true;
                    free(res);
                    return NULL;
                }
                char *real = realpath(res, NULL);
                free(res);
                res = real;
            } else {
                missing = true;
            }
        }
        p = q;
    }
    return res;
}

bool cli_check_output(const char *path, const char *input_canon, const char *other_canon, char **absolute, char **canon,
                      cli_problem *pr) {
    *absolute = *canon = NULL;
    size_t len = strlen(path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (len == 0 || *base == 0 || !strcmp(base, ".") || !strcmp(base, ".."))
        return problem(pr, "output", DF_ERR_MISSING_FILE_NAME, "output path must name a file%s", NULL);
    char *abs = absolute_of(path);
    if (!abs) return problem(pr, "output", DF_ERR_UNAVAILABLE, "cannot resolve the output path: %s", strerror(errno));
    char *slash = strrchr(abs, '/');
    *slash = 0;
    bool not_dir;
    char *dir = canonical_dir(abs[0] ? abs : "/", &not_dir);
    *slash = '/';
    if (!dir) {
        free(abs);
        return not_dir ? problem(pr, "output", DF_ERR_PARENT_NOT_DIRECTORY, "an existing parent of the output is not a directory%s", NULL)
                       : problem(pr, "output", DF_ERR_UNAVAILABLE, "cannot resolve the output path%s", NULL);
    }
    char *c = join(dir, base, strlen(base));
    if (!c) {
        free(abs);
        return problem(pr, "output", DF_ERR_UNAVAILABLE, "out of memory%s", NULL);
    }
    struct stat ost, lst, ist, xst;
    bool exists = lstat(c, &lst) == 0, link = exists && S_ISLNK(lst.st_mode);
    if (exists && ((link && stat(c, &ost) == 0 && !S_ISREG(ost.st_mode)) || (!link && !S_ISREG(lst.st_mode)))) {
        free(abs);
        free(c);
        return problem(pr, "output", DF_ERR_NOT_FILE, "output exists and is not a regular file%s", NULL);
    }
    bool hard = exists && !link && stat(input_canon, &ist) == 0 && ist.st_dev == lst.st_dev && ist.st_ino == lst.st_ino;
    if (!strcmp(c, input_canon) || hard) {
        free(abs);
        free(c);
        return problem(pr, "output", DF_ERR_ALIASES_INPUT, "output must not name the input file%s", NULL);
    }
    if (other_canon) {
        bool same = !strcmp(c, other_canon) ||
                    (exists && !link && stat(other_canon, &xst) == 0 && xst.st_dev == lst.st_dev && xst.st_ino == lst.st_ino);
        if (same) {
            free(abs);
            free(c);
            return problem(pr, "output", DF_ERR_PROFILE_OUTPUTS_ALIAS, "ranked HTML and artifact outputs must name different files%s", NULL);
        }
    }
    *absolute = abs;
    *canon = c;
    return true;
}

char *cli_default_output(const char *input, const char *ext) {
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t keep = dot && dot != base ? (size_t)(dot - input) : strlen(input);
    size_t n = keep + strlen(ext) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%.*s.%s", (int)keep, input, ext);
    return out;
}

bool cli_is_artifact(const char *path, const unsigned char *magic, size_t magic_len) {
    size_t n = strlen(path);
    if (n >= 10 && strcasecmp(path + n - 10, ".dfprofile") == 0) return true;
    return df_report_is_dfprofile(magic, magic_len);
}
