/*
 * /proc/self/maps parsing.  Each line is
 *
 *   START-END PERMS OFFSET MAJOR:MINOR INODE [spaces PATH]
 *
 * with hexadecimal START, END, OFFSET, device numbers, a decimal INODE and a
 * path that runs to the end of the line (it may contain spaces; the kernel
 * appends " (deleted)" for unlinked files).  The text is treated as hostile:
 * every number has a digit limit, every line and path a length limit, and
 * the number of entries is capped.
 */
#include "diag/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

typedef struct cursor {
    const char *p;   /* next byte */
    const char *end; /* end of the current line */
} cursor;

/* Reads 1..16 hex digits. */
static bool read_hex(cursor *c, uint64_t *out) {
    uint64_t v = 0;
    int n = 0;
    while (c->p < c->end && df_hex_value(*c->p) >= 0) {
        if (++n > 16) return false;
        v = (v << 4) | (uint64_t)df_hex_value(*c->p++);
    }
    *out = v;
    return n > 0;
}

/* Reads 1..20 decimal digits without overflow. */
static bool read_dec(cursor *c, uint64_t *out) {
    uint64_t v = 0;
    int n = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p++ - '0');
        if (++n > 20 || v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return n > 0;
}

static bool expect(cursor *c, char ch) {
    if (c->p >= c->end || *c->p != ch) return false;
    c->p++;
    return true;
}

static bool read_perms(cursor *c, uint8_t *perms) {
    if (c->end - c->p < 4) return false;
    static const char want[4] = {'r', 'w', 'x', 'p'};
    static const uint8_t bit[4] = {DF_DIAG_MAP_R, DF_DIAG_MAP_W, DF_DIAG_MAP_X, DF_DIAG_MAP_P};
    uint8_t v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = c->p[i];
        if (ch == want[i]) v |= bit[i];
        else if (!(ch == '-' || (i == 3 && ch == 's'))) return false;
    }
    c->p += 4;
    *perms = v;
    return true;
}

/* Parses one line (without its newline) into m; the path is copied. */
static df_errkind parse_line(const char *line, const char *end, df__diag_map *m, df_error *err) {
    cursor c = {line, end};
    uint64_t major = 0, minor = 0;
    bool ok = read_hex(&c, &m->start) && expect(&c, '-') && read_hex(&c, &m->end) && expect(&c, ' ') &&
              read_perms(&c, &m->perms) && expect(&c, ' ') && read_hex(&c, &m->offset) && expect(&c, ' ') &&
              read_hex(&c, &major) && expect(&c, ':') && read_hex(&c, &minor) && expect(&c, ' ') &&
              read_dec(&c, &m->inode);
    if (!ok || m->end < m->start) DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "malformed maps line");
    if (c.p < c.end && *c.p != ' ') DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "malformed maps line");
    while (c.p < c.end && *c.p == ' ') c.p++;
    size_t n = (size_t)(c.end - c.p);
    if (n > DF_DIAG_MAPS_MAX_PATH) DF_FAIL(err, DF_ERR_LIMIT_EXCEEDED, "maps path longer than %u bytes", DF_DIAG_MAPS_MAX_PATH);
    if (memchr(c.p, '\0', n)) DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "maps path contains a NUL byte");
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    if (n >= dl && memcmp(c.p + n - dl, deleted, dl) == 0) {
        m->deleted = true;
        n -= dl;
    }
    m->path = df_strndup(c.p, n);
    if (!m->path) return DF_OOM(err);
    return DF_OK;
}

df_errkind df__diag_maps_parse(const char *text, size_t len, df__diag_map **out, size_t *count,
                               df_error *err) {
    *out = NULL;
    *count = 0;
    if (len > DF_DIAG_MAPS_MAX_TEXT) DF_FAIL(err, DF_ERR_LIMIT_EXCEEDED, "maps text larger than %u bytes", DF_DIAG_MAPS_MAX_TEXT);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    lines += len > 0 && text[len - 1] != '\n';
    if (lines > DF_DIAG_MAPS_MAX_ENTRIES) DF_FAIL(err, DF_ERR_LIMIT_EXCEEDED, "more than %u maps entries", DF_DIAG_MAPS_MAX_ENTRIES);
    df__diag_map *maps = lines ? df_calloc(lines, sizeof *maps) : NULL;
    if (lines && !maps) return DF_OOM(err);
    size_t n = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        df_errkind k = parse_line(p, line_end, &maps[n], err);
        if (k != DF_OK) {
            df_error_set_offset(err, (int64_t)(p - text));
            df__diag_maps_free(maps, n);
            return k;
        }
        n++;
        p = nl ? nl + 1 : end;
    }
    *out = maps;
    *count = n;
    return DF_OK;
}

void df__diag_maps_free(df__diag_map *maps, size_t count) {
    if (!maps) return;
    for (size_t i = 0; i < count; i++) df_free(maps[i].path);
    df_free(maps);
}

df_errkind df__diag_maps_read_self(df__diag_map **out, size_t *count, df_error *err) {
    *out = NULL;
    *count = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        df_error_set(err, DF_ERR_IO, "cannot open /proc/self/maps");
        df_error_set_code(err, errno);
        return DF_ERR_IO;
    }
    df_buf b;
    df_buf_init(&b, DF_DIAG_MAPS_MAX_TEXT);
    df_errkind kind = DF_OK;
    for (;;) {
        if ((kind = df_buf_reserve(&b, 65536, err)) != DF_OK) break;
        ssize_t r = read(fd, b.data + b.len, 65536);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            kind = df_error_set(err, DF_ERR_IO, "cannot read /proc/self/maps");
            df_error_set_code(err, errno);
            break;
        }
        if (r == 0) break;
        b.len += (size_t)r;
    }
    close(fd);
    if (kind == DF_OK) kind = df__diag_maps_parse(b.data ? b.data : "", b.len, out, count, err);
    df_buf_free(&b);
    return kind;
}
