/* The rules of the depthwise forward conv keys (kernels/conv/depthwise/depthwise.h):
 * Conv1d_depthwise_bf01_oi01_bf01 (#6), conv2d_column_packing_1 (#9) and
 * conv2d_depthwise_f01b_o01i_bf01 (#11). Result shape, reference and the
 * conv attributes are the shared conv rules (registry/conv_rules.h) bound
 * to each key's labels (an absent feature_group_count is taken as C: the
 * key names a depthwise conv); the default op of `nxsim run KEY` and the
 * tolerance are the key's own.
 *
 * Tolerance (units of eps(result dtype) x max(1, |ref|), registry/rules.h):
 * the shared conv bound 1 + 2 K u sqrt(K) / eps, K = the taps (one input
 * feature per group), u = 2^-24: the leaf and the reference sum the same K
 * products in different fp32 orders. conv2d_depthwise_f01b_o01i_bf01 rounds
 * each product to the input dtype first when that is bf16 or fp16, which
 * adds at most u_dt sum|terms| <= (eps / 2) sqrt(K) max(1, |ref|) under the
 * shared rule's sum|terms| <= sqrt(K) max(1, |ref|); the rule allows twice
 * that, + sqrt(K). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "families.h"
#include "registry/conv_rules.h"
#include "kernels/conv/depthwise/depthwise.h"

#define C1D_LABELS "bf01_oi01->bf01"
#define CP1_LABELS "bf01_oi01->bf01"
#define F01B_LABELS "f01b_o01i->bf01"

/* ---- shared pieces of the default ops ---- */

static int set_pairs(nx_macro_op *op, const char *name, int64_t a, int64_t b, nx_error *err) {
    uint64_t u[2] = {0, 0};
    nx_value v;
    if (nx_value_int_list(&v, u, 2, err) != 0) return -1;
    v.items[0].i = a;
    v.items[1].i = b;
    if (nx_attrs_set(&op->attrs, name, &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}

static int set_padding(nx_macro_op *op, const int64_t pad[4], nx_error *err) {
    uint64_t u[2] = {0, 0};
    nx_value v;
    if (nx_value_int_list(&v, u, 2, err) != 0) return -1;
    for (int d = 0; d < 2; d++) {
        nx_value_free(&v.items[d]);
        if (nx_value_int_list(&v.items[d], u, 2, err) != 0) {
            nx_value_free(&v);
            return -1;
        }
        v.items[d].items[0].i = pad[2 * d];
        v.items[d].items[1].i = pad[2 * d + 1];
    }
    if (nx_attrs_set(&op->attrs, NX_CONV_ATTR_PADDING, &v, err) != 0) {
        nx_value_free(&v);
        return -1;
    }
    return 0;
}

static int set_groups(nx_macro_op *op, int64_t c, nx_error *err) {
    nx_value v = nx_value_int(c);
    return nx_attrs_set(&op->attrs, NX_CONV_ATTR_FEATURE_GROUPS, &v, err);
}

/* The key names a depthwise conv, so an absent feature_group_count means
 * C (operand 0's feature dim); an explicit other value stays, and the leaf
 * refuses it. */
static int dw_infer(nx_macro_op *op, const char *labels, const char *const *names, nx_error *err) {
    const nx_value *g = nx_attrs_get(&op->attrs, NX_CONV_ATTR_FEATURE_GROUPS);
    if ((!g || g->kind == NX_VAL_NONE) && op->n_operands >= 1) {
        nx_conv_layout L;
        if (nx_conv_layout_parse(labels, &L, err) != 0) return -1;
        if (op->operands[0].ndims == L.spatial + 2 &&
            set_groups(op, (int64_t)op->operands[0].shape[L.lhs_feature], err) != 0)
            return -1;
    }
    return nx_conv_rule_infer(op, labels, names, err);
}

/* ---- #6 Conv1d_depthwise_bf01_oi01_bf01 ---- */

static int c1d_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    return dw_infer(op, C1D_LABELS, names, err);
}

static int c1d_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, C1D_LABELS, in, out, err);
}

/* A causal (Mamba-style) conv1d: 2 x 160 channels (a tile of 128 rows and
 * rows spanning the two images) x 300 positions, 4 taps, padding [3, 0],
 * fp32. */
static int c1d_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {2, 160, 1, 300}, filt[4] = {160, 1, 1, 4};
    static const int64_t pad[4] = {0, 0, 3, 0};
    if (nx_macro_op_add_operand(op, "img", NX_DT_FP32, 4, img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", NX_DT_FP32, 4, filt, err) != 0 || set_padding(op, pad, err) != 0 ||
        set_groups(op, 160, err) != 0)
        return -1;
    return 0;
}

/* ---- #9 conv2d_column_packing_1 ---- */

static int cp1_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    return dw_infer(op, CP1_LABELS, names, err);
}

static int cp1_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, CP1_LABELS, in, out, err);
}

/* A MobileNet-like depthwise 3x3: 1 x 48 x 28 x 28 (48 channels: 2 image
 * replicas x 2 column groups), padding 1, fp32. */
static int cp1_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {1, 48, 28, 28}, filt[4] = {48, 1, 3, 3};
    static const int64_t pad[4] = {1, 1, 1, 1};
    if (nx_macro_op_add_operand(op, "img", NX_DT_FP32, 4, img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", NX_DT_FP32, 4, filt, err) != 0 || set_padding(op, pad, err) != 0 ||
        set_groups(op, 48, err) != 0)
        return -1;
    return 0;
}

/* ---- #11 conv2d_depthwise_f01b_o01i_bf01 ---- */

static int f01b_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    return dw_infer(op, F01B_LABELS, names, err);
}

static int f01b_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    return nx_conv_rule_reference(op, F01B_LABELS, in, out, err);
}

/* The depthwise input gradient of a 3x3 stride-2 conv (a transposed conv):
 * img (C,H,W,N) = 40 x 14 x 14 x 2, lhs_dilation 2, padding [1, 2], fp32
 * (28 x 28 outputs). */
static int f01b_default(nx_macro_op *op, nx_error *err) {
    static const uint64_t img[4] = {40, 14, 14, 2}, filt[4] = {40, 3, 3, 1};
    static const int64_t pad[4] = {1, 2, 1, 2};
    if (nx_macro_op_add_operand(op, "img", NX_DT_FP32, 4, img, err) != 0 ||
        nx_macro_op_add_operand(op, "filt", NX_DT_FP32, 4, filt, err) != 0 || set_padding(op, pad, err) != 0 ||
        set_pairs(op, NX_CONV_ATTR_LHS_DILATION, 2, 2, err) != 0 || set_groups(op, 40, err) != 0)
        return -1;
    return 0;
}

/* ---- tolerances ---- */

static int c1d_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, C1D_LABELS, result, out, err);
}

static int cp1_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    return nx_conv_rule_tolerance(op, CP1_LABELS, result, out, err);
}

/* The shared conv bound, + sqrt(K) where the leaf rounds its products to
 * bf16/fp16. */
static int f01b_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    if (nx_conv_rule_tolerance(op, F01B_LABELS, result, out, err) != 0) return -1;
    nx_dtype dt = result < op->n_results ? op->results[result].dtype : op->operands[0].dtype;
    if (dt != NX_DT_BF16 && dt != NX_DT_FP16) return 0;
    uint64_t K = nx_conv_rule_contraction(op, F01B_LABELS);
    double m = nx_conv_rule_tolerance_eps(K, dt) + sqrt((double)(K ? K : 1));
    nx_tolerance_eps(out, m, dt);
    char text[sizeof out->text];
    snprintf(text, sizeof text, "K=%llu, %s products: %.3g x eps(%s)", (unsigned long long)K, nx_dtype_name(dt), m,
             nx_dtype_name(dt));
    memcpy(out->text, text, sizeof text);
    return 0;
}

static const nx_op_rules nx_rules_conv1d_depthwise = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = c1d_infer,
    .default_op = c1d_default,
    .reference = c1d_reference,
    .reference_name = "nx_ref_conv",
    .tolerance = c1d_tolerance,
};

static const nx_op_rules nx_rules_conv2d_column_packing_1 = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = cp1_infer,
    .default_op = cp1_default,
    .reference = cp1_reference,
    .reference_name = "nx_ref_conv",
    .tolerance = cp1_tolerance,
};

static const nx_op_rules nx_rules_conv2d_depthwise_f01b = {
    .attrs = nx_conv_rule_attrs,
    .infer_results = f01b_infer,
    .default_op = f01b_default,
    .reference = f01b_reference,
    .reference_name = "nx_ref_conv",
    .tolerance = f01b_tolerance,
};

/* The registry rows: the seed's #6, #9 and #11 (key #6 capitalised, its
 * function not). */
static const nx_registry_entry conv_depthwise_rows[] = {
    {.seed_index = 6, .key = "Conv1d_depthwise_bf01_oi01_bf01",
     .config = NX_CONFIG(NX_LEAF(conv1d_depthwise_bf01_oi01_bf01), 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv1d_depthwise},
    {.seed_index = 9, .key = "conv2d_column_packing_1",
     .config = NX_CONFIG(NX_LEAF(conv2d_column_packing_1), 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv2d_column_packing_1},
    {.seed_index = 11, .key = "conv2d_depthwise_f01b_o01i_bf01",
     .config = NX_CONFIG(NX_LEAF(conv2d_depthwise_f01b_o01i_bf01), 2, &nx_args_conv_attrs_out_shape, false),
     .rules = &nx_rules_conv2d_depthwise_f01b},
};

const nx_family nx_family_conv_depthwise = {.name = "conv", NX_FAMILY_ROWS(conv_depthwise_rows)};
