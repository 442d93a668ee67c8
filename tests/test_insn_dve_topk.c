/* Tests for the DVE top-k instructions max8, find_index8 and match_replace8
 * (isa/insns/{max8,find_index8,match_replace8}.c).
 *
 * References: max8 against a full sort written here (insertion sort of the
 * whole row with the documented order: NaN above +Inf, ties by index) and
 * hand-built rows; find_index8/match_replace8 against linear scans written
 * here and hand-computed rows. */
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

/* Descending order key: NaN above everything. */
static int before(double a, double b) {
    if (isnan(b)) return 0;
    if (isnan(a)) return 1;
    return a > b;
}

/* Stable descending sort of a copy, first 8 into out. */
static void ref_top8(const double *x, size_t n, double *out) {
    double *s = malloc(n * sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && before(x[i], s[j - 1])) {
            s[j] = s[j - 1];
            j--;
        }
        s[j] = x[i];
    }
    memcpy(out, s, 8 * sizeof *out);
    free(s);
}

static nx_insn max8_insn(nx_operand dst, nx_operand in) {
    nx_insn insn = nx_insn_make(NX_OP_MAX8);
    insn.op[0] = dst;
    insn.op[1] = in;
    return insn;
}

static void test_max8_random(void **state) {
    (void)state;
    enum { P = 128, N = 1000 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {21};
    static double x[P][N];
    for (int p = 0; p < P; p++) {
        /* Coarse values so duplicates are common. */
        for (int e = 0; e < N; e++) x[p][e] = floor(test_rng_uniform(&r, -500, 500)) / 4;
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, x[p]);
    }
    nx_insn in = max8_insn(test_ps(NX_DT_FP32, 0, P, 0, 8), test_sb(NX_DT_FP32, 0, P, 0, N));
    test_run_ok(&st, NX_ENG_DVE, &in);
    for (int p = 0; p < P; p++) {
        double got[8], want[8];
        test_psum_get(&st, 0, NX_DT_FP32, p, 0, 8, got);
        ref_top8(x[p], N, want);
        test_assert_values(got, want, 8);
    }
    nx_state_free(&st);
}

static void test_max8_duplicates_nan_inf(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double a[10] = {3, 7, 7, -INFINITY, INFINITY, NAN, 7, 1, 0, NAN};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 10, a);
    nx_insn in = max8_insn(test_sb(NX_DT_FP32, 0, 1, 64, 8), test_sb(NX_DT_FP32, 0, 1, 0, 10));
    test_run_ok(&st, NX_ENG_DVE, &in);
    double got[8];
    const double want[8] = {NAN, NAN, INFINITY, 7, 7, 7, 3, 1};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 64, 8, got);
    test_assert_values(got, want, 8);
    /* Exactly 8 inputs, all equal, int32 in/out; dst aliases in. */
    const double b[8] = {-5, -5, -5, -5, -5, -5, -5, -5};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 128, 8, b);
    in = max8_insn(test_sb(NX_DT_INT32, 0, 1, 128, 8), test_sb(NX_DT_INT32, 0, 1, 128, 8));
    test_run_ok(&st, NX_ENG_DVE, &in);
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 128, 8, got);
    test_assert_values(got, b, 8);
    /* Reversed view (negative stride) of an ascending row: same top 8. */
    double asc[20];
    for (int i = 0; i < 20; i++) asc[i] = i;
    test_sbuf_put(&st, 0, NX_DT_BF16, 0, 256, 20, asc);
    int32_t s = -1;
    uint32_t c = 20;
    in = max8_insn(test_sb(NX_DT_FP32, 0, 1, 320, 8),
                   nx_ap(NX_OPK_SBUF, NX_DT_BF16, 0, 1, 0, 256 + 19 * 2, 1, &s, &c));
    test_run_ok(&st, NX_ENG_DVE, &in);
    const double want2[8] = {19, 18, 17, 16, 15, 14, 13, 12};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 320, 8, got);
    test_assert_values(got, want2, 8);
    nx_state_free(&st);
}

static void test_max8_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    nx_insn in = max8_insn(test_sb(NX_DT_FP32, 0, 4, 0, 8), test_sb(NX_DT_FP32, 0, 4, 64, 7));
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 7 elements per partition, max8 takes 8..16384");
    in.op[1] = test_sb(NX_DT_FP32, 0, 4, 64, 16385);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 16385 elements per partition, max8 takes 8..16384");
    in.op[1] = test_sb(NX_DT_FP32, 0, 4, 64, 16384);
    test_run_ok(&st, NX_ENG_DVE, &in);
    in.op[0] = test_sb(NX_DT_FP32, 0, 4, 0, 9);
    test_run_fails(&st, NX_ENG_DVE, &in, "dst has 9 elements per partition, max8 writes 8");
    in.op[0] = test_sb(NX_DT_FP32, 0, 2, 0, 8);
    test_run_fails(&st, NX_ENG_DVE, &in, "in has 4 partitions, dst has 2");
    /* A machine that allows fewer than 8 inputs: the rest is -Inf. */
    st.geo.max8_min_elems = 2;
    const double v[3] = {1, 5, 2};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 3, v);
    in = max8_insn(test_sb(NX_DT_FP32, 0, 1, 0, 8), test_sb(NX_DT_FP32, 0, 1, 64, 3));
    test_run_ok(&st, NX_ENG_DVE, &in);
    double got[8];
    const double want[8] = {5, 2, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 0, 8, got);
    test_assert_values(got, want, 8);
    nx_state_free(&st);
}

/* ---- find_index8 ---- */

static nx_insn find_insn(nx_operand dst, nx_operand in, nx_operand values) {
    nx_insn insn = nx_insn_make(NX_OP_FIND_INDEX8);
    insn.op[0] = dst;
    insn.op[1] = in;
    insn.op[2] = values;
    return insn;
}

/* max8 then find_index8 on random rows of few distinct values (so the top 8
 * hold ties): each index is the first position of that value not taken by
 * an earlier one, i.e. tied values get successive occurrences in ascending
 * order (checked by a scan here). */
static void test_find_index8_after_max8(void **state) {
    (void)state;
    enum { P = 64, N = 300 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {5};
    static double x[P][N];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) x[p][e] = floor(test_rng_uniform(&r, 0, 100));
        test_sbuf_put(&st, 0, NX_DT_FP32, 64 + p, 0, N, x[p]);
    }
    nx_insn m = max8_insn(test_sb(NX_DT_FP32, 64, P, 2048, 8), test_sb(NX_DT_FP32, 64, P, 0, N));
    test_run_ok(&st, NX_ENG_DVE, &m);
    nx_insn f = find_insn(test_ps(NX_DT_UINT32, 64, P, 0, 8), test_sb(NX_DT_FP32, 64, P, 0, N),
                          test_sb(NX_DT_FP32, 64, P, 2048, 8));
    test_run_ok(&st, NX_ENG_DVE, &f);
    for (int p = 0; p < P; p++) {
        double vals[8], idx[8];
        test_sbuf_get(&st, 0, NX_DT_FP32, 64 + p, 2048, 8, vals);
        test_psum_get(&st, 0, NX_DT_UINT32, 64 + p, 0, 8, idx);
        int taken[8];
        for (int j = 0; j < 8; j++) {
            int first = -1;
            for (int e = 0; e < N && first < 0; e++) {
                int seen = 0;
                for (int t = 0; t < j; t++) seen |= taken[t] == e;
                if (x[p][e] == vals[j] && !seen) first = e;
            }
            assert_true(first >= 0);
            assert_int_equal((int)idx[j], first);
            taken[j] = first;
        }
    }
    nx_state_free(&st);
}

static void test_find_index8_special(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double in[6] = {4, -0.0, NAN, 9, 4, INFINITY};
    const double vals[8] = {4, 0.0, NAN, 9, 5, INFINITY, -INFINITY, -0.0};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 6, in);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 8, vals);
    nx_insn f = find_insn(test_sb(NX_DT_UINT32, 0, 1, 128, 8), test_sb(NX_DT_FP32, 0, 1, 0, 6),
                          test_sb(NX_DT_FP32, 0, 1, 64, 8));
    test_run_ok(&st, NX_ENG_DVE, &f);
    double got[8];
    /* -0.0 (j = 7) equals +0.0 (j = 1), which already took element 1: as a
     * duplicate it needs another zero, and there is none. */
    const double wu[8] = {0, 1, 2, 3, 4294967295.0, 5, 4294967295.0, 4294967295.0};
    test_sbuf_get(&st, 0, NX_DT_UINT32, 0, 128, 8, got);
    test_assert_values(got, wu, 8);
    f.op[0] = test_sb(NX_DT_INT32, 0, 1, 128, 8);
    test_run_ok(&st, NX_ENG_DVE, &f);
    const double wi[8] = {0, 1, 2, 3, -1, 5, -1, -1};
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 128, 8, got);
    test_assert_values(got, wi, 8);
    /* Exact comparison of engine values: int32 2^24+1 is not 2^24. */
    const double big[2] = {16777216.0, 16777217.0};
    const double bv[8] = {16777217.0, 16777216.0, 0, 0, 0, 0, 0, 0};
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 256, 2, big);
    test_sbuf_put(&st, 0, NX_DT_INT32, 0, 320, 8, bv);
    f = find_insn(test_sb(NX_DT_INT32, 0, 1, 384, 8), test_sb(NX_DT_INT32, 0, 1, 256, 2),
                  test_sb(NX_DT_INT32, 0, 1, 320, 8));
    test_run_ok(&st, NX_ENG_DVE, &f);
    const double wb[8] = {1, 0, -1, -1, -1, -1, -1, -1};
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 384, 8, got);
    test_assert_values(got, wb, 8);
    /* Errors. */
    f.op[0] = test_sb(NX_DT_FP32, 0, 1, 384, 8);
    test_run_fails(&st, NX_ENG_DVE, &f, "dst dtype is fp32, find_index8 writes int32 or uint32");
    f.op[0] = test_sb(NX_DT_INT32, 0, 1, 384, 7);
    test_run_fails(&st, NX_ENG_DVE, &f, "dst has 7 elements per partition, find_index8 writes 8");
    f.op[0] = test_sb(NX_DT_INT32, 0, 1, 384, 8);
    f.op[2] = test_sb(NX_DT_INT32, 0, 1, 320, 4);
    test_run_fails(&st, NX_ENG_DVE, &f, "values has 4 elements per partition, find_index8 takes 8");
    f.op[2] = test_sb(NX_DT_INT32, 0, 2, 320, 8);
    test_run_fails(&st, NX_ENG_DVE, &f, "values has 2 partitions, dst has 1");
    f.op[2] = test_sb(NX_DT_INT32, 0, 1, 320, 8);
    f.op[1] = test_sb(NX_DT_INT32, 0, 2, 256, 2);
    test_run_fails(&st, NX_ENG_DVE, &f, "in has 2 partitions, dst has 1");
    nx_state_free(&st);
}

/* ---- match_replace8 ---- */

static nx_insn mr_insn(nx_operand dst, nx_operand in, nx_operand values, double repl,
                       const nx_operand *indices) {
    nx_insn insn = nx_insn_make(NX_OP_MATCH_REPLACE8);
    insn.op[0] = dst;
    insn.op[1] = in;
    insn.op[2] = values;
    insn.op[3] = nx_imm(repl, NX_DT_FP32);
    if (indices) insn.op[4] = *indices;
    return insn;
}

static void test_match_replace8_duplicates(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    /* values are taken j = 7 .. 0: 7 three times replaces successive
     * occurrences, the first one going to the highest j (5, then 1, then 0);
     * 2 twice but only one 2 in the row (j = 3 gets it, j = 2 none); 99
     * absent; -0 matches 0; NaN matches NaN. */
    const double in[10] = {7, 2, 7, 5, 7, 7, -0.0, NAN, 1, 3};
    const double vals[8] = {7, 7, 2, 2, 99, 7, 0.0, NAN};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 10, in);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 8, vals);
    nx_operand idx = test_sb(NX_DT_INT32, 0, 1, 128, 8);
    nx_insn m = mr_insn(test_sb(NX_DT_FP32, 0, 1, 192, 10), test_sb(NX_DT_FP32, 0, 1, 0, 10),
                        test_sb(NX_DT_FP32, 0, 1, 64, 8), -INFINITY, &idx);
    test_run_ok(&st, NX_ENG_DVE, &m);
    double got[10];
    const double wd[10] = {-INFINITY, -INFINITY, -INFINITY, 5,         -INFINITY,
                           7,         -INFINITY, -INFINITY, 1,         3};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 192, 10, got);
    test_assert_values(got, wd, 10);
    const double wi[8] = {4, 2, -1, 1, -1, 0, 6, 7};
    test_sbuf_get(&st, 0, NX_DT_INT32, 0, 128, 8, got);
    test_assert_values(got, wi, 8);
    /* uint32 indices, dst aliases in, replacement equal to a searched value:
     * the 1 replaced by 4 (j = 4) is not matched by the 4 of j = 0. */
    const double in2[9] = {4, 1, 4, 0, 0, 0, 0, 0, 0};
    const double v2[8] = {4, 4, 4, 1, 1, 8, 8, 8};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 256, 9, in2);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 320, 8, v2);
    idx = test_ps(NX_DT_UINT32, 0, 1, 0, 8);
    m = mr_insn(test_sb(NX_DT_FP32, 0, 1, 256, 9), test_sb(NX_DT_FP32, 0, 1, 256, 9),
                test_sb(NX_DT_FP32, 0, 1, 320, 8), 4.0, &idx);
    test_run_ok(&st, NX_ENG_DVE, &m);
    const double wd2[9] = {4, 4, 4, 0, 0, 0, 0, 0, 0};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 256, 9, got);
    test_assert_values(got, wd2, 9);
    const double wi2[8] = {4294967295.0, 2, 0, 4294967295.0, 1, 4294967295.0, 4294967295.0,
                           4294967295.0};
    test_psum_get(&st, 0, NX_DT_UINT32, 0, 0, 8, got);
    test_assert_values(got, wi2, 8);
    nx_state_free(&st);
}

/* The example of the NKI nc_match_replace8 documentation: data
 * [1,2,3,4,8,8,8,8,8,8,8], vals [3,8,8,8,8,8,8,8] gives the indices
 * [2,10,9,8,7,6,5,4] (vals taken in reverse order), while find_index8 on the
 * same operands pairs the duplicates in ascending order, [2,4,5,..,10]. */
static void test_match_replace8_nki_example(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    const double data[11] = {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8};
    const double vals[8] = {3, 8, 8, 8, 8, 8, 8, 8};
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 0, 11, data);
    test_sbuf_put(&st, 0, NX_DT_FP32, 0, 64, 8, vals);
    nx_operand idx = test_sb(NX_DT_UINT32, 0, 1, 128, 8);
    nx_insn m = mr_insn(test_sb(NX_DT_FP32, 0, 1, 192, 11), test_sb(NX_DT_FP32, 0, 1, 0, 11),
                        test_sb(NX_DT_FP32, 0, 1, 64, 8), 0.0, &idx);
    test_run_ok(&st, NX_ENG_DVE, &m);
    double got[11];
    const double wi[8] = {2, 10, 9, 8, 7, 6, 5, 4};
    test_sbuf_get(&st, 0, NX_DT_UINT32, 0, 128, 8, got);
    test_assert_values(got, wi, 8);
    const double wd[11] = {1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0};
    test_sbuf_get(&st, 0, NX_DT_FP32, 0, 192, 11, got);
    test_assert_values(got, wd, 11);
    nx_insn f = nx_insn_make(NX_OP_FIND_INDEX8);
    f.op[0] = test_sb(NX_DT_UINT32, 0, 1, 256, 8);
    f.op[1] = test_sb(NX_DT_FP32, 0, 1, 0, 11);
    f.op[2] = test_sb(NX_DT_FP32, 0, 1, 64, 8);
    test_run_ok(&st, NX_ENG_DVE, &f);
    const double wf[8] = {2, 4, 5, 6, 7, 8, 9, 10};
    test_sbuf_get(&st, 0, NX_DT_UINT32, 0, 256, 8, got);
    test_assert_values(got, wf, 8);
    nx_state_free(&st);
}

/* The scanning top-k loop: max8 + match_replace8(-inf) twice gives the top
 * 16 and their indices, checked against a reference scan. Within one round,
 * equal values come back with their indices in descending order (the
 * reverse order of match_replace8); a kernel that wants ascending ties
 * reverses each run of equal values. */
static void test_topk_scanning_loop(void **state) {
    (void)state;
    enum { P = 32, N = 200 };
    nx_state st;
    test_state(&st, 1, 4096, 1);
    test_rng r = {99};
    static double x[P][N];
    for (int p = 0; p < P; p++) {
        for (int e = 0; e < N; e++) x[p][e] = floor(test_rng_uniform(&r, 0, 60));
        test_sbuf_put(&st, 0, NX_DT_FP32, p, 0, N, x[p]);
    }
    for (int round = 0; round < 2; round++) {
        nx_insn m = max8_insn(test_sb(NX_DT_FP32, 0, P, 1024 + 32 * round, 8),
                              test_sb(NX_DT_FP32, 0, P, 0, N));
        test_run_ok(&st, NX_ENG_DVE, &m);
        nx_operand idx = test_sb(NX_DT_UINT32, 0, P, 1280 + 32 * round, 8);
        nx_insn mr = mr_insn(test_sb(NX_DT_FP32, 0, P, 0, N), test_sb(NX_DT_FP32, 0, P, 0, N),
                             test_sb(NX_DT_FP32, 0, P, 1024 + 32 * round, 8), -INFINITY, &idx);
        test_run_ok(&st, NX_ENG_DVE, &mr);
    }
    for (int p = 0; p < P; p++) {
        double vals[16], idx[16];
        test_sbuf_get(&st, 0, NX_DT_FP32, p, 1024, 16, vals);
        test_sbuf_get(&st, 0, NX_DT_UINT32, p, 1280, 16, idx);
        /* Reference: repeatedly take the first maximum of what is left. */
        int used[N] = {0}, want[16];
        for (int k = 0; k < 16; k++) {
            int best = -1;
            for (int e = 0; e < N; e++)
                if (!used[e] && (best < 0 || x[p][e] > x[p][best])) best = e;
            used[best] = 1;
            want[k] = best;
        }
        /* Reverse every run of equal values inside each round of 8. */
        for (int k0 = 0; k0 < 16;) {
            int k1 = k0 + 1;
            while (k1 < 16 && k1 % 8 != 0 && x[p][want[k1]] == x[p][want[k0]]) k1++;
            for (int a = k0, b = k1 - 1; a < b; a++, b--) {
                int t = want[a];
                want[a] = want[b];
                want[b] = t;
            }
            k0 = k1;
        }
        for (int k = 0; k < 16; k++)
            if (vals[k] != x[p][want[k]] || (int)idx[k] != want[k])
                fail_msg("partition %d rank %d: got %g@%d, want %g@%d", p, k, vals[k],
                         (int)idx[k], x[p][want[k]], want[k]);
    }
    nx_state_free(&st);
}

static void test_match_replace8_errors(void **state) {
    (void)state;
    nx_state st;
    test_state(&st, 1, 4096, 1);
    nx_operand idx = test_sb(NX_DT_FP32, 0, 4, 128, 8);
    nx_insn m = mr_insn(test_sb(NX_DT_FP32, 0, 4, 192, 10), test_sb(NX_DT_FP32, 0, 4, 0, 10),
                        test_sb(NX_DT_FP32, 0, 4, 64, 8), 0.0, &idx);
    test_run_fails(&st, NX_ENG_DVE, &m, "indices dtype is fp32, match_replace8 writes int32 or uint32");
    m.op[4] = test_sb(NX_DT_INT32, 0, 4, 128, 9);
    test_run_fails(&st, NX_ENG_DVE, &m, "indices has 9 elements per partition, match_replace8 needs 8");
    m.op[4] = test_sb(NX_DT_INT32, 0, 1, 128, 8);
    test_run_fails(&st, NX_ENG_DVE, &m, "indices has 1 partitions, dst has 4");
    m.op[4] = (nx_operand){0};
    m.op[2] = test_sb(NX_DT_FP32, 0, 4, 64, 7);
    test_run_fails(&st, NX_ENG_DVE, &m, "values has 7 elements per partition, match_replace8 needs 8");
    m.op[2] = test_sb(NX_DT_FP32, 0, 4, 64, 8);
    m.op[1] = test_sb(NX_DT_FP32, 0, 4, 0, 11);
    test_run_fails(&st, NX_ENG_DVE, &m, "in has 11 elements per partition, dst has 10");
    m.op[1] = test_sb(NX_DT_FP32, 0, 4, 0, 10);
    test_run_ok(&st, NX_ENG_DVE, &m);
    nx_state_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max8_random),
        cmocka_unit_test(test_max8_duplicates_nan_inf),
        cmocka_unit_test(test_max8_errors),
        cmocka_unit_test(test_find_index8_after_max8),
        cmocka_unit_test(test_find_index8_special),
        cmocka_unit_test(test_match_replace8_duplicates),
        cmocka_unit_test(test_match_replace8_nki_example),
        cmocka_unit_test(test_topk_scanning_loop),
        cmocka_unit_test(test_match_replace8_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
