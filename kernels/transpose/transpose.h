/* The two grid transpose leaves (docs/parts/kernels.md; registry keys
 * tiled_pf_transpose and tiled_dve_transpose_10, grid VNC(2)).
 *
 * Both compute out = np.transpose(in, permutation) for call->args[0] (in)
 * and call->args[1] (out, whose shape must already be the transposed shape
 * and whose dtype must equal in's), attribute "permutation" (a list of
 * ints; absent = reverse the dims). The permutation must reduce to a swap
 * of the last two dim groups (kernels/transpose/transpose_plan.h); otherwise the leaf
 * refuses with "operand 0 (NAME): permutation [..] does not reduce to a
 * swap of the last two dim groups (merged: shape [..], permutation [..])".
 * Every ISA dtype is moved bit-exactly (NaN payloads included), any sizes.
 *
 * Work split over the grid (program p of n takes the contiguous share
 * [p*ceil(U/n), min((p+1)*ceil(U/n), U)) of U units; the result does not
 * depend on the split):
 *   tiled_pf_transpose:     U = B*C output rows out[b][c][:];
 *   tiled_dve_transpose_10: U = B batches when a whole R x C matrix fits in
 *                           one partition's tile, else the B*C output rows;
 *   identity permutations:  U = the elements (a plain HBM -> HBM copy).
 * docs/parts/kernels.md describes the tiling of each. */
#ifndef NXSIM_KERNELS_TRANSPOSE_H
#define NXSIM_KERNELS_TRANSPOSE_H

#include "kernels/author/author.h"
#include "kernels/kernel.h"

/* Through the PE array: 128 x 128 blocks SBUF [r, c] -> PSUM [c, r]
 * (transpose), PSUM -> SBUF on DVE/ACT alternately, then HBM. */
int tiled_pf_transpose(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);
/* On the DVE: blocks on partitions, the swap in each partition's free dims
 * (a strided tensor_copy). */
int tiled_dve_transpose_10(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

/* Traces `leaf` (one of the two above) on HBM tensors `in` (operand 0)
 * and `out` (operand 1, shaped as in permuted by `perm`, same dtype) with
 * the permutation `perm` (ndims entries): for leaves that re-lay-out an
 * operand or a result through HBM scratch. Errors are the leaf's. */
int nx_transpose_tensors(struct nx_kctx *k, nx_leaf_fn leaf, const nx_tensor_ref *in, const nx_tensor_ref *out,
                         const int64_t *perm, uint32_t ndims, nx_error *err);

/* nx_transpose_tensors with the leaf chosen by the one rule for it: whole
 * matrices per partition on the DVE (tiled_dve_transpose_10: contiguous
 * transfers) when one matrix, `matrix_bytes`, takes at most 1/16 of an
 * SBUF partition of k's machine; else through the PE (tiled_pf_transpose).
 * The rule names the leaves, so it lives with them, not in the authoring
 * layer below them. */
/* An HBM tensor reference (name truncated to fit) at byte offset off: for
 * composites that hand a leaf views of their operands or scratch tensors. */
nx_tensor_ref nx_tensor_ref_at(const char *name, nx_dtype dt, uint32_t nd, const uint64_t *shape, uint64_t off);

/* The leaf that rule picks for an R x C matrix of matrix_bytes on geometry
 * g, and its registry key in *name (when name is not NULL). */
nx_leaf_fn nx_transpose_leaf_for(const nx_geometry *g, uint64_t matrix_bytes, const char **name);

int nx_transpose_tensors_sized(struct nx_kctx *k, const nx_tensor_ref *in, const nx_tensor_ref *out,
                               const int64_t *perm, uint32_t ndims, uint64_t matrix_bytes, nx_error *err);

#endif
