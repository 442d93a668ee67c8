/* The cumsum reference (kernels/ref/elementwise_ref.h): line by line. */
#include "elementwise_ref.h"

int nx_ref_cumsum(const nx_cumsum_params *p, const void *x, void *y, nx_error *err) {
    if (!p->A) return nx_fail(err, "nx_ref_cumsum: empty axis");
    const size_t es = nx_dtype_size(p->dtype);
    for (uint64_t o = 0; o < p->outer; o++)
        for (uint64_t i = 0; i < p->inner; i++) {
            float acc = -0.0f;
            for (uint64_t s = 0; s < p->A; s++) {
                uint64_t a = p->reverse ? p->A - 1 - s : s, at = (o * p->A + a) * p->inner + i;
                float v = (float)nx_dtype_load(p->dtype, (const unsigned char *)x + at * es);
                float before = s ? acc : 0.0f;
                acc = acc + v;
                nx_dtype_store(p->dtype, (unsigned char *)y + at * es, (double)(p->exclusive ? before : acc));
            }
        }
    return 0;
}
