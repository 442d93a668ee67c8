/* The norms family's references (the reference tier, kernels/ref/ref.h's
 * conventions: plain C on C-contiguous host arrays, nothing allocated for
 * the caller, -1 with a one-line message on a bad argument). Each one reads
 * its operands exactly (nx_dtype_load), computes a whole row at a time in
 * double precision, independently of any tiling, and stores every result
 * with one rounding (nx_dtype_store). Math: kernels/norms/norms.h. */
#ifndef NXSIM_KERNELS_REF_NORMS_REF_H
#define NXSIM_KERNELS_REF_NORMS_REF_H

#include "isa/error.h"
#include "kernels/norms/norms.h"

/* rmsnorm over p->rows rows of p->H: x, gamma [, r] [, scale] in the
 * dtypes of p; out[0 .. p->n_results) the results in their order
 * (nx_rmsnorm_result). x' = x + r is an fp32 add rounded to x's dtype (as
 * the result holds it) and y is computed from it; s = max(fp32(max|y| /
 * fp8_max), 1e-6) in fp32, q = fp8_e4m3(y / s) or fp8_e4m3(y / scale). */
int nx_ref_rmsnorm(const nx_rmsnorm_params *p, const void *x, const void *gamma, const void *r, const void *scale,
                   void *const *out, nx_error *err);

/* softmax along p->axis of x ([outer, A, inner] by p), y of x's dtype:
 * max, exp(x - max), its sum and the quotient in double, one rounding. A
 * NaN in a line makes the line NaN; +Inf gives NaN (Inf - Inf), as numpy. */
int nx_ref_softmax(const nx_softmax_params *p, const void *x, void *y, nx_error *err);

/* layernorm over p->rows rows of p->H (X, Scale [, B] in p's dtypes):
 * out[0] = Y, out[1] = Mean, out[2] = InvStdDev, all of X's dtype; mean and
 * variance by two passes in double. */
int nx_ref_layernorm(const nx_layernorm_params *p, const void *x, const void *scale, const void *bias,
                     void *const *out, nx_error *err);

#endif
