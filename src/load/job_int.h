/*
 * Job files (job.c, job_toml.c): TOML or JSON descriptions of a load run
 * by `deltafunnel load` (docs/jobs.md).
 */
#ifndef DF_LOAD_JOB_INT_H
#define DF_LOAD_JOB_INT_H

#include "common/common.h"
#include "common/json.h"

/*
 * Converts TOML text (the subset docs/jobs.md describes) to the equivalent
 * JSON text (caller frees *json with df_free).  Errors are DF_ERR_CONFIG
 * "job file line N: ..." with the line in err->offset; values are never
 * quoted in messages.
 */
df_errkind df__job_toml_to_json(const char *text, size_t len, char **json, df_error *err);

#endif
