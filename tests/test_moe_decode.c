/* The moe_decode composite (kernels/moe/moe_decode.h) by name through the
 * run path against its reference (--check, the tolerance from the dtype, k
 * and H + I), on the functional executor and on the SystemC model with the
 * race detector, the two bit for bit equal (tests/roster_case.h): random
 * routings with experts repeated across tokens, every token on one expert,
 * unused experts, slots of -1 (a token with none), both pass schemes of
 * mode "selected" (expert loop: T k >= E; slot list: T k < E) and mode
 * "all"; "selected" against "all" when the affinities are zero outside the
 * selection; T = 1, 5, 128; ragged H and I (partial 128-row chunks, work
 * items and down tiles, a core with one i-tile); fp32 and bf16; the four
 * activations; the refusals, one line each, and the run-time one (an index
 * outside [-1, E) faults the run). Weights are U(-1, 1) / sqrt(fan-in), as
 * a model's (outputs O(1): the tolerance's regime). */
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
#include "support.h"

typedef struct problem {
    nx_dtype dt;
    uint64_t T, H, I, E, k;
    const char *attrs;       /* NULL: defaults */
    const int32_t *indices;  /* [T, k]; NULL: random distinct experts per token */
    int zero_outside;        /* affinities zero outside the token's slots (the router's) */
} problem;

typedef struct built {
    roster_operand ops[6];
    double *own[6];
} built;

static void fill_uniform(double *v, uint64_t n, double scale, test_rng *r) {
    for (uint64_t i = 0; i < n; i++) v[i] = scale * test_rng_uniform(r, -1, 1);
}

static void build(const problem *pr, built *b) {
    test_rng r = {pr->T * 1000003 + pr->H * 101 + pr->I * 7 + pr->E};
    const uint64_t T = pr->T, H = pr->H, I = pr->I, E = pr->E, K = pr->k;
    memset(b, 0, sizeof *b);
    b->own[0] = malloc(T * H * sizeof(double));
    b->own[1] = malloc(E * H * I * sizeof(double));
    b->own[2] = malloc(E * H * I * sizeof(double));
    b->own[3] = malloc(E * I * H * sizeof(double));
    b->own[4] = malloc(T * E * sizeof(double));
    b->own[5] = malloc(T * K * sizeof(double));
    for (int i = 0; i < 6; i++) assert_non_null(b->own[i]);
    fill_uniform(b->own[0], T * H, 2, &r);
    fill_uniform(b->own[1], E * H * I, 1 / sqrt((double)H), &r);
    fill_uniform(b->own[2], E * H * I, 1 / sqrt((double)H), &r);
    fill_uniform(b->own[3], E * I * H, 1 / sqrt((double)I), &r);
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t j = 0; j < K; j++) {
            if (pr->indices) {
                b->own[5][t * K + j] = pr->indices[t * K + j];
                continue;
            }
            for (;;) { /* distinct within the token */
                int32_t e = (int32_t)(test_rng_next(&r) % E);
                int seen = 0;
                for (uint64_t q = 0; q < j; q++) seen |= b->own[5][t * K + q] == e;
                if (!seen) {
                    b->own[5][t * K + j] = e;
                    break;
                }
            }
        }
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t e = 0; e < E; e++) {
            int chosen = 0;
            for (uint64_t j = 0; j < K; j++) chosen |= b->own[5][t * K + j] == (double)e;
            b->own[4][t * E + e] = pr->zero_outside && !chosen ? 0.0 : test_rng_uniform(&r, 0.05, 1);
        }
    b->ops[0] = (roster_operand){"x", pr->dt, 2, {T, H}, b->own[0]};
    b->ops[1] = (roster_operand){"w_gate", pr->dt, 3, {E, H, I}, b->own[1]};
    b->ops[2] = (roster_operand){"w_up", pr->dt, 3, {E, H, I}, b->own[2]};
    b->ops[3] = (roster_operand){"w_down", pr->dt, 3, {E, I, H}, b->own[3]};
    b->ops[4] = (roster_operand){"affinities", NX_DT_FP32, 2, {T, E}, b->own[4]};
    b->ops[5] = (roster_operand){"indices", NX_DT_INT32, 2, {T, K}, b->own[5]};
}

static void unbuild(built *b) {
    for (int i = 0; i < 6; i++) free(b->own[i]);
}

static void check(const problem *pr) {
    built b;
    build(pr, &b);
    roster_check("trn2", "moe_decode", b.ops, 6, pr->attrs);
    unbuild(&b);
}

static void run(const problem *pr, roster_outcome *o) {
    built b;
    build(pr, &b);
    roster_run("trn2", "moe_decode", b.ops, 6, pr->attrs, o);
    unbuild(&b);
}

/* ---- routings ---- */

static void random_routings(void **state) {
    (void)state;
    /* expert loop (T k >= E): experts repeated across tokens */
    check(&(problem){NX_DT_BF16, 5, 200, 300, 8, 2, NULL, NULL, 1});
    check(&(problem){NX_DT_BF16, 16, 256, 384, 4, 3, NULL, NULL, 0});
    /* slot list (T k < E): many unused experts */
    check(&(problem){NX_DT_BF16, 1, 200, 300, 8, 2, NULL, NULL, 1});
    check(&(problem){NX_DT_BF16, 3, 136, 260, 16, 4, NULL, NULL, 0});
    check(&(problem){NX_DT_FP32, 2, 130, 200, 32, 2, NULL, NULL, 1});
}

static void repeated_and_skipped(void **state) {
    (void)state;
    /* every token on expert 2 (slot list: three empty passes) */
    static const int32_t one4[4] = {2, 2, 2, 2};
    check(&(problem){NX_DT_BF16, 4, 160, 200, 8, 1, NULL, one4, 0});
    /* every token on expert 1, expert loop (T k = 6 >= E = 4) */
    static const int32_t one6[6] = {1, 1, 1, 1, 1, 1};
    check(&(problem){NX_DT_BF16, 6, 160, 200, 4, 1, NULL, one6, 0});
    /* -1 slots: token 1 has none (its row is zero), token 2 one; a repeat
     * across tokens; slot list (T k = 6 < 8) */
    static const int32_t sk[6] = {3, -1, -1, -1, 5, 3};
    check(&(problem){NX_DT_BF16, 3, 200, 300, 8, 2, NULL, sk, 0});
    /* the same on the expert loop (T k = 8 >= E = 4), fp32 */
    static const int32_t sk4[8] = {0, -1, -1, -1, 3, -1, 3, 0};
    check(&(problem){NX_DT_FP32, 4, 200, 300, 4, 2, NULL, sk4, 0});
    /* an expert named twice by one token counts twice (two slots) */
    static const int32_t dup[4] = {1, 1, 0, 2};
    check(&(problem){NX_DT_FP32, 2, 64, 96, 8, 2, NULL, dup, 0});
    /* every slot -1: out is zero */
    static const int32_t none[2] = {-1, -1};
    roster_outcome o;
    run(&(problem){NX_DT_BF16, 1, 64, 96, 8, 2, NULL, none, 0}, &o);
    for (uint64_t e = 0; e < 64; e++) assert_true(roster_value_at(&o, 0, e) == 0.0);
    roster_outcome_free(&o);
}

/* With the affinities zero outside each token's slots (no slot named
 * twice), "selected" and "all" compute the same sums. */
static void selected_against_all(void **state) {
    (void)state;
    static const problem base[3] = {
        {NX_DT_BF16, 5, 200, 300, 8, 2, NULL, NULL, 1},  /* expert loop */
        {NX_DT_BF16, 2, 200, 300, 16, 2, NULL, NULL, 1}, /* slot list */
        {NX_DT_FP32, 3, 136, 160, 4, 1, NULL, NULL, 1},
    };
    for (int i = 0; i < 3; i++) {
        problem a = base[i], b = base[i];
        a.attrs = "mode=\"selected\"";
        b.attrs = "mode=\"all\"";
        roster_outcome oa, ob;
        run(&a, &oa);
        run(&b, &ob);
        const double eps = a.dt == NX_DT_BF16 ? 0x1p-7 : 0x1p-20;
        uint64_t n = a.T * a.H, differ = 0;
        for (uint64_t e = 0; e < n; e++) {
            double x = roster_value_at(&oa, 0, e), y = roster_value_at(&ob, 0, e);
            if (fabs(x - y) > 2 * eps * fmax(1.0, fabs(y))) fail_msg("case %d element %llu: selected %g, all %g", i, (unsigned long long)e, x, y);
            differ += x != y;
        }
        /* the expert loop adds the same terms in the same order (the zeros
         * add nothing): bit-equal there */
        if (i == 0) assert_int_equal(differ, 0);
        roster_outcome_free(&oa);
        roster_outcome_free(&ob);
    }
}

/* ---- shapes, dtypes, activations ---- */

static void tokens(void **state) {
    (void)state;
    check(&(problem){NX_DT_BF16, 1, 128, 256, 4, 2, NULL, NULL, 1});
    check(&(problem){NX_DT_FP32, 5, 96, 160, 4, 2, NULL, NULL, 0});
    check(&(problem){NX_DT_BF16, 128, 136, 160, 4, 2, NULL, NULL, 1});
    check(&(problem){NX_DT_FP32, 128, 64, 130, 8, 1, "mode=\"all\"", NULL, 0});
    /* T = 128: items of 8 i-tiles and a ragged ninth (no merged remainder: its
     * PSUM accumulators would not fit) */
    check(&(problem){NX_DT_BF16, 128, 64, 2304, 2, 1, NULL, NULL, 1});
}

static void ragged(void **state) {
    (void)state;
    /* several work items per core (I > 2 x 8 x 128), a partial last one */
    check(&(problem){NX_DT_BF16, 3, 64, 2200, 2, 1, NULL, NULL, 1});
    /* H past one down tile (1024 bf16 / 512 fp32 columns) and ragged */
    check(&(problem){NX_DT_BF16, 2, 1100, 140, 2, 1, NULL, NULL, 1});
    check(&(problem){NX_DT_FP32, 2, 1100, 140, 3, 2, NULL, NULL, 0});
    /* tiny: H and I below one chunk, I one i-tile (core 1 idle) */
    check(&(problem){NX_DT_BF16, 3, 17, 33, 3, 2, NULL, NULL, 0});
    check(&(problem){NX_DT_FP32, 1, 1, 1, 2, 1, NULL, NULL, 0});
}

/* The stacked w_down the last large HBM tensor (only the small affinities,
 * indices, out and routing scratch after it) and nothing padding the end:
 * H = 64 makes a down slab 16 K-chunks of 128 rows (I = 2048), so a gather
 * pattern's span, from an offset, runs 15 x 128 rows past it. The piece's
 * bound keeps the span inside the tensor (the rows of the last expert's
 * last chunk end at the tensor's end), for either end of the I split and
 * for the expert loop, the slot list and an expert of -1. */
static void weight_at_hbm_end(void **state) {
    (void)state;
    check(&(problem){NX_DT_BF16, 1, 64, 2048, 2, 1, NULL, NULL, 1});
    check(&(problem){NX_DT_FP32, 2, 64, 2048, 3, 2, NULL, NULL, 0});
    check(&(problem){NX_DT_BF16, 1, 64, 2048, 8, 2, NULL, NULL, 1});
    static const int32_t last[2] = {3, -1};
    check(&(problem){NX_DT_BF16, 1, 64, 2048, 4, 2, NULL, last, 1});
}

static void activations(void **state) {
    (void)state;
    static const char *const acts[4] = {"act=\"silu\"", "act=\"gelu\"", "act=\"gelu_tanh\"", "act=\"relu\""};
    for (int a = 0; a < 4; a++) {
        check(&(problem){NX_DT_BF16, 3, 136, 200, 8, 2, acts[a], NULL, 1});
        check(&(problem){NX_DT_FP32, 4, 64, 160, 4, 2, acts[a], NULL, 0});
    }
}

/* ---- refusals ---- */

static void refusals(void **state) {
    (void)state;
    const roster_operand o[6] = {{"x", NX_DT_BF16, 2, {4, 64}, NULL},
                                 {"w_gate", NX_DT_BF16, 3, {8, 64, 96}, NULL},
                                 {"w_up", NX_DT_BF16, 3, {8, 64, 96}, NULL},
                                 {"w_down", NX_DT_BF16, 3, {8, 96, 64}, NULL},
                                 {"affinities", NX_DT_FP32, 2, {4, 8}, NULL},
                                 {"indices", NX_DT_INT32, 2, {4, 2}, NULL}};
    roster_operand a[6];
#define WITH(i, field, val) (memcpy(a, o, sizeof o), a[i].field = val, a)
    roster_refused("trn2", "moe_decode", o, 5, NULL,
                   "moe_decode takes 6 operands (x, w_gate, w_up, w_down, affinities, indices), the op has 5");
    roster_refused("trn2", "moe_decode", WITH(5, shape[1], 9), 6, NULL,
                   "operand 5 (indices): k = 9 experts per token exceeds E = 8 experts");
    memcpy(a, o, sizeof o);
    for (int i = 1; i < 4; i++) a[i].shape[0] = 32;
    a[4].shape[1] = 32, a[5].shape[1] = 17;
    roster_refused("trn2", "moe_decode", a, 6, NULL, "operand 5 (indices): k = 17 experts per token, moe_decode takes 1 to 16");
    roster_refused("trn2", "moe_decode", WITH(4, shape[1], 7), 6, NULL,
                   "operand 4 (affinities): affinities must be fp32 [T, E] = [4, 8]");
    roster_refused("trn2", "moe_decode", WITH(4, shape[0], 5), 6, NULL,
                   "operand 4 (affinities): affinities must be fp32 [T, E] = [4, 8]");
    roster_refused("trn2", "moe_decode", WITH(4, dt, NX_DT_BF16), 6, NULL,
                   "operand 4 (affinities): affinities must be fp32 [T, E] = [4, 8]");
    memcpy(a, o, sizeof o);
    a[0].shape[0] = 129, a[4].shape[0] = 129, a[5].shape[0] = 129;
    roster_refused("trn2", "moe_decode", a, 6, NULL, "operand 0 (x): T = 129 tokens, moe_decode takes 1 to 128");
    roster_refused("trn2", "moe_decode", WITH(5, dt, NX_DT_FP32), 6, NULL,
                   "operand 5 (indices): indices must be int32 [T, k] with T = 4");
    roster_refused("trn2", "moe_decode", WITH(5, shape[0], 3), 6, NULL,
                   "operand 5 (indices): indices must be int32 [T, k] with T = 4");
    roster_refused("trn2", "moe_decode", WITH(2, dt, NX_DT_FP32), 6, NULL,
                   "operand 2 (w_up): dtype fp32 differs from operand 0 (x)'s bf16");
    roster_refused("trn2", "moe_decode", WITH(1, shape[1], 65), 6, NULL,
                   "operand 1 (w_gate): dim 1 is 65, must be 64 (x's H)");
    roster_refused("trn2", "moe_decode", WITH(2, shape[2], 95), 6, NULL,
                   "operand 2 (w_up): dim 2 is 95, must be 96 (w_gate's I)");
    roster_refused("trn2", "moe_decode", WITH(3, shape[0], 7), 6, NULL,
                   "operand 3 (w_down): dim 0 is 7, must be 8 (w_gate's E)");
    roster_refused("trn2", "moe_decode", WITH(3, nd, 2), 6, NULL, "operand 3 (w_down): rank 2, w_down must be [E, I, H]");
    memcpy(a, o, sizeof o);
    a[0].nd = 3, a[0].shape[2] = 1;
    roster_refused("trn2", "moe_decode", a, 6, NULL, "operand 0 (x): rank 3, x must be [T, H]");
    roster_refused("trn2", "moe_decode", WITH(0, dt, NX_DT_INT32), 6, NULL,
                   "operand 0 (x): dtype int32, moe_decode takes fp32 or bf16");
    roster_refused("trn2", "moe_decode", o, 6, "mode=\"some\"", "attribute mode: 'some' is not one of selected, all");
    roster_refused("trn2", "moe_decode", o, 6, "act=\"tanh\"", "attribute act: 'tanh' is not one of silu, gelu, gelu_tanh, relu");
    roster_refused("trn2", "moe_decode", o, 6, "act=1", "attribute act: must be a string (one of silu, gelu, gelu_tanh, relu)");
    roster_refused("trn2", "moe_decode", o, 6, "k=2", "moe_decode: unknown attribute 'k'; moe_decode reads: act, mode");
#undef WITH
}

/* Run time: an index outside [-1, E) faults the kernel's probe gather (its
 * offset index + 1 against E + 1 rows), in both modes; nothing is kept. */
static void runtime_indices(void **state) {
    (void)state;
    static const int32_t hi[4] = {0, 8, 1, 2}, lo[4] = {0, 1, -2, 3};
    built b;
    build(&(problem){NX_DT_BF16, 2, 64, 96, 8, 2, NULL, hi, 0}, &b);
    roster_refused("trn2", "moe_decode", b.ops, 6, NULL,
                   "moe_decode: core 0 sp #2 (dma_copy): offsets[0] = 9 is out of bounds [0, 9)");
    roster_refused("trn2", "moe_decode", b.ops, 6, "mode=\"all\"",
                   "moe_decode: core 0 sp #2 (dma_copy): offsets[0] = 9 is out of bounds [0, 9)");
    unbuild(&b);
    build(&(problem){NX_DT_BF16, 2, 64, 96, 8, 2, NULL, lo, 0}, &b);
    roster_refused("trn2", "moe_decode", b.ops, 6, NULL,
                   "moe_decode: core 0 sp #1 (dma_copy): offsets[1] = -1 is out of bounds [0, 9)");
    unbuild(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_routings), cmocka_unit_test(repeated_and_skipped),
        cmocka_unit_test(selected_against_all), cmocka_unit_test(tokens),
        cmocka_unit_test(ragged), cmocka_unit_test(weight_at_hbm_end), cmocka_unit_test(activations),
        cmocka_unit_test(refusals), cmocka_unit_test(runtime_indices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
