/*
 * The .dfprofile artifact and the validation invariants: canonical round
 * trips (bytes, HTML and terminal output identical), header and section
 * rejections with their specific kinds, every single-bit mutation of a real
 * artifact rejected without a crash, hostile counts rejected before
 * allocation, validation failures on mutated models, and atomic writes.
 */
#include "report_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void encode(const df_report_profile *p, df_buf *out) {
    df_error err = {0};
    df_buf_init(out, 0);
    DF_ASSERT_OK(df_report_encode_dfprofile(p, out, &err), &err);
}

/* Decodes and expects a failure of the specific `kind`, carried as the error's kind with no context. */
static void expect_reject(const uint8_t *bytes, size_t len, df_errkind kind) {
    df_report_profile *p = NULL;
    df_error err = {0};
    df_errkind k = df_report_decode_dfprofile(bytes, len, &p, &err);
    if (k != kind || err.kind != kind)
        df_test_fail(__FILE__, __LINE__, "decode: kind %s / %s (%s), expected %s", df_errkind_name(k),
                     df_errkind_name(err.kind), err.message, df_errkind_name(kind));
    DF_ASSERT(err.context == NULL);
    DF_ASSERT(p == NULL);
    DF_ASSERT_EQ_STR(err.phase, "input");
    df_error_clear(&err);
}

/* Rewrites the checksum of a modified file so the later checks are reached. */
static void reseal(uint8_t *b, size_t len) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        if (i >= 56 && i < 64) continue;
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    df_store_le64(b + 56, h);
}

DF_TEST(round_trip_is_byte_identical_with_identical_views) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_buf a;
    encode(p, &a);
    DF_ASSERT(df_report_is_dfprofile(a.data, a.len));
    df_report_profile *q = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_report_decode_dfprofile(a.data, a.len, &q, &err), &err);
    df_buf b;
    encode(q, &b);
    DF_ASSERT_EQ_UINT(a.len, b.len);
    DF_ASSERT(memcmp(a.data, b.data, a.len) == 0);
    df_buf h1, h2;
    df_buf_init(&h1, 0);
    df_buf_init(&h2, 0);
    DF_ASSERT_OK(df_report_render_html(p, &h1, &err), &err);
    DF_ASSERT_OK(df_report_render_html(q, &h2, &err), &err);
    DF_ASSERT_EQ_UINT(h1.len, h2.len);
    DF_ASSERT(memcmp(h1.data, h2.data, h1.len) == 0);
    df_report_inspect_options o = {.depth = 3, .limit = 200};
    char *t1 = rt_inspect(p, &o), *t2 = rt_inspect(q, &o);
    DF_ASSERT_EQ_STR(t1, t2);
    df_report_inspect_options f = {.depth = -1, .has_semantic = true, .semantic_id = 8, .all_frames = true};
    char *u1 = rt_inspect(p, &f), *u2 = rt_inspect(q, &f);
    DF_ASSERT_EQ_STR(u1, u2);
    df_free(t1), df_free(t2), df_free(u1), df_free(u2);
    df_buf_free(&a), df_buf_free(&b), df_buf_free(&h1), df_buf_free(&h2);
    df_report_profile_destroy(p);
    df_report_profile_destroy(q);
}

DF_TEST(round_trip_of_incomplete_and_write_all_profiles) {
    synth *(*scen[])(void) = {scenario_incomplete, scenario_write_all, scenario_ambiguous, scenario_truncated};
    for (size_t i = 0; i < DF_ARRAY_LEN(scen); i++) {
        df_report_profile *p = rt_build(scen[i](), 0);
        df_buf a, b;
        encode(p, &a);
        df_report_profile *q = NULL;
        DF_ASSERT_OK(df_report_decode_dfprofile(a.data, a.len, &q, NULL), NULL);
        encode(q, &b);
        DF_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        DF_ASSERT_EQ_INT(q->meta.incomplete_operation_root_count, p->meta.incomplete_operation_root_count);
        df_buf_free(&a), df_buf_free(&b);
        df_report_profile_destroy(p);
        df_report_profile_destroy(q);
    }
}

DF_TEST(header_rejections) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_buf a;
    encode(p, &a);
    uint8_t *c = malloc(a.len + 8);
    memcpy(c, a.data, a.len);
    expect_reject(c, 10, DF_ERR_TRUNCATED_ARTIFACT);
    expect_reject(c, a.len - 8, DF_ERR_TRUNCATED_ARTIFACT);
    memset(c + a.len, 0, 8);
    expect_reject(c, a.len + 8, DF_ERR_TRAILING_ARTIFACT_BYTES);
    c[1] ^= 1;
    expect_reject(c, a.len, DF_ERR_INVALID_ARTIFACT_MAGIC);
    c[1] ^= 1;
    df_store_le16(c + 8, 2);
    expect_reject(c, a.len, DF_ERR_UNSUPPORTED_ARTIFACT_VERSION);
    df_store_le16(c + 8, 1);
    df_store_le32(c + 12, 4);
    expect_reject(c, a.len, DF_ERR_UNSUPPORTED_RANKED_SCHEMA);
    df_store_le32(c + 12, 3);
    c[44] = 1;
    expect_reject(c, a.len, DF_ERR_INVALID_ARTIFACT_HEADER);
    c[44] = 0;
    df_store_le64(c + 24, (uint64_t)1 << 40);
    expect_reject(c, a.len, DF_ERR_ARTIFACT_TOO_LARGE);
    df_store_le64(c + 24, a.len);
    c[a.len - 1] ^= 0x40;
    expect_reject(c, a.len, DF_ERR_ARTIFACT_CHECKSUM_MISMATCH);
    c[a.len - 1] ^= 0x40;
    /* A valid checksum over hostile contents: sections are still checked. */
    df_store_le64(c + 64 + 24 + 8, 100); /* metadata section offset */
    reseal(c, a.len);
    expect_reject(c, a.len, DF_ERR_INVALID_ARTIFACT_SECTION);
    free(c);
    df_buf_free(&a);
    df_report_profile_destroy(p);
}

/* Offset of section s (1-based) payload. */
static size_t section_off(const uint8_t *b, unsigned s) { return (size_t)df_load_le64(b + 64 + (s - 1) * 24 + 8); }

DF_TEST(hostile_counts_and_strings_are_rejected) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_buf a;
    encode(p, &a);
    uint8_t *c = malloc(a.len);
    /* A semantic count larger than the section can hold. */
    memcpy(c, a.data, a.len);
    df_store_le64(c + section_off(c, 3), 1000000000ULL);
    reseal(c, a.len);
    expect_reject(c, a.len, DF_ERR_INVALID_ARTIFACT_SECTION);
    /* A string id out of range in a semantic record. */
    memcpy(c, a.data, a.len);
    df_store_le32(c + section_off(c, 3) + 8 + 152, 0xFFFFFF);
    reseal(c, a.len);
    expect_reject(c, a.len, DF_ERR_INVALID_ARTIFACT_SECTION);
    /* Invalid UTF-8 inside the string blob. */
    memcpy(c, a.data, a.len);
    size_t so = section_off(c, 1);
    uint32_t n = df_load_le32(c + so);
    size_t blob = so + ((8 + (size_t)n * 4 + 7) & ~(size_t)7);
    c[blob] = 0xFF;
    reseal(c, a.len);
    expect_reject(c, a.len, DF_ERR_INVALID_ARTIFACT_SECTION);
    /* Semantically invalid: a direct count that breaks conservation. */
    memcpy(c, a.data, a.len);
    size_t rec = section_off(c, 3) + 8;
    df_store_le64(c + rec + 104, 7);
    reseal(c, a.len);
    expect_reject(c, a.len, DF_ERR_INVALID_RANKED_PROFILE);
    free(c);
    df_buf_free(&a);
    df_report_profile_destroy(p);
}

DF_TEST(every_single_bit_mutation_is_rejected) {
    df_report_profile *p = rt_build(scenario_write_all(), 0);
    df_buf a;
    encode(p, &a);
    uint8_t *c = malloc(a.len);
    memcpy(c, a.data, a.len);
    size_t rejected = 0;
    for (size_t i = 0; i < a.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            c[i] ^= (uint8_t)(1u << bit);
            df_report_profile *q = NULL;
            df_errkind k = df_report_decode_dfprofile(c, a.len, &q, NULL);
            if (k != DF_OK) rejected++;
            df_report_profile_destroy(q);
            c[i] ^= (uint8_t)(1u << bit);
        }
    /* The checksum covers every byte but itself; a flip inside it breaks the comparison. */
    DF_ASSERT_EQ_UINT(rejected, a.len * 8);
    free(c);
    df_buf_free(&a);
    df_report_profile_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Validation invariants on mutated models.                                  */

static void expect_invalid(df_report_profile *p, const char *substring) {
    df_error err = {0};
    df_errkind k = df_report_validate(p, &err);
    if (k != DF_ERR_INVALID_RANKED_PROFILE || !strstr(err.message, substring))
        df_test_fail(__FILE__, __LINE__, "validate: %s \"%s\", expected a message containing \"%s\"", df_errkind_name(k),
                     err.message, substring);
    df_error_clear(&err);
}

DF_TEST(validation_invariants) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
    df_report_semantic *ec = &p->sems[df__report_find_semantic(p, 8)];
    ec->direct_samples++;
    expect_invalid(p, "semantic ID 8 direct sample count 7 does not equal classified native stack count 6");
    ec->direct_samples--;
    p->meta.sample_frequency_hz = 0;
    expect_invalid(p, "profile sample frequency must be greater than zero");
    p->meta.sample_frequency_hz = 1000;
    p->meta.eligible_sample_count++;
    expect_invalid(p, "profile eligible sample count 8 does not equal direct 6 + ambiguous 0 + unattributed 1");
    p->meta.eligible_sample_count--;
    p->meta.missing_identity_field_count = 1;
    expect_invalid(p, "missing identity fields");
    p->meta.missing_identity_field_count = 0;
    p->meta.truncation_marker_count = 1;
    expect_invalid(p, "cannot be semantically complete");
    p->meta.truncation_marker_count = 0;
    p->meta.buffer_loss_count = 1;
    expect_invalid(p, "cannot be capture-complete");
    p->meta.buffer_loss_count = 0;
    df_report_semantic *root = &p->sems[df__report_find_semantic(p, 1)];
    root->duration_ns++;
    expect_invalid(p, "semantic ID 1 interval is invalid");
    root->duration_ns--;
    root->inclusive_samples++;
    expect_invalid(p, "semantic ID 1 inclusive sample count 7 does not equal the fold 6");
    root->inclusive_samples--;
    df_report_semantic *fin = &p->sems[df__report_find_semantic(p, 10)];
    fin->parent_semantic_id = 99;
    expect_invalid(p, "semantic ID 10 parent 99 does not exist");
    fin->parent_semantic_id = 10;
    expect_invalid(p, "cycle");
    fin->parent_semantic_id = 1;
    fin->semantic_id = 9;
    expect_invalid(p, "duplicate semantic ID 9");
    fin->semantic_id = 10;
    uint32_t kind = fin->str[DF_REPORT_S_KIND];
    fin->str[DF_REPORT_S_KIND] = root->str[DF_REPORT_S_KIND];
    expect_invalid(p, "semantic ID 10 is of kind operation but not a root");
    fin->str[DF_REPORT_S_KIND] = kind;
    uint32_t res = fin->str[DF_REPORT_S_RESULT];
    fin->str[DF_REPORT_S_RESULT] = 0;
    expect_invalid(p, "semantic ID 10 is complete but has no result");
    fin->str[DF_REPORT_S_RESULT] = res;
    DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
    df_report_profile_destroy(p);
}

DF_TEST(function_invariants) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_function *scan = (df_report_function *)rt_fn(p, 8, "df_scan_next");
    scan->inclusive_samples++;
    expect_invalid(p, "function 8:7 inclusive sample count 3 does not equal the fold 2");
    scan->inclusive_samples--;
    scan->self_samples++;
    scan->inclusive_samples++;
    expect_invalid(p, "fold");
    scan->self_samples--;
    scan->inclusive_samples--;
    scan->parent_function_id = 77;
    expect_invalid(p, "function 8:7 parent 77 does not exist");
    scan->parent_function_id = 5;
    scan->source_file = scan->module_name; /* "dfapp" is a normalised path too: must still validate */
    DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
    uint32_t weird = df__report_intern(&p->strings, "/abs/olute/x.c", 14);
    scan->source_file = weird;
    expect_invalid(p, "source path is not normalised");
    df_report_profile_destroy(p);
}

DF_TEST(record_limits) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    size_t saved = p->nfns;
    p->nfns = DF_REPORT_MAX_FUNCTIONS + 1;
    expect_invalid(p, "profile has 500001 function records, exceeding the 500000 record limit");
    p->nfns = saved;
    df_report_profile_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Files.                                                                    */

static char *tmpdir_path(const char *leaf) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/df-report-test-XXXXXX");
        if (!mkdtemp(dir)) df_test_fail(__FILE__, __LINE__, "mkdtemp");
    }
    char *p = malloc(strlen(dir) + strlen(leaf) + 2);
    sprintf(p, "%s/%s", dir, leaf);
    return p;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[*len] = 0;
    return b;
}

DF_TEST(atomic_writes_and_policies) {
    char *path = tmpdir_path("deep/er/report.dfprofile");
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_error err = {0};
    DF_ASSERT_OK(df_report_write_dfprofile(p, path, DF_REPORT_NO_CLOBBER, &err), &err);
    df_report_profile *q = NULL;
    DF_ASSERT_OK(df_report_read_dfprofile(path, &q, &err), &err);
    df_report_profile_destroy(q);
    /* No-clobber keeps the existing file. */
    DF_ASSERT_KIND(df_report_write_file(path, "x", 1, DF_REPORT_NO_CLOBBER, &err), DF_ERR_PERSIST_FAILED);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "persist_failed");
    DF_ASSERT_EQ_STR(err.phase, "output");
    DF_ASSERT_EQ_INT(err.code, EEXIST);
    df_error_clear(&err);
    size_t len = 0;
    char *content = slurp(path, &len);
    DF_ASSERT(df_report_is_dfprofile(content, len));
    free(content);
    /* Replace replaces; a symlink destination is replaced, not followed. */
    char *target = tmpdir_path("target.txt"), *link = tmpdir_path("link.html");
    FILE *f = fopen(target, "w");
    fputs("keep me", f);
    fclose(f);
    DF_ASSERT_EQ_INT(symlink(target, link), 0);
    DF_ASSERT_OK(df_report_write_file(link, "new", 3, DF_REPORT_REPLACE, &err), &err);
    struct stat st;
    DF_ASSERT_EQ_INT(lstat(link, &st), 0);
    DF_ASSERT(S_ISREG(st.st_mode));
    content = slurp(target, &len);
    DF_ASSERT_EQ_STR(content, "keep me");
    free(content);
    content = slurp(link, &len);
    DF_ASSERT_EQ_STR(content, "new");
    free(content);
    /* A parent that is a regular file cannot be created. */
    char *under = tmpdir_path("target.txt/x.html");
    DF_ASSERT_KIND(df_report_write_file(under, "x", 1, DF_REPORT_REPLACE, &err), DF_ERR_CREATE_PARENT_FAILED);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "create_parent_failed");
    df_error_clear(&err);
    /* Reading: not a regular file, missing file. */
    char *dir = tmpdir_path("deep");
    DF_ASSERT_KIND(df_report_read_dfprofile(dir, &q, &err), DF_ERR_NOT_FILE);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "not_file");
    df_error_clear(&err);
    char *missing = tmpdir_path("missing.dfprofile");
    DF_ASSERT_KIND(df_report_read_dfprofile(missing, &q, &err), DF_ERR_ARTIFACT_UNREADABLE);
    DF_ASSERT_EQ_INT(err.code, ENOENT);
    df_error_clear(&err);
    free(path), free(target), free(link), free(under), free(dir), free(missing);
    df_report_profile_destroy(p);
}
