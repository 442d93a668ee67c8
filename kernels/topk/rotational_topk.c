/* rotational_topk (SupportedTopkMethods.ROTATIONAL): each row folded over
 * nf partitions (nf a power of two, rows x nf <= 128), a top-k list per
 * fold, then log2(nf) rotations: at step s every fold's list moves 2^s folds
 * on, within its row's block of partitions (a block-circulant permutation of
 * the partitions, done on the PE), and each fold merges the list it
 * receives with its own (a scanning selection of the best min(k, 2L) of
 * the 2L candidates, indices carried). After the last step every fold holds
 * the top-k of all its row's folds; the lists are sorted by construction.
 *
 * Follows the public NKI library's rotational_topk (AWS nki-library,
 * core/topk: folded load, local top-k per stage, candidates with their
 * global indices rotated to the next fold by a block-circulant permutation
 * matmul on the PE, a sort at the end). Goes past it where its results
 * would differ from ONNX TopK or from the input bits:
 *  - exact tie order. The public kernel moves ceil(k/nf) candidates one
 *    fold per stage for nf stages and breaks ties by SBUF position, which
 *    stops being index order once candidates of different folds meet (an
 *    all-equal row comes back with other indices than 0..k-1). Here a step
 *    moves whole lists by 2^s folds and the received list goes in front of
 *    the own one: for the row's last fold the received list always covers
 *    the folds just below its own, so among equal keys the lower position
 *    is the lower index at every merge; that fold's list is stored (the
 *    others' merges wrap around the row and may order ties differently);
 *  - bit-exact rotation: a 0/1 permutation matmul turns an infinite or NaN
 *    candidate into NaN in every output (0 x inf); the rotation here is a PE transpose into PSUM, a copy
 *    that rotates the columns within each row's block, and a transpose
 *    back, all moving bits (the PE transposes dst dtype = src dtype exactly);
 *  - any row length (a shorter last fold, filled at the row's end), any k,
 *    largest = false, folds chosen from a DVE cost estimate (or attribute
 *    folds); 1 fold is the scanning leaf.
 * The price of exact ties: a merge scans 2L candidates for min(k, 2L)
 * (ceil(k/8) rounds once L reaches k), where the public kernel's stages scan
 * a fold for ceil(k/nf); the fold counts differ accordingly. */
#include <stdlib.h>

#include "topk_core.h"

/* fold scan + log2(nf) merges of 2L + the exchanges (about 1500 DVE cycles
 * each of the lists' 128-column blocks) per tile */
uint64_t tk_rotational_cost(const tk *t, uint32_t nf, uint64_t R) {
    uint32_t P = t->geo->partitions;
    uint64_t rt = nx_min_u64(R, P / nf), sf = nx_cdiv_u64(t->n, nf), L = nx_min_u64(t->k_sel, sf);
    uint64_t tiles = nx_cdiv_u64(R, rt);
    if (nf == 1) return tiles * tk_scan_cycles(t->k_sel, t->n);
    uint64_t c = tk_scan_cycles(L, sf);
    for (uint32_t d = 1; d < nf; d *= 2) {
        uint64_t L2 = nx_min_u64(t->k_sel, 2 * L);
        c += tk_scan_cycles(L2, 2 * L) + 1500 * nx_cdiv_u64(L, 128);
        L = L2;
    }
    return tiles * c;
}

typedef struct rot {
    tk *t;
    uint32_t nf, rt, rows, Pu;
    uint64_t L0;
    nx_tile ps_a[2], ps_b[2], u[2], hx[2], hi[2], stage[2];
    tk_sched merge;
    uint32_t turn;
} rot;

/* dst columns [0, L) of partition (r, (f + d) mod nf) <- src columns [L, 2L)
 * of partition (r, f), by blocks of up to 128 columns. The candidates are
 * 4-byte (fp32 keys or fp32 elements, and int32 indices): the PE moves them
 * as fp32 bits, the copies as uint32. */
static int rotate(rot *o, const nx_tile *h, uint64_t L, uint32_t d, nx_engine copier, nx_error *err) {
    tk *t = o->t;
    uint32_t blk = t->geo->pe_cols < t->geo->partitions ? t->geo->pe_cols : t->geo->partitions;
    int32_t one = 1;
    for (uint64_t c0 = 0; c0 < L; c0 += blk) {
        uint32_t b = (uint32_t)nx_min_u64(blk, L - c0), slot = o->turn++ % 2, pu = o->Pu;
        /* [Pu x b] -> PSUM [b x Pu] */
        nx_operand src = nx_tile_view(h, NX_DT_FP32, 0, pu, L + c0, 1, &one, &b);
        nx_operand ta = nx_tile_view(&o->ps_a[slot], NX_DT_FP32, 0, b, 0, 1, &one, &pu);
        if (nx_kctx_transpose(t->k, NX_ENG_PE, &ta, &src, err) != 0) return -1;
        /* rotate the columns (the source partitions) within each row's block */
        int32_t st[2] = {(int32_t)o->nf, 1};
        uint32_t lo[2] = {o->rows, o->nf - d}, hi[2] = {o->rows, d};
        nx_operand from = nx_tile_view(&o->ps_a[slot], NX_DT_UINT32, 0, b, 0, 2, st, lo);
        nx_operand to = nx_tile_view(&o->u[slot], NX_DT_UINT32, 0, b, d, 2, st, lo);
        if (nx_kctx_tensor_copy(t->k, copier, &to, &from, err) != 0) return -1;
        from = nx_tile_view(&o->ps_a[slot], NX_DT_UINT32, 0, b, o->nf - d, 2, st, hi);
        to = nx_tile_view(&o->u[slot], NX_DT_UINT32, 0, b, 0, 2, st, hi);
        if (nx_kctx_tensor_copy(t->k, copier, &to, &from, err) != 0) return -1;
        /* back: [b x Pu] -> PSUM [Pu x b] -> the received columns */
        nx_operand us = nx_tile_view(&o->u[slot], NX_DT_FP32, 0, b, 0, 1, &one, &pu);
        nx_operand tb = nx_tile_view(&o->ps_b[slot], NX_DT_FP32, 0, pu, 0, 1, &one, &b);
        if (nx_kctx_transpose(t->k, NX_ENG_PE, &tb, &us, err) != 0) return -1;
        nx_operand fb = nx_tile_view(&o->ps_b[slot], NX_DT_UINT32, 0, pu, 0, 1, &one, &b);
        nx_operand dst = nx_tile_view(h, NX_DT_UINT32, 0, pu, c0, 1, &one, &b);
        if (nx_kctx_tensor_copy(t->k, copier, &dst, &fb, err) != 0) return -1;
    }
    return 0;
}

/* A tile's fold lists are done: the merges, then the last folds' lists. */
static int folds_done(tk *t, void *ctx, uint32_t tile, tk_cols ox, tk_cols oi, nx_error *err) {
    rot *o = ctx;
    uint64_t r0 = t->row_lo + (uint64_t)tile * o->rt;
    o->rows = (uint32_t)nx_min_u64(o->rt, t->row_hi - r0);
    o->Pu = o->rows * o->nf;
    uint64_t L = o->L0, K = t->k_sel;
    /* the own lists into the merge buffer, after the received ones' place */
    tk_cols own_x = {&o->hx[0], L}, own_i = {&o->hi[0], L};
    nx_operand d0 = tk_view(&own_x, NX_DT_UINT32, o->Pu, L), s0 = tk_view(&ox, NX_DT_UINT32, o->Pu, L);
    nx_operand d1 = tk_view(&own_i, NX_DT_UINT32, o->Pu, L), s1 = tk_view(&oi, NX_DT_UINT32, o->Pu, L);
    if (nx_kctx_tensor_copy(t->k, NX_ENG_ACT, &d0, &s0, err) != 0 ||
        nx_kctx_tensor_copy(t->k, NX_ENG_ACT, &d1, &s1, err) != 0)
        return -1;
    uint32_t cur = 0;
    for (uint32_t d = 1; d < o->nf; d *= 2) {
        uint64_t L2 = nx_min_u64(K, 2 * L);
        if (rotate(o, &o->hx[cur], L, d, NX_ENG_ACT, err) != 0 || rotate(o, &o->hi[cur], L, d, NX_ENG_ACT, err) != 0)
            return -1;
        tk_job j = {.x = {&o->hx[cur], 0}, .idx = {&o->hi[cur], 0}, .n = 2 * L, .L = L2, .P = o->Pu,
                    .out_x = {&o->hx[cur ^ 1], L2}, .out_i = {&o->hi[cur ^ 1], L2}};
        if (tk_sched_add(&o->merge, &j, 1, err) != 0 || tk_sched_flush(&o->merge, err) != 0) return -1;
        cur ^= 1;
        L = L2;
    }
    tk_cols lx = {&o->hx[cur], K}, li = {&o->hi[cur], K};
    return tk_store(t, r0, o->nf - 1, o->nf, o->rows, lx, li, &o->stage[tile % 2], err);
}

int rotational_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tk t;
    if (tk_init(&t, k, "rotational_topk", call, err) != 0) return -1;
    uint64_t R = t.row_hi - t.row_lo;
    if (R == 0) return 0;
    rot o = {.t = &t};
    if (tk_choose_folds(&t, tk_rotational_cost, &o.nf, err) != 0) return -1;
    if (o.nf == 1) return tk_scanning(&t, err);
    uint32_t P = t.geo->partitions, blk = t.geo->pe_cols < P ? t.geo->pe_cols : P;
    o.rt = (uint32_t)nx_min_u64(R, P / o.nf);
    uint32_t P1 = o.rt * o.nf;
    uint64_t sf = nx_cdiv_u64(t.n, o.nf), K = t.k_sel;
    o.L0 = nx_min_u64(K, sf);
    uint64_t Lmax = nx_max_u64(o.L0, K);
    if (2 * Lmax + 8 > t.scan_max)
        return nx_fail(err, "%s: k = %llu needs merges of %llu candidates, more than one max8 scan takes (%u)", t.leaf,
                       (unsigned long long)K, (unsigned long long)(2 * Lmax), t.scan_max);
    nx_tile base;
    if (tk_fold_base(&t, P1, o.nf, sf, &base, err) != 0) return nx_fail_prefix(err, "%s", t.leaf);
    for (int i = 0; i < 2; i++) {
        if (tk_alloc_list(&t, "topk_lists", NX_DT_FP32, P1, 2 * Lmax, &o.hx[i], err) != 0 ||
            tk_alloc_list(&t, "topk_list_indices", NX_DT_INT32, P1, 2 * Lmax, &o.hi[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "topk_rotate", NX_DT_UINT32, blk, P1, &o.u[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "topk_rotate_t", NX_DT_FP32, blk, P1, &o.ps_a[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "topk_rotate_b", NX_DT_FP32, P1, blk, &o.ps_b[i], err) != 0)
            return nx_fail_prefix(err, "%s", t.leaf);
        t.reserved += o.hx[i].bytes + o.hi[i].bytes + o.u[i].bytes + 3 * 64;
        if (t.key_mode) {
            if (nx_kctx_alloc(k, NX_OPK_SBUF, "topk_values", t.dt, P1, K, &o.stage[i], err) != 0)
                return nx_fail_prefix(err, "%s", t.leaf);
            t.reserved += o.stage[i].bytes + 64;
        }
    }
    /* the merges: candidates in place (key mode) or keys recomputed */
    if (tk_sched_init(&t, &o.merge, P1, 1, 1, 2 * Lmax, K, !t.key_mode, err) != 0)
        return nx_fail_prefix(err, "%s", t.leaf);
    t.reserved += tk_sched_bytes(&t, 1, 2 * Lmax, K, !t.key_mode);
    uint32_t ntiles;
    tk_layout *tiles = tk_fold_tiles(&t, o.rt, o.nf, sf, &base, &ntiles);
    if (!tiles) {
        tk_sched_release(&o.merge);
        return nx_fail(err, "%s: out of memory", t.leaf);
    }
    int rc = tk_rows(&t, tiles, ntiles, o.L0, folds_done, &o, err);
    free(tiles);
    tk_sched_release(&o.merge);
    return rc;
}
