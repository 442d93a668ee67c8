/* The C reference the RTL is checked against: C float arithmetic in the
 * order the PE array uses (see docs/parts/rtl.md, "Accumulation order").
 * ref_gemm.c is compiled with -ffp-contract=off so that no a*b + c becomes a
 * fused multiply-add (one rounding instead of the RTL's two). */
#ifndef NXSIM_RTL_REF_GEMM_H
#define NXSIM_RTL_REF_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One C float operation on bit patterns. */
uint32_t nx_ref_fadd(uint32_t a, uint32_t b);
uint32_t nx_ref_fmul(uint32_t a, uint32_t b);

/* out[m * N + n] = acc ? out[m*N+n] + p : p, where
 *   p = st[0*M+m]*mv[0*N+n]; p = p + st[k*M+m]*mv[k*N+n] for k = 1..K-1
 * st is [K, M] and mv is [K, N], row-major fp32 bit patterns. K >= 1. */
void nx_ref_gemm(const uint32_t *st, const uint32_t *mv, uint32_t K, uint32_t M, uint32_t N,
                 int acc, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif
