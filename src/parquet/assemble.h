/*
 * Record assembly: turns the levels and dense values that column readers
 * produced for one batch into Arrow vectors (see assemble.c).
 */
#ifndef DF_PARQUET_ASSEMBLE_H
#define DF_PARQUET_ASSEMBLE_H

#include "parquet/column_reader.h"

/*
 * Builds the vector of one top-level field from the outputs of its leaves
 * (`outs` is indexed by leaf index).  Buffers of the outputs are moved into
 * the vector when possible (the outputs are left empty for the next batch).
 * The vector must have `nrows` elements, else DF_ERR_PARQUET_FORMAT.
 */
df_errkind df__parquet_assemble(const pq_node *field, pq_leaf_out *outs, const pq_leaf *leaves, int64_t nrows,
                                df_vec **out, df_error *err);

#endif
