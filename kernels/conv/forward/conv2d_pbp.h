/* The dense forward convolutions on the PE array (docs/parts/conv.md,
 * registry keys #3 and #4: what they compute and the tiling).
 *
 *   #3 conv2d_pbp_0f1b_0i1o_01fb_experimental_1 (labels 0f1b_0i1o->01fb):
 *      args[0] img (H, C, W, N), args[1] filt (KH, C/G, KW, O),
 *      args[2] out (OH, OW, O, N);
 *   #4 conv2d_pbp_fb01_io01_01bf_kernel_experimental_1 (fb01_io01->01bf):
 *      args[0] img (C, N, H, W), args[1] filt (C/G, O, KH, KW),
 *      args[2] out (OH, OW, N, O): #3's emitter reading and writing #4's
 *      own tensors where its plan allows (nx_conv_pbp_takes_*), HBM scratch
 *      copies in #3's layouts otherwise.
 *
 * Attributes (kernels/conv/conv_params.h): stride, padding (any sign),
 * rhs_dilation, feature_group_count; lhs_dilation and batch_group_count
 * must be 1 (refused otherwise, naming the attribute). Dtypes: img, filt
 * and out all the same PE input type (fp32, bf16, fp16, fp8_e4m3,
 * fp8_e5m2); products accumulate in fp32 in PSUM, the result is rounded
 * once to the out dtype. Refusals name the operand and the rule, e.g.
 *   operand 2 (out): shape [4,4,8,2] must be [5,4,8,2] (the convolution of
 *   operand 0 (img) [9,3,8,2] and operand 1 (filt) [3,3,3,8])
 *   operand 1 (filt): dtype bf16 differs from operand 0 (img)'s fp32 */
#ifndef NXSIM_KERNELS_CONV_CONV2D_PBP_H
#define NXSIM_KERNELS_CONV_CONV2D_PBP_H

#include <stdint.h>

#include "kernels/conv/conv_params.h"
#include "kernels/author/author.h"
#include "kernels/kernel.h"

/* A dense conv problem in #3's layouts, with the HBM byte offsets of its
 * three tensors (img H,C,W,N; filt KH,C/G,KW,O; out OH,OW,O,N). */
typedef struct nx_conv_pbp {
    nx_dtype dtype;
    uint64_t H, C, W, N;
    uint64_t KH, KW, O;
    uint64_t OH, OW;
    nx_conv_params p;           /* stride, padding, rhs_dilation, feature_group_count */
    uint64_t img, filt, out;    /* HBM byte offsets */
    int img_cnhw;               /* 1: img is #4's (C, N, H, W) tensor, loaded with C on the
                                 * partitions and reordered on the chip (only when
                                 * nx_conv_pbp_takes_cnhw says so) */
    int filt_iohw;              /* 1: filt is #4's (C/G, O, KH, KW) tensor, loaded as it is
                                 * (C on the partitions) and read by strided stationary
                                 * loads (only when nx_conv_pbp_takes_iohw says so) */
    int out_01bf;               /* 1: out is #4's (OH, OW, N, O) tensor, written by the
                                 * transposed store (only when nx_conv_pbp_takes_01bf says so) */
} nx_conv_pbp;

/* Checks a call against `labels` (#3's or #4's) and the leaf's rules and
 * fills *pb with the problem in #3's layout terms (offsets of the call's
 * tensors; for #4 the caller re-points them at its scratch). */
int nx_conv_pbp_from_call(const char *leaf, const char *labels, const nx_kernel_call *call,
                          nx_conv_pbp *pb, nx_error *err);

/* 1 when the emitter can read *pb's image straight from a (C, N, H, W)
 * tensor (the whole padded image resident in SBUF, beside one raw step per
 * buffer), 0 otherwise (the caller then re-lays it out into (H, C, W, N)). */
int nx_conv_pbp_takes_cnhw(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes);

/* 1 when the emitter can read *pb's filter straight from a (C/G, O, KH, KW)
 * tensor (ungrouped tiles, every cout tile's filter resident at once), 0
 * otherwise (the caller re-lays it out into (KH, C/G, KW, O)). */
int nx_conv_pbp_takes_iohw(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes);

/* 1 when the emitter can write *pb's result straight into an (OH, OW, N, O)
 * tensor (every band stored PE-transposed, pixels on the partitions), 0
 * otherwise (the caller transposes an (OH, OW, O, N) result). */
int nx_conv_pbp_takes_01bf(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes);

/* Emits the convolution of *pb (#3's algorithm) into k: everything it
 * allocates is released before it returns. */
int nx_conv_pbp_emit(nx_kctx *k, const nx_conv_pbp *pb, nx_error *err);

int conv2d_pbp_0f1b_0i1o_01fb_experimental_1(struct nx_kctx *k, const nx_kernel_call *call,
                                             nx_error *err);
int conv2d_pbp_fb01_io01_01bf_kernel_experimental_1(struct nx_kctx *k, const nx_kernel_call *call,
                                                    nx_error *err);

#endif
