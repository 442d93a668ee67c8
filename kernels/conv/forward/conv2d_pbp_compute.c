/* The dense convolution's compute: per PSUM tile the matmuls over the live
 * taps and contraction steps (stationary = a filter slice, moving = a
 * strided view of the band), then the evacuation into the staging tile by
 * ACT and DVE in turn; a band's store is deferred past the next band's
 * first PSUM tile (software pipelining). */
#include "conv2d_pbp_emit.h"

/* Does tap (ky) of output rows [a, a + qq) of the band touch image rows? */
static int tap_rows_live(const band_geo *bg, uint64_t first, uint64_t step, uint64_t n) {
    /* rows first, first + step, ..., first + (n-1) step; any in [i_lo, i_hi)? */
    if (bg->i_hi <= bg->i_lo) return 0;
    uint64_t last = first + (n - 1) * step;
    if (last < bg->i_lo || first >= bg->i_hi) return 0;
    if (first >= bg->i_lo) return 1;
    uint64_t k = (bg->i_lo - first + step - 1) / step; /* first index >= i_lo */
    return k < n && first + k * step < bg->i_hi;
}

static int tap_cols_live(const band_geo *bg, uint64_t first, uint64_t step, uint64_t n) {
    band_geo t = *bg;
    t.i_lo = bg->j_lo;
    t.i_hi = bg->j_hi;
    return tap_rows_live(&t, first, step, n);
}

static int evacuate(pbp_state *s, const nx_tile *ps, const nx_tile *stg, uint32_t mo, const pbp_job *j, uint64_t a,
                    uint64_t qq, uint64_t b, uint64_t pp, uint64_t nsub, uint64_t nn, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    int32_t one = 1;
    uint32_t f = (uint32_t)(qq * pp * nn);
    nx_operand src = nx_tile_view(ps, NX_DT_FP32, 0, mo, 0, 1, &one, &f);
    int32_t ds[3] = {(int32_t)(j->cwb * j->nbb), (int32_t)j->nbb, 1};
    uint32_t dc[3] = {(uint32_t)qq, (uint32_t)pp, (uint32_t)nn};
    nx_operand dst = nx_conv_tile_view(stg, pl->dt, 0, mo, (a * j->cwb + b) * j->nbb + nsub, 3, ds, dc);
    nx_engine e = s->n_evac++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
    return nx_kctx_tensor_copy(s->k, e, &dst, &src, err);
}

int nx_pbp_compute_job(pbp_state *s, const pbp_job *j, const nx_tile *bt, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    band_geo bg;
    nx_pbp_band_geometry(pl, j, &bg);
    const nx_tile *ft = &s->filt[j->fbuf];
    uint64_t taps = pl->KH * pl->KW;
    for (uint32_t tl = 0; tl < j->nt; tl++) {
        uint32_t tt = j->t0 + tl, mo = tile_mo(pl, j->sg, tt);
        uint64_t o0 = tile_o0(pl, j->sg, tt);
        const nx_tile *stg = s->phased ? s->phase_stg : &s->stage[s->n_stage++ % pl->stage_bufs];
        /* a batch part (plan nph > 1): its batch values, its plane of the
         * band and its PSUM tiles */
        uint64_t n_lo = 0, n_hi = j->nbb, bnb = pl->NB, base = 0, tq = pl->q, tpw = pl->pw, tnb = pl->nb;
        if (s->phased) {
            n_lo = pl->ph_n0[s->phase];
            n_hi = pl->ph_n0[s->phase + 1];
            bnb = n_hi - n_lo;
            base = pl->ph_base[s->phase];
            tq = pl->ph_q[s->phase];
            tpw = pl->ph_pw[s->phase];
            tnb = pl->ph_nb[s->phase];
        }
        for (uint64_t a = 0; a < j->rb; a += tq) {
            uint64_t qq = nx_min_u64(tq, j->rb - a);
            for (uint64_t b = 0; b < j->cwb; b += tpw) {
                uint64_t pp = nx_min_u64(tpw, j->cwb - b);
                for (uint64_t nsub = n_lo; nsub < n_hi; nsub += tnb) {
                    uint64_t nn = nx_min_u64(tnb, n_hi - nsub);
                    const nx_tile *ps = &s->psum[s->n_psum++ % pl->psum_bufs];
                    uint32_t f = (uint32_t)(qq * pp * nn);
                    int32_t one = 1;
                    nx_operand dst = nx_tile_view(ps, NX_DT_FP32, 0, mo, 0, 1, &one, &f);
                    int first = 1;
                    for (uint64_t tap = 0; tap < taps; tap++) {
                        uint64_t ky = tap / pl->KW, kx = tap % pl->KW;
                        uint64_t r0 = a * (uint64_t)pl->sy + ky * (uint64_t)pl->rdy;
                        uint64_t c0 = b * (uint64_t)pl->sx + kx * (uint64_t)pl->rdx;
                        int live = tap_rows_live(&bg, r0, (uint64_t)pl->sy, qq) &&
                                   tap_cols_live(&bg, c0, (uint64_t)pl->sx, pp);
                        /* taps that read only padding add nothing; keep the
                         * last one if none was live so the tile is written */
                        if (!live && !(first && tap == taps - 1)) continue;
                        for (uint32_t st = 0; st < pl->steps; st++) {
                            uint32_t kc = step_kc(pl, j->sg, st);
                            uint32_t m = mo;
                            int32_t wst = pl->filt_iohw ? (int32_t)taps : 1;
                            uint64_t woff = pl->filt_iohw ? ((uint64_t)st * pl->Og + o0) * taps + tap
                                                          : filt_off(pl, tl, st, tap);
                            nx_operand w = nx_tile_view(ft, pl->dt, 0, kc, woff, 1, &wst, &m);
                            if (nx_kctx_load_stationary(s->k, &w, err) != 0) return -1;
                            int32_t ms[3] = {(int32_t)((uint64_t)pl->sy * pl->cols_in * bnb),
                                             (int32_t)((uint64_t)pl->sx * bnb), 1};
                            uint32_t mc[3] = {(uint32_t)qq, (uint32_t)pp, (uint32_t)nn};
                            uint64_t off = base + ((uint64_t)st * pl->rows_in + j->trow0 + r0) * pl->cols_in * bnb +
                                           c0 * bnb + (nsub - n_lo);
                            nx_operand mv = nx_conv_tile_view(bt, pl->dt, 0, kc, off, 3, ms, mc);
                            if (nx_kctx_multiply_moving(s->k, &dst, &mv, !first, err) != 0) return -1;
                            first = 0;
                        }
                    }
                    if (evacuate(s, ps, stg, mo, j, a, qq, b, pp, nsub, nn, err) != 0) return -1;
                    if (nx_pbp_flush_store(s, err) != 0) return -1;
                }
            }
        }
        if (nx_pbp_flush_store(s, err) != 0) return -1;
        /* a batch part before the last: the band is stored after its last */
        if (s->phased && s->phase + 1 < pl->nph) continue;
        /* out_comb: the band's store waits for its last cout tile */
        if (pl->out_comb && tl + 1 < j->nt) continue;
        s->pend = 1;
        s->pend_stage = s->n_stage - j->nt;
        s->pend_stg = stg;
        s->pend_mo = mo;
        s->pend_o0 = o0;
        s->pend_j = *j;
    }
    return 0;
}
