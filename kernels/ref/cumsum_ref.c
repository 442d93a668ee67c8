/* The cumsum reference (kernels/ref/ref.h): line by line. */
#include "ref.h"

int nx_ref_cumsum(const nx_cumsum_params *p, const void *x, void *y, nx_error *err) {
    if (!p->A) return nx_fail(err, "nx_ref_cumsum: empty axis");
    const size_t es = nx_dtype_size(p->dtype);
    if (p->dtype == NX_DT_INT32) { /* exact, two's-complement wrap */
        for (uint64_t o = 0; o < p->outer; o++)
            for (uint64_t i = 0; i < p->inner; i++) {
                uint32_t acc = 0;
                for (uint64_t s = 0; s < p->A; s++) {
                    uint64_t a = p->reverse ? p->A - 1 - s : s, at = (o * p->A + a) * p->inner + i;
                    const unsigned char *src = (const unsigned char *)x + at * 4;
                    uint32_t v = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
                    uint32_t w = p->exclusive ? acc : acc + v;
                    acc += v;
                    unsigned char *dst = (unsigned char *)y + at * 4;
                    for (int k = 0; k < 4; k++) dst[k] = (unsigned char)(w >> (8 * k));
                }
            }
        return 0;
    }
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
