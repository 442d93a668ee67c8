/* The `mlp` composite of the production roster (docs/parts/mlp.md): the
 * dense gated MLP of a Llama-style layer with its optional fused RMSNorm
 * and residual add.
 *   operands  x [T, H] or [B, S, H], w_gate [H, I], w_up [H, I],
 *             w_down [I, H], [gamma [H] with norm="rms"],
 *             [r (x's shape) with residual=true];
 *   x' = x + r (rounded to x's dtype); h = rmsnorm(x') = x' / sqrt(mean(x'^2)
 *   + eps) * gamma (or x'), rounded to the dtype;
 *   a = act(h Wg) * (h Wu), rounded to the dtype; out = a Wd;
 *   results   out (x's shape and dtype) [, x' with residual].
 * Attributes: act ("silu" default, "gelu" (erf), "gelu_tanh", "relu"),
 * norm ("none" default | "rms"), eps (1e-6), residual (false), plan
 * ("auto" default | "decode" | "prefill": which of the two plans runs;
 * auto takes decode for up to 128 tokens).
 * Every operand is fp32 or bf16: the weights of x's dtype, gamma and r of
 * either (r is added to x in fp32, the sum rounded to x's dtype; gamma is
 * read in its own dtype). Errors name the operand
 * or attribute, the value and the limit; nx_mlp_read checks an op for the
 * rules and a call for the kernel. */
#ifndef NXSIM_KERNELS_MLP_MLP_H
#define NXSIM_KERNELS_MLP_MLP_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

typedef enum nx_mlp_plan {
    NX_MLP_PLAN_AUTO = 0,
    NX_MLP_PLAN_DECODE,
    NX_MLP_PLAN_PREFILL,
} nx_mlp_plan;

typedef struct nx_mlp_params {
    nx_dtype dtype;      /* x's, the weights', out's and x''s */
    nx_dtype gamma_dtype, r_dtype; /* fp32 or bf16 each (x's when absent) */
    nx_act_func act;
    int norm;        /* 1: rms */
    int residual;
    double eps;
    nx_mlp_plan plan;   /* as asked */
    uint64_t T, H, inter; /* T = the product of x's leading dims; inter = I */
    uint32_t n_operands, n_results;
    uint32_t gamma_operand, r_operand; /* positions (0 when absent) */
} nx_mlp_params;

extern const char *const nx_mlp_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in). */
int nx_mlp_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_mlp_params *p, nx_error *err);
/* The plan that runs on geometry g (auto resolved): decode or prefill. */
nx_mlp_plan nx_mlp_plan_of(const nx_mlp_params *p, const nx_geometry *g);
/* The kernel: call->args = the operands above, then the results. */
int nx_mlp(nx_kctx *k, const nx_kernel_call *call, nx_error *err);
/* nx_mlp with w_gate's and w_up's rows gu_ld elements apart (0: I), their
 * [H, I] a column block of wider weights (decoder_layer's tp 2 shard of
 * the unsharded w_gate and w_up, read in place). Internal to the
 * composites (not an attribute): the operands keep the block's shape. */
int nx_mlp_pitched(nx_kctx *k, const nx_kernel_call *call, uint64_t gu_ld, nx_error *err);

#endif
