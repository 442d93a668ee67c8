/* Tests for the DVE element-wise instructions and tensor_reduce
 * (isa/insns/{tensor_tensor,tensor_scalar,scalar_tensor_tensor,tensor_copy,
 * tensor_tensor_scan,select,memset,tensor_reduce}.c, isa/alu.c).
 *
 * References are plain float loops written here (C float arithmetic is IEEE
 * single precision with no FMA contraction under -std=c11), or hand-computed
 * literals. Expected fp32 results are exact: the ALU rounds each step to fp32
 * exactly as the float reference does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isa/dtype.h"
#include "support.h"

/* ---- helpers ---- */

/* Same value, and the same sign for zeros; NaN equals NaN. */
static void assert_same(double got, double want) {
    if (isnan(want)) {
        if (!isnan(got)) fail_msg("got %.9g, want NaN", got);
        return;
    }
    if (got != want || signbit(got) != signbit(want))
        fail_msg("got %.9g, want %.9g", got, want);
}

static float rnd(test_rng *r, double lo, double hi) { return (float)test_rng_uniform(r, lo, hi); }

/* ---- tensor_tensor ---- */

static float ref_binary(nx_alu_op op, float a, float b) {
    switch (op) {
    case NX_ALU_ADD: return a + b;
    case NX_ALU_SUBTRACT: return a - b;
    case NX_ALU_MULTIPLY: return a * b;
    case NX_ALU_DIVIDE: return a / b;
    case NX_ALU_MAX: return a > b ? a : b;
    case NX_ALU_MIN: return a < b ? a : b;
    case NX_ALU_ABS_MAX: return fabsf(a) > fabsf(b) ? fabsf(a) : fabsf(b);
    case NX_ALU_IS_GE: return a >= b ? 1.0f : 0.0f;
    case NX_ALU_IS_LT: return a < b ? 1.0f : 0.0f;
    case NX_ALU_BYPASS: return a;
    default: fail_msg("no reference for op %d", (int)op);
    }
    return 0.0f;
}

static void test_tensor_tensor_random_ops(void **state) {
    (void)state;
    enum { P = 128, N = 96 };
    static const nx_alu_op ops[] = {NX_ALU_ADD, NX_ALU_SUBTRACT, NX_ALU_MULTIPLY, NX_ALU_DIVIDE,
                                    NX_ALU_MAX, NX_ALU_MIN, NX_ALU_ABS_MAX, NX_ALU_IS_GE,
                                    NX_ALU_IS_LT, NX_ALU_BYPASS};
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {42};
    static double a[P][N], b[P][N];
    for (int p = 0; p < P; p++)
        for (int e = 0; e < N; e++) {
            a[p][e] = rnd(&r, -100, 100);
            b[p][e] = rnd(&r, -100, 100);
        }
    for (int p = 0; p < P; p++) {
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, a[p]);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 1024, N, b[p]);
    }
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
        in.alu0 = ops[k];
        in.op[0] = test_sb(NX_DT_FP32, 0, P, 2048, N);
        in.op[1] = test_sb(NX_DT_FP32, 0, P, 0, N);
        in.op[2] = test_sb(NX_DT_FP32, 0, P, 1024, N);
        test_run_ok(&st, NX_ENG_DVE, &in);
        for (int p = 0; p < P; p++) {
            double got[N], want[N];
            test_sbuf_get(&st, 0, NX_DT_FP32, p, 2048, N, got);
            for (int e = 0; e < N; e++)
                want[e] = ref_binary(ops[k], (float)a[p][e], (float)b[p][e]);
            test_assert_values(got, want, N);
        }
    }
    nx_state_free(&st);
}

/* PSUM operand, mixed dtypes: the fp32 result is rounded again by the bf16
 * store (two roundings, as documented). Runs on POOL too (SBUF only). */
static void test_tensor_tensor_psum_bf16(void **state) {
    (void)state;
    enum { P = 64, N = 40 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {7};
    double a[N], b[N];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) {
            a[e] = rnd(&r, -3, 3);
            b[e] = nx_bf16_to_f32(nx_f32_to_bf16(rnd(&r, -3, 3)));
        }
        test_psum_put(&st, 0, NX_DT_FP32, 64 + p, 0, N, a);
        test_sbuf_put(&st, 0, NX_DT_BF16, 64 + p, 0, N, b);
    }
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
    in.alu0 = NX_ALU_MULTIPLY;
    in.op[0] = test_sb(NX_DT_BF16, 64, P, 512, N);
    in.op[1] = test_ps(NX_DT_FP32, 64, P, 0, N);
    in.op[2] = test_sb(NX_DT_BF16, 64, P, 0, N);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_psum_get(&st, 0, NX_DT_FP32, 64 + p, 0, N, a);
        test_sbuf_get(&st, 0, NX_DT_BF16, 64 + p, 0, N, b);
        test_sbuf_get(&st, 0, NX_DT_BF16, 64 + p, 512, N, got);
        for (int e = 0; e < N; e++) {
            float prod = (float)a[e] * (float)b[e];
            assert_same(got[e], nx_bf16_to_f32(nx_f32_to_bf16(prod)));
        }
    }
    /* POOL may not touch PSUM (generic rule), but runs the SBUF form. */
    in.op[1] = test_sb(NX_DT_BF16, 64, P, 0, N);
    test_run_ok(&st, NX_ENG_POOL, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_BF16, 64 + p, 0, N, b);
        test_sbuf_get(&st, 0, NX_DT_BF16, 64 + p, 512, N, got);
        for (int e = 0; e < N; e++)
            assert_same(got[e], nx_bf16_to_f32(nx_f32_to_bf16((float)b[e] * (float)b[e])));
    }
    nx_state_free(&st);
}

/* dst == in0 (same bytes), and dst == in1 shifted: every input is read
 * before any output is written. */
static void test_tensor_tensor_alias(void **state) {
    (void)state;
    enum { N = 16 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    double a[N], b[N], got[N];
    for (int e = 0; e < N; e++) {
        a[e] = e + 1;
        b[e] = 100 * (e + 1);
    }
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, N, a);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 256, N, b);
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
    in.alu0 = NX_ALU_ADD;
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 0, N);
    in.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, N);
    in.op[2] = test_sb(NX_DT_FP32, 0, 1, 256, N);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 0, N, got);
    for (int e = 0; e < N; e++) assert_same(got[e], 101.0 * (e + 1));
    /* dst is in0 shifted one element on: dst[e+1] = 2 * old in0[e]. An
     * element-by-element in-place loop would compound instead (1, 2, 4, 8...). */
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, N, a);
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 4, N - 1);
    in.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, N - 1);
    in.op[2] = test_sb(NX_DT_FP32, 0, 1, 0, N - 1);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 0, N, got);
    assert_same(got[0], 1.0);
    for (int e = 1; e < N; e++) assert_same(got[e], 2.0 * e); /* 2 * old a[e-1] */
    nx_state_free(&st);
}

/* Strided, negative-stride, broadcast and multi-dim access patterns. */
static void test_tensor_tensor_access_patterns(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    enum { P = 32, R = 3, C = 5, N = R * C };
    double buf[64];
    for (int p = 0; p < P; p++) {
        for (int i = 0; i < 64; i++) buf[i] = p * 1000 + i;
        test_sbuf_put(&st, 0, NX_DT_FP32, 32 + p, 0, 64, buf);
    }
    /* in0[r][c] = elem 2*(5r + c) (stride 2); in1[r][c] = elem 63 - c (stride
     * -1, and stride 0 over r = broadcast). dst[r][c] at 1024 with a row
     * pitch of 8 elements. */
    int32_t s0[2] = {10, 2}, s1[2] = {0, -1}, sd[2] = {8, 1};
    uint32_t cnt[2] = {R, C};
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
    in.alu0 = NX_ALU_SUBTRACT;
    in.op[0] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 32, P, 0, 1024, 2, sd, cnt);
    in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 32, P, 0, 0, 2, s0, cnt);
    in.op[2] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 32, P, 0, 63 * 4, 2, s1, cnt);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[8 * R];
        test_sbuf_get(&st, 0, NX_DT_FP32, 32 + p, 1024, 8 * R, got);
        for (int rr = 0; rr < R; rr++)
            for (int c = 0; c < 8; c++) {
                double want = c < C ? (double)(float)((p * 1000 + 2 * (5 * rr + c)) -
                                                       (float)(p * 1000 + 63 - c))
                                    : 0.0;
                assert_same(got[8 * rr + c], want);
            }
    }
    /* Broadcast dst (stride 0): elements are stored in row-major order, so the
     * last one wins. */
    int32_t z = 0;
    uint32_t four = 4;
    nx_insn cp = nx_insn_make(NX_OP_TENSOR_COPY);
    cp.op[0] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 32, 1, 0, 2048, 1, &z, &four);
    cp.op[1] = test_sb(NX_DT_FP32, 32, 1, 0, 4);
    test_run_ok(&st, NX_ENG_DVE, &cp);
    test_sbuf_get(&st, 0, NX_DT_FP32, 32, 2048, 1, buf);
    assert_same(buf[0], 3.0);
    nx_state_free(&st);
}

/* NaN, Inf and signed zeros through max/min/abs_max and the comparisons. */
static void test_tensor_tensor_special_values(void **state) {
    (void)state;
    enum { N = 8 };
    const double a[N] = {NAN, 1.0, -0.0, 0.0, INFINITY, -INFINITY, NAN, -5.0};
    const double b[N] = {1.0, NAN, 0.0, -0.0, NAN, 3.0, NAN, 4.0};
    const struct {
        nx_alu_op op;
        double want[N];
    } cases[] = {
        {NX_ALU_MAX, {NAN, NAN, 0.0, 0.0, NAN, 3.0, NAN, 4.0}},
        {NX_ALU_MIN, {NAN, NAN, -0.0, -0.0, NAN, -INFINITY, NAN, -5.0}},
        {NX_ALU_ABS_MAX, {NAN, NAN, 0.0, 0.0, NAN, INFINITY, NAN, 5.0}},
        {NX_ALU_IS_EQUAL, {0, 0, 1, 1, 0, 0, 0, 0}},
        {NX_ALU_NOT_EQUAL, {1, 1, 0, 0, 1, 1, 1, 1}},
        {NX_ALU_IS_GE, {0, 0, 1, 1, 0, 0, 0, 0}},
        {NX_ALU_IS_GT, {0, 0, 0, 0, 0, 0, 0, 0}},
        {NX_ALU_IS_LE, {0, 0, 1, 1, 0, 1, 0, 1}},
        {NX_ALU_IS_LT, {0, 0, 0, 0, 0, 1, 0, 1}},
        {NX_ALU_ADD, {NAN, NAN, 0.0, 0.0, NAN, -INFINITY, NAN, -1.0}},
        {NX_ALU_DIVIDE, {NAN, NAN, NAN, NAN, NAN, -INFINITY, NAN, -1.25}},
    };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_psum_put(&st, 0, NX_DT_FP32, 0, 0, N, a);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, N, b);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
        in.alu0 = cases[k].op;
        in.op[0] = test_ps(NX_DT_FP32, 0, 1, 256, N);
        in.op[1] = test_ps(NX_DT_FP32, 0, 1, 0, N);
        in.op[2] = test_sb(NX_DT_FP32, 0, 1, 0, N);
        test_run_ok(&st, NX_ENG_DVE, &in);
        double got[N];
        test_psum_get(&st, 0, NX_DT_FP32, 0, 256, N, got);
        test_assert_values(got, cases[k].want, N);
    }
    /* x / 0 = +-Inf */
    const double num[3] = {1.0, -2.0, 0.0}, den[3] = {0.0, 0.0, -0.0};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 3, num);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 128, 3, den);
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
    in.alu0 = NX_ALU_DIVIDE;
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 192, 3);
    in.op[1] = test_sb(NX_DT_FP32, 0, 1, 64, 3);
    in.op[2] = test_sb(NX_DT_FP32, 0, 1, 128, 3);
    test_run_ok(&st, NX_ENG_DVE, &in);
    double got[3];
    const double want[3] = {INFINITY, -INFINITY, NAN};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 192, 3, got);
    test_assert_values(got, want, 3);
    nx_state_free(&st);
}

/* int32 values above 2^24: exact through tensor_copy and the comparisons,
 * rounded to fp32 by arithmetic. */
static void test_int32_exact_copy_vs_rounded_add(void **state) {
    (void)state;
    enum { N = 4 };
    const double v[N] = {16777217.0, -16777219.0, 2147483647.0, -2147483648.0};
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 0, N, v);
    nx_insn cp = nx_insn_make(NX_OP_TENSOR_COPY);
    cp.op[0] = test_sb(NX_DT_INT32, 0, 1, 64, N);
    cp.op[1] = test_sb(NX_DT_INT32, 0, 1, 0, N);
    test_run_ok(&st, NX_ENG_DVE, &cp);
    double got[N];
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 64, N, got);
    test_assert_values(got, v, N);

    nx_insn add = nx_insn_make(NX_OP_TENSOR_SCALAR);
    add.alu0 = NX_ALU_ADD;
    add.op[0] = test_sb(NX_DT_INT32, 0, 1, 128, N);
    add.op[1] = test_sb(NX_DT_INT32, 0, 1, 0, N);
    add.op[2] = nx_imm(0.0, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &add);
    /* 2^24+1 -> 2^24 (tie to even); -(2^24+3) -> -(2^24+4); 2^31-1 -> 2^31
     * saturates on the int32 store; -2^31 is exact. */
    const double rounded[N] = {16777216.0, -16777220.0, 2147483647.0, -2147483648.0};
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 128, N, got);
    test_assert_values(got, rounded, N);

    /* Comparisons are exact: 2^24+1 != 2^24. */
    nx_insn eq = nx_insn_make(NX_OP_TENSOR_SCALAR);
    eq.alu0 = NX_ALU_IS_EQUAL;
    eq.op[0] = test_sb(NX_DT_FP32, 0, 1, 192, N);
    eq.op[1] = test_sb(NX_DT_INT32, 0, 1, 0, N);
    eq.op[2] = nx_imm(16777216.0, NX_DT_INT32);
    test_run_ok(&st, NX_ENG_DVE, &eq);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 192, N, got);
    const double none[N] = {0, 0, 0, 0};
    test_assert_values(got, none, N);
    nx_state_free(&st);
}

/* Bitwise ops on uint32 (including 0xFFFFFFFF), negative int32 and fp32. */
static void test_bitwise(void **state) {
    (void)state;
    enum { N = 4 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double ua[N] = {4294967295.0, 2147483648.0, 4042322160.0 /* 0xF0F0F0F0 */, 0};
    const double ub[N] = {252645135.0 /* 0x0F0F0F0F */, 0, 4278255360.0 /* 0xFF00FF00 */,
                          4294967295.0};
    const double ia[N] = {-1, -256, 5, -2147483648.0};
    const double ib[N] = {255, 15, 3, -1};
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 0, N, ua);
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 64, N, ub);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 128, N, ia);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 192, N, ib);
    const struct {
        nx_alu_op op;
        double u[N], i[N];
    } cases[] = {
        {NX_ALU_BITWISE_AND,
         {252645135.0, 0, 4026593280.0 /* 0xF000F000 */, 0},
         {255, 0, 1, -2147483648.0}},
        {NX_ALU_BITWISE_OR,
         {4294967295.0, 2147483648.0, 4293984240.0 /* 0xFFF0FFF0 */, 4294967295.0},
         {-1, -241, 7, -1}},
        {NX_ALU_BITWISE_XOR,
         {4042322160.0, 2147483648.0, 267390960.0 /* 0x0FF00FF0 */, 4294967295.0},
         {-256, -241, 6, 2147483647.0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
        in.alu0 = cases[k].op;
        in.op[0] = test_sb(NX_DT_UINT32, 0, 1, 256, N);
        in.op[1] = test_sb(NX_DT_UINT32, 0, 1, 0, N);
        in.op[2] = test_sb(NX_DT_UINT32, 0, 1, 64, N);
        test_run_ok(&st, NX_ENG_DVE, &in);
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_UINT32, 0, 256, N, got);
        test_assert_values(got, cases[k].u, N);
        in.op[0] = test_sb(NX_DT_INT32, 0, 1, 256, N);
        in.op[1] = test_sb(NX_DT_INT32, 0, 1, 128, N);
        in.op[2] = test_sb(NX_DT_INT32, 0, 1, 192, N);
        test_run_ok(&st, NX_ENG_DVE, &in);
        test_sbuf_get(&st, 0, NX_DT_INT32, 0, 256, N, got);
        test_assert_values(got, cases[k].i, N);
    }
    /* The public nki.isa rules (docs/parts/insns-dve.md, "Bitvec ops"): a
     * bitvec tensor_scalar or tensor_tensor takes integer dtypes only, runs
     * on DVE only, and does not mix with an arithmetic op. */
    nx_insn in = nx_insn_make(NX_OP_TENSOR_SCALAR);
    in.alu0 = NX_ALU_BITWISE_AND;
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 384, N);
    in.op[1] = test_sb(NX_DT_INT32, 0, 1, 128, N);
    in.op[2] = nx_imm(4294967295.0, NX_DT_UINT32);
    test_run_fails(&st, NX_ENG_DVE, &in, "dst: dtype fp32: a bitvec op (bitwise_and) takes integer dtypes");
    in.op[0] = test_sb(NX_DT_INT32, 0, 1, 384, N);
    in.op[1] = test_sb(NX_DT_FP32, 0, 1, 320, N);
    test_run_fails(&st, NX_ENG_DVE, &in, "in: dtype fp32: a bitvec op (bitwise_and) takes integer dtypes");
    in.op[1] = test_sb(NX_DT_INT32, 0, 1, 128, N);
    in.op[2] = nx_imm(255, NX_DT_FP32);
    test_run_fails(&st, NX_ENG_DVE, &in, "scalar0: dtype fp32: a bitvec op (bitwise_and) takes integer dtypes");
    in.op[2] = nx_imm(255, NX_DT_INT32);
    test_run_fails(&st, NX_ENG_POOL, &in, "op0 bitwise_and: a bitvec op runs on dve only, not pool");
    in.alu0 = NX_ALU_SHIFT_RIGHT;
    in.alu1 = NX_ALU_IS_GT;
    in.op[3] = nx_imm(1, NX_DT_INT32);
    test_run_fails(&st, NX_ENG_POOL, &in,
                   "op0 shift_right and op1 is_gt: a bitvec and an arithmetic op do not mix in one instruction");
    in.alu0 = NX_ALU_ADD;
    in.alu1 = NX_ALU_BITWISE_OR;
    test_run_fails(&st, NX_ENG_DVE, &in,
                   "op0 add and op1 bitwise_or: a bitvec and an arithmetic op do not mix in one instruction");
    in.alu0 = NX_ALU_BYPASS; /* bypass is neither kind */
    test_run_ok(&st, NX_ENG_DVE, &in);
    nx_insn t = nx_insn_make(NX_OP_TENSOR_TENSOR);
    t.alu0 = NX_ALU_BITWISE_XOR;
    t.op[0] = test_sb(NX_DT_INT32, 0, 1, 256, N);
    t.op[1] = test_sb(NX_DT_INT32, 0, 1, 128, N);
    t.op[2] = test_sb(NX_DT_FP32, 0, 1, 320, N);
    test_run_fails(&st, NX_ENG_DVE, &t, "in1: dtype fp32: a bitvec op (bitwise_xor) takes integer dtypes");
    t.op[2] = test_sb(NX_DT_INT32, 0, 1, 192, N);
    test_run_fails(&st, NX_ENG_POOL, &t, "op0 bitwise_xor: a bitvec op runs on dve only, not pool");
    nx_state_free(&st);
}

static void test_shifts(void **state) {
    (void)state;
    enum { N = 3 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double u[N] = {2147483648.0, 1, 4294967295.0};
    const double s[N] = {-256, 256, -1};
    const double l[N] = {1, 3, 4294967295.0};
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 0, N, u);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 64, N, s);
    test_sbuf_put(&st, 0, NX_DT_UINT32, 0, 128, N, l);
    const struct {
        nx_alu_op op;
        nx_dtype dt;
        uint64_t src;
        double count;
        double want[N];
    } cases[] = {
        {NX_ALU_SHIFT_RIGHT, NX_DT_UINT32, 0, 4, {134217728.0, 0, 268435455.0}},
        /* logical also on int32: -256 = 0xFFFFFF00 -> 0x0FFFFFF0, -1 -> 0x0FFFFFFF */
        {NX_ALU_SHIFT_RIGHT, NX_DT_INT32, 64, 4, {268435440.0, 16, 268435455.0}},
        {NX_ALU_SHIFT_LEFT, NX_DT_UINT32, 128, 31, {2147483648.0, 2147483648.0, 2147483648.0}},
        {NX_ALU_SHIFT_LEFT, NX_DT_UINT32, 128, 33, {2, 6, 4294967294.0}}, /* count & 31 */
        {NX_ALU_SHIFT_LEFT, NX_DT_INT32, 64, 4, {-4096, 4096, -16}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nx_insn in = nx_insn_make(NX_OP_TENSOR_SCALAR);
        in.alu0 = cases[k].op;
        in.op[0] = test_sb(cases[k].dt, 0, 1, 256, N);
        in.op[1] = test_sb(cases[k].dt, 0, 1, cases[k].src, N);
        in.op[2] = nx_imm(cases[k].count, NX_DT_INT32);
        test_run_ok(&st, NX_ENG_DVE, &in);
        double got[N];
        test_sbuf_get(&st, 0, cases[k].dt, 0, 256, N, got);
        test_assert_values(got, cases[k].want, N);
    }
    nx_state_free(&st);
}

static void test_tensor_tensor_shape_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR);
    in.alu0 = NX_ALU_ADD;
    in.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 256);
    in.op[1] = test_sb(NX_DT_FP32, 0, 128, 2048, 256);
    in.op[2] = test_sb(NX_DT_FP32, 0, 64, 4096, 256);
    test_run_fails(&st, NX_ENG_DVE, &in, "in1 has 64 partitions, dst has 128");
    in.op[2] = test_sb(NX_DT_FP32, 0, 128, 4096, 256);
    in.op[1] = test_sb(NX_DT_FP32, 0, 128, 2048, 300);
    test_run_fails(&st, NX_ENG_DVE, &in, "in0 has 300 elements per partition, dst has 256");
    nx_state_free(&st);
}

/* ---- tensor_scalar / scalar_tensor_tensor ---- */

static void test_tensor_scalar_imm_and_reverse(void **state) {
    (void)state;
    enum { P = 4, N = 10 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {3};
    double x[P][N];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) x[p][e] = rnd(&r, 0.5, 8);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, x[p]);
    }
    /* (10 - x) / 4 ; 4 / (x - 10); single op x * 3 */
    const struct {
        nx_alu_op op0, op1;
        uint16_t flags;
        int two;
    } cases[] = {
        {NX_ALU_SUBTRACT, NX_ALU_DIVIDE, NX_FLAG_REVERSE0, 1},
        {NX_ALU_SUBTRACT, NX_ALU_DIVIDE, NX_FLAG_REVERSE1, 1},
        {NX_ALU_MULTIPLY, NX_ALU_BYPASS, 0, 0},
    };
    for (size_t k = 0; k < 3; k++) {
        nx_insn in = nx_insn_make(NX_OP_TENSOR_SCALAR);
        in.alu0 = cases[k].op0;
        in.alu1 = cases[k].op1;
        in.flags = cases[k].flags;
        in.op[0] = test_sb(NX_DT_FP32, 0, P, 512, N);
        in.op[1] = test_sb(NX_DT_FP32, 0, P, 0, N);
        in.op[2] = nx_imm(k == 2 ? 3.0 : 10.0, NX_DT_FP32);
        if (cases[k].two) in.op[3] = nx_imm(4.0, NX_DT_FP32);
        test_run_ok(&st, NX_ENG_DVE, &in);
        for (int p = 0; p < P; p++) {
            double got[N];
            test_sbuf_get(&st, 0, NX_DT_FP32, p, 512, N, got);
            for (int e = 0; e < N; e++) {
                float v = (float)x[p][e], want;
                if (k == 0) want = (10.0f - v) / 4.0f;
                else if (k == 1) want = 4.0f / (v - 10.0f);
                else want = v * 3.0f;
                assert_same(got[e], want);
            }
        }
    }
    nx_state_free(&st);
}

/* Per-partition scalars from SBUF and PSUM, on DVE and POOL; the scalar may
 * alias dst. */
static void test_tensor_scalar_per_partition(void **state) {
    (void)state;
    enum { P = 128, N = 33 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {11};
    static double x[P][N];
    double s0[P], s1[P];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) x[p][e] = rnd(&r, -4, 4);
        s0[p] = rnd(&r, -2, 2);
        s1[p] = rnd(&r, -2, 2);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, x[p]);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 1024, 1, &s0[p]);
        test_psum_put(&st, 0, NX_DT_FP32, p, 0, 1, &s1[p]);
    }
    nx_insn in = nx_insn_make(NX_OP_TENSOR_SCALAR);
    in.alu0 = NX_ALU_MULTIPLY;
    in.alu1 = NX_ALU_MAX;
    in.op[0] = test_sb(NX_DT_FP32, 0, P, 512, N);
    in.op[1] = test_sb(NX_DT_FP32, 0, P, 0, N);
    in.op[2] = test_sb(NX_DT_FP32, 0, P, 1024, 1);
    in.op[3] = test_ps(NX_DT_FP32, 0, P, 0, 1);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 512, N, got);
        for (int e = 0; e < N; e++) {
            float t = (float)x[p][e] * (float)s0[p];
            float s = (float)s1[p];
            assert_same(got[e], t > s ? t : s);
        }
    }
    /* POOL, SBUF scalar that is also dst's first element: x = x + x[0]. */
    in = nx_insn_make(NX_OP_TENSOR_SCALAR);
    in.alu0 = NX_ALU_ADD;
    in.op[0] = test_sb(NX_DT_FP32, 0, P, 0, N);
    in.op[1] = test_sb(NX_DT_FP32, 0, P, 0, N);
    in.op[2] = test_sb(NX_DT_FP32, 0, P, 0, 1);
    test_run_ok(&st, NX_ENG_POOL, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 0, N, got);
        for (int e = 0; e < N; e++) assert_same(got[e], (float)x[p][e] + (float)x[p][0]);
    }
    nx_state_free(&st);
}

static void test_tensor_scalar_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    nx_insn in = nx_insn_make(NX_OP_TENSOR_SCALAR);
    in.alu0 = NX_ALU_ADD;
    in.alu1 = NX_ALU_ADD;
    in.op[0] = test_sb(NX_DT_FP32, 0, 128, 0, 8);
    in.op[1] = test_sb(NX_DT_FP32, 0, 128, 64, 8);
    in.op[2] = nx_imm(1.0, NX_DT_FP32);
    test_run_fails(&st, NX_ENG_DVE, &in, "op1: is add without scalar1 (must be bypass)");
    in.alu1 = NX_ALU_BYPASS;
    in.flags = NX_FLAG_REVERSE1;
    test_run_fails(&st, NX_ENG_DVE, &in, "rev1: is set without scalar1");
    in.flags = 0;
    in.op[2] = test_sb(NX_DT_FP32, 0, 128, 128, 2);
    test_run_fails(&st, NX_ENG_DVE, &in, "scalar0 has 2 elements per partition, a scalar has 1");
    in.op[2] = nx_imm(1.0, NX_DT_FP32);
    in.op[3] = test_sb(NX_DT_FP32, 0, 64, 128, 1);
    in.alu1 = NX_ALU_MULTIPLY;
    test_run_fails(&st, NX_ENG_DVE, &in, "scalar1 has 64 partitions, in has 128");
    in.op[3] = test_sb(NX_DT_FP32, 0, 128, 128, 1);
    in.op[1] = test_sb(NX_DT_FP32, 0, 128, 64, 9);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 9 elements per partition, dst has 8");
    nx_state_free(&st);
}

static void test_scalar_tensor_tensor(void **state) {
    (void)state;
    enum { P = 16, N = 24 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {5};
    double a[P][N], b[P][N], s[P];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) {
            a[p][e] = rnd(&r, -10, 10);
            b[p][e] = rnd(&r, -10, 10);
        }
        s[p] = rnd(&r, -3, 3);
        test_sbuf_put(&st, 0, NX_DT_FP32, 96 + p, 0, N, a[p]);
        test_psum_put(&st, 0, NX_DT_FP32, 96 + p, 0, N, b[p]);
        test_sbuf_put(&st, 0, NX_DT_FP32, 96 + p, 256, 1, &s[p]);
    }
    /* dst = (in0 * s) + in1, per-partition s; dst aliases in1 (PSUM). */
    nx_insn in = nx_insn_make(NX_OP_SCALAR_TENSOR_TENSOR);
    in.alu0 = NX_ALU_MULTIPLY;
    in.alu1 = NX_ALU_ADD;
    in.op[0] = test_ps(NX_DT_FP32, 96, P, 0, N);
    in.op[1] = test_sb(NX_DT_FP32, 96, P, 0, N);
    in.op[2] = test_sb(NX_DT_FP32, 96, P, 256, 1);
    in.op[3] = test_ps(NX_DT_FP32, 96, P, 0, N);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_psum_get(&st, 0, NX_DT_FP32, 96 + p, 0, N, got);
        for (int e = 0; e < N; e++)
            assert_same(got[e], (float)a[p][e] * (float)s[p] + (float)b[p][e]);
    }
    /* rev0: dst = (2 - in0) max in0 */
    in.alu0 = NX_ALU_SUBTRACT;
    in.alu1 = NX_ALU_MAX;
    in.flags = NX_FLAG_REVERSE0;
    in.op[0] = test_sb(NX_DT_FP32, 96, P, 512, N);
    in.op[2] = nx_imm(2.0, NX_DT_FP32);
    in.op[3] = test_sb(NX_DT_FP32, 96, P, 0, N);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_FP32, 96 + p, 512, N, got);
        for (int e = 0; e < N; e++) {
            float t = 2.0f - (float)a[p][e];
            assert_same(got[e], t > (float)a[p][e] ? t : (float)a[p][e]);
        }
    }
    in.op[2] = test_sb(NX_DT_FP32, 96, P, 256, 3);
    test_run_fails(&st, NX_ENG_DVE, &in, "scalar has 3 elements per partition, a scalar has 1");
    in.op[2] = nx_imm(2.0, NX_DT_FP32);
    in.op[3] = test_sb(NX_DT_FP32, 96, P, 0, N - 1);
    test_run_fails(&st, NX_ENG_DVE, &in, "in1 has 23 elements per partition, dst has 24");
    nx_state_free(&st);
}

/* ---- tensor_copy ---- */

static void test_tensor_copy_conversions(void **state) {
    (void)state;
    enum { N = 7 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double v[N] = {1.5, 2.5, -300, 300, NAN, -0.5, 1.00390625 /* 1 + 2^-8 */};
    test_psum_put(&st, 0, NX_DT_FP32, 0, 0, N, v);
    /* fp32 -> int8 on ACT: RNE, saturation, NaN -> 0. */
    nx_insn in = nx_insn_make(NX_OP_TENSOR_COPY);
    in.op[0] = test_sb(NX_DT_INT8, 0, 1, 0, N);
    in.op[1] = test_ps(NX_DT_FP32, 0, 1, 0, N);
    test_run_ok(&st, NX_ENG_ACT, &in);
    double got[N];
    const double want8[N] = {2, 2, -128, 127, 0, 0, 1};
    test_sbuf_get(&st, 0, NX_DT_INT8, 0, 0, N, got);
    test_assert_values(got, want8, N);
    /* fp32 -> bf16 on DVE: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1. */
    in.op[0] = test_sb(NX_DT_BF16, 0, 1, 64, N);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double want16[N] = {1.5, 2.5, -300, 300, NAN, -0.5, 1.0};
    test_sbuf_get(&st, 0, NX_DT_BF16, 0, 64, N, got);
    test_assert_values(got, want16, N);
    /* bf16 -> fp32 on POOL (SBUF to SBUF), exact. */
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 128, N);
    in.op[1] = test_sb(NX_DT_BF16, 0, 1, 64, N);
    test_run_ok(&st, NX_ENG_POOL, &in);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 128, N, got);
    test_assert_values(got, want16, N);
    /* int32 2^24+1 -> fp32 rounds once at the store. */
    const double big = 16777217.0;
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 256, 1, &big);
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 320, 1);
    in.op[1] = test_sb(NX_DT_INT32, 0, 1, 256, 1);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 320, 1, got);
    assert_same(got[0], 16777216.0);
    in.op[1] = test_sb(NX_DT_INT32, 0, 1, 256, 2);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 2 elements per partition, dst has 1");
    in.op[1] = test_sb(NX_DT_INT32, 0, 2, 256, 1);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 2 partitions, dst has 1");
    nx_state_free(&st);
}

/* ---- tensor_tensor_scan ---- */

static void test_tensor_tensor_scan(void **state) {
    (void)state;
    enum { P = 8, N = 50 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {9};
    double a[P][N], b[P][N], init[P];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) {
            a[p][e] = rnd(&r, 0.5, 1.0);
            b[p][e] = rnd(&r, -1, 1);
        }
        init[p] = rnd(&r, -5, 5);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, a[p]);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 512, N, b[p]);
        test_psum_put(&st, 0, NX_DT_FP32, p, 64, 1, &init[p]);
    }
    /* h = h * a + b, initial per partition (PSUM); dst aliases in0. */
    nx_insn in = nx_insn_make(NX_OP_TENSOR_TENSOR_SCAN);
    in.alu0 = NX_ALU_MULTIPLY;
    in.alu1 = NX_ALU_ADD;
    in.op[0] = test_sb(NX_DT_FP32, 0, P, 0, N);
    in.op[1] = test_sb(NX_DT_FP32, 0, P, 0, N);
    in.op[2] = test_sb(NX_DT_FP32, 0, P, 512, N);
    in.op[3] = test_ps(NX_DT_FP32, 0, P, 64, 1);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 0, N, got);
        float h = (float)init[p];
        for (int e = 0; e < N; e++) {
            h = h * (float)a[p][e] + (float)b[p][e];
            assert_same(got[e], h);
        }
    }
    /* Running max with an immediate initial: acc = max(acc, in0) + 0 ... as
     * (acc max in0) bypass in1. */
    in.alu0 = NX_ALU_MAX;
    in.alu1 = NX_ALU_BYPASS;
    in.op[0] = test_sb(NX_DT_FP32, 0, P, 1024, N);
    in.op[1] = test_sb(NX_DT_FP32, 0, P, 512, N);
    in.op[3] = nx_imm(0.25, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[N];
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 1024, N, got);
        float m = 0.25f;
        for (int e = 0; e < N; e++) {
            if ((float)b[p][e] > m) m = (float)b[p][e];
            assert_same(got[e], m);
        }
    }
    in.op[3] = test_sb(NX_DT_FP32, 0, P, 2048, 2);
    test_run_fails(&st, NX_ENG_DVE, &in, "initial has 2 elements per partition, a scalar has 1");
    in.op[3] = test_sb(NX_DT_FP32, 0, 4, 2048, 1);
    test_run_fails(&st, NX_ENG_DVE, &in, "initial has 4 partitions, dst has 8");
    nx_state_free(&st);
}

/* ---- select ---- */

static void test_select(void **state) {
    (void)state;
    enum { N = 6 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double pred[N] = {1, 0, -0.0, NAN, 0.5, 0};
    const double t[N] = {10, 11, 12, 13, 14, 15};
    const double f[N] = {20, 21, 22, 23, 24, 25};
    const double old[N] = {30, 31, 32, 33, 34, 35};
    for (uint32_t p = 32; p < 64; p++) {
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, pred);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 64, N, t);
        test_psum_put(&st, 0, NX_DT_FP32, p, 0, N, f);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 128, N, old);
    }
    nx_insn in = nx_insn_make(NX_OP_SELECT);
    in.op[0] = test_sb(NX_DT_FP32, 32, 32, 128, N);
    in.op[1] = test_sb(NX_DT_FP32, 32, 32, 0, N);
    in.op[2] = test_sb(NX_DT_FP32, 32, 32, 64, N);
    in.op[3] = test_ps(NX_DT_FP32, 32, 32, 0, N);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w1[N] = {10, 21, 22, 13, 14, 25};
    double got[N];
    for (uint32_t p = 32; p < 64; p++) {
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 128, N, got);
        test_assert_values(got, w1, N);
    }
    /* Immediates for both. */
    in.op[2] = nx_imm(-1.0, NX_DT_FP32);
    in.op[3] = nx_imm(7.0, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w2[N] = {-1, 7, 7, -1, -1, 7};
    test_sbuf_get(&st, 0, NX_DT_FP32, 40, 128, N, got);
    test_assert_values(got, w2, N);
    /* No on_false: predicated copy; unselected dst elements keep their value
     * (including a NaN payload, checked bit-exactly). */
    const uint32_t payload = 0x7fc01234u;
    for (uint32_t p = 32; p < 64; p++) {
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 128, N, old);
        memcpy(nx_sbuf_at(&st, 0, p, 128 + 4), &payload, 4);
    }
    in.op[2] = test_sb(NX_DT_FP32, 32, 32, 64, N);
    in.op[3] = (nx_operand){0};
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w3[N] = {10, NAN, 32, 13, 14, 35};
    for (uint32_t p = 32; p < 64; p++) {
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 128, N, got);
        test_assert_values(got, w3, N);
        uint32_t bits;
        memcpy(&bits, nx_sbuf_at(&st, 0, p, 128 + 4), 4);
        assert_int_equal(bits, payload);
    }
    /* dst aliases pred (int32): dst = pred ? 5 : pred -> pred zeros stay. */
    const double ip[N] = {3, 0, -2, 0, 1, 0};
    test_sbuf_put(&st, 0, NX_DT_INT32, 32, 512, N, ip);
    nx_insn al = nx_insn_make(NX_OP_SELECT);
    al.op[0] = test_sb(NX_DT_INT32, 32, 1, 512, N);
    al.op[1] = test_sb(NX_DT_INT32, 32, 1, 512, N);
    al.op[2] = nx_imm(5.0, NX_DT_INT32);
    al.op[3] = test_sb(NX_DT_INT32, 32, 1, 512, N);
    test_run_ok(&st, NX_ENG_DVE, &al);
    const double w4[N] = {5, 0, 5, 0, 5, 0};
    test_sbuf_get(&st, 0, NX_DT_INT32, 32, 512, N, got);
    test_assert_values(got, w4, N);
    al.op[3] = test_sb(NX_DT_INT32, 32, 1, 512, N - 1);
    test_run_fails(&st, NX_ENG_DVE, &al, "on_false has 5 elements per partition, dst has 6");
    al.op[3] = (nx_operand){0};
    al.op[1] = test_sb(NX_DT_INT32, 32, 32, 512, N);
    test_run_fails(&st, NX_ENG_DVE, &al, "pred has 32 partitions, dst has 1");
    nx_state_free(&st);
}

/* ---- memset ---- */

static void test_memset(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    double got[8];
    const double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (uint32_t p = 0; p < 128; p++) test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, 8, ones);
    /* Strided dst: every other element, the rest untouched. */
    int32_t s = 2;
    uint32_t c = 4;
    nx_insn in = nx_insn_make(NX_OP_MEMSET);
    in.op[0] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 0, 0, 1, &s, &c);
    in.op[1] = nx_imm(-2.75, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_POOL, &in);
    const double w1[8] = {-2.75, 1, -2.75, 1, -2.75, 1, -2.75, 1};
    for (uint32_t p = 0; p < 128; p++) {
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 0, 8, got);
        test_assert_values(got, w1, 8);
    }
    /* Converted to dst's dtype: int8 saturates, bf16 rounds. */
    in.op[0] = test_ps(NX_DT_INT8, 0, 128, 0, 8);
    in.op[1] = nx_imm(300.0, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_psum_get(&st, 0, NX_DT_INT8, 127, 0, 8, got);
    for (int e = 0; e < 8; e++) assert_same(got[e], 127.0);
    in.op[0] = test_sb(NX_DT_BF16, 0, 1, 64, 3);
    in.op[1] = nx_imm(1.00390625, NX_DT_FP32);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_BF16, 0, 64, 3, got);
    for (int e = 0; e < 3; e++) assert_same(got[e], 1.0);
    nx_state_free(&st);
}

/* ---- tensor_reduce ---- */

/* Reference: for each kept index combination, fold the matching elements in
 * row-major order starting from the first one. */
static float ref_fold(nx_alu_op op, float r, float x) {
    switch (op) {
    case NX_ALU_ADD: return r + x;
    case NX_ALU_MULTIPLY: return r * x;
    case NX_ALU_MAX: return x > r ? x : r;
    case NX_ALU_MIN: return x < r ? x : r;
    case NX_ALU_ABS_MAX: return fabsf(x) > r ? fabsf(x) : r;
    default: fail_msg("no reference for op %d", (int)op);
    }
    return 0.0f;
}

static void test_tensor_reduce_axes(void **state) {
    (void)state;
    enum { P = 3, D0 = 4, D1 = 5, D2 = 6, N = D0 * D1 * D2 };
    const uint32_t dims[3] = {D0, D1, D2};
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {77};
    double x[P][N];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) x[p][e] = rnd(&r, 0.6, 1.5);
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, x[p]);
    }
    static const nx_alu_op ops[] = {NX_ALU_ADD, NX_ALU_MULTIPLY, NX_ALU_MAX, NX_ALU_MIN,
                                    NX_ALU_ABS_MAX};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (uint32_t axes = 1; axes < 8; axes++)
            for (int neg = 0; neg < 2; neg++) {
                uint32_t m = 1;
                for (int d = 0; d < 3; d++)
                    if (!(axes & (1u << d))) m *= dims[d];
                int32_t strides[3] = {D1 * D2, D2, 1};
                nx_insn in = nx_insn_make(NX_OP_TENSOR_REDUCE);
                in.alu0 = ops[k];
                in.iparam[0] = (int32_t)axes;
                in.flags = neg ? NX_FLAG_NEGATE : 0;
                in.op[0] = test_ps(NX_DT_FP32, 0, P, 0, m);
                in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, P, 0, 0, 3, strides, dims);
                test_run_ok(&st, NX_ENG_DVE, &in);
                for (int p = 0; p < P; p++) {
                    double got[N];
                    test_psum_get(&st, 0, NX_DT_FP32, p, 0, m, got);
                    for (uint32_t o = 0; o < m; o++) {
                        int first = 1;
                        float acc = 0.0f;
                        for (int e = 0; e < N; e++) {
                            int i[3] = {e / (D1 * D2), (e / D2) % D1, e % D2};
                            uint32_t oi = 0;
                            for (int d = 0; d < 3; d++)
                                if (!(axes & (1u << d))) oi = oi * dims[d] + (uint32_t)i[d];
                            if (oi != o) continue;
                            float v = (float)x[p][e];
                            if (first) acc = ops[k] == NX_ALU_ABS_MAX ? fabsf(v) : v;
                            else acc = ref_fold(ops[k], acc, v);
                            first = 0;
                        }
                        assert_same(got[o], neg ? -acc : acc);
                    }
                }
            }
    nx_state_free(&st);
}

/* A 2-D reduce over a strided, negative-stride view on POOL, a single-element
 * reduction (x0 alone is rounded to fp32), and the bitwise reductions. */
static void test_tensor_reduce_special(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 12, v);
    /* in[r][c] = elem 11 - 4r - c for r < 3, c < 2 (strides -4, -1):
     * rows {11,10}, {7,6}, {3,2}; sum over r -> {21, 18}. */
    int32_t s[2] = {-4, -1};
    uint32_t c[2] = {3, 2};
    nx_insn in = nx_insn_make(NX_OP_TENSOR_REDUCE);
    in.alu0 = NX_ALU_ADD;
    in.iparam[0] = 1;
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 128, 2);
    in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 0, 44, 2, s, c);
    test_run_ok(&st, NX_ENG_POOL, &in);
    double got[4];
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 128, 2, got);
    assert_same(got[0], 21.0);
    assert_same(got[1], 18.0);

    /* One element per reduction: int32 2^24+1 through add -> 2^24 (fp32),
     * -0 stays -0 through add. */
    const double iv[2] = {16777217.0, -0.0};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 256, 1, iv);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 260, 1, iv + 1);
    uint32_t one = 1;
    int32_t unit = 1;
    in = nx_insn_make(NX_OP_TENSOR_REDUCE);
    in.alu0 = NX_ALU_ADD;
    in.iparam[0] = 1;
    in.op[0] = test_sb(NX_DT_INT32, 0, 1, 320, 1);
    in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_INT32, 0, 1, 0, 256, 1, &unit, &one);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 320, 1, got);
    assert_same(got[0], 16777216.0);
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 320, 1);
    in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 0, 260, 1, &unit, &one);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 320, 1, got);
    assert_same(got[0], -0.0);

    /* Bitwise: and over {-1, 255, -2} = 254; or over {1, 2, 0x80000000
     * (uint32)} = 0x80000003; xor over {7, 5, 0xFFFFFFFF} = 0xFFFFFFFD. */
    const struct {
        nx_alu_op op;
        nx_dtype dt;
        double in[3], want;
    } bw[] = {
        {NX_ALU_BITWISE_AND, NX_DT_INT32, {-1, 255, -2}, 254},
        {NX_ALU_BITWISE_OR, NX_DT_UINT32, {1, 2, 2147483648.0}, 2147483651.0},
        {NX_ALU_BITWISE_XOR, NX_DT_UINT32, {7, 5, 4294967295.0}, 4294967293.0},
        {NX_ALU_BITWISE_AND, NX_DT_INT32, {-1, -1, -16}, -16},
    };
    for (size_t k = 0; k < sizeof bw / sizeof bw[0]; k++) {
        test_sbuf_put(&st, 0, bw[k].dt, 0, 512, 3, bw[k].in);
        in = nx_insn_make(NX_OP_TENSOR_REDUCE);
        in.alu0 = bw[k].op;
        in.iparam[0] = 1;
        in.op[0] = test_sb(bw[k].dt, 0, 1, 640, 1);
        in.op[1] = test_sb(bw[k].dt, 0, 1, 512, 3);
        test_run_ok(&st, NX_ENG_DVE, &in);
        test_sbuf_get(&st, 0, bw[k].dt, 0, 640, 1, got);
        assert_same(got[0], bw[k].want);
    }
    /* max with a NaN: NaN. */
    const double nv[3] = {1, NAN, 3};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 768, 3, nv);
    in = nx_insn_make(NX_OP_TENSOR_REDUCE);
    in.alu0 = NX_ALU_MAX;
    in.iparam[0] = 1;
    in.op[0] = test_sb(NX_DT_FP32, 0, 1, 832, 1);
    in.op[1] = test_sb(NX_DT_FP32, 0, 1, 768, 3);
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 832, 1, got);
    assert_true(isnan(got[0]));
    nx_state_free(&st);
}

static void test_tensor_reduce_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    int32_t s[2] = {5, 1};
    uint32_t c[2] = {6, 5};
    nx_insn in = nx_insn_make(NX_OP_TENSOR_REDUCE);
    in.alu0 = NX_ALU_ADD;
    in.iparam[0] = 0;
    in.op[0] = test_sb(NX_DT_FP32, 0, 128, 512, 6);
    in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, 128, 0, 0, 2, s, c);
    test_run_fails(&st, NX_ENG_DVE, &in, "axes is 0: name at least one of in's free dims");
    in.iparam[0] = 4;
    test_run_fails(&st, NX_ENG_DVE, &in, "axes 0x4 names dim 2, in has 2 free dims");
    in.iparam[0] = 1;
    test_run_fails(&st, NX_ENG_DVE, &in,
              "dst has 6 elements per partition, in reduced over axes 0x1 has 5");
    in.iparam[0] = 2;
    in.alu0 = NX_ALU_SUBTRACT;
    test_run_fails(&st, NX_ENG_DVE, &in,
              "op0: must be add, multiply, max, min, abs_max, bitwise_and, bitwise_or or "
              "bitwise_xor, got subtract");
    in.alu0 = NX_ALU_IS_EQUAL;
    test_run_fails(&st, NX_ENG_DVE, &in,
              "op0: must be add, multiply, max, min, abs_max, bitwise_and, bitwise_or or "
              "bitwise_xor, got is_equal");
    in.alu0 = NX_ALU_MIN;
    in.op[0] = test_sb(NX_DT_FP32, 0, 64, 512, 6);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 128 partitions, dst has 64");
    in.op[0] = test_sb(NX_DT_FP32, 0, 128, 512, 6);
    test_run_ok(&st, NX_ENG_DVE, &in);
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_tensor_random_ops),
        cmocka_unit_test(test_tensor_tensor_psum_bf16),
        cmocka_unit_test(test_tensor_tensor_alias),
        cmocka_unit_test(test_tensor_tensor_access_patterns),
        cmocka_unit_test(test_tensor_tensor_special_values),
        cmocka_unit_test(test_int32_exact_copy_vs_rounded_add),
        cmocka_unit_test(test_bitwise),
        cmocka_unit_test(test_shifts),
        cmocka_unit_test(test_tensor_tensor_shape_errors),
        cmocka_unit_test(test_tensor_scalar_imm_and_reverse),
        cmocka_unit_test(test_tensor_scalar_per_partition),
        cmocka_unit_test(test_tensor_scalar_errors),
        cmocka_unit_test(test_scalar_tensor_tensor),
        cmocka_unit_test(test_tensor_copy_conversions),
        cmocka_unit_test(test_tensor_tensor_scan),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_memset),
        cmocka_unit_test(test_tensor_reduce_axes),
        cmocka_unit_test(test_tensor_reduce_special),
        cmocka_unit_test(test_tensor_reduce_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
