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

/* Bytes of a trace path DIR/CASE.json (bench.c checks DIR's length). */
#define BENCH_PATH_MAX 4096

typedef struct bench_options {
    int race_check;          /* also run the race detector on the log (timed) */
    const char *trace_dir;   /* also write DIR/<case>.json (timed) */
    int summary;             /* also print the profile summary of each run */
    unsigned threads;        /* host threads of the model's large instructions (isa/workers.h),
                              * and OpenBLAS's threads: N against N */
} bench_options;

/* Targets printed beside the figures (docs/parts/bench.md). GEMM: sim wall
 * time / OpenBLAS sgemm wall time, one thread each (or N each, --threads); fp32 inputs keep the
 * PE's separate multiply and add rounding, which costs twice a fused
 * multiply-add. */
#define TARGET_GEMM_RATIO_BF16 1.5
#define TARGET_GEMM_RATIO_FP32 2.0
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
    double blas_s, blas_cpu_s, ratio, target_ratio, max_rel_err, err_bound, tflops_sim, tflops_peak;
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

/* ---- what the figures depend on (host.c) ---- */
typedef struct bench_host {
    char cpu[128];              /* /proc/cpuinfo "model name" */
    long cpus;                  /* online CPUs */
    char simd[48];              /* which of avx512f, avx2, fma the CPU has (x86-64) */
    const char *build_type;     /* CMAKE_BUILD_TYPE */
    const char *c_flags;        /* CMAKE_C_FLAGS + the build type's */
    const char *cxx_flags;
    const char *sanitize_flags; /* "" unless NXSIM_SANITIZE */
    const char *compiler;       /* the compiler's version string */
    char pe_kernel[16];         /* the PE matmul kernel the runs use (bench_pe_kernel) */
    char pe_kernel_env[32];     /* NXSIM_MM_KERNEL, or "unset" */
    char blas_fallback[32];     /* the core OpenBLAS had chosen when bench_blas_core replaced it, or "" */
} bench_host;

void bench_host_info(bench_host *h);
/* Fills h->pe_kernel from NXSIM_MM_KERNEL; -1 with err when it names no
 * kernel this host runs. */
int bench_pe_kernel(bench_host *h, nx_error *err);
/* OpenBLAS 0.3.21 falls back to its Prescott (SSE3) kernels on CPUs it does
 * not know, such as recent Xeons: a baseline several times slower than
 * OpenBLAS at its best. When OPENBLAS_CORETYPE is unset and the core
 * OpenBLAS chose lacks the host's AVX2 or AVX-512, this sets it (Haswell or
 * SkylakeX) and executes the bench again, so the comparison is against
 * OpenBLAS's best kernels for the host; the header says so. Returns only
 * when nothing needs changing (or re-executing failed). */
void bench_blas_core(char **argv);

#endif
