/* The band tile of the dense convolution: which padded input rows and cols
 * a job's band holds, the zero frame outside the image (POOL memsets), the
 * row loads spread over the DMA engines, and the resident tile's frame. */
#include "conv2d_pbp_emit.h"

void nx_pbp_band_geometry(const pbp_plan *pl, const pbp_job *j, band_geo *bg) {
    bg->rin = (j->rb - 1) * (uint64_t)pl->sy + (pl->KH - 1) * (uint64_t)pl->rdy + 1;
    bg->cin = (j->cwb - 1) * (uint64_t)pl->sx + (pl->KW - 1) * (uint64_t)pl->rdx + 1;
    bg->iy0 = (int64_t)(j->oy0 * (uint64_t)pl->sy) - pl->ply;
    bg->ix0 = (int64_t)(j->ox0 * (uint64_t)pl->sx) - pl->plx;
    int64_t lo = bg->iy0 < 0 ? -bg->iy0 : 0, hi = (int64_t)pl->H - bg->iy0;
    if (hi > (int64_t)bg->rin) hi = (int64_t)bg->rin;
    if (hi < lo) hi = lo;
    if (lo > (int64_t)bg->rin) lo = hi = (int64_t)bg->rin;
    bg->i_lo = (uint64_t)lo;
    bg->i_hi = (uint64_t)hi;
    lo = bg->ix0 < 0 ? -bg->ix0 : 0;
    hi = (int64_t)pl->W - bg->ix0;
    if (hi > (int64_t)bg->cin) hi = (int64_t)bg->cin;
    if (hi < lo) hi = lo;
    if (lo > (int64_t)bg->cin) lo = hi = (int64_t)bg->cin;
    bg->j_lo = (uint64_t)lo;
    bg->j_hi = (uint64_t)hi;
}

/* memset tile rows [i0, i1) x cols [j0, j1) of step st to zero (cut by
 * rows so that each access touches at most free_max elements). */
/* Rows [i0, i1) x cols [j0, j1) of the (row, col, n) plane at element
 * base of tile t, bnb batch values per (row, col), set to zero by POOL. */
static int zero_rect_at(pbp_state *s, const nx_tile *t, uint32_t kc, uint64_t base, uint64_t bnb, uint64_t i0,
                        uint64_t i1, uint64_t j0, uint64_t j1, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    if (i1 <= i0 || j1 <= j0) return 0;
    uint64_t per_row = (j1 - j0) * bnb, fmax = nx_kctx_geometry(s->k)->sbuf_free_elems_max;
    uint64_t rows_per = per_row > fmax ? 1 : fmax / per_row;
    for (uint64_t i = i0; i < i1; i += rows_per) {
        uint64_t off = base + (i * pl->cols_in + j0) * bnb;
        int32_t ds[2] = {(int32_t)(pl->cols_in * bnb), 1};
        uint32_t dc[2] = {(uint32_t)nx_min_u64(rows_per, i1 - i), (uint32_t)per_row};
        nx_operand d = nx_conv_tile_view(t, pl->dt, 0, kc, off, 2, ds, dc);
        if (nx_kctx_memset(s->k, NX_ENG_POOL, &d, 0.0, err) != 0) return -1;
    }
    return 0;
}

int nx_pbp_zero_rect(pbp_state *s, const nx_tile *t, uint32_t kc, uint32_t st, uint64_t i0, uint64_t i1, uint64_t j0,
                     uint64_t j1, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    return zero_rect_at(s, t, kc, (uint64_t)st * pl->rows_in * pl->cols_in * pl->NB, pl->NB, i0, i1, j0, j1, err);
}

/* Loads band rows [lo, hi) of job j into tile t (at tile rows trow0 + i):
 * the zero frame outside the image by POOL memsets, the rest by one
 * transfer per contraction step spread over the DMA engines. */
static int load_rows(pbp_state *s, const pbp_job *j, const nx_tile *t, uint64_t lo, uint64_t hi, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    band_geo bg;
    nx_pbp_band_geometry(pl, j, &bg);
    uint64_t T = j->trow0;
    if (hi > bg.rin) hi = bg.rin;
    if (hi <= lo) return 0;
    uint64_t v_lo = nx_max_u64(lo, bg.i_lo), v_hi = nx_min_u64(hi, bg.i_hi);
    if (v_hi < v_lo) v_hi = v_lo;
    for (uint32_t st = 0; st < pl->steps; st++) {
        uint32_t kc = step_kc(pl, j->sg, st);
        /* the zero frame: rows above and below the image, cols left and right */
        if (nx_pbp_zero_rect(s, t, kc, st, T + lo, T + nx_min_u64(hi, bg.i_lo), 0, bg.cin, err) ||
            nx_pbp_zero_rect(s, t, kc, st, T + nx_max_u64(lo, bg.i_hi), T + hi, 0, bg.cin, err) ||
            nx_pbp_zero_rect(s, t, kc, st, T + v_lo, T + v_hi, 0, bg.j_lo, err) ||
            nx_pbp_zero_rect(s, t, kc, st, T + v_lo, T + v_hi, bg.j_hi, bg.cin, err))
            return -1;
        if (v_hi <= v_lo || bg.j_hi <= bg.j_lo) continue;
        uint64_t nr = v_hi - v_lo, nc = bg.j_hi - bg.j_lo;
        uint64_t iy = (uint64_t)(bg.iy0 + (int64_t)v_lo), ix = (uint64_t)(bg.ix0 + (int64_t)bg.j_lo);
        uint64_t c0 = step_channel(pl, j->sg, st);
        uint64_t doff = ((uint64_t)st * pl->rows_in + T + v_lo) * pl->cols_in * pl->NB + bg.j_lo * pl->NB;
        int32_t ds[3] = {(int32_t)(pl->cols_in * pl->NB), (int32_t)pl->NB, 1};
        uint32_t dc[3] = {(uint32_t)nr, (uint32_t)nc, (uint32_t)j->nbb};
        int32_t ss[3] = {(int32_t)(pl->C * pl->W * pl->N), (int32_t)pl->N, 1};
        if (j->nbb == pl->NB && pl->NB == pl->N) {
            /* whole batch: (col, n) is one contiguous run in both */
            ds[1] = 1;
            dc[1] = (uint32_t)(nc * pl->NB);
            dc[2] = 1;
            ss[1] = 1;
        }
        /* each access touches at most free_max elements: cut by rows */
        const nx_geometry *geo = nx_kctx_geometry(s->k);
        uint64_t per_row = nc * j->nbb, rows_per = per_row > geo->sbuf_free_elems_max ? 1 : geo->sbuf_free_elems_max / per_row;
        for (uint64_t r = 0; r < nr; r += rows_per) {
            uint32_t n = (uint32_t)nx_min_u64(rows_per, nr - r);
            uint32_t dcr[3] = {n, dc[1], dc[2]};
            nx_operand dst = nx_conv_tile_view(t, pl->dt, 0, kc, doff + r * pl->cols_in * pl->NB, 3, ds, dcr);
            uint64_t el = (((iy + r) * pl->C + c0) * pl->W + ix) * pl->N + j->n0;
            nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->img + el * pl->es, kc, (int64_t)(pl->W * pl->N), 3, ss, dcr);
            if (nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
        }
    }
    return 0;
}

/* A band's rows: all of them (ring buffers), or, for the resident image,
 * the rows no earlier band loaded, in pieces of one PSUM tile's rows so
 * that each tile's matmuls wait only for the rows they read. */
int nx_pbp_load_band(pbp_state *s, const pbp_job *j, const nx_tile *t, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    band_geo bg;
    nx_pbp_band_geometry(pl, j, &bg);
    if (!pl->resident) return load_rows(s, j, t, 0, bg.rin, err);
    uint64_t cur = j->load_lo, khd = (pl->KH - 1) * (uint64_t)pl->rdy + 1;
    for (uint64_t a = 0; a < j->rb && cur < bg.rin; a += pl->q) {
        uint64_t qq = nx_min_u64(pl->q, j->rb - a), end = (a + qq - 1) * (uint64_t)pl->sy + khd;
        if (end > cur) {
            if (load_rows(s, j, t, cur, end, err) != 0) return -1;
            cur = end;
        }
    }
    return load_rows(s, j, t, cur, bg.rin, err);
}

void nx_pbp_rt_geometry(const pbp_plan *pl, rt_geo *g) {
    int64_t rows = (int64_t)pl->rows_in, cols = (int64_t)pl->cols_in;
    g->iy_lo = pl->ply < 0 ? -pl->ply : 0;
    g->iy_hi = (int64_t)pl->H;
    if (g->iy_hi > rows - pl->ply) g->iy_hi = rows - pl->ply;
    g->ix_lo = pl->plx < 0 ? -pl->plx : 0;
    g->ix_hi = (int64_t)pl->W;
    if (g->ix_hi > cols - pl->plx) g->ix_hi = cols - pl->plx;
    if (g->iy_hi < g->iy_lo) g->iy_hi = g->iy_lo;
    if (g->ix_hi < g->ix_lo) g->ix_hi = g->ix_lo;
    g->pieces = pl->rt_rows ? nx_cdiv_u64((uint64_t)(g->iy_hi - g->iy_lo), pl->rt_rows) : 1;
}

/* The resident tile's zero frame around the image, every step (POOL). */
int nx_pbp_zero_frame(pbp_state *s, const nx_tile *band, const rt_geo *g, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint64_t tr_lo = (uint64_t)(g->iy_lo + pl->ply), tr_hi = (uint64_t)(g->iy_hi + pl->ply);
    uint64_t tc_lo = (uint64_t)(g->ix_lo + pl->plx), tc_hi = (uint64_t)(g->ix_hi + pl->plx);
    /* a step's plane each, or with batch parts (plan nph > 1, one step)
     * a part's */
    uint32_t planes = pl->nph > 1 ? pl->nph : pl->steps;
    for (uint32_t st = 0; st < planes; st++) {
        uint32_t kc = step_kc(pl, 0, pl->nph > 1 ? 0 : st);
        uint64_t bnb = pl->nph > 1 ? pl->ph_n0[st + 1] - pl->ph_n0[st] : pl->NB;
        uint64_t base = pl->nph > 1 ? pl->ph_base[st] : (uint64_t)st * pl->rows_in * pl->cols_in * pl->NB;
        if (zero_rect_at(s, band, kc, base, bnb, 0, tr_lo, 0, pl->cols_in, err) ||
            zero_rect_at(s, band, kc, base, bnb, tr_hi, pl->rows_in, 0, pl->cols_in, err) ||
            zero_rect_at(s, band, kc, base, bnb, tr_lo, tr_hi, 0, tc_lo, err) ||
            zero_rect_at(s, band, kc, base, bnb, tr_lo, tr_hi, tc_hi, pl->cols_in, err))
            return -1;
    }
    return 0;
}
