/* qkv's evacuation of one accumulated column tile (kernels/qkv/qkv_impl.h):
 * PSUM -> SBUF with the bias added on VectorE (fp32), RoPE on the tile's q
 * and k heads with rope's rotation (kernels/elementwise/rope_rotate.c: the
 * heads of a token share its cos/sin row through stride-0 views) before
 * they leave SBUF, one rounding to the dtype, and the stores, whose HBM
 * access patterns write either layout directly: `bsd` rows of the tile's
 * columns; `heads` one transfer per head (and batch span) with partitions =
 * positions d apart, or, with KI token tiles interleaved, KI positions per
 * partition in one run. */
#include "qkv_impl.h"

#include "kernels/elementwise/elementwise.h"

/* PSUM columns [c0, c0 + cols) of the tile (+ bias) into dst. */
static int evac_cols(qkv_state *s, const nx_operand *dst, const nx_tile *acc, uint32_t n, uint64_t c0, uint64_t cols,
                     uint64_t bias_c0, nx_error *err) {
    nx_operand ps = nx_rows_view(acc, NX_DT_FP32, n, c0, cols);
    if (!s->p->bias) return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, dst, &ps, err);
    nx_operand bv = nx_rows_view(&s->bias_t, s->p->bias_dtype, n, bias_c0, cols);
    return nx_kctx_tensor_tensor(s->k, NX_ENG_DVE, NX_ALU_ADD, dst, &ps, &bv, err);
}

/* Stores columns of heads [ha, hb) of tokens [tok0, tok0 + n) from ot.
 * Each transfer's HBM footprint is one contiguous box, and two boxes of
 * this core overlap only on one lane (queue order then suffices: no wait),
 * never with the other core's. bsd: the rows cut over the store lanes the
 * same way for every column tile; when the cores split the columns, one
 * row per transfer (a box of several rows would cover the other core's
 * columns). heads: one transfer per head and batch span, partitions =
 * positions d apart. */
static int store(qkv_state *s, const nx_tile *ot, uint64_t tok0, uint32_t n, uint64_t ha, uint64_t hb,
                 nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint64_t d = p->d;
    if (!p->heads) {
        const uint32_t cols = (uint32_t)((hb - ha) * d);
        nx_operand src = nx_rows_view(ot, s->dt, n, 0, cols);
        nx_operand dst = nx_ap_hbm_rows(s->dt, s->out[0]->hbm_offset + (tok0 * p->N + ha * d) * s->es, n,
                                        (int32_t)p->N, cols);
        if (!s->split_cols) return nx_kctx_dma_split(s->k, QKV_ST_LANE, n < QKV_LANE_GROUP ? n : QKV_LANE_GROUP, &dst, &src, err);
        for (uint32_t r = 0; r < n; r++) {
            nx_operand d1 = nx_operand_rows(&dst, r, 1), s1 = nx_operand_rows(&src, r, 1);
            if (nx_kctx_dma_on(s->k, QKV_ST_LANE + r % QKV_LANE_GROUP, &d1, &s1, err) != 0) return -1;
        }
        return 0;
    }
    const uint64_t first[3] = {0, p->nq, p->nq + p->nkv}, count[3] = {p->nq, p->nkv, p->nkv};
    if (s->KI > 1) { /* the super-tile: partition p holds positions KI p .. KI p + KI - 1 of each head, contiguous */
        const uint64_t bi = tok0 / p->S, s0 = tok0 % p->S;
        const uint32_t run = (uint32_t)(s->KI * d);
        for (uint64_t hd = ha; hd < hb; hd++) {
            const uint32_t o = hd < first[1] ? 0 : hd < first[2] ? 1 : 2;
            nx_operand src = nx_rows_view(ot, s->dt, n, (hd - ha) * run, run);
            const uint64_t off = ((bi * count[o] + (hd - first[o])) * p->S + s0) * d * s->es;
            nx_operand dst = nx_ap_hbm_rows(s->dt, s->out[o]->hbm_offset + off, n, (int32_t)run, run);
            /* two pieces by positions (disjoint HBM boxes) on two engines */
            if (nx_kctx_dma_split(s->k, QKV_ST_LANE + (uint32_t)(2 * hd % QKV_LANE_GROUP), 2, &dst, &src, err) != 0)
                return -1;
        }
        return 0;
    }
    for (uint64_t hd = ha; hd < hb; hd++) {
        const uint32_t o = hd < first[1] ? 0 : hd < first[2] ? 1 : 2;
        for (uint32_t p0 = 0; p0 < n;) {
            const uint64_t tok = tok0 + p0, bi = tok / p->S, s0 = tok % p->S;
            const uint32_t len = qkv_clip(p->S - s0, n - p0);
            nx_operand src = nx_tile_view(ot, s->dt, p0, len, (hd - ha) * d, 1, (const int32_t[]){1},
                                          (const uint32_t[]){(uint32_t)d});
            const uint64_t off = ((bi * count[o] + (hd - first[o])) * p->S + s0) * d * s->es;
            nx_operand dst = nx_ap_hbm_rows(s->dt, s->out[o]->hbm_offset + off, len, (int32_t)d, (uint32_t)d);
            if (nx_kctx_dma_on(s->k, QKV_ST_LANE + (uint32_t)(hd % QKV_LANE_GROUP), &dst, &src, err) != 0) return -1;
            p0 += len;
        }
    }
    return 0;
}

/* Heads [h0, h0 + nh) of the tile in ot, slot j of its super-tile: head
 * h's KI slots are contiguous (KI d elements), so the store of a head
 * reads one run per partition. */
static nx_operand ot_view(const qkv_state *s, const nx_tile *ot, uint32_t n, uint64_t j, uint64_t h0, uint64_t nh) {
    const uint64_t d = s->p->d;
    if (s->KI == 1) return nx_rows_view(ot, s->dt, n, h0 * d, nh * d);
    const int32_t st[2] = {(int32_t)(s->KI * d), 1};
    const uint32_t ct[2] = {(uint32_t)nh, (uint32_t)d};
    return nx_tile_view(ot, s->dt, 0, n, (h0 * s->KI + j) * d, 2, st, ct);
}

/* Heads [ha, hb) of token tile tt, accumulated in PSUM bank `bank` from
 * column col0 on: + bias, RoPE, the rounding and the stores. */
static int evacuate_heads(qkv_state *s, uint64_t tt, uint32_t m, uint32_t bank, uint64_t ha, uint64_t hb,
                          uint64_t col0, nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint64_t d = p->d;
    const uint64_t cw = (hb - ha) * d, bias_c0 = (ha - s->h_lo) * d, rot_end = p->nq + p->nkv;
    const uint64_t e = s->outs++, j = tt % s->KI; /* j: the slot in a super-tile */
    const uint32_t n = qkv_ntok(s, tt), o = (uint32_t)(e % QKV_ROT_BUFS), oo = (uint32_t)(e / s->KI % s->nout);
    const nx_tile *acc = &s->acc[bank], *ot = &s->ot[oo];
    const uint64_t nr = p->rope && ha < rot_end ? (hb < rot_end ? hb : rot_end) - ha : 0; /* heads rotated */
    if (nr > 0) {
        const uint64_t rc = nr * d;
        nx_operand pv = nx_rows_view(&s->pf[o], NX_DT_FP32, n, 0, rc);
        nx_operand av = nx_rows_view(&s->at[o], NX_DT_FP32, n, 0, rc), bv = nx_rows_view(&s->bt[o], NX_DT_FP32, n, 0, rc);
        nx_operand yv = ot_view(s, ot, n, j, 0, nr);
        const nx_rope_rows rg = {n, (uint32_t)nr, (uint32_t)d, 0, 1};
        if (evac_cols(s, &pv, acc, n, col0, rc, bias_c0, err) != 0 ||
            nx_rope_products(s->k, &rg, &s->pf[o], NX_DT_FP32, 0, &s->cs[m], &s->sn[m], p->cs_dtype, &av, &bv, err) !=
                0 ||
            nx_kctx_tensor_tensor(s->k, o % 2 ? NX_ENG_DVE : NX_ENG_POOL, NX_ALU_ADD, &yv, &av, &bv, err) != 0)
            return -1;
    }
    if (nr * d < cw) {
        nx_operand yv = ot_view(s, ot, n, j, nr, hb - ha - nr);
        if (evac_cols(s, &yv, acc, n, col0 + nr * d, cw - nr * d, bias_c0 + nr * d, err) != 0) return -1;
    }
    if (j + 1 < s->KI) return 0;
    return store(s, ot, qkv_tok0(s, tt - j), n, ha, hb, err);
}

int nx_qkv_evacuate(qkv_state *s, uint64_t tt, uint32_t m, uint64_t tile, uint32_t bank, nx_error *err) {
    const uint64_t ha = s->h_lo + tile * s->hpt, hb = ha + s->hpt < s->h_hi ? ha + s->hpt : s->h_hi;
    return evacuate_heads(s, tt, m, bank, ha, hb, 0, err);
}

/* Columns [c0, c0 + cols) of rows [0, n) of the exchange scratch of core
 * `core` ([2][T][nh d] fp32) and the same columns of stage tile st. */
static int scratch_move(qkv_state *s, int to_hbm, uint32_t core, const nx_tile *st, uint32_t n, uint64_t c0,
                        uint64_t cols, nx_error *err) {
    const uint64_t width = (s->h_hi - s->h_lo) * s->p->d, T = s->t_hi - s->t_lo;
    nx_operand sb = nx_rows_view(st, NX_DT_FP32, n, c0, cols);
    nx_operand hb = nx_ap_hbm_rows(NX_DT_FP32, s->xoff + ((uint64_t)core * T * width + c0) * 4, n, (int32_t)width,
                                   (uint32_t)cols);
    const uint32_t pieces = n < QKV_LANE_GROUP ? n : QKV_LANE_GROUP;
    return to_hbm ? nx_kctx_dma_split(s->k, QKV_ST_LANE, pieces, &hb, &sb, err)
                  : nx_kctx_dma_split(s->k, QKV_X_LANE, pieces, &sb, &hb, err);
}

int nx_qkv_exchange(qkv_state *s, uint64_t tt, uint32_t m, uint64_t t0, uint64_t t1, const uint32_t *bank,
                    nx_error *err) {
    const uint64_t d = s->p->d, T = s->t_hi - s->t_lo, width = (s->h_hi - s->h_lo) * d;
    const uint32_t n = qkv_ntok(s, tt), me = nx_kctx_core(s->k), other = 1 - me;
    /* the other core's heads of each tile: below f_lo and from f_hi on */
    for (uint64_t t = t0; t < t1; t++) {
        const uint64_t ha = s->h_lo + t * s->hpt, hb = ha + s->hpt < s->h_hi ? ha + s->hpt : s->h_hi;
        const uint64_t part[2][2] = {{ha, hb < s->f_lo ? hb : s->f_lo}, {ha > s->f_hi ? ha : s->f_hi, hb}};
        for (int i = 0; i < 2; i++) {
            const uint64_t a = part[i][0], b = part[i][1];
            if (a >= b) continue;
            nx_operand ps = nx_rows_view(&s->acc[bank[t - t0]], NX_DT_FP32, n, (a - ha) * d, (b - a) * d);
            nx_operand sv = nx_rows_view(&s->stage[0], NX_DT_FP32, n, (a - s->h_lo) * d, (b - a) * d);
            if (nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &sv, &ps, err) != 0 ||
                scratch_move(s, 1, me, &s->stage[0], n, (a - s->h_lo) * d, (b - a) * d, err) != 0)
                return -1;
        }
    }
    if (nx_kctx_barrier_hbm(s->k, s->xoff, s->xoff + 2 * T * width * 4, err) != 0) return -1;
    /* this core's heads [f_lo, f_hi) of the other core's partials, in one
     * load before any store (DMA transfers are triggered in program order:
     * a load behind a tile's store would wait for that tile's evacuation) */
    const uint64_t c0 = (s->f_lo - s->h_lo) * d, cols = (s->f_hi - s->f_lo) * d;
    if (cols && scratch_move(s, 0, other, &s->stage[1], n, c0, cols, err) != 0) return -1;
    for (uint64_t t = t0; t < t1; t++) {
        const uint64_t ha = s->h_lo + t * s->hpt, hb = ha + s->hpt < s->h_hi ? ha + s->hpt : s->h_hi;
        const uint64_t a = ha > s->f_lo ? ha : s->f_lo, b = hb < s->f_hi ? hb : s->f_hi;
        if (a >= b) continue;
        nx_operand ps = nx_rows_view(&s->acc[bank[t - t0]], NX_DT_FP32, n, (a - ha) * d, (b - a) * d);
        nx_operand sv = nx_rows_view(&s->stage[1], NX_DT_FP32, n, (a - s->h_lo) * d, (b - a) * d);
        if (nx_kctx_tensor_tensor(s->k, NX_ENG_DVE, NX_ALU_ADD, &ps, &ps, &sv, err) != 0 ||
            evacuate_heads(s, tt, m, bank[t - t0], a, b, (a - ha) * d, err) != 0)
            return -1;
    }
    return 0;
}
