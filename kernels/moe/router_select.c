/* The router's selection and affinities for one token tile
 * (kernels/moe/router_impl.h), from its logits in PSUM [tw, E] fp32:
 *   ACT   logits -> SBUF (the logits result; DVE when the stores bound
 *         the tile), stored;
 *   DVE   the k largest: ceil(k/8) rounds of max8 + match_replace8
 *         (kernels/topk/topk_tile.c nx_topk_rowsel), max8 reading PSUM, the
 *         first knock-out the SBUF copy (E >= 8): values
 *         descending, positions = expert ids, ties to the lower index, and
 *         the keys with -inf at exactly the selected experts; indices stored;
 *         softmax: -max (max8's first value, negated between max8 and the
 *         knock-out);
 *   ACT   softmax: e = exp(l - max) from the SBUF logits with its row sum
 *         Z (accumulate form); sigmoid: e = sigmoid(l);
 *   ACT   normalised over the selected (norm_topk, or a softmax over the k
 *         selected without pre_norm, where the shift by the max cancels):
 *         their sum Z from the k values max8 returned (a [tw, 8] pass);
 *   DVE + POOL  (3/8 and 5/8 of the experts) mask = (keys == -inf); affinities
 *         = e / Z x mask (softmax over all E, or normalised), or e x mask
 *         (sigmoid);
 *   DMA   affinities stored.
 * The mask is exact because match_replace8 knocked out exactly the
 * selected positions: a real logit is never -inf unless x or w holds an
 * infinity (docs/parts/moe.md). */
#include <math.h>

#include "router_impl.h"

#include "kernels/topk/topk.h"

uint64_t nx_router_select_bytes(const rt_state *s) {
    const uint64_t E = s->p->E;
    uint64_t one = nx_rows_tile_bytes(s->Epad, NX_DT_FP32) + 4 * nx_rows_tile_bytes(E, NX_DT_FP32) +
                   3 * nx_rows_tile_bytes(NX_ROUTER_MAX_K, NX_DT_FP32) + nx_rows_tile_bytes(4, NX_DT_FP32);
    return 2 * one;
}

int nx_router_select_alloc(rt_state *s, nx_error *err) {
    nx_kctx *k = s->k;
    const uint64_t E = s->p->E;
    for (uint32_t i = 0; i < 2; i++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "router_keys", NX_DT_FP32, s->TT, s->Epad, &s->keys[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_logits_sb", NX_DT_FP32, s->TT, E, &s->lsb[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_act", NX_DT_FP32, s->TT, E, &s->ex[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_mask", NX_DT_FP32, s->TT, E, &s->mk[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_affinities", NX_DT_FP32, s->TT, E, &s->aff[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_values", NX_DT_FP32, s->TT, NX_ROUTER_MAX_K, &s->vals[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_indices", NX_DT_INT32, s->TT, NX_ROUTER_MAX_K, &s->idx[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_values_act", NX_DT_FP32, s->TT, NX_ROUTER_MAX_K, &s->vact[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "router_row_stats", NX_DT_FP32, s->TT, 4, &s->st[i], err) != 0)
            return -1;
    return 0;
}

/* ACT: dst = func(in + bias) (bias a per-partition scalar), with the row
 * sum into sum when sum is not NULL. */
static int act(rt_state *s, nx_act_func func, const nx_operand *dst, const nx_operand *in, const nx_operand *bias,
               const nx_operand *sum, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)func;
    a.alu0 = (uint8_t)(sum ? NX_ALU_ADD : NX_ALU_BYPASS);
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = nx_imm(1.0, NX_DT_FP32);
    a.op[3] = bias ? *bias : nx_imm(0.0, NX_DT_FP32);
    if (sum) a.op[4] = *sum;
    return nx_kctx_emit(s->k, NX_ENG_ACT, &a, err);
}

int nx_router_select(rt_state *s, uint64_t t0, uint32_t tw, uint32_t b, nx_error *err) {
    const nx_router_params *p = s->p;
    nx_kctx *k = s->k;
    const uint64_t E = p->E;
    nx_operand lg = nx_rows_view(&s->acc[b], NX_DT_FP32, tw, 0, E), keys_in = nx_rows_view(&s->acc[b], NX_DT_FP32, tw, 0, s->Epad);
    nx_operand lsb = nx_rows_view(&s->lsb[b], NX_DT_FP32, tw, 0, E);
    nx_operand lg_out = nx_rows_hbm(NX_DT_FP32, s->lg->hbm_offset, t0, tw, E);
    /* the copy on VectorE (N + 100 cycles, not ScalarE's N + 265) when
     * the three stores, not the selection, end the tile: few experts and
     * more than two rows per DMA engine (a row under 2 KiB costs a 2 KiB
     * row's time, docs/parts/hardware.md, so logits, indices and
     * affinities take 3 x rows of it in a row); VectorE's selection waits
     * the copy's occupancy */
    const int copy_dve = E < RT_SPLIT_MIN_E && tw > 2 * s->r.engines;
    if (nx_kctx_tensor_copy(k, copy_dve ? NX_ENG_DVE : NX_ENG_ACT, &lsb, &lg, err) != 0 ||
        nx_rows_store(&s->r, &lg_out, &lsb, err) != 0)
        return -1;
    const int softmax = p->act == NX_ROUTER_SOFTMAX;
    nx_operand nm = nx_rows_view(&s->st[b], NX_DT_FP32, tw, 0, 1), z = nx_rows_view(&s->st[b], NX_DT_FP32, tw, 1, 1);
    /* softmax: -max on VectorE between max8 and the knock-out, one
     * dependent step (GpSimd would add its start-up and two semaphore hops
     * to the exp's chain). The knock-out reads the SBUF copy (E >= 8: no
     * padding): the PSUM bank has two readers, ScalarE's copy and max8,
     * in whichever order they reach it, rather than three */
    nx_topk_rowsel_args sel = {.in = keys_in, .P = tw, .n = E, .L = p->k, .keys = &s->keys[b], .vals = &s->vals[b],
                               .idx = &s->idx[b], .neg_max = softmax ? &nm : NULL,
                               .knock_in = E >= 8 ? &lsb : NULL};
    if (nx_topk_rowsel(k, &sel, err) != 0) return -1;
    nx_operand iv = nx_rows_view(&s->idx[b], NX_DT_INT32, tw, 0, p->k);
    nx_operand ix_out = nx_rows_hbm(NX_DT_INT32, s->ix->hbm_offset, t0, tw, p->k);
    if (nx_rows_store(&s->r, &ix_out, &iv, err) != 0) return -1;
    nx_operand ex = nx_rows_view(&s->ex[b], NX_DT_FP32, tw, 0, E);
    nx_operand af = nx_rows_view(&s->aff[b], NX_DT_FP32, tw, 0, E);
    nx_operand zs = nx_rows_view(&s->st[b], NX_DT_FP32, tw, 2, 1);
    /* softmax over all E (pre_norm without norm_topk), or affinities
     * normalised over the selected (norm_topk, or a softmax over the k
     * selected logits), or masked sigmoids */
    const int over_all = softmax && p->pre_norm && !p->norm_topk;
    const int normalise = p->norm_topk || (softmax && !p->pre_norm);
    nx_operand ninf = nx_imm(-INFINITY, NX_DT_FP32);
    /* e from the SBUF copy of the logits: the PSUM bank is left to max8
     * and the knock-out (an ACT read of it holds them up its whole
     * occupancy); softmax needs -max first, the copy is there long before */
    if (softmax) {
        if (act(s, NX_ACT_EXP, &ex, &lsb, &nm, over_all ? &z : NULL, err) != 0) return -1;
    } else if (act(s, NX_ACT_SIGMOID, &ex, &lsb, NULL, NULL, err) != 0) {
        return -1;
    }
    if (normalise) {
        /* the sum over the selected from the k values max8 found (the
         * unused slots of the last round are -inf: act gives 0), on ScalarE
         * while VectorE knocks the selection out */
        const uint64_t w8 = (p->k + 7) / 8 * 8;
        nx_operand vv = nx_rows_view(&s->vals[b], NX_DT_FP32, tw, 0, w8), va = nx_rows_view(&s->vact[b], NX_DT_FP32, tw, 0, w8);
        if (act(s, softmax ? NX_ACT_EXP : NX_ACT_SIGMOID, &va, &vv, softmax ? &nm : NULL, &zs, err) != 0) return -1;
    }
    /* the mask and the affinities, the experts split between VectorE and
     * GpSimd (both read the SBUF tiles; the parts run side by side, the
     * last two steps of the selection chain). GpSimd takes 5/8: VectorE
     * streams the affinity pass's two inputs at half its rate
     * (docs/parts/hardware.md), so the parts end together (measured best
     * of 1/2 .. 5/16 for VectorE, nxsim-bench router) */
    const uint64_t Ed = E >= RT_SPLIT_MIN_E ? E * 3 / 8 : E;
    for (int pass = 0; pass < 2; pass++)
        for (int part = 0; part < 2; part++) {
            const uint64_t c0 = part ? Ed : 0, n = part ? E - Ed : Ed;
            const nx_engine eng = part ? NX_ENG_POOL : NX_ENG_DVE;
            if (n == 0) continue;
            nx_operand kv = nx_rows_view(&s->keys[b], NX_DT_FP32, tw, c0, n), m = nx_rows_view(&s->mk[b], NX_DT_FP32, tw, c0, n);
            nx_operand e = nx_rows_view(&s->ex[b], NX_DT_FP32, tw, c0, n), a = nx_rows_view(&s->aff[b], NX_DT_FP32, tw, c0, n);
            int rc;
            if (pass == 0)
                rc = nx_kctx_tensor_scalar(k, eng, &m, &kv, NX_ALU_IS_EQUAL, &ninf, NX_ALU_BYPASS, NULL, err);
            else if (over_all || normalise)
                rc = nx_kctx_scalar_tensor_tensor(k, eng, &a, &e, NX_ALU_DIVIDE, over_all ? &z : &zs, NX_ALU_MULTIPLY, &m, err);
            else
                rc = nx_kctx_tensor_tensor(k, eng, NX_ALU_MULTIPLY, &a, &e, &m, err);
            if (rc != 0) return -1;
        }
    nx_operand af_out = nx_rows_hbm(NX_DT_FP32, s->af->hbm_offset, t0, tw, E);
    /* on a queue group of its own where the context has one (it has two
     * per engine by default: then behind this tile's logits and indices,
     * whose data phases are over by the time its fixed cost is) */
    return nx_kctx_dma_split(k, s->aff_lane, s->r.engines, &af_out, &af, err);
}
