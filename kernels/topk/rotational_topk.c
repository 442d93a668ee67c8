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
 *    candidate into NaN in every output (0 x inf) and rounds payloads
 *    through fp32; the rotation here is a PE transpose into PSUM, a copy
 *    that rotates the columns within each row's block, and a transpose
 *    back, all moving bits (the PE transposes dst dtype = src dtype exactly);
 *  - any row length (a shorter last fold, filled at the row's end), any k,
 *    largest = false, folds chosen from a DVE cost estimate (or attribute
 *    folds); 1 fold is the scanning leaf. */
#include "topk_core.h"

/* fold scan + log2(nf) merges of 2L + the exchanges (about 1500 DVE cycles
 * each of the lists' 128-column blocks) per tile */
uint64_t tk_rotational_cost(const tk *t, uint32_t nf, uint64_t R) {
    uint32_t P = t->geo->partitions;
    uint64_t rt = tk_min(R, P / nf), sf = tk_ceil(t->n, nf), L = tk_min(t->k_sel, sf);
    uint64_t tiles = tk_ceil(R, rt);
    if (nf == 1) return tiles * tk_scan_cycles(t->k_sel, t->n);
    uint64_t c = tk_scan_cycles(L, sf);
    for (uint32_t d = 1; d < nf; d *= 2) {
        uint64_t L2 = tk_min(t->k_sel, 2 * L);
        c += tk_scan_cycles(L2, 2 * L) + 1500 * tk_ceil(L, 128);
        L = L2;
    }
    return tiles * c;
}

typedef struct rot {
    tk *t;
    uint32_t nf, rows, Pu;
    nx_tile ps_a[2], ps_b[2], u[2];
    uint32_t turn;
} rot;

/* dst columns [0, L) of partition (r, (f + d) mod nf) <- src columns [L, 2L)
 * of partition (r, f), for a tile of `as` (a float view of the data: the PE
 * moves it as bits), by blocks of up to 128 columns. */
static int rotate(rot *o, const nx_tile *h, nx_dtype pe_dt, nx_dtype bits, uint64_t L, uint32_t d,
                  nx_engine copier, nx_error *err) {
    tk *t = o->t;
    uint32_t blk = t->geo->pe_cols < t->geo->partitions ? t->geo->pe_cols : t->geo->partitions;
    int32_t one = 1;
    for (uint64_t c0 = 0; c0 < L; c0 += blk) {
        uint32_t b = (uint32_t)tk_min(blk, L - c0), slot = o->turn++ % 2, pu = o->Pu;
        /* [Pu x b] -> PSUM [b x Pu] */
        nx_operand src = nx_tile_view(h, pe_dt, 0, pu, L + c0, 1, &one, &b);
        nx_operand ta = nx_tile_view(&o->ps_a[slot], pe_dt, 0, b, 0, 1, &one, &pu);
        if (nx_kctx_transpose(t->k, NX_ENG_PE, &ta, &src, err) != 0) return -1;
        /* rotate the columns (the source partitions) within each row's block */
        int32_t st[2] = {(int32_t)o->nf, 1};
        uint32_t lo[2] = {o->rows, o->nf - d}, hi[2] = {o->rows, d};
        nx_operand from = nx_tile_view(&o->ps_a[slot], bits, 0, b, 0, 2, st, lo);
        nx_operand to = nx_tile_view(&o->u[slot], bits, 0, b, d, 2, st, lo);
        if (nx_kctx_tensor_copy(t->k, copier, &to, &from, err) != 0) return -1;
        from = nx_tile_view(&o->ps_a[slot], bits, 0, b, o->nf - d, 2, st, hi);
        to = nx_tile_view(&o->u[slot], bits, 0, b, 0, 2, st, hi);
        if (nx_kctx_tensor_copy(t->k, copier, &to, &from, err) != 0) return -1;
        /* back: [b x Pu] -> PSUM [Pu x b] -> the received columns */
        nx_operand us = nx_tile_view(&o->u[slot], pe_dt, 0, b, 0, 1, &one, &pu);
        nx_operand tb = nx_tile_view(&o->ps_b[slot], pe_dt, 0, pu, 0, 1, &one, &b);
        if (nx_kctx_transpose(t->k, NX_ENG_PE, &tb, &us, err) != 0) return -1;
        nx_operand fb = nx_tile_view(&o->ps_b[slot], bits, 0, pu, 0, 1, &one, &b);
        nx_operand dst = nx_tile_view(h, bits, 0, pu, c0, 1, &one, &b);
        if (nx_kctx_tensor_copy(t->k, copier, &dst, &fb, err) != 0) return -1;
    }
    return 0;
}

int rotational_topk(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tk t;
    if (tk_init(&t, k, "rotational_topk", call, err) != 0) return -1;
    uint64_t R = t.row_hi - t.row_lo;
    if (R == 0) return 0;
    uint32_t nf;
    if (tk_choose_folds(&t, tk_rotational_cost, &nf, err) != 0) return -1;
    if (nf == 1) return tk_scanning(&t, err);
    uint32_t P = t.geo->partitions, blk = t.geo->pe_cols < P ? t.geo->pe_cols : P;
    uint32_t rt = (uint32_t)tk_min(R, P / nf), P1 = rt * nf;
    uint64_t sf = tk_ceil(t.n, nf), L0 = tk_min(t.k_sel, sf), K = t.k_sel;
    uint64_t Lmax = tk_max(L0, K);
    if (2 * Lmax > t.scan_max)
        return nx_fail(err, "%s: k = %llu needs merges of %llu candidates, more than one max8 scan takes (%u)", t.leaf,
                       (unsigned long long)K, (unsigned long long)(2 * Lmax), t.scan_max);
    rot o = {.t = &t, .nf = nf};
    nx_tile base, hx[2], hi[2];
    tk_sel s;
    if (tk_fold_base(&t, P1, nf, sf, &base, err) != 0) return nx_fail_prefix(err, "%s", t.leaf);
    for (int i = 0; i < 2; i++) {
        if (nx_kctx_alloc(k, NX_OPK_SBUF, "topk_lists", t.dt, P1, 2 * Lmax, &hx[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "topk_list_indices", NX_DT_INT32, P1, 2 * Lmax, &hi[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_SBUF, "topk_rotate", NX_DT_UINT32, blk, P1, &o.u[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "topk_rotate_t", NX_DT_FP32, blk, P1, &o.ps_a[i], err) != 0 ||
            nx_kctx_alloc(k, NX_OPK_PSUM, "topk_rotate_b", NX_DT_FP32, P1, blk, &o.ps_b[i], err) != 0)
            return nx_fail_prefix(err, "%s", t.leaf);
        t.reserved += hx[i].bytes + hi[i].bytes + o.u[i].bytes + 3 * 64;
    }
    for (uint64_t r0 = t.row_lo; r0 < t.row_hi; r0 += rt) {
        uint32_t rows = (uint32_t)tk_min(rt, t.row_hi - r0);
        o.rows = rows;
        o.Pu = rows * nf;
        tk_layout lay = {.x_off = t.x_off + r0 * t.n * t.es, .pitch = t.n, .len = t.n, .rows = rows, .nf = nf,
                         .sf = sf, .base = &base};
        uint32_t cur = 0;
        uint64_t L = L0;
        tk_cols ox = {&hx[0], L}, oi = {&hi[0], L};
        if (tk_rows(&t, &lay, L, ox, oi, err) != 0) return -1;
        /* the merges' workspace takes the space stage 0's had */
        if (tk_sel_alloc(&t, &s, 2, o.Pu, 2 * Lmax, K, err) != 0) return nx_fail_prefix(err, "%s", t.leaf);
        for (uint32_t d = 1; d < nf; d *= 2) {
            uint64_t L2 = tk_min(K, 2 * L);
            if (rotate(&o, &hx[cur], t.pe_dt, t.bits, L, d, NX_ENG_ACT, err) != 0 ||
                rotate(&o, &hi[cur], NX_DT_FP32, NX_DT_UINT32, L, d, NX_ENG_ACT, err) != 0)
                return -1;
            tk_cols fx = {&hx[cur], 0}, fi = {&hi[cur], 0}, tx = {&hx[cur ^ 1], L2}, ti = {&hi[cur ^ 1], L2};
            if (tk_select(&t, &s, fx, fi, NULL, 0, 2 * L, L2, tx, ti, err) != 0) return -1;
            cur ^= 1;
            L = L2;
        }
        tk_cols lx = {&hx[cur], K}, li = {&hi[cur], K};
        for (uint32_t r = 0; r < rows; r++)
            if (tk_store_row(&t, r0 + r, r * nf + nf - 1, lx, li, err) != 0) return -1;
        tk_sel_release(&t, &s);
    }
    return 0;
}
