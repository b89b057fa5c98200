/*
 * Fuzz target: .dfprofile bytes -> ranked model.  Every input must either
 * be rejected with an error or decode to a model that validates,
 * re-encodes to the very same bytes (one encoding per model), and renders
 * its HTML page, terminal views and interactive commands.  Each input is
 * tried twice: as given (the checksum rejects almost every mutation) and
 * with its checksum recomputed, so the section and record parsers and the
 * validation behind the checksum are explored too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static void must(int cond) {
    if (!cond) __builtin_trap();
}

static const char *const COMMANDS[] = {"open semantic:1", "open semantic:2", "open function:2:1", "sort name",
                                       "sort self-cpu", "filter a", "up", "root", "limit 3", "clear", "show"};

static void one(const uint8_t *data, size_t size) {
    df_report_profile *p = NULL;
    df_error err = {0};
    if (df_report_decode_dfprofile(data, size, &p, &err) != DF_OK) {
        must(p == NULL && err.kind != DF_OK);
        df_error_clear(&err);
        return;
    }
    must(df_report_validate(p, NULL) == DF_OK);
    df_buf b;
    df_buf_init(&b, 0);
    must(df_report_encode_dfprofile(p, &b, NULL) == DF_OK);
    must(b.len == size && memcmp(b.data, data, size) == 0);
    df_buf_reset(&b);
    must(df_report_render_html(p, &b, NULL) == DF_OK);
    df_report_inspector *in = NULL;
    df_report_inspect_options o = {.depth = -1};
    must(df_report_inspector_create(p, &o, &in, NULL) == DF_OK);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
        bool quit;
        df_buf_reset(&b);
        df_report_inspector_command(in, COMMANDS[i], strlen(COMMANDS[i]), &b, &quit, NULL);
    }
    df_report_inspector_destroy(in);
    df_buf_free(&b);
    df_report_profile_destroy(p);
}

/* The file with its checksum (bytes 56..63, FNV-1a 64 of every other byte) recomputed. */
static uint8_t *resealed(const uint8_t *data, size_t size) {
    uint8_t *c = malloc(size);
    if (!c) return NULL;
    memcpy(c, data, size);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < size; i++)
        if (i < 56 || i >= 64) h = (h ^ c[i]) * 0x100000001b3ULL;
    for (int i = 0; i < 8; i++) c[56 + i] = (uint8_t)(h >> (8 * i));
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size);
    if (size >= 64) {
        uint8_t *c = resealed(data, size);
        if (c) one(c, size);
        free(c);
    }
    return 0;
}
