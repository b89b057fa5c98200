/*
 * The query catalog: names visible to SQL.
 *
 * A catalog maps case-insensitive names to either a table provider (a Delta
 * source, an in-memory table, a cache) or a view (a derived table).  A view
 * keeps its bound logical plan (when it was registered from a planned query)
 * and/or its SQL text (re-planned at every use, so it sees later catalog
 * changes).  The binder looks names up here; a lookup hands out new
 * references, so a query that is being planned keeps its sources alive even
 * if the name is unregistered meanwhile.
 *
 * Names are kept as registered (for reports); comparisons ignore ASCII
 * case.  Validating names (allowed characters, reserved words) is the
 * session's job; the catalog only rejects empty names and duplicates.
 *
 * Thread safety: every function may be called from several threads; a
 * mutex serialises them.
 */
#ifndef DF_SQL_CATALOG_H
#define DF_SQL_CATALOG_H

#include "columnar/table_provider.h"

typedef struct df_catalog df_catalog;
typedef struct df_lplan df_lplan;   /* a bound logical plan (sql/logical_plan.h) */

typedef enum df_catalog_kind {
    DF_CATALOG_NONE = 0,    /* no such name */
    DF_CATALOG_TABLE,       /* a table provider */
    DF_CATALOG_VIEW,        /* a derived table */
} df_catalog_kind;

/* The result of a lookup: owned references, released with df_catalog_ref_clear. */
typedef struct df_catalog_ref {
    df_catalog_kind kind;           /* DF_CATALOG_NONE when not found */
    char *name;                     /* the name as registered (owned copy) */
    df_table_provider *provider;    /* TABLE: one reference owned */
    df_lplan *plan;                 /* VIEW: bound plan (one reference owned) or NULL */
    char *sql;                      /* VIEW: SQL text (owned copy) or NULL */
} df_catalog_ref;

/* Creates an empty catalog.  Returns DF_OK or DF_ERR_OUT_OF_MEMORY. */
df_errkind df_catalog_new(df_catalog **out, df_error *err);
/* Frees the catalog and releases every entry.  Accepts NULL. */
void df_catalog_free(df_catalog *cat);

/*
 * Registers a table provider under `name` (retained on success).  Fails
 * with DF_ERR_INVALID_ARGUMENT for an empty name or NULL provider and
 * DF_ERR_DUPLICATE_SOURCE_NAME when the name (ignoring case) is taken.
 */
df_errkind df_catalog_register_table(df_catalog *cat, const char *name, df_table_provider *provider,
                                     df_error *err);

/*
 * Registers a view.  `plan` (retained when non-NULL) is the bound logical
 * plan the view stands for; `sql` (copied when non-NULL) is its text.  At
 * least one must be given.  With a plan the view is a snapshot of what its
 * names meant at registration; with only SQL it is planned at every use.
 * Failures as df_catalog_register_table.
 */
df_errkind df_catalog_register_view(df_catalog *cat, const char *name, df_lplan *plan, const char *sql,
                                    df_error *err);

/* Removes an entry.  DF_ERR_NOT_FOUND when no entry has that name. */
df_errkind df_catalog_unregister(df_catalog *cat, const char *name, df_error *err);

/* True when an entry of that name (ignoring case) exists. */
bool df_catalog_contains(df_catalog *cat, const char *name);

/*
 * Looks `name` up (ignoring case).  Fills *out with new references; out->kind
 * is DF_CATALOG_NONE when nothing matches (not an error).  Returns DF_OK or
 * DF_ERR_OUT_OF_MEMORY (then *out is cleared).
 */
df_errkind df_catalog_lookup(df_catalog *cat, const char *name, df_catalog_ref *out, df_error *err);
/* Releases what a lookup filled in and zeroes it.  Accepts NULL. */
void df_catalog_ref_clear(df_catalog_ref *ref);

/*
 * Copies the registered names in registration order into *names (an array
 * of *count strings; free each and the array with df_free).
 */
df_errkind df_catalog_names(df_catalog *cat, char ***names, int32_t *count, df_error *err);

#endif
