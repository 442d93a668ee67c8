/* The four kernels of the public NKI matrix-multiplication tutorial
 * (aws-neuron-sdk, general/nki/tutorials/matrix_multiplication.rst, kernels
 * in matrix_multiplication_nki_kernels.py), written against the authoring
 * layer with the tutorial's loop order, tile and block sizes and load
 * placement. They are composites of family "tutorial" (registry/families/tutorial.c);
 * docs/parts/tutorial.md describes each one and what nxsim measures for it,
 * docs/parts/fidelity.md compares those figures with the published ones.
 *
 * Every kernel computes result[M, N] = lhsT[K, M]^T @ rhs[K, N]:
 * call->args[0] = lhsT [K, M], call->args[1] = rhs [K, N] (the tutorial
 * takes the left-hand side already transposed, K on the partitions), the
 * output call->args[2] = result [M, N] of lhsT's dtype. Inputs of one PE
 * dtype (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2); PSUM accumulates in fp32.
 *
 * Tile sizes come from the machine geometry, as the tutorial's come from
 * nl.tile_size: TILE_K = partitions (pmax), TILE_M = pe_cols
 * (gemm_stationary_fmax), TILE_N = pe_moving_free_max (gemm_moving_fmax);
 * 128, 128 and 512 on trn1 and trn2.
 *
 * Shape rules (the tutorial's asserts and docstrings; anything else is
 * refused with the rule in the message):
 *   nki_matmul_tiled, nki_matmul_hoist_load: K % TILE_K, M % TILE_M,
 *     N % TILE_N == 0;
 *   nki_matmul_block_free_dimension: K % TILE_K, M % (2 TILE_M),
 *     N % (2 TILE_N) == 0 (blocks of 2 x 2 tiles);
 *   nki_matmul_fully_optimized: M % (TILE_M x tiles_in_block_m),
 *     N % (TILE_N x tiles_in_block_n), K % (TILE_K x tiles_in_block_k) == 0,
 *     the meta-parameters from the op's integer attributes of those names
 *     (defaults 16, 2 and 8, the tutorial's).
 * A kernel whose SBUF working set (the tiles the tutorial keeps resident)
 * does not fit one partition is refused with the sizes; the fully
 * optimised kernel instead spills result blocks to HBM, as the tutorial
 * says the compiler does for large M. Row pitches must fit the 32-bit
 * access-pattern strides. */
#ifndef NXSIM_KERNELS_TUTORIAL_TUTORIAL_H
#define NXSIM_KERNELS_TUTORIAL_TUTORIAL_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"

int nx_tutorial_matmul_tiled(nx_kctx *k, const nx_kernel_call *call, nx_error *err);
int nx_tutorial_matmul_hoist_load(nx_kctx *k, const nx_kernel_call *call, nx_error *err);
int nx_tutorial_matmul_block_free_dimension(nx_kctx *k, const nx_kernel_call *call, nx_error *err);
int nx_tutorial_matmul_fully_optimized(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* The attributes the fully optimised kernel reads, NULL-terminated. */
extern const char *const nx_tutorial_matmul_attrs[];

/* The result shape [M, N] of lhsT [K, M] @ rhs [K, N] (ranks and the
 * shared K checked; names name the operands in errors). */
int nx_tutorial_result_shape(const char *lhs_name, uint32_t lhs_ndims, const uint64_t *lhs_shape,
                             const char *rhs_name, uint32_t rhs_ndims, const uint64_t *rhs_shape,
                             uint64_t out[2], nx_error *err);

/* The fully optimised kernel's meta-parameters from attrs (NULL: the
 * defaults): tiles per block along M, N and K. Errors name the attribute. */
typedef struct nx_tutorial_blocking {
    uint64_t tiles_m, tiles_n, tiles_k;
} nx_tutorial_blocking;
int nx_tutorial_blocking_read(const nx_attrs *attrs, nx_tutorial_blocking *out, nx_error *err);

#endif
