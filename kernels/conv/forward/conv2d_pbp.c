/* conv2d_pbp_0f1b_0i1o_01fb_experimental_1: a dense 2-D convolution on the
 * PE array, img (H, C, W, N), filt (KH, C/G, KW, O) -> out (OH, OW, O, N).
 *
 * Follows the public AWS Neuron kernel of the same name
 * (neuronxcc.nki._private_kernels.conv): "pixel by pixel" (pbp), each
 * output pixel's [C_out, N] block accumulated in a PSUM bank over the
 * filter taps, the filter prefetched into SBUF, C_out in tiles of 128 on
 * the PSUM partitions, the batch N on the moving free axis in tiles of 512.
 * That kernel contracts over the filter height on the partitions (K =
 * KH), takes stride 1 and symmetric padding only, and loads each pixel's
 * window separately. This one goes past it:
 *  - contraction over C_in in tiles of pe_rows (128) on the partitions:
 *    stationary = filter slice [C_in tile, C_out tile] of one tap, moving =
 *    image slice [C_in tile, pixels x N], accumulated in PSUM over taps and
 *    C_in tiles (start flag on the first, accumulate after);
 *  - several output pixels per moving tile (q rows x pw cols x nb batch up
 *    to one fp32 bank, 512 columns) when N < 512, read straight out of an
 *    SBUF band through a strided access pattern (stride, rhs_dilation);
 *  - input bands of R output rows with their halo, zero-padded in SBUF
 *    (asymmetric and negative padding: crop = a shifted window), loaded
 *    with long runs over many DMA queues, double-buffered so the next
 *    band's load overlaps this band's matmuls;
 *  - feature_group_count G: groups that fit a PE tile are packed
 *    block-diagonally into one stationary (depthwise with a channel
 *    multiplier included); larger groups are tiled like a dense conv;
 *  - PSUM evacuated by ACT and DVE in turn (converting to the out dtype)
 *    into a staging tile per band; stored directly (C_out on partitions)
 *    when N is long enough for efficient DMA runs, else PE-transposed so
 *    that each partition stores k pixels x C_out x N contiguous bytes;
 *  - every size from the machine geometry (kernels/conv/forward/conv2d_pbp_plan.c).
 * docs/parts/conv.md describes the tiling and its measured speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv2d_pbp.h"
#include "conv2d_pbp_plan.h"
#include "kernels/conv/conv_ap.h"

#define PBP_MAX_BUFS 4

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- the call ----------------------------------------------------------------- */

static void fmt_shape(char *buf, size_t len, uint32_t nd, const uint64_t *s) {
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < nd && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "[", (unsigned long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

int nx_conv_pbp_from_call(const char *leaf, const char *labels, const nx_kernel_call *call,
                          nx_conv_pbp *pb, nx_error *err) {
    memset(pb, 0, sizeof *pb);
    if (call->n_inputs != 2 || call->nargs != 3)
        return nx_fail(err, "%s: expects 2 inputs (img, filt) and 1 output, got %u inputs and %u outputs", leaf,
                       call->n_inputs, call->nargs - call->n_inputs);
    const nx_tensor_ref *img = &call->args[0], *flt = &call->args[1], *out = &call->args[2];
    nx_conv_layout L;
    if (nx_conv_layout_parse(labels, &L, err) != 0) return -1;
    if (nx_conv_params_read(call->additional_args, 2, NULL, &pb->p, err) != 0)
        return nx_fail_prefix(err, "%s", leaf);
    if (nx_conv_require_default(&pb->p, NX_CONV_LHS_DILATION | NX_CONV_BATCH_GROUPS, leaf, err) != 0) return -1;
    nx_dtype dt = img->dtype;
    if (dt > NX_DT_FP8_E5M2 || !nx_dtype_is_float(dt))
        return nx_fail(err, "operand 0 (%s): dtype %s is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)",
                       img->name, nx_dtype_name(dt) ? nx_dtype_name(dt) : "?");
    for (int i = 1; i < 3; i++)
        if (call->args[i].dtype != dt)
            return nx_fail(err, "operand %d (%s): dtype %s differs from operand 0 (%s)'s %s", i, call->args[i].name,
                           nx_dtype_name(call->args[i].dtype), img->name, nx_dtype_name(dt));
    char in_name[96], f_name[96];
    snprintf(in_name, sizeof in_name, "operand 0 (%s)", img->name);
    snprintf(f_name, sizeof f_name, "operand 1 (%s)", flt->name);
    uint64_t want[NX_KERNEL_MAX_DIMS];
    if (nx_conv_result_shape(&L, &pb->p, img->ndims, img->shape, flt->ndims, flt->shape, in_name, f_name, want,
                             err) != 0)
        return -1;
    int same = out->ndims == 4;
    for (int i = 0; same && i < 4; i++) same = out->shape[i] == want[i];
    if (!same) {
        char a[96], b[96], c[96], d[96];
        fmt_shape(a, sizeof a, out->ndims, out->shape);
        fmt_shape(b, sizeof b, 4, want);
        fmt_shape(c, sizeof c, img->ndims, img->shape);
        fmt_shape(d, sizeof d, flt->ndims, flt->shape);
        return nx_fail(err, "operand 2 (%s): shape %s must be %s (the convolution of %s %s and %s %s)", out->name, a, b,
                       in_name, c, f_name, d);
    }
    pb->dtype = dt;
    pb->H = img->shape[L.lhs_spatial[0]];
    pb->W = img->shape[L.lhs_spatial[1]];
    pb->C = img->shape[L.lhs_feature];
    pb->N = img->shape[L.lhs_batch];
    pb->KH = flt->shape[L.rhs_spatial[0]];
    pb->KW = flt->shape[L.rhs_spatial[1]];
    pb->O = flt->shape[L.rhs_out];
    pb->OH = want[L.out_spatial[0]];
    pb->OW = want[L.out_spatial[1]];
    pb->img = img->hbm_offset;
    pb->filt = flt->hbm_offset;
    pb->out = out->hbm_offset;
    /* access-pattern strides are 32-bit element counts */
    uint64_t pitch[3] = {pb->C * pb->W * pb->N, pb->C / (uint64_t)pb->p.feature_group_count * pb->KW * pb->O,
                         pb->OW * pb->O * pb->N};
    for (int i = 0; i < 3; i++)
        if (pitch[i] > INT32_MAX)
            return nx_fail(err, "operand %d (%s): a row of %llu elements exceeds 32-bit access-pattern strides", i,
                           call->args[i].name, (unsigned long long)pitch[i]);
    return 0;
}

/* ---- the emitter state ----------------------------------------------------------- */

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
    uint32_t next_lane; /* lane rotation */
    uint64_t n_psum, n_stage, n_tstore, n_tpsum, n_evac, n_rt, n_cn;
} pbp_state;

/* Super-group sg: its first group, group count, channel base, in-features
 * (kc of its steps) and out-feature base. */
static uint64_t sg_groups(const pbp_plan *pl, uint64_t sg) { return min64(pl->gp, pl->G - sg * pl->gp); }

/* Contraction step s of super-group sg: partitions and group-local first
 * in-feature; the first image channel of the step. */
static uint32_t step_kc(const pbp_plan *pl, uint64_t sg, uint32_t s) {
    if (pl->gp > 1) return (uint32_t)(sg_groups(pl, sg) * pl->Cg);
    return (uint32_t)min64(pl->kc, pl->Cg - (uint64_t)s * pl->kc);
}
static uint64_t step_channel(const pbp_plan *pl, uint64_t sg, uint32_t s) {
    return sg * pl->gp * pl->Cg + (uint64_t)s * pl->kc;
}
/* Cout tile t of super-group sg: width and first output feature. */
static uint32_t tile_mo(const pbp_plan *pl, uint64_t sg, uint32_t t) {
    if (pl->gp > 1) return (uint32_t)(sg_groups(pl, sg) * pl->Og);
    return (uint32_t)min64(pl->mo, pl->Og - (uint64_t)t * pl->mo);
}
static uint64_t tile_o0(const pbp_plan *pl, uint64_t sg, uint32_t t) {
    return sg * pl->gp * pl->Og + (uint64_t)t * pl->mo;
}

/* Lanes rotate over all of the context's lanes, loads and stores alike: a
 * spread of `pieces` (one per DMA engine) takes the next lanes, so
 * successive transfers of an engine sit on its two queues in turn and one
 * queue's fixed phase overlaps the other's data phase. */
static uint32_t lane_next(pbp_state *s) {
    uint32_t l = s->next_lane;
    s->next_lane = (s->next_lane + 1) % s->pl.lanes;
    return l;
}

/* DMA split by partitions over up to `pieces` input or output lanes (one
 * DMA engine each), no piece smaller than one efficient run per partition
 * (pl->dma_run): each piece pays the fixed cost of a transfer, and pieces
 * much smaller than that gain nothing from another engine. */
static int dma_spread(pbp_state *s, const nx_operand *dst, const nx_operand *src, uint32_t pieces,
                      nx_error *err) {
    uint32_t rows = dst->partition_count;
    uint64_t bytes = (uint64_t)rows * nx_operand_free_elems(dst) * s->pl.es;
    uint64_t by_size = bytes / s->pl.dma_run;
    if (by_size < pieces) pieces = by_size ? (uint32_t)by_size : 1;
    if (pieces > rows) pieces = rows;
    if (pieces < 1) pieces = 1;
    uint32_t base = rows / pieces, extra = rows % pieces, r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint32_t n = base + (i < extra);
        nx_operand d = nx_operand_rows(dst, r0, n), sr = nx_operand_rows(src, r0, n);
        if (nx_kctx_dma_on(s->k, lane_next(s), &d, &sr, err) != 0) return -1;
        r0 += n;
    }
    return 0;
}

/* ---- filters ---------------------------------------------------------------------- */

/* Filter buffer layout per partition: [step][tap][t][m], m < mo: the cout
 * tiles of one tap side by side, so one transfer per step loads runs of
 * KW x (chunk x mo) elements from the (KH, C/G, KW, O) filter. */
static uint64_t filt_off(const pbp_plan *pl, uint32_t t_local, uint32_t step, uint64_t tap) {
    uint64_t taps = pl->KH * pl->KW;
    return (((uint64_t)step * taps + tap) * pl->chunk + t_local) * pl->mo;
}

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
        uint32_t nky = (uint32_t)min64(kys, pl->KH - ky0);
        for (uint64_t kx0 = 0; kx0 < pl->KW;) {
            /* a single tap row wider than the access limit: split kx too */
            uint32_t nkx = (uint32_t)(per_ky > geo->sbuf_free_elems_max
                                          ? min64(pl->KW - kx0, geo->sbuf_free_elems_max / m)
                                          : pl->KW);
            int32_t ds[3] = {(int32_t)(pl->KW * ts), (int32_t)ts, 1};
            uint32_t dc[3] = {nky, nkx, m};
            nx_operand dst = nx_conv_tile_view(t, pl->dt, p0, np, off + (ky0 * pl->KW + kx0) * ts, 3, ds, dc);
            int32_t ss[3] = {(int32_t)(pl->Cg * pl->KW * pl->O), (int32_t)pl->O, 1};
            uint64_t el = ((ky0 * pl->Cg + i0) * pl->KW + kx0) * pl->O + o0;
            nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->filt + el * pl->es, np, (int64_t)(pl->KW * pl->O), 3, ss, dc);
            if (dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
            kx0 += nkx;
        }
    }
    return 0;
}

static int load_filters(pbp_state *s, const pbp_job *j, nx_error *err) {
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
                if (dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
            }
        }
        return 0;
    }
    if (pl->gp == 1) {
        /* the chunk's cout tiles are one contiguous range of outputs */
        uint64_t o0 = tile_o0(pl, j->sg, j->t0);
        uint32_t m = (uint32_t)min64((uint64_t)j->nt * pl->mo, pl->Og - (uint64_t)j->t0 * pl->mo);
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
        if (dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
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

/* ---- bands ------------------------------------------------------------------------ */

/* The band's rows i hold padded input rows oy0*sy + i, i.e. input rows
 * oy0*sy + i - ply, at tile row trow0 + i; [i_lo, i_hi) are inside the
 * image (likewise cols j, always from tile col 0). */
typedef struct band_geo {
    uint64_t rin, cin;        /* rows / cols of the band in use */
    uint64_t i_lo, i_hi, j_lo, j_hi;
    int64_t iy0, ix0;         /* input row / col of band row / col 0 */
} band_geo;

static void band_geometry(const pbp_plan *pl, const pbp_job *j, band_geo *bg) {
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
static int zero_rect(pbp_state *s, const nx_tile *t, uint32_t kc, uint32_t st, uint64_t i0, uint64_t i1, uint64_t j0,
                     uint64_t j1, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    if (i1 <= i0 || j1 <= j0) return 0;
    uint64_t per_row = (j1 - j0) * pl->NB, fmax = nx_kctx_geometry(s->k)->sbuf_free_elems_max;
    uint64_t rows_per = per_row > fmax ? 1 : fmax / per_row;
    for (uint64_t i = i0; i < i1; i += rows_per) {
        uint64_t off = ((uint64_t)st * pl->rows_in + i) * pl->cols_in * pl->NB + j0 * pl->NB;
        int32_t ds[2] = {(int32_t)(pl->cols_in * pl->NB), 1};
        uint32_t dc[2] = {(uint32_t)min64(rows_per, i1 - i), (uint32_t)per_row};
        nx_operand d = nx_conv_tile_view(t, pl->dt, 0, kc, off, 2, ds, dc);
        if (nx_kctx_memset(s->k, NX_ENG_POOL, &d, 0.0, err) != 0) return -1;
    }
    return 0;
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Loads band rows [lo, hi) of job j into tile t (at tile rows trow0 + i):
 * the zero frame outside the image by POOL memsets, the rest by one
 * transfer per contraction step spread over the DMA engines. */
static int load_rows(pbp_state *s, const pbp_job *j, const nx_tile *t, uint64_t lo, uint64_t hi, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    band_geo bg;
    band_geometry(pl, j, &bg);
    uint64_t T = j->trow0;
    if (hi > bg.rin) hi = bg.rin;
    if (hi <= lo) return 0;
    uint64_t v_lo = max64(lo, bg.i_lo), v_hi = min64(hi, bg.i_hi);
    if (v_hi < v_lo) v_hi = v_lo;
    for (uint32_t st = 0; st < pl->steps; st++) {
        uint32_t kc = step_kc(pl, j->sg, st);
        /* the zero frame: rows above and below the image, cols left and right */
        if (zero_rect(s, t, kc, st, T + lo, T + min64(hi, bg.i_lo), 0, bg.cin, err) ||
            zero_rect(s, t, kc, st, T + max64(lo, bg.i_hi), T + hi, 0, bg.cin, err) ||
            zero_rect(s, t, kc, st, T + v_lo, T + v_hi, 0, bg.j_lo, err) ||
            zero_rect(s, t, kc, st, T + v_lo, T + v_hi, bg.j_hi, bg.cin, err))
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
            uint32_t n = (uint32_t)min64(rows_per, nr - r);
            uint32_t dcr[3] = {n, dc[1], dc[2]};
            nx_operand dst = nx_conv_tile_view(t, pl->dt, 0, kc, doff + r * pl->cols_in * pl->NB, 3, ds, dcr);
            uint64_t el = (((iy + r) * pl->C + c0) * pl->W + ix) * pl->N + j->n0;
            nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->img + el * pl->es, kc, (int64_t)(pl->W * pl->N), 3, ss, dcr);
            if (dma_spread(s, &dst, &src, pl->pieces, err) != 0) return -1;
        }
    }
    return 0;
}

/* The resident image rows-first (plan rt): units (step, piece of up to
 * rt_rows image rows) are loaded with H on the partitions, every row one
 * contiguous run of kc x W x N elements, then each (w, n) column [rows, kc]
 * is PE-transposed into PSUM (bit-exact) and ACT / DVE copy each PSUM bank
 * of columns into the band tile at its padded place; the zero frame is set
 * by POOL. The raw units rotate over rt_bufs buffers, the next ones' loads
 * issued ahead of this one's transposes; the filters are requested after
 * the first loads (the transposes come first on the PE). */
typedef struct rt_geo {
    int64_t iy_lo, iy_hi, ix_lo, ix_hi; /* the image rows and cols inside the padded tile */
    uint64_t pieces;                    /* row pieces per step */
} rt_geo;

static void rt_geometry(const pbp_plan *pl, rt_geo *g) {
    int64_t rows = (int64_t)pl->rows_in, cols = (int64_t)pl->cols_in;
    g->iy_lo = pl->ply < 0 ? -pl->ply : 0;
    g->iy_hi = (int64_t)pl->H;
    if (g->iy_hi > rows - pl->ply) g->iy_hi = rows - pl->ply;
    g->ix_lo = pl->plx < 0 ? -pl->plx : 0;
    g->ix_hi = (int64_t)pl->W;
    if (g->ix_hi > cols - pl->plx) g->ix_hi = cols - pl->plx;
    if (g->iy_hi < g->iy_lo) g->iy_hi = g->iy_lo;
    if (g->ix_hi < g->ix_lo) g->ix_hi = g->ix_lo;
    g->pieces = pl->rt_rows ? cdiv((uint64_t)(g->iy_hi - g->iy_lo), pl->rt_rows) : 1;
}

/* Unit u: steps [st0, st0 + ns) stacked on the partitions (step st0 + i at
 * partitions [i pr, (i + 1) pr)), image rows [h0, h0 + pr). */
typedef struct rt_unit {
    uint32_t st0, ns, kc, pr;
    int64_t h0;
} rt_unit;

static void rt_unit_of(const pbp_plan *pl, const rt_geo *g, uint64_t u, rt_unit *ru) {
    uint64_t grp = u / g->pieces;
    ru->st0 = (uint32_t)(grp * pl->rt_spu);
    ru->ns = (uint32_t)min64(pl->rt_spu, pl->steps - ru->st0);
    ru->kc = step_kc(pl, 0, ru->st0);
    ru->h0 = g->iy_lo + (int64_t)((u % g->pieces) * pl->rt_rows);
    ru->pr = (uint32_t)min64(pl->rt_rows, (uint64_t)(g->iy_hi - ru->h0));
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
        rc = dma_spread(s, &dst, &src, pl->pieces, err);
    }
    s->next_lane = keep;
    return rc;
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
        uint32_t nq = (uint32_t)min64(blocks, q_hi - q0);
        const nx_tile *tp = &s->rt_psum[s->n_rt++ % 2];
        for (uint32_t q = 0; q < nq; q++) {
            int32_t cst = (int32_t)(pl->W * N);
            nx_operand ts = nx_tile_view(raw, pl->dt, 0, pp, q0 + q, 1, &cst, &kc);
            nx_operand td = nx_tile_view(tp, pl->dt, 0, kc, (uint64_t)q * pl->rt_pad, 1, &one, &pp);
            if (nx_kctx_transpose(s->k, NX_ENG_PE, &td, &ts, err) != 0) return -1;
        }
        /* column q, step i, row h of the PSUM blocks -> the band's step
         * st0 + i, padded row h0 + ply + h, column q */
        int32_t ds[3] = {1, (int32_t)(pl->rows_in * pl->cols_in * pl->NB), (int32_t)(pl->cols_in * pl->NB)};
        uint32_t dc[3] = {nq, ru.ns, pr};
        uint64_t off = ((uint64_t)ru.st0 * pl->rows_in + (uint64_t)(ru.h0 + pl->ply)) * pl->cols_in * pl->NB +
                       (uint64_t)pl->plx * pl->NB + q0;
        nx_operand cd = nx_conv_tile_view(band, pl->dt, 0, kc, off, 3, ds, dc);
        int32_t ps[3] = {(int32_t)pl->rt_pad, (int32_t)pr, 1};
        nx_operand cs = nx_conv_tile_view(tp, pl->dt, 0, kc, 0, 3, ps, dc);
        nx_engine e = s->n_evac++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
        if (nx_kctx_tensor_copy(s->k, e, &cd, &cs, err) != 0) return -1;
    }
    return 0;
}

/* The resident tile's zero frame around the image, every step (POOL). */
static int zero_frame(pbp_state *s, const nx_tile *band, const rt_geo *g, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint64_t tr_lo = (uint64_t)(g->iy_lo + pl->ply), tr_hi = (uint64_t)(g->iy_hi + pl->ply);
    uint64_t tc_lo = (uint64_t)(g->ix_lo + pl->plx), tc_hi = (uint64_t)(g->ix_hi + pl->plx);
    for (uint32_t st = 0; st < pl->steps; st++) {
        uint32_t kc = step_kc(pl, 0, st);
        if (zero_rect(s, band, kc, st, 0, tr_lo, 0, pl->cols_in, err) ||
            zero_rect(s, band, kc, st, tr_hi, pl->rows_in, 0, pl->cols_in, err) ||
            zero_rect(s, band, kc, st, tr_lo, tr_hi, 0, tc_lo, err) ||
            zero_rect(s, band, kc, st, tr_lo, tr_hi, tc_hi, pl->cols_in, err))
            return -1;
    }
    return 0;
}

static int load_image_rt(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_geo g;
    rt_geometry(pl, &g);
    if (zero_frame(s, band, &g, err) != 0) return -1;
    uint64_t units = g.pieces * cdiv(pl->steps, pl->rt_spu);
    for (uint64_t u = 0; u < units && u < pl->rt_bufs; u++)
        if (rt_load(s, &g, u, err) != 0) return -1;
    if (load_filters(s, first, err) != 0) return -1;
    for (uint64_t u = 0; u < units; u++) {
        if (rt_transpose(s, &g, band, u, err) != 0) return -1;
        if (u + pl->rt_bufs < units && rt_load(s, &g, u + pl->rt_bufs, err) != 0) return -1;
    }
    return 0;
}

/* The resident image from #4's (C, N, H, W) tensor (plan cnhw): per step
 * one transfer of [kc, N x H x W] (a single contiguous run per partition,
 * spread over the DMA engines), then ACT, DVE and POOL in turn copy it in
 * blocks of rows into the band's padded (row, col, n) places: a bit-exact
 * reorder, so the band holds what #3's loads would put there. */
static int cn_load(pbp_state *s, uint32_t st, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint32_t kc = step_kc(pl, 0, st);
    int32_t one = 1;
    uint32_t run = (uint32_t)pl->cn_elems;
    nx_operand dst = nx_tile_view(&s->raw[st % pl->cn_bufs], pl->dt, 0, kc, 0, 1, &one, &run);
    uint64_t el = step_channel(pl, 0, st) * pl->cn_elems;
    nx_operand src = nx_conv_hbm_view(pl->dt, s->pb->img + el * pl->es, kc, (int64_t)pl->cn_elems, 1, &one, &run);
    /* steps alternate between the two queues of each engine, so that one
     * step's fixed phase overlaps the other's data */
    uint32_t keep = s->next_lane;
    s->next_lane = (uint32_t)(((uint64_t)st * pl->pieces) % pl->lanes);
    int rc = dma_spread(s, &dst, &src, pl->pieces, err);
    s->next_lane = keep;
    return rc;
}

static int cn_reorder(pbp_state *s, const rt_geo *g, const nx_tile *band, uint32_t st, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    uint32_t kc = step_kc(pl, 0, st);
    const nx_tile *raw = &s->raw[st % pl->cn_bufs];
    uint64_t rows = (uint64_t)(g->iy_hi - g->iy_lo), cols = (uint64_t)(g->ix_hi - g->ix_lo);
    if (rows == 0 || cols == 0) return 0;
    /* blocks of about a quarter of the image rows (at least 512 elements
     * each), so that the first PSUM tiles' rows are in early and the three
     * engines share the work */
    uint64_t per_row = cols * pl->N, rb = cdiv(rows, 4);
    if (rb * per_row < 512) rb = cdiv(512, per_row);
    static const nx_engine engs[3] = {NX_ENG_ACT, NX_ENG_DVE, NX_ENG_POOL};
    for (uint64_t r0 = 0; r0 < rows; r0 += rb) {
        uint32_t nr = (uint32_t)min64(rb, rows - r0);
        int64_t iy = g->iy_lo + (int64_t)r0;
        int32_t ds[3] = {(int32_t)(pl->cols_in * pl->NB), (int32_t)pl->NB, 1};
        uint32_t dc[3] = {nr, (uint32_t)cols, (uint32_t)pl->N};
        uint64_t off = ((uint64_t)st * pl->rows_in + (uint64_t)(iy + pl->ply)) * pl->cols_in * pl->NB +
                       (uint64_t)(g->ix_lo + pl->plx) * pl->NB;
        nx_operand d = nx_conv_tile_view(band, pl->dt, 0, kc, off, 3, ds, dc);
        int32_t ss[3] = {(int32_t)pl->W, 1, (int32_t)(pl->H * pl->W)};
        nx_operand sr = nx_conv_tile_view(raw, pl->dt, 0, kc, (uint64_t)iy * pl->W + (uint64_t)g->ix_lo, 3, ss, dc);
        if (nx_kctx_tensor_copy(s->k, engs[s->n_cn++ % 3], &d, &sr, err) != 0) return -1;
    }
    return 0;
}

static int load_image_cnhw(pbp_state *s, const nx_tile *band, const pbp_job *first, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    rt_geo g;
    rt_geometry(pl, &g);
    if (zero_frame(s, band, &g, err) != 0) return -1;
    for (uint32_t st = 0; st < pl->steps && st < pl->cn_bufs; st++)
        if (cn_load(s, st, err) != 0) return -1;
    if (load_filters(s, first, err) != 0) return -1;
    for (uint32_t st = 0; st < pl->steps; st++) {
        if (cn_reorder(s, &g, band, st, err) != 0) return -1;
        if (st + pl->cn_bufs < pl->steps && cn_load(s, st + pl->cn_bufs, err) != 0) return -1;
    }
    return 0;
}

/* A band's rows: all of them (ring buffers), or, for the resident image,
 * the rows no earlier band loaded, in pieces of one PSUM tile's rows so
 * that each tile's matmuls wait only for the rows they read. */
static int load_band(pbp_state *s, const pbp_job *j, const nx_tile *t, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    band_geo bg;
    band_geometry(pl, j, &bg);
    if (!pl->resident) return load_rows(s, j, t, 0, bg.rin, err);
    uint64_t cur = j->load_lo, khd = (pl->KH - 1) * (uint64_t)pl->rdy + 1;
    for (uint64_t a = 0; a < j->rb && cur < bg.rin; a += pl->q) {
        uint64_t qq = min64(pl->q, j->rb - a), end = (a + qq - 1) * (uint64_t)pl->sy + khd;
        if (end > cur) {
            if (load_rows(s, j, t, cur, end, err) != 0) return -1;
            cur = end;
        }
    }
    return load_rows(s, j, t, cur, bg.rin, err);
}

/* ---- compute ---------------------------------------------------------------------- */

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
    uint32_t pieces = (uint32_t)min64(pl->pieces, j->rb);
    uint64_t r0 = 0;
    for (uint32_t i = 0; i < pieces; i++) {
        uint64_t nr = j->rb / pieces + (i < j->rb % pieces);
        uint32_t c[3] = {(uint32_t)nr, sc[1], sc[2]};
        if (ss[0] == 1) c[0] = (uint32_t)(nr * j->cwb); /* merged (row, col) */
        nx_operand src = nx_conv_tile_view(stg, pl->dt, 0, mo, r0 * j->cwb * j->nbb, 3, ss, c);
        uint64_t el = (((j->oy0 + r0) * pl->OW + j->ox0) * pl->O + o0) * pl->N + j->n0;
        nx_operand dst = nx_conv_hbm_view(pl->dt, s->pb->out + el * pl->es, mo, (int64_t)pl->N, 3, hs, c);
        if (nx_kctx_dma_on(s->k, lane_next(s), &dst, &src, err) != 0) return -1;
        r0 += nr;
    }
    return 0;
}

/* One transposed store group: P partitions x kk consecutive band pixels
 * starting at band pixel g0 (kk > 1 only for full-width bands). */
static int store_group(pbp_state *s, const nx_tile *stg, uint32_t mo, uint64_t o0, const pbp_job *j, uint64_t g0,
                       uint32_t P, uint32_t kk, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    const nx_tile *ts = &s->tstore[s->n_tstore++ % 2];
    uint64_t N = pl->N;
    for (uint64_t n0 = 0; n0 < N; n0 += pl->ns) {
        uint64_t nsn = min64(pl->ns, N - n0);
        const nx_tile *tp = &s->tpsum[s->n_tpsum++ % 2];
        for (uint32_t jj = 0; jj < kk; jj++) {
            for (uint64_t n = n0; n < n0 + nsn; n++) {
                int32_t st = (int32_t)(kk * N);
                uint32_t ct = P;
                nx_operand src = nx_conv_tile_view(stg, pl->dt, 0, mo, (g0 + jj) * N + n, 1, &st, &ct);
                int32_t one = 1;
                uint32_t m = mo;
                nx_operand dst = nx_conv_tile_view(tp, pl->dt, 0, P, ((n - n0) * kk + jj) * pl->mo_pad, 1, &one, &m);
                if (nx_kctx_transpose(s->k, NX_ENG_PE, &dst, &src, err) != 0) return -1;
            }
        }
        int32_t ds[3] = {(int32_t)(mo * N), (int32_t)N, 1};
        uint32_t dc[3] = {kk, mo, (uint32_t)nsn};
        uint64_t doff = n0;
        if (pl->out_01bf) {
            /* (OH, OW, N, O): each pixel's values n-major */
            ds[1] = 1;
            ds[2] = (int32_t)mo;
            doff = n0 * mo;
        }
        nx_operand dst = nx_conv_tile_view(ts, pl->dt, 0, P, doff, 3, ds, dc);
        int32_t ps[3] = {(int32_t)pl->mo_pad, 1, (int32_t)(kk * pl->mo_pad)};
        nx_operand src = nx_conv_tile_view(tp, pl->dt, 0, P, 0, 3, ps, dc);
        nx_engine e = s->n_evac++ % 2 ? NX_ENG_DVE : NX_ENG_ACT;
        if (nx_kctx_tensor_copy(s->k, e, &dst, &src, err) != 0) return -1;
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
    return dma_spread(s, &dst, &src, pl->pieces, err);
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
            uint64_t nsn = min64(pl->ns, N - n0);
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
    return dma_spread(s, &dst, &src, pl->pieces, err);
}

static int store_comb(pbp_state *s, uint64_t base, const pbp_job *j, nx_error *err) {
    uint64_t npix = j->rb * j->cwb;
    for (uint64_t g0 = 0; g0 < npix;) {
        uint32_t P = (uint32_t)min64(s->pl.PC, npix - g0);
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
            uint32_t P = (uint32_t)min64(pl->PC, rem / kk);
            if (store_group(s, stg, mo, o0, j, g0, P, kk, err) != 0) return -1;
            g0 += (uint64_t)P * kk;
        }
        return 0;
    }
    for (uint64_t r = 0; r < j->rb; r++)
        for (uint64_t c0 = 0; c0 < j->cwb; c0 += pl->PC) {
            uint32_t P = (uint32_t)min64(pl->PC, j->cwb - c0);
            if (store_group(s, stg, mo, o0, j, r * j->cwb + c0, P, 1, err) != 0) return -1;
        }
    return 0;
}

static int store_band(pbp_state *s, const nx_tile *stg, uint32_t mo, uint64_t o0, const pbp_job *j, nx_error *err) {
    return s->pl.store == PBP_STORE_TRANSPOSED && j->nbb == s->pl.N ? store_transposed(s, stg, mo, o0, j, err)
                                                                     : store_direct(s, stg, mo, o0, j, err);
}

static int flush_store(pbp_state *s, nx_error *err) {
    if (!s->pend) return 0;
    s->pend = 0;
    if (s->pl.out_comb) return store_comb(s, s->pend_stage, &s->pend_j, err);
    return store_band(s, s->pend_stg, s->pend_mo, s->pend_o0, &s->pend_j, err);
}

static int compute_job(pbp_state *s, const pbp_job *j, const nx_tile *bt, nx_error *err) {
    const pbp_plan *pl = &s->pl;
    band_geo bg;
    band_geometry(pl, j, &bg);
    const nx_tile *ft = &s->filt[j->fbuf];
    uint64_t taps = pl->KH * pl->KW;
    for (uint32_t tl = 0; tl < j->nt; tl++) {
        uint32_t tt = j->t0 + tl, mo = tile_mo(pl, j->sg, tt);
        uint64_t o0 = tile_o0(pl, j->sg, tt);
        const nx_tile *stg = &s->stage[s->n_stage++ % pl->stage_bufs];
        for (uint64_t a = 0; a < j->rb; a += pl->q) {
            uint64_t qq = min64(pl->q, j->rb - a);
            for (uint64_t b = 0; b < j->cwb; b += pl->pw) {
                uint64_t pp = min64(pl->pw, j->cwb - b);
                for (uint64_t nsub = 0; nsub < j->nbb; nsub += pl->nb) {
                    uint64_t nn = min64(pl->nb, j->nbb - nsub);
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
                            int32_t ms[3] = {(int32_t)((uint64_t)pl->sy * pl->cols_in * pl->NB),
                                             (int32_t)((uint64_t)pl->sx * pl->NB), 1};
                            uint32_t mc[3] = {(uint32_t)qq, (uint32_t)pp, (uint32_t)nn};
                            uint64_t off = ((uint64_t)st * pl->rows_in + j->trow0 + r0) * pl->cols_in * pl->NB +
                                           c0 * pl->NB + nsub;
                            nx_operand mv = nx_conv_tile_view(bt, pl->dt, 0, kc, off, 3, ms, mc);
                            if (nx_kctx_multiply_moving(s->k, &dst, &mv, !first, err) != 0) return -1;
                            first = 0;
                        }
                    }
                    if (evacuate(s, ps, stg, mo, j, a, qq, b, pp, nsub, nn, err) != 0) return -1;
                    if (flush_store(s, err) != 0) return -1;
                }
            }
        }
        if (flush_store(s, err) != 0) return -1;
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

/* ---- driver ---------------------------------------------------------------------- */

static int make_jobs(const pbp_plan *pl, pbp_job **out, size_t *n_out, nx_error *err) {
    uint64_t nnb = cdiv(pl->N, pl->NB), nch = cdiv(pl->couts, pl->chunk);
    /* row bands: a short first band (the PE starts as soon as it is in),
     * then bands of R rows */
    uint64_t nrb = pl->OH > pl->R0 ? 1 + cdiv(pl->OH - pl->R0, pl->R) : 1, ncb = cdiv(pl->OW, pl->CW);
    uint64_t total = nnb * pl->nsg * nch * nrb * ncb;
    if (total > (UINT64_C(1) << 24))
        return nx_fail(err, "conv: %llu bands to trace (more than 2^24)", (unsigned long long)total);
    pbp_job *v = malloc((size_t)total * sizeof *v);
    if (!v) return nx_fail(err, "conv: out of memory planning %llu bands", (unsigned long long)total);
    size_t n = 0;
    uint32_t fb = 0;
    uint64_t res_rows = 0;
    for (uint64_t nbk = 0; nbk < nnb; nbk++)
        for (uint64_t sg = 0; sg < pl->nsg; sg++)
            for (uint64_t ch = 0; ch < nch; ch++) {
                int first = 1;
                for (uint64_t rb = 0; rb < nrb; rb++)
                    for (uint64_t cb = 0; cb < ncb; cb++) {
                        pbp_job *j = &v[n++];
                        j->n0 = nbk * pl->NB;
                        j->nbb = min64(pl->NB, pl->N - j->n0);
                        j->sg = sg;
                        j->t0 = (uint32_t)(ch * pl->chunk);
                        j->nt = (uint32_t)min64(pl->chunk, pl->couts - j->t0);
                        j->oy0 = rb ? pl->R0 + (rb - 1) * pl->R : 0;
                        j->rb = min64(rb ? pl->R : pl->R0, pl->OH - j->oy0);
                        j->ox0 = cb * pl->CW;
                        j->cwb = min64(pl->CW, pl->OW - j->ox0);
                        if (pl->resident) {
                            /* one tile holds the whole padded image: a
                             * band loads the rows no earlier band loaded */
                            uint64_t rin = (j->rb - 1) * (uint64_t)pl->sy + (pl->KH - 1) * (uint64_t)pl->rdy + 1;
                            j->trow0 = j->oy0 * (uint64_t)pl->sy;
                            j->load_lo = res_rows > j->trow0 ? res_rows - j->trow0 : 0;
                            if (j->load_lo > rin) j->load_lo = rin;
                            if (j->trow0 + rin > res_rows) res_rows = j->trow0 + rin;
                        } else {
                            j->trow0 = 0;
                            j->load_lo = 0;
                        }
                        /* the filter chunk is reloaded per batch block only
                         * when there are several chunks */
                        int reload = first && (nbk == 0 || pl->nsg * nch > 1);
                        if (reload && n > 1) fb = (fb + 1) % pl->filt_bufs;
                        j->fbuf = fb;
                        j->new_chunk = reload;
                        first = 0;
                    }
            }
    *out = v;
    *n_out = n;
    return 0;
}

int nx_conv_pbp_emit(nx_kctx *k, const nx_conv_pbp *pb, nx_error *err) {
    pbp_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.pb = pb;
    pbp_plan *pl = &s.pl;
    if (pbp_plan_make(pb, nx_kctx_machine(k), nx_kctx_lanes(k), pl, err) != 0) return -1;
    if (pb->out_01bf && !pl->out_01bf)
        return nx_fail(err, "conv: an (OH, OW, N, O) result needs the transposed store (nx_conv_pbp_takes_01bf)");
    if (pb->filt_iohw && !pl->filt_iohw)
        return nx_fail(err, "conv: a (C/G, O, KH, KW) filter needs one resident ungrouped chunk (nx_conv_pbp_takes_iohw)");
    if (pb->img_cnhw && !pl->cnhw)
        return nx_fail(err, "conv: a (C, N, H, W) image needs the resident plan (nx_conv_pbp_takes_cnhw)");
    pbp_job *jobs = NULL;
    size_t nj = 0;
    if (make_jobs(pl, &jobs, &nj, err) != 0) return -1;

    int rc = -1;
    nx_tile *made[32];
    uint32_t nmade = 0;
#define ALLOC(mem, name, dt, parts, elems, t)                                                 \
    do {                                                                                      \
        if (nx_kctx_alloc(k, mem, name, dt, parts, elems, t, err) != 0) goto done;            \
        made[nmade++] = (t);                                                                  \
    } while (0)
    uint32_t bands = nj > 1 && !pl->resident ? 2 : 1;
    for (uint32_t i = 0; i < pl->filt_bufs; i++) ALLOC(NX_OPK_SBUF, "conv_filt", pl->dt, pl->PR, pl->filt_elems, &s.filt[i]);
    for (uint32_t i = 0; i < bands; i++) ALLOC(NX_OPK_SBUF, "conv_band", pl->dt, pl->PR, pl->band_elems, &s.band[i]);
    for (uint32_t i = 0; i < pl->stage_bufs; i++) ALLOC(NX_OPK_SBUF, "conv_stage", pl->dt, pl->PC, pl->stage_elems, &s.stage[i]);
    if (pl->gp > 1 && pl->Cg == 1)
        ALLOC(NX_OPK_SBUF, "conv_filt_compact", pl->dt, pl->PR, pl->KH * pl->KW * pl->Og, &s.compact);
    for (uint32_t i = 0; i < pl->psum_bufs; i++) ALLOC(NX_OPK_PSUM, "conv_psum", NX_DT_FP32, pl->PC, pl->FM, &s.psum[i]);
    if (pl->rt) {
        const nx_geometry *geo = nx_kctx_geometry(k);
        for (uint32_t i = 0; i < pl->rt_bufs; i++)
            ALLOC(NX_OPK_SBUF, "conv_raw_rows", pl->dt, pl->rt_rows * pl->rt_spu, pl->rt_elems, &s.raw[i]);
        for (uint32_t i = 0; i < 2; i++)
            ALLOC(NX_OPK_PSUM, "conv_rt_psum", pl->dt, pl->PR, geo->psum_bank_bytes / pl->es, &s.rt_psum[i]);
    }
    if (pl->cnhw)
        for (uint32_t i = 0; i < pl->cn_bufs; i++)
            ALLOC(NX_OPK_SBUF, "conv_raw_cnhw", pl->dt, pl->PR, pl->cn_elems, &s.raw[i]);
    if (pl->store == PBP_STORE_TRANSPOSED) {
        const nx_geometry *geo = nx_kctx_geometry(k);
        for (uint32_t i = 0; i < 2; i++) {
            ALLOC(NX_OPK_SBUF, "conv_tstore", pl->dt, pl->PC, pl->tstore_elems, &s.tstore[i]);
            ALLOC(NX_OPK_PSUM, "conv_tpsum", pl->dt, pl->PC, geo->psum_bank_bytes / pl->es, &s.tpsum[i]);
        }
    }
#undef ALLOC

    if (pl->resident) {
        /* the whole image at once, band by band: each band's matmuls wait
         * only for the transfers of the rows they read */
        if (pl->rt) {
            if (load_image_rt(&s, &s.band[0], &jobs[0], err) != 0) goto done;
        } else if (pl->cnhw) {
            if (load_image_cnhw(&s, &s.band[0], &jobs[0], err) != 0) goto done;
        } else {
            if (load_filters(&s, &jobs[0], err) != 0) goto done;
            for (size_t i = 0; i < nj; i++)
                if (load_band(&s, &jobs[i], &s.band[0], err) != 0) goto done;
        }
        for (size_t i = 0; i < nj; i++)
            if (compute_job(&s, &jobs[i], &s.band[0], err) != 0) goto done;
        if (flush_store(&s, err) != 0) goto done;
        rc = 0;
        goto done;
    }
    /* software pipeline: job i + 1's filters and band are requested before
     * job i's matmuls, so they load while job i computes */
    if (jobs[0].new_chunk && load_filters(&s, &jobs[0], err) != 0) goto done;
    if (load_band(&s, &jobs[0], &s.band[0], err) != 0) goto done;
    for (size_t i = 0; i < nj; i++) {
        /* a next chunk in the same (single) filter buffer must follow this
         * job's reads of it in emission order, which is the program's meaning */
        int late = i + 1 < nj && jobs[i + 1].new_chunk && jobs[i + 1].fbuf == jobs[i].fbuf;
        if (i + 1 < nj) {
            if (jobs[i + 1].new_chunk && !late && load_filters(&s, &jobs[i + 1], err) != 0) goto done;
            if (load_band(&s, &jobs[i + 1], &s.band[(i + 1) % bands], err) != 0) goto done;
        }
        if (compute_job(&s, &jobs[i], &s.band[i % bands], err) != 0) goto done;
        if (late && load_filters(&s, &jobs[i + 1], err) != 0) goto done;
    }
    if (flush_store(&s, err) != 0) goto done;
    rc = 0;
done:
    free(jobs);
    nx_error rerr;
    while (nmade > 0) nx_kctx_release(k, made[--nmade], &rerr);
    return rc;
}

/* Which of #4's in-place routes the plan grants when asked for one. */
typedef enum pbp_route { PBP_ROUTE_CNHW, PBP_ROUTE_IOHW, PBP_ROUTE_01BF } pbp_route;

static int takes_route(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes, pbp_route r) {
    nx_conv_pbp q = *pb;
    if (r == PBP_ROUTE_CNHW) q.img_cnhw = 1;
    if (r == PBP_ROUTE_IOHW) q.filt_iohw = 1;
    if (r == PBP_ROUTE_01BF) q.out_01bf = 1;
    pbp_plan pl;
    nx_error err;
    if (pbp_plan_make(&q, m, lanes, &pl, &err) != 0) return 0;
    return r == PBP_ROUTE_CNHW ? pl.cnhw : r == PBP_ROUTE_IOHW ? pl.filt_iohw : pl.out_01bf;
}

int nx_conv_pbp_takes_cnhw(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes) {
    return takes_route(pb, m, lanes, PBP_ROUTE_CNHW);
}

int nx_conv_pbp_takes_iohw(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes) {
    return takes_route(pb, m, lanes, PBP_ROUTE_IOHW);
}

int nx_conv_pbp_takes_01bf(const nx_conv_pbp *pb, const nx_machine *m, uint32_t lanes) {
    return takes_route(pb, m, lanes, PBP_ROUTE_01BF);
}

int conv2d_pbp_0f1b_0i1o_01fb_experimental_1(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_conv_pbp pb;
    if (nx_conv_pbp_from_call("conv2d_pbp_0f1b_0i1o_01fb_experimental_1", "0f1b_0i1o->01fb", call, &pb, err) != 0)
        return -1;
    return nx_conv_pbp_emit(k, &pb, err);
}
