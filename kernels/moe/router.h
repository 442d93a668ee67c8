/* The MoE router (`router_topk`, docs/parts/moe.md), the token-generation
 * router of the production roster:
 *   operands  x [T, H], w [H, E] (x's dtype), [bias [E] fp32 or bf16 when
 *             bias = true];
 *   logits    l = x w + b in fp32;
 *   pre_norm  (default true): p = act(l over all E experts); the k largest
 *             logits are selected; affinities = p at them, L1-normalised
 *             over them when norm_topk;
 *   otherwise affinities = act over the k selected logits only (softmax:
 *             over those k; sigmoid: elementwise, as with pre_norm), and
 *             norm_topk L1-normalises them too (a no-op for softmax, which
 *             already sums to 1; it matters for sigmoid): nxsim's decision,
 *             docs/parts/moe.md;
 *   results   logits [T, E] fp32, affinities [T, E] fp32 (zero at the
 *             unselected experts), indices [T, k] int32 in descending logit
 *             order, among equal logits the lower index first.
 * Attributes: k (required, 1 .. min(E, 16)), act ("softmax" default |
 * "sigmoid"), pre_norm (true), norm_topk (false), bias (false). E up to 512
 * (one PSUM bank of fp32 logits per token).
 *
 * One reader (nx_router_read) checks an op for the rules and a call for the
 * kernel; errors name the operand or attribute, the value and the limit. */
#ifndef NXSIM_KERNELS_MOE_ROUTER_H
#define NXSIM_KERNELS_MOE_ROUTER_H

#include <stdint.h>

#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

#define NX_ROUTER_MAX_K 16
#define NX_ROUTER_MAX_E 512

typedef enum nx_router_act { NX_ROUTER_SOFTMAX = 0, NX_ROUTER_SIGMOID } nx_router_act;

typedef struct nx_router_params {
    nx_dtype dtype;      /* x's and w's */
    nx_dtype bias_dtype; /* bias's (when bias) */
    uint64_t T, H, E, k;
    nx_router_act act;
    int pre_norm, norm_topk, bias;
    uint32_t n_operands; /* 2 + bias */
} nx_router_params;

extern const char *const nx_router_attrs[];

/* Reads attrs (NULL: defaults; k is required) and checks the operands
 * in[0 .. n_in). */
int nx_router_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_router_params *p,
                   nx_error *err);

/* The kernel: call->args = x, w [, bias], then logits, affinities, indices. */
int nx_router_topk(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
