/*
 * Server-side replies shared by the unit tests that stand in for a SQL
 * Server on loopback (tests/unit/mssql, tests/unit/load).
 */
#ifndef DF_TDS_TEST_SERVER_H
#define DF_TDS_TEST_SERVER_H

#include <stdint.h>

#include "mssql/tds.h"

/*
 * Reads the client's PRELOGIN and answers that this server does not host
 * the requested instance (INSTOPT = 1, encryption not supported), then
 * waits until the client hangs up and frees `io`.
 */
static inline void df_test_tds_refuse_instance(df__tds_io *io) {
    df_buf msg;
    df_buf_init(&msg, 0);
    uint8_t type, status;
    df__tds_io_read_message(io, &type, &status, &msg, 65536, NULL);
    /* VERSION (6 bytes at 16), ENCRYPTION = not supported (1 byte at 22), INSTOPT = 1 (1 byte at 23). */
    static const uint8_t pre[] = {0, 0, 16, 0, 6, 1, 0, 22, 0, 1, 2, 0, 23, 0, 1, 0xFF,
                                  15, 0, 7, 0xD0, 0, 0, 2, 1};
    df__tds_io_send_message(io, TDS_PKT_REPLY, pre, sizeof pre, NULL);
    df__tds_io_read_message(io, &type, &status, &msg, 65536, NULL); /* until the client hangs up */
    df_buf_free(&msg);
    df__tds_io_free(io);
}

#endif
