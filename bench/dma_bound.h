/* The DMA bound every leaf bench divides its bytes by: one core's DMA
 * engines at their full rate, capped by HBM (docs/parts/bench.md: every
 * byte moved once at full DMA efficiency). Bytes per ns. */
#ifndef NXSIM_BENCH_DMA_BOUND_H
#define NXSIM_BENCH_DMA_BOUND_H

#include "sim/machine.h"

static inline double nx_bench_core_dma_bytes_per_ns(const nx_machine *m) {
    double engines = (double)m->geo.dma_engines * m->dma_engine_bytes_per_ns;
    return m->hbm_bytes_per_ns < engines ? m->hbm_bytes_per_ns : engines;
}

#endif
