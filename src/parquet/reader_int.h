/*
 * The open-file object shared by the reader, statistics and pruning code.
 */
#ifndef DF_PARQUET_READER_INT_H
#define DF_PARQUET_READER_INT_H

#include <stdatomic.h>

#include "parquet/schema_map.h"

struct df_parquet_file {
    _Atomic int32_t refs;
    df_input *in;           /* owned */
    uint64_t size;          /* file bytes */
    uint64_t data_end;      /* offset where the footer starts: pages lie before it */
    uint8_t *footer;        /* footer bytes (owned); binary metadata fields point into it */
    df_arena arena;         /* footer structures */
    pq_file_meta meta;      /* decoded FileMetaData */
    pq_schema schema;       /* Arrow view of the schema */
    int64_t num_rows;       /* sum of the row groups' rows */
};

#endif
