/* The attention composite (kernels/attention/flash.h) through the run path
 * (nx_run_op): random shapes with ragged lengths (Sq and Skv not multiples
 * of 128 or 512, prefix caches Sq < Skv, Sq > Skv with fully masked rows),
 * causal and not, sliding windows, sinks, GQA ratios 1, 3, 4 and 8, D = 64,
 * 80, 128, 192, 256, fp32 and bf16, against the rules' reference (--check,
 * the tolerance from the dtype, D and Skv) on the functional executor and on
 * the SystemC model with the race detector, the two bit for bit equal;
 * values worked out by hand (a huge sink leaves 0, a row that sees no key
 * is 0, constant values are kept); and every refusal, one line naming the
 * operand or attribute. */
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

typedef struct outcome {
    uint32_t n;
    uint8_t *bytes[4];
    uint64_t size[4];
    nx_dtype dt[4];
} outcome;

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

/* Builds the op through the run path's preparation step (registry/prepare.h):
 * attributes checked, results by the rule; 0, or -1 with the rules' message. */
static int make_op(nx_macro_op *op, const char *func, const operand *ops, uint32_t n, const char *attrs,
                   nx_error *err) {
    nx_macro_op given;
    nx_macro_op_init(&given);
    assert_int_equal(nx_macro_op_set_func_name(&given, func, err), 0);
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
    *op = p.op; /* the prepared op moves to the caller */
    nx_macro_op_init(&p.op);
    nx_prepared_free(&p);
    return rc;
}

/* The prepared form nx_run_op takes, for op (already complete) on L. */
static int prepared_for(const nx_lowerer *L, const nx_macro_op *op, nx_prepared *p, nx_error *err) {
    nx_prepared_init(p);
    if (nx_prepare_target(L, op->func_name, p, err) != 0) return -1;
    return nx_prepare_op(p, op, NX_PREPARE_AS_GIVEN, NULL, err);
}

static uint8_t **make_inputs(const operand *ops, uint32_t n, uint64_t seed) {
    uint8_t **in = calloc(n, sizeof *in);
    assert_non_null(in);
    test_rng r = {seed * 0x9e3779b97f4a7c15ull + 3};
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

/* Runs on one backend with --check; the results copied into out. */
static void run_one(const char *machine, const nx_macro_op *op, uint8_t **in, int model, outcome *out,
                    const char *what) {
    nx_machine m = test_machine(machine);
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
    out->n = op->n_results;
    for (uint32_t j = 0; j < op->n_results; j++) {
        uint64_t n = 1;
        for (uint32_t d = 0; d < op->results[j].ndims; d++) n *= op->results[j].shape[d];
        out->dt[j] = op->results[j].dtype;
        out->size[j] = n * nx_dtype_size(op->results[j].dtype);
        out->bytes[j] = malloc(out->size[j]);
        assert_non_null(out->bytes[j]);
        memcpy(out->bytes[j], res.results[j], out->size[j]);
    }
    nx_run_result_free(&res);
    nx_lowerer_free(L);
}

static void outcome_free(outcome *o) {
    for (uint32_t j = 0; j < o->n; j++) free(o->bytes[j]);
}

/* Both backends, checked, equal bit for bit; the functional results in out. */
static void run_case(const char *machine, const char *func, const operand *ops, uint32_t n, const char *attrs,
                     outcome *out) {
    nx_macro_op op;
    nx_error err;
    char what[160];
    snprintf(what, sizeof what, "%s {%s} on %s", func, attrs ? attrs : "", machine);
    if (make_op(&op, func, ops, n, attrs, &err) != 0) fail_msg("%s: %s", what, err.msg);
    uint8_t **in = make_inputs(ops, n, n + elems(&ops[0]));
    outcome model;
    run_one(machine, &op, in, 0, out, what);
    run_one(machine, &op, in, 1, &model, what);
    for (uint32_t j = 0; j < out->n; j++)
        if (memcmp(out->bytes[j], model.bytes[j], out->size[j]) != 0)
            fail_msg("%s: result %u: the model's bytes differ from the functional executor's", what, j);
    outcome_free(&model);
    for (uint32_t i = 0; i < n; i++) free(in[i]);
    free(in);
    nx_macro_op_free(&op);
}

static void check_case(const char *machine, const char *func, const operand *ops, uint32_t n, const char *attrs) {
    outcome o;
    run_case(machine, func, ops, n, attrs, &o);
    outcome_free(&o);
}

static double value_at(const outcome *o, uint32_t j, uint64_t e) {
    return nx_dtype_load(o->dt[j], o->bytes[j] + e * nx_dtype_size(o->dt[j]));
}


/* q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D] (+ sink [Hq] when asked) */
static void attn(const char *machine, nx_dtype dt, uint64_t B, uint64_t Hq, uint64_t Hkv, uint64_t Sq, uint64_t Skv,
                 uint64_t D, const char *attrs, const double *sink) {
    operand o[4] = {{"q", dt, 4, {B, Hq, Sq, D}, NULL},
                    {"k", dt, 4, {B, Hkv, Skv, D}, NULL},
                    {"v", dt, 4, {B, Hkv, Skv, D}, NULL},
                    {"sink", NX_DT_FP32, 1, {Hq}, sink}};
    int has_sink = attrs && strstr(attrs, "sink=true") != NULL;
    check_case(machine, "attention", o, 3 + (uint32_t)has_sink, attrs);
}

static void attention_random(void **state) {
    (void)state;
    /* causal, a prefix cache (Sq < Skv), GQA 2, ragged lengths */
    attn("trn2", NX_DT_BF16, 1, 4, 2, 300, 700, 128, NULL, NULL);
    /* not causal, GQA 4, D = 64, fp32 */
    attn("trn2", NX_DT_FP32, 1, 4, 1, 200, 333, 64, "causal=false", NULL);
    /* a window with causal, GQA 8, D = 80, two batches */
    attn("trn2", NX_DT_BF16, 2, 8, 1, 257, 600, 80, "sliding_window=150", NULL);
    /* a window without causal (only keys <= p - W masked), D = 192 */
    attn("trn2", NX_DT_BF16, 1, 2, 2, 190, 190, 192, "causal=false;sliding_window=64", NULL);
    /* sinks, D = 256 (two contraction passes), GQA 3 */
    static const double sinks[6] = {0.5, -1.0, 2.0, 0.0, 3.5, -0.25};
    attn("trn2", NX_DT_BF16, 1, 6, 2, 129, 513, 256, "sink=true", sinks);
    attn("trn2", NX_DT_FP32, 1, 2, 2, 140, 140, 256, "sink=true;sliding_window=40", sinks);
    /* a negative scale (the masks and the max flip), D = 128 on trn1 */
    attn("trn1", NX_DT_BF16, 1, 2, 1, 100, 1100, 128, "scale=-0.05", NULL);
    /* more queries than keys: the first rows see no key (0) */
    attn("trn2", NX_DT_BF16, 1, 2, 2, 300, 100, 64, NULL, NULL);
    /* one query, a window of 1 (the query's own key) and a sink */
    attn("trn2", NX_DT_BF16, 1, 2, 1, 1, 1000, 128, "sliding_window=1;sink=true", sinks);
}

/* Many units per core (eight heads of 3 tiles, causal): the ring buffers
 * of the pipeline turn over many times; and units of one step each. */
static void attention_many_units(void **state) {
    (void)state;
    attn("trn2", NX_DT_BF16, 2, 8, 4, 1100, 1100, 64, NULL, NULL);
    attn("trn2", NX_DT_BF16, 3, 7, 7, 50, 90, 128, "causal=false", NULL);
}

static void attention_values(void **state) {
    (void)state;
    nx_macro_op op;
    nx_error err;
    /* v constant 0.75: every row that sees a key gets 0.75 (rounded P
     * sums to about 1); a sink of 1e4 takes all the weight: 0 */
    enum { S = 130, D = 64 };
    double *v = malloc(S * D * sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < S * D; i++) v[i] = 0.75;
    static const double big[1] = {1e4};
    operand a[4] = {{"q", NX_DT_FP32, 4, {1, 1, S, D}, NULL},
                    {"k", NX_DT_FP32, 4, {1, 1, S, D}, NULL},
                    {"v", NX_DT_FP32, 4, {1, 1, S, D}, v},
                    {"sink", NX_DT_FP32, 1, {1}, big}};
    outcome o;
    run_case("trn2", "attention", a, 3, NULL, &o);
    for (uint64_t e = 0; e < S * D; e++) assert_true(fabs(value_at(&o, 0, e) - 0.75) < 1e-5);
    outcome_free(&o);
    run_case("trn2", "attention", a, 4, "sink=true", &o);
    for (uint64_t e = 0; e < S * D; e++) assert_true(value_at(&o, 0, e) == 0.0);
    outcome_free(&o);
    /* Sq = 200 > Skv = 130, causal: rows 0..69 sit at negative positions */
    operand b[3] = {{"q", NX_DT_BF16, 4, {1, 1, 200, D}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 1, S, D}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 1, S, D}, v}};
    run_case("trn2", "attention", b, 3, NULL, &o);
    for (uint64_t e = 0; e < 200 * D; e++) {
        double want = e < 70 * D ? 0.0 : 0.75;
        assert_true(value_at(&o, 0, e) == want);
    }
    outcome_free(&o);
    free(v);
    /* the default op infers [1, 4, 384, 128] bf16 */
    operand c[3] = {{"q", NX_DT_BF16, 4, {1, 4, 384, 128}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 2, 512, 128}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 2, 512, 128}, NULL}};
    assert_int_equal(make_op(&op, "attention", c, 3, NULL, &err), 0);
    assert_int_equal(op.n_results, 1);
    assert_true(op.results[0].dtype == NX_DT_BF16 && op.results[0].shape[2] == 384);
    nx_macro_op_free(&op);
}

static void refused(const char *machine, const char *func, const operand *ops, uint32_t n, const char *attrs,
                    const char *msg) {
    nx_macro_op op;
    nx_error err;
    int rc = make_op(&op, func, ops, n, attrs, &err);
    if (rc == 0) {
        nx_machine m = test_machine(machine);
        nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
        nx_run_result res;
        nx_run_options opt = {.backend = NX_RUN_FUNCTIONAL};
        nx_prepared p;
        rc = prepared_for(L, &op, &p, &err);
        if (rc == 0) rc = nx_run_op(L, &m, &p, NULL, &opt, &res, &err);
        if (rc == 0) nx_run_result_free(&res);
        nx_prepared_free(&p);
        nx_lowerer_free(L);
    }
    nx_macro_op_free(&op);
    if (rc == 0) fail_msg("%s {%s}: not refused (wanted \"%s\")", func, attrs ? attrs : "", msg);
    assert_string_equal(err.msg, msg);
}

static void attention_refusals(void **state) {
    (void)state;
    operand a[4] = {{"q", NX_DT_BF16, 4, {1, 4, 64, 64}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 3, 64, 64}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 3, 64, 64}, NULL},
                    {"sink", NX_DT_FP32, 1, {4}, NULL}};
    refused("trn2", "attention", a, 3, NULL, "operand 1 (k): Hkv = 3 does not divide Hq = 4");
    a[1].shape[1] = a[2].shape[1] = 2;
    refused("trn2", "attention", a, 3, "sink=true", "attention takes 4 operands (q, k, v, sink (sink=true)), the op has 3");
    refused("trn2", "attention", a, 4, NULL, "attention takes 3 operands (q, k, v), the op has 4");
    refused("trn2", "attention", a, 3, "scale=0", "attribute scale: must be nonzero");
    refused("trn2", "attention", a, 3, "scale=\"big\"", "attribute scale: must be a number");
    refused("trn2", "attention", a, 3, "sliding_window=-2", "attribute sliding_window: -2 is negative (0 = none)");
    refused("trn2", "attention", a, 3, "sliding_window=1.5", "attribute sliding_window: must be an integer");
    refused("trn2", "attention", a, 3, "causal=2", "attribute causal: must be true or false (or 0 / 1)");
    refused("trn2", "attention", a, 3, "window=4",
            "attention: unknown attribute 'window'; attention reads: causal, scale, sliding_window, sink");
    operand s[4] = {a[0], a[1], a[2], {"sink", NX_DT_BF16, 1, {4}, NULL}};
    refused("trn2", "attention", s, 4, "sink=true", "operand 3 (sink): dtype bf16, the sink is fp32");
    s[3] = (operand){"sink", NX_DT_FP32, 1, {2}, NULL};
    refused("trn2", "attention", s, 4, "sink=true", "operand 3 (sink): the sink must be [4] (Hq)");
    operand d[3] = {{"q", NX_DT_BF16, 4, {1, 2, 8, 65}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 2, 8, 65}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 2, 8, 65}, NULL}};
    refused("trn2", "attention", d, 3, NULL, "operand 0 (q): D = 65 must be even");
    for (int i = 0; i < 3; i++) d[i].shape[3] = 258;
    refused("trn2", "attention", d, 3, NULL, "operand 0 (q): D = 258 beyond 256");
    operand e[3] = {{"q", NX_DT_BF16, 4, {1, 2, 8, 64}, NULL},
                    {"k", NX_DT_FP32, 4, {1, 2, 8, 64}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 2, 8, 64}, NULL}};
    refused("trn2", "attention", e, 3, NULL, "operand 1 (k): dtype fp32 differs from operand 0 (q)'s bf16");
    e[1] = (operand){"k", NX_DT_BF16, 4, {1, 2, 8, 32}, NULL};
    refused("trn2", "attention", e, 3, NULL,
            "operand 1 (k): k must be [1, Hkv, Skv, 64] (q's B and D), got [1, 2, 8, 32]");
    e[1] = (operand){"k", NX_DT_BF16, 4, {1, 2, 8, 64}, NULL};
    e[2] = (operand){"v", NX_DT_BF16, 4, {1, 2, 9, 64}, NULL};
    refused("trn2", "attention", e, 3, NULL, "operand 2 (v): v must have k's shape [1, 2, 8, 64]");
    operand f[3] = {{"q", NX_DT_INT32, 4, {1, 2, 8, 64}, NULL}, e[1], e[1]};
    refused("trn2", "attention", f, 3, NULL, "operand 0 (q): dtype int32, attention takes fp32 or bf16");
    operand g[3] = {{"q", NX_DT_BF16, 3, {2, 8, 64}, NULL}, e[1], e[1]};
    refused("trn2", "attention", g, 3, NULL, "operand 0 (q): rank 3, attention takes q [B, H, S, D]");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(attention_random),
        cmocka_unit_test(attention_many_units),
        cmocka_unit_test(attention_values),
        cmocka_unit_test(attention_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
