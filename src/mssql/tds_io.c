/*
 * TDS transport: a socket, an optional TLS layer and the packet framing,
 * shared by the client and the loopback peer.
 *
 * Layers, bottom up:
 *   socket   non-blocking fd; every wait is a poll() in slices of at most
 *            100 ms so a deadline (timeout_ms) and a cancel flag are honoured.
 *   TLS      OpenSSL with two memory BIOs, so the same engine serves the
 *            three shapes TDS uses: handshake records tunnelled as PRELOGIN
 *            packet payloads (TDS 7.x), records straight on the socket
 *            (after that handshake, and for TDS 8.0 "strict"), and dropping
 *            TLS after LOGIN7 (login-only encryption).  Cipher text moves
 *            between the BIOs and the socket here, never inside OpenSSL.
 *   plain    a read buffer of decrypted (or plain) bytes, and a send buffer
 *            in which outgoing packets are built in place and flushed in
 *            large writes.
 *   packets  8-byte headers (big-endian length), messages split at the
 *            negotiated packet size with EOM on the last packet.
 */
#include "mssql/tds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define RBUF_CAP (64u * 1024u)
#define SBUF_CAP (256u * 1024u)
/* Packets per vectored send: a header and a body each (IOV_MAX is 1024 on Linux). */
#define ZC_PACKETS 255

struct df__tds_io {
    int fd;                     /* connected socket (owned), non-blocking */
    uint32_t timeout_ms;        /* per blocking operation; 0 = none */
    _Atomic int *cancel;        /* optional flag polled while waiting */
    uint32_t packet_size;       /* outgoing packet size */
    uint16_t spid;              /* written into outgoing headers */
    uint8_t packet_id;          /* incremented per packet sent */
    /* TLS */
    SSL_CTX *ctx;               /* owned while TLS was started */
    SSL *ssl;                   /* owns rbio and wbio */
    BIO *rbio;                  /* cipher text received, for OpenSSL to read */
    BIO *wbio;                  /* cipher text OpenSSL produced, to be sent */
    bool tls_on;                /* records flow raw on the socket */
    char tls_version[16];       /* negotiated protocol name */
    char alpn[16];              /* negotiated ALPN or "" */
    /* plaintext read buffer */
    uint8_t *rbuf;              /* RBUF_CAP bytes */
    size_t rpos, rlen;          /* unread bytes are rbuf[rpos, rlen) */
    /* send buffer with packets built in place */
    uint8_t *sbuf;              /* sbuf_cap bytes */
    size_t sbuf_cap;            /* >= 2 packets */
    size_t slen;                /* bytes of complete packets waiting to be sent */
    bool streaming;             /* a streamed message is open */
    uint8_t stype;              /* its packet type */
    size_t pkt_start;           /* offset of the open packet's header in sbuf */
    uint64_t stream_bytes;      /* payload bytes of the open stream */
    uint8_t (*zc_hdr)[8];       /* headers of packets sent straight from the caller's buffer (ZC_PACKETS) */
};

/* ------------------------------------------------------------------------ */
/* Socket                                                                    */

df_errkind df__tds_io_new(int fd, uint32_t timeout_ms, df__tds_io **out, df_error *err) {
    *out = NULL;
    df__tds_io *io = df_calloc(1, sizeof *io);
    if (!io) {
        close(fd);
        return DF_OOM(err);
    }
    io->fd = fd;
    io->timeout_ms = timeout_ms;
    io->packet_size = TDS_DEFAULT_PACKET;
    io->rbuf = df_malloc(RBUF_CAP);
    io->sbuf_cap = SBUF_CAP;
    io->sbuf = df_malloc(io->sbuf_cap);
    if (!io->rbuf || !io->sbuf) {
        df__tds_io_free(io);
        return DF_OOM(err);
    }
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        df__tds_io_free(io);
        return df_error_set(err, DF_ERR_IO, "cannot make the socket non-blocking");
    }
    *out = io;
    return DF_OK;
}

void df__tds_io_free(df__tds_io *io) {
    if (!io) return;
    if (io->fd >= 0) close(io->fd);
    if (io->ssl) SSL_free(io->ssl);
    if (io->ctx) SSL_CTX_free(io->ctx);
    df_free(io->rbuf);
    df_free(io->sbuf);
    df_free(io->zc_hdr);
    df_free(io);
}

void df__tds_io_set_timeout(df__tds_io *io, uint32_t timeout_ms) { io->timeout_ms = timeout_ms; }
void df__tds_io_set_cancel(df__tds_io *io, _Atomic int *cancel) { io->cancel = cancel; }
uint32_t df__tds_io_packet_size(const df__tds_io *io) { return io->packet_size; }
void df__tds_io_set_spid(df__tds_io *io, uint16_t spid) { io->spid = spid; }
int df__tds_io_fd(const df__tds_io *io) { return io->fd; }
bool df__tds_io_tls_active(const df__tds_io *io) { return io->tls_on; }
const char *df__tds_io_tls_version(const df__tds_io *io) { return io->tls_version; }
const char *df__tds_io_tls_alpn(const df__tds_io *io) { return io->alpn; }

void df__tds_io_set_packet_size(df__tds_io *io, uint32_t size) {
    if (size < TDS_MIN_PACKET) size = TDS_MIN_PACKET;
    if (size > TDS_MAX_PACKET) size = TDS_MAX_PACKET;
    io->packet_size = size;
}

/* Waits until the socket is ready for `events`, honouring deadline and cancel flag. */
static df_errkind sock_wait(df__tds_io *io, short events, uint64_t deadline, df_error *err) {
    for (;;) {
        if (io->cancel && atomic_load(io->cancel))
            return df_error_set(err, DF_ERR_CANCELLED, "the operation was cancelled");
        int slice = 100;
        if (deadline) {
            uint64_t now = df_now_ns();
            if (now >= deadline) return df_error_set(err, DF_ERR_TIMEOUT, "SQL Server did not answer in time");
            uint64_t left_ms = (deadline - now) / 1000000u + 1;
            if (left_ms < (uint64_t)slice) slice = (int)left_ms;
        }
        struct pollfd p = {.fd = io->fd, .events = events};
        int r = poll(&p, 1, slice);
        if (r > 0) return DF_OK;
        if (r < 0 && errno != EINTR) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "poll failed: %s", strerror(errno));
    }
}

static uint64_t deadline_of(const df__tds_io *io) {
    return io->timeout_ms ? df_now_ns() + (uint64_t)io->timeout_ms * 1000000u : 0;
}

/*
 * Sends every byte of iov[0..n) (the array is consumed: entries are
 * advanced in place on partial writes), waiting on POLLOUT until the
 * connection's deadline; progress resets the inactivity deadline.
 */
static df_errkind sock_writev_all(df__tds_io *io, struct iovec *iov, int n, df_error *err) {
    uint64_t deadline = deadline_of(io);
    while (n > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(io->fd, &mh, MSG_NOSIGNAL);
        if (w > 0) {
            size_t left = (size_t)w;
            while (n > 0 && left >= iov->iov_len) {
                left -= iov->iov_len;
                iov++;
                n--;
            }
            if (left) {
                iov->iov_base = (uint8_t *)iov->iov_base + left;
                iov->iov_len -= left;
            }
            deadline = deadline_of(io);
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            DF_TRY(sock_wait(io, POLLOUT, deadline, err));
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "the connection was closed while sending (%s)",
                            w < 0 ? strerror(errno) : "no progress");
    }
    return DF_OK;
}

/* Sends every byte of p[0..n), waiting on POLLOUT (one-element sock_writev_all). */
static df_errkind sock_write_all(df__tds_io *io, const uint8_t *p, size_t n, df_error *err) {
    struct iovec one = {.iov_base = (void *)(uintptr_t)p, .iov_len = n};
    return sock_writev_all(io, &one, n > 0 ? 1 : 0, err);
}

/* Reads at least one byte from the socket into p; EOF is CONNECTION_LOST. */
static df_errkind sock_read_some(df__tds_io *io, uint8_t *p, size_t cap, size_t *got, df_error *err) {
    uint64_t deadline = deadline_of(io);
    for (;;) {
        ssize_t r = recv(io->fd, p, cap, 0);
        if (r > 0) {
            *got = (size_t)r;
            return DF_OK;
        }
        if (r == 0) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "the connection was closed by the other side");
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            DF_TRY(sock_wait(io, POLLIN, deadline, err));
            continue;
        }
        if (errno == EINTR) continue;
        return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "receive failed: %s", strerror(errno));
    }
}

/* ------------------------------------------------------------------------ */
/* TLS plumbing                                                              */

static df_errkind tls_fail(df_error *err, const char *what) {
    unsigned long e = ERR_get_error();
    char buf[200] = "";
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return df_error_set(err, DF_ERR_MSSQL_TLS, "TLS %s failed%s%s", what, buf[0] ? ": " : "", buf);
}

/* Sends whatever cipher text OpenSSL has produced, raw on the socket. */
static df_errkind flush_wbio_raw(df__tds_io *io, df_error *err) {
    char tmp[16384];
    int n;
    while ((n = BIO_read(io->wbio, tmp, sizeof tmp)) > 0) DF_TRY(sock_write_all(io, (const uint8_t *)tmp, (size_t)n, err));
    return DF_OK;
}

/* Feeds buffered plaintext-side bytes (read ahead before TLS started) to OpenSSL. */
static void move_rbuf_to_rbio(df__tds_io *io) {
    if (io->rlen > io->rpos) BIO_write(io->rbio, io->rbuf + io->rpos, (int)(io->rlen - io->rpos));
    io->rpos = io->rlen = 0;
}

/* Reads cipher text from the socket into OpenSSL. */
static df_errkind fill_rbio_raw(df__tds_io *io, df_error *err) {
    uint8_t tmp[16384];
    size_t got = 0;
    DF_TRY(sock_read_some(io, tmp, sizeof tmp, &got, err));
    BIO_write(io->rbio, tmp, (int)got);
    return DF_OK;
}

/* Plain (pre-TLS) buffered exact read; used for packets during the wrapped handshake. */
static df_errkind plain_read_exact(df__tds_io *io, uint8_t *dst, size_t n, df_error *err);

/* Sends pending handshake cipher text as one PRELOGIN message. */
static df_errkind flush_wbio_wrapped(df__tds_io *io, df_error *err) {
    df_buf b;
    df_buf_init(&b, 1u << 20);
    char tmp[16384];
    int n;
    df_errkind k = DF_OK;
    while (k == DF_OK && (n = BIO_read(io->wbio, tmp, sizeof tmp)) > 0) k = df_buf_append(&b, tmp, (size_t)n, err);
    if (k == DF_OK && b.len > 0) k = df__tds_io_send_message(io, TDS_PKT_PRELOGIN, b.data, b.len, err);
    df_buf_free(&b);
    return k;
}

/* Reads one handshake packet (PRELOGIN or, from old servers, REPLY) and feeds its payload to OpenSSL. */
static df_errkind fill_rbio_wrapped(df__tds_io *io, df_error *err) {
    uint8_t hdr[8];
    DF_TRY(plain_read_exact(io, hdr, 8, err));
    uint16_t len = (uint16_t)(hdr[2] << 8 | hdr[3]);
    if ((hdr[0] != TDS_PKT_PRELOGIN && hdr[0] != TDS_PKT_REPLY) || len < 8 || len > TDS_MAX_PACKET)
        return df_error_set(err, DF_ERR_MSSQL_TLS, "unexpected packet (type 0x%02X, length %u) during the TLS handshake",
                            hdr[0], len);
    uint8_t body[TDS_MAX_PACKET];
    DF_TRY(plain_read_exact(io, body, (size_t)len - 8, err));
    BIO_write(io->rbio, body, (int)len - 8);
    return DF_OK;
}

static const unsigned char alpn_tds8[] = {7, 't', 'd', 's', '/', '8', '.', '0'};

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    unsigned char *o;
    if (SSL_select_next_proto(&o, outlen, alpn_tds8, sizeof alpn_tds8, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = o;
    return SSL_TLSEXT_ERR_OK;
}

/* Builds the SSL_CTX and SSL for one side; verification settings for clients. */
static df_errkind tls_setup(df__tds_io *io, const df__tds_tls_cfg *cfg, df_error *err) {
    io->ctx = SSL_CTX_new(cfg->server ? TLS_server_method() : TLS_client_method());
    if (!io->ctx) return tls_fail(err, "context setup");
    SSL_CTX_set_min_proto_version(io->ctx, TLS1_2_VERSION);
    if (!cfg->strict) SSL_CTX_set_max_proto_version(io->ctx, cfg->max_version_7x ? cfg->max_version_7x : TLS1_2_VERSION);
    if (cfg->server) {
        if (SSL_CTX_use_certificate_chain_file(io->ctx, cfg->cert_file) != 1 ||
            SSL_CTX_use_PrivateKey_file(io->ctx, cfg->key_file, SSL_FILETYPE_PEM) != 1)
            return tls_fail(err, "certificate loading");
        SSL_CTX_set_num_tickets(io->ctx, 0);
        if (cfg->strict) SSL_CTX_set_alpn_select_cb(io->ctx, alpn_select, NULL);
    } else if (cfg->verify) {
        SSL_CTX_set_verify(io->ctx, SSL_VERIFY_PEER, NULL);
        int ok = cfg->ca_file ? (SSL_CTX_load_verify_locations(io->ctx, cfg->ca_file, NULL) == 1)
                              : (SSL_CTX_set_default_verify_paths(io->ctx) == 1);
        if (!ok) return tls_fail(err, "trust store loading");
    } else {
        SSL_CTX_set_verify(io->ctx, SSL_VERIFY_NONE, NULL);
    }
    io->ssl = SSL_new(io->ctx);
    io->rbio = BIO_new(BIO_s_mem());
    io->wbio = BIO_new(BIO_s_mem());
    if (!io->ssl || !io->rbio || !io->wbio) {
        BIO_free(io->rbio);
        BIO_free(io->wbio);
        io->rbio = io->wbio = NULL;
        return tls_fail(err, "session setup");
    }
    SSL_set_bio(io->ssl, io->rbio, io->wbio);
    if (cfg->server) {
        SSL_set_accept_state(io->ssl);
        return DF_OK;
    }
    SSL_set_connect_state(io->ssl);
    if (cfg->strict && SSL_set_alpn_protos(io->ssl, alpn_tds8, sizeof alpn_tds8) != 0) return tls_fail(err, "ALPN setup");
    const char *host = cfg->host ? cfg->host : "";
    unsigned char ipbuf[16];
    bool is_ip = inet_pton(AF_INET, host, ipbuf) == 1 || inet_pton(AF_INET6, host, ipbuf) == 1;
    if (!is_ip && host[0]) SSL_set_tlsext_host_name(io->ssl, host);
    if (cfg->verify && host[0]) {
        X509_VERIFY_PARAM *param = SSL_get0_param(io->ssl);
        if (is_ip) {
            if (X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1) return tls_fail(err, "host-name check setup");
        } else {
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            if (X509_VERIFY_PARAM_set1_host(param, host, 0) != 1) return tls_fail(err, "host-name check setup");
        }
    }
    return DF_OK;
}

df_errkind df__tds_io_tls_start(df__tds_io *io, const df__tds_tls_cfg *cfg, df__tds_tls_wrap wrap, df_error *err) {
    if (io->ssl) return df_error_set(err, DF_ERR_INTERNAL, "TLS already started on this connection");
    DF_TRY(tls_setup(io, cfg, err));
    bool wrapped = wrap == TDS_TLS_WRAPPED;
    if (!wrapped) move_rbuf_to_rbio(io);
    for (;;) {
        ERR_clear_error();
        int r = SSL_do_handshake(io->ssl);
        if (wrapped) DF_TRY(flush_wbio_wrapped(io, err));
        else DF_TRY(flush_wbio_raw(io, err));
        if (r == 1) break;
        int e = SSL_get_error(io->ssl, r);
        if (e == SSL_ERROR_WANT_READ) {
            df_errkind k = wrapped ? fill_rbio_wrapped(io, err) : fill_rbio_raw(io, err);
            if (k == DF_ERR_MSSQL_CONNECTION_LOST)
                return df_error_set(err, DF_ERR_MSSQL_TLS, "the connection closed during the TLS handshake");
            DF_TRY(k);
            continue;
        }
        long vr = SSL_get_verify_result(io->ssl);
        if (!cfg->server && cfg->verify && vr != X509_V_OK) {
            df_error_set(err, DF_ERR_MSSQL_TLS, "server certificate validation failed: %s",
                         X509_verify_cert_error_string(vr));
            /* The client names the connection-string options that relax the check (it knows them). */
            df_error_set_subkind(err, DF_ERR_MSSQL_TLS_CERTIFICATE);
            return DF_ERR_MSSQL_TLS;
        }
        return tls_fail(err, "handshake");
    }
    if (wrapped) move_rbuf_to_rbio(io);
    io->tls_on = true;
    snprintf(io->tls_version, sizeof io->tls_version, "%s", SSL_get_version(io->ssl));
    const unsigned char *a = NULL;
    unsigned alen = 0;
    SSL_get0_alpn_selected(io->ssl, &a, &alen);
    if (alen >= sizeof io->alpn) alen = sizeof io->alpn - 1;
    if (a) memcpy(io->alpn, a, alen);
    io->alpn[alen] = '\0';
    if (cfg->strict && !cfg->server && strcmp(io->alpn, "tds/8.0") != 0)
        return df_error_set(err, DF_ERR_MSSQL_TLS, "the server did not accept ALPN tds/8.0 in strict mode");
    return DF_OK;
}

void df__tds_io_tls_drop(df__tds_io *io) {
    io->tls_on = false;
}

/* ------------------------------------------------------------------------ */
/* Plain byte layer                                                          */

/* Sends bytes through TLS when active, else raw. */
static df_errkind send_bytes(df__tds_io *io, const uint8_t *p, size_t n, df_error *err) {
    if (!io->tls_on) return sock_write_all(io, p, n, err);
    while (n > 0) {
        ERR_clear_error();
        int chunk = n > (1u << 30) ? (1 << 30) : (int)n;
        int w = SSL_write(io->ssl, p, chunk);
        if (w <= 0) return tls_fail(err, "write");
        DF_TRY(flush_wbio_raw(io, err));
        p += w;
        n -= (size_t)w;
    }
    return DF_OK;
}

/* Refills rbuf with at least one byte (decrypting when TLS is on). */
static df_errkind fill_rbuf(df__tds_io *io, df_error *err) {
    if (io->rpos == io->rlen) io->rpos = io->rlen = 0;
    if (io->rpos > 0 && io->rlen > RBUF_CAP / 2) {
        memmove(io->rbuf, io->rbuf + io->rpos, io->rlen - io->rpos);
        io->rlen -= io->rpos;
        io->rpos = 0;
    }
    size_t room = RBUF_CAP - io->rlen;
    if (!io->tls_on) {
        size_t got = 0;
        DF_TRY(sock_read_some(io, io->rbuf + io->rlen, room, &got, err));
        io->rlen += got;
        return DF_OK;
    }
    for (;;) {
        ERR_clear_error();
        int r = SSL_read(io->ssl, io->rbuf + io->rlen, (int)room);
        if (r > 0) {
            io->rlen += (size_t)r;
            return DF_OK;
        }
        int e = SSL_get_error(io->ssl, r);
        if (e == SSL_ERROR_WANT_READ) {
            DF_TRY(flush_wbio_raw(io, err));
            DF_TRY(fill_rbio_raw(io, err));
            continue;
        }
        if (e == SSL_ERROR_ZERO_RETURN)
            return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "the other side closed the TLS session");
        return tls_fail(err, "read");
    }
}

static df_errkind read_exact(df__tds_io *io, uint8_t *dst, size_t n, df_error *err) {
    while (n > 0) {
        if (io->rpos == io->rlen) DF_TRY(fill_rbuf(io, err));
        size_t take = DF_MIN(n, io->rlen - io->rpos);
        memcpy(dst, io->rbuf + io->rpos, take);
        io->rpos += take;
        dst += take;
        n -= take;
    }
    return DF_OK;
}

static df_errkind plain_read_exact(df__tds_io *io, uint8_t *dst, size_t n, df_error *err) {
    return read_exact(io, dst, n, err);
}

df_errkind df__tds_io_peek_byte(df__tds_io *io, uint8_t *b, df_error *err) {
    if (io->rpos == io->rlen) DF_TRY(fill_rbuf(io, err));
    *b = io->rbuf[io->rpos];
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Packets out                                                               */

static void put_header(df__tds_io *io, uint8_t *h, uint8_t type, uint8_t status, size_t len) {
    h[0] = type;
    h[1] = status;
    h[2] = (uint8_t)(len >> 8);
    h[3] = (uint8_t)len;
    h[4] = (uint8_t)(io->spid >> 8);
    h[5] = (uint8_t)io->spid;
    h[6] = ++io->packet_id;
    h[7] = 0;
}

static df_errkind flush_sbuf(df__tds_io *io, df_error *err) {
    if (io->slen == 0) return DF_OK;
    df_errkind k = send_bytes(io, io->sbuf, io->slen, err);
    io->slen = 0;
    return k;
}

/* Makes sure sbuf has room for one more whole packet after slen. */
static df_errkind sbuf_room(df__tds_io *io, df_error *err) {
    if (io->sbuf_cap < 2u * io->packet_size) {
        DF_TRY(flush_sbuf(io, err));
        uint8_t *n = df_realloc(io->sbuf, 2u * io->packet_size);
        if (!n) return DF_OOM(err);
        io->sbuf = n;
        io->sbuf_cap = 2u * io->packet_size;
    }
    if (io->slen + io->packet_size > io->sbuf_cap) DF_TRY(flush_sbuf(io, err));
    return DF_OK;
}

df_errkind df__tds_io_stream_begin(df__tds_io *io, uint8_t type, df_error *err) {
    if (io->streaming) return df_error_set(err, DF_ERR_INTERNAL, "a message is already being written");
    DF_TRY(sbuf_room(io, err));
    io->streaming = true;
    io->stype = type;
    io->pkt_start = io->slen;
    io->stream_bytes = 0;
    return DF_OK;
}

uint64_t df__tds_io_stream_bytes(const df__tds_io *io) { return io->stream_bytes; }

/* Copies payload into the open packet of sbuf, closing full packets and flushing as sbuf fills. */
static df_errkind stream_copy(df__tds_io *io, const uint8_t *p, size_t len, df_error *err) {
    size_t body = io->packet_size - 8;
    while (len > 0) {
        size_t used = io->slen - io->pkt_start; /* payload bytes in the open packet */
        if (used == body) {
            /* The open packet is full and more data follows: close it without EOM. */
            put_header(io, io->sbuf + io->pkt_start, io->stype, 0, io->packet_size);
            io->slen = io->pkt_start + io->packet_size;
            DF_TRY(sbuf_room(io, err));
            io->pkt_start = io->slen;
            used = 0;
        }
        size_t take = DF_MIN(len, body - used);
        memcpy(io->sbuf + io->pkt_start + 8 + used, p, take);
        io->slen = io->pkt_start + used + take; /* slen tracks payload end minus header during a stream */
        p += take;
        len -= take;
        io->stream_bytes += take;
    }
    return DF_OK;
}

/*
 * Large plaintext writes skip the copy into sbuf: the open packet is
 * topped up from `p` and closed, then whole packets go out as (header,
 * slice of p) pairs in vectored sends, and only the tail (1..body bytes,
 * the new open packet that may still need EOM) is copied into sbuf.
 * Packet boundaries, ids and bytes on the wire are exactly those of
 * stream_copy.
 */
static df_errkind stream_zero_copy(df__tds_io *io, const uint8_t *p, size_t len, df_error *err) {
    size_t body = io->packet_size - 8;
    size_t used = io->slen - io->pkt_start;
    size_t take = DF_MIN(len, body - used);
    DF_TRY(stream_copy(io, p, take, err)); /* fills the open packet; never closes it */
    p += take;
    len -= take;
    /* The open packet is full and more follows (len > body): close it and send it with what sbuf holds. */
    put_header(io, io->sbuf + io->pkt_start, io->stype, 0, io->packet_size);
    io->slen = io->pkt_start + io->packet_size;
    struct iovec iov[1 + 2 * ZC_PACKETS];
    int n = 0;
    iov[n++] = (struct iovec){io->sbuf, io->slen};
    while (len > body) {
        int k = 0;
        while (len > body && k < ZC_PACKETS) {
            put_header(io, io->zc_hdr[k], io->stype, 0, io->packet_size);
            iov[n++] = (struct iovec){io->zc_hdr[k], 8};
            iov[n++] = (struct iovec){(void *)p, body};
            p += body;
            len -= body;
            io->stream_bytes += body;
            k++;
        }
        df_errkind e = sock_writev_all(io, iov, n, err);
        io->slen = io->pkt_start = 0;
        DF_TRY(e);
        n = 0;
    }
    return stream_copy(io, p, len, err); /* 1..body bytes: the new open packet */
}

df_errkind df__tds_io_stream_write(df__tds_io *io, const void *data, size_t len, df_error *err) {
    size_t body = io->packet_size - 8;
    /* Worth it when at least a few whole packets can leave without the copy. */
    if (!io->tls_on && len >= 4 * body + (body - (io->slen - io->pkt_start))) {
        if (!io->zc_hdr && !(io->zc_hdr = df_malloc(ZC_PACKETS * sizeof *io->zc_hdr))) return DF_OOM(err);
        return stream_zero_copy(io, data, len, err);
    }
    return stream_copy(io, data, len, err);
}

df_errkind df__tds_io_stream_end(df__tds_io *io, bool ignore, df_error *err) {
    if (!io->streaming) return df_error_set(err, DF_ERR_INTERNAL, "no message is being written");
    size_t used = io->slen - io->pkt_start;
    put_header(io, io->sbuf + io->pkt_start, io->stype, (uint8_t)(TDS_ST_EOM | (ignore ? TDS_ST_IGNORE : 0)), used + 8);
    io->slen = io->pkt_start + used + 8;
    io->streaming = false;
    return flush_sbuf(io, err);
}

df_errkind df__tds_io_send_message(df__tds_io *io, uint8_t type, const void *data, size_t len, df_error *err) {
    DF_TRY(df__tds_io_stream_begin(io, type, err));
    df_errkind k = df__tds_io_stream_write(io, data, len, err);
    if (k != DF_OK) {
        io->streaming = false;
        io->slen = 0;
        return k;
    }
    return df__tds_io_stream_end(io, false, err);
}

/* ------------------------------------------------------------------------ */
/* Packets in                                                                */

df_errkind df__tds_io_read_packet(df__tds_io *io, uint8_t *type, uint8_t *status, df_buf *payload,
                                  uint32_t max_size, df_error *err) {
    uint8_t h[8];
    DF_TRY(read_exact(io, h, 8, err));
    size_t len = (size_t)h[2] << 8 | h[3];
    if (len < 8 || len > max_size)
        return df_error_set(err, DF_ERR_TDS_PROTOCOL, "invalid packet length %zu (type 0x%02X)", len, h[0]);
    *type = h[0];
    *status = h[1];
    DF_TRY(df_buf_reserve(payload, len - 8 + 1, err));
    DF_TRY(read_exact(io, (uint8_t *)payload->data + payload->len, len - 8, err));
    payload->len += len - 8;
    payload->data[payload->len] = '\0';
    return DF_OK;
}

df_errkind df__tds_io_read_message(df__tds_io *io, uint8_t *type, uint8_t *status, df_buf *msg,
                                   size_t max_bytes, df_error *err) {
    df_buf_reset(msg);
    bool first = true;
    for (;;) {
        uint8_t t = 0, st = 0;
        DF_TRY(df__tds_io_read_packet(io, &t, &st, msg, TDS_MAX_PACKET, err));
        if (first) *type = t;
        first = false;
        *status = st;
        if (msg->len > max_bytes)
            return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "TDS message exceeds %zu bytes", max_bytes);
        if (st & TDS_ST_EOM) return DF_OK;
    }
}
