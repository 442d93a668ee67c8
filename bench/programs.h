/* The programs nxsim-bench runs, built with the program builder
 * (isa/builder.h). Each builder returns a validated program plus where its
 * tensors live, and fills inputs / checks outputs on an nx_state. */
#ifndef NXSIM_BENCH_PROGRAMS_H
#define NXSIM_BENCH_PROGRAMS_H

#include <stdint.h>

#include "isa/error.h"
#include "isa/program.h"
#include "isa/state.h"
#include "sim/machine.h"

/* ---- (a) tiled GEMM: C[M, N] = A[M, K] @ B[K, N] on core 0 -------------
 *
 * Tiles: m = pe_cols (128) rows of C per PE stationary tile, k = pe_rows
 * (128) per contraction step, n = 512 (one 2 KiB PSUM bank of fp32) columns.
 * Loop: n-blocks outer, m-tiles inner ("steps"). Per n-block the B panel
 * [K, n] stays in SBUF; per step the A panel [K, m] is loaded, the PE
 * accumulates K/k multiplies into one PSUM bank, the DVE copies the bank to
 * an SBUF C tile and the SP stores it. Everything is double-buffered (two B
 * panels, two A panels, two PSUM banks, two C tiles) and ordered by
 * semaphores only; loads and stores are split over `dma_engines` DMA
 * engines by partition groups.
 *
 * HBM layouts (the kernel's, like NKI's pre-transposed lhsT): A as
 * "at_tiles" [M/m][k][K/k][m] (element (r, c) of A at tile r/m, partition
 * c%k, k-tile c/k, column r%m), so each partition's part of an A panel is
 * one contiguous run; B as "b_tiles" [N/n][k][K/k][n] likewise; C plain
 * row-major [M, N] fp32. Inputs are `dtype` (fp32 or bf16). */
typedef struct bench_gemm {
    uint32_t M, K, N;
    nx_dtype dtype;
    uint32_t dma_engines;   /* transfers per panel (<= machine dma_engines) */
    /* filled by bench_gemm_build */
    uint32_t mt, kt, nt;    /* tile sizes */
    uint64_t a_off, b_off, c_off;
} bench_gemm;

/* Builds the program; M, K, N must be multiples of the tile sizes (or
 * smaller than them). Errors name the shape. */
int bench_gemm_build(const nx_machine *m, bench_gemm *g, nx_program *out, nx_error *err);
/* Deterministic input values: element `index` of the matrix numbered
 * `which` (0 = A, 1 = B), uniform in [-1, 1) and exactly representable in
 * dt (fp32 or bf16). The same call gives the reference its operands. */
float bench_gemm_value(uint32_t which, uint64_t index, nx_dtype dt);
/* Writes A (row-major [M, K]) and B ([K, N]) of bench_gemm_value into the
 * state, in the kernel's layouts, without a host copy of the matrices. */
void bench_gemm_put_inputs(const bench_gemm *g, nx_state *st);
/* Reads C back as row-major [M, N]. */
void bench_gemm_get_output(const bench_gemm *g, const nx_state *st, float *c);

/* The GEMM's reference (bench/gemm_reference.c): OpenBLAS sgemm on the
 * values of bench_gemm_value (warmed up on a small product first, then
 * timed: wall and CPU seconds), then, untimed, |A| |B| to scale the error:
 * |c_sim - c_blas| <= 2 K u (|A| |B|) elementwise, u = 2^-24, bounds two fp32
 * sums of K products in any order. c_sim is row-major [M, N]. */
typedef struct bench_gemm_check {
    double blas_s, blas_cpu_s; /* the timed sgemm */
    double max_rel_err;        /* max |c_sim - c_blas| / (|A| |B|) */
    double err_bound;          /* 2 K 2^-24 */
    int ok;                    /* every element finite and within err_bound */
} bench_gemm_check;
/* 0, or -1 with err when the host is out of memory for the matrices. */
int bench_gemm_check_values(const bench_gemm *g, const float *c_sim, bench_gemm_check *out, nx_error *err);

/* ---- (b) a chain of dependent tiny DVE instructions -------------------
 * memset x = 0, then `count` tensor_scalar x = x + 1 on one element of one
 * partition: each reads what the previous wrote. x ends at `count` (exact
 * in fp32 up to 2^24). */
int bench_chain_build(const nx_machine *m, uint32_t count, nx_program *out, uint64_t *x_offset,
                      nx_error *err);

/* ---- (c) DMA-bound copy HBM -> SBUF -> HBM ----------------------------
 * `bytes` (a multiple of 128 rows x 32 KiB) of fp32 "src" copied to "dst"
 * through SBUF on every core of the machine (rows split by core), in chunks
 * of 128 partitions x 32 KiB, four SBUF buffers per core, each chunk moved
 * by `dma_engines` transfers per direction. */
typedef struct bench_copy {
    uint64_t bytes;
    uint32_t cores;
    uint32_t dma_engines;
    /* filled by bench_copy_build */
    uint64_t src_off, dst_off;
    uint64_t transfers;     /* DMA transfers in all */
} bench_copy;
int bench_copy_build(const nx_machine *m, bench_copy *c, nx_program *out, nx_error *err);

#endif
