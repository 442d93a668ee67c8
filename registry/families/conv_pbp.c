/* The dense PE convolutions' rules: #3 Conv2d_pbp_0f1b_0i1o_01fb_experimental_1
 * (img H,C,W,N; filt KH,C/G,KW,O; out OH,OW,O,N) and #4
 * Conv2d_pbp_fb01_io01_01bf_experimental_1 (img C,N,H,W; filt C/G,O,KH,KW;
 * out OH,OW,N,O), on the shared conv rules (registry/conv_rules.h):
 *   results    one tensor of the image's dtype, shaped by the output-size
 *              formula of the attributes (stride, padding, rhs_dilation,
 *              feature_group_count; lhs_dilation and batch_group_count are
 *              read and refused by the leaves unless 1);
 *   reference  nx_ref_conv under the key's labels;
 *   tolerance  1 + 2 K u sqrt(K) / eps(dtype) eps, K = C/G x KH x KW
 *              (docs/parts/conv.md);
 *   default    a 3x3 convolution, padding 1, over 96 -> 80 features of a
 *              10 x 12 image, batch 3, in bf16: odd sizes (no multiple of
 *              128) that trace and simulate in well under a second. */
#include "families.h"

#include "registry/conv_rules.h"
#include "kernels/conv/forward/conv2d_pbp.h"

#define LABELS_3 "0f1b_0i1o->01fb"
#define LABELS_4 "fb01_io01->01bf"

static int infer_3(nx_macro_op *op, const char *const *names, nx_error *err) {
    return nx_conv_rule_infer(op, LABELS_3, names, err);
}
static int infer_4(nx_macro_op *op, const char *const *names, nx_error *err) {
    return nx_conv_rule_infer(op, LABELS_4, names, err);
}
static int reference_3(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, LABELS_3, in, out, err);
}
static int reference_4(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, LABELS_4, in, out, err);
}
static int tolerance_3(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, LABELS_3, result, out, err);
}
static int tolerance_4(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, LABELS_4, result, out, err);
}

static int add_default(nx_macro_op *op, const uint64_t *img, const uint64_t *filt, nx_error *err) {
    if (nx_macro_op_add_operand(op, "img", NX_DT_BF16, 4, img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", NX_DT_BF16, 4, filt, err) != 0)
        return -1;
    nx_value v;
    if (nx_value_parse("default padding", "[[1,1],[1,1]]", &v, err) != 0) return -1;
    if (nx_attrs_set(&op->attrs, NX_CONV_ATTR_PADDING, &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}
static int default_3(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {10, 96, 12, 3}, filt[4] = {3, 96, 3, 80};
    return add_default(op, img, filt, err);
}
static int default_4(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {96, 3, 10, 12}, filt[4] = {96, 80, 3, 3};
    return add_default(op, img, filt, err);
}

const nx_op_rules nx_rules_conv_pbp_0f1b = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = infer_3,
    .default_op = default_3,
    .reference = reference_3,
    .reference_name = "nx_ref_conv",
    .tolerance = tolerance_3,
};

static const nx_op_rules nx_rules_conv_pbp_fb01 = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = infer_4,
    .default_op = default_4,
    .reference = reference_4,
    .reference_name = "nx_ref_conv",
    .tolerance = tolerance_4,
};

/* The registry rows: the seed's #3 and #4. Seed traps kept on purpose: key
 * #4 has no "_kernel", its function does; the keys are capitalised, their
 * functions are not. */
static const nx_registry_entry conv_pbp_rows[] = {
    {.seed_index = 3, .key = "Conv2d_pbp_0f1b_0i1o_01fb_experimental_1",
     .config = NX_CONFIG(NX_LEAF(conv2d_pbp_0f1b_0i1o_01fb_experimental_1), NX_OPERANDS_ALL, &nx_args_attrs, false),
     .rules = &nx_rules_conv_pbp_0f1b},
    {.seed_index = 4, .key = "Conv2d_pbp_fb01_io01_01bf_experimental_1",
     .config = NX_CONFIG(NX_LEAF(conv2d_pbp_fb01_io01_01bf_kernel_experimental_1), NX_OPERANDS_ALL, &nx_args_attrs, false),
     .rules = &nx_rules_conv_pbp_fb01},
};

const nx_family nx_family_conv_pbp = {.name = "conv", NX_FAMILY_ROWS(conv_pbp_rows)};
