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

#include "topk_core.h"

/* stage 1 + stage 2 + the HBM round trip (about 3000 DVE cycles) per tile */
uint64_t tk_cascaded_cost(const tk *t, uint32_t nf, uint64_t R) {
    uint32_t P = t->geo->partitions;
    uint64_t rt = tk_min(R, P / nf), sf = tk_ceil(t->n, nf), L1 = tk_min(t->k_sel, sf);
    uint64_t tiles = tk_ceil(R, rt);
    if (nf == 1) return tiles * tk_scan_cycles(t->k_sel, t->n);
    return tiles * (tk_scan_cycles(L1, sf) + tk_scan_cycles(t->k_sel, nf * L1) + 3000);
}

static int scratch(tk *t, const char *what, nx_dtype dt, uint64_t rows, uint64_t cols, uint64_t *off,
                   nx_error *err) {
    char name[64];
    snprintf(name, sizeof name, "cascaded_2_stage_topk.%s.p%u", what, nx_kctx_program_id(t->k));
    const uint64_t shape[2] = {rows, cols};
    return nx_builder_tensor(nx_kctx_builder(t->k), name, dt, 2, shape, NX_ROLE_SCRATCH, off, err);
}

int cascaded_2_stage_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tk t;
    if (tk_init(&t, k, "cascaded_2_stage_topk", call, err) != 0) return -1;
    uint64_t R = t.row_hi - t.row_lo;
    if (R == 0) return 0;
    uint32_t nf;
    if (tk_choose_folds(&t, tk_cascaded_cost, &nf, err) != 0) return -1;
    if (nf == 1) return tk_scanning(&t, err);
    uint32_t P = t.geo->partitions;
    uint32_t rt = (uint32_t)tk_min(R, P / nf), P1 = rt * nf;
    uint64_t sf = tk_ceil(t.n, nf), L1 = tk_min(t.k_sel, sf), n2 = nf * L1;
    nx_tile base, c1x, c1i, c2x, c2i;
    if (tk_fold_base(&t, P1, nf, sf, &base, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "topk_fold_values", t.dt, P1, L1, &c1x, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "topk_fold_indices", NX_DT_INT32, P1, L1, &c1i, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "topk_values", t.dt, rt, t.k_sel, &c2x, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "topk_indices", NX_DT_INT32, rt, t.k_sel, &c2i, err) != 0)
        return nx_fail_prefix(err, "%s", t.leaf);
    t.reserved += c1x.bytes + c1i.bytes + c2x.bytes + c2i.bytes + 5 * 64;
    uint64_t sx, si;
    if (scratch(&t, "cand", t.dt, P1, L1, &sx, err) != 0 || scratch(&t, "cand_idx", NX_DT_INT32, P1, L1, &si, err) != 0)
        return nx_fail_prefix(err, "%s", t.leaf);
    for (uint64_t r0 = t.row_lo; r0 < t.row_hi; r0 += rt) {
        uint32_t rows = (uint32_t)tk_min(rt, t.row_hi - r0), Pu = rows * nf;
        tk_layout l1 = {.x_off = t.x_off + r0 * t.n * t.es, .pitch = t.n, .len = t.n, .rows = rows, .nf = nf,
                        .sf = sf, .base = &base};
        tk_cols ax = {&c1x, 0}, ai = {&c1i, 0};
        if (tk_rows(&t, &l1, L1, ax, ai, err) != 0) return -1;
        /* the folds' lists, row-major in HBM: row r's folds are one run */
        nx_operand vx = tk_view(&ax, t.dt, Pu, L1), vi = tk_view(&ai, NX_DT_INT32, Pu, L1);
        nx_operand hx = nx_ap_hbm_rows(t.dt, sx, Pu, (int32_t)L1, (uint32_t)L1);
        nx_operand hi = nx_ap_hbm_rows(NX_DT_INT32, si, Pu, (int32_t)L1, (uint32_t)L1);
        if (tk_dma(&t, &hx, &vx, err) != 0 || tk_dma(&t, &hi, &vi, err) != 0) return -1;
        tk_layout l2 = {.x_off = sx, .pitch = n2, .len = n2, .rows = rows, .nf = 1, .sf = n2, .has_idx = 1,
                        .i_off = si};
        tk_cols bx = {&c2x, 0}, bi = {&c2i, 0};
        if (tk_rows(&t, &l2, t.k_sel, bx, bi, err) != 0) return -1;
        if (tk_store_rows(&t, r0, rows, bx, bi, err) != 0) return -1;
    }
    return 0;
}
