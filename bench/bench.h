/* nxsim-bench: the cases (cases.c) and what each reports. A case runs in a
 * child process of its own (bench.c) so that its peak RSS is its own; the
 * child sends its case_result back through a pipe, so the struct is plain
 * data. Figures are printed, never judged: only values decide the exit
 * status. */
#ifndef NXSIM_BENCH_BENCH_H
#define NXSIM_BENCH_BENCH_H

#include <stdint.h>

#include "isa/dtype.h"
#include "isa/error.h"
#include "sim/machine.h"

typedef enum case_kind { CASE_GEMM, CASE_CHAIN, CASE_COPY } case_kind;

typedef struct bench_case {
    const char *name;
    case_kind kind;
    uint32_t M, K, N;   /* gemm */
    nx_dtype dtype;     /* gemm */
    uint64_t size;      /* chain: instructions; copy: bytes */
} bench_case;

typedef struct bench_options {
    int race_check;          /* also run the race detector on the log (timed) */
    const char *trace_dir;   /* also write DIR/<case>.json (timed) */
    int summary;             /* also print the profile summary of each run */
} bench_options;

/* Targets printed beside the figures (docs/parts/bench.md). */
#define TARGET_GEMM_RATIO 1.5   /* sim wall time / OpenBLAS sgemm wall time */
#define TARGET_CHAIN_IPS 2e6    /* simulated instructions per wall second */
#define TARGET_RSS_FACTOR 2.0   /* x (program HBM bytes + cores' SBUF and PSUM) */

typedef struct case_result {
    char name[48];
    int kind;
    int ran;                 /* 1: the case ran to the end */
    int values_ok;           /* 1: results checked against the reference */
    char error[NX_ERROR_MAX + 64];
    double wall_s;           /* nx_sim_run wall time */
    double cpu_s;            /* ... and the CPU time it took (user + system) */
    double sim_ns;           /* simulated time */
    double sim_cycles;       /* simulated time in cycles of `clock` */
    char clock[8];           /* "pe" or "dve"; "" for the copy */
    uint64_t instructions;   /* simulated instructions (incl. DMA transfers) */
    double insn_per_s;
    double rss_bytes;        /* peak RSS of the child once the model ran */
    double rss_bound_bytes;  /* TARGET_RSS_FACTOR x (HBM + SBUF + PSUM) */
    double program_bytes;    /* the program's instruction records */
    /* gemm */
    double blas_s, blas_cpu_s, ratio, max_rel_err, err_bound, tflops_sim, tflops_peak;
    /* chain */
    double final_value;
    /* copy */
    double bound_ns, moved_bytes;
    /* optional */
    double race_s, trace_s, trace_bytes;
    int race_status;         /* nx_race_check result; 2 = not run */
    char race_msg[NX_ERROR_MAX];
} case_result;

/* Runs one case in this process and fills *out (never exits). */
void bench_run_case(const nx_machine *m, const bench_case *c, const bench_options *opt, case_result *out);

#endif
