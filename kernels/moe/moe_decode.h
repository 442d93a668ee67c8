/* The `moe_decode` composite (the expert MLPs of MoE token generation), as
 * docs/parts/moe-decode.md defines it:
 *   operands  x [T, H], w_gate and w_up [E, H, I], w_down [E, I, H] (x's
 *             dtype, fp32 or bf16), affinities [T, E] fp32, indices [T, k]
 *             int32;
 *   result    out [T, H] of x's dtype:
 *             out_t = sum over the slots j of token t with e = indices[t, j]
 *             != -1 of affinities[t, e] * (round(act(x_t Wg_e) * (x_t Wu_e)) Wd_e)
 *             (mode "selected"), or over every expert e of
 *             affinities[t, e] * (...) (mode "all"); round = to x's dtype.
 * Attributes act ("silu" | "gelu" | "gelu_tanh" | "relu"), mode
 * ("selected" | "all"). T up to 128, k up to 16 and at most E.
 *
 * One reader (nx_moe_decode_read) checks an op for the rules and a call for
 * the kernel; errors name the operand or attribute, the value and the
 * limit. */
#ifndef NXSIM_KERNELS_MOE_DECODE_H
#define NXSIM_KERNELS_MOE_DECODE_H

#include <stdint.h>

#include "isa/insn.h"
#include "kernels/author/author.h"
#include "kernels/kernel.h"
#include "kernels/norms/norms.h"

#define NX_MOE_DECODE_OPERANDS 6
#define NX_MOE_DECODE_MAX_T 128
#define NX_MOE_DECODE_MAX_K 16

typedef struct nx_moe_decode_params {
    nx_dtype dtype;      /* x's and the weights' */
    uint64_t T, H, inter, E, k; /* inter: I (the name I is complex.h's macro) */
    nx_act_func act;
    int all;             /* mode "all" */
} nx_moe_decode_params;

extern const char *const nx_moe_decode_attrs[];

/* Reads attrs (NULL: defaults) and checks the operands in[0 .. n_in). */
int nx_moe_decode_read(const nx_attrs *attrs, const nx_norm_tensor *in, uint32_t n_in, nx_moe_decode_params *p,
                       nx_error *err);

/* The kernel: call->args = the six operands, then out. */
int nx_moe_decode(nx_kctx *k, const nx_kernel_call *call, nx_error *err);

#endif
