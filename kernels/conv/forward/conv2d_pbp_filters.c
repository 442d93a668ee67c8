/* Filter loads of the dense convolution: from (KH, C/G, KW, O) into the
 * per-step [tap][tile][m] buffer (cut at the SBUF access limit), from #4's
 * (C/G, O, KH, KW) as it lies, and block-diagonal for grouped convolutions
 * (depthwise: one compact load spread onto the diagonal by POOL). */
#include "conv2d_pbp_emit.h"

/* Filter rows ky of in-features [i0, i0 + np) and outputs [o0, o0 + m)
 * into partitions [p0, p0 + np) from element `off` (tap stride `ts`), cut
 * so that each transfer touches at most free_max elements, spread by
 * partitions over the input lanes. */
static int load_filter_block(pbp_state *s, const nx_tile *t, uint32_t p0, uint32_t np, uint64_t off, uint64_t ts,
                             uint64_t i0, uint64_t o0, uint32_t m, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    uint64_t per_ky = pl->KW * m;
    uint64_t kys = per_ky > geo->sbuf_free_elems_max ? 1 : geo->sbuf_free_elems_max / per_ky;
    for (uint64_t ky0 = 0; ky0 < pl->KH; ky0 += kys) {
        uint32_t nky = (uint32_t)nx_min_u64(kys, pl->KH - ky0);
        for (uint64_t kx0 = 0; kx0 < pl->KW;) {
            /* a single tap row wider than the access limit: split kx too */
            uint32_t nkx = (uint32_t)(per_ky > geo->sbuf_free_elems_max
                                          ? nx_min_u64(pl->KW - kx0, geo->sbuf_free_elems_max / m)
                                          : pl->KW);
            int32_t ds[3] = {(int32_t)(pl->KW * ts), (int32_t)ts, 1};
            uint32_t dc[3] = {nky, nkx, m};
            nx_operand dst = nx_conv_tile_view(t, pl->dt, p0, np, off + (ky0 * pl->KW + kx0) * ts, 3, ds, dc);
            int32_t ss[3] = {(int32_t)(pl->Cg * pl->KW * pl->O), (int32_t)pl->O, 1};
            uint64_t el = ((ky0 * pl->Cg + i0) * pl->KW + kx0) * pl->O + o0;
            nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->filt + el * pl->es, np, (int64_t)(pl->KW * pl->O), 3, ss, dc);
            if (nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
            kx0 += nkx;
        }
    }
    return 0;
}

int nx_pbp_load_filters(pbp_state *s, const pbp_job *j, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    const nx_tile *t = &s->filt[j->fbuf];
    uint64_t taps = pl->KH * pl->KW;
    if (pl->filt_iohw) {
        /* (C/G, O, KH, KW): each step's in-features with all their O x taps
         * values, one contiguous run per partition */
        /* cout tile by cout tile while a tile's run stays an efficient DMA
         * row, so that the first tile's matmuls need not wait for the rest */
        int32_t one = 1;
        uint64_t row = pl->Og * taps;
        int split = pl->couts > 1 && (uint64_t)pl->mo * taps * pl->es >= pl->dma_run;
        for (uint32_t t0 = 0; t0 < (split ? pl->couts : 1); t0++) {
            uint64_t o0 = split ? (uint64_t)t0 * pl->mo : 0;
            uint32_t run = (uint32_t)((split ? tile_mo(pl, 0, t0) : pl->Og) * taps);
            for (uint32_t st = 0; st < pl->steps; st++) {
                uint32_t kc = step_kc(pl, 0, st);
                uint64_t off = (uint64_t)st * row + o0 * taps;
                nx_operand dst = nx_tile_view(t, pl->dt, 0, kc, off, 1, &one, &run);
                uint64_t el = (uint64_t)st * pl->kc * row + o0 * taps;
                nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->filt + el * pl->es, kc, (int64_t)row, 1, &one, &run);
                if (nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
            }
        }
        return 0;
    }
    if (pl->gp == 1) {
        /* the chunk's cout tiles are one contiguous range of outputs */
        uint64_t o0 = tile_o0(pl, j->sg, j->t0);
        uint32_t m = (uint32_t)nx_min_u64((uint64_t)j->nt * pl->mo, pl->Og - (uint64_t)j->t0 * pl->mo);
        for (uint32_t st = 0; st < pl->steps; st++)
            if (load_filter_block(s, t, 0, step_kc(pl, j->sg, st), filt_off(pl, 0, st, 0), (uint64_t)pl->chunk * pl->mo,
                                  (uint64_t)st * pl->kc, o0, m, err) != 0)
                return -1;
        return 0;
    }
    /* block-diagonal: group j's [Cg, Og] block of each tap at (j Cg, j Og) */
    uint64_t ng = sg_groups(pl, j->sg), g0 = j->sg * pl->gp;
    uint32_t kc = (uint32_t)(ng * pl->Cg), mo = (uint32_t)(ng * pl->Og);
    if (pl->Cg == 1) {
        /* depthwise: one transfer of every channel's own taps, then POOL
         * spreads them onto the diagonal: dst[p, tap, jj, mm] = compact[p,
         * tap, mm] where jj == p, else 0 (affine_select on jj - p) */
        int32_t ds[2] = {(int32_t)pl->Og, 1};
        uint32_t dc[2] = {(uint32_t)taps, (uint32_t)pl->Og};
        nx_operand dst = nx_conv_tile_view(&s->compact, pl->dt, 0, kc, 0, 2, ds, dc);
        int32_t ss[3] = {(int32_t)(pl->KW * pl->O), (int32_t)pl->O, 1};
        uint32_t sc[3] = {(uint32_t)pl->KH, (uint32_t)pl->KW, (uint32_t)pl->Og};
        nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->filt + g0 * pl->Og * pl->es, kc, (int64_t)pl->Og, 3, ss, sc);
        /* the destination pattern as (tap, mm) pairs with the source's (ky, kx, mm) */
        if (nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
        nx_insn a = nx_insn_make(NX_OP_AFFINE_SELECT);
        a.alu0 = NX_ALU_IS_EQUAL;
        int32_t os[3] = {(int32_t)pl->mo, (int32_t)pl->Og, 1};
        uint32_t oc[3] = {(uint32_t)taps, (uint32_t)ng, (uint32_t)pl->Og};
        a.op[0] = nx_conv_tile_view(t, pl->dt, 0, kc, 0, 3, os, oc);
        int32_t ps[3] = {0, 1, 0};
        a.op[1] = nx_pattern(0, -1, kc, 3, ps, oc);
        int32_t is[3] = {(int32_t)pl->Og, 0, 1};
        a.op[2] = nx_tile_view(&s->compact, pl->dt, 0, kc, 0, 3, is, oc);
        a.op[3] = nx_imm(0.0, pl->dt);
        return nx_kctx_emit(s->k, NX_ENG_POOL, &a, err);
    }
    int32_t one = 1;
    uint32_t all = (uint32_t)(taps * pl->mo);
    nx_operand whole = nx_tile_view(t, pl->dt, 0, pl->kc, 0, 1, &one, &all);
    if (nx_kctx_memset(s->k, NX_ENG_POOL, &whole, 0.0, err) != 0) return -1;
    (void)mo;
    for (uint64_t jj = 0; jj < ng; jj++)
        if (load_filter_block(s, t, (uint32_t)(jj * pl->Cg), (uint32_t)pl->Cg, jj * pl->Og, pl->mo, 0,
                              (g0 + jj) * pl->Og, (uint32_t)pl->Og, err) != 0)
            return -1;
    return 0;
}
