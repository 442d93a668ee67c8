/* blockwise_mm (MoE prefill, registry key #10): its operands, attributes and
 * the one reader of them, shared by the leaf (kernels/blockwise_mm/blockwise_mm.c), the
 * reference (kernels/ref/blockwise_mm_ref.c) and the registry rules
 * (registry/families/blockwise_mm.c), so the three cannot disagree.
 *
 * Operands, in order (T tokens, H hidden, I intermediate, E experts, NB
 * blocks of B token positions):
 *   0 hidden_states            (T+1, H)        fp32 or bf16; row T is the
 *                                              public kernel's padding row
 *   1 expert_affinities_masked ((T+1)*E, 1)    any float dtype; [tok*E + e]
 *                                              (also accepted as (T+1, E))
 *   2 gate_up_proj_weight      (E, H, 2, I)    hidden_states' dtype;
 *                                              [., ., 0, .] gate, [., ., 1, .] up
 *   3 down_proj_weight         (E, I, H)       hidden_states' dtype
 *   4 token_position_to_id     (NB*B,)         int32 (also (NB*B, 1))
 *   5 block_to_expert          (NB, 1)         int32 (also (NB,))
 * Result: output (T+1, H) in hidden_states' dtype.
 * Attributes: block_size (int >= 1, required), expert_affinities_scaling_mode
 * ("POST_SCALE" default, "PRE_SCALE", "NO_SCALE").
 *
 * Semantics (docs/parts/kernels.md, "blockwise_mm"): output = 0; for each
 * block n with e = block_to_expert[n] in [0, E): for each of its B token
 * ids tok in [0, T): x = hidden_states[tok] (PRE_SCALE: x * a, rounded to
 * the input dtype), h = silu(x @ Wg[e]) * (x @ Wu[e]) rounded to the input
 * dtype (the PE's input), output[tok] += (h @ Wd[e]) * a (POST_SCALE; the
 * other modes add h @ Wd[e]), a = affinities[tok*E + e]. Token ids outside
 * [0, T) (T is the padding row, -1 the DMA's skipped row) and blocks whose
 * expert is outside [0, E) contribute nothing; row T of the output is 0. A
 * token in several blocks accumulates. */
#ifndef NXSIM_KERNELS_BLOCKWISE_MM_PARAMS_H
#define NXSIM_KERNELS_BLOCKWISE_MM_PARAMS_H

#include <stdint.h>

#include "kernels/kernel.h"

#define NX_BWMM_OPERANDS 6

typedef enum nx_bwmm_scaling {
    NX_BWMM_POST_SCALE = 0, /* output += (h @ Wd) * a  (the default) */
    NX_BWMM_PRE_SCALE = 1,  /* x = x * a before the MLP */
    NX_BWMM_NO_SCALE = 2,   /* output += h @ Wd */
} nx_bwmm_scaling;

/* "POST_SCALE", "PRE_SCALE", "NO_SCALE". */
const char *nx_bwmm_scaling_name(nx_bwmm_scaling s);

typedef struct nx_bwmm_params {
    uint64_t T, H, inter, E, NB, B; /* inter: the intermediate size I */
    nx_dtype dtype;                 /* hidden_states, both weights and the output */
    nx_dtype aff_dtype;             /* expert_affinities_masked */
    nx_bwmm_scaling scaling;
} nx_bwmm_params;

/* An operand as the reader sees it (borrowed). */
typedef struct nx_bwmm_tensor {
    const char *name;
    nx_dtype dtype;
    uint32_t ndims;
    const uint64_t *shape;
} nx_bwmm_tensor;

/* Reads the attributes and checks the NX_BWMM_OPERANDS operands' shapes and
 * dtypes against each other. Errors name the operand or attribute and the
 * rule, e.g. "operand 2 (gate_up_proj_weight): shape [4,64,2,32] must be
 * [E, H, 2, I] = [4,96,2,I] (H from operand 0 (hidden_states))" or
 * "attribute block_size: is missing (blockwise_mm needs the block size B)". */
int nx_bwmm_params_read(const nx_attrs *attrs, const nx_bwmm_tensor *ops, uint32_t n_ops, nx_bwmm_params *p,
                        nx_error *err);

/* The result's shape: (T+1, H). */
void nx_bwmm_result_shape(const nx_bwmm_params *p, uint64_t shape[2]);

#endif
