/* The run path (registry/run/run.h): nx_run_op on the registry's transposes
 * (the model and the functional executor give the same bytes, which equal a
 * transpose written here; --check and the race check pass), on the test
 * composites of tests/fixture_kernels.h (the racy copy is reported with its
 * exact race line; the synchronised one is clean), a failed check that is
 * not an error, and every refusal with its stage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture_kernels.h"
#include "registry/families/families.h"
#include "registry/run/run.h"
#include "support.h"

static nx_machine trn2(void) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    return m;
}

/* `given` prepared through L (registry/prepare.h). */
static void prepare(nx_lowerer *L, const nx_macro_op *given, nx_prepared *p) {
    nx_error err;
    if (nx_op_prepare(L, given, NULL, p, &err) != 0) fail_msg("%s", err.msg);
}

/* The default op of `key` through L, its results by the rule. */
static void default_op(nx_lowerer *L, const char *key, nx_prepared *p) {
    nx_error err;
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, key, &err), 0);
    prepare(L, &given, p);
    nx_macro_op_free(&given);
}

static void test_transposes_on_both_backends(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    static const char *const keys[] = {"tiled_pf_transpose", "tiled_dve_transpose_10"};
    for (int k = 0; k < 2; k++) {
        nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
        nx_prepared op;
        default_op(L, keys[k], &op);
        nx_run_options opt = {.backend = NX_RUN_MODEL, .race_check = 1, .check = 1, .seed = 3};
        nx_run_result model, func;
        if (nx_run_op(L, &m, &op, NULL, &opt, &model, &err) != 0) fail_msg("%s", err.msg);
        assert_ptr_equal(model.target.rules, &nx_rules_transpose);
        assert_non_null(model.target.entry);
        assert_int_equal(model.grid, 2);
        assert_int_equal(model.new_traces, 1);
        assert_true(model.trace.on_model);
        assert_true(model.trace.race_checked);
        assert_true(model.trace.sim.log_count > 0);
        assert_true(model.trace.sim.total_ns > 0);
        assert_true(model.checked);
        assert_int_equal(model.check_failures, 0);
        assert_string_equal(model.tolerance[0].text, "exact");
        /* the same op on the functional executor: a cache hit, the same bytes */
        opt = (nx_run_options){.backend = NX_RUN_FUNCTIONAL, .check = 1, .seed = 3};
        if (nx_run_op(L, &m, &op, NULL, &opt, &func, &err) != 0) fail_msg("%s", err.msg);
        assert_false(func.trace.on_model);
        assert_int_equal(func.new_traces, 1);
        assert_int_equal(func.cache_hits, 1);
        assert_ptr_equal(func.prog, model.prog);
        assert_memory_equal(func.results[0], model.results[0], 512 * 384 * 4);
        nx_run_result_free(&func);
        /* and traced on one core instead of the grid (opt.grid): a new trace */
        opt.grid = 1;
        if (nx_run_op(L, &m, &op, NULL, &opt, &func, &err) != 0) fail_msg("%s", err.msg);
        assert_int_equal(func.grid, 1);
        assert_int_equal(func.prog->cores, 1);
        assert_int_equal(func.new_traces, 2);
        assert_memory_equal(func.results[0], model.results[0], 512 * 384 * 4);
        nx_run_result_free(&func);
        nx_run_result_free(&model);
        nx_lowerer_free(L);
        nx_prepared_free(&op);
    }
}

/* Given operand bytes: the result is their transpose, element by element. */
static void test_given_inputs(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "tiled_dve_transpose_10", &err), 0);
    uint64_t shape[2] = {37, 130};
    assert_int_equal(nx_macro_op_add_operand(&given, "x", NX_DT_INT32, 2, shape, &err), 0);
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    nx_prepared op;
    prepare(L, &given, &op);
    nx_macro_op_free(&given);
    int32_t *x = malloc(37 * 130 * sizeof *x);
    for (int i = 0; i < 37 * 130; i++) x[i] = i * 7 - 1000;
    const void *inputs[1] = {x};
    nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL};
    nx_run_result res;
    if (nx_run_op(L, &m, &op, inputs, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
    const int32_t *y = (const int32_t *)res.results[0];
    for (int r = 0; r < 37; r++)
        for (int c = 0; c < 130; c++) assert_int_equal(y[c * 37 + r], x[r * 130 + c]);
    assert_false(res.checked);
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    free(x);
    nx_prepared_free(&op);
}

static void test_race_check_on_test_composites(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, &fixture_composites);
    nx_run_result res;
    nx_prepared op;
    default_op(L, "racy_copy", &op);
    /* Without the race check, the racy copy's values are right. */
    nx_run_options opt = {.backend = NX_RUN_MODEL, .check = 1};
    if (nx_run_op(L, &m, &op, NULL, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_ptr_equal(res.target.composite, &fixture_composites.items[1]);
    assert_null(res.target.entry);
    assert_int_equal(res.check_failures, 0);
    nx_run_result_free(&res);
    /* With it, the run fails with the race. */
    opt.race_check = 1;
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_RACE);
    assert_string_equal(err.msg, "racy_copy: race: core 0 sp #0 (dma_copy) on queue 0 writes hbm@[128, 256) "
                                 "and core 0 sp #1 (dma_copy) on queue 1 writes hbm@[128, 256) with no "
                                 "semaphore ordering them");
    nx_run_result_free(&res);
    nx_prepared_free(&op);
    /* The synchronised copy is clean on its two-core grid. */
    default_op(L, "synced_copy", &op);
    if (nx_run_op(L, &m, &op, NULL, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res.grid, 2);
    assert_true(res.trace.race_checked);
    assert_int_equal(res.check_failures, 0);
    nx_run_result_free(&res);
    nx_prepared_free(&op);
    nx_lowerer_free(L);
}

/* An aliased result (XLA's input_output_alias): one program tensor for
 * the operand and the result; the run returns the result whole (the
 * operand's bytes plus the kernel's writes) on both backends, the caller's
 * bytes untouched; the race check sees the shared tensor. */
static void test_aliased_result(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, &fixture_composites);
    nx_prepared op;
    default_op(L, "inplace_bump", &op);
    assert_int_equal(op.op.results[0].alias, 1);
    float x[32], keep[32];
    for (int i = 0; i < 32; i++) keep[i] = x[i] = (float)i * 0.5f - 3.0f;
    const void *inputs[1] = {x};
    nx_run_result res[2];
    for (int b = 0; b < 2; b++) {
        nx_run_options opt = {.backend = b ? NX_RUN_FUNCTIONAL : NX_RUN_MODEL, .race_check = !b, .check = 1};
        if (nx_run_op(L, &m, &op, inputs, &opt, &res[b], &err) != 0) fail_msg("%s", err.msg);
        assert_int_equal(res[b].prog->tensor_count, 1); /* one tensor for both */
        assert_int_equal(res[b].result_tensor[0], res[b].operand_tensor[0]);
        assert_int_equal(res[b].check_failures, 0);
        const float *y = (const float *)res[b].results[0];
        for (int i = 0; i < 32; i++) assert_true(y[i] == x[i] + (i < 8 ? 1.0f : 0.0f));
    }
    assert_true(res[0].trace.race_checked);
    assert_memory_equal(res[0].results[0], res[1].results[0], sizeof x);
    assert_memory_equal(x, keep, sizeof x); /* the caller's input: only read */
    for (int b = 0; b < 2; b++) nx_run_result_free(&res[b]);
    /* a second run of the cached program starts from the operand again */
    nx_run_options fopt = {.backend = NX_RUN_FUNCTIONAL};
    if (nx_run_op(L, &m, &op, inputs, &fopt, &res[0], &err) != 0) fail_msg("%s", err.msg);
    assert_true(((const float *)res[0].results[0])[0] == x[0] + 1.0f);
    assert_int_equal(res[0].cache_hits, 2);
    nx_run_result_free(&res[0]);
    nx_prepared_free(&op);

    /* the racy one: right values, but its read and write of the shared
     * tensor race */
    default_op(L, "racy_inplace", &op);
    nx_run_options opt = {.backend = NX_RUN_MODEL, .check = 1};
    if (nx_run_op(L, &m, &op, inputs, &opt, &res[0], &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res[0].check_failures, 0);
    nx_run_result_free(&res[0]);
    opt.race_check = 1;
    assert_int_equal(nx_run_op(L, &m, &op, inputs, &opt, &res[0], &err), -1);
    assert_int_equal(res[0].failure, NX_RUN_RACE);
    assert_non_null(strstr(err.msg, "hbm@[0, 32)"));
    nx_run_result_free(&res[0]);
    nx_prepared_free(&op);

    /* an alias to an operand of another shape is refused by the op check */
    nx_macro_op bad;
    nx_macro_op_init(&bad);
    static const uint64_t s1[2] = {4, 8}, s2[2] = {8, 4};
    assert_int_equal(nx_macro_op_set_func_name(&bad, "inplace_bump", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&bad, "x", NX_DT_FP32, 2, s1, &err), 0);
    assert_int_equal(nx_macro_op_add_result(&bad, "y", NX_DT_FP32, 2, s2, &err), 0);
    bad.results[0].alias = 1;
    assert_int_equal(nx_macro_op_check(&bad, &err), -1);
    assert_string_equal(err.msg, "result 0 (y) fp32[8,4] aliases operand 0 (x) fp32[4,8]: an aliased pair has one dtype and shape");
    nx_macro_op_free(&bad);
    nx_lowerer_free(L);
}

/* A reference that disagrees: the run succeeds, the check says how. */
static int off_by_one(const nx_macro_op *op, const void *const *inputs, void *const *outputs, nx_error *err) {
    (void)err;
    uint64_t n = op->operands[0].shape[0] * op->operands[0].shape[1];
    for (uint64_t i = 0; i < n; i++) ((float *)outputs[0])[i] = ((const float *)inputs[0])[i] + (i == 5);
    return 0;
}

static void test_failed_check_is_not_an_error(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    nx_op_rules wrong = *fixture_composites.items[0].rules;
    wrong.reference = off_by_one;
    wrong.reference_name = "off_by_one";
    nx_composite c = fixture_composites.items[0];
    c.name = "wrong_ref";
    c.rules = &wrong;
    nx_composite_table t = {&c, 1};
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, &t);
    nx_prepared op;
    default_op(L, "wrong_ref", &op);
    nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL, .check = 1};
    nx_run_result res;
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), 0);
    assert_int_equal(res.check_failures, 1);
    assert_int_equal(res.check[0].bad, 1);
    assert_int_equal(res.check[0].first_bad, 5);
    assert_true(res.check[0].max_abs == 1.0);
    nx_run_result_free(&res);

    /* No reference: --check is refused before anything is traced (a target
     * without rules, as a composite has until its family gets them). */
    op.target.rules = NULL;
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_BAD_INPUT);
    assert_string_equal(err.msg, "wrong_ref: no reference implementation to check against yet");
    assert_int_equal(nx_lowerer_new_traces(L), 1);
    nx_run_result_free(&res);
    nx_prepared_free(&op);
    nx_lowerer_free(L);
}

static void test_refusals(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    nx_run_result res;
    nx_macro_op given;
    nx_prepared op;
    nx_run_options opt = {.backend = NX_RUN_MODEL};
    /* a miss: the registry's text, verbatim, from the one lookup */
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "NoSuchKernel", &err), 0);
    assert_int_equal(nx_op_prepare(L, &given, NULL, &op, &err), -1);
    assert_int_equal(op.failed, NX_PREPARE_MISS);
    assert_string_equal(err.msg, "Internal NKI kernel 'NoSuchKernel' is not registered. Available kernels: "
                                 "dict_keys(['SelectAndScatter', 'ResizeNearest', "
                                 "'Conv2d_pbp_0f1b_0i1o_01fb_experimental_1', 'Conv2d_pbp_fb01_io01_01bf_experimental_1', "
                                 "'Conv2d_dw_fb01_io01_01bf_rep_nhwc_Pcinh', 'Conv1d_depthwise_bf01_oi01_bf01', "
                                 "'conv2d_column_packing', 'conv2d_column_packing_io10', 'conv2d_column_packing_1', 'blockwise_mm', "
                                 "'conv2d_depthwise_f01b_o01i_bf01', 'tiled_pf_transpose', 'tiled_dve_transpose_10'])");
    nx_prepared_free(&op);
    nx_macro_op_free(&given);
    /* a leaf's refusal, unchanged */
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "tiled_pf_transpose", &err), 0);
    uint64_t s3[3] = {4, 5, 6};
    assert_int_equal(nx_macro_op_add_operand(&given, "x", NX_DT_FP32, 3, s3, &err), 0);
    nx_value v;
    assert_int_equal(nx_value_parse("p", "[1, 0, 2]", &v, &err), 0);
    assert_int_equal(nx_attrs_set(&given.attrs, "permutation", &v, &err), 0);
    prepare(L, &given, &op);
    nx_macro_op_free(&given);
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_BAD_INPUT);
    assert_string_equal(err.msg, "operand 0 (x): permutation [1,0,2] does not reduce to a swap of the last two "
                                 "dim groups (merged: shape [4,5,6], permutation [1,0,2])");
    nx_run_result_free(&res);
    nx_prepared_free(&op);
    /* the functional executor keeps no log */
    default_op(L, "tiled_pf_transpose", &op);
    opt = (nx_run_options){.backend = NX_RUN_FUNCTIONAL, .race_check = 1};
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_BAD_INPUT);
    assert_string_equal(err.msg, "tiled_pf_transpose: the race check needs the SystemC model (the functional "
                                 "executor keeps no log and has no PE datapath)");
    nx_run_result_free(&res);
    nx_prepared_free(&op);
    nx_lowerer_free(L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transposes_on_both_backends),
        cmocka_unit_test(test_given_inputs),
        cmocka_unit_test(test_race_check_on_test_composites),
        cmocka_unit_test(test_aliased_result),
        cmocka_unit_test(test_failed_check_is_not_an_error),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
