/*
 * write_all caches (write_cache.c): batches of a shared alias kept in
 * memory up to a byte budget and spilled to an unlinked temporary file
 * beyond it, read back through a table provider.
 */
#ifndef DF_LOAD_WRITE_CACHE_INT_H
#define DF_LOAD_WRITE_CACHE_INT_H

#include "columnar/table_provider.h"
#include "common/common.h"

typedef struct df_wcache df_wcache;

/* A new empty cache for `schema`; `budget` bytes stay in memory, the rest spills under `dir` (NULL = $TMPDIR or /tmp). */
df_errkind df__wcache_new(df_schema *schema, int64_t budget, const char *dir, df_wcache **out, df_error *err);
/* Frees the cache and closes (so deletes) its spill file.  Accepts NULL. */
void df__wcache_free(df_wcache *c);
/* Adds a batch: retained in memory within the budget, else written to the spill file. */
df_errkind df__wcache_add(df_wcache *c, df_batch *b, df_error *err);
/* Payload bytes of a batch (buffers in use), the measure of the budget. */
int64_t df__wcache_batch_bytes(const df_batch *b);
int64_t df__wcache_rows(const df_wcache *c);
int64_t df__wcache_spilled_bytes(const df_wcache *c);
int64_t df__wcache_memory_bytes(const df_wcache *c);
/* Wraps the cache in a table provider, which takes it over (also on failure). */
df_errkind df__wcache_provider(df_wcache *c, df_table_provider **out, df_error *err);

#endif
