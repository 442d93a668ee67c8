/* The rules of the `conv` composite (kernels/conv/onnx/conv_onnx.h): ONNX
 * Conv on its own layouts (X NCHW / NCW, W OIHW / OIW, optional B [O]):
 *   results    Y [N, O, OH, OW] (or [N, O, OW]) of X's dtype, the sizes by
 *              ONNX's rules (pads, or auto_pad SAME_UPPER / SAME_LOWER /
 *              VALID);
 *   reference  nx_ref_conv_onnx (a direct sum in NCHW / OIHW);
 *   tolerance  the shared conv bound 1 + 2 K u sqrt(K) / eps (registry/
 *              conv_rules.h, K = C/group x KH x KW); with B, twice that + 1:
 *              kernel and reference add B to the same rounded sum when
 *              their sums agree, and |sum| <= |ref| + |B| <= 2 max(1, |ref|)
 *              for |B| <= 1 (the default op's values);
 *   default    X [2, 64, 14, 14] bf16, W [96, 64, 3, 3], B [96], pads 1;
 *   explain    the leaf chosen, why, and the layout steps. */
#include <stdio.h>
#include <string.h>

#include "families.h"
#include "kernels/conv/onnx/conv_onnx.h"
#include "kernels/ref/ref.h"
#include "registry/conv_rules.h"

static int co_read(const nx_macro_op *op, nx_conv_onnx_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_conv_onnx_read(&op->attrs, in, op->n_operands, p, err);
}

static int co_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_conv_onnx_params p;
    if (co_read(op, &p, err) != 0) return -1;
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "Y", p.dtype, p.out_ndims, p.out_shape, err);
}

static int co_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_conv_onnx_params p;
    if (co_read(op, &p, err) != 0) return -1;
    return nx_ref_conv_onnx(&p, in[0], in[1], p.has_bias ? in[2] : NULL, out[0], err);
}

static int co_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[4] = {2, 64, 14, 14}, w[4] = {96, 64, 3, 3}, b[1] = {96};
    static const uint64_t pads[4] = {1, 1, 1, 1};
    if (nx_macro_op_add_operand(op, "X", NX_DT_BF16, 4, x, err) != 0 ||
        nx_macro_op_add_operand(op, "W", NX_DT_BF16, 4, w, err) != 0 ||
        nx_macro_op_add_operand(op, "B", NX_DT_BF16, 1, b, err) != 0)
        return -1;
    return nx_attrs_set_int_list(&op->attrs, "pads", pads, 4, err);
}

static int co_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    nx_conv_onnx_params p;
    if (co_read(op, &p, err) != 0) return -1;
    nx_dtype dt = result < op->n_results ? op->results[result].dtype : p.dtype;
    uint64_t K = p.Cg * p.KH * p.KW;
    double m = nx_conv_rule_tolerance_eps(K, dt);
    if (p.has_bias) m = 2.0 * m + 1.0;
    nx_tolerance_eps(out, m, dt);
    char text[sizeof out->text];
    snprintf(text, sizeof text, "K=%llu%s: %.3g x eps(%s)", (unsigned long long)K, p.has_bias ? ", + B" : "", m,
             nx_dtype_name(dt));
    memcpy(out->text, text, sizeof text);
    return 0;
}

static int co_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    (void)geo;
    nx_conv_onnx_params p;
    if (co_read(op, &p, err) != 0) return -1;
    nx_conv_onnx_choice c;
    nx_conv_onnx_choose(&p, &c);
    nx_conv_onnx_choice_text(&p, &c, buf, len);
    return 0;
}

static const nx_op_rules nx_rules_conv_onnx = {
    .attrs = nx_conv_onnx_attrs,
    .infer_results = co_infer,
    .default_op = co_default,
    .reference = co_reference,
    .reference_name = "nx_ref_conv_onnx",
    .tolerance = co_tolerance,
    .explain = co_explain,
};

/* The composite: `nxsim run conv` (ONNX Conv), on one core (its leaves'
 * grid). */
static const nx_composite conv_onnx_composites[] = {
    {.name = "conv", .config = NX_CONFIG(NX_LEAF(nx_conv_onnx), NX_OPERANDS_ALL, &nx_args_attrs, false),
     .rules = &nx_rules_conv_onnx,
     .via = "ONNX Conv: the leaf by group (depthwise: #6 1-D, #9 per image; else #4) with the layout steps"},
};

const nx_family nx_family_conv_onnx = {.name = "conv", NX_FAMILY_COMPOSITES(conv_onnx_composites)};
