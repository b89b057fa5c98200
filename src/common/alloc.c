/*
 * Allocator hooks and aligned blocks.
 *
 * Aligned blocks are carved from an ordinary hooked allocation: we allocate
 * size + 64 + sizeof(void *), round the address up to 64 and store the raw
 * pointer just below the aligned one, so a custom allocator never needs an
 * aligned entry point.
 */
#include "common/common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *libc_malloc(size_t size, void *user) {
    (void)user;
    return malloc(size);
}
static void *libc_realloc(void *ptr, size_t size, void *user) {
    (void)user;
    return realloc(ptr, size);
}
static void libc_free(void *ptr, void *user) {
    (void)user;
    free(ptr);
}

/* The process-wide hook: replaced only through df_set_allocator (like uv_replace_allocator). */
static df_allocator active = {libc_malloc, libc_realloc, libc_free, NULL};

void df_set_allocator(const df_allocator *allocator) {
    if (allocator && allocator->malloc_fn && allocator->realloc_fn && allocator->free_fn)
        active = *allocator;
    else
        active = (df_allocator){libc_malloc, libc_realloc, libc_free, NULL};
}

void *df_malloc(size_t size) {
    return active.malloc_fn(size ? size : 1, active.user);
}

void *df_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    void *p = df_malloc(count * size);
    size_t bytes = count * size;
    if (p) memset(p, 0, bytes ? bytes : 1);
    return p;
}

void *df_realloc(void *ptr, size_t size) {
    if (!ptr) return df_malloc(size);
    return active.realloc_fn(ptr, size ? size : 1, active.user);
}

void df_free(void *ptr) {
    if (ptr) active.free_fn(ptr, active.user);
}

char *df_strndup(const char *s, size_t n) {
    if (!s) return NULL;
    size_t len = strnlen(s, n);
    char *d = df_malloc(len + 1);
    if (!d) return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *df_strdup(const char *s) {
    return s ? df_strndup(s, strlen(s)) : NULL;
}

#define ALIGNMENT 64

void *df_aligned_alloc(size_t size) {
    if (size > SIZE_MAX - ALIGNMENT - sizeof(void *)) return NULL;
    unsigned char *raw = df_malloc(size + ALIGNMENT + sizeof(void *));
    if (!raw) return NULL;
    uintptr_t start = (uintptr_t)(raw + sizeof(void *));
    uintptr_t aligned = (start + ALIGNMENT - 1) & ~(uintptr_t)(ALIGNMENT - 1);
    memcpy((void *)(aligned - sizeof(void *)), &raw, sizeof raw);
    return (void *)aligned;
}

void df_aligned_free(void *ptr) {
    if (!ptr) return;
    void *raw;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof raw);
    df_free(raw);
}
