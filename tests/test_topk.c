/* The three top-k leaves (kernels/topk/topk.h) against the top-k reference
 * (nx_ref_topk) through the leaf-case suite (tests/leaf_cases.h: the topk
 * composite's method attribute on the run path, order-checked, on the
 * functional executor and, the cases marked so, on the SystemC model with
 * the race detector): values bit for bit, indices exactly. Plus the
 * semantics on hand-computed rows (NaN, infinities, signed zeros, ties)
 * independent of the reference, and the leaves' refusals. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/builder.h"
#include "isa/exec.h"
#include "kernels/author/author.h"
#include "kernels/topk/topk.h"
#include "registry/macro_op.h"
#include "leaf_cases.h"
#include "support.h"

static const nx_leaf_fn leaves[3] = {naive_scanning_topk, cascaded_2_stage_topk, rotational_topk};
static const char *const names[3] = {"SCANNING", "CASCADED", "ROTATIONAL"};
static const nx_dtype floats[5] = {NX_DT_FP32, NX_DT_BF16, NX_DT_FP16, NX_DT_FP8_E4M3, NX_DT_FP8_E5M2};

/* One top-k case: leaf l (through the topk composite's method attribute,
 * the run path) on rows x n values of a kind, with extra attributes
 * ("name=JSON;..."), on `grid` cores, on the model too when `model`. */
typedef struct topk_case {
    int l;
    nx_dtype dt;
    uint64_t rows, n, k;
    int largest;
    const char *attrs;
    leaf_fill_kind data;
    uint32_t grid;
    int model;
    uint64_t seed;
} topk_case;

static topk_case mk(int l, nx_dtype dt, uint64_t rows, uint64_t n, uint64_t k, int largest, const char *attrs,
                    leaf_fill_kind data, uint32_t grid, int model, uint64_t seed) {
    topk_case c = {l, dt, rows, n, k, largest, attrs, data, grid, model, seed};
    return c;
}

static void make(const topk_case *t, leaf_case *c, int with_results) {
    char name[256], attrs[256];
    snprintf(name, sizeof name, "%s %s [%llu,%llu] k=%llu largest=%d fill %d grid=%u {%s}", names[t->l],
             nx_dtype_name(t->dt), (unsigned long long)t->rows, (unsigned long long)t->n, (unsigned long long)t->k,
             t->largest, (int)t->data, t->grid, t->attrs ? t->attrs : "");
    leaf_case_init(c, name, "topk");
    const uint64_t shape[2] = {t->rows, t->n}, out[2] = {t->rows, t->k};
    leaf_case_operand(c, "x", t->dt, 2, shape);
    if (with_results) {
        leaf_case_result(c, "values", t->dt, 2, out);
        leaf_case_result(c, "indices", NX_DT_INT32, 2, out);
    }
    snprintf(attrs, sizeof attrs, "k=%llu;largest=%s;method=\"%s\"", (unsigned long long)t->k,
             t->largest ? "true" : "false", names[t->l]);
    leaf_case_attrs(c, attrs);
    leaf_case_attrs(c, t->attrs);
    c->fill[0] = t->data;
    c->grid = t->grid;
    c->seed = t->seed;
    c->backends = LEAF_FUNCTIONAL | (t->model ? LEAF_MODEL : 0);
}

/* values bit for bit (they are input elements), indices exactly: the rules'
 * exact tolerance against nx_ref_topk */
static void topk_check(const topk_case *t) {
    leaf_case c;
    make(t, &c, 0);
    leaf_case_check(&c, NULL);
    leaf_case_free(&c);
}

/* The leaf itself refuses (its checks stand behind the composite's). */
static void topk_expect_refusal(const topk_case *t, const char *msg) {
    leaf_case c;
    make(t, &c, 1);
    nx_error err;
    if (leaf_case_trace_leaf(&c, leaves[t->l], &err) == 0) fail_msg("%s: the leaf accepted the case, expected: %s", c.name, msg);
    assert_string_equal(err.msg, msg);
    leaf_case_free(&c);
}

/* Rows of 8 and 9 (max8's smallest input, and one more), every k from 1 to
 * the row, every float type, both orders, every kind of data, 1 and 2
 * programs: on the executor. */
static void test_short_rows_every_k(void **state) {
    (void)state;
    uint64_t seed = 1;
    for (int l = 0; l < 3; l++)
        for (int d = 0; d < 5; d++)
            for (uint64_t n = 8; n <= 9; n++)
                for (uint64_t k = 1; k <= n; k++) {
                    topk_case c = mk(l, floats[d], 3, n, k, (int)(seed & 1), NULL, (leaf_fill_kind)(1 + seed % 5),
                                     1 + (uint32_t)(seed % 2), 0, seed);
                    topk_check(&c);
                    seed++;
                }
}

/* Random shapes (ties from bf16's few values, the special values, all-equal
 * and ascending rows), k in {1, 7, 8, 9, 64, n}, with the folding leaves'
 * fold counts and chunk sizes forced, so folds, short last folds and
 * chunked rows (candidate buffers that fill and are reduced) all run. */
static void test_random_shapes(void **state) {
    (void)state;
    static const uint64_t ns[] = {10, 17, 100, 1000, 4095};
    static const uint64_t ks[] = {1, 7, 8, 9, 64, 0};
    static const char *const attrs[] = {NULL, "folds=4", "folds=16", "chunk=64", "folds=2;chunk=40", "chunk=512"};
    test_rng r = {77};
    for (int i = 0; i < 90; i++) {
        int l = i % 3;
        uint64_t n = ns[test_rng_next(&r) % 5], k = ks[test_rng_next(&r) % 6];
        if (k == 0 || k > n) k = n;
        uint64_t rows = 1 + test_rng_next(&r) % 6;
        const char *a = attrs[test_rng_next(&r) % 6];
        if (a && a[0] == 'f') {
            uint32_t f = a[6] == '4' ? 4 : a[6] == '1' ? 16 : 2;
            uint64_t sf = (n + f - 1) / f;
            if (l == 0 || (f - 1) * sf >= n || f * ((rows + 1) / 2) > 128) a = NULL;
        }
        const char *ch = a ? strstr(a, "chunk=") : NULL;
        /* a scan of at most `chunk` elements takes k <= (chunk - 8) / 2 */
        if (ch && 2 * ((k + 7) / 8 * 8) + 8 > strtoull(ch + 6, NULL, 10)) a = NULL;
        topk_case c = mk(l, floats[test_rng_next(&r) % 5], rows, n, k, (int)(test_rng_next(&r) % 2), a,
                         (leaf_fill_kind)(1 + test_rng_next(&r) % 5), 1 + (uint32_t)(test_rng_next(&r) % 2), i % 9 == 0,
                         (uint64_t)i + 100);
        topk_check(&c);
    }
}

/* The integer types the leaves take (exact in fp32 keys). */
static void test_integer_types(void **state) {
    (void)state;
    static const nx_dtype ints[4] = {NX_DT_INT8, NX_DT_UINT8, NX_DT_INT16, NX_DT_UINT16};
    for (int l = 0; l < 3; l++)
        for (int d = 0; d < 4; d++)
            for (int largest = 0; largest < 2; largest++) {
                topk_case c = mk(l, ints[d], 2, 700, 9, largest, l ? "folds=8" : NULL, LEAF_FILL_RANDOM, 2, 0,
                                 (uint64_t)(d * 2 + largest));
                topk_check(&c);
            }
}

/* On the model with the race detector: 1 row and 300 rows (two row tiles on
 * core 0, one on core 1), k = 1 and k = the row length, ties and the
 * special values, every method. */
static void test_on_the_model(void **state) {
    (void)state;
    for (int l = 0; l < 3; l++) {
        topk_case cs[] = {
            mk(l, NX_DT_BF16, 300, 100, 9, 1, NULL, LEAF_FILL_SPECIAL, 2, 1, 11),
            mk(l, NX_DT_FP32, 300, 64, 1, 0, NULL, LEAF_FILL_TIES, 2, 1, 12),
            mk(l, NX_DT_FP16, 1, 4095, 4095, 1, NULL, LEAF_FILL_SPECIAL, 2, 1, 13),
            mk(l, NX_DT_FP32, 3, 4095, 64, 0, NULL, LEAF_FILL_SPECIAL, 2, 1, 14),
            mk(l, NX_DT_FP8_E5M2, 5, 1000, 8, 1, NULL, LEAF_FILL_EQUAL, 2, 1, 15),
            mk(l, NX_DT_BF16, 2, 4095, 7, 0, NULL, LEAF_FILL_ASCENDING, 1, 1, 16),
        };
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) topk_check(&cs[i]);
    }
}

/* Long rows (max8 takes at most 16384 elements): 16384, 65536 and 151936
 * with few rows and small k, and k = 2048 over 16384; on the model. */
static void test_long_rows(void **state) {
    (void)state;
    for (int l = 0; l < 3; l++) {
        topk_case cs[] = {
            mk(l, NX_DT_BF16, 1, 151936, 8, 1, NULL, LEAF_FILL_RANDOM, 2, 1, 21),
            mk(l, NX_DT_FP32, 2, 65536, 9, 0, NULL, LEAF_FILL_SPECIAL, 2, 1, 22),
            mk(l, NX_DT_FP16, 1, 16384, 64, 1, NULL, LEAF_FILL_TIES, 2, 1, 23),
            mk(l, NX_DT_FP32, 1, 16384, 2048, 1, NULL, LEAF_FILL_TIES, 2, 1, 24),
            mk(l, NX_DT_BF16, 1, 16385, 1, 1, NULL, LEAF_FILL_EQUAL, 1, 0, 25),
        };
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) topk_check(&cs[i]);
    }
}

/* ---- the semantics on rows worked out by hand ----------------------------------- */

static const double SPECIAL[8] = {NAN, 1, INFINITY, -INFINITY, NAN, -0.0, 0.0, 5};

/* Runs leaf l on one row of n values of dt, k = n, and checks values and
 * indices against want (NaN matches NaN; -0 and +0 apart). */
static void run_row(int l, nx_dtype dt, const double *x, uint64_t n, int largest, const double *want_v,
                    const int32_t *want_i) {
    nx_geometry geo = test_geometry("trn2");
    nx_builder *b = nx_builder_new(&geo, 1);
    nx_error err;
    nx_tensor_ref a[3];
    memset(a, 0, sizeof a);
    const char *tn[3] = {"x", "v", "i"};
    for (int i = 0; i < 3; i++) {
        strcpy(a[i].name, tn[i]);
        a[i].dtype = i == 2 ? NX_DT_INT32 : dt;
        a[i].ndims = 2;
        a[i].shape[0] = 1;
        a[i].shape[1] = n;
        assert_int_equal(nx_builder_tensor(b, tn[i], a[i].dtype, 2, a[i].shape, i ? NX_ROLE_OUTPUT : NX_ROLE_INPUT,
                                           &a[i].hbm_offset, &err), 0);
    }
    nx_attrs at;
    nx_attrs_init(&at);
    nx_value kv = nx_value_int((int64_t)n), lv = nx_value_bool(largest);
    assert_int_equal(nx_attrs_set(&at, "k", &kv, &err), 0);
    assert_int_equal(nx_attrs_set(&at, "largest", &lv, &err), 0);
    nx_kernel_call call = {.args = a, .nargs = 3, .n_inputs = 1, .additional_args = &at, .attrs = &at};
    nx_machine km = test_machine_of(nx_builder_geometry(b));
    nx_kctx *k = nx_kctx_new_machine(b, &km, 0, 1);
    if (leaves[l](k, &call, &err) != 0 || nx_kctx_finish(k, &err) != 0) fail_msg("%s: %s", names[l], err.msg);
    nx_kctx_free(k);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s", err.msg);
    nx_builder_free(b);
    nx_state st;
    assert_int_equal(nx_state_init(&st, &geo, 1, prog.hbm_bytes, prog.sem_count, &err), 0);
    test_hbm_put(&st, dt, a[0].hbm_offset, n, x);
    if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s: %s", names[l], err.msg);
    double gv[16], gi[16];
    test_hbm_get(&st, dt, a[1].hbm_offset, n, gv);
    test_hbm_get(&st, NX_DT_INT32, a[2].hbm_offset, n, gi);
    double wi[16];
    for (uint64_t j = 0; j < n; j++) wi[j] = want_i[j];
    test_assert_values(gi, wi, n);
    test_assert_values(gv, want_v, n);
    nx_state_free(&st);
    nx_program_free(&prog);
    nx_attrs_free(&at);
}

/* NaN is larger than +inf (both orders), -0 equals +0 (the lower index
 * first), equal values come lower index first. bf16 keys are exact. */
static void test_special_values_by_hand(void **state) {
    (void)state;
    const double lv[8] = {NAN, NAN, INFINITY, 5, 1, -0.0, 0.0, -INFINITY};
    const int32_t li[8] = {0, 4, 2, 7, 1, 5, 6, 3};
    const double sv[8] = {-INFINITY, -0.0, 0.0, 1, 5, INFINITY, NAN, NAN};
    const int32_t si[8] = {3, 5, 6, 1, 7, 2, 0, 4};
    for (int l = 0; l < 3; l++)
        for (int d = 1; d < 3; d++) {
            run_row(l, floats[d], SPECIAL, 8, 1, lv, li);
            run_row(l, floats[d], SPECIAL, 8, 0, sv, si);
        }
    /* fp32: the same, except that with largest = false +inf and NaN rank
     * alike (fp32 has no key between them and the knock-out): index order */
    const double fsv[8] = {-INFINITY, -0.0, 0.0, 1, 5, NAN, INFINITY, NAN};
    const int32_t fsi[8] = {3, 5, 6, 1, 7, 0, 2, 4};
    for (int l = 0; l < 3; l++) {
        run_row(l, NX_DT_FP32, SPECIAL, 8, 1, lv, li);
        run_row(l, NX_DT_FP32, SPECIAL, 8, 0, fsv, fsi);
    }
}

/* The extreme finite values: bf16 keeps -max above -inf; fp32 ranks -inf
 * with -FLT_MAX (the lower index first), and +inf with FLT_MAX. */
static void test_extremes(void **state) {
    (void)state;
    const double bmax = 0x1.fep127;
    const double bx[8] = {-INFINITY, -bmax, 2, 3, INFINITY, bmax, 4, 5};
    const double bv[8] = {INFINITY, bmax, 5, 4, 3, 2, -bmax, -INFINITY};
    const int32_t bi[8] = {4, 5, 7, 6, 3, 2, 1, 0};
    const double fx[8] = {-INFINITY, -FLT_MAX, 2, 3, INFINITY, FLT_MAX, 4, 5};
    const double fv[8] = {INFINITY, FLT_MAX, 5, 4, 3, 2, -INFINITY, -FLT_MAX};
    const int32_t fi[8] = {4, 5, 7, 6, 3, 2, 0, 1};
    const double fsv[8] = {-INFINITY, -FLT_MAX, 2, 3, 4, 5, INFINITY, FLT_MAX};
    const int32_t fsi[8] = {0, 1, 2, 3, 6, 7, 4, 5};
    for (int l = 0; l < 3; l++) {
        run_row(l, NX_DT_BF16, bx, 8, 1, bv, bi);
        run_row(l, NX_DT_FP32, fx, 8, 1, fv, fi);
        run_row(l, NX_DT_FP32, fx, 8, 0, fsv, fsi);
    }
}

/* ---- refusals --------------------------------------------------------------- */

static void test_refusals(void **state) {
    (void)state;
    topk_case c = mk(0, NX_DT_FP32, 2, 8, 9, 1, NULL, LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "attribute k: 9 is larger than the axis length 8 of operand 0 (x)");
    c = mk(1, NX_DT_INT32, 2, 8, 1, 1, NULL, LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "operand 0 (x): dtype int32 is not a top-k type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, "
                            "int8, uint8, int16, uint16: the keys are fp32)");
    c = mk(2, NX_DT_FP32, 2, 8, 1, 1, "axis=0", LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "rotational_topk: attribute axis 0 is not the last axis of operand 0 (x) (the topk "
                            "composite transposes other axes to the end)");
    c = mk(1, NX_DT_FP32, 2, 100, 1, 1, "folds=64", LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "cascaded_2_stage_topk: attribute folds: 64 folds of a row of 100 elements on 128 "
                            "partitions leave a fold empty or need more partitions");
    c = mk(1, NX_DT_FP32, 2, 100, 1, 1, "folds=3", LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "attribute folds: 3 must be a power of two in 1..4096");
    c = mk(0, NX_DT_FP32, 1, 65536, 9000, 1, NULL, LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "naive_scanning_topk: k = 9000 over rows of 65536 elements: rows longer than one max8 "
                            "scan (16384 elements, max8's limit on machine 'trn2') need k <= 8184 (a scan must "
                            "hold two lists of k); k = 9000 needs scans of at least 18008 elements");
    /* a chunk that leaves no room for k names the chunk and the length k needs */
    c = mk(1, NX_DT_FP32, 2, 256, 7, 1, "chunk=8", LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "cascaded_2_stage_topk: k = 7 over rows of 256 elements: rows longer than one max8 scan "
                            "(8 elements, the attribute chunk = 8) need k <= 0 (a scan must hold two lists of k); "
                            "k = 7 needs scans of at least 24 elements");
    c = mk(0, NX_DT_FP32, 1, 65536, 8000, 1, NULL, LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "naive_scanning_topk: k = 8000 over rows of 65536 elements does not fit one partition's "
                            "SBUF (229376 bytes, 0 of them held by the leaf)");
    c = mk(0, NX_DT_FP32, 1, 8, 1, 1, "largest=2", LEAF_FILL_RANDOM, 1, 0, 1);
    topk_expect_refusal(&c, "attribute largest: must be true/false or 0/1");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_values_by_hand),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_short_rows_every_k),
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_integer_types),
        cmocka_unit_test(test_on_the_model),
        cmocka_unit_test(test_long_rows),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
