/* qkv's token tiles (kernels/qkv/qkv_impl.h): x rows loaded, RMSNorm'd with
 * the norms family's pieces (kernels/norms: the ScalarE statistics of
 * rmsnorm, then one GpSimd pass h = (x * rstd) * gamma rounded once, as
 * rmsnorm does), transposed on the PE four 128-column chunks per PSUM bank
 * (an exact bit move) into the K-major stationary tiles, and each token's
 * cos and sin rows loaded beside them. */
#include "qkv_impl.h"

#include "kernels/elementwise/elementwise.h"

/* The cos or sin rows of tokens [tok0, tok0 + n) into partitions [0, n) of
 * t: per batch the tile spans ([S, d/2] rows repeat per batch; with S == 1
 * one transfer of pitch 0), cut over the x lanes: a row is d/2 elements, a
 * small share of a DMA engine's efficient run, so one engine alone would
 * take longer than the x tile beside it. */
static int load_cs(qkv_state *s, const nx_tensor_ref *src, const nx_tile *t, uint64_t tok0, uint32_t n,
                   nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint64_t h = p->d / 2, ce = nx_dtype_size(p->cs_dtype);
    const uint32_t lanes = 2 * QKV_LANE_GROUP;
    if (!p->cs_batched && p->S == 1) {
        nx_operand d = nx_rows_view(t, p->cs_dtype, n, 0, h), sr = nx_ap_hbm_rows(p->cs_dtype, src->hbm_offset, n, 0,
                                                                                   (uint32_t)h);
        return nx_kctx_dma_split(s->k, QKV_X_LANE, lanes, &d, &sr, err);
    }
    for (uint32_t p0 = 0; p0 < n;) {
        const uint64_t tok = tok0 + p0, b = tok / p->S, s0 = tok % p->S;
        const uint32_t len = s->KI > 1 ? n : qkv_clip(p->S - s0, n - p0); /* KI > 1: within one batch */
        const uint64_t row = p->cs_batched ? b * p->S + s0 : s0;
        nx_operand d = nx_tile_view(t, p->cs_dtype, p0, len, 0, 1, (const int32_t[]){1}, (const uint32_t[]){(uint32_t)h});
        nx_operand sr = nx_ap_hbm_rows(p->cs_dtype, src->hbm_offset + row * h * ce, len, (int32_t)(s->KI * h),
                                       (uint32_t)h);
        if (nx_kctx_dma_split(s->k, QKV_X_LANE + p0 % lanes, lanes, &d, &sr, err) != 0) return -1;
        p0 += len;
    }
    return 0;
}

int nx_qkv_prep_load(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint64_t tok0 = qkv_tok0(s, tt);
    const uint32_t n = qkv_ntok(s, tt);
    nx_operand xd = nx_rows_view(&s->xt[tt % 2], s->dt, n, 0, p->H);
    nx_operand xs = nx_ap_hbm_rows(s->dt, s->x->hbm_offset + tok0 * p->H * s->es, n, (int32_t)(s->KI * p->H),
                                   (uint32_t)p->H);
    if (nx_kctx_dma_split(s->k, QKV_X_LANE, 2 * QKV_LANE_GROUP, &xd, &xs, err) != 0) return -1;
    if (!p->rope) return 0;
    return load_cs(s, s->cos, &s->cs[m], tok0, n, err) != 0 || load_cs(s, s->sin, &s->sr[m], tok0, n, err) != 0 ? -1
                                                                                                                : 0;
}

int nx_qkv_prep_norm(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint32_t n = qkv_ntok(s, tt);
    if (p->rope) {
        const nx_rope_rows rg = {n, 1, (uint32_t)p->d, 0, 1};
        if (nx_rope_signed_sin(s->k, &rg, &s->sn[m], &s->sr[m], p->cs_dtype, err) != 0) return -1;
    }
    if (!p->norm) return 0;
    const nx_tile *sm = &s->small[tt % 2];
    /* the squares (ScalarE's by-product) go to the slot's h^T tile, which the
     * transposes overwrite later; h replaces x in place (SBUF is what bounds H) */
    nx_operand xv = nx_rows_view(&s->xt[tt % 2], s->dt, n, 0, p->H), sq = nx_rows_view(&s->hT[m], s->dt, n, 0, p->H);
    nx_operand ss = nx_rows_view(sm, NX_DT_FP32, n, 0, 1), rstd = nx_rows_view(sm, NX_DT_FP32, n, 1, 1);
    if (nx_rms_stats(s->k, &sq, &xv, &ss, &rstd, p->H, p->eps, err) != 0) return -1;
    /* h in column pieces, so the transposes (and the PE's multiplies, chunk
     * by chunk) start on the first piece while GpSimd scales the rest: one
     * pass over a decode row of 8192 took 7 us ahead of them */
    const uint64_t lo = (uint64_t)s->k_lo * s->P, hi = (uint64_t)(s->k_lo + s->nkc) * s->P < p->H
                                                           ? (uint64_t)(s->k_lo + s->nkc) * s->P
                                                           : p->H; /* the columns this core multiplies */
    for (uint64_t c0 = lo; c0 < hi; c0 += QKV_NORM_PIECE) {
        const uint64_t w = hi - c0 < QKV_NORM_PIECE ? hi - c0 : QKV_NORM_PIECE;
        nx_operand xp = nx_rows_view(&s->xt[tt % 2], s->dt, n, c0, w);
        nx_operand gp = nx_rows_view(&s->gamma_t, p->gamma_dtype, n, c0, w);
        if (nx_kctx_scalar_tensor_tensor(s->k, NX_ENG_POOL, &xp, &xp, NX_ALU_MULTIPLY, &rstd, NX_ALU_MULTIPLY, &gp,
                                         err) != 0)
            return -1;
    }
    return 0;
}

int nx_qkv_prep_transpose_range(qkv_state *s, uint64_t tt, uint32_t m, uint32_t kc0, uint32_t kc1, nx_error *err) {
    const nx_qkv_params *p = s->p;
    const uint32_t n = qkv_ntok(s, tt), P = s->P;
    const nx_tile *h = &s->xt[tt % 2]; /* h, normed in place */
    for (uint32_t kc = kc0; kc < kc1;) {
        const uint32_t kw = qkv_clip(p->H - (uint64_t)kc * P, P);
        uint32_t g = 0; /* full chunks share a bank; a ragged one goes alone */
        while (g < QKV_TP_GROUP && kc + g < kc1 && qkv_clip(p->H - (uint64_t)(kc + g) * P, P) == kw) g++;
        const nx_tile *tp = &s->tp[s->trs++ % 2];
        const int32_t one = 1, st2[2] = {(int32_t)P, 1};
        const uint32_t c2[2] = {g, n};
        for (uint32_t j = 0; j < g; j++) {
            nx_operand src = nx_tile_view(h, s->dt, 0, n, (uint64_t)(kc + j) * P, 1, &one, &kw);
            nx_operand pt = nx_tile_view(tp, NX_DT_FP32, 0, kw, (uint64_t)j * P, 1, &one, &n);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &pt, &src, err) != 0) return -1;
        }
        nx_operand from = nx_tile_view(tp, NX_DT_FP32, 0, kw, 0, 2, st2, c2);
        nx_operand to = nx_tile_view(&s->hT[m], s->dt, 0, kw, (uint64_t)kc * P, 2, st2, c2);
        if (nx_kctx_tensor_copy(s->k, s->trs % 2 ? NX_ENG_DVE : NX_ENG_ACT, &to, &from, err) != 0) return -1;
        kc += g;
    }
    return 0;
}

int nx_qkv_prep_transpose(qkv_state *s, uint64_t tt, uint32_t m, nx_error *err) {
    return nx_qkv_prep_transpose_range(s, tt, m, s->k_lo, s->k_lo + s->nkc, err);
}
