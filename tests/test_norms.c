/* The norms composites (kernels/norms/norms.h) and cumsum and rope
 * (kernels/elementwise/elementwise.h) through the run path
 * (nx_run_op): on random shapes with ragged tails (rows not a multiple of
 * 128, H not a multiple of 512) against the rules' reference (--check, the
 * tolerance from the dtype and H), on the functional executor and on the
 * SystemC model with the race detector, the two bit for bit equal; values
 * worked out by hand (zeros with eps, all-equal rows, -0.0, Inf and NaN
 * rows); and the refusals, one line naming the operand or attribute. */
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
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "roster_case.h"
#include "support.h"













/* ---- rmsnorm ---- */

static void rmsnorm_random(void **state) {
    (void)state;
    /* 130 rows (a ragged second tile), H = 700 */
    roster_operand a[2] = {{"x", NX_DT_BF16, 2, {130, 700}, NULL}, {"gamma", NX_DT_BF16, 1, {700}, NULL}};
    roster_check("trn2", "rmsnorm", a, 2, NULL);
    /* three leading dims, fp32 x with bf16 gamma, the residual, on trn1 */
    roster_operand b[3] = {{"x", NX_DT_FP32, 3, {3, 50, 1000}, NULL},
                    {"gamma", NX_DT_BF16, 1, {1000}, NULL},
                    {"r", NX_DT_FP32, 3, {3, 50, 1000}, NULL}};
    roster_check("trn1", "rmsnorm", b, 3, "residual=true;eps=1e-5");
    /* the row quantisation over 5 tiles (rotating buffers), H = 513 */
    roster_operand c[2] = {{"x", NX_DT_BF16, 2, {600, 513}, NULL}, {"gamma", NX_DT_FP32, 1, {513}, NULL}};
    roster_check("trn2", "rmsnorm", c, 2, "quant=\"row\";fp8_max=448.0");
    /* static, with the residual: q and x' */
    static const double scale[1] = {0.0125};
    roster_operand d[4] = {{"x", NX_DT_FP32, 2, {129, 96}, NULL},
                    {"gamma", NX_DT_FP32, 1, {96}, NULL},
                    {"r", NX_DT_FP32, 2, {129, 96}, NULL},
                    {"scale", NX_DT_FP32, 1, {1}, scale}};
    roster_check("trn2", "rmsnorm", d, 4, "quant=\"static\";residual=true");
    /* one row, H = 16384 (the roster's largest H) */
    roster_operand e[2] = {{"x", NX_DT_BF16, 1, {16384}, NULL}, {"gamma", NX_DT_BF16, 1, {16384}, NULL}};
    roster_check("trn1", "rmsnorm", e, 2, "eps=0");
}

/* Rows by hand: zeros with eps give zeros (0 * rsqrt(eps)); a row of 3s
 * gives gamma * 3 / sqrt(9 + eps); -0.0 stays -0.0 under a positive gamma;
 * an Inf makes its row's rstd 0, so Inf * 0 = NaN there and 0 elsewhere; a
 * NaN makes its whole row NaN. */
static void rmsnorm_values(void **state) {
    (void)state;
    enum { H = 8, R = 5 };
    double x[R * H], g[H];
    for (int j = 0; j < H; j++) {
        g[j] = 0.5 + j;
        x[0 * H + j] = 0;
        x[1 * H + j] = 3;
        x[2 * H + j] = j % 2 ? -0.0 : 1.0;
        x[3 * H + j] = j == 2 ? INFINITY : 1.0;
        x[4 * H + j] = j == 5 ? NAN : 1.0;
    }
    roster_operand a[2] = {{"x", NX_DT_FP32, 2, {R, H}, x}, {"gamma", NX_DT_FP32, 1, {H}, g}};
    roster_outcome o;
    roster_run("trn2", "rmsnorm", a, 2, "eps=0.5", &o);
    for (int j = 0; j < H; j++) {
        assert_true(roster_value_at(&o, 0, j) == 0);
        double want = g[j] * 3 / sqrt(9.5);
        assert_true(fabs(roster_value_at(&o, 0, H + j) - want) <= 4e-7 * fabs(want));
        double y2 = roster_value_at(&o, 0, 2 * H + j);
        if (j % 2) assert_true(y2 == 0 && signbit(y2));
        double y3 = roster_value_at(&o, 0, 3 * H + j);
        if (j == 2) assert_true(isnan(y3));
        else assert_true(y3 == 0);
        assert_true(isnan(roster_value_at(&o, 0, 4 * H + j)));
    }
    roster_outcome_free(&o);
    /* eps = 0 on a zero row: 0 * rsqrt(0) = 0 * Inf = NaN, as the math says */
    double z[H] = {0}, ones[H] = {1, 1, 1, 1, 1, 1, 1, 1};
    roster_operand b[2] = {{"x", NX_DT_BF16, 2, {1, H}, z}, {"gamma", NX_DT_BF16, 1, {H}, ones}};
    roster_run("trn2", "rmsnorm", b, 2, "eps=0", &o);
    for (int j = 0; j < H; j++) assert_true(isnan(roster_value_at(&o, 0, j)));
    roster_outcome_free(&o);
    /* row quantisation of a constant row: |y| = gamma everywhere, s = 7.5 /
     * 240, q = gamma / s rounded to fp8_e4m3 */
    double c[H] = {2, 2, 2, 2, 2, 2, 2, 2};
    roster_operand d[2] = {{"x", NX_DT_FP32, 2, {1, H}, c}, {"gamma", NX_DT_FP32, 1, {H}, g}};
    roster_run("trn2", "rmsnorm", d, 2, "quant=\"row\";eps=0", &o);
    assert_true(fabs(roster_value_at(&o, 1, 0) - 7.5 / 240) <= 1e-7);
    assert_true(roster_value_at(&o, 0, 7) == 240);
    assert_true(roster_value_at(&o, 0, 0) == 16); /* 0.5 * 32 */
    roster_outcome_free(&o);
}

/* ---- softmax ---- */

static void softmax_random(void **state) {
    (void)state;
    roster_operand a[1] = {{"x", NX_DT_BF16, 2, {300, 1000}, NULL}};
    roster_check("trn2", "softmax", a, 1, NULL);
    roster_operand b[1] = {{"x", NX_DT_FP32, 3, {3, 70, 5}, NULL}};
    roster_check("trn1", "softmax", b, 1, "axis=1");
    roster_check("trn2", "softmax", b, 1, "axis=-3");
    roster_operand c[1] = {{"x", NX_DT_FP32, 4, {2, 3, 4, 600}, NULL}};
    roster_check("trn2", "softmax", c, 1, "axis=3");
    roster_operand d[1] = {{"x", NX_DT_BF16, 1, {9000}, NULL}};
    roster_check("trn2", "softmax", d, 1, "axis=0");
}

/* The ONNX Softmax operator's examples (onnx/backend/test/case/node/
 * softmax.py): softmax([-1, 0, 1]) and "softmax_large_number", whose second
 * row (10000 + [0, 1, 2, 3]) equals the first after the max is subtracted;
 * an all-equal row gives 1/A; a NaN makes its line NaN. */
static void softmax_values(void **state) {
    (void)state;
    static const double ex[3] = {-1, 0, 1}, want_ex[3] = {0.09003058, 0.24472848, 0.66524094};
    roster_operand a[1] = {{"x", NX_DT_FP32, 2, {1, 3}, ex}};
    roster_outcome o;
    roster_run("trn2", "softmax", a, 1, NULL, &o);
    for (int j = 0; j < 3; j++) assert_true(fabs(roster_value_at(&o, 0, j) - want_ex[j]) <= 1e-7);
    roster_outcome_free(&o);
    static const double big[16] = {0, 1, 2, 3, 10000, 10001, 10002, 10003, 5, 5, 5, 5, -1e30, 0, NAN, 1};
    static const double want_big[4] = {0.0320586, 0.08714432, 0.23688284, 0.64391428};
    roster_operand b[1] = {{"x", NX_DT_FP32, 2, {4, 4}, big}};
    roster_run("trn2", "softmax", b, 1, NULL, &o);
    for (int j = 0; j < 4; j++) {
        assert_true(fabs(roster_value_at(&o, 0, j) - want_big[j]) <= 1e-7);
        assert_true(roster_value_at(&o, 0, 4 + j) == roster_value_at(&o, 0, j));
        assert_true(roster_value_at(&o, 0, 8 + j) == 0.25);
        assert_true(isnan(roster_value_at(&o, 0, 12 + j)));
    }
    roster_outcome_free(&o);
}

/* ---- layernorm ---- */

/* The ONNX LayerNormalization node tests' shapes and axes
 * (onnx/backend/test/case/node/layernormalization.py: X of [2, 3, 4, 5]
 * (and [3, 4]) normalised from every axis, epsilon variants, with and
 * without B) on random data, plus ragged tiles. */
static void layernorm_random(void **state) {
    (void)state;
    for (int axis = -4; axis < 4; axis++) {
        uint32_t a = (uint32_t)(axis < 0 ? axis + 4 : axis);
        roster_operand o[3] = {{"X", NX_DT_FP32, 4, {2, 3, 4, 5}, NULL}, {"Scale", NX_DT_FP32, 4 - a, {0}, NULL},
                        {"B", NX_DT_FP32, 4 - a, {0}, NULL}};
        static const uint64_t xs[4] = {2, 3, 4, 5};
        for (uint32_t d = a; d < 4; d++) o[1].shape[d - a] = o[2].shape[d - a] = xs[d];
        char attrs[64];
        snprintf(attrs, sizeof attrs, "axis=%d;epsilon=0.1", axis);
        roster_check("trn2", "layernorm", o, axis % 2 ? 2 : 3, attrs);
    }
    roster_operand b[3] = {{"X", NX_DT_BF16, 2, {300, 700}, NULL}, {"Scale", NX_DT_BF16, 1, {700}, NULL},
                    {"B", NX_DT_FP32, 1, {700}, NULL}};
    roster_check("trn1", "layernorm", b, 3, NULL);
    roster_operand c[2] = {{"X", NX_DT_FP32, 3, {3, 100, 1300}, NULL}, {"Scale", NX_DT_FP32, 1, {1300}, NULL}};
    roster_check("trn2", "layernorm", c, 2, "epsilon=1e-3");
}

/* bf16 X's column-chunk plan (kernels/norms/layernorm.c ln_chunked): H
 * 5000 with B (VectorE's + B over the last 1216 columns, GpSimd's chunks of
 * 2048 and a ragged 1736, three row tiles, the last ragged); H 20000 with B,
 * where VectorE's share does not fit beside three buffer sets and GpSimd
 * does the whole + B; H 3000 without B; H 60000, whose Scale and B alone
 * exceed a partition, refused. */
static void layernorm_chunked(void **state) {
    (void)state;
    roster_operand a[3] = {{"X", NX_DT_BF16, 2, {300, 5000}, NULL}, {"Scale", NX_DT_BF16, 1, {5000}, NULL},
                           {"B", NX_DT_BF16, 1, {5000}, NULL}};
    roster_check("trn2", "layernorm", a, 3, NULL);
    roster_operand b[3] = {{"X", NX_DT_BF16, 2, {130, 20000}, NULL}, {"Scale", NX_DT_BF16, 1, {20000}, NULL},
                           {"B", NX_DT_BF16, 1, {20000}, NULL}};
    roster_check("trn2", "layernorm", b, 3, NULL);
    roster_check("trn1", "layernorm", b, 3, NULL);
    roster_operand c[2] = {{"X", NX_DT_BF16, 2, {257, 3000}, NULL}, {"Scale", NX_DT_BF16, 1, {3000}, NULL}};
    roster_check("trn2", "layernorm", c, 2, NULL);
    roster_operand d[3] = {{"X", NX_DT_BF16, 2, {4, 60000}, NULL}, {"Scale", NX_DT_BF16, 1, {60000}, NULL},
                           {"B", NX_DT_BF16, 1, {60000}, NULL}};
    roster_refused("trn2", "layernorm", d, 3, NULL,
                   "operand 0 (X): 60000 elements from axis 1 need 379264 bytes per partition (Scale, B, the "
                   "centred chunks and one buffer set), SBUF has 229376");
}

/* By hand: X = [1, 2, 3, 4] gives Mean 2.5, InvStdDev 1 / sqrt(1.25 + eps),
 * Y = (X - 2.5) * InvStdDev * Scale + B; a constant row gives Y = B. */
static void layernorm_values(void **state) {
    (void)state;
    static const double x[8] = {1, 2, 3, 4, 7, 7, 7, 7}, g[4] = {1, 2, 0.5, -1}, b[4] = {0, 1, -1, 0.25};
    roster_operand o[3] = {{"X", NX_DT_FP32, 2, {2, 4}, x}, {"Scale", NX_DT_FP32, 1, {4}, g}, {"B", NX_DT_FP32, 1, {4}, b}};
    roster_outcome r;
    roster_run("trn2", "layernorm", o, 3, NULL, &r);
    double inv = 1 / sqrt(1.25 + 1e-5);
    assert_true(roster_value_at(&r, 1, 0) == 2.5 && roster_value_at(&r, 1, 1) == 7);
    assert_true(fabs(roster_value_at(&r, 2, 0) - inv) <= 1e-6 * inv);
    for (int j = 0; j < 4; j++) {
        double want = (x[j] - 2.5) * inv * g[j] + b[j];
        assert_true(fabs(roster_value_at(&r, 0, j) - want) <= 1e-6);
        assert_true(roster_value_at(&r, 0, 4 + j) == b[j]);
    }
    roster_outcome_free(&r);
}

/* ---- cumsum ---- */

static void cumsum_random(void **state) {
    (void)state;
    /* two chunks of the axis (4096 + 4904), a ragged tile, every mode */
    roster_operand a[1] = {{"x", NX_DT_FP32, 2, {130, 9000}, NULL}};
    roster_check("trn2", "cumsum", a, 1, NULL);
    roster_check("trn2", "cumsum", a, 1, "reverse=1;exclusive=1");
    roster_operand b[1] = {{"x", NX_DT_BF16, 3, {3, 300, 5}, NULL}};
    roster_check("trn1", "cumsum", b, 1, "axis=1;exclusive=1");
    roster_check("trn2", "cumsum", b, 1, "axis=-3;reverse=1");
    roster_operand c[1] = {{"x", NX_DT_FP32, 1, {4097}, NULL}};
    roster_check("trn2", "cumsum", c, 1, "exclusive=true");
}

/* The ONNX CumSum operator's examples (onnx/backend/test/case/node/
 * cumsum.py): 1-D with exclusive / reverse, 2-D along each axis. */
static void cumsum_values(void **state) {
    (void)state;
    static const double x1[5] = {1, 2, 3, 4, 5};
    static const struct {
        const char *attrs;
        double want[5];
    } one[4] = {{"", {1, 3, 6, 10, 15}},
                {"exclusive=1", {0, 1, 3, 6, 10}},
                {"reverse=1", {15, 14, 12, 9, 5}},
                {"reverse=1;exclusive=1", {14, 12, 9, 5, 0}}};
    roster_outcome o;
    for (int c = 0; c < 4; c++) {
        roster_operand a[1] = {{"x", NX_DT_FP32, 1, {5}, x1}};
        roster_run("trn2", "cumsum", a, 1, one[c].attrs, &o);
        for (int j = 0; j < 5; j++) assert_true(roster_value_at(&o, 0, j) == one[c].want[j]);
        roster_outcome_free(&o);
    }
    static const double x2[6] = {1, 2, 3, 4, 5, 6}, want0[6] = {1, 2, 3, 5, 7, 9}, want1[6] = {1, 3, 6, 4, 9, 15};
    roster_operand b[1] = {{"x", NX_DT_FP32, 2, {2, 3}, x2}};
    roster_run("trn2", "cumsum", b, 1, "axis=0", &o);
    for (int j = 0; j < 6; j++) assert_true(roster_value_at(&o, 0, j) == want0[j]);
    roster_outcome_free(&o);
    roster_run("trn2", "cumsum", b, 1, "axis=-1", &o);
    for (int j = 0; j < 6; j++) assert_true(roster_value_at(&o, 0, j) == want1[j]);
    roster_outcome_free(&o);
    /* a first -0 stays -0 (numpy's cumsum), Inf and NaN propagate forward */
    static const double x3[4] = {-0.0, 1, INFINITY, NAN};
    roster_operand c[1] = {{"x", NX_DT_BF16, 1, {4}, x3}};
    roster_run("trn2", "cumsum", c, 1, NULL, &o);
    assert_true(roster_value_at(&o, 0, 0) == 0 && signbit(roster_value_at(&o, 0, 0)));
    assert_true(roster_value_at(&o, 0, 1) == 1 && isinf(roster_value_at(&o, 0, 2)) && isnan(roster_value_at(&o, 0, 3)));
    roster_outcome_free(&o);
}

/* ---- rope ---- */

static void rope_random(void **state) {
    (void)state;
    /* S = 1024: 8 positions per partition; S = 300: ragged blocks of 128;
     * S = 20: 6 heads packed per tile; cos [B, S, D/2] */
    roster_operand a[3] = {{"x", NX_DT_BF16, 4, {1, 3, 1024, 64}, NULL},
                    {"cos", NX_DT_BF16, 2, {1024, 32}, NULL},
                    {"sin", NX_DT_BF16, 2, {1024, 32}, NULL}};
    roster_check("trn2", "rope", a, 3, NULL);
    roster_check("trn2", "rope", a, 3, "layout=\"interleaved\"");
    roster_operand b[3] = {{"x", NX_DT_FP32, 4, {2, 2, 300, 256}, NULL},
                    {"cos", NX_DT_FP32, 3, {2, 300, 128}, NULL},
                    {"sin", NX_DT_FP32, 3, {2, 300, 128}, NULL}};
    roster_check("trn1", "rope", b, 3, "layout=\"half\"");
    roster_operand c[3] = {{"x", NX_DT_FP32, 4, {2, 7, 20, 6}, NULL},
                    {"cos", NX_DT_BF16, 2, {20, 3}, NULL},
                    {"sin", NX_DT_BF16, 2, {20, 3}, NULL}};
    roster_check("trn2", "rope", c, 3, "layout=\"interleaved\"");
}

/* By hand: a rotation by 90 degrees (cos 0, sin 1) maps (x1, x2) to
 * (-x2, x1); cos 1, sin 0 is the identity. */
static void rope_values(void **state) {
    (void)state;
    static const double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, cs[4] = {0, 0, 1, 1}, sn[4] = {1, 1, 0, 0};
    static const double half[8] = {-3, -4, 1, 2, 5, 6, 7, 8}, pairs[8] = {-2, 1, -4, 3, 5, 6, 7, 8};
    roster_operand a[3] = {{"x", NX_DT_FP32, 4, {1, 1, 2, 4}, x},
                    {"cos", NX_DT_FP32, 2, {2, 2}, cs},
                    {"sin", NX_DT_FP32, 2, {2, 2}, sn}};
    roster_outcome o;
    roster_run("trn2", "rope", a, 3, NULL, &o);
    for (int j = 0; j < 8; j++) assert_true(roster_value_at(&o, 0, j) == half[j]);
    roster_outcome_free(&o);
    roster_run("trn2", "rope", a, 3, "layout=\"interleaved\"", &o);
    for (int j = 0; j < 8; j++) assert_true(roster_value_at(&o, 0, j) == pairs[j]);
    roster_outcome_free(&o);
}

/* ---- matmul ---- */

/* The ONNX MatMul node tests' shapes (onnx/backend/test/case/node/
 * matmul.py: 2-D, 3-D, 4-D), numpy's broadcasting and 1-D promotion, and
 * ragged tiles in M, K and N (two K tiles, two N tiles). */
static void matmul_shapes(void **state) {
    (void)state;
    roster_operand a[2] = {{"A", NX_DT_FP32, 2, {3, 4}, NULL}, {"B", NX_DT_FP32, 2, {4, 3}, NULL}};
    roster_check("trn2", "matmul", a, 2, NULL);
    roster_operand b[2] = {{"A", NX_DT_FP32, 3, {2, 3, 4}, NULL}, {"B", NX_DT_FP32, 3, {2, 4, 3}, NULL}};
    roster_check("trn2", "matmul", b, 2, NULL);
    roster_operand c[2] = {{"A", NX_DT_BF16, 4, {1, 2, 3, 4}, NULL}, {"B", NX_DT_BF16, 4, {1, 2, 4, 3}, NULL}};
    roster_check("trn1", "matmul", c, 2, NULL);
    roster_operand d[2] = {{"A", NX_DT_FP32, 4, {2, 1, 3, 4}, NULL}, {"B", NX_DT_FP32, 3, {5, 4, 6}, NULL}};
    roster_check("trn2", "matmul", d, 2, NULL);
    roster_operand e[2] = {{"A", NX_DT_BF16, 1, {4}, NULL}, {"B", NX_DT_BF16, 3, {2, 4, 3}, NULL}};
    roster_check("trn2", "matmul", e, 2, NULL);
    roster_operand f[2] = {{"A", NX_DT_FP32, 2, {3, 4}, NULL}, {"B", NX_DT_FP32, 1, {4}, NULL}};
    roster_check("trn2", "matmul", f, 2, NULL);
    roster_operand g[2] = {{"A", NX_DT_BF16, 2, {130, 200}, NULL}, {"B", NX_DT_BF16, 2, {200, 600}, NULL}};
    roster_check("trn2", "matmul", g, 2, NULL);
}

/* By hand: [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; the
 * result shapes of numpy.matmul. */
static void matmul_values(void **state) {
    (void)state;
    static const double x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8}, want[4] = {19, 22, 43, 50};
    roster_operand a[2] = {{"A", NX_DT_FP32, 2, {2, 2}, x}, {"B", NX_DT_FP32, 2, {2, 2}, y}};
    roster_outcome o;
    roster_run("trn2", "matmul", a, 2, NULL, &o);
    for (int j = 0; j < 4; j++) assert_true(roster_value_at(&o, 0, j) == want[j]);
    roster_outcome_free(&o);
    nx_macro_op op;
    nx_error err;
    roster_operand d[2] = {{"A", NX_DT_FP32, 4, {2, 1, 3, 4}, NULL}, {"B", NX_DT_FP32, 3, {5, 4, 6}, NULL}};
    assert_int_equal(roster_make_op(&op, "matmul", d, 2, NULL, &err), 0);
    assert_int_equal(op.results[0].ndims, 4);
    assert_true(op.results[0].shape[0] == 2 && op.results[0].shape[1] == 5 && op.results[0].shape[2] == 3 &&
                op.results[0].shape[3] == 6);
    nx_macro_op_free(&op);
    roster_operand e[2] = {{"A", NX_DT_FP32, 1, {4}, NULL}, {"B", NX_DT_FP32, 3, {2, 4, 3}, NULL}};
    assert_int_equal(roster_make_op(&op, "matmul", e, 2, NULL, &err), 0);
    assert_int_equal(op.results[0].ndims, 2);
    assert_true(op.results[0].shape[0] == 2 && op.results[0].shape[1] == 3);
    nx_macro_op_free(&op);
    /* 1-D @ 1-D: numpy's 0-d result, [0..4] . [1..5] = 40 */
    static const double u[5] = {0, 1, 2, 3, 4}, v[5] = {1, 2, 3, 4, 5};
    roster_operand f[2] = {{"A", NX_DT_FP32, 1, {5}, u}, {"B", NX_DT_FP32, 1, {5}, v}};
    assert_int_equal(roster_make_op(&op, "matmul", f, 2, NULL, &err), 0);
    assert_int_equal(op.results[0].ndims, 0);
    nx_macro_op_free(&op);
    roster_run("trn2", "matmul", f, 2, NULL, &o);
    assert_int_equal(o.size[0], 4);
    assert_true(roster_value_at(&o, 0, 0) == 40);
    roster_outcome_free(&o);
}


static void rmsnorm_refusals(void **state) {
    (void)state;
    roster_operand a[2] = {{"x", NX_DT_BF16, 2, {4, 64}, NULL}, {"gamma", NX_DT_BF16, 1, {64}, NULL}};
    roster_refused("trn2", "rmsnorm", a, 2, "eps=-1e-3", "attribute eps: -0.001 is negative (eps >= 0)");
    roster_refused("trn2", "rmsnorm", a, 2, "fp8_max=0", "attribute fp8_max: 0 must be > 0");
    roster_refused("trn2", "rmsnorm", a, 2, "quant=\"col\"", "attribute quant: 'col' is not one of none, row, static");
    roster_refused("trn2", "rmsnorm", a, 2, "residual=true",
            "rmsnorm takes 3 operands (x, gamma, r (residual=true)), the op has 2");
    roster_refused("trn2", "rmsnorm", a, 2, "epsilon=1.0",
            "rmsnorm: unknown attribute 'epsilon'; rmsnorm reads: eps, quant, fp8_max, residual");
    roster_operand b[2] = {{"x", NX_DT_BF16, 2, {4, 64}, NULL}, {"gamma", NX_DT_BF16, 1, {65}, NULL}};
    roster_refused("trn2", "rmsnorm", b, 2, NULL, "operand 1 (gamma): gamma must be [64] (x's last dim), got [65]");
    roster_operand c[2] = {{"x", NX_DT_INT32, 2, {4, 64}, NULL}, {"gamma", NX_DT_BF16, 1, {64}, NULL}};
    roster_refused("trn2", "rmsnorm", c, 2, NULL, "operand 0 (x): dtype int32, rmsnorm takes fp32 or bf16");
    roster_operand d[3] = {{"x", NX_DT_FP32, 2, {4, 64}, NULL},
                    {"gamma", NX_DT_BF16, 1, {64}, NULL},
                    {"scale", NX_DT_BF16, 1, {1}, NULL}};
    roster_refused("trn2", "rmsnorm", d, 3, "quant=\"static\"", "operand 2 (scale): scale must be fp32 [1], got bf16 [1]");
    /* the plan's limit: one fp32 buffer set of 16384 with the row scale and
     * the residual does not fit trn1's 192 KiB partition */
    roster_operand e[3] = {{"x", NX_DT_FP32, 2, {2, 16384}, NULL},
                    {"gamma", NX_DT_FP32, 1, {16384}, NULL},
                    {"r", NX_DT_FP32, 2, {2, 16384}, NULL}};
    roster_refused("trn1", "rmsnorm", e, 3, "quant=\"row\";residual=true",
            "operand 0 (x): H = 16384 needs 213632 bytes per partition (gamma and one buffer set), SBUF has 196608");
}

static void softmax_refusals(void **state) {
    (void)state;
    roster_operand a[1] = {{"x", NX_DT_FP32, 2, {4, 64}, NULL}};
    roster_refused("trn2", "softmax", a, 1, "axis=2", "attribute axis: 2 is out of range [-2, 2) for rank 2");
    roster_refused("trn2", "softmax", a, 1, "axis=1.5", "attribute axis: must be an integer");
    roster_operand b[1] = {{"x", NX_DT_FP16, 2, {4, 64}, NULL}};
    roster_refused("trn2", "softmax", b, 1, NULL, "operand 0 (x): dtype fp16, softmax takes fp32 or bf16");
    roster_operand c[2] = {{"x", NX_DT_FP32, 2, {4, 64}, NULL}, {"y", NX_DT_FP32, 2, {4, 64}, NULL}};
    roster_refused("trn2", "softmax", c, 2, NULL, "softmax takes 1 operand (x), the op has 2");
    roster_operand d[1] = {{"x", NX_DT_FP32, 2, {2, 70000}, NULL}};
    roster_refused("trn2", "softmax", d, 1, NULL,
            "operand 0 (x): axis 1 of 70000 elements beyond the 65536 an engine streams per partition");
}

static void layernorm_refusals(void **state) {
    (void)state;
    roster_operand a[3] = {{"X", NX_DT_FP32, 2, {4, 64}, NULL}, {"Scale", NX_DT_FP32, 1, {64}, NULL},
                    {"B", NX_DT_FP32, 1, {64}, NULL}};
    roster_refused("trn2", "layernorm", a, 3, "epsilon=-1.0", "attribute epsilon: -1 is negative (epsilon >= 0)");
    roster_refused("trn2", "layernorm", a, 3, "axis=-3", "attribute axis: -3 is out of range [-2, 2) for rank 2");
    roster_refused("trn2", "layernorm", a, 3, "axis=0", "operand 1 (Scale): Scale must be [4, 64] (X's dims from axis 0), got [64]");
    roster_refused("trn2", "layernorm", a, 3, "bias=false", "attribute bias: false, but the op has operand 2 (B)");
    roster_refused("trn2", "layernorm", a, 2, "bias=true", "attribute bias: true, but the op has no operand 2 (B)");
    roster_refused("trn2", "layernorm", a, 1, NULL, "layernorm takes 2 or 3 operands (X, Scale [, B]), the op has 1");
    roster_refused("trn2", "layernorm", a, 3, "stash_type=0", "attribute stash_type: 0, only 1 (fp32 statistics) is supported");
}

/* int32: values over the whole range, so the sums wrap many times; two
 * chunks of the axis (4080 + 4920), several 255-element segments, every
 * mode, and an inner axis; exact against the modulo-2^32 reference, and
 * INT32_MAX + 1 wraps to INT32_MIN. */
static void cumsum_int32(void **state) {
    (void)state;
    enum { N = 130 * 9000 };
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    test_rng g = {77};
    for (int i = 0; i < N; i++) v[i] = (double)(int32_t)(uint32_t)test_rng_next(&g);
    roster_operand a[1] = {{"x", NX_DT_INT32, 2, {130, 9000}, v}};
    roster_check("trn2", "cumsum", a, 1, NULL);
    roster_check("trn2", "cumsum", a, 1, "exclusive=1");
    roster_check("trn2", "cumsum", a, 1, "reverse=1");
    roster_check("trn1", "cumsum", a, 1, "reverse=1;exclusive=1");
    roster_operand b[1] = {{"x", NX_DT_INT32, 3, {3, 600, 7}, v}};
    roster_check("trn2", "cumsum", b, 1, "axis=1");
    free(v);
    static const double w[3] = {2147483647, 1, -1};
    roster_operand c[1] = {{"x", NX_DT_INT32, 1, {3}, w}};
    roster_outcome o;
    roster_run("trn2", "cumsum", c, 1, NULL, &o);
    assert_true(roster_value_at(&o, 0, 0) == 2147483647 && roster_value_at(&o, 0, 1) == -2147483648.0 &&
                roster_value_at(&o, 0, 2) == 2147483647);
    roster_outcome_free(&o);
}

static void cumsum_refusals(void **state) {
    (void)state;
    roster_operand a[1] = {{"x", NX_DT_FP32, 2, {4, 64}, NULL}};
    roster_refused("trn2", "cumsum", a, 1, "axis=-3", "attribute axis: -3 is out of range [-2, 2) for rank 2");
    roster_refused("trn2", "cumsum", a, 1, "exclusive=2", "attribute exclusive: must be true or false (or 0 / 1)");
    roster_operand b[1] = {{"x", NX_DT_INT16, 2, {4, 64}, NULL}};
    roster_refused("trn2", "cumsum", b, 1, NULL, "operand 0 (x): dtype int16, cumsum takes fp32, bf16 or int32");
}

static void rope_refusals(void **state) {
    (void)state;
    roster_operand a[3] = {{"x", NX_DT_FP32, 4, {1, 2, 8, 6}, NULL},
                    {"cos", NX_DT_FP32, 2, {8, 3}, NULL},
                    {"sin", NX_DT_FP32, 2, {8, 3}, NULL}};
    roster_refused("trn2", "rope", a, 3, "layout=\"neox\"", "attribute layout: 'neox' is not one of half, interleaved");
    roster_operand b[3] = {{"x", NX_DT_FP32, 4, {1, 2, 8, 5}, NULL},
                    {"cos", NX_DT_FP32, 2, {8, 2}, NULL},
                    {"sin", NX_DT_FP32, 2, {8, 2}, NULL}};
    roster_refused("trn2", "rope", b, 3, NULL, "operand 0 (x): D = 5 must be even");
    roster_operand c[3] = {{"x", NX_DT_FP32, 4, {1, 2, 8, 6}, NULL},
                    {"cos", NX_DT_FP32, 2, {7, 3}, NULL},
                    {"sin", NX_DT_FP32, 2, {8, 3}, NULL}};
    roster_refused("trn2", "rope", c, 3, NULL, "operand 1 (cos): cos must be [8, 3] or [1, 8, 3] ([S, D/2] or [B, S, D/2])");
    roster_operand d[3] = {{"x", NX_DT_FP32, 3, {2, 8, 6}, NULL},
                    {"cos", NX_DT_FP32, 2, {8, 3}, NULL},
                    {"sin", NX_DT_FP32, 2, {8, 3}, NULL}};
    roster_refused("trn2", "rope", d, 3, NULL, "operand 0 (x): rank 3, rope takes x [B, n_heads, S, D]");
    roster_operand e[3] = {{"x", NX_DT_FP32, 4, {1, 1, 2, 512}, NULL},
                    {"cos", NX_DT_FP32, 2, {2, 256}, NULL},
                    {"sin", NX_DT_FP32, 2, {2, 256}, NULL}};
    roster_refused("trn2", "rope", e, 3, NULL, "operand 0 (x): D = 512 beyond 256");
}

static void matmul_refusals(void **state) {
    (void)state;
    roster_operand a[2] = {{"A", NX_DT_FP32, 2, {3, 4}, NULL}, {"B", NX_DT_FP32, 2, {5, 3}, NULL}};
    roster_refused("trn2", "matmul", a, 2, NULL,
            "operand 1 (B): K = 5 differs from operand 0 (A)'s K = 4 (A [..., M, K] @ B [..., K, N])");
    roster_operand b[2] = {{"A", NX_DT_FP32, 3, {2, 3, 4}, NULL}, {"B", NX_DT_FP32, 3, {3, 4, 3}, NULL}};
    roster_refused("trn2", "matmul", b, 2, NULL, "operand 1 (B): batch dim 0 (3) does not broadcast with operand 0 (A)'s (2)");
    roster_operand c[2] = {{"A", NX_DT_FP32, 2, {3, 4}, NULL}, {"B", NX_DT_BF16, 2, {4, 3}, NULL}};
    roster_refused("trn2", "matmul", c, 2, NULL, "operand 1 (B): dtype bf16 differs from operand 0 (A)'s fp32");
}

/* The composite rows: reachable by name, family norms, never a registry key. */
static void composite_rows(void **state) {
    (void)state;
    static const char *names[] = {"rmsnorm", "softmax", "layernorm", "cumsum", "rope", "matmul"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        nx_kernel_target t;
        nx_error err;
        assert_int_equal(nx_kernel_lookup(NULL, NULL, names[i], &t, &err), 0);
        assert_null(t.entry);
        assert_non_null(t.composite);
        assert_string_equal(t.family, i == 5 ? "matmul" : i >= 3 ? "elementwise" : "norms");
        assert_non_null(t.rules->reference);
        assert_non_null(t.rules->default_op);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rmsnorm_random),
        cmocka_unit_test(rmsnorm_values),
        cmocka_unit_test(rmsnorm_refusals),
        cmocka_unit_test(softmax_random),
        cmocka_unit_test(softmax_values),
        cmocka_unit_test(softmax_refusals),
        cmocka_unit_test(layernorm_random),
        cmocka_unit_test(layernorm_values),
        cmocka_unit_test(layernorm_chunked),
        cmocka_unit_test(layernorm_refusals),
        cmocka_unit_test(cumsum_random),
        cmocka_unit_test(cumsum_values),
        cmocka_unit_test(cumsum_int32),
        cmocka_unit_test(cumsum_refusals),
        cmocka_unit_test(rope_random),
        cmocka_unit_test(rope_values),
        cmocka_unit_test(rope_refusals),
        cmocka_unit_test(matmul_shapes),
        cmocka_unit_test(matmul_values),
        cmocka_unit_test(matmul_refusals),
        cmocka_unit_test(composite_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
