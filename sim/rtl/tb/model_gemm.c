/* See model_gemm.h. */
#include "model_gemm.h"

#include <stdlib.h>
#include <string.h>

#include "isa/builder.h"
#include "isa/bytes.h"
#include "isa/exec.h"
#include "isa/state.h"
#include "isa/validate.h"
#include "sim/machine.h"

/* SBUF byte offsets of the two operands in every partition. */
enum { ST_OFFSET = 0, MV_OFFSET = 4096 };

struct nx_model_gemm {
    nx_state st;
};

nx_model_gemm *nx_model_gemm_new(const char *machine, nx_error *err) {
    nx_machine m;
    if (nx_machine_load(machine, &m, err) != 0) return NULL;
    nx_model_gemm *g = calloc(1, sizeof *g);
    if (g == NULL) {
        nx_fail(err, "out of memory for the model state");
        return NULL;
    }
    if (nx_state_init(&g->st, &m.geo, 1, 64, 0, err) != 0) {
        free(g);
        return NULL;
    }
    return g;
}

void nx_model_gemm_free(nx_model_gemm *g) {
    if (g == NULL) return;
    nx_state_free(&g->st);
    free(g);
}

/* rows x cols bit patterns into SBUF partitions 0.. at `offset`. */
static void put_tile(nx_state *st, const uint32_t *v, uint32_t rows, uint32_t cols, int bf16,
                     uint64_t offset) {
    size_t sz = bf16 ? 2 : 4;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < cols; c++) {
            uint32_t bits = v[(uint64_t)r * cols + c];
            uint8_t *p = nx_sbuf_at(st, 0, r, offset + c * sz);
            if (bf16) nx_store_le16(p, (uint16_t)(bits >> 16));
            else nx_store_le32(p, bits);
        }
}

static int run(nx_state *st, const nx_insn *insn, nx_error *err) {
    if (nx_insn_validate(insn, NX_ENG_PE, &st->geo, st->hbm_bytes, st->sem_count, err) != 0)
        return -1;
    nx_exec_ctx ctx = {st, 0, NX_ENG_PE, 0, err};
    return nx_insn_execute(&ctx, insn);
}

int nx_model_gemm_run(nx_model_gemm *g, const uint32_t *stv, const uint32_t *mv, uint32_t K,
                      uint32_t M, uint32_t N, int acc, int bf16, uint32_t *out, nx_error *err) {
    nx_state *st = &g->st;
    nx_dtype dt = bf16 ? NX_DT_BF16 : NX_DT_FP32;
    put_tile(st, stv, K, M, bf16, ST_OFFSET);
    put_tile(st, mv, K, N, bf16, MV_OFFSET);
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            nx_store_le32(nx_psum_at(st, 0, m, (uint64_t)n * 4), out[(uint64_t)m * N + n]);

    nx_insn ls = nx_insn_make(NX_OP_LOAD_STATIONARY);
    ls.op[0] = nx_ap_tile(NX_OPK_SBUF, dt, 0, K, ST_OFFSET, M);
    nx_insn mm = nx_insn_make(NX_OP_MULTIPLY_MOVING);
    mm.op[0] = nx_ap_tile(NX_OPK_PSUM, NX_DT_FP32, 0, M, 0, N);
    mm.op[1] = nx_ap_tile(NX_OPK_SBUF, dt, 0, K, MV_OFFSET, N);
    mm.flags = acc ? NX_FLAG_ACCUMULATE : 0;
    if (run(st, &ls, err) != 0 || run(st, &mm, err) != 0) return -1;

    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            out[(uint64_t)m * N + n] = nx_load_le32(nx_psum_at(st, 0, m, (uint64_t)n * 4));
    return 0;
}
