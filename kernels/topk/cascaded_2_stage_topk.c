/* cascaded_2_stage_topk (SupportedTopkMethods.CASCADED): stage 1 folds each
 * row over nf partitions (nf a power of two; rows x nf <= 128) and takes a
 * scanning top-k of every fold, the indices offset by the fold's first
 * element; stage 2 brings each row's nf candidate lists onto one partition
 * (through an HBM scratch tensor: SBUF rows cannot change partitions but by
 * DMA) and takes a scanning top-k of them, carrying their indices.
 *
 * Follows the public NKI library's cascaded top-k (AWS nki-library,
 * core/topk and core/max cascaded_max: a folded load, a top-k per fold, the
 * folds' results reshaped by DMA through HBM, a second top-k). Goes past it:
 *  - exact tie order: a row's candidate lists sit in fold order, each list
 *    in (key, index) order, so among equal keys the lower position is the
 *    lower index in stage 2 too (the scanning selection of topk_core.h);
 *  - any row length: a row that does not split into equal folds keeps a
 *    shorter last fold, filled up with a value that ties with the lowest
 *    real key at the row's end (it is never chosen); folds and stage 2 rows
 *    longer than one max8 scan are chunked like the scanning leaf's rows;
 *  - the fold count is chosen from the DVE cost of both stages (or given,
 *    attribute folds); 1 fold is the scanning leaf. */
#include <stdio.h>
#include <stdlib.h>

#include "topk_core.h"

/* stage 1 + stage 2 + the HBM round trip (about 3000 DVE cycles) per tile */
uint64_t tk_cascaded_cost(const tk *t, uint32_t nf, uint64_t R) {
    uint32_t P = t->geo->partitions;
    uint64_t rt = nx_min_u64(R, P / nf), sf = nx_cdiv_u64(t->n, nf), L1 = nx_min_u64(t->k_sel, sf);
    uint64_t tiles = nx_cdiv_u64(R, rt);
    if (nf == 1) return tiles * tk_scan_cycles(t->k_sel, t->n);
    return tiles * (tk_scan_cycles(L1, sf) + tk_scan_cycles(t->k_sel, nf * L1) + 3000);
}

static int scratch(tk *t, const char *what, nx_dtype dt, uint64_t rows, uint64_t cols, uint64_t *off,
                   nx_error *err) {
    char name[64];
    snprintf(name, sizeof name, "cascaded_2_stage_topk.%s.p%u", what, nx_kctx_program_id(t->k));
    const uint64_t shape[2] = {rows, cols};
    return nx_kctx_scratch(t->k, name, dt, 2, shape, off, err);
}

typedef struct casc {
    uint32_t nf, rt, P2;
    uint64_t L1, sx, si;
    nx_tile stage[2];
} casc;

/* stage 1 done: the tile's folds' lists to the scratch rows, row-major, so
 * a row's folds are one run of nf x L1 */
static int stage1_done(tk *t, void *ctx, uint32_t tile, tk_cols ox, tk_cols oi, nx_error *err) {
    casc *c = ctx;
    uint64_t r0 = (uint64_t)tile * c->rt;
    uint32_t rows = (uint32_t)nx_min_u64(c->rt, t->row_hi - t->row_lo - r0), Pu = rows * c->nf;
    uint64_t row0 = r0 * c->nf;
    nx_operand vx = tk_view(&ox, t->cand_dt, Pu, c->L1), vi = tk_view(&oi, NX_DT_INT32, Pu, c->L1);
    nx_operand hx = nx_ap_hbm_rows(t->cand_dt, c->sx + row0 * c->L1 * t->cand_es, Pu, (int32_t)c->L1, (uint32_t)c->L1);
    nx_operand hi = nx_ap_hbm_rows(NX_DT_INT32, c->si + row0 * c->L1 * 4, Pu, (int32_t)c->L1, (uint32_t)c->L1);
    if (tk_dma(t, &hx, &vx, err) != 0) return -1;
    return tk_dma(t, &hi, &vi, err);
}

static int stage2_done(tk *t, void *ctx, uint32_t tile, tk_cols ox, tk_cols oi, nx_error *err) {
    casc *c = ctx;
    uint64_t r0 = t->row_lo + (uint64_t)tile * c->P2;
    uint32_t rows = (uint32_t)nx_min_u64(c->P2, t->row_hi - r0);
    return tk_store(t, r0, 0, 1, rows, ox, oi, &c->stage[tile % 2], err);
}

int cascaded_2_stage_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tk t;
    if (tk_init(&t, k, "cascaded_2_stage_topk", call, err) != 0) return -1;
    uint64_t R = t.row_hi - t.row_lo;
    if (R == 0) return 0;
    casc c = {0};
    if (tk_choose_folds(&t, tk_cascaded_cost, &c.nf, err) != 0) return -1;
    if (c.nf == 1) return tk_scanning(&t, err);
    uint32_t P = t.geo->partitions;
    c.rt = (uint32_t)nx_min_u64(R, P / c.nf);
    c.P2 = (uint32_t)nx_min_u64(R, P);
    uint32_t P1 = c.rt * c.nf;
    uint64_t sf = nx_cdiv_u64(t.n, c.nf), n2;
    c.L1 = nx_min_u64(t.k_sel, sf);
    n2 = c.nf * c.L1;
    nx_tile base;
    if (tk_fold_base(&t, P1, c.nf, sf, &base, err) != 0) return nx_fail_prefix(err, "%s", t.leaf);
    if (t.key_mode)
        for (int i = 0; i < 2; i++) {
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "topk_values", t.dt, c.P2, t.k_sel, &c.stage[i], err) != 0)
                return nx_fail_prefix(err, "%s", t.leaf);
            t.reserved += c.stage[i].bytes + 64;
        }
    if (scratch(&t, "cand", t.cand_dt, R * c.nf, c.L1, &c.sx, err) != 0 ||
        scratch(&t, "cand_idx", NX_DT_INT32, R * c.nf, c.L1, &c.si, err) != 0)
        return nx_fail_prefix(err, "%s", t.leaf);
    uint32_t n1, nt2 = (uint32_t)nx_cdiv_u64(R, c.P2);
    tk_layout *tiles = tk_fold_tiles(&t, c.rt, c.nf, sf, &base, &n1), *t2 = calloc(nt2, sizeof *t2);
    if (!tiles || !t2) {
        free(tiles);
        free(t2);
        return nx_fail(err, "%s: out of memory", t.leaf);
    }
    int rc = tk_rows(&t, tiles, n1, c.L1, stage1_done, &c, err);
    for (uint32_t i = 0; rc == 0 && i < nt2; i++) {
        uint64_t r0 = (uint64_t)i * c.P2;
        t2[i] = (tk_layout){.x_off = c.sx + r0 * n2 * t.cand_es, .pitch = n2, .len = n2,
                               .rows = (uint32_t)nx_min_u64(c.P2, R - r0), .nf = 1, .sf = n2, .raw = 0,
                               .i_off = c.si + r0 * n2 * 4};
    }
    if (rc == 0) rc = tk_rows(&t, t2, nt2, t.k_sel, stage2_done, &c, err);
    free(tiles);
    free(t2);
    return rc;
}
