/* The weight-gradient convolutions' rules (kernels/conv/wgrad/wgrad.h): #5
 * Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh (fb01_io01->01bf), #7
 * conv2d_column_packing (fb01_io01->01bf, batch_group_count = N) and #8
 * conv2d_column_packing_io10 (fb01_io10->01bf, batch_group_count = N), on
 * the shared conv rules (registry/conv_rules.h):
 *   results    one tensor of the image's dtype, shaped by the output-size
 *              formula (for #7/#8 an absent batch_group_count is taken as N,
 *              operand 0's batch dim: the keys name a depthwise weight
 *              gradient; an explicit other value is refused by the leaf);
 *   reference  nx_ref_conv under the key's labels;
 *   tolerance  1 + 2 K u sqrt(K) / eps(dtype) eps, K = the filter's
 *              in-features x its spatial size (the forward batch x the
 *              output gradient's pixels; docs/parts/conv.md);
 *   default    scaled-down versions of the bench shapes in bf16: ResNet-50
 *              conv1's weight gradient structure (padding [[3,2],[3,2]],
 *              rhs_dilation [2,2], 7x7 result) for #5, a MobileNet-like
 *              3x3 depthwise weight gradient for #7 and #8 (#8 on a
 *              non-square gradient, so the swap matters). */
#include "families.h"

#include "registry/conv_rules.h"
#include "kernels/conv/wgrad/wgrad.h"

#define LABELS_5 "fb01_io01->01bf"
#define LABELS_7 "fb01_io01->01bf"
#define LABELS_8 "fb01_io10->01bf"

static int set_json(nx_macro_op *op, const char *name, const char *json, nx_error *err) {
    nx_value v;
    if (nx_value_parse(name, json, &v, err) != 0) return -1;
    if (nx_attrs_set(&op->attrs, name, &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}

/* #7/#8: an absent batch_group_count is N (operand 0's batch dim). */
static int depthwise_infer(nx_macro_op *op, const char *labels, const char *const *names, nx_error *err) {
    const nx_value *g = nx_attrs_get(&op->attrs, NX_CONV_ATTR_BATCH_GROUPS);
    if ((!g || g->kind == NX_VAL_NONE) && op->n_operands >= 1) {
        nx_conv_layout L;
        if (nx_conv_layout_parse(labels, &L, err) != 0) return -1;
        if (op->operands[0].ndims == L.spatial + 2) {
            nx_value v = nx_value_int((int64_t)op->operands[0].shape[L.lhs_batch]);
            if (nx_attrs_set(&op->attrs, NX_CONV_ATTR_BATCH_GROUPS, &v, err) != 0) return -1;
        }
    }
    return nx_conv_rule_infer(op, labels, names, err);
}

static int infer_5(nx_macro_op *op, const char *const *names, nx_error *err) {
    return nx_conv_rule_infer(op, LABELS_5, names, err);
}
static int infer_7(nx_macro_op *op, const char *const *names, nx_error *err) {
    return depthwise_infer(op, LABELS_7, names, err);
}
static int infer_8(nx_macro_op *op, const char *const *names, nx_error *err) {
    return depthwise_infer(op, LABELS_8, names, err);
}
static int reference_5(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, LABELS_5, in, out, err);
}
static int reference_7(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, LABELS_7, in, out, err);
}
static int reference_8(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, LABELS_8, in, out, err);
}
static int tolerance_5(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, LABELS_5, result, out, err);
}
static int tolerance_7(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, LABELS_7, result, out, err);
}
static int tolerance_8(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, LABELS_8, result, out, err);
}

static int add_operands(nx_macro_op *op, const uint64_t *img, const uint64_t *filt, nx_error *err) {
    if (nx_macro_op_add_operand(op, "img", NX_DT_BF16, 4, img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", NX_DT_BF16, 4, filt, err) != 0)
        return -1;
    return 0;
}

/* ResNet-50 conv1's weight gradient at 1/7 of its size: a 32 x 32 image of
 * 3 features, batch 4, 16 output channels at 16 x 16, stride 2 forward. */
static int default_5(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {4, 3, 32, 32}, filt[4] = {4, 16, 16, 16};
    if (add_operands(op, img, filt, err) != 0 || set_json(op, NX_CONV_ATTR_PADDING, "[[3,2],[3,2]]", err) != 0 ||
        set_json(op, NX_CONV_ATTR_RHS_DILATION, "[2,2]", err) != 0)
        return -1;
    return 0;
}

/* A 3x3 depthwise layer's weight gradient: 24 channels of 28 x 28, batch 4. */
static int default_7(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {4, 24, 28, 28}, filt[4] = {4, 24, 28, 28};
    if (add_operands(op, img, filt, err) != 0 || set_json(op, NX_CONV_ATTR_PADDING, "[[1,1],[1,1]]", err) != 0)
        return -1;
    return 0;
}

/* #7's layer on a 20 x 28 image: the gradient (4, 24, 28, 20) is (CI, C,
 * W, H). */
static int default_8(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {4, 24, 20, 28}, filt[4] = {4, 24, 28, 20};
    if (add_operands(op, img, filt, err) != 0 || set_json(op, NX_CONV_ATTR_PADDING, "[[1,1],[1,1]]", err) != 0)
        return -1;
    return 0;
}

static const nx_op_rules nx_rules_conv_wgrad_pcinh = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = infer_5,
    .default_op = default_5,
    .reference = reference_5,
    .reference_name = "nx_ref_conv",
    .tolerance = tolerance_5,
};

static const nx_op_rules nx_rules_conv_column_packing = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = infer_7,
    .default_op = default_7,
    .reference = reference_7,
    .reference_name = "nx_ref_conv",
    .tolerance = tolerance_7,
};

static const nx_op_rules nx_rules_conv_column_packing_io10 = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = infer_8,
    .default_op = default_8,
    .reference = reference_8,
    .reference_name = "nx_ref_conv",
    .tolerance = tolerance_8,
};

/* The registry rows: the seed's #5, #7 and #8 (key #5 capitalised, its
 * function not). */
static const nx_registry_entry conv_wgrad_rows[] = {
    {.seed_index = 5, .key = "Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh",
     .config = NX_CONFIG(NX_LEAF(conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh), 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv_wgrad_pcinh},
    {.seed_index = 7, .key = "conv2d_column_packing",
     .config = NX_CONFIG(NX_LEAF(conv2d_column_packing), 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv_column_packing},
    {.seed_index = 8, .key = "conv2d_column_packing_io10",
     .config = NX_CONFIG(NX_LEAF(conv2d_column_packing_io10), 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv_column_packing_io10},
};

const nx_family nx_family_conv_wgrad = {.name = "conv", NX_FAMILY_ROWS(conv_wgrad_rows)};
