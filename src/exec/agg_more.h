/*
 * Single-step aggregate accumulators (agg_more.c): the aggregates that
 * AggregateExec runs in one step over all input, one df__aggm per
 * aggregate call covering every group.
 */
#ifndef DF_EXEC_AGG_MORE_H
#define DF_EXEC_AGG_MORE_H

#include "exec/exec_int.h"

typedef struct df__aggm df__aggm;

/*
 * A new accumulator for `la` (a df_agg_fn_single_step() aggregate other
 * than last_value), accounting memory against ctx.  DF_ERR_SQL_UNSUPPORTED
 * for argument types it cannot hold.  *out NULL on failure.
 */
df_errkind df__aggm_new(const df_agg *la, df_exec_ctx *ctx, df__aggm **out, df_error *err);
void df__aggm_free(df__aggm *m);

/*
 * Feeds rows [0, n): row i goes to group gids[i] (< ngroups) unless
 * skip[i] is set, its value is NULL (either value for two-argument
 * aggregates) or the filter f is not true there.  v is the argument, v2
 * the second argument (covariance family) or NULL.
 */
df_errkind df__aggm_update(df__aggm *m, const int32_t *gids, int64_t n, int64_t ngroups, const df_vec *v,
                           const df_vec *v2, const df_vec *f, const uint8_t *skip, df_error *err);

/*
 * Results of groups [from, from + n) out of `total` groups as a new vector
 * of the aggregate's type (NULL where the aggregate has no value).  No
 * updates may follow the first call.
 */
df_errkind df__aggm_emit(df__aggm *m, int64_t total, int64_t from, int64_t n, df_vec **out, df_error *err);

#endif
