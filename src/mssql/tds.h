/*
 * TDS wire layer shared by the client (src/mssql) and the loopback peer
 * (programs/mssql-peer): protocol constants, a bounds-checked reader over
 * received bytes, TYPE_INFO parsing, value decoding and formatting, UTF-16
 * conversion, and the transport (socket, TLS through memory BIOs, packets).
 *
 * Everything that reads bytes from the network goes through df__tds_rd,
 * whose every accessor checks the remaining length first and fails with
 * DF_ERR_TDS_PROTOCOL; nothing here recurses.  Facts about the protocol are
 * in docs/tds.md.
 */
#ifndef DF_MSSQL_TDS_H
#define DF_MSSQL_TDS_H

#include <stdatomic.h>

#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* Protocol constants                                                        */

enum {
    TDS_PKT_SQL_BATCH = 0x01,
    TDS_PKT_RPC = 0x03,
    TDS_PKT_REPLY = 0x04,
    TDS_PKT_ATTENTION = 0x06,
    TDS_PKT_BULK = 0x07,
    TDS_PKT_LOGIN7 = 0x10,
    TDS_PKT_PRELOGIN = 0x12,
};

enum { TDS_ST_EOM = 0x01, TDS_ST_IGNORE = 0x02 };

enum {
    TDS_TOK_RETURNSTATUS = 0x79,
    TDS_TOK_COLMETADATA = 0x81,
    TDS_TOK_DATACLASSIFICATION = 0xA3,
    TDS_TOK_TABNAME = 0xA4,
    TDS_TOK_COLINFO = 0xA5,
    TDS_TOK_ORDER = 0xA9,
    TDS_TOK_ERROR = 0xAA,
    TDS_TOK_INFO = 0xAB,
    TDS_TOK_RETURNVALUE = 0xAC,
    TDS_TOK_LOGINACK = 0xAD,
    TDS_TOK_FEATUREEXTACK = 0xAE,
    TDS_TOK_ROW = 0xD1,
    TDS_TOK_NBCROW = 0xD2,
    TDS_TOK_ENVCHANGE = 0xE3,
    TDS_TOK_SESSIONSTATE = 0xE4,
    TDS_TOK_SSPI = 0xED,
    TDS_TOK_FEDAUTHINFO = 0xEE,
    TDS_TOK_DONE = 0xFD,
    TDS_TOK_DONEPROC = 0xFE,
    TDS_TOK_DONEINPROC = 0xFF,
};

enum {
    TDS_DONE_MORE = 0x0001,
    TDS_DONE_ERROR = 0x0002,
    TDS_DONE_INXACT = 0x0004,
    TDS_DONE_COUNT = 0x0010,
    TDS_DONE_ATTN = 0x0020,
    TDS_DONE_SRVERROR = 0x0100,
};

/* Type bytes of TYPE_INFO (MS-TDS 2.2.5.4). */
enum {
    TDS_T_NULL = 0x1F,
    TDS_T_INT1 = 0x30,
    TDS_T_BIT = 0x32,
    TDS_T_INT2 = 0x34,
    TDS_T_INT4 = 0x38,
    TDS_T_DATETIM4 = 0x3A,
    TDS_T_FLT4 = 0x3B,
    TDS_T_MONEY = 0x3C,
    TDS_T_DATETIME = 0x3D,
    TDS_T_FLT8 = 0x3E,
    TDS_T_MONEY4 = 0x7A,
    TDS_T_INT8 = 0x7F,
    TDS_T_GUID = 0x24,
    TDS_T_INTN = 0x26,
    TDS_T_DATEN = 0x28,
    TDS_T_TIMEN = 0x29,
    TDS_T_DATETIME2N = 0x2A,
    TDS_T_DATETIMEOFFSETN = 0x2B,
    TDS_T_BITN = 0x68,
    TDS_T_DECIMALN = 0x6A,
    TDS_T_NUMERICN = 0x6C,
    TDS_T_FLTN = 0x6D,
    TDS_T_MONEYN = 0x6E,
    TDS_T_DATETIMN = 0x6F,
    TDS_T_IMAGE = 0x22,
    TDS_T_TEXT = 0x23,
    TDS_T_NTEXT = 0x63,
    TDS_T_VARIANT = 0x62,
    TDS_T_BIGVARBIN = 0xA5,
    TDS_T_BIGVARCHR = 0xA7,
    TDS_T_BIGBINARY = 0xAD,
    TDS_T_BIGCHAR = 0xAF,
    TDS_T_NVARCHAR = 0xE7,
    TDS_T_NCHAR = 0xEF,
    TDS_T_UDT = 0xF0,
    TDS_T_XML = 0xF1,
    TDS_T_JSON = 0xF4,
};

#define TDS_DEFAULT_PACKET 4096u
#define TDS_MIN_PACKET 512u
#define TDS_MAX_PACKET 32767u
/* Largest response message we buffer (results of our own metadata queries are small). */
#define TDS_MAX_MESSAGE ((size_t)1 << 30)
/* Largest single value we assemble from PLP chunks. */
#define TDS_MAX_VALUE ((size_t)1 << 30)

/* Copies a NUL-terminated string into dst[cap], truncating. */
static inline void df__tds_strlcpy(char *dst, size_t cap, const char *src) {
    size_t n = src ? strlen(src) : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Bounded reader                                                            */

typedef struct df__tds_rd {
    const uint8_t *p;       /* next unread byte */
    const uint8_t *end;     /* one past the last byte */
    const uint8_t *start;   /* first byte (for offsets in errors) */
} df__tds_rd;

static inline void df__tds_rd_init(df__tds_rd *r, const void *p, size_t n) {
    r->p = r->start = (const uint8_t *)p;
    r->end = r->p + n;
}
static inline size_t df__tds_rd_left(const df__tds_rd *r) { return (size_t)(r->end - r->p); }
/* Records the "truncated" protocol error, subkind DF_ERR_TDS_TRUNCATED (the slow path of the readers below). */
df_errkind df__tds_rd_short(const df__tds_rd *r, size_t n, const char *what, df_error *err);
/* Fails with DF_ERR_TDS_PROTOCOL unless n bytes remain; `what` names the field. */
static inline df_errkind df__tds_rd_need(const df__tds_rd *r, size_t n, const char *what, df_error *err) {
    return DF_LIKELY(df__tds_rd_left(r) >= n) ? DF_OK : df__tds_rd_short(r, n, what, err);
}
/* The readers are inline (the bulk decoder calls them for every value); on failure they still set the output. */
static inline df_errkind df__tds_rd_u8(df__tds_rd *r, uint8_t *v, df_error *err) {
    if (DF_UNLIKELY(r->p >= r->end)) { *v = 0; return df__tds_rd_short(r, 1, "byte", err); }
    *v = *r->p++;
    return DF_OK;
}
static inline df_errkind df__tds_rd_u16(df__tds_rd *r, uint16_t *v, df_error *err) {
    if (DF_UNLIKELY(df__tds_rd_left(r) < 2)) { *v = 0; return df__tds_rd_short(r, 2, "ushort", err); }
    *v = df_load_le16(r->p);
    r->p += 2;
    return DF_OK;
}
static inline df_errkind df__tds_rd_u32(df__tds_rd *r, uint32_t *v, df_error *err) {
    if (DF_UNLIKELY(df__tds_rd_left(r) < 4)) { *v = 0; return df__tds_rd_short(r, 4, "long", err); }
    *v = df_load_le32(r->p);
    r->p += 4;
    return DF_OK;
}
static inline df_errkind df__tds_rd_u64(df__tds_rd *r, uint64_t *v, df_error *err) {
    if (DF_UNLIKELY(df__tds_rd_left(r) < 8)) { *v = 0; return df__tds_rd_short(r, 8, "longlong", err); }
    *v = df_load_le64(r->p);
    r->p += 8;
    return DF_OK;
}
/* Returns a pointer to the next n bytes and advances. */
static inline df_errkind df__tds_rd_bytes(df__tds_rd *r, size_t n, const uint8_t **out, df_error *err) {
    if (DF_UNLIKELY(df__tds_rd_left(r) < n)) { *out = r->p; return df__tds_rd_short(r, n, "bytes", err); }
    *out = r->p;
    r->p += n;
    return DF_OK;
}
static inline df_errkind df__tds_rd_skip(df__tds_rd *r, size_t n, df_error *err) {
    if (DF_UNLIKELY(df__tds_rd_left(r) < n)) return df__tds_rd_short(r, n, "bytes", err);
    r->p += n;
    return DF_OK;
}
/* B_VARCHAR (1-byte char count) / US_VARCHAR (2-byte count) as UTF-8 into dst (NUL-terminated, truncated to cap). */
df_errkind df__tds_rd_bvarchar(df__tds_rd *r, char *dst, size_t cap, df_error *err);
df_errkind df__tds_rd_usvarchar(df__tds_rd *r, char *dst, size_t cap, df_error *err);

/* ------------------------------------------------------------------------ */
/* TYPE_INFO and values                                                      */

/* The decoded TYPE_INFO of one column (COLMETADATA, bulk metadata). */
typedef struct df__tds_typeinfo {
    uint8_t type;           /* TDS_T_* byte as sent */
    uint8_t size_class;     /* TDS_SC_* below: how values are framed */
    uint32_t max_len;       /* declared maximum length in bytes (0xFFFF = max for USHORTLEN) */
    uint8_t precision;      /* decimals */
    uint8_t scale;          /* decimals, time family */
    uint8_t collation[5];   /* character types; zero when absent */
    bool has_collation;     /* collation bytes were present */
    bool plp;               /* values use PLP chunking */
} df__tds_typeinfo;

enum {
    TDS_SC_FIXED = 1,       /* fixed length max_len, no prefix */
    TDS_SC_BYTELEN,         /* 1-byte length, 0 = NULL */
    TDS_SC_USHORTLEN,       /* 2-byte length, 0xFFFF = NULL */
    TDS_SC_LONGLEN,         /* text/ntext/image: textptr + timestamp + 4-byte length */
    TDS_SC_PLP,             /* 8-byte total, chunks */
};

/*
 * Parses TYPE_INFO at the reader.  `bulk_tabname` marks bulk-load metadata:
 * a text/ntext/image TableName is then one US_VARCHAR (results: NumParts +
 * parts), and a decimal's maximum length is not trusted (clients send odd
 * ones that SQL Server accepts; values are checked one by one).  Unknown or unsupported types fail with
 * DF_ERR_TDS_PROTOCOL (sql_variant, UDT/XML schema info are not read).
 */
df_errkind df__tds_typeinfo_read(df__tds_rd *r, df__tds_typeinfo *ti, bool bulk_tabname, df_error *err);

/* Encodes TYPE_INFO (no UserType/Flags) into b. */
df_errkind df__tds_typeinfo_write(df_buf *b, const df__tds_typeinfo *ti, df_error *err);

/* Decoded value kinds. */
typedef enum df__tds_vkind {
    TDS_V_NULL = 0,
    TDS_V_INT,          /* i: integers and bit */
    TDS_V_FLOAT,        /* f: real/float */
    TDS_V_DECIMAL,      /* dec: unscaled value; scale in typeinfo (money: scale 4) */
    TDS_V_DATE,         /* days since 0001-01-01 */
    TDS_V_TIME,         /* ticks: units of 10^-scale s since midnight */
    TDS_V_DATETIME2,    /* days + ticks */
    TDS_V_DTO,          /* days + ticks (UTC) + offset minutes */
    TDS_V_DATETIME,     /* legacy datetime: days since 1900-01-01 (may be negative) + 1/300 s */
    TDS_V_SMALLDT,      /* smalldatetime: days since 1900 + minutes */
    TDS_V_GUID,         /* bytes: 16 wire bytes */
    TDS_V_BYTES,        /* bytes/len: binary, varchar (code page), nvarchar (UTF-16LE) */
} df__tds_vkind;

typedef struct df__tds_value {
    df__tds_vkind kind;
    int64_t i;              /* INT: value; DATE/DATETIME2/DTO: days; DATETIME/SMALLDT: days */
    uint64_t ticks;         /* TIME/DATETIME2/DTO: time ticks; DATETIME: 1/300 s; SMALLDT: minutes */
    int16_t offset_min;     /* DTO */
    double f;               /* FLOAT */
    df_i128 dec;            /* DECIMAL: signed unscaled */
    const uint8_t *bytes;   /* BYTES/GUID: borrowed from the input or the scratch buffer */
    size_t len;             /* BYTES length */
} df__tds_value;

/*
 * Reads one value of column type `ti`.  PLP values are assembled into
 * `scratch` (reset by the caller between rows); other byte values point
 * into the input.  Lengths are validated against the type.
 */
df_errkind df__tds_value_read(df__tds_rd *r, const df__tds_typeinfo *ti, df_buf *scratch,
                              df__tds_value *v, df_error *err);

/* Byte length of the time part for a time scale (0-2: 3, 3-4: 4, 5-7: 5). */
static inline unsigned df__tds_time_len(unsigned scale) { return scale <= 2 ? 3u : scale <= 4 ? 4u : 5u; }
/* Magnitude bytes for a decimal precision (4, 8, 12 or 16). */
static inline unsigned df__tds_dec_len(unsigned precision) {
    return precision <= 9 ? 4u : precision <= 19 ? 8u : precision <= 28 ? 12u : 16u;
}
extern const uint64_t df__tds_pow10_u64[20];
/* 10^n as a 128-bit integer for n in 0..38. */
df_i128 df__tds_pow10(int n);

/* True when `err` says the input ended early (more bytes may complete it): df__tds_rd_short's subkind. */
static inline bool df__tds_truncated(const df_error *err) {
    return err && err->kind == DF_ERR_TDS_PROTOCOL && err->subkind == DF_ERR_TDS_TRUNCATED;
}

/* ------------------------------------------------------------------------ */
/* Bulk-load streams (server side; bulk_decode.c)                            */

typedef struct df__tds_bulk_meta {
    int ncols;              /* columns described (1..4096) */
    df__tds_typeinfo *ti;   /* owned array (df_free) */
} df__tds_bulk_meta;

/* Reads the bulk COLMETADATA token (token byte included) into m. */
df_errkind df__tds_bulk_meta_read(df__tds_rd *r, df__tds_bulk_meta *m, df_error *err);
/*
 * Reads one ROW's values (after the 0xD1 token) into vals[m->ncols].  Byte
 * values point into the input or, for PLP values sent in several chunks,
 * into `scratch` (reset here); all stay valid until either changes.
 */
df_errkind df__tds_bulk_row_read(df__tds_rd *r, const df__tds_bulk_meta *m, df_buf *scratch, df__tds_value *vals,
                                 df_error *err);
/*
 * Decodes a complete bulk message: metadata (ncols columns unless ncols <
 * 0), rows, optional final DONE; formats every value as the peer would
 * store it.  *rows = rows decoded.
 */
df_errkind df__tds_bulk_decode(const uint8_t *p, size_t n, int ncols, int64_t *rows, df_error *err);
/*
 * The same through the row plan below, as the peer's discard mode decodes:
 * same rows and errors as df__tds_bulk_decode for any input (the general
 * reader decodes only the items the plan stops at; values are not
 * formatted).
 */
df_errkind df__tds_bulk_decode_planned(const uint8_t *p, size_t n, int ncols, int64_t *rows, df_error *err);

/*
 * Row plans: a bulk stream's rows checked without building values.
 *
 * df__tds_bulk_plan_init compiles the metadata into one step per column
 * (adjacent fixed-width columns merged into one bounds-checked skip) with
 * every type's length and range rules precomputed, so checking a row costs
 * a few compares per value and no calls.  df__tds_bulk_rows_skim walks ROW
 * tokens with the plan and stops, without judging it, at anything the
 * general reader (df__tds_bulk_row_read) must look at: another token, a
 * value the plan rejects, or a NULL in a column marked NOT NULL.  The plan
 * accepts a subset of what the general reader accepts, so decoding the
 * stopping point with the general reader gives exactly the errors a
 * row-by-row decode would.
 */
enum {
    TDS_STEP_SKIP = 1,      /* n fixed bytes that any value accepts */
    TDS_STEP_LEN1,          /* 1-byte length in `lenmask` (bit 0 = NULL), body unchecked */
    TDS_STEP_DATE,          /* DATEN: 0 or 3 bytes, day number in range */
    TDS_STEP_TIME,          /* TIMEN / DATETIME2N / DATETIMEOFFSETN: 0 or `n` bytes, fields in range */
    TDS_STEP_DECIMAL,       /* DECIMALN / NUMERICN: sign byte, magnitude below 10^precision */
    TDS_STEP_DATETIME,      /* DATETIME / DATETIM4 (n = 8 / 4) or DATETIMN (n = 0, 1-byte length) */
    TDS_STEP_USHORT,        /* 2-byte length up to `n`, 0xFFFF = NULL */
    TDS_STEP_PLP,           /* PLP chunks, total checked against the header */
};

/* One column (or run of fixed columns) of a row plan. */
typedef struct df__tds_bulk_step {
    uint8_t op;             /* TDS_STEP_* */
    bool nonull;            /* a NULL stops the skim (the caller rejects NULLs here) */
    uint8_t time_len;       /* TIME: bytes of the time part */
    uint8_t date_off;       /* TIME: 1 when a date part follows, 2 with a date and an offset */
    uint32_t n;             /* SKIP: bytes; TIME: value length; USHORT: maximum length; DATETIME: fixed width or 0 */
    uint64_t lenmask;       /* LEN1: bit i set when length i is allowed */
    uint64_t tick_limit;    /* TIME: ticks per day at the column's scale */
    df_u128 dec_limit;      /* DECIMAL: 10^precision */
} df__tds_bulk_step;

/* Most length bytes a row shape checks (more LEN1 columns: no shape). */
#define TDS_PLAN_SHAPE_MAX 16

/* A compiled row plan (see above). */
typedef struct df__tds_bulk_plan {
    int nsteps;             /* steps in `steps` */
    df__tds_bulk_step *steps; /* owned array (df_free) */
    size_t fixed_row;       /* bytes of a row (token included) when every step is SKIP, else 0 */
    /*
     * The usual row when every step is SKIP or LEN1: each LEN1 value at its
     * declared length makes rows of one width, checked by comparing the
     * length bytes at fixed offsets; other rows take the steps.
     */
    size_t shape_row;       /* bytes of such a row (token included), or 0 */
    int nshape;             /* length bytes to compare */
    uint32_t shape_off[TDS_PLAN_SHAPE_MAX]; /* their offsets from the row token */
    uint8_t shape_len[TDS_PLAN_SHAPE_MAX];  /* the declared lengths they must hold */
} df__tds_bulk_plan;

/* Why df__tds_bulk_rows_skim stopped. */
typedef enum df__tds_skim_stop {
    TDS_SKIM_END = 0,       /* the input or max_rows ran out exactly at a row boundary */
    TDS_SKIM_SHORT,         /* the next row is valid as far as it goes but incomplete */
    TDS_SKIM_OTHER,         /* the next item needs the general reader (token, bad value, NULL) */
} df__tds_skim_stop;

/*
 * Compiles a plan for metadata m.  nonull (may be NULL) marks columns whose
 * NULLs the caller must see.  Fails with DF_ERR_UNSUPPORTED when a column's
 * type has no plan step (text/ntext/image and the like: decode those rows
 * with df__tds_bulk_row_read), DF_ERR_OUT_OF_MEMORY otherwise; on failure
 * nothing needs freeing.
 */
df_errkind df__tds_bulk_plan_init(df__tds_bulk_plan *pl, const df__tds_bulk_meta *m, const bool *nonull, df_error *err);
/* Frees the steps (accepts a zeroed plan). */
void df__tds_bulk_plan_free(df__tds_bulk_plan *pl);
/*
 * Checks up to max_rows complete ROW tokens at p[0, n) against the plan.
 * Returns the rows accepted; *used = their bytes; *why = why it stopped.
 * Never fails and never reads outside p[0, n).
 */
size_t df__tds_bulk_rows_skim(const df__tds_bulk_plan *pl, const uint8_t *p, size_t n, size_t max_rows, size_t *used,
                              df__tds_skim_stop *why);

/* ------------------------------------------------------------------------ */
/* Client requests parsed by a server (server_parse.c)                       */

/* What a LOGIN7 message carries (secrets wiped by df__tds_login7_clear). */
typedef struct df__tds_login7 {
    uint32_t tds_version;   /* as read little-endian (0x74000004 = 7.4) */
    uint32_t packet_size;   /* requested */
    bool integrated;        /* Windows authentication requested (fIntSecurity or SSPI data) */
    bool read_only;         /* ApplicationIntent=ReadOnly */
    char host[129];         /* client host name */
    char user[129];         /* login name */
    char password[129];     /* de-obfuscated password */
    char app[129];          /* application name */
    char database[129];     /* initial database ("" = default) */
} df__tds_login7;

/* Walks a client PRELOGIN payload; *enc = its ENCRYPTION byte (0x02 when absent). */
df_errkind df__tds_prelogin_client_parse(const uint8_t *p, size_t n, uint8_t *enc, df_error *err);
/* Parses a LOGIN7 message with every offset and length checked. */
df_errkind df__tds_login7_parse(const uint8_t *m, size_t n, df__tds_login7 *out, df_error *err);
/* Wipes the password. */
void df__tds_login7_clear(df__tds_login7 *l);

/* ------------------------------------------------------------------------ */
/* Calendar helpers (proleptic Gregorian)                                    */

/* Days from 0001-01-01 to y-m-d. */
int64_t df__tds_days_from_civil(int64_t y, unsigned m, unsigned d);
/* Inverse of the above. */
void df__tds_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/* Days between 0001-01-01 and 1970-01-01 / 1900-01-01. */
#define TDS_DAYS_0001_TO_1970 719162
#define TDS_DAYS_0001_TO_1900 693595

/* Formats a decimal (unscaled, scale) as text: "-123.45". */
void df__tds_format_decimal(df_i128 v, int scale, char *out, size_t cap);
/*
 * Formats time-family values as ISO text: date "YYYY-MM-DD", time
 * "HH:MM:SS[.fffffff]" with exactly `scale` digits, datetime2 "date time",
 * datetimeoffset "date time +HH:MM".
 */
void df__tds_format_date(int64_t days, char *out, size_t cap);
void df__tds_format_time(uint64_t ticks, unsigned scale, char *out, size_t cap);
/* GUID wire bytes → "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" (upper case). */
void df__tds_format_guid(const uint8_t wire[16], char out[37]);
/* "XXXXXXXX-..." text → wire bytes; false if malformed. */
bool df__tds_parse_guid(const char *s, size_t n, uint8_t wire[16]);

/* ------------------------------------------------------------------------ */
/* UTF-16                                                                    */

/*
 * Number of UTF-16 code units needed for valid UTF-8 [s, s+n); returns
 * SIZE_MAX when the bytes are not valid UTF-8.
 */
size_t df__tds_utf16_len(const uint8_t *s, size_t n);
/*
 * Converts valid UTF-8 to UTF-16LE at dst (room for df__tds_utf16_len units
 * × 2 bytes).  Returns the bytes written.  ASCII runs take a vectorised
 * 8-bytes-at-a-time path.
 */
size_t df__tds_utf8_to_utf16le(const uint8_t *s, size_t n, uint8_t *dst);
/*
 * UTF-16LE → UTF-8 into a buffer (appends).  Unpaired surrogates become
 * U+FFFD.  Fails only when the buffer cannot grow.
 */
df_errkind df__tds_utf16le_to_utf8(const uint8_t *s, size_t nbytes, df_buf *out, df_error *err);
/* Code page 1252 byte → Unicode scalar. */
uint32_t df__tds_cp1252_to_unicode(uint8_t c);
/* Unicode scalar → code page 1252 byte, or -1 when unmappable. */
int df__tds_unicode_to_cp1252(uint32_t u);
/* Appends the UTF-16LE form of a NUL-terminated UTF-8/ASCII string (B_VARCHAR helpers use it). */
df_errkind df__tds_put_utf16(df_buf *b, const char *s, size_t *units, df_error *err);

/* ------------------------------------------------------------------------ */
/* Little-endian output helpers                                              */

static inline df_errkind df__tds_put_u8(df_buf *b, uint8_t v, df_error *err) { return df_buf_append(b, &v, 1, err); }
static inline df_errkind df__tds_put_u16(df_buf *b, uint16_t v, df_error *err) {
    uint8_t t[2]; df_store_le16(t, v); return df_buf_append(b, t, 2, err);
}
static inline df_errkind df__tds_put_u32(df_buf *b, uint32_t v, df_error *err) {
    uint8_t t[4]; df_store_le32(t, v); return df_buf_append(b, t, 4, err);
}
static inline df_errkind df__tds_put_u64(df_buf *b, uint64_t v, df_error *err) {
    uint8_t t[8]; df_store_le64(t, v); return df_buf_append(b, t, 8, err);
}
/* B_VARCHAR: 1-byte char count + UTF-16LE (truncated to 255 units). */
df_errkind df__tds_put_bvarchar(df_buf *b, const char *s, df_error *err);
/* US_VARCHAR: 2-byte char count + UTF-16LE. */
df_errkind df__tds_put_usvarchar(df_buf *b, const char *s, df_error *err);

/* ------------------------------------------------------------------------ */
/* Transport: socket, optional TLS (OpenSSL with memory BIOs), packets       */

typedef struct df__tds_io df__tds_io;

typedef enum df__tds_tls_wrap {
    TDS_TLS_OFF = 0,        /* plaintext */
    TDS_TLS_WRAPPED,        /* handshake inside PRELOGIN packets (TDS 7.x) */
    TDS_TLS_RAW,            /* TLS records straight on the socket */
} df__tds_tls_wrap;

/* TLS settings for one side of a connection. */
typedef struct df__tds_tls_cfg {
    bool server;                    /* accept (peer) instead of connect */
    bool strict;                    /* TDS 8.0: ALPN tds/8.0, TLS 1.2-1.3, raw records from the start */
    bool verify;                    /* client: verify chain and host name */
    const char *ca_file;            /* client: extra trust anchor (PEM/DER path) or NULL for system store */
    const char *host;               /* client: SNI and name to verify */
    const char *cert_file;          /* server: PEM certificate chain */
    const char *key_file;           /* server: PEM private key */
    int max_version_7x;             /* TLS1_2_VERSION by default; server may allow 1.3 for fault tests */
} df__tds_tls_cfg;

/*
 * Wraps a connected socket (takes ownership: closed by df__tds_io_free).
 * `timeout_ms` bounds every blocking read/write (0 = no limit); `cancel`
 * (optional) is polled while waiting and aborts the wait with
 * DF_ERR_CANCELLED.
 */
df_errkind df__tds_io_new(int fd, uint32_t timeout_ms, df__tds_io **out, df_error *err);
void df__tds_io_free(df__tds_io *io);
void df__tds_io_set_timeout(df__tds_io *io, uint32_t timeout_ms);
void df__tds_io_set_cancel(df__tds_io *io, _Atomic int *cancel);
/* Packet size used for outgoing messages (512..32767). */
void df__tds_io_set_packet_size(df__tds_io *io, uint32_t size);
uint32_t df__tds_io_packet_size(const df__tds_io *io);
/* SPID written into outgoing headers (server side). */
void df__tds_io_set_spid(df__tds_io *io, uint16_t spid);

/*
 * Runs the TLS handshake.  wrap = TDS_TLS_WRAPPED tunnels the handshake
 * through PRELOGIN packets; TDS_TLS_RAW runs it on the socket (strict mode,
 * or a server that saw 0x16).  On success all later traffic is encrypted
 * until df__tds_io_tls_drop.
 */
df_errkind df__tds_io_tls_start(df__tds_io *io, const df__tds_tls_cfg *cfg, df__tds_tls_wrap wrap, df_error *err);
/* Abandons TLS without close_notify (login-only encryption): later traffic is plaintext. */
void df__tds_io_tls_drop(df__tds_io *io);
bool df__tds_io_tls_active(const df__tds_io *io);
/* The negotiated protocol ("TLSv1.2") and ALPN (or ""), for tests and traces. */
const char *df__tds_io_tls_version(const df__tds_io *io);
const char *df__tds_io_tls_alpn(const df__tds_io *io);

/*
 * Sends one message of `type`, split into packets of the current packet
 * size (EOM on the last).  `status_extra` ORs into every packet's status.
 */
df_errkind df__tds_io_send_message(df__tds_io *io, uint8_t type, const void *data, size_t len, df_error *err);

/* Streamed message writing (bulk loads, large batches). */
df_errkind df__tds_io_stream_begin(df__tds_io *io, uint8_t type, df_error *err);
/* Appends bytes; full packets are sent as they fill. */
df_errkind df__tds_io_stream_write(df__tds_io *io, const void *data, size_t len, df_error *err);
/* Sends the final packet with EOM (ignore = also set the IGNORE bit). */
df_errkind df__tds_io_stream_end(df__tds_io *io, bool ignore, df_error *err);
/* Bytes written by the current stream so far (payload only). */
uint64_t df__tds_io_stream_bytes(const df__tds_io *io);

/*
 * Reads one packet: header fields and payload (appended to `payload`).
 * Fails with DF_ERR_MSSQL_CONNECTION_LOST on EOF, DF_ERR_TIMEOUT when the
 * read timeout expires, DF_ERR_TDS_PROTOCOL on a bad header.  `max_size`
 * bounds the accepted packet length.
 */
df_errkind df__tds_io_read_packet(df__tds_io *io, uint8_t *type, uint8_t *status, df_buf *payload,
                                  uint32_t max_size, df_error *err);
/*
 * Reads a whole message (packets until EOM) into `msg` (reset first);
 * *type is the first packet's type, *status the last packet's status.
 */
df_errkind df__tds_io_read_message(df__tds_io *io, uint8_t *type, uint8_t *status, df_buf *msg,
                                   size_t max_bytes, df_error *err);
/* Peeks at the first byte of the connection without consuming it (server: 0x12 vs 0x16). */
df_errkind df__tds_io_peek_byte(df__tds_io *io, uint8_t *b, df_error *err);
/* True when the last read failed because the timeout expired (the io stays usable). */
int df__tds_io_fd(const df__tds_io *io);

#endif
