/*
 * In-process symbolization: which module a program counter belongs to, the
 * function containing it (ELF .symtab/.dynsym, or the separate debug file
 * found by build id), and its source line (DWARF, through elfutils libdw
 * when the build has it).
 *
 * Three layers, each usable alone (and fuzzed alone):
 *   proc maps:  parse the text of /proc/self/maps into mappings;
 *   ELF:        read the symbol tables, program headers and build id of one
 *               ELF file through a bounded reader, treating it as hostile;
 *   symbolizer: caches modules and answers address lookups.
 */
#ifndef DF_DIAG_SYMBOLIZE_H
#define DF_DIAG_SYMBOLIZE_H

#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* /proc/self/maps.                                                          */

enum { DF_DIAG_MAP_R = 1, DF_DIAG_MAP_W = 2, DF_DIAG_MAP_X = 4, DF_DIAG_MAP_P = 8 };

/* Caps: entries per maps text, path bytes, maps text bytes. */
#define DF_DIAG_MAPS_MAX_ENTRIES 262144u
#define DF_DIAG_MAPS_MAX_PATH 4096u
#define DF_DIAG_MAPS_MAX_TEXT (64u * 1024u * 1024u)

typedef struct df__diag_map {
    uint64_t start;  /* first address */
    uint64_t end;    /* one past the last address */
    uint64_t offset; /* file offset of `start` */
    uint64_t inode;  /* inode (0 for anonymous mappings) */
    uint8_t perms;   /* DF_DIAG_MAP_* bits */
    bool deleted;    /* the path carried " (deleted)" (stripped from `path`) */
    char *path;      /* owned; "" for anonymous mappings, "[vdso]" etc. for special ones */
} df__diag_map;

/*
 * Parses maps text (any bytes; at most DF_DIAG_MAPS_MAX_TEXT).  Malformed
 * lines are an error (DF_ERR_INVALID_ARGUMENT with the line's byte offset in
 * err->offset); DF_ERR_LIMIT_EXCEEDED beyond the caps.  On success *out
 * (free with df__diag_maps_free) holds *count entries in text order.
 */
df_errkind df__diag_maps_parse(const char *text, size_t len, df__diag_map **out, size_t *count,
                               df_error *err);
/* Reads and parses /proc/self/maps. */
df_errkind df__diag_maps_read_self(df__diag_map **out, size_t *count, df_error *err);
void df__diag_maps_free(df__diag_map *maps, size_t count);

/* ------------------------------------------------------------------------ */
/* ELF files.                                                                */

/* A bounded random-access source: read exactly `len` bytes at `off` or fail. */
typedef struct df__diag_elf_source {
    df_errkind (*read)(void *ctx, uint64_t off, void *buf, size_t len, df_error *err); /* exact read */
    void *ctx;     /* passed to read */
    uint64_t size; /* total bytes available */
} df__diag_elf_source;

/* Caps applied while reading an ELF file. */
#define DF_DIAG_ELF_MAX_SECTIONS 65535u
#define DF_DIAG_ELF_MAX_SEGMENTS 4096u
#define DF_DIAG_ELF_MAX_TABLE (256u * 1024u * 1024u) /* one symbol or string table */
#define DF_DIAG_ELF_MAX_SYMBOLS (4u * 1024u * 1024u)

typedef struct df__diag_elf df__diag_elf;

/*
 * Reads the function symbols (.symtab and .dynsym: STT_FUNC, STT_GNU_IFUNC),
 * the PT_LOAD segments and the GNU build id of a 64-bit little-endian ELF
 * file.  Every offset, size, count and string index is checked against the
 * source size and the caps.  Errors: DF_ERR_UNSUPPORTED (not ELF64 LE),
 * DF_ERR_INVALID_ARGUMENT (malformed, with err->offset = file offset),
 * DF_ERR_LIMIT_EXCEEDED, DF_ERR_OUT_OF_MEMORY, or the source's read error.
 */
df_errkind df__diag_elf_read(const df__diag_elf_source *src, df__diag_elf **out, df_error *err);
/* Reads the ELF file at `path` (opened read-only, no symlink restrictions). */
df_errkind df__diag_elf_open(const char *path, df__diag_elf **out, df_error *err);
void df__diag_elf_free(df__diag_elf *e);

/* Number of function symbols kept (after removing duplicates). */
size_t df__diag_elf_symbol_count(const df__diag_elf *e);
/* True if the file has a .symtab (not stripped). */
bool df__diag_elf_has_symtab(const df__diag_elf *e);
/* The build id bytes (NULL/0 if none). */
const uint8_t *df__diag_elf_build_id(const df__diag_elf *e, size_t *len);
/* Translates a file offset to the ELF virtual address of a PT_LOAD segment. */
bool df__diag_elf_offset_to_vaddr(const df__diag_elf *e, uint64_t off, uint64_t *vaddr);
/* The function containing ELF virtual address `vaddr`, or NULL.  Borrowed from e. */
const char *df__diag_elf_lookup(const df__diag_elf *e, uint64_t vaddr);

/* ------------------------------------------------------------------------ */
/* The symbolizer.                                                           */

typedef struct df__diag_symbolizer df__diag_symbolizer;

/* A file-backed executable mapping, as the trace's Mapping records need. */
typedef struct df__diag_module {
    uint64_t start, end;       /* mapped address range */
    uint64_t offset;           /* file offset of start */
    const char *path;          /* file path (borrowed from the symbolizer) */
    const uint8_t *build_id;   /* build id bytes, or NULL */
    size_t build_id_len;       /* their count */
    uint32_t index;            /* stable index of this mapping within the symbolizer, from 1 */
} df__diag_module;

typedef struct df__diag_symbol {
    const df__diag_module *module; /* NULL when no file mapping contains the address */
    const char *function;          /* NULL when unknown */
    const char *source_file;       /* NULL when unknown */
    uint32_t line;                 /* 0 when unknown */
} df__diag_symbol;

/* Creates a symbolizer over the current /proc/self/maps. */
df_errkind df__diag_symbolizer_create(df__diag_symbolizer **out, df_error *err);
/*
 * Resolves `addr` (an exact PC, or a return address minus one).  Re-reads
 * /proc/self/maps once per call when the address is in no known mapping
 * (libraries loaded since).  Strings stay valid until the symbolizer is
 * destroyed.  Only DF_ERR_OUT_OF_MEMORY is returned; unreadable files just
 * yield unknown names.
 */
df_errkind df__diag_symbolize(df__diag_symbolizer *s, uint64_t addr, df__diag_symbol *out, df_error *err);
void df__diag_symbolizer_destroy(df__diag_symbolizer *s);
/*
 * The process's shared symbolizer (kept between captures, refreshed on
 * each acquire), or a private one if it is already in use.  Give it back
 * with df__diag_symbolizer_release (which frees only a private one).
 */
df_errkind df__diag_symbolizer_acquire(df__diag_symbolizer **out, df_error *err);
void df__diag_symbolizer_release(df__diag_symbolizer *s);

/* DEBUGINFOD_URLS is set (non-blank): debug files may be fetched from debuginfod. */
bool df__diag_debuginfod_configured(void);
/* The system's libdebuginfod client library can be loaded. */
bool df__diag_debuginfod_client_available(void);

#endif
