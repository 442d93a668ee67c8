/* The run path: run a lowered op (or a program) on a backend, then check it.
 * One function for everything that runs kernels: `nxsim run` and `nxsim
 * exec`, the tests, the benches and libnxsim (api/, under the Python package).
 *
 *   nx_run_op:      lower the prepared op on its target (registry/prepare.h:
 *                      the one lookup and attribute check happened there)
 *                   -> place the operands in HBM (given bytes, or pseudo-
 *                      random from the seed)
 *                   -> nx_run_program
 *                   -> the results (pointers into the final HBM)
 *                   -> optional --check: the rules' reference on the same
 *                      operands, every element under the rules' tolerance
 *   nx_run_program: the functional executor or the SystemC model (with the
 *                   PE datapath of the model or the RTL array), then the
 *                   optional race check over the model's log.
 *
 * This is the one part of registry/ that uses sim/ (its own library,
 * nxsim_run): registry/ proper stays below the simulator. Within it the
 * simulator is reached only through the backends (registry/run/backend.h);
 * this header takes from sim/ only the machine description and the model's
 * result types.
 *
 * Ownership: the program belongs to the lowerer (valid until
 * nx_lowerer_free); everything else in a result belongs to the result
 * (nx_run_result_free / nx_run_trace_free, safe on a zeroed or failed one).
 * Input bytes are only read.
 *
 * Errors: 0, or -1 with one line in err and `failure` saying which stage
 * refused (the CLI maps it to an exit status). A failed --check is NOT an
 * error: the run returns 0 with check_failures > 0, so the caller can print
 * the comparison; it decides what a mismatch means.
 *
 * Units: simulated times in ns (nx_sim_result, sim/model.h); sizes in
 * bytes; element counts where named. */
#ifndef NXSIM_REGISTRY_RUN_RUN_H
#define NXSIM_REGISTRY_RUN_RUN_H

#include <stdint.h>

#include "isa/error.h"
#include "isa/program.h"
#include "isa/state.h"
#include "registry/check.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "sim/machine.h"
#include "sim/model.h"

typedef enum nx_run_backend {
    NX_RUN_MODEL = 0,      /* the cycle-approximate SystemC model (timing, profile, log) */
    NX_RUN_FUNCTIONAL = 1, /* nx_exec_program: the same results, no timing */
} nx_run_backend;

typedef struct nx_run_options {
    nx_run_backend backend;
    int pe_rtl;           /* model: load_stationary/multiply_moving through the RTL PE array */
    const char *vcd_path; /* model with pe_rtl: the RTL waveform (sim/model.h) */
    int keep_log;         /* model: keep the per-instruction log (a profile trace needs it) */
    int race_check;       /* model: check the log for races (implies keep_log); a race
                           * fails the run with NX_RUN_RACE */
    int check;            /* nx_run_op: compare every result with the reference */
    uint32_t grid;        /* nx_run_op: 0 = the kernel's own grid; 1 or 2 = trace on that
                           * many cores instead (nx_lower_on_grid; benches compare them) */
    uint64_t seed;        /* nx_run_op: operands without bytes get pseudo-random values */
    int progress;         /* model: progress on stderr (callers pass isatty(2)) */
    uint32_t threads;     /* host threads for the functional work of large instructions
                           * (isa/workers.h): 0 = NXSIM_THREADS (unset: the host CPUs
                           * the process may use, at most 8). Results and
                           * simulated times are the same for every count */
    uint64_t max_memory;  /* bytes a run may hold at its peak (nx_run_memory); 0: no limit */
    uint64_t max_fill;    /* bytes of pseudo-random operand values a run may make; 0: no limit */
    uint64_t held_bytes;  /* nx_run_op: what the caller holds for this run besides the run's
                           * own memory (loaded operands, serialised results), counted
                           * against max_memory */
} nx_run_options;

/* Which stage refused (with -1). */
typedef enum nx_run_failure {
    NX_RUN_OK = 0,
    NX_RUN_BAD_INPUT, /* the op: a leaf's refusal, bad options
                       * (race check or RTL on the functional backend), no reference for --check */
    NX_RUN_FAULT,     /* the program faulted or deadlocked; the state or a reference could
                       * not be allocated; a reference failed */
    NX_RUN_RACE,      /* the race check found a race: err is its one-line report */
    NX_RUN_LIMIT,     /* the run would pass max_memory or max_fill (checked before anything
                       * is allocated or filled) */
} nx_run_failure;

/* ---- resources: what a run will hold, checked before anything is taken ---------- */

/* The peak memory of a run, in bytes, by part. */
typedef struct nx_run_memory {
    uint64_t hbm;     /* the program's HBM extent (or, before lowering, the op's tensors) */
    uint64_t onchip;  /* SBUF, PSUM and the PE's stationary tile of every core */
    uint64_t log;     /* the model's per-instruction log and its readers (keep_log,
                       * race_check): 2 records of 80 bytes per instruction, twice */
    uint64_t check;   /* --check: the reference's copies of the operands and results */
    uint64_t held;    /* opt->held_bytes */
    uint64_t total;
    const char *largest;        /* the largest tensor's name (borrowed), or NULL */
    uint64_t largest_bytes;
} nx_run_memory;

/* What running prog on m with opt holds (check: 0; nx_run_op adds it). */
void nx_run_memory_of_program(const nx_machine *m, const nx_program *prog, const nx_run_options *opt,
                              nx_run_memory *out);
/* The same for an op before it is lowered: its operands and results stand
 * for the HBM, plus the reference's copies with opt->check. */
void nx_run_memory_of_op(const nx_machine *m, const nx_macro_op *op, const nx_run_options *opt,
                         nx_run_memory *out);
/* 0, or -1 when mem->total passes opt->max_memory: "the run needs about
 * 4.0 GiB (HBM 4.0 GiB, the largest tensor 'x' 4.0 GiB; ...), more than
 * the memory limit of 2.0 GiB". */
int nx_run_memory_check(const nx_run_memory *mem, const nx_run_options *opt, nx_error *err);
/* 0, or -1 when `bytes` of pseudo-random values (for `what`, e.g. "input
 * x") pass opt->max_fill. */
int nx_run_fill_check(uint64_t bytes, const char *what, const nx_run_options *opt, nx_error *err);

/* What the backend reports about one run of a program. */
typedef struct nx_run_trace {
    int on_model;      /* 1: sim holds the model's result (times, engines, queues, log) */
    nx_sim_result sim;
    int race_checked;  /* 1: the race check ran and found no race */
} nx_run_trace;

/* Runs prog on machine m from state st (initialised for prog and holding
 * its inputs; on return it holds the results). With more than one thread
 * (opt->threads, else NXSIM_THREADS) and no pool of the caller's in
 * st->workers, a worker pool is made for the run and lent to st (st->workers
 * is NULL again on return). Errors: the executor's or model's message (a
 * fault, "deadlock: ..."), NX_RUN_FAULT; a race, NX_RUN_RACE; race_check or
 * pe_rtl with the functional backend, a bad NXSIM_THREADS or a thread count
 * outside [1, NX_WORKERS_MAX], NX_RUN_BAD_INPUT. *out is filled as far as the run got (free it either
 * way). */
int nx_run_program(const nx_machine *m, const nx_program *prog, nx_state *st, const nx_run_options *opt,
                   nx_run_trace *out, nx_run_failure *failure, nx_error *err);
void nx_run_trace_free(nx_run_trace *t);

typedef struct nx_run_result {
    nx_kernel_target target;  /* what the func_name reached: a registry entry or a composite */
    const nx_program *prog;   /* the lowered program (owned by the lowerer) */
    uint32_t grid;            /* cores it runs on */
    uint64_t new_traces;      /* the lowerer's NEW_NKI_FE after the run */
    uint64_t cache_hits;      /* the lowerer's cache hits after the run */
    nx_state state;           /* HBM and SBUF after the run (owned) */
    int have_state;
    int operand_tensor[NX_OP_MAX_TENSORS]; /* op operand i -> program tensor index */
    int result_tensor[NX_OP_MAX_TENSORS];  /* op result j -> program tensor index */
    const uint8_t *results[NX_OP_MAX_TENSORS]; /* result j's bytes in state.hbm, C order */
    nx_run_trace trace;
    int checked;              /* opt.check ran */
    nx_tolerance tolerance[NX_OP_MAX_TENSORS];
    nx_check_result check[NX_OP_MAX_TENSORS];
    uint32_t check_failures;  /* results with elements beyond their tolerance */
    nx_run_failure failure;   /* with -1 */
} nx_run_result;

/* Lowers p->op on p->target with L (a fresh lowerer gives new_traces 1),
 * runs it on m and, with opt->check, checks it. p comes from nx_prepare_op
 * with the tables of L (the target is not looked up again, the attributes
 * not checked again). inputs
 * (optional) gives operand i's bytes in C order (nx_tensor_bytes of its
 * tensor; NULL entries and a NULL array mean pseudo-random from opt->seed,
 * seeded by the tensor's index in the program). m must have the geometry L
 * was made for. The reference reads the operands as given (or regenerated),
 * not the HBM after the run, so a leaf that writes its input cannot hide it. */
int nx_run_op(nx_lowerer *L, const nx_machine *m, const nx_prepared *p, const void *const *inputs,
              const nx_run_options *opt, nx_run_result *out, nx_error *err);
void nx_run_result_free(nx_run_result *r);

#endif
