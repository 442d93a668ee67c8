/* wgrad_core.h: the tiling plan of the weight-gradient contraction.
 *
 * Every quantity comes from the machine geometry (PE rows and columns, the
 * moving limit, PSUM banks, SBUF per partition). Candidates: column groups
 * (Gx, Gy) (Gx > 1 needs rdx to be a multiple of sx, Gy > 1 rdy of sy),
 * co/channel tiles cot with Gx Gy cot <= the PE columns, the accumulator
 * extents that keep each moving tile inside one PSUM bank, the number of
 * accumulators sharing a contraction pass, and the tallest row block B that
 * leaves two buffer sets of filter and image tiles inside SBUF. Each is
 * ranked by an estimate of its time: the emitter's software pipeline
 * replayed item by item (estimate() below) with PE cycles weighed at
 * the DMA bytes one PE cycle is worth and DMA bytes over their efficiency,
 * min(1, contiguous run per partition / dma.efficient_bytes_per_partition),
 * the DMA rule of docs/parts/machine.md; every figure is the machine's.
 * The estimate only ranks plans; on a machine whose ratios differ the plan
 * is still correct, perhaps not the fastest. */
#include <stdio.h>
#include <string.h>

#include "wgrad_core.h"
#include "isa/intmath.h"

/* The machine's figures the estimate weighs with (ranking only). */
typedef struct wg_rates {
    const nx_machine *m;
    double pe_cycle; /* DMA bytes one PE cycle is worth: a core's DMA engines' bytes per ns
                      * over the PE clock (trn2: 16 x 23 / 2.4 = 153; trn1: 97) */
    double fixed;    /* a transfer's fixed cost (dma.fixed_ns) in bytes at a core's DMA rate,
                      * once per load of an item (the transfers of the lanes overlap) */
} wg_rates;
/* Share of an SBUF partition the input buffers may take; the rest holds the
 * identity, the masks, the fold buffers and the output staging. */
#define WG_INPUT_SHARE 0.93


int64_t nx_wg_rows_band(const nx_wg_problem *p, int64_t B, int64_t k0span) {
    return (B - 1) * p->rdy + (k0span - 1) * p->sy + 1;
}

void nx_wg_img_cols(const nx_wg_problem *p, int64_t k1lo, int64_t k1hi, int64_t wf0, int64_t nwf, int64_t *c0,
                    int64_t *nc) {
    int64_t lo = k1lo * p->sx + wf0 * p->rdx - p->plx;
    int64_t hi = (k1hi - 1) * p->sx + (wf0 + nwf - 1) * p->rdx - p->plx + 1;
    lo = nx_max_i64(lo, 0), hi = nx_min_i64(hi, p->W);
    *c0 = lo;
    *nc = hi > lo ? hi - lo : 0;
}

void nx_wg_block_rows(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t hb, nx_wg_rows *o) {
    int64_t full = (int64_t)pl->R * pl->B;
    o->hf0 = (int64_t)hb * full;
    int64_t live = nx_min_i64(full, p->HF - o->hf0);
    o->Bh = pl->B;
    if (live < full)
        o->Bh = nx_min_i64(pl->B, nx_cdiv_i64(nx_cdiv_i64(live, pl->R), pl->Gy) * pl->Gy);
    o->Rl = (uint32_t)nx_cdiv_i64(live, o->Bh);
    o->vb_last = live - (int64_t)(o->Rl - 1) * o->Bh;
}

/* Passes per co-tile group: the accumulator groups of a tile. */
static uint32_t acc_groups(const nx_wg_plan *pl) {
    return (uint32_t)nx_cdiv_i64((int64_t)pl->na0 * pl->na1 * pl->nan, pl->A);
}

static void tile_co(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t tile, uint64_t *co0, uint32_t *cot) {
    uint64_t X = p->kind == NX_WG_DENSE ? p->CO : p->N;
    *co0 = (uint64_t)tile * pl->cot;
    *cot = (uint32_t)nx_min_i64((int64_t)pl->cot, (int64_t)(X - *co0));
}

void nx_wg_acc_get(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t tile, uint32_t a, nx_wg_acc *o) {
    uint32_t in = a % pl->nan, i1 = a / pl->nan % pl->na1, i0 = a / pl->nan / pl->na1;
    tile_co(p, pl, tile, &o->co0, &o->cot);
    o->k0a = (int64_t)i0 * pl->ck0;
    o->nk0 = nx_min_i64(pl->ck0, p->K0 - o->k0a);
    o->k1a = (int64_t)i1 * pl->ck1;
    o->nk1 = nx_min_i64(pl->ck1, p->K1 - o->k1a);
    if (p->kind == NX_WG_DEPTHWISE) {
        o->n0 = (int64_t)o->co0;
        o->nn = o->cot;
    } else {
        o->n0 = (int64_t)in * pl->cn;
        o->nn = nx_min_i64(pl->cn, (int64_t)p->N - o->n0);
    }
    o->K0c = o->nk0 + (int64_t)(pl->Gy - 1) * pl->ry;
    o->K1c = o->nk1 + (int64_t)(pl->Gx - 1) * pl->rx;
    o->M = pl->Gx * pl->Gy * o->cot;
    o->F = (uint32_t)(o->K0c * o->K1c * o->nn);
}

void nx_wg_pass_get(const nx_wg_problem *p, const nx_wg_plan *pl, uint32_t q, nx_wg_pass *o) {
    uint32_t ag = acc_groups(pl), nacc = pl->na0 * pl->na1 * pl->nan;
    memset(o, 0, sizeof *o);
    o->t0 = q / ag * pl->T;
    o->nt = (uint32_t)nx_min_i64(pl->T, pl->ncot - o->t0);
    o->a0 = q % ag * pl->A;
    o->na = (uint32_t)nx_min_i64(pl->A, nacc - o->a0);
    int64_t n_hi = 0;
    for (uint32_t j = 0; j < o->na; j++) {
        nx_wg_acc a;
        nx_wg_acc_get(p, pl, o->t0, o->a0 + j, &a);
        if (j == 0 || a.n0 < o->n0) o->n0 = a.n0;
        if (j == 0 || a.n0 + a.nn > n_hi) n_hi = a.n0 + a.nn;
        o->nn = n_hi - o->n0;
        if (j == 0 || a.k0a < o->k0lo) o->k0lo = a.k0a;
        if (j == 0 || a.k0a + a.K0c > o->k0hi) o->k0hi = a.k0a + a.K0c;
        if (j == 0 || a.k1a < o->k1lo) o->k1lo = a.k1a;
        if (j == 0 || a.k1a + a.K1c > o->k1hi) o->k1hi = a.k1a + a.K1c;
    }
}

/* Accumulator extents for candidate c's groups and tile: ck0, ck1, cn and
 * the counts na0, na1, nan; 0 if no accumulator fits one PSUM bank. */
static int acc_extents(const nx_wg_problem *p, nx_wg_plan *c) {
    int64_t F = c->Fmax, ex0 = (int64_t)(c->Gy - 1) * c->ry, ex1 = (int64_t)(c->Gx - 1) * c->rx;
    int64_t nfix = p->kind == NX_WG_DEPTHWISE ? (int64_t)c->cot : 1; /* n per accumulator at least */
    int64_t K0c = p->K0 + ex0, K1c = p->K1 + ex1;
    if (K0c * K1c * nfix <= F) {
        c->ck0 = p->K0, c->ck1 = p->K1, c->cn = nfix;
        if (p->kind == NX_WG_DENSE) {
            int64_t nn = nx_cdiv_i64((int64_t)p->N, nx_min_i64((int64_t)p->N, F / (K0c * K1c)));
            c->cn = nx_cdiv_i64((int64_t)p->N, nn);
        }
    } else if (K1c * nfix <= F && F / (K1c * nfix) > ex0) {
        c->ck1 = p->K1, c->cn = nfix;
        c->ck0 = nx_cdiv_i64(p->K0, nx_cdiv_i64(p->K0, F / (K1c * nfix) - ex0));
    } else if ((1 + ex0) * nfix <= F && F / ((1 + ex0) * nfix) > ex1) {
        c->ck0 = 1, c->cn = nfix;
        c->ck1 = nx_cdiv_i64(p->K1, nx_cdiv_i64(p->K1, F / ((1 + ex0) * nfix) - ex1));
    } else {
        return 0;
    }
    c->na0 = (uint32_t)nx_cdiv_i64(p->K0, c->ck0);
    c->na1 = (uint32_t)nx_cdiv_i64(p->K1, c->ck1);
    c->nan = p->kind == NX_WG_DEPTHWISE ? 1u : (uint32_t)nx_cdiv_i64((int64_t)p->N, c->cn);
    return 1;
}

/* The largest image window of any pass of candidate c: batch count,
 * extended k0 span and image columns for a column block of WFb. */
typedef struct wg_window {
    int64_t nn, k0s, wc;
} wg_window;

static wg_window max_window(const nx_wg_problem *p, const nx_wg_plan *c, int64_t WFb) {
    wg_window w = {1, 1, 1};
    for (uint32_t q = 0; q < c->npass; q++) {
        nx_wg_pass ps;
        nx_wg_pass_get(p, c, q, &ps);
        int64_t cmax = 0;
        for (int64_t wf0 = 0; wf0 < p->WF; wf0 += WFb) {
            int64_t c0, nc;
            nx_wg_img_cols(p, ps.k1lo, ps.k1hi, wf0, nx_min_i64(WFb, p->WF - wf0), &c0, &nc);
            cmax = nx_max_i64(cmax, nc);
        }
        w.nn = nx_max_i64(w.nn, ps.nn);
        w.k0s = nx_max_i64(w.k0s, ps.k0hi - ps.k0lo);
        w.wc = nx_max_i64(w.wc, cmax);
        /* the other tile groups repeat the first one's windows (depthwise:
         * with fewer channels at most) */
        if (q + 1 == acc_groups(c)) break;
    }
    return w;
}

/* Block geometries (B, R, nhb, WFb, nwb and the buffer sizes) of candidate
 * c within `budget` bytes per partition, into out[0 .. return): the widest
 * column block whose row blocks fit, then a few row-block counts from the
 * fewest (the tallest blocks that fit) up, each with balanced B and R (B
 * in whole steps of Gy rows) and with all R0 replica blocks. */
#define WG_BLOCK_CANDIDATES 8
#define WG_MAX_BLOCK_PLANS (2 * WG_BLOCK_CANDIDATES)
static int blocks(const nx_wg_problem *p, uint32_t R0, uint64_t budget, const nx_wg_limits *lim,
                  const nx_wg_plan *c, nx_wg_plan *out) {
    int64_t es = (int64_t)p->es, cap = (int64_t)(budget / (uint64_t)(NX_WG_BUFFERS * es));
    int64_t wf_first = lim->wfb_max ? nx_min_i64(p->WF, lim->wfb_max) : p->WF;
    for (int64_t WFb = wf_first; WFb >= 1; WFb = WFb > 1 ? nx_cdiv_i64(WFb, 2) : 0) {
        wg_window w = max_window(p, c, WFb);
        int64_t g = (int64_t)c->cot * WFb, i = w.nn * w.wc;
        /* cap >= g B + i ((B - 1) rdy + (k0s - 1) sy + 1), B a multiple of Gy */
        int64_t fixed = i * ((w.k0s - 1) * p->sy + 1 - p->rdy);
        int64_t Bmax = (cap - fixed) / (g + i * p->rdy);
        Bmax = nx_min_i64(Bmax, nx_cdiv_i64(nx_cdiv_i64(p->HF, (int64_t)R0), c->Gy) * c->Gy);
        if (lim->b_max) Bmax = nx_min_i64(Bmax, lim->b_max);
        Bmax = Bmax / c->Gy * c->Gy;
        if (Bmax < 1) {
            if (WFb == 1) return 0;
            continue;
        }
        int n = 0;
        int64_t nhb0 = nx_cdiv_i64(p->HF, (int64_t)R0 * Bmax), last_B = 0;
        for (int64_t nhb = nhb0; nhb < nhb0 + WG_BLOCK_CANDIDATES && n + 2 <= WG_MAX_BLOCK_PLANS; nhb++) {
            int64_t B = nx_min_i64(nx_cdiv_i64(nx_cdiv_i64(p->HF, (int64_t)R0 * nhb), c->Gy) * c->Gy, Bmax);
            if (B == last_B) continue;
            last_B = B;
            /* R fitted to the rows (every block full), and all R0 replica
             * blocks with a shorter last block (nx_wg_block_rows): fewer
             * steps, shorter filter runs in that block; the estimate picks */
            uint32_t nb = (uint32_t)nx_cdiv_i64(p->HF, (int64_t)R0 * B);
            uint32_t Rs[2] = {(uint32_t)nx_min_i64((int64_t)R0, nx_cdiv_i64(p->HF, B * (int64_t)nb)), R0};
            for (int k = 0; k < (Rs[0] < R0 ? 2 : 1); k++) {
                nx_wg_plan *o = &out[n++];
                *o = *c;
                o->B = (uint32_t)B;
                o->nhb = nb;
                o->R = Rs[k];
                o->WFb = (uint32_t)WFb;
                o->nwb = (uint32_t)nx_cdiv_i64(p->WF, WFb);
                o->grad_elems = (uint64_t)(g * B);
                o->img_elems = (uint64_t)(i * nx_wg_rows_band(p, B, w.k0s));
            }
            if (B <= c->Gy) break;
        }
        return n;
    }
    return 0;
}

/* Row block hb of candidate c under pass ps: its matmul steps per
 * accumulator (Gy-row, Gx-column steps over its live rows) and its filter
 * (per co tile) and image loads in DMA byte equivalents. */
typedef struct wg_block_cost {
    double steps, g_item, i_block;
} wg_block_cost;

static wg_block_cost block_cost(const wg_rates *w, const nx_wg_problem *p, const nx_wg_plan *c,
                                const nx_wg_pass *ps, uint32_t hb) {
    double es = (double)p->es;
    nx_wg_rows rw;
    nx_wg_block_rows(p, c, hb, &rw);
    int64_t bmax = rw.Rl == 1 ? rw.vb_last : rw.Bh, live = (int64_t)(rw.Rl - 1) * rw.Bh + rw.vb_last;
    wg_block_cost o;
    o.steps = (double)nx_cdiv_i64(bmax, c->Gy) * (double)nx_cdiv_i64(c->WFb, c->Gx);
    double run_g = (double)(c->WFb == (uint32_t)p->WF ? rw.Bh * c->WFb : c->WFb) * es;
    o.g_item = (double)c->cit * (double)c->cot * (double)live * (double)c->WFb * es /
                   nx_machine_dma_efficiency(w->m, run_g) +
               w->fixed;
    int64_t c0, nc;
    nx_wg_img_cols(p, ps->k1lo, ps->k1hi, 0, c->WFb, &c0, &nc);
    int64_t rb = nx_wg_rows_band(p, rw.Bh, ps->k0hi - ps->k0lo);
    double run_i = (double)(nc == p->W ? rb * nc : nc) * es;
    o.i_block = (double)c->cit * (double)ps->nn * (double)(rw.Rl * rb) * (double)nc * es /
                    nx_machine_dma_efficiency(w->m, run_i) +
                w->fixed;
    return o;
}

/* The estimate of candidate c (see the file comment): the software
 * pipeline of the emitter replayed over its work items, in DMA byte
 * equivalents. Item i's loads start when item i - 1's are done (the DMA
 * engines work through them in order) and item i - 2's matmuls are (its
 * buffer is reused); its matmuls start when its loads and item i - 1's
 * matmuls are done; a pass's fold follows its last matmuls. The image is
 * loaded with the first item of each block. */
static double estimate(const wg_rates *w, const nx_wg_problem *p, const nx_wg_plan *c, double best) {
    double f32 = p->dt == NX_DT_FP32 ? 4.0 : 1.0, r = w->pe_cycle;
    uint32_t blocks = c->nct * c->nhb * c->nwb;
    double l_prev = 0, c_prev = 0, c_prev2 = 0, end = 0, pe_sum = 0, dma_sum = 0;
    for (int replay = 0; replay < 2; replay++)
    for (uint32_t q = 0; q < c->npass; q++) {
        nx_wg_pass ps;
        nx_wg_pass_get(p, c, q, &ps);
        double pe_step = 0, fold = 0; /* one step over the pass's accumulators */
        for (uint32_t j = 0; j < ps.na; j++) {
            nx_wg_acc a;
            nx_wg_acc_get(p, c, ps.t0, ps.a0 + j, &a);
            pe_step += (double)(a.F > 64 ? a.F : 64) * f32 * r;
            /* fold: row chunks x groups x (fp32 stationary load + matmul) */
            double rows = (double)(a.nk0 * a.nk1 * (p->kind == NX_WG_DENSE ? a.nn : 1));
            double chunks = (double)nx_cdiv_i64((int64_t)rows, c->Mmax), mc = rows / chunks;
            fold += chunks * c->Gx * c->Gy * ((mc > 64 ? mc : 64) + 4.0 * (c->cot > 64 ? c->cot : 64)) * r * ps.nt;
        }
        for (uint32_t b = 0; b < blocks; b++) {
            /* blocks run ci tile, row block, column block (innermost) */
            wg_block_cost bc = block_cost(w, p, c, &ps, b / c->nwb % c->nhb);
            double pe_item = bc.steps * pe_step;
            if (replay == 0) { /* a lower bound first: the PE's and the DMA's totals */
                pe_sum += pe_item * ps.nt;
                dma_sum += bc.g_item * ps.nt + bc.i_block;
                continue;
            }
            for (uint32_t t = 0; t < ps.nt; t++) {
                double ls = l_prev > c_prev2 ? l_prev : c_prev2;
                double le = ls + bc.g_item + (t == 0 ? bc.i_block : 0);
                double cs = le > c_prev ? le : c_prev;
                c_prev2 = c_prev;
                c_prev = cs + pe_item;
                l_prev = le;
            }
        }
        if (replay == 0) {
            pe_sum += fold;
            if (q + 1 == c->npass && best >= 0 && (pe_sum > dma_sum ? pe_sum : dma_sum) >= best) return best + 1;
            continue;
        }
        c_prev += fold; /* the fold holds the PE too */
        end = c_prev;
    }
    return end;
}

int nx_wg_plan_make_machine(const nx_machine *m, const nx_wg_problem *p, const nx_wg_limits *limits,
                            nx_wg_plan *out, nx_error *err) {
    const nx_geometry *geo = &m->geo;
    double core_dma = nx_machine_dma_engines_bytes_per_ns(m);
    const wg_rates w = {m, core_dma / m->clock_ghz[NX_ENG_PE], m->dma_fixed_ns * core_dma};
    static const nx_wg_limits none;
    const nx_wg_limits *lim = limits ? limits : &none;
    nx_wg_plan base;
    memset(&base, 0, sizeof base);
    base.P = geo->pe_rows < geo->partitions ? geo->pe_rows : geo->partitions;
    base.Mmax = geo->pe_cols < geo->partitions ? geo->pe_cols : geo->partitions;
    uint64_t bank_f32 = geo->psum_bank_bytes / 4;
    base.Fmax = (uint32_t)(bank_f32 < geo->pe_moving_free_max ? bank_f32 : geo->pe_moving_free_max);
    uint32_t banks = (uint32_t)(geo->psum_partition_bytes / geo->psum_bank_bytes);
    if (banks < 3 || base.Fmax < 1 || base.P < 1)
        return nx_fail(err, "%s: the machine's PSUM (%u banks) is too small for the accumulators and the fold", p->leaf,
                       banks);
    base.nct = (uint32_t)nx_cdiv_i64((int64_t)p->CI, base.P);
    base.cit = (uint32_t)nx_cdiv_i64((int64_t)p->CI, base.nct);
    uint32_t R0 = base.nct == 1 ? base.P / base.cit : 1;
    if (R0 > (uint32_t)p->HF) R0 = (uint32_t)p->HF;
    /* the small tiles: identity and two masks (fp32, Mmax wide), four fold
     * buffers of one bank (fp32), two output stages of Mmax elements */
    uint64_t small = 3 * (uint64_t)base.Mmax * 4 + 4 * (uint64_t)base.Fmax * 4 + 2 * (uint64_t)base.Mmax * p->es + 512;
    uint64_t total = (uint64_t)((double)geo->sbuf_partition_bytes * WG_INPUT_SHARE);
    if (total <= small) return nx_fail(err, "%s: SBUF too small for the fold tiles", p->leaf);
    uint64_t budget = total - small;
    if (lim->input_bytes && lim->input_bytes < budget) budget = lim->input_bytes;
    uint64_t X = p->kind == NX_WG_DENSE ? p->CO : p->N; /* what the tiles split */
    int gx_ok = p->rdx % p->sx == 0, gy_ok = p->rdy % p->sy == 0;
    double best = -1;
    for (uint32_t Gy = 1; Gy <= base.Mmax && Gy <= (uint32_t)p->HF; Gy++) {
        if (Gy > 1 && !gy_ok) break;
        for (uint32_t Gx = 1; Gx * Gy <= base.Mmax && Gx <= (uint32_t)p->WF; Gx++) {
            if (Gx > 1 && !gx_ok) break;
            if ((lim->gx && Gx != lim->gx) || (lim->gy && Gy != lim->gy)) continue;
            nx_wg_plan c = base;
            c.Gx = Gx, c.Gy = Gy;
            c.rx = p->rdx / p->sx, c.ry = p->rdy / p->sy;
            uint64_t cmax = base.Mmax / (Gx * Gy);
            if (lim->cot && lim->cot < cmax) cmax = lim->cot;
            c.ncot = (uint32_t)nx_cdiv_i64((int64_t)X, (int64_t)cmax);
            c.cot = (uint32_t)nx_cdiv_i64((int64_t)X, c.ncot);
            if (!acc_extents(p, &c)) continue;
            /* a lower bound of the PE time alone: every filter row and
             * column once per co tile, over the whole extended window */
            if (best >= 0) {
                double f32 = p->dt == NX_DT_FP32 ? 4.0 : 1.0;
                double steps = (double)nx_cdiv_i64(p->HF, (int64_t)R0 * Gy) * (double)nx_cdiv_i64(p->WF, Gx) * c.nct * c.ncot;
                double win = (double)(p->K0 + (int64_t)(Gy - 1) * c.ry) * (double)(p->K1 + (int64_t)(Gx - 1) * c.rx) *
                             (double)(p->kind == NX_WG_DENSE ? p->N : c.cot);
                if (steps * win * f32 * w.pe_cycle >= best) continue;
            }
            uint32_t nacc = c.na0 * c.na1 * c.nan, amax = banks - 2; /* two banks for the fold */
            uint32_t tmax = p->kind == NX_WG_DENSE ? c.ncot : 1;
            for (uint32_t A = nacc < amax ? nacc : amax; A >= 1; A--)
            for (uint32_t T = tmax * A < amax ? tmax : amax / A; T >= 1; T--) {
                if (lim->A && A != (lim->A < nacc ? lim->A : nacc)) continue;
                if (lim->T && T != (lim->T < tmax ? lim->T : tmax)) continue;
                c.A = A;
                c.T = T;
                c.npass = (uint32_t)nx_cdiv_i64(c.ncot, T) * acc_groups(&c);
                c.nps = c.npass > 1 && 2 * T * A <= amax ? 2 * T * A : T * A;
                uint32_t fmax = 0;
                for (uint32_t a = 0; a < nacc; a++) {
                    nx_wg_acc ac;
                    nx_wg_acc_get(p, &c, 0, a, &ac);
                    if (ac.F > fmax) fmax = ac.F;
                }
                c.fold_elems = fmax;
                nx_wg_plan cand[WG_MAX_BLOCK_PLANS];
                int nc = blocks(p, R0, budget, lim, &c, cand);
                for (int b = 0; b < nc; b++) {
                    if (lim->R && cand[b].R != lim->R) continue;
                    cand[b].est = estimate(&w, p, &cand[b], best);
                    if (best < 0 || cand[b].est < best) {
                        best = cand[b].est;
                        *out = cand[b];
                    }
                }
            }
        }
    }
    if (best < 0)
        return nx_fail(err, "%s: operand 0 (%s): one filter row of operand 1 (%s) and the image rows it meets do not "
                            "fit SBUF (%llu bytes per partition)",
                       p->leaf, p->img_name, p->filt_name, (unsigned long long)geo->sbuf_partition_bytes);
    return 0;
}

void nx_wg_plan_describe(const nx_wg_plan *pl, char *buf, size_t len) {
    snprintf(buf, len,
             "ci %ux%u R %u B %u (%u blocks) WF %ux%u groups %ux%u co %ux%u acc %lldx%lldx%lld (%ux%ux%u); a pass: "
             "%u co tiles x %u accumulators; %u passes",
             pl->cit, pl->nct, pl->R, pl->B, pl->nhb, pl->WFb, pl->nwb, pl->Gx, pl->Gy, pl->cot, pl->ncot,
             (long long)pl->ck0, (long long)pl->ck1, (long long)pl->cn, pl->na0, pl->na1, pl->nan, pl->T, pl->A,
             pl->npass);
}
