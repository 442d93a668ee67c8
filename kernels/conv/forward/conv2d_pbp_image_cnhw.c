/* The resident image of the dense convolution read from #4's (C, N, H, W)
 * tensor (plan cnhw). */
#include "conv2d_pbp_emit.h"

/* The resident image from #4's (C, N, H, W) tensor (plan cnhw): per step
 * one transfer of [kc, N x H x W] (a single contiguous run per partition,
 * spread over the DMA engines), then ACT, DVE and POOL in turn copy it in
 * blocks of rows into the band's padded (row, col, n) places: a bit-exact
 * reorder, so the band holds what #3's loads would put there. */
static int cn_load(pbp_state *s, uint32_t st, uint64_t n0, uint64_t nn, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint32_t kc = step_kc(pl, 0, st);
    int32_t one = 1;
    uint64_t hw = pl->H * pl->W;
    uint32_t run = (uint32_t)(nn * hw);
    nx_operand dst = nx_tile_view(&s->raw[st % pl->cn_bufs], pl->dt, 0, kc, n0 * hw, 1, &one, &run);
    uint64_t el = step_channel(pl, 0, st) * pl->cn_elems + n0 * hw;
    nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->img + el * pl->es, kc, (int64_t)pl->cn_elems, 1, &one, &run);
    /* steps alternate between the two queues of each engine, so that one
     * step's fixed phase overlaps the other's data */
    uint32_t keep = s->next_lane;
    s->next_lane = (uint32_t)(((uint64_t)st * pl->pieces) % pl->lanes);
    int rc = nx_pbp_dma_spread(s, &dst, &src, pl->pieces, err);
    s->next_lane = keep;
    return rc;
}

static int cn_reorder(pbp_state *s, const rt_geo *g, const nx_tile *band, uint32_t st, uint64_t n0, uint64_t nn,
                      nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint32_t kc = step_kc(pl, 0, st);
    const nx_tile *raw = &s->raw[st % pl->cn_bufs];
    uint64_t rows = (uint64_t)(g->iy_hi - g->iy_lo), cols = (uint64_t)(g->ix_hi - g->ix_lo);
    if (rows == 0 || cols == 0) return 0;
    /* the step's plane of the band, or the batch part's (plan nph > 1) */
    uint64_t base = (uint64_t)st * pl->rows_in * pl->cols_in * pl->NB, bnb = pl->NB, nl = n0;
    for (uint32_t k = 0; pl->nph > 1 && k < pl->nph; k++)
        if (pl->ph_n0[k] == n0) {
            base = pl->ph_base[k];
            bnb = nn;
            nl = 0;
        }
    /* blocks of the rows one more output row reads (stride rows, at least
     * 128 elements a partition), the three engines in turn: the first
     * tile's matmuls wait for a few short copies, not a quarter of the
     * image, and the next rows are in while the tile before computes
     * (28x28x128 s2 #4, batch 8: blocks of 2 rows 15.3 / 36.2 us bf16 /
     * fp32, of one tile's 5 rows 16.0 / 36.5, of a quarter 16.4 / 39.2) */
    uint64_t per_row = cols * nn;
    uint64_t rb = (uint64_t)pl->sy;
    if (rb > rows) rb = rows;
    if (rb * per_row < 128) rb = nx_cdiv_u64(128, per_row);
    static const nx_engine engs[3] = {NX_ENG_ACT, NX_ENG_DVE, NX_ENG_POOL};
    for (uint64_t r0 = 0; r0 < rows; r0 += rb) {
        uint32_t nr = (uint32_t)nx_min_u64(rb, rows - r0);
        int64_t iy = g->iy_lo + (int64_t)r0;
        int32_t ds[3] = {(int32_t)(pl->cols_in * bnb), (int32_t)bnb, 1};
        uint32_t dc[3] = {nr, (uint32_t)cols, (uint32_t)nn};
        uint64_t off = base + ((uint64_t)(iy + pl->ply) * pl->cols_in + (uint64_t)(g->ix_lo + pl->plx)) * bnb + nl;
        nx_operand d = nx_conv_tile_view(band, pl->dt, 0, kc, off, 3, ds, dc);
        int32_t ss[3] = {(int32_t)pl->W, 1, (int32_t)(pl->H * pl->W)};
        nx_operand sr = nx_conv_tile_view(raw, pl->dt, 0, kc, n0 * pl->H * pl->W + (uint64_t)iy * pl->W +
                                          (uint64_t)g->ix_lo, 3, ss, dc);
        if (nx_kctx_tensor_copy(s->k, engs[s->n_cn++ % 3], &d, &sr, err) != 0) return -1;
    }
    return 0;
}

int nx_pbp_load_image_cnhw(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_geo g;
    nx_pbp_rt_geometry(pl, &g);
    if (nx_pbp_zero_frame(s, band, &g, err) != 0) return -1;
    for (uint32_t st = 0; st < pl->steps && st < pl->cn_bufs; st++)
        if (cn_load(s, st, 0, pl->N, err) != 0) return -1;
    if (nx_pbp_load_filters(s, first, err) != 0) return -1;
    for (uint32_t st = 0; st < pl->steps; st++) {
        if (cn_reorder(s, &g, band, st, 0, pl->N, err) != 0) return -1;
        if (st + pl->cn_bufs < pl->steps && cn_load(s, st + pl->cn_bufs, 0, pl->N, err) != 0) return -1;
    }
    return 0;
}

/* Plan nph > 1 (one step, one cout tile): the filter, then the image's
 * nph batch parts, each on the same queues behind the one before (they
 * arrive in the order they are needed, at full bandwidth: each part is one
 * contiguous run per partition). nx_pbp_reorder_cnhw_part reorders a part
 * just before its matmuls are emitted, so that the earlier parts' matmuls
 * do not wait for its copies (their band footprints overlap). */
int nx_pbp_load_image_cnhw_parts(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_geo g;
    nx_pbp_rt_geometry(pl, &g);
    if (nx_pbp_zero_frame(s, band, &g, err) != 0) return -1;
    if (nx_pbp_load_filters(s, first, err) != 0) return -1;
    for (uint32_t k = 0; k < pl->nph; k++)
        if (cn_load(s, 0, pl->ph_n0[k], pl->ph_n0[k + 1] - pl->ph_n0[k], err) != 0) return -1;
    return 0;
}

int nx_pbp_reorder_cnhw_part(pbp_state *s, const nx_tile *band, uint32_t part, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_geo g;
    nx_pbp_rt_geometry(pl, &g);
    return cn_reorder(s, &g, band, 0, pl->ph_n0[part], pl->ph_n0[part + 1] - pl->ph_n0[part], err);
}
