/* The moe family's rules (kernels/moe/): the token-generation router.
 * router_topk (kernels/moe/router.h):
 *   results    logits [T, E] fp32, affinities [T, E] fp32, indices [T, k]
 *              int32;
 *   reference  nx_ref_router_topk (sgemm logits, a plain selection, the
 *              activation in double, kernels/ref/ref.h);
 *   tolerance  logits: PSUM sums K = H (+1 with the bias) fp32 terms (the
 *              products of bf16 are exact, of fp32 rounded once):
 *              abs = rel = 4 u + 2 K sqrt(K) u, u = 2^-24 (the matmul
 *              composite's rule in fp32 units); affinities: the activation
 *              of a logit difference (twice the logits' error) and a few
 *              roundings of the exp, the sum and the division:
 *              abs = rel = 16 u + 4 K sqrt(K) u; indices: exact (a wrong
 *              selection moves an index);
 *   default    x [64, 512] bf16, w [512, 32] bf16, k 4. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/moe/router.h"
#include "kernels/ref/ref.h"

static int rt_read(const nx_macro_op *op, nx_router_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_router_read(&op->attrs, in, op->n_operands, p, err);
}

static int rt_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_router_params p;
    if (rt_read(op, &p, err) != 0) return -1;
    static const char *const dflt[3] = {"logits", "affinities", "indices"};
    const uint64_t te[2] = {p.T, p.E}, tk[2] = {p.T, p.k};
    for (uint32_t j = 0; j < 3; j++)
        if (nx_macro_op_add_result(op, names && names[j] ? names[j] : dflt[j], j == 2 ? NX_DT_INT32 : NX_DT_FP32, 2,
                                   j == 2 ? tk : te, err) != 0)
            return -1;
    return 0;
}

static int rt_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_router_params p;
    if (rt_read(op, &p, err) != 0) return -1;
    return nx_ref_router_topk(&p, in[0], in[1], p.bias ? in[2] : NULL, out[0], out[1], out[2], err);
}

static int rt_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {64, 512}, w[2] = {512, 32};
    nx_value k = nx_value_int(4);
    if (nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err) != 0 ||
        nx_macro_op_add_operand(op, "w", NX_DT_BF16, 2, w, err) != 0)
        return -1;
    return nx_attrs_set(&op->attrs, "k", &k, err);
}

static int rt_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_router_params p;
    memset(out, 0, sizeof *out);
    if (rt_read(op, &p, err) != 0) return -1;
    if (result == 2) {
        snprintf(out->text, sizeof out->text, "exact (expert ids)");
        return 0;
    }
    const double K = (double)(p.H + (uint64_t)p.bias), u = 0x1p-24, s = 2 * K * sqrt(K) * u;
    out->abs = out->rel = result == 0 ? 4 * u + s : 16 * u + 2 * s;
    snprintf(out->text, sizeof out->text, "%s u + %s K sqrt(K) u, K=%.0f", result == 0 ? "4" : "16",
             result == 0 ? "2" : "4", K);
    return 0;
}

static const nx_op_rules nx_rules_router_topk = {
    .attrs = nx_router_attrs,
    .infer_results = rt_infer,
    .default_op = rt_default,
    .reference = rt_reference,
    .reference_name = "nx_ref_router_topk",
    .tolerance = rt_tolerance,
};

/* The composites: the MoE router of token generation (kernels/moe/). */
static const nx_composite moe_composites[] = {
    {.name = "router_topk",
     .config = NX_CONFIG(NX_LEAF(nx_router_topk), NX_OPERANDS_ALL, NULL, true),
     .rules = &nx_rules_router_topk,
     .via = "nxsim run router_topk (attributes k, act, pre_norm, norm_topk, bias)"},
};

const nx_family nx_family_moe = {.name = "moe", NX_FAMILY_COMPOSITES(moe_composites)};
