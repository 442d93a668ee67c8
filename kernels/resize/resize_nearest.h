/* ResizeNearest (registry key #2, leaf resize_nearest_fixed_dma_kernel):
 * nearest-neighbour resize of data [N, H, W, C] to out [N, OH, OW, C] by
 * the coordinate rules of kernels/resize/resize_rule.h (the default rule is
 * PyTorch's `nearest`; the ONNX coordinate_transformation_mode and
 * nearest_mode attributes select the ONNX rules).
 *
 * Call: args[0] the data, args[1] the result (same dtype, rank 4, N and C
 * the data's); additional args from the resize args builder: `result` (the
 * result tensor's name), `access_shape` and `out_shape` (its shape), and the
 * op's attributes (`scales`, `coordinate_transformation_mode`,
 * `nearest_mode`). Every dtype is copied bit-exactly (DMA moves equal dtypes
 * as bits). Refusals name the operand or attribute, e.g.
 *   operand 1 (out): shape [2,59,38,3] keeps C 3 but data (x) has C 64
 * Limits: H, W, OH, OW below 2^22 - 1 and images of at most 2^24 pixels (the
 * row indices are computed on chip in fp32, which is exact up to there).
 * docs/parts/kernels.md describes the tiling. */
#ifndef NXSIM_KERNELS_RESIZE_NEAREST_H
#define NXSIM_KERNELS_RESIZE_NEAREST_H

#include "kernels/author/author.h"
#include "kernels/kernel.h"

int resize_nearest_fixed_dma_kernel(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
