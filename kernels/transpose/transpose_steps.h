/* The general `transpose` composite (ONNX Transpose, docs/parts/transpose.md):
 * any permutation of up to 6 dims, done as steps of the two registry
 * transposes and DMA.
 *
 * Call: args[0] = x (any dtype, rank 1..6), args[1] = y (x's dtype, shape
 * x.shape permuted); attribute `perm` (a list of ints, negative entries
 * counted from the end; absent = the dims reversed, ONNX's default).
 *
 * Plan (nx_transpose_steps_plan, pure, so the run report can print it):
 * size-1 dims are dropped and dims adjacent in both x and y merged (as the
 * leaves do), leaving m <= 6 groups. A step maps one layout of the groups
 * to another, through HBM:
 *   leaf  a rotation [prefix][X][Y] -> [prefix][Y][X] (any split points):
 *         exactly what the leaves take (batch B = prefix, R = X, C = Y);
 *         the leaf is the one the leaves' rule picks for an R x C matrix
 *         (nx_transpose_leaf_for: tiled_dve_transpose_10 for small
 *         matrices, else tiled_pf_transpose), on the grid as they run;
 *   dma   any reordering that keeps the innermost group innermost: each
 *         contiguous run of it moves as one piece (no reshuffle within a
 *         partition), HBM -> HBM, the output rows split over the grid.
 * The step sequence is the cheapest path from x's layout to y's (Dijkstra
 * over the m! layouts) under an estimate of each step's DMA time: bytes
 * over the grid's DMA rate, weighted by nx_machine_dma_efficiency of the
 * step's shortest contiguous runs (the leaves' load and store runs, the dma
 * step's run), plus a fixed cost per step (a grid barrier and the
 * pipeline's fill). An identity is one dma copy. Steps write HBM scratch
 * tensors ("transpose.step<i>"), the last one y; a grid barrier separates
 * steps. */
#ifndef NXSIM_KERNELS_TRANSPOSE_STEPS_H
#define NXSIM_KERNELS_TRANSPOSE_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "isa/machine.h"
#include "kernels/author/author.h"
#include "kernels/kernel.h"

#define NX_TRANSPOSE_MAX_STEPS 6

typedef enum { NX_TSTEP_LEAF = 1, NX_TSTEP_DMA = 2 } nx_transpose_step_kind;

typedef struct nx_transpose_step {
    nx_transpose_step_kind kind;
    nx_leaf_fn leaf;       /* NX_TSTEP_LEAF: the leaf */
    const char *leaf_name; /* its registry key */
    uint32_t ndims;        /* the step's input: the groups in their current order */
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    int64_t perm[NX_KERNEL_MAX_DIMS]; /* out dim k = in dim perm[k] */
    uint64_t batch, rows, cols;       /* leaf: B, R, C */
    uint64_t run;                     /* dma: elements per contiguous run */
    double est_ns;
} nx_transpose_step;

typedef struct nx_transpose_steps {
    uint32_t n;
    nx_transpose_step step[NX_TRANSPOSE_MAX_STEPS];
    uint64_t elems;
    double est_ns; /* the sum */
} nx_transpose_steps;

/* The steps for x [shape] (ndims dims, es-byte elements) under perm
 * (normalised), planned for machine m on a grid of `programs` cores. */
int nx_transpose_steps_plan(const nx_machine *m, uint32_t programs, uint32_t ndims, const uint64_t *shape,
                            uint32_t es, const int64_t *perm, nx_transpose_steps *out, nx_error *err);

/* One line: "2 steps, est 45.1 us: tiled_pf_transpose [8192,256] perm
 * [1,0]; dma [256,64,128] perm [1,0,2] (runs of 128)". */
void nx_transpose_steps_text(const nx_transpose_steps *s, char *buf, size_t len);

/* The composite's trace function. */
int nx_transpose_general(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* A dma step: dst (contiguous, src's shape permuted by perm) <- src
 * (contiguous [shape]), HBM -> HBM, runs of the last dim (perm must keep
 * it last), this program's share of the output rows. */
int nx_transpose_dma_step(nx_kctx *k, nx_dtype dt, uint64_t src_off, uint64_t dst_off, uint32_t ndims,
                          const uint64_t *shape, const int64_t *perm, nx_error *err);

#endif
