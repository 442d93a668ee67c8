/* One matmul through nxsim's functional model (isa/insns/load_stationary.c
 * and multiply_moving.c, run by nx_insn_execute on a one-core state): the
 * "model" side of the RTL-vs-model bit-exactness checks. */
#ifndef NXSIM_RTL_MODEL_GEMM_H
#define NXSIM_RTL_MODEL_GEMM_H

#include <stdint.h>

#include "isa/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nx_model_gemm nx_model_gemm;

/* A one-core state on machine preset `machine` ("trn2"). NULL with err
 * filled on failure. */
nx_model_gemm *nx_model_gemm_new(const char *machine, nx_error *err);
void nx_model_gemm_free(nx_model_gemm *g);

/* st [K, M] and mv [K, N]: row-major fp32 bit patterns; bf16 != 0 stores
 * them as bf16 (their high halves: the low 16 bits must be zero). out
 * [M, N]: with acc, the prior PSUM values on entry; the results on return.
 * Returns 0, or -1 with err filled (validation or execution failure). */
int nx_model_gemm_run(nx_model_gemm *g, const uint32_t *st, const uint32_t *mv, uint32_t K,
                      uint32_t M, uint32_t N, int acc, int bf16, uint32_t *out, nx_error *err);

#ifdef __cplusplus
}
#endif

#endif
