/* The reference of the `conv` composite (ref.h nx_ref_conv_onnx): ONNX Conv
 * as its operator page defines it (onnx/onnx docs/Operators.md "Conv",
 * onnx/reference/ops/op_conv.py), a direct sum in NCHW / OIHW with no
 * im2col, no BLAS and nothing shared with the kernels but the attribute
 * reader (kernels/conv/onnx/conv_onnx.h): for every output element the sum
 * over the group's input channels and the kernel taps whose dilated,
 * strided position lies inside the unpadded input, accumulated in double,
 * rounded to fp32 then to the result dtype (the leaves round their fp32
 * PSUM sum once); then + B[o] in fp32, rounded again (the kernel adds B to
 * the rounded result). */
#include <stdlib.h>

#include "ref.h"

int nx_ref_conv_onnx(const nx_conv_onnx_params *p, const void *x, const void *w, const void *b, void *y, nx_error *err) {
    nx_dtype dt = p->dtype;
    size_t es = nx_dtype_size(dt);
    uint64_t xn = p->N * p->C * p->H * p->W, wn = p->O * p->Cg * p->KH * p->KW;
    float *xf = malloc((xn ? xn : 1) * sizeof *xf), *wf = malloc((wn ? wn : 1) * sizeof *wf);
    if (!xf || !wf) {
        free(xf);
        free(wf);
        return nx_fail(err, "conv reference: out of memory");
    }
    for (uint64_t i = 0; i < xn; i++) xf[i] = (float)nx_dtype_load(dt, (const uint8_t *)x + i * es);
    for (uint64_t i = 0; i < wn; i++) wf[i] = (float)nx_dtype_load(dt, (const uint8_t *)w + i * es);
    uint64_t opg = p->O / (uint64_t)p->group;
    uint8_t *out = y;
    for (uint64_t n = 0; n < p->N; n++)
        for (uint64_t o = 0; o < p->O; o++) {
            uint64_t g = o / opg;
            float bias = b ? (float)nx_dtype_load(dt, (const uint8_t *)b + o * es) : 0.0f;
            for (uint64_t oy = 0; oy < p->OH; oy++)
                for (uint64_t ox = 0; ox < p->OW; ox++) {
                    double acc = 0.0;
                    for (uint64_t i = 0; i < p->Cg; i++) {
                        uint64_t c = g * p->Cg + i;
                        const float *xc = xf + (n * p->C + c) * p->H * p->W;
                        const float *wc = wf + (o * p->Cg + i) * p->KH * p->KW;
                        for (uint64_t ky = 0; ky < p->KH; ky++) {
                            int64_t iy = (int64_t)oy * p->stride[0] + (int64_t)ky * p->dilation[0] - p->pad_lo[0];
                            if (iy < 0 || iy >= (int64_t)p->H) continue;
                            for (uint64_t kx = 0; kx < p->KW; kx++) {
                                int64_t ix = (int64_t)ox * p->stride[1] + (int64_t)kx * p->dilation[1] - p->pad_lo[1];
                                if (ix < 0 || ix >= (int64_t)p->W) continue;
                                acc += (double)xc[(uint64_t)iy * p->W + (uint64_t)ix] * (double)wc[ky * p->KW + kx];
                            }
                        }
                    }
                    uint8_t *dst = out + (((n * p->O + o) * p->OH + oy) * p->OW + ox) * es;
                    nx_dtype_store(dt, dst, (double)(float)acc);
                    if (b) nx_dtype_store(dt, dst, (double)((float)nx_dtype_load(dt, dst) + bias));
                }
        }
    free(xf);
    free(wf);
    return 0;
}
