/*
 * Files: reading inputs safely and writing outputs atomically.
 *
 * Inputs are opened non-blocking (a named pipe must not hang the caller),
 * must be regular files, are size-checked before anything is allocated,
 * read exactly once, and a file that grows while being read is rejected.
 *
 * Outputs are never written in place: the bytes go to a temporary file
 * created exclusively in the destination directory, are flushed, and the
 * file is renamed over the destination (REPLACE: a destination symlink is
 * replaced, not followed) or moved there only if nothing exists yet
 * (NO_CLOBBER: renameat2(RENAME_NOREPLACE), or link()+unlink() on file
 * systems without it).  Readers see the old file or the new one, never a
 * torn one, and concurrent no-clobber writers have exactly one winner.
 */
#include "report/report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* A failure of `kind` in `phase` caused by errno `code` (kept in df_error.code). */
static df_errkind io_fail(df_error *err, df_errkind kind, const char *phase, int code, const char *what,
                          const char *path) {
    df__report_fail(err, kind, phase, "%s: %s", what, strerror(code));
    (void)path; /* paths are not echoed: they may be private */
    if (err) df_error_set_code(err, code);
    return kind;
}

/*
 * Reads a whole regular file of at most `max` bytes into a df_malloc'd
 * buffer (*out, *len; one extra NUL byte).  Failure kinds (phase "input"):
 * not_file, unreadable (or artifact_unreadable; errno in code),
 * trace_too_large / artifact_too_large, artifact_changed_while_reading,
 * out_of_memory.
 */
static df_errkind read_file(const char *path, size_t max, bool artifact, uint8_t **out, size_t *len, df_error *err) {
    *out = NULL;
    *len = 0;
    const df_errkind unreadable = artifact ? DF_ERR_ARTIFACT_UNREADABLE : DF_ERR_UNREADABLE;
    int fd;
    struct stat st;
    int e = df_file_open_regular(path, 0, &fd, &st);
    if (e < 0) return df__report_fail(err, DF_ERR_NOT_FILE, "input", "input is not a regular file");
    if (e > 0) return io_fail(err, unreadable, "input", e, "cannot open input", path);
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return df__report_fail(err, artifact ? DF_ERR_ARTIFACT_TOO_LARGE : DF_ERR_TRACE_TOO_LARGE, "input",
                               "input of %lld bytes exceeds the %zu-byte limit", (long long)st.st_size, max);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = df_malloc(size + 1);
    if (!buf) {
        close(fd);
        return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "input", "out of memory reading the input");
    }
    size_t done = 0;
    while (done <= size) {
        /* Read one byte beyond the size to detect growth. */
        uint8_t extra;
        uint8_t *dst = done < size ? buf + done : &extra;
        size_t want = done < size ? size - done : 1;
        ssize_t n = read(fd, dst, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            df_free(buf);
            return io_fail(err, unreadable, "input", e, "cannot read input", path);
        }
        if (n == 0) break;
        if (done == size) {
            close(fd);
            df_free(buf);
            return df__report_fail(err, DF_ERR_ARTIFACT_CHANGED_WHILE_READING, "input", "input changed while it was read");
        }
        done += (size_t)n;
    }
    close(fd);
    if (done != size) {
        df_free(buf);
        return df__report_fail(err, DF_ERR_ARTIFACT_CHANGED_WHILE_READING, "input", "input changed while it was read");
    }
    buf[size] = 0;
    *out = buf;
    *len = size;
    return DF_OK;
}

df_errkind df_report_build_from_trace_file(const char *path, const df_report_build_options *opts,
                                           df_report_profile **out, df_error *err) {
    *out = NULL;
    if (!path) return df__report_fail(err, DF_ERR_MISSING_INPUT, "input", "a profile input path is required");
    size_t max = opts && opts->max_trace_bytes ? opts->max_trace_bytes : DF_REPORT_DEFAULT_MAX_TRACE_BYTES;
    uint8_t *bytes;
    size_t len;
    DF_TRY(read_file(path, max, false, &bytes, &len, err));
    df_errkind k = df_report_build_from_trace(bytes, len, opts, out, err);
    df_free(bytes);
    return k;
}

df_errkind df_report_capture_health_file(const char *path, const df_report_build_options *opts,
                                         df_report_health *out, df_error *err) {
    memset(out, 0, sizeof *out);
    if (!path) return df__report_fail(err, DF_ERR_MISSING_INPUT, "input", "a trace path is required");
    size_t max = opts && opts->max_trace_bytes ? opts->max_trace_bytes : DF_REPORT_DEFAULT_MAX_TRACE_BYTES;
    uint8_t *bytes;
    size_t len;
    DF_TRY(read_file(path, max, false, &bytes, &len, err));
    df_errkind k = df_report_capture_health(bytes, len, opts, out, err);
    df_free(bytes);
    return k;
}

df_errkind df_report_read_dfprofile(const char *path, df_report_profile **out, df_error *err) {
    *out = NULL;
    if (!path) return df__report_fail(err, DF_ERR_MISSING_INPUT, "input", "a profile input path is required");
    uint8_t *bytes;
    size_t len;
    DF_TRY(read_file(path, DF_REPORT_MAX_ARTIFACT_BYTES, true, &bytes, &len, err));
    df_errkind k = df_report_decode_dfprofile(bytes, len, out, err);
    df_free(bytes);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Atomic writes.                                                            */

/* Creates every missing directory of `dir` (like mkdir -p).  Returns 0 or an errno. */
static int make_dirs(char *dir) {
    struct stat st;
    if (dir[0] == 0 || stat(dir, &st) == 0) return dir[0] == 0 || S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(dir, 0777);
        int e = errno;
        *p = '/';
        if (rc != 0 && e != EEXIST) return e;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return errno;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

static bool write_all(int fd, const void *bytes, size_t len) {
    const uint8_t *p = bytes;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Moves tmp to path under `policy`; returns 0 or an errno (EEXIST = destination present). */
static int persist(const char *tmp, const char *path, df_report_write_policy policy) {
    if (policy == DF_REPORT_REPLACE) return rename(tmp, path) == 0 ? 0 : errno;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
    if (link(tmp, path) != 0) return errno;
    unlink(tmp);
    return 0;
}

df_errkind df_report_write_file(const char *path, const void *bytes, size_t len, df_report_write_policy policy,
                                df_error *err) {
    size_t plen = path ? strlen(path) : 0;
    if (!plen || path[plen - 1] == '/')
        return df__report_fail(err, DF_ERR_MISSING_FILE_NAME, "output", "output path must name a file");
    char *dir = df_malloc(plen + 2), *tmp = df_malloc(plen + 32);
    if (!dir || !tmp) {
        df_free(dir);
        df_free(tmp);
        return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "output", "out of memory");
    }
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    memcpy(dir, path, dlen);
    dir[dlen] = 0;
    if (slash && dlen == 0) strcpy(dir, "/");
    df_errkind k = DF_OK;
    int e = make_dirs(dir);
    if (e) k = io_fail(err, DF_ERR_CREATE_PARENT_FAILED, "output", e, "cannot create the output directory", path);
    int fd = -1;
    if (k == DF_OK) {
        snprintf(tmp, plen + 32, "%.*s%s.df-report-XXXXXX", (int)dlen, path, slash ? "/" : "");
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) k = io_fail(err, DF_ERR_CREATE_TEMPORARY_FAILED, "output", errno, "cannot create a temporary file", path);
    }
    if (k == DF_OK) {
        /* 0600: reports and artifacts hold paths, thread names, function names and timing. */
        bool ok = write_all(fd, bytes, len) && fchmod(fd, 0600) == 0 && fsync(fd) == 0;
        e = errno;
        if (close(fd) != 0 && ok) ok = false, e = errno;
        if (!ok) k = io_fail(err, DF_ERR_WRITE_FAILED, "output", e, "cannot write the output", path);
        if (k == DF_OK && (e = persist(tmp, path, policy)) != 0)
            k = io_fail(err, DF_ERR_PERSIST_FAILED, "output", e,
                        e == EEXIST ? "output already exists" : "cannot move the output into place", path);
        if (k != DF_OK || policy == DF_REPORT_NO_CLOBBER) unlink(tmp); /* a no-op after a rename */
        if (k == DF_OK) {
            int dfd = open(dlen || slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                (void)fsync(dfd);
                close(dfd);
            }
        }
    }
    df_free(dir);
    df_free(tmp);
    return k;
}

df_errkind df_report_write_html(const df_report_profile *p, const char *path, df_report_write_policy policy,
                                df_error *err) {
    df_buf out;
    df_buf_init(&out, 0);
    df_errkind k = df_report_render_html(p, &out, err);
    if (k == DF_OK) k = df_report_write_file(path, out.data, out.len, policy, err);
    df_buf_free(&out);
    return k;
}

df_errkind df_report_write_dfprofile(const df_report_profile *p, const char *path, df_report_write_policy policy,
                                     df_error *err) {
    df_buf out;
    df_buf_init(&out, 0);
    df_errkind k = df_report_encode_dfprofile(p, &out, err);
    if (k == DF_OK) k = df_report_write_file(path, out.data, out.len, policy, err);
    df_buf_free(&out);
    return k;
}
