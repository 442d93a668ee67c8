/* The cost model of the SystemC model: pure functions from (machine,
 * instruction, engine) to cycles, bytes and bandwidth shares. Plain C so it
 * can be unit-tested without SystemC; the formulas are written down, with
 * their parameter names, in docs/parts/model.md ("Cost model").
 *
 * Units: cycles of the named engine's clock (machine clock_ghz), bytes,
 * bytes per ns. Nothing here allocates or fails: instructions must have
 * validated (nx_program_validate). */
#ifndef NXSIM_SIM_COST_H
#define NXSIM_SIM_COST_H

#include <stddef.h>
#include <stdint.h>

#include "../isa/insn.h"
#include "../isa/state.h"
#include "machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the PE's cost depends on besides the instruction itself: the stream
 * before it. Start each PE stream with nx_pe_cost_reset; nx_cost_insn
 * updates it. */
typedef struct nx_pe_cost_state {
    uint8_t stationary_dtype; /* dtype of the last load_stationary's src (fp32 factor) */
    uint8_t prev_multiply;    /* the previous PE instruction was a multiply_moving */
    uint8_t fold_open;        /* systolic mode: a load_stationary whose first multiply
                                 has not yet paid the fill/drain R + C - 2 */
} nx_pe_cost_state;

void nx_pe_cost_reset(nx_pe_cost_state *pe);

typedef struct nx_insn_cost {
    uint64_t occupancy;  /* cycles the engine is busy; the next instruction of the
                            stream may start this much after this one started */
    uint64_t latency;    /* cycles from start until the results are visible (and a
                            semaphore increment happens); >= occupancy */
    uint64_t flops;      /* 2*K*M*N for multiply_moving, 0 otherwise */
    uint8_t background;  /* load_stationary that may run under the previous multiply
                            (pe_background_load and the previous PE instruction was a
                            multiply_moving): only what is not hidden costs time */
} nx_insn_cost;

/* Cost of `insn` on `engine`. For NX_ENG_PE `pe` is read and updated (it may
 * be NULL for other engines). DMA instructions on SP cost only their issue
 * (one SP cycle); the transfer is nx_cost_dma's. */
void nx_cost_insn(const nx_machine *m, nx_engine engine, const nx_insn *insn,
                  nx_pe_cost_state *pe, nx_insn_cost *out);

/* Elements per partition the instruction streams: the largest free size of
 * its memory and pattern operands (1 if it has none). */
uint64_t nx_cost_stream_elems(const nx_insn *insn);

/* Which shared on-chip resources an instruction holds while it runs, for the
 * v2 access conflicts (machine "conflicts"): sbuf = it touches SBUF;
 * psum_banks = bit b set if it touches PSUM bank b (banks of
 * geo.psum_bank_bytes; banks >= 64 fold onto bit 63). */
typedef struct nx_insn_access {
    uint8_t sbuf;
    uint64_t psum_banks;
} nx_insn_access;
void nx_cost_access(const nx_geometry *geo, const nx_insn *insn, nx_insn_access *out);

/* ---- DMA ----
 * The one home of DMA timing (docs/parts/model.md, "DMA"): the SP's issue
 * (nx_cost_insn, one SP cycle, sim/engine.cpp), a transfer's fixed phase,
 * bytes and efficiency (nx_cost_dma) and its data-phase rate among the
 * transfers flowing at once (nx_cost_dma_rates) are computed here from the
 * machine and nowhere else; sim/dma.cpp runs the queues with them. */

typedef struct nx_dma_cost {
    uint64_t bytes;      /* P * F * max(src, dst element size) */
    uint64_t row_bytes;  /* shortest contiguous run per partition (src or dst side) */
    double efficiency;   /* min(1, row_bytes / dma_efficient_bytes_per_partition) */
    double fixed_ns;     /* the fixed phase, from the issue to the data (dma_fixed_ns) */
    uint8_t touches_hbm; /* src or dst is HBM: shares hbm_bytes_per_ns */
} nx_dma_cost;
void nx_cost_dma(const nx_machine *m, const nx_insn *insn, nx_dma_cost *out);

/* The duration in ns of transfer c alone on the machine, from its issue to
 * its last byte: fixed_ns + bytes / its rate with no other transfer flowing
 * (nx_cost_dma_rates of one flow: the engine's bandwidth x efficiency,
 * capped by HBM when it touches HBM). */
double nx_cost_dma_alone_ns(const nx_machine *m, const nx_dma_cost *c);

/* The DMA bound of `cores` cores in bytes per ns: every engine of those
 * cores at full efficiency, capped by the HBM they share:
 * min(cores x dma_engines x dma_engine_bytes_per_ns, hbm_bytes_per_ns).
 * What no schedule of transfers touching HBM can beat; benches divide the
 * bytes they move by it. */
double nx_cost_dma_peak_bytes_per_ns(const nx_machine *m, uint32_t cores);

/* An indirect transfer with oob_skip moves only its rows whose index lies
 * in [0, bound): the others move nothing and cost no bandwidth (the fixed
 * cost remains). Scales out->bytes to those rows, reading the indices from
 * st's SBUF of `core` (called when the transfer is issued: the program's
 * waits have made them final). Other transfers are left as they are. */
void nx_cost_dma_skipped_rows(const nx_insn *insn, nx_state *st, uint32_t core, nx_dma_cost *out);

/* One transfer in its data phase, for the bandwidth split. */
typedef struct nx_dma_flow {
    uint32_t engine_active; /* transfers in their data phase on the same DMA engine (>= 1) */
    double efficiency;
    uint8_t touches_hbm;
} nx_dma_flow;

/* Rates in bytes per ns of n concurrent transfers: each gets its engine's
 * bandwidth round-robin, dma_engine_bytes_per_ns * efficiency / engine_active;
 * the transfers touching HBM (of every engine of every core) then share
 * hbm_bytes_per_ns max-min fairly (water-filling: none gets more than its
 * engine share, the rest is split equally). `scratch` holds n doubles. */
void nx_cost_dma_rates(const nx_machine *m, const nx_dma_flow *flows, size_t n, double *rates,
                  double *scratch);

#ifdef __cplusplus
}
#endif

#endif
