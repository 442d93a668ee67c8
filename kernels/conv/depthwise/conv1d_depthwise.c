/* conv1d_depthwise_bf01_oi01_bf01: img (N,C,1,W), filt (C,1,1,Wf),
 * out (N,C,1,W_out); out[n,c,0,x] = sum_k img_pad[n,c,0, x*s + k*rd] * f[c,0,0,k].
 *
 * Follows the public NKI conv kernel of the same name (aws-neuron kernel
 * library, "Convolution kernels"): (n, c) rows on partitions, W on the free
 * axis, the filter of each row as per-partition values. The public kernel
 * multiplies a window-shaped slice by the filter (tensor_tensor) and reduces
 * it (tensor_reduce), packing output positions into the free axis when the
 * window is short; it takes stride 1, padding >= 0, W_f < 512, and keeps the
 * whole image in SBUF.
 *
 * Where this one goes further:
 *  - one multiply-accumulate instruction per tap over every output position
 *    of a tile (scalar_tensor_tensor: acc = x[o*s + k*rd] * f[k] + acc, the
 *    filter value a per-partition scalar), so each instruction packs a whole
 *    chunk of outputs whatever the window, and there is no reduce pass;
 *  - tap 0 on ACT (activation with a per-partition scale), the other taps on
 *    POOL and DVE side by side on disjoint output columns: POOL streams one
 *    element per cycle at its clock, DVE two cycles per element for two
 *    inputs (docs/ISA.md, cost of scalar_tensor_tensor), so POOL takes
 *    its share of the columns (from the machine's clocks) and both finish together (on trn1, where DVE
 *    and POOL share the SBUF port, the model serialises them);
 *  - fp32 accumulation in SBUF, the last tap writing the output dtype (one
 *    rounding);
 *  - any stride, rhs_dilation, padding (negative crops) and W_f; long W cut
 *    into chunks with halos ((chunk-1)*s + (W_f-1)*rd + 1 inputs per chunk),
 *    the padding materialised as zeros in the chunk's input tile;
 *  - rows tiled by 128 across (n, c) (tiles may span images); the filter rows
 *    of a tile follow c = row mod C: loaded once when every tile starts at
 *    c = 0, else per tile in at most ceil(P/C)+1 pieces;
 *  - triple-buffered inputs and outputs, loads emitted two work items ahead
 *    of the stores, transfers cut by rows over the DMA engines.
 *
 * Numerics: products and sums are fp32 ALU operations in tap order; the
 * result is rounded once to the output dtype. */
#include <stdint.h>

#include "depthwise.h"
#include "depthwise_plan.h"

#define LEAF "Conv1d_depthwise_bf01_oi01_bf01"
#define XS 3 /* input tiles in flight */
#define OS 3 /* output tiles in flight */
#define AS 2 /* fp32 accumulators (when the output is not fp32) */
#define FS 2 /* per-tile filters */

typedef struct c1_item {
    uint64_t r0;   /* first (n, c) row */
    uint32_t rows; /* rows of the tile */
    int64_t o0;    /* first output position */
    uint32_t wc;   /* output positions */
    int first_of_tile;
} c1_item;

typedef struct c1_state {
    nx_kctx *k;
    /* POOL's share of a tile's columns, pool_num / pool_den: rate(POOL) /
     * (rate(POOL) + rate(DVE)) from the machine's clocks, one element per
     * POOL cycle against dve.cycles_per_elem_two_inputs DVE cycles per
     * element (both presets: 1.2 / (1.2 + 0.96 / 2) = 5/7) */
    uint32_t pool_num, pool_den;
    const nx_dw_problem *p;
    nx_dtype dt;
    uint64_t isz, osz;
    int64_t w, wf, wo, s, rd, pl;
    uint64_t c, rows_total;
    uint32_t rt;          /* rows per tile */
    int filter_once;      /* every tile's rows start at c = 0 */
    uint32_t wc_max;
    uint64_t lx_max;      /* input elements per chunk tile */
    nx_tile x[XS], out[OS], acc[AS], f[FS];
    uint32_t nx, nout, nacc, nf;
} c1_state;

static uint64_t chunk_inputs(const c1_state *s, uint64_t wc) {
    return (wc - 1) * (uint64_t)s->s + (uint64_t)((s->wf - 1) * s->rd) + 1;
}

/* Filter rows of the tile starting at row r0: rows (r0 + p) mod C, in
 * pieces that do not wrap. */
static int c1_load_filter(c1_state *s, const nx_tile *ft, uint64_t r0, uint32_t rows, nx_error *err) {
    const nx_dw_problem *p = s->p;
    int32_t one = 1;
    uint32_t wf = (uint32_t)s->wf;
    uint64_t fpitch = p->filt_stride[0];
    if (s->c == 1) {
        /* one filter row for every partition: an HBM pattern of row stride 0 */
        nx_operand src = nx_ap(NX_OPK_HBM, s->dt, 0, rows, 0, p->filt->hbm_offset, 1, &one, &wf);
        nx_operand dst = nx_tile_view(ft, s->dt, 0, rows, 0, 1, &one, &wf);
        return nx_dw_dma(s->k, NX_DW_LOAD, 0, 1, &dst, &src, err);
    }
    uint32_t first = 0;
    for (uint32_t q = 0; q < rows;) {
        uint64_t c0 = (r0 + q) % s->c;
        uint32_t n = (uint32_t)(s->c - c0 < rows - q ? s->c - c0 : rows - q);
        nx_operand src = nx_ap_hbm_rows(s->dt, p->filt->hbm_offset + c0 * fpitch * s->isz, n,
                                        (int32_t)fpitch, wf);
        nx_operand dst = nx_tile_view(ft, s->dt, q, n, 0, 1, &one, &wf);
        /* rows of a few bytes: cut over the DMA engines */
        if (nx_dw_dma(s->k, NX_DW_LOAD, first, 0, &dst, &src, err) != 0) return -1;
        first += n;
        q += n;
    }
    return 0;
}

/* The chunk's input tile: padded coordinates [o0*s, o0*s + lx) are the real
 * elements [o0*s - pl, ...); what lies outside [0, W) is zero. */
static int c1_load(c1_state *s, const c1_item *it, const nx_tile *x, nx_error *err) {
    const nx_dw_problem *p = s->p;
    int32_t one = 1;
    uint64_t lx = chunk_inputs(s, it->wc);
    int64_t v0 = it->o0 * s->s - s->pl; /* real index of tile element 0 */
    int64_t lo = v0 < 0 ? 0 : v0, hi = v0 + (int64_t)lx < s->w ? v0 + (int64_t)lx : s->w;
    uint64_t a = lo < hi ? (uint64_t)(lo - v0) : lx, b = lo < hi ? (uint64_t)(hi - v0) : lx;
    if (a > 0) {
        uint32_t n = (uint32_t)a;
        nx_operand z = nx_tile_view(x, s->dt, 0, it->rows, 0, 1, &one, &n);
        if (nx_kctx_memset(s->k, NX_ENG_POOL, &z, 0.0, err) != 0) return -1;
    }
    if (b < lx) {
        uint32_t n = (uint32_t)(lx - b);
        nx_operand z = nx_tile_view(x, s->dt, 0, it->rows, b, 1, &one, &n);
        if (nx_kctx_memset(s->k, NX_ENG_POOL, &z, 0.0, err) != 0) return -1;
    }
    if (a < b) {
        uint32_t n = (uint32_t)(b - a);
        nx_operand src = nx_ap_hbm_rows(s->dt, p->img->hbm_offset + (it->r0 * (uint64_t)s->w + (uint64_t)lo) * s->isz,
                                        it->rows, (int32_t)s->w, n);
        nx_operand dst = nx_tile_view(x, s->dt, 0, it->rows, a, 1, &one, &n);
        if (nx_dw_dma(s->k, NX_DW_LOAD, 0, 0, &dst, &src, err) != 0) return -1;
    }
    return 0;
}

/* acc = x0 f0 (ACT); then per engine's columns acc = xk fk + acc, the last
 * tap into the output tile. */
static int c1_compute(c1_state *s, const c1_item *it, const nx_tile *x, const nx_tile *ft, const nx_tile *acc,
                      const nx_tile *out, nx_error *err) {
    int32_t xs = (int32_t)s->s, one = 1;
    uint32_t rows = it->rows;
    nx_operand f0 = nx_tile_view(ft, s->dt, 0, rows, 0, 0, NULL, NULL);
    const nx_tile *t0 = s->wf == 1 ? out : acc;
    nx_operand d0 = nx_tile_view(t0, (nx_dtype)t0->dtype, 0, rows, 0, 1, &one, &it->wc);
    nx_operand x0 = nx_tile_view(x, s->dt, 0, rows, 0, 1, &xs, &it->wc);
    if (nx_dw_scale_act(s->k, &d0, &x0, &f0, err) != 0) return -1;
    if (s->wf == 1) return 0;
    uint32_t pool_cols = it->wc >= 4 ? it->wc * s->pool_num / s->pool_den : 0;
    struct {
        nx_engine eng;
        uint32_t c0, n;
    } part[2] = {{NX_ENG_POOL, 0, pool_cols}, {NX_ENG_DVE, pool_cols, it->wc - pool_cols}};
    for (int e = 0; e < 2; e++) {
        if (part[e].n == 0) continue;
        uint32_t n = part[e].n;
        nx_operand a = nx_tile_view(acc, NX_DT_FP32, 0, rows, part[e].c0, 1, &one, &n);
        for (int64_t t = 1; t < s->wf; t++) {
            const nx_tile *dt = t == s->wf - 1 ? out : acc;
            nx_operand d = nx_tile_view(dt, (nx_dtype)dt->dtype, 0, rows, part[e].c0, 1, &one, &n);
            nx_operand xv = nx_tile_view(x, s->dt, 0, rows, (uint64_t)part[e].c0 * (uint64_t)s->s + (uint64_t)(t * s->rd),
                                         1, &xs, &n);
            nx_operand ft_t = nx_tile_view(ft, s->dt, 0, rows, (uint64_t)t, 0, NULL, NULL);
            if (nx_dw_mac(s->k, part[e].eng, &d, &xv, &ft_t, &a, err) != 0) return -1;
        }
    }
    return 0;
}

static int c1_store(c1_state *s, const c1_item *it, const nx_tile *out, nx_error *err) {
    int32_t one = 1;
    nx_operand src = nx_tile_view(out, s->dt, 0, it->rows, 0, 1, &one, &it->wc);
    nx_operand dst = nx_ap_hbm_rows(s->dt, s->p->out->hbm_offset + (it->r0 * (uint64_t)s->wo + (uint64_t)it->o0) * s->osz,
                                    it->rows, (int32_t)s->wo, it->wc);
    return nx_dw_dma(s->k, NX_DW_STORE, 0, 0, &dst, &src, err);
}

/* Output positions per chunk: the largest that fits the buffers in 3/4 of
 * a partition's SBUF (the rest for filters and whatever else), balanced
 * over the chunks W_out needs. */
static int c1_size(c1_state *s, nx_error *err) {
    const nx_geometry *geo = nx_kctx_geometry(s->k);
    uint64_t fbytes = (uint64_t)FS * (((uint64_t)s->wf * s->isz + 63) / 64 * 64);
    uint64_t budget = geo->sbuf_partition_bytes / 4 * 3;
    budget = budget > fbytes ? budget - fbytes : 0;
    int separate_acc = s->dt != NX_DT_FP32;
    uint64_t lo = 0, hi = (uint64_t)s->wo;
    if (hi > geo->sbuf_free_elems_max) hi = geo->sbuf_free_elems_max;
    while (lo < hi) { /* largest wc whose buffers fit (monotone in wc) */
        uint64_t wc = (lo + hi + 1) / 2;
        uint64_t lx = chunk_inputs(s, wc);
        uint64_t need = XS * ((lx * s->isz + 63) / 64 * 64) + OS * ((wc * s->osz + 63) / 64 * 64) +
                        (separate_acc ? AS * ((wc * 4 + 63) / 64 * 64) : 0);
        if (need <= budget && lx <= UINT32_MAX) lo = wc;
        else hi = wc - 1;
    }
    if (lo == 0)
        return nx_fail(err, "%s: operand 1 (%s): a filter of width %lld with rhs_dilation %lld needs %llu input "
                            "elements per output chunk, more than SBUF holds",
                       LEAF, s->p->filt->name, (long long)s->wf, (long long)s->rd,
                       (unsigned long long)chunk_inputs(s, 1));
    uint64_t chunks = ((uint64_t)s->wo + lo - 1) / lo;
    s->wc_max = (uint32_t)(((uint64_t)s->wo + chunks - 1) / chunks);
    s->lx_max = chunk_inputs(s, s->wc_max);
    return 0;
}

int conv1d_depthwise_bf01_oi01_bf01(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    nx_dw_problem p;
    if (nx_dw_prepare(LEAF, call, "bf01_oi01->bf01", &p, err) != 0) return -1;
    const nx_dw_axis *ah = &p.ax[0], *aw = &p.ax[1];
    if (ah->in != 1)
        return nx_fail(err, "%s: operand 0 (%s): dim 2 (H) is %lld, a conv1d image has H = 1 (img is N,C,1,W, filt C,1,1,KW)", LEAF, p.img->name,
                       (long long)ah->in);
    if (ah->k != 1)
        return nx_fail(err, "%s: operand 1 (%s): dim 2 (H_f) is %lld, a conv1d filter has H_f = 1 (img is N,C,1,W, filt C,1,1,KW)",
                       LEAF,
                       p.filt->name, (long long)ah->k);
    if (ah->pad_lo != 0 || ah->pad_hi != 0) {
        char v[128];
        nx_conv_format_attr(&p.params, NX_CONV_PADDING, v, sizeof v);
        return nx_fail(err, "%s: attribute padding=%s is not supported (a conv1d takes padding [0,0] on dim 0)", LEAF,
                       v);
    }
    if (nx_conv_require_default(&p.params, NX_CONV_LHS_DILATION, LEAF, err) != 0) return -1;
    if (aw->in > INT32_MAX || aw->out > INT32_MAX || (uint64_t)aw->k * p.filt_stride[3] > INT32_MAX)
        return nx_fail(err, "%s: operand 0 (%s): rows of %lld elements exceed 32-bit access-pattern strides", LEAF,
                       p.img->name, (long long)aw->in);
    uint64_t spans[2] = {(uint64_t)aw->stride, (uint64_t)aw->rhs_dil * (uint64_t)aw->k};
    if (nx_dw_check_strides(&p, spans, 2, err) != 0) return -1;
    const nx_geometry *geo = nx_kctx_geometry(k);
    c1_state s = {0};
    s.k = k;
    const nx_machine *m = nx_kctx_machine(k);
    double pool_rate = m->clock_ghz[NX_ENG_POOL];
    double dve_rate = m->clock_ghz[NX_ENG_DVE] / m->dve_cycles_per_elem_two_inputs;
    nx_dw_ratio(pool_rate / (pool_rate + dve_rate), &s.pool_num, &s.pool_den);
    s.p = &p;
    s.dt = p.dtype;
    s.isz = s.osz = nx_dtype_size(p.dtype);
    s.w = aw->in;
    s.wf = aw->k;
    s.wo = aw->out;
    s.s = aw->stride;
    s.rd = aw->rhs_dil;
    s.pl = aw->pad_lo;
    s.c = p.c;
    s.rows_total = p.n * p.c;
    uint32_t P = geo->partitions;
    s.rt = (uint64_t)4 * s.c >= P ? P : (uint32_t)(P / s.c * s.c);
    s.filter_once = s.rt % s.c == 0;
    if (c1_size(&s, err) != 0) return -1;

    /* the work items of this program: row tiles x chunks (tiles split over
     * the grid by nx_kctx_rows) */
    uint64_t ntiles = (s.rows_total + s.rt - 1) / s.rt, t_lo, t_hi;
    nx_kctx_rows(k, ntiles, &t_lo, &t_hi);
    uint64_t nchunks = ((uint64_t)s.wo + s.wc_max - 1) / s.wc_max;
    uint64_t n = (t_hi - t_lo) * nchunks;
    int rc = -1;
    uint32_t wf = (uint32_t)s.wf;
    int separate_acc = s.dt != NX_DT_FP32;
    uint32_t nfb = s.filter_once ? 1 : FS;
    for (; s.nx < XS; s.nx++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "c1_x", s.dt, s.rt, s.lx_max, &s.x[s.nx], err) != 0) goto done;
    for (; s.nout < OS; s.nout++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "c1_out", s.dt, s.rt, s.wc_max, &s.out[s.nout], err) != 0) goto done;
    for (; separate_acc && s.nacc < AS; s.nacc++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "c1_acc", NX_DT_FP32, s.rt, s.wc_max, &s.acc[s.nacc], err) != 0)
            goto done;
    for (; s.nf < nfb; s.nf++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "c1_filter", s.dt, s.rt, wf, &s.f[s.nf], err) != 0) goto done;
    if (s.filter_once && n > 0) {
        uint32_t rows = s.rows_total < s.rt ? (uint32_t)s.rows_total : s.rt;
        if (c1_load_filter(&s, &s.f[0], 0, rows, err) != 0) goto done;
    }
    /* software pipeline: step i loads item i, computes item i-1, stores i-2 */
    for (uint64_t i = 0; i < n + 2; i++) {
        for (int phase = 0; phase < 3; phase++) {
            if (i < (uint64_t)phase || i - (uint64_t)phase >= n) continue;
            uint64_t j = i - (uint64_t)phase, tile = t_lo + j / nchunks, ch = j % nchunks;
            c1_item it;
            it.r0 = tile * s.rt;
            it.rows = (uint32_t)(s.rows_total - it.r0 < s.rt ? s.rows_total - it.r0 : s.rt);
            it.o0 = (int64_t)(ch * s.wc_max);
            it.wc = (uint32_t)((uint64_t)s.wo - (uint64_t)it.o0 < s.wc_max ? (uint64_t)s.wo - (uint64_t)it.o0
                                                                          : s.wc_max);
            it.first_of_tile = ch == 0;
            uint64_t tile_ix = j / nchunks;
            const nx_tile *ft = &s.f[s.filter_once ? 0 : tile_ix % FS];
            const nx_tile *out = &s.out[j % OS];
            const nx_tile *acc = separate_acc ? &s.acc[j % AS] : out;
            if (phase == 0) {
                if (!s.filter_once && it.first_of_tile && c1_load_filter(&s, ft, it.r0, it.rows, err) != 0)
                    goto done;
                if (c1_load(&s, &it, &s.x[j % XS], err) != 0) goto done;
            } else if (phase == 1) {
                if (c1_compute(&s, &it, &s.x[j % XS], ft, acc, out, err) != 0) goto done;
            } else {
                if (c1_store(&s, &it, out, err) != 0) goto done;
            }
        }
    }
    rc = 0;
done:;
    nx_error rerr;
    while (s.nf > 0) nx_kctx_release(k, &s.f[--s.nf], &rerr);
    while (s.nacc > 0) nx_kctx_release(k, &s.acc[--s.nacc], &rerr);
    while (s.nout > 0) nx_kctx_release(k, &s.out[--s.nout], &rerr);
    while (s.nx > 0) nx_kctx_release(k, &s.x[--s.nx], &rerr);
    return rc;
}
