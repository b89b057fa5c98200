/*
 * Unit tests for captures, the samplers (both backends), the symbolizer and
 * its parsers (/proc/self/maps text, ELF files including corrupted ones).
 */
#include "diag_test_util.h"

#include "diag/symbolize.h"
#include "diag/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Burns `ns` of this thread's CPU time (not wall time: the machine may be
 * shared).  The symbolizer must find it by name.
 */
__attribute__((noinline)) uint64_t diag_test_marker_spin(uint64_t ns) {
    uint64_t end = df_thread_cpu_ns() + ns, x = 0;
    while (df_thread_cpu_ns() < end)
        for (int i = 0; i < 20000; i++) x += df_hash_u64(x + (uint64_t)i);
    return x;
}

static void tmp_path(char *buf, size_t cap, const char *name) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/df_diag_%d_%s", dir && dir[0] ? dir : "/tmp", (int)getpid(), name);
    unlink(buf);
}

/* ------------------------------------------------------------------------ */
/* /proc/self/maps parsing.                                                  */

DF_TEST(maps_parse_reads_fields_paths_and_deleted) {
    const char text[] =
        "55d5c6e1e000-55d5c6e20000 r-xp 00002000 fd:01 1234567                    /usr/bin/cat\n"
        "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
        "7f0000001000-7f0000002000 r-xs 0000a000 08:02 42   /tmp/with space/lib.so (deleted)\n"
        "7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0                          [vdso]";
    df__diag_map *m = NULL;
    size_t n = 0;
    df_error err = {0};
    DF_ASSERT_OK(df__diag_maps_parse(text, sizeof text - 1, &m, &n, &err), &err);
    DF_ASSERT_EQ_UINT(n, 4);
    DF_ASSERT_EQ_UINT(m[0].start, 0x55d5c6e1e000ULL);
    DF_ASSERT_EQ_UINT(m[0].end, 0x55d5c6e20000ULL);
    DF_ASSERT_EQ_UINT(m[0].offset, 0x2000);
    DF_ASSERT_EQ_UINT(m[0].inode, 1234567);
    DF_ASSERT_EQ_INT(m[0].perms, DF_DIAG_MAP_R | DF_DIAG_MAP_X | DF_DIAG_MAP_P);
    DF_ASSERT_EQ_STR(m[0].path, "/usr/bin/cat");
    DF_ASSERT_EQ_STR(m[1].path, "");
    DF_ASSERT_EQ_STR(m[2].path, "/tmp/with space/lib.so");
    DF_ASSERT(m[2].deleted);
    DF_ASSERT_EQ_INT(m[2].perms, DF_DIAG_MAP_R | DF_DIAG_MAP_X);
    DF_ASSERT_EQ_STR(m[3].path, "[vdso]");
    df__diag_maps_free(m, n);
    DF_ASSERT_OK(df__diag_maps_parse("", 0, &m, &n, &err), &err);
    DF_ASSERT_EQ_UINT(n, 0);
}

DF_TEST(maps_parse_rejects_malformed_lines_with_offsets) {
    static const char *bad[] = {
        "zz-10 r-xp 0 00:00 0\n",
        "10-20 r-xq 0 00:00 0\n",
        "20-10 r-xp 0 00:00 0\n",                   /* end before start */
        "10-20 r-xp 0 00:00\n",                     /* no inode */
        "10-20 r-xp 0 00:00 99999999999999999999999 /x\n", /* inode overflow */
        "10-20 r-xp 11112222333344445 00:00 0 /x\n",  /* 17 hex digits */
        "10-20 r-xp 0 00:00 0x /x\n",
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(bad); i++) {
        char text[256];
        int n = snprintf(text, sizeof text, "10-20 r--p 0 00:00 0 /ok\n%s", bad[i]);
        df__diag_map *m = (df__diag_map *)1;
        size_t cnt = 99;
        df_error err = {0};
        DF_ASSERT_KIND(df__diag_maps_parse(text, (size_t)n, &m, &cnt, &err), DF_ERR_INVALID_ARGUMENT);
        DF_ASSERT(m == NULL && cnt == 0);
        DF_ASSERT_EQ_INT(err.offset, (int64_t)strlen("10-20 r--p 0 00:00 0 /ok\n"));
    }
    char nul[] = "10-20 r--p 0 00:00 0 /a\0b\n";
    df__diag_map *m = NULL;
    size_t cnt = 0;
    DF_ASSERT_KIND(df__diag_maps_parse(nul, sizeof nul - 1, &m, &cnt, NULL), DF_ERR_INVALID_ARGUMENT);
}

DF_TEST(maps_of_this_process_contain_the_test_binary) {
    df__diag_map *m = NULL;
    size_t n = 0;
    df_error err = {0};
    DF_ASSERT_OK(df__diag_maps_read_self(&m, &n, &err), &err);
    uint64_t pc = (uint64_t)(uintptr_t)&diag_test_marker_spin;
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (pc >= m[i].start && pc < m[i].end) found = (m[i].perms & DF_DIAG_MAP_X) && m[i].path[0] == '/';
    DF_ASSERT(found);
    df__diag_maps_free(m, n);
}

/* ------------------------------------------------------------------------ */
/* ELF files.                                                                */

typedef struct mem_src {
    const unsigned char *data; /* bytes */
    size_t len;                /* count */
} mem_src;

static df_errkind mem_read(void *ctx, uint64_t off, void *buf, size_t len, df_error *err) {
    mem_src *m = ctx;
    if (off > m->len || len > m->len - off) DF_FAIL(err, DF_ERR_IO, "short read");
    memcpy(buf, m->data + off, len);
    return DF_OK;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    DF_ASSERT(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    DF_ASSERT(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

DF_TEST(elf_reads_symbols_build_id_and_segments_of_this_binary) {
    df__diag_elf *e = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df__diag_elf_open("/proc/self/exe", &e, &err), &err);
    DF_ASSERT(df__diag_elf_has_symtab(e));
    DF_ASSERT(df__diag_elf_symbol_count(e) > 10);
    size_t idlen = 0;
    DF_ASSERT(df__diag_elf_build_id(e, &idlen) != NULL && idlen >= 8);
    df__diag_elf_free(e);
    DF_ASSERT_KIND(df__diag_elf_open("/nonexistent/file", &e, &err), DF_ERR_NOT_FOUND);
    DF_ASSERT(e == NULL);
    DF_ASSERT_KIND(df__diag_elf_open("/proc/self/maps", &e, &err), DF_ERR_UNSUPPORTED);
}

DF_TEST(elf_corruptions_fail_cleanly) {
    size_t len = 0;
    unsigned char *orig = read_file("/proc/self/exe", &len);
    unsigned char *buf = malloc(len);
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    int ok = 0, failed = 0;
    for (int round = 0; round < 600; round++) {
        memcpy(buf, orig, len);
        size_t use = len;
        if (round % 3 == 0) {
            rng = df_hash_u64(rng);
            use = (size_t)(rng % len); /* truncation */
        }
        for (int k = 0; k < 1 + round % 8; k++) { /* flip bytes, biased to the headers */
            rng = df_hash_u64(rng);
            size_t at = (round & 1) ? (size_t)(rng % 4096) % len : (size_t)(rng % len);
            rng = df_hash_u64(rng);
            buf[at] = (unsigned char)rng;
        }
        mem_src src = {buf, use};
        df__diag_elf_source s = {mem_read, &src, use};
        df__diag_elf *e = NULL;
        df_error err = {0};
        if (df__diag_elf_read(&s, &e, &err) == DF_OK) {
            ok++;
            (void)df__diag_elf_lookup(e, (uint64_t)rng);
            df__diag_elf_free(e);
        } else {
            failed++;
            DF_ASSERT(e == NULL);
            DF_ASSERT(err.message[0] != '\0');
        }
    }
    DF_ASSERT(ok > 0 && failed > 0);
    free(buf);
    free(orig);
}

DF_TEST(elf_rejects_oversized_tables_before_allocating) {
    /* A minimal ELF64 header whose section table claims 65535 entries far beyond the file. */
    unsigned char h[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    df_store_le64(h + 40, 64);  /* e_shoff */
    df_store_le16(h + 58, 64);  /* e_shentsize */
    df_store_le16(h + 60, 65535); /* e_shnum */
    mem_src src = {h, sizeof h};
    df__diag_elf_source s = {mem_read, &src, sizeof h};
    df__diag_elf *e = NULL;
    df_error err = {0};
    DF_ASSERT_KIND(df__diag_elf_read(&s, &e, &err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT_EQ_INT(err.offset, 64);
    df_store_le16(h + 58, 40); /* wrong entry size */
    DF_ASSERT_KIND(df__diag_elf_read(&s, &e, &err), DF_ERR_INVALID_ARGUMENT);
    h[4] = 1; /* 32-bit */
    DF_ASSERT_KIND(df__diag_elf_read(&s, &e, &err), DF_ERR_UNSUPPORTED);
}

/* ------------------------------------------------------------------------ */
/* Symbolizer.                                                               */

DF_TEST(symbolizer_names_functions_and_lines) {
    df__diag_symbolizer *s = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df__diag_symbolizer_create(&s, &err), &err);
    df__diag_symbol sym;
    uint64_t pc = (uint64_t)(uintptr_t)&diag_test_marker_spin + 8;
    DF_ASSERT_OK(df__diag_symbolize(s, pc, &sym, &err), &err);
    DF_ASSERT(sym.module != NULL);
    DF_ASSERT(sym.module->index >= 1);
    DF_ASSERT(sym.module->build_id_len >= 8);
    DF_ASSERT_EQ_STR(sym.function, "diag_test_marker_spin");
#ifdef DF_HAVE_LIBDW
    DF_ASSERT(sym.source_file != NULL && strstr(sym.source_file, "test_diag_capture.c") != NULL);
    DF_ASSERT(sym.line > 0);
#endif
    /* libc: found by its dynamic symbols. */
    DF_ASSERT_OK(df__diag_symbolize(s, (uint64_t)(uintptr_t)&getpid, &sym, &err), &err);
    DF_ASSERT(sym.module != NULL && strstr(sym.module->path, "libc") != NULL);
    DF_ASSERT(sym.function != NULL);
    DF_ASSERT_OK(df__diag_symbolize(s, 16, &sym, &err), &err);
    DF_ASSERT(sym.module == NULL && sym.function == NULL);
    df__diag_symbolizer_destroy(s);
}

DF_TEST(symbolizer_reads_the_vdso_image_in_memory) {
    uint64_t base = (uint64_t)getauxval(AT_SYSINFO_EHDR);
    if (!base) {
        printf("  no vDSO in this process\n");
        return;
    }
    df__diag_symbolizer *s = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df__diag_symbolizer_create(&s, &err), &err);
    bool found = false;
    for (uint64_t a = base; a < base + 16384 && !found; a += 8) {
        df__diag_symbol sym;
        DF_ASSERT_OK(df__diag_symbolize(s, a, &sym, &err), &err);
        if (!sym.module) break;
        DF_ASSERT_EQ_STR(sym.module->path, "[vdso]");
        found = sym.function && strstr(sym.function, "clock_gettime") != NULL;
    }
    DF_ASSERT(found);
    df__diag_symbolizer_destroy(s);
}

/* ------------------------------------------------------------------------ */
/* Captures and sampling.                                                    */

typedef struct spin_arg {
    uint64_t ns; /* CPU time to burn inside a traced stage */
} spin_arg;

static void *spin_in_stage(void *p) {
    spin_arg *a = p;
    df_diag_operation *op = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_AND_COLLECT, 0);
    diag_test_marker_spin(a->ns);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    return NULL;
}

/* Runs 1 + threads threads burning 200 ms of CPU each under a 1000 Hz capture. */
static df_diag_capture_stats sample_run(df_diag_backend backend, const char *path, int threads) {
    df_diag_capture_options o = {.trace_path = path, .sample_hz = 1000, .backend = backend};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    pthread_t th[8];
    spin_arg arg = {200u * 1000u * 1000u};
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, spin_in_stage, &arg);
    spin_in_stage(&arg);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    return st;
}

DF_TEST(timer_backend_samples_with_unwound_stacks) {
    df_diag_capture_stats st = sample_run(DF_DIAG_BACKEND_TIMER, NULL, 2);
    DF_ASSERT_EQ_INT(st.backend, DF_DIAG_BACKEND_TIMER);
    DF_ASSERT(strstr(st.backend_reason, "requested") != NULL);
    DF_ASSERT(st.threads_sampled >= 3);
    /*
     * 3 threads x 200 ms CPU at 1000 Hz = 600 intervals.  CPU-time timers
     * fire on scheduler ticks, so fewer signals arrive (effective rate) and
     * overruns carry the rest as weight.
     */
    printf("  timer: samples %llu weight %llu effective %.0f Hz\n", (unsigned long long)st.samples,
           (unsigned long long)st.sample_weight, st.effective_hz);
    DF_ASSERT(st.sample_weight >= 450 && st.sample_weight <= 700);
    DF_ASSERT(st.samples_unwound * 10 >= st.samples * 9);
    DF_ASSERT(st.effective_hz > 50.0 && st.effective_hz <= 1000.0);
    struct sigaction sa;
    sigaction(SIGPROF, NULL, &sa);
    DF_ASSERT(sa.sa_handler == SIG_DFL); /* restored */
}

static void application_sigprof(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
}

DF_TEST(timer_backend_refuses_when_sigprof_is_taken) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = application_sigprof;
    sigaction(SIGPROF, &sa, &old);
    df_diag_capture_options o = {.sample_hz = 100, .backend = DF_DIAG_BACKEND_TIMER};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_KIND(df_diag_capture_start(&o, &c, &err), DF_ERR_NOT_AVAILABLE);
    DF_ASSERT(strstr(err.message, "SIGPROF") != NULL);
    DF_ASSERT(c == NULL);
    DF_ASSERT(!df_diag_capture_is_active());
    sigaction(SIGPROF, &old, NULL);
}

DF_TEST(perf_backend_samples_or_says_why_not) {
    df_diag_capture_options o = {.sample_hz = 1000, .backend = DF_DIAG_BACKEND_PERF};
    df_diag_capture *c = NULL;
    df_error err = {0};
    df_errkind k = df_diag_capture_start(&o, &c, &err);
    if (k != DF_OK) {
        DF_ASSERT_KIND(k, DF_ERR_NOT_AVAILABLE);
        DF_ASSERT(strstr(err.message, "perf_event") != NULL);
        printf("  perf_event_open not permitted here: %s\n", err.message);
        return;
    }
    df_diag_capture_destroy(c);
    df_diag_capture_stats st = sample_run(DF_DIAG_BACKEND_PERF, NULL, 1);
    DF_ASSERT_EQ_INT(st.backend, DF_DIAG_BACKEND_PERF);
    DF_ASSERT(strstr(st.backend_reason, "perf_event_paranoid=") != NULL);
    printf("  perf: samples %llu effective %.0f Hz\n", (unsigned long long)st.samples, st.effective_hz);
    /*
     * 2 threads x 200 ms CPU at 1000 Hz is 400 intervals.  The upper bound
     * catches double counting; the lower one is loose because the kernel
     * lowers perf_event_max_sample_rate on its own when sampling interrupts
     * run long (sanitizer builds on a loaded machine), without a LOST record.
     */
    DF_ASSERT(st.samples <= 450);
    DF_ASSERT(st.samples + st.samples_lost >= 100);
    DF_ASSERT(st.samples_unwound * 10 >= st.samples * 9);
}

DF_TEST(auto_backend_records_its_reason) {
    df_diag_capture_stats st = sample_run(DF_DIAG_BACKEND_AUTO, NULL, 0);
    DF_ASSERT(st.backend == DF_DIAG_BACKEND_PERF || st.backend == DF_DIAG_BACKEND_TIMER);
    DF_ASSERT(strstr(st.backend_reason, "perf_event") != NULL);
    DF_ASSERT(st.samples > 0);
}

DF_TEST(trace_files_are_private_and_never_overwritten) {
    char path[256];
    tmp_path(path, sizeof path, "private.pftrace");
    df_diag_capture_stats st = sample_run(DF_DIAG_BACKEND_TIMER, path, 0);
    struct stat sb;
    DF_ASSERT(stat(path, &sb) == 0);
    DF_ASSERT_EQ_INT(sb.st_mode & 0777, 0600);
    DF_ASSERT_EQ_UINT((uint64_t)sb.st_size, st.trace_bytes);
    DF_ASSERT(st.trace_bytes > 1000);
    unsigned char first = 0;
    int fd = open(path, O_RDONLY);
    DF_ASSERT(read(fd, &first, 1) == 1);
    close(fd);
    DF_ASSERT_EQ_INT(first, 0x0A); /* Trace.packet, length-delimited */
    df_diag_capture_options o = {.trace_path = path};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_KIND(df_diag_capture_start(&o, &c, &err), DF_ERR_OUTPUT_UNAVAILABLE);
    DF_ASSERT(stat(path, &sb) == 0 && (uint64_t)sb.st_size == st.trace_bytes);
    unlink(path);
    char link[256];
    tmp_path(link, sizeof link, "link.pftrace");
    DF_ASSERT(symlink(path, link) == 0); /* dangling symlink: refused, target not created */
    o.trace_path = link;
    DF_ASSERT_KIND(df_diag_capture_start(&o, &c, &err), DF_ERR_OUTPUT_UNAVAILABLE);
    DF_ASSERT(stat(path, &sb) != 0 && errno == ENOENT);
    unlink(link);
}

DF_TEST(failed_start_leaves_no_file) {
    char path[256];
    tmp_path(path, sizeof path, "failed.pftrace");
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_capture_options o = {.trace_path = path};
    df_diag_capture *c2 = NULL;
    df_error err = {0};
    DF_ASSERT_KIND(df_diag_capture_start(&o, &c2, &err), DF_ERR_INVALID_ARGUMENT);
    struct stat sb;
    DF_ASSERT(stat(path, &sb) != 0);
    test_log log = test_capture_finish(c);
    test_log_free(&log);
    o.sample_hz = 20000;
    DF_ASSERT_KIND(df_diag_capture_start(&o, &c2, &err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(stat(path, &sb) != 0);
}

static void *churn_threads(void *p) {
    _Atomic int *stop = p;
    while (!atomic_load(stop)) {
        spin_arg arg = {2u * 1000u * 1000u};
        pthread_t th;
        pthread_create(&th, NULL, spin_in_stage, &arg);
        pthread_join(th, NULL);
    }
    return NULL;
}

DF_TEST(sampling_survives_thread_churn_and_restarts) {
    _Atomic int stop = 0;
    pthread_t th;
    pthread_create(&th, NULL, churn_threads, (void *)&stop);
    for (int round = 0; round < 6; round++) {
        df_diag_capture_stats st = sample_run(round % 2 ? DF_DIAG_BACKEND_TIMER : DF_DIAG_BACKEND_AUTO, NULL, 1);
        DF_ASSERT(st.samples > 0);
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
}
