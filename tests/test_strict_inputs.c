/* Strict inputs at the registry and run-path level (docs/parts/security.md):
 * an attribute no leaf reads is an error naming the ones it reads; op
 * documents holding \u0000 are refused and what they hold is echoed escaped;
 * the run path checks its memory and fill limits before it traces,
 * allocates or fills anything, with NX_RUN_LIMIT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "registry/families/families.h"
#include "registry/run/run.h"
#include "support.h"

static void one_line(const char *msg) {
    for (const char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) fail_msg("control byte 0x%02x in '%s'", *p, msg);
    assert_true(msg[0] != '\0');
}

static void set_attr(nx_macro_op *op, const char *name, const char *json) {
    nx_value v;
    nx_error err;
    if (nx_value_parse(name, json, &v, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(nx_attrs_set(&op->attrs, name, &v, &err), 0);
}

static void test_unknown_attributes(void **state) {
    (void)state;
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_error err;
    set_attr(&op, "permutation", "[1,0]");
    assert_int_equal(nx_op_rules_check_attrs(&nx_rules_transpose, "tiled_pf_transpose", &op.attrs, &err), 0);
    set_attr(&op, "permutaton", "[1,0]");
    assert_int_equal(nx_op_rules_check_attrs(&nx_rules_transpose, "tiled_pf_transpose", &op.attrs, &err), -1);
    assert_string_equal(err.msg, "tiled_pf_transpose: unknown attribute 'permutaton' (did you mean "
                                 "'permutation'?); tiled_pf_transpose reads: permutation");
    nx_macro_op_free(&op);

    nx_macro_op_init(&op);
    set_attr(&op, "stide", "[2,2]");
    assert_int_equal(nx_op_rules_check_attrs(&nx_rules_conv_pbp_0f1b, "K", &op.attrs, &err), -1);
    assert_string_equal(err.msg, "K: unknown attribute 'stide' (did you mean 'stride'?); K reads: stride, "
                                 "padding, lhs_dilation, rhs_dilation, feature_group_count, batch_group_count, "
                                 "out_shape");
    nx_macro_op_free(&op);

    /* far from every name: no suggestion; a leaf reading nothing says so;
     * a name holding a newline is echoed escaped */
    nx_macro_op_init(&op);
    set_attr(&op, "a\nb", "1");
    assert_int_equal(nx_op_rules_check_attrs(&nx_rules_transpose, "T", &op.attrs, &err), -1);
    assert_string_equal(err.msg, "T: unknown attribute 'a\\nb'; T reads: permutation");
    static const nx_op_rules none = {.attrs = NULL};
    assert_int_equal(nx_op_rules_check_attrs(&none, "N", &op.attrs, &err), -1);
    assert_string_equal(err.msg, "N: unknown attribute 'a\\nb'; N reads no attributes");
    /* no rules: nothing is known, nothing is checked */
    assert_int_equal(nx_op_rules_check_attrs(NULL, "X", &op.attrs, &err), 0);
    nx_macro_op_free(&op);
}

static void test_op_documents(void **state) {
    (void)state;
    nx_macro_op op;
    nx_error err;
    /* "a\u0000b" would read as "a": refused where it stands */
    const char *nul = "{\"func_name\": \"tiled_pf_transpose\\u0000junk\",\n"
                      " \"operands\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"fp32\"}]}";
    assert_int_equal(nx_macro_op_parse("op.json", nul, &op, NULL, &err), -1);
    assert_string_equal(err.msg, "op.json: line 1, column 34: a string holds \\u0000 (NUL), which no name or "
                                 "value may hold");
    const char *in_attr = "{\"func_name\": \"k\", \"operands\": [], \"attrs\": {\"s\": [\"x\\u0000\"]}}";
    assert_int_equal(nx_macro_op_parse("op.json", in_attr, &op, NULL, &err), -1);
    one_line(err.msg);
    /* an escaped backslash before u0000 is not a NUL */
    const char *not_nul = "{\"func_name\": \"k\", \"operands\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": "
                          "\"fp32\"}], \"attrs\": {\"s\": \"\\\\u0000\"}}";
    if (nx_macro_op_parse("op.json", not_nul, &op, NULL, &err) != 0) fail_msg("%s", err.msg);
    assert_string_equal(nx_attrs_get(&op.attrs, "s")->s, "\\u0000");
    nx_macro_op_free(&op);
    /* keys, names and func_names are echoed escaped */
    const char *key = "{\"func_name\": \"k\", \"operands\": [], \"k\\u001bey\": 1}";
    assert_int_equal(nx_macro_op_parse("op.json", key, &op, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "unknown key 'k\\x1bey'"));
    one_line(err.msg);
    const char *name = "{\"func_name\": \"k\", \"operands\": [{\"name\": \"x\\ny\", \"shape\": [4], \"dtype\": \"fp32\"}]}";
    assert_int_equal(nx_macro_op_parse("op.json", name, &op, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "name 'x\\ny' is not of the form"));
    assert_int_equal(nx_registry_miss(NULL, "tiled\npf", &err), -1);
    assert_non_null(strstr(err.msg, "Internal NKI kernel 'tiled\\npf' is not registered"));
    one_line(err.msg);
}

static nx_machine trn2(void) {
    nx_machine m;
    nx_error err;
    if (nx_machine_load("trn2", &m, &err) != 0) fail_msg("%s", err.msg);
    return m;
}

/* The transpose of x[rows, cols], given with `attr`=[1,0] (the real name or
 * a typo); 0, or -1 from nx_op_prepare. */
static int transpose_op(nx_lowerer *L, uint64_t rows, uint64_t cols, const char *attr, nx_prepared *p,
                        nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "tiled_pf_transpose", err), 0);
    uint64_t shape[2] = {rows, cols};
    assert_int_equal(nx_macro_op_add_operand(&given, "x", NX_DT_FP32, 2, shape, err), 0);
    set_attr(&given, attr, "[1,0]");
    int rc = nx_op_prepare(L, &given, NULL, p, err);
    nx_macro_op_free(&given);
    return rc;
}

static void test_run_limits(void **state) {
    (void)state;
    nx_machine m = trn2();
    nx_error err;
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    nx_prepared op;
    /* 2^30 x 4 fp32 elements: 16 GiB of operand, refused before tracing */
    if (transpose_op(L, (uint64_t)1 << 30, 4, "permutation", &op, &err) != 0) fail_msg("%s", err.msg);
    nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL, .max_memory = (uint64_t)1 << 30};
    nx_run_result res;
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_LIMIT);
    assert_non_null(strstr(err.msg, "tiled_pf_transpose: the run needs about 32.1 GiB (HBM 32.0 GiB, the "
                                    "largest tensor 'x' 16.0 GiB; on-chip memories 60.1 MiB)"));
    assert_non_null(strstr(err.msg, "more than the memory limit of 1.0 GiB"));
    assert_int_equal(nx_lowerer_new_traces(L), 0); /* nothing traced */
    nx_run_result_free(&res);
    opt.max_memory = 0;
    opt.max_fill = (uint64_t)1 << 20;
    assert_int_equal(nx_run_op(L, &m, &op, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_LIMIT);
    assert_string_equal(err.msg, "tiled_pf_transpose: operand x would get 16.0 GiB of pseudo-random values, "
                                 "more than the fill limit of 1.0 MiB");
    nx_run_result_free(&res);
    nx_prepared_free(&op);

    /* within the limits it runs; given bytes need no fill */
    if (transpose_op(L, 128, 64, "permutation", &op, &err) != 0) fail_msg("%s", err.msg);
    static float x[128 * 64];
    const void *inputs[1] = {x};
    opt.max_fill = 1; /* any pseudo-random operand is too much */
    opt.max_memory = (uint64_t)1 << 30;
    if (nx_run_op(L, &m, &op, inputs, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
    nx_run_result_free(&res);
    /* --check's copies and what the caller holds count */
    opt.check = 1;
    nx_run_memory mem;
    nx_run_memory_of_op(&m, &op.op, &opt, &mem);
    assert_int_equal(mem.hbm, 2 * 128 * 64 * 4);
    assert_int_equal(mem.check, 2 * 128 * 64 * 4);
    opt.max_memory = mem.total - 1;
    assert_int_equal(nx_run_op(L, &m, &op, inputs, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_LIMIT);
    nx_run_result_free(&res);
    opt.max_memory = mem.total + ((uint64_t)1 << 20);
    opt.held_bytes = (uint64_t)1 << 21;
    assert_int_equal(nx_run_op(L, &m, &op, inputs, &opt, &res, &err), -1);
    assert_non_null(strstr(err.msg, "loaded and serialised tensors 2.0 MiB"));
    nx_run_result_free(&res);
    /* the trace stops at the limit as it appends (a 2048 x 2048 transpose traces
     * about 500 instructions; 1 KiB beside the op is room for about 20) */
    opt.held_bytes = 0;
    opt.check = 0;
    opt.max_fill = 0;
    nx_prepared big;
    if (transpose_op(L, 2048, 2048, "permutation", &big, &err) != 0) fail_msg("%s", err.msg);
    nx_run_memory_of_op(&m, &big.op, &opt, &mem);
    opt.max_memory = mem.total + 1024;
    uint64_t traced = nx_lowerer_new_traces(L);
    assert_int_equal(nx_run_op(L, &m, &big, NULL, &opt, &res, &err), -1);
    assert_int_equal(res.failure, NX_RUN_LIMIT);
    one_line(err.msg);
    assert_non_null(strstr(err.msg, "tiled_pf_transpose: the program being traced holds "));
    assert_non_null(strstr(err.msg, ", more than the memory limit of "));
    assert_int_equal(nx_lowerer_new_traces(L), traced); /* nothing cached */
    nx_run_result_free(&res);
    opt.max_memory = 0;
    if (nx_run_op(L, &m, &big, NULL, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_true(nx_program_insn_count(res.prog) > 256);
    nx_run_result_free(&res);
    nx_prepared_free(&big);
    nx_prepared_free(&op);
    /* an unknown attribute is the op's fault, refused by the preparation */
    assert_int_equal(transpose_op(L, 128, 64, "permutaton", &op, &err), -1);
    assert_int_equal(op.failed, NX_PREPARE_ATTRS);
    assert_string_equal(err.msg, "tiled_pf_transpose: unknown attribute 'permutaton' (did you mean "
                                 "'permutation'?); tiled_pf_transpose reads: permutation");
    nx_prepared_free(&op);
    nx_lowerer_free(L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_attributes),
        cmocka_unit_test(test_op_documents),
        cmocka_unit_test(test_run_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
