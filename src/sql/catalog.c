/*
 * The query catalog: an array of entries in registration order guarded by
 * a mutex.  Catalogs hold tens of names, so lookups scan linearly.
 */
#include "sql/catalog.h"

#include <pthread.h>

#include "sql/logical_plan.h"

typedef struct entry {
    char *name;                 /* as registered (owned) */
    df_catalog_kind kind;       /* table or view */
    df_table_provider *provider;/* TABLE: one reference */
    df_lplan *plan;             /* VIEW: one reference or NULL */
    char *sql;                  /* VIEW: owned copy or NULL */
} entry;

struct df_catalog {
    pthread_mutex_t mu;         /* guards everything below */
    entry *entries;             /* registration order */
    int32_t n, cap;
};

df_errkind df_catalog_new(df_catalog **out, df_error *err) {
    *out = NULL;
    df_catalog *c = df_calloc(1, sizeof *c);
    if (!c) return DF_OOM(err);
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return DF_OK;
}

static void entry_clear(entry *e) {
    df_free(e->name);
    df_table_provider_release(e->provider);
    df__lplan_release(e->plan);
    df_free(e->sql);
    memset(e, 0, sizeof *e);
}

void df_catalog_free(df_catalog *cat) {
    if (!cat) return;
    for (int32_t i = 0; i < cat->n; i++) entry_clear(&cat->entries[i]);
    df_free(cat->entries);
    pthread_mutex_destroy(&cat->mu);
    df_free(cat);
}

static int32_t find_locked(const df_catalog *cat, const char *name) {
    for (int32_t i = 0; i < cat->n; i++)
        if (df_ascii_casecmp(cat->entries[i].name, name) == 0) return i;
    return -1;
}

/* Appends e (taking its contents) unless the name is taken. */
static df_errkind add(df_catalog *cat, entry *e, df_error *err) {
    pthread_mutex_lock(&cat->mu);
    df_errkind k = DF_OK;
    if (find_locked(cat, e->name) >= 0) {
        k = df_error_set(err, DF_ERR_DUPLICATE_SOURCE_NAME, "a table or view named `%.200s` is already registered",
                         e->name);
    } else {
        k = DF_ARRAY_RESERVE(cat->entries, cat->cap, cat->n + 1, 16, err);
    }
    if (!k) cat->entries[cat->n++] = *e;
    pthread_mutex_unlock(&cat->mu);
    if (k) entry_clear(e);
    return k;
}

df_errkind df_catalog_register_table(df_catalog *cat, const char *name, df_table_provider *provider,
                                     df_error *err) {
    if (!cat || !name || !*name || !provider)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "a table needs a non-empty name and a provider");
    entry e = {.kind = DF_CATALOG_TABLE};
    e.name = df_strdup(name);
    if (!e.name) return DF_OOM(err);
    e.provider = df_table_provider_retain(provider);
    return add(cat, &e, err);
}

df_errkind df_catalog_register_view(df_catalog *cat, const char *name, df_lplan *plan, const char *sql,
                                    df_error *err) {
    if (!cat || !name || !*name || (!plan && !sql))
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "a view needs a non-empty name and a plan or SQL text");
    entry e = {.kind = DF_CATALOG_VIEW};
    e.name = df_strdup(name);
    e.sql = sql ? df_strdup(sql) : NULL;
    if (!e.name || (sql && !e.sql)) {
        df_free(e.name);
        df_free(e.sql);
        return DF_OOM(err);
    }
    e.plan = df__lplan_retain(plan);
    return add(cat, &e, err);
}

df_errkind df_catalog_unregister(df_catalog *cat, const char *name, df_error *err) {
    if (!cat || !name) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no name given");
    pthread_mutex_lock(&cat->mu);
    int32_t i = find_locked(cat, name);
    entry removed = {0};
    if (i >= 0) {
        removed = cat->entries[i];
        memmove(&cat->entries[i], &cat->entries[i + 1], (size_t)(cat->n - i - 1) * sizeof(entry));
        cat->n--;
    }
    pthread_mutex_unlock(&cat->mu);
    if (i < 0) return df_error_set(err, DF_ERR_NOT_FOUND, "no table or view named `%.200s`", name);
    entry_clear(&removed);
    return DF_OK;
}

bool df_catalog_contains(df_catalog *cat, const char *name) {
    if (!cat || !name) return false;
    pthread_mutex_lock(&cat->mu);
    bool found = find_locked(cat, name) >= 0;
    pthread_mutex_unlock(&cat->mu);
    return found;
}

df_errkind df_catalog_lookup(df_catalog *cat, const char *name, df_catalog_ref *out, df_error *err) {
    memset(out, 0, sizeof *out);
    if (!cat || !name) return DF_OK;
    df_errkind k = DF_OK;
    pthread_mutex_lock(&cat->mu);
    int32_t i = find_locked(cat, name);
    if (i >= 0) {
        const entry *e = &cat->entries[i];
        out->name = df_strdup(e->name);
        out->sql = e->sql ? df_strdup(e->sql) : NULL;
        if (!out->name || (e->sql && !out->sql)) {
            k = DF_OOM(err);
        } else {
            out->kind = e->kind;
            out->provider = e->provider ? df_table_provider_retain(e->provider) : NULL;
            out->plan = df__lplan_retain(e->plan);
        }
    }
    pthread_mutex_unlock(&cat->mu);
    if (k) df_catalog_ref_clear(out);
    return k;
}

void df_catalog_ref_clear(df_catalog_ref *ref) {
    if (!ref) return;
    df_free(ref->name);
    df_free(ref->sql);
    df_table_provider_release(ref->provider);
    df__lplan_release(ref->plan);
    memset(ref, 0, sizeof *ref);
}

df_errkind df_catalog_names(df_catalog *cat, char ***names, int32_t *count, df_error *err) {
    *names = NULL;
    *count = 0;
    pthread_mutex_lock(&cat->mu);
    int32_t n = cat->n;
    char **arr = df_calloc((size_t)(n ? n : 1), sizeof *arr);
    bool ok = arr != NULL;
    for (int32_t i = 0; ok && i < n; i++) {
        arr[i] = df_strdup(cat->entries[i].name);
        if (!arr[i]) ok = false;
    }
    pthread_mutex_unlock(&cat->mu);
    if (!ok) {
        if (arr)
            for (int32_t i = 0; i < n; i++) df_free(arr[i]);
        df_free(arr);
        return DF_OOM(err);
    }
    *names = arr;
    *count = n;
    return DF_OK;
}
