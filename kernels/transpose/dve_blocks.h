/* tiled_dve_transpose_10's block route (dve_blocks.c): the swap across the
 * partitions of groups of E (a POOL gather, or DVE transposes of E x E
 * blocks) with long runs on both transfers, against the free-dim route of
 * tiled_dve_transpose_10.c. Internal to kernels/transpose/. */
#ifndef NXSIM_KERNELS_TRANSPOSE_DVE_BLOCKS_H
#define NXSIM_KERNELS_TRANSPOSE_DVE_BLOCKS_H

#include <stdint.h>

#include "isa/machine.h"
#include "transpose_plan.h"

/* 1 if output rows [lo, hi) (of batch x cols) can take the block route: rows,
 * cols, lo and hi multiples of E (pool_partitions_per_core, or
 * dve_transpose_max when the partitions do not split into POOL groups). */
int nx_dve_blocks_fit(const nx_geometry *geo, const nx_transpose_plan *pl, uint64_t lo, uint64_t hi);
/* Estimated ns of the block route over `out_rows` output rows: the larger of
 * the swaps' engine time and the bytes over the core's DMA rate at the
 * tiles' run efficiency. */
double nx_dve_blocks_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows);
/* Estimated ns of the free-dim route over `out_rows` output rows with
 * `tile_elems`-element blocks: the bytes over the core's DMA rate at the
 * efficiency of the blocks' runs (about sqrt(tile_elems) elements). */
double nx_dve_free_ns(const nx_machine *m, const nx_transpose_plan *pl, uint64_t out_rows, uint64_t tile_elems);
/* Emits the block route for output rows [lo, hi). */
int nx_dve_blocks_emit(nx_kctx *k, const nx_transpose_plan *pl, uint64_t lo, uint64_t hi, nx_error *err);

#endif
