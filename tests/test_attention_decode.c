/* The attention_decode composite (kernels/attention/decode.h) through the
 * run path (nx_run_op) against its reference (--check, the tolerance from
 * the dtype, D and S_max), on the functional executor and on the SystemC
 * model with the race detector, the two bit for bit equal: ragged lengths
 * (0, 1, mid, full), paged caches with shuffled block tables, GQA ratios 1,
 * 4, 8 (and 32 q heads on one kv head: two head chunks), s = 1 .. 8,
 * D = 64, 80, 128, 192, 256, every mask combination (window, sink, paged),
 * fp32 and bf16; the refusals, one line each (run-time ones: a length past
 * S_max, a block id outside the cache, fault before any result is kept). */
#include <math.h>
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
#include "registry/prepare.h"
#include "registry/run/run.h"
#include "support.h"

typedef struct operand {
    const char *name;
    nx_dtype dt;
    uint32_t nd;
    uint64_t shape[4];
    const double *values; /* NULL: random in [-2, 2) */
} operand;

static void set_attrs(nx_macro_op *op, const char *attrs) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", attrs ? attrs : "");
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = 0;
        nx_error err;
        nx_value v;
        if (nx_value_parse(tok, eq + 1, &v, &err) != 0 || nx_attrs_set(&op->attrs, tok, &v, &err) != 0)
            fail_msg("%s: %s", tok, err.msg);
    }
}

static uint64_t elems(const operand *o) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < o->nd; d++) n *= o->shape[d];
    return n;
}

static int make_op(nx_macro_op *op, const operand *ops, uint32_t n, const char *attrs, nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, "attention_decode", err), 0);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(nx_macro_op_add_operand(&given, ops[i].name, ops[i].dt, ops[i].nd, ops[i].shape, err), 0);
    set_attrs(&given, attrs);
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

static int prepared_for(const nx_lowerer *L, const nx_macro_op *op, nx_prepared *p, nx_error *err) {
    nx_prepared_init(p);
    if (nx_prepare_target(L, op->func_name, p, err) != 0) return -1;
    return nx_prepare_op(p, op, NX_PREPARE_AS_GIVEN, NULL, err);
}

static uint8_t **make_inputs(const operand *ops, uint32_t n, uint64_t seed) {
    uint8_t **in = calloc(n, sizeof *in);
    assert_non_null(in);
    test_rng r = {seed * 0x9e3779b97f4a7c15ull + 7};
    for (uint32_t i = 0; i < n; i++) {
        uint64_t m = elems(&ops[i]);
        size_t es = nx_dtype_size(ops[i].dt);
        in[i] = malloc(m * es);
        assert_non_null(in[i]);
        for (uint64_t e = 0; e < m; e++)
            nx_dtype_store(ops[i].dt, in[i] + e * es, ops[i].values ? ops[i].values[e] : test_rng_uniform(&r, -2, 2));
    }
    return in;
}

static void free_inputs(uint8_t **in, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) free(in[i]);
    free(in);
}

/* One backend, checked; returns a copy of result 0 .. 2 concatenated. */
static uint8_t *run_one(const nx_macro_op *op, uint8_t **in, int model, uint64_t *size, const char *what) {
    nx_machine m = test_machine("trn2");
    nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
    nx_error err;
    nx_run_result res;
    nx_run_options opt = {.backend = model ? NX_RUN_MODEL : NX_RUN_FUNCTIONAL, .race_check = model, .check = 1};
    nx_prepared p;
    if (prepared_for(L, op, &p, &err) != 0) fail_msg("%s: %s", what, err.msg);
    if (nx_run_op(L, &m, &p, (const void *const *)in, &opt, &res, &err) != 0)
        fail_msg("%s (%s): %s", what, model ? "model" : "functional", err.msg);
    nx_prepared_free(&p);
    if (test_kcheck_program(res.prog, &err) != 0) fail_msg("%s: order check: %s", what, err.msg);
    for (uint32_t j = 0; j < op->n_results; j++)
        if (res.check[j].bad)
            fail_msg("%s (%s): result %u differs from the reference at element %llu (tolerance %s)", what,
                     model ? "model" : "functional", j, (unsigned long long)res.check[j].first_bad,
                     res.tolerance[j].text);
    assert_int_equal(res.check_failures, 0);
    uint64_t total = 0, sz[3];
    for (uint32_t j = 0; j < 3; j++) {
        uint64_t n = 1;
        for (uint32_t d = 0; d < op->results[j].ndims; d++) n *= op->results[j].shape[d];
        sz[j] = n * nx_dtype_size(op->results[j].dtype);
        total += sz[j];
    }
    uint8_t *out = malloc(total), *at = out;
    assert_non_null(out);
    for (uint32_t j = 0; j < 3; j++) memcpy(at, res.results[j], sz[j]), at += sz[j];
    *size = total;
    nx_run_result_free(&res);
    nx_lowerer_free(L);
    return out;
}

/* A decode problem: lengths and (paged) the block table given, the rest random. */
typedef struct problem {
    nx_dtype dt;
    uint64_t B, Hq, Hkv, s, D, S_max; /* paged: S_max = max_blocks N */
    uint64_t N, num_blocks;            /* N > 0: paged */
    const double *lengths, *table;     /* table NULL: a shuffled permutation */
    int sink;
    uint64_t window;
} problem;

static uint32_t build(const problem *pr, operand *ops, double **own) {
    const uint64_t MB = pr->N ? pr->S_max / pr->N : 0;
    uint32_t n = 0;
    ops[n++] = (operand){"q", pr->dt, 4, {pr->B, pr->Hq, pr->s, pr->D}, NULL};
    for (int kv = 0; kv < 2; kv++)
        ops[n++] = pr->N ? (operand){kv ? "v_cache" : "k_cache", pr->dt, 4, {pr->num_blocks, pr->Hkv, pr->N, pr->D}, NULL}
                         : (operand){kv ? "v_cache" : "k_cache", pr->dt, 4, {pr->B, pr->Hkv, pr->S_max, pr->D}, NULL};
    ops[n++] = (operand){"k_new", pr->dt, 4, {pr->B, pr->Hkv, pr->s, pr->D}, NULL};
    ops[n++] = (operand){"v_new", pr->dt, 4, {pr->B, pr->Hkv, pr->s, pr->D}, NULL};
    ops[n++] = (operand){"lengths", NX_DT_INT32, 1, {pr->B}, pr->lengths};
    *own = NULL;
    if (pr->N) {
        const double *t = pr->table;
        if (!t) {
            double *v = malloc(pr->B * MB * sizeof *v);
            assert_non_null(v);
            for (uint64_t i = 0; i < pr->B * MB; i++) v[i] = (double)(i % pr->num_blocks);
            test_rng r = {pr->B * 131 + MB};
            for (uint64_t i = pr->B * MB; i-- > 1;) {
                uint64_t j = test_rng_next(&r) % (i + 1);
                double x = v[i];
                v[i] = v[j], v[j] = x;
            }
            *own = v, t = v;
        }
        ops[n++] = (operand){"block_table", NX_DT_INT32, 2, {pr->B, MB}, t};
    }
    if (pr->sink) ops[n++] = (operand){"sink", NX_DT_FP32, 1, {pr->Hq}, NULL};
    return n;
}

static void attrs_of(const problem *pr, char *buf, size_t len) {
    snprintf(buf, len, "block_size=%llu;sliding_window=%llu;sink=%s", (unsigned long long)pr->N,
             (unsigned long long)pr->window, pr->sink ? "true" : "false");
}

/* Both backends, checked against the reference, equal bit for bit. */
static void check_problem(const problem *pr) {
    operand ops[8];
    double *own;
    uint32_t n = build(pr, ops, &own);
    char attrs[128], what[256];
    attrs_of(pr, attrs, sizeof attrs);
    snprintf(what, sizeof what, "attention_decode %s B=%llu Hq=%llu Hkv=%llu s=%llu D=%llu S_max=%llu {%s}",
             nx_dtype_name(pr->dt), (unsigned long long)pr->B, (unsigned long long)pr->Hq,
             (unsigned long long)pr->Hkv, (unsigned long long)pr->s, (unsigned long long)pr->D,
             (unsigned long long)pr->S_max, attrs);
    nx_macro_op op;
    nx_error err;
    if (make_op(&op, ops, n, attrs, &err) != 0) fail_msg("%s: %s", what, err.msg);
    uint8_t **in = make_inputs(ops, n, pr->B * 7 + pr->D + pr->s);
    uint64_t a, b;
    uint8_t *f = run_one(&op, in, 0, &a, what), *m = run_one(&op, in, 1, &b, what);
    assert_int_equal(a, b);
    if (memcmp(f, m, a) != 0) fail_msg("%s: the model's bytes differ from the functional executor's", what);
    free(f), free(m), free(own);
    free_inputs(in, n);
    nx_macro_op_free(&op);
}

static void ragged_contiguous(void **state) {
    (void)state;
    static const double L4[4] = {0, 1, 37, 254}, L2[2] = {900, 3};
    /* GQA 4, s = 2, bf16; lengths 0 (only the new tokens), 1, mid, full */
    check_problem(&(problem){NX_DT_BF16, 4, 8, 2, 2, 64, 256, 0, 0, L4, NULL, 0, 0});
    /* GQA 1, D = 128, fp32, a ragged last tile (S_max = 1000) */
    check_problem(&(problem){NX_DT_FP32, 2, 2, 2, 1, 128, 1000, 0, 0, L2, NULL, 0, 0});
    /* GQA 8, D = 256 (two PE passes), s = 8 */
    static const double L3[2] = {120, 7};
    check_problem(&(problem){NX_DT_BF16, 2, 16, 2, 8, 256, 200, 0, 0, L3, NULL, 0, 0});
    /* 32 q heads on one kv head, s = 8: two head chunks of 16 x 8 rows */
    check_problem(&(problem){NX_DT_BF16, 2, 32, 1, 8, 64, 300, 0, 0, L3, NULL, 0, 0});
}

static void paged_shuffled(void **state) {
    (void)state;
    static const double L4[4] = {0, 17, 100, 250}, L2[2] = {63, 960};
    /* blocks of 16 (2 chunks of 8), 16 blocks a row, a shuffled table */
    check_problem(&(problem){NX_DT_BF16, 4, 8, 2, 2, 64, 256, 16, 70, L4, NULL, 0, 0});
    /* blocks of 64, D = 128, fp32, GQA 4, s = 4 */
    check_problem(&(problem){NX_DT_FP32, 2, 8, 2, 4, 128, 1024, 64, 40, L2, NULL, 0, 0});
    /* blocks of 48 (3 x 16), a table that repeats no block and runs backwards */
    static const double T[2 * 6] = {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, L[2] = {280, 47};
    check_problem(&(problem){NX_DT_BF16, 2, 4, 4, 1, 80, 288, 48, 12, L, T, 0, 0});
    /* D = 192, blocks of 32 */
    static const double Lb[3] = {5, 200, 31};
    check_problem(&(problem){NX_DT_BF16, 3, 4, 1, 3, 192, 256, 32, 30, Lb, NULL, 0, 0});
}

static void masks(void **state) {
    (void)state;
    static const double L[3] = {0, 50, 300};
    for (int paged = 0; paged < 2; paged++)
        for (int sink = 0; sink < 2; sink++)
            for (uint64_t w = 0; w <= 64; w += 63) { /* 0 (none), 1 (only itself), 64 */
                uint64_t W = w ? (w == 63 ? 1 : 64) : 0;
                check_problem(&(problem){NX_DT_BF16, 3, 8, 2, 3, 64, 320, paged ? 32 : 0, paged ? 40 : 0, L, NULL,
                                         sink, W});
            }
    /* a window wider than the cache, with a sink, fp32 */
    static const double L2[2] = {10, 200};
    check_problem(&(problem){NX_DT_FP32, 2, 4, 2, 5, 128, 256, 0, 0, L2, NULL, 1, 5000});
}

static void tokens_and_dims(void **state) {
    (void)state;
    static const double L[2] = {70, 130};
    for (uint64_t s = 1; s <= 8; s++) check_problem(&(problem){NX_DT_BF16, 2, 4, 1, s, 64, 140, 0, 0, L, NULL, 0, 0});
    static const uint64_t D[5] = {64, 80, 128, 192, 256};
    for (int i = 0; i < 5; i++) check_problem(&(problem){NX_DT_FP32, 2, 2, 1, 2, D[i], 140, 0, 0, L, NULL, 1, 0});
}

/* ---- refusals ---- */

static void refused_ops(const operand *ops, uint32_t n, const char *attrs, const uint8_t *const *in, const char *msg) {
    nx_macro_op op;
    nx_error err;
    int rc = make_op(&op, ops, n, attrs, &err);
    if (rc == 0) {
        nx_machine m = test_machine("trn2");
        nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
        nx_run_result res;
        nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL};
        nx_prepared p;
        rc = prepared_for(L, &op, &p, &err);
        if (rc == 0) rc = nx_run_op(L, &m, &p, (const void *const *)in, &opt, &res, &err);
        if (rc == 0) nx_run_result_free(&res);
        nx_prepared_free(&p);
        nx_lowerer_free(L);
    }
    nx_macro_op_free(&op);
    if (rc == 0) fail_msg("{%s}: not refused (wanted \"%s\")", attrs ? attrs : "", msg);
    if (!strstr(err.msg, msg)) fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
    assert_null(strchr(err.msg, '\n'));
}

static void refusals(void **state) {
    (void)state;
    operand o[8] = {{"q", NX_DT_BF16, 4, {2, 8, 2, 64}, NULL},       {"k_cache", NX_DT_BF16, 4, {2, 2, 64, 64}, NULL},
                    {"v_cache", NX_DT_BF16, 4, {2, 2, 64, 64}, NULL}, {"k_new", NX_DT_BF16, 4, {2, 2, 2, 64}, NULL},
                    {"v_new", NX_DT_BF16, 4, {2, 2, 2, 64}, NULL},    {"lengths", NX_DT_INT32, 1, {2}, NULL}};
    operand a[8];
#define WITH(i, field, val) (memcpy(a, o, sizeof o), a[i].field = val, a)
    refused_ops(o, 5, NULL, NULL, "attention_decode takes 6 operands (q, k_cache, v_cache, k_new, v_new, lengths), the op has 5");
    refused_ops(WITH(0, shape[1], 5), 6, NULL, NULL,
                "operand 1 (k_cache): Hkv = 2 kv heads do not divide operand 0 (q)'s Hq = 5");
    memcpy(a, o, sizeof o);
    a[0].shape[2] = 9, a[3].shape[2] = 9, a[4].shape[2] = 9;
    refused_ops(a, 6, NULL, NULL, "operand 0 (q): s = 9 new tokens, attention_decode takes 1 to 8");
    memcpy(a, o, sizeof o);
    for (int i = 0; i < 5; i++) a[i].shape[3] = 63;
    refused_ops(a, 6, NULL, NULL, "operand 0 (q): head dim D = 63, must be even and at most 256");
    for (int i = 0; i < 5; i++) a[i].shape[3] = 258;
    refused_ops(a, 6, NULL, NULL, "operand 0 (q): head dim D = 258, must be even and at most 256");
    refused_ops(WITH(1, dt, NX_DT_FP32), 6, NULL, NULL, "operand 1 (k_cache): dtype fp32 differs from operand 0 (q)'s bf16");
    refused_ops(WITH(5, dt, NX_DT_FP32), 6, NULL, NULL, "operand 5 (lengths): dtype fp32, lengths must be int32");
    refused_ops(WITH(3, shape[1], 3), 6, NULL, NULL, "operand 3 (k_new): dim 1 is 3, must be 2 (the caches' Hkv)");
    refused_ops(WITH(2, shape[2], 65), 6, NULL, NULL, "operand 2 (v_cache): dim 2 is 65, differs from operand 1 (k_cache)'s 64");
    refused_ops(WITH(0, dt, NX_DT_INT32), 6, NULL, NULL, "operand 0 (q): dtype int32, attention_decode takes fp32 or bf16");
    refused_ops(o, 6, "sliding_window=-2", NULL, "attribute sliding_window: -2 is negative (0 = no window)");
    refused_ops(o, 6, "block_size=-1", NULL, "attribute block_size: -1 is negative (0 = contiguous caches)");
    refused_ops(o, 6, "scale=0.0", NULL, "attribute scale: 0 must be positive");
    refused_ops(o, 6, "causal=true", NULL, "attention_decode: unknown attribute 'causal'");
    refused_ops(o, 6, "sink=true", NULL, "attention_decode takes 7 operands (q, k_cache, v_cache, k_new, v_new, lengths, sink), the op has 6");
    memcpy(a, o, sizeof o);
    a[6] = (operand){"sink", NX_DT_FP32, 1, {4}, NULL};
    refused_ops(a, 7, "sink=true", NULL, "operand 6 (sink): sink must be fp32 [Hq] = [8]");
    /* paged: the caches' N must be block_size; N = 100 has no chunking */
    operand pg[8];
    memcpy(pg, o, sizeof o);
    pg[1].shape[0] = pg[2].shape[0] = 9, pg[1].shape[2] = pg[2].shape[2] = 16;
    pg[6] = (operand){"block_table", NX_DT_INT32, 2, {2, 4}, NULL};
    refused_ops(pg, 7, "block_size=32", NULL, "operand 1 (k_cache): dim 2 is 16, must be 32 (block_size)");
    pg[6].dt = NX_DT_FP32;
    refused_ops(pg, 7, "block_size=16", NULL, "operand 6 (block_table): dtype fp32, block_table must be int32");
    pg[6].dt = NX_DT_INT32;
    pg[1].shape[2] = pg[2].shape[2] = 100;
    refused_ops(pg, 7, "block_size=100", NULL, "attribute block_size: N = 100 must be c x 2^k with c <= 8 and 2^k <= 128");
    /* run time: a length with L_b + s past S_max, a used block id outside the
     * cache: the run faults (nothing is kept) */
    static const double bad_len[2] = {10, 63}, ok_len[2] = {10, 40};
    memcpy(a, o, sizeof o);
    a[5].values = bad_len;
    uint8_t **in = make_inputs(a, 6, 1);
    refused_ops(a, 6, NULL, (const uint8_t *const *)in, "is out of bounds [0, 64)");
    free_inputs(in, 6);
    memcpy(pg, o, sizeof o);
    pg[1].shape[0] = pg[2].shape[0] = 9, pg[1].shape[2] = pg[2].shape[2] = 16;
    static const double table[8] = {0, 1, 2, 3, 4, 5, 9, 7};
    pg[5].values = ok_len;
    pg[6] = (operand){"block_table", NX_DT_INT32, 2, {2, 4}, table};
    in = make_inputs(pg, 7, 2);
    refused_ops(pg, 7, "block_size=16", (const uint8_t *const *)in, "is out of bounds [0, 9)");
    free_inputs(in, 7);
#undef WITH
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ragged_contiguous), cmocka_unit_test(paged_shuffled), cmocka_unit_test(masks),
        cmocka_unit_test(tokens_and_dims),   cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
