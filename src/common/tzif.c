/*
 * Time zones for rendering zoned timestamps.
 *
 * A zone is either a fixed offset ("UTC", "+02:00") or an IANA name read
 * from the system zoneinfo database ($TZDIR or /usr/share/zoneinfo).  TZif
 * files (RFC 8536) hold a sorted list of transition instants, each pointing
 * at a local-time type (UTC offset); instants after the last transition
 * follow the footer's POSIX TZ rule ("EST5EDT,M3.2.0,M11.1.0"), which we
 * evaluate per year.  The file is untrusted input: every count is checked
 * against the bytes present and capped before anything is allocated.
 */
#include "common/tzif.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_TZIF_BYTES (1u << 20)
#define MAX_TRANSITIONS 100000
#define MAX_TYPES 256

/* A day-of-year rule of a POSIX TZ string. */
typedef struct tz_rule {
    char form;          /* 'J' (1..365, no Feb 29), 'N' (0..365), 'M' (month.week.day) */
    int day;            /* J/N day, or weekday 0..6 for M */
    int week;           /* M: 1..5 (5 = last) */
    int month;          /* M: 1..12 */
    int32_t time;       /* seconds after local midnight (may be negative or > 24 h) */
} tz_rule;

/* The footer rule: standard offset and, optionally, daylight time between two rules. */
typedef struct tz_posix {
    bool present;       /* a usable rule was parsed */
    int32_t std_off;    /* UTC offset (east positive) of standard time */
    int32_t dst_off;    /* UTC offset of daylight time */
    bool has_dst;       /* daylight time exists */
    tz_rule start;      /* daylight time begins (local standard time) */
    tz_rule end;        /* daylight time ends (local daylight time) */
} tz_posix;

struct df_tz {
    int32_t fixed;      /* offset when ntrans == 0 and no footer */
    int32_t ntrans;     /* transitions */
    int64_t *trans;     /* transition instants (UTC seconds), ascending; owned */
    uint8_t *trans_type;/* type index per transition; owned */
    int32_t ntypes;     /* local-time types */
    int32_t *type_off;  /* UTC offset per type; owned */
    tz_posix posix;     /* rule after the last transition */
};

void df__tz_free(df_tz *tz) {
    if (!tz) return;
    df_free(tz->trans);
    df_free(tz->trans_type);
    df_free(tz->type_off);
    df_free(tz);
}

/* ------------------------------------------------------------------------ */
/* Calendar helpers                                                          */

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int64_t y, int m) {
    static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* The day (since epoch) a rule selects in year y. */
static int64_t rule_day(const tz_rule *r, int64_t y) {
    int64_t jan1 = df_days_from_civil(y, 1, 1);
    if (r->form == 'J') return jan1 + r->day - 1 + (is_leap(y) && r->day >= 60);
    if (r->form == 'N') return jan1 + r->day;
    int64_t first = df_days_from_civil(y, r->month, 1);
    int wday_first = (int)(((first + 4) % 7 + 7) % 7);   /* 1970-01-01 was a Thursday */
    int64_t day = first + (r->day - wday_first + 7) % 7 + (int64_t)(r->week - 1) * 7;
    while (day >= first + month_days(y, r->month)) day -= 7;
    return day;
}

static int32_t posix_offset_at(const tz_posix *p, int64_t t) {
    if (!p->has_dst) return p->std_off;
    int64_t y;
    int m, d;
    df_civil_from_days((t + p->std_off) / 86400 - ((t + p->std_off) % 86400 < 0), &y, &m, &d);
    int64_t start = rule_day(&p->start, y) * 86400 + p->start.time - p->std_off;
    int64_t end = rule_day(&p->end, y) * 86400 + p->end.time - p->dst_off;
    bool dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
    return dst ? p->dst_off : p->std_off;
}

int32_t df__tz_offset_at(const df_tz *tz, int64_t t) {
    if (tz->ntrans == 0) return tz->posix.present ? posix_offset_at(&tz->posix, t) : tz->fixed;
    if (t < tz->trans[0]) return tz->type_off[0];
    if (t >= tz->trans[tz->ntrans - 1] && tz->posix.present) return posix_offset_at(&tz->posix, t);
    int32_t lo = 0, hi = tz->ntrans - 1;   /* largest i with trans[i] <= t */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (tz->trans[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return tz->type_off[tz->trans_type[lo]];
}

/* ------------------------------------------------------------------------ */
/* POSIX TZ strings                                                          */

/* [+-]hh[:mm[:ss]] with hours up to max_hours; returns chars consumed or 0. */
static size_t parse_hms(const char *s, int max_hours, int32_t *out) {
    size_t i = 0;
    int sign = 1;
    if (s[i] == '+' || s[i] == '-') sign = s[i++] == '-' ? -1 : 1;
    int part[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (k > 0) {
            if (s[i] != ':') break;
            i++;
        }
        int digits = 0, v = 0;
        while (s[i] >= '0' && s[i] <= '9' && digits < 3) v = v * 10 + (s[i++] - '0'), digits++;
        if (digits == 0) return 0;
        part[k] = v;
    }
    if (part[0] > max_hours || part[1] > 59 || part[2] > 59) return 0;
    *out = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
    return i;
}

static size_t parse_tz_name(const char *s) {
    size_t i = 0;
    if (s[0] == '<') {
        while (s[i] && s[i] != '>') i++;
        return s[i] == '>' ? i + 1 : 0;
    }
    while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) i++;
    return i >= 3 ? i : 0;
}

static size_t parse_int(const char *s, int lo, int hi, int *out) {
    size_t i = 0;
    int v = 0;
    while (s[i] >= '0' && s[i] <= '9' && i < 4) v = v * 10 + (s[i++] - '0');
    if (i == 0 || v < lo || v > hi) return 0;
    *out = v;
    return i;
}

static size_t parse_rule(const char *s, tz_rule *r) {
    size_t i = 0, n;
    r->time = 7200;
    if (s[0] == 'J') {
        r->form = 'J';
        if (!(n = parse_int(s + 1, 1, 365, &r->day))) return 0;
        i = 1 + n;
    } else if (s[0] == 'M') {
        r->form = 'M';
        i = 1;
        if (!(n = parse_int(s + i, 1, 12, &r->month)) || s[i + n] != '.') return 0;
        i += n + 1;
        if (!(n = parse_int(s + i, 1, 5, &r->week)) || s[i + n] != '.') return 0;
        i += n + 1;
        if (!(n = parse_int(s + i, 0, 6, &r->day))) return 0;
        i += n;
    } else {
        r->form = 'N';
        if (!(n = parse_int(s, 0, 365, &r->day))) return 0;
        i = n;
    }
    if (s[i] == '/') {
        if (!(n = parse_hms(s + i + 1, 167, &r->time))) return 0;
        i += 1 + n;
    }
    return i;
}

/* Parses "std offset [dst [offset] [,start[/time],end[/time]]]"; false if unusable. */
static bool parse_posix(const char *s, tz_posix *p) {
    memset(p, 0, sizeof *p);
    size_t i = parse_tz_name(s), n;
    int32_t posix_off;
    if (!i || !(n = parse_hms(s + i, 24, &posix_off))) return false;
    i += n;
    p->std_off = -posix_off;
    p->present = true;
    if (!s[i]) return true;
    if (!(n = parse_tz_name(s + i))) return false;
    i += n;
    p->has_dst = true;
    p->dst_off = p->std_off + 3600;
    if (s[i] && s[i] != ',') {
        if (!(n = parse_hms(s + i, 24, &posix_off))) return false;
        i += n;
        p->dst_off = -posix_off;
    }
    if (s[i] != ',') {
        /* No rule: the historical US default; rare enough to treat as standard time only. */
        p->has_dst = false;
        return s[i] == '\0';
    }
    if (!(n = parse_rule(s + i + 1, &p->start))) return false;
    i += 1 + n;
    if (s[i] != ',' || !(n = parse_rule(s + i + 1, &p->end))) return false;
    i += 1 + n;
    return s[i] == '\0';
}

/* ------------------------------------------------------------------------ */
/* TZif                                                                      */

static uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int64_t be64(const uint8_t *p) { return (int64_t)(((uint64_t)be32(p) << 32) | be32(p + 4)); }

/* The six counts of a TZif header at data[0..44). */
typedef struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;  /* as in RFC 8536 */
} tzif_counts;

static df_errkind read_header(const uint8_t *d, size_t len, tzif_counts *c, df_error *err) {
    if (len < 44 || memcmp(d, "TZif", 4) != 0)
        return df_error_set(err, DF_ERR_UNSUPPORTED, "time zone data is not a TZif file");
    c->isut = be32(d + 20);
    c->isstd = be32(d + 24);
    c->leap = be32(d + 28);
    c->time = be32(d + 32);
    c->type = be32(d + 36);
    c->chars = be32(d + 40);
    if (c->time > MAX_TRANSITIONS || c->type == 0 || c->type > MAX_TYPES || c->leap > MAX_TRANSITIONS ||
        c->chars > 65536 || c->isut > MAX_TYPES || c->isstd > MAX_TYPES)
        return df_error_set(err, DF_ERR_UNSUPPORTED, "time zone data has implausible counts");
    return DF_OK;
}

static size_t block_size(const tzif_counts *c, size_t tsize) {
    return (size_t)c->time * tsize + c->time + (size_t)c->type * 6 + c->chars + (size_t)c->leap * (tsize + 4) +
           c->isstd + c->isut;
}

static df_errkind load_block(df_tz *tz, const uint8_t *d, const tzif_counts *c, size_t tsize, df_error *err) {
    tz->trans = df_malloc(sizeof(int64_t) * (c->time ? c->time : 1));
    tz->trans_type = df_malloc(c->time ? c->time : 1);
    tz->type_off = df_malloc(sizeof(int32_t) * c->type);
    if (!tz->trans || !tz->trans_type || !tz->type_off) return DF_OOM(err);
    const uint8_t *p = d;
    for (uint32_t i = 0; i < c->time; i++, p += tsize)
        tz->trans[i] = tsize == 8 ? be64(p) : (int64_t)(int32_t)be32(p);
    for (uint32_t i = 0; i < c->time; i++) {
        if (p[i] >= c->type) return df_error_set(err, DF_ERR_UNSUPPORTED, "time zone data has a bad type index");
        tz->trans_type[i] = p[i];
        if (i > 0 && tz->trans[i] <= tz->trans[i - 1])
            return df_error_set(err, DF_ERR_UNSUPPORTED, "time zone transitions are not ascending");
    }
    p += c->time;
    for (uint32_t i = 0; i < c->type; i++, p += 6) {
        int32_t off = (int32_t)be32(p);
        if (off < -25 * 3600 || off > 26 * 3600)
            return df_error_set(err, DF_ERR_UNSUPPORTED, "time zone offset out of range");
        tz->type_off[i] = off;
    }
    tz->ntrans = (int32_t)c->time;
    tz->ntypes = (int32_t)c->type;
    tz->fixed = tz->type_off[0];
    return DF_OK;
}

df_errkind df__tz_parse_tzif(const uint8_t *data, size_t len, df_tz **out, df_error *err) {
    *out = NULL;
    tzif_counts c;
    DF_TRY(read_header(data, len, &c, err));
    size_t v1 = block_size(&c, 4);
    if (44 + v1 > len) return df_error_set(err, DF_ERR_UNSUPPORTED, "time zone data is truncated");
    df_tz *tz = df_calloc(1, sizeof *tz);
    if (!tz) return DF_OOM(err);
    df_errkind k;
    if (data[4] >= '2') {
        /* Version 2+: skip the 32-bit block, read the 64-bit one and the footer. */
        const uint8_t *d2 = data + 44 + v1;
        size_t rest = len - 44 - v1;
        tzif_counts c2;
        if ((k = read_header(d2, rest, &c2, err)) != DF_OK) goto fail;
        size_t v2 = block_size(&c2, 8);
        if (44 + v2 > rest) {
            k = df_error_set(err, DF_ERR_UNSUPPORTED, "time zone data is truncated");
            goto fail;
        }
        if ((k = load_block(tz, d2 + 44, &c2, 8, err)) != DF_OK) goto fail;
        const char *foot = (const char *)d2 + 44 + v2;
        size_t flen = rest - 44 - v2;
        if (flen >= 2 && foot[0] == '\n') {
            char rule[128];
            size_t n = 0;
            while (n + 1 < flen && n < sizeof rule - 1 && foot[1 + n] != '\n') rule[n] = foot[1 + n], n++;
            rule[n] = '\0';
            if (n > 0 && !parse_posix(rule, &tz->posix)) tz->posix.present = false;
        }
    } else if ((k = load_block(tz, data + 44, &c, 4, err)) != DF_OK) {
        goto fail;
    }
    *out = tz;
    return DF_OK;
fail:
    df__tz_free(tz);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

/* "+HH:MM", "+HHMM" or "+HH"; true on success. */
static bool parse_fixed(const char *s, int32_t *off) {
    if (s[0] != '+' && s[0] != '-') return false;
    int sign = s[0] == '-' ? -1 : 1;
    const char *p = s + 1;
    int d[4], n = 0;
    while (*p && n < 4) {
        if (*p == ':' && n == 2) {
            p++;
            continue;
        }
        if (*p < '0' || *p > '9') return false;
        d[n++] = *p++ - '0';
    }
    if (*p || (n != 2 && n != 4)) return false;
    int h = d[0] * 10 + d[1], m = n == 4 ? d[2] * 10 + d[3] : 0;
    if (h > 23 || m > 59) return false;
    *off = sign * (h * 3600 + m * 60);
    return true;
}

static bool safe_zone_name(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 200 || name[0] == '/' || name[0] == '.') return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '+' || c == '/' || c == '.';
        if (!ok) return false;
        if (c == '.' && i + 1 < n && name[i + 1] == '.') return false;
    }
    return true;
}

static df_errkind load_zoneinfo(const char *name, df_tz **out, df_error *err) {
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    /* TZDIR comes from the environment: a FIFO there must not block, and a directory is no zone. */
    int fd;
    if (df_file_open_regular(path, 0, &fd, NULL) != 0) return df_error_set(err, DF_ERR_UNSUPPORTED, "unknown time zone");
    uint8_t *data = df_malloc(MAX_TZIF_BYTES);
    if (!data) {
        close(fd);
        return DF_OOM(err);
    }
    size_t len = 0;
    while (len < MAX_TZIF_BYTES) {
        ssize_t n = read(fd, data + len, MAX_TZIF_BYTES - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    df_errkind k = df__tz_parse_tzif(data, len, out, err);
    df_free(data);
    return k;
}

df_errkind df__tz_open(const char *name, df_tz **out, df_error *err) {
    *out = NULL;
    int32_t off = 0;
    bool fixed = strcmp(name, "UTC") == 0 || strcmp(name, "Z") == 0 || strcmp(name, "utc") == 0 ||
                 parse_fixed(name, &off);
    if (fixed) {
        df_tz *tz = df_calloc(1, sizeof *tz);
        if (!tz) return DF_OOM(err);
        tz->fixed = off;
        *out = tz;
        return DF_OK;
    }
    if (!safe_zone_name(name)) return df_error_set(err, DF_ERR_UNSUPPORTED, "unknown time zone");
    return load_zoneinfo(name, out, err);
}
