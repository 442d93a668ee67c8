/* C reference for the PE array (see ref_gemm.h). Built with
 * -ffp-contract=off. */
#include "ref_gemm.h"

#include <string.h>

static float f_of(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

uint32_t nx_ref_fadd(uint32_t a, uint32_t b) { return bits_of(f_of(a) + f_of(b)); }

uint32_t nx_ref_fmul(uint32_t a, uint32_t b) { return bits_of(f_of(a) * f_of(b)); }

void nx_ref_gemm(const uint32_t *st, const uint32_t *mv, uint32_t K, uint32_t M, uint32_t N,
                 int acc, uint32_t *out) {
    for (uint32_t m = 0; m < M; m++) {
        for (uint32_t n = 0; n < N; n++) {
            float p = f_of(st[m]) * f_of(mv[n]);
            for (uint32_t k = 1; k < K; k++)
                p = p + f_of(st[(uint64_t)k * M + m]) * f_of(mv[(uint64_t)k * N + n]);
            uint32_t *o = &out[(uint64_t)m * N + n];
            *o = acc ? bits_of(f_of(*o) + p) : bits_of(p);
        }
    }
}
