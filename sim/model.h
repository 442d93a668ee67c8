/* The cycle-approximate SystemC model of the core and of the two-core VNC
 * grid, reached from C through this one header. C++ exceptions (SystemC
 * errors included) never cross it: every function returns 0 or -1 with a
 * one-line message.
 *
 * The SystemC platform is elaborated once per process, on the first run, and
 * reused: each run loads a program, resets the engines, and resumes the
 * kernel until every stream has ended (sc_pause). Simulated time keeps
 * growing across runs, so every figure below is a difference for this run.
 *
 * The model calls the same instruction semantics as the functional executor
 * (nx_insn_execute, isa/exec.h) and only adds time: results are bit for bit
 * those of nx_exec_program.
 *
 * Threads: SystemC is one platform per process and not re-entrant; runs
 * from several threads are serialised behind one mutex (safe, one at a
 * time).
 *
 * Units: simulated time in ns (double); cycles are cycles of the named
 * engine's own clock (machine clock_ghz). */
#ifndef NXSIM_SIM_MODEL_H
#define NXSIM_SIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../isa/error.h"
#include "../isa/program.h"
#include "../isa/state.h"
#include "machine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_sim_options {
    int keep_log;   /* 1: keep the per-instruction log (profiles, race check) */
    int progress;   /* 1: print progress on stderr (callers pass isatty(2)) */
} nx_sim_options;

/* The PE engine's datapath (docs/parts/rtl.md). All zero = the functional model, the
 * default. Kept apart from nx_sim_options so that existing positional
 * initialisers of that struct stay complete (-Wmissing-field-initializers).
 *
 * pe_rtl = 1: every load_stationary and multiply_moving of the run also goes
 * through the Verilated RTL PE array of its core (sim/rtl/, 128 x 128;
 * docs/parts/rtl.md): the instruction's semantics run as in the model (same
 * state, same error messages), then the RTL's fp32 results overwrite the
 * multiply's PSUM dst and the RTL's cycles are the instruction's cost
 * (load_stationary pe_rows - 1, multiply_moving N + pe_rows + pe_cols, at the
 * machine's PE clock). Values equal the model's bit for bit except that NaN
 * results are the canonical 0x7fc00000. Slow: about 1 ms per array cycle.
 * A PE larger than the RTL's 128 x 128 fails the instruction with the RTL's
 * message.
 *
 * vcd_path (requires pe_rtl): the RTL waveform of the run (GTKWave) is
 * written to this file for core 0 and to "<path without .vcd>.core<N>.vcd"
 * for every further core the program uses. A process traces at most one
 * file per core: a later run with another path fails. NULL: no VCD. */
typedef struct nx_sim_pe_options {
    int pe_rtl;
    const char *vcd_path;
} nx_sim_pe_options;

/* One executed instruction (or one DMA transfer on its queue). Times are
 * relative to the start of the run. A DMA instruction appears twice: once for
 * its issue on the SP stream (queue -1) and once for the transfer on its
 * queue. Records of instructions that never ran (after an `end`) are zero. */
typedef struct nx_sim_record {
    uint32_t index;      /* position in its engine stream */
    uint8_t core;
    uint8_t engine;      /* nx_engine; DMA transfers are issued by NX_ENG_SP */
    uint8_t opcode;
    uint8_t waited;      /* 1 if it had a semaphore wait or a barrier */
    int32_t queue;       /* DMA queue the transfer ran on (0 .. dma_queues - 1); -1 otherwise */
    double t_ready_ns;   /* reached the head of its stream (or queue) */
    double t_start_ns;   /* started, after semaphore waits and structural stalls */
    double t_end_ns;     /* completed: results visible, semaphore incremented */
    double busy_ns;      /* time it occupied its engine (or queue) */
    uint64_t bytes;      /* bytes moved (DMA) */
    uint64_t flops;      /* 2*K*M*N for multiply_moving, 0 otherwise */
    /* Happens-before bookkeeping, in one global order of semaphore events
     * (increments are numbered 1, 2, ... as they happen): wait_seq is the
     * number of increments that had happened when this instruction's wait was
     * satisfied (it saw every increment with inc_seq <= wait_seq), and inc_seq
     * numbers its own increment. 0 = none. Barrier passes count as waits on
     * every core's barrier arrival, which are recorded as increments. */
    uint64_t wait_seq;
    uint64_t inc_seq;
} nx_sim_record;

typedef struct nx_sim_engine_stats {
    uint64_t instructions;
    double busy_ns;
    double stall_ns;     /* waiting on semaphores, barriers or structural conflicts */
} nx_sim_engine_stats;

typedef struct nx_sim_result {
    double start_ns;     /* absolute SystemC time at which the run began */
    double total_ns;     /* simulated duration of the run */
    uint64_t instructions;
    uint64_t flops;
    nx_sim_engine_stats engine[NX_MAX_CORES][NX_ENG_COUNT];
    /* Per DMA queue of each core, for every queue the machine has
     * (nx_geometry_dma_queues): entry [core * dma_queues + queue]. Owned
     * (nx_sim_result_free); NULL when dma_queues is 0. */
    uint32_t dma_queues;
    uint64_t *dma_queue_bytes;
    uint64_t *dma_queue_transfers;
    nx_sim_record *log;  /* owned; NULL unless options.keep_log */
    size_t log_count;
} nx_sim_result;

/* Runs `prog` on the model of machine `m`. `st` must be initialised for the
 * program (nx_state_init) and hold its inputs; on return it holds the results.
 * Errors: a fault in an instruction (same text as the functional executor),
 * or "deadlock: ..." naming every blocked engine and the semaphore and value
 * it waits for (never a hang). */
int nx_sim_run(const nx_machine *m, const nx_program *prog, nx_state *st,
               const nx_sim_options *opt, nx_sim_result *out, nx_error *err);
/* nx_sim_run with a choice of PE datapath; pe NULL = nx_sim_run. Errors as
 * nx_sim_run's, plus "VCD FILE: ..." and "vcd_path needs pe_rtl". */
int nx_sim_run_pe(const nx_machine *m, const nx_program *prog, nx_state *st,
                  const nx_sim_options *opt, const nx_sim_pe_options *pe, nx_sim_result *out,
                  nx_error *err);
/* Frees what the result owns (log, queue statistics); safe on a zeroed result. */
void nx_sim_result_free(nx_sim_result *r);
/* Bytes / transfers of DMA queue `queue` of `core` in r (0 outside the range). */
static inline uint64_t nx_sim_queue_bytes(const nx_sim_result *r, uint32_t core, uint32_t queue) {
    if (!r->dma_queue_bytes || core >= NX_MAX_CORES || queue >= r->dma_queues) return 0;
    return r->dma_queue_bytes[(size_t)core * r->dma_queues + queue];
}
static inline uint64_t nx_sim_queue_transfers(const nx_sim_result *r, uint32_t core, uint32_t queue) {
    if (!r->dma_queue_transfers || core >= NX_MAX_CORES || queue >= r->dma_queues) return 0;
    return r->dma_queue_transfers[(size_t)core * r->dma_queues + queue];
}

#ifdef __cplusplus
}
#endif

#endif
