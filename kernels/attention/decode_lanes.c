/* attention_decode's lanes (docs/parts/attention-decode.md, "Lanes"): a
 * cache tile's scores with chunk group g (chunks g cg .. g cg + cg - 1,
 * positions p c + e) in partitions 32 g .. 32 g + R - 1 (a PE result starts
 * at a multiple of 32), so half 1 of the softmax runs on 32 lg partitions of
 * cg Pt columns instead of R partitions of c Pt (ACT's exponentials and
 * DVE's max cost a column each), and every lane keeps its own running max,
 * l and O_acc (a partial softmax, flash-decoding's split, over the chunk
 * groups of one row). At an item's end the lanes of a row are merged:
 * w = exp(m_lane - M_row), out = sum w O / sum w l (the PE's fp32 matmul
 * with the 0/1 lane-to-row matrix times w), one stage an iteration so no
 * engine waits within one. */
#include <string.h>

#include "decode_impl.h"

static int act_exp(nx_kctx *k, const nx_operand *dst, const nx_operand *in, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)NX_ACT_EXP;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = nx_imm(1.0, NX_DT_FP32);
    a.op[3] = nx_imm(0.0, NX_DT_FP32);
    return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
}

#define ALLOC(t, name, dt, parts, n) \
    if (nx_kctx_alloc(c->k, NX_OPK_SBUF, name, dt, parts, n, t, err) != 0) return -1

int dec_lane_alloc(dec_core *c, nx_error *err) {
    const dec_plan *pl = &c->pl;
    const uint32_t R = pl->R, L = pl->lanes;
    ALLOC(&c->lsel, "lane_rows", NX_DT_FP32, L, R);
    ALLOC(&c->ones_r, "ones_rows", NX_DT_FP32, 1, R);
    for (uint32_t i = 0; i < 2; i++)
        for (uint32_t d = 0; d < pl->nd; d++)
            for (uint32_t g = 0; g < pl->lg; g++) ALLOC(&c->zq[i][d][g], "q_t_lanes", pl->p.dtype, pl->Dp, L);
    for (uint32_t i = 0; i < pl->nm; i++) {
        ALLOC(&c->mrow[i], "merge_max", NX_DT_FP32, 1, R);
        ALLOC(&c->dT[i], "merge_diff", NX_DT_FP32, 1, L);
        ALLOC(&c->wT[i], "merge_w", NX_DT_FP32, 1, L);
        ALLOC(&c->W[i], "merge_weights", NX_DT_FP32, L, R);
        ALLOC(&c->lcol[i], "merge_l", NX_DT_FP32, R, 1);
    }
    return 0;
}

/* lsel[32 g + r][r'] = (r == r'), 0 on the unused lanes (32 g + r, r >=
 * R): built transposed by iota ([R, lanes]: lane column within its group
 * minus row, == 0), turned by the PE (exact), copied out. Zeros where
 * a lane never writes: the stationaries' other columns, the merge weights
 * of the unused lanes, P^T's columns of the unused lanes (l's stationary)
 * and O / l in PSUM (so those lanes stay finite and weigh 0, not NaN, in
 * the merge). */
int dec_lane_constants(dec_core *c, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const uint32_t R = pl->R, L = pl->lanes;
    nx_tile selT;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "lane_rows_t", NX_DT_FP32, R, L, &selT, err) != 0) return -1;
    const int32_t st[2] = {0, 1};
    const uint32_t cn[2] = {pl->lg, DEC_LANE_Q};
    nx_operand t = nx_tile_ap(&selT), z = nx_imm(0.0, NX_DT_FP32), o = nx_tile_ap(&c->ones_r);
    nx_operand pat = nx_pattern(0, -1, R, 2, st, cn);
    pat.dtype = NX_DT_INT32;
    nx_operand ps = dec_psum(c, NX_DT_FP32, pl->ps_fin, L, R), sl = nx_tile_ap(&c->lsel);
    if (nx_kctx_iota(k, &t, &pat, err) != 0 ||
        nx_kctx_tensor_scalar(k, NX_ENG_POOL, &t, &t, NX_ALU_IS_EQUAL, &z, NX_ALU_BYPASS, NULL, err) != 0 ||
        nx_kctx_transpose(k, NX_ENG_PE, &ps, &t, err) != 0 || nx_kctx_tensor_copy(k, NX_ENG_DVE, &sl, &ps, err) != 0 ||
        nx_kctx_memset(k, NX_ENG_POOL, &o, 1.0, err) != 0)
        return -1;
    for (uint32_t i = 0; i < 2; i++)
        for (uint32_t d = 0; d < pl->nd; d++)
            for (uint32_t g = 0; g < pl->lg; g++) {
                nx_operand zt = nx_tile_ap(&c->zq[i][d][g]);
                if (nx_kctx_memset(k, NX_ENG_POOL, &zt, 0.0, err) != 0) return -1;
            }
    for (uint32_t i = 0; i < pl->nm; i++) {
        nx_operand w = nx_tile_ap(&c->wT[i]);
        if (nx_kctx_memset(k, NX_ENG_POOL, &w, 0.0, err) != 0) return -1;
    }
    for (uint32_t i = 0; i < 2; i++) { /* P^T's columns past each chunk's R (dec_lane_pt) */
        nx_operand pt = nx_tile_ap(&c->ptb_s[i]);
        if (nx_kctx_memset(k, NX_ENG_POOL, &pt, 0.0, err) != 0) return -1;
    }
    nx_operand ol = dec_psum(c, NX_DT_FP32, pl->ps_o, L, pl->p.D + 1);
    return nx_kctx_memset(k, NX_ENG_DVE, &ol, 0.0, err);
}

/* S[32 g + r, u Pt + p] = q_r . k_{p c + e}, chunk e = g cg + u: per chunk
 * one multiply of its Pt columns with Q^T in group g's stationary columns
 * (zeros in the others, accumulated: the other groups' lanes get + 0). */
int dec_lane_scores(dec_core *c, const dec_step *st, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_dtype dt = pl->p.dtype;
    const uint32_t L = pl->lanes, Dp = pl->Dp, np = st->np;
    for (uint32_t u = 0; u < st->cg; u++) {
        nx_operand S = dec_view(&c->psum, NX_DT_FP32, 0, L, st->soff / 4 + (uint64_t)u * np, np);
        for (uint32_t g = 0; g < pl->lg; g++) {
            const uint32_t e = g * st->cg + u;
            for (uint32_t d = 0; d < pl->nd; d++) {
                nx_operand sv = nx_tile_ap(&c->zq[st->ip][d][g]);
                nx_operand mv = dec_view(&c->ktT, dt, 0, Dp, (uint64_t)d * pl->Ft + (uint64_t)e * np, np);
                if (nx_kctx_load_stationary(k, &sv, err) != 0 || nx_kctx_multiply_moving(k, &S, &mv, g > 0 || d > 0, err) != 0)
                    return -1;
            }
        }
    }
    return 0;
}

/* P [lanes, cg np] -> P^T, one transpose per chunk of a group ([np,
 * lanes] each), times the mask into ptb (column e 32 + r; the columns
 * between stay 0, so chunk u of every group is one [np, lanes] stationary
 * for l, dec_lane_pv).
 * Emitted an iteration before the step's P V (dec_lane_pv), so the PE
 * streams the next tiles' K^T and scores while DVE copies P^T out instead
 * of waiting for that copy between the transposes and P V. */
int dec_lane_pt(dec_core *c, const dec_step *st, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_dtype dt = pl->p.dtype;
    const uint32_t R = pl->R, L = pl->lanes, np = st->np, cg = st->cg, lg = pl->lg;
    const uint64_t es = pl->es;
    for (uint32_t u = 0; u < cg; u++) {
        nx_operand src = dec_view(&c->pb[st->ps], dt, 0, L, (uint64_t)u * np, np);
        nx_operand dst = dec_psum(c, dt, pl->ps_pt + (uint64_t)u * L * es, np, L);
        if (nx_kctx_transpose(k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
    }
    const int32_t ps_st[3] = {(int32_t)L, (int32_t)DEC_LANE_Q, 1}, mw_st[3] = {(int32_t)R, (int32_t)(cg * R), 1};
    const int32_t pd_st[3] = {(int32_t)DEC_LANE_Q, (int32_t)(cg * DEC_LANE_Q), 1}, m_st[3] = {1, (int32_t)cg, 0};
    const uint32_t cn[3] = {cg, lg, R};
    nx_operand pt = nx_tile_view(&c->psum, dt, 0, np, pl->ps_pt / es, 3, ps_st, cn);
    nx_operand pd = nx_tile_view(&c->ptb, dt, 0, np, 0, 3, pd_st, cn);
    nx_operand m = pl->p.window ? nx_tile_view(&c->mw, NX_DT_FP32, 0, np, 0, 3, mw_st, cn)
                                : nx_tile_view(&c->m01, NX_DT_FP32, 0, np, 0, 3, m_st, cn);
    return nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &pd, &pt, &m, err);
}

/* Per chunk O into its group's lanes (accumulated over the group's
 * chunks) from dec_lane_pt's P^T, l' of every lane in cg multiplies (chunk
 * u of all the groups as one stationary: a multiply of one moving column
 * costs the PE's minimum, so one a chunk cost lg times more); O_acc =
 * O_acc alpha + O, l = l alpha + l' over every lane. */
int dec_lane_pv(dec_core *c, const dec_step *st, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const nx_dtype dt = pl->p.dtype;
    const uint32_t R = pl->R, L = pl->lanes, np = st->np, cg = st->cg, lg = pl->lg;
    const uint64_t D = pl->p.D;
    nx_operand on = dec_view(&c->ones, dt, 0, np, 0, 1);
    for (uint32_t g = 0; g < lg; g++)
        for (uint32_t u = 0; u < cg; u++) {
            const uint32_t e = g * cg + u;
            nx_operand sv = dec_view(&c->ptb, dt, 0, np, (uint64_t)e * DEC_LANE_Q, R);
            nx_operand v = dec_view(&c->vt[st->buf], dt, 0, np, (uint64_t)e * D, D);
            nx_operand O = dec_view(&c->psum, NX_DT_FP32, g * DEC_LANE_Q, R, pl->ps_o / 4, D);
            if (nx_kctx_load_stationary(k, &sv, err) != 0 || nx_kctx_multiply_moving(k, &O, &v, u > 0, err) != 0)
                return -1;
        }
    for (uint32_t u = 0; u < cg; u++) {
        const int32_t gs[2] = {(int32_t)(cg * DEC_LANE_Q), 1};
        const uint32_t gn[2] = {lg, DEC_LANE_Q};
        nx_operand sv = nx_tile_view(&c->ptb, dt, 0, np, (uint64_t)u * DEC_LANE_Q, 2, gs, gn);
        nx_operand Ls = dec_view(&c->psum, NX_DT_FP32, 0, L, pl->ps_l / 4, 1);
        if (nx_kctx_load_stationary(k, &sv, err) != 0 || nx_kctx_multiply_moving(k, &Ls, &on, u > 0, err) != 0) return -1;
    }
    nx_operand al = dec_view(&c->stat, NX_DT_FP32, 0, L, 6 + st->ps, 1), l = dec_view(&c->stat, NX_DT_FP32, 0, L, 5, 1);
    nx_operand O = dec_psum(c, NX_DT_FP32, pl->ps_o, L, D), Ls = dec_psum(c, NX_DT_FP32, pl->ps_l, L, 1);
    nx_operand oa = nx_tile_ap(&c->oacc);
    if (nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &oa, &oa, NX_ALU_MULTIPLY, &al, NX_ALU_ADD, &O, err) != 0)
        return -1;
    return nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &l, &l, NX_ALU_MULTIPLY, &al, NX_ALU_ADD, &Ls, err);
}

/* The merge of item m's lanes, stage by stage:
 *   1 PE   m^T [1, L] = the lanes' running max, transposed (exact);
 *   2 DVE  M [1, R] = max over the groups; d = m^T - M (repeated); ACT w = exp d
 *          (the used lanes only: the others keep w = 0);
 *   3 PE   w repeated over the R columns: [L, R] = w^T ones[1, R] (exact);
 *   4 DVE  W = that x sel (lane e R + r weighs into row r only);
 *   5 PE   [O | l] = W^T [O_acc | l] (fp32);
 *   6 DVE  out = O / l into the next output buffer, its store due. */
int dec_lane_merge(dec_core *c, const dec_merge *m, uint32_t stage, nx_error *err) {
    nx_kctx *k = c->k;
    const dec_plan *pl = &c->pl;
    const uint32_t R = pl->R, L = pl->lanes, ms = m->mset;
    const uint64_t D = pl->p.D;
    const nx_tile *stat = &c->stat_s[m->sidx], *oacc = &c->oacc_s[m->sidx];
    const uint64_t mt = pl->ps_m + ms * pl->m_b, wb = mt + ((uint64_t)L * 4 + 15) / 16 * 16, fin = pl->ps_fin + ms * pl->fin_b;
    switch (stage) {
    case 1: {
        nx_operand src = dec_view(stat, NX_DT_FP32, 0, L, m->mcol, 1), dst = dec_psum(c, NX_DT_FP32, mt, 1, L);
        return nx_kctx_transpose(k, NX_ENG_PE, &dst, &src, err);
    }
    case 2: {
        const int32_t re[2] = {1, (int32_t)DEC_LANE_Q}, er[2] = {(int32_t)DEC_LANE_Q, 1}, eb[2] = {0, 1};
        const uint32_t cre[2] = {R, pl->lg}, cer[2] = {pl->lg, R};
        nx_operand mv = nx_tile_view(&c->psum, NX_DT_FP32, 0, 1, mt / 4, 2, re, cre);
        nx_operand mr = nx_tile_ap(&c->mrow[ms]);
        nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
        red.alu0 = NX_ALU_MAX;
        red.iparam[0] = 2; /* axes: dim 1, the chunks */
        red.op[0] = mr;
        red.op[1] = mv;
        nx_operand me = nx_tile_view(&c->psum, NX_DT_FP32, 0, 1, mt / 4, 2, er, cer);
        nx_operand mb = nx_tile_view(&c->mrow[ms], NX_DT_FP32, 0, 1, 0, 2, eb, cer);
        nx_operand d = nx_tile_view(&c->dT[ms], NX_DT_FP32, 0, 1, 0, 2, er, cer);
        nx_operand w = nx_tile_view(&c->wT[ms], NX_DT_FP32, 0, 1, 0, 2, er, cer);
        if (nx_kctx_emit(k, NX_ENG_DVE, &red, err) != 0 ||
            nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_SUBTRACT, &d, &me, &mb, err) != 0)
            return -1;
        return act_exp(k, &w, &d, err);
    }
    case 3: {
        nx_operand w = nx_tile_ap(&c->wT[ms]), on = nx_tile_ap(&c->ones_r), dst = dec_psum(c, NX_DT_FP32, wb, L, R);
        if (nx_kctx_load_stationary(k, &w, err) != 0) return -1;
        return nx_kctx_multiply_moving(k, &dst, &on, 0, err);
    }
    case 4: {
        nx_operand W = nx_tile_ap(&c->W[ms]), ws = dec_psum(c, NX_DT_FP32, wb, L, R), sl = nx_tile_ap(&c->lsel);
        return nx_kctx_tensor_tensor(k, NX_ENG_DVE, NX_ALU_MULTIPLY, &W, &ws, &sl, err);
    }
    case 5: {
        nx_operand W = nx_tile_ap(&c->W[ms]), oa = nx_tile_ap(oacc), l = dec_view(stat, NX_DT_FP32, 0, L, 5, 1);
        nx_operand fo = dec_psum(c, NX_DT_FP32, fin, R, D), fl = dec_psum(c, NX_DT_FP32, fin + D * 4, R, 1);
        if (nx_kctx_load_stationary(k, &W, err) != 0 || nx_kctx_multiply_moving(k, &fo, &oa, 0, err) != 0) return -1;
        return nx_kctx_multiply_moving(k, &fl, &l, 0, err);
    }
    case 6: {
        if (c->nends - c->nstores == DEC_OUTS && dec_store_all(c, err) != 0) return -1;
        nx_operand fo = dec_psum(c, NX_DT_FP32, fin, R, D), fl = dec_psum(c, NX_DT_FP32, fin + D * 4, R, 1);
        nx_operand lc = nx_tile_ap(&c->lcol[ms]), os = nx_tile_ap(&c->osb[c->nends % DEC_OUTS]);
        if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &lc, &fl, err) != 0 ||
            nx_kctx_tensor_scalar(k, NX_ENG_DVE, &os, &fo, NX_ALU_DIVIDE, &lc, NX_ALU_BYPASS, NULL, err) != 0)
            return -1;
        c->due[c->nends % DEC_OUTS] = m->it;
        c->due_q[c->nends++ % DEC_OUTS] = m->q_end + DEC_MERGE_STAGES;
        return 0;
    }
    default:
        return 0;
    }
}
