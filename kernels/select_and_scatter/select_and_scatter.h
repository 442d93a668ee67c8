/* SelectAndScatter (registry key #1, leaf select_and_scatter_kernel): XLA's
 * SelectAndScatter with select = GE and scatter = add, the max-pool gradient.
 *
 *   out = operand's shape and dtype, every element init_value;
 *   for each source index s (row-major): walk the window of s over the
 *   padded operand (row-major), skip padding, select the first element that
 *   is >= every later one (ties keep the earliest); out[selected] += source[s].
 *   Overlapping windows accumulate; a window of padding only selects nothing.
 *
 * Attributes (XLA's names): window_dimensions (one int >= 1 per dim),
 * window_strides (>= 1, default 1), padding ([[lo, hi]] per dim, default 0;
 * negative crops), init_value (a number, default 0). The source's shape must
 * be the window count per dim, floor((in + lo + hi - window) / stride) + 1.
 *
 * The leaf takes rank-4 NCHW operands of any float dtype (fp32, bf16, fp16,
 * fp8_e4m3, fp8_e5m2), source and result of the operand's dtype, windows of
 * any size over H and W and of size 1 over N and C (any stride and padding
 * there: each source plane selects within one operand plane). Values must be
 * NaN-free (XLA's select on NaN depends on the scan order; the leaf selects
 * by the window maximum). Sums are in the operand dtype, each add rounded,
 * in the source's row-major order (XLA's), so results are bit-exact against
 * nx_ref_select_and_scatter; with init_value +0 even the sign of zeros is.
 * docs/parts/kernels.md describes the tiling. */
#ifndef NXSIM_KERNELS_SELECT_AND_SCATTER_H
#define NXSIM_KERNELS_SELECT_AND_SCATTER_H

#include <stdint.h>

#include "isa/error.h"
#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "params.h"

int select_and_scatter_kernel(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
