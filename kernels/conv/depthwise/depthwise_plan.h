/* What the three depthwise leaves share (kernels/conv/depthwise/depthwise.h): the call
 * checks (layouts, dtypes, conv attributes, output shape), the per-axis
 * arithmetic of which outputs a tap reaches, the choice of DMA transfers and
 * a few emit helpers for per-partition-scalar instructions. */
#ifndef NXSIM_KERNELS_CONV_DEPTHWISE_PLAN_H
#define NXSIM_KERNELS_CONV_DEPTHWISE_PLAN_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/conv/conv_params.h"
#include "kernels/kernel.h"

/* One spatial axis of the convolution. in_d = (in - 1) * lhs_dil + 1 is the
 * dilated input; out = floor((in_d + pad_lo + pad_hi - ((k - 1) * rhs_dil + 1))
 * / stride) + 1 (>= 1). */
typedef struct nx_dw_axis {
    int64_t in, k, out;
    int64_t stride, pad_lo, pad_hi, lhs_dil, rhs_dil;
} nx_dw_axis;

/* Outputs o = first + i * step (i < count) inside a range that tap t of an
 * axis reaches a real input element for; that element is
 * in_first + i * in_step. count 0: the tap reaches none. */
typedef struct nx_dw_run {
    int64_t first, step, count, in_first, in_step;
} nx_dw_run;

/* The run of tap `t` over outputs [lo, hi). */
void nx_dw_axis_run(const nx_dw_axis *a, int64_t t, int64_t lo, int64_t hi, nx_dw_run *r);

/* Input index range [*in_lo, *in_hi) that outputs [lo, hi) read over all
 * taps (clamped to [0, in); empty when no tap reaches a real element). */
void nx_dw_axis_input_span(const nx_dw_axis *a, int64_t lo, int64_t hi, int64_t *in_lo,
                           int64_t *in_hi);

typedef struct nx_dw_problem {
    const char *leaf;                 /* the registry key, for messages */
    const nx_tensor_ref *img, *filt, *out;
    nx_dtype dtype;                   /* of all three */
    uint64_t n, c;                    /* batch, channels */
    nx_dw_axis ax[2];                 /* 0 = dim "0" (H), 1 = dim "1" (W) */
    nx_conv_params params;            /* as read (for refusals) */
    /* element strides of each tensor's dims, by role: img/out [b, f, 0, 1],
     * filt [o, i, 0, 1] */
    uint64_t img_stride[4], filt_stride[4], out_stride[4];
} nx_dw_problem;

/* Checks a depthwise call whose tensors have the conv labels `labels`
 * ("bf01_oi01->bf01", ...): 2 inputs and 1 output; one float dtype for all
 * three (the PE's input types); the conv attributes (nx_conv_params_read:
 * any conv attribute, out_shape included); the result shape
 * (nx_conv_result_shape) equal to the output's; feature_group_count = C
 * with one filter per channel (o = C, i = 1). Messages name the leaf, then
 * the operand or attribute, its value and the rule:
 *   KEY: operand 2 (out): shape [1,8,5,5] must be [1,8,6,6] (the convolution's result)
 *   KEY: attribute feature_group_count=1 is not supported (a depthwise conv needs feature_group_count = C = 8) */
int nx_dw_prepare(const char *leaf, const nx_kernel_call *call, const char *labels, nx_dw_problem *p,
                  nx_error *err);

/* -1 naming the window attributes and the image if any of spans[0..n)
 * (element strides or extents a leaf's access patterns will use) exceeds
 * the 32-bit stride of an access pattern. */
int nx_dw_check_strides(const nx_dw_problem *p, const uint64_t *spans, uint32_t n, nx_error *err);

/* ---- emit helpers (per-partition scalars are [P x 1] views) ---- */

/* dst = in * scalar (tensor_scalar multiply) on DVE or POOL. */
int nx_dw_scale(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *in,
                const nx_operand *scalar, nx_error *err);
/* dst = in * scale (activation identity, bias 0) on ACT. */
int nx_dw_scale_act(nx_kctx *k, const nx_operand *dst, const nx_operand *in,
                    const nx_operand *scale, nx_error *err);
/* dst = in0 * scalar + in1 (scalar_tensor_tensor) on DVE or POOL. */
int nx_dw_mac(nx_kctx *k, nx_engine engine, const nx_operand *dst, const nx_operand *in0,
              const nx_operand *scalar, const nx_operand *in1, nx_error *err);

/* An n x n identity (as dt) at partitions [p0, p0 + n), columns [0, n) of
 * tile t, on POOL: memset 1, then affine_select keeps p == m. p0 must be a
 * legal start partition for n partitions. */
int nx_dw_identity(nx_kctx *k, const nx_tile *t, nx_dtype dt, uint32_t p0, uint32_t n, nx_error *err);

/* DMA lanes: loads use lanes [0, E) (one queue of each of the E DMA
 * engines), stores lanes [E, 2E) (another queue of each; halves of the
 * lanes when there are fewer than 2E), so the loads of
 * successive work items queue behind each other on every engine (the
 * first item's data arrives first, not at the pace of all of them) and a
 * store never holds a load up in its queue. nx_dw_dma cuts a transfer by
 * rows into `pieces` (0 = one per lane of the half; at most the rows)
 * transfers on lanes first, first + 1, ... (mod the half). */
typedef enum nx_dw_dir { NX_DW_LOAD = 0, NX_DW_STORE = 1 } nx_dw_dir;
uint32_t nx_dw_half_lanes(const nx_kctx *k);
int nx_dw_dma(nx_kctx *k, nx_dw_dir dir, uint32_t first, uint32_t pieces, const nx_operand *dst,
              const nx_operand *src, nx_error *err);

/* A machine ratio (of two clocks, say) as the fraction *num / *den with the
 * smallest denominator <= 64 within 1e-9 of x (continued fractions; else
 * the last convergent with a denominator <= 64), so that integer schedules
 * cut columns and weigh costs exactly: both presets' DVE : ACT clock ratio
 * 0.96 : 1.2 is 4/5. */
void nx_dw_ratio(double x, uint32_t *num, uint32_t *den);

/* Partition alignment a compute operand of `count` partitions needs for a
 * start partition other than 0 (docs/ISA.md "Geometry rules"): a quarter
 * of the partitions for <= a quarter, half for <= half, else all. */
uint32_t nx_dw_partition_align(const nx_geometry *geo, uint32_t count);

#endif
