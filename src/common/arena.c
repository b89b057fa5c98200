/*
 * Arenas: bump allocation in chunks.  Objects allocated from an arena are
 * never freed one by one; the arena is reset or destroyed as a whole.  Under
 * AddressSanitizer the unused tail of each chunk is poisoned so that reads
 * past an allocation are caught.
 */
#include "common/common.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DF_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DF_ASAN 1
#endif

#ifdef DF_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct df_arena_chunk {
    df_arena_chunk *next;  /* older chunk */
    size_t size;           /* usable bytes after the header */
    size_t used;           /* bytes handed out */
    _Alignas(16) unsigned char data[];
};

#define ALIGN16(n) (((n) + 15) & ~(size_t)15)

void df_arena_init(df_arena *arena, size_t chunk_size, size_t limit) {
    arena->head = NULL;
    arena->chunk_size = chunk_size ? chunk_size : 64 * 1024;
    arena->total = 0;
    arena->limit = limit;
}

static df_arena_chunk *new_chunk(df_arena *arena, size_t min_size) {
    size_t size = DF_MAX(arena->chunk_size, min_size);
    size_t bytes;
    if (df_add_overflow_size(size, sizeof(df_arena_chunk), &bytes)) return NULL;
    if (arena->limit && arena->total + bytes > arena->limit) return NULL;
    df_arena_chunk *c = df_malloc(bytes);
    if (!c) return NULL;
    c->next = arena->head;
    c->size = size;
    c->used = 0;
    POISON(c->data, size);
    arena->head = c;
    arena->total += bytes;
    return c;
}

void *df_arena_alloc(df_arena *arena, size_t size) {
    size_t need = ALIGN16(size ? size : 1);
    if (need < size) return NULL;
    df_arena_chunk *c = arena->head;
    if (!c || c->size - c->used < need) {
        c = new_chunk(arena, need);
        if (!c) return NULL;
    }
    void *p = c->data + c->used;
    c->used += need;
    UNPOISON(p, size ? size : 1);
    return p;
}

void *df_arena_calloc(df_arena *arena, size_t count, size_t size) {
    size_t bytes;
    if (df_mul_overflow_size(count, size, &bytes)) return NULL;
    void *p = df_arena_alloc(arena, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

char *df_arena_strndup(df_arena *arena, const char *s, size_t n) {
    char *d = df_arena_alloc(arena, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void df_arena_reset(df_arena *arena) {
    df_arena_chunk *c = arena->head;
    if (!c) return;
    while (c->next) {
        df_arena_chunk *older = c->next;
        arena->total -= c->size + sizeof(df_arena_chunk);
        UNPOISON(c->data, c->size);
        df_free(c);
        c = older;
    }
    c->used = 0;
    POISON(c->data, c->size);
    arena->head = c;
}

void df_arena_destroy(df_arena *arena) {
    df_arena_chunk *c = arena->head;
    while (c) {
        df_arena_chunk *older = c->next;
        UNPOISON(c->data, c->size);
        df_free(c);
        c = older;
    }
    arena->head = NULL;
    arena->total = 0;
}
