/* Scalar Engine: the activation functions (nx_act_apply) and the
 * `activation` instruction.
 *
 * Tolerance: nx_act_apply evaluates in double and rounds once to fp32, so its
 * result is the correctly rounded fp32 value of the exact function except
 * within double precision of a rounding boundary. Function values are
 * therefore checked to be within 1 fp32 ulp of the fp32 rounding of a
 * published (or hand-derived) double constant. Arithmetic of the instruction
 * itself (scale, bias, reductions) is checked exactly against float
 * arithmetic written out in the test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "isa/builder.h"
#include "isa/insn.h"
#include "support.h"

/* ---- helpers ---- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Distance in representable fp32 values (monotone mapping of the bit patterns). */
static int64_t ulp_distance(float a, float b) {
    int64_t ia = (int64_t)f32_bits(a), ib = (int64_t)f32_bits(b);
    if (ia & 0x80000000) ia = 0x80000000 - ia;
    if (ib & 0x80000000) ib = 0x80000000 - ib;
    return ia > ib ? ia - ib : ib - ia;
}

/* Same value including the sign of zero; any NaN equals any NaN. */
static int same_value(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* bf16 = fp32 rounded to its top 16 bits, nearest-even (finite inputs). */
static double bf16_round(float f) {
    uint32_t u = f32_bits(f);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

static nx_operand sbuf_tile(nx_dtype dt, uint32_t start, uint32_t parts, uint64_t off, uint32_t n) {
    return nx_ap_tile(NX_OPK_SBUF, dt, start, parts, off, n);
}

/* [parts] x 1 element (a per-partition scalar). */
static nx_operand one_per_partition(nx_operand_kind kind, nx_dtype dt, uint32_t start,
                                    uint32_t parts, uint64_t off) {
    return nx_ap(kind, dt, start, parts, 0, off, 0, NULL, NULL);
}

static nx_insn activation(nx_act_func f, nx_operand dst, nx_operand in, nx_operand scale,
                          nx_operand bias) {
    nx_insn insn = nx_insn_make(NX_OP_ACTIVATION);
    insn.func = (uint8_t)f;
    insn.op[0] = dst;
    insn.op[1] = in;
    insn.op[2] = scale;
    insn.op[3] = bias;
    return insn;
}

/* ---- nx_act_apply at known values ---- */

typedef struct known {
    nx_act_func f;
    double x;
    double y; /* exact value (published constant or hand-derived) */
} known;

static void act_known_values(void **state) {
    (void)state;
    static const known cases[] = {
        {NX_ACT_IDENTITY, 0.1, 0.1},                    /* identity = fp32(0.1) */
        {NX_ACT_EXP, 1.0, 2.718281828459045},           /* e */
        {NX_ACT_EXP, -1.0, 0.36787944117144233},        /* 1/e */
        {NX_ACT_EXP, 0.0, 1.0},
        {NX_ACT_EXP, -100.0, 3.720075976020836e-44},    /* fp32 subnormal */
        {NX_ACT_LOG, 2.0, 0.6931471805599453},          /* ln 2 */
        {NX_ACT_LOG, 10.0, 2.302585092994046},          /* ln 10 */
        {NX_ACT_LOG, 1.0, 0.0},
        {NX_ACT_RELU, 2.5, 2.5},
        {NX_ACT_RELU, -1.5, 0.0},
        {NX_ACT_GELU, 1.0, 0.8413447460685429},         /* 1 * Phi(1) */
        {NX_ACT_GELU, -1.0, -0.15865525393145707},      /* -1 * Phi(-1) */
        {NX_ACT_GELU, 2.0, 1.9544997361036416},         /* 2 * Phi(2) */
        {NX_ACT_GELU, -10.0, -7.619853024160526e-23},   /* -10 * Phi(-10): no cancellation */
        {NX_ACT_GELU_TANH, 1.0, 0.8411919906082768},
        {NX_ACT_GELU_TANH, 0.0, 0.0},
        /* mpmath at 120 digits; -10 checks there is no 1 + tanh cancellation */
        {NX_ACT_GELU_TANH, 2.0, 1.954597694087775},
        {NX_ACT_GELU_TANH, -3.0, -0.003637392081773019},
        {NX_ACT_GELU_TANH, -10.0, -1.204092348209806e-37},
        {NX_ACT_SILU, 5.0, 4.966535745378576},
        {NX_ACT_SILU, -20.0, -4.122307236380407e-08},
        {NX_ACT_SILU, 1.0, 0.7310585786300049},         /* 1 * sigmoid(1) */
        {NX_ACT_SILU, -1.0, -0.2689414213699951},
        {NX_ACT_SIGMOID, 0.0, 0.5},
        {NX_ACT_SIGMOID, 1.0, 0.7310585786300049},
        {NX_ACT_SIGMOID, -1.0, 0.2689414213699951},
        {NX_ACT_TANH, 0.5, 0.46211715726000974},
        {NX_ACT_TANH, 1.0, 0.7615941559557649},
        {NX_ACT_SQUARE, 1.5, 2.25},
        {NX_ACT_SQUARE, -3.0, 9.0},
        {NX_ACT_SQRT, 2.0, 1.4142135623730951},
        {NX_ACT_SQRT, 9.0, 3.0},
        {NX_ACT_RSQRT, 2.0, 0.7071067811865476},
        {NX_ACT_RSQRT, 4.0, 0.5},
        {NX_ACT_RECIPROCAL, 3.0, 0.3333333333333333},
        {NX_ACT_RECIPROCAL, -0.25, -4.0},
        {NX_ACT_ABS, -2.5, 2.5},
        {NX_ACT_SIGN, -3.0, -1.0},
        {NX_ACT_SIGN, 0.25, 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const known *c = &cases[i];
        double got = nx_act_apply(c->f, c->x);
        float want = (float)c->y;
        if ((double)(float)got != got || ulp_distance((float)got, want) > 1)
            fail_msg("%s(%g) = %.9g, want %.9g (within 1 ulp)", nx_act_name(c->f), c->x, got,
                     (double)want);
    }
    /* The input is rounded to fp32 first: 1e-50 becomes +0 and 1e39 +Inf. */
    assert_true(nx_act_apply(NX_ACT_SIGN, 1e-50) == 0.0);
    assert_true(nx_act_apply(NX_ACT_LOG, 1e-50) == -INFINITY);
    assert_true(nx_act_apply(NX_ACT_RECIPROCAL, 1e39) == 0.0);
    /* The result is rounded to fp32: exp(89) = 4.49e38 > FLT_MAX overflows. */
    assert_true(isinf(nx_act_apply(NX_ACT_EXP, 89.0)));
    assert_true(ulp_distance((float)nx_act_apply(NX_ACT_EXP, 88.0), (float)1.6516362549940018e38) <= 1);
}

/* ---- special values of every function ---- */

typedef struct special {
    nx_act_func f;
    double pinf, ninf, nzero, pzero; /* f(+inf), f(-inf), f(-0), f(+0) */
} special;

static void act_special_values(void **state) {
    (void)state;
    const double inf = INFINITY, nan = NAN;
    const special cases[] = {
        {NX_ACT_IDENTITY, inf, -inf, -0.0, 0.0},
        {NX_ACT_EXP, inf, 0.0, 1.0, 1.0},
        {NX_ACT_LOG, inf, nan, -inf, -inf},
        {NX_ACT_RELU, inf, 0.0, 0.0, 0.0},
        {NX_ACT_GELU, inf, -0.0, -0.0, 0.0},
        {NX_ACT_GELU_TANH, inf, -0.0, -0.0, 0.0},
        {NX_ACT_SILU, inf, -0.0, -0.0, 0.0},
        {NX_ACT_SIGMOID, 1.0, 0.0, 0.5, 0.5},
        {NX_ACT_TANH, 1.0, -1.0, -0.0, 0.0},
        {NX_ACT_SQUARE, inf, inf, 0.0, 0.0},
        {NX_ACT_SQRT, inf, nan, -0.0, 0.0},
        {NX_ACT_RSQRT, 0.0, nan, -inf, inf},
        {NX_ACT_RECIPROCAL, 0.0, -0.0, -inf, inf},
        {NX_ACT_ABS, inf, inf, 0.0, 0.0},
        {NX_ACT_SIGN, 1.0, -1.0, 0.0, 0.0},
    };
    assert_int_equal(sizeof cases / sizeof cases[0], NX_ACT_COUNT);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const special *c = &cases[i];
        const char *name = nx_act_name(c->f);
        const double in[4] = {inf, -inf, -0.0, 0.0};
        const double want[4] = {c->pinf, c->ninf, c->nzero, c->pzero};
        for (int k = 0; k < 4; k++) {
            double got = nx_act_apply(c->f, in[k]);
            if (!same_value(got, want[k]))
                fail_msg("%s(%g) = %g, want %g", name, in[k], got, want[k]);
        }
        /* Every function propagates NaN (relu and sign included). */
        if (!isnan(nx_act_apply(c->f, nan))) fail_msg("%s(NaN) is not NaN", name);
        if (!isnan(nx_act_apply(c->f, -nan))) fail_msg("%s(-NaN) is not NaN", name);
    }
    /* Domain errors. */
    assert_true(isnan(nx_act_apply(NX_ACT_LOG, -1.0)));
    assert_true(isnan(nx_act_apply(NX_ACT_SQRT, -4.0)));
    assert_true(isnan(nx_act_apply(NX_ACT_RSQRT, -4.0)));
    /* Saturation of the sigmoid-based functions far from 0. */
    assert_true(nx_act_apply(NX_ACT_SIGMOID, 100.0) == 1.0);
    assert_true(nx_act_apply(NX_ACT_SILU, 100.0) == 100.0);
    assert_true(nx_act_apply(NX_ACT_GELU_TANH, -100.0) == 0.0);
    assert_true(nx_act_apply(NX_ACT_TANH, 20.0) == 1.0);
}

/* ---- the activation instruction ---- */

#define P 4
#define F 8

static void fill_input(nx_state *st, nx_dtype dt, uint32_t parts, uint64_t off, uint32_t n,
                       double vals[][F]) {
    for (uint32_t p = 0; p < parts; p++) {
        for (uint32_t e = 0; e < n; e++) vals[p][e] = (float)(0.25 * (double)e - 0.4 * p + 0.1);
        test_sbuf_put(st, 0, dt, p, off, n, vals[p]);
    }
}

static void activation_immediate_scale_bias(void **state) {
    nx_state *st = *state;
    double x[P][F];
    fill_input(st, NX_DT_FP32, P, 0, F, x);
    nx_insn insn = activation(NX_ACT_EXP, sbuf_tile(NX_DT_FP32, 0, P, 256, F),
                              sbuf_tile(NX_DT_FP32, 0, P, 0, F), nx_imm(1.5, NX_DT_FP32),
                              nx_imm(-0.75, NX_DT_FP32));
    nx_error err;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);
    for (uint32_t p = 0; p < P; p++) {
        double y[F];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 256, F, y);
        for (uint32_t e = 0; e < F; e++) {
            float xs = (float)x[p][e] * 1.5f;
            float t = xs + -0.75f;
            float want = (float)exp((double)t);
            if (ulp_distance((float)y[e], want) > 1)
                fail_msg("p %u e %u: %.9g, want %.9g", p, e, y[e], (double)want);
        }
    }
    /* identity makes the arithmetic exact: fp32(fp32(x * s) + b). */
    insn.func = NX_ACT_IDENTITY;
    insn.op[2] = nx_imm(3.0, NX_DT_FP32);
    insn.op[3] = nx_imm(0.1, NX_DT_FP32);
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);
    for (uint32_t p = 0; p < P; p++) {
        double y[F];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 256, F, y);
        for (uint32_t e = 0; e < F; e++) {
            float xs = (float)x[p][e] * 3.0f;
            float want = xs + 0.1f;
            assert_true(y[e] == (double)want);
        }
    }
}

static void activation_per_partition_scale_bias(void **state) {
    nx_state *st = *state;
    double x[P][F];
    fill_input(st, NX_DT_FP32, P, 0, F, x);
    /* scale: one fp32 per partition in SBUF; bias: one bf16 per partition in PSUM. */
    const double scale[P] = {2.0, -1.0, 0.5, 3.0};
    const double bias[P] = {0.0, 1.0, -2.0, 0.5};
    for (uint32_t p = 0; p < P; p++) {
        test_sbuf_put(st, 0, NX_DT_FP32, p, 128, 1, &scale[p]);
        test_psum_put(st, 0, NX_DT_BF16, p, 64, 1, &bias[p]);
    }
    nx_insn insn = activation(NX_ACT_RELU, sbuf_tile(NX_DT_FP32, 0, P, 256, F),
                              sbuf_tile(NX_DT_FP32, 0, P, 0, F),
                              one_per_partition(NX_OPK_SBUF, NX_DT_FP32, 0, P, 128),
                              one_per_partition(NX_OPK_PSUM, NX_DT_BF16, 0, P, 64));
    nx_error err;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);
    for (uint32_t p = 0; p < P; p++) {
        double y[F];
        test_sbuf_get(st, 0, NX_DT_FP32, p, 256, F, y);
        for (uint32_t e = 0; e < F; e++) {
            float xs = (float)x[p][e] * (float)scale[p];
            float t = xs + (float)bias[p];
            float want = t > 0 ? t : 0.0f;
            if (y[e] != (double)want)
                fail_msg("p %u e %u: %.9g, want %.9g", p, e, y[e], (double)want);
        }
    }
}

/* Reference reduction: op folded over y in element order, in float. */
static float reduce_ref(nx_alu_op op, const float *y, int n) {
    float r = op == NX_ALU_MULTIPLY ? 1.0f : op == NX_ALU_MAX ? -INFINITY
              : op == NX_ALU_MIN    ? INFINITY
                                    : 0.0f;
    for (int i = 0; i < n; i++) {
        switch (op) {
        case NX_ALU_ADD: r = r + y[i]; break;
        case NX_ALU_MULTIPLY: r = r * y[i]; break;
        case NX_ALU_MAX: r = y[i] > r ? y[i] : r; break;
        case NX_ALU_MIN: r = y[i] < r ? y[i] : r; break;
        default: r = fabsf(y[i]) > r ? fabsf(y[i]) : r; break; /* abs_max */
        }
    }
    return r;
}

static void activation_acc_out_each_op(void **state) {
    nx_state *st = *state;
    double x[P][F];
    fill_input(st, NX_DT_FP32, P, 0, F, x);
    const nx_alu_op ops[] = {NX_ALU_ADD, NX_ALU_MAX, NX_ALU_MIN, NX_ALU_MULTIPLY, NX_ALU_ABS_MAX};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        /* y = tanh(2x - 0.3): mixed signs, so max, min and abs_max differ. */
        nx_insn insn = activation(NX_ACT_TANH, sbuf_tile(NX_DT_FP32, 0, P, 256, F),
                                  sbuf_tile(NX_DT_FP32, 0, P, 0, F), nx_imm(2.0, NX_DT_FP32),
                                  nx_imm(-0.3, NX_DT_FP32));
        insn.alu0 = (uint8_t)ops[k];
        insn.op[4] = one_per_partition(NX_OPK_SBUF, NX_DT_FP32, 0, P, 512);
        nx_error err;
        assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);
        for (uint32_t p = 0; p < P; p++) {
            double yd[F], acc;
            float y[F];
            test_sbuf_get(st, 0, NX_DT_FP32, p, 256, F, yd);
            for (uint32_t e = 0; e < F; e++) {
                float t = (float)x[p][e] * 2.0f + -0.3f;
                float want = (float)tanh((double)t);
                assert_true(ulp_distance((float)yd[e], want) <= 1);
                y[e] = (float)yd[e];
            }
            test_sbuf_get(st, 0, NX_DT_FP32, p, 512, 1, &acc);
            float want = reduce_ref(ops[k], y, F);
            if (acc != (double)want)
                fail_msg("%s p %u: acc %.9g, want %.9g", nx_alu_name(ops[k]), p, acc,
                         (double)want);
        }
    }
}

/* bf16 dst: each y is rounded to bf16 on store; acc_out sums the fp32 y. */
static void activation_bf16_output(void **state) {
    nx_state *st = *state;
    double x[P][F];
    fill_input(st, NX_DT_FP32, P, 0, F, x);
    nx_insn insn = activation(NX_ACT_EXP, sbuf_tile(NX_DT_BF16, 0, P, 256, F),
                              sbuf_tile(NX_DT_FP32, 0, P, 0, F), nx_imm(1.0, NX_DT_FP32),
                              nx_imm(0.0, NX_DT_FP32));
    insn.alu0 = NX_ALU_ADD;
    insn.op[4] = one_per_partition(NX_OPK_PSUM, NX_DT_FP32, 0, P, 0);
    nx_error err;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);
    int bf16_sum_differs = 0;
    for (uint32_t p = 0; p < P; p++) {
        double y[F], acc;
        float sum = 0.0f, sum_bf16 = 0.0f;
        test_sbuf_get(st, 0, NX_DT_BF16, p, 256, F, y);
        for (uint32_t e = 0; e < F; e++) {
            float want = (float)exp((double)(float)x[p][e]);
            /* Reference: exp in double rounded to fp32 (the contract), then
             * rounded to bf16 by the nearest-even rule above. */
            assert_true(y[e] == bf16_round(want));
            sum += want;
            sum_bf16 += (float)bf16_round(want);
        }
        test_psum_get(st, 0, NX_DT_FP32, p, 0, 1, &acc);
        if (acc != (double)sum) fail_msg("p %u: acc %.9g, want %.9g", p, acc, (double)sum);
        if (sum != sum_bf16) bf16_sum_differs = 1;
    }
    /* The check above would fail if acc_out summed the bf16 values. */
    assert_true(bf16_sum_differs);
}

/* dst overwrites in and the per-partition bias: all inputs are read first. */
static void activation_in_place(void **state) {
    nx_state *st = *state;
    double x[P][F];
    fill_input(st, NX_DT_FP32, P, 0, F, x);
    /* bias lives in element 0 of the dst/in tile itself. */
    nx_insn insn = activation(NX_ACT_SQUARE, sbuf_tile(NX_DT_FP32, 0, P, 0, F),
                              sbuf_tile(NX_DT_FP32, 0, P, 0, F), nx_imm(1.0, NX_DT_FP32),
                              one_per_partition(NX_OPK_SBUF, NX_DT_FP32, 0, P, 0));
    insn.alu0 = NX_ALU_ADD;
    /* acc_out overwrites element 1 of the same tile after dst is stored. */
    insn.op[4] = one_per_partition(NX_OPK_SBUF, NX_DT_FP32, 0, P, 4);
    nx_error err;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);
    for (uint32_t p = 0; p < P; p++) {
        double y[F];
        float sum = 0.0f;
        test_sbuf_get(st, 0, NX_DT_FP32, p, 0, F, y);
        float b = (float)x[p][0];
        for (uint32_t e = 0; e < F; e++) {
            float t = (float)x[p][e] + b;
            float want = t * t;
            sum += want;
            if (e != 1 && y[e] != (double)want)
                fail_msg("p %u e %u: %.9g, want %.9g", p, e, y[e], (double)want);
        }
        assert_true(y[1] == (double)sum); /* acc_out written after dst */
    }
}

static void expect_invalid(nx_state *st, const nx_insn *insn, const char *msg) {
    nx_error err;
    err.msg[0] = 0;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, insn, &err), -1);
    assert_string_equal(err.msg, msg);
}

static void activation_validation(void **state) {
    nx_state *st = *state;
    const nx_insn good = activation(NX_ACT_EXP, sbuf_tile(NX_DT_FP32, 0, P, 256, F),
                                    sbuf_tile(NX_DT_FP32, 0, P, 0, F), nx_imm(1.0, NX_DT_FP32),
                                    nx_imm(0.0, NX_DT_FP32));
    nx_error err;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &good, &err), 0);

    nx_insn insn = good;
    insn.op[0] = sbuf_tile(NX_DT_FP32, 0, 2, 256, F);
    expect_invalid(st, &insn, "dst: has 2 partitions but in has 4");

    insn = good;
    insn.op[0] = sbuf_tile(NX_DT_FP32, 0, P, 256, F / 2);
    expect_invalid(st, &insn, "dst: has 4 elements per partition but in has 8");

    insn = good;
    insn.op[2] = sbuf_tile(NX_DT_FP32, 0, P, 512, 2);
    expect_invalid(st, &insn, "scale: has 2 elements per partition, must have exactly 1");

    insn = good;
    insn.op[3] = one_per_partition(NX_OPK_PSUM, NX_DT_FP32, 0, 2, 0);
    expect_invalid(st, &insn, "bias: has 2 partitions but in has 4 (one value per partition of in)");

    insn = good;
    insn.alu0 = NX_ALU_ADD;
    expect_invalid(st, &insn, "op0: is add but there is no acc_out (op0 must be bypass)");

    insn = good;
    insn.op[4] = one_per_partition(NX_OPK_SBUF, NX_DT_FP32, 0, P, 512);
    expect_invalid(st, &insn,
                   "op0: acc_out needs op0 = add, max, min, multiply or abs_max, got bypass");
    insn.alu0 = NX_ALU_SUBTRACT;
    expect_invalid(st, &insn,
                   "op0: acc_out needs op0 = add, max, min, multiply or abs_max, got subtract");
    insn.alu0 = NX_ALU_MAX;
    assert_int_equal(test_run(st, 0, NX_ENG_ACT, &insn, &err), 0);

    insn.op[4] = sbuf_tile(NX_DT_FP32, 0, P, 512, 3);
    expect_invalid(st, &insn, "acc_out: has 3 elements per partition, must have exactly 1");
    insn.op[4] = one_per_partition(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 512);
    expect_invalid(st, &insn,
                   "acc_out: has 1 partitions but in has 4 (one value per partition of in)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(act_known_values),
        cmocka_unit_test(act_special_values),
        cmocka_unit_test_setup_teardown(activation_immediate_scale_bias, test_setup_state, test_teardown_state),
        cmocka_unit_test_setup_teardown(activation_per_partition_scale_bias, test_setup_state, test_teardown_state),
        cmocka_unit_test_setup_teardown(activation_acc_out_each_op, test_setup_state, test_teardown_state),
        cmocka_unit_test_setup_teardown(activation_bf16_output, test_setup_state, test_teardown_state),
        cmocka_unit_test_setup_teardown(activation_in_place, test_setup_state, test_teardown_state),
        cmocka_unit_test_setup_teardown(activation_validation, test_setup_state, test_teardown_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
