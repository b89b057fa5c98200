/*
 * libFuzzer target for the Delta commit decoder: the input is one commit
 * file (newline-delimited JSON actions); the first byte chooses commit or
 * JSON-checkpoint mode.  Whatever replay keeps is then interpreted the way
 * a snapshot would: protocol gate, schema conversion, typed partition
 * values and statistics.  Every path must end in DF_OK or a clean error.
 */
#include <stddef.h>
#include <stdint.h>

#include "delta/delta_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void interpret(df__delta_replay *r) {
    df__delta_protocol_check(&r->protocol, NULL);
    if (!r->have_metadata) return;
    df__delta_schema schema;
    const char *text = r->metadata.schema_string;
    if (df__delta_schema_parse(text, strlen(text), &schema, NULL) != DF_OK) return;
    df_arena scratch;
    df_arena_init(&scratch, 4096, 16u << 20);
    for (int64_t i = 0; i < r->nadds; i++) {
        const df__delta_add *a = &r->adds[i];
        for (int32_t k = 0; k < a->npv; k++) {
            int32_t f = df_schema_find(schema.schema, a->pv_keys[k]);
            if (f < 0 || df_type_is_nested(schema.schema->fields[f].type)) continue;
            df_scalar s;
            if (df__delta_partition_value(a->pv_values[k], schema.schema->fields[f].type, &s, NULL) == DF_OK)
                df_scalar_clear(&s);
        }
        if (a->stats) {
            int64_t n;
            df_arena_reset(&scratch);
            df__delta_stats_num_records(a->stats, &scratch, &n, NULL);
        }
        if (a->dv.storage == 'i') {
            uint64_t *rows = NULL;
            int64_t nrows = 0;
            if (df__delta_dv_load(NULL, &a->dv, &rows, &nrows, NULL) == DF_OK) df_free(rows);
        } else if (a->dv.storage == 'u') {
            char *p = NULL;
            if (df__delta_dv_relative_path(a->dv.path_or_inline, &p, NULL) == DF_OK) df_free(p);
        }
    }
    df_arena_destroy(&scratch);
    df__delta_schema_clear(&schema);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    df_arena arena;
    df_arena_init(&arena, 16 * 1024, 256u << 20);
    df__delta_replay r;
    if (df__delta_replay_init(&r, &arena, "/table", NULL) == DF_OK) {
        bool checkpoint = data[0] & 1;
        if (df__delta_replay_json(&r, (const char *)data + 1, size - 1, checkpoint, "fuzz.json", NULL) == DF_OK)
            interpret(&r);
        df__delta_replay_clear(&r);
    }
    df_arena_destroy(&arena);
    return 0;
}
