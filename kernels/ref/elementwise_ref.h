/* The elementwise family's references (kernels/ref/ref.h's conventions). */
#ifndef NXSIM_KERNELS_REF_ELEMENTWISE_REF_H
#define NXSIM_KERNELS_REF_ELEMENTWISE_REF_H

#include "isa/error.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/matmul/matmul.h"

/* cumsum along p's axis: for every line, an fp32 running sum from -0 in
 * axis order (last to first with reverse), as ONNX CumSum and numpy's
 * cumsum of float32 compute it; the element before the add with exclusive
 * (+0 for the first). Each y is rounded once to p->dtype. int32: the
 * exact sum modulo 2^32 (two's complement). */
int nx_ref_cumsum(const nx_cumsum_params *p, const void *x, void *y, nx_error *err);

/* rope (layout by p): x [B, H, S, D], cos and sin [S, D/2] or [B, S, D/2]
 * of p's dtypes; out of x's dtype, each element x_a cos - x_b sin (or + )
 * in double, rounded once. */
int nx_ref_rope(const nx_rope_params *p, const void *x, const void *cos_, const void *sin_, void *out, nx_error *err);

/* ONNX MatMul (kernels/matmul/matmul.h) of a and b into c (p->out_shape,
 * p->dtype): per result matrix an fp32 sgemm, rounded once. Allocates fp32
 * copies of one matrix each (freed before returning). */
int nx_ref_matmul(const nx_matmul_params *p, const void *a, const void *b, void *c, nx_error *err);

#endif
