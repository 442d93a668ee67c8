/* blockwise_mm: the leaf (kernels/blockwise_mm/blockwise_mm.h), its plan, its operand
 * reader and the reference (kernels/ref/ref.h).
 *
 * Every leaf case is traced into a builder, order-checked
 * (test_kcheck_program), run on the functional executor and on the SystemC
 * model with the race detector; the model's output must equal the
 * executor's bit for bit, and both the leaf and the reference are compared
 * with an independent double-precision evaluation of the semantics (a
 * per-(token, expert) MLP, which for the dense identity is the dense MoE
 * layer itself).
 *
 * Tolerance, per output element (t, j), from the dtype and the contraction
 * lengths, as a worst-case bound on the difference between a computation in
 * fp32 with the leaf's rounding points and the exact value:
 *   for each contribution (block b, expert e, affinity a):
 *     g, u: dot products of length H in fp32: |dg| <= gH * sum|x Wg|,
 *           gH = (H + 2) 2^-24 (also covers fp32 products); same for u;
 *     h = silu(g) * u: |dh_pre| <= gH (1.1 sum|x Wg| |u| + (|silu g| + 1.1 gH sum|x Wg|) sum|x Wu|)
 *           + 3 * 2^-24 |h| (|silu'| <= 1.1; the silu and product roundings);
 *     h is rounded to the input dtype (unit roundoff u_in: 2^-8 bf16,
 *           2^-24 fp32), possibly across a rounding boundary from the exact
 *           value: dh = dh_pre + 2 u_in (|h| + dh_pre);
 *     y = h Wd (length I, gI = (I + 2) 2^-24), times a:
 *           tol_b = |a| (sum_i dh_i |Wd_ij| + gI sum_i (|h_i| + dh_i) |Wd_ij|) + 2^-24 |y a|,
 *           mag_b = |a| sum_i (|h_i| + dh_i) |Wd_ij|;
 *   the output dtype's roundings of k contributions (each rounded, then
 *   added with one rounding): tol = sum_b tol_b + (2k + 1) u_out sum_b mag_b.
 * PRE_SCALE's x * a is rounded identically by both (no term). */
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
#include "kernels/blockwise_mm/blockwise_mm.h"
#include "kernels/ref/ref.h"
#include "sim/machine.h"
#include "sim/model.h"
#include "sim/race.h"
#include "kcheck.h"
#include "support.h"

/* ---- a problem: sizes, routing and data ---- */

typedef struct moe {
    uint64_t T, H, I, E, B, NB;
    nx_dtype dt, aff_dt;
    nx_bwmm_scaling mode;
    int32_t *tpid, *bte;
    uint8_t *in[NX_BWMM_OPERANDS];
    uint64_t bytes[NX_BWMM_OPERANDS];
    uint64_t shape[NX_BWMM_OPERANDS][4];
    uint32_t ndims[NX_BWMM_OPERANDS];
} moe;

static const char *const NAMES[NX_BWMM_OPERANDS] = {"hidden_states",        "expert_affinities_masked",
                                                    "gate_up_proj_weight",  "down_proj_weight",
                                                    "token_position_to_id", "block_to_expert"};

static void set_shape(moe *m, int i, uint32_t nd, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                      nx_dtype dt) {
    uint64_t s[4] = {a, b, c, d}, n = 1;
    m->ndims[i] = nd;
    for (uint32_t k = 0; k < nd; k++) {
        m->shape[i][k] = s[k];
        n *= s[k];
    }
    m->bytes[i] = n * nx_dtype_size(dt);
    m->in[i] = calloc(1, m->bytes[i] + 1);
    assert_non_null(m->in[i]);
}

static double rnd(test_rng *r, double lo, double hi) { return test_rng_uniform(r, lo, hi); }

/* Allocates the operands; routing arrays are the caller's to fill. Values:
 * x in [-1, 1) (row T too: id T must contribute nothing whatever it holds),
 * weights scaled by 1/sqrt(fan-in), affinities in [0, 1). */
static void moe_init(moe *m, uint64_t T, uint64_t H, uint64_t I, uint64_t E, uint64_t B, uint64_t NB,
                     nx_dtype dt, nx_bwmm_scaling mode, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->T = T, m->H = H, m->I = I, m->E = E, m->B = B, m->NB = NB, m->dt = dt, m->aff_dt = NX_DT_FP32;
    m->mode = mode;
    set_shape(m, 0, 2, T + 1, H, 0, 0, dt);
    set_shape(m, 1, 2, (T + 1) * E, 1, 0, 0, m->aff_dt);
    set_shape(m, 2, 4, E, H, 2, I, dt);
    set_shape(m, 3, 3, E, I, H, 0, dt);
    set_shape(m, 4, 1, NB * B, 0, 0, 0, NX_DT_INT32);
    set_shape(m, 5, 2, NB, 1, 0, 0, NX_DT_INT32);
    m->tpid = (int32_t *)m->in[4];
    m->bte = (int32_t *)m->in[5];
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 7};
    size_t s = nx_dtype_size(dt);
    for (uint64_t i = 0; i < (T + 1) * H; i++) nx_dtype_store(dt, m->in[0] + i * s, rnd(&r, -1, 1));
    for (uint64_t i = 0; i < (T + 1) * E; i++) nx_dtype_store(m->aff_dt, m->in[1] + i * 4, rnd(&r, 0, 1));
    double sg = 1.0 / sqrt((double)H), sd = 1.0 / sqrt((double)I);
    for (uint64_t i = 0; i < E * H * 2 * I; i++)
        nx_dtype_store(dt, m->in[2] + i * s, rnd(&r, -2 * sg, 2 * sg));
    for (uint64_t i = 0; i < E * I * H; i++) nx_dtype_store(dt, m->in[3] + i * s, rnd(&r, -sd, sd));
}

static void moe_free(moe *m) {
    for (int i = 0; i < NX_BWMM_OPERANDS; i++) free(m->in[i]);
}

static nx_bwmm_params moe_params(const moe *m) {
    nx_bwmm_params p = {m->T, m->H, m->I, m->E, m->NB, m->B, m->dt, m->aff_dt, m->mode};
    return p;
}

/* ---- the independent evaluation (double) ---- */

static double val(nx_dtype dt, const uint8_t *base, uint64_t i) {
    return nx_dtype_load(dt, base + i * nx_dtype_size(dt));
}
static double round_dt(nx_dtype dt, double v) {
    uint8_t b[8];
    nx_dtype_store(dt, b, v);
    return nx_dtype_load(dt, b);
}
static double unit_roundoff(nx_dtype dt) { return dt == NX_DT_BF16 ? 0x1p-8 : 0x1p-24; }

/* Adds token tok through expert e with affinity a to out/tol/mag rows
 * [H] (the file's opening comment derives the bound). */
static void mlp_exact(const moe *m, uint64_t tok, uint64_t e, double a, double *out, double *tol,
                      double *mag) {
    uint64_t H = m->H, I = m->I;
    double u_in = unit_roundoff(m->dt), gH = (double)(H + 2) * 0x1p-24, gI = (double)(I + 2) * 0x1p-24;
    double *x = malloc(H * sizeof *x), *hr = malloc(I * sizeof *hr), *dh = malloc(I * sizeof *dh);
    assert_true(x && hr && dh);
    for (uint64_t c = 0; c < H; c++) {
        x[c] = val(m->dt, m->in[0], tok * H + c);
        if (m->mode == NX_BWMM_PRE_SCALE) x[c] = round_dt(m->dt, (double)(float)(x[c] * a));
    }
    for (uint64_t i = 0; i < I; i++) {
        double g = 0, u = 0, ag = 0, au = 0;
        for (uint64_t c = 0; c < H; c++) {
            double wg = val(m->dt, m->in[2], ((e * H + c) * 2 + 0) * I + i);
            double wu = val(m->dt, m->in[2], ((e * H + c) * 2 + 1) * I + i);
            g += x[c] * wg, u += x[c] * wu, ag += fabs(x[c] * wg), au += fabs(x[c] * wu);
        }
        double sg = g / (1.0 + exp(-g)), h = sg * u;
        double pre = gH * (1.1 * ag * fabs(u) + (fabs(sg) + 1.1 * gH * ag) * au) + 3 * 0x1p-24 * fabs(h);
        hr[i] = round_dt(m->dt, h);
        dh[i] = pre + 2 * u_in * (fabs(h) + pre);
    }
    double scale = m->mode == NX_BWMM_POST_SCALE ? a : 1.0;
    for (uint64_t j = 0; j < H; j++) {
        double y = 0, sd = 0, sm = 0;
        for (uint64_t i = 0; i < I; i++) {
            double wd = val(m->dt, m->in[3], (e * I + i) * H + j);
            y += hr[i] * wd;
            sd += dh[i] * fabs(wd);
            sm += (fabs(hr[i]) + dh[i]) * fabs(wd);
        }
        out[j] += y * scale;
        tol[j] += fabs(scale) * (sd + gI * sm) + 0x1p-24 * fabs(y * scale);
        mag[j] += fabs(scale) * sm;
    }
    free(x);
    free(hr);
    free(dh);
}

/* The semantics block by block: out and its tolerance, (T+1) x H. */
static void blockwise_exact(const moe *m, double *out, double *tol) {
    uint64_t T = m->T, H = m->H;
    double *mag = calloc((T + 1) * H, sizeof *mag);
    uint32_t *k = calloc(T + 1, sizeof *k);
    assert_true(mag && k);
    memset(out, 0, (T + 1) * H * sizeof *out);
    memset(tol, 0, (T + 1) * H * sizeof *tol);
    for (uint64_t n = 0; n < m->NB; n++) {
        int64_t e = m->bte[n];
        if (e < 0 || (uint64_t)e >= m->E) continue;
        for (uint64_t j = 0; j < m->B; j++) {
            int64_t t = m->tpid[n * m->B + j];
            if (t < 0 || (uint64_t)t >= T) continue;
            double a = val(m->aff_dt, m->in[1], (uint64_t)t * m->E + (uint64_t)e);
            mlp_exact(m, (uint64_t)t, (uint64_t)e, a, out + t * H, tol + t * H, mag + t * H);
            k[t]++;
        }
    }
    double u_out = unit_roundoff(m->dt);
    for (uint64_t t = 0; t <= T; t++)
        for (uint64_t j = 0; j < H; j++) tol[t * H + j] += (2.0 * k[t] + 1) * u_out * mag[t * H + j] + 1e-30;
    free(mag);
    free(k);
}

static void compare(const char *what, const moe *m, const uint8_t *got, const double *want,
                    const double *tol) {
    for (uint64_t i = 0; i < (m->T + 1) * m->H; i++) {
        double g = val(m->dt, got, i);
        if (!(fabs(g - want[i]) <= tol[i]))
            fail_msg("%s: output[%llu][%llu] = %.9g, want %.9g (tolerance %.3g)", what,
                     (unsigned long long)(i / m->H), (unsigned long long)(i % m->H), g, want[i], tol[i]);
    }
}

/* ---- running the leaf ---- */

typedef struct leaf_run {
    uint8_t *exec_out, *model_out;
    nx_bwmm_plan plan;
    double sim_ns;
    uint64_t dma_bytes; /* moved by every queue on the model */
} leaf_run;

/* Traces the leaf for geometry `g` (NULL: trn2's; a smaller one forces the
 * streaming plans, and its programs run on trn2's model unchanged), checks
 * the order, runs the executor and the model (race detector on), and
 * returns both outputs (they must be equal: the model of a race-free
 * program computes the executor's bytes). */
static void run_leaf(const moe *m, const nx_geometry *g, leaf_run *lr) {
    char what[256];
    snprintf(what, sizeof what, "blockwise_mm %s T=%llu H=%llu I=%llu E=%llu B=%llu NB=%llu %s",
             nx_dtype_name(m->dt), (unsigned long long)m->T, (unsigned long long)m->H,
             (unsigned long long)m->I, (unsigned long long)m->E, (unsigned long long)m->B,
             (unsigned long long)m->NB, nx_bwmm_scaling_name(m->mode));
    nx_geometry geo = g ? *g : test_geometry("trn2");
    nx_bwmm_params p = moe_params(m);
    nx_error err;
    if (nx_bwmm_plan_make(&p, &geo, &lr->plan, &err) != 0) fail_msg("%s: plan: %s", what, err.msg);

    nx_builder *b = nx_builder_new(&geo, 1);
    assert_non_null(b);
    nx_tensor_ref args[NX_BWMM_OPERANDS + 1];
    memset(args, 0, sizeof args);
    for (int i = 0; i <= NX_BWMM_OPERANDS; i++) {
        int o = i == NX_BWMM_OPERANDS;
        strcpy(args[i].name, o ? "output" : NAMES[i]);
        args[i].dtype = o ? m->dt : i == 1 ? m->aff_dt : i >= 4 ? NX_DT_INT32 : m->dt;
        args[i].ndims = o ? 2 : m->ndims[i];
        if (o) {
            args[i].shape[0] = m->T + 1;
            args[i].shape[1] = m->H;
        } else {
            memcpy(args[i].shape, m->shape[i], sizeof m->shape[i]);
        }
        if (nx_builder_tensor(b, args[i].name, args[i].dtype, args[i].ndims, args[i].shape,
                              o ? NX_ROLE_OUTPUT : NX_ROLE_INPUT, &args[i].hbm_offset, &err) != 0)
            fail_msg("%s: declare: %s", what, err.msg);
    }
    nx_attr attr[2];
    char n0[] = "block_size", n1[] = "expert_affinities_scaling_mode", mode[16];
    strcpy(mode, nx_bwmm_scaling_name(m->mode));
    attr[0].name = n0;
    attr[0].value = (nx_value){.kind = NX_VAL_INT, .i = (int64_t)m->B};
    attr[1].name = n1;
    attr[1].value = (nx_value){.kind = NX_VAL_STRING, .s = mode};
    nx_attrs attrs = {attr, 2};
    nx_kernel_call call = {args, NX_BWMM_OPERANDS + 1, NX_BWMM_OPERANDS, &attrs, &attrs};
    nx_machine km = test_machine_of(nx_builder_geometry(b));
    nx_kctx *k = nx_kctx_new_machine(b, &km, 0, 1);
    assert_non_null(k);
    if (blockwise_mm(k, &call, &err) != 0) fail_msg("%s: trace: %s", what, err.msg);
    if (nx_kctx_finish(k, &err) != 0) fail_msg("%s: finish: %s", what, err.msg);
    nx_kctx_free(k);
    nx_program prog;
    if (nx_builder_finish(b, &prog, &err) != 0) fail_msg("%s: builder: %s", what, err.msg);
    nx_builder_free(b);
    if (test_kcheck_program(&prog, &err) != 0) fail_msg("%s: order check: %s", what, err.msg);

    uint64_t out_bytes = (m->T + 1) * m->H * nx_dtype_size(m->dt);
    lr->exec_out = malloc(out_bytes);
    lr->model_out = malloc(out_bytes);
    assert_true(lr->exec_out && lr->model_out);
    nx_state st;
    if (nx_state_init(&st, &geo, 1, prog.hbm_bytes, prog.sem_count, &err) != 0)
        fail_msg("%s: state: %s", what, err.msg);
    for (int pass = 0; pass < 2; pass++) {
        nx_state_reset(&st);
        for (int i = 0; i < NX_BWMM_OPERANDS; i++) memcpy(st.hbm + args[i].hbm_offset, m->in[i], m->bytes[i]);
        if (pass == 0) {
            if (nx_exec_program(&prog, &st, &err) != 0) fail_msg("%s: exec: %s", what, err.msg);
            memcpy(lr->exec_out, st.hbm + args[NX_BWMM_OPERANDS].hbm_offset, out_bytes);
            continue;
        }
        nx_machine mach;
        if (nx_machine_load("trn2", &mach, &err) != 0) fail_msg("machine: %s", err.msg);
        nx_sim_options opt = {1, 0};
        nx_sim_result res;
        memset(&res, 0, sizeof res);
        if (nx_sim_run(&mach, &prog, &st, &opt, &res, &err) != 0) fail_msg("%s: model: %s", what, err.msg);
        if (nx_race_check(&prog, res.log, res.log_count, &err) != 0)
            fail_msg("%s: race detector: %s", what, err.msg);
        lr->sim_ns = res.total_ns;
        lr->dma_bytes = 0;
        for (uint32_t q = 0; q < res.dma_queues; q++) lr->dma_bytes += nx_sim_queue_bytes(&res, 0, q);
        nx_sim_result_free(&res);
        memcpy(lr->model_out, st.hbm + args[NX_BWMM_OPERANDS].hbm_offset, out_bytes);
    }
    if (memcmp(lr->exec_out, lr->model_out, out_bytes) != 0)
        fail_msg("%s: the model's output differs from the executor's", what);
    nx_state_free(&st);
    nx_program_free(&prog);
}

static void leaf_run_free(leaf_run *lr) {
    free(lr->exec_out);
    free(lr->model_out);
}

/* The leaf and the reference against the double evaluation. */
static void check_case(const moe *m, const nx_geometry *geo, leaf_run *keep) {
    uint64_t n = (m->T + 1) * m->H;
    double *want = malloc(n * sizeof *want), *tol = malloc(n * sizeof *tol);
    uint8_t *ref = malloc(n * nx_dtype_size(m->dt));
    assert_true(want && tol && ref);
    blockwise_exact(m, want, tol);
    nx_bwmm_params p = moe_params(m);
    nx_error err;
    const void *ins[NX_BWMM_OPERANDS];
    for (int i = 0; i < NX_BWMM_OPERANDS; i++) ins[i] = m->in[i];
    if (nx_ref_blockwise_mm(&p, ins, ref, &err) != 0) fail_msg("reference: %s", err.msg);
    compare("reference", m, ref, want, tol);
    leaf_run lr;
    run_leaf(m, geo, &lr);
    compare("leaf", m, lr.exec_out, want, tol);
    if (keep)
        *keep = lr;
    else
        leaf_run_free(&lr);
    free(want);
    free(tol);
    free(ref);
}

/* ---- tests ---- */

/* The contract's worked routing example (docs/parts/kernels.md): B = 2, block_to_expert [0,0,1,2], token_position_to_id
 * [0,2,4,-1,1,5,3,-1]; T = 6, H = I = 1, every x = 1, Wg = 1, Wu[e] = e + 1,
 * Wd = 1, a(t, e_t) = (t+1)/8 (0 elsewhere): h = silu(1) (e+1) and
 *   POST_SCALE out[t] = silu(1) (e_t + 1) (t+1)/8,
 *   PRE_SCALE  out[t] = silu(a) (e_t + 1) a,
 *   NO_SCALE   out[t] = silu(1) (e_t + 1),
 * with e_t = 0,1,0,2,0,1 for t = 0..5 and silu(1) = 0.7310585786300049. */
static void routing_example(nx_bwmm_scaling mode, const double want[7]) {
    static const int32_t tpid[8] = {0, 2, 4, -1, 1, 5, 3, -1}, bte[4] = {0, 0, 1, 2};
    static const int et[6] = {0, 1, 0, 2, 0, 1};
    moe m;
    moe_init(&m, 6, 1, 1, 3, 2, 4, NX_DT_FP32, mode, 1);
    memcpy(m.tpid, tpid, sizeof tpid);
    memcpy(m.bte, bte, sizeof bte);
    float *hs = (float *)m.in[0], *aff = (float *)m.in[1], *gu = (float *)m.in[2], *dn = (float *)m.in[3];
    for (int t = 0; t < 7; t++) hs[t] = t < 6 ? 1.0f : 5.0f; /* row T is not zero: it must still not count */
    for (int i = 0; i < 7 * 3; i++) aff[i] = 0.0f;
    for (int t = 0; t < 6; t++) aff[t * 3 + et[t]] = (float)(t + 1) / 8.0f;
    for (int e = 0; e < 3; e++) {
        gu[e * 2 + 0] = 1.0f;
        gu[e * 2 + 1] = (float)(e + 1);
        dn[e] = 1.0f;
    }
    nx_bwmm_params p = moe_params(&m);
    nx_error err;
    float ref[7];
    const void *ins[NX_BWMM_OPERANDS];
    for (int i = 0; i < NX_BWMM_OPERANDS; i++) ins[i] = m.in[i];
    assert_int_equal(nx_ref_blockwise_mm(&p, ins, ref, &err), 0);
    leaf_run lr;
    run_leaf(&m, NULL, &lr);
    const float *got = (const float *)lr.exec_out;
    for (int t = 0; t < 7; t++) {
        double tol = 4 * 0x1p-24 * fabs(want[t]);
        if (fabs(ref[t] - want[t]) > tol)
            fail_msg("%s reference: out[%d] = %.9g, want %.9g", nx_bwmm_scaling_name(mode), t, ref[t],
                     want[t]);
        if (fabs(got[t] - want[t]) > tol)
            fail_msg("%s leaf: out[%d] = %.9g, want %.9g", nx_bwmm_scaling_name(mode), t, got[t], want[t]);
    }
    leaf_run_free(&lr);
    moe_free(&m);
}

static void test_routing_example(void **state) {
    (void)state;
    static const double post[7] = {0.09138232232875061,
                                   0.36552928931500245,
                                   0.27414696698625185,
                                   1.0965878679450074,
                                   0.45691161164375305,
                                   1.0965878679450074,
                                   0};
    static const double pre[7] = {0.008300146458964942,
                                  0.07027206261072476,
                                  0.08334374061854105,
                                  0.466844498401391,
                                  0.2544354940101774,
                                  0.7640760365723172,
                                  0};
    static const double none[7] = {0.7310585786300049,
                                   1.4621171572600098,
                                   0.7310585786300049,
                                   2.193175735890015,
                                   0.7310585786300049,
                                   1.4621171572600098,
                                   0};
    routing_example(NX_BWMM_POST_SCALE, post);
    routing_example(NX_BWMM_PRE_SCALE, pre);
    routing_example(NX_BWMM_NO_SCALE, none);
}

/* A dense top-k MoE layer: token t goes through experts top[t][0..k) with
 * the router's affinities; computed densely (token by token, no blocks) it
 * must equal blockwise_mm over the routing that groups the tokens by expert
 * into blocks of B padded with `pad` (-1 or T). */
static void dense_identity(uint64_t T, uint64_t H, uint64_t I, uint64_t E, uint64_t topk, uint64_t B,
                           nx_dtype dt, int32_t pad_kind, uint64_t seed) {
    test_rng r = {seed + 99};
    uint64_t *top = malloc(T * topk * sizeof *top);
    uint64_t *count = calloc(E, sizeof *count);
    assert_true(top && count);
    for (uint64_t t = 0; t < T; t++) {
        for (uint64_t k = 0; k < topk; k++) {
            uint64_t e;
            int dup;
            do { /* distinct experts per token */
                e = test_rng_next(&r) % E;
                dup = 0;
                for (uint64_t q = 0; q < k; q++) dup |= top[t * topk + q] == e;
            } while (dup);
            top[t * topk + k] = e;
            count[e]++;
        }
    }
    uint64_t NB = 0;
    for (uint64_t e = 0; e < E; e++) NB += (count[e] + B - 1) / B;
    moe m;
    moe_init(&m, T, H, I, E, B, NB, dt, NX_BWMM_POST_SCALE, seed);
    /* masked affinities: the router's weights for the chosen experts, 0 elsewhere */
    float *aff = (float *)m.in[1];
    for (uint64_t i = 0; i < (T + 1) * E; i++) aff[i] = 0.0f;
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t k = 0; k < topk; k++)
            aff[t * E + top[t * topk + k]] = (float)(0.25 + 0.5 * test_rng_uniform(&r, 0, 1));
    uint64_t n = 0;
    for (uint64_t e = 0; e < E; e++) {
        uint64_t pos = 0;
        for (uint64_t t = 0; t < T; t++)
            for (uint64_t k = 0; k < topk; k++)
                if (top[t * topk + k] == e) {
                    if (pos % B == 0) m.bte[n + pos / B] = (int32_t)e;
                    m.tpid[n * B + pos++] = (int32_t)t;
                }
        for (; pos % B; pos++) m.tpid[n * B + pos] = pad_kind < 0 ? -1 : (int32_t)T;
        n += pos / B;
    }
    assert_int_equal(n, NB);
    /* the dense layer */
    uint64_t cells = (T + 1) * H;
    double *want = calloc(cells, sizeof *want), *tol = calloc(cells, sizeof *tol),
           *mag = calloc(cells, sizeof *mag);
    assert_true(want && tol && mag);
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t k = 0; k < topk; k++) {
            uint64_t e = top[t * topk + k];
            mlp_exact(&m, t, e, aff[t * E + e], want + t * H, tol + t * H, mag + t * H);
        }
    for (uint64_t i = 0; i < cells; i++)
        tol[i] += (2.0 * (double)topk + 1) * unit_roundoff(dt) * mag[i] + 1e-30;
    nx_bwmm_params p = moe_params(&m);
    uint8_t *ref = malloc(cells * nx_dtype_size(dt));
    nx_error err;
    const void *ins[NX_BWMM_OPERANDS];
    for (int i = 0; i < NX_BWMM_OPERANDS; i++) ins[i] = m.in[i];
    assert_int_equal(nx_ref_blockwise_mm(&p, ins, ref, &err), 0);
    compare("reference vs dense", &m, ref, want, tol);
    leaf_run lr;
    run_leaf(&m, NULL, &lr);
    compare("leaf vs dense", &m, lr.exec_out, want, tol);
    leaf_run_free(&lr);
    free(ref);
    free(want);
    free(tol);
    free(mag);
    free(top);
    free(count);
    moe_free(&m);
}

static void test_dense_identity(void **state) {
    (void)state;
    dense_identity(40, 96, 64, 4, 2, 16, NX_DT_FP32, -1, 1);
    dense_identity(37, 130, 200, 3, 2, 24, NX_DT_BF16, 1, 2); /* padding with T, partial tiles */
    dense_identity(20, 64, 40, 1, 1, 7, NX_DT_FP32, -1, 3);   /* E = 1 */
}

/* Random routings: ids anywhere in [-1, T] (repeats in and across blocks),
 * experts in [-1, E] (invalid blocks), shapes off the tile grid. */
static void random_case(uint64_t seed, const nx_geometry *geo, leaf_run *keep) {
    test_rng r = {seed * 7919 + 3};
    uint64_t T = 1 + test_rng_next(&r) % 60, H = 1 + test_rng_next(&r) % 300, I = 1 + test_rng_next(&r) % 200;
    uint64_t E = 1 + test_rng_next(&r) % 5, B = 1 + test_rng_next(&r) % 150, NB = 1 + test_rng_next(&r) % 5;
    nx_dtype dt = test_rng_next(&r) % 2 ? NX_DT_BF16 : NX_DT_FP32;
    nx_bwmm_scaling mode = (nx_bwmm_scaling)(test_rng_next(&r) % 3);
    moe m;
    moe_init(&m, T, H, I, E, B, NB, dt, mode, seed);
    for (uint64_t i = 0; i < NB * B; i++) m.tpid[i] = (int32_t)(test_rng_next(&r) % (T + 2)) - 1;
    for (uint64_t n = 0; n < NB; n++) m.bte[n] = (int32_t)(test_rng_next(&r) % (E + 2)) - 1;
    if (NB > 1) m.bte[1] = m.bte[0]; /* a repeated expert: resident weights are reused */
    check_case(&m, geo, keep);
    moe_free(&m);
}

static void test_random_shapes(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 8; seed++) random_case(seed, NULL, NULL);
}

/* Every scaling mode on one shape with several items per block, output
 * staging in x's bytes and a narrow last output chunk (H = 1024 + 16). */
static void test_scaling_modes(void **state) {
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        moe m;
        moe_init(&m, 50, 1040, 72, 3, 600, 2, NX_DT_BF16, (nx_bwmm_scaling)mode, 11);
        test_rng r = {5};
        for (uint64_t i = 0; i < m.NB * m.B; i++) /* a quarter of the positions routed */
            m.tpid[i] = test_rng_next(&r) % 4 ? -1 : (int32_t)(test_rng_next(&r) % 51);
        m.bte[0] = 2;
        m.bte[1] = 0;
        leaf_run lr;
        check_case(&m, NULL, &lr);
        assert_int_equal(lr.plan.stage_in_x, 1);
        assert_int_equal(lr.plan.nc, 2);
        leaf_run_free(&lr);
        moe_free(&m);
    }
}

/* Weights larger than SBUF stream through the rings. A machine with 512-byte
 * PSUM banks (128 fp32 tokens per item, 128-column output chunks) and the
 * largest SBUF that still refuses to keep the weights resident gives, on
 * small shapes, every case of the streaming code: gate and up in separate
 * passes over several groups, or together, rings shorter than an item's
 * pieces (the down pieces out of order of the token tiles), blocks cut into
 * items, a last partial item. */
static void test_streaming(void **state) {
    (void)state;
    static const struct {
        uint64_t T, H, I, E, B, NB;
        nx_dtype dt;
        int split;
    } cases[] = {
        {30, 300, 900, 2, 300, 2, NX_DT_FP32, 1},  /* gate and up in separate passes, 2 groups */
        {25, 1100, 300, 3, 200, 3, NX_DT_BF16, 0}, /* together */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        moe m;
        moe_init(&m, cases[c].T, cases[c].H, cases[c].I, cases[c].E, cases[c].B, cases[c].NB, cases[c].dt,
                 NX_BWMM_POST_SCALE, 20 + c);
        test_rng r = {c + 1};
        /* mostly padding: the double evaluation stays small */
        for (uint64_t i = 0; i < m.NB * m.B; i++)
            m.tpid[i] = test_rng_next(&r) % 8 ? -1 : (int32_t)(test_rng_next(&r) % (m.T + 1));
        for (uint64_t n = 0; n < m.NB; n++) m.bte[n] = (int32_t)(n % m.E);
        nx_geometry geo = test_geometry("trn2");
        geo.psum_bank_bytes = 512;
        geo.psum_partition_bytes = 8 * 512;
        nx_bwmm_params p = moe_params(&m);
        nx_bwmm_plan pl;
        nx_error err;
        int found = 0;
        for (uint64_t kib = 96; kib >= 8 && !found; kib--) {
            geo.sbuf_partition_bytes = kib * 1024;
            found = nx_bwmm_plan_make(&p, &geo, &pl, &err) == 0 && !pl.resident &&
                    pl.gu_split == cases[c].split && (!pl.gu_split || pl.ngroups > 1) && pl.rd < pl.pd &&
                    pl.rg < pl.pg && pl.ns > 1 && pl.p.B % pl.bs != 0;
        }
        if (!found) fail_msg("case %zu: no SBUF size gives a streaming plan of every kind", c);
        leaf_run lr;
        check_case(&m, &geo, &lr);
        leaf_run_free(&lr);
        moe_free(&m);
    }
}

/* Resident weights stay when the expert does: four blocks of expert 0 move
 * exactly three experts' weights less than the same blocks alternating
 * experts 0 and 1 (the skipped rows move nothing; every other transfer is
 * the same), and both are right. */
static void test_weight_reuse(void **state) {
    (void)state;
    uint64_t bytes[2];
    for (int alt = 0; alt < 2; alt++) {
        moe m;
        moe_init(&m, 40, 200, 96, 2, 64, 4, NX_DT_BF16, NX_BWMM_POST_SCALE, 8);
        for (uint64_t i = 0; i < m.NB * m.B; i++) m.tpid[i] = (int32_t)(i % 41) - 1;
        for (uint64_t n = 0; n < m.NB; n++) m.bte[n] = alt ? (int32_t)(n % 2) : 0;
        leaf_run lr;
        check_case(&m, NULL, &lr);
        assert_int_equal(lr.plan.resident, 1);
        bytes[alt] = lr.dma_bytes;
        leaf_run_free(&lr);
        moe_free(&m);
    }
    uint64_t expert = (200 * 2 * 96 + 96 * 200) * 2; /* bf16 gate/up + down */
    assert_int_equal(bytes[1] - bytes[0], 3 * expert);
}

/* Blocks of padding only (every id -1 or T), and a block of no expert. */
static void test_padding_blocks(void **state) {
    (void)state;
    moe m;
    moe_init(&m, 9, 33, 17, 2, 5, 3, NX_DT_FP32, NX_BWMM_POST_SCALE, 4);
    for (int i = 0; i < 5; i++) m.tpid[i] = i % 2 ? -1 : 9; /* block 0: padding only */
    for (int i = 5; i < 10; i++) m.tpid[i] = i - 5;         /* block 1: tokens 0..4, expert -1 */
    for (int i = 10; i < 15; i++) m.tpid[i] = 14 - i;       /* block 2: tokens 4..0 */
    m.bte[0] = 1, m.bte[1] = -1, m.bte[2] = 0;
    check_case(&m, NULL, NULL);
    moe_free(&m);
}

/* The plan: item sizes, groups, resident vs streaming, as the comments of
 * kernels/blockwise_mm/blockwise_mm.h say. */
static void test_plan(void **state) {
    (void)state;
    nx_geometry geo = test_geometry("trn2");
    nx_error err;
    nx_bwmm_plan pl;
    /* Mixtral-like: 44 MB experts stream; items of 512 tokens; gate and up
     * in separate passes over groups of 6 i-tiles (6 accumulator banks) */
    nx_bwmm_params mix = {2048, 4096, 1792, 8, 16, 512, NX_DT_BF16, NX_DT_BF16, NX_BWMM_POST_SCALE};
    assert_int_equal(nx_bwmm_plan_make(&mix, &geo, &pl, &err), 0);
    assert_int_equal(pl.bs, 512);
    assert_int_equal(pl.gu_split, 1);
    assert_int_equal(pl.g_tiles, 6);
    assert_int_equal(pl.ngroups, 3);
    assert_int_equal(pl.pg, 3 * 2 * 32);
    assert_int_equal(pl.c, 1024);
    assert_int_equal(pl.nc, 4);
    assert_int_equal(pl.resident, 0);
    assert_true(pl.rg >= 16 && pl.rd == 2);
    assert_true(pl.sbuf_used <= geo.sbuf_partition_bytes);
    /* DBRX-like: 12 MB experts fit: resident; gate and up of a row together
     * (one run of 2I) */
    nx_bwmm_params dbrx = {4224, 6144, 336, 16, 40, 512, NX_DT_BF16, NX_DT_BF16, NX_BWMM_POST_SCALE};
    assert_int_equal(nx_bwmm_plan_make(&dbrx, &geo, &pl, &err), 0);
    assert_int_equal(pl.resident, 1);
    assert_int_equal(pl.gu_split, 0);
    assert_int_equal(pl.ngroups, 1);
    assert_int_equal(pl.stage_in_x, 1);
    assert_int_equal(pl.nstage, 24); /* 4 token tiles x 6144 x 2 bytes of x = 24 banks */
    assert_int_equal(pl.rg, pl.pg);
    /* B = 1000: two items of 512 and 488 */
    nx_bwmm_params big = {100, 256, 128, 2, 3, 1000, NX_DT_FP32, NX_DT_FP32, NX_BWMM_NO_SCALE};
    assert_int_equal(nx_bwmm_plan_make(&big, &geo, &pl, &err), 0);
    assert_int_equal(pl.bs, 512);
    assert_int_equal(pl.ns, 2);
    assert_int_equal(pl.items, 6);
    /* small items pack several accumulators per bank */
    nx_bwmm_params small = {10, 64, 2000, 1, 1, 100, NX_DT_FP32, NX_DT_FP32, NX_BWMM_NO_SCALE};
    assert_int_equal(nx_bwmm_plan_make(&small, &geo, &pl, &err), 0);
    assert_int_equal(pl.gu_split, 1); /* joint: 6 banks x 5 slots of 400 bytes / 2 = 15 < 16 i-tiles */
    assert_int_equal(pl.g_tiles, 16);
    assert_int_equal(pl.ngroups, 1);
    /* refusals */
    nx_bwmm_params wide = {10, 1 << 20, 64, 32, 1, 4, NX_DT_FP32, NX_DT_FP32, NX_BWMM_NO_SCALE};
    assert_int_equal(nx_bwmm_plan_make(&wide, &geo, &pl, &err), -1);
    assert_string_equal(err.msg,
                        "blockwise_mm: E*H = 33554432 and E*I = 2048 must be below 2^24 (weight rows are "
                        "indexed in fp32)");
}

/* The operand reader's refusals, word for word. */
static void expect_read_error(const nx_bwmm_tensor *ops, const nx_attrs *attrs, const char *msg) {
    nx_bwmm_params p;
    nx_error err;
    assert_int_equal(nx_bwmm_params_read(attrs, ops, NX_BWMM_OPERANDS, &p, &err), -1);
    assert_string_equal(err.msg, msg);
}

static void test_refusals(void **state) {
    (void)state;
    uint64_t hs[2] = {7, 16}, af[2] = {21, 1}, gu[4] = {3, 16, 2, 8}, dn[3] = {3, 8, 16}, tp[1] = {8},
             be[2] = {4, 1};
    nx_bwmm_tensor ops[NX_BWMM_OPERANDS] = {
        {"hidden_states", NX_DT_FP32, 2, hs},         {"expert_affinities_masked", NX_DT_FP32, 2, af},
        {"gate_up_proj_weight", NX_DT_FP32, 4, gu},   {"down_proj_weight", NX_DT_FP32, 3, dn},
        {"token_position_to_id", NX_DT_INT32, 1, tp}, {"block_to_expert", NX_DT_INT32, 2, be}};
    char n0[] = "block_size", n1[] = "expert_affinities_scaling_mode", bad[] = "SCALE";
    nx_attr a[2] = {{n0, {.kind = NX_VAL_INT, .i = 2}}, {n1, {.kind = NX_VAL_STRING, .s = bad}}};
    nx_attrs one = {a, 1}, two = {a, 2}, none = {NULL, 0};
    nx_bwmm_params p;
    nx_error err;
    assert_int_equal(nx_bwmm_params_read(&one, ops, NX_BWMM_OPERANDS, &p, &err), 0);
    assert_true(p.T == 6 && p.H == 16 && p.inter == 8 && p.E == 3 && p.NB == 4 && p.B == 2);
    assert_int_equal(p.scaling, NX_BWMM_POST_SCALE);
    expect_read_error(ops, &none, "attribute block_size: is missing (blockwise_mm needs the block size B)");
    expect_read_error(ops, &two,
                      "attribute expert_affinities_scaling_mode: \"SCALE\" is not one of "
                      "\"POST_SCALE\", \"PRE_SCALE\", \"NO_SCALE\"");
    char hostile[] = "A\nB\x1b[2J"; /* a newline and an ESC sequence stay escaped: one line */
    a[1].value.s = hostile;
    expect_read_error(ops, &two,
                      "attribute expert_affinities_scaling_mode: \"A\\nB\\x1b[2J\" is not one of "
                      "\"POST_SCALE\", \"PRE_SCALE\", \"NO_SCALE\"");
    a[1].value.s = bad;
    a[0].value.i = 3;
    expect_read_error(ops, &one,
                      "operand 4 (token_position_to_id): 8 positions are not a whole number of "
                      "blocks of block_size 3");
    a[0].value.i = 2;
    uint64_t gu_bad[4] = {3, 15, 2, 8};
    ops[2].shape = gu_bad;
    expect_read_error(ops, &one,
                      "operand 2 (gate_up_proj_weight): shape [3,15,2,8] must be [E, H, 2, I] = "
                      "[E,16,2,I] (H from operand 0)");
    ops[2].shape = gu;
    ops[3].dtype = NX_DT_BF16;
    expect_read_error(ops, &one, "operand 3 (down_proj_weight): dtype bf16 differs from operand 0's fp32");
    ops[3].dtype = NX_DT_FP32;
    ops[5].dtype = NX_DT_INT16;
    expect_read_error(ops, &one, "operand 5 (block_to_expert): dtype int16 must be int32");
    ops[5].dtype = NX_DT_INT32;
    uint64_t af_bad[2] = {20, 1};
    ops[1].shape = af_bad;
    expect_read_error(ops, &one,
                      "operand 1 (expert_affinities_masked): shape [20,1] must be [(T+1)*E, 1] = "
                      "[21,1] (T+1 from operand 0, E from operand 2)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_routing_example), cmocka_unit_test(test_dense_identity),
        cmocka_unit_test(test_padding_blocks),  cmocka_unit_test(test_scaling_modes),
        cmocka_unit_test(test_random_shapes),   cmocka_unit_test(test_streaming),
        cmocka_unit_test(test_weight_reuse),
    };
    const char *filter = getenv("NX_TEST_FILTER");
    if (filter) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
