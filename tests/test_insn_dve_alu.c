/* Tests for nx_alu_apply (isa/alu.c) against hand-computed values: fp32
 * rounding of inputs and results, IEEE special cases, pow, comparisons, and
 * the 32-bit integer rules of the bitwise ops and shifts
 * (docs/parts/insns-dve.md, "The ALU"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "isa/insn.h"

typedef struct alu_case {
    nx_alu_op op;
    double a, b, want;
} alu_case;

static void check_cases(const alu_case *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double got = nx_alu_apply(c[i].op, c[i].a, c[i].b);
        int ok = isnan(c[i].want) ? isnan(got)
                                  : got == c[i].want && signbit(got) == signbit(c[i].want);
        if (!ok)
            fail_msg("case %zu: %s(%.17g, %.17g) = %.17g, want %.17g", i, nx_alu_name(c[i].op),
                     c[i].a, c[i].b, got, c[i].want);
    }
}

#define P2(e) ldexp(1.0, (e))

static void test_alu_arithmetic_rounding(void **state) {
    (void)state;
    const alu_case c[] = {
        /* Result rounding, ties to even. */
        {NX_ALU_ADD, 1.0, P2(-24), 1.0},
        {NX_ALU_ADD, 1.0, 3 * P2(-24), 1.0 + P2(-22)},
        {NX_ALU_ADD, 1.0, P2(-24) + P2(-40), 1.0 + P2(-23)}, /* b rounds to 2^-24+2^-40 */
        {NX_ALU_SUBTRACT, 1.0, P2(-25), 1.0},
        /* Inputs are rounded first: 2^24+1 -> 2^24; 0.1 -> 0x3dcccccd. */
        {NX_ALU_ADD, 16777217.0, 0.0, 16777216.0},
        {NX_ALU_ADD, 0.1, 0.2, (double)0.3f},
        {NX_ALU_MULTIPLY, 16777217.0, 1.0, 16777216.0},
        {NX_ALU_MULTIPLY, 1.0 + P2(-12), 1.0 + P2(-12), 1.0 + P2(-11)}, /* 2^-24 dropped */
        {NX_ALU_MULTIPLY, 3e38, 10.0, INFINITY},
        {NX_ALU_MULTIPLY, -3e38, 10.0, -INFINITY},
        {NX_ALU_MULTIPLY, P2(-126), P2(-10), P2(-136)}, /* subnormal kept */
        {NX_ALU_MULTIPLY, P2(-126), P2(-30), 0.0},      /* underflow to +0 */
        {NX_ALU_DIVIDE, 1.0, 3.0, 0.3333333432674407958984375},
        {NX_ALU_DIVIDE, 1.0, 0.0, INFINITY},
        {NX_ALU_DIVIDE, -1.0, 0.0, -INFINITY},
        {NX_ALU_DIVIDE, 1.0, -0.0, -INFINITY},
        {NX_ALU_DIVIDE, 0.0, 0.0, NAN},
        {NX_ALU_DIVIDE, INFINITY, INFINITY, NAN},
        {NX_ALU_SUBTRACT, INFINITY, INFINITY, NAN},
        {NX_ALU_ADD, -0.0, -0.0, -0.0},
        {NX_ALU_ADD, -0.0, 0.0, 0.0},
        {NX_ALU_BYPASS, 16777217.0, 5.0, 16777217.0}, /* bypass does not round */
        {NX_ALU_BYPASS, NAN, 1.0, NAN},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

static void test_alu_max_min_abs_max(void **state) {
    (void)state;
    const alu_case c[] = {
        {NX_ALU_MAX, -0.0, 0.0, 0.0},      {NX_ALU_MAX, 0.0, -0.0, 0.0},
        {NX_ALU_MIN, -0.0, 0.0, -0.0},     {NX_ALU_MIN, 0.0, -0.0, -0.0},
        {NX_ALU_MAX, NAN, 1.0, NAN},       {NX_ALU_MAX, 1.0, NAN, NAN},
        {NX_ALU_MIN, NAN, -INFINITY, NAN}, {NX_ALU_MIN, 2.0, -3.0, -3.0},
        {NX_ALU_MAX, -INFINITY, -1e30, -1.0000000150474662e30 /* fp32(1e30) */},
        {NX_ALU_ABS_MAX, -3.0, 2.0, 3.0},  {NX_ALU_ABS_MAX, 2.0, -3.0, 3.0},
        {NX_ALU_ABS_MAX, -0.0, 0.0, 0.0},  {NX_ALU_ABS_MAX, -0.0, -0.0, 0.0},
        {NX_ALU_ABS_MAX, -INFINITY, 1.0, INFINITY},
        {NX_ALU_ABS_MAX, NAN, 1.0, NAN},   {NX_ALU_MAX, 16777217.0, 0.0, 16777216.0},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

static void test_alu_pow(void **state) {
    (void)state;
    const alu_case c[] = {
        {NX_ALU_POW, 2.0, 10.0, 1024.0}, {NX_ALU_POW, 2.0, -1.0, 0.5},
        {NX_ALU_POW, 4.0, 0.5, 2.0},     {NX_ALU_POW, -2.0, 3.0, -8.0},
        {NX_ALU_POW, -8.0, 1.0 / 3, NAN}, /* negative base, non-integer exponent */
        {NX_ALU_POW, 0.0, -1.0, INFINITY}, {NX_ALU_POW, -0.0, -1.0, -INFINITY},
        {NX_ALU_POW, NAN, 0.0, 1.0},     {NX_ALU_POW, 1.0, NAN, 1.0},
        {NX_ALU_POW, 10.0, 39.0, INFINITY}, /* overflows fp32 */
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

/* pow is the host libm's powf: within 1 ulp of the exact power, not always
 * correctly rounded. Over integer powers b^e (b <= 400, e <= 5, below 2^31)
 * the result is one of the two fp32 neighbours of the exact value, and an
 * exact halfway case may go to either: 65^4 = 17850625 lies halfway between
 * 17850624 and 17850626 (and 142^4 = 406586896 halfway between 406586880 and
 * 406586912). */
static void test_alu_pow_within_one_ulp(void **state) {
    (void)state;
    for (int b = 2; b <= 400; b++)
        for (int e = 2; e <= 5; e++) {
            double exact = 1.0;
            for (int k = 0; k < e; k++) exact *= b; /* exact: < 2^53 */
            if (exact >= 2147483648.0) continue;
            double got = nx_alu_apply(NX_ALU_POW, b, e);
            float lo = (float)exact;            /* RNE: one neighbour */
            if ((double)lo > exact) lo = nextafterf(lo, 0.0f);
            float hi = (double)lo == exact ? lo : nextafterf(lo, INFINITY);
            if (got != (double)lo && got != (double)hi)
                fail_msg("pow(%d, %d) = %.1f, not a neighbour of %.1f", b, e, got, exact);
        }
    const double halfway[2][3] = {{65, 17850624.0, 17850626.0}, {142, 406586880.0, 406586912.0}};
    for (int i = 0; i < 2; i++) {
        double got = nx_alu_apply(NX_ALU_POW, halfway[i][0], 4);
        assert_true(got == halfway[i][1] || got == halfway[i][2]);
    }
}

static void test_alu_compare(void **state) {
    (void)state;
    const alu_case c[] = {
        {NX_ALU_IS_EQUAL, NAN, NAN, 0},  {NX_ALU_NOT_EQUAL, NAN, NAN, 1},
        {NX_ALU_IS_GE, NAN, 1, 0},       {NX_ALU_IS_LE, 1, NAN, 0},
        {NX_ALU_IS_LT, -INFINITY, -1e38, 1}, {NX_ALU_IS_GT, 3, 3, 0},
        {NX_ALU_IS_GE, 3, 3, 1},         {NX_ALU_IS_EQUAL, -0.0, 0.0, 1},
        /* Exact engine values: no fp32 rounding before comparing. */
        {NX_ALU_IS_EQUAL, 16777217.0, 16777216.0, 0},
        {NX_ALU_IS_GT, 4294967295.0, 4294967294.0, 1},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

static void test_alu_bitwise(void **state) {
    (void)state;
    const alu_case c[] = {
        {NX_ALU_BITWISE_AND, -1, 255, 255},
        {NX_ALU_BITWISE_OR, 2147483648.0, 0, 2147483648.0},
        {NX_ALU_BITWISE_AND, 4294967295.0, -1, -1}, /* a negative input: int32 result */
        {NX_ALU_BITWISE_XOR, -1, -1, 0},
        {NX_ALU_BITWISE_XOR, 4294967295.0, 0, 4294967295.0},
        {NX_ALU_BITWISE_OR, -2147483648.0, 0, -2147483648.0},
        {NX_ALU_BITWISE_AND, 2.5, 3, 2},   /* 2.5 -> 2 (ties to even) */
        {NX_ALU_BITWISE_AND, 3.5, 7, 4},   /* 3.5 -> 4 */
        {NX_ALU_BITWISE_OR, 2.4999, 0, 2}, /* plain rounding */
        {NX_ALU_BITWISE_OR, -0.4, 0, 0},   /* rounds to 0: not negative, +0 */
        {NX_ALU_BITWISE_AND, NAN, 7, 0},
        {NX_ALU_BITWISE_OR, 5e9, 0, 4294967295.0},
        {NX_ALU_BITWISE_OR, -5e9, 0, -2147483648.0},
        {NX_ALU_BITWISE_OR, INFINITY, 0, 4294967295.0},
        {NX_ALU_BITWISE_OR, -INFINITY, 0, -2147483648.0},
        /* The exact integer, not its fp32 rounding. */
        {NX_ALU_BITWISE_OR, 16777217.0, 0, 16777217.0},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

static void test_alu_shifts(void **state) {
    (void)state;
    const alu_case c[] = {
        /* shift_right is logical: zeros shift in, also for negative a */
        {NX_ALU_SHIFT_RIGHT, -1, 31, 1},
        {NX_ALU_SHIFT_RIGHT, -1, 0, -1}, /* count 0: the pattern, read back signed */
        {NX_ALU_SHIFT_RIGHT, 4294967295.0, 31, 1},
        {NX_ALU_SHIFT_RIGHT, -8, 1, 2147483644.0},
        {NX_ALU_SHIFT_RIGHT, -2147483648.0, 4, 134217728.0},
        {NX_ALU_SHIFT_RIGHT, 2147483648.0, 4, 134217728.0},
        {NX_ALU_SHIFT_LEFT, 1, 31, 2147483648.0},
        {NX_ALU_SHIFT_LEFT, 1, -1, -2147483648.0}, /* count 31; b negative: int32 */
        {NX_ALU_SHIFT_LEFT, 3, 32, 3},             /* count 32 & 31 = 0 */
        {NX_ALU_SHIFT_LEFT, -1, 4, -16},
        {NX_ALU_SHIFT_LEFT, 4294967295.0, 1, 4294967294.0},
        {NX_ALU_SHIFT_LEFT, 1, 2.5, 4}, /* count 2.5 -> 2 */
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alu_arithmetic_rounding),
        cmocka_unit_test(test_alu_max_min_abs_max),
        cmocka_unit_test(test_alu_pow),
        cmocka_unit_test(test_alu_pow_within_one_ulp),
        cmocka_unit_test(test_alu_compare),
        cmocka_unit_test(test_alu_bitwise),
        cmocka_unit_test(test_alu_shifts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
