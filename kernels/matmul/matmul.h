/* The `matmul` composite: ONNX MatMul (numpy.matmul): A [..., M, K] @
 * B [..., K, N], batch dims broadcast, a 1-D A promoted to [1, K] and a
 * 1-D B to [K, 1] (the added dim removed from the result); fp32 or bf16
 * operands of one dtype, fp32 accumulation in PSUM, the result of that
 * dtype, any M, K, N. Written against the authoring layer; docs/parts/
 * norms.md ("matmul") describes the plan and what nxsim measures. */
#ifndef NXSIM_KERNELS_MATMUL_MATMUL_H
#define NXSIM_KERNELS_MATMUL_MATMUL_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

typedef struct nx_matmul_params {
    nx_dtype dtype;
    uint64_t M, K, N;
    uint32_t batch_ndims;                        /* the result's batch dims */
    uint64_t batch[NX_KERNEL_MAX_DIMS];          /* their sizes */
    uint64_t a_stride[NX_KERNEL_MAX_DIMS];       /* A's matrix index step per batch dim (0: broadcast) */
    uint64_t b_stride[NX_KERNEL_MAX_DIMS];
    uint64_t batches;                            /* product of batch[] */
    uint32_t out_ndims;
    uint64_t out_shape[NX_KERNEL_MAX_DIMS];
} nx_matmul_params;

/* Checks A and B (ranks, dtypes, K, broadcastable batch dims) and fills p. */
int nx_matmul_read(const nx_norm_tensor *in, uint32_t n_in, nx_matmul_params *p, nx_error *err);
/* Matrix index (into A's or B's stack of matrices) of result batch i. */
uint64_t nx_matmul_a_index(const nx_matmul_params *p, uint64_t i);
uint64_t nx_matmul_b_index(const nx_matmul_params *p, uint64_t i);
int nx_matmul(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
