/* The resize family's rules (registry key ResizeNearest): data [N, H, W, C]
 * -> [N, OH, OW, C] by the coordinate rules of kernels/resize/resize_rule.c, the
 * one home of that rule (the leaf reads the same attributes with the same
 * functions when it is traced). */
#include "families.h"

#include "kernels/ref/ref.h"
#include "kernels/resize/resize_rule.h"
#include "kernels/resize/resize_nearest.h"

static const char *const resize_attrs[] = {NX_RESIZE_ATTR_OUT_SHAPE, NX_RESIZE_ATTR_SCALES, NX_RESIZE_ATTR_COORD,
                                           NX_RESIZE_ATTR_NEAREST, NULL};

static int resize_operand(const nx_macro_op *op, nx_error *err) {
    if (op->n_operands != 1)
        return nx_fail(err, "%s takes one operand, the op has %u", op->func_name, op->n_operands);
    if (op->operands[0].ndims != 4)
        return nx_fail(err, "operand 0 (%s): ResizeNearest takes a rank-4 [N, H, W, C] tensor, got %u dims",
                       op->operands[0].name, op->operands[0].ndims);
    return 0;
}

/* Result: out_shape, or floor(in * scales); the modes are checked too. */
static int resize_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    if (resize_operand(op, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    uint64_t out[4];
    nx_resize_rule rule;
    if (nx_resize_out_shape(&op->attrs, x->shape, out, err) != 0 ||
        nx_resize_rule_read(&op->attrs, x->shape, out, &rule, err) != 0)
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    return nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", x->dtype, 4, out, err);
}

static int resize_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    if (resize_operand(op, err) != 0) return -1;
    if (op->n_results != 1 || op->results[0].ndims != 4)
        return nx_fail(err, "%s: expects one rank-4 result", op->func_name);
    const nx_op_tensor *x = &op->operands[0];
    nx_resize_rule rule;
    if (nx_resize_rule_read(&op->attrs, x->shape, op->results[0].shape, &rule, err) != 0)
        return nx_fail_prefix(err, "operand 0 (%s)", x->name);
    return nx_ref_resize_nearest(inputs[0], x->dtype, x->shape, &rule, outputs[0], err);
}

/* The public kernel's example (30x20 -> 59x38, a non-integer ratio) on two
 * images of 64 fp32 channels. */
static int resize_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[4] = {2, 30, 20, 64}, out[4] = {2, 59, 38, 64};
    if (nx_macro_op_add_operand(op, "data", NX_DT_FP32, 4, shape, err) != 0) return -1;
    return nx_attrs_set_int_list(&op->attrs, NX_RESIZE_ATTR_OUT_SHAPE, out, 4, err);
}

/* A gather moves bits: exact. */
static const nx_op_rules nx_rules_resize = {
    .attrs = resize_attrs,
    .infer_results = resize_infer,
    .default_op = resize_default,
    .reference = resize_reference,
    .reference_name = "nx_ref_resize_nearest",
    .tolerance = nx_tolerance_exact,
};

/* The registry row: the seed's #2. */
static const nx_registry_entry resize_rows[] = {
    {.seed_index = 2, .key = "ResizeNearest",
     .config = NX_CONFIG(NX_LEAF(resize_nearest_fixed_dma_kernel), 1, &nx_args_resize, false), .rules = &nx_rules_resize},
};

const nx_family nx_family_resize = {.name = "resize", NX_FAMILY_ROWS(resize_rows)};
