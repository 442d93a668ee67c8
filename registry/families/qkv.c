/* The qkv family's rules (kernels/qkv/qkv.h):
 *   results    layout bsd: out [B, S, (nq + 2 nkv) d]; heads: q [B, nq, S, d],
 *              k and v [B, nkv, S, d]; of x's dtype;
 *   reference  nx_ref_qkv (norm in double, h rounded to the dtype, the
 *              projection in fp32 through OpenBLAS, bias and rotate-half in
 *              double, one rounding);
 *   tolerance  both sides round h to the dtype from fp32 / double norms
 *              (an element near a rounding boundary may land on either side)
 *              and sum H products in fp32 in different orders (the matmul's
 *              2 H sqrt(H) u), then add the bias and rotate in fp32 (|cos| +
 *              |sin| <= sqrt 2 on the sum's error) and round once:
 *              3 + 2 H sqrt(H) u / eps(dtype) units of eps, relative above 1
 *              and absolute below (u = 2^-24);
 *   default    x [2, 8, 256] bf16, 4 q heads, 2 kv heads, d 32, RMSNorm,
 *              bias, RoPE with cos/sin [8, 16], layout bsd. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/qkv/qkv.h"
#include "kernels/ref/ref.h"

static int qkv_read(const nx_macro_op *op, nx_qkv_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_qkv_read(&op->attrs, in, op->n_operands, p, err);
}

static int qkv_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_qkv_params p;
    if (qkv_read(op, &p, err) != 0) return -1;
    static const char *const bsd[1] = {"out"}, *const heads[3] = {"q", "k", "v"};
    for (uint32_t j = 0; j < nx_qkv_n_results(&p); j++) {
        uint32_t nd;
        uint64_t shape[4];
        nx_qkv_result_shape(&p, j, &nd, shape);
        const char *dflt = p.heads ? heads[j] : bsd[0];
        if (nx_macro_op_add_result(op, names && names[j] ? names[j] : dflt, p.dtype, nd, shape, err) != 0) return -1;
    }
    return 0;
}

static int qkv_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_qkv_params p;
    if (qkv_read(op, &p, err) != 0) return -1;
    return nx_ref_qkv(&p, in, out, err);
}

static int qkv_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[3] = {2, 8, 256}, w[2] = {256, 256}, g[1] = {256}, b[1] = {256}, cs[2] = {8, 16};
    nx_value nq = nx_value_int(4), nkv = nx_value_int(2), hd = nx_value_int(32), yes = nx_value_bool(1),
             yes2 = nx_value_bool(1);
    if (nx_macro_op_add_operand(op, "x", NX_DT_BF16, 3, x, err) != 0 ||
        nx_macro_op_add_operand(op, "w", NX_DT_BF16, 2, w, err) != 0 ||
        nx_macro_op_add_operand(op, "gamma", NX_DT_BF16, 1, g, err) != 0 ||
        nx_macro_op_add_operand(op, "bias", NX_DT_BF16, 1, b, err) != 0 ||
        nx_macro_op_add_operand(op, "cos", NX_DT_BF16, 2, cs, err) != 0 ||
        nx_macro_op_add_operand(op, "sin", NX_DT_BF16, 2, cs, err) != 0)
        return -1;
    return nx_attrs_set(&op->attrs, "n_q_heads", &nq, err) != 0 || nx_attrs_set(&op->attrs, "n_kv_heads", &nkv, err) != 0 ||
                   nx_attrs_set(&op->attrs, "head_dim", &hd, err) != 0 ||
                   nx_attrs_set(&op->attrs, "bias", &yes, err) != 0 || nx_attrs_set(&op->attrs, "rope", &yes2, err) != 0
               ? -1
               : 0;
}

static int qkv_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_qkv_params p;
    if (qkv_read(op, &p, err) != 0) return -1;
    double H = (double)p.H, eps = nx_dtype_epsilon(p.dtype), m = 3.0 + 2.0 * H * sqrt(H) * 0x1p-24 / eps;
    memset(out, 0, sizeof *out);
    out->abs = out->rel = m * eps;
    snprintf(out->text, sizeof out->text, "H=%.0f: %.3g x eps(%s)", H, m, nx_dtype_name(p.dtype));
    return 0;
}

static const nx_op_rules nx_rules_qkv = {
    .attrs = nx_qkv_attrs,
    .infer_results = qkv_infer,
    .default_op = qkv_default,
    .reference = qkv_reference,
    .reference_name = "nx_ref_qkv",
    .tolerance = qkv_tolerance,
};

/* The composite: the fused QKV projection on both cores of the VNC grid
 * (kernels/qkv/qkv.c): heads split for decode, tokens for prefill. */
static const nx_composite qkv_composites[] = {
    {.name = "qkv",
     .config = NX_CONFIG(NX_LEAF(nx_qkv), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_qkv,
     .via = "nxsim run qkv (fused RMSNorm, QKV projection, bias, RoPE on q and k; GQA; layouts bsd and heads)"},
};

const nx_family nx_family_qkv = {.name = "qkv", NX_FAMILY_COMPOSITES(qkv_composites)};
