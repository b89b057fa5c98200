/*
 * Allocator hooks.  Every allocation of the library goes through these
 * functions, so an embedding program (or a test that fails the Nth
 * allocation) can replace them.  Out of memory is reported as
 * DF_ERR_OUT_OF_MEMORY by the callers; nothing aborts.
 */
#ifndef DELTAFUNNEL_DF_ALLOC_H
#define DELTAFUNNEL_DF_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct df_allocator {
    void *(*malloc_fn)(size_t size, void *user);
    void *(*realloc_fn)(void *ptr, size_t size, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
} df_allocator;

/*
 * Replaces the allocator for the whole process.  Call it before any other
 * df_ function, or after every object of the library has been freed; NULL
 * restores the C library allocator.  Not thread-safe against concurrent
 * allocation.
 */
void df_set_allocator(const df_allocator *allocator);

/* The C library-like entry points; NULL on failure (size 0 returns a unique pointer). */
void *df_malloc(size_t size);
void *df_calloc(size_t count, size_t size);
void *df_realloc(void *ptr, size_t size);
void df_free(void *ptr);
char *df_strdup(const char *s);
char *df_strndup(const char *s, size_t n);

/* 64-byte aligned blocks (Arrow buffers); free with df_aligned_free only. */
void *df_aligned_alloc(size_t size);
void df_aligned_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
