/* The dense convolution's stores: direct (C_out on the partitions, pieces
 * by band rows), PE-transposed (pixels on the partitions, k of them per
 * partition for full-width bands), into #4's (OH, OW, N, O), and combined
 * (every cout tile of a band in one [N, O] run per pixel); the deferred
 * store's flush. */
#include "conv2d_pbp_emit.h"

static int store_direct(pbp_state *s, const nx_tile *stg, uint32_t mo, uint64_t o0, const pbp_job *j, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    int32_t ss[3] = {(int32_t)(j->cwb * j->nbb), (int32_t)j->nbb, 1};
    uint32_t sc[3] = {(uint32_t)j->rb, (uint32_t)j->cwb, (uint32_t)j->nbb};
    int32_t hs[3] = {(int32_t)(pl->OW * pl->O * pl->N), (int32_t)(pl->O * pl->N), 1};
    if (j->nbb == pl->N && j->cwb == pl->OW && mo == pl->O && pl->N == 1) {
        /* one pixel after the other: (row, col) is a single stride */
        ss[0] = 1;
        sc[0] = (uint32_t)(j->rb * j->cwb);
        sc[1] = 1;
        hs[0] = (int32_t)pl->O;
    }
    /* pieces by band rows, not by partitions: C_out interleaves in every
     * pixel, so transfers split by partitions would have overlapping HBM
     * footprints and run one after the other */
    uint32_t pieces = (uint32_t)nx_min_u64(pl->pieces, j->rb);
    uint64_t r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint64_t nr = j->rb / pieces + (i < j->rb % pieces);
        uint32_t c[3] = {(uint32_t)nr, sc[1], sc[2]};
        if (ss[0] == 1) c[0] = (uint32_t)(nr * j->cwb); /* merged (row, col) */
        nx_operand src = nx_conv_tile_view(stg, pl->dt, 0, mo, r0 * j->cwb * j->nbb, 3, ss, c);
        uint64_t el = (((j->oy0 + r0) * pl->OW + j->ox0) * pl->O + o0) * pl->N + j->n0;
        nx_operand dst = nx_conv_hbm_view(pl->dt, s->pb->out + el * pl->es, mo, (int64_t)pl->N, 3, hs, c);
        if (nx_kctx_dma_on(s->k, nx_pbp_lane_next(s), &dst, &src, err) != 0) return -1;
        r0 += nr;
    }
    return 0;
}

/* Transposes of the stage's out-features [oa, oa + no) (partitions) for
 * band pixels g0 + p kk + jj and batch values [n0, n0 + nsn) into one PSUM
 * bank (block stride bs), then one ACT or DVE copy into the store tile. */
static int store_block(pbp_state *s, const nx_tile *stg, const nx_tile *ts, uint32_t mo, uint64_t g0, uint32_t P,
                       uint32_t kk, uint32_t oa, uint32_t no, uint64_t n0, uint64_t nsn, uint32_t bs, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint64_t N = pl->N;
    const nx_tile *tp = &s->tpsum[s->n_tpsum++ % 2];
    for (uint32_t jj = 0; jj < kk; jj++) {
        for (uint64_t n = n0; n < n0 + nsn; n++) {
            int32_t st = (int32_t)(kk * N);
            uint32_t ct = P;
            nx_operand src = nx_conv_tile_view(stg, pl->dt, oa, no, (g0 + jj) * N + n, 1, &st, &ct);
            int32_t one = 1;
            uint32_t m = no;
            nx_operand dst = nx_conv_tile_view(tp, pl->dt, 0, P, ((n - n0) * kk + jj) * bs, 1, &one, &m);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
        }
    }
    int32_t ds[3] = {(int32_t)(mo * N), (int32_t)N, 1};
    uint32_t dc[3] = {kk, no, (uint32_t)nsn};
    uint64_t doff = n0 + (uint64_t)oa * N;
    if (pl->out_01bf) {
        /* (OH, OW, N, O): each pixel's values n-major */
        ds[1] = 1;
        ds[2] = (int32_t)mo;
        doff = n0 * mo + oa;
    }
    nx_operand dst = nx_conv_tile_view(ts, pl->dt, 0, P, doff, 3, ds, dc);
    int32_t ps[3] = {(int32_t)bs, 1, (int32_t)(kk * bs)};
    nx_operand src = nx_conv_tile_view(tp, pl->dt, 0, P, 0, 3, ps, dc);
    nx_engine e = s->n_evac++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
    return nx_kctx_tensor_copy(s->k, e, &dst, &src, err);
}

/* One transposed store group: P partitions x kk consecutive band pixels
 * starting at band pixel g0 (kk > 1 only for full-width bands). */
static int store_group(pbp_state *s, const nx_tile *stg, uint32_t mo, uint64_t o0, const pbp_job *j, uint64_t g0,
                       uint32_t P, uint32_t kk, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    const nx_tile *ts = &s->tstore[s->n_tstore++ % 2];
    uint64_t N = pl->N;
    /* The copy out of a PSUM bank of transposes is kk mo ns elements per
     * partition whatever P is, and ACT and DVE cannot read one bank at
     * once. In the last band's store (after the last matmul, nothing left
     * to overlap it) the group spans two banks so that both engines copy at
     * once, split where the halves are disjoint in the store tile (else
     * the second copy waits for the first): by batch values in (OH, OW, N,
     * O), each pixel n-major; by out-features in (OH, OW, O, N) (one pixel
     * per partition, out-feature halves at partitions 0 and mo / 2). */
    uint32_t oh = mo / 2, obs = pl->mo_pad / 2;
    if (s->tail && !pl->out_01bf && kk == 1 && (mo == 64 || mo == 128) && N * obs * pl->es <= geo->psum_bank_bytes) {
        for (uint32_t h = 0; h < 2; h++)
            if (store_block(s, stg, ts, mo, g0, P, kk, h * oh, oh, 0, N, obs, err) != 0) return -1;
    } else {
        uint64_t ns = s->tail && pl->out_01bf ? nx_min_u64(pl->ns, nx_cdiv_u64(N, 2)) : pl->ns;
        for (uint64_t n0 = 0; n0 < N; n0 += ns)
            if (store_block(s, stg, ts, mo, g0, P, kk, 0, mo, n0, nx_min_u64(ns, N - n0), pl->mo_pad, err) != 0)
                return -1;
    }
    /* pixel g0 + p kk + jj of the band -> output pixel (oy0 + r, ox0 + c) */
    uint64_t r = g0 / j->cwb, c = g0 % j->cwb;
    uint64_t pix = (j->oy0 + r) * pl->OW + j->ox0 + c;
    int32_t one = 1;
    uint32_t run = (uint32_t)(kk * mo * N);
    nx_operand src = nx_tile_view(ts, pl->dt, 0, P, 0, 1, &one, &run);
    nx_operand dst;
    if (pl->out_01bf && mo != pl->O) {
        /* kk == 1: one pixel's [N, mo] block per partition, rows O apart */
        int32_t hs[2] = {(int32_t)pl->O, 1};
        uint32_t hc[2] = {(uint32_t)N, mo};
        dst = nx_conv_hbm_view(pl->dt, s->pb->out + (pix * N * pl->O + o0) * pl->es, P, (int64_t)(pl->O * N), 2, hs, hc);
    } else if (mo == pl->O) {
        dst = nx_conv_hbm_view(pl->dt, s->pb->out + (pix * pl->O + o0) * N * pl->es, P, (int64_t)(kk * pl->O * N), 1, &one, &run);
    } else {
        int32_t hs[2] = {(int32_t)N, 1};
        uint32_t hc[2] = {mo, (uint32_t)N};
        /* kk == 1 here: one pixel's [mo, N] block per partition */
        dst = nx_conv_hbm_view(pl->dt, s->pb->out + (pix * pl->O + o0) * N * pl->es, P, (int64_t)(pl->O * N), 2, hs, hc);
    }
    return nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err);
}

/* out_comb: pixels [g0, g0 + P) of the band (full width, kk = 1), every
 * cout tile's stage (stages base, base + 1, ...) transposed into one store
 * tile [P, N, O] and stored as one run of N x O per pixel. */
static int store_group_comb(pbp_state *s, uint64_t base, const pbp_job *j, uint64_t g0, uint32_t P, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    const nx_tile *ts = &s->tstore[s->n_tstore++ % 2];
    uint64_t N = pl->N;
    for (uint32_t tl = 0; tl < pl->couts; tl++) {
        const nx_tile *stg = &s->stage[(base + tl) % pl->stage_bufs];
        uint32_t mo = tile_mo(pl, 0, tl);
        uint64_t o0 = tile_o0(pl, 0, tl);
        for (uint64_t n0 = 0; n0 < N; n0 += pl->ns) {
            uint64_t nsn = nx_min_u64(pl->ns, N - n0);
            const nx_tile *tp = &s->tpsum[s->n_tpsum++ % 2];
            for (uint64_t n = n0; n < n0 + nsn; n++) {
                int32_t st = (int32_t)N;
                uint32_t ct = P;
                nx_operand src = nx_conv_tile_view(stg, pl->dt, 0, mo, g0 * N + n, 1, &st, &ct);
                int32_t one = 1;
                uint32_t m = mo;
                nx_operand dst = nx_conv_tile_view(tp, pl->dt, 0, P, (n - n0) * pl->mo_pad, 1, &one, &m);
                if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
            }
            int32_t ds[2] = {1, (int32_t)pl->O};
            uint32_t dc[2] = {mo, (uint32_t)nsn};
            nx_operand dst = nx_conv_tile_view(ts, pl->dt, 0, P, n0 * pl->O + o0, 2, ds, dc);
            int32_t ps[2] = {1, (int32_t)pl->mo_pad};
            nx_operand src = nx_conv_tile_view(tp, pl->dt, 0, P, 0, 2, ps, dc);
            nx_engine e = s->n_evac++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
            if (nx_kctx_tensor_copy(s->k, e, &dst, &src, err) != 0) return -1;
        }
    }
    uint64_t pix = (j->oy0 + g0 / j->cwb) * pl->OW + j->ox0 + g0 % j->cwb;
    int32_t one = 1;
    uint32_t run = (uint32_t)(N * pl->O);
    nx_operand src = nx_tile_view(ts, pl->dt, 0, P, 0, 1, &one, &run);
    nx_operand dst = nx_conv_hbm_view(pl->dt, s->pb->out + pix * run * pl->es, P, (int64_t)run, 1, &one, &run);
    return nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err);
}

static int store_comb(pbp_state *s, uint64_t base, const pbp_job *j, nx_error *err) {
    uint64_t npix = j->rb * j->cwb;
    for (uint64_t g0 = 0; g0 < npix;) {
        uint32_t P = (uint32_t)nx_min_u64(s->pl.PC, npix - g0);
        if (store_group_comb(s, base, j, g0, P, err) != 0) return -1;
        g0 += P;
    }
    return 0;
}

static int store_transposed(pbp_state *s, const nx_tile *stg, uint32_t mo, uint64_t o0, const pbp_job *j,
                            nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint64_t npix = j->rb * j->cwb;
    if (j->cwb == pl->OW) {
        /* full-width band: pixels run on across rows; k of them per
         * partition when the whole C_out is in the tile (runs of k O N) */
        uint32_t kpack = mo == pl->O ? pl->kpack : 1;
        for (uint64_t g0 = 0; g0 < npix;) {
            uint64_t rem = npix - g0;
            uint32_t kk = rem >= kpack ? kpack : 1;
            uint32_t P = (uint32_t)nx_min_u64(pl->PC, rem / kk);
            if (store_group(s, stg, mo, o0, j, g0, P, kk, err) != 0) return -1;
            g0 += (uint64_t)P * kk;
        }
        return 0;
    }
    for (uint64_t r = 0; r < j->rb; r++)
        for (uint64_t c0 = 0; c0 < j->cwb; c0 += pl->PC) {
            uint32_t P = (uint32_t)nx_min_u64(pl->PC, j->cwb - c0);
            if (store_group(s, stg, mo, o0, j, r * j->cwb + c0, P, 1, err) != 0) return -1;
        }
    return 0;
}

static int store_band(pbp_state *s, const nx_tile *stg, uint32_t mo, uint64_t o0, const pbp_job *j, nx_error *err) {
    return s->pl.store == PBP_STORE_TRANSPOSED && j->nbb == s->pl.N ? store_transposed(s, stg, mo, o0, j, err)
                                                                     : store_direct(s, stg, mo, o0, j, err);
}

int nx_pbp_flush_store(pbp_state *s, nx_error *err) {
    if (!s->pend) return 0;
    s->pend = 0;
    if (s->pl.out_comb) return store_comb(s, s->pend_stage, &s->pend_j, err);
    return store_band(s, s->pend_stg, s->pend_mo, s->pend_o0, &s->pend_j, err);
}
