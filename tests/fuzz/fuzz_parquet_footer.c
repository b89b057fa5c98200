/*
 * libFuzzer target for the Parquet footer: the input is the Thrift-encoded
 * FileMetaData alone (what sits before the footer length).  Decoding it
 * into an arena with the reader's expansion limit, converting its schema to
 * Arrow and decoding the input again as a page header must succeed or fail
 * cleanly.
 */
#include <stddef.h>
#include <stdint.h>

#include "parquet/metadata.h"
#include "parquet/schema_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_arena arena;
    df_arena_init(&arena, 64 * 1024, size * 64 + (1u << 20));
    pq_file_meta meta;
    if (df__parquet_parse_file_meta(data, size, &arena, &meta, NULL) == DF_OK) {
        pq_schema schema;
        if (df__parquet_schema_build(meta.schema, meta.nschema, &schema, NULL) == DF_OK)
            df__parquet_schema_free(&schema);
    }
    df_arena_destroy(&arena);
    pq_page_header h;
    size_t used;
    bool truncated;
    (void)df__parquet_parse_page_header(data, size, &h, &used, &truncated, NULL);
    return 0;
}
