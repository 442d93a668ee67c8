/* nki_matmul_hoist_load: the NKI matmul tutorial's Optimization 1,
 * "removing redundant loads" (nki_matmul_hoist_load_ in
 * matrix_multiplication_nki_kernels.py of aws-neuron-sdk; published 42.96
 * ms on [4096, 8192] @ [8192, 8192] bf16, docs/parts/fidelity.md).
 *
 * Loop order as the tutorial's: for each TILE_M block m of M, the whole
 * column of lhsT tiles [K / TILE_K][TILE_K, TILE_M] is loaded once (hoisted
 * out of the N loop); then for each TILE_N block n the column of rhs tiles
 * [K / TILE_K][TILE_K, TILE_N] is loaded (hoisted out of the K loop, but
 * still reloaded for every m), the K matmuls accumulate into one PSUM tile,
 * which is copied to SBUF with the cast (DVE tensor_copy) and stored.
 * (The tutorial declares its lhsT buffer TILE_N wide and fills TILE_M of
 * it; only the TILE_M that is used is allocated here.)
 *
 * What the NKI compiler adds and nxsim makes explicit: the lhsT and rhs
 * columns are double-buffered when two fit in SBUF (the tutorial allocates
 * them inside affine_range loops, which lets the compiler overlap the next
 * column's loads with this one's matmuls), stores are emitted after the
 * next column's loads, the first matmul of a group starts the
 * accumulation. Refused when one lhsT and one rhs column do not fit. */
#include "tut_common.h"

#define TUT_HOIST_OUT 4

int nx_tutorial_matmul_hoist_load(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tut t;
    if (tut_init(&t, k, "nki_matmul_hoist_load", call, err) != 0) return -1;
    if (tut_require_multiple(&t, "K", t.K, t.tile_k, "TILE_K, the partitions", err) != 0 ||
        tut_require_multiple(&t, "M", t.M, t.tile_m, "TILE_M, the stationary free size", err) != 0 ||
        tut_require_multiple(&t, "N", t.N, t.tile_n, "TILE_N, the moving free size", err) != 0)
        return -1;
    const uint64_t nk = t.K / t.tile_k;
    const uint64_t lcol = tut_tile_bytes(nk * t.tile_m, t.es), rcol = tut_tile_bytes(nk * t.tile_n, t.es);
    const uint64_t out = TUT_HOIST_OUT * tut_tile_bytes(t.tile_n, t.es);
    if (tut_require_sbuf(&t, lcol + rcol + out, "one column of K / TILE_K lhsT tiles and one of rhs tiles", err) != 0)
        return -1;
    /* a second rhs column first (it is reloaded every n), then a second lhsT */
    uint32_t nr = lcol + 2 * rcol + out <= t.sbuf_bytes ? 2 : 1;
    uint32_t nl = 2 * lcol + nr * rcol + out <= t.sbuf_bytes ? 2 : 1;
    nx_tile lc[2], rc[2], ps[2], res[TUT_HOIST_OUT];
    if (tut_alloc_ring(&t, NX_OPK_SBUF, "lhsT_tiles", t.dt, t.tile_k, nk * t.tile_m, lc, nl, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_SBUF, "rhs_tiles", t.dt, t.tile_k, nk * t.tile_n, rc, nr, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_PSUM, "res_psum", NX_DT_FP32, t.tile_m, t.tile_n, ps, 2, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_SBUF, "res_sb", t.dt, t.tile_m, t.tile_n, res, TUT_HOIST_OUT, err) != 0)
        return -1;
    uint64_t col = 0;
    for (uint64_t m = 0; m < t.M / t.tile_m; m++) {
        const nx_tile *l = &lc[m % nl];
        for (uint64_t kk = 0; kk < nk; kk++) {
            nx_operand d = tut_cols(l, kk * t.tile_m, t.tile_m);
            nx_operand s = tut_lhsT(&t, kk * t.tile_k, t.tile_k, m * t.tile_m, t.tile_m);
            if (tut_dma(&t, &d, &s, err) != 0) return -1;
        }
        for (uint64_t n = 0; n < t.N / t.tile_n; n++, col++) {
            const nx_tile *r = &rc[col % nr];
            for (uint64_t kk = 0; kk < nk; kk++) {
                nx_operand d = tut_cols(r, kk * t.tile_n, t.tile_n);
                nx_operand s = tut_rhs(&t, kk * t.tile_k, t.tile_k, n * t.tile_n, t.tile_n);
                if (tut_dma(&t, &d, &s, err) != 0) return -1;
            }
            if (tut_flush_stores(&t, err) != 0) return -1;
            nx_operand acc = nx_tile_ap(&ps[col % 2]);
            for (uint64_t kk = 0; kk < nk; kk++) {
                nx_operand st = tut_cols(l, kk * t.tile_m, t.tile_m), mv = tut_cols(r, kk * t.tile_n, t.tile_n);
                if (tut_matmul(&t, &acc, &st, &mv, kk > 0, err) != 0) return -1;
            }
            if (tut_before_write(&t, &res[col % TUT_HOIST_OUT], err) != 0) return -1;
            nx_operand sb = nx_tile_ap(&res[col % TUT_HOIST_OUT]);
            nx_operand dst = tut_result(&t, m * t.tile_m, t.tile_m, n * t.tile_n, t.tile_n);
            if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &sb, &acc, err) != 0 || tut_defer_store(&t, &dst, &sb, err) != 0)
                return -1;
        }
    }
    return tut_flush_stores(&t, err);
}
