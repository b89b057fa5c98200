/*
 * libFuzzer target: the ELF symbol reader of the symbolizer
 * (src/diag/elf_symbols.c) over arbitrary bytes.  Every input must either
 * parse or fail with an error; lookups on a parsed file must stay in bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "diag/symbolize.h"

typedef struct input {
    const uint8_t *data; /* fuzzer bytes */
    size_t size;         /* count */
} input;

static df_errkind read_input(void *ctx, uint64_t off, void *buf, size_t len, df_error *err) {
    const input *in = ctx;
    if (off > in->size || len > in->size - off) DF_FAIL(err, DF_ERR_IO, "short read");
    memcpy(buf, in->data + off, len);
    return DF_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    input in = {data, size};
    df__diag_elf_source src = {read_input, &in, size};
    df__diag_elf *e = NULL;
    df_error err = {0};
    if (df__diag_elf_read(&src, &e, &err) != DF_OK) {
        if (e != NULL || err.message[0] == '\0') __builtin_trap();
        return 0;
    }
    size_t idlen = 0;
    (void)df__diag_elf_build_id(e, &idlen);
    uint64_t probe = size >= 8 ? df_load_le64(data + size - 8) : 0;
    for (int i = 0; i < 16; i++) {
        uint64_t vaddr = 0;
        const char *name = df__diag_elf_lookup(e, probe + (uint64_t)i * 64);
        if (name && strlen(name) > DF_DIAG_ELF_MAX_TABLE) __builtin_trap();
        (void)df__diag_elf_offset_to_vaddr(e, probe + (uint64_t)i, &vaddr);
    }
    df__diag_elf_free(e);
    return 0;
}
