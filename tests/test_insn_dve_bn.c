/* Tests for bn_stats and bn_aggr (isa/insns/bn_stats.c, bn_aggr.c).
 *
 * Small integer rows are checked exactly (every fp32 step is exact there, or
 * the rounding is worked out by hand in the comment). Random rows are checked
 * against a two-pass reference in double (mean = sum / n, then
 * m2 = sum (x - mean)^2), within a tolerance derived from fp32's unit
 * roundoff u = 2^-24 and the element count n. Each of the n fp32 Welford
 * steps can add (a) a rounding of the running sums: relative u of mean or m2;
 * (b) in delta = x - mean, an absolute error of about u (|x| + |mean|) <=
 * 2 u max|x|, which enters m2 multiplied by |x - mean| <= spread. Summed over
 * n steps with a factor 2 of slack:
 *     |mean - ref| <= 4 n u max|x|
 *     |m2 - ref|   <= 4 n u (m2_ref + max|x| spread)
 * (spread = max|x - mean|). For the rows used here that is about 1e-4
 * relative for m2; a wrong split, count or formula is off by far more, and
 * each test asserts its tolerance is small against the value it checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/dtype.h"
#include "support.h"

#define U32 (1.0 / 16777216.0) /* fp32 unit roundoff 2^-24 */

static nx_insn one_in(nx_opcode opc, nx_operand dst, nx_operand in) {
    nx_insn insn = nx_insn_make(opc);
    insn.op[0] = dst;
    insn.op[1] = in;
    return insn;
}

/* Two-pass statistics in double of x[0..n). */
typedef struct ref_stats {
    double mean, m2, maxabs, spread;
} ref_stats;
static ref_stats two_pass(const double *x, size_t n) {
    ref_stats r = {0, 0, 0, 0};
    if (n == 0) return r;
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        if (fabs(x[i]) > r.maxabs) r.maxabs = fabs(x[i]);
    }
    r.mean = s / (double)n;
    for (size_t i = 0; i < n; i++) {
        r.m2 += (x[i] - r.mean) * (x[i] - r.mean);
        if (fabs(x[i] - r.mean) > r.spread) r.spread = fabs(x[i] - r.mean);
    }
    return r;
}
static double tol_mean(size_t n, const ref_stats *r) { return 4.0 * (double)n * U32 * r->maxabs; }
static double tol_m2(size_t n, const ref_stats *r) {
    return 4.0 * (double)n * U32 * (r->m2 + r->maxabs * r->spread);
}

static void check_stats(const char *what, double count, double mean, double m2, const double *x,
                        size_t n) {
    ref_stats r = two_pass(x, n);
    if (count != (double)n) fail_msg("%s: count %g, want %zu", what, count, n);
    if (fabs(mean - r.mean) > tol_mean(n, &r))
        fail_msg("%s: mean %.9g, want %.9g (tol %.3g)", what, mean, r.mean, tol_mean(n, &r));
    if (fabs(m2 - r.m2) > tol_m2(n, &r))
        fail_msg("%s: m2 %.9g, want %.9g (tol %.3g)", what, m2, r.m2, tol_m2(n, &r));
    assert_true(tol_m2(n, &r) < 1e-3 * r.m2);
    if (getenv("NXSIM_TEST_VERBOSE"))
        printf("%s n=%zu mean err %.3g (tol %.3g) m2 err %.3g (tol %.3g)\n", what, n,
               fabs(mean - r.mean), tol_mean(n, &r), fabs(m2 - r.m2), tol_m2(n, &r));
}

static void test_bn_stats_exact(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double x[5] = {1, 2, 3, 4, 5};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 5, x);
    double got[6];
    /* F = 5: A = {1,2,3} -> (3, 2, 2), B = {4,5} -> (2, 4.5, 0.5). */
    nx_insn in = one_in(NX_OP_BN_STATS, test_sb(NX_DT_FP32, 0, 1, 64, 6), test_sb(NX_DT_FP32, 0, 1, 0, 5));
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w5[6] = {3, 2, 2, 2, 4.5, 0.5};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 64, 6, got);
    test_assert_values(got, w5, 6);
    /* F = 1: B is empty. */
    in.op[1] = test_sb(NX_DT_FP32, 0, 1, 8, 1);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w1[6] = {1, 3, 0, 0, 0, 0};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 64, 6, got);
    test_assert_values(got, w1, 6);
    /* F = 2 from a reversed view {5, 4}: (1, 5, 0), (1, 4, 0); dst in PSUM. */
    int32_t s = -1;
    uint32_t c = 2;
    in.op[0] = test_ps(NX_DT_FP32, 0, 1, 0, 6);
    in.op[1] = nx_ap(NX_OPK_SBUF, NX_DT_FP32, 0, 1, 0, 16, 1, &s, &c);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w2[6] = {1, 5, 0, 1, 4, 0};
    test_psum_get(&st, 0, NX_DT_FP32, 0, 0, 6, got);
    test_assert_values(got, w2, 6);
    nx_state_free(&st);
}

static void test_bn_stats_random(void **state) {
    (void)state;
    enum { P = 128, F = 777 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {31};
    static double x[P][F];
    for (int p = 0; p < P; p++) {
        /* An offset mean makes the one-pass formula's cancellation visible. */
        double centre = test_rng_uniform(&r, -50, 50);
        for (int e = 0; e < F; e++) x[p][e] = (float)(centre + test_rng_uniform(&r, -2, 2));
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, F, x[p]);
    }
    nx_insn in =
        one_in(NX_OP_BN_STATS, test_ps(NX_DT_FP32, 0, P, 0, 6), test_sb(NX_DT_FP32, 0, P, 0, F));
    test_run_ok(&st, NX_ENG_DVE, &in);
    const size_t half = (F + 1) / 2;
    for (int p = 0; p < P; p++) {
        double got[6];
        test_psum_get(&st, 0, NX_DT_FP32, p, 0, 6, got);
        check_stats("half A", got[0], got[1], got[2], x[p], half);
        check_stats("half B", got[3], got[4], got[5], x[p] + half, F - half);
    }
    nx_state_free(&st);
}

static void test_bn_aggr_exact(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    double got[2];
    /* (3, 2, 2) + (2, 4.5, 0.5): n = 5, delta = 2.5, w = 0.4f;
     * mean = 2 + fl(2.5 * 0.4f) = 2 + 1 = 3; m2 = 2.5 + fl(18.75 * 0.4f) =
     * 2.5 + 7.5 = 10; var = 10 / 5 = 2 (the population variance of 1..5). */
    const double t[6] = {3, 2, 2, 2, 4.5, 0.5};
    test_sbuf_put(&st, 0, NX_DT_FP32, 32, 0, 6, t);
    nx_insn in = one_in(NX_OP_BN_AGGR, test_sb(NX_DT_FP32, 32, 1, 64, 2), test_sb(NX_DT_FP32, 32, 1, 0, 6));
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w1[2] = {3, 2};
    test_sbuf_get(&st, 0, NX_DT_FP32, 32, 64, 2, got);
    test_assert_values(got, w1, 2);
    /* Empty groups are skipped; all empty gives (0, 0). */
    const double t2[9] = {0, 99, 99, 2, 1, 2, 0, 5, 5};
    test_sbuf_put(&st, 0, NX_DT_FP32, 32, 128, 9, t2);
    in.op[1] = test_sb(NX_DT_FP32, 32, 1, 128, 9);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w2[2] = {1, 1};
    test_sbuf_get(&st, 0, NX_DT_FP32, 32, 64, 2, got);
    test_assert_values(got, w2, 2);
    const double t3[3] = {0, 7, 7};
    test_sbuf_put(&st, 0, NX_DT_FP32, 32, 256, 3, t3);
    in.op[1] = test_sb(NX_DT_FP32, 32, 1, 256, 3);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w3[2] = {0, 0};
    test_sbuf_get(&st, 0, NX_DT_FP32, 32, 64, 2, got);
    test_assert_values(got, w3, 2);
    /* A single group: (mean, m2 / count). */
    const double t4[3] = {4, 1.5, 3};
    test_sbuf_put(&st, 0, NX_DT_FP32, 32, 256, 3, t4);
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double w4[2] = {1.5, 0.75};
    test_sbuf_get(&st, 0, NX_DT_FP32, 32, 64, 2, got);
    test_assert_values(got, w4, 2);
    nx_state_free(&st);
}

/* bn_stats over G chunks of a row into one [P, 6G] buffer, then bn_aggr:
 * mean and variance of the whole row. */
static void test_bn_stats_then_aggr(void **state) {
    (void)state;
    enum { P = 64, G = 5, F = 301, N = G * F };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {8};
    static double x[P][N];
    for (int p = 0; p < P; p++) {
        double centre = test_rng_uniform(&r, -10, 10);
        for (int e = 0; e < N; e++) x[p][e] = (float)(centre + test_rng_uniform(&r, -1, 3));
        test_sbuf_put(&st, 0, NX_DT_FP32, 64 + p, 0, N, x[p]);
    }
    for (int g = 0; g < G; g++) {
        nx_insn in = one_in(NX_OP_BN_STATS, test_sb(NX_DT_FP32, 64, P, 8192 + 24 * g, 6),
                            test_sb(NX_DT_FP32, 64, P, 4 * F * g, F));
        test_run_ok(&st, NX_ENG_DVE, &in);
    }
    nx_insn ag = one_in(NX_OP_BN_AGGR, test_ps(NX_DT_FP32, 64, P, 0, 2),
                        test_sb(NX_DT_FP32, 64, P, 8192, 6 * G));
    test_run_ok(&st, NX_ENG_DVE, &ag);
    for (int p = 0; p < P; p++) {
        double got[2];
        test_psum_get(&st, 0, NX_DT_FP32, 64 + p, 0, 2, got);
        ref_stats rs = two_pass(x[p], N);
        double var = rs.m2 / N;
        if (fabs(got[0] - rs.mean) > tol_mean(N, &rs))
            fail_msg("partition %d: mean %.9g, want %.9g", p, got[0], rs.mean);
        if (fabs(got[1] - var) > tol_m2(N, &rs) / N)
            fail_msg("partition %d: var %.9g, want %.9g", p, got[1], var);
        assert_true(tol_m2(N, &rs) / N < 1e-3 * var); /* not vacuous */
        if (getenv("NXSIM_TEST_VERBOSE"))
            printf("aggr mean err %.3g (tol %.3g) var err %.3g (tol %.3g)\n",
                   fabs(got[0] - rs.mean), tol_mean(N, &rs), fabs(got[1] - var),
                   tol_m2(N, &rs) / N);
    }
    nx_state_free(&st);
}

static void test_bn_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    nx_insn in = one_in(NX_OP_BN_STATS, test_sb(NX_DT_FP32, 0, 8, 64, 5), test_sb(NX_DT_FP32, 0, 8, 0, 5));
    test_run_fails(&st, NX_ENG_DVE, &in, "dst has 5 elements per partition, bn_stats writes 6");
    in.op[0] = test_sb(NX_DT_FP32, 0, 4, 64, 6);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 8 partitions, dst has 4");
    nx_insn ag = one_in(NX_OP_BN_AGGR, test_sb(NX_DT_FP32, 0, 8, 64, 2), test_sb(NX_DT_FP32, 0, 8, 0, 7));
    test_run_fails(&st, NX_ENG_DVE, &ag,
              "in has 7 elements per partition, bn_aggr takes (count, mean, m2) triples (a "
              "multiple of 3)");
    ag.op[1] = test_sb(NX_DT_FP32, 0, 8, 0, 6);
    ag.op[0] = test_sb(NX_DT_FP32, 0, 8, 64, 3);
    test_run_fails(&st, NX_ENG_DVE, &ag, "dst has 3 elements per partition, bn_aggr writes 2");
    ag.op[0] = test_sb(NX_DT_FP32, 0, 16, 64, 2);
    test_run_fails(&st, NX_ENG_DVE, &ag, "in has 8 partitions, dst has 16");
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bn_stats_exact),
        cmocka_unit_test(test_bn_stats_random),
        cmocka_unit_test(test_bn_aggr_exact),
        cmocka_unit_test(test_bn_stats_then_aggr),
        cmocka_unit_test(test_bn_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
