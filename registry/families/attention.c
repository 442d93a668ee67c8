/* The attention family's rules (kernels/attention/flash.h):
 * attention (context encoding, flash style):
 *   results    out [B, Hq, Sq, D] of q's dtype;
 *   reference  nx_ref_attention (masked fp32 scores, a plain softmax in
 *              double with the sink, P rounded to the dtype, P v in fp32);
 *   tolerance  P is rounded in both, from differently shifted exponentials
 *              (the kernel rounds exp(s - running max) and divides by the
 *              sum of the rounded values at the end; the reference rounds the
 *              normalised P): each weight is off by up to eps/2 relative, so
 *              the output by eps |v| at most, plus its own rounding; the
 *              fp32 scores differ by the summation order of D products and
 *              the row sums by that of Skv terms: 4 + 2 (D + sqrt(Skv))
 *              u / eps(dtype) units of eps, relative above 1 and absolute
 *              below (u = 2^-24, for |q|, |k| of order 1);
 *   default    q [1, 4, 384, 128] bf16, k and v [1, 2, 512, 128] bf16
 *              (GQA 2, a 128-query prefix cache), causal. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/attention/flash.h"
#include "kernels/ref/ref.h"

static int attn_read(const nx_macro_op *op, nx_attention_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_attention_read(&op->attrs, in, op->n_operands, p, err);
}

static int attn_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_attention_params p;
    if (attn_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *q = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", q->dtype, q->ndims, q->shape, err);
}

static int attn_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_attention_params p;
    if (attn_read(op, &p, err) != 0) return -1;
    return nx_ref_attention(&p, in[0], in[1], in[2], p.sink ? (const float *)in[3] : NULL, out[0], err);
}

static int attn_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t q[4] = {1, 4, 384, 128}, kv[4] = {1, 2, 512, 128};
    if (nx_macro_op_add_operand(op, "q", NX_DT_BF16, 4, q, err) != 0 ||
        nx_macro_op_add_operand(op, "k", NX_DT_BF16, 4, kv, err) != 0)
        return -1;
    return nx_macro_op_add_operand(op, "v", NX_DT_BF16, 4, kv, err);
}

static int attn_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_attention_params p;
    if (attn_read(op, &p, err) != 0) return -1;
    double D = (double)p.D, S = (double)p.Skv, eps = nx_dtype_epsilon(p.dtype);
    double m = 4.0 + 2.0 * (D + sqrt(S)) * 0x1p-24 / eps;
    memset(out, 0, sizeof *out);
    out->abs = out->rel = m * eps;
    snprintf(out->text, sizeof out->text, "D=%.0f Skv=%.0f: %.3g x eps(%s)", D, S, m, nx_dtype_name(p.dtype));
    return 0;
}

static const nx_op_rules nx_rules_attention = {
    .attrs = nx_attention_attrs,
    .infer_results = attn_infer,
    .default_op = attn_default,
    .reference = attn_reference,
    .reference_name = "nx_ref_attention",
    .tolerance = attn_tolerance,
};

/* The composite: flash attention forward on both cores of the VNC grid
 * (kernels/attention/flash.c). */
static const nx_composite attention_composites[] = {
    {.name = "attention",
     .config = NX_CONFIG(NX_LEAF(nx_attention_flash), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_attention,
     .via = "nxsim run attention (flash attention: causal, scale, sliding_window, sink; GQA, D <= 256)"},
};

const nx_family nx_family_attention = {.name = "attention", NX_FAMILY_COMPOSITES(attention_composites)};
