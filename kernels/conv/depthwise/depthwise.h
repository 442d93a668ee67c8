/* The depthwise forward convolution leaves (docs/parts/depthwise.md; registry keys
 * Conv1d_depthwise_bf01_oi01_bf01 (#6), conv2d_column_packing_1 (#9) and
 * conv2d_depthwise_f01b_o01i_bf01 (#11)).
 *
 * Each computes, per channel c (feature_group_count = C, one filter per
 * channel, C_out = C_in), the XLA convolution
 *   out[n,c,y,x] = sum_{ky,kx} in_d[n,c, y*sy + ky*rdy - plo_y, x*sx + kx*rdx - plo_x]
 *                             * f[c,ky,kx]
 * where in_d is the input with lhs_dilation (d-1 zeros between elements) and
 * out-of-range terms are zero (padding; negative padding crops). Operands
 * (call->args): 0 = image, 1 = filter, 2 = output, in the layouts below.
 * Attributes (call->additional_args, what the conv-attrs-with-out_shape
 * builder passes): stride, padding, lhs_dilation, rhs_dilation,
 * feature_group_count (must be C), batch_group_count (must be 1), out_shape
 * (must be the output's shape); read by kernels/conv/conv_params.h.
 *
 * Dtypes: image, filter and output share one float dtype (fp32, bf16, fp16,
 * fp8_e4m3, fp8_e5m2); sums are accumulated in fp32 and rounded once to the
 * output dtype. docs/parts/kernels.md ("The depthwise convolutions") gives
 * each leaf's tiling, numerics and limits. Refusals name the operand or the
 * attribute, its value and the rule, e.g.
 *   Conv1d_depthwise_bf01_oi01_bf01: attribute lhs_dilation [1,2]: this leaf
 *   takes lhs_dilation 1 (use conv2d_depthwise_f01b_o01i_bf01) */
#ifndef NXSIM_KERNELS_CONV_DEPTHWISE_H
#define NXSIM_KERNELS_CONV_DEPTHWISE_H

#include "kernels/author/author.h"
#include "kernels/kernel.h"

/* img (N,C,1,W), filt (C,1,1,Wf), out (N,C,1,W_out): (n,c) rows on
 * partitions, W on the free axis, one multiply-accumulate per tap with the
 * filter value as a per-partition scalar (ACT, then DVE and POOL). Any
 * stride, padding (negative crops), rhs_dilation on W; H must be 1. */
int conv1d_depthwise_bf01_oi01_bf01(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* img (1,C,H,W), filt (C,1,KH,KW), out (1,C,OH,OW): the taps are reduced on
 * the PE: per pass a stationary of diagonal blocks (channels on PE columns,
 * row-shifted image replicas on PE rows) multiplies the image, accumulating
 * in PSUM. Any stride, padding, rhs_dilation; N must be 1, lhs_dilation 1. */
int conv2d_column_packing_1(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* img (C,H,W,N), filt (C,KH,KW,1), out (N,C,OH,OW): channels on partitions,
 * per-tap products on DVE (tensor_scalar), reduced by identity matmuls into
 * PSUM (several taps stacked on the PE rows per matmul). Any stride,
 * padding, lhs_dilation (the transposed conv) and rhs_dilation. */
int conv2d_depthwise_f01b_o01i_bf01(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
