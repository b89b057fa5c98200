/*
 * Reference-counted, 64-byte aligned buffers.  The header and the data are
 * separate allocations so a buffer can grow (realloc of the data) while
 * vectors keep pointing at the same header.
 */
#include "columnar/columnar.h"

#define PAD 64
#define ROUND_UP(n) (((n) + PAD - 1) & ~(int64_t)(PAD - 1))

df_buffer *df_buffer_new(int64_t capacity) {
    if (capacity < 0 || capacity > INT64_MAX - PAD) return NULL;
    df_buffer *b = df_malloc(sizeof *b);
    if (!b) return NULL;
    int64_t cap = ROUND_UP(capacity ? capacity : PAD);
    b->data = df_aligned_alloc((size_t)cap);
    if (!b->data) {
        df_free(b);
        return NULL;
    }
    /* Zero the padding tail so kernels that read whole words see defined bytes. */
    memset(b->data + (cap - PAD), 0, PAD);
    atomic_init(&b->refs, 1);
    b->size = 0;
    b->capacity = cap;
    b->release_foreign = NULL;
    b->foreign = NULL;
    return b;
}

df_buffer *df_buffer_new_zeroed(int64_t capacity) {
    df_buffer *b = df_buffer_new(capacity);
    if (!b) return NULL;
    memset(b->data, 0, (size_t)b->capacity);
    b->size = capacity;
    return b;
}

df_buffer *df_buffer_wrap(uint8_t *data, int64_t size, void (*release)(df_buffer *), void *ctx) {
    df_buffer *b = df_malloc(sizeof *b);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->data = data;
    b->size = size;
    b->capacity = size;
    b->release_foreign = release;
    b->foreign = ctx;
    return b;
}

df_buffer *df_buffer_retain(df_buffer *b) {
    if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

void df_buffer_release(df_buffer *b) {
    if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    if (b->release_foreign)
        b->release_foreign(b);
    else
        df_aligned_free(b->data);
    df_free(b);
}

df_errkind df_buffer_reserve(df_buffer *b, int64_t capacity, df_error *err) {
    if (capacity <= b->capacity) return DF_OK;
    if (b->release_foreign) return df_error_set(err, DF_ERR_INTERNAL, "cannot grow a foreign buffer");
    int64_t cap = b->capacity ? b->capacity : PAD;
    while (cap < capacity) {
        if (cap > INT64_MAX / 2) return DF_OOM(err);
        cap *= 2;
    }
    cap = ROUND_UP(cap);
    uint8_t *data = df_aligned_alloc((size_t)cap);
    if (!data) return DF_OOM(err);
    /*
     * Copy the whole old block, not just `size`: builders write values
     * first and fix sizes at the end (df_vec_set_length), so bytes past
     * `size` may already hold data.
     */
    if (b->capacity > 0) memcpy(data, b->data, (size_t)b->capacity);
    memset(data + (cap - PAD), 0, PAD);
    df_aligned_free(b->data);
    b->data = data;
    b->capacity = cap;
    return DF_OK;
}
