/*
 * The symbolizer: address -> (mapping, function, source file, line) for the
 * running process.
 *
 * Mappings come from /proc/self/maps (executable, file-backed ones, plus
 * named special ones such as [vdso] that resolve to no function).  Each
 * distinct file (path + inode) is read once, lazily, on its first lookup:
 * its ELF function symbols, load segments and build id; when the file has
 * no .symtab and has a build id, the separate debug file
 * /usr/lib/debug/.build-id/xx/yyyy.debug supplies the symbols instead.
 * Source lines come from DWARF through elfutils libdw when the build has it
 * (DF_HAVE_LIBDW), from the debug file when there is one.  When neither the
 * file nor /usr/lib/debug has what is needed and DEBUGINFOD_URLS is set, the
 * debug file is asked from debuginfod through the system's libdebuginfod
 * (loaded at run time, so there is no build dependency; never consulted
 * without DEBUGINFOD_URLS).
 *
 * The kernel's [vdso] image is read in place from memory (bounded by its
 * mapping), so time calls resolve too.
 *
 * An address outside every known mapping triggers one re-read of the maps
 * (rate limited), for libraries loaded after the symbolizer was created.
 * Mapping entries are never removed, so the module pointers and strings
 * handed out stay valid until the symbolizer is destroyed.
 */
#include "diag/symbolize.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef DF_HAVE_LIBDW
#include <elfutils/libdw.h>
#endif

#define REFRESH_MIN_INTERVAL_NS (100u * 1000u * 1000u)

typedef struct file_entry {
    char *path;            /* file path (owned) */
    uint64_t inode;        /* inode from the maps */
    bool loaded;           /* load was attempted */
    df__diag_elf *elf;     /* symbols of the file itself, or NULL */
    df__diag_elf *debug;   /* symbols of its separate debug file, or NULL */
    char *debug_path;      /* that file's path (owned), or NULL */
    bool debug_requested;  /* the debug file came from debuginfod, which the user configured */
#ifdef DF_HAVE_LIBDW
    Dwarf *dwarf;          /* DWARF of the file or of its debug file, or NULL */
    int dwarf_fd;          /* fd kept open for `dwarf`, or -1 */
#endif
} file_entry;

typedef struct map_entry {
    df__diag_module mod;   /* public view; mod.path borrowed from file->path */
    file_entry *file;      /* NULL for special mappings */
    char *special;         /* owned name of a special mapping ("[vdso]"), or NULL */
    df__diag_elf *image;   /* symbols of an in-memory image ([vdso]), or NULL */
    bool image_tried;      /* reading the image was attempted */
} map_entry;

struct df__diag_symbolizer {
    map_entry **maps;      /* every mapping ever seen, owned */
    size_t nmaps, maps_cap;
    map_entry **live;      /* current mappings sorted by start (borrowed from maps) */
    size_t nlive;
    file_entry **files;    /* distinct files, owned */
    size_t nfiles, files_cap;
    uint64_t last_refresh_ns; /* monotonic time of the last maps read */
};

static file_entry *find_or_add_file(df__diag_symbolizer *s, const df__diag_map *m, df_error *err) {
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i]->inode == m->inode && strcmp(s->files[i]->path, m->path) == 0) return s->files[i];
    if (DF_ARRAY_RESERVE(s->files, s->files_cap, s->nfiles + 1, 64, err) != DF_OK) return NULL;
    file_entry *f = df_calloc(1, sizeof *f);
    if (!f || !(f->path = df_strdup(m->path))) {
        df_free(f);
        DF_OOM(err);
        return NULL;
    }
    f->inode = m->inode;
#ifdef DF_HAVE_LIBDW
    f->dwarf_fd = -1;
#endif
    s->files[s->nfiles++] = f;
    return f;
}

/* Finds the entry of an identical earlier mapping, or adds one. */
static map_entry *find_or_add_map(df__diag_symbolizer *s, const df__diag_map *m, df_error *err) {
    bool file = m->path[0] == '/';
    for (size_t i = 0; i < s->nmaps; i++) {
        map_entry *e = s->maps[i];
        if (e->mod.start == m->start && e->mod.end == m->end && e->mod.offset == m->offset &&
            strcmp(e->mod.path, m->path) == 0 && (!file || e->file->inode == m->inode))
            return e;
    }
    if (DF_ARRAY_RESERVE(s->maps, s->maps_cap, s->nmaps + 1, 64, err) != DF_OK) return NULL;
    map_entry *e = df_calloc(1, sizeof *e);
    if (!e) {
        DF_OOM(err);
        return NULL;
    }
    if (file) {
        e->file = find_or_add_file(s, m, err);
        if (!e->file) {
            df_free(e);
            return NULL;
        }
        e->mod.path = e->file->path;
    } else {
        e->special = df_strdup(m->path);
        if (!e->special) {
            df_free(e);
            DF_OOM(err);
            return NULL;
        }
        e->mod.path = e->special;
    }
    e->mod.start = m->start;
    e->mod.end = m->end;
    e->mod.offset = m->offset;
    e->mod.index = (uint32_t)s->nmaps + 1;
    s->maps[s->nmaps++] = e;
    return e;
}

static int cmp_live(const void *a, const void *b) {
    const map_entry *x = *(map_entry *const *)a, *y = *(map_entry *const *)b;
    return x->mod.start < y->mod.start ? -1 : x->mod.start > y->mod.start;
}

/* Re-reads /proc/self/maps and rebuilds the sorted list of live mappings. */
static df_errkind refresh(df__diag_symbolizer *s, df_error *err) {
    df__diag_map *maps = NULL;
    size_t n = 0;
    s->last_refresh_ns = df_now_ns();
    df_error ignored = {0};
    if (df__diag_maps_read_self(&maps, &n, &ignored) != DF_OK) { /* keep the old view */
        df_error_clear(&ignored);
        return DF_OK;
    }
    map_entry **live = df_malloc((n ? n : 1) * sizeof *live);
    df_errkind k = live ? DF_OK : DF_OOM(err);
    size_t nlive = 0;
    for (size_t i = 0; i < n && k == DF_OK; i++) {
        const df__diag_map *m = &maps[i];
        bool special = m->path[0] == '[';
        if (!(m->perms & DF_DIAG_MAP_X) || (m->path[0] != '/' && !special)) continue;
        map_entry *e = find_or_add_map(s, m, err);
        if (!e) k = DF_ERR_OUT_OF_MEMORY; /* the only failure; err is filled */
        else live[nlive++] = e;
    }
    df__diag_maps_free(maps, n);
    if (k != DF_OK) {
        df_free(live);
        return k;
    }
    qsort(live, nlive, sizeof *live, cmp_live);
    df_free(s->live);
    s->live = live;
    s->nlive = nlive;
    return DF_OK;
}

df_errkind df__diag_symbolizer_create(df__diag_symbolizer **out, df_error *err) {
    *out = NULL;
    df__diag_symbolizer *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    df_errkind k = refresh(s, err);
    if (k != DF_OK) {
        df__diag_symbolizer_destroy(s);
        return k;
    }
    *out = s;
    return DF_OK;
}

static map_entry *find_live(const df__diag_symbolizer *s, uint64_t addr) {
    size_t lo = 0, hi = s->nlive;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->live[mid]->mod.start <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    map_entry *e = s->live[lo - 1];
    return addr < e->mod.end ? e : NULL;
}

#ifdef DF_HAVE_LIBDW
/*
 * Line tables come from the module itself (our library built with
 * -Dprofiling=true) or from a debug file the user asked debuginfod for.
 * Debug files found by build id under /usr/lib/debug (distribution -dbg
 * packages) give function names only: opening their DWARF inflates every
 * compressed debug section (tens of milliseconds for libc) while the
 * workload runs, for line numbers inside system libraries.
 */
static void open_dwarf(file_entry *f) {
    const char *paths[2] = {f->debug_requested ? f->debug_path : NULL, f->path};
    for (int i = 0; i < 2 && !f->dwarf; i++) {
        if (!paths[i]) continue;
        /* Module and debug paths come from the process's mappings and the user: regular files only. */
        int fd;
        if (df_file_open_regular(paths[i], 0, &fd, NULL) != 0) continue;
        Dwarf *d = dwarf_begin(fd, DWARF_C_READ);
        if (d) {
            f->dwarf = d;
            f->dwarf_fd = fd;
        } else {
            close(fd);
        }
    }
}
#endif

/* ------------------------------------------------------------------------ */
/* debuginfod (optional, loaded at run time).                                */

typedef void *(*dbgi_begin_fn)(void);
typedef int (*dbgi_find_fn)(void *client, const unsigned char *build_id, int build_id_len, char **path);
typedef void (*dbgi_end_fn)(void *client);

static struct {
    pthread_once_t once;  /* library lookup */
    dbgi_begin_fn begin;  /* debuginfod_begin */
    dbgi_find_fn find;    /* debuginfod_find_debuginfo */
    dbgi_end_fn end;      /* debuginfod_end */
} dbgi = {PTHREAD_ONCE_INIT, NULL, NULL, NULL};

static void dbgi_load(void) {
    void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    dbgi.begin = (dbgi_begin_fn)dlsym(h, "debuginfod_begin");
    dbgi.find = (dbgi_find_fn)dlsym(h, "debuginfod_find_debuginfo");
    dbgi.end = (dbgi_end_fn)dlsym(h, "debuginfod_end");
    if (!dbgi.begin || !dbgi.find || !dbgi.end) dbgi.begin = NULL;
}

bool df__diag_debuginfod_client_available(void) {
    pthread_once(&dbgi.once, dbgi_load);
    return dbgi.begin != NULL;
}

bool df__diag_debuginfod_configured(void) {
    const char *urls = getenv("DEBUGINFOD_URLS");
    return urls && urls[strspn(urls, " \t")];
}

/* Path of the debug file of build id `id` from debuginfod (owned), or NULL. */
static char *debuginfod_fetch(const uint8_t *id, size_t len) {
    if (!df__diag_debuginfod_configured() || !df__diag_debuginfod_client_available() || len > 64) return NULL;
    void *client = dbgi.begin();
    if (!client) return NULL;
    char *path = NULL;
    int fd = dbgi.find(client, id, (int)len, &path);
    dbgi.end(client);
    if (fd >= 0) close(fd);
    char *out = fd >= 0 && path ? df_strdup(path) : NULL;
    free(path); /* allocated by libdebuginfod with malloc */
    return out;
}

#ifdef DF_HAVE_LIBDW
/* True if the file itself carries DWARF line tables. */
static bool has_own_dwarf(const char *path) {
    int fd;
    if (df_file_open_regular(path, 0, &fd, NULL) != 0) return false;
    Dwarf *d = dwarf_begin(fd, DWARF_C_READ);
    bool ok = d != NULL;
    if (d) dwarf_end(d);
    close(fd);
    return ok;
}
#endif

/* Opens a separate debug file for f (path owned by f on success). */
static void attach_debug_file(file_entry *f, char *path) {
    if (!path) return;
    df_error e = {0};
    if (df__diag_elf_open(path, &f->debug, &e) == DF_OK) {
        f->debug_path = path;
    } else {
        f->debug = NULL;
        df_free(path);
    }
    df_error_clear(&e);
}

/* Reads the file's symbols (and debug file) once. */
static void load_file(file_entry *f) {
    if (f->loaded) return;
    f->loaded = true;
    df_error e = {0};
    if (df__diag_elf_open(f->path, &f->elf, &e) != DF_OK) f->elf = NULL;
    df_error_clear(&e);
    size_t idlen = 0;
    const uint8_t *id = df__diag_elf_build_id(f->elf, &idlen);
    if (f->elf && !df__diag_elf_has_symtab(f->elf) && idlen >= 2) {
        char path[64 + 2 * 64];
        int n = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
        for (size_t i = 1; i < idlen && n > 0 && (size_t)n + 3 < sizeof path; i++)
            n += snprintf(path + n, sizeof path - (size_t)n, "%02x", id[i]);
        if (n > 0 && (size_t)n + 7 < sizeof path) {
            memcpy(path + n, ".debug", 7);
            int fd;
            if (df_file_open_regular(path, 0, &fd, NULL) == 0) {
                close(fd);
                attach_debug_file(f, df_strdup(path));
            }
        }
    }
    bool want = f->elf && !f->debug && idlen >= 2 && df__diag_debuginfod_configured();
#ifdef DF_HAVE_LIBDW
    want = want && (!df__diag_elf_has_symtab(f->elf) || !has_own_dwarf(f->path));
#else
    want = want && !df__diag_elf_has_symtab(f->elf);
#endif
    if (want) {
        attach_debug_file(f, debuginfod_fetch(id, idlen));
        f->debug_requested = f->debug != NULL;
    }
#ifdef DF_HAVE_LIBDW
    open_dwarf(f);
#endif
}

#ifdef DF_HAVE_LIBDW
static void lookup_line(file_entry *f, uint64_t vaddr, df__diag_symbol *out) {
    if (!f->dwarf) return;
    Dwarf_Die cu;
    if (!dwarf_addrdie(f->dwarf, (Dwarf_Addr)vaddr, &cu)) return;
    Dwarf_Line *line = dwarf_getsrc_die(&cu, (Dwarf_Addr)vaddr);
    if (!line) return;
    int lineno = 0;
    const char *src = dwarf_linesrc(line, NULL, NULL);
    if (src && dwarf_lineno(line, &lineno) == 0 && lineno > 0) {
        out->source_file = src;
        out->line = (uint32_t)lineno;
    }
}
#endif

/* Reads from the mapped [vdso] image, bounded by its mapping. */
static df_errkind image_read(void *ctx, uint64_t off, void *buf, size_t len, df_error *err) {
    const map_entry *e = ctx;
    uint64_t size = e->mod.end - e->mod.start;
    if (off > size || len > size - off) DF_FAIL(err, DF_ERR_IO, "read outside the vdso image");
    memcpy(buf, (const void *)(uintptr_t)(e->mod.start + off), len);
    return DF_OK;
}

/*
 * Symbols of the kernel's vDSO: an ELF image mapped in this process (found
 * through AT_SYSINFO_EHDR), read in place.  Other special mappings have none.
 */
static void lookup_special(map_entry *e, uint64_t addr, df__diag_symbol *out) {
    if (!e->image_tried) {
        e->image_tried = true;
        uint64_t ehdr = (uint64_t)getauxval(AT_SYSINFO_EHDR);
        if (strcmp(e->special, "[vdso]") == 0 && ehdr == e->mod.start && e->mod.end > e->mod.start) {
            df__diag_elf_source src = {image_read, e, e->mod.end - e->mod.start};
            df_error ignored = {0};
            if (df__diag_elf_read(&src, &e->image, &ignored) != DF_OK) e->image = NULL;
            df_error_clear(&ignored);
        }
    }
    uint64_t vaddr;
    if (e->image && df__diag_elf_offset_to_vaddr(e->image, addr - e->mod.start, &vaddr))
        out->function = df__diag_elf_lookup(e->image, vaddr);
}

df_errkind df__diag_symbolize(df__diag_symbolizer *s, uint64_t addr, df__diag_symbol *out, df_error *err) {
    *out = (df__diag_symbol){0};
    map_entry *e = find_live(s, addr);
    if (!e && df_now_ns() - s->last_refresh_ns >= REFRESH_MIN_INTERVAL_NS) {
        DF_TRY(refresh(s, err));
        e = find_live(s, addr);
    }
    if (!e) return DF_OK;
    out->module = &e->mod;
    file_entry *f = e->file;
    if (!f) {
        lookup_special(e, addr, out);
        return DF_OK;
    }
    load_file(f);
    e->mod.build_id = df__diag_elf_build_id(f->elf, &e->mod.build_id_len);
    uint64_t vaddr;
    if (!f->elf || !df__diag_elf_offset_to_vaddr(f->elf, addr - e->mod.start + e->mod.offset, &vaddr))
        return DF_OK;
    if (f->debug) out->function = df__diag_elf_lookup(f->debug, vaddr);
    if (!out->function) out->function = df__diag_elf_lookup(f->elf, vaddr);
#ifdef DF_HAVE_LIBDW
    lookup_line(f, vaddr, out);
#endif
    return DF_OK;
}

/*
 * The process's shared symbolizer: captures symbolize with one instance that
 * outlives them, so the symbol tables and line tables of the process's
 * modules are read once per process, not once per capture (a ranked
 * profile per operation would otherwise re-read libpython and our own
 * library each time).  Only one capture runs at a time; the mutex guards
 * hand-over between captures.  It is never freed (reachable until exit).
 */
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static df__diag_symbolizer *shared;
static bool shared_busy;

df_errkind df__diag_symbolizer_acquire(df__diag_symbolizer **out, df_error *err) {
    *out = NULL;
    pthread_mutex_lock(&shared_mu);
    df_errkind k = DF_OK;
    if (shared_busy) {
        pthread_mutex_unlock(&shared_mu);
        return df__diag_symbolizer_create(out, err); /* a second user (never with one capture): its own */
    }
    if (!shared) k = df__diag_symbolizer_create(&shared, err);
    else k = refresh(shared, err); /* modules loaded or unloaded since the last capture */
    if (k == DF_OK) {
        shared_busy = true;
        *out = shared;
    }
    pthread_mutex_unlock(&shared_mu);
    return k;
}

void df__diag_symbolizer_release(df__diag_symbolizer *s) {
    if (!s) return;
    pthread_mutex_lock(&shared_mu);
    bool mine = s == shared;
    if (mine) shared_busy = false;
    pthread_mutex_unlock(&shared_mu);
    if (!mine) df__diag_symbolizer_destroy(s);
}

void df__diag_symbolizer_destroy(df__diag_symbolizer *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nfiles; i++) {
        file_entry *f = s->files[i];
#ifdef DF_HAVE_LIBDW
        if (f->dwarf) dwarf_end(f->dwarf);
        if (f->dwarf_fd >= 0) close(f->dwarf_fd);
#endif
        df__diag_elf_free(f->elf);
        df__diag_elf_free(f->debug);
        df_free(f->debug_path);
        df_free(f->path);
        df_free(f);
    }
    for (size_t i = 0; i < s->nmaps; i++) {
        df__diag_elf_free(s->maps[i]->image);
        df_free(s->maps[i]->special);
        df_free(s->maps[i]);
    }
    df_free(s->files);
    df_free(s->maps);
    df_free(s->live);
    df_free(s);
}
