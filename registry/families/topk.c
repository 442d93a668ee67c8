/* The rules of the `topk` composite (kernels/topk/topk_composite.h): results
 * from ONNX TopK's shapes, the default op, the reference nx_ref_topk and the
 * method choice for the run report. Attributes are read by the one reader
 * the leaves use (kernels/topk/topk.h). */
#include "families.h"

#include "kernels/ref/ref.h"
#include "kernels/topk/topk.h"
#include "kernels/topk/topk_auto.h"
#include "kernels/topk/topk_composite.h"
#include "kernels/topk/topk_methods.h"

static const char *const topk_attrs[] = {"k", "largest", "axis", "method", "sorted", "folds", "chunk", NULL};

static int topk_read(const nx_macro_op *op, nx_topk_attrs *a, nx_error *err) {
    if (op->n_operands != 1)
        return nx_fail(err, "%s takes one operand, the op has %u", op->func_name, op->n_operands);
    const nx_op_tensor *x = &op->operands[0];
    return nx_topk_read_attrs(&op->attrs, x->name, x->dtype, x->ndims, x->shape, a, err);
}

/* values: x's dtype and shape with the axis cut to k; indices: int32. */
static int topk_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    nx_topk_attrs a;
    if (topk_read(op, &a, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    uint64_t shape[NX_KERNEL_MAX_DIMS];
    nx_topk_result_shape(x->ndims, x->shape, &a, shape);
    nx_dtype dt = x->dtype;
    uint32_t nd = x->ndims;
    if (nx_macro_op_add_result(op, names && names[0] ? names[0] : "out0", dt, nd, shape, err) != 0) return -1;
    return nx_macro_op_add_result(op, names && names[1] ? names[1] : "out1", NX_DT_INT32, nd, shape, err);
}

static int topk_reference(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    nx_topk_attrs a;
    if (topk_read(op, &a, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    return nx_ref_topk(inputs[0], x->dtype, x->ndims, x->shape, a.axis, a.k, a.largest, outputs[0], outputs[1], err);
}

/* 16 rows of 4096 bf16, k = 8: a sampling-sized problem that simulates in
 * well under a second. */
static int topk_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t shape[2] = {16, 4096};
    if (nx_macro_op_add_operand(op, "in0", NX_DT_BF16, 2, shape, err) != 0) return -1;
    nx_value k = nx_value_int(8);
    return nx_attrs_set(&op->attrs, "k", &k, err);
}

static int topk_explain(const nx_macro_op *op, const nx_geometry *geo, char *buf, size_t len, nx_error *err) {
    nx_topk_attrs a;
    if (topk_read(op, &a, err) != 0) return -1;
    const nx_op_tensor *x = &op->operands[0];
    uint64_t rows = 1;
    for (uint32_t d = 0; d < x->ndims; d++)
        if (d != (uint32_t)a.axis) rows *= x->shape[d];
    nx_topk_choice c;
    if (nx_topk_choose(a.method, geo, x->dtype, rows, x->shape[a.axis], a.k, &c, err) != 0) return -1;
    nx_topk_choice_text(&c, buf, len);
    return 0;
}

/* The values are input elements and the indices integers: exact. */
static const nx_op_rules nx_rules_topk = {
    .attrs = topk_attrs,
    .infer_results = topk_infer,
    .default_op = topk_default,
    .reference = topk_reference,
    .reference_name = "nx_ref_topk",
    .tolerance = nx_tolerance_exact,
    .explain = topk_explain,
};

/* The composite: `nxsim run topk` (kernels/topk/topk_composite.h), on the
 * VNC(2) grid. */
static const nx_composite topk_composites[] = {
    {.name = "topk",
     .config = NX_CONFIG(NX_LEAF_NAMED("topk", nx_topk_composite), NX_OPERANDS_ALL, &nx_args_attrs, true),
     .rules = &nx_rules_topk, .via = "attribute method (SupportedTopkMethods; AUTO: measured cost table)"},
};

/* The method leaves, reached through SupportedTopkMethods
 * (kernels/topk/topk_methods.h), not through a registry key. */
static uint32_t topk_method_leaves(nx_inventory_item *out, uint32_t max) {
    uint32_t n;
    const nx_topk_method *m = nx_topk_method_mapping(&n);
    for (uint32_t i = 0; i < n && i < max; i++)
        out[i] = (nx_inventory_item){m[i].function, NX_TIER_LEAF, "topk", NULL, m[i].fn != NULL, m[i].via};
    return n;
}

const nx_family nx_family_topk = {
    .name = "topk", NX_FAMILY_COMPOSITES(topk_composites), .mapped_leaves = topk_method_leaves};
