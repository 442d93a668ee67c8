/* The mlp composite (kernels/mlp/mlp.h) through the run path: random
 * shapes with ragged tails (T, H, I not multiples of 128) on the decode and
 * the prefill plans, every act, the norm and the residual on and off, 2-D
 * and 3-D x, fp32 and bf16, against the rules' reference (--check), on the
 * functional executor and the SystemC model with the race detector, the
 * two bit for bit (tests/roster_case.h); the two plans on the same problem
 * compared with each other; values worked out by hand; and the refusals,
 * each one line naming the operand or attribute, the value and the limit.
 * The RTL PE runs a small case of each plan (tests/cases/mlp/). */
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

/* x [T, H] (or [B, S, H]), the three weights, [gamma], [r]. */
static uint32_t mlp_operands(roster_operand *o, nx_dtype dt, uint32_t xnd, const uint64_t *xs, uint64_t I, int norm,
                             int residual) {
    const uint64_t H = xs[xnd - 1];
    uint32_t n = 0;
    o[n++] = (roster_operand){"x", dt, xnd, {xs[0], xnd > 1 ? xs[1] : 0, xnd > 2 ? xs[2] : 0}, NULL};
    o[n++] = (roster_operand){"w_gate", dt, 2, {H, I}, NULL};
    o[n++] = (roster_operand){"w_up", dt, 2, {H, I}, NULL};
    o[n++] = (roster_operand){"w_down", dt, 2, {I, H}, NULL};
    if (norm) o[n++] = (roster_operand){"gamma", dt, 1, {H}, NULL};
    if (residual) o[n++] = (roster_operand){"r", dt, xnd, {xs[0], xnd > 1 ? xs[1] : 0, xnd > 2 ? xs[2] : 0}, NULL};
    return n;
}

/* The decode plan: T up to 128 tokens, the weights split across the cores. */
static void mlp_decode_random(void **state) {
    (void)state;
    roster_operand o[6];
    /* T = 5, H = 200, I = 300 (ragged I-tile and K-chunk), silu */
    const uint64_t a[2] = {5, 200};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 2, a, 300, 0, 0), NULL);
    /* one token, fp32, gelu (erf), H = 130 and I = 129 (one-row tails) */
    const uint64_t b[2] = {1, 130};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_FP32, 2, b, 129, 0, 0), "act=\"gelu\"");
    /* 3-D x [2, 9, 256], norm and residual, gelu_tanh, bf16 */
    const uint64_t c[3] = {2, 9, 256};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 3, c, 600, 1, 1),
                 "norm=\"rms\";residual=true;act=\"gelu_tanh\"");
    /* 128 tokens (the plan's limit), relu, the norm alone, fp32, on trn1 */
    const uint64_t d[2] = {128, 150};
    roster_check("trn1", "mlp", o, mlp_operands(o, NX_DT_FP32, 2, d, 70, 1, 0), "norm=\"rms\";act=\"relu\";eps=1e-5");
    /* the residual alone; I of one tile: core 1 has no gate/up rows */
    const uint64_t e[2] = {33, 384};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 2, e, 100, 0, 1), "residual=true");
    /* I wide enough for several gate/up groups and a ragged H-block */
    const uint64_t f[2] = {17, 1100};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 2, f, 2600, 1, 0), "norm=\"rms\"");
}

/* The prefill plan: token blocks split across the cores. */
static void mlp_prefill_random(void **state) {
    (void)state;
    roster_operand o[6];
    /* T = 300 (> 128: auto takes prefill), norm and residual, bf16 */
    const uint64_t a[2] = {300, 260};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 2, a, 390, 1, 1), "norm=\"rms\";residual=true");
    /* 3-D x [3, 200, 136]: 600 tokens, 300 a core, two blocks each; fp32 gelu */
    const uint64_t b[3] = {3, 200, 136};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_FP32, 3, b, 200, 0, 0), "act=\"gelu\"");
    /* 700 tokens in blocks of 256 with a ragged last one, relu */
    const uint64_t c[2] = {700, 128};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 2, c, 130, 0, 0), "act=\"relu\"");
    /* a few tokens on the prefill plan asked for: the tokens split, one block a core */
    const uint64_t d[2] = {7, 200};
    roster_check("trn2", "mlp", o, mlp_operands(o, NX_DT_BF16, 2, d, 300, 1, 1),
                 "plan=\"prefill\";norm=\"rms\";residual=true;act=\"gelu_tanh\"");
    /* on trn1 */
    const uint64_t e[2] = {260, 100};
    roster_check("trn1", "mlp", o, mlp_operands(o, NX_DT_FP32, 2, e, 257, 1, 0), "norm=\"rms\"");
}

/* Both plans on the same problem: gate and up accumulate over the same
 * K-chunks in the same order, so a is the same; the down sums run in
 * another order (the decode plan starts each core at its own I-rows), so
 * out may differ by one rounding of the dtype and fp32 noise, never more;
 * x' is the same bit for bit. */
static void plans_agree(const char *acts, nx_dtype dt, const uint64_t *xs, uint64_t I) {
    roster_operand o[6];
    const uint32_t n = mlp_operands(o, dt, 2, xs, I, 1, 1);
    char a1[128], a2[128];
    snprintf(a1, sizeof a1, "plan=\"decode\";norm=\"rms\";residual=true;%s", acts);
    snprintf(a2, sizeof a2, "plan=\"prefill\";norm=\"rms\";residual=true;%s", acts);
    roster_outcome d, p;
    roster_run("trn2", "mlp", o, n, a1, &d);
    roster_run("trn2", "mlp", o, n, a2, &p);
    assert_int_equal(d.n, 2);
    assert_int_equal(p.n, 2);
    assert_int_equal(d.size[0], p.size[0]);
    assert_memory_equal(d.bytes[1], p.bytes[1], d.size[1]);
    const double ulp = dt == NX_DT_BF16 ? 0x1p-7 : 0x1p-22;
    const uint64_t count = d.size[0] / nx_dtype_size(dt);
    double amax = 0;
    for (uint64_t e = 0; e < count; e++) amax = fmax(amax, fabs(roster_value_at(&p, 0, e)));
    uint64_t differ = 0;
    for (uint64_t e = 0; e < count; e++) {
        const double x = roster_value_at(&d, 0, e), y = roster_value_at(&p, 0, e);
        differ += x != y;
        if (fabs(x - y) > ulp * fabs(y) + 1e-6 * amax) fail_msg("element %llu: decode %g, prefill %g", (unsigned long long)e, x, y);
    }
    /* not every element can be equal by accident of one plan running twice */
    assert_true(amax > 0);
    (void)differ;
    roster_outcome_free(&d);
    roster_outcome_free(&p);
}

static void mlp_plans_agree(void **state) {
    (void)state;
    const uint64_t a[2] = {40, 330}, b[2] = {128, 140};
    plans_agree("act=\"silu\"", NX_DT_BF16, a, 520);
    plans_agree("act=\"gelu\"", NX_DT_FP32, b, 260);
}

/* By hand: x = 1 everywhere, w_gate = w_up = 1/H, w_down = 1/I: gate = up
 * = 1 for every i, a = act(1) * 1 rounded, out = sum_i a / 128 = 3 a; relu
 * gives exactly 3 (w_down = 1/128 over I = 384), silu 3 bf16(1 / (1 + e^-1))
 * rounded to bf16. With a zero row of
 * x, that row is act(0) * 0 = 0. */
static void mlp_values(void **state) {
    (void)state;
    enum { T = 3, H = 256, I = 384 };
    double *x = malloc(T * H * sizeof *x), *wg = malloc(H * I * sizeof *wg), *wd = malloc(I * H * sizeof *wd);
    assert_non_null(x);
    assert_non_null(wg);
    assert_non_null(wd);
    for (int i = 0; i < T * H; i++) x[i] = i / H == 1 ? 0.0 : 1.0;
    for (int i = 0; i < H * I; i++) wg[i] = 1.0 / H;
    for (int i = 0; i < I * H; i++) wd[i] = 1.0 / 128; /* 384 / 128 = 3: out = 3 a */
    roster_operand o[4] = {{"x", NX_DT_BF16, 2, {T, H}, x},
                           {"w_gate", NX_DT_BF16, 2, {H, I}, wg},
                           {"w_up", NX_DT_BF16, 2, {H, I}, wg},
                           {"w_down", NX_DT_BF16, 2, {I, H}, wd}};
    roster_outcome r;
    roster_run("trn2", "mlp", o, 4, "act=\"relu\"", &r);
    for (int j = 0; j < H; j++) {
        assert_true(roster_value_at(&r, 0, j) == 3.0);
        assert_true(roster_value_at(&r, 0, H + j) == 0.0);
        assert_true(roster_value_at(&r, 0, 2 * H + j) == 3.0);
    }
    roster_outcome_free(&r);
    roster_run("trn2", "mlp", o, 4, "act=\"silu\"", &r);
    /* a = bf16(1 / (1 + e^-1)) = bf16(0.7311) = 0.73046875; out = bf16(3 a)
     * = bf16(2.19140625) = 2.1875 */
    const double out1 = 2.1875;
    for (int j = 0; j < H; j++) {
        assert_true(roster_value_at(&r, 0, j) == out1);
        assert_true(roster_value_at(&r, 0, H + j) == 0.0);
    }
    roster_outcome_free(&r);
    /* the same on the prefill plan */
    roster_run("trn2", "mlp", o, 4, "act=\"silu\";plan=\"prefill\"", &r);
    for (int j = 0; j < H; j++) assert_true(roster_value_at(&r, 0, 2 * H + j) == out1);
    roster_outcome_free(&r);
    free(x), free(wg), free(wd);
}

static void mlp_refusals(void **state) {
    (void)state;
    roster_operand o[6];
    const uint64_t a[2] = {5, 200};
    uint32_t n = mlp_operands(o, NX_DT_BF16, 2, a, 300, 0, 0);
    roster_refused("trn2", "mlp", o, n, "norm=\"rms\"",
                   "mlp: 4 operands given, norm=rms residual=false takes 5 (x, w_gate, w_up, w_down, gamma)");
    roster_refused("trn2", "mlp", o, n, "residual=true",
                   "mlp: 4 operands given, norm=none residual=true takes 5 (x, w_gate, w_up, w_down, r)");
    roster_refused("trn2", "mlp", o, n, "act=\"swish\"", "attribute act: 'swish' is not one of silu, gelu, gelu_tanh, relu");
    roster_refused("trn2", "mlp", o, n, "norm=\"layer\"", "attribute norm: 'layer' is not one of none, rms");
    roster_refused("trn2", "mlp", o, n, "plan=\"fast\"", "attribute plan: 'fast' is not one of auto, decode, prefill");
    roster_refused("trn2", "mlp", o, n, "eps=-1", "attribute eps: -1 is negative, must be >= 0");
    roster_refused("trn2", "mlp", o, n, "act=3", "attribute act: must be a string, one of silu, gelu, gelu_tanh, relu");
    /* shapes */
    o[1].shape[0] = 100;
    roster_refused("trn2", "mlp", o, n, NULL,
                   "operand 1 (w_gate): shape [100, 300], must be [H, I] with H = 200 (x's last dim) and I >= 1");
    o[1].shape[0] = 200;
    o[2].shape[1] = 301;
    roster_refused("trn2", "mlp", o, n, NULL, "operand 2 (w_up): shape [200, 301], must be [200, 300] (w_gate's)");
    o[2].shape[1] = 300;
    o[3].shape[0] = 200, o[3].shape[1] = 300;
    roster_refused("trn2", "mlp", o, n, NULL, "operand 3 (w_down): shape [200, 300], must be [300, 200] ([I, H])");
    o[3].shape[0] = 300, o[3].shape[1] = 200;
    o[2].dt = NX_DT_FP32;
    roster_refused("trn2", "mlp", o, n, NULL, "operand 2 (w_up): dtype fp32, must be x's bf16");
    o[2].dt = NX_DT_BF16;
    const uint64_t x4[3] = {2, 2, 5};
    roster_operand r4[4];
    mlp_operands(r4, NX_DT_BF16, 3, x4, 8, 0, 0);
    r4[0].nd = 4, r4[0].shape[3] = 5, r4[0].shape[2] = 2;
    roster_refused("trn2", "mlp", r4, 4, NULL, "operand 0 (x): rank 4, must be 2 ([T, H]) or 3 ([B, S, H])");
    roster_operand g[6];
    n = mlp_operands(g, NX_DT_BF16, 2, a, 300, 1, 1);
    g[4].shape[0] = 199;
    roster_refused("trn2", "mlp", g, n, "norm=\"rms\";residual=true", "operand 4 (gamma): shape [199], must be [200] ([H])");
    g[4].shape[0] = 200;
    g[5].shape[1] = 199;
    roster_refused("trn2", "mlp", g, n, "norm=\"rms\";residual=true", "operand 5 (r): shape [5, 199], must be [5, 200] (x's)");
    roster_operand i32[4];
    mlp_operands(i32, NX_DT_INT32, 2, a, 300, 0, 0);
    roster_refused("trn2", "mlp", i32, 4, NULL, "operand 0 (x): dtype int32, mlp takes fp32 or bf16");
    /* the plans' limits */
    const uint64_t big_t[2] = {200, 64};
    n = mlp_operands(o, NX_DT_BF16, 2, big_t, 64, 0, 0);
    roster_refused("trn2", "mlp", o, n, "plan=\"decode\"", "attribute plan: decode takes up to 128 tokens, x has T = 200");
    const uint64_t wide[2] = {1, 70000};
    n = mlp_operands(o, NX_DT_BF16, 2, wide, 1, 0, 0);
    roster_refused("trn2", "mlp", o, n, NULL, "operand 0 (x): H = 70000 beyond the 65536 elements an engine streams per partition");
    /* a^T of 128 tokens over I = 57344 fills SBUF alone */
    const uint64_t huge[2] = {128, 128};
    n = mlp_operands(o, NX_DT_FP32, 2, huge, 57344, 0, 0);
    roster_refused("trn2", "mlp", o, n, NULL,
                   "operand 1 (w_gate): H = 128, I = 57344 with 128 tokens per block need 257600 bytes per partition "
                   "beside a weight ring of 24576, SBUF has 229376");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_decode_random), cmocka_unit_test(mlp_prefill_random), cmocka_unit_test(mlp_plans_agree),
        cmocka_unit_test(mlp_values),        cmocka_unit_test(mlp_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
