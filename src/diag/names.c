/*
 * The exact names of span records (from the vocabulary of
 * diag/diag_names.def, see diag/names.h) and the process-wide table of
 * interned short names (operator names, query owners).
 *
 * The intern table is append-only: names are never removed, so an id stays
 * valid for the process lifetime and readers need no lock.  Ids index a
 * two-level array (64 blocks of 1024 pointers) whose blocks are published
 * with release stores; a hash index guarded by a mutex finds existing names.
 */
#include "diag/diag_int.h"

#include <pthread.h>

const char *df__diag_instant_name(uint8_t kind) {
    switch (kind) {
    case DF_DIAG_IK_DIAGNOSTIC_GROUP: return df_diag_title_name(DF_DIAG_TITLE_DIAGNOSTIC_GROUP);
    case DF_DIAG_IK_TRUNCATED: return df_diag_title_name(DF_DIAG_TITLE_TRUNCATED);
    case DF_DIAG_IK_QUERY: return df_diag_title_name(DF_DIAG_TITLE_QUERY);
    }
    return "";
}

const char *df__diag_span_name(uint8_t kind, uint32_t name_id, const df_diag_ident *ident) {
    switch ((df_diag_span_kind)kind) {
    case DF_DIAG_SK_OPERATION: return df_diag_op_span_name((df_diag_op_kind)ident->op_kind);
    case DF_DIAG_SK_PHASE: return df_diag_phase_name((df_diag_phase)ident->phase);
    case DF_DIAG_SK_STAGE: return df_diag_stage_name((df_diag_stage)ident->stage);
    case DF_DIAG_SK_PLANNING: return df_diag_title_name(DF_DIAG_TITLE_QUERY_PLANNING);
    case DF_DIAG_SK_TASK: return df_diag_title_name(DF_DIAG_TITLE_EXECUTION_CONTEXT);
    case DF_DIAG_SK_ACTIVITY: return df_diag_name_get(name_id);
    case DF_DIAG_SK_DETAIL: return df_diag_detail_name((df_diag_detail)name_id);
    case DF_DIAG_SK_AWAIT: return df_diag_title_name(DF_DIAG_TITLE_AWAIT_OUTPUT);
    }
    return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Intern table.                                                             */

#define BLOCK_SHIFT 10u
#define BLOCK_SIZE (1u << BLOCK_SHIFT)
#define NBLOCKS (DF_DIAG_MAX_NAMES / BLOCK_SIZE)
#define INDEX_CAP (2u * DF_DIAG_MAX_NAMES) /* open addressing, load <= 1/2 */

static struct {
    pthread_mutex_t mu;                   /* guards count, index and block creation */
    uint32_t count;                       /* names interned; ids are 1..count */
    uint32_t *index;                      /* hash -> id, 0 = empty; INDEX_CAP slots */
    _Atomic(const char **) blocks[NBLOCKS]; /* id -> name, published with release */
} names = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Length of `s` capped at the maximum, cut back to a UTF-8 boundary. */
static size_t capped_len(const char *s) {
    return df_utf8_cut((const uint8_t *)s, strnlen(s, DF_DIAG_MAX_NAME_LEN + 1), DF_DIAG_MAX_NAME_LEN);
}

static const char *name_at(uint32_t id) {
    uint32_t i = id - 1;
    const char **block = atomic_load_explicit(&names.blocks[i >> BLOCK_SHIFT], memory_order_acquire);
    return block ? block[i & (BLOCK_SIZE - 1)] : NULL;
}

/* Appends a copy of s[0..n) and returns its id; 0 when full or out of memory.  Lock held. */
static uint32_t append_locked(const char *s, size_t n) {
    if (names.count >= DF_DIAG_MAX_NAMES) return 0;
    uint32_t i = names.count;
    const char **block = atomic_load_explicit(&names.blocks[i >> BLOCK_SHIFT], memory_order_relaxed);
    if (!block) {
        block = df_calloc(BLOCK_SIZE, sizeof *block);
        if (!block) return 0;
        atomic_store_explicit(&names.blocks[i >> BLOCK_SHIFT], block, memory_order_release);
    }
    char *copy = df_strndup(s, n);
    if (!copy) return 0;
    block[i & (BLOCK_SIZE - 1)] = copy;
    names.count = i + 1;
    return i + 1;
}

uint32_t df_diag_name_intern(const char *name) {
    if (!name || !name[0]) return 0;
    size_t n = capped_len(name);
    uint64_t h = df_fnv1a64(name, n);
    pthread_mutex_lock(&names.mu);
    uint32_t id = 0;
    if (!names.index) names.index = df_calloc(INDEX_CAP, sizeof *names.index);
    if (names.index) {
        for (uint32_t k = (uint32_t)h & (INDEX_CAP - 1);; k = (k + 1) & (INDEX_CAP - 1)) {
            uint32_t cand = names.index[k];
            if (cand == 0) {
                id = append_locked(name, n);
                if (id) names.index[k] = id;
                break;
            }
            const char *s = name_at(cand);
            if (strlen(s) == n && memcmp(s, name, n) == 0) {
                id = cand;
                break;
            }
        }
    }
    pthread_mutex_unlock(&names.mu);
    return id;
}

const char *df_diag_name_get(uint32_t name_id) {
    if (name_id == 0 || name_id > DF_DIAG_MAX_NAMES) return "unknown";
    const char *s = name_at(name_id);
    return s ? s : "unknown";
}
