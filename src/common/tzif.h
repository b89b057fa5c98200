/*
 * Time zones: fixed offsets and IANA zones from the system zoneinfo
 * database (TZif files, RFC 8536, with the footer's POSIX TZ rule for
 * instants after the last transition).  Used to render and convert zoned
 * timestamps; the TZif parser takes hostile bytes and is fuzzed.
 */
#ifndef DF_COMMON_TZIF_H
#define DF_COMMON_TZIF_H

#include "common/common.h"


typedef struct df_tz df_tz;

/*
 * Resolves an Arrow timezone string: "UTC"/"Z", fixed offsets "+HH:MM",
 * "+HHMM", "+HH", or an IANA name read from the system zoneinfo database
 * (TZif files; a bounded parser).  Unknown names -> DF_ERR_UNSUPPORTED.
 * Free with df__tz_free.
 */
df_errkind df__tz_open(const char *name, df_tz **out, df_error *err);
void df__tz_free(df_tz *tz);
/* Offset from UTC, in seconds, in effect at `utc_seconds`. */
int32_t df__tz_offset_at(const df_tz *tz, int64_t utc_seconds);
/* Parses a TZif image (for the zoneinfo loader and the fuzzer). */
df_errkind df__tz_parse_tzif(const uint8_t *data, size_t len, df_tz **out, df_error *err);

#endif
