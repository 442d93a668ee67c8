/* The compute of one blockwise_mm work item: x -> x^T, gate/up, down with
 * the scatter-add, and the weight pieces' loads (kernels/blockwise_mm/blockwise_mm.c
 * says why the engines are used this way). Item w uses on-chip set
 * w % BW_SETS. */
#include "blockwise_mm_phases.h"

/* ---- x -> x^T ---- */

int bw_transpose(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint32_t tp = pl->tp;
    uint32_t cnt = bw_item_tokens(pl, w);
    uint32_t nt = bw_cdiv32(cnt, tp);
    for (uint32_t c = 0; c < pl->nh; c++) {
        uint32_t hw = bw_min32(tp, s->p->H - (uint64_t)c * tp);
        uint32_t slot = bw_psum_take(s, cnt * pl->s);
        for (uint32_t t = 0; t < nt; t++) {
            uint32_t rows = bw_min32(tp, cnt - t * tp);
            nx_operand src = bw_v(&s->x, s->dt, rows, (uint64_t)t * s->p->H + (uint64_t)c * tp, hw);
            nx_operand dst = bw_psum(s, s->dt, hw, slot + t * tp * pl->s, rows);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
        nx_operand from = bw_psum(s, s->dt, hw, slot, cnt);
        nx_operand to = bw_v(&s->xt, s->dt, hw, (uint64_t)c * pl->bs, cnt);
        if (nx_kctx_tensor_copy(s->k, bw_evac_engine(s), &to, &from, err) != 0) return -1;
    }
    return 0;
}

/* ---- gate/up: h^T = silu(W_g^T x^T) * (W_u^T x^T) ---- */

static void group_cols(const bw *s, uint32_t g, uint32_t *it0, uint32_t *it1, uint64_t *col0,
                       uint32_t *width) {
    const nx_bwmm_plan *pl = s->pl;
    *it0 = g * pl->g_tiles;
    *it1 = *it0 + pl->g_tiles < pl->ni ? *it0 + pl->g_tiles : pl->ni;
    *col0 = (uint64_t)*it0 * pl->tp;
    uint64_t end = (uint64_t)*it1 * pl->tp < s->p->inter ? (uint64_t)*it1 * pl->tp : s->p->inter;
    *width = (uint32_t)(end - *col0);
}

/* Piece j of an item: group g, pass (split: 0 gate, 1 up; joint: 0) and h-chunk c. */
static void gu_piece(const nx_bwmm_plan *pl, uint32_t j, uint32_t *g, uint32_t *pass, uint32_t *c) {
    uint32_t passes = pl->gu_split ? 2 : 1;
    *c = j % pl->nh;
    *pass = (j / pl->nh) % passes;
    *g = j / pl->nh / passes;
}

int bw_load_gate_up(bw *s, uint64_t k, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    if (k >= pl->items * pl->pg) return 0;
    uint64_t w = k / pl->pg;
    uint32_t g, pass, c, it0, it1, width;
    gu_piece(pl, (uint32_t)(k % pl->pg), &g, &pass, &c);
    uint64_t col0;
    group_cols(s, g, &it0, &it1, &col0, &width);
    uint32_t hw = bw_min32(pl->tp, p->H - (uint64_t)c * pl->tp);
    const nx_tile *slot = &s->gu_ring[k % pl->rg];
    nx_operand dst, src;
    if (pl->gu_split) { /* one projection's columns of the rows */
        dst = bw_v(slot, s->dt, hw, 0, width);
        src = nx_ap_hbm_rows(s->dt, s->gu + ((uint64_t)pass * p->inter + col0) * pl->s, hw,
                             (int32_t)(2 * p->inter), width);
    } else if (width == p->inter) { /* gate and up of a row are one run */
        dst = bw_v(slot, s->dt, hw, 0, 2 * width);
        src = nx_ap_hbm_rows(s->dt, s->gu, hw, (int32_t)(2 * p->inter), (uint32_t)(2 * p->inter));
    } else {
        int32_t st[2] = {(int32_t)p->inter, 1};
        uint32_t cn[2] = {2, width};
        dst = bw_v(slot, s->dt, hw, 0, 2 * width);
        src = nx_ap(NX_OPK_HBM, s->dt, 0, hw, (int32_t)(2 * p->inter), s->gu + col0 * pl->s, 2, st, cn);
    }
    nx_operand off = bw_v(&s->set[w % BW_SETS].goff, NX_DT_INT32, hw, c, 1);
    return bw_gather_split(s, &dst, &src, &off, p->E * p->H, err);
}

/* One pass over H of group g: the matmuls of the projections `first` ..
 * `last` (0 gate, 1 up) into acc[2 * i + projection], refilling the ring
 * behind them. */
static int gu_pass(bw *s, uint64_t w, uint32_t g, uint32_t pass, int first, int last, const uint32_t *acc,
                   uint32_t cnt, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    uint32_t tp = pl->tp, it0, it1, width, passes = pl->gu_split ? 2 : 1;
    uint64_t col0;
    group_cols(s, g, &it0, &it1, &col0, &width);
    for (uint32_t c = 0; c < pl->nh; c++) {
        uint64_t k = w * pl->pg + ((uint64_t)g * passes + pass) * pl->nh + c;
        const nx_tile *slot = &s->gu_ring[k % pl->rg];
        uint32_t hw = bw_min32(tp, p->H - (uint64_t)c * tp);
        nx_operand mv = bw_v(&s->xt, s->dt, hw, (uint64_t)c * pl->bs, cnt);
        for (uint32_t it = it0; it < it1; it++) {
            uint32_t iw = bw_min32(tp, p->inter - (uint64_t)it * tp);
            for (int pr = first; pr <= last; pr++) {
                uint64_t col = (uint64_t)(pl->gu_split ? 0 : pr) * width + (it - it0) * tp;
                nx_operand st = bw_v(slot, s->dt, hw, col, iw);
                nx_operand dst = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0) + pr], cnt);
                if (nx_kctx_load_stationary(s->k, &st, err) != 0 ||
                    nx_kctx_multiply_moving(s->k, &dst, &mv, c > 0, err) != 0)
                    return -1;
            }
        }
        if (bw_load_gate_up(s, k + pl->rg, err) != 0) return -1;
    }
    return 0;
}

int bw_gate_up(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    uint32_t tp = pl->tp;
    uint32_t cnt = bw_item_tokens(pl, w);
    uint32_t acc[2 * 128]; /* psum offsets of [gate, up] per i-tile of the group */
    if (pl->g_tiles > 128) return nx_fail(err, "blockwise_mm: %u i-tiles per group exceed 128", pl->g_tiles);
    nx_operand one = nx_imm(1.0, NX_DT_FP32);
    for (uint32_t g = 0; g < pl->ngroups; g++) {
        uint32_t it0, it1, width;
        uint64_t col0;
        group_cols(s, g, &it0, &it1, &col0, &width);
        if (pl->gu_split) {
            /* gate over all of H, silu into SBUF; then up, times silu(gate) */
            for (uint32_t it = it0; it < it1; it++) acc[2 * (it - it0)] = bw_psum_take(s, cnt * 4);
            if (gu_pass(s, w, g, 0, 0, 0, acc, cnt, err) != 0) return -1;
            for (uint32_t it = it0; it < it1; it++) {
                uint32_t iw = bw_min32(tp, p->inter - (uint64_t)it * tp);
                nx_operand gate = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0)], cnt);
                nx_operand sgv = bw_v(&s->sg[it - it0], NX_DT_FP32, iw, 0, cnt);
                if (bw_activation(s, NX_ACT_SILU, &sgv, &gate, &one, err) != 0) return -1;
            }
            for (uint32_t it = it0; it < it1; it++) acc[2 * (it - it0) + 1] = bw_psum_take(s, cnt * 4);
            if (gu_pass(s, w, g, 1, 1, 1, acc, cnt, err) != 0) return -1;
        } else {
            for (uint32_t it = it0; it < it1; it++)
                for (int pr = 0; pr < 2; pr++) acc[2 * (it - it0) + pr] = bw_psum_take(s, cnt * 4);
            if (gu_pass(s, w, g, 0, 0, 1, acc, cnt, err) != 0) return -1;
        }
        for (uint32_t it = it0; it < it1; it++) {
            uint32_t iw = bw_min32(tp, p->inter - (uint64_t)it * tp);
            const nx_tile *sg = pl->gu_split ? &s->sg[it - it0] : &s->sg[s->next_sg++ % s->nsg];
            nx_operand up = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0) + 1], cnt);
            nx_operand sgv = bw_v(sg, NX_DT_FP32, iw, 0, cnt);
            nx_operand h = bw_v(&s->ht, s->dt, iw, (uint64_t)it * pl->bs, cnt);
            if (!pl->gu_split) {
                nx_operand gate = bw_psum(s, NX_DT_FP32, iw, acc[2 * (it - it0)], cnt);
                if (bw_activation(s, NX_ACT_SILU, &sgv, &gate, &one, err) != 0) return -1;
            }
            if (nx_kctx_tensor_tensor(s->k, NX_ENG_DVE, NX_ALU_MULTIPLY, &h, &sgv, &up, err) != 0) return -1;
        }
    }
    return 0;
}

/* ---- down: out[tok] += (h Wd) * a, by 2 KiB column chunks ---- */

int bw_load_down(bw *s, uint64_t k, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    if (k >= pl->items * pl->pd) return 0;
    uint64_t w = k / pl->pd;
    uint32_t j = (uint32_t)(k % pl->pd), wp = bw_min32(pl->c, p->H - (uint64_t)j * pl->c);
    const nx_tile *slot = &s->dn_ring[k % pl->rd];
    for (uint32_t ic = 0; ic < pl->ni; ic++) {
        uint32_t iw = bw_min32(pl->tp, p->inter - (uint64_t)ic * pl->tp);
        nx_operand dst = bw_v(slot, s->dt, iw, (uint64_t)ic * pl->c, wp);
        nx_operand src = nx_ap_hbm_rows(s->dt, s->dn + (uint64_t)j * pl->c * pl->s, iw, (int32_t)p->H, wp);
        nx_operand off = bw_v(&s->set[w % BW_SETS].doff, NX_DT_INT32, iw, ic, 1);
        if (bw_gather_split(s, &dst, &src, &off, p->E * p->inter, err) != 0) return -1;
    }
    return 0;
}

/* Token tile t of item w against down piece j: matmuls, scale, scatter-add. */
static int down_tile(bw *s, uint64_t w, uint32_t t, uint32_t j, uint32_t cnt, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    const nx_bwmm_params *p = s->p;
    const bw_set *q = &s->set[w % BW_SETS];
    uint32_t tp = pl->tp, rows = bw_min32(tp, cnt - t * tp), wp = bw_min32(pl->c, p->H - (uint64_t)j * pl->c);
    uint32_t nb = bw_cdiv32(wp, pl->bank_f32), acc[16];
    if (nb > 16) return nx_fail(err, "blockwise_mm: %u PSUM banks per output chunk exceed 16", nb);
    const nx_tile *slot = &s->dn_ring[(w * pl->pd + j) % pl->rd];
    for (uint32_t b = 0; b < nb; b++)
        acc[b] = bw_psum_take(s, bw_min32(pl->bank_f32, wp - b * pl->bank_f32) * 4);
    for (uint32_t ic = 0; ic < pl->ni; ic++) {
        uint32_t iw = bw_min32(tp, p->inter - (uint64_t)ic * tp);
        nx_operand st = bw_v(&s->ht, s->dt, iw, (uint64_t)ic * pl->bs + (uint64_t)t * tp, rows);
        if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t wb = bw_min32(pl->bank_f32, wp - b * pl->bank_f32);
            nx_operand mv = bw_v(slot, s->dt, iw, (uint64_t)ic * pl->c + (uint64_t)b * pl->bank_f32, wb);
            nx_operand dst = bw_psum(s, NX_DT_FP32, rows, acc[b], wb);
            if (nx_kctx_multiply_moving(s->k, &dst, &mv, ic > 0, err) != 0) return -1;
        }
    }
    const nx_tile *stage = &s->stage[s->next_stage++ % pl->nstage];
    nx_operand a = bw_v(&q->aff, NX_DT_FP32, rows, t, 1);
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t wb = bw_min32(pl->bank_f32, wp - b * pl->bank_f32);
        nx_operand from = bw_psum(s, NX_DT_FP32, rows, acc[b], wb);
        nx_operand to = bw_v(stage, s->dt, rows, (uint64_t)b * pl->bank_f32, wb);
        nx_engine eng = bw_evac_engine(s);
        int rc;
        if (p->scaling != NX_BWMM_POST_SCALE)
            rc = nx_kctx_tensor_copy(s->k, eng, &to, &from, err);
        else if (eng == NX_ENG_ACT)
            rc = bw_activation(s, NX_ACT_IDENTITY, &to, &from, &a, err);
        else
            rc = nx_kctx_tensor_scalar(s->k, NX_ENG_DVE, &to, &from, NX_ALU_MULTIPLY, &a, NX_ALU_BYPASS, NULL,
                                       err);
        if (rc != 0) return -1;
    }
    /* scatter-add into chunk j of the accumulator: rows by token id */
    uint32_t rep = (uint32_t)(w % pl->nrep);
    nx_operand dst = nx_ap_hbm_rows(s->dt, bw_acc_row(s, rep, j, 0), rows, (int32_t)pl->c, wp);
    nx_operand src = bw_v(stage, s->dt, rows, 0, wp);
    nx_operand off = bw_v(&q->sc, NX_DT_INT32, rows, t, 1);
    return bw_dma_indirect(s, bw_scatter_lane(s, rep, j), &dst, &src, &off, p->T,
                           NX_FLAG_SCATTER | NX_FLAG_ACCUMULATE, err);
}

int bw_down(bw *s, uint64_t w, nx_error *err) {
    const nx_bwmm_plan *pl = s->pl;
    uint32_t cnt = bw_item_tokens(pl, w);
    uint32_t nt = bw_cdiv32(cnt, pl->tp);
    if (pl->rd == pl->pd) {
        /* every piece in SBUF: token tiles outermost, so consecutive
         * scatters go to different chunks (different queues) */
        for (uint32_t t = 0; t < nt; t++)
            for (uint32_t j = 0; j < pl->pd; j++)
                if (down_tile(s, w, t, j, cnt, err) != 0) return -1;
        for (uint32_t j = 0; j < pl->pd; j++)
            if (bw_load_down(s, w * pl->pd + j + pl->rd, err) != 0) return -1;
        return 0;
    }
    for (uint32_t j = 0; j < pl->pd; j++) {
        for (uint32_t t = 0; t < nt; t++)
            if (down_tile(s, w, t, j, cnt, err) != 0) return -1;
        if (bw_load_down(s, w * pl->pd + j + pl->rd, err) != 0) return -1;
    }
    return 0;
}
