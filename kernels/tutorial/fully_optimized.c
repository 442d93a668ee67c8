/* nki_matmul_fully_optimized: the NKI matmul tutorial's Optimization 3,
 * "further blocking and DMA efficiency optimization"
 * (nki_matmul_fully_optimized_ in matrix_multiplication_nki_kernels.py of
 * aws-neuron-sdk; published 6.97 ms, 85% of peak, on [4096, 8192] @
 * [8192, 8192] bf16, docs/parts/fidelity.md).
 *
 * Loop order as the tutorial's, with its meta-parameters TILES_IN_BLOCK_M /
 * N / K (attributes tiles_in_block_m / n / k; 16, 2, 8 by default:
 * blocks of 2048 M x 1024 N x 1024 K for 128 x 512 tiles):
 *
 *   for each N block n:
 *     result_tiles = 0  (SBUF, the RESULT dtype: [M blocks][bm][bn][TILE_M, TILE_N])
 *     for each K block k (sequential):
 *       load rhs_tiles [bk][TILE_K, BLOCK_N]   (one transfer of BLOCK_N per bk)
 *       for each M block m:
 *         load lhsT_tiles [bk][TILE_K, BLOCK_M]
 *         for bn: for bm:
 *           PSUM res = sum over bk of matmul(lhsT_tiles[bk][bm], rhs_tiles[bk][bn])
 *           result_tiles[m][bm][bn] += res      (SBUF accumulation, DVE add)
 *     for m: for bm: pack result_tiles[m][bm][*] into [TILE_M, BLOCK_N] (copy) and store
 *
 * The SBUF accumulation rounds to the result dtype after every K block, as
 * the tutorial's result_tiles of lhsT.dtype do (the --check tolerance
 * counts those roundings, registry/families/tutorial.c).
 *
 * What the NKI compiler adds and nxsim makes explicit:
 *  - engines: the zeroing (nl.zeros) is a POOL memset per (m, bm) row of
 *    result tiles, the adds run on the DVE (it reads PSUM; POOL cannot),
 *    the packing copies on ACT; the first matmul of a PSUM group starts the
 *    accumulation (the nl.zeros PSUM tile folded into it);
 *  - buffers: the result tiles of every M block stay in SBUF when they fit
 *    (the tutorial's budget: M <= 8192 on trn1); otherwise the M blocks
 *    that do not fit are spilled, as the tutorial says the compiler does:
 *    their partial sums live in the result tensor in HBM and each K block
 *    reloads, accumulates and stores them back (exact: SBUF holds the same
 *    result-dtype values). With room left, the lhsT and then the rhs block
 *    are double-buffered so the next block's loads overlap the matmuls;
 *  - the SP issues transfers in order: stores (and spill stores) are
 *    emitted after the next iteration's loads. */
#include <stdlib.h>
#include <string.h>

#include "tut_common.h"

#define TUT_OPT_PSUM 4
#define TUT_OPT_PACK 2

typedef struct opt_plan {
    uint64_t tbm, tbn, tbk;                 /* tiles per block */
    uint64_t block_m, block_n;              /* elements */
    uint64_t nbm, nbn, nbk;                 /* blocks */
    uint64_t resident;                      /* M blocks whose result tiles stay in SBUF */
    uint32_t nl, nr;                        /* lhsT / rhs block buffers */
    int spill;                              /* 1: M blocks >= resident spill through HBM */
} opt_plan;

static int plan(const tut *t, const nx_tutorial_blocking *b, opt_plan *p, nx_error *err) {
    p->tbm = b->tiles_m;
    p->tbn = b->tiles_n;
    p->tbk = b->tiles_k;
    p->block_m = p->tbm * t->tile_m;
    p->block_n = p->tbn * t->tile_n;
    uint64_t block_k = p->tbk * t->tile_k;
    if (tut_require_multiple(t, "M", t->M, p->block_m, "BLOCK_M = TILE_M x tiles_in_block_m", err) != 0 ||
        tut_require_multiple(t, "N", t->N, p->block_n, "BLOCK_N = TILE_N x tiles_in_block_n", err) != 0 ||
        tut_require_multiple(t, "K", t->K, block_k, "BLOCK_K = TILE_K x tiles_in_block_k", err) != 0)
        return -1;
    p->nbm = t->M / p->block_m;
    p->nbn = t->N / p->block_n;
    p->nbk = t->K / block_k;
    const uint64_t lblk = tut_tile_bytes(p->tbk * p->block_m, t->es), rblk = tut_tile_bytes(p->tbk * p->block_n, t->es);
    const uint64_t rows = tut_tile_bytes(p->tbm * p->block_n, t->es); /* one M block's result tiles */
    const uint64_t pack = TUT_OPT_PACK * tut_tile_bytes(p->block_n, t->es);
    const uint64_t base = lblk + rblk + pack, cap = t->sbuf_bytes;
    if (base + p->nbm * rows <= cap) {
        p->resident = p->nbm;
        p->spill = 0;
    } else {
        /* two staging blocks for the spilled M blocks, the rest resident */
        if (tut_require_sbuf(t, base + 2 * rows,
                             "one lhsT block, one rhs block and two spill blocks of result tiles", err) != 0)
            return -1;
        p->resident = (cap - base - 2 * rows) / rows;
        p->spill = 1;
    }
    uint64_t used = base + (p->resident + (p->spill ? 2 : 0)) * rows;
    p->nl = used + lblk <= cap ? 2 : 1;
    if (p->nl == 2) used += lblk;
    p->nr = used + rblk <= cap ? 2 : 1;
    return 0;
}

typedef struct opt_state {
    tut t;
    opt_plan p;
    nx_tile lhs[2], rhs[2], ps[TUT_OPT_PSUM], pack[TUT_OPT_PACK], stage[2];
    nx_tile *res;                         /* p.resident result blocks */
    uint64_t n_lhs, n_rhs, n_ps, n_pack, n_stage;
} opt_state;

/* Columns of result tile (bm, bn) within a block of result tiles. */
static uint64_t res_col(const opt_state *s, uint64_t bm, uint64_t bn) {
    return (bm * s->p.tbn + bn) * s->t.tile_n;
}

/* Rows of M block m, row of tiles bm, within the result. */
static uint64_t res_row(const opt_state *s, uint64_t m, uint64_t bm) { return (m * s->p.tbm + bm) * s->t.tile_m; }

/* Step i of the (n, k, m) loop nest and the buffers it uses. */
typedef struct opt_step {
    uint64_t n, kb, m;
    const nx_tile *lt, *rt; /* lhsT and rhs block buffers */
} opt_step;

static void step_at(opt_state *s, uint64_t i, opt_step *st) {
    const opt_plan *p = &s->p;
    st->m = i % p->nbm;
    st->kb = i / p->nbm % p->nbk;
    st->n = i / (p->nbm * p->nbk);
    st->lt = &s->lhs[i % p->nl];
    st->rt = &s->rhs[i / p->nbm % p->nr];
}

/* The loads of a step: the rhs block with the first M block of each K
 * block, then the lhsT block. */
static int step_loads(opt_state *s, const opt_step *st, nx_error *err) {
    tut *t = &s->t;
    const opt_plan *p = &s->p;
    for (uint64_t bk = 0; st->m == 0 && bk < p->tbk; bk++) {
        nx_operand d = tut_cols(st->rt, bk * p->block_n, (uint32_t)p->block_n);
        nx_operand src =
            tut_rhs(t, (st->kb * p->tbk + bk) * t->tile_k, t->tile_k, st->n * p->block_n, (uint32_t)p->block_n);
        if (tut_dma(t, &d, &src, err) != 0) return -1;
    }
    for (uint64_t bk = 0; bk < p->tbk; bk++) {
        nx_operand d = tut_cols(st->lt, bk * p->block_m, (uint32_t)p->block_m);
        nx_operand src =
            tut_lhsT(t, (st->kb * p->tbk + bk) * t->tile_k, t->tile_k, st->m * p->block_m, (uint32_t)p->block_m);
        if (tut_dma(t, &d, &src, err) != 0) return -1;
    }
    return 0;
}

/* The matmuls and the SBUF accumulation of a step; a spilled M block
 * first takes its partial sums back from HBM (zeros on the first K block)
 * and stores them again afterwards. */
static int step_compute(opt_state *s, const opt_step *st, nx_error *err) {
    tut *t = &s->t;
    const opt_plan *p = &s->p;
    /* the previous steps' stores before anything that may read them back */
    if (tut_flush_stores(t, err) != 0) return -1;
    const nx_tile *acc_block; /* where this M block's result tiles accumulate */
    int spilled = st->m >= p->resident;
    if (spilled) {
        acc_block = &s->stage[s->n_stage++ % 2];
        for (uint64_t bm = 0; bm < p->tbm; bm++) {
            nx_operand d = tut_cols(acc_block, res_col(s, bm, 0), (uint32_t)p->block_n);
            if (st->kb == 0) {
                if (nx_kctx_memset(t->k, NX_ENG_POOL, &d, 0.0, err) != 0) return -1;
            } else {
                nx_operand src =
                    tut_result(t, res_row(s, st->m, bm), t->tile_m, st->n * p->block_n, (uint32_t)p->block_n);
                if (tut_dma(t, &d, &src, err) != 0) return -1;
            }
        }
    } else {
        acc_block = &s->res[st->m];
    }
    for (uint64_t bn = 0; bn < p->tbn; bn++)
        for (uint64_t bm = 0; bm < p->tbm; bm++) {
            nx_operand acc = nx_tile_ap(&s->ps[s->n_ps++ % TUT_OPT_PSUM]);
            for (uint64_t bk = 0; bk < p->tbk; bk++) {
                nx_operand sta = tut_cols(st->lt, bk * p->block_m + bm * t->tile_m, t->tile_m);
                nx_operand mv = tut_cols(st->rt, bk * p->block_n + bn * t->tile_n, t->tile_n);
                if (tut_matmul(t, &acc, &sta, &mv, bk > 0, err) != 0) return -1;
            }
            nx_operand r = tut_cols(acc_block, res_col(s, bm, bn), t->tile_n);
            if (nx_kctx_tensor_tensor(t->k, NX_ENG_DVE, NX_ALU_ADD, &r, &r, &acc, err) != 0) return -1;
        }
    if (spilled)
        for (uint64_t bm = 0; bm < p->tbm; bm++) {
            nx_operand src = tut_cols(acc_block, res_col(s, bm, 0), (uint32_t)p->block_n);
            nx_operand dst = tut_result(t, res_row(s, st->m, bm), t->tile_m, st->n * p->block_n, (uint32_t)p->block_n);
            if (tut_defer_store(t, &dst, &src, err) != 0) return -1;
        }
    return 0;
}

/* The zeroing of N block n's resident result tiles (nl.zeros). */
static int zero_results(opt_state *s, nx_error *err) {
    const opt_plan *p = &s->p;
    for (uint64_t m = 0; m < p->resident; m++)
        for (uint64_t bm = 0; bm < p->tbm; bm++) {
            nx_operand z = tut_cols(&s->res[m], res_col(s, bm, 0), (uint32_t)p->block_n);
            if (nx_kctx_memset(s->t.k, NX_ENG_POOL, &z, 0.0, err) != 0) return -1;
        }
    return 0;
}

/* After N block n: each row of resident result tiles coalesced into one
 * [TILE_M, BLOCK_N] tile (one store of BLOCK_N per partition). */
static int store_results(opt_state *s, uint64_t n, nx_error *err) {
    tut *t = &s->t;
    const opt_plan *p = &s->p;
    for (uint64_t m = 0; m < p->resident; m++)
        for (uint64_t bm = 0; bm < p->tbm; bm++) {
            const nx_tile *pk = &s->pack[s->n_pack++ % TUT_OPT_PACK];
            if (tut_before_write(t, pk, err) != 0) return -1;
            for (uint64_t bn = 0; bn < p->tbn; bn++) {
                nx_operand d = tut_cols(pk, bn * t->tile_n, t->tile_n);
                nx_operand src = tut_cols(&s->res[m], res_col(s, bm, bn), t->tile_n);
                if (nx_kctx_tensor_copy(t->k, NX_ENG_ACT, &d, &src, err) != 0) return -1;
            }
            nx_operand src = nx_tile_ap(pk);
            nx_operand dst = tut_result(t, res_row(s, m, bm), t->tile_m, n * p->block_n, (uint32_t)p->block_n);
            if (tut_defer_store(t, &dst, &src, err) != 0) return -1;
        }
    return 0;
}

/* Two steps use different buffers when both block buffers are doubled
 * (then the next step's loads may be emitted before this step's matmuls:
 * prefetch by one step, the same values in the same places). */
static int loads_ahead(const opt_plan *p) { return p->nl == 2 && p->nr == 2; }

static int opt_emit(opt_state *s, nx_error *err) {
    const opt_plan *p = &s->p;
    const uint64_t per_n = p->nbm * p->nbk, steps = p->nbn * per_n;
    const int ahead = loads_ahead(p);
    opt_step cur, next;
    step_at(s, 0, &cur);
    if (zero_results(s, err) != 0 || step_loads(s, &cur, err) != 0) return -1;
    for (uint64_t i = 0; i < steps; i++) {
        int has_next = i + 1 < steps;
        if (has_next) step_at(s, i + 1, &next);
        if (ahead && has_next && step_loads(s, &next, err) != 0) return -1;
        if (step_compute(s, &cur, err) != 0) return -1;
        if ((i + 1) % per_n == 0) {
            if (store_results(s, cur.n, err) != 0) return -1;
            if (has_next && zero_results(s, err) != 0) return -1;
        }
        if (!ahead && has_next && step_loads(s, &next, err) != 0) return -1;
        cur = next;
    }
    return tut_flush_stores(&s->t, err);
}

int nx_tutorial_matmul_fully_optimized(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    opt_state s;
    memset(&s, 0, sizeof s);
    nx_tutorial_blocking b;
    if (tut_init(&s.t, k, "nki_matmul_fully_optimized", call, err) != 0 ||
        nx_tutorial_blocking_read(call->attrs, &b, err) != 0 || plan(&s.t, &b, &s.p, err) != 0)
        return -1;
    tut *t = &s.t;
    const opt_plan *p = &s.p;
    if (p->tbm * p->tbn > TUT_MAX_PENDING)
        return nx_fail(err, "%s: tiles_in_block_m x tiles_in_block_n = %llu exceeds %d", t->name,
                       (unsigned long long)(p->tbm * p->tbn), TUT_MAX_PENDING);
    if (p->resident) {
        s.res = calloc(p->resident, sizeof *s.res);
        if (!s.res) return nx_fail(err, "%s: out of memory", t->name);
    }
    int rc = -1;
    if (tut_alloc_ring(t, NX_OPK_SBUF, "result_tiles", t->dt, t->tile_m, p->tbm * p->block_n, s.res,
                       (uint32_t)p->resident, err) != 0 ||
        (p->spill && tut_alloc_ring(t, NX_OPK_SBUF, "spilled result_tiles", t->dt, t->tile_m, p->tbm * p->block_n,
                                    s.stage, 2, err) != 0) ||
        tut_alloc_ring(t, NX_OPK_SBUF, "lhsT_tiles", t->dt, t->tile_k, p->tbk * p->block_m, s.lhs, p->nl, err) != 0 ||
        tut_alloc_ring(t, NX_OPK_SBUF, "rhs_tiles", t->dt, t->tile_k, p->tbk * p->block_n, s.rhs, p->nr, err) != 0 ||
        tut_alloc_ring(t, NX_OPK_SBUF, "result_packed", t->dt, t->tile_m, p->block_n, s.pack, TUT_OPT_PACK, err) != 0 ||
        tut_alloc_ring(t, NX_OPK_PSUM, "res_tile", NX_DT_FP32, t->tile_m, t->tile_n, s.ps, TUT_OPT_PSUM, err) != 0)
        goto out;
    rc = opt_emit(&s, err);
out:
    free(s.res);
    return rc;
}
