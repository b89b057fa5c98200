/*
 * Server token streams: one pass over a complete response message.
 *
 * Every token the server may send has its size computed exactly (there is
 * no generic length), unknown tokens fail closed.  COLMETADATA opens a
 * result set whose columns are built in growable byte buffers (values,
 * offsets, data, validity) and turned into df_vec at the set's end, so a
 * row costs no allocation.  ROW and NBCROW share the value decoder with
 * the peer's bulk decoder (tds_types.c).
 */
#include "mssql/mssql_int.h"

#include <stdio.h>
#include <stdlib.h>

/* Column builder of one result-set column. */
typedef struct colb {
    df__tds_typeinfo ti;    /* wire type */
    char name[129];         /* column name (UTF-8, truncated) */
    df_type *type;          /* Arrow type (owned reference) */
    int width;              /* bytes per value in vals (0 for var-len) */
    df_buf vals;            /* fixed-width values, or int32 offsets for var-len */
    df_buf data;            /* var-len bytes */
    df_buf valid;           /* one byte per row: 1 valid */
    bool any_null;          /* some value was NULL */
} colb;

typedef struct rsb {
    int32_t ncols;          /* columns of the open set */
    colb *cols;             /* owned array */
    int64_t nrows;          /* rows appended */
    df_buf scratch;         /* PLP assembly */
    df_buf conv;            /* string conversion */
} rsb;

void df__tds_resp_init(df__tds_resp *resp, df_mssql_result *result) {
    memset(resp, 0, sizeof *resp);
    resp->rows_affected = -1;
    resp->result = result;
    resp->max_messages = 32;
}

static void rsb_clear(rsb *b) {
    for (int32_t i = 0; i < b->ncols; i++) {
        colb *c = &b->cols[i];
        if (c->type) df_type_release(c->type);
        df_buf_free(&c->vals);
        df_buf_free(&c->data);
        df_buf_free(&c->valid);
    }
    df_free(b->cols);
    b->cols = NULL;
    b->ncols = 0;
    b->nrows = 0;
}

static bool is_utf8_collation(const uint8_t coll[5]) {
    uint32_t info = df_load_le32(coll);
    return (info >> 26) & 1;
}

/* Chooses the Arrow type of a wire column. */
static df_errkind column_type(colb *c, df_error *err) {
    const df__tds_typeinfo *ti = &c->ti;
    df_type *t = NULL;
    switch (ti->type) {
    case TDS_T_BIT: case TDS_T_BITN: t = df_type_bool(); c->width = 1; break;
    case TDS_T_INT1: t = df_type_uint8(); c->width = 1; break;
    case TDS_T_INT2: t = df_type_int16(); c->width = 2; break;
    case TDS_T_INT4: t = df_type_int32(); c->width = 4; break;
    case TDS_T_INT8: t = df_type_int64(); c->width = 8; break;
    case TDS_T_INTN:
        c->width = (int)ti->max_len;
        t = ti->max_len == 1 ? df_type_uint8() : ti->max_len == 2 ? df_type_int16()
            : ti->max_len == 4 ? df_type_int32() : df_type_int64();
        break;
    case TDS_T_FLT4: t = df_type_float32(); c->width = 4; break;
    case TDS_T_FLT8: t = df_type_float64(); c->width = 8; break;
    case TDS_T_FLTN: t = ti->max_len == 4 ? df_type_float32() : df_type_float64(); c->width = (int)ti->max_len; break;
    case TDS_T_MONEY: t = df_type_decimal(19, 4); c->width = 16; break;
    case TDS_T_MONEY4: t = df_type_decimal(10, 4); c->width = 16; break;
    case TDS_T_MONEYN: t = df_type_decimal(ti->max_len == 4 ? 10 : 19, 4); c->width = 16; break;
    case TDS_T_DECIMALN: case TDS_T_NUMERICN: t = df_type_decimal(ti->precision, ti->scale); c->width = 16; break;
    case TDS_T_DATEN: t = df_type_date32(); c->width = 4; break;
    case TDS_T_TIMEN: t = df_type_time(DF_UNIT_NANO); c->width = 8; break;
    case TDS_T_DATETIME2N: t = df_type_timestamp(DF_UNIT_MICRO, NULL); c->width = 8; break;
    case TDS_T_DATETIMEOFFSETN: t = df_type_timestamp(DF_UNIT_MICRO, "UTC"); c->width = 8; break;
    case TDS_T_DATETIME: case TDS_T_DATETIM4: case TDS_T_DATETIMN:
        t = df_type_timestamp(DF_UNIT_MICRO, NULL); c->width = 8; break;
    case TDS_T_BIGBINARY: case TDS_T_BIGVARBIN: case TDS_T_IMAGE: t = df_type_binary(); break;
    default: t = df_type_utf8(); break;
    }
    if (!t) return DF_OOM(err);
    c->type = t;
    return DF_OK;
}

static df_errkind read_colmetadata(df__tds_rd *r, rsb *b, df_error *err) {
    uint16_t n;
    DF_TRY(df__tds_rd_u16(r, &n, err));
    rsb_clear(b);
    if (n == 0xFFFF) return DF_OK;
    /* Every column takes at least 8 bytes: refuse counts the message cannot hold before allocating. */
    if ((size_t)n * 8 > df__tds_rd_left(r))
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "COLMETADATA announces %u columns in %zu bytes", n, df__tds_rd_left(r));
    b->cols = df_calloc(n ? n : 1, sizeof *b->cols);
    if (!b->cols) return DF_OOM(err);
    b->ncols = n;
    for (int32_t i = 0; i < n; i++) {
        colb *c = &b->cols[i];
        df_buf_init(&c->vals, 0);
        df_buf_init(&c->data, TDS_MAX_MESSAGE);
        df_buf_init(&c->valid, 0);
        uint32_t usertype;
        uint16_t flags;
        DF_TRY(df__tds_rd_u32(r, &usertype, err));
        DF_TRY(df__tds_rd_u16(r, &flags, err));
        DF_TRY(df__tds_typeinfo_read(r, &c->ti, false, err));
        DF_TRY(df__tds_rd_bvarchar(r, c->name, sizeof c->name, err));
        DF_TRY(column_type(c, err));
    }
    return DF_OK;
}

/* Microseconds or nanoseconds since 1970 from days since 0001 and ticks of 10^-scale s. */
static df_errkind to_epoch(int64_t days, uint64_t ticks, unsigned scale, df_time_unit unit, int64_t *out,
                           df_error *err) {
    int64_t per_day = unit == DF_UNIT_NANO ? 86400000000000LL : 86400000000LL;
    /* Scale 7 (100 ns) values lose their last digit in microseconds (floor, time of day is never negative). */
    int64_t sub = unit == DF_UNIT_NANO ? (int64_t)(ticks * df__tds_pow10_u64[9 - scale])
                                       : (int64_t)(ticks * df__tds_pow10_u64[6 - (scale > 6 ? 6 : scale)] /
                                                   (scale > 6 ? df__tds_pow10_u64[scale - 6] : 1));
    int64_t d = days - TDS_DAYS_0001_TO_1970, v;
    if (__builtin_mul_overflow(d, per_day, &v) || __builtin_add_overflow(v, sub, &v))
        return df_error_set(err, DF_ERR_VALUE_CONVERSION, "timestamp outside the nanosecond range of the result type");
    *out = v;
    return DF_OK;
}

/* Appends a decoded value (or NULL) to a column builder. */
static df_errkind append_value(rsb *b, colb *c, const df__tds_value *v, df_error *err) {
    uint8_t ok = v->kind != TDS_V_NULL;
    DF_TRY(df_buf_append(&c->valid, &ok, 1, err));
    if (!ok) c->any_null = true;
    df_type_id id = c->type->id;
    if (id == DF_TYPE_UTF8 || id == DF_TYPE_BINARY) {
        if (ok) {
            const df__tds_typeinfo *ti = &c->ti;
            if (v->kind == TDS_V_GUID) {
                char g[37];
                df__tds_format_guid(v->bytes, g);
                DF_TRY(df_buf_append(&c->data, g, 36, err));
            } else if (id == DF_TYPE_BINARY) {
                DF_TRY(df_buf_append(&c->data, v->bytes, v->len, err));
            } else if (ti->type == TDS_T_JSON ||
                       ((ti->type == TDS_T_BIGVARCHR || ti->type == TDS_T_BIGCHAR || ti->type == TDS_T_TEXT) &&
                        is_utf8_collation(ti->collation))) {
                if (!df_utf8_valid(v->bytes, v->len))
                    return df_error_set(err, DF_ERR_TDS_PROTOCOL, "a value of a UTF-8 collation is not valid UTF-8");
                DF_TRY(df_buf_append(&c->data, v->bytes, v->len, err));
            } else if (ti->type == TDS_T_BIGVARCHR || ti->type == TDS_T_BIGCHAR || ti->type == TDS_T_TEXT) {
                for (size_t i = 0; i < v->len; i++) {
                    uint32_t u = df__tds_cp1252_to_unicode(v->bytes[i]);
                    uint8_t tmp[2];
                    uint16_t w = (uint16_t)u;
                    df_store_le16(tmp, w);
                    DF_TRY(df__tds_utf16le_to_utf8(tmp, 2, &c->data, err));
                }
            } else {
                if (v->len & 1) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "odd byte count in a UTF-16 value");
                DF_TRY(df__tds_utf16le_to_utf8(v->bytes, v->len, &c->data, err));
            }
        }
        if (c->data.len > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "result column exceeds 2 GiB");
        int32_t off = (int32_t)c->data.len;
        return df_buf_append(&c->vals, &off, 4, err);
    }
    uint8_t tmp[16] = {0};
    if (ok) {
        switch (id) {
        case DF_TYPE_BOOL: case DF_TYPE_UINT8: tmp[0] = (uint8_t)v->i; break;
        case DF_TYPE_INT16: df_store_le16(tmp, (uint16_t)v->i); break;
        case DF_TYPE_INT32: df_store_le32(tmp, (uint32_t)v->i); break;
        case DF_TYPE_INT64: df_store_le64(tmp, (uint64_t)v->i); break;
        case DF_TYPE_FLOAT32: { float f = (float)v->f; memcpy(tmp, &f, 4); break; }
        case DF_TYPE_FLOAT64: memcpy(tmp, &v->f, 8); break;
        case DF_TYPE_DECIMAL128: memcpy(tmp, &v->dec, 16); break;
        case DF_TYPE_DATE32: df_store_le32(tmp, (uint32_t)(int32_t)(v->i - TDS_DAYS_0001_TO_1970)); break;
        case DF_TYPE_TIME64: df_store_le64(tmp, v->ticks * df__tds_pow10_u64[9 - c->ti.scale]); break;
        case DF_TYPE_TIMESTAMP: {
            int64_t e = 0;
            if (v->kind == TDS_V_DATETIME) {
                int64_t us = (int64_t)((v->ticks * 10000 + 1) / 3);
                DF_TRY(to_epoch(v->i + TDS_DAYS_0001_TO_1900, (uint64_t)us, 6, DF_UNIT_MICRO, &e, err));
            } else if (v->kind == TDS_V_SMALLDT) {
                DF_TRY(to_epoch(v->i + TDS_DAYS_0001_TO_1900, v->ticks * 60, 0, DF_UNIT_MICRO, &e, err));
            } else {
                DF_TRY(to_epoch(v->i, v->ticks, c->ti.scale, c->type->unit, &e, err));
            }
            df_store_le64(tmp, (uint64_t)e);
            break;
        }
        default: return df_error_set(err, DF_ERR_INTERNAL, "no builder for a result type");
        }
    }
    (void)b;
    return df_buf_append(&c->vals, tmp, (size_t)c->width, err);
}

/* Finishes the open result set into a df_batch appended to result->sets. */
static df_errkind finish_set(rsb *b, df_mssql_result *res, df_error *err) {
    if (!b->cols || !res) {
        rsb_clear(b);
        return DF_OK;
    }
    df_schema *schema = NULL;
    df_vec **cols = NULL;
    bool owned = true;
    df_errkind k = df_schema_alloc(b->ncols, &schema, err);
    if (k == DF_OK && !(cols = df_calloc((size_t)(b->ncols ? b->ncols : 1), sizeof *cols))) k = DF_OOM(err);
    int64_t n = b->nrows;
    for (int32_t i = 0; k == DF_OK && i < b->ncols; i++) {
        colb *c = &b->cols[i];
        k = df_field_init(&schema->fields[i], c->name, c->type, true, err);
        if (k != DF_OK) break;
        k = df_vec_new(c->type, n, (int64_t)c->data.len, &cols[i], err);
        if (k != DF_OK) break;
        df_vec *v = cols[i];
        if (c->type->id == DF_TYPE_BOOL) {
            for (int64_t r = 0; r < n; r++) df_bit_put(v->values->data, r, ((uint8_t *)c->vals.data)[r] != 0);
        } else if (c->type->id == DF_TYPE_UTF8 || c->type->id == DF_TYPE_BINARY) {
            if (n) memcpy(v->values->data + 4, c->vals.data, (size_t)n * 4);
            if (c->data.len) memcpy(v->data->data, c->data.data, c->data.len);
            v->data->size = (int64_t)c->data.len;
        } else if (n) {
            memcpy(v->values->data, c->vals.data, (size_t)n * (size_t)c->width);
        }
        if (c->any_null) {
            k = df_vec_ensure_validity(v, n, err);
            for (int64_t r = 0; k == DF_OK && r < n; r++)
                if (!((uint8_t *)c->valid.data)[r]) df_bit_clear(v->validity->data, r);
        }
        df_vec_set_length(v, n);
    }
    if (k == DF_OK) {
        df_batch **sets = df_realloc(res->sets, sizeof *sets * (size_t)(res->nsets + 1));
        if (!sets) k = DF_OOM(err);
        else {
            res->sets = sets;
            k = df_batch_new(schema, cols, n, &sets[res->nsets], err);
            owned = false; /* df_batch_new took the column references (also on failure) */
            if (k == DF_OK) res->nsets++;
        }
    }
    if (cols && owned)
        for (int32_t i = 0; i < b->ncols; i++) df_vec_release(cols[i]);
    df_free(cols);
    df_schema_release(schema);
    rsb_clear(b);
    return k;
}

static df_errkind read_row(df__tds_rd *r, rsb *b, bool nbc, df_mssql_result *res, df_error *err) {
    if (!b->cols) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "row without column metadata");
    const uint8_t *bitmap = NULL;
    if (nbc) DF_TRY(df__tds_rd_bytes(r, (size_t)(b->ncols + 7) / 8, &bitmap, err));
    df_buf_reset(&b->scratch);
    for (int32_t i = 0; i < b->ncols; i++) {
        df__tds_value v = {.kind = TDS_V_NULL};
        if (!bitmap || !((bitmap[i >> 3] >> (i & 7)) & 1)) DF_TRY(df__tds_value_read(r, &b->cols[i].ti, &b->scratch, &v, err));
        if (res) DF_TRY(append_value(b, &b->cols[i], &v, err));
    }
    b->nrows++;
    return DF_OK;
}

static df_errkind read_error_info(df__tds_rd *body, bool is_error, df__tds_resp *resp, df_error *err) {
    uint32_t number, line;
    uint8_t state, cls;
    char text[320], server[130], proc[130];
    DF_TRY(df__tds_rd_u32(body, &number, err));
    DF_TRY(df__tds_rd_u8(body, &state, err));
    DF_TRY(df__tds_rd_u8(body, &cls, err));
    DF_TRY(df__tds_rd_usvarchar(body, text, sizeof text, err));
    DF_TRY(df__tds_rd_bvarchar(body, server, sizeof server, err));
    DF_TRY(df__tds_rd_bvarchar(body, proc, sizeof proc, err));
    DF_TRY(df__tds_rd_u32(body, &line, err));
    if (is_error) {
        if (resp->nerrors++ == 0) {
            resp->err_number = (int32_t)number;
            resp->err_state = state;
            resp->err_class = cls;
            resp->err_line = (int32_t)line;
            df__tds_strlcpy(resp->err_text, sizeof resp->err_text, text);
        }
        return DF_OK;
    }
    df_mssql_result *res = resp->result;
    if (res && res->nmessages < resp->max_messages) {
        if (!res->messages) {
            res->messages = df_calloc((size_t)resp->max_messages, sizeof *res->messages);
            if (!res->messages) return DF_OOM(err);
        }
        df_mssql_message *m = &res->messages[res->nmessages++];
        m->number = (int32_t)number;
        m->state = state;
        m->severity = cls;
        df__tds_strlcpy(m->text, sizeof m->text, text);
    }
    return DF_OK;
}

static df_errkind read_envchange(df__tds_rd *body, df__tds_resp *resp, df_error *err) {
    uint8_t type;
    DF_TRY(df__tds_rd_u8(body, &type, err));
    switch (type) {
    case 1: /* database */
        DF_TRY(df__tds_rd_bvarchar(body, resp->database, sizeof resp->database, err));
        resp->env_db = true;
        return DF_OK;
    case 4: { /* packet size, decimal text */
        char s[16];
        DF_TRY(df__tds_rd_bvarchar(body, s, sizeof s, err));
        unsigned long v = strtoul(s, NULL, 10);
        if (v < TDS_MIN_PACKET || v > TDS_MAX_PACKET)
            return df_error_set(err, DF_ERR_TDS_PROTOCOL, "server announced packet size %lu", v);
        resp->env_packet_size = (uint32_t)v;
        return DF_OK;
    }
    case 7: { /* collation */
        uint8_t n;
        const uint8_t *c;
        DF_TRY(df__tds_rd_u8(body, &n, err));
        DF_TRY(df__tds_rd_bytes(body, n, &c, err));
        if (n == 5) {
            memcpy(resp->collation, c, 5);
            resp->env_collation = true;
        }
        return DF_OK;
    }
    case 8: { /* begin transaction: new descriptor */
        uint8_t n;
        const uint8_t *d;
        DF_TRY(df__tds_rd_u8(body, &n, err));
        if (n != 8) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "transaction descriptor of %u bytes", n);
        DF_TRY(df__tds_rd_bytes(body, 8, &d, err));
        memcpy(resp->txn, d, 8);
        resp->env_txn = 8;
        return DF_OK;
    }
    case 9: case 10: case 17:
        resp->env_txn = type;
        return DF_OK;
    case 20: case 21:
        return df_error_set(err, DF_ERR_UNSUPPORTED, "the server asked to route the connection (not supported)");
    default:
        return DF_OK; /* language, charset, mirroring... are informational */
    }
}

static df_errkind read_loginack(df__tds_rd *body, df__tds_resp *resp, df_error *err) {
    uint8_t iface, ver[4];
    const uint8_t *v;
    char prog[130];
    DF_TRY(df__tds_rd_u8(body, &iface, err));
    DF_TRY(df__tds_rd_bytes(body, 4, &v, err));
    resp->tds_version = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
    DF_TRY(df__tds_rd_bvarchar(body, prog, sizeof prog, err));
    DF_TRY(df__tds_rd_need(body, 4, "LOGINACK version", err));
    memcpy(ver, body->p, 4);
    snprintf(resp->server_version, sizeof resp->server_version, "%u.%u.%u", ver[0], ver[1], (unsigned)(ver[2] << 8 | ver[3]));
    resp->loginack = true;
    return DF_OK;
}

static df_errkind read_done(df__tds_rd *r, uint8_t tok, rsb *b, df__tds_resp *resp, df_error *err) {
    uint16_t status, cmd;
    uint64_t count;
    DF_TRY(df__tds_rd_u16(r, &status, err));
    DF_TRY(df__tds_rd_u16(r, &cmd, err));
    DF_TRY(df__tds_rd_u64(r, &count, err));
    bool had_set = b->cols != NULL;
    if (had_set) DF_TRY(finish_set(b, resp->result, err));
    if ((status & TDS_DONE_COUNT) && !had_set) {
        /* Saturates: a hostile server's counts must not overflow the sum. */
        int64_t sum, before = resp->rows_affected < 0 ? 0 : resp->rows_affected;
        if (count > INT64_MAX || __builtin_add_overflow(before, (int64_t)count, &sum)) sum = INT64_MAX;
        resp->rows_affected = sum;
    }
    if (status & TDS_DONE_ATTN) resp->attn_ack = true;
    if (tok != TDS_TOK_DONEINPROC && !(status & TDS_DONE_MORE)) resp->done_final = true;
    return DF_OK;
}

/* Tokens with a USHORT length: returns a reader over the body. */
static df_errkind ushort_body(df__tds_rd *r, df__tds_rd *body, df_error *err) {
    uint16_t len;
    const uint8_t *p;
    DF_TRY(df__tds_rd_u16(r, &len, err));
    DF_TRY(df__tds_rd_bytes(r, len, &p, err));
    df__tds_rd_init(body, p, len);
    return DF_OK;
}

static df_errkind parse_loop(df__tds_rd *r, rsb *b, df__tds_resp *resp, df_error *err) {
    while (df__tds_rd_left(r) > 0) {
        uint8_t tok;
        df__tds_rd body;
        DF_TRY(df__tds_rd_u8(r, &tok, err));
        switch (tok) {
        case TDS_TOK_COLMETADATA:
            if (b->cols) DF_TRY(finish_set(b, resp->result, err));
            DF_TRY(read_colmetadata(r, b, err));
            break;
        case TDS_TOK_ROW: DF_TRY(read_row(r, b, false, resp->result, err)); break;
        case TDS_TOK_NBCROW: DF_TRY(read_row(r, b, true, resp->result, err)); break;
        case TDS_TOK_DONE: case TDS_TOK_DONEPROC: case TDS_TOK_DONEINPROC:
            DF_TRY(read_done(r, tok, b, resp, err));
            break;
        case TDS_TOK_ERROR: case TDS_TOK_INFO:
            DF_TRY(ushort_body(r, &body, err));
            DF_TRY(read_error_info(&body, tok == TDS_TOK_ERROR, resp, err));
            break;
        case TDS_TOK_ENVCHANGE:
            DF_TRY(ushort_body(r, &body, err));
            DF_TRY(read_envchange(&body, resp, err));
            break;
        case TDS_TOK_LOGINACK:
            DF_TRY(ushort_body(r, &body, err));
            DF_TRY(read_loginack(&body, resp, err));
            break;
        case TDS_TOK_ORDER: case TDS_TOK_COLINFO: case TDS_TOK_TABNAME: case TDS_TOK_SSPI:
            DF_TRY(ushort_body(r, &body, err));
            break;
        case TDS_TOK_RETURNSTATUS: {
            uint32_t v;
            DF_TRY(df__tds_rd_u32(r, &v, err));
            resp->return_status = (int32_t)v;
            if (resp->result) resp->result->return_status = (int32_t)v;
            break;
        }
        case TDS_TOK_SESSIONSTATE: case TDS_TOK_FEDAUTHINFO: {
            uint32_t len;
            DF_TRY(df__tds_rd_u32(r, &len, err));
            DF_TRY(df__tds_rd_skip(r, len, err));
            break;
        }
        case TDS_TOK_FEATUREEXTACK:
            /* We request no features, so any acknowledged feature is a protocol error. */
            DF_TRY(df__tds_rd_need(r, 1, "FEATUREEXTACK", err));
            if (*r->p != 0xFF) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "server acknowledged feature 0x%02X we did not request", *r->p);
            r->p++;
            break;
        default:
            df_error_set(err, DF_ERR_TDS_PROTOCOL, "unknown token 0x%02X in the server response", tok);
            df_error_set_offset(err, (int64_t)(r->p - r->start - 1));
            return DF_ERR_TDS_PROTOCOL;
        }
    }
    return DF_OK;
}

df_errkind df__tds_parse_tokens(const uint8_t *p, size_t n, df__tds_resp *resp, df_error *err) {
    df__tds_rd r;
    df__tds_rd_init(&r, p, n);
    rsb b = {0};
    df_buf_init(&b.scratch, TDS_MAX_VALUE);
    df_buf_init(&b.conv, 0);
    df_errkind k = parse_loop(&r, &b, resp, err);
    if (k == DF_OK && b.cols) k = finish_set(&b, resp->result, err); /* stream ended without DONE */
    rsb_clear(&b);
    df_buf_free(&b.scratch);
    df_buf_free(&b.conv);
    return k;
}

void df_mssql_result_free(df_mssql_result *r) {
    if (!r) return;
    for (int32_t i = 0; i < r->nsets; i++) df_batch_release(r->sets[i]);
    df_free(r->sets);
    df_free(r->messages);
    df_free(r);
}

df_errkind df__mssql_server_error(const df__tds_resp *resp, df_errkind kind, df_error *err) {
    df_error_set(err, kind, "SQL Server error %d (state %u, class %u, line %d): %s", resp->err_number,
                 resp->err_state, resp->err_class, resp->err_line, resp->err_text);
    df_error_set_code(err, resp->err_number);
    df_error_set_origin(err, "mssql");
    return kind;
}

df_errkind df_mssql_parse_response(const uint8_t *data, size_t len, df_mssql_result **out, df_error *err) {
    *out = NULL;
    df_mssql_result *res = df_calloc(1, sizeof *res);
    if (!res) return DF_OOM(err);
    res->rows_affected = -1;
    df__tds_resp resp;
    df__tds_resp_init(&resp, res);
    df_errkind k = df__tds_parse_tokens(data, len, &resp, err);
    res->rows_affected = resp.rows_affected;
    if (k == DF_OK && resp.nerrors) k = df__mssql_server_error(&resp, DF_ERR_MSSQL_SERVER_ERROR, err);
    if (k != DF_OK) {
        df_mssql_result_free(res);
        return k;
    }
    *out = res;
    return DF_OK;
}
