/* The rope reference (kernels/ref/ref.h): element by element. */
#include "ref.h"

int nx_ref_rope(const nx_rope_params *p, const void *x, const void *cos_, const void *sin_, void *out, nx_error *err) {
    if (!p->D || p->D % 2) return nx_fail(err, "nx_ref_rope: D = %llu must be even", (unsigned long long)p->D);
    const uint64_t half = p->D / 2;
    const size_t es = nx_dtype_size(p->dtype), ce = nx_dtype_size(p->cs_dtype);
    for (uint64_t b = 0; b < p->B; b++)
        for (uint64_t h = 0; h < p->H; h++)
            for (uint64_t s = 0; s < p->S; s++) {
                const unsigned char *row = (const unsigned char *)x + (((b * p->H + h) * p->S + s) * p->D) * es;
                unsigned char *o = (unsigned char *)out + (((b * p->H + h) * p->S + s) * p->D) * es;
                uint64_t crow = ((p->cs_batched ? b * p->S : 0) + s) * half;
                for (uint64_t i = 0; i < half; i++) {
                    double c = nx_dtype_load(p->cs_dtype, (const unsigned char *)cos_ + (crow + i) * ce);
                    double sn = nx_dtype_load(p->cs_dtype, (const unsigned char *)sin_ + (crow + i) * ce);
                    uint64_t ja = p->interleaved ? 2 * i : i, jb = p->interleaved ? 2 * i + 1 : i + half;
                    double xa = nx_dtype_load(p->dtype, row + ja * es), xb = nx_dtype_load(p->dtype, row + jb * es);
                    nx_dtype_store(p->dtype, o + ja * es, xa * c - xb * sn);
                    nx_dtype_store(p->dtype, o + jb * es, xb * c + xa * sn);
                }
            }
    return 0;
}
