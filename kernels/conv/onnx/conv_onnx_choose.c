/* The conv composite's leaf choice (conv_onnx.h nx_conv_onnx_choose), made
 * as a compiler's middle end makes it: the leaf whose algorithm fits the
 * problem, then the layout steps between ONNX's tensors and the leaf's.
 *
 * - Depthwise (group = C = O: one filter per channel): the depthwise
 *   leaves compute only the diagonal; the dense leaf would run it as
 *   block-diagonal PE tiles (docs/parts/depthwise.md).
 *   - 1-D (X [N, C, W]): #6, whose layouts (N,C,1,W / C,1,1,Wf) are ONNX's
 *     NCW / OIW bytes: no layout step.
 *   - 2-D: #9 (column packing on the PE) once per image: its layouts
 *     (1,C,H,W / C,1,KH,KW / 1,C,OH,OW) are one image of ONNX's NCHW /
 *     OIHW bytes, so no layout step. #11 (any batch, C,H,W,N images) is
 *     not chosen: measured on trn2 (bf16, C = 256, 3x3, pads 1), N calls of
 *     #9 take 4x to 7x less time than one of #11 (7x7 x 32 images: 232 us
 *     against 1550 us; 56x56 x 2: 61 us against 244 us), before #11's
 *     NCHW -> CHWN transpose (docs/parts/conv.md).
 * - Everything else (dense, grouped, a channel multiplier): #4 over #3,
 *   because #4's layouts are the nearest to ONNX's: img (C,N,H,W) and filt
 *   (C/G,O,KH,KW) are X and W with their two outer dims swapped (runs of
 *   H x W and KH x KW elements, one strided HBM -> HBM DMA each; none when
 *   N = 1, resp. C/G = 1 or O = 1), and the result (OH,OW,N,O) is one 2-D
 *   transpose from NCHW. #3's (H,C,W,N) and (KH,C/G,KW,O) would need an
 *   element-wise gather of X and W. */
#include <stdio.h>
#include <string.h>

#include "conv_onnx.h"

void nx_conv_onnx_choose(const nx_conv_onnx_params *p, nx_conv_onnx_choice *c) {
    memset(c, 0, sizeof *c);
    int depthwise = (uint64_t)p->group == p->C && p->O == p->C;
    if (depthwise && p->spatial == 1) {
        c->leaf = NX_CONV_ONNX_DW_1D;
        c->key = "Conv1d_depthwise_bf01_oi01_bf01";
        c->why = "depthwise 1-D (group = C = O)";
    } else if (depthwise) {
        c->leaf = NX_CONV_ONNX_DW_CP1;
        c->key = "conv2d_column_packing_1";
        c->why = p->N == 1 ? "depthwise (group = C = O), one image" : "depthwise (group = C = O), once per image";
    } else {
        c->leaf = NX_CONV_ONNX_PBP_FB01;
        c->key = "Conv2d_pbp_fb01_io01_01bf_experimental_1";
        c->why = p->group == 1 ? "dense (group = 1)"
                 : p->Cg == 1   ? "grouped with a channel multiplier (group = C, O = m x C)"
                               : "grouped (1 < group < C)";
        c->move_x = p->N > 1 && p->C > 1;
        c->move_w = p->Cg > 1 && p->O > 1;
        c->move_y = 1;
    }
}

void nx_conv_onnx_choice_text(const nx_conv_onnx_params *p, const nx_conv_onnx_choice *c, char *buf, size_t len) {
    const char *x = p->spatial == 1 ? "NCW" : "NCHW", *w = p->spatial == 1 ? "OIW" : "OIHW";
    char lay[256];
    switch (c->leaf) {
    case NX_CONV_ONNX_DW_1D:
        snprintf(lay, sizeof lay, "X %s, W %s and Y %s read and written as they are (the leaf's layouts)", x, w, x);
        break;
    case NX_CONV_ONNX_DW_CP1:
        if (p->N == 1)
            snprintf(lay, sizeof lay, "X %s, W %s and Y %s read and written as they are (the leaf's layouts)", x, w,
                     x);
        else
            snprintf(lay, sizeof lay, "X %s, W %s and Y %s read and written as they are, %llu calls on one image each",
                     x, w, x, (unsigned long long)p->N);
        break;
    default:
        snprintf(lay, sizeof lay, "X %s -> CNHW %s, W %s -> IOHW %s, Y OH,OW,N,O -> %s (PE transposes)", x,
                 c->move_x ? "(outer-dim swap)" : "(same bytes)", w, c->move_w ? "(outer-dim swap)" : "(same bytes)", x);
        break;
    }
    snprintf(buf, len, "leaf %s: %s; layout: %s%s", c->key, c->why, lay,
             p->has_bias ? "; B added in a last DVE/POOL/ACT pass" : "");
}
