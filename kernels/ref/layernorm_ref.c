/* The layernorm reference (kernels/ref/ref.h): one row at a time,
 * mean and variance by two passes in double. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

int nx_ref_layernorm(const nx_layernorm_params *p, const void *x, const void *scale, const void *bias,
                     void *const *out, nx_error *err) {
    if (!p->H || (p->bias && !bias)) return nx_fail(err, "nx_ref_layernorm: missing operand or empty row");
    const uint64_t H = p->H;
    const size_t es = nx_dtype_size(p->dtype);
    double *v = malloc((size_t)H * sizeof *v);
    if (!v) return nx_fail(err, "nx_ref_layernorm: out of memory");
    for (uint64_t i = 0; i < p->rows; i++) {
        double mean = 0, var = 0;
        for (uint64_t j = 0; j < H; j++) mean += v[j] = nx_dtype_load(p->dtype, (const unsigned char *)x + (i * H + j) * es);
        mean /= (double)H;
        for (uint64_t j = 0; j < H; j++) var += (v[j] - mean) * (v[j] - mean);
        double rstd = 1.0 / sqrt(var / (double)H + p->epsilon);
        for (uint64_t j = 0; j < H; j++) {
            double g = nx_dtype_load(p->scale_dtype, (const unsigned char *)scale + j * nx_dtype_size(p->scale_dtype));
            double b = p->bias ? nx_dtype_load(p->bias_dtype, (const unsigned char *)bias + j * nx_dtype_size(p->bias_dtype)) : 0;
            nx_dtype_store(p->dtype, (unsigned char *)out[0] + (i * H + j) * es, (v[j] - mean) * rstd * g + b);
        }
        nx_dtype_store(p->dtype, (unsigned char *)out[1] + i * es, mean);
        nx_dtype_store(p->dtype, (unsigned char *)out[2] + i * es, rstd);
    }
    free(v);
    return 0;
}
