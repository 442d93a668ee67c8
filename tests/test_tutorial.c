/* The NKI matmul tutorial kernels (kernels/tutorial/tutorial.h): values
 * against an independent fp64 evaluation of lhsT^T @ rhs, through the
 * leaf-case suite (the composites on the run path, the functional executor
 * and the SystemC model with the race check, bit for bit), on shapes that
 * exercise every loop (several M, N and K tiles and blocks, fp32 and bf16,
 * trn1 and trn2, the fully optimised kernel with small meta-parameters and
 * with its M blocks spilled to HBM on a machine with a small SBUF); the
 * tutorial's shape rules refused with the rule named; the DMA structure of a
 * load (the NKI DMA overview's examples); and the composite rows.
 *
 * The error bound, per element, from the exact sum S = sum_k a_k b_k (fp64
 * over the exact inputs), the sum of magnitudes A = sum_k |a_k b_k|, and the
 * partial sums S_j after each K block of the fully optimised kernel:
 *   |got - ref| <= 2 K u A                 (two fp32 sums in any order, u = 2^-24)
 *                 + h(|S|) x 2             (the result rounded once in each)
 *                 + sum_j h(|S_j| + 2 K u A) (each SBUF partial sum rounded)
 * with h(x) = x x eps(dtype) / 2 the half-ulp bound of a rounding to the
 * result dtype (RNE), ref = nx_ref_matmul_lhsT's result. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels/ref/ref.h"
#include "kernels/tutorial/tut_common.h"
#include "kernels/tutorial/tutorial.h"
#include "leaf_cases.h"
#include "registry/composites.h"
#include "registry/families/families.h"
#include "sim/model.h"
#include "support.h"

typedef struct mm_case {
    nx_leaf_fn leaf;
    const char *what;
    const char *machine;
    nx_dtype dt;
    uint64_t K, M, N;
    uint64_t block_k; /* SBUF partial sums every block_k rows of K (0: none) */
    const nx_attrs *attrs;
} mm_case;

static double eps_of(nx_dtype dt) { return dt == NX_DT_FP32 ? 0x1p-23 : dt == NX_DT_BF16 ? 0x1p-7 : 0x1p-10; }

/* Random values in [-1, 1) rounded to dt. */
static uint8_t *random_matrix(nx_dtype dt, uint64_t n, uint64_t seed) {
    size_t es = nx_dtype_size(dt);
    uint8_t *p = malloc(n * es);
    assert_non_null(p);
    test_rng r = {seed * 0x9e3779b97f4a7c15ull + 7};
    for (uint64_t i = 0; i < n; i++) nx_dtype_store(dt, p + i * es, test_rng_uniform(&r, -1.0, 1.0));
    return p;
}

/* The composite of a tutorial leaf (its `nxsim run` name). */
static const char *key_of(nx_leaf_fn leaf) {
    return leaf == nx_tutorial_matmul_tiled        ? "nki_matmul_tiled"
         : leaf == nx_tutorial_matmul_hoist_load   ? "nki_matmul_hoist_load"
         : leaf == nx_tutorial_matmul_block_free_dimension ? "nki_matmul_block_free_dimension"
                                                    : "nki_matmul_fully_optimized";
}

/* The leaf case of [K, M] @ [K, N] of dt (tests/leaf_cases.h). */
static void make_case(leaf_case *lc, nx_leaf_fn leaf, const char *what, const char *machine, nx_dtype dt, uint64_t K,
                      uint64_t M, uint64_t N, const nx_attrs *attrs) {
    leaf_case_init(lc, what, key_of(leaf));
    const uint64_t ls[2] = {K, M}, rs[2] = {K, N}, os[2] = {M, N};
    leaf_case_operand(lc, "lhsT", dt, 2, ls);
    leaf_case_operand(lc, "rhs", dt, 2, rs);
    leaf_case_result(lc, "result", dt, 2, os);
    snprintf(lc->machine, sizeof lc->machine, "%s", machine);
    nx_error err;
    nx_attrs_free(&lc->op.attrs);
    if (attrs ? nx_attrs_copy(&lc->op.attrs, attrs, &err) != 0 : (nx_attrs_init(&lc->op.attrs), 0))
        fail_msg("%s: %s", what, err.msg);
}

/* Through the leaf-case suite (the run path on the executor and the model
 * with the race check, the rules' reference, the backends bit for bit),
 * then the bound above against the exact sum. */
static void check_case(const mm_case *c) {
    const uint64_t ls[2] = {c->K, c->M}, rs[2] = {c->K, c->N};
    uint8_t *a = random_matrix(c->dt, c->K * c->M, 1), *b = random_matrix(c->dt, c->K * c->N, 2);
    leaf_case lc;
    make_case(&lc, c->leaf, c->what, c->machine, c->dt, c->K, c->M, c->N, c->attrs);
    lc.inputs[0] = a;
    lc.inputs[1] = b;
    leaf_case_report r;
    leaf_case_check(&lc, &r);
    leaf_case_free(&lc);
    /* the reference (OpenBLAS) */
    size_t es = nx_dtype_size(c->dt);
    uint8_t *ref = malloc(c->M * c->N * es);
    assert_non_null(ref);
    nx_ref_operand ra = {a, c->dt, 2, ls}, rb = {b, c->dt, 2, rs};
    nx_error err;
    if (nx_ref_matmul_lhsT(&ra, &rb, ref, c->dt, &err) != 0) fail_msg("%s: reference: %s", c->what, err.msg);
    const double u = 0x1p-24, h = eps_of(c->dt) / 2;
    for (uint64_t m = 0; m < c->M; m++)
        for (uint64_t n = 0; n < c->N; n++) {
            double S = 0, A = 0, bound_sbuf = 0;
            for (uint64_t k = 0; k < c->K; k++) {
                double p = nx_dtype_load(c->dt, a + (k * c->M + m) * es) * nx_dtype_load(c->dt, b + (k * c->N + n) * es);
                S += p;
                A += fabs(p);
                if (c->block_k && (k + 1) % c->block_k == 0) bound_sbuf += h * (fabs(S) + 2.0 * (double)c->K * u * A);
            }
            double bound = 2.0 * (double)c->K * u * A + 2.0 * h * fabs(S) + bound_sbuf;
            double want = nx_dtype_load(c->dt, ref + (m * c->N + n) * es);
            double got = nx_dtype_load(c->dt, r.results[0] + (m * c->N + n) * es);
            if (!(fabs(got - want) <= bound * (1 + 1e-9)))
                fail_msg("%s: result[%llu][%llu] = %.9g, reference %.9g (exact %.9g), beyond the bound %.3g", c->what,
                         (unsigned long long)m, (unsigned long long)n, got, want, S, bound);
        }
    assert_true(r.model_ns > 0);
    leaf_case_report_free(&r);
    free(ref);
    free(a);
    free(b);
}

static void tiled_values(void **state) {
    (void)state;
    /* 2 M tiles x 2 N tiles x 2 K tiles; the minimal 1 x 1 x 1 in fp32 */
    mm_case c = {nx_tutorial_matmul_tiled, "tiled bf16", "trn1", NX_DT_BF16, 256, 256, 1024, 0, NULL};
    check_case(&c);
    mm_case d = {nx_tutorial_matmul_tiled, "tiled fp32", "trn2", NX_DT_FP32, 128, 128, 512, 0, NULL};
    check_case(&d);
}

static void hoist_load_values(void **state) {
    (void)state;
    mm_case c = {nx_tutorial_matmul_hoist_load, "hoist bf16", "trn1", NX_DT_BF16, 256, 256, 1024, 0, NULL};
    check_case(&c);
    mm_case d = {nx_tutorial_matmul_hoist_load, "hoist fp16", "trn2", NX_DT_FP16, 128, 256, 512, 0, NULL};
    check_case(&d);
}

static void block_free_values(void **state) {
    (void)state;
    /* 2 M blocks x 2 N blocks of 2 x 2 tiles, 1 K tile */
    mm_case c = {nx_tutorial_matmul_block_free_dimension, "block bf16", "trn1", NX_DT_BF16, 128, 512, 2048, 0, NULL};
    check_case(&c);
}

static void set_blocking(nx_attrs *a, nx_attr *items, int64_t bm, int64_t bn, int64_t bk) {
    static const char *names[3] = {"tiles_in_block_m", "tiles_in_block_n", "tiles_in_block_k"};
    int64_t v[3] = {bm, bn, bk};
    for (int i = 0; i < 3; i++) {
        items[i].name = (char *)names[i];
        items[i].value = (nx_value){.kind = NX_VAL_INT, .i = v[i]};
    }
    a->items = items;
    a->count = 3;
}

static void fully_optimized_values(void **state) {
    (void)state;
    nx_attrs a;
    nx_attr items[3];
    /* blocks of 1 x 1 x 1 tiles: 2 M blocks, 2 N blocks, 3 K blocks (3 SBUF partial sums) */
    set_blocking(&a, items, 1, 1, 1);
    mm_case c = {nx_tutorial_matmul_fully_optimized, "optimized bf16", "trn1", NX_DT_BF16, 384, 256, 1024, 128, &a};
    check_case(&c);
    set_blocking(&a, items, 1, 2, 1);
    mm_case d = {nx_tutorial_matmul_fully_optimized, "optimized fp32", "trn2", NX_DT_FP32, 256, 256, 1024, 128, &a};
    check_case(&d);
}

/* A trn1 machine file with `sbuf` bytes per partition (removed by the caller). */
static void small_sbuf_machine(char *path, size_t len, uint64_t sbuf) {
    snprintf(path, len, "/tmp/nxsim_test_tutorial_%d.json", (int)getpid());
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fprintf(out, "{\"base\": \"trn1\", \"name\": \"trn1-small\", \"geometry\": {\"sbuf_partition_bytes\": %llu}}\n",
            (unsigned long long)sbuf);
    assert_int_equal(fclose(out), 0);
}

/* 1 x 1 x 1 blocks of bf16: one M block of result tiles takes 1 KiB per
 * partition, lhsT + rhs + pack 3.25 KiB, two spill blocks 2 KiB: with 6400
 * bytes of SBUF one of the four M blocks stays resident and three spill
 * through HBM, over two K blocks and two N blocks. */
static void fully_optimized_spills(void **state) {
    (void)state;
    char path[96];
    small_sbuf_machine(path, sizeof path, 6400);
    nx_attrs a;
    nx_attr items[3];
    set_blocking(&a, items, 1, 1, 1);
    mm_case c = {nx_tutorial_matmul_fully_optimized, "optimized spilled", path, NX_DT_BF16, 256, 512, 1024, 128, &a};
    check_case(&c);
    /* too small for even two spill blocks: refused with the sizes */
    unlink(path);
    small_sbuf_machine(path, sizeof path, 4096);
    leaf_case lc;
    make_case(&lc, nx_tutorial_matmul_fully_optimized, "too small", path, NX_DT_BF16, 128, 1024, 512, &a);
    nx_error err;
    assert_int_equal(leaf_case_trace_leaf(&lc, nx_tutorial_matmul_fully_optimized, &err), -1);
    leaf_case_free(&lc);
    assert_string_equal(err.msg, "nki_matmul_fully_optimized: one lhsT block, one rhs block and two spill blocks of "
                                 "result tiles need 5376 bytes per partition, SBUF has 4096");
    unlink(path);
}

/* Traces the leaf on [K, M] @ [K, N] of dt and returns its message. */
static const char *refusal(nx_leaf_fn leaf, nx_dtype dt, uint64_t K, uint64_t M, uint64_t N, const nx_attrs *attrs,
                           nx_error *err) {
    leaf_case lc;
    make_case(&lc, leaf, "refusal", "trn1", dt, K, M, N, attrs);
    assert_int_equal(leaf_case_trace_leaf(&lc, leaf, err), -1);
    leaf_case_free(&lc);
    return err->msg;
}

static void shape_rules(void **state) {
    (void)state;
    nx_error err;
    assert_string_equal(refusal(nx_tutorial_matmul_tiled, NX_DT_BF16, 128, 200, 512, NULL, &err),
                        "nki_matmul_tiled: M = 200 must be a multiple of 128 (TILE_M, the stationary free size)");
    assert_string_equal(refusal(nx_tutorial_matmul_hoist_load, NX_DT_BF16, 100, 128, 512, NULL, &err),
                        "nki_matmul_hoist_load: K = 100 must be a multiple of 128 (TILE_K, the partitions)");
    assert_string_equal(refusal(nx_tutorial_matmul_tiled, NX_DT_BF16, 128, 128, 640, NULL, &err),
                        "nki_matmul_tiled: N = 640 must be a multiple of 512 (TILE_N, the moving free size)");
    assert_string_equal(refusal(nx_tutorial_matmul_block_free_dimension, NX_DT_BF16, 128, 128, 1024, NULL, &err),
                        "nki_matmul_block_free_dimension: M = 128 must be a multiple of 256 (BLOCK_M = 2 x TILE_M)");
    assert_string_equal(refusal(nx_tutorial_matmul_fully_optimized, NX_DT_BF16, 1024, 1024, 1024, NULL, &err),
                        "nki_matmul_fully_optimized: M = 1024 must be a multiple of 2048 (BLOCK_M = TILE_M x "
                        "tiles_in_block_m)");
    assert_string_equal(refusal(nx_tutorial_matmul_fully_optimized, NX_DT_BF16, 512, 2048, 1024, NULL, &err),
                        "nki_matmul_fully_optimized: K = 512 must be a multiple of 1024 (BLOCK_K = TILE_K x "
                        "tiles_in_block_k)");
    /* the hoisted kernel keeps a whole K column of lhsT and rhs tiles: K = 65536 bf16 does not fit */
    assert_string_equal(refusal(nx_tutorial_matmul_hoist_load, NX_DT_BF16, 65536, 128, 512, NULL, &err),
                        "nki_matmul_hoist_load: one column of K / TILE_K lhsT tiles and one of rhs tiles need "
                        "659456 bytes per partition, SBUF has 196608");
    assert_string_equal(refusal(nx_tutorial_matmul_tiled, NX_DT_INT32, 128, 128, 512, NULL, &err),
                        "operand 0 (lhsT): dtype int32 is not a PE input type (fp32, bf16, fp16, fp8_e4m3, fp8_e5m2)");
    nx_attrs a;
    nx_attr items[3];
    set_blocking(&a, items, 0, 1, 1);
    assert_string_equal(refusal(nx_tutorial_matmul_fully_optimized, NX_DT_BF16, 128, 128, 512, &a, &err),
                        "attribute tiles_in_block_m: must be an integer in [1, 4096]");
    /* shapes that do not multiply */
    uint64_t out[2];
    const uint64_t l[2] = {128, 256}, r[2] = {256, 512};
    assert_int_equal(nx_tutorial_result_shape("x", 2, l, "y", 2, r, out, &err), -1);
    assert_string_equal(err.msg, "operand 1 (y): contraction dim K = 256 differs from operand 0 (x)'s K = 128 (lhsT "
                                 "is [K, M], rhs [K, N])");
    assert_int_equal(nx_tutorial_result_shape("x", 2, l, "y", 2, l, out, &err), 0);
    assert_true(out[0] == 256 && out[1] == 256);
}

/* The NKI DMA overview's examples, through the tutorial's load helper on
 * trn2: A[4, 4096] bf16 HBM -> SBUF is one transfer of 32 KiB on one DMA
 * engine; A[128, 128] bf16 is 16 transfers of 2 KiB (8 rows each), one per
 * engine. */
static void dma_structure(void **state) {
    (void)state;
    nx_machine m = test_machine("trn2");
    for (int ex = 0; ex < 2; ex++) {
        uint32_t rows = ex ? 128 : 4, cols = ex ? 128 : 4096;
        nx_builder *b = nx_builder_new(&m.geo, 1);
        assert_non_null(b);
        nx_error err;
        const uint64_t shape[2] = {rows, cols};
        uint64_t hbm;
        assert_int_equal(nx_builder_tensor(b, "A", NX_DT_BF16, 2, shape, NX_ROLE_INPUT, &hbm, &err), 0);
        nx_kctx *k = nx_kctx_new_machine(b, &m, 0, 1);
        assert_non_null(k);
        nx_tile t;
        assert_int_equal(nx_kctx_alloc(k, NX_OPK_SBUF, "A", NX_DT_BF16, rows, cols, &t, &err), 0);
        tut tt;
        memset(&tt, 0, sizeof tt);
        tt.k = k;
        tt.engines = 16;
        tt.groups = 2;
        tt.share = 8;
        nx_operand dst = nx_tile_ap(&t), src = nx_ap_hbm_rows(NX_DT_BF16, hbm, rows, (int32_t)cols, cols);
        assert_int_equal(tut_dma(&tt, &dst, &src, &err), 0);
        assert_int_equal(nx_kctx_finish(k, &err), 0);
        nx_kctx_free(k);
        nx_program p;
        assert_int_equal(nx_builder_finish(b, &p, &err), 0);
        nx_builder_free(b);
        const nx_stream *sp = &p.stream[0][NX_ENG_SP];
        uint32_t transfers = 0, engines_seen = 0;
        for (uint32_t i = 0; i < sp->count; i++) {
            nx_insn scratch;
            const nx_insn *in = nx_program_insn(&p, 0, NX_ENG_SP, i, &scratch);
            assert_non_null(in);
            if (in->opcode != NX_OP_DMA_COPY) continue;
            transfers++;
            assert_int_equal(in->op[0].partition_count * nx_operand_free_elems(&in->op[0]) * 2, ex ? 2048 : 32768);
            uint32_t e = nx_dma_queue_engine(&m.geo, (uint32_t)in->iparam[0]);
            assert_false(engines_seen & (1u << e));
            engines_seen |= 1u << e;
        }
        assert_int_equal(transfers, ex ? 16 : 1);
        nx_program_free(&p);
    }
}

/* The fully optimised kernel's K blocks are TILE_K = the machine's
 * partitions x tiles_in_block_k: K = 1024 is one block of 8 x 128 on trn2
 * and four of 8 x 32 on a 32-partition machine; the tolerance counts the
 * SBUF roundings the kernel does there. */
static void fully_optimized_tolerance_follows_the_machine(void **state) {
    (void)state;
    const nx_composite *c = nx_composite_get(NULL, "nki_matmul_fully_optimized");
    assert_non_null(c);
    const nx_op_rules *r = c->rules;
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_error err;
    if (r->default_op(&op, &err) != 0 || r->infer_results(&op, NULL, &err) != 0) fail_msg("%s", err.msg);
    nx_geometry geo = test_geometry("trn2");
    nx_tolerance t128, t32;
    assert_int_equal(nx_op_rules_tolerance_on(r, &op, &geo, 0, &t128, &err), 0);
    assert_string_equal(t128.text, "K=1024, 1 SBUF sums: 2.5 rel, 17.5 abs x eps(bf16)");
    geo.partitions = 32;
    assert_int_equal(nx_op_rules_tolerance_on(r, &op, &geo, 0, &t32, &err), 0);
    assert_string_equal(t32.text, "K=1024, 4 SBUF sums: 5.5 rel, 65.5 abs x eps(bf16)");
    const double eps = 0x1p-7, psum = 1.0 + 2.0 * 1024 * 32 * 0x1p-24 / eps;
    assert_true(fabs(t32.abs - (psum + 4 * 0.5 * 32) * eps) < 1e-12);
    nx_macro_op_free(&op);
}

/* The four composites are reachable by name, in the tutorial's order, with
 * the family's rules; none is a registry key. */
static void composite_rows(void **state) {
    (void)state;
    static const char *names[4] = {"nki_matmul_tiled", "nki_matmul_hoist_load", "nki_matmul_block_free_dimension",
                                   "nki_matmul_fully_optimized"};
    const nx_composite_table *t = nx_composites();
    uint32_t found = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        if (strcmp(t->items[i].family, "tutorial") != 0) continue;
        assert_string_equal(t->items[i].name, names[found]);
        assert_non_null(t->items[i].rules);
        assert_non_null(t->items[i].config.kernel_func->fn);
        found++;
    }
    assert_int_equal(found, 4);
    nx_kernel_target tg;
    nx_error err;
    assert_int_equal(nx_kernel_lookup(NULL, NULL, "nki_matmul_fully_optimized", &tg, &err), 0);
    assert_null(tg.entry);
    assert_non_null(tg.composite);
    assert_string_equal(tg.family, "tutorial");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tiled_values),           cmocka_unit_test(hoist_load_values),
        cmocka_unit_test(block_free_values),      cmocka_unit_test(fully_optimized_values),
        cmocka_unit_test(fully_optimized_spills), cmocka_unit_test(shape_rules),
        cmocka_unit_test(dma_structure),          cmocka_unit_test(composite_rows),
        cmocka_unit_test(fully_optimized_tolerance_follows_the_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
