/*
 * Session internals: source locations and the name rules.  Only
 * src/session includes this; everything shared with src/load is in
 * session.h.
 */
#ifndef DF_SESSION_SESSION_INT_H
#define DF_SESSION_SESSION_INT_H

#include "session/session.h"

/* Source helpers (source.c). */
void df__session_source_options(const df_delta_source *src, const char *const **keys,
                                const char *const **values, size_t *n);
const char *df__session_source_uri(const df_delta_source *src);
/*
 * Resolves a user location: local paths to a canonical absolute path (a
 * missing path is DF_ERR_INVALID_SOURCE_URI), remote URIs unchanged.  Both
 * outputs are owned by the caller.
 */
df_errkind df__session_resolve_location(const char *uri, char **location, char **display, df_error *err);
bool df__session_is_s3_uri(const char *uri);

/* ------------------------------------------------------------------------ */
/* Name rules (text.c)                                                       */

/* True for the words that may not name a source or alias. */
bool df__session_is_reserved_word(const char *name);
/* Checks the name rules; DF_ERR_INVALID_SOURCE_NAME with the reference message. */
df_errkind df__session_check_name(const char *name, df_error *err);

#endif
