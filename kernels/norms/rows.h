/* What the row-wise kernels of kernels/norms/ share: rows on the
 * partitions, HBM views of row tiles, loads and stores cut over the DMA
 * engines, and the broadcast of a [H] vector (gamma, beta) to every
 * partition through the PE. Internal to the family. */
#ifndef NXSIM_KERNELS_NORMS_ROWS_H
#define NXSIM_KERNELS_NORMS_ROWS_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"

/* Lane groups: loads on the first queue of every DMA engine, stores on the
 * second, so a store that waits for its compute never holds up the next
 * tile's load behind it in one queue. */
#define NX_ROWS_LOAD_LANE 0u

typedef struct nx_rows {
    nx_kctx *k;
    uint32_t partitions; /* rows per tile */
    uint32_t engines;    /* DMA engines a row tile is cut over */
    uint32_t store_lane; /* first lane of the store group */
    uint64_t sbuf_bytes; /* per partition */
} nx_rows;

void nx_rows_init(nx_rows *r, nx_kctx *k);

/* Rows [r0, r0 + n) of an HBM tensor at byte `base` of rows of `cols`
 * elements (cols fits an int32 pitch: the callers check it). */
nx_operand nx_rows_hbm(nx_dtype dt, uint64_t base, uint64_t r0, uint32_t n, uint64_t cols);

/* Partitions [0, n) of a tile, elements [c0, c0 + cols), as `as`. */
nx_operand nx_rows_view(const nx_tile *t, nx_dtype as, uint32_t n, uint64_t c0, uint64_t cols);

/* Elements [first, first + n) of partitions [0, lines) of t as `as`, in order
 * (dir 1) or backwards from `first` (dir -1): a scan's view. */
nx_operand nx_rows_run(const nx_tile *t, nx_dtype as, uint32_t lines, uint64_t first, uint64_t n, int dir);

/* A row-tile transfer cut by partitions over the DMA engines (one piece
 * per engine, at most one per row), on the load or the store group. */
int nx_rows_load(nx_rows *r, const nx_operand *dst, const nx_operand *src, nx_error *err);
int nx_rows_store(nx_rows *r, const nx_operand *dst, const nx_operand *src, nx_error *err);

/* Lines along one axis of a tensor viewed as [outer, A, inner]: a line is
 * one (outer, inner) pair of A elements `inner` apart. A tile takes up to
 * P lines: consecutive outer indices when inner == 1 (contiguous rows),
 * else up to P consecutive inner indices of one outer index. */
typedef struct nx_lines {
    nx_dtype dtype;
    uint64_t outer, A, inner;
} nx_lines;
typedef struct nx_lines_tile {
    uint64_t offset; /* element offset of line 0, element 0 */
    uint32_t n;      /* lines */
} nx_lines_tile;
uint64_t nx_lines_count(const nx_lines *l, uint32_t P);
nx_lines_tile nx_lines_at(const nx_lines *l, uint32_t P, uint64_t t);
/* Elements [a0, a0 + count) of the tile's lines in the HBM tensor at byte
 * `base`, as `dt` (the tensor's dtype). */
nx_operand nx_lines_hbm(const nx_lines *l, nx_dtype dt, uint64_t base, const nx_lines_tile *t, uint64_t a0,
                        uint64_t count);

/* ScalarE's accumulate form: dst = func(in + bias) (scale 1; bias an
 * immediate or per-partition scalar), acc = the fold of the fp32 results
 * with op (add, max, abs_max, ...). */
int nx_rows_activation_acc(nx_kctx *k, nx_act_func func, const nx_operand *dst, const nx_operand *in,
                           const nx_operand *bias, const nx_operand *acc, nx_alu_op op, nx_error *err);

/* Stores per-row values without one-element DMA rows (which move at a
 * fraction of a DMA engine's rate): columns [c0, c0 + ncols) of the fp32
 * tile `src`, rows [0, n), are transposed on the PE into `ps` (PSUM,
 * ncols x >= n fp32), copied by ACT into `sb` (SBUF, ncols x >= n of
 * out_dt, the one rounding), and column j is stored as n contiguous
 * elements at HBM byte hbm[j]. */
int nx_rows_store_cols(nx_rows *r, const nx_tile *src, uint32_t n, uint64_t c0, uint32_t ncols, const nx_tile *ps,
                       const nx_tile *sb, nx_dtype out_dt, const uint64_t *hbm, nx_error *err);

/* Bytes per partition of a tile of `elems` elements of dt (64-byte aligned). */
uint64_t nx_rows_tile_bytes(uint64_t elems, nx_dtype dt);

/* out = [partitions x H] of dt, every partition a copy of the HBM vector
 * [H] of dtype `vdt` at byte `vec`: the vector is loaded into one
 * partition and multiplied on the PE by a ones column (stationary [1, P],
 * moving [1, <= 512] per PSUM bank), each bank copied out by ACT. Exact:
 * each product is 1 x v in fp32. The one-partition tiles it uses are
 * released before it returns; out is allocated by it. */
int nx_rows_broadcast(nx_rows *r, const char *name, uint64_t vec, nx_dtype vdt, uint64_t H, nx_dtype dt,
                      nx_tile *out, nx_error *err);

/* The same for a consumer that reads only partitions [0, rows) of out (a
 * few decode tokens): when vdt == dt and those rows are at most
 * NX_ROWS_BROADCAST_DMA_MAX bytes, one DMA from HBM with a partition stride
 * of 0, cut over the DMA engines, fills them (no PE pass, no ScalarE copies,
 * no temporaries: the PE path's ~10 us at H 8192 sat at the start of every
 * decode mlp and qkv); otherwise nx_rows_broadcast. Partitions from rows on
 * are then unwritten. */
#define NX_ROWS_BROADCAST_DMA_MAX (256u * 1024u)
int nx_rows_broadcast_rows(nx_rows *r, const char *name, uint64_t vec, nx_dtype vdt, uint64_t H, nx_dtype dt,
                           uint32_t rows, nx_tile *out, nx_error *err);

#endif
