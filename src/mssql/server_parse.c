/*
 * Client requests as a server reads them: PRELOGIN option tables and
 * LOGIN7.  Every offset and length comes from the client and is checked
 * against the message before use; fields are capped at 128 characters.
 */
#include "mssql/tds.h"

df_errkind df__tds_prelogin_client_parse(const uint8_t *p, size_t n, uint8_t *enc, df_error *err) {
    *enc = 0x02;
    bool first = true;
    for (size_t i = 0;; i += 5) {
        if (i >= n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN has no terminator");
        if (p[i] == 0xFF) return DF_OK;
        if (i + 5 > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN option table is truncated");
        size_t off = (size_t)p[i + 1] << 8 | p[i + 2], len = (size_t)p[i + 3] << 8 | p[i + 4];
        if (off + len > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN option points outside the message");
        if (first && p[i] != 0) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "PRELOGIN does not start with VERSION");
        first = false;
        if (p[i] == 1 && len >= 1) *enc = p[off];
    }
}

/* Reads the UTF-16 field of fixed-part slot `slot` (offset 36 + 4*slot) into dst. */
static df_errkind field(const uint8_t *m, size_t n, int slot, bool password, char *dst, size_t cap, df_error *err) {
    size_t ib = df_load_le16(m + 36 + slot * 4), cch = df_load_le16(m + 38 + slot * 4);
    if (cch > 128 || ib + 2 * cch > n)
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 field %d is out of bounds or longer than 128 characters", slot);
    uint8_t tmp[256];
    memcpy(tmp, m + ib, 2 * cch);
    if (password)
        for (size_t i = 0; i < 2 * cch; i++) {
            uint8_t b = tmp[i] ^ 0xA5;
            tmp[i] = (uint8_t)((b << 4) | (b >> 4));
        }
    df_buf out;
    df_buf_init(&out, 0);
    df_errkind k = df__tds_utf16le_to_utf8(tmp, 2 * cch, &out, err);
    if (k == DF_OK) df__tds_strlcpy(dst, cap, out.data ? out.data : "");
    if (out.data) memset(out.data, 0, out.cap);
    memset(tmp, 0, sizeof tmp);
    df_buf_free(&out);
    return k;
}

df_errkind df__tds_login7_parse(const uint8_t *m, size_t n, df__tds_login7 *out, df_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 94) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 is shorter than its fixed part");
    uint32_t total = df_load_le32(m);
    if (total < 94 || total > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 length %u does not match the message", total);
    n = total;
    out->tds_version = df_load_le32(m + 4);
    out->packet_size = df_load_le32(m + 8);
    out->integrated = (m[25] & 0x80) != 0 || df_load_le16(m + 80) != 0;
    out->read_only = (m[26] & 0x20) != 0;
    size_t sspi_ib = df_load_le16(m + 78), sspi_cb = df_load_le16(m + 80);
    if (sspi_ib + sspi_cb > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 SSPI data is out of bounds");
    DF_TRY(field(m, n, 0, false, out->host, sizeof out->host, err));
    DF_TRY(field(m, n, 1, false, out->user, sizeof out->user, err));
    DF_TRY(field(m, n, 2, true, out->password, sizeof out->password, err));
    DF_TRY(field(m, n, 3, false, out->app, sizeof out->app, err));
    DF_TRY(field(m, n, 8, false, out->database, sizeof out->database, err));
    /* FeatureExt: validate the chain when fExtension is set (features themselves are ignored). */
    if (m[27] & 0x10) {
        size_t ib = df_load_le16(m + 56), cb = df_load_le16(m + 58);
        if (cb >= 4 && ib + 4 <= n) {
            size_t p = df_load_le32(m + ib);
            for (int guard = 0; guard < 256; guard++) {
                if (p >= n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 FeatureExt is not terminated");
                if (m[p] == 0xFF) break;
                if (p + 5 > n) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 FeatureExt entry is truncated");
                size_t len = df_load_le32(m + p + 1);
                if (len > n - p - 5) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 FeatureExt entry is out of bounds");
                p += 5 + len;
            }
        } else if (cb) {
            return df_error_set(err, DF_ERR_TDS_PROTOCOL, "LOGIN7 extension pointer is out of bounds");
        }
    }
    return DF_OK;
}

void df__tds_login7_clear(df__tds_login7 *l) {
    volatile char *p = l->password;
    for (size_t i = 0; i < sizeof l->password; i++) p[i] = 0;
}
