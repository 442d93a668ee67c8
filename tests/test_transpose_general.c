/* The `transpose` composite (kernels/transpose/transpose_steps.h) through
 * the run path (nx_op_prepare, nx_run_op): every permutation of rank 3 and
 * 4 on odd sizes, some of rank 5 and 6, the ONNX node tests' shapes, several
 * dtypes, on the functional executor and the SystemC model with the race
 * detector and --check against nx_ref_transpose (exact), the two bit for bit
 * equal; the step plans (which leaf, which dma step); the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kcheck.h"
#include "kernels/transpose/transpose_steps.h"
#include "registry/lower.h"
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "support.h"

/* The op transpose(x) with x [shape] of dt and attribute perm (NULL: absent). */
static int make_op(nx_macro_op *op, nx_dtype dt, uint32_t nd, const uint64_t *shape, const int64_t *perm,
                   uint32_t nperm, nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "transpose", err), 0);
    if (nx_macro_op_add_operand(&given, "data", dt, nd, shape, err) != 0) {
        nx_macro_op_free(&given);
        return -1;
    }
    if (perm) {
        uint64_t u[8];
        for (uint32_t i = 0; i < nperm; i++) u[i] = (uint64_t)perm[i];
        assert_int_equal(nx_attrs_set_int_list(&given.attrs, "perm", u, nperm, err), 0);
    }
    nx_machine m = test_machine("trn2");
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    assert_non_null(L);
    nx_prepared p;
    int rc = nx_op_prepare(L, &given, NULL, &p, err);
    nx_macro_op_free(&given);
    nx_lowerer_free(L);
    *op = p.op;
    nx_macro_op_init(&p.op);
    nx_prepared_free(&p);
    return rc;
}

/* Runs op on one backend with --check; the result's bytes (malloc'd). */
static uint8_t *run_one(const char *machine, const nx_macro_op *op, const uint8_t *in, int model, const char *what) {
    nx_machine m = test_machine(machine);
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    nx_error err;
    nx_prepared p;
    nx_prepared_init(&p);
    if (nx_prepare_target(L, op->func_name, &p, &err) != 0 || nx_prepare_op(&p, op, NX_PREPARE_AS_GIVEN, NULL, &err) != 0)
        fail_msg("%s: %s", what, err.msg);
    nx_run_result res;
    nx_run_options opt = {.backend = model ? NX_RUN_MODEL : NX_RUN_FUNCTIONAL, .race_check = model, .check = 1};
    const void *ins[1] = {in};
    if (nx_run_op(L, &m, &p, ins, &opt, &res, &err) != 0) fail_msg("%s (%s): %s", what, model ? "model" : "functional", err.msg);
    nx_prepared_free(&p);
    if (test_kcheck_program(res.prog, &err) != 0) fail_msg("%s: order check: %s", what, err.msg);
    if (res.check_failures) fail_msg("%s (%s): differs from nx_ref_transpose at element %llu", what, model ? "model" : "functional",
                                     (unsigned long long)res.check[0].first_bad);
    uint64_t n = 1;
    for (uint32_t d = 0; d < op->results[0].ndims; d++) n *= op->results[0].shape[d];
    n *= nx_dtype_size(op->results[0].dtype);
    uint8_t *out = malloc(n);
    assert_non_null(out);
    memcpy(out, res.results[0], n);
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    return out;
}

/* transpose on both backends (the model only when `model`), checked and equal. */
static void check_perm(nx_dtype dt, uint32_t nd, const uint64_t *shape, const int64_t *perm, int model) {
    nx_macro_op op;
    nx_error err;
    char what[160], sh[64], pm[64];
    snprintf(sh, sizeof sh, "%u dims", nd);
    pm[0] = 0;
    for (uint32_t i = 0; perm && i < nd; i++) snprintf(pm + strlen(pm), sizeof pm - strlen(pm), "%lld,", (long long)perm[i]);
    snprintf(what, sizeof what, "transpose %s %s perm [%s]", nx_dtype_name(dt), sh, perm ? pm : "default");
    if (make_op(&op, dt, nd, shape, perm, nd, &err) != 0) fail_msg("%s: %s", what, err.msg);
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd; d++) n *= shape[d];
    size_t es = nx_dtype_size(dt);
    uint8_t *in = malloc(n * es);
    assert_non_null(in);
    test_rng r = {n * 7919 + nd};
    for (uint64_t e = 0; e < n; e++) nx_dtype_store(dt, in + e * es, test_rng_uniform(&r, -100, 100));
    uint8_t *f = run_one("trn2", &op, in, 0, what);
    if (model) {
        uint8_t *g = run_one("trn2", &op, in, 1, what);
        if (memcmp(f, g, n * es) != 0) fail_msg("%s: the model's bytes differ from the functional executor's", what);
        free(g);
    }
    free(f);
    free(in);
    nx_macro_op_free(&op);
}

/* Permutation number i (0 .. n!-1) of n dims, by its factorial digits. */
static void nth_perm(uint32_t i, uint32_t n, int64_t *out) {
    int64_t left[8];
    for (uint32_t d = 0; d < n; d++) left[d] = d;
    for (uint32_t d = n; d > 0; d--) {
        uint32_t f = 1;
        for (uint32_t j = 2; j < d; j++) f *= j;
        uint32_t pick = i / f;
        i %= f;
        out[n - d] = left[pick];
        for (uint32_t j = pick; j + 1 < d; j++) left[j] = left[j + 1];
    }
}

/* Every permutation of rank 3 (ONNX's test_transpose_all_permutations on
 * [2, 3, 4], and odd sizes) and of rank 4 (odd sizes); the model runs the
 * rank-3 ones and every third rank-4 one. */
static void all_perms(void **state) {
    (void)state;
    static const uint64_t onnx[3] = {2, 3, 4}, odd3[3] = {5, 33, 7}, odd4[4] = {3, 5, 7, 9};
    int64_t p[4];
    for (uint32_t i = 0; i < 6; i++) {
        nth_perm(i, 3, p);
        check_perm(NX_DT_FP32, 3, onnx, p, 1);
        check_perm(NX_DT_BF16, 3, odd3, p, 1);
    }
    for (uint32_t i = 0; i < 24; i++) {
        nth_perm(i, 4, p);
        check_perm(i % 2 ? NX_DT_BF16 : NX_DT_FP32, 4, odd4, p, i % 3 == 0);
    }
    /* the default perm (reversed): ONNX's test_transpose_default */
    check_perm(NX_DT_FP32, 3, onnx, NULL, 1);
}

/* Ranks 5 and 6, size-1 dims, larger tiles (several PE blocks and ragged
 * edges), integer and 1-byte dtypes, negative perm entries. */
static void higher_ranks(void **state) {
    (void)state;
    static const uint64_t s5[5] = {2, 3, 5, 4, 3}, s6[6] = {2, 3, 1, 5, 2, 3};
    static const int64_t p5a[5] = {4, 2, 0, 3, 1}, p5b[5] = {0, 1, 3, 2, 4}, p5c[5] = {1, 0, 4, 3, 2};
    static const int64_t p6a[6] = {5, 4, 3, 2, 1, 0}, p6b[6] = {2, 0, 5, 1, 3, 4}, p6c[6] = {0, 1, 2, 3, 5, 4};
    check_perm(NX_DT_FP32, 5, s5, p5a, 1);
    check_perm(NX_DT_BF16, 5, s5, p5b, 1);
    check_perm(NX_DT_INT32, 5, s5, p5c, 0);
    check_perm(NX_DT_FP32, 6, s6, p6a, 1);
    check_perm(NX_DT_BF16, 6, s6, p6b, 1);
    check_perm(NX_DT_INT8, 6, s6, p6c, 0);
    static const uint64_t big[3] = {3, 300, 260};
    static const int64_t pb[3] = {2, 0, 1}, pneg[3] = {-1, -3, -2};
    check_perm(NX_DT_FP32, 3, big, pb, 1);
    check_perm(NX_DT_BF16, 3, big, pneg, 1);
    /* the PE leaf with few, long output rows: the grid splits the input
     * rows, whole rows packed kp to a partition when they divide evenly
     * (the bench shape; C = 96, kp = 4; C = 64), ragged rows unpacked */
    static const uint64_t bench[3] = {64, 128, 256}, c96[3] = {4, 1024, 96}, c200[3] = {3, 1000, 200};
    static const uint64_t c64[2] = {8192, 64};
    static const int64_t p10[2] = {1, 0};
    check_perm(NX_DT_FP32, 3, bench, pb, 1);
    check_perm(NX_DT_BF16, 3, bench, pb, 1);
    check_perm(NX_DT_FP32, 3, c96, pb, 1);
    check_perm(NX_DT_BF16, 3, c200, pb, 1);
    check_perm(NX_DT_FP32, 2, c64, p10, 1);
    check_perm(NX_DT_INT8, 2, c64, p10, 1);
    static const uint64_t batched[3] = {2, 4096, 64};
    static const int64_t p021[3] = {0, 2, 1};
    check_perm(NX_DT_FP32, 3, batched, p021, 1);
    static const uint64_t one[1] = {1000}, id[3] = {4, 5, 6};
    static const int64_t p1[1] = {0}, pid[3] = {0, 1, 2};
    check_perm(NX_DT_FP32, 1, one, p1, 1);
    check_perm(NX_DT_FP32, 3, id, pid, 1);
}

static void plan_of(uint32_t nd, const uint64_t *shape, uint32_t es, const int64_t *perm, nx_transpose_steps *s) {
    nx_machine m = test_machine("trn2");
    nx_error err;
    if (nx_transpose_steps_plan(&m, 2, nd, shape, es, perm, s, &err) != 0) fail_msg("plan: %s", err.msg);
}

/* The plans: a swap of two groups is one leaf step (the PE one for big
 * matrices, the DVE one for small), a move of outer dims one dma step, the
 * identity one copy, and anything else more steps, each a leaf or dma. */
static void plans(void **state) {
    (void)state;
    nx_transpose_steps s;
    char txt[256];
    static const uint64_t bench[3] = {64, 128, 256};
    static const int64_t p201[3] = {2, 0, 1}, p102[3] = {1, 0, 2}, p012[3] = {0, 1, 2}, p021[3] = {0, 2, 1};
    plan_of(3, bench, 4, p201, &s);
    nx_transpose_steps_text(&s, txt, sizeof txt);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.step[0].kind, NX_TSTEP_LEAF);
    assert_string_equal(s.step[0].leaf_name, "tiled_pf_transpose");
    assert_true(s.step[0].rows == 64 * 128 && s.step[0].cols == 256);
    assert_non_null(strstr(txt, "1 step, est"));
    plan_of(3, bench, 4, p102, &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.step[0].kind, NX_TSTEP_DMA);
    assert_int_equal(s.step[0].run, 256);
    plan_of(3, bench, 4, p012, &s);
    assert_true(s.n == 1 && s.step[0].kind == NX_TSTEP_DMA && s.step[0].ndims == 1);
    static const uint64_t small[3] = {4096, 8, 8};
    plan_of(3, small, 4, p021, &s);
    assert_true(s.n == 1 && s.step[0].kind == NX_TSTEP_LEAF);
    assert_string_equal(s.step[0].leaf_name, "tiled_dve_transpose_10");
    assert_true(s.step[0].batch == 4096 && s.step[0].rows == 8 && s.step[0].cols == 8);
    /* [1,0,2] with 2-element runs: two leaf rotations beat one dma step of 8-byte runs */
    static const uint64_t thin[3] = {64, 128, 2};
    plan_of(3, thin, 4, p102, &s);
    assert_true(s.n >= 2);
    for (uint32_t i = 0; i < s.n; i++) assert_int_equal(s.step[i].kind, NX_TSTEP_LEAF);
    static const uint64_t s6[6] = {2, 3, 4, 5, 6, 7};
    static const int64_t p6[6] = {5, 4, 3, 2, 1, 0};
    plan_of(6, s6, 2, p6, &s);
    assert_true(s.n >= 1 && s.n <= NX_TRANSPOSE_MAX_STEPS);
}

static void refused(nx_dtype dt, uint32_t nd, const uint64_t *shape, const int64_t *perm, uint32_t nperm, const char *want) {
    nx_macro_op op;
    nx_error err;
    if (make_op(&op, dt, nd, shape, perm, nperm, &err) == 0) fail_msg("accepted; wanted: %s", want);
    if (strcmp(err.msg, want) != 0) fail_msg("got '%s', wanted '%s'", err.msg, want);
    assert_null(strchr(err.msg, '\n'));
    nx_macro_op_free(&op);
}

static void refusals(void **state) {
    (void)state;
    static const uint64_t s3[3] = {2, 3, 4}, s7[7] = {2, 2, 2, 2, 2, 2, 2};
    static const int64_t dup[3] = {0, 0, 1}, out[3] = {0, 1, 3}, two[2] = {1, 0};
    refused(NX_DT_FP32, 3, s3, dup, 3, "attribute perm: permutation [0,0,1] is not a permutation of the 3 dims");
    refused(NX_DT_FP32, 3, s3, out, 3, "attribute perm: permutation [0,1,3] is not a permutation of the 3 dims");
    refused(NX_DT_FP32, 3, s3, two, 2, "attribute perm: has 2 entries, the input has 3 dims");
    nx_macro_op op;
    nx_error err;
    assert_int_equal(make_op(&op, NX_DT_FP32, 7, s7, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "7"));
    assert_null(strchr(err.msg, '\n'));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_perms),
        cmocka_unit_test(higher_ranks),
        cmocka_unit_test(plans),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
