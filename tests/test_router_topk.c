/* The router_topk composite (kernels/moe/router.h) through the run path
 * (tests/roster_case.h): every case on the functional executor and on the
 * SystemC model with the race detector, bit for bit equal, each checked
 * against nx_ref_router_topk under the rules' tolerance; beside that, every
 * case's results are checked against the kernel's own logits here (the
 * indices are the k largest in descending order, ties to the lower index;
 * the affinities are zero exactly off the selection and sum to one where
 * normalised), so a selection both sides got wrong still fails. Shapes: T =
 * 1, 77, 129, 130, 300 (ragged tiles, one or two tiles per core), E = 3 ..
 * 512, H with a ragged last K tile, k = 1 .. 16, softmax and sigmoid,
 * pre_norm and norm_topk in all four combinations, bias fp32 and bf16, w
 * streamed (trn1's smaller SBUF), trn1 and trn2; ties by hand (within a
 * round, across the two rounds, all logits equal, E < 8 with -inf
 * padding); the refusals, one line each. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "roster_case.h"

/* The selection and the affinities against the kernel's own logits. */
static void check_outcome(const roster_outcome *o, uint64_t T, uint64_t E, uint64_t k, int normalised) {
    assert_int_equal(o->n, 3);
    uint8_t *sel = malloc(E);
    assert_non_null(sel);
    for (uint64_t t = 0; t < T; t++) {
        memset(sel, 0, E);
        double asum = 0;
        for (uint64_t j = 0; j < k; j++) {
            double iv = roster_value_at(o, 2, t * k + j);
            if (iv < 0 || iv >= (double)E) fail_msg("token %llu slot %llu: index %g outside [0, %llu)", (unsigned long long)t, (unsigned long long)j, iv, (unsigned long long)E);
            uint64_t e = (uint64_t)iv;
            if (sel[e]) fail_msg("token %llu: expert %llu selected twice", (unsigned long long)t, (unsigned long long)e);
            sel[e] = 1;
            if (j > 0) {
                uint64_t p = (uint64_t)roster_value_at(o, 2, t * k + j - 1);
                double lp = roster_value_at(o, 0, t * E + p), le = roster_value_at(o, 0, t * E + e);
                if (lp < le || (lp == le && p > e))
                    fail_msg("token %llu: slot %llu (expert %llu, %g) after expert %llu (%g)", (unsigned long long)t,
                             (unsigned long long)j, (unsigned long long)e, le, (unsigned long long)p, lp);
            }
            double a = roster_value_at(o, 1, t * E + e);
            assert_true(a >= 0 && a <= 1);
            asum += a;
        }
        const uint64_t last = (uint64_t)roster_value_at(o, 2, t * k + k - 1);
        const double lk = roster_value_at(o, 0, t * E + last);
        for (uint64_t e = 0; e < E; e++) {
            if (sel[e]) continue;
            double le = roster_value_at(o, 0, t * E + e);
            if (le > lk || (le == lk && e < last))
                fail_msg("token %llu: expert %llu (%g) left out but ranks above expert %llu (%g)", (unsigned long long)t,
                         (unsigned long long)e, le, (unsigned long long)last, lk);
            if (roster_value_at(o, 1, t * E + e) != 0.0)
                fail_msg("token %llu: affinity %g at unselected expert %llu", (unsigned long long)t,
                         roster_value_at(o, 1, t * E + e), (unsigned long long)e);
        }
        if (normalised && fabs(asum - 1.0) > 1e-5) fail_msg("token %llu: affinities sum to %.9g", (unsigned long long)t, asum);
    }
    free(sel);
}

typedef struct rcase {
    const char *machine;
    uint64_t T, H, E, k;
    nx_dtype dt;
    const char *act;
    int pre_norm, norm_topk;
    nx_dtype bias; /* NX_DT_COUNT: none */
} rcase;

static void run_case(const rcase *c) {
    roster_operand ops[3] = {{"x", c->dt, 2, {c->T, c->H}, NULL}, {"w", c->dt, 2, {c->H, c->E}, NULL},
                             {"bias", c->bias, 1, {c->E}, NULL}};
    const int bias = c->bias != NX_DT_COUNT;
    char attrs[160];
    snprintf(attrs, sizeof attrs, "k=%llu;act=\"%s\";pre_norm=%s;norm_topk=%s;bias=%s", (unsigned long long)c->k, c->act,
             c->pre_norm ? "true" : "false", c->norm_topk ? "true" : "false", bias ? "true" : "false");
    roster_outcome o;
    roster_run(c->machine, "router_topk", ops, bias ? 3 : 2, attrs, &o);
    const int softmax = strcmp(c->act, "softmax") == 0;
    check_outcome(&o, c->T, c->E, c->k, c->norm_topk || (softmax && (!c->pre_norm || c->k == c->E)));
    roster_outcome_free(&o);
}

#define NOB NX_DT_COUNT

static void shapes_and_modes(void **state) {
    (void)state;
    static const rcase cases[] = {
        {"trn2", 130, 256, 64, 8, NX_DT_BF16, "softmax", 1, 0, NOB},
        {"trn2", 129, 200, 8, 2, NX_DT_BF16, "softmax", 1, 1, NOB},      /* Mixtral-like, ragged K tile */
        {"trn2", 77, 384, 16, 4, NX_DT_FP32, "softmax", 0, 0, NX_DT_FP32}, /* DBRX-like */
        {"trn2", 300, 130, 128, 8, NX_DT_BF16, "sigmoid", 1, 1, NX_DT_BF16}, /* two tiles per core */
        {"trn2", 130, 128, 256, 16, NX_DT_BF16, "sigmoid", 0, 0, NX_DT_FP32},
        {"trn2", 77, 96, 512, 13, NX_DT_FP32, "softmax", 1, 0, NX_DT_BF16}, /* H < one K tile */
        {"trn2", 1, 512, 24, 9, NX_DT_BF16, "softmax", 0, 1, NOB},          /* one token: core 1 idle */
        {"trn2", 129, 256, 3, 3, NX_DT_BF16, "softmax", 1, 0, NOB},         /* E < 8: -inf padding, k = E */
        {"trn2", 130, 64, 40, 1, NX_DT_FP32, "sigmoid", 0, 1, NOB},
        {"trn1", 130, 300, 100, 12, NX_DT_BF16, "softmax", 1, 1, NX_DT_FP32},
        {"trn1", 77, 256, 512, 16, NX_DT_FP32, "sigmoid", 1, 0, NOB},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* w does not stay in SBUF: trn1 (192 KiB per partition) with w [16384, 256]
 * bf16 (64 KiB per partition) beside the x rows and their transposes
 * (2 x 32 KiB + 2 x 32 KiB): streamed in chunks per token tile, twice on
 * each core for T = 300. */
static void streamed_w(void **state) {
    (void)state;
    const rcase a = {"trn1", 77, 16384, 256, 8, NX_DT_BF16, "softmax", 1, 0, NX_DT_FP32};
    const rcase b = {"trn1", 300, 16384, 256, 5, NX_DT_BF16, "sigmoid", 0, 1, NOB};
    run_case(&a);
    run_case(&b);
}

/* w columns c_e / H with x = 1: logit e is c_e exactly. */
static void tie_case(const char *machine, uint64_t T, uint64_t H, uint64_t E, uint64_t k, const double *c,
                     const int32_t *want, const char *act) {
    double *xv = malloc(T * H * sizeof *xv), *wv = malloc(H * E * sizeof *wv);
    assert_true(xv && wv);
    for (uint64_t i = 0; i < T * H; i++) xv[i] = 1.0;
    for (uint64_t h = 0; h < H; h++)
        for (uint64_t e = 0; e < E; e++) wv[h * E + e] = c[e] / (double)H;
    roster_operand ops[2] = {{"x", NX_DT_BF16, 2, {T, H}, xv}, {"w", NX_DT_BF16, 2, {H, E}, wv}};
    char attrs[64];
    snprintf(attrs, sizeof attrs, "k=%llu;act=\"%s\"", (unsigned long long)k, act);
    roster_outcome o;
    roster_run(machine, "router_topk", ops, 2, attrs, &o);
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t j = 0; j < k; j++) {
            double got = roster_value_at(&o, 2, t * k + j);
            if (got != want[j]) fail_msg("token %llu slot %llu: expert %g, want %d", (unsigned long long)t, (unsigned long long)j, got, want[j]);
        }
    /* equal logits, equal affinities */
    for (uint64_t j = 1; j < k; j++)
        if (c[want[j]] == c[want[j - 1]])
            assert_true(roster_value_at(&o, 1, want[j]) == roster_value_at(&o, 1, want[j - 1]));
    check_outcome(&o, T, E, k, 0);
    roster_outcome_free(&o);
    free(xv);
    free(wv);
}

static void ties(void **state) {
    (void)state;
    /* within one round: the three 5s in index order, then the 3s */
    static const double c1[12] = {3, 5, 5, 1, 5, 3, 0, 3, 1, 1, 2, 0};
    static const int32_t w1[6] = {1, 2, 4, 0, 5, 7};
    tie_case("trn2", 5, 16, 12, 6, c1, w1, "softmax");
    /* ten equal maxima, k = 12: the round boundary falls among them */
    double c2[20];
    for (int e = 0; e < 20; e++) c2[e] = e % 2 ? 4 : (e < 12 ? 1 : 2);
    static const int32_t w2[12] = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 12, 14};
    tie_case("trn2", 3, 32, 20, 12, c2, w2, "sigmoid");
    /* every logit equal (x = 0 would do; here c = 0): experts 0 .. 15 */
    static const double c3[20] = {0};
    static const int32_t w3[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    tie_case("trn1", 130, 8, 20, 16, c3, w3, "softmax");
    /* E < 8: ties among the real experts, never the -inf padding */
    static const double c4[5] = {-2, 7, -2, 7, -2};
    static const int32_t w4[5] = {1, 3, 0, 2, 4};
    tie_case("trn2", 2, 16, 5, 5, c4, w4, "softmax");
}

/* The all-equal case in numbers: softmax over E equal logits gives 1/E at
 * each selected expert (pre_norm), 1/k with norm_topk. */
static void equal_logits_values(void **state) {
    (void)state;
    const uint64_t T = 4, H = 16, E = 10, k = 4;
    static const double zero[64] = {0};
    roster_operand ops[2] = {{"x", NX_DT_FP32, 2, {T, H}, zero}, {"w", NX_DT_FP32, 2, {H, E}, NULL}};
    roster_outcome o;
    roster_run("trn2", "router_topk", ops, 2, "k=4", &o);
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t j = 0; j < k; j++) {
            assert_true(roster_value_at(&o, 2, t * k + j) == (double)j);
            assert_true(fabs(roster_value_at(&o, 1, t * E + j) - 0.1) < 1e-7);
        }
    roster_outcome_free(&o);
    roster_run("trn2", "router_topk", ops, 2, "k=4;norm_topk=true", &o);
    for (uint64_t j = 0; j < k; j++) assert_true(fabs(roster_value_at(&o, 1, j) - 0.25) < 1e-7);
    roster_outcome_free(&o);
}

static void refusals(void **state) {
    (void)state;
    roster_operand o[3] = {{"x", NX_DT_BF16, 2, {8, 64}, NULL}, {"w", NX_DT_BF16, 2, {64, 12}, NULL},
                           {"bias", NX_DT_FP32, 1, {12}, NULL}};
    roster_refused("trn2", "router_topk", o, 2, "k=13", "attribute k: 13 is larger than operand 1 (w)'s E = 12 experts");
    roster_refused("trn2", "router_topk", o, 2, "k=17", "attribute k: 17 is above the limit of 16 (two rounds of max8)");
    roster_refused("trn2", "router_topk", o, 2, "k=0", "attribute k: 0, router_topk selects at least 1 expert");
    roster_refused("trn2", "router_topk", o, 2, NULL, "attribute k: required (the experts per token, 1 to 16)");
    roster_refused("trn2", "router_topk", o, 2, "k=2;act=\"relu\"", "attribute act: 'relu' is not one of softmax, sigmoid");
    roster_refused("trn2", "router_topk", o, 3, "k=2", "router_topk takes 2 operands (x, w) with bias=false, the op has 3");
    roster_refused("trn2", "router_topk", o, 2, "k=2;bias=true", "router_topk takes 3 operands (x, w, bias) with bias=true, the op has 2");
    roster_operand big[2] = {{"x", NX_DT_BF16, 2, {8, 64}, NULL}, {"w", NX_DT_BF16, 2, {64, 513}, NULL}};
    roster_refused("trn2", "router_topk", big, 2, "k=2",
                   "operand 1 (w): E = 513 experts, router_topk takes at most 512 (one PSUM bank of fp32 logits per token)");
    roster_operand r3[2] = {{"x", NX_DT_BF16, 3, {2, 4, 64}, NULL}, {"w", NX_DT_BF16, 2, {64, 12}, NULL}};
    roster_refused("trn2", "router_topk", r3, 2, "k=2", "operand 0 (x): rank 3, must be [T, H]");
    roster_operand w1[2] = {{"x", NX_DT_BF16, 2, {8, 64}, NULL}, {"w", NX_DT_BF16, 1, {64}, NULL}};
    roster_refused("trn2", "router_topk", w1, 2, "k=2", "operand 1 (w): rank 1, must be [H, E]");
    roster_operand wh[2] = {{"x", NX_DT_BF16, 2, {8, 64}, NULL}, {"w", NX_DT_BF16, 2, {60, 12}, NULL}};
    roster_refused("trn2", "router_topk", wh, 2, "k=2", "operand 1 (w): dim 0 is 60, must be operand 0 (x)'s H = 64");
    roster_operand bs[3] = {o[0], o[1], {"bias", NX_DT_FP32, 1, {11}, NULL}};
    roster_refused("trn2", "router_topk", bs, 3, "k=2;bias=true", "operand 2 (bias): must be [E] = [12]");
    roster_operand xi[2] = {{"x", NX_DT_INT32, 2, {8, 64}, NULL}, {"w", NX_DT_INT32, 2, {64, 12}, NULL}};
    roster_refused("trn2", "router_topk", xi, 2, "k=2", "operand 0 (x): dtype int32, router_topk takes fp32 or bf16");
    roster_operand wd[2] = {o[0], {"w", NX_DT_FP32, 2, {64, 12}, NULL}};
    roster_refused("trn2", "router_topk", wd, 2, "k=2", "operand 1 (w): dtype fp32 differs from operand 0 (x)'s bf16");
    roster_operand bd[3] = {o[0], o[1], {"bias", NX_DT_INT32, 1, {12}, NULL}};
    roster_refused("trn2", "router_topk", bd, 3, "k=2;bias=true", "operand 2 (bias): dtype int32, router_topk takes fp32 or bf16");
    roster_operand hx[2] = {{"x", NX_DT_FP32, 2, {8, 65600}, NULL}, {"w", NX_DT_FP32, 2, {65600, 8}, NULL}};
    roster_refused("trn2", "router_topk", hx, 2, "k=2",
                   "operand 0 (x): H = 65600 is beyond the 65536 elements an engine streams per partition");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes_and_modes), cmocka_unit_test(streamed_w), cmocka_unit_test(ties),
        cmocka_unit_test(equal_logits_values), cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
