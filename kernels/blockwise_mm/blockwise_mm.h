/* The blockwise_mm leaf (registry key #10, one core): MoE prefill over
 * blocks of routed tokens. Operands, attributes and semantics:
 * kernels/blockwise_mm/blockwise_mm_params.h; the engine mapping and tiling:
 * docs/parts/kernels.md ("blockwise_mm") and the opening comment of
 * kernels/blockwise_mm/blockwise_mm.c.
 *
 * call->args: the six operands in order, then the output (T+1, H) of
 * hidden_states' dtype. The leaf declares one HBM scratch tensor of its own
 * ("blockwise_mm.acc", the output in column chunks, nrep times; see the
 * plan below), so
 * the builder it traces into must not hold a tensor of that name. The plan
 * it makes is kernels/blockwise_mm/blockwise_mm_plan.h. */
#ifndef NXSIM_KERNELS_BLOCKWISE_MM_H
#define NXSIM_KERNELS_BLOCKWISE_MM_H

#include "kernels/author/author.h"
#include "blockwise_mm_params.h"
#include "blockwise_mm_plan.h"
#include "kernels/kernel.h"

int blockwise_mm(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
