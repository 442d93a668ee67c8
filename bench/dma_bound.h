/* The bounds every bench divides its work by (docs/parts/bench.md): bytes
 * through DMA engines capped by HBM (every byte moved once at full DMA
 * efficiency), and MACs on a full PE array. Read from the machine
 * description, so a bench on trn1 or a machine file bounds with its own
 * figures. One home: a bench that needs a bound calls these. */
#ifndef NXSIM_BENCH_DMA_BOUND_H
#define NXSIM_BENCH_DMA_BOUND_H

#include <stdint.h>

#include "isa/dtype.h"
#include "sim/machine.h"

/* Bytes per ns through `cores` cores of `engines` DMA engines each, all of
 * them sharing HBM. */
static inline double nx_bench_dma_bytes_per_ns(const nx_machine *m, uint32_t cores, uint32_t engines) {
    double dma = (double)cores * engines * m->dma_engine_bytes_per_ns;
    return m->hbm_bytes_per_ns < dma ? m->hbm_bytes_per_ns : dma;
}

/* One core's DMA engines (the machine's count), capped by HBM. */
static inline double nx_bench_core_dma_bytes_per_ns(const nx_machine *m) {
    return nx_bench_dma_bytes_per_ns(m, 1, m->geo.dma_engines);
}

/* ns to move `bytes` through `cores` cores' DMA engines. */
static inline double nx_bench_dma_bound_ns(const nx_machine *m, uint32_t cores, double bytes) {
    return bytes / nx_bench_dma_bytes_per_ns(m, cores, m->geo.dma_engines);
}

/* ns for `macs` multiply-accumulates on one core's full PE array at the PE
 * clock (fp32 operands cost the machine's fp32 factor). */
static inline double nx_bench_pe_bound_ns(const nx_machine *m, double macs, nx_dtype dt) {
    double cycles = macs / ((double)m->geo.pe_rows * m->geo.pe_cols) * (dt == NX_DT_FP32 ? m->pe_fp32_factor : 1);
    return cycles / m->clock_ghz[NX_ENG_PE];
}

#endif
