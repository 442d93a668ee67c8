/* nki_matmul_tiled: the NKI matmul tutorial's "tiled" kernel (its first
 * version for large shapes, nki_matmul_tiled_ in
 * matrix_multiplication_nki_kernels.py of aws-neuron-sdk; published 51.80
 * ms on [4096, 8192] @ [8192, 8192] bf16, docs/parts/fidelity.md).
 *
 * Loop order as the tutorial's: for each TILE_M block of M, for each TILE_N
 * block of N, a PSUM tile accumulates over the K tiles, and every K step
 * loads BOTH its lhsT tile [TILE_K, TILE_M] and its rhs tile [TILE_K,
 * TILE_N] from HBM (nothing is hoisted: the reloading Optimization 1
 * removes), then one matmul; after the K loop the PSUM tile is copied to
 * SBUF with the cast to the result dtype (nl.copy, here a DVE tensor_copy)
 * and stored.
 *
 * What the NKI compiler adds to this source and nxsim makes explicit: the
 * tile buffers rotate over TUT_TILED_STAGES stages (affine_range lets the
 * compiler overlap iterations), the PSUM accumulator over two banks, and
 * each store is emitted after the next output tile's first loads
 * (tut_defer_store). The first matmul of a group starts the accumulation
 * (the tutorial's nl.zeros PSUM tile is folded into it). */
#include "tut_common.h"

#define TUT_TILED_STAGES 4
#define TUT_TILED_PSUM 2
#define TUT_TILED_OUT 4

int nx_tutorial_matmul_tiled(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tut t;
    if (tut_init(&t, k, "nki_matmul_tiled", call, err) != 0) return -1;
    if (tut_require_multiple(&t, "K", t.K, t.tile_k, "TILE_K, the partitions", err) != 0 ||
        tut_require_multiple(&t, "M", t.M, t.tile_m, "TILE_M, the stationary free size", err) != 0 ||
        tut_require_multiple(&t, "N", t.N, t.tile_n, "TILE_N, the moving free size", err) != 0)
        return -1;
    uint64_t stage = tut_tile_bytes(t.tile_m, t.es) + tut_tile_bytes(t.tile_n, t.es);
    if (tut_require_sbuf(&t, TUT_TILED_STAGES * stage + TUT_TILED_OUT * tut_tile_bytes(t.tile_n, t.es),
                         "the tile buffers", err) != 0)
        return -1;
    nx_tile lt[TUT_TILED_STAGES], rt[TUT_TILED_STAGES], ps[TUT_TILED_PSUM], res[TUT_TILED_OUT];
    if (tut_alloc_ring(&t, NX_OPK_SBUF, "lhsT_tile", t.dt, t.tile_k, t.tile_m, lt, TUT_TILED_STAGES, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_SBUF, "rhs_tile", t.dt, t.tile_k, t.tile_n, rt, TUT_TILED_STAGES, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_PSUM, "res_psum", NX_DT_FP32, t.tile_m, t.tile_n, ps, TUT_TILED_PSUM, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_SBUF, "res_sb", t.dt, t.tile_m, t.tile_n, res, TUT_TILED_OUT, err) != 0)
        return -1;
    const uint64_t nk = t.K / t.tile_k;
    uint64_t step = 0, tile = 0;
    for (uint64_t m = 0; m < t.M / t.tile_m; m++) {
        for (uint64_t n = 0; n < t.N / t.tile_n; n++, tile++) {
            nx_operand acc = nx_tile_ap(&ps[tile % TUT_TILED_PSUM]);
            for (uint64_t kk = 0; kk < nk; kk++, step++) {
                const nx_tile *l = &lt[step % TUT_TILED_STAGES], *r = &rt[step % TUT_TILED_STAGES];
                nx_operand ld = nx_tile_ap(l), rd = nx_tile_ap(r);
                nx_operand ls = tut_lhsT(&t, kk * t.tile_k, t.tile_k, m * t.tile_m, t.tile_m);
                nx_operand rs = tut_rhs(&t, kk * t.tile_k, t.tile_k, n * t.tile_n, t.tile_n);
                if (tut_dma(&t, &ld, &ls, err) != 0 || tut_dma(&t, &rd, &rs, err) != 0) return -1;
                if (kk + 1 == (nk < TUT_TILED_STAGES ? nk : TUT_TILED_STAGES - 1) && tut_flush_stores(&t, err) != 0)
                    return -1;
                if (tut_matmul(&t, &acc, &ld, &rd, kk > 0, err) != 0) return -1;
            }
            if (tut_before_write(&t, &res[tile % TUT_TILED_OUT], err) != 0) return -1;
            nx_operand sb = nx_tile_ap(&res[tile % TUT_TILED_OUT]);
            nx_operand dst = tut_result(&t, m * t.tile_m, t.tile_m, n * t.tile_n, t.tile_n);
            if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &sb, &acc, err) != 0 || tut_defer_store(&t, &dst, &sb, err) != 0)
                return -1;
        }
    }
    return tut_flush_stores(&t, err);
}
