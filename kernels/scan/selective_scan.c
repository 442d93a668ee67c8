/* selective_scan: the Mamba selective scan fused in one pass, as the public
 * NKI fused Mamba tutorial's sequence-tiled kernel does it (aws-neuron-sdk
 * general/nki/tutorials/fused_mamba.rst): channels on the partitions, the
 * sequence on the free axis in tiles, exp(delta A) on ScalarE, the
 * recurrence h = exp(delta A) h + delta Bm u through VectorE's
 * tensor_tensor_scan (op0 multiply, op1 add), the Cm contraction and the
 * D skip without leaving SBUF. Past the tutorial: the state is carried from
 * tile to tile per state n as the next scan's per-partition initial value
 * (as cumsum carries its sums, kernels/elementwise/cumsum.c), an initial
 * state comes in and the final state goes out, softplus(delta) is computed
 * on chip, the (batch, channel) rows are split over the VNC grid's cores,
 * and the loop order loads every tile of u, delta, Bm and Cm once.
 * Operands and math: kernels/scan/scan.h; plan and figures:
 * docs/parts/scan.md.
 *
 * A core takes a contiguous share of the B x C (batch, channel) rows; per
 * batch its channels are tiles of up to 128. Steps run sequence tile by
 * sequence tile and, inside one, channel tile by channel tile, so Bm and
 * Cm of a sequence tile are broadcast to the partitions (one DMA each,
 * partition stride 0) once for all the core's channel tiles, and each
 * channel tile's state h [N] stays in SBUF from one sequence tile to the
 * next. A step is one chunk of nc states (kernels/scan/scan_plan.c) of
 * channel tile c over sequence tile t (T elements):
 *   DMA   u, delta -> SBUF with a tile's first chunk; the chunk's rows of
 *         Bm and Cm with the sequence tile's first channel tile (two steps
 *         ahead)
 *   ACT   [delta' = max(delta, 0) + log(1 + exp(-|delta|)), first chunk]
 *   ACT   dA[n] = exp(delta' * A[c, n])            n in the chunk (A a scalar per partition)
 *   POOL  [du = delta' u, first chunk];  h[n] = du * Bm[n]  (one instruction)
 *   DVE   h[n] = scan(dA[n], h[n]) from state[n]   n in the chunk; state = h[:, T-1]
 *   POOL  dA = h * Cm
 *   POOL  y' = sum over the chunk's n of dA, and the previous chunks' y'
 *         (kept as one more row of the next chunk's dA: one reduction
 *         reads both, or a chain of adds on GpSimd); or on DVE
 *   ...   [last chunk: y = y' (+ u D[c]) on the same engine]
 *   DMA   the last sequence tile's state -> h_final right after its last
 *         scan; y -> HBM (rounded to y's dtype by the skip term's write,
 *         or by the DMA)
 * Iteration i prepares step i + 1 (ACT, POOL), finishes step i - 1's sum
 * (POOL, or DVE after scan i), scans step i (DVE), forms step i's
 * products (POOL) and issues the loads of step i + 2, so the three
 * engines and the DMA queues work on three steps at once, even when a
 * core has a single channel tile and sequence tile; no engine's queue
 * holds the next scan up behind a sum. The sums go to whichever of
 * GpSimd and VectorE has less work queued (their cycle counts as the
 * cost model gives them), so the two engines finish together. */
#include <stdlib.h>
#include <string.h>

#include "kernels/norms/rows.h"
#include "scan.h"

#define SC_IN_SETS 3
#define SC_SETS 2
#define SC_DA_SETS 3 /* a sum deferred to DVE still reads its step's dA */
#define SC_MAX_OPERANDS 7

typedef struct sc_step {
    uint64_t tile;     /* (channel, sequence) tile index: the u, delta, y sets */
    uint64_t n0, nn;   /* the chunk's states */
    int first_chunk, last_chunk;
    uint64_t b, c0;    /* batch, first channel (absolute) */
    uint64_t t0, tl;   /* sequence tile */
    uint32_t np;       /* channels in the tile */
    uint32_t ct;       /* channel tile within its segment */
    uint32_t gp;       /* partitions of the sequence tile's broadcast */
    uint64_t seg, group;
    int first_in_seg, first_in_group, first_t, last_t, d_load;
    uint64_t seg_c0, seg_nc; /* the segment's channels */
} sc_step;

typedef struct sc_ctx {
    nx_kctx *k;
    nx_rows r;
    nx_scan_params p;
    nx_scan_plan pl;
    const nx_tensor_ref *u, *dl, *A, *Bm, *Cm, *D, *h0, *y, *hf;
    nx_tile ut[SC_IN_SETS], dt[SC_IN_SETS];
    nx_tile bt[SC_SETS], cmt[SC_SETS], da[SC_DA_SETS], h[SC_SETS], du[SC_SETS], yt[SC_SETS], yo[SC_SETS];
    double dve_ns, pool_ns; /* work queued so far, the cost model's cycles over the clocks */
    nx_tile sp[SC_SETS], sp2[SC_SETS];
    nx_tile atab[SC_SETS], dtab[SC_SETS], state[SC_SETS];
    nx_tile cm_rows[SC_IN_SETS], ones, cps[SC_SETS]; /* Cm through the PE (plan pe_cm) */
    uint64_t cq;                                   /* PE broadcasts so far: the PSUM bank */
} sc_ctx;

/* The core's steps, in order. */
static sc_step *make_steps(const sc_ctx *s, uint32_t P, uint64_t *count) {
    uint64_t lo, hi;
    nx_kctx_rows(s->k, s->p.B * s->p.C, &lo, &hi);
    const uint64_t C = s->p.C, T = s->pl.T, ntt = (s->p.L + T - 1) / T;
    uint64_t n = 0;
    for (uint64_t r = lo; r < hi;) {
        uint64_t b = r / C, e = (b + 1) * C < hi ? (b + 1) * C : hi;
        n += ntt * ((e - r + P - 1) / P) * s->pl.chunks;
        r = e;
    }
    *count = n;
    sc_step *st = calloc(n ? n : 1, sizeof *st);
    if (!st) return NULL;
    uint64_t i = 0, seg = 0, group = 0, tile = 0;
    const uint64_t N = s->p.N, ncs = s->pl.nc;
    for (uint64_t r = lo; r < hi; seg++) {
        uint64_t b = r / C, e = (b + 1) * C < hi ? (b + 1) * C : hi, nc = e - r, nct = (nc + P - 1) / P;
        for (uint64_t tt = 0; tt < ntt; tt++, group++)
            for (uint64_t ct = 0; ct < nct; ct++, tile++)
            for (uint64_t n0 = 0; n0 < N; n0 += ncs, i++) {
                sc_step *x = &st[i];
                x->tile = tile;
                x->n0 = n0;
                x->nn = N - n0 < ncs ? N - n0 : ncs;
                x->first_chunk = n0 == 0;
                x->last_chunk = n0 + ncs >= N;
                x->b = b;
                x->c0 = r - b * C + ct * P;
                x->np = (uint32_t)(nc - ct * P < P ? nc - ct * P : P);
                x->ct = (uint32_t)ct;
                x->gp = (uint32_t)(nc < P ? nc : P);
                x->t0 = tt * T;
                x->tl = s->p.L - x->t0 < T ? s->p.L - x->t0 : T;
                x->seg = seg, x->group = group;
                x->first_in_seg = tt == 0 && ct == 0 && n0 == 0;
                x->first_in_group = ct == 0;
                x->first_t = tt == 0;
                x->last_t = tt + 1 == ntt;
                x->d_load = tt == 0 && ct == 0 && x->last_chunk;
                x->seg_c0 = r - b * C, x->seg_nc = nc;
            }
        r = e;
    }
    return st;
}

/* Partitions [0, np) of t, `nd` dims of (stride, count) from element first. */
static nx_operand v(const nx_tile *t, nx_dtype dt, uint32_t np, uint64_t first, uint32_t nd, const int32_t *st,
                    const uint32_t *ct) {
    return nx_tile_view(t, dt, 0, np, first, nd, st, ct);
}

static nx_operand row(const nx_tile *t, nx_dtype dt, uint32_t np, uint64_t first, uint64_t n) {
    return nx_rows_view(t, dt, np, first, n);
}

/* [nr, tl] rows T apart of a tile from row r0 (bcast: one row read nr times). */
static nx_operand rows_nt(const sc_ctx *s, const nx_tile *t, nx_dtype dt, uint32_t np, uint64_t r0, uint64_t nr,
                          uint64_t tl, int bcast) {
    const int32_t st[2] = {bcast ? 0 : (int32_t)s->pl.T, 1};
    const uint32_t ct[2] = {(uint32_t)nr, (uint32_t)tl};
    return v(t, dt, np, bcast ? 0 : r0 * s->pl.T, 2, st, ct);
}

static uint64_t esz(nx_dtype dt) { return nx_dtype_size(dt); }

/* The loads of step x: the segment's tables, the chunk's rows of the
 * sequence tile's Bm and Cm broadcasts, u and delta. */
static int load_step(sc_ctx *s, const sc_step *x, uint64_t i, nx_error *err) {
    const nx_scan_params *p = &s->p;
    const nx_dtype dt = p->dtype;
    const uint32_t ts = (uint32_t)(x->seg % SC_SETS), b = (uint32_t)(x->tile % SC_IN_SETS);
    const uint64_t off = ((x->b * p->C + x->c0) * p->L + x->t0) * esz(dt);
    /* in the order the engines need them: delta and A (ScalarE), u, Bm
     * (GpSimd), Cm (after the scan) */
    if (x->first_chunk) {
        nx_operand dd = row(&s->dt[b], dt, x->np, 0, x->tl);
        nx_operand ds = nx_ap_hbm_rows(dt, s->dl->hbm_offset + off, x->np, (int32_t)p->L, (uint32_t)x->tl);
        if (nx_rows_load(&s->r, &dd, &ds, err) != 0) return -1;
    }
    if (x->first_in_seg) {
        const uint64_t P = s->r.partitions, nct = (x->seg_nc + P - 1) / P;
        for (uint64_t ct = 0; ct < nct; ct++) {
            uint64_t c0 = x->seg_c0 + ct * P;
            uint32_t np = (uint32_t)(x->seg_nc - ct * P < P ? x->seg_nc - ct * P : P);
            nx_operand ad = row(&s->atab[ts], p->a_dtype, np, ct * p->N, p->N);
            nx_operand as = nx_ap_hbm_rows(p->a_dtype, s->A->hbm_offset + c0 * p->N * esz(p->a_dtype), np,
                                           (int32_t)p->N, (uint32_t)p->N);
            if (nx_rows_load(&s->r, &ad, &as, err) != 0) return -1;
            if (p->initial_state) {
                nx_operand hd = row(&s->state[ts], NX_DT_FP32, np, ct * p->N, p->N);
                nx_operand hs = nx_ap_hbm_rows(NX_DT_FP32, s->h0->hbm_offset + (x->b * p->C + c0) * p->N * 4, np,
                                               (int32_t)p->N, (uint32_t)p->N);
                if (nx_rows_load(&s->r, &hd, &hs, err) != 0) return -1;
            }
        }
    }
    if (x->first_chunk) {
        nx_operand ud = row(&s->ut[b], dt, x->np, 0, x->tl);
        nx_operand us = nx_ap_hbm_rows(dt, s->u->hbm_offset + off, x->np, (int32_t)p->L, (uint32_t)x->tl);
        if (nx_rows_load(&s->r, &ud, &us, err) != 0) return -1;
    }
    if (x->first_in_group) {
        const uint32_t g = (uint32_t)(x->group % SC_SETS);
        const int32_t st[2] = {(int32_t)p->L, 1};
        const uint32_t ct[2] = {(uint32_t)x->nn, (uint32_t)x->tl};
        const uint64_t boff = ((x->b * p->N + x->n0) * p->L + x->t0) * esz(dt);
        nx_operand bs = nx_ap(NX_OPK_HBM, dt, 0, x->gp, 0, s->Bm->hbm_offset + boff, 2, st, ct);
        nx_operand cs = nx_ap(NX_OPK_HBM, dt, 0, x->gp, 0, s->Cm->hbm_offset + boff, 2, st, ct);
        nx_operand bd = rows_nt(s, &s->bt[g], dt, x->gp, x->n0, x->nn, x->tl, 0);
        nx_operand cd = rows_nt(s, &s->cmt[g], dt, x->gp, x->n0, x->nn, x->tl, 0);
        if (s->pl.pe_cm) { /* the rows once, to one partition: the PE broadcasts them */
            cs = nx_ap(NX_OPK_HBM, dt, 0, 1, 0, s->Cm->hbm_offset + boff, 2, st, ct);
            cd = rows_nt(s, &s->cm_rows[i % SC_IN_SETS], dt, 1, 0, x->nn, x->tl, 0);
        }
        if (nx_rows_load(&s->r, &bd, &bs, err) != 0 || nx_rows_load(&s->r, &cd, &cs, err) != 0) return -1;
    }
    /* D with the segment's first tile's last chunk, the first step whose
     * sum reads it (for all the segment's channel tiles), not with A: a
     * transfer of 4 bytes per partition holds each DMA engine as long as
     * 2 KiB would (docs/parts/machine.md, "DMA"): loaded with A, ahead of
     * u and Bm, it delayed the first scan by that much (0.7 us) */
    if (x->d_load && p->skip) {
        const uint64_t P = s->r.partitions, nct = (x->seg_nc + P - 1) / P;
        for (uint64_t ct = 0; ct < nct; ct++) {
            uint64_t c0 = x->seg_c0 + ct * P;
            uint32_t np = (uint32_t)(x->seg_nc - ct * P < P ? x->seg_nc - ct * P : P);
            nx_operand dd = row(&s->dtab[ts], p->d_dtype, np, ct, 1);
            nx_operand ds = nx_ap_hbm_rows(p->d_dtype, s->D->hbm_offset + c0 * esz(p->d_dtype), np, 1, 1);
            if (nx_rows_load(&s->r, &dd, &ds, err) != 0) return -1;
        }
    }
    return 0;
}

static int act(nx_kctx *k, nx_act_func f, const nx_operand *dst, const nx_operand *in, const nx_operand *scale,
               double bias, nx_error *err) {
    nx_insn a = nx_insn_make(NX_OP_ACTIVATION);
    a.func = (uint8_t)f;
    a.op[0] = *dst;
    a.op[1] = *in;
    a.op[2] = *scale;
    a.op[3] = nx_imm(bias, NX_DT_FP32);
    return nx_kctx_emit(k, NX_ENG_ACT, &a, err);
}

/* Step x's discretisation: delta' (softplus) and du = delta' u with a
 * tile's first chunk; the chunk's dA = exp(delta' A) and h = du Bm (the
 * scan's addend). */
static int prepare(sc_ctx *s, const sc_step *x, uint64_t i, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_scan_params *p = &s->p;
    const uint32_t b = (uint32_t)(x->tile % SC_IN_SETS), w = (uint32_t)(x->tile % SC_SETS);
    const uint32_t c = (uint32_t)(i % SC_SETS), g = (uint32_t)(x->group % SC_SETS), e = (uint32_t)(i % SC_DA_SETS);
    const uint32_t ts = (uint32_t)(x->seg % SC_SETS), np = x->np;
    const uint64_t tl = x->tl;
    nx_operand dlt = row(&s->dt[b], p->dtype, np, 0, tl), u = row(&s->ut[b], p->dtype, np, 0, tl);
    nx_operand du = row(&s->du[w], NX_DT_FP32, np, 0, tl);
    const nx_operand one = nx_imm(1.0, NX_DT_FP32), minus = nx_imm(-1.0, NX_DT_FP32), zero = nx_imm(0.0, NX_DT_FP32);
    if (p->delta_softplus) {
        /* softplus(x) = max(x, 0) + log(1 + exp(-|x|)): no overflow for large x */
        nx_operand t1 = row(&s->sp[w], NX_DT_FP32, np, 0, tl), t2 = row(&s->sp2[w], NX_DT_FP32, np, 0, tl);
        if (x->first_chunk) {
            /* the three ScalarE passes over two halves of the columns, interleaved:
             * each pass follows the other half's, not its own input's result, so
             * the dependent-instruction overhead is hidden (the same values) */
            const uint64_t half = tl >= 128 ? tl / 2 : tl;
            for (int f = 0; f < 3; f++)
                for (uint64_t c0 = 0; c0 < tl; c0 += half) {
                    const uint64_t cn = tl - c0 < half ? tl - c0 : half;
                    static const nx_act_func fn[3] = {NX_ACT_ABS, NX_ACT_EXP, NX_ACT_LOG};
                    nx_operand d = row(&s->sp[w], NX_DT_FP32, np, c0, cn);
                    nx_operand src = f ? d : row(&s->dt[b], p->dtype, np, c0, cn);
                    if (act(k, fn[f], &d, &src, f == 1 ? &minus : &one, f == 2 ? 1.0 : 0.0, err) != 0) return -1;
                }
            if (nx_kctx_scalar_tensor_tensor(k, NX_ENG_POOL, &t2, &dlt, NX_ALU_MAX, &zero, NX_ALU_ADD, &t1, err) != 0)
                return -1;
        }
        dlt = t2;
    }
    for (uint64_t n = 0; n < x->nn; n++) {
        nx_operand dst = row(&s->da[e], NX_DT_FP32, np, n * s->pl.T, tl);
        nx_operand a = row(&s->atab[ts], p->a_dtype, np, x->ct * p->N + x->n0 + n, 1);
        if (act(k, NX_ACT_EXP, &dst, &dlt, &a, 0.0, err) != 0) return -1;
    }
    /* Cm's rows of the chunk on every partition: ones[1, P] x row[1, T] into
     * PSUM (K = 1: each output is 1.0 x, exact), copied out by ScalarE after
     * the chunk's exp, before the products need them */
    for (uint64_t n = 0; s->pl.pe_cm && x->first_in_group && n < x->nn; n++, s->cq++) {
        const uint32_t P = s->r.partitions;
        nx_operand mv = row(&s->cm_rows[i % SC_IN_SETS], p->dtype, 1, n * s->pl.T, tl);
        nx_operand acc = row(&s->cps[s->cq % SC_SETS], NX_DT_FP32, P, 0, tl);
        nx_operand dst = row(&s->cmt[g], p->dtype, x->gp, (x->n0 + n) * s->pl.T, tl);
        nx_operand src = row(&s->cps[s->cq % SC_SETS], NX_DT_FP32, x->gp, 0, tl);
        if (nx_kctx_multiply_moving(k, &acc, &mv, 0, err) != 0 ||
            nx_kctx_tensor_copy(k, NX_ENG_ACT, &dst, &src, err) != 0)
            return -1;
    }
    if (x->first_chunk && nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_MULTIPLY, &du, &dlt, &u, err) != 0) return -1;
    /* the core's first step row by row: its first scan starts after one row */
    const uint64_t per = i == 0 ? 1 : x->nn;
    for (uint64_t r = 0; r < x->nn; r += per) {
        nx_operand dub = rows_nt(s, &s->du[w], NX_DT_FP32, np, 0, per, tl, 1);
        nx_operand bm = rows_nt(s, &s->bt[g], p->dtype, np, x->n0 + r, per, tl, 0);
        nx_operand hv = rows_nt(s, &s->h[c], NX_DT_FP32, np, r, per, tl, 0);
        s->pool_ns += (double)(per * tl + 150) / nx_kctx_machine(k)->clock_ghz[NX_ENG_POOL];
        if (nx_kctx_tensor_tensor(k, NX_ENG_POOL, NX_ALU_MULTIPLY, &hv, &dub, &bm, err) != 0) return -1;
    }
    return 0;
}

/* Step x's recurrence: one scan per state of the chunk from the carried
 * state (or h0 / zero), then the carry. */
static int scan(sc_ctx *s, const sc_step *x, uint64_t i, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_scan_params *p = &s->p;
    const uint32_t c = (uint32_t)(i % SC_SETS), e = (uint32_t)(i % SC_DA_SETS), ts = (uint32_t)(x->seg % SC_SETS);
    const uint32_t np = x->np;
    const uint64_t T = s->pl.T, tl = x->tl, s0 = x->ct * p->N + x->n0;
    s->dve_ns += (double)(2 * x->nn * tl + 64) / nx_kctx_machine(k)->clock_ghz[NX_ENG_DVE];
    for (uint64_t n = 0; n < x->nn; n++) {
        nx_insn sc = nx_insn_make(NX_OP_TENSOR_TENSOR_SCAN);
        sc.alu0 = NX_ALU_MULTIPLY;
        sc.alu1 = NX_ALU_ADD;
        sc.op[0] = sc.op[2] = row(&s->h[c], NX_DT_FP32, np, n * T, tl);
        sc.op[1] = row(&s->da[e], NX_DT_FP32, np, n * T, tl);
        sc.op[3] = x->first_t && !p->initial_state ? nx_imm(0.0, NX_DT_FP32)
                                                   : row(&s->state[ts], NX_DT_FP32, np, s0 + n, 1);
        if (nx_kctx_emit(k, NX_ENG_DVE, &sc, err) != 0) return -1;
    }
    const int32_t st = (int32_t)T;
    const uint32_t cnt = (uint32_t)x->nn;
    nx_operand last = v(&s->h[c], NX_DT_FP32, np, tl - 1, 1, &st, &cnt);
    nx_operand carry = row(&s->state[ts], NX_DT_FP32, np, s0, x->nn);
    if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &carry, &last, err) != 0) return -1;
    if (!x->last_t || !x->last_chunk) return 0;
    /* the final state is complete: stored now, ahead of y on the queues */
    nx_operand from = row(&s->state[ts], NX_DT_FP32, np, x->ct * p->N, p->N);
    nx_operand hto = nx_ap_hbm_rows(NX_DT_FP32, s->hf->hbm_offset + (x->b * p->C + x->c0) * p->N * 4, np,
                                    (int32_t)p->N, (uint32_t)p->N);
    return nx_rows_store(&s->r, &hto, &from, err);
}

static int reduce(nx_kctx *k, nx_engine eng, const nx_operand *dst, const nx_operand *in, nx_error *err) {
    nx_insn red = nx_insn_make(NX_OP_TENSOR_REDUCE);
    red.alu0 = NX_ALU_ADD;
    red.iparam[0] = 1; /* axes: dim 0, the rows */
    red.op[0] = *dst;
    red.op[1] = *in;
    return nx_kctx_emit(k, eng, &red, err);
}

/* Step x's products dA = h * Cm (GpSimd). */
static int products(sc_ctx *s, const sc_step *x, uint64_t i, nx_error *err) {
    const nx_scan_params *p = &s->p;
    const uint32_t c = (uint32_t)(i % SC_SETS), e = (uint32_t)(i % SC_DA_SETS), g = (uint32_t)(x->group % SC_SETS);
    nx_operand hv = rows_nt(s, &s->h[c], NX_DT_FP32, x->np, 0, x->nn, x->tl, 0);
    nx_operand cm = rows_nt(s, &s->cmt[g], p->dtype, x->np, x->n0, x->nn, x->tl, 0);
    nx_operand pr = rows_nt(s, &s->da[e], NX_DT_FP32, x->np, 0, x->nn, x->tl, 0);
    s->pool_ns += (double)(x->nn * x->tl + 150) / nx_kctx_machine(s->k)->clock_ghz[NX_ENG_POOL];
    return nx_kctx_tensor_tensor(s->k, NX_ENG_POOL, NX_ALU_MULTIPLY, &pr, &hv, &cm, err);
}

/* Rows of step x's sum: the chunk's and, after its first chunk, the sum
 * of the chunks before it. */
static uint64_t sum_rows(const sc_step *x) { return x->nn + !x->first_chunk; }

/* GpSimd pays its start per instruction, not per input: a sum of a few
 * rows is cheaper as a chain of adds (r0 + r1, + r2, ...) than as one
 * reduction over them all. The chain adds the rows in the reduction's
 * order (tensor_reduce folds from -0, and -0 + r0 = r0), so the bits are
 * the same. */
static int pool_chain(const nx_machine *m, uint64_t rows, uint64_t tl) {
    return rows >= 2 && (rows - 2) * m->pool_startup < tl;
}

/* The engine of step x's sum: the one of GpSimd and VectorE with less work
 * queued once it is added; where the two cannot touch SBUF at once
 * (sbuf_dve_pool_conflict, trn1) their work adds up, and the quicker one
 * takes it. */
static nx_engine sum_engine(sc_ctx *s, const sc_step *x) {
    const nx_machine *m = nx_kctx_machine(s->k);
    const uint64_t rows = sum_rows(x), tl = x->tl, skip = x->last_chunk && s->p.skip ? tl : 0;
    const double e = (double)(rows * tl + skip);
    const double ep = pool_chain(m, rows, tl) ? (double)((rows - 1) * (tl + m->pool_startup) + skip) : e + 150;
    const double dp = ep / m->clock_ghz[NX_ENG_POOL], dd = (e + 64) / m->clock_ghz[NX_ENG_DVE];
    const double pool = s->pool_ns + dp, dve = s->dve_ns + dd;
    if (m->sbuf_dve_pool_conflict ? dd < dp : dve < pool) {
        s->dve_ns = dve;
        return NX_ENG_DVE;
    }
    s->pool_ns = pool;
    return NX_ENG_POOL;
}

/* dst = the sum of the first `rows` rows of step x's dA set e on eng. */
static int sum_into(sc_ctx *s, const sc_step *x, uint32_t e, nx_engine eng, uint64_t rows, const nx_operand *dst,
                    nx_error *err) {
    const uint64_t tl = x->tl;
    if (eng != NX_ENG_POOL || !pool_chain(nx_kctx_machine(s->k), rows, tl)) {
        nx_operand in = rows_nt(s, &s->da[e], NX_DT_FP32, x->np, 0, rows, tl, 0);
        return reduce(s->k, eng, dst, &in, err);
    }
    nx_operand r0 = row(&s->da[e], NX_DT_FP32, x->np, 0, tl);
    for (uint64_t j = 1; j < rows; j++) {
        nx_operand rj = row(&s->da[e], NX_DT_FP32, x->np, j * s->pl.T, tl);
        if (nx_kctx_tensor_tensor(s->k, eng, NX_ALU_ADD, dst, j == 1 ? &r0 : dst, &rj, err) != 0) return -1;
    }
    return 0;
}

/* Step x's sum on `eng`: the chunk's rows of dA and the previous chunks'
 * sum (one row below them) into the next chunk's dA (the row below its
 * rows), or with the last chunk into y (+ D u), stored, and the final
 * state after the last sequence tile. nx: the next step (NULL: none). */
static int finish(sc_ctx *s, const sc_step *x, const sc_step *nx, uint64_t i, nx_engine eng, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_scan_params *p = &s->p;
    const uint32_t b = (uint32_t)(x->tile % SC_IN_SETS), w = (uint32_t)(x->tile % SC_SETS);
    const uint32_t e = (uint32_t)(i % SC_DA_SETS), ts = (uint32_t)(x->seg % SC_SETS), np = x->np;
    const uint64_t tl = x->tl;
    nx_operand y = row(&s->yt[w], NX_DT_FP32, np, 0, tl);
    if (!x->last_chunk) {
        nx_operand acc = row(&s->da[(i + 1) % SC_DA_SETS], NX_DT_FP32, np, nx->nn * s->pl.T, tl);
        return sum_into(s, x, e, eng, sum_rows(x), &acc, err);
    }
    if (!p->skip) {
        if (sum_into(s, x, e, eng, sum_rows(x), &y, err) != 0) return -1;
    } else {
        nx_operand u = row(&s->ut[b], p->dtype, np, 0, tl), d = row(&s->dtab[ts], p->d_dtype, np, x->ct, 1);
        /* y's dtype straight from the engine: the DMA then moves half the bytes of bf16 */
        nx_operand yo = p->dtype == NX_DT_FP32 ? y : row(&s->yo[w], p->dtype, np, 0, tl);
        if (!x->first_chunk && eng == NX_ENG_POOL && pool_chain(nx_kctx_machine(k), sum_rows(x), tl)) {
            /* The previous chunks' sum (row nn) comes last: it is the one
             * row another engine may still be writing (a sum deferred to
             * VectorE), so the chunk's own rows and the skip term need not
             * wait for it. */
            nx_operand own = row(&s->da[e], NX_DT_FP32, np, 0, tl);
            nx_operand prev = row(&s->da[e], NX_DT_FP32, np, x->nn * s->pl.T, tl);
            if (x->nn > 1) {
                if (sum_into(s, x, e, eng, x->nn, &y, err) != 0) return -1;
                own = y;
            }
            if (nx_kctx_scalar_tensor_tensor(k, eng, &y, &u, NX_ALU_MULTIPLY, &d, NX_ALU_ADD, &own, err) != 0 ||
                nx_kctx_tensor_tensor(k, eng, NX_ALU_ADD, &yo, &y, &prev, err) != 0)
                return -1;
        } else if (sum_into(s, x, e, eng, sum_rows(x), &y, err) != 0 ||
                   nx_kctx_scalar_tensor_tensor(k, eng, &yo, &u, NX_ALU_MULTIPLY, &d, NX_ALU_ADD, &y, err) != 0)
            return -1;
        y = yo;
    }
    const uint64_t off = ((x->b * p->C + x->c0) * p->L + x->t0) * esz(p->dtype);
    nx_operand to = nx_ap_hbm_rows(p->dtype, s->y->hbm_offset + off, np, (int32_t)p->L, (uint32_t)tl);
    if (nx_rows_store(&s->r, &to, &y, err) != 0) return -1;
    return 0;
}

static int alloc_all(sc_ctx *s, nx_error *err) {
    nx_kctx *k = s->k;
    const nx_scan_params *p = &s->p;
    const uint32_t P = s->r.partitions;
    const uint64_t T = s->pl.T, NT = p->N * T, CT = s->pl.nc * T, ct = s->pl.ct_max;
    for (uint32_t j = 0; j < SC_SETS; j++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "bm_bcast", p->dtype, P, NT, &s->bt[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "cm_bcast", p->dtype, P, NT, &s->cmt[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "states", NX_DT_FP32, P, CT, &s->h[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "delta_u", NX_DT_FP32, P, T, &s->du[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "y", NX_DT_FP32, P, T, &s->yt[j], err) != 0 ||
            (p->skip && p->dtype != NX_DT_FP32 &&
             nx_kctx_alloc(k, NX_OPK_SBUF, "y_out", p->dtype, P, T, &s->yo[j], err) != 0) ||
            (p->delta_softplus && (nx_kctx_alloc(k, NX_OPK_SBUF, "softplus_tmp", NX_DT_FP32, P, T, &s->sp[j], err) != 0 ||
                                   nx_kctx_alloc(k, NX_OPK_SBUF, "softplus", NX_DT_FP32, P, T, &s->sp2[j], err) != 0)) ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "a_table", p->a_dtype, P, ct * p->N, &s->atab[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "d_table", p->skip ? p->d_dtype : NX_DT_FP32, P, ct, &s->dtab[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "state", NX_DT_FP32, P, ct * p->N, &s->state[j], err) != 0)
            return -1;
    for (uint32_t j = 0; j < SC_DA_SETS; j++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "exp_delta_a", NX_DT_FP32, P, CT + T, &s->da[j], err) != 0) return -1;
    if (s->pl.pe_cm) {
        for (uint32_t j = 0; j < SC_IN_SETS; j++)
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "cm_rows", p->dtype, 1, CT, &s->cm_rows[j], err) != 0) return -1;
        for (uint32_t j = 0; j < SC_SETS; j++)
            if (nx_kctx_alloc(k, NX_OPK_PSUM, "cm_psum", NX_DT_FP32, P, T, &s->cps[j], err) != 0) return -1;
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "ones", NX_DT_FP32, 1, P, &s->ones, err) != 0) return -1;
        nx_operand od = nx_tile_ap(&s->ones);
        if (nx_kctx_memset(k, NX_ENG_DVE, &od, 1.0, err) != 0 || nx_kctx_load_stationary(k, &od, err) != 0) return -1;
    }
    for (uint32_t j = 0; j < SC_IN_SETS; j++)
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "u", p->dtype, P, T, &s->ut[j], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "delta", p->dtype, P, T, &s->dt[j], err) != 0)
            return -1;
    return 0;
}

int nx_selective_scan(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    const uint32_t n_in = call->n_inputs;
    if (n_in < 5 || n_in > SC_MAX_OPERANDS || call->nargs != n_in + 2)
        return nx_fail(err, "selective_scan: expects 5 to 7 operands and 2 results, got %u and %u", n_in,
                       call->nargs - n_in);
    sc_ctx s;
    memset(&s, 0, sizeof s);
    s.k = k;
    nx_norm_tensor in[SC_MAX_OPERANDS];
    for (uint32_t i = 0; i < n_in; i++)
        in[i] = (nx_norm_tensor){call->args[i].name, call->args[i].dtype, call->args[i].ndims, call->args[i].shape};
    if (nx_scan_read(call->attrs, in, n_in, &s.p, err) != 0) return -1;
    if (nx_scan_plan_make(&s.p, nx_kctx_geometry(k), nx_kctx_num_programs(k), in[3].name, &s.pl, err) != 0) return -1;
    const nx_tensor_ref *a = call->args;
    s.u = &a[0], s.dl = &a[1], s.A = &a[2], s.Bm = &a[3], s.Cm = &a[4];
    s.D = s.p.skip ? &a[s.p.d_operand] : NULL;
    s.h0 = s.p.initial_state ? &a[s.p.h0_operand] : NULL;
    s.y = &a[n_in], s.hf = &a[n_in + 1];
    nx_rows_init(&s.r, k);
    if (alloc_all(&s, err) != 0) return -1;
    uint64_t n;
    sc_step *st = make_steps(&s, s.r.partitions, &n);
    if (!st) return nx_fail(err, "selective_scan: out of memory for the step list");
    int rc = -1;
    if (n > 0 && (load_step(&s, &st[0], 0, err) != 0 || (n > 1 && load_step(&s, &st[1], 1, err) != 0) ||
                  prepare(&s, &st[0], 0, err) != 0))
        goto done;
    /* Step i - 1's sum waits: on DVE for scan i, on GpSimd for step i + 1's
     * h (so that scan i + 1 is not held up behind it); the last step's is
     * not deferred. */
    int deferred = 0;
    nx_engine deng = NX_ENG_POOL;
    for (uint64_t i = 0; i < n; i++) {
        const sc_step *nx = i + 1 < n ? &st[i + 1] : NULL;
        if (nx && prepare(&s, nx, i + 1, err) != 0) goto done;
        if (deferred && deng == NX_ENG_POOL && finish(&s, &st[i - 1], &st[i], i - 1, deng, err) != 0) goto done;
        if (scan(&s, &st[i], i, err) != 0) goto done;
        if (deferred && deng == NX_ENG_DVE && finish(&s, &st[i - 1], &st[i], i - 1, deng, err) != 0) goto done;
        if (products(&s, &st[i], i, err) != 0) goto done;
        deng = sum_engine(&s, &st[i]);
        deferred = nx != NULL;
        if (!deferred && finish(&s, &st[i], nx, i, deng, err) != 0) goto done;
        if (i + 2 < n && load_step(&s, &st[i + 2], i + 2, err) != 0) goto done;
    }
    rc = 0;
done:
    free(st);
    return rc;
}
