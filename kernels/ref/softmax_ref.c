/* The softmax reference (kernels/ref/ref.h): one line at a time in
 * double. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

int nx_ref_softmax(const nx_softmax_params *p, const void *x, void *y, nx_error *err) {
    if (!p->A) return nx_fail(err, "nx_ref_softmax: empty axis");
    const size_t es = nx_dtype_size(p->dtype);
    double *v = malloc((size_t)p->A * sizeof *v);
    if (!v) return nx_fail(err, "nx_ref_softmax: out of memory");
    for (uint64_t o = 0; o < p->outer; o++)
        for (uint64_t i = 0; i < p->inner; i++) {
            uint64_t base = o * p->A * p->inner + i;
            double m = -INFINITY, sum = 0;
            for (uint64_t a = 0; a < p->A; a++) {
                v[a] = nx_dtype_load(p->dtype, (const unsigned char *)x + (base + a * p->inner) * es);
                m = isnan(v[a]) || v[a] > m ? v[a] : m;
            }
            for (uint64_t a = 0; a < p->A; a++) sum += v[a] = exp(v[a] - m);
            for (uint64_t a = 0; a < p->A; a++)
                nx_dtype_store(p->dtype, (unsigned char *)y + (base + a * p->inner) * es, v[a] / sum);
        }
    free(v);
    return 0;
}
