/*
 * Preview formatting: a collected result (batches of one schema) rendered
 * as the Arrow pretty-printer's text grid and as the preview HTML.  This is
 * the format module's door; it needs only the columnar layer and common.
 */
#ifndef DF_FORMAT_FORMAT_H
#define DF_FORMAT_FORMAT_H

#include "columnar/columnar.h"
#include "common/common.h"

/* A collected result: batches of one schema.  Borrowed by the formatters. */
typedef struct df_fmt_input {
    const df_schema *schema;        /* column names and types */
    df_batch *const *batches;       /* in order */
    int64_t nbatches;
    int64_t max_rows;               /* rows to show; < 0 = all */
} df_fmt_input;

/*
 * The Arrow pretty-printer grid ("++\n++" when there are no rows).  Caller
 * frees *out; *len (may be NULL) is its length: data may contain NUL bytes.
 */
df_errkind df__fmt_text_table(const df_fmt_input *in, char **out, size_t *len, df_error *err);
/* The preview HTML.  Caller frees *out; *len as above. */
df_errkind df__fmt_html_table(const df_fmt_input *in, char **out, size_t *len, df_error *err);

#endif
