/* The permutation analysis shared by the two transpose leaves.
 *
 * Reduction rule: drop size-1 dims (they do not change the memory order),
 * then merge dims that are adjacent in the input and stay adjacent, in the
 * same order, in the output. What is left must be one of
 *   0 or 1 group        the identity: a plain copy;
 *   2 groups  [1,0]     a 2-D transpose   in[R][C]    -> out[C][R];
 *   3 groups  [0,2,1]   a batched one     in[B][R][C] -> out[B][C][R].
 * Anything else is refused. Examples (docs/parts/kernels.md): [2,4,8,16,32] perm
 * [0,1,4,2,3] -> B=8, R=128, C=32; [4,5,6,7] perm [2,3,0,1] -> R=20, C=42. */
#ifndef NXSIM_KERNELS_TRANSPOSE_PLAN_H
#define NXSIM_KERNELS_TRANSPOSE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"

typedef struct nx_transpose_plan {
    uint64_t batch, rows, cols; /* out[b][c][r] = in[b][r][c] */
    uint64_t elems;             /* batch * rows * cols */
    int copy;                   /* rows == 1 or cols == 1 (or no elements): a plain copy */
    nx_dtype dtype;
    uint64_t in_offset, out_offset; /* HBM bytes of the input and output tensors */
} nx_transpose_plan;

/* Reduces `shape` under `perm` (entries in [-ndims, ndims), negative ones
 * counted from the end as numpy does). On refusal: -1 with
 *   permutation [2,0,1] does not reduce to a swap of the last two dim groups
 *   (merged: shape [4,5,6], permutation [2,0,1])
 * or "permutation [0,0] is not a permutation of the 2 dims". */
int nx_transpose_reduce(uint32_t ndims, const uint64_t *shape, const int64_t *perm,
                        nx_transpose_plan *plan, nx_error *err);

/* The permutation a transpose call asks for: attribute "permutation" (a list
 * of ints; absent or none = reverse the dims, like numpy). */
int nx_transpose_perm_attr(const nx_attrs *attrs, uint32_t ndims, int64_t *perm, nx_error *err);

/* np.transpose's result shape: the permutation of `attrs` (as above),
 * checked to be a permutation of the ndims dims ("permutation [0,0] is not a
 * permutation of the 2 dims") and normalised into perm (entries in
 * [0, ndims)); out_shape[k] = shape[perm[k]]. The one home of this rule: the
 * leaves (nx_transpose_prepare), the registry's result-shape rule and the
 * reference adapter all call it. */
int nx_transpose_out_shape(const nx_attrs *attrs, uint32_t ndims, const uint64_t *shape, int64_t *perm,
                           uint64_t *out_shape, nx_error *err);

/* The same for the attribute `name` (the `transpose` composite's "perm");
 * its messages name it ("attribute perm: has 2 entries, the input has 3
 * dims"). */
int nx_transpose_out_shape_named(const nx_attrs *attrs, const char *name, uint32_t ndims, const uint64_t *shape,
                                 int64_t *perm, uint64_t *out_shape, nx_error *err);

/* The merged form nx_transpose_reduce refuses or accepts: size-1 dims
 * dropped, dims adjacent in the input and the output merged; *ng groups,
 * in_size[j] the size of the j-th group in input order, gperm[k] the input
 * position of output group k. p: the normalised permutation. */
void nx_transpose_groups(uint32_t ndims, const uint64_t *shape, const uint32_t *p, uint32_t *ng,
                         uint64_t *in_size, int64_t *gperm);

/* The call checks both leaves share: one input args[0] and one output
 * args[1], the permutation, equal dtypes and the output's shape; then the
 * reduction. Messages name the operand: "operand 0 (x): permutation ..." ,
 * "operand 1 (y): dtype bf16 differs from operand 0 (x)'s fp32". `leaf`
 * names the leaf in the argument-count message. */
int nx_transpose_prepare(const char *leaf, const nx_kernel_call *call, nx_transpose_plan *plan,
                         nx_error *err);

/* Emits the identity case: this program's share of the elements (split by
 * nx_kctx_rows over plan->elems) copied HBM -> HBM in transfers of up to
 * 128 rows x 32 KiB spread over the DMA lanes. */
int nx_transpose_emit_copy(nx_kctx *k, const nx_transpose_plan *plan, nx_error *err);

/* "[a,b,c]" of n values into buf. */
void nx_format_u64_list(char *buf, size_t len, const uint64_t *v, uint32_t n);
void nx_format_i64_list(char *buf, size_t len, const int64_t *v, uint32_t n);

#endif
