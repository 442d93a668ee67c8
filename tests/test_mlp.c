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

#include "isa/intmath.h"
#include "kernels/mlp/mlp_decode.h"
#include "registry/composites.h"
#include "registry/lower.h"
#include "registry/prepare.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "roster_case.h"
#include "support.h"

/* Partitions [0, n) of a tile, elements [c0, c0 + cols). */
static nx_operand nx_rows_view_test(const nx_tile *t, nx_dtype as, uint32_t n, uint64_t c0, uint64_t cols) {
    const int32_t one = 1;
    const uint32_t count = (uint32_t)cols;
    return nx_tile_view(t, as, 0, n, c0, 1, &one, &count);
}

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
    /* gamma and r in fp32 beside bf16 x and weights */
    const uint64_t g[2] = {12, 300};
    const uint32_t gn = mlp_operands(o, NX_DT_BF16, 2, g, 200, 1, 1);
    o[4].dt = NX_DT_FP32, o[5].dt = NX_DT_FP32;
    roster_check("trn2", "mlp", o, gn, "norm=\"rms\";residual=true");
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
    /* bf16 gamma beside fp32 x */
    const uint64_t f[2] = {150, 140};
    const uint32_t fn = mlp_operands(o, NX_DT_FP32, 2, f, 90, 1, 0);
    o[4].dt = NX_DT_BF16;
    roster_check("trn2", "mlp", o, fn, "norm=\"rms\"");
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
    g[4].dt = NX_DT_INT32;
    roster_refused("trn2", "mlp", g, n, "norm=\"rms\";residual=true", "operand 4 (gamma): dtype int32, mlp takes fp32 or bf16");
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


/* ---- the decode piece as moe_decode uses it (kernels/mlp/mlp_decode.h) ----
 * A test composite: x [T, H], w_gate and w_up [E, H, I], w_down [E, I, H],
 * idx [k] int32 (experts chosen at run time), scale [T, k] fp32;
 * out[t] = sum_j scale[t, j] * mlp_{idx[j]}(x_t) (silu): the weight rows
 * gathered through the piece's run-time rows, y accumulated into an fp32
 * tile with the per-token scale, then rounded once. */
static int piece_experts(struct nx_kctx *k, const nx_kernel_call *call, nx_error *err) {
    const nx_tensor_ref *x = &call->args[0], *wg = &call->args[1], *wu = &call->args[2], *wd = &call->args[3],
                        *ix = &call->args[4], *sc = &call->args[5], *out = &call->args[6];
    const uint32_t T = (uint32_t)x->shape[0], K = (uint32_t)ix->shape[0];
    const uint64_t H = x->shape[1], E = wg->shape[0], I = wg->shape[2], P = 128;
    const nx_dtype dt = x->dtype;
    const uint64_t es = nx_dtype_size(dt), nk = nx_cdiv_u64(H, P), ni = nx_cdiv_u64(I, P);
    nx_mlp_dec_cfg cfg = {.dtype = dt, .T = T, .act = NX_ACT_SILU, .ring_bytes = 64 * 1024};
    nx_mlp_dec *d;
    if (nx_mlp_dec_new(k, &cfg, &d, err) != 0) return -1;
    nx_tile xT, aT, acc, st, eidx, io, rg, rd, ot;
    if (nx_kctx_alloc(k, NX_OPK_SBUF, "xT", dt, (uint32_t)P, nk * T, &xT, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "aT", dt, (uint32_t)P, ni * T, &aT, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "acc", NX_DT_FP32, T, H, &acc, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "scale", NX_DT_FP32, T, K, &st, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "eidx", NX_DT_INT32, (uint32_t)P, K, &eidx, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "iota", NX_DT_INT32, (uint32_t)P, 1, &io, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "rows_g", NX_DT_INT32, (uint32_t)P, K, &rg, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "rows_d", NX_DT_INT32, (uint32_t)P, K, &rd, err) != 0 ||
        nx_kctx_alloc(k, NX_OPK_SBUF, "out", dt, T, H, &ot, err) != 0)
        return -1;
    /* x^T straight from HBM (element-strided: a test, not a plan) */
    for (uint64_t c = 0; c < nk; c++) {
        const uint32_t kw = (uint32_t)nx_min_u64(P, H - c * P);
        const int32_t stride = (int32_t)H;
        nx_operand dst = nx_rows_view_test(&xT, dt, kw, c * T, T);
        nx_operand src = nx_ap(NX_OPK_HBM, dt, 0, kw, 1, x->hbm_offset + c * P * es, 1, &stride, &T);
        if (nx_kctx_dma(k, &dst, &src, err) != 0) return -1;
    }
    const int32_t one = 1;
    nx_operand sv = nx_tile_ap(&st), ss = nx_ap_hbm_rows(NX_DT_FP32, sc->hbm_offset, T, (int32_t)K, K);
    nx_operand ev = nx_tile_ap(&eidx), es_ = nx_ap(NX_OPK_HBM, NX_DT_INT32, 0, (uint32_t)P, 0, ix->hbm_offset, 1, &one, &K);
    nx_operand iv = nx_tile_ap(&io), pat = nx_pattern(0, 1, (uint32_t)P, 0, NULL, NULL), av = nx_tile_ap(&acc);
    if (nx_kctx_dma(k, &sv, &ss, err) != 0 || nx_kctx_dma(k, &ev, &es_, err) != 0 || nx_kctx_iota(k, &iv, &pat, err) != 0 ||
        nx_kctx_memset(k, NX_ENG_DVE, &av, 0.0, err) != 0)
        return -1;
    nx_operand rows_g[8], rows_d[8], scale[8];
    for (uint32_t j = 0; j < K; j++) {
        nx_operand e = nx_rows_view_test(&eidx, NX_DT_INT32, (uint32_t)P, j, 1);
        nx_operand hH = nx_imm((double)H, NX_DT_FP32), hI = nx_imm((double)I, NX_DT_FP32);
        rows_g[j] = nx_rows_view_test(&rg, NX_DT_INT32, (uint32_t)P, j, 1);
        rows_d[j] = nx_rows_view_test(&rd, NX_DT_INT32, (uint32_t)P, j, 1);
        scale[j] = nx_rows_view_test(&st, NX_DT_FP32, T, j, 1);
        if (nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &rows_g[j], &e, NX_ALU_MULTIPLY, &hH, NX_ALU_ADD, &iv, err) != 0 ||
            nx_kctx_scalar_tensor_tensor(k, NX_ENG_DVE, &rows_d[j], &e, NX_ALU_MULTIPLY, &hI, NX_ALU_ADD, &iv, err) != 0)
            return -1;
    }
    for (uint32_t j = 0; j < K; j++) {
        nx_mlp_dec_job gu = {.kind = NX_MLP_DEC_GATE_UP, .K = H, .n = I,
                             .w0 = {.base = wg->hbm_offset, .ld = I, .rows = &rows_g[j], .bound = E * H},
                             .w1 = {.base = wu->hbm_offset, .ld = I, .rows = &rows_g[j], .bound = E * H},
                             .xT = &xT, .aT = &aT};
        nx_mlp_dec_job dn = {.kind = NX_MLP_DEC_DOWN, .K = I, .n = H,
                             .w0 = {.base = wd->hbm_offset, .ld = H, .rows = &rows_d[j], .bound = E * I},
                             .aT = &aT, .out_acc = &acc, .scale = &scale[j]};
        if (nx_mlp_dec_submit(d, &gu, err) != 0 || nx_mlp_dec_submit(d, &dn, err) != 0) return -1;
    }
    if (nx_mlp_dec_flush(d, err) != 0) return -1;
    nx_mlp_dec_free(d, err);
    nx_operand ov = nx_tile_ap(&ot), oh = nx_ap_hbm_rows(dt, out->hbm_offset, T, (int32_t)H, (uint32_t)H);
    if (nx_kctx_tensor_copy(k, NX_ENG_ACT, &ov, &av, err) != 0 || nx_kctx_dma(k, &oh, &ov, err) != 0) return -1;
    return 0;
}

static int pe_infer(nx_macro_op *op, const char *const *names, nx_error *err) {
    (void)names;
    const nx_op_tensor *x = &op->operands[0];
    return nx_macro_op_add_result(op, "out", x->dtype, x->ndims, x->shape, err);
}

static double ld_(nx_dtype dt, const void *p, uint64_t i) {
    return nx_dtype_load(dt, (const unsigned char *)p + i * nx_dtype_size(dt));
}

static float rnd(nx_dtype dt, double v) {
    unsigned char b[8];
    nx_dtype_store(dt, b, (double)(float)v);
    return (float)nx_dtype_load(dt, b);
}

static int pe_reference(const nx_macro_op *op, const void *const *in, void *const *out, nx_error *err) {
    (void)err;
    const nx_dtype dt = op->operands[0].dtype;
    const uint64_t T = op->operands[0].shape[0], H = op->operands[0].shape[1], I = op->operands[1].shape[2];
    const uint64_t K = op->operands[4].shape[0];
    float *a = malloc(I * sizeof *a), *acc = calloc(T * H, sizeof *acc);
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t j = 0; j < K; j++) {
            const int64_t e = ((const int32_t *)in[4])[j];
            const double s = ((const float *)in[5])[t * K + j];
            for (uint64_t i = 0; i < I; i++) {
                double g = 0, u = 0;
                for (uint64_t h = 0; h < H; h++) {
                    const double xv = ld_(dt, in[0], t * H + h);
                    g += xv * ld_(dt, in[1], (e * H + h) * I + i);
                    u += xv * ld_(dt, in[2], (e * H + h) * I + i);
                }
                const float gf = (float)g;
                a[i] = rnd(dt, (double)(float)(gf / (1.0 + exp(-(double)gf))) * (float)u);
            }
            for (uint64_t h = 0; h < H; h++) {
                double y = 0;
                for (uint64_t i = 0; i < I; i++) y += (double)a[i] * ld_(dt, in[3], (e * I + i) * H + h);
                acc[t * H + h] += (float)((float)y * s);
            }
        }
    for (uint64_t i = 0; i < T * H; i++) nx_dtype_store(dt, (unsigned char *)out[0] + i * nx_dtype_size(dt), acc[i]);
    free(a), free(acc);
    return 0;
}

static int pe_tolerance(const nx_macro_op *op, uint32_t result, nx_tolerance *out, nx_error *err) {
    (void)result, (void)err;
    const double H = (double)op->operands[0].shape[1], I = (double)op->operands[1].shape[2];
    const double K = (double)op->operands[4].shape[0], eps = nx_dtype_epsilon(op->operands[0].dtype);
    memset(out, 0, sizeof *out);
    out->abs = 2 * K * 3.6 * H * (8 * eps + 16 * 0x1p-24 * sqrt(H * I));
    out->rel = 4 * eps;
    snprintf(out->text, sizeof out->text, "abs %.3g", out->abs);
    return 0;
}

static const nx_op_rules pe_rules = {.attrs = (const char *const[]){NULL}, .infer_results = pe_infer, .reference = pe_reference,
                                     .reference_name = "piece_experts_ref", .tolerance = pe_tolerance};
static const nx_leaf pe_leaf = {"piece_experts", piece_experts};
static const nx_composite pe_items[] = {
    {.name = "mlp_piece_experts", .family = "test", .rules = &pe_rules, .via = "tests/test_mlp.c",
     .config = {.kernel_func = &pe_leaf, .operand_count = NX_OPERANDS_ALL}},
};
static const nx_composite_table pe_table = {pe_items, 1};

static void mlp_piece_experts(void **state) {
    (void)state;
    enum { T = 6, H = 200, E = 3, I = 150, K = 3 };
    const nx_dtype dt = NX_DT_BF16;
    nx_machine m = test_machine("trn2");
    nx_lowerer *L = nx_lowerer_new_machine(&m, NULL, &pe_table);
    assert_non_null(L);
    nx_macro_op op;
    nx_macro_op_init(&op);
    nx_error err;
    const uint64_t xs[2] = {T, H}, ws[3] = {E, H, I}, wds[3] = {E, I, H}, is[1] = {K}, ss[2] = {T, K};
    if (nx_macro_op_set_func_name(&op, "mlp_piece_experts", &err) != 0 ||
        nx_macro_op_add_operand(&op, "x", dt, 2, xs, &err) != 0 || nx_macro_op_add_operand(&op, "w_gate", dt, 3, ws, &err) != 0 ||
        nx_macro_op_add_operand(&op, "w_up", dt, 3, ws, &err) != 0 || nx_macro_op_add_operand(&op, "w_down", dt, 3, wds, &err) != 0 ||
        nx_macro_op_add_operand(&op, "idx", NX_DT_INT32, 1, is, &err) != 0 ||
        nx_macro_op_add_operand(&op, "scale", NX_DT_FP32, 2, ss, &err) != 0 || pe_infer(&op, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    /* the inputs: random weights, experts 2, 0, 2 (one twice) */
    const uint64_t n[6] = {T * H, E * H * I, E * H * I, E * I * H, K, T * K};
    uint8_t *in[6];
    test_rng r = {12345};
    for (int i = 0; i < 6; i++) {
        const nx_dtype d = i == 4 ? NX_DT_INT32 : i == 5 ? NX_DT_FP32 : dt;
        in[i] = malloc(n[i] * nx_dtype_size(d));
        for (uint64_t e = 0; e < n[i]; e++)
            nx_dtype_store(d, in[i] + e * nx_dtype_size(d), i == 4 ? (double)(e == 1 ? 0 : 2) : test_rng_uniform(&r, -2, 2));
    }
    uint8_t *got[2] = {NULL, NULL};
    for (int model = 0; model < 2; model++) {
        nx_prepared p;
        nx_prepared_init(&p);
        if (nx_prepare_target(L, op.func_name, &p, &err) != 0 || nx_prepare_op(&p, &op, NX_PREPARE_AS_GIVEN, NULL, &err) != 0)
            fail_msg("%s", err.msg);
        nx_run_options opt = {.backend = model ? NX_RUN_MODEL : NX_RUN_FUNCTIONAL, .race_check = model, .check = 1};
        nx_run_result res;
        if (nx_run_op(L, &m, &p, (const void *const *)in, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
        if (res.check_failures) fail_msg("piece experts: %u results beyond tolerance", res.check_failures);
        got[model] = malloc(T * H * 2);
        memcpy(got[model], res.results[0], T * H * 2);
        nx_run_result_free(&res);
        nx_prepared_free(&p);
    }
    assert_memory_equal(got[0], got[1], T * H * 2);
    for (int i = 0; i < 6; i++) free(in[i]);
    free(got[0]), free(got[1]);
    nx_macro_op_free(&op);
    nx_lowerer_free(L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_decode_random), cmocka_unit_test(mlp_prefill_random), cmocka_unit_test(mlp_plans_agree),
        cmocka_unit_test(mlp_values),        cmocka_unit_test(mlp_refusals),      cmocka_unit_test(mlp_piece_experts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
