/* The resident image of the dense convolution loaded rows-first (plan rt): units (step, piece of up to
 * rt_rows image rows) are loaded with H on the partitions, every row one
 * contiguous run of kc x W x N elements, then each (w, n) column [rows, kc]
 * is PE-transposed into PSUM (bit-exact) and ACT / DVE copy each PSUM bank
 * of columns into the band tile at its padded place; the zero frame is set
 * by POOL. The raw units rotate over rt_bufs buffers, the next ones' loads
 * issued ahead of this one's transposes; the filters are requested after
 * the first loads (the transposes come first on the PE). */
#include "conv2d_pbp_emit.h"

/* Unit u: steps [st0, st0 + ns) stacked on the partitions (step st0 + i at
 * partitions [i pr, (i + 1) pr)), image rows [h0, h0 + pr). */
typedef struct rt_unit {
    uint32_t st0, ns, kc, pr;
    int64_t h0;
} rt_unit;

static void rt_unit_of(const pbp_plan *pl, const rt_geo *g, uint64_t u, rt_unit *ru) {
    uint64_t grp = u / g->pieces;
    ru->st0 = (uint32_t)(grp * pl->rt_spu);
    ru->ns = (uint32_t)nx_min_u64(pl->rt_spu, pl->steps - ru->st0);
    ru->kc = step_kc(pl, 0, ru->st0);
    ru->h0 = g->iy_lo + (int64_t)((u % g->pieces) * pl->rt_rows);
    ru->pr = (uint32_t)nx_min_u64(pl->rt_rows, (uint64_t)(g->iy_hi - ru->h0));
}

static int rt_load(pbp_state *s, const rt_geo *g, uint64_t u, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_unit ru;
    rt_unit_of(pl, g, u, &ru);
    int32_t one = 1;
    uint32_t run = (uint32_t)(ru.kc * pl->W * pl->N);
    /* every unit on the same queue of each engine: they arrive one after
     * the other at full bandwidth, in the order the transposes want them */
    uint32_t keep = s->next_lane;
    s->next_lane = 0;
    int rc = 0;
    for (uint32_t i = 0; i < ru.ns && rc == 0; i++) {
        nx_operand dst = nx_tile_view(&s->raw[u % pl->rt_bufs], pl->dt, i * ru.pr, ru.pr, 0, 1, &one, &run);
        uint64_t el = ((uint64_t)ru.h0 * pl->C + step_channel(pl, 0, ru.st0 + i)) * pl->W * pl->N;
        nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->img + el * pl->es, ru.pr, (int64_t)(pl->C * pl->W * pl->N), 1,
                                          &one, &run);
        rc = nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err);
    }
    s->next_lane = keep;
    return rc;
}

/* The PSUM bank of transpose group i: the two rt banks, then the
 * matmuls' PSUM tiles when they are a bank each (free until the last
 * group is copied: the first matmul reads the whole band), so that the
 * transposes run ahead of the copies out instead of waiting for every
 * other one. */
static const nx_tile *rt_bank(pbp_state *s, uint64_t i) {
    const pbp_plan *pl = &s->pl;
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    int join = (uint64_t)pl->FM * nx_dtype_size(NX_DT_FP32) >= geo->psum_bank_bytes;
    uint64_t n = 2 + (join ? pl->psum_bufs : 0), r = i % n;
    return r < 2 ? &s->rt_psum[r] : &s->psum[r - 2];
}

static int rt_transpose(pbp_state *s, const rt_geo *g, const nx_tile *band, uint64_t u, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    const nx_tile *raw = &s->raw[u % pl->rt_bufs];
    rt_unit ru;
    rt_unit_of(pl, g, u, &ru);
    uint32_t kc = ru.kc, pr = ru.pr, pp = ru.ns * ru.pr;
    uint32_t blocks = (uint32_t)(geo->psum_bank_bytes / ((uint64_t)pl->rt_pad * pl->es));
    uint64_t N = pl->N, q_lo = (uint64_t)g->ix_lo * N, q_hi = (uint64_t)g->ix_hi * N;
    int32_t one = 1;
    for (uint64_t q0 = q_lo; q0 < q_hi; q0 += blocks) {
        uint32_t nq = (uint32_t)nx_min_u64(blocks, q_hi - q0);
        const nx_tile *tp = rt_bank(s, s->n_rt++);
        for (uint32_t q = 0; q < nq; q++) {
            int32_t cst = (int32_t)(pl->W * N);
            nx_operand ts = nx_tile_view(raw, pl->dt, 0, pp, q0 + q, 1, &cst, &kc);
            nx_operand td = nx_tile_view(tp, pl->dt, 0, kc, (uint64_t)q * pl->rt_pad, 1, &one, &pp);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &td, &ts, err) != 0) return -1;
        }
        /* column q, step i, row h of the PSUM blocks -> the band's step
         * st0 + i, padded row h0 + ply + h, column q. Every bank's copy
         * spans all the unit's rows of the band, so one bank's copy would
         * wait for the previous one (their band footprints overlap) and the
         * copies, each longer than its bank's transposes, would run one at
         * a time; instead ACT copies the first half of the steps (one step:
         * of the rows) and DVE the second, disjoint footprints, so that
         * DVE's half of a bank runs beside ACT's half of the next one */
        int by_step = ru.ns >= 2;
        uint32_t len = by_step ? ru.ns : pr, halves = len >= 2 ? 2 : 1;
        for (uint32_t hf = 0; hf < halves; hf++) {
            uint32_t part = halves > 1 ? len / 2 + hf * (len % 2) : len, a0 = hf ? len - part : 0;
            uint32_t si = by_step ? a0 : 0, hi = by_step ? 0 : a0;
            int32_t ds[3] = {1, (int32_t)(pl->rows_in * pl->cols_in * pl->NB), (int32_t)(pl->cols_in * pl->NB)};
            uint32_t dc[3] = {nq, by_step ? part : ru.ns, by_step ? pr : part};
            uint64_t off = ((uint64_t)(ru.st0 + si) * pl->rows_in + (uint64_t)(ru.h0 + pl->ply + hi)) * pl->cols_in *
                               pl->NB +
                           (uint64_t)pl->plx * pl->NB + q0;
            nx_operand cd = nx_conv_tile_view(band, pl->dt, 0, kc, off, 3, ds, dc);
            int32_t ps[3] = {(int32_t)pl->rt_pad, (int32_t)pr, 1};
            nx_operand cs = nx_conv_tile_view(tp, pl->dt, 0, kc, (uint64_t)si * pr + hi, 3, ps, dc);
            nx_engine e = halves > 1 ? (hf ? NX_ENG_DVE : NX_ENG_ACT) : s->n_evac++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
            if (nx_kctx_tensor_copy(s->k, e, &cd, &cs, err) != 0) return -1;
        }
    }
    return 0;
}


int nx_pbp_load_image_rt(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_geo g;
    nx_pbp_rt_geometry(pl, &g);
    if (nx_pbp_zero_frame(s, band, &g, err) != 0) return -1;
    uint64_t units = g.pieces * nx_cdiv_u64(pl->steps, pl->rt_spu);
    for (uint64_t u = 0; u < units && u < pl->rt_bufs; u++)
        if (rt_load(s, &g, u, err) != 0) return -1;
    if (nx_pbp_load_filters(s, first, err) != 0) return -1;
    for (uint64_t u = 0; u < units; u++) {
        if (rt_transpose(s, &g, band, u, err) != 0) return -1;
        if (u + pl->rt_bufs < units && rt_load(s, &g, u + pl->rt_bufs, err) != 0) return -1;
    }
    return 0;
}
