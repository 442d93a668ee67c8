/* conv2d_column_packing_1: img (1,C,H,W), filt (C,1,KH,KW), out (1,C,OH,OW),
 * feature_group_count = C: a depthwise forward convolution with batch 1,
 * its taps reduced on the PE array.
 *
 * Follows the public NKI kernel of the same name (aws-neuron kernel library,
 * "Convolution kernels", the "column packing" strategy): the groups
 * (channels) are packed on the PE columns; the public kernel runs the dense
 * Pcinh weight-gradient kernel with channels as the batch, writes the whole
 * C x C x OH x OW product (C^2 terms of which C are wanted) to HBM, masks
 * the off-diagonal garbage with a 0/1 tensor and reduces it by matmuls
 * against a ones vector. It takes N = 1 and feature_group_count = C only.
 *
 * Here the off-diagonal terms are never formed: for each pass the
 * stationary holds, in column block g (PE columns g*ga .. g*ga + C_t), a
 * diagonal block per image replica r (PE rows r*ga .. r*ga + C_t): filter
 * value f[c, ky, kx] at (r*ga + c, g*ga + c), zero elsewhere, so one
 * matmul multiplies every channel by its own tap and the PSUM accumulation
 * over the passes is the convolution; ga = the partition alignment of C_t
 * channels, so every block is a legal compute operand (the blocks are built
 * as identity x per-partition filter value on DVE/POOL). Packing, beyond
 * the public kernel:
 *  - rows: R replicas of the image band sit on the PE rows, replica r
 *    shifted down by S_r input rows, S = {g*sy + j*rdy : g < G, j < KB}, so
 *    one matmul sums KB taps of a kernel column (and their shifts for the G
 *    column groups); (R-1)*ga + C_t <= pe_rows;
 *  - columns: G column groups compute G interleaved output rows (oy = G*i +
 *    g) from the same moving tile, each group's PSUM rows starting where
 *    DVE/ACT may read them;
 *  - (G, KB) minimise the matmuls per output, ceil(KH/KB)*KW/G: for C = 32
 *    and a 3x3 kernel, G = 2 and KB = 3 (R = 4 replicas fill the 128 PE
 *    rows), 1.5 matmuls per 512 outputs instead of 9;
 *  - any stride, rhs_dilation and padding (negative crops): vertical
 *    padding is zero rows in the replica tile, horizontal padding is never
 *    materialised (each pass accumulates only into the output columns its
 *    kernel column reaches, a sub-rectangle of the PSUM chunk), so every
 *    load is whole image rows (contiguous transfers);
 *  - bands of output rows (or, for very wide images, of columns) of up to
 *    half the PSUM banks' chunks, three replica tiles in flight; chunk by
 *    chunk, every pass with its stationary reloaded in the shadow of the
 *    previous matmul, each chunk's evacuation (ACT/DVE) overlapping the next
 *    chunk's matmuls; stationaries built once per channel tile (per band,
 *    pass by pass, when there are more passes than kept tiles); any C in
 *    tiles of 128 channels.
 *
 * Numerics: the PE forms every product exactly (filter x image, both in the
 * input dtype) and accumulates in fp32 in PSUM; the result is rounded once
 * to the output dtype. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "depthwise.h"
#include "depthwise_plan.h"
#include "isa/intmath.h"

#define LEAF "conv2d_column_packing_1"
#define XS 3       /* replica tiles (bands in flight) */
#define OS 2       /* output band tiles */
#define MAX_W 64   /* stationary tiles kept */

typedef struct cp_plan {
    uint32_t cp, ga, G, KB, R;
    uint32_t ra;         /* replica r's rows start at PE row / partition r*ra */
    int64_t S[128];      /* replica row shifts, ascending */
    uint32_t nkb, npass; /* passes: (kb, kx), kb < nkb */
    uint32_t M;          /* stationary columns: (G-1)*ga + cp */
} cp_plan;

typedef struct cp_state {
    nx_kctx *k;
    const nx_dw_problem *p;
    const nx_geometry *geo;
    nx_dtype dt;
    uint64_t sz;
    int64_t H, W, KH, KW, OH, OW, C;
    int64_t sy, sx, rdy, rdx, ply, plx;
    uint32_t kmax, chunk, banks;     /* PE rows; PSUM elements per chunk; banks per band */
    cp_plan plan;                    /* packing, from the widest channel tile */
    /* band geometry (fixed for the kernel) */
    int64_t ci, cx;                  /* chunk: row-groups x columns */
    int64_t bi, bx;                  /* band: row-groups x columns */
    uint64_t x_elems, o_elems;
    /* identity stacks and filter copies alternate by channel tile, so a
     * tile's set-up never overwrites what the previous tile still reads */
    nx_tile x[XS], out[OS], w[MAX_W], ps[8], ident[2], frep[2], zeros;
    uint32_t nx, nout, nw, nps, nident, nfrep;
    uint32_t ident_cp[2];            /* channels ident[i] is built for (0: none) */
    int have_zeros;
    uint32_t nw_ring;                /* stationary tiles in the ring */
    int resident;                    /* every pass's stationary stays built for the channel tile */
    uint32_t next_ps;
    uint64_t load_act, load_dve;     /* evacuation balance, ACT cycles */
} cp_state;

typedef struct cp_band {
    uint64_t ct, c0;
    uint32_t cp, M;                  /* channels; stationary columns (G-1)*ga + cp */
    uint32_t par;                    /* ct % 2: which identity / filter copy */
    uint32_t K;                      /* moving rows: (R-1)*ra + cp */
    int first_of_tile;
    int narrow;                      /* a last tile narrower than the others */
    int64_t oy0, ny;                 /* output rows [oy0, oy0 + ny) */
    int64_t ni;                      /* row-groups: ceil(ny / G) */
    int64_t ox0, nxo;                /* output cols */
    int64_t ix0, nxi;                /* input cols loaded */
    int64_t J;                       /* rows per replica */
} cp_band;

/* ---- the packing plan of a channel tile ---- */

static uint32_t shifts(const cp_state *s, uint32_t G, uint32_t KB, int64_t *S) {
    uint32_t n = 0;
    for (uint32_t g = 0; g < G; g++)
        for (uint32_t j = 0; j < KB; j++) {
            int64_t v = (int64_t)g * s->sy + (int64_t)j * s->rdy;
            uint32_t q = 0;
            while (q < n && S[q] < v) q++;
            if (q < n && S[q] == v) continue;
            if (n >= 128) return 129;
            memmove(S + q + 1, S + q, (n - q) * sizeof *S);
            S[q] = v;
            n++;
        }
    return n;
}

static void make_plan(cp_state *s, uint32_t cp) {
    cp_plan *pl = &s->plan;
    memset(pl, 0, sizeof *pl);
    pl->cp = cp;
    pl->ga = nx_dw_partition_align(s->geo, cp);
    pl->ra = pl->ga; /* aligned, so every replica block is a legal compute operand */
    uint32_t gmax = (s->geo->pe_cols - cp) / pl->ga + 1;
    if (gmax > (uint32_t)s->OH) gmax = (uint32_t)s->OH;
    uint64_t best_num = UINT64_MAX, best_den = 1;
    int64_t tmp[129];
    for (uint32_t G = 1; G <= gmax; G++)
        for (uint32_t KB = 1; KB <= (uint32_t)s->KH; KB++) {
            uint32_t R = shifts(s, G, KB, tmp);
            if ((uint64_t)(R - 1) * pl->ra + cp > s->kmax) continue;
            /* matmuls per output: ceil(KH/KB) * KW / G */
            uint64_t num = (uint64_t)((s->KH + KB - 1) / KB) * (uint64_t)s->KW, den = G;
            if (num * best_den < best_num * den || (num * best_den == best_num * den && R < pl->R)) {
                best_num = num, best_den = den;
                pl->G = G, pl->KB = KB, pl->R = R;
            }
        }
    shifts(s, pl->G, pl->KB, pl->S);
    pl->nkb = (uint32_t)((s->KH + pl->KB - 1) / pl->KB);
    pl->npass = pl->nkb * (uint32_t)s->KW;
    pl->M = (pl->G - 1) * pl->ga + cp;
}

/* ---- per channel tile: identity stack, filter copies, stationaries ---- */

/* ident[(r*ra + c), c] = 1 for every replica block r (memset 1, then
 * affine_select keeps p == m), zero elsewhere. */
static int build_ident(cp_state *s, const cp_band *b, nx_error *err) {
    const cp_plan *pl = &s->plan;
    const nx_tile *id = &s->ident[b->par];
    int32_t one = 1;
    uint32_t cp = b->cp;
    nx_operand all = nx_tile_view(id, s->dt, 0, b->K, 0, 1, &one, &cp);
    if (nx_kctx_memset(s->k, NX_ENG_POOL, &all, 0.0, err) != 0) return -1;
    for (uint32_t r = 0; r < pl->R; r++)
        if (nx_dw_identity(s->k, id, s->dt, r * pl->ra, cp, err) != 0) return -1;
    return 0;
}

/* The tile's filters [cp, KH*KW] into every replica block (a diagonal
 * entry's filter value must sit on its replica's partitions): one DMA into
 * block 0, cut over the DMA engines (rows of a few bytes cost a transfer
 * per row's worth of time, and share an engine with whatever else runs
 * there: keep them few and short), then partition-shifting copies into the
 * other blocks on DVE/POOL. */
static int load_filter(cp_state *s, const cp_band *b, nx_error *err) {
    const cp_plan *pl = &s->plan;
    const nx_dw_problem *p = s->p;
    const nx_tile *fr = &s->frep[b->par];
    int32_t one = 1;
    uint32_t taps = (uint32_t)(s->KH * s->KW);
    uint64_t pitch = p->filt_stride[0];
    nx_operand src = nx_ap_hbm_rows(s->dt, p->filt->hbm_offset + b->c0 * pitch * s->sz, b->cp, (int32_t)pitch, taps);
    nx_operand blk0 = nx_tile_view(fr, s->dt, 0, b->cp, 0, 1, &one, &taps);
    if (nx_dw_dma(s->k, NX_DW_STORE, 0, 0, &blk0, &src, err) != 0) return -1;
    for (uint32_t r = 1; r < pl->R; r++) {
        nx_operand dst = nx_tile_view(fr, s->dt, r * pl->ra, b->cp, 0, 1, &one, &taps);
        if (nx_kctx_tensor_copy(s->k, r % 2 ? NX_ENG_DVE : NX_ENG_POOL, &dst, &blk0, err) != 0) return -1;
    }
    return 0;
}

/* Stationary of pass q = (kb, kx) in ring tile q % nw_ring: block (r, g)
 * (rows r*ra.., columns g*ga..) = ident * f[c, ky, kx] for the tap
 * ky = kb*KB + j that replica r serves column group g with (S_r = g*sy +
 * j*rdy), on DVE and POOL alternately; blocks without a tap stay zero. */
static int build_stationary(cp_state *s, const cp_band *b, uint32_t q, nx_error *err) {
    const cp_plan *pl = &s->plan;
    const nx_tile *w = &s->w[q % s->nw_ring];
    uint32_t cp = b->cp, kb = q / (uint32_t)s->KW, kx = q % (uint32_t)s->KW, n = 0;
    int32_t one = 1;
    for (uint32_t r = 0; r < pl->R; r++)
        for (uint32_t g = 0; g < pl->G; g++) {
            int64_t d = pl->S[r] - (int64_t)g * s->sy;
            if (d < 0 || d % s->rdy != 0 || d / s->rdy >= pl->KB) continue;
            int64_t ky = (int64_t)kb * pl->KB + d / s->rdy;
            if (ky >= s->KH) continue;
            nx_operand dst = nx_tile_view(w, s->dt, r * pl->ra, cp, (uint64_t)g * pl->ga, 1, &one, &cp);
            nx_operand id = nx_tile_view(&s->ident[b->par], s->dt, r * pl->ra, cp, 0, 1, &one, &cp);
            nx_operand f = nx_tile_view(&s->frep[b->par], s->dt, r * pl->ra, cp, (uint64_t)(ky * s->KW + kx), 0, NULL,
                                        NULL);
            if (nx_dw_scale(s->k, n++ % 2 ? NX_ENG_POOL : NX_ENG_DVE, &dst, &id, &f, err) != 0) return -1;
        }
    return 0;
}

static int zero_ring(cp_state *s, nx_error *err) {
    for (uint32_t i = 0; i < s->nw_ring; i++) {
        nx_operand all = nx_tile_ap(&s->w[i]);
        /* on DVE: POOL clears the first band's padding rows meanwhile */
        if (nx_kctx_memset(s->k, NX_ENG_DVE, &all, 0.0, err) != 0) return -1;
    }
    return 0;
}

/* ---- per band ---- */

/* Replica r, row j holds input row (oy0*sy + S_r + j - ply), columns
 * [ix0, ix0 + nxi); rows outside the image are zero. */
static int cp_load(cp_state *s, const cp_band *b, const nx_tile *x, nx_error *err) {
    const cp_plan *pl = &s->plan;
    const nx_dw_problem *p = s->p;
    uint32_t cp = b->cp;
    int64_t base = b->oy0 * s->sy - s->ply;
    int64_t zlo = 0, zhi = b->J; /* rows that are real for every replica: [zlo, zhi) */
    for (uint32_t r = 0; r < pl->R; r++) {
        int64_t lo = -(base + pl->S[r]), hi = s->H - (base + pl->S[r]);
        if (lo > zlo) zlo = lo;
        if (hi < zhi) zhi = hi;
    }
    if (zlo > b->J) zlo = b->J;
    if (zhi < zlo) zhi = zlo;
    int32_t one = 1;
    uint32_t K = b->K;
    if (zlo > 0) {
        uint32_t n = (uint32_t)(zlo * b->nxi);
        nx_operand z = nx_tile_view(x, s->dt, 0, K, 0, 1, &one, &n);
        if (nx_kctx_memset(s->k, NX_ENG_POOL, &z, 0.0, err) != 0) return -1;
    }
    if (zhi < b->J) {
        uint32_t n = (uint32_t)((b->J - zhi) * b->nxi);
        nx_operand z = nx_tile_view(x, s->dt, 0, K, (uint64_t)(zhi * b->nxi), 1, &one, &n);
        if (nx_kctx_memset(s->k, NX_ENG_POOL, &z, 0.0, err) != 0) return -1;
    }
    for (uint32_t r = 0; r < pl->R; r++) {
        int64_t j0 = -(base + pl->S[r]), j1 = s->H - (base + pl->S[r]);
        if (j0 < 0) j0 = 0;
        if (j1 > b->J) j1 = b->J;
        if (j0 >= j1) continue;
        int64_t iy = base + pl->S[r] + j0;
        uint64_t off = p->img->hbm_offset +
                       (b->c0 * p->img_stride[1] + (uint64_t)iy * p->img_stride[2] + (uint64_t)b->ix0) * s->sz;
        int32_t hs[2] = {(int32_t)p->img_stride[2], 1};
        uint32_t hc[2] = {(uint32_t)(j1 - j0), (uint32_t)b->nxi};
        nx_operand src = nx_ap(NX_OPK_HBM, s->dt, 0, cp, (int32_t)p->img_stride[1], off, 2, hs, hc);
        int32_t ts[2] = {(int32_t)b->nxi, 1};
        nx_operand dst = nx_tile_view(x, s->dt, r * pl->ra, cp, (uint64_t)(j0 * b->nxi), 2, ts, hc);
        /* each replica on its own share of the load lanes */
        uint32_t pieces = nx_dw_half_lanes(s->k) / pl->R ? nx_dw_half_lanes(s->k) / pl->R : 1;
        if (nx_dw_dma(s->k, NX_DW_LOAD, r * pieces, pieces, &dst, &src, err) != 0) return -1;
    }
    return 0;
}

/* A band's chunk c: row-groups [i0, i0 + ni) x columns [x0, x0 + cxn)
 * (x0 absolute). */
typedef struct cp_chunk {
    int64_t i0, ni, x0, cxn;
    const nx_tile *ps;
} cp_chunk;

/* Pass `step` (in the band's pass order: first_kx's kernel column first,
 * so its matmuls initialise PSUM) of one chunk. *loaded: the pass's
 * stationary is loaded already. */
static int cp_matmul(cp_state *s, const cp_band *b, const nx_tile *x, const cp_chunk *ch, uint32_t step,
                     int64_t first_kx, int *loaded, nx_error *err) {
    const cp_plan *pl = &s->plan;
    uint32_t kb = step / (uint32_t)s->KW;
    int64_t kx = (int64_t)(step % (uint32_t)s->KW);
    if (first_kx >= 0) kx = (kx + first_kx) % s->KW;
    uint32_t q = kb * (uint32_t)s->KW + (uint32_t)kx;
    nx_dw_run rx;
    nx_dw_axis_run(&s->p->ax[1], kx, ch->x0, ch->x0 + ch->cxn, &rx);
    if (rx.count == 0) return 0;
    int32_t one = 1;
    if (!*loaded) {
        nx_operand st = nx_tile_view(&s->w[q % s->nw_ring], s->dt, 0, b->K, 0, 1, &one, &b->M);
        if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
        *loaded = 1;
    }
    int32_t ms[2] = {(int32_t)(pl->G * s->sy * b->nxi), (int32_t)s->sx};
    uint32_t mc[2] = {(uint32_t)ch->ni, (uint32_t)rx.count};
    int64_t row = ch->i0 * (int64_t)pl->G * s->sy + (int64_t)kb * pl->KB * s->rdy;
    uint64_t moff = (uint64_t)(row * b->nxi + (rx.in_first - b->ix0));
    nx_operand mv = nx_tile_view(x, s->dt, 0, b->K, moff, 2, ms, mc);
    int32_t ds[2] = {(int32_t)ch->cxn, 1};
    nx_operand d = nx_tile_view(ch->ps, NX_DT_FP32, 0, b->M, (uint64_t)(rx.first - ch->x0), 2, ds, mc);
    return nx_kctx_multiply_moving(s->k, &d, &mv, first_kx < 0 || step > 0, err);
}

/* No kernel column reaches every output column: zero the chunk first (a
 * matmul of zeros with the first pass's stationary). */
static int cp_zero(cp_state *s, const cp_band *b, const cp_chunk *ch, nx_error *err) {
    int32_t one = 1;
    uint32_t n = (uint32_t)(ch->ni * ch->cxn);
    nx_operand st = nx_tile_view(&s->w[0], s->dt, 0, b->K, 0, 1, &one, &b->M);
    nx_operand z = nx_tile_view(&s->zeros, s->dt, 0, b->K, 0, 1, &one, &n);
    nx_operand d = nx_tile_view(ch->ps, NX_DT_FP32, 0, b->M, 0, 1, &one, &n);
    if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
    return nx_kctx_multiply_moving(s->k, &d, &z, 0, err);
}

/* PSUM rows g*ga + c hold output rows G*i + g of the chunk: one copy per
 * column group into the band's output tile, on ACT or DVE, whichever is
 * less loaded (ACT max(64, N) at its clock; DVE N at 0.8 x that clock plus
 * its PSUM access start-ups: weighed 3/2). */
static int cp_evacuate(cp_state *s, const cp_band *b, const nx_tile *out, const cp_chunk *ch, nx_error *err) {
    const cp_plan *pl = &s->plan;
    int64_t x0 = ch->x0 - b->ox0;
    for (uint32_t g = 0; g < pl->G; g++) {
        int64_t rows = 0; /* rows of this group inside the band: G*(i0 + i) + g < ny */
        while (rows < ch->ni && (int64_t)pl->G * (ch->i0 + rows) + g < b->ny) rows++;
        if (rows == 0) continue;
        int32_t fs[2] = {(int32_t)ch->cxn, 1};
        uint32_t fc[2] = {(uint32_t)rows, (uint32_t)ch->cxn};
        nx_operand from = nx_tile_view(ch->ps, NX_DT_FP32, g * pl->ga, b->cp, 0, 2, fs, fc);
        int32_t ts[2] = {(int32_t)(pl->G * b->nxo), 1};
        nx_operand to = nx_tile_view(out, s->dt, 0, b->cp, (uint64_t)(((int64_t)pl->G * ch->i0 + g) * b->nxo + x0), 2,
                                     ts, fc);
        uint64_t n = (uint64_t)(rows * ch->cxn), cost = n > 64 ? n : 64;
        nx_engine e = s->load_act + cost <= s->load_dve + cost * 3 / 2 ? NX_ENG_ACT : NX_ENG_DVE;
        if (e == NX_ENG_ACT) s->load_act += cost;
        else s->load_dve += cost * 3 / 2;
        if (nx_kctx_tensor_copy(s->k, e, &to, &from, err) != 0) return -1;
    }
    return 0;
}

static int cp_compute(cp_state *s, const cp_band *b, const nx_tile *x, const nx_tile *out, nx_error *err) {
    const cp_plan *pl = &s->plan;
    /* the narrow tile's stationary rows between blocks (see the loads) */
    if (b->first_of_tile && b->narrow && zero_ring(s, err) != 0) return -1;
    if (b->first_of_tile && s->resident)
        for (uint32_t q = 0; q < pl->npass; q++)
            if (build_stationary(s, b, q, err) != 0) return -1;
    int64_t first_kx = -1;
    for (int64_t kx = 0; kx < s->KW && first_kx < 0; kx++) {
        nx_dw_run rx;
        nx_dw_axis_run(&s->p->ax[1], kx, b->ox0, b->ox0 + b->nxo, &rx);
        if (rx.count == b->nxo) first_kx = kx;
    }
    int64_t nci = (b->ni + s->ci - 1) / s->ci, ncx = (b->nxo + s->cx - 1) / s->cx;
    uint32_t nchunks = (uint32_t)(nci * ncx);
    cp_chunk ch[8];
    for (uint32_t c = 0; c < nchunks; c++) {
        ch[c].i0 = (int64_t)(c / ncx) * s->ci;
        ch[c].ni = nx_min_i64(s->ci, b->ni - ch[c].i0);
        ch[c].x0 = b->ox0 + (int64_t)(c % ncx) * s->cx;
        ch[c].cxn = nx_min_i64(s->cx, b->ox0 + b->nxo - ch[c].x0);
        ch[c].ps = &s->ps[s->next_ps++ % s->nps];
    }
    if (s->resident) {
        /* chunk by chunk: every pass (stationaries reload in the shadow of
         * the previous matmul), then the chunk's evacuation overlaps the
         * next chunk's matmuls */
        for (uint32_t c = 0; c < nchunks; c++) {
            if (first_kx < 0 && cp_zero(s, b, &ch[c], err) != 0) return -1;
            for (uint32_t step = 0; step < pl->npass; step++) {
                int loaded = 0;
                if (cp_matmul(s, b, x, &ch[c], step, first_kx, &loaded, err) != 0) return -1;
            }
            if (cp_evacuate(s, b, out, &ch[c], err) != 0) return -1;
        }
        return 0;
    }
    /* too many passes to keep every stationary: pass by pass over the band
     * (each stationary is built once per band) */
    for (uint32_t c = 0; c < nchunks && first_kx < 0; c++) {
        if (c == 0 && build_stationary(s, b, 0, err) != 0) return -1;
        if (cp_zero(s, b, &ch[c], err) != 0) return -1;
    }
    for (uint32_t step = 0; step < pl->npass; step++) {
        uint32_t kb = step / (uint32_t)s->KW;
        int64_t kx = (int64_t)(step % (uint32_t)s->KW);
        if (first_kx >= 0) kx = (kx + first_kx) % s->KW;
        if (build_stationary(s, b, kb * (uint32_t)s->KW + (uint32_t)kx, err) != 0) return -1;
        int loaded = 0;
        for (uint32_t c = 0; c < nchunks; c++)
            if (cp_matmul(s, b, x, &ch[c], step, first_kx, &loaded, err) != 0) return -1;
    }
    for (uint32_t c = 0; c < nchunks; c++)
        if (cp_evacuate(s, b, out, &ch[c], err) != 0) return -1;
    return 0;
}

static int cp_store(cp_state *s, const cp_band *b, const nx_tile *out, nx_error *err) {
    const nx_dw_problem *p = s->p;
    uint64_t off = p->out->hbm_offset +
                   (b->c0 * p->out_stride[1] + (uint64_t)b->oy0 * p->out_stride[2] + (uint64_t)b->ox0) * s->sz;
    int32_t hs[2] = {(int32_t)p->out_stride[2], 1};
    uint32_t hc[2] = {(uint32_t)b->ny, (uint32_t)b->nxo};
    nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, b->cp, (int32_t)p->out_stride[1], off, 2, hs, hc);
    int32_t ts[2] = {(int32_t)b->nxo, 1};
    nx_operand src = nx_tile_view(out, s->dt, 0, b->cp, 0, 2, ts, hc);
    return nx_dw_dma(s->k, NX_DW_STORE, 0, 0, &dst, &src, err);
}

/* ---- sizing ---- */

/* Rows per replica for a band of ni row-groups: the last row-group's
 * deepest pass reads row (ni-1)*G*sy + (nkb-1)*KB*rdy. */
static int64_t replica_rows(const cp_state *s, const cp_plan *pl, int64_t ni) {
    return (ni - 1) * (int64_t)pl->G * s->sy + (int64_t)(pl->nkb - 1) * pl->KB * s->rdy + 1;
}

static int64_t band_cols_in(const cp_state *s, int64_t nxo) {
    return nx_min_i64((nxo - 1) * s->sx + (s->KW - 1) * s->rdx + 1, s->W);
}

static int cp_fits(const cp_state *s, uint64_t budget, int64_t bi, int64_t bx, uint64_t *xe, uint64_t *oe) {
    const cp_plan *pl = &s->plan;
    int64_t J = replica_rows(s, pl, bi), wi = band_cols_in(s, bx);
    uint64_t x = (uint64_t)(J * wi), o = (uint64_t)(bi * (int64_t)pl->G * bx);
    *xe = x;
    *oe = o;
    return XS * nx_round_up_u64(x * s->sz, 64) + OS * nx_round_up_u64(o * s->sz, 64) <= budget && x <= s->geo->sbuf_free_elems_max &&
           o <= s->geo->sbuf_free_elems_max;
}

/* Chunks and bands: a chunk = ci row-groups x cx columns in one PSUM bank
 * (whole output rows when they fit); a band = up to `banks` chunks (half
 * the PSUM, so a band's matmuls overlap the previous band's evacuation),
 * shrunk until its replica and output tiles fit 3/4 of SBUF. */
static int cp_size(cp_state *s, nx_error *err) {
    const cp_plan *pl = &s->plan;
    uint64_t budget = s->geo->sbuf_partition_bytes / 4 * 3;
    uint64_t fixed = nx_round_up_u64(s->chunk * s->sz, 64) /* zeros */ + 2 * nx_round_up_u64(pl->cp * s->sz, 64) /* identities */ +
                     2 * nx_round_up_u64((uint64_t)(s->KH * s->KW) * s->sz, 64) /* filter copies */;
    if (budget <= fixed) return nx_fail(err, "%s: SBUF too small for the filter copies", LEAF);
    budget -= fixed;
    uint64_t wbytes = nx_round_up_u64((uint64_t)s->geo->pe_cols * s->sz, 64);
    uint32_t ring = pl->npass < MAX_W ? pl->npass : MAX_W;
    while (ring > 2 && (uint64_t)ring * wbytes > budget / 4) ring--;
    s->nw_ring = ring;
    s->resident = ring == pl->npass;
    budget -= (uint64_t)ring * wbytes;
    int64_t ni_total = (s->OH + pl->G - 1) / pl->G;
    if (s->OW <= (int64_t)s->chunk) {
        s->cx = s->OW;
        s->ci = nx_min_i64((int64_t)s->chunk / s->OW, ni_total);
    } else {
        s->cx = (int64_t)s->chunk;
        s->ci = 1;
    }
    uint64_t xe, oe;
    for (uint32_t banks = s->banks; banks >= 1; banks--) {
        int64_t bi = s->cx == s->OW ? nx_min_i64(s->ci * banks, ni_total) : 1;
        int64_t bx = s->cx == s->OW ? s->OW : nx_min_i64(s->cx * banks, s->OW);
        if (cp_fits(s, budget, bi, bx, &xe, &oe)) {
            s->bi = bi, s->bx = bx, s->x_elems = xe, s->o_elems = oe;
            return 0;
        }
    }
    for (int64_t ci = s->ci - 1; ci >= 1; ci--) /* fewer rows per chunk */
        if (cp_fits(s, budget, ci, s->cx, &xe, &oe)) {
            s->ci = s->bi = ci, s->bx = s->cx, s->x_elems = xe, s->o_elems = oe;
            return 0;
        }
    for (int64_t cx = s->cx / 2; cx >= 1; cx /= 2) /* then narrower chunks */
        if (cp_fits(s, budget, 1, cx, &xe, &oe)) {
            s->ci = s->bi = 1, s->cx = s->bx = cx, s->x_elems = xe, s->o_elems = oe;
            return 0;
        }
    return nx_fail(err, "%s: operand 1 (%s): a %lldx%lld kernel with rhs_dilation [%lld,%lld] needs more input rows "
                        "per output row than SBUF holds",
                   LEAF, s->p->filt->name, (long long)s->KH, (long long)s->KW, (long long)s->rdy, (long long)s->rdx);
}

int conv2d_column_packing_1(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_dw_problem p;
    if (nx_dw_prepare(LEAF, call, "bf01_oi01->bf01", &p, err) != 0) return -1;
    if (p.n != 1)
        return nx_fail(err, "%s: operand 0 (%s): batch %llu is not supported (this leaf takes N = 1, img 1,C,H,W; "
                            "conv2d_depthwise_f01b_o01i_bf01 takes any batch)",
                       LEAF, p.img->name, (unsigned long long)p.n);
    if (nx_conv_require_default(&p.params, NX_CONV_LHS_DILATION, LEAF, err) != 0) return -1;
    cp_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    s.p = &p;
    s.geo = nx_kctx_geometry(k);
    s.dt = p.dtype;
    s.sz = nx_dtype_size(s.dt);
    s.H = p.ax[0].in, s.W = p.ax[1].in, s.KH = p.ax[0].k, s.KW = p.ax[1].k;
    s.OH = p.ax[0].out, s.OW = p.ax[1].out, s.C = (int64_t)p.c;
    s.sy = p.ax[0].stride, s.sx = p.ax[1].stride, s.rdy = p.ax[0].rhs_dil, s.rdx = p.ax[1].rhs_dil;
    s.ply = p.ax[0].pad_lo, s.plx = p.ax[1].pad_lo;
    if ((uint64_t)s.H * (uint64_t)s.W > INT32_MAX / 2 || (uint64_t)s.OH * (uint64_t)s.OW > INT32_MAX / 2 ||
        (uint64_t)s.KH * (uint64_t)s.KW > INT32_MAX / 2)
        return nx_fail(err, "%s: operand 0 (%s): %lld x %lld elements per channel exceed 32-bit access-pattern strides",
                       LEAF, p.img->name, (long long)s.H, (long long)s.W);
    const nx_geometry *geo = s.geo;
    s.kmax = geo->pe_rows < geo->partitions ? geo->pe_rows : geo->partitions;
    uint32_t cmax = s.kmax < geo->pe_cols ? s.kmax : geo->pe_cols;
    s.chunk = (uint32_t)(geo->psum_bank_bytes / 4 < geo->pe_moving_free_max ? geo->psum_bank_bytes / 4
                                                                            : geo->pe_moving_free_max);
    uint32_t banks = (uint32_t)(geo->psum_partition_bytes / geo->psum_bank_bytes);
    s.banks = banks / 2 < 1 ? 1 : banks / 2 > 4 ? 4 : banks / 2;
    uint32_t cp_max = (uint32_t)nx_min_i64(s.C, cmax);
    make_plan(&s, cp_max);
    uint64_t spans[3] = {(uint64_t)s.plan.G * (uint64_t)s.sy * (uint64_t)s.W, (uint64_t)s.sx,
                         (uint64_t)s.KH * (uint64_t)s.rdy * (uint64_t)s.W};
    if (nx_dw_check_strides(&p, spans, 3, err) != 0) return -1;
    if (cp_size(&s, err) != 0) return -1;
    const cp_plan big = s.plan;

    uint64_t ctiles = ((uint64_t)s.C + cp_max - 1) / cp_max;
    int64_t nbi = ((s.OH + big.G - 1) / big.G + s.bi - 1) / s.bi, nbx = (s.OW + s.bx - 1) / s.bx;
    uint64_t per_ct = (uint64_t)(nbi * nbx), n = ctiles * per_ct;
    int rc = -1;
    /* tiles sized for the widest plan: K rows x ... */
    for (; s.nx < XS; s.nx++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "cp1_x", s.dt, s.kmax, s.x_elems, &s.x[s.nx], err) != 0) goto done;
    for (; s.nout < OS; s.nout++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "cp1_out", s.dt, cp_max, s.o_elems, &s.out[s.nout], err) != 0) goto done;
    for (; s.nps < s.banks * 2 && s.nps < 8; s.nps++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "cp1_psum", NX_DT_FP32, geo->pe_cols < geo->partitions ? geo->pe_cols : geo->partitions,
                          s.chunk, &s.ps[s.nps], err) != 0)
            goto done;
    for (uint32_t nset = ctiles > 1 ? 2 : 1; s.nident < nset; s.nident++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "cp1_ident", s.dt, s.kmax, cp_max, &s.ident[s.nident], err) != 0) goto done;
    for (uint32_t nset = ctiles > 1 ? 2 : 1; s.nfrep < nset; s.nfrep++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "cp1_filter", s.dt, s.kmax, (uint64_t)(s.KH * s.KW), &s.frep[s.nfrep],
                          err) != 0)
            goto done;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "cp1_zeros", s.dt, s.kmax, s.chunk, &s.zeros, err) != 0) goto done;
    s.have_zeros = 1;
    {
        nx_operand z = nx_tile_ap(&s.zeros);
        if (nx_kctx_memset(k, NX_ENG_DVE, &z, 0.0, err) != 0) goto done;
    }
    for (; s.nw < s.nw_ring; s.nw++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "cp1_stationary", s.dt, s.kmax, geo->pe_cols, &s.w[s.nw], err) != 0)
            goto done;
    if (zero_ring(&s, err) != 0) goto done;

    cp_band bands[3];
    for (uint64_t i = 0; i < n + 2; i++) {
        for (int phase = 0; phase < 3; phase++) {
            if (i < (uint64_t)phase || i - (uint64_t)phase >= n) continue;
            uint64_t j = i - (uint64_t)phase, ct = j / per_ct, r = j % per_ct;
            cp_band *b = &bands[j % 3];
            const nx_tile *x = &s.x[j % XS], *out = &s.out[j % OS];
            if (phase == 0) {
                memset(b, 0, sizeof *b);
                b->ct = ct;
                b->c0 = ct * cp_max;
                b->cp = (uint32_t)nx_min_i64(cp_max, s.C - (int64_t)b->c0);
                b->first_of_tile = r == 0;
                /* every channel tile has the packing (G, KB, shifts) of the
                 * widest one, with its own channel count */
                b->M = (s.plan.G - 1) * s.plan.ga + b->cp;
                b->K = (s.plan.R - 1) * s.plan.ra + b->cp;
                b->par = (uint32_t)(ct % s.nident);
                int64_t ib = (int64_t)r / nbx, xb = (int64_t)r % nbx;
                b->oy0 = ib * s.bi * (int64_t)s.plan.G;
                b->ny = nx_min_i64(s.bi * (int64_t)s.plan.G, s.OH - b->oy0);
                b->ni = (b->ny + s.plan.G - 1) / s.plan.G;
                b->ox0 = xb * s.bx;
                b->nxo = nx_min_i64(s.bx, s.OW - b->ox0);
                int64_t lo, hi;
                nx_dw_axis_input_span(&p.ax[1], b->ox0, b->ox0 + b->nxo, &lo, &hi);
                if (hi <= lo) lo = 0, hi = 1;
                b->ix0 = lo;
                b->nxi = hi - lo;
                b->J = replica_rows(&s, &s.plan, b->ni);
                /* a narrower last tile: the rows between its replica blocks
                 * still hold the wider tiles' image values (0 x a stale inf
                 * would be NaN): zero each replica tile before its first use */
                b->narrow = ct > 0 && b->cp != cp_max;
                if (b->narrow && r < XS) {
                    nx_operand all = nx_tile_ap(x);
                    if (nx_kctx_memset(k, NX_ENG_POOL, &all, 0.0, err) != 0) goto done;
                }
                if (cp_load(&s, b, x, err) != 0) goto done;
                /* after the image load (its padding rows come first on
                 * POOL, so the load starts at once): the tile's identity
                 * and filter copies for the stationaries */
                if (b->first_of_tile) {
                    if (s.ident_cp[b->par] != b->cp) {
                        if (build_ident(&s, b, err) != 0) goto done;
                        s.ident_cp[b->par] = b->cp;
                    }
                    if (load_filter(&s, b, err) != 0) goto done;
                }
            } else if (phase == 1) {
                if (cp_compute(&s, b, x, out, err) != 0) goto done;
            } else {
                if (cp_store(&s, b, out, err) != 0) goto done;
            }
        }
    }
    rc = 0;
done:;
    nx_error rerr;
    while (s.nw > 0) nx_kctx_release(k, &s.w[--s.nw], &rerr);
    if (s.have_zeros) nx_kctx_release(k, &s.zeros, &rerr);
    while (s.nfrep > 0) nx_kctx_release(k, &s.frep[--s.nfrep], &rerr);
    while (s.nident > 0) nx_kctx_release(k, &s.ident[--s.nident], &rerr);
    while (s.nps > 0) nx_kctx_release(k, &s.ps[--s.nps], &rerr);
    while (s.nout > 0) nx_kctx_release(k, &s.out[--s.nout], &rerr);
    while (s.nx > 0) nx_kctx_release(k, &s.x[--s.nx], &rerr);
    return rc;
}
