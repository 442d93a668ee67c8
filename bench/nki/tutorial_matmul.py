"""The four loop nests of AWS's public NKI matrix-multiplication tutorial
(general/nki/tutorials/matrix_multiplication.rst: result[M, N] =
lhsT[K, M]^T @ rhs[K, N]), written here in NKI for nxsim.nki from the
tutorial's description: its loop orders, tile and block sizes and load
placement (docs/parts/tutorial.md describes the four and nxsim's C versions
of them; docs/parts/nki.md, "Calibration", what this file measures).

Every kernel takes bf16 or fp32 lhsT [K, M] and rhs [K, N] and returns the
result in lhsT's dtype; PSUM accumulates in fp32. Tiles: K 128 (the
partitions), M 128 (the stationary free size), N 512 (the moving free size).
"""
import numpy as np

import nxsim.nki as nki
import nxsim.nki.isa as nisa
import nxsim.nki.language as nl

TILE_K, TILE_M, TILE_N = 128, 128, 512


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Both tiles of every K step loaded from HBM inside the innermost loop."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                b = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(a, b)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=out)
    return result


@nki.jit
def matmul_hoist_load(lhsT, rhs):
    """Optimisation 1: the column of lhsT tiles of one M tile loaded once and
    reused for every N tile; the rhs column of one N tile loaded per (m, n)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TILE_K
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        a = nl.ndarray((KT, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            a[k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
        for n in nl.affine_range(N // TILE_N):
            b = nl.ndarray((KT, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                b[k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
            acc = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nisa.nc_matmul(a[k], b[k])
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=out)
    return result


@nki.jit
def matmul_block_free_dimension(lhsT, rhs):
    """Optimisation 2: blocks of 2 x 2 tiles in M and N, each block's lhsT and
    rhs columns loaded once and every tile pair of the block multiplied."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TILE_K
    BM, BN = 2, 2
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (BM * TILE_M)):
        a = nl.ndarray((BM, KT, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(BM):
            for k in nl.affine_range(KT):
                c0 = (m * BM + bm) * TILE_M
                a[bm, k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, c0:c0 + TILE_M])
        for n in nl.affine_range(N // (BN * TILE_N)):
            b = nl.ndarray((BN, KT, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(BN):
                for k in nl.affine_range(KT):
                    c0 = (n * BN + bn) * TILE_N
                    b[bn, k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, c0:c0 + TILE_N])
            for bm in nl.affine_range(BM):
                for bn in nl.affine_range(BN):
                    acc = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        acc += nisa.nc_matmul(a[bm, k], b[bn, k])
                    out = nl.copy(acc, dtype=result.dtype)
                    r0, c0 = (m * BM + bm) * TILE_M, (n * BN + bn) * TILE_N
                    nl.store(result[r0:r0 + TILE_M, c0:c0 + TILE_N], value=out)
    return result


def matmul_fully_optimized(tiles_in_block_m=16, tiles_in_block_n=2, tiles_in_block_k=8):
    """Optimisation 3: blocks of (tiles_in_block_m x 128) M x (tiles_in_block_n
    x 512) N x (tiles_in_block_k x 128) K, the result of a whole N block
    column accumulated in SBUF across the K blocks in the result's dtype (as
    the tutorial's result tiles are: a bf16 result rounds the partial sum
    after every K block, the same arithmetic as the C composite's), PSUM holding one
    tile's K block; the result stored once per N block. Returns the kernel
    for these block sizes (the tutorial's defaults: 2048 x 1024 x 1024)."""
    TBM, TBN, TBK = tiles_in_block_m, tiles_in_block_n, tiles_in_block_k
    BLOCK_M, BLOCK_N, BLOCK_K = TBM * TILE_M, TBN * TILE_N, TBK * TILE_K

    @nki.jit
    def kernel(lhsT, rhs):
        K, M = lhsT.shape
        _, N = rhs.shape
        assert M % BLOCK_M == 0 and N % BLOCK_N == 0 and K % BLOCK_K == 0, \
            "M, N, K must be multiples of %d, %d, %d" % (BLOCK_M, BLOCK_N, BLOCK_K)
        NBM = M // BLOCK_M
        result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
        for n2 in nl.affine_range(N // BLOCK_N):
            acc_sb = nl.zeros((NBM, TBM, TBN, nl.par_dim(TILE_M), TILE_N), dtype=lhsT.dtype, buffer=nl.sbuf)
            for k2 in nl.affine_range(K // BLOCK_K):
                b = nl.ndarray((TBK, nl.par_dim(TILE_K), BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
                for bk in nl.affine_range(TBK):
                    r0 = (k2 * TBK + bk) * TILE_K
                    b[bk] = nl.load(rhs[r0:r0 + TILE_K, n2 * BLOCK_N:(n2 + 1) * BLOCK_N])
                for m2 in nl.affine_range(NBM):
                    a = nl.ndarray((TBK, nl.par_dim(TILE_K), BLOCK_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                    for bk in nl.affine_range(TBK):
                        r0 = (k2 * TBK + bk) * TILE_K
                        a[bk] = nl.load(lhsT[r0:r0 + TILE_K, m2 * BLOCK_M:(m2 + 1) * BLOCK_M])
                    for bn in nl.affine_range(TBN):
                        for bm in nl.affine_range(TBM):
                            acc = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                            for bk in nl.affine_range(TBK):
                                acc += nisa.nc_matmul(a[bk, :, bm * TILE_M:(bm + 1) * TILE_M],
                                                      b[bk, :, bn * TILE_N:(bn + 1) * TILE_N])
                            acc_sb[m2, bm, bn] = nl.add(acc_sb[m2, bm, bn], acc)
            for m2 in nl.affine_range(NBM):
                for bm in nl.affine_range(TBM):
                    row = nl.ndarray((nl.par_dim(TILE_M), BLOCK_N), dtype=result.dtype, buffer=nl.sbuf)
                    for bn in nl.affine_range(TBN):
                        row[:, bn * TILE_N:(bn + 1) * TILE_N] = nl.copy(acc_sb[m2, bm, bn])
                    r0 = (m2 * TBM + bm) * TILE_M
                    nl.store(result[r0:r0 + TILE_M, n2 * BLOCK_N:(n2 + 1) * BLOCK_N], value=row)
        return result

    return kernel


def error_bound(lhsT, rhs, sbuf_block_k=None, out_unit_roundoff=2.0 ** -8):
    """The exact product of lhsT [K, M] and rhs [K, N] (float64 arrays
    holding the inputs' values exactly; products and sums in float64, far
    below the bound) and, per element, how far any of these kernels' results
    may be from it: a sum of K products in fp32 in any order or blocking
    (first order, Higham, "Accuracy and Stability of Numerical Algorithms",
    section 3.1: K 2^-24 sum_k |lhsT_km rhs_kn|), one rounding to the result
    dtype (unit roundoff u: 2^-8 for bf16, 2^-24 for fp32) and, with
    sbuf_block_k, one more rounding of the partial sum after each K block
    but the last (the fully optimised kernel's SBUF accumulation). Returns
    (exact, bound), both [M, N] float64."""
    K = lhsT.shape[0]
    u = out_unit_roundoff
    exact = lhsT.T @ rhs
    # sum_k |a b| in fp32 widened by 1%: it only scales the bound
    fp32_sums = K * 2.0 ** -24 * 1.01 * (np.abs(lhsT).astype(np.float32).T @ np.abs(rhs).astype(np.float32))
    bound = u * np.abs(exact) + (1 + u) * fp32_sums
    if sbuf_block_k and sbuf_block_k < K:
        partial = np.zeros_like(exact)
        for k0 in range(0, K - sbuf_block_k, sbuf_block_k):
            partial += lhsT[k0:k0 + sbuf_block_k].T @ rhs[k0:k0 + sbuf_block_k]
            bound += u * (np.abs(partial) + fp32_sums)
    return exact, bound * (1 + 1e-6)  # the second-order terms


# (name, kernel, the C composite of the same loop nest, published ms on trn1
# for [4096, 8192] @ [8192, 8192] bf16: the tutorial's table, the K block
# after which the kernel rounds its SBUF partial sum or None)
LADDER = [
    ("tiled", matmul_tiled, "nki_matmul_tiled", 51.80, None),
    ("hoist_load", matmul_hoist_load, "nki_matmul_hoist_load", 42.96, None),
    ("block_free_dimension", matmul_block_free_dimension, "nki_matmul_block_free_dimension", 22.07, None),
    ("fully_optimized", matmul_fully_optimized(), "nki_matmul_fully_optimized", 6.97, 8 * TILE_K),
]
