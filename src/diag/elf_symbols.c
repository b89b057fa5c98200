/*
 * ELF symbol tables for the symbolizer.
 *
 * Reads, through a bounded random-access source, the ELF header, program
 * headers (PT_LOAD segments, PT_NOTE build id), section headers, and the
 * function symbols of .symtab and .dynsym (STT_FUNC and STT_GNU_IFUNC,
 * defined, non-zero address).  The file is treated as hostile: every table
 * offset/size is checked against the file size with overflow-checked
 * arithmetic, entry sizes must match the ELF64 layout, counts and table
 * sizes are capped, string indexes are checked and names must be
 * NUL-terminated inside their string table.  Symbols end up in one array
 * sorted by address (duplicates at one address collapsed, the sized and
 * .symtab entry preferred) and their names in one string arena.
 */
#include "diag/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    EHDR_SIZE = 64, PHDR_SIZE = 56, SHDR_SIZE = 64, SYM_SIZE = 24,
    PT_LOAD = 1, PT_NOTE = 4,
    SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_NOTE = 7, SHT_NOBITS = 8, SHT_DYNSYM = 11,
    STT_FUNC = 2, STT_GNU_IFUNC = 10,
    NT_GNU_BUILD_ID = 3,
    MAX_NOTES_BYTES = 65536,
    MAX_BUILD_ID = 64,
    MAX_LOADS = 64,
};

typedef struct elf_sym {
    uint64_t addr;     /* st_value */
    uint64_t size;     /* st_size */
    uint32_t name;     /* offset in the name arena */
    uint8_t from_symtab; /* 1 if from .symtab */
} elf_sym;

typedef struct elf_load {
    uint64_t offset, vaddr, filesz; /* PT_LOAD p_offset, p_vaddr, p_filesz */
} elf_load;

struct df__diag_elf {
    elf_sym *syms;          /* sorted by addr */
    size_t nsyms;           /* count */
    df_buf names;           /* NUL-separated symbol names */
    elf_load loads[MAX_LOADS]; /* PT_LOAD segments */
    size_t nloads;          /* count */
    uint8_t build_id[MAX_BUILD_ID]; /* GNU build id */
    size_t build_id_len;    /* 0 if none */
    bool has_symtab;        /* a .symtab section exists */
};

/* Parsing state: the source and the section headers. */
typedef struct parse {
    const df__diag_elf_source *src; /* input */
    df__diag_elf *e;                /* output */
    unsigned char *shdrs;           /* section header table */
    uint64_t shnum;                 /* number of sections */
    df_error *err;                  /* error out */
} parse;

static df_errkind malformed(parse *ps, uint64_t off, const char *what) {
    df_error_set(ps->err, DF_ERR_INVALID_ARGUMENT, "malformed ELF file: %s", what);
    df_error_set_offset(ps->err, off > INT64_MAX ? -1 : (int64_t)off);
    return DF_ERR_INVALID_ARGUMENT;
}

/* True if [off, off+len) lies inside the source. */
static bool in_file(const parse *ps, uint64_t off, uint64_t len) {
    uint64_t end;
    return !__builtin_add_overflow(off, len, &end) && end <= ps->src->size;
}

/* Reads [off, off+len) into a new buffer after bounds and cap checks. */
static df_errkind read_block(parse *ps, uint64_t off, uint64_t len, uint64_t cap, unsigned char **out) {
    *out = NULL;
    if (len > cap) {
        df_error_set(ps->err, DF_ERR_LIMIT_EXCEEDED, "ELF table of %llu bytes exceeds %llu", (unsigned long long)len,
                     (unsigned long long)cap);
        return DF_ERR_LIMIT_EXCEEDED;
    }
    if (!in_file(ps, off, len)) return malformed(ps, off, "table outside the file");
    unsigned char *b = df_malloc(len ? (size_t)len : 1);
    if (!b) return DF_OOM(ps->err);
    df_errkind k = len ? ps->src->read(ps->src->ctx, off, b, (size_t)len, ps->err) : DF_OK;
    if (k != DF_OK) {
        df_free(b);
        return k;
    }
    *out = b;
    return DF_OK;
}

/* Scans a block of notes for NT_GNU_BUILD_ID (bounds-checked walk). */
static void scan_notes(df__diag_elf *e, const unsigned char *p, uint64_t len) {
    uint64_t off = 0;
    while (len - off >= 12 && !e->build_id_len) {
        uint32_t namesz = df_load_le32(p + off), descsz = df_load_le32(p + off + 4), type = df_load_le32(p + off + 8);
        uint64_t name_pad = ((uint64_t)namesz + 3) & ~3ull, desc_pad = ((uint64_t)descsz + 3) & ~3ull;
        off += 12;
        if (name_pad > len - off) return;
        const unsigned char *name = p + off;
        off += name_pad;
        if (desc_pad > len - off) return;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz > 0 &&
            descsz <= MAX_BUILD_ID) {
            memcpy(e->build_id, p + off, descsz);
            e->build_id_len = descsz;
        }
        off += desc_pad;
    }
}

static df_errkind read_notes(parse *ps, uint64_t off, uint64_t len) {
    if (len == 0 || len > MAX_NOTES_BYTES || ps->e->build_id_len) return DF_OK; /* not worth reading */
    unsigned char *b = NULL;
    DF_TRY(read_block(ps, off, len, MAX_NOTES_BYTES, &b));
    scan_notes(ps->e, b, len);
    df_free(b);
    return DF_OK;
}

static df_errkind read_program_headers(parse *ps, const unsigned char *eh) {
    uint64_t phoff = df_load_le64(eh + 32);
    uint16_t phentsize = df_load_le16(eh + 54), phnum = df_load_le16(eh + 56);
    if (phnum == 0) return DF_OK;
    if (phentsize != PHDR_SIZE) return malformed(ps, 54, "program header entry size");
    if (phnum > DF_DIAG_ELF_MAX_SEGMENTS) return malformed(ps, 56, "too many program headers");
    unsigned char *ph = NULL;
    DF_TRY(read_block(ps, phoff, (uint64_t)phnum * PHDR_SIZE, (uint64_t)DF_DIAG_ELF_MAX_SEGMENTS * PHDR_SIZE, &ph));
    df_errkind k = DF_OK;
    for (uint16_t i = 0; i < phnum && k == DF_OK; i++) {
        const unsigned char *p = ph + (size_t)i * PHDR_SIZE;
        uint32_t type = df_load_le32(p);
        uint64_t off = df_load_le64(p + 8), vaddr = df_load_le64(p + 16), filesz = df_load_le64(p + 32);
        if (type == PT_LOAD && ps->e->nloads < MAX_LOADS)
            ps->e->loads[ps->e->nloads++] = (elf_load){off, vaddr, filesz};
        else if (type == PT_NOTE && in_file(ps, off, filesz))
            k = read_notes(ps, off, filesz);
    }
    df_free(ph);
    return k;
}

static df_errkind read_section_headers(parse *ps, const unsigned char *eh) {
    uint64_t shoff = df_load_le64(eh + 40);
    uint16_t shentsize = df_load_le16(eh + 58);
    uint64_t shnum = df_load_le16(eh + 60);
    if (shoff == 0) return DF_OK; /* no section table: symbols come only from dynamic segments */
    if (shentsize != SHDR_SIZE) return malformed(ps, 58, "section header entry size");
    if (shnum == 0) { /* extended numbering: the count is section 0's sh_size */
        unsigned char s0[SHDR_SIZE];
        if (!in_file(ps, shoff, SHDR_SIZE)) return malformed(ps, shoff, "section table outside the file");
        DF_TRY(ps->src->read(ps->src->ctx, shoff, s0, SHDR_SIZE, ps->err));
        shnum = df_load_le64(s0 + 32);
    }
    if (shnum > DF_DIAG_ELF_MAX_SECTIONS) return malformed(ps, 60, "too many sections");
    ps->shnum = shnum;
    return read_block(ps, shoff, shnum * SHDR_SIZE, (uint64_t)DF_DIAG_ELF_MAX_SECTIONS * SHDR_SIZE, &ps->shdrs);
}

/* Appends the function symbols of one symbol table section. */
static df_errkind read_symbols(parse *ps, const unsigned char *sh, bool symtab, size_t *cap) {
    uint64_t off = df_load_le64(sh + 24), size = df_load_le64(sh + 32), entsize = df_load_le64(sh + 56);
    uint32_t link = df_load_le32(sh + 40);
    if (entsize != SYM_SIZE || size % SYM_SIZE) return malformed(ps, off, "symbol table entry size");
    if (link == 0 || link >= ps->shnum) return malformed(ps, off, "symbol table string link");
    const unsigned char *str_sh = ps->shdrs + (size_t)link * SHDR_SIZE;
    if (df_load_le32(str_sh + 4) != SHT_STRTAB) return malformed(ps, off, "symbol string table type");
    uint64_t str_off = df_load_le64(str_sh + 24), str_size = df_load_le64(str_sh + 32);
    unsigned char *tab = NULL, *strs = NULL;
    df_errkind k = read_block(ps, off, size, DF_DIAG_ELF_MAX_TABLE, &tab);
    if (k == DF_OK) k = read_block(ps, str_off, str_size, DF_DIAG_ELF_MAX_TABLE, &strs);
    df__diag_elf *e = ps->e;
    for (uint64_t i = 1; k == DF_OK && i < size / SYM_SIZE; i++) { /* entry 0 is reserved */
        const unsigned char *s = tab + i * SYM_SIZE;
        uint32_t name = df_load_le32(s);
        uint8_t type = s[4] & 0xf;
        uint16_t shndx = df_load_le16(s + 6);
        uint64_t value = df_load_le64(s + 8), sz = df_load_le64(s + 16);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || shndx == 0 || value == 0) continue;
        if (name >= str_size) { k = malformed(ps, off + i * SYM_SIZE, "symbol name index"); break; }
        const unsigned char *nm = strs + name;
        const unsigned char *nul = memchr(nm, 0, (size_t)(str_size - name));
        if (!nul) { k = malformed(ps, str_off + name, "unterminated symbol name"); break; }
        if (nul == nm) continue;
        if (e->nsyms == *cap && *cap >= DF_DIAG_ELF_MAX_SYMBOLS) { k = df_error_set(ps->err, DF_ERR_LIMIT_EXCEEDED, "too many ELF symbols"); break; }
        if ((k = DF_ARRAY_RESERVE(e->syms, *cap, e->nsyms + 1, 1024, ps->err)) != DF_OK) break;
        uint32_t at = (uint32_t)e->names.len;
        if (e->names.len > UINT32_MAX - (size_t)(nul - nm) - 1) { k = df_error_set(ps->err, DF_ERR_LIMIT_EXCEEDED, "ELF names too large"); break; }
        if ((k = df_buf_append(&e->names, nm, (size_t)(nul - nm) + 1, ps->err)) != DF_OK) break;
        e->syms[e->nsyms++] = (elf_sym){value, sz, at, symtab};
    }
    df_free(tab);
    df_free(strs);
    return k;
}

static int cmp_sym(const void *a, const void *b) {
    const elf_sym *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    if ((x->size != 0) != (y->size != 0)) return x->size ? -1 : 1; /* sized first */
    if (x->from_symtab != y->from_symtab) return x->from_symtab ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorts and keeps the preferred symbol per address. */
static void finish_symbols(df__diag_elf *e) {
    if (!e->nsyms) return;
    qsort(e->syms, e->nsyms, sizeof *e->syms, cmp_sym);
    size_t w = 0;
    for (size_t r = 0; r < e->nsyms; r++)
        if (w == 0 || e->syms[w - 1].addr != e->syms[r].addr) e->syms[w++] = e->syms[r];
    e->nsyms = w;
}

static df_errkind read_sections(parse *ps) {
    size_t cap = 0;
    for (uint64_t i = 0; i < ps->shnum; i++) {
        const unsigned char *sh = ps->shdrs + i * SHDR_SIZE;
        uint32_t type = df_load_le32(sh + 4);
        if (type == SHT_SYMTAB || type == SHT_DYNSYM) {
            if (type == SHT_SYMTAB) ps->e->has_symtab = true;
            DF_TRY(read_symbols(ps, sh, type == SHT_SYMTAB, &cap));
        } else if (type == SHT_NOTE) {
            uint64_t off = df_load_le64(sh + 24), size = df_load_le64(sh + 32);
            if (in_file(ps, off, size)) DF_TRY(read_notes(ps, off, size));
        }
    }
    return DF_OK;
}

df_errkind df__diag_elf_read(const df__diag_elf_source *src, df__diag_elf **out, df_error *err) {
    *out = NULL;
    unsigned char eh[EHDR_SIZE];
    if (src->size < EHDR_SIZE) DF_FAIL(err, DF_ERR_UNSUPPORTED, "not an ELF file");
    DF_TRY(src->read(src->ctx, 0, eh, EHDR_SIZE, err));
    if (memcmp(eh, "\x7f" "ELF", 4) != 0) DF_FAIL(err, DF_ERR_UNSUPPORTED, "not an ELF file");
    if (eh[4] != 2 || eh[5] != 1) DF_FAIL(err, DF_ERR_UNSUPPORTED, "only 64-bit little-endian ELF files are read");
    df__diag_elf *e = df_calloc(1, sizeof *e);
    if (!e) return DF_OOM(err);
    df_buf_init(&e->names, DF_DIAG_ELF_MAX_TABLE);
    parse ps = {.src = src, .e = e, .err = err};
    df_errkind k = read_program_headers(&ps, eh);
    if (k == DF_OK) k = read_section_headers(&ps, eh);
    if (k == DF_OK) k = read_sections(&ps);
    df_free(ps.shdrs);
    if (k != DF_OK) {
        df__diag_elf_free(e);
        return k;
    }
    finish_symbols(e);
    *out = e;
    return DF_OK;
}

void df__diag_elf_free(df__diag_elf *e) {
    if (!e) return;
    df_free(e->syms);
    df_buf_free(&e->names);
    df_free(e);
}

size_t df__diag_elf_symbol_count(const df__diag_elf *e) { return e ? e->nsyms : 0; }
bool df__diag_elf_has_symtab(const df__diag_elf *e) { return e && e->has_symtab; }

const uint8_t *df__diag_elf_build_id(const df__diag_elf *e, size_t *len) {
    *len = e ? e->build_id_len : 0;
    return e && e->build_id_len ? e->build_id : NULL;
}

bool df__diag_elf_offset_to_vaddr(const df__diag_elf *e, uint64_t off, uint64_t *vaddr) {
    for (size_t i = 0; i < e->nloads; i++) {
        const elf_load *l = &e->loads[i];
        if (off >= l->offset && off - l->offset < l->filesz) {
            *vaddr = off - l->offset + l->vaddr;
            return true;
        }
    }
    return false;
}

/* Unsized symbols cover at most this many bytes after their address. */
#define UNSIZED_REACH 4096u

const char *df__diag_elf_lookup(const df__diag_elf *e, uint64_t vaddr) {
    if (!e || !e->nsyms) return NULL;
    size_t lo = 0, hi = e->nsyms; /* find the last symbol with addr <= vaddr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->syms[mid].addr <= vaddr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    const elf_sym *s = &e->syms[lo - 1];
    uint64_t delta = vaddr - s->addr;
    bool inside = s->size ? delta < s->size
                          : delta < UNSIZED_REACH && (lo == e->nsyms || vaddr < e->syms[lo].addr);
    return inside ? e->names.data + s->name : NULL;
}

/* ------------------------------------------------------------------------ */
/* Files.                                                                    */

static df_errkind fd_read(void *ctx, uint64_t off, void *buf, size_t len, df_error *err) {
    int fd = *(int *)ctx;
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            df_error_set(err, DF_ERR_IO, "cannot read ELF file at offset %llu", (unsigned long long)(off + done));
            df_error_set_code(err, r < 0 ? errno : 0);
            return DF_ERR_IO;
        }
        done += (size_t)r;
    }
    return DF_OK;
}

df_errkind df__diag_elf_open(const char *path, df__diag_elf **out, df_error *err) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        df_errkind k = df_error_set(err, e == ENOENT ? DF_ERR_NOT_FOUND : DF_ERR_IO, "cannot open ELF file");
        df_error_set_code(err, e);
        return k;
    }
    struct stat st;
    df_errkind k;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        k = df_error_set(err, DF_ERR_UNSUPPORTED, "not a regular file");
    } else {
        df__diag_elf_source src = {fd_read, &fd, (uint64_t)st.st_size};
        k = df__diag_elf_read(&src, out, err);
    }
    close(fd);
    return k;
}
