/* AUTO dispatch of the topk composite (kernels/topk/topk_auto.h): on three
 * regimes (short rows; long rows with a small k; long rows with a large k)
 * every method is run on the SystemC model and AUTO's choice must be the
 * one the simulator measures fastest (ties count as fastest), which also
 * catches a cost table that no longer matches the leaves; the table itself
 * (machines, dtypes, interpolation exact on its grid and bounded between),
 * the dispatch text, and the explicit method attribute. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/run/run.h"
#include "kernels/topk/topk_auto.h"
#include "support.h"
#include "leaf_cases.h"

static double run_method(nx_lowerer *L, const nx_machine *m, uint64_t rows, uint64_t n, uint64_t k, const char *method,
                         const uint8_t *x) {
    nx_error err;
    nx_macro_op op;
    nx_macro_op_init(&op);
    uint64_t shape[2] = {rows, n};
    assert_int_equal(nx_macro_op_set_func_name(&op, "topk", &err), 0);
    assert_int_equal(nx_macro_op_add_operand(&op, "x", NX_DT_BF16, 2, shape, &err), 0);
    nx_value kv = nx_value_int((int64_t)k), mv;
    char json[32];
    snprintf(json, sizeof json, "\"%s\"", method);
    assert_int_equal(nx_attrs_set(&op.attrs, "k", &kv, &err), 0);
    assert_int_equal(nx_value_parse("method", json, &mv, &err), 0);
    assert_int_equal(nx_attrs_set(&op.attrs, "method", &mv, &err), 0);
    nx_prepared p;
    if (nx_op_prepare(L, &op, NULL, &p, &err) != 0) fail_msg("%s", err.msg);
    const void *inputs[1] = {x};
    nx_run_options opt = {.backend = NX_RUN_MODEL, .check = 1};
    nx_run_result res;
    if (nx_run_op(L, m, &p, inputs, &opt, &res, &err) != 0) fail_msg("%s: %s", method, err.msg);
    if (res.check_failures) fail_msg("%s: %llu x %llu k=%llu differs from nx_ref_topk", method,
                                     (unsigned long long)rows, (unsigned long long)n, (unsigned long long)k);
    double ns = res.trace.sim.total_ns;
    nx_run_result_free(&res);
    nx_prepared_free(&p);
    nx_macro_op_free(&op);
    return ns;
}

static void regime(uint64_t rows, uint64_t n, uint64_t k, int expect_table) {
    nx_machine m = test_machine("trn2");
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, NULL);
    uint8_t *x = malloc(rows * n * 2);
    leaf_fill(x, NX_DT_BF16, rows * n, LEAF_FILL_RANDOM, rows + n + k);
    double t[NX_TOPK_METHOD_COUNT], best = INFINITY;
    for (int me = 0; me < NX_TOPK_METHOD_COUNT; me++) {
        t[me] = run_method(L, &m, rows, n, k, nx_topk_method_get((nx_topk_method_id)me)->member, x);
        if (t[me] < best) best = t[me];
    }
    nx_topk_choice ch;
    nx_error err;
    assert_int_equal(nx_topk_choose("AUTO", &m.geo, NX_DT_BF16, rows, n, k, &ch, &err), 0);
    char why[256];
    nx_topk_choice_text(&ch, why, sizeof why);
    if (t[ch.method] > best)
        fail_msg("%llu x %llu k=%llu: AUTO chose %s (%.0f ns measured) but SCANNING %.0f, CASCADED %.0f, ROTATIONAL "
                 "%.0f ns: %s",
                 (unsigned long long)rows, (unsigned long long)n, (unsigned long long)k,
                 nx_topk_method_get(ch.method)->member, t[ch.method], t[0], t[1], t[2], why);
    if (expect_table) {
        assert_non_null(ch.table);
        assert_false(ch.same_program);
        /* the measured time of the choice is the table's entry */
        assert_true(fabs(ch.ns[ch.method] - t[ch.method]) <= 0.02 * t[ch.method]);
    }
    free(x);
    nx_lowerer_free(L);
}

/* Short rows fill the partitions: no method folds them, all three are the
 * scanning program. */
static void test_short_rows(void **state) {
    (void)state;
    regime(128, 1024, 8, 0);
}

/* A long row, a small k: folding wins (CASCADED on this machine). */
static void test_long_rows_small_k(void **state) {
    (void)state;
    regime(1, 151936, 1, 1);
}

/* A long row, a large k: the merges of the rotations beat a second stage
 * over every fold's candidates. */
static void test_long_rows_large_k(void **state) {
    (void)state;
    regime(1, 32000, 512, 1);
}

static void test_table(void **state) {
    (void)state;
    static const char *const machines[2] = {"trn2", "trn1"};
    static const nx_dtype dts[2] = {NX_DT_BF16, NX_DT_FP32};
    for (int mi = 0; mi < 2; mi++)
        for (int di = 0; di < 2; di++) {
            const nx_topk_cost_table *t = nx_topk_cost_table_find(machines[mi], dts[di]);
            assert_non_null(t);
            assert_non_null(strstr(t->provenance, "nxsim-bench-topk --table"));
            /* exact on the grid */
            for (uint32_t r = 0; r < t->nrows; r++)
                for (uint32_t j = 0; j < t->nk; j++) {
                    uint32_t i = t->nn - 1;
                    double want = t->ns[((r * t->nn + i) * t->nk + j) * NX_TOPK_METHOD_COUNT + 1];
                    double got = nx_topk_table_estimate(t, NX_TOPK_CASCADED, t->rows[r], t->n[i], t->k[j]);
                    assert_true(fabs(got - want) <= 1e-9 * want);
                }
            /* between two grid rows: between their times */
            double a = nx_topk_table_estimate(t, NX_TOPK_SCANNING, t->rows[1], t->n[2], t->k[1]);
            double b = nx_topk_table_estimate(t, NX_TOPK_SCANNING, t->rows[2], t->n[2], t->k[1]);
            double mid = nx_topk_table_estimate(t, NX_TOPK_SCANNING, (t->rows[1] + t->rows[2]) / 2, t->n[2], t->k[1]);
            assert_true(mid >= fmin(a, b) - 1e-9 && mid <= fmax(a, b) + 1e-9);
        }
    /* other element sizes use the table of theirs */
    assert_ptr_equal(nx_topk_cost_table_find("trn2", NX_DT_FP16), nx_topk_cost_table_find("trn2", NX_DT_BF16));
    assert_ptr_equal(nx_topk_cost_table_find("trn2", NX_DT_FP8_E4M3), nx_topk_cost_table_find("trn2", NX_DT_BF16));
    assert_null(nx_topk_cost_table_find("my_machine", NX_DT_BF16));
}

static void test_choice_text(void **state) {
    (void)state;
    nx_geometry g = test_geometry("trn2");
    nx_topk_choice c;
    nx_error err;
    char buf[256];
    assert_int_equal(nx_topk_choose("ROTATIONAL", &g, NX_DT_BF16, 1, 100, 8, &c, &err), 0);
    nx_topk_choice_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "method ROTATIONAL (attribute method)");
    assert_int_equal(nx_topk_choose("AUTO", &g, NX_DT_BF16, 1024, 128, 64, &c, &err), 0);
    nx_topk_choice_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "method SCANNING: AUTO; no method folds rows of this shape, all three run the scanning "
                             "program");
    assert_int_equal(nx_topk_choose("AUTO", &g, NX_DT_BF16, 1, 151936, 8, &c, &err), 0);
    nx_topk_choice_text(&c, buf, sizeof buf);
    /* "method X: T us vs Y T us, Z T us (table trn2 bf16)" */
    char m0[16], m1[16], m2[16];
    double t0, t1, t2;
    if (sscanf(buf, "method %15[A-Z]: %lf us vs %15[A-Z] %lf us, %15[A-Z] %lf us", m0, &t0, m1, &t1, m2, &t2) != 6)
        fail_msg("dispatch text '%s'", buf);
    assert_true(t0 <= t1 && t0 <= t2);
    assert_non_null(strstr(buf, "(table trn2 bf16)"));
    assert_int_equal(nx_topk_choose("NAIVE_SCANNING", &g, NX_DT_BF16, 1, 100, 8, &c, &err), -1);
    assert_string_equal(err.msg, "attribute method: unknown top-k method 'NAIVE_SCANNING' (AUTO, SCANNING, CASCADED, "
                                 "ROTATIONAL)");
    /* a machine without a table uses trn2's and says so */
    nx_geometry other = g;
    strcpy(other.name, "mine");
    assert_int_equal(nx_topk_choose("AUTO", &other, NX_DT_BF16, 1, 151936, 8, &c, &err), 0);
    nx_topk_choice_text(&c, buf, sizeof buf);
    assert_non_null(strstr(buf, "(table trn2 bf16, measured on another machine)"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_choice_text),
        cmocka_unit_test(test_short_rows),
        cmocka_unit_test(test_long_rows_small_k),
        cmocka_unit_test(test_long_rows_large_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
