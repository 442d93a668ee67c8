/* The `topk` composite (docs/parts/topk.md): the entry point of the top-k
 * kernels, reached by `nxsim run topk` and nx_run_op as an inventory
 * composite (its row: registry/families/topk.c), never a registry key.
 *
 * Call: args[0] = x (any rank), args[1] = values, args[2] = indices (int32),
 * both x's shape with the axis cut to k; attributes k, largest, axis
 * (default -1), method ("AUTO" default, or SCANNING / CASCADED /
 * ROTATIONAL), sorted (accepted; the output is always sorted) and the
 * leaves' tuning knobs folds and chunk (kernels/topk/topk.h).
 *
 * Dispatch: the method (kernels/topk/topk_auto.h for AUTO) picks the leaf
 * through the top-k method mapping (kernels/topk/topk_methods.h). An axis other
 * than the last is moved to the end first by a transpose leaf into an HBM
 * scratch tensor, and the results are transposed back (a grid barrier
 * between the phases: both programs' transposes feed both programs'
 * rows). */
#ifndef NXSIM_KERNELS_TOPK_COMPOSITE_H
#define NXSIM_KERNELS_TOPK_COMPOSITE_H

#include "kernels/author/author.h"
#include "kernels/kernel.h"

int nx_topk_composite(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
