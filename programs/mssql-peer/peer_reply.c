/*
 * Reply token writers: DONE, ERROR/INFO, ENVCHANGE, LOGINACK,
 * RETURNSTATUS, and sending a reply message with the configured packet
 * splitting and delay faults (a delay watches the socket so an ATTENTION
 * that arrives meanwhile cancels the reply, as SQL Server does).
 */
#include "peer.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>

void peer_reply_reset(peer_conn *c) { df_buf_reset(&c->reply); }

df_errkind peer_done(peer_conn *c, uint8_t token, uint16_t status, uint16_t curcmd, uint64_t rows) {
    uint8_t t[13];
    if (c->in_rpc && token == TDS_TOK_DONE) {
        token = TDS_TOK_DONEINPROC;
        status |= TDS_DONE_MORE;
    }
    t[0] = token;
    df_store_le16(t + 1, status);
    df_store_le16(t + 3, curcmd);
    df_store_le64(t + 5, rows);
    return df_buf_append(&c->reply, t, sizeof t, NULL);
}

df_errkind peer_error(peer_conn *c, uint8_t token, int32_t number, uint8_t state, uint8_t cls, const char *fmt, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    df_buf body;
    df_buf_init(&body, 0);
    df__tds_put_u32(&body, (uint32_t)number, NULL);
    df__tds_put_u8(&body, state, NULL);
    df__tds_put_u8(&body, cls, NULL);
    df__tds_put_usvarchar(&body, text, NULL);
    df__tds_put_bvarchar(&body, "DFPEER", NULL);
    df__tds_put_bvarchar(&body, "", NULL);
    df_errkind k = df__tds_put_u32(&body, 1, NULL);
    if (k == DF_OK) k = df__tds_put_u8(&c->reply, token, NULL);
    if (k == DF_OK) k = df__tds_put_u16(&c->reply, (uint16_t)body.len, NULL);
    if (k == DF_OK) k = df_buf_append(&c->reply, body.data, body.len, NULL);
    df_buf_free(&body);
    if (token == TDS_TOK_ERROR) peer_trace(c->cfg, c->spid, "error %d: %s", number, text);
    return k;
}

df_errkind peer_envchange_str(peer_conn *c, uint8_t type, const char *newv, const char *oldv) {
    df_buf body;
    df_buf_init(&body, 0);
    df__tds_put_u8(&body, type, NULL);
    df__tds_put_bvarchar(&body, newv, NULL);
    df_errkind k = df__tds_put_bvarchar(&body, oldv, NULL);
    if (k == DF_OK) k = df__tds_put_u8(&c->reply, TDS_TOK_ENVCHANGE, NULL);
    if (k == DF_OK) k = df__tds_put_u16(&c->reply, (uint16_t)body.len, NULL);
    if (k == DF_OK) k = df_buf_append(&c->reply, body.data, body.len, NULL);
    df_buf_free(&body);
    return k;
}

df_errkind peer_envchange_bytes(peer_conn *c, uint8_t type, const uint8_t *newv, uint8_t nlen, const uint8_t *oldv,
                                uint8_t olen) {
    uint8_t t[3 + 1 + 1 + 255 + 1 + 255];
    size_t o = 3;
    t[o++] = type;
    t[o++] = nlen;
    if (nlen) memcpy(t + o, newv, nlen);
    o += nlen;
    t[o++] = olen;
    if (olen) memcpy(t + o, oldv, olen);
    o += olen;
    t[0] = TDS_TOK_ENVCHANGE;
    df_store_le16(t + 1, (uint16_t)(o - 3));
    return df_buf_append(&c->reply, t, o, NULL);
}

df_errkind peer_loginack(peer_conn *c, uint32_t tds_version) {
    df_buf body;
    df_buf_init(&body, 0);
    df__tds_put_u8(&body, 1, NULL);
    uint8_t v[4] = {(uint8_t)(tds_version >> 24), (uint8_t)(tds_version >> 16), (uint8_t)(tds_version >> 8), (uint8_t)tds_version};
    df_buf_append(&body, v, 4, NULL);
    df__tds_put_bvarchar(&body, "Microsoft SQL Server", NULL);
    uint8_t pv[4] = {15, 0, 0x07, 0xD0}; /* 15.0.2000 */
    df_errkind k = df_buf_append(&body, pv, 4, NULL);
    if (k == DF_OK) k = df__tds_put_u8(&c->reply, TDS_TOK_LOGINACK, NULL);
    if (k == DF_OK) k = df__tds_put_u16(&c->reply, (uint16_t)body.len, NULL);
    if (k == DF_OK) k = df_buf_append(&c->reply, body.data, body.len, NULL);
    df_buf_free(&body);
    return k;
}

df_errkind peer_returnstatus(peer_conn *c, int32_t status) {
    uint8_t t[5] = {TDS_TOK_RETURNSTATUS};
    df_store_le32(t + 1, (uint32_t)status);
    return df_buf_append(&c->reply, t, 5, NULL);
}

/*
 * Sleeps up to ms while watching for an ATTENTION packet.  Returns true if
 * one arrived (it has been consumed).
 */
static bool delay_watching(peer_conn *c, uint32_t ms) {
    uint64_t end = df_now_ns() + (uint64_t)ms * 1000000u;
    while (df_now_ns() < end) {
        struct pollfd p = {.fd = df__tds_io_fd(c->io), .events = POLLIN};
        int left = (int)((end - df_now_ns()) / 1000000u) + 1;
        if (poll(&p, 1, left > 50 ? 50 : left) > 0) {
            uint8_t type, status;
            df_buf tmp;
            df_buf_init(&tmp, 0);
            df_errkind k = df__tds_io_read_packet(c->io, &type, &status, &tmp, TDS_MAX_PACKET, NULL);
            df_buf_free(&tmp);
            if (k != DF_OK) { c->closing = true; return true; }
            if (type == TDS_PKT_ATTENTION) return true;
        }
    }
    return false;
}

df_errkind peer_flush(peer_conn *c, df_error *err) {
    if (c->cfg->delay_ms && delay_watching(c, c->cfg->delay_ms)) {
        peer_reply_reset(c);
        if (c->closing) return DF_OK;
        peer_trace(c->cfg, c->spid, "attention during delay");
        peer_done(c, TDS_TOK_DONE, TDS_DONE_ATTN, 0, 0);
    }
    uint32_t saved = df__tds_io_packet_size(c->io);
    if (c->cfg->reply_packet_size) df__tds_io_set_packet_size(c->io, c->cfg->reply_packet_size);
    df_errkind k = df__tds_io_send_message(c->io, TDS_PKT_REPLY, c->reply.data ? c->reply.data : "", c->reply.len, err);
    df__tds_io_set_packet_size(c->io, saved);
    peer_reply_reset(c);
    return k;
}

void peer_trace(peer_config *cfg, int spid, const char *fmt, ...) {
    if (!cfg->trace) return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&cfg->trace_lock);
    fprintf(cfg->trace, "[%d] ", spid);
    vfprintf(cfg->trace, fmt, ap);
    fputc('\n', cfg->trace);
    fflush(cfg->trace);
    pthread_mutex_unlock(&cfg->trace_lock);
    va_end(ap);
}
