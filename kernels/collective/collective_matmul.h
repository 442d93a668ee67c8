/* The `collective_matmul` composite (docs/parts/collectives.md): A [M, K] x
 * B [K, N] on the grid's cores with K split across them: core c multiplies
 * its K range [c ceil(K/n), ...) of A's columns and B's rows on the PE
 * into PSUM (the matmul composite's tiling, kernels/matmul/matmul_tiles.h),
 * and the partial products of every result tile are summed between the
 * cores (kernels/author/collective.h) while the next tiles multiply. fp32
 * or bf16 operands of one dtype, the partial products exchanged and summed
 * in fp32, one rounding to the result's dtype; any M, N and K >= the
 * number of cores.
 *
 * Attribute (an nxsim addition, for measurement): reduce_scatter (1) = each
 * core owns the share of rows nx_coll_share gives it in every result tile,
 * receives the other core's partial of those rows only and stores them;
 * 0 = every tile is all-reduced (both cores hold the whole sum) and each
 * stores its share. */
#ifndef NXSIM_KERNELS_COLLECTIVE_MATMUL_H
#define NXSIM_KERNELS_COLLECTIVE_MATMUL_H

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/matmul/matmul.h"

/* Checks A and B (2-D, one dtype fp32 or bf16, K agreeing, K >= cores) and
 * the attribute; fills p and *scatter. */
int nx_collective_matmul_read(const nx_norm_tensor *in, uint32_t n_in, const nx_attrs *attrs, uint32_t cores,
                              nx_matmul_params *p, int *scatter, nx_error *err);
int nx_collective_matmul(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
