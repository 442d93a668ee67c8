/* The `topk` composite (registry/topk_composite.h) through the run path
 * (nx_run_op): every method and AUTO, the last axis and others (the
 * transposes around the leaf), on the functional executor and the SystemC
 * model with the race detector, checked against nx_ref_topk by the rules'
 * reference; the rules' results, refusals and the dispatch line. */
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
#include "registry/run/run.h"
#include "support.h"
#include "topk_check.h"

static void set_attr(nx_macro_op *op, const char *name, const char *json) {
    nx_error err;
    nx_value v;
    if (nx_value_parse(name, json, &v, &err) != 0 || nx_attrs_set(&op->attrs, name, &v, &err) != 0)
        fail_msg("%s: %s", name, err.msg);
}

/* op topk on x of dtype/shape with attrs "name=JSON;..." and its results */
static void make_op(nx_macro_op *op, nx_dtype dt, uint32_t nd, const uint64_t *shape, const char *attrs) {
    nx_error err;
    nx_macro_op_init(op);
    assert_int_equal(nx_macro_op_set_func_name(op, "topk", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(op, "x", dt, nd, shape, &err), 0);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", attrs);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        set_attr(op, tok, eq + 1);
    }
    const nx_kernel_target *t = NULL;
    (void)t;
    const nx_composite *c = nx_composite_get(NULL, "topk");
    assert_non_null(c);
    if (nx_op_rules_apply_results(c->rules, "topk", NULL, op, &err) != 0) fail_msg("results: %s", err.msg);
}

static void run_case(nx_dtype dt, uint32_t nd, const uint64_t *shape, const char *attrs, topk_data kind, int model) {
    nx_machine m = test_machine("trn2");
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    nx_macro_op op;
    make_op(&op, dt, nd, shape, attrs);
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd; d++) n *= shape[d];
    uint8_t *x = malloc(n * nx_dtype_size(dt));
    topk_fill(x, dt, n, kind, n + nd);
    const void *inputs[1] = {x};
    nx_error err;
    nx_run_result res;
    nx_run_options opt = {.backend = model ? NX_RUN_MODEL : NX_RUN_FUNCTIONAL, .race_check = model, .check = 1};
    if (nx_run_op(L, &m, &op, inputs, &opt, &res, &err) != 0) fail_msg("topk {%s}: %s", attrs, err.msg);
    if (test_kcheck_program(res.prog, &err) != 0) fail_msg("topk {%s}: order check: %s", attrs, err.msg);
    if (res.check_failures)
        fail_msg("topk {%s} %s: %u results differ from nx_ref_topk (first at %llu)", attrs, nx_dtype_name(dt),
                 res.check_failures, (unsigned long long)res.check[res.check[0].bad ? 0 : 1].first_bad);
    assert_int_equal(res.grid, 2);
    nx_run_result_free(&res);
    nx_macro_op_free(&op);
    nx_lowerer_free(L);
    free(x);
}

static void test_axes(void **state) {
    (void)state;
    static const uint64_t s3[3] = {3, 50, 7}, s1[1] = {40}, s4[4] = {2, 3, 33, 5};
    run_case(NX_DT_FP32, 3, s3, "k=9;axis=1;method=\"SCANNING\"", TOPK_SPECIAL, 1);
    run_case(NX_DT_FP32, 3, s3, "k=9;axis=1;method=\"CASCADED\"", TOPK_TIES, 1);
    run_case(NX_DT_BF16, 3, s3, "k=3;axis=0;method=\"ROTATIONAL\";largest=false", TOPK_RANDOM, 1);
    run_case(NX_DT_FP16, 3, s3, "k=7;axis=-1", TOPK_SPECIAL, 1);
    run_case(NX_DT_FP32, 1, s1, "k=40", TOPK_EQUAL, 1);
    run_case(NX_DT_FP8_E5M2, 4, s4, "k=8;axis=2;largest=0", TOPK_SPECIAL, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_axes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
