/*
 * perf_event sampler backend: one PERF_COUNT_SW_CPU_CLOCK event per thread
 * (pid = tid, cpu = -1), sampling every period_ns of that thread's CPU time
 * with IP, TID, TIME (CLOCK_MONOTONIC), CPU and the user-space callchain the
 * kernel collects by walking frame pointers.  Kernel frames are excluded,
 * which is what perf_event_paranoid <= 2 allows for one's own threads.
 *
 * The collector reads each event's ring buffer (metadata page + 2^n data
 * pages): records between data_tail and data_head (acquire), copied out one
 * at a time because a record may wrap around the end of the ring, then
 * data_tail is advanced (release).  Record sizes and callchain lengths are
 * checked against the record before use.
 */
#include "diag/sampler_int.h"
#include "diag/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void read_paranoid(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[16];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    snprintf(out, cap, "%s", buf);
}

static int open_event(uint32_t tid, uint64_t period_ns, bool switches) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = period_ns ? period_ns : 1000000;
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.exclude_callchain_kernel = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    if (switches) {
        attr.context_switch = 1; /* PERF_RECORD_SWITCH for this thread */
        attr.sample_id_all = 1;  /* ... carrying tid, time and cpu */
    }
    return (int)syscall(SYS_perf_event_open, &attr, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

bool df__diag_perf_probe(char *reason, size_t reason_len) {
    char paranoid[16];
    read_paranoid(paranoid, sizeof paranoid);
    int fd = open_event(0, 1000000, false);
    if (fd < 0) {
        snprintf(reason, reason_len, "perf_event_open failed: %s (perf_event_paranoid=%s)", strerror(errno), paranoid);
        return false;
    }
    long page = sysconf(_SC_PAGESIZE);
    void *base = mmap(NULL, (size_t)page * 5, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(reason, reason_len, "perf_event ring buffer cannot be mapped: %s (perf_event_mlock_kb)", strerror(errno));
        close(fd);
        return false;
    }
    munmap(base, (size_t)page * 5);
    close(fd);
    snprintf(reason, reason_len, "perf_event_open cpu-clock with user callchains allowed (perf_event_paranoid=%s)",
             paranoid);
    return true;
}

bool df__diag_perf_probe_switches(char *reason, size_t reason_len) {
    int fd = open_event(0, 1000000, true);
    if (fd < 0) {
        snprintf(reason, reason_len, "perf_event_open with context_switch failed: %s", strerror(errno));
        return false;
    }
    close(fd);
    snprintf(reason, reason_len, "perf_event context-switch records allowed");
    return true;
}

bool df__diag_perf_attach(df__diag_sampler *s, df__diag_attach *a) {
    int fd = open_event(a->tid, s->period_ns, s->switches);
    if (fd < 0) return false;
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)page * (1 + s->perf_pages);
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return false;
    }
    a->fd = fd;
    a->mmap_base = base;
    a->mmap_len = len;
    a->data_size = (uint64_t)page * s->perf_pages;
    return true;
}

void df__diag_perf_disable(df__diag_attach *a) {
    if (a->fd >= 0) ioctl(a->fd, PERF_EVENT_IOC_DISABLE, 0);
}

void df__diag_perf_close(df__diag_attach *a) {
    if (a->mmap_base) munmap(a->mmap_base, a->mmap_len);
    if (a->fd >= 0) close(a->fd);
    a->mmap_base = NULL;
    a->fd = -1;
}

/* Copies len bytes at ring position pos (modulo the data size) into out. */
static void ring_copy(const unsigned char *data, uint64_t size, uint64_t pos, void *out, size_t len) {
    uint64_t off = pos & (size - 1);
    size_t first = (size_t)DF_MIN((uint64_t)len, size - off);
    memcpy(out, data + off, first);
    if (first < len) memcpy((unsigned char *)out + first, data, len - first);
}

/* Decodes a PERF_RECORD_SAMPLE (layout fixed by our sample_type) and emits it. */
static df_errkind decode_sample(df__diag_sampler *s, const unsigned char *r, size_t size, struct df__diag_writer *w,
                                df_error *err) {
    /* header(8) ip(8) pid,tid(8) time(8) cpu,res(8) nr(8) ips[nr] */
    if (size < 48) return DF_OK;
    uint64_t ip = df_load_le64(r + 8);
    uint32_t tid = df_load_le32(r + 20);
    uint64_t time = df_load_le64(r + 24);
    uint32_t cpu = df_load_le32(r + 32);
    uint64_t nr = df_load_le64(r + 40);
    if (nr > (size - 48) / 8) return DF_OK; /* malformed: ignore the record */
    uint32_t n = 0;
    s->pcs[n++] = ip;
    for (uint64_t i = 0; i < nr && n < DF_DIAG_MAX_FRAMES; i++) {
        uint64_t pc = df_load_le64(r + 48 + i * 8);
        if (pc >= (uint64_t)PERF_CONTEXT_MAX) continue; /* context markers */
        if (n == 1 && pc == ip) continue;               /* the callchain repeats the sampled IP */
        s->pcs[n++] = pc;
    }
    df__diag_sample smp = {.ts = time, .tid = tid, .cpu = cpu, .weight = 1, .nframes = n, .pcs = s->pcs};
    return df__diag_sampler_emit(s, &smp, w, err);
}

/*
 * A PERF_RECORD_SWITCH of an attached thread: header(8), then the sample_id
 * trailer of our sample_type: pid,tid(8) time(8) cpu,res(8).  A switch-out
 * opens an off-CPU interval, the next switch-in closes and writes it.
 */
static df_errkind decode_switch(df__diag_attach *a, const unsigned char *r, size_t size, uint16_t misc,
                                struct df__diag_writer *w, df_error *err) {
    if (size < 32) return DF_OK;
    uint32_t tid = df_load_le32(r + 12);
    uint64_t time = df_load_le64(r + 16);
    uint32_t cpu = df_load_le32(r + 24);
    if (tid != a->tid) return DF_OK;
    if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
        a->switched_out = true;
        a->out_preempted = (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
        a->out_cpu = cpu;
        a->out_ts = time;
        return DF_OK;
    }
    if (!a->switched_out || time < a->out_ts) return DF_OK;
    a->switched_out = false;
    return w ? df__diag_writer_offcpu(w, tid, a->out_ts, time, a->out_cpu, cpu, a->out_preempted, err) : DF_OK;
}

df_errkind df__diag_perf_drain(df__diag_sampler *s, df__diag_attach *a, struct df__diag_writer *w, df_error *err) {
    if (!a->mmap_base) return DF_OK;
    struct perf_event_mmap_page *meta = a->mmap_base;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    const unsigned char *data = (const unsigned char *)a->mmap_base + (meta->data_offset ? meta->data_offset : (uint64_t)sysconf(_SC_PAGESIZE));
    uint64_t size = a->data_size;
    df_errkind k = DF_OK;
    if (head - tail > size) tail = head - size; /* cannot happen; never read stale data twice */
    while (head - tail >= sizeof(struct perf_event_header) && k == DF_OK) {
        struct perf_event_header h;
        ring_copy(data, size, tail, &h, sizeof h);
        if (h.size < sizeof h || h.size > head - tail) {
            tail = head; /* corrupt: skip everything available */
            break;
        }
        ring_copy(data, size, tail, s->record, h.size);
        if (h.type == PERF_RECORD_SAMPLE) {
            k = decode_sample(s, s->record, h.size, w, err);
        } else if (h.type == PERF_RECORD_SWITCH) {
            k = decode_switch(a, s->record, h.size, h.misc, w, err);
        } else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
            s->lost += df_load_le64(s->record + 16);
        }
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    return k;
}
