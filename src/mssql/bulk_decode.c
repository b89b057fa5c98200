/*
 * Bulk-load stream decoding (the server side of BULK_LOAD): COLMETADATA as
 * a bulk client sends it, then ROW tokens and an optional DONE.  Used by
 * the loopback peer while a message streams in, and whole-buffer by the
 * fuzz target.  Only bounds-checked reads; no recursion.
 */
#include "mssql/tds.h"

/* Parses COLMETADATA at the reader. */
df_errkind df__tds_bulk_meta_read(df__tds_rd *r, df__tds_bulk_meta *m, df_error *err) {
    uint8_t tok;
    uint16_t n;
    DF_TRY(df__tds_rd_u8(r, &tok, err));
    if (tok != TDS_TOK_COLMETADATA) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "bulk stream starts with token 0x%02X, not COLMETADATA", tok);
    DF_TRY(df__tds_rd_u16(r, &n, err));
    if (n == 0 || n == 0xFFFF || n > 4096) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "bulk COLMETADATA has %u columns", n);
    /* At least 8 bytes per column; a shorter buffer is "truncated" so a streaming reader waits for more. */
    DF_TRY(df__tds_rd_need(r, (size_t)n * 8, "COLMETADATA", err));
    df__tds_typeinfo *ti = df_calloc(n, sizeof *ti);
    if (!ti) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (unsigned i = 0; k == DF_OK && i < n; i++) {
        uint32_t usertype;
        uint16_t flags;
        char name[130];
        k = df__tds_rd_u32(r, &usertype, err);
        if (k == DF_OK) k = df__tds_rd_u16(r, &flags, err);
        if (k == DF_OK) k = df__tds_typeinfo_read(r, &ti[i], true, err);
        if (k == DF_OK) k = df__tds_rd_bvarchar(r, name, sizeof name, err);
    }
    if (k != DF_OK) {
        df_free(ti);
        return k;
    }
    m->ncols = n;
    m->ti = ti;
    return DF_OK;
}

/* Parses one ROW's values (after the token). */
df_errkind df__tds_bulk_row_read(df__tds_rd *r, const df__tds_bulk_meta *m, df_buf *scratch, df__tds_value *vals, df_error *err) {
    df_buf_reset(scratch);
    for (int i = 0; i < m->ncols; i++) DF_TRY(df__tds_value_read(r, &m->ti[i], scratch, &vals[i], err));
    return DF_OK;
}

df_errkind df__tds_bulk_decode(const uint8_t *p, size_t n, int ncols, int64_t *rows, df_error *err) {
    *rows = 0;
    df__tds_rd r;
    df__tds_rd_init(&r, p, n);
    df__tds_bulk_meta m = {0};
    DF_TRY(df__tds_bulk_meta_read(&r, &m, err));
    df_errkind k = DF_OK;
    if (ncols >= 0 && m.ncols != ncols) k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "bulk metadata has %d columns, INSERT BULK %d", m.ncols, ncols);
    df__tds_value *vals = df_calloc((size_t)m.ncols, sizeof *vals);
    df_buf scratch, text;
    df_buf_init(&scratch, TDS_MAX_VALUE);
    df_buf_init(&text, 0);
    if (!vals && k == DF_OK) k = DF_OOM(err);
    while (k == DF_OK && df__tds_rd_left(&r) > 0) {
        uint8_t tok;
        k = df__tds_rd_u8(&r, &tok, err);
        if (k != DF_OK) break;
        if (tok == TDS_TOK_DONE) {
            k = df__tds_rd_skip(&r, 12, err);
            if (k == DF_OK && df__tds_rd_left(&r)) k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "bytes after the bulk DONE");
            break;
        }
        if (tok != TDS_TOK_ROW) { k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "token 0x%02X in a bulk stream", tok); break; }
        k = df__tds_bulk_row_read(&r, &m, &scratch, vals, err);
        /* Exercise the text formatting used for storage. */
        for (int i = 0; k == DF_OK && i < m.ncols; i++) {
            char buf[64];
            const df__tds_value *v = &vals[i];
            if (v->kind == TDS_V_DECIMAL) df__tds_format_decimal(v->dec, m.ti[i].scale, buf, sizeof buf);
            else if (v->kind == TDS_V_DATE || v->kind == TDS_V_DATETIME2 || v->kind == TDS_V_DTO) df__tds_format_date(v->i, buf, sizeof buf);
            else if (v->kind == TDS_V_TIME) df__tds_format_time(v->ticks, m.ti[i].scale, buf, sizeof buf);
            else if (v->kind == TDS_V_GUID) df__tds_format_guid(v->bytes, buf);
            else if (v->kind == TDS_V_BYTES && (m.ti[i].type == TDS_T_NVARCHAR || m.ti[i].type == TDS_T_NCHAR)) {
                df_buf_reset(&text);
                k = df__tds_utf16le_to_utf8(v->bytes, v->len & ~(size_t)1, &text, err);
            }
        }
        if (k == DF_OK) (*rows)++;
    }
    df_free(vals);
    df_free(m.ti);
    df_buf_free(&scratch);
    df_buf_free(&text);
    return k;
}

