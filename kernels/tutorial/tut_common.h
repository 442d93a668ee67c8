/* What the four tutorial kernels share (kernels/tutorial/tutorial.h): the
 * call, HBM views of the operands, loads and stores the way the tutorial's
 * nl.load / nl.store become DMA, the matmul step, and deferred stores. */
#ifndef NXSIM_KERNELS_TUTORIAL_TUT_COMMON_H
#define NXSIM_KERNELS_TUTORIAL_TUT_COMMON_H

#include <stdint.h>

#include "tutorial.h"

/* Stores waiting to be emitted (see tut_defer_store). */
#define TUT_MAX_PENDING 64

typedef struct tut_pending {
    nx_operand dst, src;
} tut_pending;

typedef struct tut {
    nx_kctx *k;
    const char *name;          /* the kernel, for errors */
    nx_dtype dt;               /* lhsT, rhs and result */
    uint64_t es;               /* element size */
    uint64_t K, M, N;
    uint64_t lhsT, rhs, out;   /* HBM byte offsets */
    uint32_t tile_k, tile_m, tile_n; /* pmax, gemm_stationary_fmax, gemm_moving_fmax */
    uint64_t sbuf_bytes;       /* per partition */
    uint32_t engines;          /* DMA engines */
    uint32_t share;            /* partitions per DMA engine (partitions / engines: 8) */
    uint32_t groups, group;    /* lane groups of `engines` lanes, the next one */
    tut_pending pending[TUT_MAX_PENDING];
    uint32_t npending;
} tut;

/* Reads the call (two inputs and one output of the shapes above, one PE
 * dtype) and the geometry's tile sizes. */
int tut_init(tut *t, nx_kctx *k, const char *name, const nx_kernel_call *call, nx_error *err);

/* Refuses a dimension that is not a multiple of `unit`, naming the rule:
 * "nki_matmul_tiled: M = 200 must be a multiple of 128 (TILE_M)". */
int tut_require_multiple(const tut *t, const char *dim, uint64_t value, uint64_t unit, const char *unit_name,
                         nx_error *err);

/* Refuses a working set of `need` bytes per partition that SBUF cannot
 * hold: "<name>: <what> need N bytes per partition, SBUF has S". */
int tut_require_sbuf(const tut *t, uint64_t need, const char *what, nx_error *err);

/* HBM views: rows [k0, k0 + rows) and columns [c0, c0 + cols) of lhsT
 * ([K, M]) or rhs ([K, N]); rows [m0, m0 + rows), columns [n0, n0 + cols) of
 * the result ([M, N]). */
nx_operand tut_lhsT(const tut *t, uint64_t k0, uint32_t rows, uint64_t c0, uint32_t cols);
nx_operand tut_rhs(const tut *t, uint64_t k0, uint32_t rows, uint64_t c0, uint32_t cols);
nx_operand tut_result(const tut *t, uint64_t m0, uint32_t rows, uint64_t n0, uint32_t cols);

/* Columns [c0, c0 + n) of an SBUF/PSUM tile, all its partitions, as its dtype. */
nx_operand tut_cols(const nx_tile *tile, uint64_t c0, uint32_t n);

/* One nl.load / nl.store: the transfer cut by partitions into one piece
 * per DMA engine's share of them (partitions / engines = 8: piece i moves
 * partitions [8i, 8i + 8) on engine i), all pieces on the same queue of
 * their engines, successive transfers on the next queue. The NKI DMA
 * overview's two examples: a [128, 128] load runs as 16 transfers of
 * 8 rows, one per engine; a [4, 4096] load as one transfer on one engine. */
int tut_dma(tut *t, const nx_operand *dst, const nx_operand *src, nx_error *err);

/* Stores emitted later (tut_flush_stores), so that the SP, which issues
 * transfers in order, issues the next loads before it waits for the
 * results a store needs: the software pipelining the NKI compiler applies
 * to the tutorial's affine_range loops. */
int tut_defer_store(tut *t, const nx_operand *dst, const nx_operand *src, nx_error *err);
int tut_flush_stores(tut *t, nx_error *err);
/* Flushes the deferred stores if one of them reads `tile`: call it before
 * writing a tile again (the program's meaning is its emission order). */
int tut_before_write(tut *t, const nx_tile *tile, nx_error *err);

/* One nc_matmul: load_stationary of the stationary view, multiply_moving of
 * the moving view into psum (accumulate after the first of a group). */
int tut_matmul(tut *t, const nx_operand *psum, const nx_operand *stationary, const nx_operand *moving,
               int accumulate, nx_error *err);

/* Allocates n tiles (n <= max) named `name` of [partitions x elems]. */
int tut_alloc_ring(tut *t, nx_operand_kind mem, const char *name, nx_dtype dt, uint32_t partitions,
                   uint64_t elems, nx_tile *tiles, uint32_t n, nx_error *err);

/* Bytes per partition an SBUF tile of `elems` elements of `es` bytes takes
 * (64-byte alignment, as the layer allocates). */
uint64_t tut_tile_bytes(uint64_t elems, uint64_t es);

#endif
