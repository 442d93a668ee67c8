/* The elementwise family's rules (kernels/elementwise/elementwise.h):
 * cumsum.
 *   results    y of x's dtype and shape;
 *   reference  nx_ref_cumsum (the fp32 running sum along the axis; int32:
 *              the exact sum modulo 2^32);
 *   tolerance  exact: the kernel's scan adds the same fp32 values in the
 *              same order from the same -0 (the accumulator is an fp32
 *              engine value, carried exactly between chunks), and both
 *              round each result once; the int32 plan is exact by
 *              construction (kernels/elementwise/cumsum_int.c);
 *   default    x [512, 2048] bf16, the last axis.
 * rope:
 *   results    out of x's dtype and shape;
 *   reference  nx_ref_rope (double, one rounding);
 *   tolerance  the kernel rounds both products and their sum to x's dtype
 *              (the VectorE fast mode needs bf16 throughout): eps/2 (|a| +
 *              |b|) + eps/2 |out| against the reference's eps/2 |out|; for
 *              x within [-2, 2] and |cos|, |sin| <= 1: 4 x eps(dtype),
 *              relative above 1 and absolute below;
 *   default    x [1, 8, 512, 128] bf16, cos and sin [512, 64] bf16. */
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/elementwise/elementwise.h"
#include "kernels/ref/ref.h"

static int cs_read(const nx_macro_op *op, nx_cumsum_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_cumsum_read(&op->attrs, in, op->n_operands, p, err);
}

static int cs_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_cumsum_params p;
    if (cs_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, x->shape, err);
}

static int cs_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_cumsum_params p;
    if (cs_read(op, &p, err) != 0) return -1;
    return nx_ref_cumsum(&p, in[0], out[0], err);
}

static int cs_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[2] = {512, 2048};
    return nx_macro_op_add_operand(op, "x", NX_DT_BF16, 2, x, err);
}

static const nx_op_rules nx_rules_cumsum = {
    .attrs = nx_cumsum_attrs,
    .infer_results = cs_infer,
    .default_op = cs_default,
    .reference = cs_reference,
    .reference_name = "nx_ref_cumsum",
    .tolerance = nx_tolerance_exact,
};

static int rope_read(const nx_macro_op *op, nx_rope_params *p, nx_error *err) {
    nx_norm_tensor in[NX_OP_MAX_TENSORS];
    for (uint32_t i = 0; i < op->n_operands && i < NX_OP_MAX_TENSORS; i++)
        in[i] = (nx_norm_tensor){op->operands[i].name, op->operands[i].dtype, op->operands[i].ndims,
                                 op->operands[i].shape};
    return nx_rope_read(&op->attrs, in, op->n_operands, p, err);
}

static int rope_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_rope_params p;
    if (rope_read(op, &p, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, x->ndims, x->shape, err);
}

static int rope_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    nx_rope_params p;
    if (rope_read(op, &p, err) != 0) return -1;
    return nx_ref_rope(&p, in[0], in[1], in[2], out[0], err);
}

static int rope_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t x[4] = {1, 8, 512, 128}, cs[2] = {512, 64};
    if (nx_macro_op_add_operand(op, "x", NX_DT_BF16, 4, x, err) != 0 ||
        nx_macro_op_add_operand(op, "cos", NX_DT_BF16, 2, cs, err) != 0)
        return -1;
    return nx_macro_op_add_operand(op, "sin", NX_DT_BF16, 2, cs, err);
}

static int rope_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result;
    nx_rope_params p;
    if (rope_read(op, &p, err) != 0) return -1;
    nx_tolerance_eps(out, 4, p.dtype);
    return 0;
}

static const nx_op_rules nx_rules_rope = {
    .attrs = nx_rope_attrs,
    .infer_results = rope_infer,
    .default_op = rope_default,
    .reference = rope_reference,
    .reference_name = "nx_ref_rope",
    .tolerance = rope_tolerance,
};

/* The composites: cumsum and rope (kernels/elementwise/). */
#define ELEMENTWISE(key, fn, rules_, via_) \
    {.name = (key), .config = NX_CONFIG(NX_LEAF(fn), NX_OPERANDS_ALL, NULL, false), .rules = (rules_), .via = (via_)}
static const nx_composite elementwise_composites[] = {
    ELEMENTWISE("cumsum", nx_cumsum, &nx_rules_cumsum, "nxsim run cumsum (ONNX CumSum, attributes axis, exclusive, reverse)"),
    ELEMENTWISE("rope", nx_rope, &nx_rules_rope, "nxsim run rope (attribute layout: half, interleaved)"),
};
#undef ELEMENTWISE

const nx_family nx_family_elementwise = {.name = "elementwise", NX_FAMILY_COMPOSITES(elementwise_composites)};
