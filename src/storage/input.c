/*
 * Random-access inputs: local files and caller memory.
 *
 * A local file must be a regular file: it is opened without blocking and
 * anything else (a FIFO, a device, a socket, a directory) is refused with
 * DF_ERR_NOT_FILE, so a FIFO left in a table cannot hang a reader.  It is
 * memory-mapped read-only when the kernel allows it; reads then copy from
 * the mapping and view_at hands out pointers into it, so the Parquet reader
 * decodes pages in place without a copy.  Files that cannot be mapped
 * (exotic file systems, mmap failure) fall back to pread(2), and view_at
 * then answers "no view" so callers copy.  Empty files are never mapped
 * (mmap of length 0 fails) and need no reads anyway.
 *
 * Every input counts the bytes it hands out (read or viewed) and the number
 * of calls, so a scan can report what it fetched.
 */
#include "storage/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A local file, mapped or read with pread. */
typedef struct file_input {
    df_input base;          /* vtable, size and counters */
    int fd;                 /* open descriptor; -1 once closed */
    const uint8_t *map;     /* read-only mapping of the whole file, or NULL (pread mode) */
    char *path;             /* for error messages, owned */
} file_input;

/* Caller memory: no copy is made. */
typedef struct memory_input {
    df_input base;          /* vtable, size and counters */
    const uint8_t *data;    /* borrowed; must outlive the input */
} memory_input;

/* Shared bounds check: [offset, offset+len) must lie inside the input. */
static df_errkind check_range(const df_input *in, uint64_t offset, size_t len, df_error *err) {
    if (offset > in->size || len > in->size - offset)
        return df_error_set(err, DF_ERR_IO, "read past end: %zu bytes at offset %llu of a %llu-byte input", len,
                            (unsigned long long)offset, (unsigned long long)in->size);
    return DF_OK;
}

static void count(df_input *in, size_t len) {
    atomic_fetch_add_explicit(&in->bytes_read, len, memory_order_relaxed);
    atomic_fetch_add_explicit(&in->read_calls, 1, memory_order_relaxed);
}

/* ---- files -------------------------------------------------------------- */

static df_errkind file_read_at(df_input *in, uint64_t offset, void *dst, size_t len, df_error *err) {
    file_input *f = (file_input *)in;
    DF_TRY(check_range(in, offset, len, err));
    count(in, len);
    if (len == 0) return DF_OK;
    if (f->map) {
        memcpy(dst, f->map + offset, len);
        return DF_OK;
    }
    uint8_t *p = dst;
    while (len > 0) {
        ssize_t n = pread(f->fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            df_error_set(err, DF_ERR_IO, "cannot read %s: %s", f->path, strerror(errno));
            df_error_set_code(err, errno);
            return DF_ERR_IO;
        }
        if (n == 0) return df_error_set(err, DF_ERR_IO, "read past end: %s shrank while being read", f->path);
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return DF_OK;
}

static df_errkind file_view_at(df_input *in, uint64_t offset, size_t len, const uint8_t **out, df_error *err) {
    file_input *f = (file_input *)in;
    *out = NULL;
    DF_TRY(check_range(in, offset, len, err));
    if (!f->map) return DF_OK;
    count(in, len);
    *out = f->map + offset;
    return DF_OK;
}

static void file_close(df_input *in) {
    file_input *f = (file_input *)in;
    if (f->map) munmap((void *)f->map, (size_t)in->size);
    if (f->fd >= 0) close(f->fd);
    df_free(f->path);
    df_free(f);
}

static const df_input_vt file_vt = {file_read_at, file_view_at, file_close};

/* Maps errno of open/stat to a kind and message. */
static df_errkind open_error(df_error *err, const char *path, int e) {
    df_errkind kind = (e == ENOENT || e == ENOTDIR) ? DF_ERR_NOT_FOUND : DF_ERR_IO;
    df_error_set(err, kind, "cannot open %s: %s", path, strerror(e));
    df_error_set_code(err, e);
    return kind;
}

df_errkind df_input_open_file(const char *path, df_input **out, df_error *err) {
    *out = NULL;
    if (!path || !*path) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "empty file path");
    int fd;
    struct stat st;
    int e = df_file_open_regular(path, 0, &fd, &st);
    if (e > 0) return open_error(err, path, e);
    if (e < 0) {
        /* A FIFO would block the first read forever, a device has no fixed size: only regular files are data. */
        df_error_set(err, DF_ERR_NOT_FILE, "cannot open %s: it is %s, not a regular file", path,
                     df_file_kind_name((unsigned)st.st_mode));
        return DF_ERR_NOT_FILE;
    }
    file_input *f = df_calloc(1, sizeof *f);
    char *copy = df_strdup(path);
    if (!f || !copy) {
        df_free(f);
        df_free(copy);
        close(fd);
        return DF_OOM(err);
    }
    f->base.vt = &file_vt;
    f->base.size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    f->fd = fd;
    f->path = copy;
    if (f->base.size > 0 && f->base.size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)f->base.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) f->map = m;   /* else: pread mode */
    }
    *out = &f->base;
    return DF_OK;
}

/* ---- memory ------------------------------------------------------------- */

static df_errkind memory_read_at(df_input *in, uint64_t offset, void *dst, size_t len, df_error *err) {
    memory_input *m = (memory_input *)in;
    DF_TRY(check_range(in, offset, len, err));
    count(in, len);
    if (len) memcpy(dst, m->data + offset, len);
    return DF_OK;
}

static df_errkind memory_view_at(df_input *in, uint64_t offset, size_t len, const uint8_t **out, df_error *err) {
    memory_input *m = (memory_input *)in;
    *out = NULL;
    DF_TRY(check_range(in, offset, len, err));
    count(in, len);
    *out = m->data + offset;
    return DF_OK;
}

static void memory_close(df_input *in) {
    df_free(in);
}

static const df_input_vt memory_vt = {memory_read_at, memory_view_at, memory_close};

df_errkind df_input_open_memory(const void *data, size_t size, df_input **out, df_error *err) {
    *out = NULL;
    if (!data && size) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "memory input without data");
    memory_input *m = df_calloc(1, sizeof *m);
    if (!m) return DF_OOM(err);
    m->base.vt = &memory_vt;
    m->base.size = size;
    static const uint8_t empty[1];
    m->data = data ? data : empty;
    *out = &m->base;
    return DF_OK;
}
