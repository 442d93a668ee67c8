/* The rmsnorm reference (kernels/ref/ref.h): one row at a time, the
 * mean square in double. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

int nx_ref_rmsnorm(const nx_rmsnorm_params *p, const void *x, const void *gamma, const void *r, const void *scale,
                   void *const *out, nx_error *err) {
    if (!p->H || (p->residual && !r) || (p->quant == NX_RMSNORM_QUANT_STATIC && !scale))
        return nx_fail(err, "nx_ref_rmsnorm: missing operand or empty row");
    const uint64_t H = p->H;
    const size_t es = nx_dtype_size(p->dtype), gs = nx_dtype_size(p->gamma_dtype);
    double *row = malloc((size_t)H * sizeof *row), *g = malloc((size_t)H * sizeof *g);
    if (!row || !g) {
        free(row), free(g);
        return nx_fail(err, "nx_ref_rmsnorm: out of memory");
    }
    for (uint64_t j = 0; j < H; j++) g[j] = nx_dtype_load(p->gamma_dtype, (const unsigned char *)gamma + j * gs);
    const double sc = scale ? (double)(float)nx_dtype_load(NX_DT_FP32, scale) : 1.0;
    const uint32_t xo = p->n_results - 1; /* x' is the last result with residual */
    for (uint64_t i = 0; i < p->rows; i++) {
        double ss = 0;
        for (uint64_t j = 0; j < H; j++) {
            uint64_t at = i * H + j;
            double v = nx_dtype_load(p->dtype, (const unsigned char *)x + at * es);
            if (p->residual) {
                float sum = (float)v + (float)nx_dtype_load(p->dtype, (const unsigned char *)r + at * es);
                nx_dtype_store(p->dtype, (unsigned char *)out[xo] + at * es, (double)sum);
                v = nx_dtype_load(p->dtype, (const unsigned char *)out[xo] + at * es);
            }
            row[j] = v;
            ss += v * v;
        }
        double rstd = 1.0 / sqrt(ss / (double)H + p->eps), amax = 0;
        for (uint64_t j = 0; j < H; j++) {
            row[j] = row[j] * rstd * g[j];
            if (fabs(row[j]) > amax || isnan(row[j])) amax = isnan(amax) ? amax : fabs(row[j]);
        }
        unsigned char *o = out[0];
        if (p->quant == NX_RMSNORM_QUANT_NONE) {
            for (uint64_t j = 0; j < H; j++) nx_dtype_store(p->dtype, o + (i * H + j) * es, row[j]);
            continue;
        }
        double s = sc;
        if (p->quant == NX_RMSNORM_QUANT_ROW) {
            float f = (float)(amax / p->fp8_max);
            s = isnan(f) ? f : f > 1e-6f ? f : 1e-6f;
            nx_dtype_store(NX_DT_FP32, (unsigned char *)out[1] + i * 4, s);
        }
        for (uint64_t j = 0; j < H; j++) nx_dtype_store(NX_DT_FP8_E4M3, o + i * H + j, row[j] / s);
    }
    free(row), free(g);
    return 0;
}
