/* C reference for the PE array (see ref_gemm.h). Built with
 * -ffp-contract=off. */
#include "ref_gemm.h"

#include "isa/bytes.h"

uint32_t nx_ref_fadd(uint32_t a, uint32_t b) { return nx_f32_bits(nx_f32_from_bits(a) + nx_f32_from_bits(b)); }

uint32_t nx_ref_fmul(uint32_t a, uint32_t b) { return nx_f32_bits(nx_f32_from_bits(a) * nx_f32_from_bits(b)); }

void nx_ref_gemm(const uint32_t *st, const uint32_t *mv, uint32_t K, uint32_t M, uint32_t N,
                 int acc, uint32_t *out) {
    for (uint32_t m = 0; m < M; m++) {
        for (uint32_t n = 0; n < N; n++) {
            float p = nx_f32_from_bits(st[m]) * nx_f32_from_bits(mv[n]);
            for (uint32_t k = 1; k < K; k++)
                p = p + nx_f32_from_bits(st[(uint64_t)k * M + m]) * nx_f32_from_bits(mv[(uint64_t)k * N + n]);
            uint32_t *o = &out[(uint64_t)m * N + n];
            *o = acc ? nx_f32_bits(nx_f32_from_bits(*o) + p) : nx_f32_bits(p);
        }
    }
}
