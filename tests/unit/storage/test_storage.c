/* Unit tests for src/storage: file and memory inputs, the local store, locations. */
#include "df_test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/storage.h"

/* Creates a fresh temporary directory; the caller removes it with rm_tree. */
static char *make_tmpdir(void) {
    char tmpl[] = "/tmp/dfstorXXXXXX";
    char *d = mkdtemp(tmpl);
    DF_ASSERT(d != NULL);
    return strdup(d);
}

static void write_file(const char *dir, const char *name, const char *content, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    DF_ASSERT(f != NULL);
    DF_ASSERT_EQ_UINT(fwrite(content, 1, len, f), len);
    fclose(f);
}

static void rm_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    DF_ASSERT_EQ_INT(system(cmd), 0);
}

DF_TEST(file_input_reads_views_and_counts) {
    char *dir = make_tmpdir();
    write_file(dir, "a.bin", "0123456789", 10);
    char path[512];
    snprintf(path, sizeof path, "%s/a.bin", dir);
    df_error err_ = {0}, *err = &err_;
    df_input *in;
    DF_ASSERT_OK(df_input_open_file(path, &in, err), err);
    DF_ASSERT_EQ_UINT(in->size, 10);
    char buf[8] = {0};
    DF_ASSERT_OK(df_input_read_at(in, 3, buf, 4, err), err);
    DF_ASSERT(memcmp(buf, "3456", 4) == 0);
    const uint8_t *view;
    DF_ASSERT_OK(in->vt->view_at(in, 8, 2, &view, err), err);
    DF_ASSERT(view != NULL);   /* regular files are mapped */
    DF_ASSERT(memcmp(view, "89", 2) == 0);
    DF_ASSERT_EQ_UINT(in->bytes_read, 6);
    DF_ASSERT_EQ_UINT(in->read_calls, 2);
    DF_ASSERT_KIND(df_input_read_at(in, 8, buf, 3, err), DF_ERR_IO);
    DF_ASSERT(strstr(err->message, "read past end") != NULL);
    DF_ASSERT_KIND(df_input_read_at(in, UINT64_MAX, buf, 1, err), DF_ERR_IO);
    DF_ASSERT_OK(df_input_read_at(in, 10, buf, 0, err), err);
    df_input_close(in);
    rm_tree(dir);
    free(dir);
}

DF_TEST(file_input_empty_missing_and_directory) {
    char *dir = make_tmpdir();
    write_file(dir, "empty", "", 0);
    char path[512];
    snprintf(path, sizeof path, "%s/empty", dir);
    df_error err_ = {0}, *err = &err_;
    df_input *in = (df_input *)1;
    DF_ASSERT_OK(df_input_open_file(path, &in, err), err);
    DF_ASSERT_EQ_UINT(in->size, 0);
    const uint8_t *view;
    DF_ASSERT_OK(in->vt->view_at(in, 0, 0, &view, err), err);
    char b;
    DF_ASSERT_KIND(df_input_read_at(in, 0, &b, 1, err), DF_ERR_IO);
    df_input_close(in);
    snprintf(path, sizeof path, "%s/missing", dir);
    in = (df_input *)1;
    DF_ASSERT_KIND(df_input_open_file(path, &in, err), DF_ERR_NOT_FOUND);
    DF_ASSERT(in == NULL);
    DF_ASSERT_KIND(df_input_open_file(dir, &in, err), DF_ERR_NOT_FILE);
    DF_ASSERT(in == NULL);
    DF_ASSERT_KIND(df_input_open_file("", &in, err), DF_ERR_INVALID_ARGUMENT);
    df_error_clear(err);
    rm_tree(dir);
    free(dir);
}

DF_TEST(file_input_refuses_fifos_and_devices) {
    /*
     * Opening a FIFO for reading blocks until a writer appears: the input
     * must refuse it at once (the test would hang otherwise), as it refuses
     * a character device, which has no size to read up to.
     */
    char *dir = make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/00000000000000000000.json", dir);
    DF_ASSERT_EQ_INT(mkfifo(path, 0644), 0);
    df_error err_ = {0}, *err = &err_;
    df_input *in = (df_input *)1;
    DF_ASSERT_KIND(df_input_open_file(path, &in, err), DF_ERR_NOT_FILE);
    DF_ASSERT(in == NULL);
    DF_ASSERT(strstr(err->message, "FIFO") != NULL);
    DF_ASSERT_KIND(df_input_open_file("/dev/zero", &in, err), DF_ERR_NOT_FILE);
    DF_ASSERT(in == NULL);

    /* Listings see the FIFO without opening it and mark it special; the store refuses to read it. */
    df_store *s;
    DF_ASSERT_OK(df_store_open(dir, NULL, NULL, 0, &s, err), err);
    df_store_entry *e;
    size_t n;
    DF_ASSERT_OK(s->vt->list(s, "", &e, &n, err), err);
    DF_ASSERT_EQ_UINT(n, 1);
    DF_ASSERT(e[0].is_special && !e[0].is_dir);
    DF_ASSERT_EQ_UINT(e[0].size, 0);
    df_store_entries_free(e, n);
    uint8_t *data = (uint8_t *)1;
    size_t len = 1;
    DF_ASSERT_KIND(s->vt->read_all(s, "00000000000000000000.json", 100, &data, &len, err), DF_ERR_NOT_FILE);
    DF_ASSERT(data == NULL && len == 0);
    df_store_close(s);
    df_error_clear(err);
    rm_tree(dir);
    free(dir);
}

DF_TEST(memory_input_reads_and_bounds) {
    static const char data[] = "hello world";
    df_error err_ = {0}, *err = &err_;
    df_input *in;
    DF_ASSERT_OK(df_input_open_memory(data, 11, &in, err), err);
    const uint8_t *view;
    DF_ASSERT_OK(in->vt->view_at(in, 6, 5, &view, err), err);
    DF_ASSERT(memcmp(view, "world", 5) == 0);
    DF_ASSERT_KIND(in->vt->view_at(in, 6, 6, &view, err), DF_ERR_IO);
    DF_ASSERT(view == NULL);
    char b[5];
    DF_ASSERT_OK(df_input_read_at(in, 0, b, 5, err), err);
    DF_ASSERT(memcmp(b, "hello", 5) == 0);
    df_input_close(in);
    DF_ASSERT_OK(df_input_open_memory(NULL, 0, &in, err), err);
    DF_ASSERT_EQ_UINT(in->size, 0);
    df_input_close(in);
    DF_ASSERT_KIND(df_input_open_memory(NULL, 3, &in, err), DF_ERR_INVALID_ARGUMENT);
}

DF_TEST(uri_decode_path_handles_escapes) {
    df_error err_ = {0}, *err = &err_;
    char *out;
    DF_ASSERT_OK(df_uri_decode_path("a%20b%2Fc%3d%25", &out, err), err);
    DF_ASSERT_EQ_STR(out, "a b/c=%");
    df_free(out);
    DF_ASSERT_OK(df_uri_decode_path("x=%C3%A9+y", &out, err), err);
    DF_ASSERT_EQ_STR(out, "x=\xc3\xa9+y");
    df_free(out);
    DF_ASSERT_KIND(df_uri_decode_path("bad%2", &out, err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(out == NULL);
    DF_ASSERT_KIND(df_uri_decode_path("bad%zz", &out, err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT_EQ_INT(err->offset, 3);
    DF_ASSERT_KIND(df_uri_decode_path("nul%00", &out, err), DF_ERR_INVALID_ARGUMENT);
}

DF_TEST(store_lists_sorted_reads_and_checks_existence) {
    char *dir = make_tmpdir();
    write_file(dir, "b.json", "{}", 2);
    write_file(dir, "a.json", "[1,2]", 5);
    char sub[512];
    snprintf(sub, sizeof sub, "%s/_delta_log", dir);
    DF_ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    write_file(sub, "00000000000000000000.json", "abc", 3);

    char uri[600];
    snprintf(uri, sizeof uri, "file://%s/", dir);
    df_error err_ = {0}, *err = &err_;
    df_store *s;
    DF_ASSERT_OK(df_store_open(uri, NULL, NULL, 0, &s, err), err);
    DF_ASSERT_EQ_STR(s->root, dir);

    df_store_entry *e;
    size_t n;
    DF_ASSERT_OK(s->vt->list(s, "", &e, &n, err), err);
    DF_ASSERT_EQ_UINT(n, 3);
    DF_ASSERT_EQ_STR(e[0].path, "_delta_log");
    DF_ASSERT(e[0].is_dir);
    DF_ASSERT_EQ_STR(e[1].path, "a.json");
    DF_ASSERT_EQ_UINT(e[1].size, 5);
    DF_ASSERT_EQ_STR(e[2].path, "b.json");
    df_store_entries_free(e, n);
    DF_ASSERT_OK(s->vt->list(s, "_delta_log", &e, &n, err), err);
    DF_ASSERT_EQ_UINT(n, 1);
    df_store_entries_free(e, n);
    DF_ASSERT_KIND(s->vt->list(s, "nope", &e, &n, err), DF_ERR_NOT_FOUND);
    DF_ASSERT(e == NULL);

    uint8_t *data;
    size_t len;
    DF_ASSERT_OK(s->vt->read_all(s, "_delta_log/00000000000000000000.json", 100, &data, &len, err), err);
    DF_ASSERT_EQ_UINT(len, 3);
    DF_ASSERT_EQ_STR((char *)data, "abc");
    df_free(data);
    DF_ASSERT_KIND(s->vt->read_all(s, "a.json", 4, &data, &len, err), DF_ERR_LIMIT_EXCEEDED);
    DF_ASSERT(data == NULL);
    DF_ASSERT_KIND(s->vt->read_all(s, "zzz", 4, &data, &len, err), DF_ERR_NOT_FOUND);

    bool ex;
    DF_ASSERT_OK(s->vt->exists(s, "a.json", &ex, err), err);
    DF_ASSERT(ex);
    DF_ASSERT_OK(s->vt->exists(s, "a.json/x", &ex, err), err);
    DF_ASSERT(!ex);
    DF_ASSERT_OK(s->vt->exists(s, "./_delta_log", &ex, err), err);
    DF_ASSERT(ex);

    /* Absolute paths and file URIs bypass the root. */
    char abs[600];
    snprintf(abs, sizeof abs, "%s/b.json", dir);
    df_input *in;
    DF_ASSERT_OK(s->vt->open_input(s, abs, &in, err), err);
    DF_ASSERT_EQ_UINT(in->size, 2);
    df_input_close(in);
    df_store_close(s);
    rm_tree(dir);
    free(dir);
}

DF_TEST(store_file_uri_percent_decoding_and_relative_roots) {
    char *dir = make_tmpdir();
    char sub[512];
    snprintf(sub, sizeof sub, "%s/a b", dir);
    DF_ASSERT_EQ_INT(mkdir(sub, 0755), 0);
    write_file(sub, "x=1.txt", "q", 1);
    char uri[600];
    snprintf(uri, sizeof uri, "file:%s/a%%20b", dir);
    df_error err_ = {0}, *err = &err_;
    df_store *s;
    DF_ASSERT_OK(df_store_open(uri, NULL, NULL, 0, &s, err), err);
    bool ex;
    DF_ASSERT_OK(s->vt->exists(s, "x=1.txt", &ex, err), err);
    DF_ASSERT(ex);
    df_store_close(s);

    snprintf(uri, sizeof uri, "file://localhost%s/a%%20b", dir);
    DF_ASSERT_OK(df_store_open(uri, NULL, NULL, 0, &s, err), err);
    df_store_close(s);

    char cwd[512];
    DF_ASSERT(getcwd(cwd, sizeof cwd) != NULL);
    DF_ASSERT_EQ_INT(chdir(dir), 0);
    DF_ASSERT_OK(df_store_open("a b/", NULL, NULL, 0, &s, err), err);
    DF_ASSERT_EQ_STR(s->root, "a b");
    DF_ASSERT_OK(s->vt->exists(s, "x=1.txt", &ex, err), err);
    DF_ASSERT(ex);
    df_store_close(s);
    DF_ASSERT_EQ_INT(chdir(cwd), 0);
    rm_tree(dir);
    free(dir);
}

DF_TEST(store_refuses_remote_schemes_and_bad_uris) {
    df_error err_ = {0}, *err = &err_;
    df_store *s = (df_store *)1;
    DF_ASSERT_KIND(df_store_open("s3://bucket/table", NULL, NULL, 0, &s, err), DF_ERR_DELTA_SOURCE_ENGINE);
    DF_ASSERT_EQ_STR(err->message, "object store scheme `s3` is not supported yet");
    DF_ASSERT(s == NULL);
    DF_ASSERT_KIND(df_store_open("ABFSS://c@a.dfs.core.windows.net/t", NULL, NULL, 0, &s, err),
                   DF_ERR_DELTA_SOURCE_ENGINE);
    DF_ASSERT_EQ_STR(err->message, "object store scheme `abfss` is not supported yet");
    DF_ASSERT_KIND(df_store_open("", NULL, NULL, 0, &s, err), DF_ERR_INVALID_SOURCE_URI);
    DF_ASSERT_KIND(df_store_open("file://otherhost/x", NULL, NULL, 0, &s, err), DF_ERR_INVALID_SOURCE_URI);
    DF_ASSERT_KIND(df_store_open("file:relative", NULL, NULL, 0, &s, err), DF_ERR_INVALID_SOURCE_URI);
    DF_ASSERT_KIND(df_store_open("file:///a%zz", NULL, NULL, 0, &s, err), DF_ERR_INVALID_SOURCE_URI);
    df_error_clear(err);
}
