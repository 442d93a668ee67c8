/* Internal to isa/: the fused elementwise kernel of the DVE/ACT
 * instructions whose result is a chain of ALU steps over one tensor
 * (tensor_tensor, tensor_scalar, scalar_tensor_tensor, and activation with
 * the identity function and no acc_out): one pass over memory per
 * partition instead of row buffers of engine values.
 *
 *   t = a[p, e]; for each step: t = t op x (x op t when rev); dst[p, e] = t
 *
 * with x element e of the step's tensor or its per-partition scalar. */
#ifndef NXSIM_ISA_EW_H
#define NXSIM_ISA_EW_H

#include "access.h"
#include "insn.h"

typedef struct nx_ew_step {
    nx_alu_op op;
    int rev;
    const nx_view *tensor; /* element e of partition p, or NULL ... */
    const nx_view *scalar; /* ... the scalar of partition p (nx_view_scalar) */
} nx_ew_step;

enum { NX_EW_MAX_STEPS = 2 };

/* Does the instruction, for every partition in order, when it qualifies:
 * dst, a and every step's tensor are each one contiguous run of a float
 * dtype per partition, each of a and the tensors either is dst (same
 * address and dtype: in place) or does not overlap it, the ops are
 * bypass, add, subtract, multiply, divide, max, min, abs_max or a
 * comparison, and there are at most NX_EW_MAX_STEPS steps. Returns 1 when
 * it did the instruction, 0 (nothing written) when it does not qualify.
 * The result is the element path's bit for bit: nx_view_load, nx_alu_apply
 * per step, nx_view_store (a row at a time, partitions in order), which
 * for such operands is the same as element by element. With reads_first
 * the instruction's semantics read every input of every partition before
 * writing (activation): then it also needs each memory input and scalar
 * to lie in another memory than dst or at or after dst's first partition,
 * so that no later partition's input is in a row written before it. */
int nx_ew_fused(const nx_view *dst, const nx_view *a, const nx_ew_step *steps, int nsteps, int reads_first);

#endif
