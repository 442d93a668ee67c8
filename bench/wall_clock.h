/* Wall-clock seconds for the benches (CLOCK_MONOTONIC): one home for the
 * timer every bench prints its wall times with; and the process's CPU
 * seconds (every thread, CLOCK_PROCESS_CPUTIME_ID), for figures that must
 * not depend on the host's load. */
#ifndef NXSIM_BENCH_WALL_CLOCK_H
#define NXSIM_BENCH_WALL_CLOCK_H

#include <time.h>

static inline double nx_bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double nx_bench_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
