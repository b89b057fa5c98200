/*
 * Clocks: monotonic for durations, realtime for timestamps in reports,
 * per-thread CPU time for profiles.
 */
#include "common/common.h"

#include <time.h>

static uint64_t read_clock(clockid_t id) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t df_now_ns(void) { return read_clock(CLOCK_MONOTONIC); }
int64_t df_wall_ns(void) { return (int64_t)read_clock(CLOCK_REALTIME); }
uint64_t df_thread_cpu_ns(void) { return read_clock(CLOCK_THREAD_CPUTIME_ID); }
