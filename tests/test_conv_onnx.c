/* The `conv` composite (kernels/conv/onnx/conv_onnx.h, ONNX Conv on NCHW /
 * OIHW) through the run path (nx_run_op): random shapes over every leaf it
 * chooses (dense #4 with its layout swaps, grouped and channel-multiplier
 * convolutions on #4, depthwise #6 and #9 once per image), every auto_pad, strides,
 * dilations, pads, 1-D convolutions, with and without B, fp32 and bf16,
 * against nx_ref_conv_onnx within the rules' tolerance, on the functional
 * executor and on the SystemC model with the race detector (the two bit for
 * bit equal); the reference against the im2col conv reference nx_ref_conv
 * (XLA labels bf01_oi01->bf01); the leaf choice and its report line; and
 * the refusals, one line naming the operand or attribute and its layout. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kcheck.h"
#include "kernels/conv/onnx/conv_onnx.h"
#include "kernels/ref/ref.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "roster_case.h"
#include "support.h"















/* X [N, C, H, W], W [O, C/g, KH, KW] (+ B [O]) on both backends. */
static void conv2d(nx_dtype dt, uint64_t N, uint64_t C, uint64_t H, uint64_t W, uint64_t O, uint64_t g, uint64_t KH,
                   uint64_t KW, int bias, const char *attrs) {
    roster_operand ops[3] = {{"X", dt, 4, {N, C, H, W}, NULL},
                      {"W", dt, 4, {O, C / g, KH, KW}, NULL},
                      {"B", dt, 1, {O}, NULL}};
    char a[400];
    snprintf(a, sizeof a, "group=%llu%s%s", (unsigned long long)g, attrs && *attrs ? ";" : "", attrs ? attrs : "");
    roster_check("trn2", "conv", ops, bias ? 3 : 2, a);
}

static void dense(void **state) {
    (void)state;
    conv2d(NX_DT_BF16, 2, 40, 9, 11, 24, 1, 3, 3, 1, "pads=[1,1,1,1]");
    conv2d(NX_DT_FP32, 3, 17, 8, 7, 9, 1, 3, 2, 0, "strides=[2,1];pads=[0,2,1,0]");
    conv2d(NX_DT_BF16, 1, 130, 6, 6, 20, 1, 3, 3, 1, "dilations=[2,2];pads=[2,2,2,2]");
    conv2d(NX_DT_FP32, 2, 8, 10, 12, 150, 1, 1, 1, 1, NULL);
    conv2d(NX_DT_BF16, 4, 3, 12, 12, 16, 1, 5, 5, 1, "strides=[2,2];kernel_shape=[5,5]");
}

static void auto_pads(void **state) {
    (void)state;
    static const char *const modes[] = {"auto_pad=\"SAME_UPPER\"", "auto_pad=\"SAME_LOWER\"", "auto_pad=\"VALID\"",
                                        "auto_pad=\"NOTSET\";pads=[0,1,2,0]"};
    for (int i = 0; i < 4; i++) {
        char a[200];
        snprintf(a, sizeof a, "%s;strides=[2,3];dilations=[1,2]", modes[i]);
        conv2d(NX_DT_FP32, 2, 6, 9, 10, 5, 1, 4, 3, 1, a);   /* even kernel: SAME_UPPER != SAME_LOWER */
        conv2d(NX_DT_FP32, 2, 4, 7, 7, 4, 4, 4, 3, 0, a);    /* depthwise, N > 1 (#9 per image) */
        conv2d(NX_DT_FP32, 1, 4, 7, 7, 4, 4, 4, 3, 1, a);    /* depthwise, N = 1 (#9) */
    }
}

static void grouped(void **state) {
    (void)state;
    conv2d(NX_DT_BF16, 2, 12, 8, 8, 18, 3, 3, 3, 1, "pads=[1,1,1,1]");     /* 1 < group < C */
    conv2d(NX_DT_FP32, 2, 8, 6, 7, 16, 8, 3, 3, 1, "pads=[1,1,1,1]");      /* multiplier 2 */
    conv2d(NX_DT_BF16, 3, 32, 10, 9, 32, 32, 3, 3, 1, "pads=[1,1,1,1]");   /* depthwise, #9 per image */
    conv2d(NX_DT_FP32, 1, 48, 12, 12, 48, 48, 3, 3, 1, "strides=[2,2];pads=[1,0,1,0]"); /* #9 */
    conv2d(NX_DT_BF16, 1, 20, 9, 9, 20, 20, 5, 5, 0, "dilations=[2,1];pads=[4,2,0,2]");
}

/* X [N, C, W], W [O, C/g, KW]: the 1-D convolutions (#6 when depthwise). */
static void conv1d(void **state) {
    (void)state;
    roster_operand a[3] = {{"X", NX_DT_FP32, 3, {2, 40, 50}, NULL}, {"W", NX_DT_FP32, 3, {40, 1, 4}, NULL},
                    {"B", NX_DT_FP32, 1, {40}, NULL}};
    roster_check("trn2", "conv", a, 3, "group=40;pads=[3,0]");
    roster_check("trn2", "conv", a, 2, "group=40;auto_pad=\"SAME_LOWER\";strides=[2];dilations=[2]");
    roster_operand b[3] = {{"X", NX_DT_BF16, 3, {3, 16, 30}, NULL}, {"W", NX_DT_BF16, 3, {24, 16, 5}, NULL},
                    {"B", NX_DT_BF16, 1, {24}, NULL}};
    roster_check("trn2", "conv", b, 3, "strides=[2];pads=[2,2]");
}

/* Random problems over every choice (seeded: the same list every run). */
static void random_shapes(void **state) {
    (void)state;
    test_rng r = {0x5eed5eedull};
    static const char *const modes[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int t = 0; t < 12; t++) {
        uint64_t kind = test_rng_next(&r) % 4, N = 1 + test_rng_next(&r) % 3, C = 1 + test_rng_next(&r) % 20;
        uint64_t H = 3 + test_rng_next(&r) % 9, W = 3 + test_rng_next(&r) % 9;
        uint64_t KH = 1 + test_rng_next(&r) % 3, KW = 1 + test_rng_next(&r) % 3;
        uint64_t g = kind == 2 ? C : 1, O = kind == 2 ? C : 1 + test_rng_next(&r) % 24;
        if (kind == 3 && C % 2 == 0) g = 2, O = 2 * (1 + test_rng_next(&r) % 6);
        const char *mode = modes[test_rng_next(&r) % 4];
        char a[200];
        int sy = 1 + (int)(test_rng_next(&r) % 2), sx = 1 + (int)(test_rng_next(&r) % 3);
        int dy = 1 + (int)(test_rng_next(&r) % 2), dx = 1 + (int)(test_rng_next(&r) % 2);
        if (strcmp(mode, "NOTSET") == 0)
            snprintf(a, sizeof a, "strides=[%d,%d];dilations=[%d,%d];pads=[%d,%d,%d,%d]", sy, sx, dy, dx,
                     (int)(test_rng_next(&r) % 3), (int)(test_rng_next(&r) % 3), (int)(test_rng_next(&r) % 3),
                     (int)(test_rng_next(&r) % 3));
        else
            snprintf(a, sizeof a, "strides=[%d,%d];dilations=[%d,%d];auto_pad=\"%s\"", sy, sx, dy, dx, mode);
        uint64_t dkh = (KH - 1) * (uint64_t)dy + 1, dkw = (KW - 1) * (uint64_t)dx + 1;
        if (strcmp(mode, "VALID") == 0 && (dkh > H || dkw > W)) continue;
        if (strcmp(mode, "NOTSET") == 0 && (dkh > H || dkw > W)) continue;
        conv2d(t % 2 ? NX_DT_BF16 : NX_DT_FP32, N, C, H, W, O, g, KH, KW, (int)(test_rng_next(&r) % 2), a);
    }
}

/* The direct-sum reference against the im2col one (nx_ref_conv, XLA labels
 * bf01_oi01->bf01 are NCHW / OIHW) on fp32, bit for bit up to the sum order. */
static void reference_agrees(void **state) {
    (void)state;
    uint64_t xs[4] = {2, 6, 7, 9}, ws[4] = {4, 3, 3, 2};
    nx_norm_tensor in[2] = {{"X", NX_DT_FP32, 4, xs}, {"W", NX_DT_FP32, 4, ws}};
    nx_attrs at;
    nx_attrs_init(&at);
    nx_error err;
    nx_value g = nx_value_int(2), sp;
    assert_int_equal(nx_attrs_set(&at, "group", &g, &err), 0);
    assert_int_equal(nx_value_parse("pads", "[1,0,2,1]", &sp, &err), 0);
    assert_int_equal(nx_attrs_set(&at, "pads", &sp, &err), 0);
    assert_int_equal(nx_value_parse("strides", "[2,1]", &sp, &err), 0);
    assert_int_equal(nx_attrs_set(&at, "strides", &sp, &err), 0);
    nx_conv_onnx_params p;
    assert_int_equal(nx_conv_onnx_read(&at, in, 2, &p, &err), 0);
    float x[2 * 6 * 7 * 9], w[4 * 3 * 3 * 2], y1[2 * 4 * 4 * 9], y2[2 * 4 * 4 * 9];
    assert_int_equal(p.OH * p.OW * p.N * p.O, sizeof y1 / sizeof y1[0]);
    test_rng r = {7};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)test_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = (float)test_rng_uniform(&r, -1, 1);
    assert_int_equal(nx_ref_conv_onnx(&p, x, w, NULL, y1, &err), 0);
    nx_conv_params cp;
    nx_attrs xla;
    nx_attrs_init(&xla);
    nx_value v;
    assert_int_equal(nx_value_parse("stride", "[2,1]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&xla, "stride", &v, &err), 0);
    assert_int_equal(nx_value_parse("padding", "[[1,2],[0,1]]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&xla, "padding", &v, &err), 0);
    v = nx_value_int(2);
    assert_int_equal(nx_attrs_set(&xla, "feature_group_count", &v, &err), 0);
    assert_int_equal(nx_conv_params_read(&xla, 2, NULL, &cp, &err), 0);
    uint64_t ys[4] = {2, 4, 4, 9};
    nx_ref_operand lhs = {x, NX_DT_FP32, 4, xs}, rhs = {w, NX_DT_FP32, 4, ws};
    assert_int_equal(nx_ref_conv("bf01_oi01->bf01", &cp, &lhs, &rhs, y2, NX_DT_FP32, 4, ys, &err), 0);
    for (size_t i = 0; i < sizeof y1 / sizeof y1[0]; i++) assert_true(fabs(y1[i] - y2[i]) <= 1e-5 * (1 + fabs(y2[i])));
    nx_attrs_free(&at);
    nx_attrs_free(&xla);
}

static void choice_of(uint64_t N, uint64_t C, uint64_t O, uint64_t g, uint32_t rank, int bias, const char *key,
                      const char *text) {
    uint64_t xs[4] = {N, C, 8, 8}, ws[4] = {O, C / g, 3, 3}, bs[1] = {O};
    if (rank == 3) xs[2] = 8, ws[2] = 3;
    nx_norm_tensor in[3] = {{"X", NX_DT_FP32, rank, xs}, {"W", NX_DT_FP32, rank, ws}, {"B", NX_DT_FP32, 1, bs}};
    nx_attrs at;
    nx_attrs_init(&at);
    nx_error err;
    nx_value gv = nx_value_int((int64_t)g);
    assert_int_equal(nx_attrs_set(&at, "group", &gv, &err), 0);
    nx_conv_onnx_params p;
    if (nx_conv_onnx_read(&at, in, bias ? 3 : 2, &p, &err) != 0) fail_msg("%s", err.msg);
    nx_conv_onnx_choice c;
    nx_conv_onnx_choose(&p, &c);
    assert_string_equal(c.key, key);
    char buf[512];
    nx_conv_onnx_choice_text(&p, &c, buf, sizeof buf);
    assert_string_equal(buf, text);
    nx_attrs_free(&at);
}

static void choices(void **state) {
    (void)state;
    choice_of(2, 16, 32, 1, 4, 1, "Conv2d_pbp_fb01_io01_01bf_experimental_1",
              "leaf Conv2d_pbp_fb01_io01_01bf_experimental_1: dense (group = 1); layout: X NCHW -> CNHW (outer-dim swap), "
              "W OIHW -> IOHW (outer-dim swap), Y OH,OW,N,O -> NCHW (PE transposes); B added in a last DVE/POOL/ACT pass");
    choice_of(1, 16, 32, 1, 4, 0, "Conv2d_pbp_fb01_io01_01bf_experimental_1",
              "leaf Conv2d_pbp_fb01_io01_01bf_experimental_1: dense (group = 1); layout: X NCHW -> CNHW (same bytes), "
              "W OIHW -> IOHW (outer-dim swap), Y OH,OW,N,O -> NCHW (PE transposes)");
    choice_of(2, 16, 32, 16, 4, 0, "Conv2d_pbp_fb01_io01_01bf_experimental_1",
              "leaf Conv2d_pbp_fb01_io01_01bf_experimental_1: grouped with a channel multiplier (group = C, O = m x C); "
              "layout: X NCHW -> CNHW (outer-dim swap), W OIHW -> IOHW (same bytes), Y OH,OW,N,O -> NCHW (PE transposes)");
    choice_of(2, 16, 16, 4, 4, 0, "Conv2d_pbp_fb01_io01_01bf_experimental_1",
              "leaf Conv2d_pbp_fb01_io01_01bf_experimental_1: grouped (1 < group < C); layout: X NCHW -> CNHW (outer-dim "
              "swap), W OIHW -> IOHW (outer-dim swap), Y OH,OW,N,O -> NCHW (PE transposes)");
    choice_of(4, 16, 16, 16, 4, 0, "conv2d_column_packing_1",
              "leaf conv2d_column_packing_1: depthwise (group = C = O), once per image; layout: X NCHW, W OIHW and Y "
              "NCHW read and written as they are, 4 calls on one image each");
    choice_of(1, 16, 16, 16, 4, 1, "conv2d_column_packing_1",
              "leaf conv2d_column_packing_1: depthwise (group = C = O), one image; layout: X NCHW, W OIHW and Y NCHW "
              "read and written as they are (the leaf's layouts); B added in a last DVE/POOL/ACT pass");
    choice_of(3, 16, 16, 16, 3, 0, "Conv1d_depthwise_bf01_oi01_bf01",
              "leaf Conv1d_depthwise_bf01_oi01_bf01: depthwise 1-D (group = C = O); layout: X NCW, W OIW and Y NCW read "
              "and written as they are (the leaf's layouts)");
}

static void refusals(void **state) {
    (void)state;
    roster_operand a[3] = {{"X", NX_DT_FP32, 4, {2, 8, 6, 6}, NULL}, {"W", NX_DT_FP32, 4, {4, 8, 3, 3}, NULL},
                    {"B", NX_DT_FP32, 1, {4}, NULL}};
    roster_refused("trn2", "conv", a, 2, "group=3", "attribute group=3: does not divide operand 0 (X)'s C = 8 (X is NCHW: [N, C, H, W])");
    roster_refused("trn2", "conv", a, 2, "group=2",
            "operand 1 (W): dim 1 is 8 but C / group = 8 / 2 = 4 (X is NCHW: [N, C, H, W], W is OIHW: [O, C/group, KH, KW])");
    roster_refused("trn2", "conv", a, 2, "group=0", "attribute group=0: must be >= 1");
    roster_refused("trn2", "conv", a, 2, "kernel_shape=[3,2]",
            "attribute kernel_shape=[3,2]: differs from operand 1 (W)'s kernel [3,3] (W is OIHW: [O, C/group, KH, KW])");
    roster_refused("trn2", "conv", a, 2, "kernel_shape=[3]",
            "attribute kernel_shape: has 1 entries, it must be a list of 2 ints (one per spatial dim)");
    roster_refused("trn2", "conv", a, 2, "auto_pad=\"SAME\"",
            "attribute auto_pad: 'SAME' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    roster_refused("trn2", "conv", a, 2, "auto_pad=1", "attribute auto_pad: must be a string (NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
    roster_refused("trn2", "conv", a, 2, "auto_pad=\"VALID\";pads=[1,1,1,1]",
            "attribute pads=[1,1,1,1]: not allowed with auto_pad=VALID (pads apply only with auto_pad NOTSET)");
    roster_refused("trn2", "conv", a, 2, "pads=[1,1,-1,1]", "attribute pads=[1,1,-1,1]: entries must be >= 0");
    roster_refused("trn2", "conv", a, 2, "pads=[1,1]",
            "attribute pads: has 2 entries, it must be a list of 4 ints (the begins, then the ends, of the spatial dims)");
    roster_refused("trn2", "conv", a, 2, "strides=[0,1]", "attribute strides=[0,1]: entries must be >= 1");
    roster_refused("trn2", "conv", a, 2, "dilations=[4,1]",
            "operand 0 (X): the 3-tap window (dilation 4) does not fit H = 6 with pads [0,0]: no output (X is NCHW: "
            "[N, C, H, W], W is OIHW: [O, C/group, KH, KW])");
    roster_refused("trn2", "conv", a, 2, "padding=[1,1,1,1]",
            "conv: unknown attribute 'padding'; conv reads: auto_pad, dilations, group, kernel_shape, pads, strides");
    roster_operand b[3] = {{"X", NX_DT_FP32, 4, {2, 8, 6, 6}, NULL}, {"W", NX_DT_FP32, 4, {4, 8, 3, 3}, NULL},
                    {"B", NX_DT_FP32, 1, {5}, NULL}};
    roster_refused("trn2", "conv", b, 3, NULL, "operand 2 (B): shape [5] must be [O] = [4] (W's dim 0)");
    roster_operand c[2] = {{"X", NX_DT_FP32, 5, {2, 8, 4, 4, 4}, NULL}, {"W", NX_DT_FP32, 5, {4, 8, 3, 3, 3}, NULL}};
    roster_refused("trn2", "conv", c, 2, NULL,
            "operand 0 (X): rank 5, conv takes X in NCW [N, C, W] or NCHW [N, C, H, W] (1-D and 2-D convolutions)");
    roster_operand d[2] = {{"X", NX_DT_FP32, 4, {2, 8, 6, 6}, NULL}, {"W", NX_DT_FP32, 3, {4, 8, 3}, NULL}};
    roster_refused("trn2", "conv", d, 2, NULL, "operand 1 (W): rank 3, X of rank 4 needs W in OIHW: [O, C/group, KH, KW]");
    roster_operand e[2] = {{"X", NX_DT_FP32, 4, {2, 8, 6, 6}, NULL}, {"W", NX_DT_BF16, 4, {4, 8, 3, 3}, NULL}};
    roster_refused("trn2", "conv", e, 2, NULL, "operand 1 (W): dtype bf16 differs from operand 0 (X)'s fp32");
    roster_operand f[2] = {{"X", NX_DT_INT32, 4, {2, 8, 6, 6}, NULL}, {"W", NX_DT_INT32, 4, {4, 8, 3, 3}, NULL}};
    roster_refused("trn2", "conv", f, 2, NULL, "operand 0 (X): dtype int32, conv takes fp32, bf16 or fp16");
    roster_operand h[2] = {{"X", NX_DT_FP32, 4, {2, 8, 6, 6}, NULL}, {"W", NX_DT_FP32, 4, {6, 2, 3, 3}, NULL}};
    roster_refused("trn2", "conv", h, 2, "group=4", "operand 1 (W): dim 0 (O = 6) is not divisible by group 4 (W is OIHW: [O, C/group, KH, KW])");
}

/* The composite row: reachable by name, family conv, never a registry key. */
static void composite_row(void **state) {
    (void)state;
    nx_kernel_target t;
    nx_error err;
    assert_int_equal(nx_kernel_lookup(NULL, NULL, "conv", &t, &err), 0);
    assert_null(t.entry);
    assert_non_null(t.composite);
    assert_string_equal(t.family, "conv");
    assert_non_null(t.rules->explain);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense),         cmocka_unit_test(auto_pads),        cmocka_unit_test(grouped),
        cmocka_unit_test(conv1d),        cmocka_unit_test(random_shapes),    cmocka_unit_test(reference_agrees),
        cmocka_unit_test(choices),       cmocka_unit_test(refusals),         cmocka_unit_test(composite_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
