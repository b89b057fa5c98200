/*
 * The diagnostics vocabulary: exact names of operations, phases, stages,
 * details, results and argument values (reference diagnostics-spec 1.4), and
 * the process-wide table of interned short names (operator names, query
 * owners).
 *
 * The intern table is append-only: names are never removed, so an id stays
 * valid for the process lifetime and readers need no lock.  Ids index a
 * two-level array (64 blocks of 1024 pointers) whose blocks are published
 * with release stores; a hash index guarded by a mutex finds existing names.
 */
#include "diag/diag_int.h"

#include <pthread.h>

static const struct {
    const char *name;     /* exact stage_name */
    const char *category; /* exact stage_category */
    unsigned kinds;       /* operation kinds allowed */
    const char *timing;   /* phase_timings name or NULL */
} stages[DF_DIAG_STAGE_COUNT_] = {
    [DF_DIAG_STAGE_NONE_] = {"", "", 0, NULL},
#define X(id, name, category, kinds, timing) [DF_DIAG_STAGE_##id] = {name, category, kinds, timing},
    DF_DIAG_STAGES(X)
#undef X
};

static const char *const details[DF_DIAG_DETAIL_COUNT_] = {
    [DF_DIAG_DETAIL_NONE_] = "",
#define X(id, name) [DF_DIAG_DETAIL_##id] = name,
    DF_DIAG_DETAILS(X)
#undef X
};

const char *df_diag_op_kind_name(df_diag_op_kind kind) {
    switch (kind) {
    case DF_DIAG_OP_PREVIEW: return "preview";
    case DF_DIAG_OP_MSSQL_WRITE: return "mssql_write";
    case DF_DIAG_OP_WRITE_ALL: return "write_all";
    }
    return "";
}

const char *df_diag_op_span_name(df_diag_op_kind kind) {
    switch (kind) {
    case DF_DIAG_OP_PREVIEW: return "Delta Funnel preview";
    case DF_DIAG_OP_MSSQL_WRITE: return "Delta Funnel SQL Server write";
    case DF_DIAG_OP_WRITE_ALL: return "Delta Funnel SQL Server write_all";
    }
    return "";
}

const char *df_diag_phase_name(df_diag_phase phase) {
    switch (phase) {
    case DF_DIAG_PHASE_PLANNING: return "Planning";
    case DF_DIAG_PHASE_EXECUTION: return "Execution";
    case DF_DIAG_PHASE_FINALIZATION: return "Finalization";
    }
    return "";
}

const char *df_diag_result_name(df_diag_result result) {
    switch (result) {
    case DF_DIAG_RESULT_OK: return "ok";
    case DF_DIAG_RESULT_ERROR: return "error";
    case DF_DIAG_RESULT_UNSET:
    case DF_DIAG_RESULT_CANCELLED: return "cancelled";
    case DF_DIAG_RESULT_STREAM: return "stream";
    case DF_DIAG_RESULT_PENDING: return "pending";
    case DF_DIAG_RESULT_BATCH: return "batch";
    case DF_DIAG_RESULT_EOF: return "eof";
    }
    return "cancelled";
}

const char *df_diag_query_scope_name(df_diag_query_scope scope) {
    switch (scope) {
    case DF_DIAG_QUERY_PREVIEW: return "preview";
    case DF_DIAG_QUERY_MSSQL_OUTPUT: return "mssql_output";
    case DF_DIAG_QUERY_WRITE_ALL_CACHE_ALIAS: return "write_all_cache_alias";
    }
    return "";
}

const char *df_diag_activity_name(df_diag_activity activity) {
    return df__diag_activity_value_name((uint8_t)activity);
}

const char *df__diag_activity_value_name(uint8_t activity) {
    switch (activity) {
    case DF_DIAG_ACTIVITY_EXECUTE: return "execute";
    case DF_DIAG_ACTIVITY_POLL_NEXT: return "poll_next";
    case DF_DIAG_ACTIVITY_AWAIT_OUTPUT: return "await_output";
    case DF_DIAG_ACTIVITY_SPAWNED_TASK: return "spawned_task";
    }
    return "";
}

static bool stage_valid(df_diag_stage stage) {
    return stage > DF_DIAG_STAGE_NONE_ && stage < DF_DIAG_STAGE_COUNT_;
}

const char *df_diag_stage_name(df_diag_stage stage) {
    return stage_valid(stage) ? stages[stage].name : "";
}

const char *df_diag_stage_category(df_diag_stage stage) {
    return stage_valid(stage) ? stages[stage].category : "";
}

const char *df_diag_stage_timing_name(df_diag_stage stage) {
    return stage_valid(stage) ? stages[stage].timing : NULL;
}

/* True if `stage` may be used by operations of `kind` (spec 1.4 lists). */
bool df__diag_stage_allowed(df_diag_stage stage, df_diag_op_kind kind) {
    return stage_valid(stage) && (stages[stage].kinds & (1u << kind)) != 0;
}

const char *df_diag_detail_name(df_diag_detail detail) {
    return detail > DF_DIAG_DETAIL_NONE_ && detail < DF_DIAG_DETAIL_COUNT_ ? details[detail] : "";
}

const char *df__diag_worker_kind_name(uint8_t kind) {
    switch (kind) {
    case DF_DIAG_WK_COORDINATOR: return "coordinator";
    case DF_DIAG_WK_RUNTIME: return "runtime";
    case DF_DIAG_WK_EXTERNAL: return "external";
    }
    return "";
}

const char *df__diag_time_semantics_name(uint8_t ts) {
    switch (ts) {
    case DF_DIAG_TS_WALL_CLOCK: return "wall_clock";
    case DF_DIAG_TS_ACTIVE: return "active";
    }
    return "";
}

const char *df__diag_instant_name(uint8_t kind) {
    switch (kind) {
    case DF_DIAG_IK_DIAGNOSTIC_GROUP: return "Delta Funnel diagnostic group";
    case DF_DIAG_IK_TRUNCATED: return "Operator activity trace truncated";
    case DF_DIAG_IK_QUERY: return "DataFusion query";
    }
    return "";
}

const char *df__diag_span_name(uint8_t kind, uint32_t name_id, const df_diag_ident *ident) {
    switch ((df_diag_span_kind)kind) {
    case DF_DIAG_SK_OPERATION: return df_diag_op_span_name((df_diag_op_kind)ident->op_kind);
    case DF_DIAG_SK_PHASE: return df_diag_phase_name((df_diag_phase)ident->phase);
    case DF_DIAG_SK_STAGE: return df_diag_stage_name((df_diag_stage)ident->stage);
    case DF_DIAG_SK_PLANNING: return "DataFusion query planning";
    case DF_DIAG_SK_TASK: return "Delta Funnel execution context";
    case DF_DIAG_SK_ACTIVITY: return df_diag_name_get(name_id);
    case DF_DIAG_SK_DETAIL: return df_diag_detail_name((df_diag_detail)name_id);
    case DF_DIAG_SK_AWAIT: return "Await Delta scan output";
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
