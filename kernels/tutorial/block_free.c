/* nki_matmul_block_free_dimension: the NKI matmul tutorial's Optimization
 * 2, "reuse more load through blocking" (nki_matmul_block_free_dimension_
 * in matrix_multiplication_nki_kernels.py of aws-neuron-sdk; published
 * 22.07 ms on [4096, 8192] @ [8192, 8192] bf16, docs/parts/fidelity.md).
 *
 * Loop order as the tutorial's: blocks of TILES_IN_BLOCK_M = 2 tiles of M
 * and TILES_IN_BLOCK_N = 2 tiles of N. For each M block the lhsT tiles
 * [2][K / TILE_K][TILE_K, TILE_M] are loaded once; for each N block the rhs
 * tiles [2][K / TILE_K][TILE_K, TILE_N]; then for each (bm, bn) pair of the
 * block a PSUM tile accumulates the K matmuls, is copied to SBUF with the
 * cast (DVE tensor_copy) and stored. Every rhs tile is now reused for two
 * M tiles and every lhsT tile for the whole N loop.
 *
 * What the NKI compiler adds and nxsim makes explicit: buffers are
 * duplicated where two fit (rhs blocks first, they are reloaded every N
 * block); with one rhs buffer the next block's loads wait, tile by tile,
 * only for the matmuls that last read each tile. The stores of a block are
 * emitted after the next block's loads, the first matmul of a group starts
 * the accumulation. Refused when one lhsT block and one rhs block do not
 * fit in SBUF. */
#include "tut_common.h"

#define TUT_BLOCK_TILES_M 2
#define TUT_BLOCK_TILES_N 2
#define TUT_BLOCK_OUT 8

int nx_tutorial_matmul_block_free_dimension(nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    tut t;
    if (tut_init(&t, k, "nki_matmul_block_free_dimension", call, err) != 0) return -1;
    const uint64_t bm_w = (uint64_t)TUT_BLOCK_TILES_M * t.tile_m, bn_w = (uint64_t)TUT_BLOCK_TILES_N * t.tile_n;
    if (tut_require_multiple(&t, "K", t.K, t.tile_k, "TILE_K, the partitions", err) != 0 ||
        tut_require_multiple(&t, "M", t.M, bm_w, "BLOCK_M = 2 x TILE_M", err) != 0 ||
        tut_require_multiple(&t, "N", t.N, bn_w, "BLOCK_N = 2 x TILE_N", err) != 0)
        return -1;
    const uint64_t nk = t.K / t.tile_k;
    const uint64_t lblk = tut_tile_bytes(TUT_BLOCK_TILES_M * nk * t.tile_m, t.es);
    const uint64_t rblk = tut_tile_bytes(TUT_BLOCK_TILES_N * nk * t.tile_n, t.es);
    const uint64_t out = TUT_BLOCK_OUT * tut_tile_bytes(t.tile_n, t.es);
    if (tut_require_sbuf(&t, lblk + rblk + out, "one block of 2 x K / TILE_K lhsT tiles and one of rhs tiles", err) != 0)
        return -1;
    uint32_t nr = lblk + 2 * rblk + out <= t.sbuf_bytes ? 2 : 1;
    uint32_t nl = 2 * lblk + nr * rblk + out <= t.sbuf_bytes ? 2 : 1;
    nx_tile lb[2], rb[2], ps[2], res[TUT_BLOCK_OUT];
    if (tut_alloc_ring(&t, NX_OPK_SBUF, "lhsT_tiles", t.dt, t.tile_k, TUT_BLOCK_TILES_M * nk * t.tile_m, lb, nl,
                       err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_SBUF, "rhs_tiles", t.dt, t.tile_k, TUT_BLOCK_TILES_N * nk * t.tile_n, rb, nr,
                       err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_PSUM, "res_psum", NX_DT_FP32, t.tile_m, t.tile_n, ps, 2, err) != 0 ||
        tut_alloc_ring(&t, NX_OPK_SBUF, "res_sb", t.dt, t.tile_m, t.tile_n, res, TUT_BLOCK_OUT, err) != 0)
        return -1;
    /* tile (b, kk) of a block buffer: b-major, as the tutorial's [b][k] arrays */
    uint64_t blk = 0, tile = 0;
    for (uint64_t m = 0; m < t.M / bm_w; m++) {
        const nx_tile *l = &lb[m % nl];
        for (uint64_t bm = 0; bm < TUT_BLOCK_TILES_M; bm++)
            for (uint64_t kk = 0; kk < nk; kk++) {
                nx_operand d = tut_cols(l, (bm * nk + kk) * t.tile_m, t.tile_m);
                nx_operand s = tut_lhsT(&t, kk * t.tile_k, t.tile_k, (m * TUT_BLOCK_TILES_M + bm) * t.tile_m, t.tile_m);
                if (tut_dma(&t, &d, &s, err) != 0) return -1;
            }
        for (uint64_t n = 0; n < t.N / bn_w; n++, blk++) {
            const nx_tile *r = &rb[blk % nr];
            for (uint64_t bn = 0; bn < TUT_BLOCK_TILES_N; bn++)
                for (uint64_t kk = 0; kk < nk; kk++) {
                    nx_operand d = tut_cols(r, (bn * nk + kk) * t.tile_n, t.tile_n);
                    nx_operand s =
                        tut_rhs(&t, kk * t.tile_k, t.tile_k, (n * TUT_BLOCK_TILES_N + bn) * t.tile_n, t.tile_n);
                    if (tut_dma(&t, &d, &s, err) != 0) return -1;
                }
            if (tut_flush_stores(&t, err) != 0) return -1;
            for (uint64_t bm = 0; bm < TUT_BLOCK_TILES_M; bm++)
                for (uint64_t bn = 0; bn < TUT_BLOCK_TILES_N; bn++, tile++) {
                    nx_operand acc = nx_tile_ap(&ps[tile % 2]);
                    for (uint64_t kk = 0; kk < nk; kk++) {
                        nx_operand st = tut_cols(l, (bm * nk + kk) * t.tile_m, t.tile_m);
                        nx_operand mv = tut_cols(r, (bn * nk + kk) * t.tile_n, t.tile_n);
                        if (tut_matmul(&t, &acc, &st, &mv, kk > 0, err) != 0) return -1;
                    }
                    if (tut_before_write(&t, &res[tile % TUT_BLOCK_OUT], err) != 0) return -1;
            nx_operand sb = nx_tile_ap(&res[tile % TUT_BLOCK_OUT]);
                    nx_operand dst = tut_result(&t, (m * TUT_BLOCK_TILES_M + bm) * t.tile_m, t.tile_m,
                                                (n * TUT_BLOCK_TILES_N + bn) * t.tile_n, t.tile_n);
                    if (nx_kctx_tensor_copy(k, NX_ENG_DVE, &sb, &acc, err) != 0 ||
                        tut_defer_store(&t, &dst, &sb, err) != 0)
                        return -1;
                }
        }
    }
    return tut_flush_stores(&t, err);
}
