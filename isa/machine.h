/* The machine description as plain data: every clock, size and cost figure
 * of a simulated machine (sim/machines/<name>.json; loaded and checked by
 * sim/machine.h, documented in docs/parts/machine.md). It lives here, below
 * kernels/ and sim/, so the kernels' authoring context can hand it to a
 * plan (kernels never call sim/) and the model reads the same struct.
 *
 * Units: clocks in GHz (each engine has its own clock; "cycles" of an engine
 * are cycles of that clock), bandwidths in bytes per ns (= GB/s), times in ns,
 * sizes in bytes, counts in elements. */
#ifndef NXSIM_ISA_MACHINE_H
#define NXSIM_ISA_MACHINE_H

#include <stdint.h>

#include "geometry.h"
#include "insn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_machine {
    nx_geometry geo;                  /* sizes and limits ("geometry") */
    double clock_ghz[NX_ENG_COUNT];   /* "clocks_ghz": pe, dve, act, pool, sp */

    /* "pe" */
    uint32_t pe_mm_init_latency;      /* min initiation interval, cycles (64) */
    uint32_t pe_fp32_factor;          /* fp32 multiply cost factor (4) */
    uint32_t pe_fast_load_factor;     /* fast LoadStationary is this much quicker (4) */
    uint32_t pe_background_load;      /* 1: load_stationary overlaps the previous multiply */
    uint32_t pe_fill_latency;         /* cycles from a multiply's issue until PSUM holds it */
    uint32_t pe_systolic_reference;   /* 1: SCALE-Sim weight-stationary cost model */

    /* "dve" */
    uint32_t dve_cycles_per_elem_one_input;  /* ~N (1) */
    uint32_t dve_cycles_per_elem_two_inputs; /* ~2N (2) */
    uint32_t dve_min_ii;              /* minimum initiation interval, cycles (64) */
    uint32_t dve_dependency_overhead; /* a dependent instruction's extra wait, cycles (100) */
    uint32_t dve_fixed_overhead;      /* extra fixed cycles per instruction (0) */
    uint32_t dve_perf_modes;          /* 1: v3 2x/4x modes for bf16/fp16 */

    /* "act" */
    uint32_t act_min_cycles;          /* max(act_min_cycles, N) (64) */
    uint32_t act_accumulate_extra;    /* + with accumulate-reduce (64) */
    uint32_t act_dependency_overhead; /* a dependent instruction's extra wait, cycles (263 / 265) */

    /* "pool" */
    uint32_t pool_startup;            /* 150 + N */

    /* "dma" (the engine and queue counts are geometry: geo.dma_engines,
     * geo.dma_queues_per_engine, from "dma.engines" / "dma.queues_per_engine") */
    double dma_engine_bytes_per_ns;   /* per engine bandwidth */
    double dma_fixed_ns;              /* fixed cost per transfer (~1300) */
    uint32_t dma_efficient_bytes_per_partition; /* >= this per partition for peak (2048) */

    /* "hbm" */
    double hbm_bytes_per_ns;          /* shared by every DMA engine of every core */

    /* "sync" */
    double semaphore_latency_ns;      /* from increment to a waiter seeing it */
    double barrier_latency_ns;        /* core_barrier cross-core signalling */

    /* "conflicts" (v2 only) */
    uint32_t sbuf_dve_pool_conflict;  /* DVE and POOL cannot access SBUF at once */
    uint32_t psum_dve_act_conflict;   /* DVE and ACT cannot access PSUM at once */
    uint32_t psum_same_bank_conflict; /* v3: PSUM conflicts only on the same bank */
} nx_machine;

/* One core's DMA engines together at their full rate, bytes per ns:
 * geo.dma_engines x dma_engine_bytes_per_ns (HBM not counted). */
static inline double nx_machine_dma_engines_bytes_per_ns(const nx_machine *m) {
    return (double)m->geo.dma_engines * m->dma_engine_bytes_per_ns;
}

/* The share of its engine's bandwidth a transfer gets whose shortest
 * contiguous run per partition is run_bytes: min(1, run_bytes /
 * dma_efficient_bytes_per_partition) (docs/parts/machine.md, "DMA"). The
 * model's rule (sim/cost.c nx_cost_dma) and what plans weigh bytes by. */
static inline double nx_machine_dma_efficiency(const nx_machine *m, double run_bytes) {
    double full = (double)m->dma_efficient_bytes_per_partition;
    return full > 0 && run_bytes < full ? run_bytes / full : 1.0;
}

#ifdef __cplusplus
}
#endif

#endif
