/* The decoder_layer composite (kernels/layer/layer.h) through the run path
 * against nx_ref_decoder_layer (--check with the rules' tolerance), on the
 * functional executor and on the SystemC model with the race detector, the
 * two bit for bit equal: decode S = 1 and S = 4 with ragged lengths (0, mid,
 * the last positions of the cache), prefill (one flash attention over the
 * cache and the new keys) S = 64 and S = 20, S = 130 and 136 onto ragged
 * lengths (0, inside a full and a partial cached key block, a full cache)
 * and S = S_max from length 0, tp 1 and tp 2 (equal within the
 * tolerance), fp32 and bf16, the caches' old entries unchanged bit for bit;
 * the refusals, one line each. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "isa/dtype.h"
#include "isa/rng.h"
#include "registry/lower.h"
#include "registry/macro_op.h"
#include "registry/prepare.h"
#include "registry/rules.h"
#include "registry/run/run.h"
#include "sim/profile.h"
#include "support.h"
#include "roster_case.h"

typedef struct layer_case {
    nx_dtype dt;
    uint64_t B, S, H, nq, nkv, d, I, S_max;
    double lengths[4];
} layer_case;

typedef struct layer_ops {
    roster_operand op[13];
    double *v[13];
} layer_ops;

/* Every operand's values: x, gammas, cos, sin, caches in [-2, 2), the
 * weights in [-2, 2) / sqrt(fan-in) (the tolerance's assumption), lengths
 * as given. */
static void build(const layer_case *c, layer_ops *o) {
    const uint64_t N = (c->nq + 2 * c->nkv) * c->d;
    const uint64_t shapes[13][4] = {{c->B, c->S, c->H},      {c->H},         {c->H, N},           {c->nq * c->d, c->H},
                                    {c->H},                  {c->H, c->I},   {c->H, c->I},        {c->I, c->H},
                                    {c->B, c->S, c->d / 2},  {c->B, c->S, c->d / 2},
                                    {c->B, c->nkv, c->S_max, c->d}, {c->B, c->nkv, c->S_max, c->d}, {c->B}};
    static const uint32_t nd[13] = {3, 1, 2, 2, 1, 2, 2, 2, 3, 3, 4, 4, 1};
    static const char *const names[13] = {"x",    "gamma_attn", "w_qkv", "w_o", "gamma_mlp", "w_gate", "w_up",
                                          "w_down", "cos",      "sin",   "k_cache", "v_cache", "lengths"};
    uint64_t st = c->B * 1000003 + c->S * 101 + c->H + (uint64_t)c->dt;
    for (uint32_t i = 0; i < 13; i++) {
        roster_operand *r = &o->op[i];
        memset(r, 0, sizeof *r);
        r->name = names[i];
        r->dt = i == 12 ? NX_DT_INT32 : c->dt;
        r->nd = nd[i];
        uint64_t n = 1;
        for (uint32_t j = 0; j < nd[i]; j++) r->shape[j] = shapes[i][j], n *= shapes[i][j];
        o->v[i] = malloc(n * sizeof(double));
        assert_non_null(o->v[i]);
        const int weight = i == 2 || i == 3 || i == 5 || i == 6 || i == 7;
        const double scale = weight ? 1.0 / sqrt((double)shapes[i][0]) : 1.0;
        for (uint64_t e = 0; e < n; e++)
            o->v[i][e] = i == 12 ? c->lengths[e] : (4.0 * nx_splitmix64_unit(&st) - 2.0) * scale;
        r->values = o->v[i];
    }
}

static void release(layer_ops *o) {
    for (uint32_t i = 0; i < 13; i++) free(o->v[i]);
}

static char *attrs_of(const layer_case *c, int tp) {
    static char buf[160];
    snprintf(buf, sizeof buf, "n_q_heads=%llu;n_kv_heads=%llu;head_dim=%llu;tp=%d", (unsigned long long)c->nq,
             (unsigned long long)c->nkv, (unsigned long long)c->d, tp);
    return buf;
}

/* The caches' entries outside the S new positions of each row: the input's bits. */
static void old_entries_kept(const layer_case *c, const layer_ops *o, const roster_outcome *r) {
    for (uint32_t j = 1; j <= 2; j++)
        for (uint64_t b = 0; b < c->B; b++)
            for (uint64_t g = 0; g < c->nkv; g++)
                for (uint64_t p = 0; p < c->S_max; p++) {
                    const uint64_t L = (uint64_t)c->lengths[b];
                    if (p >= L && p < L + c->S) continue;
                    for (uint64_t e = 0; e < c->d; e++) {
                        const uint64_t i = ((b * c->nkv + g) * c->S_max + p) * c->d + e;
                        uint8_t bits[8];
                        nx_dtype_store(c->dt, bits, o->v[9 + j][i]);
                        const double want = nx_dtype_load(c->dt, bits);
                        if (roster_value_at(r, j, i) != want)
                            fail_msg("cache %u: entry (b %llu, g %llu, pos %llu) changed (length %llu, S %llu)", j,
                                     (unsigned long long)b, (unsigned long long)g, (unsigned long long)p,
                                     (unsigned long long)L, (unsigned long long)c->S);
                    }
                }
}

/* tp 1 and tp 2 agree within twice the rules' tolerance of out. */
static void tp_agree(const layer_case *c, const roster_outcome *a, const roster_outcome *b) {
    const double eps = nx_dtype_epsilon(c->dt), u = 0x1p-24;
    const double sums = 2 * sqrt((double)c->H) + sqrt((double)(c->nq * c->d)) + sqrt((double)(c->S_max + c->S)) +
                        sqrt((double)c->I);
    const double abs_tol = 2 * 2.0 * (8 * eps + 16 * u * sums), rel = 2 * 4 * eps;
    const uint64_t n = c->B * c->S * c->H;
    double worst = 0;
    for (uint64_t e = 0; e < n; e++) {
        const double x = roster_value_at(a, 0, e), y = roster_value_at(b, 0, e), dd = fabs(x - y);
        if (dd > abs_tol + rel * fabs(x)) fail_msg("tp 1 and tp 2 differ at %llu: %g vs %g", (unsigned long long)e, x, y);
        if (dd > worst) worst = dd;
    }
    print_message("    tp 1 vs tp 2: max |diff| %g (bound %g + %g |v|)\n", worst, abs_tol, rel);
}

static void run_case(const layer_case *c) {
    layer_ops o;
    build(c, &o);
    roster_outcome r1, r2;
    roster_run("trn2", "decoder_layer", o.op, 13, attrs_of(c, 1), &r1);
    old_entries_kept(c, &o, &r1);
    roster_run("trn2", "decoder_layer", o.op, 13, attrs_of(c, 2), &r2);
    old_entries_kept(c, &o, &r2);
    tp_agree(c, &r1, &r2);
    roster_outcome_free(&r1);
    roster_outcome_free(&r2);
    release(&o);
}

static void decode_s1(void **state) {
    (void)state;
    run_case(&(layer_case){NX_DT_BF16, 2, 1, 256, 4, 2, 64, 512, 256, {100, 7}});
    run_case(&(layer_case){NX_DT_FP32, 1, 1, 256, 4, 2, 64, 512, 256, {255}});
}

static void decode_s4_ragged(void **state) {
    (void)state;
    run_case(&(layer_case){NX_DT_BF16, 3, 4, 256, 4, 2, 64, 512, 256, {0, 37, 252}});
    run_case(&(layer_case){NX_DT_FP32, 3, 4, 192, 8, 2, 32, 384, 128, {61, 0, 124}}); /* GQA 4, ragged H and I */
}

static void prefill(void **state) {
    (void)state;
    run_case(&(layer_case){NX_DT_BF16, 2, 64, 256, 4, 2, 64, 512, 256, {100, 0}});
    run_case(&(layer_case){NX_DT_FP32, 1, 20, 256, 4, 4, 64, 512, 128, {3}}); /* MHA, a short last step */
}

/* Prefill onto ragged caches: S not a multiple of 128, the cached columns
 * (S_max - S = 638) a full key block of 512 and a partial one, masked at
 * run time at L_b = 600 (inside the partial block) and 37 (inside the full
 * one); lengths 0 (every cached column masked) beside a full cache; and no
 * cached column at all (S = S_max, L_b = 0). */
static void prefill_ragged(void **state) {
    (void)state;
    run_case(&(layer_case){NX_DT_BF16, 2, 130, 256, 4, 2, 64, 512, 768, {600, 37}});
    run_case(&(layer_case){NX_DT_FP32, 2, 136, 256, 4, 2, 64, 512, 300, {0, 164}});
    run_case(&(layer_case){NX_DT_BF16, 1, 40, 256, 4, 2, 64, 512, 40, {0}});
}

static void refusals(void **state) {
    (void)state;
    const layer_case c = {NX_DT_BF16, 1, 1, 256, 4, 2, 64, 512, 256, {10}};
    layer_ops o;
    build(&c, &o);
    const char *f = "decoder_layer";
    roster_refused("trn2", f, o.op, 13, "n_q_heads=4;n_kv_heads=2;head_dim=64;tp=3",
                   "attribute tp: 3 must be 1 or 2 (the VNC grid's cores)");
    roster_refused("trn2", f, o.op, 13, "n_q_heads=4;n_kv_heads=3;head_dim=64",
                   "attribute n_q_heads: 4 is not a multiple of n_kv_heads = 3");
    roster_refused("trn2", f, o.op, 13, "n_kv_heads=2;head_dim=64",
                   "attribute n_q_heads: is missing (decoder_layer needs the number of query heads)");
    roster_refused("trn2", f, o.op, 13, "n_q_heads=0;n_kv_heads=2", "attribute n_q_heads: 0 must be positive");
    roster_refused("trn2", f, o.op, 12, "n_q_heads=4;n_kv_heads=2",
                   "decoder_layer takes 13 operands (x, gamma_attn, w_qkv, w_o, gamma_mlp, w_gate, w_up, w_down, cos, "
                   "sin, k_cache, v_cache, lengths), the op has 12");
    /* 8 q heads on 8 kv heads would need w_qkv [256, 1536]: the given one is [256, 512] */
    roster_refused("trn2", f, o.op, 13, "n_q_heads=8;n_kv_heads=8;head_dim=64",
                   "operand 2 (w_qkv): must be [H, (n_q_heads + 2 n_kv_heads) head_dim] = [256, 1536]");
    release(&o);
    /* tp 2 with one kv head: the heads do not split over the two cores */
    const layer_case m = {NX_DT_BF16, 1, 1, 256, 2, 1, 64, 512, 256, {10}};
    build(&m, &o);
    roster_refused("trn2", f, o.op, 13, "n_q_heads=2;n_kv_heads=1;tp=2",
                   "attribute tp: 2 splits the heads over the cores, n_kv_heads = 1 is not divisible by 2");
    o.op[3].shape[0] = 64; /* w_o [64, 256] for nq d = 128 */
    roster_refused("trn2", f, o.op, 13, "n_q_heads=2;n_kv_heads=1",
                   "operand 3 (w_o): must be [n_q_heads head_dim, H] = [128, 256]");
    o.op[3].shape[0] = 128;
    o.op[12].dt = NX_DT_FP32;
    roster_refused("trn2", f, o.op, 13, "n_q_heads=2;n_kv_heads=1", "operand 12 (lengths): dtype fp32, lengths must be int32");
    o.op[12].dt = NX_DT_INT32;
    o.op[5].dt = NX_DT_FP32;
    roster_refused("trn2", f, o.op, 13, "n_q_heads=2;n_kv_heads=1",
                   "operand 5 (w_gate): dtype fp32 differs from x's bf16 (one dtype for the layer)");
    o.op[5].dt = NX_DT_BF16;
    o.op[7].shape[0] = 511, o.op[5].shape[1] = 511, o.op[6].shape[1] = 511;
    roster_refused("trn2", f, o.op, 13, "n_q_heads=2;n_kv_heads=2;head_dim=32;tp=2",
                   "operand 7 (w_down): I = 511 is not divisible by tp = 2");
    release(&o);
    /* more new tokens than the caches hold */
    const layer_case big = {NX_DT_BF16, 1, 300, 256, 4, 2, 64, 512, 256, {0}};
    build(&big, &o);
    roster_refused("trn2", f, o.op, 13, "n_q_heads=4;n_kv_heads=2",
                   "operand 0 (x): S = 300 new tokens beyond the caches' S_max = 256");
    release(&o);
    /* a length whose S new entries pass S_max: the run faults, no result kept */
    const layer_case l = {NX_DT_BF16, 1, 4, 256, 4, 2, 64, 512, 256, {254}};
    build(&l, &o);
    roster_refused("trn2", f, o.op, 13, "n_q_heads=4;n_kv_heads=2",
                   "decoder_layer: core 0 sp #94 (dma_copy): offsets[0] = 257 is out of bounds [0, 256)");
    release(&o);
}

/* The profile's time by region: the default op on the model names each
 * part of the layer (tp 2: the all-reduce too, and no weight copies), every
 * span inside the run. */
static void regions(void **state) {
    (void)state;
    for (int tp = 1; tp <= 2; tp++) {
        nx_machine m = test_machine("trn2");
        nx_error err;
        nx_macro_op given;
        nx_macro_op_init(&given);
        assert_int_equal(nx_macro_op_set_func_name(&given, "decoder_layer", &err), 0);
        nx_value t = nx_value_int(tp);
        assert_int_equal(nx_attrs_set(&given.attrs, "tp", &t, &err), 0);
        nx_lowerer *L = nx_lowerer_new(&m.geo, NULL);
        nx_prepared op;
        if (nx_op_prepare(L, &given, NULL, &op, &err) != 0) fail_msg("%s", err.msg);
        nx_macro_op_free(&given);
        nx_run_options opt = {.backend = NX_RUN_MODEL, .keep_log = 1, .seed = 1};
        nx_run_result res;
        if (nx_run_op(L, &m, &op, NULL, &opt, &res, &err) != 0) fail_msg("%s", err.msg);
        char *json = nx_profile_by_region_json(res.prog, &res.trace.sim, &err);
        assert_non_null(json);
        static const char *const parts[] = {"qkv+norm+rope", "attention_decode", "o-proj", "mlp+norm+residual",
                                            "residual", "moves"};
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
            if (!strstr(json, parts[i])) fail_msg("tp %d: no region %s in %s", tp, parts[i], json);
        if (tp == 2 && !strstr(json, "\"all-reduce\"")) fail_msg("tp 2: no all-reduce region in %s", json);
        /* the weights are read in place (qkv's view, mlp's pitch): no copies */
        if (strstr(json, "tp shards")) fail_msg("tp 2 copies its weight shards: %s", json);
        if (tp == 1 && strstr(json, "all-reduce")) fail_msg("tp 1 has an all-reduce: %s", json);
        free(json);
        nx_run_result_free(&res);
        nx_lowerer_free(L);
        nx_prepared_free(&op);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_s1),
        cmocka_unit_test(decode_s4_ragged),
        cmocka_unit_test(prefill),
        cmocka_unit_test(prefill_ragged),
        cmocka_unit_test(refusals),
        cmocka_unit_test(regions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
