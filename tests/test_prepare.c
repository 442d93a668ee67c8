/* The one op-preparation step (registry/prepare.h), against values written
 * here: the default op of the live transpose (fp32 [512, 384], permutation
 * [1, 0], result [384, 512]) and an attribute over it; given operands with
 * their results inferred; and every refusal with its stage and exact text
 * (the unknown attribute reported once, with the op file named when there
 * is one). A prepared op lowers on its target with no second lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry/prepare.h"
#include "support.h"

/* A lowerer on trn2 over the live registry (or the test table of
 * test_refusals), the op as given and the prepared one; freed after each test. */
typedef struct fixture {
    nx_lowerer *L;
    nx_macro_op given;
    nx_prepared p;
} fixture;

static int open_fixture(void **state, const nx_kernel_registry *reg) {
    fixture *f = calloc(1, sizeof *f);
    nx_geometry geo = test_geometry("trn2");
    if (!f || !(f->L = nx_lowerer_new(&geo, reg))) return -1;
    nx_macro_op_init(&f->given);
    nx_prepared_init(&f->p);
    *state = f;
    return 0;
}

static int setup_live(void **state) { return open_fixture(state, NULL); }

static int teardown(void **state) {
    fixture *f = *state;
    nx_prepared_free(&f->p);
    nx_macro_op_free(&f->given);
    nx_lowerer_free(f->L);
    free(f);
    return 0;
}

static void named(nx_macro_op *op, const char *func_name) {
    nx_error err;
    nx_macro_op_init(op);
    assert_int_equal(nx_macro_op_set_func_name(op, func_name, &err), 0);
}

static void set_attr(nx_macro_op *op, const char *name, const char *json) {
    nx_error err;
    nx_value v;
    if (nx_value_parse(name, json, &v, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(nx_attrs_set(&op->attrs, name, &v, &err), 0);
}

static void expect_shape(const nx_op_tensor *t, const char *name, nx_dtype dt, uint64_t d0, uint64_t d1) {
    assert_string_equal(t->name, name);
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->ndims, 2);
    assert_int_equal(t->shape[0], d0);
    assert_int_equal(t->shape[1], d1);
}

/* The permutation attribute's items. */
static void expect_perm(const nx_macro_op *op, int64_t p0, int64_t p1) {
    const nx_value *v = nx_attrs_get(&op->attrs, "permutation");
    assert_non_null(v);
    assert_int_equal(v->kind, NX_VAL_LIST);
    assert_int_equal(v->count, 2);
    assert_int_equal(v->items[0].i, p0);
    assert_int_equal(v->items[1].i, p1);
}

static void test_default_op_and_override(void **state) {
    fixture *f = *state;
    nx_lowerer *L = f->L;
    nx_macro_op *given = &f->given;
    nx_prepared *p = &f->p;
    nx_error err;
    /* no operands: the default op, its result by the rule */
    named(given, "tiled_pf_transpose");
    if (nx_op_prepare(L, given, NULL, p, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(p->failed, NX_PREPARE_OK);
    assert_string_equal(p->target.key, "tiled_pf_transpose");
    assert_non_null(p->target.entry);
    assert_null(p->target.composite);
    assert_string_equal(p->op.func_name, "tiled_pf_transpose");
    assert_int_equal(p->op.n_operands, 1);
    expect_shape(&p->op.operands[0], "in0", NX_DT_FP32, 512, 384);
    assert_int_equal(p->op.attrs.count, 1);
    expect_perm(&p->op, 1, 0);
    assert_int_equal(p->op.n_results, 1);
    expect_shape(&p->op.results[0], "out0", NX_DT_FP32, 384, 512);
    nx_prepared_free(p);
    /* an attribute over the default (as -a does): it replaces the default's
     * value in place and the result follows it */
    set_attr(given, "permutation", "[0, 1]");
    if (nx_op_prepare(L, given, NULL, p, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(p->op.attrs.count, 1);
    expect_perm(&p->op, 0, 1);
    expect_shape(&p->op.results[0], "out0", NX_DT_FP32, 512, 384);
    /* the given op is only read */
    assert_int_equal(given->n_operands, 0);
    assert_int_equal(given->n_results, 0);
    /* it lowers on the target it was prepared for: one program on VNC(2) */
    const nx_program *prog;
    uint32_t grid = 0;
    if (nx_lower(L, &p->target, &p->op, &prog, &grid, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(grid, 2);
    assert_int_equal(nx_lowerer_new_traces(L), 1);
    /* an op file is the whole op: no operands there is no default op */
    nx_prepared_free(p);
    assert_int_equal(nx_prepare_target(L, "tiled_pf_transpose", p, &err), 0);
    assert_int_equal(nx_prepare_op(p, given, NX_PREPARE_AS_GIVEN, "op.json", &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_RESULTS);
    assert_string_equal(err.msg, "tiled_pf_transpose takes one operand, the op has 0");
}

static void test_given_operands_results_inferred(void **state) {
    fixture *f = *state;
    nx_lowerer *L = f->L;
    nx_macro_op *given = &f->given;
    nx_prepared *p = &f->p;
    nx_error err;
    named(given, "tiled_dve_transpose_10");
    uint64_t shape[2] = {37, 130};
    assert_int_equal(nx_macro_op_add_operand(given, "x", NX_DT_BF16, 2, shape, &err), 0);
    if (nx_op_prepare(L, given, NULL, p, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(p->op.n_operands, 1);
    expect_shape(&p->op.operands[0], "x", NX_DT_BF16, 37, 130);
    assert_int_equal(p->op.attrs.count, 0); /* no default attributes with given operands */
    assert_int_equal(p->op.n_results, 1);
    expect_shape(&p->op.results[0], "out0", NX_DT_BF16, 130, 37);
    nx_prepared_free(p);
    /* a declared result keeps its name; a wrong declared shape is refused */
    uint64_t wrong[2] = {37, 130};
    assert_int_equal(nx_macro_op_add_result(given, "y", NX_DT_BF16, 2, wrong, &err), 0);
    assert_int_equal(nx_op_prepare(L, given, "op.json", p, &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_RESULTS);
    assert_string_equal(err.msg, "op.json: result 0 (y) is declared bf16[37,130], but tiled_dve_transpose_10 "
                                 "produces bf16[130,37]");
    assert_int_equal(p->op.n_operands, 0); /* a failed preparation leaves no op */
}

static void test_unknown_attribute_reported_once(void **state) {
    fixture *f = *state;
    nx_lowerer *L = f->L;
    nx_macro_op *given = &f->given;
    nx_prepared *p = &f->p;
    nx_error err;
    named(given, "tiled_pf_transpose");
    set_attr(given, "permutaton", "[1, 0]");
    static const char *const want = "tiled_pf_transpose: unknown attribute 'permutaton' (did you mean "
                                    "'permutation'?); tiled_pf_transpose reads: permutation";
    assert_int_equal(nx_op_prepare(L, given, NULL, p, &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_ATTRS);
    assert_string_equal(err.msg, want);
    nx_prepared_free(p);
    /* from an op file: named once, in front */
    assert_int_equal(nx_op_prepare(L, given, "dir/op.json", p, &err), -1);
    char with_source[512];
    snprintf(with_source, sizeof with_source, "dir/op.json: %s", want);
    assert_string_equal(err.msg, with_source);
    /* checked before the rule reads it: nothing was traced */
    assert_int_equal(nx_lowerer_new_traces(L), 0);
}

/* A test leaf without rules: no default op, no result rule. */
static int leaf_nothing(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    (void)k, (void)call, (void)err;
    return 0;
}
static const nx_leaf nothing_leaf = {"nothing", leaf_nothing};
static const nx_registry_entry bare_entries[] = {
    {.seed_index = 1, .key = "Bare", .family = "test", .config = {&nothing_leaf, NX_OPERANDS_ALL, NULL, false, false}},
};
static const nx_kernel_registry bare_reg = {bare_entries, 1};

static int setup_bare(void **state) { return open_fixture(state, &bare_reg); }

static void test_refusals(void **state) {
    fixture *f = *state;
    nx_lowerer *L = f->L;
    nx_macro_op *given = &f->given;
    nx_prepared *p = &f->p;
    nx_error err;
    named(given, "Nope");
    assert_int_equal(nx_op_prepare(L, given, NULL, p, &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_MISS);
    assert_string_equal(err.msg, "Internal NKI kernel 'Nope' is not registered. Available kernels: "
                                 "dict_keys(['Bare'])");
    nx_prepared_free(p);
    nx_macro_op_free(given);
    nx_macro_op_init(given);
    assert_int_equal(nx_op_prepare(L, given, NULL, p, &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_MISS);
    assert_string_equal(err.msg, "the op has no func_name");
    nx_prepared_free(p);
    /* the two steps apart, as the CLI takes them (files read in between) */
    named(given, "Bare");
    nx_prepared_init(p);
    assert_int_equal(nx_prepare_target(L, "Bare", p, &err), 0);
    assert_ptr_equal(p->target.entry, &bare_entries[0]);
    assert_int_equal(nx_prepare_op(p, given, NX_PREPARE_DEFAULT_IF_NONE, NULL, &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_NO_DEFAULT);
    assert_string_equal(err.msg, "Bare has no built-in default op: give its operands");
    uint64_t shape[1] = {8};
    assert_int_equal(nx_macro_op_add_operand(given, "x", NX_DT_FP32, 1, shape, &err), 0);
    assert_int_equal(nx_prepare_op(p, given, NX_PREPARE_DEFAULT_IF_NONE, NULL, &err), -1);
    assert_int_equal(p->failed, NX_PREPARE_RESULTS);
    assert_string_equal(err.msg, "Bare: nxsim has no result-shape rule for this kernel yet");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_default_op_and_override, setup_live, teardown),
        cmocka_unit_test_setup_teardown(test_given_operands_results_inferred, setup_live, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_attribute_reported_once, setup_live, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup_bare, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
