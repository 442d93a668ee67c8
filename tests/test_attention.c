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
#include "roster_case.h"
#include "support.h"














/* q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D] (+ sink [Hq] when asked) */
static void attn(const char *machine, nx_dtype dt, uint64_t B, uint64_t Hq, uint64_t Hkv, uint64_t Sq, uint64_t Skv,
                 uint64_t D, const char *attrs, const double *sink) {
    roster_operand o[4] = {{"q", dt, 4, {B, Hq, Sq, D}, NULL},
                    {"k", dt, 4, {B, Hkv, Skv, D}, NULL},
                    {"v", dt, 4, {B, Hkv, Skv, D}, NULL},
                    {"sink", NX_DT_FP32, 1, {Hq}, sink}};
    int has_sink = attrs && strstr(attrs, "sink=true") != NULL;
    roster_check(machine, "attention", o, 3 + (uint32_t)has_sink, attrs);
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
    roster_operand a[4] = {{"q", NX_DT_FP32, 4, {1, 1, S, D}, NULL},
                    {"k", NX_DT_FP32, 4, {1, 1, S, D}, NULL},
                    {"v", NX_DT_FP32, 4, {1, 1, S, D}, v},
                    {"sink", NX_DT_FP32, 1, {1}, big}};
    roster_outcome o;
    roster_run("trn2", "attention", a, 3, NULL, &o);
    for (uint64_t e = 0; e < S * D; e++) assert_true(fabs(roster_value_at(&o, 0, e) - 0.75) < 1e-5);
    roster_outcome_free(&o);
    roster_run("trn2", "attention", a, 4, "sink=true", &o);
    for (uint64_t e = 0; e < S * D; e++) assert_true(roster_value_at(&o, 0, e) == 0.0);
    roster_outcome_free(&o);
    /* Sq = 200 > Skv = 130, causal: rows 0..69 sit at negative positions */
    roster_operand b[3] = {{"q", NX_DT_BF16, 4, {1, 1, 200, D}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 1, S, D}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 1, S, D}, v}};
    roster_run("trn2", "attention", b, 3, NULL, &o);
    for (uint64_t e = 0; e < 200 * D; e++) {
        double want = e < 70 * D ? 0.0 : 0.75;
        assert_true(roster_value_at(&o, 0, e) == want);
    }
    roster_outcome_free(&o);
    free(v);
    /* the default op infers [1, 4, 384, 128] bf16 */
    roster_operand c[3] = {{"q", NX_DT_BF16, 4, {1, 4, 384, 128}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 2, 512, 128}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 2, 512, 128}, NULL}};
    assert_int_equal(roster_make_op(&op, "attention", c, 3, NULL, &err), 0);
    assert_int_equal(op.n_results, 1);
    assert_true(op.results[0].dtype == NX_DT_BF16 && op.results[0].shape[2] == 384);
    nx_macro_op_free(&op);
}


static void attention_refusals(void **state) {
    (void)state;
    roster_operand a[4] = {{"q", NX_DT_BF16, 4, {1, 4, 64, 64}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 3, 64, 64}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 3, 64, 64}, NULL},
                    {"sink", NX_DT_FP32, 1, {4}, NULL}};
    roster_refused("trn2", "attention", a, 3, NULL, "operand 1 (k): Hkv = 3 does not divide Hq = 4");
    a[1].shape[1] = a[2].shape[1] = 2;
    roster_refused("trn2", "attention", a, 3, "sink=true", "attention takes 4 operands (q, k, v, sink (sink=true)), the op has 3");
    roster_refused("trn2", "attention", a, 4, NULL, "attention takes 3 operands (q, k, v), the op has 4");
    roster_refused("trn2", "attention", a, 3, "scale=0", "attribute scale: must be nonzero");
    roster_refused("trn2", "attention", a, 3, "scale=\"big\"", "attribute scale: must be a number");
    roster_refused("trn2", "attention", a, 3, "sliding_window=-2", "attribute sliding_window: -2 is negative (0 = none)");
    roster_refused("trn2", "attention", a, 3, "sliding_window=1.5", "attribute sliding_window: must be an integer");
    roster_refused("trn2", "attention", a, 3, "causal=2", "attribute causal: must be true or false (or 0 / 1)");
    roster_refused("trn2", "attention", a, 3, "window=4",
            "attention: unknown attribute 'window'; attention reads: causal, scale, sliding_window, sink");
    roster_operand s[4] = {a[0], a[1], a[2], {"sink", NX_DT_BF16, 1, {4}, NULL}};
    roster_refused("trn2", "attention", s, 4, "sink=true", "operand 3 (sink): dtype bf16, the sink is fp32");
    s[3] = (roster_operand){"sink", NX_DT_FP32, 1, {2}, NULL};
    roster_refused("trn2", "attention", s, 4, "sink=true", "operand 3 (sink): the sink must be [4] (Hq)");
    roster_operand d[3] = {{"q", NX_DT_BF16, 4, {1, 2, 8, 65}, NULL},
                    {"k", NX_DT_BF16, 4, {1, 2, 8, 65}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 2, 8, 65}, NULL}};
    roster_refused("trn2", "attention", d, 3, NULL, "operand 0 (q): D = 65 must be even");
    for (int i = 0; i < 3; i++) d[i].shape[3] = 258;
    roster_refused("trn2", "attention", d, 3, NULL, "operand 0 (q): D = 258 beyond 256");
    roster_operand e[3] = {{"q", NX_DT_BF16, 4, {1, 2, 8, 64}, NULL},
                    {"k", NX_DT_FP32, 4, {1, 2, 8, 64}, NULL},
                    {"v", NX_DT_BF16, 4, {1, 2, 8, 64}, NULL}};
    roster_refused("trn2", "attention", e, 3, NULL, "operand 1 (k): dtype fp32 differs from operand 0 (q)'s bf16");
    e[1] = (roster_operand){"k", NX_DT_BF16, 4, {1, 2, 8, 32}, NULL};
    roster_refused("trn2", "attention", e, 3, NULL,
            "operand 1 (k): k must be [1, Hkv, Skv, 64] (q's B and D), got [1, 2, 8, 32]");
    e[1] = (roster_operand){"k", NX_DT_BF16, 4, {1, 2, 8, 64}, NULL};
    e[2] = (roster_operand){"v", NX_DT_BF16, 4, {1, 2, 9, 64}, NULL};
    roster_refused("trn2", "attention", e, 3, NULL, "operand 2 (v): v must have k's shape [1, 2, 8, 64]");
    roster_operand f[3] = {{"q", NX_DT_INT32, 4, {1, 2, 8, 64}, NULL}, e[1], e[1]};
    roster_refused("trn2", "attention", f, 3, NULL, "operand 0 (q): dtype int32, attention takes fp32 or bf16");
    roster_operand g[3] = {{"q", NX_DT_BF16, 3, {2, 8, 64}, NULL}, e[1], e[1]};
    roster_refused("trn2", "attention", g, 3, NULL, "operand 0 (q): rank 3, attention takes q [B, H, S, D]");
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
