/* wgrad_core.h: the emitter of the replicated weight-gradient contraction.
 *
 * Work items are (pass, ci tile, row block, column block, co tile of the
 * pass), in that order. Item i's filter rows (of every replica block) go
 * into filter buffer i % 2; the image rows a block meets go into image
 * buffer (block) % 2, loaded in shares by the items of the block before it
 * (the co tiles of a pass share each image block). Item i + 1's loads are
 * emitted right after item i's matmuls (and before any fold's stores), so
 * the DMA of the next item runs under the PE work of this one. A pass's
 * accumulators are zeroed (DVE memset of PSUM) before its first matmul; its
 * fold is emitted after the next pass's first item when the accumulators
 * are double-buffered (the PE then never waits for the fold's PSUM -> SBUF
 * copy), else right after its last item.
 *
 * Per item and step (filter row b in steps of Gy, filter column x in steps
 * of Gx): one load_stationary of the filter tile [(r, ci), (gx, gy, co)]
 * (only the column groups whose filter column exists), then one
 * multiply_moving per accumulator of the pass over the image window of its
 * extended outputs whose image column exists (horizontal padding is never
 * stored: each matmul covers the k1 range its column reaches; vertical
 * padding rows are zeroed in the image tile). The kernel's first item runs
 * in chunks of the image batch (first_split) so the PE starts before its
 * whole image is in. docs/parts/wgrad.md has the whole scheme. */
#include <math.h>
#include <string.h>

#include "kernels/conv/conv_ap.h"
#include "wgrad_core.h"
#include "isa/intmath.h"

#define WG_NBUF NX_WG_BUFFERS
#define WG_MAX_PS 8
#define NX_WG_MAX_LANES 64
/* Pieces per lane of a batch: pieces of a few partitions let the greedy
 * spread end every lane within a small piece of the others (with 2, the
 * first ResNet-50 fp32 item put 15% over the mean on some lanes and the PE
 * waited for them; the bench's cases gain 1-12% from 2 to 8 pieces, under
 * 1% past it). */
#define WG_PIECES_PER_LANE 8.0

/* floor division for a possibly negative numerator, b > 0 */

/* An item's loads, gathered before they are spread over the lanes. */
typedef struct wg_xfer {
    nx_operand dst, src;
    double row_work; /* byte equivalents per partition: bytes over the runs' efficiency */
} wg_xfer;
typedef struct wg_batch {
    wg_xfer x[2 * NX_MAX_PARTITIONS];
    uint32_t n;
    double total;
} wg_batch;

typedef struct wg_state {
    nx_kctx *k;
    const nx_wg_problem *p;
    const nx_wg_plan *pl;
    const nx_geometry *geo;
    nx_tile grad[WG_NBUF], img[WG_NBUF], ps[WG_MAX_PS], fold_ps[2], ident, mask[2], ebuf[2], qbuf[2], stage[2];
    uint32_t ngrad, nimg, nps, nfold_ps, nmask, nebuf, nqbuf, nstage;
    int have_ident;
    uint32_t mask_cot[2];
    double lane_load[NX_WG_MAX_LANES];  /* byte equivalents of loads queued per lane */
    double lane_store[NX_WG_MAX_LANES]; /* ... of stores */
    wg_batch batch;                     /* the item's loads being gathered */
    uint32_t prev_block_nt;             /* items of the block before the one being loaded */
    uint64_t n_fold_ps, n_ebuf, n_stage, n_copy;
} wg_state;

/* One work item: co tile t of pass q on one (ci tile, row block, column
 * block); the first item of each block (t == t0) loads the image. */
typedef struct wg_item {
    uint32_t q, ct, hb, wb, t;
    nx_wg_pass ps;
    uint64_t co0;
    uint32_t cot;
    uint64_t ci0;
    uint32_t cin;      /* features of the ci tile */
    int64_t hf0;       /* first filter row of replica block 0 */
    uint32_t Rl;       /* replica blocks with live filter rows */
    int64_t Bh;        /* filter rows per replica block (nx_wg_block_rows) */
    int64_t vb_last;   /* live rows of the last live block */
    int64_t wf0, nwf;  /* filter columns */
    int64_t ix0, nxi;  /* image columns loaded (nxi 0: nothing to do) */
    int64_t rb;        /* image rows per replica block */
    uint32_t K;        /* contraction partitions */
    int first_of_pass, last_of_pass, new_block;
    uint32_t nsplit;   /* chunks of the image batch its image and matmuls are cut into (first_split) */
    uint64_t gbuf, ibuf; /* buffer sets: filter by item, image by block */
} wg_item;

/* ---- DMA ---- */

/* A run's DMA efficiency on the context's machine (a zero run counts as one byte). */
static double run_eff(const wg_state *s, uint64_t run_bytes) {
    return nx_machine_dma_efficiency(nx_kctx_machine(s->k), (double)(run_bytes ? run_bytes : 1));
}

static int batch_add(const wg_state *s, wg_batch *b, const nx_operand *dst, const nx_operand *src,
                     uint64_t run_bytes, nx_error *err) {
    if (b->n == sizeof b->x / sizeof b->x[0])
        return nx_fail(err, "%s: more than %u transfers in one batch", s->p->leaf, b->n);
    wg_xfer *x = &b->x[b->n++];
    x->dst = *dst;
    x->src = *src;
    x->row_work = (double)nx_operand_free_elems(dst) * (double)s->p->es / run_eff(s, run_bytes);
    b->total += x->row_work * dst->partition_count;
    return 0;
}

/* Emits a batch of transfers (an item's loads, or a fold chunk's stores)
 * over every lane of the context (both queues of each DMA engine, so one
 * queue's fixed cost hides under the other's data) so that they end
 * together on every lane: the next item's loads queue behind them, and a
 * lane that finished early would start the next item while the others
 * still serve this one, sharing their DMA engine. Each transfer is cut by
 * partitions into pieces of about 1 / WG_PIECES_PER_LANE of a lane's share
 * of the batch; the pieces go to the lanes with the least work queued
 * (`tally`: byte equivalents, loads and stores counted apart), largest
 * first, and are issued in the order the transfers were added. */
static int batch_flush(wg_state *s, wg_batch *b, double *tally, nx_error *err) {
    uint32_t lanes = nx_kctx_lanes(s->k);
    if (lanes > NX_WG_MAX_LANES) lanes = NX_WG_MAX_LANES;
    double target = b->total / (WG_PIECES_PER_LANE * lanes);
    /* at most WG_PIECES_PER_LANE lanes + one piece per transfer */
    enum { MAXP = 2 * NX_MAX_PARTITIONS + (uint32_t)(WG_PIECES_PER_LANE + 1) * NX_WG_MAX_LANES };
    uint32_t np = 0;
    struct piece {
        uint16_t x, r0, n;
        uint8_t lane;
        double work;
    } pc[MAXP];
    for (uint32_t i = 0; i < b->n; i++) {
        uint32_t rows = b->x[i].dst.partition_count;
        uint32_t k = target > 0 ? (uint32_t)ceil(b->x[i].row_work * rows / target) : 1;
        if (k < 1) k = 1;
        if (k > rows) k = rows;
        if (np + k > MAXP) return nx_fail(err, "%s: more than %u transfer pieces in one batch", s->p->leaf, MAXP);
        uint32_t each = rows / k, extra = rows % k, r0 = 0;
        for (uint32_t j = 0; j < k; j++) {
            uint32_t n = each + (j < extra);
            pc[np].x = (uint16_t)i, pc[np].r0 = (uint16_t)r0, pc[np].n = (uint16_t)n;
            pc[np].work = b->x[i].row_work * n;
            np++;
            r0 += n;
        }
    }
    /* largest first onto the least loaded lane */
    uint32_t order[MAXP];
    for (uint32_t i = 0; i < np; i++) order[i] = i;
    for (uint32_t i = 1; i < np; i++) /* insertion sort, descending work */
        for (uint32_t j = i; j > 0 && pc[order[j]].work > pc[order[j - 1]].work; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (uint32_t i = 0; i < np; i++) {
        uint32_t best = 0;
        for (uint32_t l = 1; l < lanes; l++)
            if (tally[l] < tally[best]) best = l;
        tally[best] += pc[order[i]].work;
        pc[order[i]].lane = (uint8_t)best;
    }
    for (uint32_t i = 0; i < np; i++) {
        const wg_xfer *x = &b->x[pc[i].x];
        nx_operand d = nx_operand_rows(&x->dst, pc[i].r0, pc[i].n), sr = nx_operand_rows(&x->src, pc[i].r0, pc[i].n);
        if (nx_kctx_dma_on(s->k, pc[i].lane, &d, &sr, err) != 0) return -1;
    }
    b->n = 0;
    b->total = 0;
    return 0;
}

/* memset of `outer` runs of `inner` elements, `stride` apart, from element
 * `off` of partitions [0, np) of tile t, in instructions within the
 * compute engines' free-size limit. */
static int wg_zero(wg_state *s, nx_engine e, const nx_tile *t, uint32_t np, uint64_t off, uint64_t outer,
                   uint64_t stride, uint64_t inner, nx_error *err) {
    uint64_t lim = s->geo->sbuf_free_elems_max;
    if (outer == 0 || inner == 0) return 0;
    if (inner > lim) { /* split each run */
        for (uint64_t o = 0; o < outer; o++)
            for (uint64_t i = 0; i < inner; i += lim) {
                int32_t one = 1;
                uint32_t n = (uint32_t)nx_min_i64((int64_t)lim, (int64_t)(inner - i));
                nx_operand v = nx_tile_view(t, (nx_dtype)t->dtype, 0, np, off + o * stride + i, 1, &one, &n);
                if (nx_kctx_memset(s->k, e, &v, 0.0, err) != 0) return -1;
            }
        return 0;
    }
    uint64_t per = lim / inner;
    for (uint64_t o = 0; o < outer; o += per) {
        int32_t st[2] = {(int32_t)stride, 1};
        uint32_t ct[2] = {(uint32_t)nx_min_i64((int64_t)per, (int64_t)(outer - o)), (uint32_t)inner};
        nx_operand v = nx_conv_tile_view(t, (nx_dtype)t->dtype, 0, np, off + o * stride, 2, st, ct);
        if (nx_kctx_memset(s->k, e, &v, 0.0, err) != 0) return -1;
    }
    return 0;
}

/* ---- items ---- */

/* The item iterator: passes, then ci tiles, row blocks, column blocks and
 * the pass's co tiles innermost. */
typedef struct wg_cursor {
    uint32_t q, ct, hb, wb, t;
    uint64_t items, blocks;
    int done;
} wg_cursor;

static void item_fill(const wg_state *s, const wg_cursor *c, wg_item *it) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    memset(it, 0, sizeof *it);
    it->q = c->q, it->ct = c->ct, it->hb = c->hb, it->wb = c->wb, it->t = c->t;
    nx_wg_pass_get(p, pl, c->q, &it->ps);
    nx_wg_acc a;
    nx_wg_acc_get(p, pl, it->ps.t0 + c->t, it->ps.a0, &a);
    it->co0 = a.co0, it->cot = a.cot;
    it->first_of_pass = c->ct == 0 && c->hb == 0 && c->wb == 0 && c->t == 0;
    it->last_of_pass = c->ct + 1 == pl->nct && c->hb + 1 == pl->nhb && c->wb + 1 == pl->nwb && c->t + 1 == it->ps.nt;
    it->new_block = c->t == 0;
    it->gbuf = c->items % WG_NBUF;
    it->ibuf = c->blocks % WG_NBUF;
    it->ci0 = (uint64_t)c->ct * pl->cit;
    it->cin = (uint32_t)nx_min_i64(pl->cit, (int64_t)(p->CI - it->ci0));
    nx_wg_rows rows;
    nx_wg_block_rows(p, pl, c->hb, &rows);
    it->hf0 = rows.hf0, it->Bh = rows.Bh, it->Rl = rows.Rl, it->vb_last = rows.vb_last;
    it->wf0 = (int64_t)c->wb * pl->WFb;
    it->nwf = nx_min_i64(pl->WFb, p->WF - it->wf0);
    nx_wg_img_cols(p, it->ps.k1lo, it->ps.k1hi, it->wf0, it->nwf, &it->ix0, &it->nxi);
    it->rb = nx_wg_rows_band(p, it->Bh, it->ps.k0hi - it->ps.k0lo);
    it->K = (it->Rl - 1) * pl->cit + it->cin;
    it->nsplit = 1;
}

/* Batch [*lo, *hi) of chunk i of item it's nsplit chunks of the pass's batch. */
static void n_chunk(const wg_item *it, uint32_t i, int64_t *lo, int64_t *hi) {
    *lo = it->ps.n0 + it->ps.nn * i / it->nsplit;
    *hi = it->ps.n0 + it->ps.nn * (i + 1) / it->nsplit;
}

/* The kernel's first item has nothing to hide its loads behind: the PE
 * waits for its filter and its whole image. Cut into chunks of the image
 * batch, loaded one after the other and swept one after the other (chunk
 * outermost, the stationary loaded again per chunk, in the background of
 * the multiply before it), the PE starts once the filter and the first
 * chunk are in. Chunks keep every full-width multiply at MM_INIT_LATENCY
 * moving elements or more (docs/parts/hardware.md), so the cut costs no PE
 * time; only when every accumulator of the pass spans the pass's batch. */
static uint32_t first_split(const wg_state *s, const wg_item *it) {
    uint64_t init = nx_kctx_machine(s->k)->pe_mm_init_latency, per_n = 0;
    for (uint32_t j = 0; j < it->ps.na; j++) {
        nx_wg_acc a;
        nx_wg_acc_get(s->p, s->pl, it->ps.t0 + it->t, it->ps.a0 + j, &a);
        if (a.n0 != it->ps.n0 || a.nn != it->ps.nn) return 1;
        uint64_t e = (uint64_t)(a.K0c * a.K1c);
        if (j == 0 || e < per_n) per_n = e;
    }
    uint64_t c = per_n ? (init + per_n - 1) / per_n : 1;
    uint64_t n = (uint64_t)it->ps.nn / (c ? c : 1);
    return n > 1 ? (uint32_t)n : 1;
}

static void cursor_next(const wg_state *s, wg_cursor *c) {
    const nx_wg_plan *pl = s->pl;
    nx_wg_pass ps;
    nx_wg_pass_get(s->p, pl, c->q, &ps);
    c->items++;
    if (++c->t < ps.nt) return;
    c->t = 0;
    c->blocks++;
    if (++c->wb < pl->nwb) return;
    c->wb = 0;
    if (++c->hb < pl->nhb) return;
    c->hb = 0;
    if (++c->ct < pl->nct) return;
    c->ct = 0;
    if (++c->q < pl->npass) return;
    c->done = 1;
}

/* The first item of the block after the one cursor c is in (c points at
 * the item after the current one): 0 if there is none. */
static int next_block(const wg_state *s, const wg_cursor *c, wg_item *out) {
    wg_cursor k = *c;
    while (!k.done && k.t != 0) cursor_next(s, &k);
    if (k.done) return 0;
    item_fill(s, &k, out);
    return 1;
}

/* First image row replica block r of the item holds. */
static int64_t band_base(const wg_state *s, const wg_item *it, uint32_t r) {
    const nx_wg_problem *p = s->p;
    return it->ps.k0lo * p->sy + (it->hf0 + (int64_t)r * it->Bh) * p->rdy - p->ply;
}

/* The co tile's filter rows of every live replica block: runs of vb x WF
 * (whole rows) per co; dead rows of the last live block read as zero (the
 * memset covers every partition, the other blocks' loads rewrite theirs). */
static int load_filter(wg_state *s, const wg_item *it, wg_batch *bt, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    const nx_tile *gt = &s->grad[it->gbuf];
    int64_t WFb = pl->WFb, cot = it->cot;
    if (it->vb_last < it->Bh &&
        wg_zero(s, NX_ENG_DVE, gt, it->K, (uint64_t)(it->vb_last * WFb), (uint64_t)cot, (uint64_t)pl->B * WFb,
                (uint64_t)((it->Bh - it->vb_last) * WFb), err) != 0)
        return -1;
    for (uint32_t r = 0; r < it->Rl; r++) {
        int64_t hf = it->hf0 + (int64_t)r * it->Bh, vb = r + 1 == it->Rl ? it->vb_last : it->Bh;
        int32_t ds[3] = {(int32_t)(pl->B * WFb), (int32_t)WFb, 1};
        uint32_t dc[3] = {(uint32_t)cot, (uint32_t)vb, (uint32_t)it->nwf};
        nx_operand dst = nx_conv_tile_view(gt, p->dt, r * pl->cit, it->cin, 0, 3, ds, dc);
        int32_t ss[3] = {(int32_t)(p->HF * p->WF), (int32_t)p->WF, 1};
        uint64_t el = ((it->ci0 * p->CO + it->co0) * (uint64_t)p->HF + (uint64_t)hf) * (uint64_t)p->WF +
                      (uint64_t)it->wf0;
        nx_operand src = nx_conv_hbm_view(p->dt, p->filt + el * p->es, it->cin,
                                          (int64_t)(p->CO * (uint64_t)(p->HF * p->WF)), 3, ss, dc);
        uint64_t run = (uint64_t)(it->nwf == p->WF && it->nwf == WFb ? vb * it->nwf : it->nwf) * p->es;
        if (batch_add(s, bt, &dst, &src, run, err) != 0) return -1;
    }
    return 0;
}

/* The image rows each live replica block meets, batch [n_lo, n_hi) of the
 * pass's [n0, n0 + nn), columns [ix0, ix0 + nxi); rows outside the image
 * for some block are zeroed on every partition (and batch) first. */
static int load_image(wg_state *s, const wg_item *it, uint32_t r_lo, uint32_t r_hi, int64_t n_lo, int64_t n_hi,
                      wg_batch *bt, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    const nx_tile *mt = &s->img[it->ibuf];
    uint64_t plane = (uint64_t)(it->rb * it->nxi);
    /* once per block, before any of its loads: the zeros span rows some
     * other replica block loads */
    if (r_lo == 0 && n_lo == it->ps.n0) {
        int64_t zlo = 0, zhi = it->rb;
        for (uint32_t r = 0; r < it->Rl; r++) {
            zlo = nx_max_i64(zlo, -band_base(s, it, r));
            zhi = nx_min_i64(zhi, p->H - band_base(s, it, r));
        }
        zlo = nx_min_i64(zlo, it->rb);
        zhi = nx_max_i64(zhi, zlo);
        if (zlo > 0 &&
            wg_zero(s, NX_ENG_POOL, mt, it->K, 0, (uint64_t)it->ps.nn, plane, (uint64_t)(zlo * it->nxi), err))
            return -1;
        if (zhi < it->rb && wg_zero(s, NX_ENG_POOL, mt, it->K, (uint64_t)(zhi * it->nxi), (uint64_t)it->ps.nn, plane,
                                    (uint64_t)((it->rb - zhi) * it->nxi), err))
            return -1;
    }
    for (uint32_t r = r_lo; r < r_hi && r < it->Rl; r++) {
        int64_t base = band_base(s, it, r), j0 = nx_max_i64(0, -base), j1 = nx_min_i64(it->rb, p->H - base);
        if (j1 <= j0) continue;
        int32_t ds[3] = {(int32_t)plane, (int32_t)it->nxi, 1};
        uint32_t dc[3] = {(uint32_t)(n_hi - n_lo), (uint32_t)(j1 - j0), (uint32_t)it->nxi};
        nx_operand dst = nx_conv_tile_view(mt, p->dt, r * pl->cit, it->cin,
                                           (uint64_t)(n_lo - it->ps.n0) * plane + (uint64_t)(j0 * it->nxi), 3, ds, dc);
        int32_t ss[3] = {(int32_t)(p->H * p->W), (int32_t)p->W, 1};
        uint64_t el = ((it->ci0 * p->N + (uint64_t)n_lo) * (uint64_t)p->H + (uint64_t)(base + j0)) *
                          (uint64_t)p->W + (uint64_t)it->ix0;
        nx_operand src = nx_conv_hbm_view(p->dt, p->img + el * p->es, it->cin,
                                          (int64_t)(p->N * (uint64_t)(p->H * p->W)), 3, ss, dc);
        uint64_t run = (uint64_t)(it->nxi == p->W ? (j1 - j0) * it->nxi : it->nxi) * p->es;
        if (batch_add(s, bt, &dst, &src, run, err) != 0) return -1;
    }
    return 0;
}

/* Item `it`'s loads: its filter rows, then image rows. Items t = 1 .. nt-1
 * of a block (nt > 1) spread the next block's image (`next`: that block's
 * first item, or NULL) between them, replica blocks [(t-1) Rl / (nt-1),
 * t Rl / (nt-1)), so the loads of a block's items are about as long and the
 * image is in place before the next block starts; item 0 carries none (the
 * buffer it would write is read by the item just before). A block after a
 * one-item block (and the first block) loads its own image with its first
 * item. The filter goes first: the image's zero rows (POOL) would hold up
 * the SP, which issues transfers in order. */
static int emit_load(wg_state *s, const wg_item *it, const wg_item *next, int first, nx_error *err) {
    wg_batch *bt = &s->batch;
    uint32_t nt = it->ps.nt, t = it->t;
    if (it->nxi > 0 && load_filter(s, it, bt, err) != 0) return -1;
    if (it->new_block) {
        /* the first block, and one after a one-item block, load their own;
         * an item cut into batch chunks loads them in batches of their own
         * (each ends together on every lane, the first with the filter) */
        if ((first || s->prev_block_nt == 1) && it->nxi > 0)
            for (uint32_t i = 0; i < it->nsplit; i++) {
                int64_t lo, hi;
                n_chunk(it, i, &lo, &hi);
                if (load_image(s, it, 0, it->Rl, lo, hi, bt, err) != 0) return -1;
                if (i + 1 < it->nsplit && batch_flush(s, bt, s->lane_load, err) != 0) return -1;
            }
        s->prev_block_nt = nt;
    }
    if (nt > 1 && t >= 1 && next && next->nxi > 0) {
        uint32_t lo = (t - 1) * next->Rl / (nt - 1), hi = t * next->Rl / (nt - 1);
        if ((t == 1 || lo < hi) &&
            load_image(s, next, lo, hi, next->ps.n0, next->ps.n0 + next->ps.nn, bt, err) != 0)
            return -1;
    }
    return batch_flush(s, bt, s->lane_load, err);
}

/* ---- the contraction ---- */

/* PSUM tile of accumulator j of the pass's co tile t. */
static const nx_tile *acc_tile(const wg_state *s, uint32_t q, uint32_t t, uint32_t j) {
    uint32_t per = s->pl->T * s->pl->A, sets = s->pl->nps / per;
    return &s->ps[(q % (sets ? sets : 1)) * per + t * s->pl->A + j];
}

static int zero_accumulators(wg_state *s, const wg_item *it, nx_error *err) {
    for (uint32_t t = 0; t < it->ps.nt; t++)
        for (uint32_t j = 0; j < it->ps.na; j++) {
            nx_wg_acc a;
            nx_wg_acc_get(s->p, s->pl, it->ps.t0 + t, it->ps.a0 + j, &a);
            nx_operand v =
                nx_tile_view(acc_tile(s, it->q, t, j), NX_DT_FP32, 0, a.M, 0, 1, (const int32_t[]){1}, &a.F);
            if (nx_kctx_memset(s->k, NX_ENG_DVE, &v, 0.0, err) != 0) return -1;
        }
    return 0;
}

/* k1e in [lo, hi) of accumulator a whose image column at filter column
 * wf lies in the image. */
static void k1_range(const nx_wg_problem *p, const nx_wg_acc *a, int64_t wf, int64_t *lo, int64_t *hi) {
    int64_t c0 = wf * p->rdx - p->plx;                     /* column of k1e = 0 */
    int64_t l = c0 >= 0 ? 0 : nx_cdiv_i64(-c0, p->sx);           /* k1e sx + c0 >= 0 */
    int64_t h = nx_floor_div_i64(p->W - 1 - c0, p->sx) + 1;           /* k1e sx + c0 <= W - 1 */
    *lo = nx_max_i64(l, a->k1a);
    *hi = nx_min_i64(h, a->k1a + a->K1c);
}

static int emit_matmuls(wg_state *s, const wg_item *it, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    if (it->nxi == 0) return 0;
    nx_wg_acc acc[WG_MAX_PS];
    for (uint32_t j = 0; j < it->ps.na; j++) nx_wg_acc_get(p, pl, it->ps.t0 + it->t, it->ps.a0 + j, &acc[j]);
    int64_t WFb = pl->WFb, cot = it->cot;
    int64_t bmax = it->Rl == 1 ? it->vb_last : it->Bh; /* rows past it are dead in every block */
    for (uint32_t ch = 0; ch < it->nsplit; ch++)
    for (int64_t b = 0; b < bmax; b += pl->Gy)
        for (int64_t x = 0; x < it->nwf; x += pl->Gx) {
            uint32_t gxv = (uint32_t)nx_min_i64(pl->Gx, it->nwf - x);
            uint32_t Mv = gxv * pl->Gy * (uint32_t)cot;
            int loaded = 0;
            for (uint32_t j = 0; j < it->ps.na; j++) {
                const nx_wg_acc *a = &acc[j];
                int64_t lo, hi, n_lo = a->n0, n_hi = a->n0 + a->nn;
                k1_range(p, a, it->wf0 + x, &lo, &hi);
                if (it->nsplit > 1) n_chunk(it, ch, &n_lo, &n_hi); /* first_split: a's batch is the pass's */
                if (hi <= lo) continue;
                if (!loaded) {
                    int32_t st[3] = {1, (int32_t)WFb, (int32_t)(pl->B * WFb)};
                    uint32_t sc[3] = {gxv, pl->Gy, (uint32_t)cot};
                    nx_operand w = nx_conv_tile_view(&s->grad[it->gbuf], p->dt, 0, it->K, (uint64_t)(b * WFb + x), 3, st, sc);
                    if (nx_kctx_load_stationary(s->k, &w, err) != 0) return -1;
                    loaded = 1;
                }
                int64_t col = lo * p->sx + (it->wf0 + x) * p->rdx - p->plx;
                uint64_t off = (uint64_t)((n_lo - it->ps.n0) * it->rb * it->nxi +
                                          (b * p->rdy + (a->k0a - it->ps.k0lo) * p->sy) * it->nxi + (col - it->ix0));
                int32_t ms[3] = {(int32_t)(p->sy * it->nxi), (int32_t)p->sx, (int32_t)(it->rb * it->nxi)};
                uint32_t mc[3] = {(uint32_t)a->K0c, (uint32_t)(hi - lo), (uint32_t)(n_hi - n_lo)};
                nx_operand mv = nx_conv_tile_view(&s->img[it->ibuf], p->dt, 0, it->K, off, 3, ms, mc);
                int32_t dst_s[3] = {(int32_t)(a->K1c * a->nn), (int32_t)a->nn, 1};
                nx_operand d = nx_conv_tile_view(acc_tile(s, it->q, it->t, j), NX_DT_FP32, 0, Mv,
                                                 (uint64_t)((lo - a->k1a) * a->nn + (n_lo - a->n0)), 3, dst_s, mc);
                if (nx_kctx_multiply_moving(s->k, &d, &mv, 1, err) != 0) return -1;
            }
        }
    return 0;
}

/* ---- the fold ---- */

/* Stores rows [0, rows) of the stage tile (row-major over the chunk dims
 * cnt[0..nd), output row strides hs[]) from output row `row0`: one transfer
 * per run of consecutive output rows. */
static int store_rows(wg_state *s, const nx_tile *stage, uint32_t cot, uint64_t co0, int64_t row0, int nd,
                      const int64_t *cnt, const int64_t *hs, nx_error *err) {
    const nx_wg_problem *p = s->p;
    /* merge the inner dims that continue each other */
    int64_t c[3], h[3];
    int n = 0;
    for (int d = 0; d < nd; d++)
        if (cnt[d] > 1) c[n] = cnt[d], h[n] = hs[d], n++;
    while (n >= 2 && h[n - 2] == h[n - 1] * c[n - 1]) {
        c[n - 2] *= c[n - 1];
        h[n - 2] = h[n - 1];
        n--;
    }
    int64_t run = n ? c[n - 1] : 1, rstride = n ? h[n - 1] : 1, outer = 1;
    for (int d = 0; d < n - 1; d++) outer *= c[d];
    for (int64_t o = 0; o < outer; o++) {
        int64_t row = row0, rem = o;
        for (int d = n - 2; d >= 0; d--) {
            row += rem % c[d] * h[d];
            rem /= c[d];
        }
        uint32_t p0 = (uint32_t)(o * run);
        nx_operand src = nx_tile_view(stage, p->dt, p0, (uint32_t)run, 0, 1, (const int32_t[]){1}, &cot);
        uint64_t el = (uint64_t)row * p->CO + co0;
        nx_operand dst = nx_ap(NX_OPK_HBM, p->dt, 0, (uint32_t)run, (int32_t)(rstride * (int64_t)p->CO),
                               p->out + el * p->es, 1, (const int32_t[]){1}, &cot);
        if (batch_add(s, &s->batch, &dst, &src, cot * p->es, err) != 0) return -1;
    }
    return batch_flush(s, &s->batch, s->lane_store, err);
}

/* Folds one chunk of output rows from the SBUF copy `src` [M, ...] of an
 * accumulator: dims (k0, k1[, n]) of counts cnt[] at element strides st[]
 * from element `off` (unshifted); groups add with their shifts sh_g = (gy
 * ry, gx rx) x (st[0], st[1]). Then rounds to the output dtype and stores. */
static int fold_chunk(wg_state *s, const nx_tile *src, uint32_t M, uint32_t cot, uint64_t co0, uint64_t off, int nd,
                      const int32_t *st, const uint32_t *cnt, int64_t row0, const int64_t *hs, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    uint32_t rows = 1;
    for (int d = 0; d < nd; d++) rows *= cnt[d];
    const nx_tile *ps = &s->fold_ps[s->n_fold_ps++ % s->nfold_ps];
    nx_operand d = nx_tile_view(ps, NX_DT_FP32, 0, rows, 0, 1, (const int32_t[]){1}, &cot);
    if (pl->Gx * pl->Gy == 1) {
        /* a bit-exact PE transpose */
        nx_operand v = nx_conv_tile_view(src, NX_DT_FP32, 0, M, off, (uint32_t)nd, st, cnt);
        if (nx_kctx_transpose(s->k, NX_ENG_PE, &d, &v, err) != 0) return -1;
    } else {
        uint32_t g = 0;
        for (uint32_t gx = 0; gx < pl->Gx; gx++)
            for (uint32_t gy = 0; gy < pl->Gy; gy++, g++) {
                uint64_t o = off + (uint64_t)((int64_t)gy * pl->ry * st[0] + (int64_t)gx * pl->rx * st[1]);
                nx_operand w = nx_conv_tile_view(src, NX_DT_FP32, 0, M, o, (uint32_t)nd, st, cnt);
                if (nx_kctx_load_stationary(s->k, &w, err) != 0) return -1;
                nx_operand sel = nx_tile_view(&s->ident, NX_DT_FP32, 0, M, (uint64_t)g * cot, 1,
                                              (const int32_t[]){1}, &cot);
                if (nx_kctx_multiply_moving(s->k, &d, &sel, g > 0, err) != 0) return -1;
            }
    }
    const nx_tile *stg = &s->stage[s->n_stage++ % s->nstage];
    nx_operand to = nx_tile_view(stg, p->dt, 0, rows, 0, 1, (const int32_t[]){1}, &cot);
    if (nx_kctx_tensor_copy(s->k, s->n_copy++ % 2 ? NX_ENG_DVE : NX_ENG_ACT, &to, &d, err) != 0) return -1;
    int64_t c64[3];
    for (int i = 0; i < nd; i++) c64[i] = cnt[i];
    return store_rows(s, stg, cot, co0, row0, nd, c64, hs, err);
}

static const nx_tile *mask_for(const wg_state *s, uint32_t cot) {
    for (uint32_t i = 0; i < s->nmask; i++)
        if (s->mask_cot[i] == cot) return &s->mask[i];
    return NULL;
}

static int fold_acc(wg_state *s, const nx_wg_pass *ps, uint32_t q, uint32_t t, uint32_t j, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    nx_wg_acc a;
    nx_wg_acc_get(p, pl, ps->t0 + t, ps->a0 + j, &a);
    const nx_tile *acc = acc_tile(s, q, t, j);
    uint32_t cot = a.cot, M = a.M, Mmax = pl->Mmax;
    const nx_tile *e = &s->ebuf[s->n_ebuf % s->nebuf];
    if (p->kind == NX_WG_DENSE) {
        /* the accumulator to SBUF (fp32) */
        nx_operand from = nx_tile_view(acc, NX_DT_FP32, 0, M, 0, 1, (const int32_t[]){1}, &a.F);
        nx_operand to = nx_tile_view(e, NX_DT_FP32, 0, M, 0, 1, (const int32_t[]){1}, &a.F);
        if (nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &to, &from, err) != 0) return -1;
        s->n_ebuf++;
        /* output rows (k0, k1, n), chunks of at most Mmax */
        int64_t nk0 = a.nk0, nk1 = a.nk1, nn = a.nn;
        int64_t hs[3] = {p->K1 * (int64_t)p->N, (int64_t)p->N, 1};
        int32_t st[3] = {(int32_t)(a.K1c * nn), (int32_t)nn, 1};
        for (int64_t i0 = 0; i0 < nk0;) {
            int64_t c0 = 1, c1 = nk1, c2 = nn;
            if (nk1 * nn <= Mmax) c0 = nx_min_i64(nk0 - i0, Mmax / (nk1 * nn));
            for (int64_t i1 = 0; i1 < nk1; i1 += c1) {
                if (nk1 * nn > Mmax) c1 = nn <= Mmax ? nx_min_i64(nk1 - i1, Mmax / nn) : 1;
                for (int64_t i2 = 0; i2 < nn; i2 += c2) {
                    if (nn > Mmax) c2 = nx_min_i64(nn - i2, Mmax);
                    uint32_t cnt[3] = {(uint32_t)c0, (uint32_t)c1, (uint32_t)c2};
                    uint64_t off = (uint64_t)((i0 * a.K1c + i1) * nn + i2);
                    int64_t row0 = ((a.k0a + i0) * p->K1 + a.k1a + i1) * (int64_t)p->N + a.n0 + i2;
                    if (fold_chunk(s, e, M, cot, a.co0, off, 3, st, cnt, row0, hs, err) != 0) return -1;
                }
            }
            i0 += c0;
        }
        return 0;
    }
    /* depthwise: keep n == c (select against the mask), reduce n */
    const nx_tile *qb = &s->qbuf[s->n_ebuf % s->nqbuf];
    uint32_t F2 = (uint32_t)(a.K0c * a.K1c);
    nx_operand qv = nx_tile_view(qb, NX_DT_FP32, 0, M, 0, 1, (const int32_t[]){1}, &F2);
    nx_operand from = nx_tile_view(acc, NX_DT_FP32, 0, M, 0, 1, (const int32_t[]){1}, &a.F);
    if (a.nn == 1) {
        if (nx_kctx_tensor_copy(s->k, NX_ENG_ACT, &qv, &from, err) != 0) return -1;
    } else {
        const nx_tile *mk = mask_for(s, cot);
        if (!mk) return nx_fail(err, "%s: no mask for a tile of %u channels", p->leaf, cot);
        int32_t ps3[3] = {0, 0, 1};
        uint32_t pc3[3] = {(uint32_t)a.K0c, (uint32_t)a.K1c, (uint32_t)a.nn};
        nx_operand pred = nx_tile_view(mk, NX_DT_FP32, 0, M, 0, 3, ps3, pc3);
        nx_operand to = nx_tile_view(e, NX_DT_FP32, 0, M, 0, 1, (const int32_t[]){1}, &a.F);
        nx_insn sel = nx_insn_make(NX_OP_SELECT);
        sel.op[0] = to;
        sel.op[1] = pred;
        sel.op[2] = from;
        sel.op[3] = nx_imm(0.0, NX_DT_FP32);
        if (nx_kctx_emit(s->k, NX_ENG_DVE, &sel, err) != 0) return -1;
        int32_t rs[2] = {(int32_t)a.nn, 1};
        uint32_t rc[2] = {F2, (uint32_t)a.nn};
        nx_operand rin = nx_tile_view(e, NX_DT_FP32, 0, M, 0, 2, rs, rc);
        nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
        red.alu0 = NX_ALU_ADD;
        red.op[0] = qv;
        red.op[1] = rin;
        red.iparam[0] = 2; /* axes: dim 1 (n) */
        if (nx_kctx_emit(s->k, NX_ENG_DVE, &red, err) != 0) return -1;
    }
    s->n_ebuf++;
    int64_t nk0 = a.nk0, nk1 = a.nk1;
    int64_t hs[2] = {p->K1, 1};
    int32_t st[2] = {(int32_t)a.K1c, 1};
    for (int64_t i0 = 0; i0 < nk0;) {
        int64_t c0 = nk1 <= Mmax ? nx_min_i64(nk0 - i0, Mmax / nk1) : 1, c1 = nk1 <= Mmax ? nk1 : Mmax;
        for (int64_t i1 = 0; i1 < nk1; i1 += c1) {
            uint32_t cnt[2] = {(uint32_t)c0, (uint32_t)nx_min_i64(c1, nk1 - i1)};
            uint64_t off = (uint64_t)(i0 * a.K1c + i1);
            int64_t row0 = (a.k0a + i0) * p->K1 + a.k1a + i1;
            if (fold_chunk(s, qb, M, cot, a.co0, off, 2, st, cnt, row0, hs, err) != 0) return -1;
        }
        i0 += c0;
    }
    return 0;
}

static int emit_fold(wg_state *s, uint32_t q, nx_error *err) {
    nx_wg_pass ps;
    nx_wg_pass_get(s->p, s->pl, q, &ps);
    for (uint32_t t = 0; t < ps.nt; t++)
        for (uint32_t j = 0; j < ps.na; j++)
            if (fold_acc(s, &ps, q, t, j, err) != 0) return -1;
    return 0;
}

/* ---- set-up ---- */

/* ident[p, j] = (p == j) as fp32 (iota of p - j on POOL, compared on DVE);
 * masks[p, n] = sum_g ident[p, g cot + n] = (p mod cot == n). */
static int build_ident_masks(wg_state *s, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    uint32_t G = pl->Gx * pl->Gy, Mm = pl->Mmax;
    int need_masks = p->kind == NX_WG_DEPTHWISE && pl->cot > 1;
    if (G == 1 && !need_masks) return 0;
    if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_ident", NX_DT_FP32, Mm, Mm, &s->ident, err) != 0) return -1;
    s->have_ident = 1;
    int32_t neg = -1;
    nx_operand all = nx_tile_ap(&s->ident);
    nx_operand pat = nx_pattern(0, 1, Mm, 1, &neg, &Mm), zero = nx_imm(0.0, NX_DT_FP32);
    if (nx_kctx_iota(s->k, &all, &pat, err) != 0 ||
        nx_kctx_tensor_scalar(s->k, NX_ENG_DVE, &all, &all, NX_ALU_IS_EQUAL, &zero, NX_ALU_BYPASS, NULL, err) != 0)
        return -1;
    if (!need_masks) return 0;
    uint32_t cots[2] = {pl->cot, (uint32_t)(p->N - (uint64_t)(pl->ncot - 1) * pl->cot)};
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t c = cots[i];
        if (c <= 1 || (i == 1 && c == cots[0])) continue;
        nx_tile *m = &s->mask[s->nmask];
        if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_mask", NX_DT_FP32, G * c, c, m, err) != 0) return -1;
        s->mask_cot[s->nmask++] = c;
        int32_t rs[2] = {1, (int32_t)c};
        uint32_t rc[2] = {c, G};
        nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
        red.alu0 = NX_ALU_ADD;
        red.op[0] = nx_tile_ap(m);
        red.op[1] = nx_tile_view(&s->ident, NX_DT_FP32, 0, G * c, 0, 2, rs, rc);
        red.iparam[0] = 2; /* axes: dim 1 (the groups) */
        if (nx_kctx_emit(s->k, NX_ENG_DVE, &red, err) != 0) return -1;
    }
    return 0;
}

static int alloc_all(wg_state *s, nx_error *err) {
    const nx_wg_problem *p = s->p;
    const nx_wg_plan *pl = s->pl;
    uint32_t rows = pl->R * pl->cit, Mm = pl->Mmax;
    for (; s->ngrad < WG_NBUF; s->ngrad++)
        if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_filter", p->dt, rows, pl->grad_elems, &s->grad[s->ngrad], err) != 0)
            return -1;
    for (; s->nimg < WG_NBUF; s->nimg++)
        if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_image", p->dt, rows, pl->img_elems, &s->img[s->nimg], err) != 0)
            return -1;
    if (pl->nps > WG_MAX_PS) return nx_fail(err, "%s: %u accumulators exceed the PSUM tiles kept", p->leaf, pl->nps);
    for (; s->nps < pl->nps; s->nps++)
        if (nx_kctx_alloc(s->k, NX_OPK_PSUM, "wg_acc", NX_DT_FP32, Mm, pl->Fmax, &s->ps[s->nps], err) != 0) return -1;
    for (; s->nfold_ps < 2; s->nfold_ps++)
        if (nx_kctx_alloc(s->k, NX_OPK_PSUM, "wg_fold", NX_DT_FP32, Mm, Mm, &s->fold_ps[s->nfold_ps], err) != 0)
            return -1;
    for (; s->nebuf < 2; s->nebuf++)
        if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_fold_in", NX_DT_FP32, Mm, pl->fold_elems, &s->ebuf[s->nebuf], err))
            return -1;
    if (p->kind == NX_WG_DEPTHWISE)
        for (; s->nqbuf < 2; s->nqbuf++)
            if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_fold_diag", NX_DT_FP32, Mm, pl->fold_elems, &s->qbuf[s->nqbuf],
                              err))
                return -1;
    for (; s->nstage < 2; s->nstage++)
        if (nx_kctx_alloc(s->k, NX_OPK_SBUF, "wg_out", p->dt, Mm, pl->cot, &s->stage[s->nstage], err) != 0) return -1;
    return build_ident_masks(s, err);
}

static void release_all(wg_state *s) {
    nx_error e;
    while (s->nstage) nx_kctx_release(s->k, &s->stage[--s->nstage], &e);
    while (s->nqbuf) nx_kctx_release(s->k, &s->qbuf[--s->nqbuf], &e);
    while (s->nebuf) nx_kctx_release(s->k, &s->ebuf[--s->nebuf], &e);
    while (s->nmask) nx_kctx_release(s->k, &s->mask[--s->nmask], &e);
    if (s->have_ident) nx_kctx_release(s->k, &s->ident, &e);
    s->have_ident = 0;
    while (s->nfold_ps) nx_kctx_release(s->k, &s->fold_ps[--s->nfold_ps], &e);
    while (s->nps) nx_kctx_release(s->k, &s->ps[--s->nps], &e);
    while (s->nimg) nx_kctx_release(s->k, &s->img[--s->nimg], &e);
    while (s->ngrad) nx_kctx_release(s->k, &s->grad[--s->ngrad], &e);
}

int nx_wg_emit(nx_kctx *k, const nx_wg_problem *p, const nx_wg_plan *pl, nx_error *err) {
    wg_state s;
    memset(&s, 0, sizeof s);
    s.k = k, s.p = p, s.pl = pl, s.geo = nx_kctx_geometry(k);
    int rc = -1;
    if (alloc_all(&s, err) != 0) goto done;
    int defer = pl->nps == 2 * pl->T * pl->A; /* accumulators double-buffered over passes */
    int64_t pending = -1;                      /* a pass whose fold waits */
    /* software pipeline: item j's matmuls, then item j + 1's loads (and
     * its share of the block after it), then the folds whose time has
     * come: the loads are issued ahead of the folds' stores */
    wg_cursor cur;
    memset(&cur, 0, sizeof cur);
    wg_item cur_it, next_it, blk_it;
    int have = 0;
    if (!cur.done) {
        item_fill(&s, &cur, &next_it);
        next_it.nsplit = first_split(&s, &next_it);
        cursor_next(&s, &cur);
        have = 1;
        const wg_item *nb = next_block(&s, &cur, &blk_it) ? &blk_it : NULL;
        if (emit_load(&s, &next_it, nb, 1, err) != 0) goto done;
    }
    while (have) {
        cur_it = next_it;
        const wg_item *it = &cur_it;
        if (it->first_of_pass && zero_accumulators(&s, it, err) != 0) goto done;
        if (emit_matmuls(&s, it, err) != 0) goto done;
        have = !cur.done;
        if (have) {
            item_fill(&s, &cur, &next_it);
            cursor_next(&s, &cur);
            const wg_item *nb = next_block(&s, &cur, &blk_it) ? &blk_it : NULL;
            if (emit_load(&s, &next_it, nb, 0, err) != 0) goto done;
        }
        if (it->first_of_pass && pending >= 0) {
            if (emit_fold(&s, (uint32_t)pending, err) != 0) goto done;
            pending = -1;
        }
        if (it->last_of_pass) {
            if (defer && it->q + 1 < pl->npass) pending = it->q;
            else if (emit_fold(&s, it->q, err) != 0) goto done;
        }
    }
    rc = 0;
done:
    release_all(&s);
    return rc;
}

int nx_wg_run(nx_kctx *k, const nx_wg_problem *p, nx_error *err) {
    nx_wg_plan pl;
    if (nx_wg_plan_make_machine(nx_kctx_machine(k), p, NULL, &pl, err) != 0) return -1;
    return nx_wg_emit(k, p, &pl, err);
}
