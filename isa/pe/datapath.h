/* The PE array's matmul datapath: the arithmetic of multiply_moving
 * (isa/insns/multiply_moving.c states it), done by one of several
 * interchangeable kernels that all give the same bits.
 *
 *   scalar   plain C, the reference every other kernel equals bit for bit
 *   vector   GCC vector extensions: the build target's own SIMD (SSE2 on a
 *            baseline x86-64 build, NEON on aarch64), no CPU check needed
 *   avx2     x86-64 AVX2 + FMA intrinsics
 *   avx512   x86-64 AVX-512F intrinsics
 *
 * Which kernel runs: the environment variable NXSIM_MM_KERNEL names one
 * (avx512, avx2, vector or scalar); unset or empty, the fastest kernel this
 * CPU runs (avx512, else avx2, else vector). A name that is unknown, or a
 * kernel this build or CPU cannot run, is refused with a one-line error: no
 * silent fallback. The variable is read at every multiply (a getenv next to
 * at least K x M x N multiply-adds), so there is no process-wide state.
 * docs/parts/pe-datapath.md describes the kernels and why they agree. */
#ifndef NXSIM_ISA_PE_DATAPATH_H
#define NXSIM_ISA_PE_DATAPATH_H

#include <stdint.h>

#include "../access.h"
#include "../dtype.h"
#include "../error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nx_pe_kernel {
    NX_PE_KERNEL_SCALAR,
    NX_PE_KERNEL_VECTOR,
    NX_PE_KERNEL_AVX2,
    NX_PE_KERNEL_AVX512,
    NX_PE_KERNEL_COUNT
} nx_pe_kernel;

/* "scalar", "vector", "avx2", "avx512"; NULL for an invalid value. */
const char *nx_pe_kernel_name(nx_pe_kernel k);
/* 1 if this build has kernel k and this CPU (and OS) runs it, else 0. */
int nx_pe_kernel_available(nx_pe_kernel k);
/* The kernel NXSIM_MM_KERNEL would give when set to `name`: NULL or "" is
 * the fastest available kernel. Returns 0 and sets *out, or -1 with err
 * naming the value and the kernels available here. */
int nx_pe_kernel_choose(const char *name, nx_pe_kernel *out, nx_error *err);
/* nx_pe_kernel_choose(getenv("NXSIM_MM_KERNEL")); the error names the
 * variable. */
int nx_pe_kernel_active(nx_pe_kernel *out, nx_error *err);

/* PE input conversion (load_stationary's and multiply_moving's): `rows`
 * partitions of a view of a PE input dtype -> fp32, partition r, element e
 * at out[r * ld + e]: exactly isa/pe_input.h's nx_pe_rows_to_f32 (a bf16
 * NaN becomes the canonical quiet NaN with its sign), done by kernel k's
 * vectorised converter for contiguous fp32 and bf16 rows. */
void nx_pe_convert(nx_pe_kernel k, const nx_view *v, uint32_t rows, float *out, uint64_t ld);

/* One multiply: K = moving->partitions, M = dst->partitions,
 * N = moving->free_elems (= dst->free_elems). The caller has validated the
 * operands (multiply_moving's rules); moving and dst do not overlap. */
typedef struct nx_pe_matmul {
    const float *stationary;    /* fp32, stationary[k * stationary_ld + m], k < K, m < M */
    uint64_t stationary_ld;     /* elements */
    nx_dtype stationary_dtype;  /* the PE input dtype the tile was loaded from */
    const nx_view *moving;      /* K partitions x N elements, a PE input dtype */
    const nx_view *dst;         /* M partitions x N elements, fp32 (any access pattern) */
    int accumulate;             /* dst = dst + partial instead of dst = partial */
    struct nx_workers *workers; /* NULL, or threads that share out the output tiles (isa/workers.h) */
} nx_pe_matmul;

/* dst[m][n] = (accumulate ? dst[m][n] + : ) sum_k stationary[k][m] *
 * moving[k][n] in multiply_moving's order and roundings, NaN results as the
 * canonical quiet NaN, computed by `kernel` (which must be available).
 * Every kernel gives the same bits, and so does every number of workers: a
 * large multiply's panels of output columns are shared out over them, each
 * output element being computed by one thread exactly as by one. Returns 0, or -1 with err when the
 * scratch buffer (about 4 x K x (N + M + 80) bytes, plus 4 x M x N when
 * dst rows are not contiguous, plus 4 x K x 32 per worker thread) cannot be allocated; dst is then
 * unchanged. */
int nx_pe_matmul_run(nx_pe_kernel kernel, const nx_pe_matmul *mm, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
