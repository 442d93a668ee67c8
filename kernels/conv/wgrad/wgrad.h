/* The weight-gradient convolution leaves (registry keys #5
 * Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh, #7 conv2d_column_packing and #8
 * conv2d_column_packing_io10; docs/parts/wgrad.md).
 *
 * Each is an XLA convolution (docs/parts/conv.md) whose "image" is the
 * forward activations with the forward batch as its feature dim and whose
 * "filter" is the output gradient; the result is the forward filter's
 * gradient. With the labels below (CI = the forward batch, the contraction):
 *
 *   #5  img (CI, N, H, W) fb01, filt (CI, CO, HF, WF) io01 -> out (K0, K1, N, CO) 01bf
 *       out[k0,k1,n,co] = sum_{ci,y,x} img[ci, n, k0*sy + y*rdy - ply, k1*sx + x*rdx - plx]
 *                                      * filt[ci, co, y, x]
 *   #7  the same labels with batch_group_count = N = CO (the depthwise
 *       weight gradient): out (K0, K1, 1, C), channel c pairs img[:, c]
 *       with filt[:, c] only;
 *   #8  #7 with the filter's spatial dims swapped: filt (CI, C, WF, HF) io10.
 *
 * Operands (call->args): 0 = img, 1 = filt, 2 = out. Attributes (the conv
 * attrs + out_shape builder's dictionary, read by kernels/conv/conv_params.h):
 * stride, padding (any sign; negative crops), rhs_dilation (the forward
 * stride), batch_group_count (#5: 1; #7/#8: N), out_shape; lhs_dilation and
 * feature_group_count must be 1. Dtypes: img, filt and out share one float
 * dtype the PE takes (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2); products are
 * accumulated in fp32 in PSUM and rounded once to the output dtype. Any
 * sizes whose per-feature strides fit the 32-bit access patterns.
 *
 * Errors name the leaf, then the operand or attribute, its value and the
 * rule, e.g.
 *   Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh: attribute lhs_dilation=[2,2] is
 *   not supported (this leaf takes lhs_dilation [1,1] only)
 *   conv2d_column_packing: attribute batch_group_count=1 is not supported
 *   (the depthwise weight gradient needs batch_group_count = N = C_out = 8) */
#ifndef NXSIM_KERNELS_CONV_WGRAD_H
#define NXSIM_KERNELS_CONV_WGRAD_H

#include "kernels/author/author.h"
#include "kernels/kernel.h"

/* #5: the dense weight gradient by replication (C_in and filter rows on the
 * PE rows, C_out on its columns, the (K0, K1, N) outputs on the moving
 * axis). */
int conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* #7: the depthwise weight gradient by column packing (channel groups on the
 * PE columns, the off-diagonal channel pairs masked away). */
int conv2d_column_packing(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* #8: #7 after a DVE transpose of the filter's last two dims (through HBM
 * scratch, by tiled_dve_transpose_10's emitter). */
int conv2d_column_packing_io10(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
