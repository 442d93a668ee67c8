/* conv2d_depthwise_f01b_o01i_bf01: img (C,H,W,N), filt (C,KH,KW,1),
 * out (N,C,OH,OW); a depthwise conv with stride, padding, lhs_dilation (the
 * depthwise input gradient / transposed conv) and rhs_dilation.
 *
 * Follows the public NKI kernel of the same name (aws-neuron kernel library,
 * "Convolution kernels"): channels on partitions, the image's (H, W, N) on
 * the free axis; per tap a DVE product of an image window with the filter,
 * the KH*KW products summed into PSUM by matmuls against an identity. The
 * public kernel takes stride 1 and rhs_dilation 1 only, padding >= 0,
 * materialises the lhs-dilated image (zeros included) in SBUF and multiplies
 * every tap over it, and broadcasts the filter over the window in SBUF.
 *
 * Where this one goes further:
 *  - any stride, rhs_dilation, lhs_dilation and padding (negative crops):
 *    nothing is materialised; per tap and output chunk the outputs the tap
 *    reaches form a strided sub-grid (kernels/conv/depthwise/depthwise_plan.h,
 *    nx_dw_axis_run), so a product covers only real input elements (with
 *    lhs_dilation d, 1/d^2 of the public kernel's products) and its matmul
 *    accumulates into exactly those PSUM positions;
 *  - the filter value is a per-partition scalar (tensor_scalar), no
 *    broadcast copy; products are spread over DVE, POOL and ACT by a list
 *    schedule on their published cost forms (docs/ISA.md), ACT also
 *    evacuating PSUM (each chunk's copy emitted after the next chunk's
 *    products, so it never holds ACT's in-order stream);
 *  - taps whose sub-grids coincide (all of them away from the borders) are
 *    stacked on the PE rows: up to pe_rows / align(C) taps' products sit in
 *    partition groups of one moving tile, and one matmul against a stacked
 *    identity sums them (4 taps per matmul for C <= 32);
 *  - bands of output rows (and, for very wide or very batched images, of
 *    columns and batch) are double-buffered: the next band's input loads
 *    while this one computes; stores are one transfer per band (batch as a
 *    free dim).
 *
 * Numerics: products are rounded once to the product dtype (fp32 for fp32
 * inputs; the input dtype for bf16/fp16, as in the public kernel; bf16 for
 * fp8 inputs, where every product is exact), summed in fp32 in PSUM, and the
 * result rounded once to the output dtype. An fp16 product beyond 65504
 * overflows to inf. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "depthwise.h"
#include "depthwise_plan.h"
#include "isa/intmath.h"

#define LEAF "conv2d_depthwise_f01b_o01i_bf01"
#define XS 2   /* input band tiles */
#define OS 2   /* output band tiles */
#define FS 2   /* filter tiles */
#define NPROD 6 /* product tiles in flight */

typedef struct tap_grid {
    nx_dw_run ry, rx;
    int64_t t;
} tap_grid;

typedef struct f01b_state {
    nx_kctx *k;
    /* Engine costs for the product schedule in ACT cycles, from the machine:
     * a DVE cycle is dve_num / dve_den ACT cycles and a POOL cycle pool_num /
     * pool_den (the clock ratios: both presets clock DVE at 0.8 x ACT, so
     * 5/4, and POOL as ACT, 1/1) */
    uint32_t dve_num, dve_den, pool_num, pool_den;
    const nx_dw_problem *p;
    const nx_geometry *geo;
    nx_dtype dt, pdt;            /* io dtype, product dtype */
    uint64_t isz, psz;
    int64_t H, W, N, KH, KW, OH, OW, C;
    uint32_t cp_max, ga, taps_per_mm;
    int64_t by, bx, bn;          /* band: output rows, cols, batch */
    uint64_t in_rows_max, in_cols_max;
    uint32_t chunk;              /* PSUM elements per chunk (one bank of fp32) */
    nx_tile x[XS], out[OS], f[FS], prod[NPROD], ps[8], ident, zeros;
    uint32_t nx, nout, nf, nprod, nps;
    int have_ident, have_zeros;
    uint32_t next_prod, next_ps;
    uint64_t load[3];            /* estimated busy of DVE, ACT, POOL in ACT cycles */
    uint32_t loaded_k, loaded_m; /* shape of the loaded stationary (0: none) */
    int pending;                 /* a chunk's evacuation waits to be emitted */
    nx_operand pend_from, pend_to;
    tap_grid *grid;              /* KH*KW scratch entries */
    int64_t *order;
    uint8_t *used;
} f01b_state;

typedef struct f01b_band {
    uint64_t c0;
    uint32_t cp;
    int64_t oy0, ox0, n0;        /* output origin */
    int64_t ny, nxo, nn;         /* output extent */
    int64_t iy0, iy1, ix0, ix1;  /* input rows/cols loaded */
} f01b_band;

/* An upper bound of the input elements a run of `n` outputs reads on `a`. */
static uint64_t in_extent(const nx_dw_axis *a, int64_t n) {
    int64_t span = (n - 1) * a->stride + (a->k - 1) * a->rhs_dil + 1;
    int64_t e = (span + a->lhs_dil - 1) / a->lhs_dil + 1;
    return (uint64_t)nx_min_i64(e, a->in);
}

/* ---- sizing ---- */

static uint64_t band_bytes(const f01b_state *s, int64_t by, int64_t bx, int64_t bn) {
    uint64_t in = in_extent(&s->p->ax[0], by) * in_extent(&s->p->ax[1], bx) * (uint64_t)bn * s->isz;
    uint64_t out = (uint64_t)(by * bx * bn) * s->isz;
    return XS * nx_round_up_u64(in, 64) + OS * nx_round_up_u64(out, 64);
}

/* The largest extent of band dim `dim` (0 rows, 1 columns, 2 batch; its
 * argument is the upper limit, the others fixed) whose tiles fit `budget`
 * bytes per partition and the free-size limit; 0 if none. */
static int64_t largest_fit(const f01b_state *s, uint64_t budget, int64_t lim, int dim, int64_t by, int64_t bx,
                           int64_t bn) {
    int64_t v[3] = {by, bx, bn}, lo = 0, hi = v[dim];
    while (lo < hi) {
        int64_t m = (lo + hi + 1) / 2;
        v[dim] = m;
        if (band_bytes(s, v[0], v[1], v[2]) <= budget && v[0] * v[1] * v[2] <= lim) lo = m;
        else hi = m - 1;
    }
    return lo;
}

static int f01b_size(f01b_state *s, uint64_t ctiles, nx_error *err) {
    const nx_geometry *geo = s->geo;
    uint64_t fixed = FS * nx_round_up_u64((uint64_t)(s->KH * s->KW) * s->isz, 64) + NPROD * nx_round_up_u64(s->chunk * s->psz, 64) +
                     2 * nx_round_up_u64(s->chunk * s->psz, 64) + nx_round_up_u64(s->cp_max * s->psz, 64);
    uint64_t budget = geo->sbuf_partition_bytes / 4 * 3;
    if (budget <= fixed) return nx_fail(err, "%s: SBUF too small for the product tiles", LEAF);
    budget -= fixed;
    int64_t lim = (int64_t)geo->sbuf_free_elems_max;
    /* whole batch and rows if they fit, else cut rows, then columns, then batch */
    int64_t bn = s->N, bx = s->OW, by = largest_fit(s, budget, lim, 0, s->OH, bx, bn);
    if (by == 0) by = 1, bx = largest_fit(s, budget, lim, 1, 1, s->OW, bn);
    if (bx == 0) bx = 1, bn = largest_fit(s, budget, lim, 2, 1, 1, s->N);
    if (bn == 0)
        return nx_fail(err, "%s: operand 1 (%s): a %lldx%lld window with these dilations needs more input per "
                            "output than SBUF holds",
                       LEAF, s->p->filt->name, (long long)s->KH, (long long)s->KW);
    /* at least 4 work items when the image allows, so loads overlap compute */
    if (by == s->OH && bx == s->OW && bn == s->N && ctiles < 4) {
        int64_t want = (int64_t)((4 + ctiles - 1) / ctiles);
        by = (s->OH + want - 1) / want;
    }
    s->by = by;
    s->bx = bx;
    s->bn = bn;
    s->in_rows_max = in_extent(&s->p->ax[0], by);
    s->in_cols_max = in_extent(&s->p->ax[1], bx);
    return 0;
}

/* ---- per band ---- */

static int f01b_load_filter(f01b_state *s, const nx_tile *ft, uint64_t c0, uint32_t cp, nx_error *err) {
    int32_t one = 1;
    uint32_t taps = (uint32_t)(s->KH * s->KW);
    uint64_t pitch = s->p->filt_stride[0];
    nx_operand src = nx_ap_hbm_rows(s->dt, s->p->filt->hbm_offset + c0 * pitch * s->isz, cp, (int32_t)pitch, taps);
    nx_operand dst = nx_tile_view(ft, s->dt, 0, cp, 0, 1, &one, &taps);
    /* rows of a few bytes: cut over the DMA engines, on the store lanes
     * (idle when a channel tile starts) so the image loads do not queue
     * behind them */
    return nx_dw_dma(s->k, NX_DW_STORE, 0, 0, &dst, &src, err);
}

static int f01b_load(f01b_state *s, const f01b_band *b, const nx_tile *x, nx_error *err) {
    if (b->iy1 <= b->iy0 || b->ix1 <= b->ix0) return 0;
    const nx_dw_problem *p = s->p;
    int64_t ny = b->iy1 - b->iy0, nxi = b->ix1 - b->ix0;
    uint64_t off = p->img->hbm_offset +
                   (b->c0 * p->img_stride[1] + (uint64_t)b->iy0 * p->img_stride[2] +
                    (uint64_t)b->ix0 * p->img_stride[3] + (uint64_t)b->n0 * p->img_stride[0]) *
                       s->isz;
    int32_t hs[3] = {(int32_t)p->img_stride[2], (int32_t)p->img_stride[3], (int32_t)p->img_stride[0]};
    uint32_t hc[3] = {(uint32_t)ny, (uint32_t)nxi, (uint32_t)b->nn};
    nx_operand src = nx_ap(NX_OPK_HBM, s->dt, 0, b->cp, (int32_t)p->img_stride[1], off, 3, hs, hc);
    int32_t ts[3] = {(int32_t)(nxi * b->nn), (int32_t)b->nn, 1};
    nx_operand dst = nx_tile_view(x, s->dt, 0, b->cp, 0, 3, ts, hc);
    return nx_dw_dma(s->k, NX_DW_LOAD, 0, 0, &dst, &src, err);
}

static int f01b_store(f01b_state *s, const f01b_band *b, const nx_tile *out, nx_error *err) {
    const nx_dw_problem *p = s->p;
    uint64_t off = p->out->hbm_offset +
                   (b->c0 * p->out_stride[1] + (uint64_t)b->n0 * p->out_stride[0] +
                    (uint64_t)b->oy0 * p->out_stride[2] + (uint64_t)b->ox0 * p->out_stride[3]) *
                       s->isz;
    int32_t hs[3] = {(int32_t)p->out_stride[0], (int32_t)p->out_stride[2], (int32_t)p->out_stride[3]};
    uint32_t hc[3] = {(uint32_t)b->nn, (uint32_t)b->ny, (uint32_t)b->nxo};
    nx_operand dst = nx_ap(NX_OPK_HBM, s->dt, 0, b->cp, (int32_t)p->out_stride[1], off, 3, hs, hc);
    int32_t ts[3] = {(int32_t)(b->ny * b->nxo), (int32_t)b->nxo, 1};
    nx_operand src = nx_tile_view(out, s->dt, 0, b->cp, 0, 3, ts, hc);
    return nx_dw_dma(s->k, NX_DW_STORE, 0, 0, &dst, &src, err);
}

/* The engine that finishes a product of n elements first, by the cost forms
 * of docs/ISA.md with the machine's figures (DVE max(dve.min_ii, N) with
 * trn2's 4x mode for 2-byte SBUF operands, ACT max(act.min_cycles, N), POOL
 * pool.startup + N: 64, 64 and 150 on both presets). */
static nx_engine pick_engine(f01b_state *s, uint64_t n, int perf) {
    const nx_machine *m = nx_kctx_machine(s->k);
    uint64_t dve_work = perf ? (n + 3) / 4 : n, dve_min = m->dve_min_ii, act_min = m->act_min_cycles;
    uint64_t cost[3] = {(dve_work > dve_min ? dve_work : dve_min) * s->dve_num / s->dve_den, n > act_min ? n : act_min,
                        (m->pool_startup + n) * s->pool_num / s->pool_den};
    static const nx_engine eng[3] = {NX_ENG_DVE, NX_ENG_ACT, NX_ENG_POOL};
    int best = 0;
    for (int e = 1; e < 3; e++)
        if (s->load[e] + cost[e] < s->load[best] + cost[best]) best = e;
    s->load[best] += cost[best];
    return eng[best];
}

static int same_grid(const tap_grid *a, const tap_grid *b) {
    return a->ry.first == b->ry.first && a->ry.count == b->ry.count && a->ry.step == b->ry.step &&
           a->rx.first == b->rx.first && a->rx.count == b->rx.count && a->rx.step == b->rx.step;
}

static int ensure_stationary(f01b_state *s, uint32_t k_rows, uint32_t cp, nx_error *err) {
    if (s->loaded_k == k_rows && s->loaded_m == cp) return 0;
    nx_operand st = nx_tile_view(&s->ident, s->pdt, 0, k_rows, 0, 1, (const int32_t[]){1}, &cp);
    if (nx_kctx_load_stationary(s->k, &st, err) != 0) return -1;
    s->loaded_k = k_rows;
    s->loaded_m = cp;
    return 0;
}

/* The deferred evacuation, if any. */
static int f01b_flush(f01b_state *s, nx_error *err) {
    if (!s->pending) return 0;
    s->pending = 0;
    return nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &s->pend_to, &s->pend_from, err);
}

/* One PSUM chunk: outputs (rows [cy0, cy0+cy), cols [cx0, cx0+cx), batch
 * [cn0, cn0+cn)) of the band, relative to the band origin. */
static int f01b_chunk(f01b_state *s, const f01b_band *b, const nx_tile *x, const nx_tile *ft, const nx_tile *out,
                      int64_t cy0, int64_t cy, int64_t cx0, int64_t cx, int64_t cn0, int64_t cn, nx_error *err) {
    const nx_dw_problem *p = s->p;
    uint32_t cp = b->cp;
    tap_grid *g = s->grid;
    int64_t ng = 0;
    for (int64_t ky = 0; ky < s->KH; ky++)
        for (int64_t kx = 0; kx < s->KW; kx++) {
            tap_grid t;
            nx_dw_axis_run(&p->ax[0], ky, b->oy0 + cy0, b->oy0 + cy0 + cy, &t.ry);
            nx_dw_axis_run(&p->ax[1], kx, b->ox0 + cx0, b->ox0 + cx0 + cx, &t.rx);
            if (t.ry.count == 0 || t.rx.count == 0) continue;
            t.t = ky * s->KW + kx;
            g[ng++] = t;
        }
    /* order: groups of equal sub-grids; a group covering the whole chunk
     * first (it initialises PSUM with acc = 0) */
    int64_t *order = s->order, no = 0;
    uint8_t *used = s->used;
    memset(used, 0, (size_t)ng);
    int64_t full = -1;
    for (int64_t i = 0; i < ng && full < 0; i++)
        if (g[i].ry.first == b->oy0 + cy0 && g[i].ry.step == 1 && g[i].ry.count == cy &&
            g[i].rx.first == b->ox0 + cx0 && g[i].rx.step == 1 && g[i].rx.count == cx)
            full = i;
    for (int64_t pass = 0; pass < 2; pass++)
        for (int64_t i = 0; i < ng; i++) {
            if (used[i] || (pass == 0 && (full < 0 || !same_grid(&g[i], &g[full])))) continue;
            for (int64_t j = i; j < ng; j++)
                if (!used[j] && same_grid(&g[j], &g[i])) {
                    used[j] = 1;
                    order[no++] = j;
                }
        }
    const nx_tile *ps = &s->ps[s->next_ps++ % s->nps];
    int first = 1;
    int32_t one = 1;
    uint32_t cnt = (uint32_t)(cy * cx * cn);
    if (full < 0) { /* no tap reaches every output: zero the chunk first */
        uint32_t kr = s->loaded_k && s->loaded_m == cp ? s->loaded_k : cp;
        if (ensure_stationary(s, kr, cp, err) != 0) return -1;
        nx_operand z = nx_tile_view(&s->zeros, s->pdt, 0, kr, 0, 1, &one, &cnt);
        nx_operand d = nx_tile_view(ps, NX_DT_FP32, 0, cp, 0, 1, &one, &cnt);
        if (nx_kctx_multiply_moving(s->k, &d, &z, 0, err) != 0) return -1;
        first = 0;
    }
    int perf2 = s->pdt != NX_DT_FP32 && s->dt == s->pdt; /* 2-byte products of 2-byte inputs */
    int64_t xw = b->ix1 - b->ix0;
    for (int64_t i = 0; i < no;) {
        /* a group: up to taps_per_mm taps of the same sub-grid */
        int64_t j = i + 1;
        while (j < no && j - i < s->taps_per_mm && same_grid(&g[order[j]], &g[order[i]])) j++;
        const tap_grid *t0 = &g[order[i]];
        uint32_t ny = (uint32_t)t0->ry.count, nxo = (uint32_t)t0->rx.count, nn = (uint32_t)cn;
        uint32_t n = ny * nxo * nn;
        const nx_tile *pt = &s->prod[s->next_prod++ % s->nprod];
        for (int64_t q = i; q < j; q++) {
            const tap_grid *t = &g[order[q]];
            uint32_t slot = (uint32_t)(q - i);
            int32_t xs[3] = {(int32_t)(t->ry.in_step * xw * b->nn), (int32_t)(t->rx.in_step * b->nn), 1};
            uint32_t xc[3] = {ny, nxo, nn};
            uint64_t xoff = (uint64_t)(((t->ry.in_first - b->iy0) * xw + (t->rx.in_first - b->ix0)) * b->nn + cn0);
            nx_operand xin = nx_tile_view(x, s->dt, 0, cp, xoff, 3, xs, xc);
            nx_operand pd = nx_tile_view(pt, s->pdt, slot * s->ga, cp, 0, 1, &one, &n);
            nx_operand f = nx_tile_view(ft, s->dt, 0, cp, (uint64_t)t->t, 0, NULL, NULL);
            nx_engine e = pick_engine(s, n, perf2 && (nn > 1 || t->rx.in_step == 1));
            int rc = e == NX_ENG_ACT ? nx_dw_scale_act(s->k, &pd, &xin, &f, err)
                                     : nx_dw_scale(s->k, e, &pd, &xin, &f, err);
            if (rc != 0) return -1;
        }
        uint32_t kr = (uint32_t)(j - i - 1) * s->ga + cp;
        if (ensure_stationary(s, kr, cp, err) != 0) return -1;
        nx_operand mv = nx_tile_view(pt, s->pdt, 0, kr, 0, 1, &one, &n);
        int32_t ds[3] = {(int32_t)(t0->ry.step * cx * cn), (int32_t)(t0->rx.step * cn), 1};
        uint32_t dc[3] = {ny, nxo, nn};
        uint64_t doff = (uint64_t)(((t0->ry.first - b->oy0 - cy0) * cx + (t0->rx.first - b->ox0 - cx0)) * cn);
        nx_operand d = nx_tile_view(ps, NX_DT_FP32, 0, cp, doff, 3, ds, dc);
        if (nx_kctx_multiply_moving(s->k, &d, &mv, !first, err) != 0) return -1;
        first = 0;
        i = j;
    }
    /* the evacuation on ACT, PSUM (y, x, n) -> out tile (n, y, x) of the
     * band, is emitted after the next chunk's products: ACT's stream runs
     * in order, and a copy that waits for this chunk's last matmul must not
     * hold up ACT's share of the next chunk's products */
    if (f01b_flush(s, err) != 0) return -1;
    s->pend_from = nx_tile_view(ps, NX_DT_FP32, 0, cp, 0, 1, &one, &cnt);
    int32_t os[3] = {(int32_t)b->nxo, 1, (int32_t)(b->ny * b->nxo)};
    uint32_t oc[3] = {(uint32_t)cy, (uint32_t)cx, (uint32_t)cn};
    uint64_t ooff = (uint64_t)(cn0 * b->ny * b->nxo + cy0 * b->nxo + cx0);
    s->pend_to = nx_tile_view(out, s->dt, 0, cp, ooff, 3, os, oc);
    s->pending = 1;
    s->load[1] += cnt > 64 ? cnt : 64;
    return 0;
}

static int f01b_compute(f01b_state *s, const f01b_band *b, const nx_tile *x, const nx_tile *ft, const nx_tile *out,
                        nx_error *err) {
    /* chunks of at most one bank: whole (x, n) rows when they fit, else
     * pieces of a row, else pieces of the batch */
    int64_t ch = (int64_t)s->chunk, cn, cx, cy;
    if (b->nn > ch) cn = ch, cx = 1, cy = 1;
    else if (b->nxo * b->nn > ch) cn = b->nn, cx = ch / b->nn, cy = 1;
    else cn = b->nn, cx = b->nxo, cy = nx_min_i64(b->ny, ch / (b->nxo * b->nn));
    for (int64_t y = 0; y < b->ny; y += cy)
        for (int64_t xx = 0; xx < b->nxo; xx += cx)
            for (int64_t n = 0; n < b->nn; n += cn)
                if (f01b_chunk(s, b, x, ft, out, y, nx_min_i64(cy, b->ny - y), xx, nx_min_i64(cx, b->nxo - xx), n,
                               nx_min_i64(cn, b->nn - n), err) != 0)
                    return -1;
    return f01b_flush(s, err); /* the band's store reads the whole tile */
}

/* ---- setup ---- */

/* The stacked identity: taps_per_mm blocks of cp_max rows at multiples of
 * ga, block t holding 1 at (t*ga + c, c); zeros elsewhere (memset first). */
static int build_identity(f01b_state *s, nx_error *err) {
    uint32_t cp = s->cp_max, rows = s->taps_per_mm * s->ga;
    if (rows > s->geo->partitions) rows = s->geo->partitions;
    if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "f01b_ident", s->pdt, rows, cp, &s->ident, err) != 0) return -1;
    s->have_ident = 1;
    nx_operand all = nx_tile_ap(&s->ident);
    if (nx_kctx_memset(s->k, NX_ENG_POOL, &all, 0.0, err) != 0) return -1;
    for (uint32_t t = 0; t < s->taps_per_mm; t++)
        if (nx_dw_identity(s->k, &s->ident, s->pdt, t * s->ga, cp, err) != 0) return -1;
    return 0;
}

int conv2d_depthwise_f01b_o01i_bf01(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_dw_problem p;
    if (nx_dw_prepare(LEAF, call, "f01b_o01i->bf01", &p, err) != 0) return -1;
    f01b_state s;
    memset(&s, 0, sizeof s);
    s.k = k;
    const nx_machine *m = nx_kctx_machine(k);
    nx_dw_ratio(m->clock_ghz[NX_ENG_ACT] / m->clock_ghz[NX_ENG_DVE], &s.dve_num, &s.dve_den);
    nx_dw_ratio(m->clock_ghz[NX_ENG_ACT] / m->clock_ghz[NX_ENG_POOL], &s.pool_num, &s.pool_den);
    s.p = &p;
    s.geo = nx_kctx_geometry(k);
    s.dt = p.dtype;
    s.pdt = p.dtype == NX_DT_FP8_E4M3 || p.dtype == NX_DT_FP8_E5M2 ? NX_DT_BF16 : p.dtype;
    s.isz = nx_dtype_size(s.dt);
    s.psz = nx_dtype_size(s.pdt);
    s.H = p.ax[0].in, s.W = p.ax[1].in, s.N = (int64_t)p.n, s.C = (int64_t)p.c;
    s.KH = p.ax[0].k, s.KW = p.ax[1].k, s.OH = p.ax[0].out, s.OW = p.ax[1].out;
    uint64_t big = (uint64_t)s.H * (uint64_t)s.W * (uint64_t)s.N;
    if (big > INT32_MAX || (uint64_t)s.OH * (uint64_t)s.OW * (uint64_t)s.N * (uint64_t)s.C > INT32_MAX)
        return nx_fail(err, "%s: operand 0 (%s): %llu elements per channel exceed 32-bit access-pattern strides", LEAF,
                       p.img->name, (unsigned long long)big);
    uint64_t spans[4] = {(uint64_t)p.ax[0].stride * (uint64_t)s.W * (uint64_t)s.N,
                         (uint64_t)p.ax[1].stride * (uint64_t)s.N,
                         (uint64_t)p.ax[0].lhs_dil * s.geo->psum_bank_bytes, (uint64_t)p.ax[1].lhs_dil * s.geo->psum_bank_bytes};
    if (nx_dw_check_strides(&p, spans, 4, err) != 0) return -1;
    const nx_geometry *geo = s.geo;
    uint32_t P = geo->partitions < geo->pe_rows ? geo->partitions : geo->pe_rows;
    if (geo->pe_cols < P) P = geo->pe_cols;
    s.cp_max = (uint32_t)nx_min_i64(s.C, P);
    s.ga = nx_dw_partition_align(geo, s.cp_max);
    s.taps_per_mm = s.ga < P ? P / s.ga : 1;
    if ((int64_t)s.taps_per_mm > s.KH * s.KW) s.taps_per_mm = (uint32_t)(s.KH * s.KW);
    s.chunk = (uint32_t)(geo->psum_bank_bytes / 4 < geo->pe_moving_free_max ? geo->psum_bank_bytes / 4
                                                                            : geo->pe_moving_free_max);
    uint64_t ctiles = ((uint64_t)s.C + s.cp_max - 1) / s.cp_max;
    if (f01b_size(&s, ctiles, err) != 0) return -1;
    size_t ntaps = (size_t)(s.KH * s.KW);
    s.grid = malloc(ntaps * sizeof *s.grid);
    s.order = malloc(ntaps * sizeof *s.order);
    s.used = malloc(ntaps);
    if (!s.grid || !s.order || !s.used) {
        free(s.grid), free(s.order), free(s.used);
        return nx_fail(err, "%s: out of memory for %zu taps", LEAF, ntaps);
    }

    int64_t nby = (s.OH + s.by - 1) / s.by, nbx = (s.OW + s.bx - 1) / s.bx, nbn = (s.N + s.bn - 1) / s.bn;
    uint64_t per_ct = (uint64_t)(nby * nbx * nbn), n = ctiles * per_ct;
    int rc = -1;
    uint64_t xelems = s.in_rows_max * s.in_cols_max * (uint64_t)s.bn;
    uint64_t oelems = (uint64_t)(s.by * s.bx * s.bn);
    uint32_t taps = (uint32_t)(s.KH * s.KW);
    for (; s.nx < XS; s.nx++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "f01b_x", s.dt, s.cp_max, xelems, &s.x[s.nx], err) != 0) goto done;
    for (; s.nout < OS; s.nout++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "f01b_out", s.dt, s.cp_max, oelems, &s.out[s.nout], err) != 0) goto done;
    for (; s.nf < FS; s.nf++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "f01b_filter", s.dt, s.cp_max, taps, &s.f[s.nf], err) != 0) goto done;
    uint32_t krows = (s.taps_per_mm - 1) * s.ga + s.cp_max;
    for (; s.nprod < NPROD; s.nprod++) {
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "f01b_prod", s.pdt, krows, s.chunk, &s.prod[s.nprod], err) != 0) goto done;
        /* the partitions between tap groups are never written: zero them
         * once so that 0 x (stale SBUF) never makes a NaN */
        nx_operand all = nx_tile_ap(&s.prod[s.nprod]);
        if (s.taps_per_mm > 1 && nx_kctx_memset(k, NX_ENG_POOL, &all, 0.0, err) != 0) goto done;
    }
    uint32_t banks = (uint32_t)(geo->psum_partition_bytes / geo->psum_bank_bytes) / 2;
    if (banks < 2) banks = 2;
    if (banks > 8) banks = 8;
    for (; s.nps < banks; s.nps++)
        if (nx_kctx_alloc(k, NX_OPK_PSUM, "f01b_psum", NX_DT_FP32, s.cp_max, s.chunk, &s.ps[s.nps], err) != 0)
            goto done;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "f01b_zeros", s.pdt, krows, s.chunk, &s.zeros, err) != 0) goto done;
    s.have_zeros = 1;
    {
        nx_operand z = nx_tile_ap(&s.zeros);
        if (nx_kctx_memset(k, NX_ENG_POOL, &z, 0.0, err) != 0) goto done;
    }
    if (build_identity(&s, err) != 0) goto done;

    /* pipeline over (channel tile, band): step i loads i, computes i-1, stores i-2 */
    f01b_band bands[3];
    for (uint64_t i = 0; i < n + 2; i++) {
        for (int phase = 0; phase < 3; phase++) {
            if (i < (uint64_t)phase || i - (uint64_t)phase >= n) continue;
            uint64_t j = i - (uint64_t)phase, ct = j / per_ct, r = j % per_ct;
            f01b_band *b = &bands[j % 3];
            const nx_tile *x = &s.x[j % XS], *out = &s.out[j % OS], *ft = &s.f[ct % FS];
            if (phase == 0) {
                memset(b, 0, sizeof *b);
                b->c0 = ct * s.cp_max;
                b->cp = (uint32_t)nx_min_i64(s.cp_max, s.C - (int64_t)b->c0);
                int64_t iby = (int64_t)r / (nbx * nbn), ibx = ((int64_t)r / nbn) % nbx, ibn = (int64_t)r % nbn;
                b->oy0 = iby * s.by, b->ny = nx_min_i64(s.by, s.OH - b->oy0);
                b->ox0 = ibx * s.bx, b->nxo = nx_min_i64(s.bx, s.OW - b->ox0);
                b->n0 = ibn * s.bn, b->nn = nx_min_i64(s.bn, s.N - b->n0);
                nx_dw_axis_input_span(&p.ax[0], b->oy0, b->oy0 + b->ny, &b->iy0, &b->iy1);
                nx_dw_axis_input_span(&p.ax[1], b->ox0, b->ox0 + b->nxo, &b->ix0, &b->ix1);
                if (r == 0 && f01b_load_filter(&s, ft, b->c0, b->cp, err) != 0) goto done;
                if (f01b_load(&s, b, x, err) != 0) goto done;
            } else if (phase == 1) {
                if (f01b_compute(&s, b, x, ft, out, err) != 0) goto done;
            } else {
                if (f01b_store(&s, b, out, err) != 0) goto done;
            }
        }
    }
    rc = 0;
done:;
    free(s.grid), free(s.order), free(s.used);
    nx_error rerr;
    if (s.have_ident) nx_kctx_release(k, &s.ident, &rerr);
    if (s.have_zeros) nx_kctx_release(k, &s.zeros, &rerr);
    while (s.nps > 0) nx_kctx_release(k, &s.ps[--s.nps], &rerr);
    while (s.nprod > 0) nx_kctx_release(k, &s.prod[--s.nprod], &rerr);
    while (s.nf > 0) nx_kctx_release(k, &s.f[--s.nf], &rerr);
    while (s.nout > 0) nx_kctx_release(k, &s.out[--s.nout], &rerr);
    while (s.nx > 0) nx_kctx_release(k, &s.x[--s.nx], &rerr);
    return rc;
}
