/* The emitter of the dense pixel-by-pixel convolution (conv2d_pbp.h), its
 * private parts: the state every emitting file shares (a job per band, the
 * tiles, the deferred store), the tile indexing helpers, and the functions
 * one file offers the others. Files by purpose (kernels/conv/forward/):
 *   conv2d_pbp_call.c     the call decoded into an nx_conv_pbp
 *   conv2d_pbp_dma.c      DMA lanes and the spread of a transfer over engines
 *   conv2d_pbp_filters.c  filter loads (three layouts)
 *   conv2d_pbp_bands.c    the band tile: geometry, zero frame, row loads
 *   conv2d_pbp_image_rt.c   the resident image loaded rows-first and PE-transposed
 *   conv2d_pbp_image_cnhw.c the resident image from #4's (C, N, H, W) tensor
 *   conv2d_pbp_compute.c  matmuls over the taps and the PSUM evacuation
 *   conv2d_pbp_store.c    the five stores (direct, transposed, packed, 01bf, combined)
 *   conv2d_pbp.c          the driver (jobs, tiles, pipeline) and leaf #3
 * and the plan (conv2d_pbp_plan.c). Every file includes this header only
 * (and what it includes); none includes another .c's header, so there is
 * no cycle. */
#ifndef NXSIM_KERNELS_CONV_CONV2D_PBP_EMIT_H
#define NXSIM_KERNELS_CONV_CONV2D_PBP_EMIT_H

#include <stdint.h>

#include "conv2d_pbp.h"
#include "conv2d_pbp_plan.h"
#include "kernels/conv/conv_ap.h"
#include "isa/intmath.h"

#define PBP_MAX_BUFS 4


/* ---- the emitter state ---- */

typedef struct pbp_job {
    uint64_t n0, nbb;        /* batch block */
    uint64_t sg;             /* super-group */
    uint32_t t0, nt;         /* cout tiles [t0, t0 + nt) of the super-group (one filter chunk) */
    uint64_t oy0, rb;        /* output rows */
    uint64_t ox0, cwb;       /* output cols */
    uint32_t fbuf;           /* filter buffer */
    int new_chunk;           /* the filter chunk must be loaded for this job */
    uint64_t trow0;          /* tile row of the band's first row (resident image: its padded row) */
    uint64_t load_lo;        /* band rows [load_lo, rows in) are loaded (or zeroed) by this job */
} pbp_job;

typedef struct pbp_state {
    nx_kctx *k;
    const nx_conv_pbp *pb;
    pbp_plan pl;
    nx_tile band[2], filt[2], stage[PBP_MAX_STAGES], tstore[2], psum[PBP_MAX_BUFS], tpsum[2], compact, raw[2], rt_psum[2];
    int have_compact;
    /* the store of the last band (one cout tile), emitted after the next
     * band's first PSUM tile so that the PE does not wait for that band's
     * last evacuation (software pipelining; values unchanged) */
    int pend;
    const nx_tile *pend_stg;
    uint32_t pend_mo;
    uint64_t pend_o0;
    uint64_t pend_stage;  /* out_comb: the stage index of the band's first cout tile */
    pbp_job pend_j;
    int tail; /* the final flush: nothing follows the store on ACT / DVE */
    /* plan nph > 1: the batch part the compute runs (its tiles only) and
     * the band's own stage, kept from the first part to the last */
    int phased;
    uint32_t phase;
    const nx_tile *phase_stg;
    uint32_t next_lane; /* lane rotation */
    uint64_t n_psum, n_stage, n_tstore, n_tpsum, n_evac, n_rt, n_cn;
} pbp_state;

/* Super-group sg: its first group, group count, channel base, in-features
 * (kc of its steps) and out-feature base. */
static inline uint64_t sg_groups(const pbp_plan *pl, uint64_t sg) { return nx_min_u64(pl->gp, pl->G - sg * pl->gp); }

/* Contraction step s of super-group sg: partitions and group-local first
 * in-feature; the first image channel of the step. */
static inline uint32_t step_kc(const pbp_plan *pl, uint64_t sg, uint32_t s) {
    if (pl->gp > 1) return (uint32_t)(sg_groups(pl, sg) * pl->Cg);
    return (uint32_t)nx_min_u64(pl->kc, pl->Cg - (uint64_t)s * pl->kc);
}
static inline uint64_t step_channel(const pbp_plan *pl, uint64_t sg, uint32_t s) {
    return sg * pl->gp * pl->Cg + (uint64_t)s * pl->kc;
}
/* Cout tile t of super-group sg: width and first output feature. */
static inline uint32_t tile_mo(const pbp_plan *pl, uint64_t sg, uint32_t t) {
    if (pl->gp > 1) return (uint32_t)(sg_groups(pl, sg) * pl->Og);
    return (uint32_t)nx_min_u64(pl->mo, pl->Og - (uint64_t)t * pl->mo);
}
static inline uint64_t tile_o0(const pbp_plan *pl, uint64_t sg, uint32_t t) {
    return sg * pl->gp * pl->Og + (uint64_t)t * pl->mo;
}

/* Filter buffer layout per partition: [step][tap][t][m], m < mo: the cout
 * tiles of one tap side by side, so one transfer per step loads runs of
 * KW x (chunk x mo) elements from the (KH, C/G, KW, O) filter. */
static inline uint64_t filt_off(const pbp_plan *pl, uint32_t t_local, uint32_t step, uint64_t tap) {
    uint64_t taps = pl->KH * pl->KW;
    return (((uint64_t)step * taps + tap) * pl->chunk + t_local) * pl->mo;
}

/* ---- DMA (conv2d_pbp_dma.c) ---- */

/* The next lane of the rotation. */
uint32_t nx_pbp_lane_next(pbp_state *s);
/* dst <- src split by partitions over up to `pieces` lanes (one DMA engine
 * each), no piece smaller than one efficient run per partition. */
int nx_pbp_dma_spread(pbp_state *s, const nx_operand *dst, const nx_operand *src, uint32_t pieces, nx_error *err);

/* ---- filters (conv2d_pbp_filters.c) ---- */

/* Job j's filter chunk into filter buffer j->fbuf. */
int nx_pbp_load_filters(pbp_state *s, const pbp_job *j, nx_error *err);

/* ---- the band tile (conv2d_pbp_bands.c) ---- */

/* The band's rows i hold padded input rows oy0*sy + i, i.e. input rows
 * oy0*sy + i - ply, at tile row trow0 + i; [i_lo, i_hi) are inside the
 * image (likewise cols j, always from tile col 0). */
typedef struct band_geo {
    uint64_t rin, cin;        /* rows / cols of the band in use */
    uint64_t i_lo, i_hi, j_lo, j_hi;
    int64_t iy0, ix0;         /* input row / col of band row / col 0 */
} band_geo;

void nx_pbp_band_geometry(const pbp_plan *pl, const pbp_job *j, band_geo *bg);
/* memset tile rows [i0, i1) x cols [j0, j1) of step st to zero. */
int nx_pbp_zero_rect(pbp_state *s, const nx_tile *t, uint32_t kc, uint32_t st, uint64_t i0, uint64_t i1, uint64_t j0,
                     uint64_t j1, nx_error *err);
/* Job j's band rows into tile t (conv2d_pbp_bands.c load_band). */
int nx_pbp_load_band(pbp_state *s, const pbp_job *j, const nx_tile *t, nx_error *err);

/* The resident tile: where the image sits inside the padded tile, and the
 * zero frame around it (both resident routes). */
typedef struct rt_geo {
    int64_t iy_lo, iy_hi, ix_lo, ix_hi; /* the image rows and cols inside the padded tile */
    uint64_t pieces;                    /* row pieces per step */
} rt_geo;
void nx_pbp_rt_geometry(const pbp_plan *pl, rt_geo *g);
int nx_pbp_zero_frame(pbp_state *s, const nx_tile *band, const rt_geo *g, nx_error *err);

/* ---- the resident image routes ---- */

/* Rows-first (plan rt, conv2d_pbp_image_rt.c); from (C, N, H, W) (plan
 * cnhw, conv2d_pbp_image_cnhw.c). Both load the first job's filters after
 * their first image loads. */
int nx_pbp_load_image_rt(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err);
int nx_pbp_load_image_cnhw(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err);
int nx_pbp_load_image_cnhw_parts(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err);
int nx_pbp_reorder_cnhw_part(pbp_state *s, const nx_tile *band, uint32_t part, nx_error *err);

/* ---- compute and store ---- */

/* Job j's matmuls, evacuations and (deferred) stores (conv2d_pbp_compute.c). */
int nx_pbp_compute_job(pbp_state *s, const pbp_job *j, const nx_tile *bt, nx_error *err);
/* Emits the deferred store of the last band, if any (conv2d_pbp_store.c). */
int nx_pbp_flush_store(pbp_state *s, nx_error *err);

#endif
