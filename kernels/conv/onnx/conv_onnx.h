/* The `conv` composite: ONNX Conv (opset 11+) on its own layouts, X in
 * NCHW (or NCW), W in OIHW (or OIW), optional B [O], Y in NCHW; attributes
 * auto_pad (NOTSET, SAME_UPPER, SAME_LOWER, VALID), dilations, group,
 * kernel_shape, pads, strides (docs/parts/conv.md, "The conv composite").
 *
 * It plans like a compiler's middle end: it picks one of the registry's
 * conv leaves for the problem (nx_conv_onnx_choose) and the layout steps
 * between ONNX's layouts and the leaf's (HBM -> HBM DMA swaps, the
 * registry transposes, or none where the bytes already match), runs them,
 * and adds B in a last pass. The choice and its reason are one line for
 * the run report (nx_conv_onnx_choice_text). */
#ifndef NXSIM_KERNELS_CONV_ONNX_CONV_ONNX_H
#define NXSIM_KERNELS_CONV_ONNX_CONV_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

/* auto_pad values */
typedef enum nx_conv_onnx_pad_mode {
    NX_CONV_ONNX_NOTSET = 0,
    NX_CONV_ONNX_SAME_UPPER,
    NX_CONV_ONNX_SAME_LOWER,
    NX_CONV_ONNX_VALID,
} nx_conv_onnx_pad_mode;

/* The problem, 1-D convolutions as 2-D ones with H = KH = 1 (index 0 of
 * the per-dim arrays is H, 1 is W). */
typedef struct nx_conv_onnx_params {
    uint32_t spatial;           /* 1 (X [N, C, W]) or 2 (X [N, C, H, W]) */
    nx_dtype dtype;
    uint64_t N, C, H, W;
    uint64_t O, Cg, KH, KW;     /* Cg = C / group */
    uint64_t OH, OW;
    int64_t stride[2], dilation[2], pad_lo[2], pad_hi[2];
    int64_t group;
    nx_conv_onnx_pad_mode auto_pad;
    int has_bias;
    uint32_t out_ndims;
    uint64_t out_shape[4];      /* Y: [N, O, OH, OW] or [N, O, OW] */
} nx_conv_onnx_params;

/* The attribute names the composite reads. */
extern const char *const nx_conv_onnx_attrs[];

/* Checks the operands (X, W [, B]) and the attributes and fills p. Refusals
 * are one line naming the operand or attribute and the layout it must
 * have, e.g.
 *   operand 1 (W): dim 1 is 4 but C / group = 8 / 1 = 8 (W is OIHW: [O, C/group, KH, KW])
 *   attribute group=3: does not divide operand 0 (X)'s C = 8 (X is NCHW)
 *   attribute kernel_shape=[3,3]: differs from operand 1 (W)'s kernel [5,5] (W is OIHW) */
int nx_conv_onnx_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_conv_onnx_params *p,
                      nx_error *err);

/* The leaves it chooses from. */
typedef enum nx_conv_onnx_leaf {
    NX_CONV_ONNX_PBP_FB01 = 0, /* #4 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1 */
    NX_CONV_ONNX_DW_1D,        /* #6 conv1d_depthwise_bf01_oi01_bf01 */
    NX_CONV_ONNX_DW_CP1,       /* #9 conv2d_column_packing_1, once per image */
} nx_conv_onnx_leaf;

typedef struct nx_conv_onnx_choice {
    nx_conv_onnx_leaf leaf;
    const char *key;      /* the leaf's registry key */
    const char *why;      /* the rule that picked it */
    /* the layout steps: 1 when the operand is moved, 0 when the leaf reads
     * or writes the ONNX tensor's bytes as they are */
    int move_x, move_w, move_y;
} nx_conv_onnx_choice;

/* The choice for p: depthwise (group = C = O) 1-D -> #6; depthwise 2-D ->
 * #9 once per image; everything else (dense, grouped, a channel
 * multiplier) -> #4 (kernels/conv/onnx/conv_onnx_choose.c says why). */
void nx_conv_onnx_choose(const nx_conv_onnx_params *p, nx_conv_onnx_choice *c);

/* One line for the run report: "leaf conv2d_column_packing_1: depthwise
 * (group = C = O), once per image; layout: X NCHW, W OIHW and Y NCHW read
 * and written as they are, 4 calls on one image each; B added in a last
 * DVE/POOL/ACT pass". */
void nx_conv_onnx_choice_text(const nx_conv_onnx_params *p, const nx_conv_onnx_choice *c, char *buf, size_t len);

/* The kernel: call->args = X, W [, B], then Y. */
int nx_conv_onnx(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* dst = src with its two outer dims swapped, [A][B][E] -> [B][A][E], HBM
 * tensors of dtype dt: by strided DMAs or through SBUF with PE transposes,
 * whichever the machine's figures make cheaper (*via_sbuf says which;
 * kernels/conv/onnx/conv_onnx_layout.c). With allow_dma 0 only the SBUF
 * route is taken: 1 (nothing emitted) when it does not fit. */
int nx_conv_onnx_swap(nx_kctx *k, nx_dtype dt, uint64_t A, uint64_t B, uint64_t E, uint64_t src, uint64_t dst,
                      int allow_dma, int *via_sbuf, nx_error *err);

/* The bias pass (kernels/conv/onnx/conv_onnx_bias.c): y[n, o, s] = src[n,
 * o, s] + b[o] for HBM tensors src and y (N x O rows of S elements, may be
 * the same tensor), b [O]; all of dtype dt. */
int nx_conv_onnx_bias(nx_kctx *k, nx_dtype dt, uint64_t N, uint64_t O, uint64_t S, uint64_t src, uint64_t b,
                      uint64_t y, nx_error *err);

#endif
