/*
 * Object stores: random-access reads and listings over local files (and,
 * later, S3-compatible stores), behind one small vtable so the Parquet and
 * Delta readers never see where bytes come from.
 *
 * Locations are URIs: "file:///abs/path", plain "/abs/path" or relative
 * paths for local files.  A store is opened for a root location; paths
 * passed to it are relative to that root ("_delta_log/0000.json").
 */
#ifndef DF_STORAGE_STORAGE_H
#define DF_STORAGE_STORAGE_H

#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* Random-access input                                                       */

typedef struct df_input df_input;
typedef struct df_input_vt {
    /*
     * Reads exactly `len` bytes at `offset` into `dst`.  Reading past the end
     * is an error (DF_ERR_PARQUET_FORMAT is not used here: DF_ERR_IO with a
     * message "read past end").
     */
    df_errkind (*read_at)(df_input *in, uint64_t offset, void *dst, size_t len, df_error *err);
    /*
     * Returns a pointer to `len` bytes at `offset` that stays valid until the
     * input is closed, when the input can do so without copying (memory-mapped
     * files); otherwise *out = NULL and the caller uses read_at.
     */
    df_errkind (*view_at)(df_input *in, uint64_t offset, size_t len, const uint8_t **out, df_error *err);
    void (*close)(df_input *in);
} df_input_vt;

struct df_input {
    const df_input_vt *vt;
    uint64_t size;          /* total bytes */
    /* Counters for scan metrics (relaxed atomics; several readers may share an input). */
    _Atomic uint64_t bytes_read;
    _Atomic uint64_t read_calls;
};

static inline df_errkind df_input_read_at(df_input *in, uint64_t offset, void *dst, size_t len, df_error *err) {
    return in->vt->read_at(in, offset, dst, len, err);
}
static inline void df_input_close(df_input *in) {
    if (in) in->vt->close(in);
}

/* Opens a local file (memory-mapped when possible). */
df_errkind df_input_open_file(const char *path, df_input **out, df_error *err);
/* An input over caller memory (not copied; must outlive the input).  For tests and fuzzers. */
df_errkind df_input_open_memory(const void *data, size_t size, df_input **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Stores                                                                    */

typedef struct df_store_entry {
    char *path;             /* relative to the listed directory, owned */
    uint64_t size;          /* 0 for anything but a regular file */
    bool is_dir;
    bool is_special;        /* neither a regular file nor a directory (a FIFO, socket or device): never readable */
    unsigned mode;          /* the file type bits of st_mode, for messages (df_file_kind_name) */
} df_store_entry;

typedef struct df_store df_store;
typedef struct df_store_vt {
    df_errkind (*open_input)(df_store *s, const char *path, df_input **out, df_error *err);
    /* Reads a whole object (bounded by max_bytes) into a new buffer (free with df_free). */
    df_errkind (*read_all)(df_store *s, const char *path, size_t max_bytes, uint8_t **data, size_t *len, df_error *err);
    /* Lists the direct children of a directory, sorted by path; a missing directory -> DF_ERR_NOT_FOUND. */
    df_errkind (*list)(df_store *s, const char *dir, df_store_entry **entries, size_t *n, df_error *err);
    /* DF_OK and *exists set; errors only for I/O failures. */
    df_errkind (*exists)(df_store *s, const char *path, bool *exists, df_error *err);
    void (*close)(df_store *s);
} df_store_vt;

struct df_store {
    const df_store_vt *vt;
    char *root;             /* normalized root location (for messages; never holds credentials) */
};

/*
 * Opens the store for a table location.  `options` are key/value pairs
 * (storage_options); local stores ignore them.  An unparseable location ->
 * DF_ERR_INVALID_SOURCE_URI; an unsupported scheme -> DF_ERR_DELTA_SOURCE_ENGINE.
 */
df_errkind df_store_open(const char *location, const char *const *option_keys, const char *const *option_values,
                         size_t noptions, df_store **out, df_error *err);
void df_store_close(df_store *s);
void df_store_entries_free(df_store_entry *entries, size_t n);

/*
 * Decodes %XX escapes of a path taken from a Delta log (RFC 2396 URI path);
 * returns a new string or NULL (DF_ERR_INVALID_ARGUMENT for a bad escape).
 */
df_errkind df_uri_decode_path(const char *in, char **out, df_error *err);

#endif
