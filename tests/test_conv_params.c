/* The conv attribute reader, the leaf refusals and the result-shape rule
 * (kernels/conv/conv_params.h) and the registry's shared conv rules
 * (registry/conv_rules.h): every accepted form, every refusal text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/conv/conv_params.h"
#include "registry/conv_rules.h"
#include "registry/macro_op.h"

/* attrs from a JSON-ish list of NAME=VALUE pairs (VALUE parsed as JSON). */
static void set_attrs(nx_attrs *a, int n, const char *const *pairs) {
    nx_attrs_init(a);
    for (int i = 0; i < n; i++) {
        char name[64];
        const char *eq = strchr(pairs[i], '=');
        assert_non_null(eq);
        snprintf(name, sizeof name, "%.*s", (int)(eq - pairs[i]), pairs[i]);
        nx_value v;
        nx_error err;
        if (nx_value_parse(name, eq + 1, &v, &err) != 0) fail_msg("%s", err.msg);
        if (nx_attrs_set(a, name, &v, &err) != 0) fail_msg("%s", err.msg);
    }
}

static void read_ok(int n, const char *const *pairs, uint32_t spatial, nx_conv_params *p) {
    nx_attrs a;
    set_attrs(&a, n, pairs);
    nx_error err;
    if (nx_conv_params_read(&a, spatial, NULL, p, &err) != 0) fail_msg("%s", err.msg);
    nx_attrs_free(&a);
}

static void read_fails(const char *pair, uint32_t spatial, const char *msg) {
    nx_attrs a;
    set_attrs(&a, 1, &pair);
    nx_conv_params p;
    nx_error err;
    assert_int_equal(nx_conv_params_read(&a, spatial, NULL, &p, &err), -1);
    assert_string_equal(err.msg, msg);
    nx_attrs_free(&a);
}

static void test_defaults(void **state) {
    (void)state;
    nx_conv_params p;
    nx_error err;
    assert_int_equal(nx_conv_params_read(NULL, 2, NULL, &p, &err), 0);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(p.stride[d], 1);
        assert_int_equal(p.pad_lo[d], 0);
        assert_int_equal(p.pad_hi[d], 0);
        assert_int_equal(p.lhs_dilation[d], 1);
        assert_int_equal(p.rhs_dilation[d], 1);
    }
    assert_int_equal(p.feature_group_count, 1);
    assert_int_equal(p.batch_group_count, 1);
    assert_int_equal(p.out_ndims, 0);
    assert_int_equal(p.spatial, 2);
}

static void test_forms(void **state) {
    (void)state;
    nx_conv_params p;
    static const char *const a1[] = {"stride=[2,3]", "padding=[[1,1],[0,2]]", "lhs_dilation=[1,2]",
                                     "rhs_dilation=[3,1]", "feature_group_count=4", "out_shape=[7,7,3,64]"};
    read_ok(6, a1, 2, &p);
    assert_int_equal(p.stride[0], 2);
    assert_int_equal(p.stride[1], 3);
    assert_int_equal(p.pad_lo[0], 1);
    assert_int_equal(p.pad_hi[0], 1);
    assert_int_equal(p.pad_lo[1], 0);
    assert_int_equal(p.pad_hi[1], 2);
    assert_int_equal(p.lhs_dilation[1], 2);
    assert_int_equal(p.rhs_dilation[0], 3);
    assert_int_equal(p.feature_group_count, 4);
    assert_int_equal(p.out_ndims, 4);
    assert_int_equal(p.out_shape[3], 64);
    /* a single int for every dim, flat padding, negative padding, none = absent */
    static const char *const a2[] = {"stride=2", "padding=[-1,2,3,-4]", "rhs_dilation=null", "batch_group_count=3"};
    read_ok(4, a2, 2, &p);
    assert_int_equal(p.stride[0], 2);
    assert_int_equal(p.stride[1], 2);
    assert_int_equal(p.pad_lo[0], -1);
    assert_int_equal(p.pad_hi[0], 2);
    assert_int_equal(p.pad_lo[1], 3);
    assert_int_equal(p.pad_hi[1], -4);
    assert_int_equal(p.rhs_dilation[0], 1);
    assert_int_equal(p.batch_group_count, 3);
    /* one spatial dim */
    static const char *const a3[] = {"stride=[3]", "padding=[[2,0]]"};
    read_ok(2, a3, 1, &p);
    assert_int_equal(p.stride[0], 3);
    assert_int_equal(p.pad_lo[0], 2);
    assert_int_equal(p.pad_hi[0], 0);
    /* a name the leaf reads itself */
    nx_attrs a;
    static const char *const a4[] = {"stride=[1,1]", "tile_hint=4"};
    set_attrs(&a, 2, a4);
    static const char *const extra[] = {"tile_hint", NULL};
    nx_error err;
    assert_int_equal(nx_conv_params_read(&a, 2, extra, &p, &err), 0);
    nx_attrs_free(&a);
}

static void test_refusals(void **state) {
    (void)state;
    read_fails("stride=[0,1]", 2, "attribute stride=[0,1]: entries must be >= 1");
    read_fails("stride=[1,1,1]", 2, "attribute stride=[1,1,1]: must be a list of 2 ints >= 1 (one per spatial dim)");
    read_fails("stride=\"same\"", 2, "attribute stride=\"same\": must be a list of 2 ints >= 1 (one per spatial dim)");
    read_fails("stride=0", 2, "attribute stride=0: must be >= 1");
    read_fails("lhs_dilation=[2.0,1]", 2,
               "attribute lhs_dilation=[2.0,1]: must be a list of 2 ints >= 1 (one per spatial dim)");
    read_fails("rhs_dilation=[1]", 2, "attribute rhs_dilation=[1]: must be a list of 2 ints >= 1 (one per spatial dim)");
    read_fails("padding=[[1,1]]", 2, "attribute padding=[[1,1]]: must hold 2 [lo, hi] pairs of ints (one per spatial dim)");
    read_fails("padding=[[1,1],[0]]", 2,
               "attribute padding=[[1,1],[0]]: must hold 2 [lo, hi] pairs of ints (one per spatial dim)");
    read_fails("padding=1", 1, "attribute padding=1: must hold 1 [lo, hi] pair of ints (one per spatial dim)");
    read_fails("feature_group_count=0", 2, "attribute feature_group_count=0: must be >= 1");
    read_fails("batch_group_count=[2]", 2, "attribute batch_group_count=[2]: must be an int >= 1");
    read_fails("out_shape=[4,0]", 2, "attribute out_shape=[4,0]: must be a list of 1..6 ints >= 1");
    read_fails("strides=[2,2]", 2,
               "attribute strides: not a conv attribute (stride, padding, lhs_dilation, rhs_dilation, "
               "feature_group_count, batch_group_count, out_shape)");
    nx_attrs a;
    static const char *const both[] = {"feature_group_count=2", "batch_group_count=2"};
    set_attrs(&a, 2, both);
    nx_conv_params p;
    nx_error err;
    assert_int_equal(nx_conv_params_read(&a, 2, NULL, &p, &err), -1);
    assert_string_equal(err.msg, "attributes feature_group_count=2 and batch_group_count=2: at most one may exceed 1");
    nx_attrs_free(&a);
}

/* A value longer than the message's room is cut with "..." at every depth;
 * the writer never measures past its buffer (a fuzz_op finding: a list whose
 * first pair holds a long quoted string left the list writer at the buffer's
 * end, and it read on). */
static void test_long_value_cut(void **state) {
    (void)state;
    char pair[512];
    int n = snprintf(pair, sizeof pair, "padding=[[\"");
    for (int i = 0; i < 60; i++) n += snprintf(pair + n, sizeof pair - n, "\xe9"); /* escaped 4 bytes each */
    snprintf(pair + n, sizeof pair - n, "padding\", 1], [2, 3], [4, 5]]");
    nx_attrs a;
    const char *pp = pair;
    set_attrs(&a, 1, &pp);
    nx_conv_params p;
    nx_error err;
    assert_int_equal(nx_conv_params_read(&a, 2, NULL, &p, &err), -1);
    nx_attrs_free(&a);
    const char *rule = ": must hold 2 [lo, hi] pairs of ints (one per spatial dim)";
    assert_non_null(strstr(err.msg, "attribute padding=[[\""));
    assert_non_null(strstr(err.msg, rule));
    assert_null(strchr(err.msg, '\n'));
    /* the value part ends in the cut mark, right before the rule */
    const char *r = strstr(err.msg, rule);
    assert_true(r - err.msg > 3);
    assert_memory_equal(r - 3, "...", 3);
}

static void test_require_default(void **state) {
    (void)state;
    nx_conv_params p;
    nx_error err;
    nx_conv_params_default(&p, 2);
    assert_int_equal(nx_conv_require_default(&p, ~0u, "leaf", &err), 0);
    p.lhs_dilation[0] = 2;
    assert_int_equal(nx_conv_require_default(&p, NX_CONV_STRIDE | NX_CONV_PADDING, "leaf", &err), 0);
    assert_int_equal(nx_conv_require_default(&p, NX_CONV_LHS_DILATION | NX_CONV_BATCH_GROUPS, "leafx", &err), -1);
    assert_string_equal(err.msg, "leafx: attribute lhs_dilation=[2,1] is not supported (this leaf takes "
                                 "lhs_dilation [1,1] only)");
    nx_conv_params_default(&p, 2);
    p.batch_group_count = 4;
    assert_int_equal(nx_conv_require_default(&p, NX_CONV_BATCH_GROUPS, "leafx", &err), -1);
    assert_string_equal(err.msg, "leafx: attribute batch_group_count=4 is not supported (this leaf takes "
                                 "batch_group_count 1 only)");
    nx_conv_params_default(&p, 2);
    p.pad_hi[1] = -1;
    assert_int_equal(nx_conv_require_default(&p, NX_CONV_NONNEG_PADDING, "leafx", &err), -1);
    assert_string_equal(err.msg, "leafx: attribute padding=[[0,0],[0,-1]] is not supported (this leaf takes "
                                 "padding >= 0 only)");
    p.pad_hi[1] = 3;
    assert_int_equal(nx_conv_require_default(&p, NX_CONV_NONNEG_PADDING, "leafx", &err), 0);
    assert_int_equal(nx_conv_require_default(&p, NX_CONV_PADDING, "leafx", &err), -1);
    assert_string_equal(err.msg, "leafx: attribute padding=[[0,0],[0,3]] is not supported (this leaf takes "
                                 "padding [[0,0],[0,0]] only)");
}

static void test_result_shape(void **state) {
    (void)state;
    nx_conv_layout L;
    nx_conv_params p;
    nx_error err;
    uint64_t out[6];
    /* ResNet-50 conv1's weight gradient (conv1: 7x7, stride 2, 3 -> 64
     * channels on 224x224; He et al., "Deep Residual Learning", 2016):
     * [7,7,3,64] = conv([16,3,224,224], [16,64,112,112]), pad 3_2 x 3_2,
     * rhs_dilation 2 */
    assert_int_equal(nx_conv_layout_parse("fb01_io01->01bf", &L, &err), 0);
    nx_conv_params_default(&p, 2);
    p.pad_lo[0] = p.pad_lo[1] = 3;
    p.pad_hi[0] = p.pad_hi[1] = 2;
    p.rhs_dilation[0] = p.rhs_dilation[1] = 2;
    const uint64_t img[4] = {16, 3, 224, 224}, grad[4] = {16, 64, 112, 112};
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, img, 4, grad, "img", "grad", out, &err), 0);
    assert_int_equal(out[0], 7);
    assert_int_equal(out[1], 7);
    assert_int_equal(out[2], 3);
    assert_int_equal(out[3], 64);
    /* out_shape given and right / wrong */
    p.out_ndims = 4;
    const uint64_t good[4] = {7, 7, 3, 64}, bad[4] = {7, 7, 64, 3};
    memcpy(p.out_shape, good, sizeof good);
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, img, 4, grad, "img", "grad", out, &err), 0);
    memcpy(p.out_shape, bad, sizeof bad);
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, img, 4, grad, "img", "grad", out, &err), -1);
    assert_string_equal(err.msg, "attribute out_shape=[7,7,64,3]: the convolution gives [7,7,3,64]");
    /* #3's layout, with grouped filters */
    assert_int_equal(nx_conv_layout_parse("0f1b_0i1o->01fb", &L, &err), 0);
    nx_conv_params_default(&p, 2);
    p.stride[0] = p.stride[1] = 2;
    p.pad_lo[0] = p.pad_hi[0] = 1;
    p.pad_hi[1] = 2;
    p.feature_group_count = 2;
    const uint64_t im3[4] = {28, 8, 30, 5}, f3[4] = {3, 4, 3, 6}, f3bad[4] = {3, 8, 3, 6}, f3odd[4] = {3, 4, 3, 5};
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, im3, 4, f3, "img", "filt", out, &err), 0);
    assert_int_equal(out[0], 14); /* (28 + 2 - 3) / 2 + 1 */
    assert_int_equal(out[1], 15); /* (30 + 2 - 3) / 2 + 1 */
    assert_int_equal(out[2], 6);
    assert_int_equal(out[3], 5);
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, im3, 4, f3bad, "img", "filt", out, &err), -1);
    assert_string_equal(err.msg, "filt: dim 1 (i) is 8 but img features 8 / feature_group_count 2 = 4"
            " (layouts, labels 0f1b_0i1o->01fb: img H,C,W,N, filt KH,C/G,KW,O, result OH,OW,O,N)");
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, im3, 4, f3odd, "img", "filt", out, &err), -1);
    assert_string_equal(err.msg, "filt: dim 3 (o) of 5 output features is not divisible by feature_group_count 2"
            " (layouts, labels 0f1b_0i1o->01fb: img H,C,W,N, filt KH,C/G,KW,O, result OH,OW,O,N)");
    assert_int_equal(nx_conv_result_shape(&L, &p, 3, im3, 4, f3, "img", "filt", out, &err), -1);
    assert_string_equal(err.msg, "img: 3 dims, the labels 0f1b_0i1o->01fb need 4"
            " (layouts, labels 0f1b_0i1o->01fb: img H,C,W,N, filt KH,C/G,KW,O, result OH,OW,O,N)");
    nx_conv_params_default(&p, 1);
    assert_int_equal(nx_conv_result_shape(&L, &p, 4, im3, 4, f3, "img", "filt", out, &err), -1);
    assert_string_equal(err.msg, "conv: attributes are for 1 spatial dims, the labels 0f1b_0i1o->01fb have 2");
}

/* The registry rule: `nxsim run KEY -i img.npy -i filt.npy -a stride=[2,2]
 * -a padding=[[1,1],[0,2]]` infers the result from the formula. */
static void test_rule_infer(void **state) {
    (void)state;
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_error err;
    const uint64_t img[4] = {56, 64, 56, 8}, filt[4] = {3, 64, 3, 128};
    assert_int_equal(nx_macro_op_set_func_name(&op, "Conv2d_pbp_0f1b_0i1o_01fb_experimental_1", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "img", NX_DT_BF16, 4, img, &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "filt", NX_DT_BF16, 4, filt, &err), 0);
    static const char *const a[] = {"stride=[2,2]", "padding=[[1,1],[0,2]]"};
    nx_attrs_free(&op.attrs);
    set_attrs(&op.attrs, 2, a);
    const char *names[1] = {"y"};
    assert_int_equal(nx_conv_rule_infer(&op, "0f1b_0i1o->01fb", names, &err), 0);
    assert_int_equal(op.n_results, 1);
    assert_string_equal(op.results[0].name, "y");
    assert_int_equal(op.results[0].dtype, NX_DT_BF16);
    assert_int_equal(op.results[0].shape[0], 28); /* (56 + 2 - 3) / 2 + 1 */
    assert_int_equal(op.results[0].shape[1], 28); /* (56 + 2 - 3) / 2 + 1 */
    assert_int_equal(op.results[0].shape[2], 128);
    assert_int_equal(op.results[0].shape[3], 8);
    assert_int_equal(nx_conv_rule_contraction(&op, "0f1b_0i1o->01fb"), 576);
    /* a bad attribute is named */
    nx_macro_op_free(&op);
    nx_macro_op_init(&op);
    assert_int_equal(nx_macro_op_set_func_name(&op, "k", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "img", NX_DT_BF16, 4, img, &err), 0);
    assert_int_equal(nx_conv_rule_infer(&op, "0f1b_0i1o->01fb", NULL, &err), -1);
    assert_string_equal(err.msg, "k takes two operands (image 0f1b, filter), the op has 1");
    assert_int_equal(nx_macro_op_add_operand(&op, "w", NX_DT_BF16, 4, filt, &err), 0);
    static const char *const b[] = {"padding=[[1,1]]"};
    nx_attrs_free(&op.attrs);
    set_attrs(&op.attrs, 1, b);
    assert_int_equal(nx_conv_rule_infer(&op, "0f1b_0i1o->01fb", NULL, &err), -1);
    assert_string_equal(err.msg, "attribute padding=[[1,1]]: must hold 2 [lo, hi] pairs of ints (one per spatial dim)");
    nx_attrs_free(&op.attrs);
    nx_attrs_init(&op.attrs);
    const uint64_t filt2[4] = {3, 32, 3, 128};
    op.operands[1].shape[1] = filt2[1];
    assert_int_equal(nx_conv_rule_infer(&op, "0f1b_0i1o->01fb", NULL, &err), -1);
    assert_string_equal(err.msg, "operand 1 (w): dim 1 (i) is 32 but operand 0 (img) features 64 / "
                                 "feature_group_count 1 = 64"
            " (layouts, labels 0f1b_0i1o->01fb: operand 0 (img) H,C,W,N, operand 1 (w) KH,C/G,KW,O, result OH,OW,O,N)");
    nx_macro_op_free(&op);
}

static void test_tolerance(void **state) {
    (void)state;
    /* 1 + 2 K sqrt(K) 2^-24 / eps */
    double t = nx_conv_rule_tolerance_eps(1152, NX_DT_BF16);
    assert_true(t > 1.59 && t < 1.61);
    t = nx_conv_rule_tolerance_eps(1152, NX_DT_FP32);
    assert_true(t > 39000 && t < 39200);
    assert_true(nx_conv_rule_tolerance_eps(1, NX_DT_FP32) == 2.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refusals),     cmocka_unit_test(test_require_default),
        cmocka_unit_test(test_result_shape), cmocka_unit_test(test_rule_infer),
        cmocka_unit_test(test_tolerance),     cmocka_unit_test(test_long_value_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
