/* The scanning selection's instructions as a piece other kernels reuse
 * (kernels/topk/topk.h nx_topk_max8, nx_topk_knockout, nx_topk_rowsel):
 * the top-k leaves' rounds (topk_select.c) and the MoE router
 * (kernels/moe/router_select.c) emit exactly these.
 *
 * Tie order: max8 keeps equal values in element order; match_replace8
 * takes its 8 values j = 7 .. 0 and pairs each with the first element
 * equal to it that no earlier value took (the NKI nc_match_replace8
 * order). Handing it the values and receiving the positions through
 * reversed access patterns makes it process them in descending order, so
 * equal values pair with ascending positions: the lower index first
 * (tests/test_insn_dve_topk.c and tests/test_router_topk.c pin both). */
#include <math.h>

#include "topk.h"

int nx_topk_max8(nx_kctx *k, const nx_operand *dst8, const nx_operand *in, nx_error *err) {
    nx_insn m = nx_insn_make(NX_OP_MAX8);
    m.op[0] = *dst8;
    m.op[1] = *in;
    return nx_kctx_emit(k, NX_ENG_DVE, &m, err);
}

int nx_topk_knockout(nx_kctx *k, const nx_operand *dst, const nx_operand *in, const nx_tile *vt, uint64_t voff,
                     const nx_tile *it, uint64_t ioff, uint32_t P, double replacement, nx_error *err) {
    const int32_t back = -1;
    const uint32_t eight = 8;
    nx_insn mr = nx_insn_make(NX_OP_MATCH_REPLACE8);
    mr.op[0] = *dst;
    mr.op[1] = *in;
    mr.op[2] = nx_tile_view(vt, NX_DT_FP32, 0, P, voff + 7, 1, &back, &eight);
    mr.op[3] = nx_imm(replacement, NX_DT_FP32);
    mr.op[4] = nx_tile_view(it, NX_DT_INT32, 0, P, ioff + 7, 1, &back, &eight);
    return nx_kctx_emit(k, NX_ENG_DVE, &mr, err);
}

int nx_topk_rowsel(nx_kctx *k, const nx_topk_rowsel_args *a, nx_error *err) {
    const int32_t one = 1;
    const uint32_t n = a->n < 8 ? 8 : (uint32_t)a->n, rounds = (a->L + 7) / 8;
    nx_operand kv = nx_tile_view(a->keys, NX_DT_FP32, 0, a->P, a->keys_off, 1, &one, &n);
    for (uint32_t r = 0; r < rounds; r++) {
        const nx_operand *in = r == 0 ? &a->in : &kv;
        nx_operand v8 = nx_tile_view(a->vals, NX_DT_FP32, 0, a->P, a->vals_off + 8ull * r, 1, &one, &(uint32_t){8});
        if (nx_topk_max8(k, &v8, in, err) != 0) return -1;
        if (r == 0 && a->neg_max) {
            nx_operand v0 = nx_tile_view(a->vals, NX_DT_FP32, 0, a->P, a->vals_off, 1, &one, &(uint32_t){1});
            nx_operand neg = nx_imm(-1.0, NX_DT_FP32);
            if (nx_kctx_tensor_scalar(k, NX_ENG_DVE, a->neg_max, &v0, NX_ALU_MULTIPLY, &neg, NX_ALU_BYPASS, NULL, err) != 0)
                return -1;
        }
        const uint32_t m = a->L - 8 * r;
        if (m < 8) {
            /* a value of -inf matches only what is already knocked out (or
             * -inf padding), and is taken after the real values: the
             * round knocks out exactly its first m */
            nx_operand rest = nx_tile_view(a->vals, NX_DT_FP32, 0, a->P, a->vals_off + 8ull * r + m, 1, &one,
                                           &(uint32_t){8 - m});
            if (nx_kctx_memset(k, NX_ENG_DVE, &rest, -INFINITY, err) != 0) return -1;
        }
        const nx_operand *kin = r == 0 && a->knock_in ? a->knock_in : in;
        if (nx_topk_knockout(k, &kv, kin, a->vals, a->vals_off + 8ull * r, a->idx, a->idx_off + 8ull * r, a->P,
                             -INFINITY, err) != 0)
            return -1;
    }
    return 0;
}
